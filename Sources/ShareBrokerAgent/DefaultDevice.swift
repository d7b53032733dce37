import ShareBrokerPolicyDocument

/// The sample device policy the agent starts with when it has neither `--policy` nor a policy
/// in its state folder: the apps of `examples/device-default.json`, with their executables
/// placed under the agent's apps folder (``ShareBrokerAgentProtocol/AgentPaths/apps``) so that a
/// copy of any binary there becomes that app, and no SHA-256 pins (the agent cannot know the
/// hash of a binary you will copy there).
public enum DefaultDevice {
    /// The executable file names under the apps folder, by app id.
    public static let executables: [(id: String, file: String)] = [
        ("com.acme.notes", "acme-notes"),
        ("com.acme.viewer", "acme-viewer"),
        ("com.apple.mobilemail", "mail-client"),
        ("org.example.sheets", "example-sheets"),
    ]

    /// The document text, with executables under `appsDirectory` (absolute, normalized).
    public static func documentText(appsDirectory: String) -> String {
        """
        {
          "format": "sharebroker.device",
          "version": 1,
          "description": "The agent's sample device: the managed notes app, a managed viewer, native mail and an unmanaged sheets app. Copy a binary to \(appsDirectory)/acme-notes to make it the notes app.",
          "apps": [
            {
              "id": "com.acme.notes",
              "name": "Acme Notes",
              "executable": "\(appsDirectory)/acme-notes",
              "appConnect": true,
              "handles": ["acme-notes"],
              "policy": {
                "auth": "authorized",
                "authMessage": "Welcome",
                "openIn": "whitelist",
                "openInWhitelist": ["com.acme.viewer"],
                "pasteboard": "secureCopy",
                "print": "authorized",
                "secureFileIO": "required",
                "logLevel": "status",
                "dragAndDrop": "appConnectApps",
                "managedBrowserRequired": false,
                "config": {}
              }
            },
            {
              "id": "com.acme.viewer",
              "name": "Acme Viewer",
              "executable": "\(appsDirectory)/acme-viewer",
              "appConnect": true,
              "policy": {
                "auth": "authorized",
                "openIn": "appConnectApps",
                "pasteboard": "secureCopy",
                "print": "authorized",
                "secureFileIO": "required",
                "dragAndDrop": "appConnectApps"
              }
            },
            {
              "id": "com.apple.mobilemail",
              "name": "Mail",
              "executable": "\(appsDirectory)/mail-client",
              "appConnect": false,
              "handles": ["mailto"]
            },
            {
              "id": "org.example.sheets",
              "name": "Example Sheets",
              "executable": "\(appsDirectory)/example-sheets",
              "appConnect": false,
              "handles": ["sheets"]
            }
          ]
        }

        """
    }
}
