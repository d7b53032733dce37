import ShareBroker

/// A policy directory, the way configuration management deploys policies (`/etc/sharebroker/`
/// by default, as Chrome and Firefox enterprise policies live under `/etc`):
///
/// * `device.json`: the device document (``PolicyDocument/deviceFormat``): the apps, their
///   executables and pins, and each AppConnect app's policy;
/// * `policies.d/*.json`, read in file-name order: app policy documents
///   (``PolicyDocument/appFormat``) or Microsoft Graph managed app protection bodies (imported with
///   ``IntuneImporter``, so Intune can stay the source of truth). Each replaces the whole policy of
///   the app it names in the device document.
///
/// Precedence: a file in `policies.d` wins over the policy written in `device.json`; two files for
/// the same app are an error (which one was meant cannot be known). Assembly is all or nothing:
/// any error refuses the whole directory, so the agent keeps the policy in force.
///
/// This type only combines file contents; reading the folder (regular files only, size limits)
/// and watching it is the agent's job.
public enum PolicyDirectory {
    /// The device document's file name in the directory.
    public static let deviceFileName = "device.json"
    /// The sub-folder of per-app policy files.
    public static let policiesFolderName = "policies.d"
    /// The default directory.
    public static let defaultPath = "/etc/sharebroker"

    /// Whether a file name in `policies.d` is read: `*.json`, not hidden (editors' and
    /// configuration tools' temporary files are skipped).
    public static func isPolicyFileName(_ name: String) -> Bool {
        !name.hasPrefix(".") && name.hasSuffix(".json") && name.count > 5
    }

    /// The device document with every policy file applied.
    ///
    /// - Parameters:
    ///   - device: the bytes of `device.json`.
    ///   - policies: the files of `policies.d` (name and bytes), in any order; they are applied in
    ///     name order.
    /// - Returns: the registry, and warnings for people (Intune fields not supported, an Intune
    ///   body's target apps that are not on this device...).
    /// - Throws: ``PolicyDirectoryError`` naming the file and what is wrong.
    public static func assemble(device: [UInt8], policies: [(name: String, bytes: [UInt8])])
        throws(PolicyDirectoryError) -> (registry: DeviceRegistry, warnings: [String]) {
        var registry: DeviceRegistry
        do {
            registry = try DeviceRegistry.parse(device).registry
        } catch {
            throw PolicyDirectoryError(file: deviceFileName, reason: error.description)
        }
        var warnings: [String] = []
        var claimedBy: [String: String] = [:]
        for file in policies.sorted(by: { $0.name < $1.name }) {
            let path = policiesFolderName + "/" + file.name
            for (app, policy) in try policiesIn(file.bytes, path: path, registry: registry, warnings: &warnings) {
                guard let index = registry.apps.firstIndex(where: { $0.id == app }) else {
                    throw PolicyDirectoryError(file: path, reason: "the app \(app) is not in \(deviceFileName); register it there first")
                }
                guard registry.apps[index].isAppConnect else {
                    throw PolicyDirectoryError(file: path, reason: "the app \(app) does not link the library (\"appConnect\": false in \(deviceFileName)), so it has no policy")
                }
                if let earlier = claimedBy[app] {
                    throw PolicyDirectoryError(file: path, reason: "\(earlier) already sets the policy of \(app); keep one file per app")
                }
                claimedBy[app] = path
                registry.apps[index].policy = policy
            }
        }
        return (registry, warnings)
    }

    /// The app policies one file sets: one for a native document, one per targeted app on the
    /// device for an Intune body.
    static func policiesIn(_ bytes: [UInt8], path: String, registry: DeviceRegistry, warnings: inout [String])
        throws(PolicyDirectoryError) -> [(app: String, policy: PolicyUpdate)] {
        let json: JSONValue
        do {
            json = try StrictJSONParser.parse(bytes, limits: .standard)
        } catch {
            throw PolicyDirectoryError(file: path, reason: "not valid JSON: " + error.description)
        }
        guard case .object(let members) = json else {
            throw PolicyDirectoryError(file: path, reason: "expected a JSON object (an app policy document or an Intune body); got \(json.kindName)")
        }
        if json["format"] != nil {
            do {
                let document = try AppPolicyDocument.parse(bytes).document
                return [(document.app, document.policy)]
            } catch {
                throw PolicyDirectoryError(file: path, reason: error.description)
            }
        }
        // An Intune body: applied to each app it targets that this device registers.
        let targets = ImportRun(members: members).targets().ids
        let here = targets.filter { registry[$0] != nil }
        if targets.count > here.count {
            warnings.append("\(path): the Intune policy also targets \(targets.filter { registry[$0] == nil }.joined(separator: ", ")), not on this device")
        }
        if here.isEmpty {
            throw PolicyDirectoryError(file: path, reason: targets.isEmpty
                ? "an Intune body must name its apps (\"apps\" with a bundleId or packageId) to be used from a policy directory"
                : "the Intune policy targets no app of this device (\(targets.joined(separator: ", "))); name a device app id in its \"apps\"")
        }
        var result: [(app: String, policy: PolicyUpdate)] = []
        for app in here {
            do {
                let imported = try IntuneImporter.importPolicy(bytes, appID: app)
                warnings += imported.warnings.filter { !$0.contains("does not target") }.map { "\(path): \($0)" }
                result.append((app, imported.document.policy))
            } catch {
                throw PolicyDirectoryError(file: path, reason: error.description)
            }
        }
        return result
    }
}

/// Why a policy directory was refused: the file, and what is wrong with it. Nothing of the
/// directory was applied.
public struct PolicyDirectoryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file, relative to the directory (`device.json`, `policies.d/notes.json`).
    public let file: String
    /// What is wrong, and what to do.
    public let reason: String

    /// `file: reason`.
    public var description: String { "\(file): \(reason)" }
}
