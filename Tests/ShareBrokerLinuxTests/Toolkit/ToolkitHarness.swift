import Foundation
import Testing

/// The real toolkit apps the governed-clipboard tests build (Toolkit/Apps: a GTK 4 text view and
/// a Qt 6 text edit, each managed by libsharebroker with the one call) and what they need.
enum ToolkitApps {
    static let gcc = X11Tools.find("gcc") ?? X11Tools.find("cc")
    static let gxx = X11Tools.find("g++") ?? X11Tools.find("c++")
    static let pkgConfig = X11Tools.find("pkg-config")
    static let xdotool = X11Tools.find("xdotool")
    static let wtype = X11Tools.find("wtype")

    /// The folder of the test bundle's build: libsharebroker-c.so is built there by `swift build`
    /// (make test builds everything before testing).
    static var binDirectory: URL {
        let here = Bundle.main.bundleURL
        for candidate in [here.deletingLastPathComponent(), here]
        where FileManager.default.fileExists(atPath: candidate.appendingPathComponent("libsharebroker-c.so").path) {
            return candidate
        }
        return here.deletingLastPathComponent()
    }

    static var apps: URL { URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Apps") }
    static var include: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("include")
    }

    /// Whether pkg-config knows `module`.
    static func hasModule(_ module: String) -> Bool {
        guard let pkgConfig, let status = try? X11Tools.runQuietly(pkgConfig, ["--exists", module]) else { return false }
        return status == 0
    }

    static let gtkUnavailable: String? = {
        if !X11Tools.available { return "\(X11Tools.skipReason.rawValue)" }
        if gcc == nil || pkgConfig == nil || xdotool == nil || !hasModule("gtk4") {
            return "gcc, pkg-config, xdotool or GTK 4's headers are missing (make deps installs libgtk-4-dev xdotool)"
        }
        return nil
    }()

    static let gtk3Unavailable: String? = {
        if !X11Tools.available { return "\(X11Tools.skipReason.rawValue)" }
        if gcc == nil || pkgConfig == nil || xdotool == nil || !hasModule("gtk+-3.0") {
            return "gcc, pkg-config, xdotool or GTK 3's headers are missing (make deps installs libgtk-3-dev xdotool)"
        }
        return nil
    }()

    static let qtUnavailable: String? = {
        if !X11Tools.available { return "\(X11Tools.skipReason.rawValue)" }
        if gxx == nil || pkgConfig == nil || xdotool == nil || !hasModule("Qt6Widgets") {
            return "g++, pkg-config, xdotool or Qt 6's headers are missing (make deps installs qt6-base-dev xdotool)"
        }
        return nil
    }()

