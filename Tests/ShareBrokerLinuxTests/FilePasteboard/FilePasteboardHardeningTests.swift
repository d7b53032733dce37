import Foundation
import ShareBroker
import ShareBrokerLinux
import Synchronization
import ShareBrokerTesting
import Testing

/// Issue 13, item 10: what a local attacker (or a crash) can put at the pasteboard's paths.
@Suite("The pasteboard file refuses what is not a regular file, and a crashed writer leaves nothing")
struct FilePasteboardHardeningTests {
    let folder: String

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("pb-hardening-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    /// Runs `body` on its own thread; `nil` if it did not return within `timeout` (it hung).
    private func bounded<T: Sendable>(_ timeout: Duration = .seconds(5), _ body: @escaping @Sendable () -> T) -> T? {
        let result = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let value = body()
            result.withLock { $0 = value }
            done.signal()
        }
        guard done.wait(timeout: .now() + .seconds(Int(timeout.components.seconds))) == .success else { return nil }
        return result.withLock { $0 }
    }

    /// Where the open descriptors of `pid` point.
    static func openFiles(of pid: pid_t) -> [String] {
        let folder = "/proc/\(pid)/fd"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: folder + "/" + $0) }
    }

    private func leftovers() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.contains(".tmp.") }
    }

    @Test("a FIFO at the pasteboard path: reads are empty at once, and a write replaces it")
    func fifoAtThePasteboard() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/pasteboard"
        #expect(mkfifo(path, 0o600) == 0)
        let pasteboard = try FilePasteboard(path: path)
        let read = bounded { pasteboard.read().items.count }
        #expect(read == 0, "a read of a FIFO returns no items instead of waiting for a writer (nil: it hung)")
        let wrote = bounded { () -> Bool in (try? pasteboard.write([PasteboardItem.text("after the fifo")])) != nil }
        #expect(wrote == true, "the write did not hang and succeeded")
        #expect(pasteboard.read().items == [PasteboardItem.text("after the fifo")])
    }

    @Test("a FIFO at the lock path: a write fails at once saying what stands there; the pasteboard keeps its items")
    func fifoAtTheLock() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/pasteboard"
        let pasteboard = try FilePasteboard(path: path)
        try pasteboard.write([PasteboardItem.text("before")])
        try FileManager.default.removeItem(atPath: path + ".lock")
        #expect(mkfifo(path + ".lock", 0o600) == 0)
        let outcome = bounded { () -> FilePasteboardError? in
            do throws(FilePasteboardError) {
                try pasteboard.write([PasteboardItem.text("after")])
                return nil
            } catch { return error }
        }
        guard case .some(.some(let error)) = outcome else {
            Issue.record("the write hung or succeeded: \(String(describing: outcome))")
            return
        }
        #expect(error.isNotARegularFile)
        #expect(error.description.contains("not a regular file"))
        #expect(pasteboard.read().items == [PasteboardItem.text("before")])
        #expect(!pasteboard.clear(ifChangeCount: pasteboard.read().changeCount), "a clear fails the same way")
    }

    @Test("a symbolic link at the lock path does not make a write create the file it points at")
    func symlinkedLock() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/pasteboard"
        let target = folder + "/elsewhere/created-by-the-attacker"
        try FileManager.default.createDirectory(atPath: folder + "/elsewhere", withIntermediateDirectories: true)
        #expect(symlink(target, path + ".lock") == 0)
        let pasteboard = try FilePasteboard(path: path)
        #expect(throws: FilePasteboardError.self) { try pasteboard.write([PasteboardItem.text("x")]) }
        #expect(!FileManager.default.fileExists(atPath: target), "nothing was created through the link")
        #expect(!FileManager.default.fileExists(atPath: path), "and nothing was written")
    }

    @Test("a symbolic link at the pasteboard path is not followed: it reads as empty")
    func symlinkedPasteboard() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let real = try FilePasteboard(path: folder + "/real")
        try real.write([PasteboardItem.text("planted")])
        #expect(symlink(folder + "/real", folder + "/pasteboard") == 0)
        let pasteboard = try FilePasteboard(path: folder + "/pasteboard")
        #expect(pasteboard.read().items.isEmpty)
        #expect(pasteboard.read().changeCount == 0)
    }

    @Test("a writer killed while writing leaves no partial copy of the items; a name left by a crash goes with the next write")
    func killedWriterLeavesNothing() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        guard let tool = sharebrokerTool else { return }
        let path = folder + "/pasteboard"
        let big = [UInt8](repeating: UInt8(ascii: "s"), count: 8 << 20)
        // The input thread writes to a writer this test kills: EPIPE, not SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        // The size of a complete pasteboard file of this item: all a killed writer may leave is
        // a complete file, named, in the instant between naming it and renaming it over the
        // pasteboard (the pasteboard holds the same bytes a moment later); never a partial one.
        let reference = try FilePasteboard(path: folder + "/reference/pasteboard")
        try reference.write([PasteboardItem(type: PasteboardItem.textType, bytes: big)])
        let complete = (try FileManager.default.attributesOfItem(atPath: folder + "/reference/pasteboard")[.size] as? Int) ?? -1
        var caughtWriting = 0
        for round in 0 ..< 8 {
            let writer = try Child(tool, ["copy", "--unmanaged", "--pasteboard-file", path],
                                   environment: ["PATH": "/usr/bin:/bin"], input: big)
            // Kill it the moment it has the new pasteboard contents open (mid-write).
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline, !writer.wait(timeout: .zero) {
                if Self.openFiles(of: writer.pid).contains(where: { $0.hasPrefix(folder + "/") && !$0.hasSuffix(".lock") }) {
                    writer.kill()
                    caughtWriting += 1
                    break
                }
            }
            writer.kill()
            for name in try leftovers() {
                let size = (try FileManager.default.attributesOfItem(atPath: folder + "/" + name)[.size] as? Int) ?? -1
                #expect(size == complete, "round \(round): the killed writer left a partial copy \(name) of \(size) bytes (complete: \(complete))")
            }
        }
        #expect(caughtWriting > 0, "at least one writer was killed while writing")
        // What a crash between naming and renaming (or an older version) leaves is removed.
        let stale = folder + "/pasteboard.tmp.12345.678"
        #expect(FileManager.default.createFile(atPath: stale, contents: Data("plaintext".utf8)))
        let pasteboard = try FilePasteboard(path: path)
        try pasteboard.write([PasteboardItem.text("fresh")])
        #expect(try leftovers().isEmpty)
        #expect(pasteboard.read().items == [PasteboardItem.text("fresh")])
    }
}

