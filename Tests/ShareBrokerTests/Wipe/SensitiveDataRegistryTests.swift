import Foundation
import ShareBroker
import Testing

@Suite("Sensitive data registry and its erasers")
struct SensitiveDataRegistryTests {
    @Test("locations must be absolute, not '/', without '.' or '..'; they are tidied and registered once")
    func locationRules() throws {
        let registry = SensitiveDataRegistry()
        for bad in ["", "relative/path", "/", "//", "/a/../b", "/a/./b", "/a\0b"] {
            #expect(throws: SensitiveDataRegistryError.invalidPath(bad)) { try registry.registerLocation(bad) }
        }
        try registry.registerLocation("/var//app/docs/")
        try registry.registerLocation("/var/app/docs")
        try registry.registerLocation("/var/app/notes.db")
        #expect(registry.locations == ["/var/app/docs", "/var/app/notes.db"])
    }

    @Test("credentials need a store and a valid id; the registry offers one eraser per kind")
    func credentialRules() throws {
        let bare = SensitiveDataRegistry()
        #expect(throws: SensitiveDataRegistryError.noCredentialStore) { try bare.registerCredential(id: "token") }
        #expect(bare.erasers.map(\.wipeName) == [SensitiveDataRegistry.filesWipeName])

        let registry = SensitiveDataRegistry(credentialStore: FileCredentialStore(directory: "/nonexistent"))
        #expect(throws: SensitiveDataRegistryError.invalidCredentialID) { try registry.registerCredential(id: "") }
        try registry.registerCredential(id: "token")
        try registry.registerCredential(id: "token")
        #expect(registry.credentialIDs == ["token"])
        #expect(registry.erasers.map(\.wipeName) == ["files", "credentials"])
    }

    @Test("the files eraser empties folders recursively (hidden and non-UTF-8 names too), deletes files, keeps the rest")
    func erasesFiles() throws {
        let scratch = try ScratchFolder()
        defer { scratch.cleanUp() }
        try scratch.file("docs/a.txt")
        try scratch.file("docs/.hidden")
        try scratch.file("docs/sub/deeper/b.bin")
        try FileManager.default.createDirectory(atPath: scratch.path + "/docs/empty", withIntermediateDirectories: true)
        let raw = Array((scratch.path + "/docs/").utf8CString.dropLast()) + [CChar(bitPattern: 0xFF), 0x78, 0]
        let fd = open(raw, O_WRONLY | O_CREAT, 0o600)
        #expect(fd >= 0)
        close(fd)
        try scratch.file("notes.db")
        try scratch.file("other/keep.txt")
        #expect(scratch.names(in: "docs").count == 5)

        let registry = SensitiveDataRegistry()
        try registry.registerLocation(scratch.path + "/docs")
        try registry.registerLocation(scratch.path + "/notes.db")
        try RegisteredFilesEraser(registry: registry).eraseSensitiveData()

        #expect(scratch.exists("docs"), "a registered folder stays, empty")
        #expect(scratch.names(in: "docs").isEmpty)
        #expect(!scratch.exists("notes.db"))
        #expect(scratch.exists("other/keep.txt"))
    }

    @Test("symbolic links are deleted, never followed")
    func linksNotFollowed() throws {
        let scratch = try ScratchFolder()
        defer { scratch.cleanUp() }
        let outside = try scratch.file("outside/precious.txt")
        try scratch.file("outside/dir/inner.txt")
        try FileManager.default.createDirectory(atPath: scratch.path + "/docs", withIntermediateDirectories: true)
        #expect(symlink(outside, scratch.path + "/docs/link-to-file") == 0)
        #expect(symlink(scratch.path + "/outside/dir", scratch.path + "/docs/link-to-dir") == 0)
        #expect(symlink(scratch.path + "/outside", scratch.path + "/registered-link") == 0)

        let registry = SensitiveDataRegistry()
        try registry.registerLocation(scratch.path + "/docs")
        try registry.registerLocation(scratch.path + "/registered-link")
        try RegisteredFilesEraser(registry: registry).eraseSensitiveData()

        #expect(scratch.names(in: "docs").isEmpty)
        #expect(!scratch.exists("registered-link"), "a registered link is deleted itself")
        #expect(scratch.exists("outside/precious.txt"))
        #expect(scratch.exists("outside/dir/inner.txt"))
    }

