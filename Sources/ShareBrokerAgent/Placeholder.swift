import NIOCore
import NIOPosix
import ShareBroker
import ShareBrokerPolicyDocument
enum _Placeholder {}
