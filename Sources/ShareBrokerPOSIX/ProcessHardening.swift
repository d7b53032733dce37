import CShareBrokerSocket

/// What a process that holds keys does to itself so that other processes of its user cannot
/// read them out of its memory.
package enum ProcessHardening {
    /// Makes this process non-dumpable (`PR_SET_DUMPABLE` 0): no core dump, and processes of
    /// the same user can neither ptrace it nor open its `/proc/PID/mem`, `environ` or `fd`
    /// (those files become root's). Called once keys arrive (apps) or before they are loaded
    /// (the agent). Lasts until the next `execve`. Returns whether the kernel accepted it.
    @discardableResult
    package static func denyInspection() -> Bool {
        sbs_deny_inspection() == 0
    }

    /// Whether this process is dumpable now.
    package static var isDumpable: Bool { sbs_dumpable() == 1 }
}