    /// A folder in the build (not /tmp, so nothing is left behind) with the library under its
    /// SONAME, which the apps are linked to (rpath), and the apps.
    static let libraryFolder: Result<String, HarnessError> = {
        let library = binDirectory.appendingPathComponent("libsharebroker-c.so").path
        guard FileManager.default.fileExists(atPath: library) else {
            return .failure(HarnessError("\(library) is not built: run `swift build` (make test does) before `swift test`"))
        }
        let folder = binDirectory.appendingPathComponent("toolkit-test-apps").path
        let link = folder + "/libsharebroker.so.1"
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            chmod(folder, 0o755)
            if (try? FileManager.default.destinationOfSymbolicLink(atPath: link)) != library {
                try? FileManager.default.removeItem(atPath: link)
                try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: library)
            }
        } catch {
            return .failure(HarnessError("could not lay out \(folder): \(error)"))
        }
        return .success(folder)
    }()

    /// Compiles `source` (in Apps/) with `compiler` against `module`; the executable's path.
    static func build(_ source: String, compiler: String?, module: String, extra: [String], named name: String) throws -> String {
        guard let compiler, let pkgConfig else { throw HarnessError("no compiler") }
        let folder = try libraryFolder.get()
        let flags = try output(pkgConfig, ["--cflags", "--libs", module])
        let executable = folder + "/" + name
        // Built under a name of this process's, then renamed: a concurrent test run never runs a
        // half-written app.
        let building = executable + ".\(getpid())"
        var arguments = ["-O1", "-Wall", "-Wextra", "-o", building, apps.appendingPathComponent(source).path,
                         "-I", include.path, "-I", apps.path] + extra
        arguments += flags.split(separator: " ").map(String.init)
        arguments += ["-L", folder, "-l:libsharebroker.so.1", "-Wl,-rpath," + folder]
        let status = try X11Tools.runQuietly(compiler, arguments)
        guard status == 0 else {
            unlink(building)
            throw HarnessError("\(compiler) \(arguments.joined(separator: " ")) exited with \(status)")
        }
        guard rename(building, executable) == 0 else { throw HarnessError("could not rename \(building)") }
        return executable
    }

    static let gtkApp = Result { () throws(HarnessError) -> String in
        do { return try build("gtk_text.c", compiler: gcc, module: "gtk4", extra: ["-std=gnu11"], named: "gtk4_text") } catch let e as HarnessError { throw e } catch {
            throw HarnessError("\(error)")
        }
    }

    static let gtk3App = Result { () throws(HarnessError) -> String in
        do { return try build("gtk_text.c", compiler: gcc, module: "gtk+-3.0", extra: ["-std=gnu11"], named: "gtk3_text") } catch let e as HarnessError { throw e } catch {
            throw HarnessError("\(error)")
        }
    }

    static let qtApp = Result { () throws(HarnessError) -> String in
        do { return try build("qt_text.cpp", compiler: gxx, module: "Qt6Widgets", extra: ["-std=c++17", "-fPIC"], named: "qt6_text") } catch let e as HarnessError { throw e } catch {
            throw HarnessError("\(error)")
        }
    }

    /// The standard output of a tool (trimmed).
    static func output(_ path: String, _ arguments: [String]) throws -> String {
        let child = try Child(path, arguments, environment: ["PATH": "/usr/bin:/bin"], input: nil)
        let bytes = child.readAll(until: .now + .seconds(10))
        _ = child.wait(timeout: .seconds(10))
        return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// A running toolkit test app: commands go to its standard input, its lines come back from its
/// standard output (`ready`, `copy-attempted N`, `done COMMAND`).
final class ToolkitApp: @unchecked Sendable {
    private let child: Child
    private let input: Int32
    private(set) var lines: [String] = []

    init(_ executable: String, environment: [String: String]) throws {
        var inPipe: [Int32] = [0, 0]
        guard pipe(&inPipe) == 0 else { throw HarnessError("pipe failed") }
        // The child reads the pipe as its standard input: /proc/self/fd/N of this process.
        _ = fcntl(inPipe[1], F_SETFD, FD_CLOEXEC)
        var env = environment
        env["PATH"] = "/usr/bin:/bin"
        env["NO_AT_BRIDGE"] = "1"
        env["GSETTINGS_BACKEND"] = "memory"
        // Child's standard input is /dev/null or a one-shot pipe: bash (dash refuses fd numbers over
        // 9) makes our pipe its standard input.
        child = try Child("/bin/bash", ["-c", "exec \"$0\" <&\(inPipe[0])", executable], environment: env, input: nil)
        close(inPipe[0])
        input = inPipe[1]
    }

    deinit {
        close(input)
        child.kill()
    }

    /// Sends one command line.
    func send(_ command: String) {
        let line = Array((command + "\n").utf8)
        _ = line.withUnsafeBytes { write(input, $0.baseAddress, $0.count) }
    }

    /// Reads lines until one equals `line` (true) or the timeout passes (false).
    @discardableResult
    func waitFor(_ line: String, timeout: Duration = .seconds(10)) -> Bool {
        if lines.contains(line) { return true }
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let next = child.readLine(until: deadline)
            if !next.isEmpty { lines.append(next) }
            if next == line { return true }
            if next.isEmpty && child.wait(timeout: .zero) { return false }
        }
        return false
    }

    /// Sends `command` and waits until the app handled it.
    func perform(_ command: String) -> Bool {
        send(command)
        return waitFor("done " + command)
    }

    /// Lines read so far that start with `prefix`.
    func count(_ prefix: String) -> Int { lines.filter { $0.hasPrefix(prefix) }.count }

    var errorOutput: String { child.errorOutput }
}
