import ShareBroker
import ShareBrokerAgentProtocol

extension AgentClient {
    /// A broker for the app the agent welcomed (`welcome.app`) that knows the other apps on the
    /// device as the agent last described them (pushes keep them current: apps added, changed or removed, native mail ids changed).
    ///
    /// `ManagedApp.attach` (ShareBrokerLinux) does this with the desktop adapters; a tool that
    /// picks other adapters (the in-memory ones of `Platform.embedded(entitling:)`, say) calls it
    /// with its own `platform`. Either way the broker reports to this client and takes its keys
    /// from it: they replace `platform`'s report sink and key custodian.
    /// `configuration` is what the broker must have before it starts (erasers, secure-file
    /// folders, the state folder: ``ShareBroker/Configuration``).
    public func makeBroker(for welcome: WelcomeMessage, platform: Platform,
                           configuration: ShareBroker.Configuration = ShareBroker.Configuration()) -> ShareBroker {
        var platform = platform
        platform.reportSink = self
        platform.secureServices = self
        return ShareBroker(appID: welcome.app, device: device, platform: platform, configuration: configuration)
    }
}
