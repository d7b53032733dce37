#if canImport(Glibc)
import Glibc
#endif
import CGIO

/// A desktop entry GIO loaded (a `GDesktopAppInfo`), ready to start.
///
/// GIO's app infos are immutable once loaded; launching one from several threads is what GIO's
/// own `gio launch` and portals do, so the reference is shared as `@unchecked Sendable`.
public final class DesktopEntry: @unchecked Sendable {
    /// The desktop app id (without `.desktop`).
    public let id: String
    /// The `.desktop` file GIO loaded.
    public let path: String
    /// The entry's `Exec` command line as GIO reads it.
    public let commandLine: String
    fileprivate let info: OpaquePointer

    fileprivate init(id: String, info: OpaquePointer, path: String, commandLine: String) {
        self.id = id
        self.info = info
        self.path = path
        self.commandLine = commandLine
    }

    deinit { g_object_unref(gpointer(info)) }

    fileprivate var appInfo: OpaquePointer { info }
}

/// What the desktop adapter needs from the desktop: finding entries by id, the default handlers
/// of URL schemes and document types, and starting an entry. ``GIODesktop`` is the real one.
public protocol DesktopApps: Sendable {
    /// The entry with exactly this id, or why there is none usable.
    func entry(for id: String) throws(DesktopHandOffError) -> DesktopEntry
    /// The `x-scheme-handler/<scheme>` default (what `xdg-mime query default` answers), if any.
    func handler(forScheme scheme: String) -> String?
    /// The default app for the type guessed from a file name (what the user would get), if any,
    /// with the type.
    func handler(forFileNamed name: String) -> (appID: String?, contentType: String)
    /// Starts `entry` with the local file at `path`, given as bytes (file names need not be
    /// UTF-8; GIO passes the path, `%f`/`%u`).
    func launch(_ entry: DesktopEntry, filePath path: [UInt8]) throws(DesktopHandOffError)
    /// Starts `entry` with `uri`.
    func launch(_ entry: DesktopEntry, uri: String) throws(DesktopHandOffError)
}

/// The desktop through libgio: `g_desktop_app_info_new` (XDG_DATA_HOME, then XDG_DATA_DIRS;
/// first match wins), the Flatpak export folders when they are not on XDG_DATA_DIRS, GIO's
/// `mimeapps.list` defaults, and `g_app_info_launch` (no display or D-Bus session needed).
///
/// GLib reads the XDG variables once per process: set them before the first lookup.
public struct GIODesktop: DesktopApps {
    /// Creates the adapter.
    public init() {}

    public func entry(for id: String) throws(DesktopHandOffError) -> DesktopEntry {
        guard DesktopAppID.isValid(id) else { throw .invalidAppID(id) }
        let desktopID = id + ".desktop"
        if let info = g_desktop_app_info_new(desktopID) {
            return try Self.wrap(id: id, info: info)
        }
        // GIO found no usable entry: say why, by finding the file and asking GLib's key-file
        // parser, and try the Flatpak exports GIO may not search.
        for dir in Self.applicationFolders() {
            let path = dir + "/" + desktopID
            var st = stat()
            guard lstat(path, &st) == 0 else { continue }
            if let info = g_desktop_app_info_new_from_filename(path) {
                return try Self.wrap(id: id, info: info)
            }
            throw Self.diagnose(id: id, path: path)
        }
        throw .unknownApp(id)
    }

    public func handler(forScheme scheme: String) -> String? {
        guard let info = g_app_info_get_default_for_uri_scheme(scheme) else { return nil }
        defer { g_object_unref(gpointer(info)) }
        guard let id = g_app_info_get_id(info) else { return nil }
        return DesktopAppID.fromGIO(String(cString: id))
    }

    public func handler(forFileNamed name: String) -> (appID: String?, contentType: String) {
        var uncertain: gboolean = 0
        guard let type = g_content_type_guess(name, nil, 0, &uncertain) else {
            return (nil, "application/octet-stream")
        }
        defer { g_free(type) }
        let contentType = String(cString: type)
        guard let info = g_app_info_get_default_for_type(type, 0) else { return (nil, contentType) }
        defer { g_object_unref(gpointer(info)) }
        guard let id = g_app_info_get_id(info) else { return (nil, contentType) }
        return (DesktopAppID.fromGIO(String(cString: id)), contentType)
    }

