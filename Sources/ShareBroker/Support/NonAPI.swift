// Entry points for the package's own benchmark and fuzz packages (Benchmarks/, Fuzz/). They are
// separate packages, so they cannot see `package` declarations; these few `@_spi` doors (the
// swift-nio model for non-API) give them what they measure or fuzz. They are NOT API: an app that
// imports them with `@_spi(...)` gets no stability promise, and they may change in any release.

import ShareBrokerCrypto

extension ShareBroker {
    /// Benchmarks only (not API): decides a copy of `characters` characters of the current
    /// identity's content without writing anything, as `copy` would, and returns what it would do.
    @_spi(Benchmarks) @inlinable
    public func benchmarkCopyDecision(characters: Int?) -> CopyAction {
        decideCopy(characters: characters).action
    }

    /// Benchmarks only (not API): decides a notification of the current identity's content, as
    /// ``notification(title:body:)`` would, and returns whether it may be posted.
    @_spi(Benchmarks) @inlinable
    public func benchmarkNotificationDecision() -> Bool {
        decideNotification().action != .blocked
    }

    /// Benchmarks only (not API): turns the offline timers on with the system's boot clock and no
    /// folder (what `ManagedApp` does with a folder).
    @_spi(Benchmarks)
    public func benchmarkEnableOfflineTimers() throws(ShareBrokerError) {
        do {
            try enableOfflineTimers(directory: nil)
        } catch {
            throw .offlineTimers(reason: error.description)
        }
    }

    /// Benchmarks only (not API): applies an offline policy (access check and wipe after these
    /// many seconds), as the agent's push would.
    @_spi(Benchmarks)
    public func benchmarkApplyOfflinePolicy(accessCheckSeconds: Int, wipeSeconds: Int) throws(ShareBrokerError) {
        try apply(PolicyUpdate(offline: OfflinePolicy(accessCheckSeconds: accessCheckSeconds, wipeSeconds: wipeSeconds)))
    }

    /// Benchmarks only (not API): checks the offline timers, as `ManagedApp` does every second;
    /// true while within the access-check period.
    @_spi(Benchmarks)
    public func benchmarkCheckOfflineTimers() throws(ShareBrokerError) -> Bool {
        if case .confirmed = try checkOfflineTimers() { return true }
        return false
    }
}

extension SecureFileStore {
    /// Benchmarks and fuzzing only (not API): a store over `directory` with these keys, outside
    /// any broker (no authorization, no retire). Apps open stores with
    /// ``ShareBroker/secureFiles(directory:maximumFileSize:)``.
    @_spi(Benchmarks) @_spi(Fuzzing)
    public static func withKeys(directory: String, fileKeys: FileKeyRing, legacyKeyRing: KeyRing? = nil,
                                policy: SecureFileIOPolicy = .required) -> SecureFileStore {
        SecureFileStore(directory: directory, fileKeys: fileKeys, legacyKeyRing: legacyKeyRing, policy: policy)
    }
}

/// The fuzz harnesses' door to the desktop clipboard's sealed-set codec (docs/FORMATS.md).
/// Fuzzing only: not API.
@_spi(Fuzzing) public enum SealedSetCodec {
    /// The most envelopes one set carries.
    public static var maxEnvelopes: Int { SealedSet.maxEnvelopes }

    /// Decodes a sealed set into its envelopes, or `nil` when the bytes are not one.
    public static func decode(_ bytes: [UInt8]) -> [[UInt8]]? {
        try? SealedSet.decode(bytes)
    }

    /// Encodes 1 ... ``maxEnvelopes`` envelopes.
    public static func encode(_ envelopes: [[UInt8]]) -> [UInt8] {
        SealedSet.encode(envelopes)
    }
}
