import CShareBrokerSocket

/// What a process that holds keys does to itself so that other processes of its user cannot
/// read them out of its memory.
package enum ProcessHardening {
    /// Makes this process non-dumpable (`PR_SET_DUMPABLE` 0): no core dump, and processes of
    /// the same user can neither ptrace it nor open its `/proc/PID/mem`, `environ` or `fd`
    /// (those files become root's). Called once keys arrive (apps) or before they are loaded
    /// (the agent). Lasts until the next `execve`. Returns whether the kernel accepted it.
    ///
    /// Also turns the Swift runtime's crash backtracer off (the signals of a crash get the
    /// kernel's default action): it would print registers and the memory around them, where
    /// key bytes may be, to standard error (``quietCrashes()``).
    @discardableResult
    package static func denyInspection() -> Bool {
        quietCrashes()
        return sbs_deny_inspection() == 0
    }

    /// The signals of a crash (`SIGSEGV`, `SIGBUS`, `SIGILL`, `SIGFPE`, `SIGTRAP`, `SIGABRT`,
    /// `SIGQUIT`) get the kernel's default action, so the Swift runtime's backtracer
    /// (`SWIFT_BACKTRACE`) does not run in a process that holds keys: the process dies without
    /// printing its registers or memory (and, non-dumpable, without a core dump). A `fatalError`
    /// still prints its message. Returns whether every handler was reset.
    @discardableResult
    package static func quietCrashes() -> Bool {
        sbs_default_crash_signals() == 0
    }

    /// At most `count` malloc arenas (`M_ARENA_MAX`): a daemon with a thread per connection
    /// then reuses memory one client's large frame used for the next, rather than keeping it
    /// in an arena per thread group. Returns whether glibc accepted it.
    @discardableResult
    package static func limitMallocArenas(_ count: Int32) -> Bool {
        sbs_limit_malloc_arenas(count) == 1
    }

    /// Makes this process dumpable again (`PR_SET_DUMPABLE` 1), so that an agent of its own user
    /// without `CAP_SYS_PTRACE` can read its `/proc/PID/exe`. Only for a process that holds no
    /// keys, and only until its identification is read: ``denyInspection()`` right after, then
    /// ``tracerPID`` (a tracer attached meanwhile stays attached). Returns whether the kernel
    /// accepted it.
    @discardableResult
    package static func allowInspection() -> Bool {
        sbs_allow_inspection() == 0
    }

    /// The pid of the process tracing this one (0: none), or `nil` when `/proc/self/status`
    /// could not be read.
    package static var tracerPID: Int32? {
        let pid = sbs_tracer_pid()
        return pid < 0 ? nil : pid
    }

    /// Whether this process is dumpable now.
    package static var isDumpable: Bool { sbs_dumpable() == 1 }
}
