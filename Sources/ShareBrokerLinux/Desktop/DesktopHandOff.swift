#if canImport(Glibc)
import Glibc
#endif
import ShareBroker

/// What a desktop hand-off did.
public struct DesktopHandOffResult: Sendable, Hashable {
    /// The broker's decision and the file handed over (the private copy or the dummy; an empty
    /// path when nothing was handed over).
    public var transfer: TransferResult
    /// The desktop app id that was started, or `nil` when nothing was started (the unknown-target
    /// channel under a whitelist, or an adapter made with `startsApps: false`).
    public var started: String?
    /// The exact path of the file handed over, as bytes (empty when nothing was handed over):
    /// ``transfer``'s path shows a name that is not UTF-8 with U+FFFD, this one is the file's.
    public var pathBytes: [UInt8]
}

/// Open In on a Linux desktop: the broker decides, then the target's desktop entry is started
/// through GIO with a private copy of the document (allowed) or an empty dummy with a mangled
/// name (blocked; the app's blocked-attempt callback fires).
///
/// * Targets are desktop app ids, resolved exactly through ``DesktopApps`` (GIO:
///   `XDG_DATA_HOME`, `XDG_DATA_DIRS`, Flatpak exports). Bad input (an unknown id, an entry that
///   does not parse or has no `Exec`, a bad document name, a vanished or non-regular file) is an
///   error raised before anything is decided or started.
/// * Files go into a fresh folder under `$XDG_RUNTIME_DIR/app/<app-id>/` (mode 0700, file 0600):
///   GIO passes paths, never copies, so the app only ever sees the broker's own copy.
/// * ``ShareBroker/TransferChannel/activitySheet`` is the channel that cannot know the target
///   (`xdg-open`, the portal's "ask"): the app the desktop would pick for the document's type
///   gets the document when allowed, the dummy under an unauthorized policy, and under a
///   whitelist nothing is started at all.
public final class DesktopHandOff: Sendable {
    /// The target id reported for the unknown-target channel.
    public static let unknownTarget = "(the user's choice)"

    /// The desktop: GIO unless a test gives another.
    public let desktop: any DesktopApps
    /// The session's runtime folder (`XDG_RUNTIME_DIR`).
    public let runtimeDirectory: String
    /// Whether apps are started (false: the files are prepared and nothing is started; for
    /// benchmarks of the hand-off's own cost).
    public let startsApps: Bool

    /// Uses `runtimeDirectory`, else `$XDG_RUNTIME_DIR`.
    public init(desktop: any DesktopApps = GIODesktop(), runtimeDirectory: String? = nil,
                startsApps: Bool = true) throws(DesktopHandOffError) {
        guard let runtime = runtimeDirectory ?? getenv("XDG_RUNTIME_DIR").map({ String(cString: $0) }),
              runtime.hasPrefix("/") else {
            throw .runtimeFolder(path: "$XDG_RUNTIME_DIR", reason: "it is not set; run inside a desktop session or set it to a private folder of this user's")
        }
        self.desktop = desktop
        self.runtimeDirectory = runtime
        self.startsApps = startsApps
    }

    /// The broker's own folders, which no document handed over may be in or link into: the
    /// hand-off folders under the runtime folder (resolved, as the documents' paths are).
    private var brokerFolders: [[UInt8]] {
        let apps = Array((runtimeDirectory + "/app").utf8)
        guard let resolved = realpath(PrivateCopy.cPath(apps), nil) else { return [apps] }
        defer { free(resolved) }
        let path = Array(UnsafeRawBufferPointer(start: resolved, count: strlen(resolved)))
        return path == apps ? [apps] : [apps, path]
    }

    /// Whether `name` may be handed over: not empty, `.` or `..`, no `/` or NUL.
    public static func isValidDocumentName(_ name: String) -> Bool {
        isValidDocumentName(Array(name.utf8))
    }

    /// Whether the name `name` (its bytes: file names need not be UTF-8) may be handed over: not
    /// empty, `.` or `..`, no `/` or NUL.
    public static func isValidDocumentName(_ name: [UInt8]) -> Bool {
        !(name.isEmpty || name == [0x2E] || name == [0x2E, 0x2E] || name.contains(UInt8(ascii: "/")) || name.contains(0))
    }

    /// Hands the file at `path` to `target` (ignored on the unknown-target channel) under the
    /// name `name` (default: the file's own name).
    public func openIn(file path: String, named name: String? = nil, target: String,
                       via channel: TransferChannel = .documentInteraction,
                       broker: ShareBroker) throws(DesktopHandOffError) -> DesktopHandOffResult {
        try openIn(filePath: Array(path.utf8), named: name.map { Array($0.utf8) }, target: target, via: channel, broker: broker)
    }

