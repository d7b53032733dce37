import Foundation
import ShareBrokerAgentProtocol
import Testing

/// Issue 29, items 3 and 4: what admitted sessions and floods of connections can make the agent
/// hold, with real processes against the built `sharebrokerd`.
@Suite("client memory and the connection reserve", .serialized,
       .enabled(if: AgentHarness.binariesBuilt, "build the sharebroker and sharebrokerd products first"))
struct ClientMemoryTests {
    static var compiler: String? {
        ["/usr/bin/cc", "/usr/bin/gcc", "/usr/bin/clang", "/opt/swift/usr/bin/clang"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// A library preloaded into the registered binary (`LD_PRELOAD`, the app's own user
    /// puppeting it): before `main`, it connects, says hello, waits for the welcome, then sends
    /// empty acknowledgment batches whose ids are `HOSTILE_ID_BYTES` long, without ever reading,
    /// for `HOSTILE_SECONDS`; then it waits to be killed.
    static let hostileSource = #"""
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static time_t end_time = 0;
/* Non-blocking, until end_time: an agent that stops reading must not hold the sender forever. */
static int write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL | (end_time ? MSG_DONTWAIT : 0));
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (time(NULL) >= end_time) return -1;
            usleep(2000);
            continue;
        }
        if (w <= 0) return -1;
        p += w; n -= (size_t)w;
    }
    return 0;
}
static int frame(int fd, int type, const char *body, size_t n) {
    unsigned char head[6];
    uint32_t len = (uint32_t)(n + 2);
    head[0] = len >> 24; head[1] = len >> 16; head[2] = len >> 8; head[3] = len; head[4] = 1; head[5] = (unsigned char)type;
    if (write_all(fd, (const char *)head, 6) != 0) return -1;
    return write_all(fd, body, n);
}
__attribute__((constructor)) static void hostile(void) {
    const char *path = getenv("HOSTILE_SOCKET");
    if (path == NULL) return;
    long id_bytes = atol(getenv("HOSTILE_ID_BYTES"));
    long seconds = atol(getenv("HOSTILE_SECONDS"));
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a; memset(&a, 0, sizeof a); a.sun_family = AF_UNIX;
    strncpy(a.sun_path, path, sizeof a.sun_path - 1);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) { puts("noconnect"); fflush(stdout); pause(); }
    const char *hello = "{\"protocolVersion\":1,\"role\":\"app\"}";
    frame(fd, 1, hello, strlen(hello));
    unsigned char head[6];
    if (recv(fd, head, 6, MSG_WAITALL) != 6 || head[5] != 2) { puts("refused"); fflush(stdout); pause(); }
    uint32_t len = ((uint32_t)head[0] << 24) | ((uint32_t)head[1] << 16) | ((uint32_t)head[2] << 8) | head[3];
    char *skip = malloc(len);
    recv(fd, skip, len - 2, MSG_WAITALL);
    puts("welcome"); fflush(stdout);
    char *body = malloc((size_t)id_bytes + 64);
    int n = sprintf(body, "{\"id\":\"");
    memset(body + n, 'A', (size_t)id_bytes);
    n += (int)id_bytes;
    n += sprintf(body + n, "\",\"push\":1,\"records\":[]}");
    long sent = 0;
    end_time = time(NULL) + seconds;
    while (time(NULL) < end_time) {
        if (frame(fd, 6, body, (size_t)n) != 0) break;
        sent++;
    }
    printf("sent %ld\n", sent); fflush(stdout);
    pause();
}
"""#

    static func buildHostileLibrary(_ h: AgentHarness) throws -> String {
        let compiler = try #require(Self.compiler, "a C compiler (make deps: gcc) builds the preloaded library")
        let source = h.root + "/hostile.c", library = h.root + "/hostile.so"
        try Self.hostileSource.write(toFile: source, atomically: true, encoding: .utf8)
        let build = try runProcess(compiler, ["-shared", "-fPIC", "-O1", "-o", library, source], environment: ProcessInfo.processInfo.environment)
        #expect(build.status == 0, "\(build.error)")
        return library
    }

    @Test("Item 3: 100 admitted sessions send acknowledgment batches with 4 MiB ids, then with 256-byte ids, and never read: the agent's RSS stays under 256 MiB (the ceiling docs/THREAT-MODEL.md states), and a well-behaved app is served throughout")
    func hostileSessionsStayUnderCeiling() throws {
        let h = try AgentHarness()
        try h.standardDevice()
        let library = try Self.buildHostileLibrary(h)
        try h.startAgent()
        defer { h.stopAgent() }
        let agent = try #require(h.agent)
        #expect(try h.run(h.notes, ["status"]).output.contains("keys 0x"))
        let ceiling = 256 * 1024 * 1024
        let baseline = CustodyAttackTests.rss(agent.processIdentifier) ?? 0
        var peak = 0
        for idBytes in [4 * 1024 * 1024 - 64, 256] {
            var hostile: [Process] = []
            defer { for process in hostile { h.stop(process) } }
            for index in 0..<100 {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: h.notes)
                process.arguments = ["simulate"]
                var env = h.environment
                env["LD_PRELOAD"] = library
                env["HOSTILE_SOCKET"] = h.socket
                env["HOSTILE_ID_BYTES"] = "\(idBytes)"
                env["HOSTILE_SECONDS"] = "4"
                process.environment = env
                let output = h.root + "/hostile-\(idBytes)-\(index).out"
                _ = FileManager.default.createFile(atPath: output, contents: nil)
                process.standardOutput = FileHandle(forWritingAtPath: output)
                process.standardError = FileHandle.nullDevice
                process.standardInput = FileHandle.nullDevice
                try process.run()
                hostile.append(process)
            }
            let deadline = Date().addingTimeInterval(20)
            var welcomed = 0
            while Date() < deadline {
                peak = max(peak, CustodyAttackTests.rss(agent.processIdentifier) ?? 0)
                welcomed = (0..<100).filter { index in
                    ((try? String(contentsOfFile: h.root + "/hostile-\(idBytes)-\(index).out", encoding: .utf8)) ?? "").contains("sent")
                }.count
                if welcomed == 100 { break }
                usleep(50_000)
            }
            #expect(welcomed == 100, "\(welcomed) of 100 hostile sessions were admitted and finished sending (\(idBytes)-byte ids)")
            // While they hold their connections without reading, an app is still served.
            #expect(try h.run(h.notes, ["status"]).output.contains("keys 0x"))
            peak = max(peak, CustodyAttackTests.rss(agent.processIdentifier) ?? 0)
            print("hostile sessions (\(idBytes)-byte ids): agent RSS baseline \(baseline / 1024) KiB, peak \(peak / 1024) KiB")
        }
        #expect(peak > 0 && peak < ceiling, "agent RSS peaked at \(peak / 1024 / 1024) MiB")
        #expect(h.wait { (try? h.run(h.notes, ["status"]).output.contains("keys 0x")) == true })
    }

    @Test("Item 4: four other uids open 128 connections each and hold them: a registered app of its allowed user still connects and gets its keys (the reserve); an unregistered process of that user is refused",
          .enabled(if: CustodyAttackTests.canMakeUsers, "needs root, useradd, userdel and setpriv to flood from other uids"))
    func reserveForRegisteredApps() throws {
        let python = try #require(CustodyAttackTests.python, "python3 is needed for the flood")
        let h = try AgentHarness()
        try h.standardDevice()
        chmod(h.root, 0o755)
        try h.startAgent(arguments: ["--policy", h.policyPath, "--allow-other-users", "--handshake-timeout", "120000"])
        defer { h.stopAgent() }
        let script = h.root + "/flood.py"
        try #"""
