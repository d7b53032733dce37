import Foundation
import ShareBroker
import ShareBrokerAgentProtocol
import Testing
import ShareBrokerCrypto
import ShareBrokerLinux
import ShareBrokerTesting

@Suite("agent frame codec")
struct AgentFrameTests {
    @Test("A frame round-trips through encode and decode")
    func roundTrip() throws {
        for type in AgentFrameType.allCases {
            let frame = AgentFrame(type: type, body: Array("{\"a\":1}".utf8))
            #expect(try AgentFrame.decode(frame.encoded()) == frame)
            #expect(try AgentFrame.decode(afterPrefix: frame.encoded()[4...]) == frame)
        }
        #expect(try AgentFrame.decode(AgentFrame(type: .keys, body: []).encoded()).body.isEmpty)
    }

    @Test("The length prefix is checked before anything is allocated")
    func lengthFirst() {
        #expect(throws: FrameError.tooLarge(length: 0xFFFF_FFFF, limit: AgentFrame.maxFrameSize)) {
            try AgentFrame.decode([0xFF, 0xFF, 0xFF, 0xFF])
        }
        #expect(throws: FrameError.tooLarge(length: AgentFrame.maxFrameSize + 1, limit: AgentFrame.maxFrameSize)) {
            try AgentFrame.bodyLength(prefix: [0x00, 0x40, 0x00, 0x01])
        }
        #expect(throws: FrameError.truncated) { try AgentFrame.decode([0, 0]) }
        #expect(throws: FrameError.tooShort(length: 1)) { try AgentFrame.decode([0, 0, 0, 1, 1]) }
        #expect(throws: FrameError.truncated) { try AgentFrame.decode([0, 0, 0, 9, 1, 1]) }
        #expect(throws: FrameError.trailingBytes(1)) { try AgentFrame.decode([0, 0, 0, 2, 1, 1, 0]) }
        #expect(throws: FrameError.unsupportedVersion(2)) { try AgentFrame.decode([0, 0, 0, 2, 2, 1]) }
        #expect(throws: FrameError.unknownType(0xEE)) { try AgentFrame.decode([0, 0, 0, 2, 1, 0xEE]) }
        #expect(throws: FrameError.tooLarge(length: AgentFrame.maxFrameSize + 1, limit: AgentFrame.maxFrameSize)) {
            try AgentFrame(type: .hello, body: [UInt8](repeating: 0, count: AgentFrame.maxFrameSize - 1)).encodedChecked()
        }
    }

    @Test("Random bytes never trap the decoder")
    func randomBytes() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let count = Int.random(in: 0...24, using: &generator)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if bytes.count >= 4 && Bool.random() { bytes[0] = 0; bytes[1] = 0; bytes[2] = 0; bytes[3] = UInt8(count - 4) }
            _ = try? AgentFrame.decode(bytes)
            _ = try? KeyRingMessage.withEntries(in: bytes) { $0.count + $1.count }
            _ = try? AgentMessage.decode(WelcomeMessage.self, from: bytes)
        }
    }

    /// A format 2 key body: the marker, the group keys and their retirement times, the file keys.
    static func body(group: [(UInt32, UInt8)], files: [(UInt32, UInt8)], times: [UInt64]? = nil) -> [UInt8] {
        func entry(_ key: (UInt32, UInt8)) -> [UInt8] {
            [UInt8(key.0 >> 24), UInt8(truncatingIfNeeded: key.0 >> 16), UInt8(truncatingIfNeeded: key.0 >> 8),
             UInt8(truncatingIfNeeded: key.0)] + [UInt8](repeating: key.1, count: 32)
        }
        let times = (times ?? [UInt64](repeating: 0, count: group.count)).flatMap { time in
            stride(from: 56, through: 0, by: -8).map { UInt8(truncatingIfNeeded: time >> UInt64($0)) }
        }
        return [KeyRingMessage.formatMarker, UInt8(group.count)] + group.flatMap(entry) + times
            + [UInt8(files.count >> 8), UInt8(truncatingIfNeeded: files.count)] + files.flatMap(entry)
    }

    @Test("Key frames carry each old group key's retirement time; a frame cut short is refused")
    func keyFrameRetirementTimes() throws {
        let ring = try KeyRing.generate().rotated(at: 1_000).rotated(at: 2_000)
        let fileKeys = try FileKeyRing.generate()
        var body = try ring.exportKeys { group in
            try? fileKeys.exportKeys { KeyRingMessage.body(group: group, retiredAt: ring.retiredAt, files: $0) }
        } ?? []
        defer { Zeroize.zero(&body) }
        #expect(body.count == 2 + 3 * (4 + 32 + 8) + 2 + 1 * (4 + 32))
        #expect(KeyRingMessage.retirementTimes(in: body) == [2_000, 1_000])
        let imported = try KeyRingMessage.withEntries(in: body) { group, _ in
            try? KeyRing(importing: group, retiredAt: KeyRingMessage.retirementTimes(in: body))
        }
        #expect(try #require(imported).retiredAt == [2_000, 1_000])
        #expect(KeyRingMessage.retirementTimes(in: Self.body(group: [(1, 1), (2, 2)], files: [(3, 3)], times: [0, 77])) == [77])
        #expect(KeyRingMessage.retirementTimes(in: KeyRingMessage.none).isEmpty)
        #expect(throws: FrameError.self) { try KeyRingMessage.withEntries(in: Array(body.dropLast())) { $0.count + $1.count } }
    }

    @Test("Key frames: counts, lengths and duplicate ids are checked; a ring and the app's file keys survive export and import")
    func keyFrames() throws {
        func count(_ body: [UInt8]) throws -> Int { try KeyRingMessage.withEntries(in: body) { $0.count + $1.count } }
        #expect(throws: FrameError.self) { try count([]) }
        #expect(throws: FrameError.self) { try count([17]) }
        #expect(throws: FrameError.self) { try count([KeyRingMessage.formatMarker, 17, 0, 0]) }
        #expect(throws: FrameError.self) { try count([KeyRingMessage.formatMarker, 1, 0, 0, 1]) }
        #expect(throws: FrameError.self) { try count(Self.body(group: [(7, 1), (7, 2)], files: [(1, 3)])) }
        #expect(throws: FrameError.self) { try count(Self.body(group: [(7, 1)], files: [(1, 3), (1, 4)])) }
        // Group keys without file keys, or the reverse: refused.
        #expect(throws: FrameError.self) { try count(Self.body(group: [(7, 1)], files: [])) }
        #expect(throws: FrameError.self) { try count(Self.body(group: [], files: [(1, 3)])) }
        // A trailing byte: refused.
        #expect(throws: FrameError.self) { try count(Self.body(group: [(7, 1)], files: [(1, 3)]) + [0]) }
        // The same id may name a group key and a file key (separate lists).
        #expect(try count(Self.body(group: [(7, 1)], files: [(7, 3)])) == 2)
        #expect(try count(KeyRingMessage.none) == 0)
        #expect(try count([0]) == 0) // format 1 "no keys": obeyed

        let ring = try KeyRing.generate().rotated()
        let fileKeys = try FileKeyRing.generate().advanced()
        let sealed = try ring.seal(Array("hello".utf8), itemType: PasteboardItem.textType)
        var body = try ring.exportKeys { group in
            try? fileKeys.exportKeys { KeyRingMessage.body(group: group, retiredAt: ring.retiredAt, files: $0) }
        } ?? []
        #expect(body.first == KeyRingMessage.formatMarker)
        let imported = try KeyRingMessage.withEntries(in: body) { group, files in
            (try? KeyRing(importing: group), try? FileKeyRing(importing: files))
        }
        Zeroize.zero(&body)
        #expect(body.isEmpty)
        let copy = try #require(imported.0)
        let copiedFileKeys = try #require(imported.1)
        #expect(copy.keyIDs == ring.keyIDs)
        #expect(copiedFileKeys.keyIDs == fileKeys.keyIDs)
        #expect(try copy.open(sealed).plaintext == Array("hello".utf8))
        let back = try ring.open(try copy.seal(Array("x".utf8), itemType: "t"))
        #expect(back.plaintext == Array("x".utf8))
        ring.wipe()
        #expect(throws: SealingError.wiped) { try ring.exportKeys { $0.count } }
        #expect(throws: SealingError.invalidKeyLength) { try KeyRing(importing: []) }
    }

    @Test("Key frame versions: a format 1 body carrying keys (an older agent) is refused saying to update the agent; a format 2 body starts with a byte a format 1 reader refuses")
    func keyFrameVersions() throws {
        let formatOne = [1] + [0, 0, 0, 7] + [UInt8](repeating: 1, count: 32)
        do {
            _ = try KeyRingMessage.withEntries(in: formatOne) { $0.count + $1.count }
            Issue.record("a format 1 key frame was accepted")
        } catch {
            #expect(error.description.contains("format 1"))
            #expect(error.description.contains("update sharebrokerd"))
        }
        // A format 1 reader takes the first byte for the key count and refuses any over 16.
        #expect(KeyRingMessage.formatMarker > UInt8(KeyRingMessage.maxKeys))
        #expect(throws: FrameError.self) { try KeyRingMessage.withEntries(in: [0x83, 0, 0, 0]) { $0.count + $1.count } }
    }

    @Test("Policies keep their values on the wire; unknown raw values fail closed")
    func wirePolicy() {
        let update = PolicyUpdate(auth: .authorized, authMessage: "hi", openIn: .allAppConnectApps, pasteboard: .secureCopy,
                                  print: .authorized, secureFileIO: .optional, logLevel: .debug, dragAndDrop: .appConnectApps,
                                  managedBrowserRequired: true, config: ["k": "v"])
        let wire = WirePolicy(update, expandedWhitelist: ["b", "a"])
        #expect(wire.openIn == "whitelist")
        #expect(wire.openInWhitelist == ["a", "b"])
        let back = wire.policyUpdate
        #expect(back.openIn == .whitelist(["a", "b"]))
        #expect(back.pasteboard == .secureCopy)
        #expect(back.config == ["k": "v"])
        var hostile = wire
        hostile.auth = 99
        hostile.pasteboard = 7
        hostile.openIn = "everything"
        #expect(hostile.policyUpdate.auth == .unauthorized)
        #expect(hostile.policyUpdate.pasteboard == .unauthorized)
        #expect(hostile.policyUpdate.openIn == .unauthorized)
    }

    @Test("Issue 18's policies cross the wire; absent (an older agent) they keep the old behaviour; garbage fails closed")
    func wireIssue18() throws {
        let update = PolicyUpdate(auth: .authorized, clipboardExceptionLength: 12, notifications: .blockOrgData,
                                  openFrom: .allAppConnectApps, pasteIn: .managedApps)
        let wire = WirePolicy(update, expandedWhitelist: ["b", "a"])
        let back = wire.policyUpdate
        #expect(back.clipboardExceptionLength == 12)
        #expect(back.notifications == .blockOrgData)
        #expect(back.openFrom == .whitelist(["a", "b"]))
        #expect(back.pasteIn == .managedApps)
        var old = wire
        old.clipboardExceptionLength = nil
        old.notifications = nil
        old.openFrom = nil
        old.openFromWhitelist = nil
        old.pasteIn = nil
        let decoded = try JSONDecoder().decode(WirePolicy.self, from: try JSONEncoder().encode(old))
        #expect(decoded.policyUpdate.notifications == .allow)
        #expect(decoded.policyUpdate.openFrom == .authorized)
        #expect(decoded.policyUpdate.pasteIn == .anyApp)
        #expect(decoded.policyUpdate.clipboardExceptionLength == 0)
        var hostile = wire
        hostile.notifications = 9
        hostile.openFrom = "everyone"
        hostile.pasteIn = 5
        #expect(hostile.policyUpdate.notifications == .block)
        #expect(hostile.policyUpdate.openFrom == .unauthorized)
        #expect(hostile.policyUpdate.pasteIn == .managedApps)
    }

    @Test("Issue 33's warn policy crosses the wire; absent (an older agent) nothing warns; bad settings and unknown exits fail closed")
    func wireWarn() throws {
        var update = PolicyUpdate(auth: .authorized, pasteboard: .unauthorized)
        let copy = WarnSettings(reasonRequired: true, reasons: [WarnReason(code: "internal", label: "Internal use")],
                                freeTextAllowed: true, proceedLifetimeMinutes: 5, answerTimeoutMilliseconds: 30_000,
                                rateLimit: WarnRateLimit(proceeds: 3, minutes: 60))
        update.warn = WarnPolicy([.copy: copy])
        let wire = WirePolicy(update, expandedWhitelist: [])
        let decoded = try JSONDecoder().decode(WirePolicy.self, from: try JSONEncoder().encode(wire))
        #expect(decoded.policyUpdate.warn == WarnPolicy([.copy: copy]))
        var old = wire
        old.warn = nil
        #expect(old.policyUpdate.warn == WarnPolicy.none)
        var hostile = wire
        hostile.warn?["paste"] = WireWarnSettings(copy)
        hostile.warn?["copy"]?.reasons = [["only a code"]]
        let hostileUpdate = hostile.policyUpdate
        #expect(hostileUpdate.warn?[.copy]?.problem != nil, "a malformed reason is a problem, so the exit blocks")
        #expect(hostileUpdate.warn?.exits.count == 1, "an unknown exit is dropped")
    }
}

