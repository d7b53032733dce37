import Synchronization

/// Why a location or a credential could not be registered.
package enum SensitiveDataRegistryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The path is not absolute, is `/`, or holds an empty, `.` or `..` component or NUL.
    /// Register the absolute, normalized path of the app's own folder or file.
    case invalidPath(String)
    /// The credential id is empty or holds NUL. Use a short printable id.
    case invalidCredentialID
    /// A credential was registered but the registry has no ``CredentialStore``.
    /// Create the registry with `SensitiveDataRegistry(credentialStore:)`.
    case noCredentialStore

    package var description: String {
        switch self {
        case .invalidPath(let path):
            "cannot register '\(path)': give an absolute path other than '/', without '.', '..' or empty components"
        case .invalidCredentialID:
            "a credential id must not be empty nor contain NUL; use a short printable id"
        case .noCredentialStore:
            "this registry has no credential store; create it with SensitiveDataRegistry(credentialStore:)"
        }
    }
}

/// What the app keeps sensitive data in, for a retire to erase: folders and files, and stored
/// credentials.
///
/// Register everything **before** ``ShareBroker/start(delegate:)``: a retire interrupted by a
/// crash is finished inside the next `start`, with what is registered at that moment.
///
/// ```swift
/// let registry = SensitiveDataRegistry(credentialStore: FileCredentialStore(directory: stateDir + "/credentials"))
/// try registry.registerLocation(documentsDir)
/// try registry.registerCredential(id: "oauth-refresh-token")
/// let broker = ShareBroker(appID: id, platform: platform,
///                          configuration: .init(stateDirectory: state, erasers: registry.erasers))
/// try broker.start(delegate: app)
/// ```
///
/// The registry provides two erasers (``erasers``): ``filesWipeName`` erases the registered
/// locations, ``credentialsWipeName`` deletes the registered credentials. Each reads the registry
/// when it runs, so locations registered later are erased too. Key material and pasteboard items
/// have erasers of their own, given in ``ShareBroker/Configuration/erasers``.
package final class SensitiveDataRegistry: Sendable {
    /// The wipe name of the eraser of registered folders and files.
    package static let filesWipeName = "files"
    /// The wipe name of the eraser of registered credentials.
    package static let credentialsWipeName = "credentials"

    /// Where registered credentials are stored, if the app uses stored credentials.
    package let credentialStore: (any CredentialStore)?
    private let registered = Mutex<(locations: [String], credentials: [String])>(([], []))

    /// Creates an empty registry.
    ///
    /// - Parameter credentialStore: where the app stores the credentials it will register;
    ///   `nil` when it stores none.
    package init(credentialStore: (any CredentialStore)? = nil) {
        self.credentialStore = credentialStore
    }

    /// Registers a folder or a file the app keeps sensitive data in.
    ///
    /// On retire a folder loses everything inside it (the folder itself stays, empty) and a file
    /// is deleted. Symbolic links are deleted, never followed; a file system mounted inside a
    /// folder is not entered (reported as not wiped). Registering a path twice is harmless.
    ///
    /// - Parameter path: an absolute path; `//` and a trailing `/` are tidied.
    /// - Throws: ``SensitiveDataRegistryError/invalidPath(_:)`` for a relative path, `/`, or one
    ///   with `.` or `..` components.
    package func registerLocation(_ path: String) throws(SensitiveDataRegistryError) {
        let normalized = try Self.normalize(path)
        registered.withLock { state in
            if !state.locations.contains(normalized) { state.locations.append(normalized) }
        }
    }

    /// Registers the id of a credential kept in ``credentialStore``; retire deletes it.
    package func registerCredential(id: String) throws(SensitiveDataRegistryError) {
        guard credentialStore != nil else { throw .noCredentialStore }
        guard !id.isEmpty, !id.utf8.contains(0) else { throw .invalidCredentialID }
        registered.withLock { state in
            if !state.credentials.contains(id) { state.credentials.append(id) }
        }
    }

    /// The registered locations, normalized, in the order of registration.
    package var locations: [String] { registered.withLock { $0.locations } }

    /// The registered credential ids, in the order of registration.
    package var credentialIDs: [String] { registered.withLock { $0.credentials } }

    /// The erasers to register with the broker: registered files, then (when there is a
    /// credential store) registered credentials.
    package var erasers: [any SensitiveDataEraser] {
        var list: [any SensitiveDataEraser] = [RegisteredFilesEraser(registry: self)]
        if credentialStore != nil { list.append(RegisteredCredentialsEraser(registry: self)) }
        return list
    }

    static func normalize(_ path: String) throws(SensitiveDataRegistryError) -> String {
        guard path.hasPrefix("/"), !path.utf8.contains(0) else { throw .invalidPath(path) }
        let components = path.split(separator: "/", omittingEmptySubsequences: true)
        guard !components.isEmpty, !components.contains(where: { $0 == "." || $0 == ".." }) else {
            throw .invalidPath(path)
        }
        return "/" + components.joined(separator: "/")
    }
}

/// Erases every location of a ``SensitiveDataRegistry``: unlinks, recursively, and fsyncs the
/// folders whose entries changed so the removal is durable.
///
/// Overwriting before unlinking is deliberately not done: on flash storage, copy-on-write and
/// journaling file systems an overwrite goes to new blocks and leaves the old ones in place, so
/// it only costs time. Erasure of the blocks is the job of the device's disk encryption.
package struct RegisteredFilesEraser: SensitiveDataEraser {
    /// The registry whose locations are erased.
    package let registry: SensitiveDataRegistry

    /// Creates the eraser of `registry`'s locations.
    package init(registry: SensitiveDataRegistry) {
        self.registry = registry
    }

    /// ``SensitiveDataRegistry/filesWipeName``.
    package var wipeName: String { SensitiveDataRegistry.filesWipeName }

    /// Erases every location, going on past failures; throws them all at the end.
    package func eraseSensitiveData() throws {
        let failures = registry.locations.flatMap { DurableFiles.eraseLocationForReport($0) }
        if !failures.isEmpty { throw SensitiveDataWipeError(failures: failures) }
    }
}

/// Deletes every credential id of a ``SensitiveDataRegistry`` from its ``CredentialStore``.
package struct RegisteredCredentialsEraser: SensitiveDataEraser {
    /// The registry whose credentials are deleted.
    package let registry: SensitiveDataRegistry

    /// Creates the eraser of `registry`'s credentials.
    package init(registry: SensitiveDataRegistry) {
        self.registry = registry
    }

    /// ``SensitiveDataRegistry/credentialsWipeName``.
    package var wipeName: String { SensitiveDataRegistry.credentialsWipeName }

    /// Deletes every registered credential, going on past failures; throws them all at the end.
    package func eraseSensitiveData() throws {
        guard let store = registry.credentialStore else { return }
        var failures: [String] = []
        for id in registry.credentialIDs {
            do {
                try store.deleteCredential(id: id)
            } catch {
                failures.append("credential '\(id)': \(error.description)")
            }
        }
        if !failures.isEmpty { throw SensitiveDataWipeError(failures: failures) }
    }
}

/// Some of what an eraser holds could not be erased; the rest was.
package struct SensitiveDataWipeError: Error, Sendable, Hashable, CustomStringConvertible {
    /// One line per item that could not be erased: what, why, and what to do.
    package var failures: [String]

    /// Creates an error.
    package init(failures: [String]) {
        self.failures = failures
    }

    package var description: String { failures.joined(separator: "; ") }
}
