#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CShareBrokerSocket

/// A thread of its own for a long-running loop (a socket reader, a selection server), started
/// with pthreads rather than Foundation's `Thread`, so the modules an app links through the C
/// library carry no Foundation.
package enum DetachedThread {
    /// Starts a detached thread named `name` (the kernel keeps its first 15 bytes) that runs `body`.
    /// Returns whether it started (`pthread_create` can fail when the process is at its thread
    /// or memory limit).
    @discardableResult
    package static func start(name: String, _ body: @escaping @Sendable () -> Void) -> Bool {
        final class Box {
            let name: String
            let body: @Sendable () -> Void
            init(name: String, body: @escaping @Sendable () -> Void) {
                self.name = name
                self.body = body
            }
        }
        let box = Unmanaged.passRetained(Box(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { argument in
            guard let argument else { return nil }
            let box = Unmanaged<Box>.fromOpaque(argument).takeRetainedValue()
            _ = sbs_set_thread_name(box.name)
            box.body()
            return nil
        }, box)
        guard rc == 0 else {
            Unmanaged<Box>.fromOpaque(box).release()
            return false
        }
        pthread_detach(thread)
        return true
    }
}
