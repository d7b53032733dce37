import Synchronization

// ThreadSanitizer cannot see `Synchronization.Mutex` on Linux when it is contended: the
// uncontended lock and unlock are atomics inlined into this module (instrumented), but a
// contended lock or unlock goes through `_lockSlow`/`_unlockSlow`, futex calls inside the
// prebuilt, uninstrumented Swift runtime. TSan then sees no happens-before edge between two
// critical sections and reports every value handed through the lock (a policy snapshot, a list
// of reports) as a data race. Reproduced outside this package in 15 lines: four threads
// incrementing a counter under a Mutex with a short sleep inside; TSan reports races, the count
// is exact.
//
// So this module declares its own `Mutex`, which shadows the Synchronization one in every file
// here (no call site changes), and shares it (`ShareBrokerMutex`, package access) with the
// package's other modules, which shadow `Mutex` with it the same way:
// * in ordinary builds it *is* `Synchronization.Mutex` (a typealias: nothing added);
// * built with `-DSHAREBROKER_TSAN` (`make sanitize-thread` passes it with `--sanitize=thread`),
//   it is a lock plus the value's storage, and each critical section tells TSan it acquires and
//   releases the lock (`__tsan_acquire`/`__tsan_release`) before touching the value.

#if SHAREBROKER_TSAN
@_silgen_name("__tsan_acquire")
private func tsanAcquire(_ address: UnsafeRawPointer)
@_silgen_name("__tsan_release")
private func tsanRelease(_ address: UnsafeRawPointer)

/// `Synchronization.Mutex` with ThreadSanitizer annotations (`-DSHAREBROKER_TSAN` builds only).
package struct ShareBrokerMutex<Value: ~Copyable>: ~Copyable {
    /// The lock and the value, in a class: its `let`s are read without exclusivity checks, which
    /// TSan would otherwise report (they run before the annotation).
    private final class Locked {
        let lock = _MutexHandle() // the lock under Synchronization.Mutex
        let storage: UnsafeMutablePointer<Value>

        init(_ value: consuming Value) {
            storage = .allocate(capacity: 1)
            storage.initialize(to: value)
        }

        deinit {
            storage.deinitialize(count: 1)
            storage.deallocate()
        }
    }

    private let locked: Locked

    package init(_ initialValue: consuming sending Value) {
        locked = Locked(initialValue)
    }

    package borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        let locked = self.locked
        locked.lock.unsafeLock()
        tsanAcquire(locked.storage)
        defer {
            tsanRelease(locked.storage)
            locked.lock.unsafeUnlock()
        }
        return try body(&locked.storage.pointee)
    }
}

extension ShareBrokerMutex: @unchecked Sendable where Value: ~Copyable {}
#else
/// `Synchronization.Mutex` (see the top of this file for the ThreadSanitizer build).
package typealias ShareBrokerMutex<Value: ~Copyable> = Synchronization.Mutex<Value>
#endif

/// Every module of the package that locks declares this same shadow (one line), so its files
/// say `Mutex` and get the annotated lock in ThreadSanitizer builds.
typealias Mutex<Value: ~Copyable> = ShareBrokerMutex<Value>
