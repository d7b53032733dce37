import Foundation
@testable import ShareBrokerAgent
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The Flatpak claim's parsers and the bounded read, in process (the real sandboxes are in
/// `Tests/AgentTests/FlatpakIdentityTests.swift`): what a hostile `/.flatpak-info` or
/// `bwrapinfo.json` can hold is refused, never half-used.
///
/// Serialized: one GLib key file at a time, as in the agent's identification of one peer (GLib's
/// own locks are futexes that ThreadSanitizer, which runs this suite, does not see).
@Suite("Flatpak info parsing", .serialized)
struct FlatpakInfoParsingTests {
    static let genuine = """
        [Application]
        name=org.acme.Notes
        runtime=runtime/org.freedesktop.Platform/x86_64/23.08

        [Instance]
        instance-id=3141592653
        app-path=/var/lib/flatpak/app/org.acme.Notes/x86_64/stable/0123abcd/files

        """

    func parse(_ text: String) -> Result<FlatpakInstance, FlatpakRefusal> {
        FlatpakInspector.parse(Array(text.utf8))
    }

    @Test("A .flatpak-info as Flatpak writes it gives the app id, the instance and the app path")
    func genuineInfo() throws {
        let claim = try parse(Self.genuine).get()
        #expect(claim == FlatpakInstance(appID: "org.acme.Notes", instanceID: "3141592653",
                                         appPath: "/var/lib/flatpak/app/org.acme.Notes/x86_64/stable/0123abcd/files"))
    }

    @Test("Not a key file, a runtime, a missing or invalid app id, a hostile instance id or app path: refused, saying which",
          arguments: [
              ("this is [not a key file\n=== at all\n", "not a valid key file"),
              (FlatpakInfoParsingTests.genuine.replacingOccurrences(of: "name=org.acme.Notes\n", with: ""), "names no app"),
              (FlatpakInfoParsingTests.genuine + "\n[Runtime]\nname=org.freedesktop.Platform\n", "a runtime, not an app"),
              (FlatpakInfoParsingTests.genuine.replacingOccurrences(of: "name=org.acme.Notes", with: "name=acme"), "not a valid Flatpak app id"),
              (FlatpakInfoParsingTests.genuine.replacingOccurrences(of: "name=org.acme.Notes", with: "name=org.acme.Notes/../x"), "not a valid Flatpak app id"),
              (FlatpakInfoParsingTests.genuine.replacingOccurrences(of: "instance-id=3141592653", with: "instance-id=../../../etc"), "names no valid instance"),
              (FlatpakInfoParsingTests.genuine.replacingOccurrences(of: "instance-id=3141592653", with: "instance-id=.."), "names no valid instance"),
              (FlatpakInfoParsingTests.genuine.replacingOccurrences(of: "instance-id=3141592653\n", with: ""), "names no valid instance"),
              (FlatpakInfoParsingTests.genuine.replacingOccurrences(of: "/var/lib/flatpak/app", with: "/var/lib/flatpak/../../app"), "names no valid app path"),
              (FlatpakInfoParsingTests.genuine.replacingOccurrences(of: "app-path=/var", with: "app-path=var"), "names no valid app path"),
              (FlatpakInfoParsingTests.genuine.replacingOccurrences(of: "name=org.acme.Notes", with: "name=org.acme.Notes\u{0}.Evil"), "NUL byte"),
              (FlatpakInfoParsingTests.genuine.replacingOccurrences(of: "[Instance]", with: "[Instance]\napp-path=/var/lib/flatpak/app/org.acme.Notes/x/\u{0}"), "NUL byte"),
          ])
    func hostileInfo(_ text: String, _ expected: String) {
        guard case .failure(let refusal) = parse(text) else {
            Issue.record("accepted: \(text)")
            return
        }
        #expect(refusal.description.contains(expected), "\(refusal.description)")
    }

    @Test("Non-UTF-8 and oversized values are refused; a repeated key or group gives GLib's one answer (the portal's), never two")
    func hostileEncodings() throws {
        var latin1 = Array(Self.genuine.utf8)
        let at = try #require(latin1.firstIndex(of: UInt8(ascii: "N")))   // name=org.acme.Notes
        latin1[at] = 0xC9                                                   // a lone Latin-1 byte
        guard case .failure(let notUTF8) = FlatpakInspector.parse(latin1) else {
            Issue.record("a non-UTF-8 app id was accepted")
            return
        }
        #expect(notUTF8.description.contains("names no app") || notUTF8.description.contains("not a valid key file"), "\(notUTF8)")
        let long = Self.genuine.replacingOccurrences(of: "name=org.acme.Notes", with: "name=org.acme." + String(repeating: "N", count: 300))
        #expect(throws: FlatpakRefusal.self) { try parse(long).get() }
        // Repeated: whatever GLib makes of it is what xdg-desktop-portal makes of it too, and it
        // is one valid claim or a refusal (the record must hold the same bytes in any case).
        let repeated = Self.genuine + "\n[Application]\nname=org.evil.Other\n"
        if case .success(let claim) = parse(repeated) {
            #expect(["org.acme.Notes", "org.evil.Other"].contains(claim.appID))
        }
    }

    @Test("bwrapinfo.json: child-pid and the namespaces, or refused")
    func bwrapInfo() throws {
        let parsed = try FlatpakInspector.parseBwrapInfo(Array(#"{"child-pid": 10150, "mnt-namespace": 4026532177, "pid-namespace": 4026532178}"#.utf8)).get()
        #expect(parsed.childPid == 10150 && parsed.mountNamespace == 4026532177 && parsed.pidNamespace == 4026532178)
        #expect((try? FlatpakInspector.parseBwrapInfo(Array(#"{"child-pid": 7}"#.utf8)).get())?.mountNamespace == nil)
        for bad in [#"{"child-pid": 1}"#, #"{"child-pid": -5}"#, #"{"child-pid": 2.5}"#, #"{"child-pid": 99999999999}"#,
                    #"{"child-pid": "12"}"#, #"[12]"#, "not json", #"{}"#] {
            #expect(throws: FlatpakRefusal.self, "\(bad)") { try FlatpakInspector.parseBwrapInfo(Array(bad.utf8)).get() }
        }
    }

    @Test("Attack: a FIFO (or a device) bound over the peer's /.flatpak-info is examined, refused and never opened")
    func nonRegularInfoIsNeverOpened() throws {
        // A /proc laid out here: this process's root holds a FIFO as its /.flatpak-info. A writer
        // blocks in open(2) until somebody opens the FIFO for reading: if the agent opened it (as
        // it would a device, where opening alone can have effects), the writer would get through.
        let folder = NSTemporaryDirectory() + "sb-flatpak-fifo-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        let root = folder + "/proc/\(getpid())/root"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let fifo = root + "/.flatpak-info"
        #expect(mkfifo(fifo, 0o600) == 0)
        let marker = folder + "/opened"
        let writer = Process()
        writer.executableURL = URL(fileURLWithPath: "/bin/sh")
        writer.arguments = ["-c", #"exec 3>"$1" && echo opened > "$2""#, "sh", fifo, marker]
        try writer.run()
        defer {
            // Release the writer (a reader of our own), then reap it.
            let reader = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            writer.waitUntilExit()
            if reader >= 0 { close(reader) }
        }
        usleep(200_000)   // the writer is in open(2) now
        let inspector = FlatpakInspector(procRoot: folder + "/proc", settings: FlatpakSettings(installations: [folder + "/none"], runtimeRoot: folder + "/run"))
        guard case .refused(let reason) = inspector.inspect(pid: getpid(), uid: geteuid(), pidfd: -1) else {
            Issue.record("a FIFO as /.flatpak-info was not refused")
            return
        }
        #expect(reason.contains("not a regular file (a FIFO)"), "\(reason)")
        usleep(300_000)
        #expect(!FileManager.default.fileExists(atPath: marker), "the agent opened the FIFO the peer put at /.flatpak-info")
    }

    @Test("Attack: a bwrapinfo.json nested as deep as its 4 KiB allow is refused on a thread with the agent's connection stack (512 KiB), without overflowing it")
    func deeplyNestedBwrapInfo() {
        // Any user writes their own instance record, and it is parsed on the connection's thread.
        let deep = [String(repeating: "[", count: 4_000) + String(repeating: "]", count: 4_000),
                    #"{"child-pid": 5, "x": "# + String(repeating: "[", count: 4_000)]
        let refused = Locked<[Bool]>([])
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            for text in deep {
                let failed: Bool
                if case .failure = FlatpakInspector.parseBwrapInfo(Array(text.utf8)) { failed = true } else { failed = false }
                refused.withLock { $0.append(failed) }
            }
            done.signal()
        }
        thread.stackSize = 512 * 1024
        thread.start()
        #expect(done.wait(timeout: .now() + 60) == .success)
        #expect(refused.withLock { $0 } == [true, true])
    }

    @Test("The bounded read: a FIFO is refused at once, an oversized file is refused, a file within the bound is read whole")
    func boundedRead() throws {
        let folder = NSTemporaryDirectory() + "sb-flatpak-read-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        #expect(mkfifo(folder + "/fifo", 0o600) == 0)
        let fifo = open(folder + "/fifo", O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        #expect(fifo >= 0)
        defer { close(fifo) }
        guard case .failure(let notRegular) = FlatpakInspector.readRegularFile(fifo, limit: 64, what: "the file") else {
            Issue.record("a FIFO was read")
            return
        }
        #expect(notRegular.description.contains("not a regular file (a FIFO)"))
        try Data(repeating: 0x61, count: 65).write(to: URL(fileURLWithPath: folder + "/big"))
        let big = open(folder + "/big", O_RDONLY | O_CLOEXEC)
        defer { close(big) }
        guard case .failure(let oversized) = FlatpakInspector.readRegularFile(big, limit: 64, what: "the file") else {
            Issue.record("an oversized file was read")
            return
        }
        #expect(oversized.description.contains("65 bytes, more than the 64 accepted"))
        try Data(repeating: 0x62, count: 64).write(to: URL(fileURLWithPath: folder + "/fits"))
        let fits = open(folder + "/fits", O_RDONLY | O_CLOEXEC)
        defer { close(fits) }
        #expect((try? FlatpakInspector.readRegularFile(fits, limit: 64, what: "the file").get())?.bytes == [UInt8](repeating: 0x62, count: 64))
    }
}
