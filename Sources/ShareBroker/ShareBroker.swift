#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging
import ShareBrokerCrypto
import Synchronization

/// The library a managed app links: it receives the server's policies, tells the app about
/// every change, and mediates every outbound transfer.
///
/// ```swift
/// let broker = ShareBroker(appID: "com.acme.notes", platform: try .embedded(entitling: "com.acme.notes"),
///                          configuration: .init(stateDirectory: stateFolder, erasers: [cacheEraser]))
/// try broker.start(delegate: myDelegate)
/// // ... the server channel calls broker.apply(update) ...
/// let result = try broker.openIn(bytes, named: "q3.pdf", target: "com.acme.viewer", via: .documentInteraction)
/// ```
///
/// Every decision reads one immutable ``PolicySnapshot``; updates swap the whole snapshot.
public final class ShareBroker: Sendable {
    /// This app's bundle id.
    public let appID: String
    /// The platform adapters.
    public let platform: Platform
    /// The app's viewers (containers and web views) and their web-view policies.
    ///
    /// Declarations are taken at any time: the app creates web views as the user works, and
    /// nothing at ``start(delegate:)`` or in a retire reads the hierarchy. It is the
    /// configuration's ``Configuration/webViews``.
    public let webViews: WebViewHierarchy
    /// Where a retire journals its wipe so a crash cannot leave it half done (in the state
    /// folder); `nil` when the app gave none (the wipe then runs unjournaled).
    package let wipeJournal: WipeJournal?
    /// The current policy snapshot; only the lifecycle writes it.
    let store: PolicyStore
    /// Serializes updates; held while callbacks run.
    let lifecycle: Mutex<LifecycleState>
    private let delegateSlot = Mutex<(any ShareBrokerDelegate)?>(nil)
    /// The pasteboard change count of this app's last write, so a retire can take back what it wrote.
    let pasteboardWrites: PasteboardWriteLog
    /// The offline timers, once ``enableOfflineTimers(clock:directory:)`` turned them on.
    let offlineTimers = Mutex<OfflineTimers?>(nil)
    /// Whether the offline timers apply to the snapshot in force (a ready, unretired app with a
    /// period): only then does an action read the clock (``offlineAdjusted(_:)``). An atomic, so
    /// an app without timers pays one load per decision.
    let offlineTimersArmed = Atomic<Bool>(false)
    /// The configuration's secure-file folders (normalized, each once); a retire erases them.
    let secureFileDirectories: [String]
    /// The age bounds of sealed items on paste (``sealedItemLimits``): two atomics, not a lock,
    /// as every paste reads them. Each is read whole; a paste racing a change may pair a new
    /// bound with the old other one, each of them a bound that was set.
    private let sealedItemMaximumAgeStore: Atomic<UInt64>
    private let sealedItemFutureToleranceStore = Atomic<UInt64>(SealedItemLimits.defaultFutureTolerance)
    /// A fixed wall-clock time (Unix seconds) that seals and pastes read instead of
    /// `SealClock.now()`, set by tests; 0 for the real clock. (An atomic, not a stored closure:
    /// taking a closure out of a lock allocated on every copy and paste.)
    private let fixedWallClock = Atomic<UInt64>(0)
    /// A fixed monotonic time (nanoseconds) that the bursts of blocked toolkit copies read
    /// instead of `CLOCK_MONOTONIC`, set by tests; 0 for the real clock.
    private let fixedMonotonicClock = Atomic<UInt64>(0)
    /// The bursts of blocked toolkit copies (``CopyOrigin/toolkit(_:)``): one report per burst.
    let copyAttemptBursts = Mutex(CopyAttemptBursts())
    /// One logger per policy log level, made once: setting the level on a copy per call would
    /// copy swift-log's handler box (an allocation) on every logged decision.
    private let loggers: [Logger]
    /// The custodian's generation counter, when it has one (``KeyRingGenerationSource``): then
    /// copies and pastes reuse the ring the custodian last handed out (kept in ``store``) while
    /// the generation stands.
    private let keyRingGeneration: KeyRingGeneration?
    /// Who asks the user when an exit warns (``setWarnHandler(_:)``), `nil` for nobody.
    let warnAsker = Mutex<(@Sendable (WarnTicket) -> Void)?>(nil)
    /// Past answers: time-limited proceeds and rate windows.
    let warnLedger = Mutex(WarnLedger())
    /// Whether questions run without their answer timer (the simulator plays the timeout with
    /// ``WarnTicket/expire()``; tests).
    let warnTimersManual = Atomic<Bool>(false)

