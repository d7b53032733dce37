import Foundation
import Testing

/// Issue 29, item 10: a process that holds keys prints no registers or memory when it crashes.
@Suite("crash output of key holders", .serialized,
       .enabled(if: AgentHarness.binariesBuilt, "build the sharebroker and sharebrokerd products first"))
struct CrashOutputTests {
    /// Starts `executable` with the Swift backtracer forced on, all output to one file.
    static func start(_ h: AgentHarness, _ executable: String, _ arguments: [String], output: String, input: Pipe? = nil) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var env = h.environment
        env["SWIFT_BACKTRACE"] = "enable=yes,interactive=no"
        process.environment = env
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let handle = FileHandle(forWritingAtPath: output)
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = input ?? FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Ends every `swift-backtrace` process of this uid (the suite is serialized, and no other
    /// test crashes a process on purpose).
    static func killBacktracers() {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return }
        for entry in entries {
            guard let pid = Int32(entry), pid != getpid() else { continue }
            var info = stat()
            guard stat("/proc/\(entry)", &info) == 0, info.st_uid == getuid() else { continue }
            let name = (try? String(contentsOfFile: "/proc/\(entry)/comm", encoding: .utf8)) ?? ""
            if name.trimmingCharacters(in: .whitespacesAndNewlines) == "swift-backtrace" { kill(pid, SIGKILL) }
        }
    }

    @Test("A SIGSEGV in an app that holds keys (and in the agent): the process dies of it and prints no registers, no memory, no backtrace; a process without keys, as the control, does print them")
    func noRegisterDump() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        h.extraEnvironment["SWIFT_BACKTRACE"] = "enable=yes,interactive=no"
        try h.startAgent()
        let agent = try #require(h.agent)

        // The control: the same binary, no keys (the simulator waits on its input).
        let stdin = Pipe()
        let control = try Self.start(h, h.notes, ["simulate"], output: h.root + "/control.out", input: stdin)
        usleep(1_000_000)
        kill(control.processIdentifier, SIGSEGV)
        // The backtracer prints, then the process may not end by itself (seen: it spins): what
        // it printed is what counts; it is killed after.
        _ = h.wait(60) { ((try? String(contentsOfFile: h.root + "/control.out", encoding: .utf8)) ?? "").contains("Registers") || !control.isRunning }
        // The backtracer is a process of its own that keeps the crashed process's descriptors;
        // as an ordinary user it was seen to wait for minutes after printing, and Foundation's
        // Process counts the control as running until it ends. End it first.
        Self.killBacktracers()
        h.stop(control)
        try? stdin.fileHandleForWriting.close()
        let controlOutput = (try? String(contentsOfFile: h.root + "/control.out", encoding: .utf8)) ?? ""
        if !controlOutput.contains("Registers") {
            withKnownIssue("the Swift backtracer does not run on this toolchain, so the control printed nothing: \(controlOutput.prefix(200))") {
                throw HarnessError("no backtracer")
            }
        }

        let watchOutput = h.root + "/watch.out"
        let app = try Self.start(h, h.notes, ["watch", "--seconds", "60"], output: watchOutput)
        #expect(h.wait(20) { ((try? String(contentsOfFile: watchOutput, encoding: .utf8)) ?? "").contains(#""event":"keys""#) })
        kill(app.processIdentifier, SIGSEGV)
        // It dies of the signal at once (the kernel's default action); on the old code the
        // backtracer ran instead.
        let died = h.wait(30) { !app.isRunning }
        #expect(died, "the app did not die of SIGSEGV")
        h.stop(app)
        if died { #expect(app.terminationReason == .uncaughtSignal && app.terminationStatus == SIGSEGV) }
        let appOutput = (try? String(contentsOfFile: watchOutput, encoding: .utf8)) ?? ""
        for marker in ["Registers", "Program crashed", "Backtracing", "rip 0x"] {
            #expect(!appOutput.contains(marker), "the app printed \(marker): \(appOutput.prefix(400))")
        }

        // The agent holds the ring from its start.
        kill(agent.processIdentifier, SIGSEGV)
        let agentDied = h.wait(30) { !agent.isRunning }
        #expect(agentDied, "the agent did not die of SIGSEGV")
        h.stopAgent(signal: SIGKILL)
        if agentDied { #expect(agent.terminationReason == .uncaughtSignal && agent.terminationStatus == SIGSEGV) }
        let agentLog = (try? String(contentsOfFile: h.root + "/agent-1.log", encoding: .utf8)) ?? ""
        #expect(!agentLog.contains("Registers") && !agentLog.contains("Program crashed"), "\(agentLog.suffix(400))")
    }
}
