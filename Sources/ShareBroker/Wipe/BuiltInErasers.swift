import Synchronization

/// Remembers the pasteboard change count of this app's last write, so a retire can take back
/// what the app wrote (and only that: a later write by another app is left alone).
final class PasteboardWriteLog: Sendable {
    private let changeCount = Mutex<Int?>(nil)

    func record(_ count: Int) { changeCount.withLock { $0 = count } }
    var last: Int? { changeCount.withLock { $0 } }
}

/// Retire step "sharebroker.pasteboard": removes this app's items from the general pasteboard, if the
/// pasteboard still holds what the app last wrote.
struct PasteboardItemsEraser: SensitiveDataEraser {
    let pasteboard: any Pasteboard
    let log: PasteboardWriteLog
    var wipeName: String { "sharebroker.pasteboard" }

    func eraseSensitiveData() throws {
        guard let count = log.last else { return }
        pasteboard.clear(ifChangeCount: count)
    }
}

/// Retire step "sharebroker.keys": the key custodian forgets and zeroes this app's key material and never
/// hands it a key that seals new items.
struct KeyMaterialEraser: SensitiveDataEraser {
    let secureServices: any SecureServices
    let appID: String
    var wipeName: String { "sharebroker.keys" }

    func eraseSensitiveData() throws {
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
