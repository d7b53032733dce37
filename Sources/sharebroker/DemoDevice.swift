/// The agent demo's device policy, which the demo writes into its runtime folder and passes to
/// `sharebrokerd --policy` (the agent has no built-in device): the apps of
/// `examples/device-default.json`, with their executables under the demo's `apps/` folder, where
/// the demo places copies of this binary. No SHA-256 pins: fine for a throwaway demo folder only
/// the demo's user can write, never for a deployment (docs/THREAT-MODEL.md).
enum DemoDevice {
    /// The document text, with executables under `appsDirectory` (absolute, normalized).
    static func documentText(appsDirectory: String) -> String {
        """
        {
          "format": "sharebroker.device",
          "version": 2,
          "description": "The agent demo's device: the managed notes app, a managed viewer, native mail and an unmanaged sheets app. Copy a binary to \(appsDirectory)/acme-notes to make it the notes app.",
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
              "id": "com.acme.drafts",
              "name": "Acme Drafts",
              "executable": "\(appsDirectory)/acme-drafts",
              "appConnect": true,
              "policy": {
                "auth": "authorized",
                "openIn": "unauthorized",
                "pasteboard": "unauthorized",
                "print": "unauthorized",
                "secureFileIO": "required",
                "dragAndDrop": "none",
                "warn": {
                  "copy": {
                    "reasonRequired": true,
                    "reasons": [{"code": "customer-request", "label": "A customer asked for it"}],
                    "freeText": true,
                    "answerSeconds": 60
                  }
                }
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
