import ShareBroker
enum _Placeholder {}
