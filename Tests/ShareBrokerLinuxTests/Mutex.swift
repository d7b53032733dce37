import ShareBroker

/// The package's lock, as in the module under test: `@testable import ShareBrokerLinux` makes
/// its `Mutex` shadow visible here, and in `-DSHAREBROKER_TSAN` builds it is not
/// `Synchronization.Mutex`, so this module names the same one to keep `Mutex` unambiguous.
typealias Mutex<Value: ~Copyable> = ShareBrokerMutex<Value>
