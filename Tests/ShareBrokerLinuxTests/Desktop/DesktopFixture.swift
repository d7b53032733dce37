#if canImport(Glibc)
import Glibc
#endif
import Foundation
import ShareBroker
import ShareBrokerLinux
import Synchronization
import Testing
import ShareBrokerTesting

/// A temporary XDG tree with desktop entries of small recording apps (shell scripts that copy the
/// file they were given, or write down the URL, into a records folder), a `mimeapps.list` naming
/// scheme and type handlers, and a private runtime folder.
///
/// GLib reads the XDG variables once per process, so the tree is made once, before the first GIO
/// call, and the variables are set for the whole test process. Only XDG_DATA_HOME,
/// XDG_DATA_DIRS, XDG_CONFIG_HOME and XDG_CONFIG_DIRS are set (no other code here reads them);
/// the runtime folder is passed explicitly. GIO launches need neither a display nor a D-Bus
/// session (docs/DESKTOP-INTEGRATION.md), so none is started.
final class DesktopFixture: Sendable {
    static let shared = DesktopFixture()

    let root: String
    let runtime: String
    let records: String
    let available: String?

    /// Apps that record the file they get (`%f`).
    static let fileApps = ["org.example.Recorder", "org.example.Other", "org.example.Picker",
                           "org.example.recorder", "org.example.Record"]
    /// Apps that record the URL they get (`%u`).
    static let urlApps = ["org.example.Sheets", "org.example.Mail", "org.example.ManagedMail"]

    private init() {
        let base = NSTemporaryDirectory() + "sharebroker-desktop-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        root = base
        Self.rootForCleanup.withLock { $0 = base }
        Self.removeAtExit
        runtime = base + "/runtime"
        records = base + "/records"
        let fm = FileManager.default
        guard FileManager.default.isExecutableFile(atPath: "/bin/sh") else {
            available = "no /bin/sh for the recording apps"
            return
        }
        do {
            for dir in ["/data/applications", "/data/flatpak/exports/share/applications", "/config", "/configdirs",
                        "/bin", "/records", "/runtime"] {
                try fm.createDirectory(atPath: base + dir, withIntermediateDirectories: true)
            }
            chmod(runtime, 0o700)
            let fileRecorder = """
                #!/bin/sh
                out="$1"; shift
                mkdir -p "$out"
                n="$(date +%s%N)-$$"
                printf '%s' "$1" > "$out/$n.path"
                cp -- "$1" "$out/$n.data" 2>/dev/null || : > "$out/$n.missing"
                : > "$out/$n.done"

                """
            let urlRecorder = """
                #!/bin/sh
                out="$1"; shift
                mkdir -p "$out"
                n="$(date +%s%N)-$$"
                printf '%s' "$1" > "$out/$n.url"
                : > "$out/$n.done"

                """
            try Self.write(fileRecorder, to: base + "/bin/record-file", mode: 0o755)
            try Self.write(urlRecorder, to: base + "/bin/record-url", mode: 0o755)
            for id in Self.fileApps {
                try Self.write("""
                    [Desktop Entry]
                    Type=Application
                    Name=\(id)
                    Exec=\(base)/bin/record-file \(records)/\(id) %f
                    MimeType=text/plain;

                    """, to: base + "/data/applications/\(id).desktop", mode: 0o644)
            }
            for (id, scheme) in zip(Self.urlApps, ["sheets", "mailto", "mailto"]) {
                try Self.write("""
                    [Desktop Entry]
                    Type=Application
                    Name=\(id)
                    Exec=\(base)/bin/record-url \(records)/\(id) %u
                    MimeType=x-scheme-handler/\(scheme);

                    """, to: base + "/data/applications/\(id).desktop", mode: 0o644)
            }
            // A Flatpak export that is not on XDG_DATA_DIRS (as when the session's profile script
            // did not add the export folders): found through the adapter's own fallback.
            try Self.write("""
                [Desktop Entry]
                Type=Application
                Name=Flatpak app
                Exec=\(base)/bin/record-file \(records)/org.example.Flatpak %f

                """, to: base + "/data/flatpak/exports/share/applications/org.example.Flatpak.desktop", mode: 0o644)
            try Self.write("this is [not a key file\n=== at all\n", to: base + "/data/applications/org.example.Broken.desktop", mode: 0o644)
            // A deleted entry (Hidden=true) that would otherwise start: a file app and a scheme's default.
            try Self.write("""
                [Desktop Entry]
                Type=Application
                Name=Hidden
                Hidden=true
                Exec=\(base)/bin/record-file \(records)/org.example.Hidden %f
                MimeType=x-scheme-handler/hiddenscheme;

                """, to: base + "/data/applications/org.example.Hidden.desktop", mode: 0o644)
            // A scheme handler that takes files only (%f): it cannot take a URL.
            try Self.write("""
                [Desktop Entry]
                Type=Application
                Name=File only
                Exec=\(base)/bin/record-file \(records)/org.example.FileOnly %f
                MimeType=x-scheme-handler/fileonly;

                """, to: base + "/data/applications/org.example.FileOnly.desktop", mode: 0o644)
            try Self.write("[Desktop Entry]\nType=Application\nName=No Exec\n",
                      to: base + "/data/applications/org.example.NoExec.desktop", mode: 0o644)
            try Self.write("""
                [Default Applications]
                x-scheme-handler/sheets=org.example.Sheets.desktop
                x-scheme-handler/mailto=org.example.Mail.desktop
                x-scheme-handler/hiddenscheme=org.example.Hidden.desktop
                x-scheme-handler/fileonly=org.example.FileOnly.desktop
                text/plain=org.example.Picker.desktop

                """, to: base + "/config/mimeapps.list", mode: 0o644)
            setenv("XDG_DATA_HOME", base + "/data", 1)
            // The system data folders stay for the shared MIME database (type guessing).
            setenv("XDG_DATA_DIRS", "/usr/local/share:/usr/share", 1)
            setenv("XDG_CONFIG_HOME", base + "/config", 1)
            setenv("XDG_CONFIG_DIRS", base + "/configdirs", 1)
            available = nil
        } catch {
            available = "could not build the XDG tree: \(error)"
        }
    }

