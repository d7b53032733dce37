import ShareBroker

/// The package's lock: `Synchronization.Mutex`, annotated for ThreadSanitizer in
/// `-DSHAREBROKER_TSAN` builds (Sources/ShareBroker/Support/Mutex.swift says why). The agent's
/// state, logs and identifier caches are contended by many connection threads: with
/// `Synchronization.Mutex` itself, AgentCoreTests' concurrency test under TSan reports a Swift
/// access race on a session read under the state lock (`acknowledgments(_:session:)`).
typealias Mutex<Value: ~Copyable> = ShareBrokerMutex<Value>
