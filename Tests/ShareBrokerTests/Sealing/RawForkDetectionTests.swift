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

    /// ThreadSanitizer does not follow a raw clone (it intercepts fork, not the system call): the
    /// child would run instrumented code over the parent's sanitizer state, whose locks another
    /// thread may hold at the clone.
    #if SHAREBROKER_TSAN
    static let underThreadSanitizer = true
    #else
    static let underThreadSanitizer = false
    #endif

    @Test("a raw clone child sees a new fork generation although the atfork handler never ran in it",
          .enabled(if: RawForkDetectionTests.sysClone >= 0 && ForkGeneration.hasCanary,
                   "needs x86-64 or arm64 and MADV_WIPEONFORK (Linux 4.14+)"),
          .disabled(if: RawForkDetectionTests.underThreadSanitizer, "ThreadSanitizer does not support a raw clone"))
    func rawCloneIsDetected() throws {
        guard let process = dlopen(nil, RTLD_NOW), let symbol = dlsym(process, "syscall") else {
            Issue.record("syscall not found")
            return
        }
        let syscall = unsafeBitCast(symbol, to: Syscall.self)
        try Sodium.ensureInitialized()
        // Everything the child touches is made here first: after a raw clone only the cloning
        // thread exists, so a lock another thread held at that instant (the runtime's type
        // metadata, the allocator) would never be released in the child.
        let before = ForkGeneration.current
        _ = ForkGeneration.announced
        let report = UnsafeMutablePointer<UInt8>.allocate(capacity: 2)
        defer { report.deallocate() }
        report.initialize(repeating: 0, count: 2)
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let writeEnd = fds[1]
        // clone(SIGCHLD, no new stack): a fork done by the kernel alone.
        let pid = syscall(Self.sysClone, Int(SIGCHLD), 0, 0, 0, 0)
        if pid == 0 {
            // The child: no allocation, no lock, no type metadata; report and leave.
            report[0] = ForkGeneration.announced == before ? 1 : 0
            report[1] = ForkGeneration.current != before ? 1 : 0
            _ = write(writeEnd, report, 2)
            _exit(0)
        }
        close(fds[1])
        #expect(pid > 0)
        // A child that never answers fails the test instead of hanging the run.
        var ready = pollfd(fd: fds[0], events: Int16(POLLIN), revents: 0)
        let answered = poll(&ready, 1, 20_000) == 1
        if !answered { kill(pid_t(pid), SIGKILL) }
        report.initialize(repeating: 0, count: 2)
        let n = answered ? read(fds[0], report, 2) : 0
        close(fds[0])
        var status: Int32 = 0
        _ = waitpid(pid_t(pid), &status, 0)
        #expect(answered, "the raw clone child answered within 20 s")
        #expect(n == 2)
        #expect(report[0] == 1, "the atfork handler did not run in the raw clone (it would miss this child)")
        #expect(report[1] == 1, "the canary gave the raw clone a new generation")
        #expect(ForkGeneration.current == before, "the parent's generation is unchanged")
    }
}
