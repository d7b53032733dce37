import ShareBroker

/// An `Outbox` that keeps hand-overs in memory: for tests and benchmarks.
public final class InMemoryOutbox: Outbox {
    private let files = Mutex<[(name: String, bytes: [UInt8])]>([])

    /// Creates an empty outbox.
    public init() {}

    public func handOver(name: String, bytes: [UInt8]) throws(ShareBrokerError) -> String {
        try Self.validate(name: name)
        let index = files.withLock { files in
            files.append((name, bytes))
            return files.count - 1
        }
        return "/memory/\(index)/\(name)"
    }

    /// Every hand-over so far, in order.
    public var handedOver: [(name: String, bytes: [UInt8])] { files.withLock { $0 } }

    /// Forgets every hand-over (benchmarks call this between batches).
    public func removeAll() { files.withLock { $0.removeAll(keepingCapacity: true) } }
}
