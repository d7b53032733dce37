import Logging

/// The part of ``ShareBroker`` that turns server pushes and device changes into snapshots,
/// delegate callbacks and acknowledgments. It is the only writer of snapshots.
struct LifecycleState: ~Copyable {
    var started = false
    /// The configuration's erasers (and, for the C interface's attached brokers only, those
    /// added after start: ``ShareBroker/addEraserAfterStart(_:)``).
    var erasers: [any SensitiveDataEraser]
}

extension ShareBroker {
    /// Applies a push from the management server.
    ///
    /// Sets the new values (one atomic swap), then invokes the callback of each value that
    /// changed, in a fixed order (auth, config, Open In, pasteboard, print, secure file I/O, log
    /// level), reporting each acknowledgment to the server sink. The update that makes the
    /// library ready invokes only ``ShareBrokerDelegate/appConnectIsReady()``. An update to
    /// ``AuthState/retired`` resets every policy to its most restrictive value and erases the
    /// config, then wipes what the registered erasers hold (journaled in the state folder's wipe journal,
    /// so a crash half way is finished at the next start), reports the wipe to the server sink,
    /// and announces only the authorization change.
    ///
    /// Every update is a confirmation for the offline timers (which `ManagedApp` runs);
    /// a confirmation that cannot be saved is logged, and counts in memory. An update that does
    /// not restate ``PolicyUpdate/auth`` after the timers held the authorization back gives it
    /// back, as `confirmPolicy()` does (its ``PolicyUpdate/authMessage``, if any, wins); one
    /// that restates it decides. After a wipe only an update that restates it authorizes again.
    ///
    /// The acknowledgments go to the platform's report sink (`RecordingReportSink` in
    /// ShareBrokerTesting keeps them for a test to read).
    public func apply(_ update: PolicyUpdate) throws(ShareBrokerError) {
        try applyReporting(update)
    }

    /// ``apply(_:)``, answering what the update did: the callbacks invoked, the acknowledgments
    /// reported, whether it wiped (the agent client, the C interface, the simulator, tests).
    @discardableResult
    package func applyReporting(_ update: PolicyUpdate) throws(ShareBrokerError) -> UpdateOutcome {
        // The confirmation first: a check racing this update sees it and holds nothing back.
        let (held, saveError) = recordConfirmation(release: true)
        if let saveError {
            logger.error("the offline timers could not save the confirmation", metadata: ["error": .string(saveError.description)])
        }
        var update = update
        if let held, update.auth == nil, store.snapshot.authState != .retired {
            update.auth = held.auth
            update.authMessage = update.authMessage ?? held.message
        }
        return try applyUnconfirmed(update)
    }

    /// Applies a policy the app kept from an earlier run (while the management agent cannot be
    /// reached), exactly as ``apply(_:)`` does, except that it is no confirmation: the offline
    /// timers go on counting from the last policy the agent delivered.
    @discardableResult
    package func applyCached(_ update: PolicyUpdate) throws(ShareBrokerError) -> UpdateOutcome {
        try applyUnconfirmed(update)
    }

    /// ``apply(_:)`` without counting as a confirmation: what the offline timers apply themselves.
    @discardableResult
    func applyUnconfirmed(_ update: PolicyUpdate) throws(ShareBrokerError) -> UpdateOutcome {
        defer { refreshOfflineTimers() }
        return try lifecycle.withLock { (state: inout LifecycleState) throws(ShareBrokerError) -> UpdateOutcome in
            guard state.started else { throw .notStarted }
            let old = store.snapshot
            if update.auth == .retired {
                return retire(from: old, message: update.authMessage, erasers: state.erasers + builtInErasers)
            }
            let next = old.with(
                isReady: true, authState: update.auth, authMessage: update.authMessage,
                openInSetting: update.openIn, pasteboardPolicy: update.pasteboard, printPolicy: update.print,
                secureFileIOPolicy: update.secureFileIO, logLevel: update.logLevel,
                dragAndDropPolicy: update.dragAndDrop, managedBrowserRequired: update.managedBrowserRequired,
                config: update.config, clipboardExceptionLength: update.clipboardExceptionLength,
                notificationPolicy: update.notifications, openFromSetting: update.openFrom, pasteInPolicy: update.pasteIn,
                offlinePolicy: update.offline, warnPolicy: update.warn)
            return install(next, replacing: old)
        }
    }

