import ShareBroker

/// The package's lock: `Synchronization.Mutex`, annotated for ThreadSanitizer in
/// `-DSHAREBROKER_TSAN` builds (Sources/ShareBroker/Support/Mutex.swift says why).
typealias Mutex<Value: ~Copyable> = ShareBrokerMutex<Value>
