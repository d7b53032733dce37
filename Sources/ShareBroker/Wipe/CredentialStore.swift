/// Why a stored credential could not be saved, read or deleted.
package enum CredentialStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The id is empty or holds NUL. Use a short printable id such as `oauth-refresh-token`.
    case invalidID
    /// The file system refused (see the wrapped error for the path and `errno`).
    case file(WipeFileError)
    /// Another kind of store failed; the message says what and what to do.
    case other(String)

    package var description: String {
        switch self {
        case .invalidID: "a credential id must not be empty nor contain NUL; use a short printable id"
        case .file(let error): error.description
        case .other(let message): message
        }
    }
}

/// Where the app keeps stored credentials (tokens, passwords) that a retire must delete.
///
/// The library only ever calls ``deleteCredential(id:)``, on retire, for each id registered with
/// ``SensitiveDataRegistry/registerCredential(id:)``. A host may back this with the platform's
/// keychain; `FileCredentialStore` is the embedded default.
package protocol CredentialStore: Sendable {
    /// Stores `secret` under `id`, replacing what was there.
    func saveCredential(_ secret: [UInt8], id: String) throws(CredentialStoreError)
    /// The secret stored under `id`, or `nil` when there is none.
    func loadCredential(id: String) throws(CredentialStoreError) -> [UInt8]?
    /// Deletes the secret stored under `id`, durably. Deleting an id that holds nothing succeeds:
    /// a retire interrupted by a crash deletes again at the next start.
    func deleteCredential(id: String) throws(CredentialStoreError)
}

/// The embedded default ``CredentialStore``: one file per credential in a folder of its own.
///
/// Files are named by the hex of the id (so no id can escape the folder), have mode 0600, and are
/// written atomically and durably (temporary file, fsync, rename, fsync of the folder). The
/// secrets are stored as given: encrypt them first if the device's disk is not encrypted.
package final class FileCredentialStore: CredentialStore {
    /// The folder that holds the credential files; created on the first save.
    package let directory: String

    /// Uses `directory` (absolute), which this store should have to itself.
    package init(directory: String) {
        self.directory = directory
    }

    /// The file that holds `id`.
    package func path(forID id: String) throws(CredentialStoreError) -> String {
        guard !id.isEmpty, !id.utf8.contains(0) else { throw .invalidID }
        let hex = id.utf8.map { byte in byte < 16 ? "0" + String(byte, radix: 16) : String(byte, radix: 16) }.joined()
        return directory + "/credential-" + hex
    }

    package func saveCredential(_ secret: [UInt8], id: String) throws(CredentialStoreError) {
        let path = try path(forID: id)
        do {
            try DurableFiles.makeDirectories(directory)
            try DurableFiles.writeAtomically(secret, to: path)
        } catch {
            throw .file(error)
        }
    }

    package func loadCredential(id: String) throws(CredentialStoreError) -> [UInt8]? {
        let path = try path(forID: id)
        do {
            return try DurableFiles.contents(of: path)
        } catch {
            throw .file(error)
        }
    }

    package func deleteCredential(id: String) throws(CredentialStoreError) {
        let path = try path(forID: id)
        do {
            try DurableFiles.removeFile(path)
        } catch {
            throw .file(error)
        }
    }
}