import socket, sys, time
held = []
for _ in range(128):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(sys.argv[1]); held.append(s)
    except OSError:
        pass
print(len(held), flush=True)
time.sleep(90)
"""#.write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o644)
        var users: [TestUser] = []
        var floods: [Process] = []
        defer { for process in floods { h.stop(process) } }
        for index in 0..<4 {
            let user = try TestUser()
            users.append(user)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=\(user.uid)", "--regid=\(user.gid)", "--clear-groups", python, script, h.socket]
            let output = h.root + "/flood-\(index).out"
            _ = FileManager.default.createFile(atPath: output, contents: nil)
            process.standardOutput = FileHandle(forWritingAtPath: output)
            process.standardError = FileHandle.nullDevice
            try process.run()
            floods.append(process)
            #expect(h.wait(20) { !((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").isEmpty })
        }
        // Every connection the agent gives unregistered peers is taken (it refuses the rest at once).
        let agent = try #require(h.agent)
        #expect(h.wait(10) { h.auditRecords.contains { $0["reason"] as? String == "tooManyConnections" } })
        usleep(300_000)
        let unregistered = try h.run(h.unmanaged, ["status", "--timeout", "3000"])
        #expect(unregistered.status != 0 && !unregistered.output.contains("keys 0x"), "\(unregistered.output) \(unregistered.error)")

        // The registered app gets in.
        let app = try h.run(h.notes, ["status"])
        #expect(app.output.contains("keys 0x"), "\(app.output) \(app.error)")
        print("reserve: agent \(agent.processIdentifier), app: \(app.output.prefix(200))")
        withExtendedLifetime(users) {}
    }
}
