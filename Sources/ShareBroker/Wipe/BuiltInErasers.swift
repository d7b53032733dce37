import Synchronization

/// Remembers the pasteboard change count of this app's last write, so a retire can take back
/// what the app wrote (and only that: a later write by another app is left alone).
///
/// When the pasteboard outlives its writers (``Pasteboard/persistentIdentity``) and the app
/// gave a wipe journal, the record is also kept in the journal's folder (file
/// `pasteboard-write`: the pasteboard's identity and the change count; atomic, not fsynced), so
/// a retire after a restart still clears what an earlier run wrote. Keeping it is best effort:
/// a copy never fails because the record could not be written.
final class PasteboardWriteLog: Sendable {
    /// This run's last write, ``none`` before the first one: an atomic, not a lock, as every copy
    /// writes it and every paste reads it.
    private let changeCount = Atomic<Int>(none)
    /// No write recorded. A pasteboard never gives this change count (they count up from 0); one
    /// that did would read as no write, so a retire would leave that item in place.
    private static let none = Int.min
    /// The record file and the pasteboard identity it is for, when persisted.
    private let persisted: (path: String, identity: String)?
    /// Whether the pasteboard outlives this process (it has a persistent identity) while the
    /// record does not (no state folder): what an earlier process of the app wrote is unknown.
    let earlierWritesUnknown: Bool

    /// The file name of the persisted record, in the wipe journal's folder.
    static let fileName = "pasteboard-write"

    init(journalDirectory: String? = nil, pasteboardIdentity: String? = nil) {
        if let journalDirectory, let pasteboardIdentity {
            persisted = (journalDirectory + "/" + Self.fileName, pasteboardIdentity)
        } else {
            persisted = nil
        }
        earlierWritesUnknown = pasteboardIdentity != nil && journalDirectory == nil
    }

    func record(_ count: Int) {
        changeCount.store(count, ordering: .releasing)
        guard let persisted else { return }
        let text = "sharebroker-pasteboard-write 1\n\(persisted.identity)\n\(count)\n"
        do throws(WipeFileError) {
            try DurableFiles.makeDirectories(DurableFiles.parent(of: persisted.path))
            try DurableFiles.writeAtomically(Array(text.utf8), to: persisted.path, durable: false)
        } catch {
            // Best effort: the in-memory record still serves this run.
        }
    }

    /// This run's last write, else the one an earlier run recorded for the same pasteboard.
    var last: Int? {
        let count = changeCount.load(ordering: .acquiring)
        if count != Self.none { return count }
        guard let persisted, let bytes = try? DurableFiles.contents(of: persisted.path),
              bytes.count <= 64 * 1024 else { return nil }
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count >= 3, lines[0] == "sharebroker-pasteboard-write 1", lines[1] == persisted.identity,
              let count = Int(lines[2]) else { return nil }
        return count
    }

    /// Forgets the record (after a retire took the item back or found it replaced).
    func forget() {
        changeCount.store(Self.none, ordering: .releasing)
        if let persisted { try? DurableFiles.removeFile(persisted.path) }
    }
}

/// Retire step "sharebroker.pasteboard": removes this app's items from the general pasteboard, if the
/// pasteboard still holds what the app last wrote (this run's write, or for a pasteboard that
/// outlives its writers, what an earlier run recorded).
struct PasteboardItemsEraser: SensitiveDataEraser {
    let pasteboard: any Pasteboard
    let log: PasteboardWriteLog
    var wipeName: String { "sharebroker.pasteboard" }

    func eraseSensitiveData() throws {
        guard let count = log.last else {
            // Nothing recorded: nothing to do, unless an earlier process of the app may have
            // written to a pasteboard that outlives it, and left no record: say so rather than
            // report an erasure that did not happen.
            if log.earlierWritesUnknown { throw PasteboardWritesUnknown() }
            return
        }
        pasteboard.clear(ifChangeCount: count)
        log.forget()
    }
}

/// A retire could not know what an earlier process of the app wrote to the pasteboard.
struct PasteboardWritesUnknown: Error, CustomStringConvertible {
    var description: String {
        "this process wrote nothing to the pasteboard, and the app keeps no state folder, so what an earlier process of the app wrote there is unknown and was not erased; clear the pasteboard, and give the app a state folder (ShareBroker.Configuration.stateDirectory) so retires can find earlier writes"
    }
}

/// Retire step "sharebroker.keys": the key custodian forgets and zeroes this app's key material and never
/// hands it a key that seals new items.
/// The broker's cached ring is dropped first (the custodian's relinquish changes its generation
/// too, so the cached ring would not be used again either way).
struct KeyMaterialEraser: SensitiveDataEraser {
    let secureServices: any SecureServices
    let appID: String
    /// Drops the broker's cached group ring.
    let forgetCachedRing: @Sendable () -> Void
    var wipeName: String { "sharebroker.keys" }

    func eraseSensitiveData() throws {
        forgetCachedRing()
        try secureServices.relinquishKeys(for: appID)
    }
}

/// Retire step "sharebroker.secure-files": erases everything in the folders of the secure file
/// stores the broker handed out. The group key stays with the custodian for the other apps, so
/// the encrypted files themselves must go.
struct SecureFilesEraser: SensitiveDataEraser {
    let directories: [String]
    var wipeName: String { "sharebroker.secure-files" }

    func eraseSensitiveData() throws {
        let failures = directories.flatMap { DurableFiles.eraseLocationForReport($0) }
        if !failures.isEmpty { throw SensitiveDataWipeError(failures: failures) }
    }
}