/// Issue 13, item 10: a retire after a restart must not report the pasteboard erased while the
/// item an earlier run wrote stays readable.
@Suite("A retire after a restart takes back what an earlier run wrote to the pasteboard file")
struct PasteboardWriteAcrossRestartsTests {
    let folder: String

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("pb-restart-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    /// One run of the app: a broker over the pasteboard file with its wipe journal in `state`.
    private func run(_ pasteboard: FilePasteboard) throws -> (ShareBroker, ApplyingDelegate) {
        var platform = try Platform.embedded(entitling: "com.acme.notes")
        platform.pasteboard = pasteboard
        let broker = ShareBroker(appID: "com.acme.notes", platform: platform,
                                 configuration: ShareBroker.Configuration(stateDirectory: folder + "/state"))
        let delegate = ApplyingDelegate()
        try broker.start(delegate: delegate)
        try broker.apply(PolicyUpdate(auth: .authorized, pasteboard: .authorized))
        return (broker, delegate)
    }

    @Test("the earlier run's item is cleared by the next run's retire")
    func earlierItemIsCleared() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pasteboard = try FilePasteboard(path: folder + "/pasteboard")
        do {
            let (first, _) = try run(pasteboard)
            _ = try first.copyResult(.text("the earlier run's text"))
        }
        #expect(pasteboard.read().items == [.text("the earlier run's text")])
        let (second, _) = try run(try FilePasteboard(path: folder + "/pasteboard"))
        try second.apply(PolicyUpdate(auth: .retired))
        #expect(pasteboard.read().items.isEmpty, "the item the earlier run wrote is gone")
        #expect(!FileManager.default.fileExists(atPath: folder + "/state/pasteboard-write"), "and its record with it")
    }

    @Test("an item another app wrote since is left alone")
    func laterWriteIsKept() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pasteboard = try FilePasteboard(path: folder + "/pasteboard")
        do {
            let (first, _) = try run(pasteboard)
            _ = try first.copyResult(.text("the earlier run's text"))
        }
        try pasteboard.write([.text("another app's text")])
        let (second, _) = try run(try FilePasteboard(path: folder + "/pasteboard"))
        try second.apply(PolicyUpdate(auth: .retired))
        #expect(pasteboard.read().items == [.text("another app's text")])
    }

    @Test("a record for another pasteboard file does not clear this one")
    func recordIsForOnePasteboard() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        do {
            let (first, _) = try run(try FilePasteboard(path: folder + "/one"))
            _ = try first.copyResult(.text("written to one"))
        }
        let other = try FilePasteboard(path: folder + "/other")
        try other.write([.text("on the other pasteboard")])
        let (second, _) = try run(other)
        try second.apply(PolicyUpdate(auth: .retired))
        #expect(other.read().items == [.text("on the other pasteboard")], "change count 1 of another file is not ours")
    }
}