    /// Creates the library for `appID`; it is not started and not ready.
    ///
    /// - Parameters:
    ///   - appID: this app's bundle id.
    ///   - platform: the adapters: `ManagedApp.attach(_:delegate:)` (ShareBrokerLinux) makes the
    ///     real ones; `Platform.embedded(entitling:)` (ShareBrokerTesting) keeps everything in memory.
    ///   - configuration: what must exist before ``start(delegate:)``: the state folder, the
    ///     erasers, the secure-file folders, the sealed items' maximum age, the logger (see
    ///     ``Configuration``). It is fixed for the broker's life.
    public convenience init(appID: String, platform: Platform, configuration: Configuration = Configuration()) {
        self.init(appID: appID, device: DeviceApps(), platform: platform, configuration: configuration)
    }

    /// Creates the library for `appID` with the other apps on the device as known at start (the
    /// agent client, the simulator and tests know them; an app's broker learns them from the agent).
    package init(appID: String, device: DeviceApps, platform: Platform, configuration: Configuration = Configuration()) {
        self.appID = appID
        self.platform = platform
        self.webViews = configuration.webViews
        let wipeJournal = configuration.stateDirectory.map { WipeJournal(directory: $0) }
        self.wipeJournal = wipeJournal
        self.pasteboardWrites = PasteboardWriteLog(journalDirectory: wipeJournal?.directory,
                                                   pasteboardIdentity: platform.pasteboard.persistentIdentity)
        self.store = PolicyStore(initial: .initial(manifest: configuration.manifest, device: device,
                                                   secureServices: platform.secureServices.availability))
        self.keyRingGeneration = (platform.secureServices as? any KeyRingGenerationSource)?.keyRingGeneration
        self.lifecycle = Mutex(LifecycleState(erasers: configuration.erasers))
        var folders: [String] = []
        for folder in configuration.secureFileDirectories.map(Self.normalizedFolder) where !folders.contains(folder) {
            folders.append(folder)
        }
        self.secureFileDirectories = folders
        self.sealedItemMaximumAgeStore = Atomic<UInt64>(configuration.sealedItemMaximumAge)
        self.loggers = LogLevel.allCases.map { level in
            var copy = configuration.logger
            copy.logLevel = level.loggerLevel
            return copy
        }
    }

    /// `folder` without trailing slashes (the root stays `/`), so `a/b/` and `a/b` name one folder.
    static func normalizedFolder(_ folder: String) -> String {
        var folder = Substring(folder)
        while folder.count > 1 && folder.hasSuffix("/") { folder = folder.dropLast() }
        return String(folder)
    }

    /// The age bounds of sealed items on paste: ``Configuration/sealedItemMaximumAge`` and the
    /// tolerance for a seal time in the future (default 5 min). Tests change them.
    package var sealedItemLimits: SealedItemLimits {
        get {
            SealedItemLimits(maximumAge: sealedItemMaximumAgeStore.load(ordering: .relaxed),
                             futureTolerance: sealedItemFutureToleranceStore.load(ordering: .relaxed))
        }
        set {
            sealedItemMaximumAgeStore.store(newValue.maximumAge, ordering: .relaxed)
            sealedItemFutureToleranceStore.store(newValue.futureTolerance, ordering: .relaxed)
        }
    }

    /// Makes seal times and paste ages read `seconds` (Unix time) instead of the wall clock, or
    /// the wall clock again with `nil` (tests).
    package func setWallClock(to seconds: UInt64?) {
        fixedWallClock.store(seconds ?? 0, ordering: .relaxed)
    }

    /// Makes the bursts of blocked toolkit copies read `nanoseconds` as the monotonic time, or
    /// the real clock again with `nil` (tests).
    package func setMonotonicClock(to nanoseconds: UInt64?) {
        fixedMonotonicClock.store(nanoseconds ?? 0, ordering: .relaxed)
    }