    /// Hands the file at `path` to `target`, as ``openIn(file:named:target:via:broker:)``, with
    /// the path and the name as bytes: file names are bytes, and one that is not UTF-8 is handed
    /// over under exactly its own bytes (the broker decides and reports on a readable form of it,
    /// invalid bytes shown as U+FFFD; ``DesktopHandOffResult/pathBytes`` is the copy's real path).
    public func openIn(filePath path: [UInt8], named name: [UInt8]? = nil, target: String,
                       via channel: TransferChannel = .documentInteraction,
                       broker: ShareBroker) throws(DesktopHandOffError) -> DesktopHandOffResult {
        let shownName = name ?? Self.lastComponent(path)
        guard Self.isValidDocumentName(shownName) else { throw .invalidDocumentName }
        let source = try PrivateCopy.Source(path: path, brokerFolders: brokerFolders)
        return try handOff(name: shownName, target: target, via: channel, broker: broker) { destination throws(DesktopHandOffError) in
            try PrivateCopy.copy(source, to: destination)
        }
    }

    /// Hands an in-memory document, `bytes` named `name`, to `target`.
    public func openIn(_ bytes: [UInt8], named name: String, target: String,
                       via channel: TransferChannel = .documentInteraction,
                       broker: ShareBroker) throws(DesktopHandOffError) -> DesktopHandOffResult {
        guard Self.isValidDocumentName(name) else { throw .invalidDocumentName }
        return try handOff(name: Array(name.utf8), target: target, via: channel, broker: broker) { destination throws(DesktopHandOffError) in
            try PrivateCopy.write(bytes, to: destination)
        }
    }

    private func handOff(name nameBytes: [UInt8], target: String, via channel: TransferChannel, broker: ShareBroker,
                         deliver: ([UInt8]) throws(DesktopHandOffError) -> Void) throws(DesktopHandOffError) -> DesktopHandOffResult {
        let unknownTarget = channel == .activitySheet
        // The broker decides on a readable form of the name; the file keeps the name's bytes.
        let name = String(decoding: nameBytes, as: UTF8.self)
        // A known target is resolved first: an unknown or broken entry starts nothing and is not
        // a policy decision.
        let known: DesktopEntry? = unknownTarget ? nil : try desktop.entry(for: target)
        let reported = unknownTarget ? Self.unknownTarget : target
        var failure: DesktopHandOffError?
        var started: String?
        var handedOver: [UInt8] = []
        do {
            let transfer = try broker.openIn(documentNamed: name, target: reported, via: channel) { request throws(ShareBrokerError) in
                do throws(DesktopHandOffError) {
                    if request.decision.rule == .activitySheetUnderWhitelist {
                        // The user would pick the app after the decision: under a whitelist no
                        // app may get even the dummy's arrival. Nothing is written or started.
                        return ""
                    }
                    let entry: DesktopEntry
                    if let known { entry = known } else { entry = try pickedEntry(forDocumentNamed: name) }
                    let folder = try PrivateCopy.makeFolder(runtime: runtimeDirectory, appID: entry.id)
                    let file = PrivateCopy.join(folder, request.delivers ? nameBytes : Array(request.name.utf8))
                    do throws(DesktopHandOffError) {
                        if request.delivers {
                            try deliver(file)
                        } else {
                            try PrivateCopy.write(DummyFile.contents, to: file)
                        }
                        if startsApps {
                            try desktop.launch(entry, filePath: file)
                            started = entry.id
                        }
                    } catch {
                        PrivateCopy.discard(file: file, folder: folder)
                        throw error
                    }
                    handedOver = file
                    return String(decoding: file, as: UTF8.self)
                } catch {
                    failure = error
                    throw .handOffFailed(reason: error.description)
                }
            }
            return DesktopHandOffResult(transfer: transfer, started: started, pathBytes: handedOver)
        } catch {
            if let failure { throw failure }
            throw .transfer(error)
        }
    }

    /// The app the desktop opens files of this name's type with.
    private func pickedEntry(forDocumentNamed name: String) throws(DesktopHandOffError) -> DesktopEntry {
        let picked = desktop.handler(forFileNamed: name)
        guard let id = picked.appID else { throw .noHandlerForType(picked.contentType) }
        return try desktop.entry(for: id)
    }

    private static func lastComponent(_ path: [UInt8]) -> [UInt8] {
        guard let slash = path.lastIndex(of: UInt8(ascii: "/")) else { return path }
        return Array(path[(slash + 1)...])
    }
}
