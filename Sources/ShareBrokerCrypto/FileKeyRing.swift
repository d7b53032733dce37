#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CSodium
import Synchronization

/// One app's secure-file keys: every generation the key custodian ever made for this app, newest
/// first. The newest seals new secure files (format version 2); every generation opens the files
/// sealed under it.
///
/// File keys are per app: the custodian (the agent, or `InProcessKeyCustodian` in tests) hands an
/// app its own generations only, never another app's, so an authorized app that holds the
/// group's ``KeyRing`` still cannot open another app's secure files. Unlike a ``KeyRing``, which
/// keeps a few recent keys, a file key ring drops no generation: each one protects data at rest.
///
/// ```swift
/// let keys = try FileKeyRing.generate()          // one generation
/// let next = try keys.advanced()                 // a new generation seals; the old one still opens
/// ```
///
/// Each key is 32 random bytes in `sodium_malloc` memory (the same guarded, move-only container as
/// a group key, ``GroupKey``), zeroed when the ring is wiped or the last ring holding it is
/// dropped. A ring is immutable apart from ``wipe()``; rings made by ``advanced()`` share the keys
/// they have in common. Neither the description nor the mirror shows key bytes, only key ids.
public final class FileKeyRing: Sendable, CustomStringConvertible, CustomReflectable {
    /// The most generations a ring holds (and a key frame carries); a custodian stops making new
    /// generations for an app that has this many (it keeps sealing under the newest).
    public static let maximumGenerations = 4096

    /// Every generation, newest (the one that seals) first.
    package let boxes: [KeyBox]
    private let wipedFlag = Atomic<Bool>(false)

    package init(boxes: [KeyBox]) {
        self.boxes = boxes
    }

    /// A ring of one fresh random key with a random 32-bit id.
    ///
    /// - Throws: ``SealingError/sodiumInitFailed``, ``SealingError/outOfSecureMemory``.
    public static func generate() throws(SealingError) -> FileKeyRing {
        try Sodium.ensureInitialized()
        let key = try GroupKey.generate(id: randombytes_random())
        return FileKeyRing(boxes: [KeyBox(key: key, nonces: .shared)])
    }

    /// A ring made of keys delivered by a custodian, newest (the one that seals) first. Each key
    /// is copied into guarded memory; zero your buffers afterwards.
    ///
    /// - Throws: ``SealingError/invalidKeyLength`` if there is no key, more than
    ///   ``maximumGenerations``, a key that is not 32 bytes, or two keys sharing an id;
    ///   ``SealingError/sodiumInitFailed``; ``SealingError/outOfSecureMemory``.
    public convenience init(importing keys: [KeyRing.LentKey]) throws(SealingError) {
        try Sodium.ensureInitialized()
        guard !keys.isEmpty, keys.count <= Self.maximumGenerations,
              Set(keys.map(\.id)).count == keys.count else { throw .invalidKeyLength }
        var boxes: [KeyBox] = []
        boxes.reserveCapacity(keys.count)
        for key in keys {
            boxes.append(KeyBox(key: try GroupKey(id: key.id, importing: key.bytes), nonces: .shared))
        }
        self.init(boxes: boxes)
    }

    /// A ring over the very keys of `ring` (shared, not copied: wiping either wipes both), for
    /// tests of the secure file format that predate per-app file keys. Never hand an app a
    /// group key as a file key.
    package convenience init(sharingKeysOf ring: KeyRing) {
        self.init(boxes: [ring.current] + ring.previous)
    }

    /// The id of the key that seals new files.
    public var currentKeyID: UInt32 { boxes[0].id }

    /// Every key id, newest first.
    public var keyIDs: [UInt32] { boxes.map(\.id) }

    /// How many generations the ring holds.
    public var count: Int { boxes.count }

    /// Whether ``wipe()`` was called on this ring.
    public var isWiped: Bool { wipedFlag.load(ordering: .acquiring) }

    /// Whether this ring can make another generation (it holds fewer than ``maximumGenerations``).
    public var canAdvance: Bool { boxes.count < Self.maximumGenerations }

    /// A new ring whose newest generation is a fresh key (random bytes, an id unused in this
    /// ring) and which keeps every key of this one for opening. This ring is unchanged. A ring
    /// that already holds ``maximumGenerations`` is returned as it is (no key is ever dropped,
    /// so it keeps sealing under its newest generation; see ``canAdvance``).
    ///
    /// - Throws: ``SealingError/wiped`` if this ring was wiped; ``SealingError/outOfSecureMemory``.
    public func advanced() throws(SealingError) -> FileKeyRing {
        guard !isWiped else { throw .wiped }
        guard canAdvance else { return self }
        let taken = Set(keyIDs)
        var id = randombytes_random()
        while taken.contains(id) { id = randombytes_random() }
        let key = try GroupKey.generate(id: id)
        return FileKeyRing(boxes: [KeyBox(key: key, nonces: .shared)] + boxes)
    }

    /// The box holding key `id`, or `nil`.
    package func box(for id: UInt32) -> KeyBox? {
        boxes.first { $0.id == id }
    }

    /// Lends `body` every key, newest first, for a custodian to persist or to send to the app
    /// that owns them. The pointers are valid only inside `body` and point into guarded memory:
    /// copy what you need into a buffer you zero afterwards, never into a `String`, and never log
    /// it.
    ///
    /// - Throws: ``SealingError/wiped`` if the ring (or one of its keys) was wiped.
    public func exportKeys<R>(_ body: ([KeyRing.LentKey]) -> R) throws(SealingError) -> R {
        guard !isWiped else { throw .wiped }
        var lent: [KeyRing.LentKey] = []
        lent.reserveCapacity(boxes.count)
        return try Self.lend(boxes[...], lent: &lent, body)
    }

    private static func lend<R>(_ boxes: ArraySlice<KeyBox>, lent: inout [KeyRing.LentKey],
                                _ body: ([KeyRing.LentKey]) -> R) throws(SealingError) -> R {
        guard let box = boxes.first else { return body(lent) }
        return try box.withKey { (key) throws(SealingError) -> R in
            lent.append((box.id, UnsafeRawBufferPointer(start: key, count: GroupKey.byteCount)))
            return try lend(boxes.dropFirst(), lent: &lent, body)
        }
    }

    /// Zeroes every key this ring holds, now (shared keys are zeroed for the rings that share
    /// them too); afterwards secure files can no longer be sealed or opened with it.
    public func wipe() {
        wipedFlag.store(true, ordering: .releasing)
        for box in boxes { box.wipe() }
    }

    /// The key ids and whether the ring is wiped; never key bytes.
    public var description: String {
        "FileKeyRing(\(keyIDs.map(KeyIDFormat.hex).joined(separator: ", "))\(isWiped ? ", wiped" : ""))"
    }

    /// A mirror with the key ids and the wiped flag only, so `dump` shows no key material.
    public var customMirror: Mirror {
        Mirror(self, children: ["keyIDs": keyIDs.map(KeyIDFormat.hex), "isWiped": isWiped], displayStyle: .class)
    }
}