    /// Adds an app to the device, or updates it. Under "All AppConnect apps" the whitelist follows,
    /// and the app is told when it changed.
    @discardableResult
    package func updateDevice(_ app: DeviceApp) throws(ShareBrokerError) -> UpdateOutcome {
        try swap { old in
            var device = old.device
            device.upsert(app)
            return old.with(device: device)
        }
    }

    /// Replaces everything the library knows of the device at once: its apps (an app no longer
    /// listed is forgotten, so it leaves an "All AppConnect apps" whitelist) and its native mail
    /// ids. What the agent client does with each policy push, which describes the whole device.
    @discardableResult
    package func replaceDevice(_ device: DeviceApps) throws(ShareBrokerError) -> UpdateOutcome {
        try swap { $0.with(device: device) }
    }

    /// Secure services became available or unavailable (the key custodian, the agent client,
    /// reports it).
    @discardableResult
    package func setSecureServices(_ availability: SecureServicesAvailability) throws(ShareBrokerError) -> UpdateOutcome {
        try swap { $0.with(secureServices: availability) }
    }

    /// The app switched accounts: content from now on is managed or unmanaged. Decisions made
    /// after this call use the new identity. No callback, no acknowledgment.
    public func setIdentity(_ identity: ManagedIdentity) throws(ShareBrokerError) {
        _ = try swap { $0.with(identity: identity) }
    }

    /// Adds an eraser to a broker that was started already, for the C interface's
    /// `sb_broker_register_eraser` on brokers from `sb_broker_attach` (which starts them): later
    /// retires run it, but a retire a crash interrupted was finished at start without it. Swift
    /// apps give their erasers in ``Configuration/erasers``.
    package func addEraserAfterStart(_ eraser: any SensitiveDataEraser) {
        lifecycle.withLock { $0.erasers.append(eraser) }
    }

    // MARK: - Internals (called with the lifecycle lock held)

    /// Installs `transform(current)` under the lifecycle lock and announces what changed.
    private func swap(_ transform: (PolicySnapshot) -> PolicySnapshot) throws(ShareBrokerError) -> UpdateOutcome {
        try lifecycle.withLock { (state: inout LifecycleState) throws(ShareBrokerError) -> UpdateOutcome in
            guard state.started else { throw .notStarted }
            let old = store.snapshot
            return install(transform(old), replacing: old)
        }
    }

