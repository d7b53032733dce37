/// Another app on the device, as far as the sharing rules care.
@usableFromInline
package struct DeviceApp: Sendable, Hashable {
    /// The bundle id, compared exactly (case-sensitive, whole id).
    package var id: String
    /// Whether the app links an AppConnect-style library.
    package var isAppConnect: Bool
    /// Whether that app's user is currently authorized.
    package var isAuthorized: Bool
    /// URL schemes the app opens, lower-cased.
    package var schemes: [String]

    /// Creates a description of an app on the device.
    package init(id: String, isAppConnect: Bool = false, isAuthorized: Bool = false, schemes: [String] = []) {
        self.id = id
        self.isAppConnect = isAppConnect
        self.isAuthorized = isAuthorized
        self.schemes = schemes.map { $0.lowercased() }
    }

    /// An app that links the library and whose user is authorized.
    @usableFromInline package var isAuthorizedAppConnectApp: Bool { isAppConnect && isAuthorized }
}

/// The other apps on the device: an immutable value kept inside the policy snapshot so that a
/// decision sees the device and the policy of one and the same moment.
@usableFromInline
package struct DeviceApps: Sendable, Hashable {
    private var byID: [String: DeviceApp] = [:]
    private var order: [String] = []
    /// Which ids count as native mail on this device (the seeds' two Apple ids by default).
    @usableFromInline package var nativeMail: NativeMail = .appleDevices

    /// An empty device.
    package init() {}

    /// A device holding these apps; a later entry with the same id replaces an earlier one.
    package init(_ apps: [DeviceApp], nativeMail: NativeMail = .appleDevices) {
        for app in apps { upsert(app) }
        self.nativeMail = nativeMail
    }

    /// Adds an app, or replaces the one with the same id.
    package mutating func upsert(_ app: DeviceApp) {
        if byID.updateValue(app, forKey: app.id) == nil { order.append(app.id) }
    }

    /// The app with exactly this id, if the device has it.
    @usableFromInline package subscript(id: String) -> DeviceApp? { byID[id] }

    /// Every app, in the order they were first added.
    package var all: [DeviceApp] { order.compactMap { byID[$0] } }

    /// The ids of every authorized AppConnect app: the expansion of "All AppConnect apps".
    package var authorizedAppConnectIDs: Set<String> {
        Set(byID.values.lazy.filter(\.isAuthorizedAppConnectApp).map(\.id))
    }

    /// The first app (in order of addition) that opens `scheme`, compared case-insensitively
    /// as URL schemes are.
    package func handler(forScheme scheme: String) -> DeviceApp? {
        let scheme = scheme.lowercased()
        for id in order {
            if let app = byID[id], app.schemes.contains(scheme) { return app }
        }
        return nil
    }

    /// Whether an installed, authorized AppConnect app opens `scheme`.
    package func authorizedAppConnectHandler(forScheme scheme: String) -> DeviceApp? {
        let scheme = scheme.lowercased()
        for id in order {
            if let app = byID[id], app.isAuthorizedAppConnectApp, app.schemes.contains(scheme) { return app }
        }
        return nil
    }
}
