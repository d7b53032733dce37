import ShareBroker

/// The package's lock: `Synchronization.Mutex`, annotated for ThreadSanitizer in
/// `-DSHAREBROKER_TSAN` builds (Sources/ShareBroker/Support/Mutex.swift says why). The agent's
/// state, logs and identifier caches are contended by many connection threads, so without it
/// the in-process tests under TSan (Tests/AgentCoreTests) would report the lock's hand-offs.
typealias Mutex<Value: ~Copyable> = ShareBrokerMutex<Value>