    /// The tree lives as long as the test process (GLib cached its paths): removed at exit.
    private static let removeAtExit: Void = {
        atexit {
            if let root = DesktopFixture.rootForCleanup.withLock({ $0 }) {
                try? FileManager.default.removeItem(atPath: root)
            }
        }
    }()
    private static let rootForCleanup = Mutex<String?>(nil)

    private static func write(_ text: String, to path: String, mode: mode_t) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, mode)
    }

    /// The record names of `app` so far.
    func recordNames(_ app: String) -> Set<String> {
        Set((try? FileManager.default.contentsOfDirectory(atPath: records + "/" + app)) ?? [])
    }

    /// Waits (up to 10 s) for a launch of `app` not in `before`; returns its record stem.
    func waitForLaunch(of app: String, after before: Set<String>) -> String? {
        for _ in 0..<200 {
            if let done = recordNames(app).subtracting(before).first(where: { $0.hasSuffix(".done") }) {
                return String(done.dropLast(5))
            }
            usleep(50_000)
        }
        return nil
    }

    func record(_ app: String, _ stem: String, _ ext: String) -> [UInt8]? {
        FileManager.default.contents(atPath: "\(records)/\(app)/\(stem).\(ext)").map(Array.init)
    }

    /// Makes a document file with `bytes` and returns its path.
    func document(named name: String, bytes: [UInt8]) throws -> String {
        let folder = root + "/docs/\(UInt64.random(in: 0 ... .max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = folder + "/" + name
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }
}

/// A delegate recording the two callbacks the hand-offs owe.
final class CallbackLog: ShareBrokerDelegate {
    private let log = Mutex<[String]>([])
    var calls: [String] { log.withLock { $0 } }
    func appConnectIsReady() {}
    func authStateChanged(to state: AuthState, message: String) -> Acknowledgment { .applied }
    func openInAttemptedWhenBlocked(policy: OpenInPolicy) { log.withLock { $0.append("openInBlocked") } }
    func openURLAttemptedWhenUnauthorized(url: String) { log.withLock { $0.append("openURLBlocked") } }
}

/// A started, ready broker whose platform opens URLs on the desktop.
struct DesktopBroker {
    let broker: ShareBroker
    let callbacks = CallbackLog()
    let opener: DesktopURLOpener
    let sink = RecordingReportSink()

    init(openIn: TransferSetting, auth: AuthState = .authorized, config: [String: String]? = nil,
         apps: [DeviceApp] = [], nativeMail: NativeMail = NativeMail(ids: ["org.example.Mail"], launchID: "org.example.Mail")) throws {
        opener = DesktopURLOpener()
        broker = ShareBroker(appID: "com.acme.notes", device: DeviceApps(apps, nativeMail: nativeMail),
                             platform: Platform(outbox: InMemoryOutbox(), urlOpener: opener, reportSink: sink,
                                                pasteboard: InMemoryPasteboard(),
                                                secureServices: try InProcessKeyCustodian(entitledAppIDs: ["com.acme.notes"])))
        try broker.start(delegate: callbacks)
        try broker.apply(PolicyUpdate(auth: auth, openIn: openIn, config: config))
    }
}