    private func install(_ next: PolicySnapshot, replacing old: PolicySnapshot) -> UpdateOutcome {
        store.install(next)
        logger.info("policy installed", metadata: [
            "generation": .stringConvertible(next.generation), "auth": .stringConvertible(next.authState.rawValue),
            "openIn": .stringConvertible(next.openInPolicy.rawValue),
            "pasteboard": .stringConvertible(next.pasteboardPolicy.rawValue),
            "secureServices": .stringConvertible(next.secureServices.rawValue)])
        let delegate = self.delegate
        guard let delegate else { return UpdateOutcome(generation: next.generation) }
        if !old.isReady && next.isReady {
            delegate.appConnectIsReady()
            return UpdateOutcome(changes: [.ready], generation: next.generation)
        }
        guard next.isReady else { return UpdateOutcome(generation: next.generation) }
        var outcome = UpdateOutcome(generation: next.generation)
        func acknowledge(_ change: PolicyChange, _ answer: Acknowledgment) {
            outcome.changes.append(change)
            guard let kind = change.acknowledgedKind else { return }
            outcome.acknowledgments.append(report(kind, answer, generation: next.generation))
        }
        if old.authState != next.authState || old.authMessage != next.authMessage {
            acknowledge(.auth, delegate.authStateChanged(to: next.authState, message: next.authMessage))
        }
        if old.config != next.config {
            acknowledge(.config, delegate.configChanged(to: next.config))
        }
        if old.openInPolicy != next.openInPolicy || old.openInWhitelist != next.openInWhitelist {
            acknowledge(.openIn, delegate.openInPolicyChanged(to: next.openInPolicy, whitelist: next.openInWhitelist))
        }
        if old.pasteboardPolicy != next.pasteboardPolicy {
            acknowledge(.pasteboard, delegate.pasteboardPolicyChanged(to: next.pasteboardPolicy))
        }
        if old.printPolicy != next.printPolicy {
            acknowledge(.print, delegate.printPolicyChanged(to: next.printPolicy))
        }
        if old.secureFileIOPolicy != next.secureFileIOPolicy {
            acknowledge(.secureFileIO, delegate.secureFileIOPolicyChanged(to: next.secureFileIOPolicy))
        }
        if old.logLevel != next.logLevel {
            delegate.logLevelChanged(to: next.logLevel)
            outcome.changes.append(.logLevel)
        }
        if old.secureServices != next.secureServices {
            delegate.secureServicesAvailabilityChanged(to: next.secureServices)
            outcome.changes.append(.secureServices)
        }
        return outcome
    }

    /// Reports one acknowledgment to the server. An authorization change answered
    /// "unsupported" is not allowed: it is reported as an error that says so.
    private func report(_ kind: AcknowledgedKind, _ answer: Acknowledgment, generation: UInt64) -> AcknowledgmentRecord {
        var answer = answer
        if kind == .auth && answer == .unsupported {
            logger.error("the app answered an authorization change with 'unsupported', which is not allowed; reported as error")
            answer = .error("authorization changes cannot be answered unsupported; every app must handle them")
        }
        let record = AcknowledgmentRecord(kind: kind, acknowledgment: answer, generation: generation)
        platform.reportSink.acknowledged(record)
        return record
    }

    private func retire(from old: PolicySnapshot, message: String?, erasers: [any SensitiveDataEraser]) -> UpdateOutcome {
        // Fail closed first: from this swap on every transfer is refused, then the data goes.
        let retired = old.retired(message: message ?? old.authMessage, isReady: true)
        store.install(retired)
        runJournaledWipe(Self.wipeSteps(for: erasers), erasers: erasers, resumed: false)
        var outcome = UpdateOutcome(wiped: true, generation: retired.generation)
        guard let delegate else { return outcome }
        if !old.isReady {
            delegate.appConnectIsReady()
            outcome.changes = [.ready]
            return outcome
        }
        if old.authState != retired.authState || old.authMessage != retired.authMessage {
            let answer = delegate.authStateChanged(to: .retired, message: retired.authMessage)
            outcome.changes.append(.auth)
            outcome.acknowledgments.append(report(.auth, answer, generation: retired.generation))
        }
        return outcome
    }
}

extension PolicySnapshot {
    /// The snapshot of a retired app: every policy at its most restrictive value, no config,
    /// the next generation (paste-in keeps the behaviour from before it existed: pasting clear
    /// items was never restricted, and a retired app shows no managed content to paste into). Secure services, manifest and device carry over.
    func retired(message: String, isReady: Bool) -> PolicySnapshot {
        PolicySnapshot(
            generation: generation &+ 1, isReady: isReady, authState: .retired, authMessage: message,
            openInSetting: .unauthorized, pasteboardPolicy: .unauthorized, printPolicy: .unauthorized,
            secureFileIOPolicy: .required, secureServices: secureServices, logLevel: .status,
            dragAndDropPolicy: .noApps, managedBrowserRequired: false, config: [:],
            manifest: manifest, device: device, identity: identity,
            clipboardExceptionLength: 0, notificationPolicy: .block, openFromSetting: .unauthorized,
            pasteInPolicy: .anyApp)
    }
}