    /// Now on `CLOCK_MONOTONIC`, in nanoseconds (or the time a test fixed).
    func monotonicNanoseconds() -> UInt64 {
        let fixed = fixedMonotonicClock.load(ordering: .relaxed)
        if fixed != 0 { return fixed }
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    /// Now, in Unix seconds, from the wall clock (or the time a test fixed).
    func wallClock() -> UInt64 {
        let fixed = fixedWallClock.load(ordering: .relaxed)
        return fixed != 0 ? fixed : SealClock.now()
    }

    /// The policy state in force (the snapshot and the group ring cached with it, one record:
    /// one lock and one retain) and the custodian's generation now (`nil` when it keeps none).
    @inline(__always)
    func clipboardState() -> (state: PolicyStore.State, keyRingGeneration: UInt64?) {
        // Read before the cache and before asking: a change after this read makes the next call ask again.
        let generation = keyRingGeneration?.current
        let state = store.state
        guard offlineTimersArmed.load(ordering: .relaxed) else { return (state, generation) }
        let adjusted = offlineAdjusted(state.snapshot)
        return (adjusted === state.snapshot ? state : PolicyStore.State(snapshot: adjusted, keyRing: state.keyRing), generation)
    }

    /// The group's key ring for this app: the one the custodian last handed out while the
    /// custodian's ``KeyRingGenerationSource/keyRingGeneration`` has not advanced since (no lock
    /// and lookup in the custodian per copy and paste), else the custodian's answer now, cached
    /// for that generation. A refusal is never cached and drops the cached ring.
    ///
    /// - Parameters:
    ///   - state: from ``clipboardState()``; a cached ring it holds lives as long as it does.
    ///   - generation: the generation ``clipboardState()`` read.
    /// - Throws: what the custodian's `keyRing(for:)` throws.
    @inline(__always)
    func groupKeyRing(_ state: PolicyStore.State, generation: UInt64?) throws(ShareBrokerError) -> KeyRing {
        if let generation, let cached = state.keyRing(at: generation) { return cached }
        return try custodianKeyRing(generation: generation)
    }

    /// The custodian's answer for this app's group ring now, cached for `generation` (if any); a
    /// refusal drops the cached ring.
    private func custodianKeyRing(generation: UInt64?) throws(ShareBrokerError) -> KeyRing {
        do {
            let ring = try platform.secureServices.keyRing(for: appID)
            if let generation {
                store.cacheKeyRing(CachedKeyRing(generation: generation, ring: ring))
            }
            return ring
        } catch {
            store.cacheKeyRing(nil)
            throw error
        }
    }

    /// Forgets the cached group ring (a retire: the ring is not kept alive by this broker).
    func forgetKeyRing() {
        store.cacheKeyRing(nil)
    }

    /// What the library itself holds, erased by every retire after the app's registered erasers:
    /// key material, the app's items on the general pasteboard, and the folders of its secure
    /// file stores. Their step names start with
    /// `sharebroker.`.
    var builtInErasers: [any SensitiveDataEraser] {
        [KeyMaterialEraser(secureServices: platform.secureServices, appID: appID,
                           forgetCachedRing: { [weak self] in self?.forgetKeyRing() }),
         PasteboardItemsEraser(pasteboard: platform.pasteboard, log: pasteboardWrites),
         SecureFilesEraser(directories: secureFileDirectories)]
    }

    /// Starts the library. It becomes ready when the first policy arrives (``apply(_:)``).
    ///
    /// If the wipe journal in the state folder holds a retire that a crash interrupted, `start` finishes that wipe
    /// before it returns, over the configuration's erasers and secure-file folders (given at
    /// `init`, so none can arrive too late), and reports it to the server sink. Throughout, ``policy()`` throws and every
    /// transfer fails closed; afterwards the snapshot is retired (every policy at its most
    /// restrictive, no config) and still not ready, so ``ShareBrokerDelegate/appConnectIsReady()``
    /// comes only with the first policy, after the wipe.
    public func start(delegate: any ShareBrokerDelegate) throws(ShareBrokerError) {
        try lifecycle.withLock { (state: inout LifecycleState) throws(ShareBrokerError) in
            guard !state.started else { throw .alreadyStarted }
            state.started = true
            delegateSlot.withLock { $0 = delegate }
            finishInterruptedWipe(erasers: state.erasers + builtInErasers)
        }
    }

    /// The delegate, taken without the update lock so transfers made from callbacks never wait on it.
    var delegate: (any ShareBrokerDelegate)? { delegateSlot.withLock { $0 } }

    /// The policies in force. Throws ``ShareBrokerError/notReady`` before the first policy.
    public func policy() throws(ShareBrokerError) -> PolicySnapshot {
        let snapshot = store.snapshot
        guard snapshot.isReady else { throw .notReady }
        return snapshot
    }

    /// The snapshot in force, ready or not, as an action sees it: past an offline period the
    /// user is not authorized even before a check applied the timers (``offlineAdjusted(_:)``).
    /// Decisions use this; apps should use ``policy()``.
    @usableFromInline
    package var currentSnapshot: PolicySnapshot {
        let snapshot = store.snapshot
        return offlineTimersArmed.load(ordering: .relaxed) ? offlineAdjusted(snapshot) : snapshot
    }

    /// The library's logger, at the level the policy sets. It never logs payloads or keys.
    var logger: Logger {
        let level = Int(store.snapshot.logLevel.rawValue)
        return loggers.indices.contains(level) ? loggers[level] : loggers[loggers.count - 1]
    }
}

extension LogLevel {
    /// The swift-log level that corresponds to this AppConnect level.
    public var loggerLevel: Logger.Level {
        switch self {
        case .error: .error
        case .warning: .warning
        case .status: .notice
        case .info: .info
        case .verbose: .debug
        case .debug: .trace
        }
    }
}