@Suite("file-backed host pasteboard")
struct FilePasteboardTests {
    func temporaryPath() -> String {
        NSTemporaryDirectory() + "sbpb-\(getpid())-\(UInt32.random(in: 0 ... .max))/pasteboard"
    }

    @Test("Same semantics as the in-memory pasteboard, across instances (processes)")
    func semantics() throws {
        let path = temporaryPath()
        let a = try FilePasteboard(path: path), b = try FilePasteboard(path: path)
        let memory = InMemoryPasteboard()
        #expect(a.read().changeCount == memory.read().changeCount)
        #expect(a.read().items.isEmpty)
        let one = try a.write([.text("one")])
        #expect(one == memory.write([.text("one")]))
        #expect(b.read().items == [.text("one")])
        let two = try b.write([.text("two"), PasteboardItem(type: "public.png", bytes: [0, 1, 2])])
        #expect(two == memory.write([.text("two"), PasteboardItem(type: "public.png", bytes: [0, 1, 2])]))
        #expect(a.read().items == memory.read().items)
        #expect(!a.clear(ifChangeCount: one))
        #expect(!memory.clear(ifChangeCount: one))
        #expect(a.clear(ifChangeCount: two))
        #expect(memory.clear(ifChangeCount: two))
        #expect(b.read().items.isEmpty)
        #expect(b.read().changeCount == memory.read().changeCount)
    }