    @Test("erasing is idempotent: a second run, a half-erased folder, a missing location all succeed")
    func idempotent() throws {
        let scratch = try ScratchFolder()
        defer { scratch.cleanUp() }
        for i in 0 ..< 20 { try scratch.file("docs/\(i % 4)/f\(i).txt") }
        let registry = SensitiveDataRegistry()
        try registry.registerLocation(scratch.path + "/docs")
        try registry.registerLocation(scratch.path + "/never-created")
        try registry.registerLocation(scratch.path + "/gone/file.txt")
        // Half done, as a crash in the middle of the step would leave it.
        try FileManager.default.removeItem(atPath: scratch.path + "/docs/1")
        try FileManager.default.removeItem(atPath: scratch.path + "/docs/2/f2.txt")
        let eraser = RegisteredFilesEraser(registry: registry)
        try eraser.eraseSensitiveData()
        #expect(scratch.names(in: "docs").isEmpty)
        try eraser.eraseSensitiveData()
        #expect(scratch.names(in: "docs").isEmpty)
    }

    @Test("a location that cannot be erased is reported, and the other locations are still erased")
    func failedLocation() throws {
        let scratch = try ScratchFolder()
        defer { scratch.cleanUp() }
        try scratch.file("plain.txt")
        try scratch.file("docs/a.txt")
        let registry = SensitiveDataRegistry()
        try registry.registerLocation(scratch.path + "/plain.txt/inner")  // ENOTDIR, even for root
        try registry.registerLocation(scratch.path + "/docs")
        let error = #expect(throws: SensitiveDataWipeError.self) {
            try RegisteredFilesEraser(registry: registry).eraseSensitiveData()
        }
        #expect(error?.failures.count == 1)
        #expect(error?.description.contains("plain.txt/inner") == true)
        #expect(error?.description.contains("errno \(ENOTDIR)") == true)
        #expect(scratch.names(in: "docs").isEmpty)
    }

    @Test("what cannot be removed is reported with its path and errno, and the rest is still removed",
          .enabled(if: geteuid() != 0, "root ignores folder permissions"))
    func partialFailure() throws {
        let scratch = try ScratchFolder()
        defer {
            chmod(scratch.path + "/docs/locked", 0o700)
            scratch.cleanUp()
        }
        try scratch.file("docs/locked/stuck.txt")
        try scratch.file("docs/free.txt")
        try scratch.file("docs/zfree/b.txt")
        #expect(chmod(scratch.path + "/docs/locked", 0o500) == 0)
        let registry = SensitiveDataRegistry()
        try registry.registerLocation(scratch.path + "/docs")
        let error = #expect(throws: SensitiveDataWipeError.self) {
            try RegisteredFilesEraser(registry: registry).eraseSensitiveData()
        }
        #expect(error?.description.contains("stuck.txt") == true)
        #expect(error?.description.contains("errno \(EACCES)") == true)
        #expect(!scratch.exists("docs/free.txt"))
        #expect(!scratch.exists("docs/zfree"))
    }

    @Test("the file credential store saves, loads and deletes; ids cannot escape its folder")
    func credentialStore() throws {
        let scratch = try ScratchFolder()
        defer { scratch.cleanUp() }
        let store = FileCredentialStore(directory: scratch.path + "/credentials")
        try store.saveCredential(Array("s3cr3t".utf8), id: "../../etc/passwd")
        #expect(try store.loadCredential(id: "../../etc/passwd") == Array("s3cr3t".utf8))
        let path = try store.path(forID: "../../etc/passwd")
        #expect(path.hasPrefix(scratch.path + "/credentials/credential-"))
        #expect(!path.dropFirst(scratch.path.count + 1).contains("/credentials/../"))
        var stats = stat()
        #expect(stat(path, &stats) == 0)
        #expect(stats.st_mode & 0o777 == 0o600)
        try store.deleteCredential(id: "../../etc/passwd")
        #expect(try store.loadCredential(id: "../../etc/passwd") == nil)
        try store.deleteCredential(id: "never-stored")
        #expect(throws: CredentialStoreError.invalidID) { try store.saveCredential([], id: "") }
    }

    @Test("the credentials eraser deletes every registered credential and leaves the others")
    func erasesCredentials() throws {
        let scratch = try ScratchFolder()
        defer { scratch.cleanUp() }
        let store = FileCredentialStore(directory: scratch.path + "/credentials")
        let registry = SensitiveDataRegistry(credentialStore: store)
        try store.saveCredential(Array("a".utf8), id: "oauth")
        try store.saveCredential(Array("b".utf8), id: "unregistered")
        try registry.registerCredential(id: "oauth")
        try registry.registerCredential(id: "refresh-never-saved")
        try RegisteredCredentialsEraser(registry: registry).eraseSensitiveData()
        #expect(try store.loadCredential(id: "oauth") == nil)
        #expect(try store.loadCredential(id: "unregistered") == Array("b".utf8))
    }
}
