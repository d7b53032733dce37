#if canImport(Glibc)
import Glibc
#endif
import ShareBrokerCrypto
import Testing

/// Issue 13, item 10: fork detection must not rest on `pthread_atfork` alone. A child made by the
/// raw `clone` system call runs none of the C library's fork handlers; the wipe-on-fork canary
/// still gives it a new generation, so it never reuses its parent's nonce epoch.
@Suite("Fork detection sees a raw clone that skips pthread_atfork")
struct RawForkDetectionTests {
    /// `syscall(2)` through a non-variadic pointer (Swift does not import variadic C
    /// functions; the x86-64 and arm64 calling conventions pass these integer arguments alike).
    typealias Syscall = @convention(c) (Int, Int, Int, Int, Int, Int) -> Int

    #if arch(x86_64)
    static let sysClone = 56
    #elseif arch(arm64)
    static let sysClone = 220
    #else
    static let sysClone = -1
    #endif

    @Test("a raw clone child sees a new fork generation although the atfork handler never ran in it",
          .enabled(if: RawForkDetectionTests.sysClone >= 0 && ForkGeneration.hasCanary,
                   "needs x86-64 or arm64 and MADV_WIPEONFORK (Linux 4.14+)"))
    func rawCloneIsDetected() throws {
        guard let process = dlopen(nil, RTLD_NOW), let symbol = dlsym(process, "syscall") else {
            Issue.record("syscall not found")
            return
        }
        let syscall = unsafeBitCast(symbol, to: Syscall.self)
        try Sodium.ensureInitialized()
        let before = ForkGeneration.current
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        // clone(SIGCHLD, no new stack): a fork done by the kernel alone.
        let pid = syscall(Self.sysClone, Int(SIGCHLD), 0, 0, 0, 0)
        if pid == 0 {
            // The child: no allocation, no lock; report and leave.
            var report: (UInt8, UInt8) = (ForkGeneration.announced == before ? 1 : 0,
                                          ForkGeneration.current != before ? 1 : 0)
            _ = withUnsafeBytes(of: &report) { write(fds[1], $0.baseAddress, 2) }
            _exit(0)
        }
        close(fds[1])
        #expect(pid > 0)
        var report: (UInt8, UInt8) = (0, 0)
        let n = withUnsafeMutableBytes(of: &report) { read(fds[0], $0.baseAddress, 2) }
        close(fds[0])
        var status: Int32 = 0
        _ = waitpid(pid_t(pid), &status, 0)
        #expect(n == 2)
        #expect(report.0 == 1, "the atfork handler did not run in the raw clone (it would miss this child)")
        #expect(report.1 == 1, "the canary gave the raw clone a new generation")
        #expect(ForkGeneration.current == before, "the parent's generation is unchanged")
    }
}
