import Foundation
@testable import ShareBrokerAgent
import Testing

/// Issue 30: the agent refused real apps whose names merely start like an interpreter's
/// (`shotwell`, `nodepad`, `sharebroker` itself installed in /usr/bin), and missed interpreters
/// installed after it started. Interpreters are known by exact or versioned names, then by being
/// the same file or the same bytes; the table is read again when a folder changes.
@Suite("interpreter table")
struct InterpreterTableTests {
    @Test("Exact and versioned names are interpreters; apps named like them are not")
    func names() {
        for name in ["python", "python3", "python3.11", "python3.7m", "perl", "perl5.36", "lua5.4", "guile-3.0", "node",
                     "nodejs", "sh", "bash", "busybox", "java", "env", "awk", "mawk", "Rscript", "ld-linux-x86-64.so.2",
                     "ld-musl-x86_64.so.1", "php8.2", "tclsh8.6", "ruby3.1"] {
            #expect(InterpreterTable.isInterpreterName(name), "\(name) is an interpreter")
        }
        for name in ["shotwell", "nodepad", "sharebroker", "sharebrokerd", "shred", "envsubst", "python3-config",
                     "python3.11-config", "perlbug", "javac", "bashbug", "lualatex", "sh-", "python.", "node_modules",
                     "gdbus", "ld-linux-helper", "awkward", "rsync", "shotwell3"] {
            #expect(!InterpreterTable.isInterpreterName(name), "\(name) is not an interpreter")
        }
    }

    /// A folder of "system" programs and a folder of registered apps, in a temporary tree.
    struct Tree {
        let root: String
        var system: String { root + "/usr-bin" }
        var apps: String { root + "/opt" }

        init() throws {
            root = NSTemporaryDirectory() + "interpreters-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: root + "/usr-bin", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: root + "/opt", withIntermediateDirectories: true)
        }

        /// An executable file of `bytes` at `path`.
        func write(_ path: String, _ bytes: String) throws {
            try Data(bytes.utf8).write(to: URL(fileURLWithPath: path))
            #expect(chmod(path, 0o755) == 0)
        }

        func check(_ table: InterpreterTable, _ path: String) -> Bool {
            var info = stat()
            #expect(stat(path, &info) == 0)
            return table.contains(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size)) {
                PeerIdentifier.sha256(ofFile: path)
            }
        }

        func remove() { try? FileManager.default.removeItem(atPath: root) }
    }

    @Test("A copy or hard link of an interpreter is one; apps named like interpreters, and their copies, are not")
    func sameFileOrSameBytes() throws {
        let tree = try Tree()
        defer { tree.remove() }
        try tree.write(tree.system + "/python3.11", "the python interpreter")
        try tree.write(tree.system + "/shotwell", "a photo manager of 31 bytes....")
        try tree.write(tree.system + "/nodepad", "an editor")
        try tree.write(tree.system + "/sharebroker", "the host tool")
        let table = InterpreterTable(folders: [tree.system])

        try tree.write(tree.apps + "/copied-python", "the python interpreter")
        #expect(link(tree.system + "/python3.11", tree.apps + "/linked-python") == 0)
        try tree.write(tree.apps + "/same-size-other-bytes", "the pythob interpreter")
        #expect(tree.check(table, tree.apps + "/copied-python"), "a copy of python3.11")
        #expect(tree.check(table, tree.apps + "/linked-python"), "a hard link of python3.11")
        #expect(!tree.check(table, tree.apps + "/same-size-other-bytes"), "same size, other bytes")
        // The old prefix rule refused these (sh..., node..., sh...).
        for app in ["shotwell", "nodepad", "sharebroker"] {
            #expect(!tree.check(table, tree.system + "/" + app), "\(app) is an app")
            try tree.write(tree.apps + "/copy-of-" + app, try String(contentsOfFile: tree.system + "/" + app, encoding: .utf8))
            #expect(!tree.check(table, tree.apps + "/copy-of-" + app), "a copy of \(app) is an app")
        }
    }

    @Test("An interpreter installed after the first check is known at the next one")
    func readAgainWhenAFolderChanges() throws {
        let tree = try Tree()
        defer { tree.remove() }
        try tree.write(tree.system + "/python3", "the python interpreter")
        let table = InterpreterTable(folders: [tree.system, tree.root + "/not-yet"])
        try tree.write(tree.apps + "/app", "a perl interpreter")
        #expect(!tree.check(table, tree.apps + "/app"), "no perl installed yet")
        try tree.write(tree.system + "/perl5.40", "a perl interpreter")
        #expect(tree.check(table, tree.apps + "/app"), "perl5.40 was installed since: the table is read again")
        // A folder that appears later (a new /usr/local/bin) counts too.
        try FileManager.default.createDirectory(atPath: tree.root + "/not-yet", withIntermediateDirectories: true)
        try tree.write(tree.root + "/not-yet/lua5.4", "a lua interpreter")
        try tree.write(tree.apps + "/other", "a lua interpreter")
        #expect(tree.check(table, tree.apps + "/other"))
        // Removed again: a copy of it is an app like any other.
        #expect(unlink(tree.root + "/not-yet/lua5.4") == 0)
        #expect(!tree.check(table, tree.apps + "/other"))
    }
}
