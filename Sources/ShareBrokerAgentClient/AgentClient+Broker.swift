import ShareBroker
import ShareBrokerAgentProtocol

extension AgentClient {
    /// A broker for the app the agent welcomed (`welcome.app`) that knows the other apps on the
    /// device as the agent last described them (pushes keep them current: apps added, changed or removed, native mail ids changed).
    ///
    /// `ManagedApp.attach` (ShareBrokerLinux) does this with the desktop adapters; a tool that
    /// picks other adapters (in-memory ones, say) calls it with its own `platform`, which should
    /// report to this client and take its keys from it (`reportSink: client, secureServices: client`).
    /// `configuration` is what the broker must have before it starts (erasers, secure-file
    /// folders, the state folder: ``ShareBroker/Configuration``).
    public func makeBroker(for welcome: WelcomeMessage, platform: Platform,
                           configuration: ShareBroker.Configuration = ShareBroker.Configuration()) -> ShareBroker {
        ShareBroker(appID: welcome.app, device: device, platform: platform, configuration: configuration)
    }
}