    @Test("Concurrent writers never lose a change count; readers see whole items")
    func concurrentWriters() async throws {
        let path = temporaryPath()
        let board = try FilePasteboard(path: path)
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<4 {
                group.addTask {
                    let mine = try? FilePasteboard(path: path)
                    for index in 0..<25 { _ = try? mine?.write([.text("writer \(writer) item \(index)")]) }
                }
            }
            group.addTask {
                for _ in 0..<200 {
                    let items = board.read().items
                    #expect(items.isEmpty || String(decoding: items[0].bytes, as: UTF8.self).hasPrefix("writer "))
                }
            }
        }
        #expect(board.read().changeCount == 100)
    }

    @Test("Corrupt, truncated or oversized files read as empty; a write replaces them")
    func hostileFiles() throws {
        let path = temporaryPath()
        let board = try FilePasteboard(path: path)
        try board.write([.text("x")])
        var bytes = try #require(FileManager.default.contents(atPath: path))
        bytes.removeLast()
        try bytes.write(to: URL(fileURLWithPath: path))
        #expect(board.read().items.isEmpty)
        #expect(board.read().changeCount == 1)
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: path))
        #expect(board.read().items.isEmpty)
        #expect(try board.write([.text("y")]) == 1)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.truncate(atOffset: UInt64(FilePasteboard.maxFileSize + 1))
        try handle.close()
        #expect(board.read().items.isEmpty)
    }
}