    public func launch(_ entry: DesktopEntry, filePath path: [UInt8]) throws(DesktopHandOffError) {
        guard let file = g_file_new_for_path(path.map { CChar(bitPattern: $0) } + [0]) else {
            throw .launchFailed(appID: entry.id, reason: "GIO could not make a file reference")
        }
        defer { g_object_unref(gpointer(file)) }
        let list = g_list_append(nil, gpointer(file))
        defer { g_list_free(list) }
        var error: UnsafeMutablePointer<GError>?
        if g_app_info_launch(entry.appInfo, list, nil, &error) == 0 {
            throw .launchFailed(appID: entry.id, reason: Self.take(error))
        }
    }

    public func launch(_ entry: DesktopEntry, uri: String) throws(DesktopHandOffError) {
        // GIO would start an app that takes no URL (Exec with %f only, or no field code) without it.
        guard g_app_info_supports_uris(entry.appInfo) != 0 else { throw .cannotTakeURL(appID: entry.id, path: entry.path) }
        guard let copy = g_strdup(uri) else { throw .launchFailed(appID: entry.id, reason: "out of memory") }
        let list = g_list_append(nil, gpointer(copy))
        defer { g_list_free_full(list, g_free) }
        var error: UnsafeMutablePointer<GError>?
        if g_app_info_launch_uris(entry.appInfo, list, nil, &error) == 0 {
            throw .launchFailed(appID: entry.id, reason: Self.take(error))
        }
    }

    // MARK: - Internals

    private static func wrap(id: String, info: OpaquePointer) throws(DesktopHandOffError) -> DesktopEntry {
        let path = g_desktop_app_info_get_filename(info).map { String(cString: $0) } ?? "?"
        // GIO's lookup by id refuses a deleted entry; loaded by its path it would start.
        if g_desktop_app_info_get_is_hidden(info) != 0 {
            g_object_unref(gpointer(info))
            throw .hiddenEntry(appID: id, path: path)
        }
        guard let line = g_app_info_get_commandline(info), line.pointee != 0 else {
            g_object_unref(gpointer(info))
            throw .noExec(appID: id, path: path)
        }
        return DesktopEntry(id: id, info: info, path: path, commandLine: String(cString: line))
    }

    /// Why GIO refused an entry that exists: GLib's parser error, a missing Exec, or not an app.
    private static func diagnose(id: String, path: String) -> DesktopHandOffError {
        guard let keys = g_key_file_new() else { return .notLaunchable(appID: id, path: path) }
        defer { g_key_file_free(keys) }
        var error: UnsafeMutablePointer<GError>?
        if g_key_file_load_from_file(keys, path, G_KEY_FILE_NONE, &error) == 0 {
            return .unparsableEntry(appID: id, path: path, reason: take(error))
        }
        if g_key_file_has_group(keys, "Desktop Entry") == 0 {
            return .unparsableEntry(appID: id, path: path, reason: "no [Desktop Entry] group")
        }
        if g_key_file_has_key(keys, "Desktop Entry", "Exec", nil) == 0 {
            return .noExec(appID: id, path: path)
        }
        return .notLaunchable(appID: id, path: path)
    }

    /// XDG_DATA_HOME, XDG_DATA_DIRS and both Flatpak export folders, each + `/applications`.
    static func applicationFolders() -> [String] {
        var dataDirs: [String] = []
        if let home = g_get_user_data_dir() { dataDirs.append(String(cString: home)) }
        if let system = g_get_system_data_dirs() {
            var i = 0
            while let dir = system[i] {
                dataDirs.append(String(cString: dir))
                i += 1
            }
        }
        if let home = g_get_user_data_dir() { dataDirs.append(String(cString: home) + "/flatpak/exports/share") }
        dataDirs.append("/var/lib/flatpak/exports/share")
        var seen = Set<String>()
        return dataDirs.filter { seen.insert($0).inserted }.map { $0 + "/applications" }
    }

    private static func take(_ error: UnsafeMutablePointer<GError>?) -> String {
        guard let error else { return "unknown GIO error" }
        defer { g_error_free(error) }
        return error.pointee.message.map { String(cString: $0) } ?? "unknown GIO error"
    }
}
