#if canImport(Glibc)
import Glibc
#endif
import ShareBroker
import ShareBrokerAgentProtocol

/// Which general pasteboard an app on this machine copies to and pastes from.
public enum PasteboardChoice: Sendable, Hashable {
    /// The desktop's: in a Wayland session (`WAYLAND_DISPLAY` set) the Wayland clipboard through
    /// data-control (ext, else wlr), and when the compositor offers neither (GNOME) and `DISPLAY`
    /// is set, the X11 clipboard through Xwayland (``DesktopPasteboard/notice`` says so); else X11
    /// when `DISPLAY` is set; else the pasteboard file of ShareBroker's own processes
    /// (`$SHAREBROKER_PASTEBOARD`, else the agent's runtime folder). A set
    /// `SHAREBROKER_PASTEBOARD` always means the file.
    case automatic
    /// The X11 `CLIPBOARD` and `PRIMARY` selections (``X11Pasteboard``).
    case x11
    /// The Wayland clipboard and primary selection through data-control, ext or wlr (``WaylandPasteboard``).
    case wayland
    /// The pasteboard file at `path`, which only ShareBroker's own processes read (``FilePasteboard``).
    case file(path: String)

    /// The concrete choice `automatic` stands for in `environment`.
    public func resolved(in environment: [String: String]) -> PasteboardChoice {
        guard self == .automatic else { return self }
        if let path = environment["SHAREBROKER_PASTEBOARD"], !path.isEmpty { return .file(path: path) }
        if !(environment["WAYLAND_DISPLAY"] ?? "").isEmpty { return .wayland }
        if !(environment["DISPLAY"] ?? "").isEmpty { return .x11 }
        return .file(path: AgentPaths.pasteboard)
    }
}

/// Why a pasteboard or a managed app could not be set up.
public struct LinuxSetupError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong and what to do.
    public let description: String

    init(_ description: String) { self.description = description }
}

/// The general pasteboard of a managed app on Linux, opened from a ``PasteboardChoice``, with
/// what a desktop clipboard needs beyond the `Pasteboard` protocol: the placeholder text that
/// follows the app's config, and the hand-off when the app stops serving its copy.
public final class DesktopPasteboard: Sendable {
    /// The pasteboard to put in a `Platform`.
    package let pasteboard: any Pasteboard
    /// The X11 adapter, when the choice was X11.
    public let x11: X11Pasteboard?
    /// The Wayland adapter, when the choice was Wayland.
    public let wayland: WaylandPasteboard?
    /// The pasteboard file, when the choice was a file.
    public let file: FilePasteboard?
    /// What the automatic choice had to do that the user should know (the Wayland compositor
    /// offers no data-control protocol, so the X11 clipboard through Xwayland is used), or `nil`.
    public let notice: String?

    /// Opens the pasteboard `choice` names (`automatic` resolved in `environment`).
    /// - Throws: ``LinuxSetupError`` saying why (no display, no data-control protocol, a
    ///   pasteboard folder that cannot be made).
    public init(_ choice: PasteboardChoice = .automatic,
                environment: [String: String] = ProcessEnvironment.current) throws(LinuxSetupError) {
        do {
            switch choice.resolved(in: environment) {
            case .x11:
                let x11 = try X11Pasteboard()
                (pasteboard, self.x11, wayland, file, notice) = (x11, x11, nil, nil, nil)
            case .wayland:
                let display = environment["DISPLAY"] ?? ""
                do throws(WaylandPasteboardError) {
                    let wayland = try WaylandPasteboard()
                    (pasteboard, x11, self.wayland, file, notice) = (wayland, nil, wayland, nil, nil)
                } catch {
                    // A compositor without data-control (GNOME): its Xwayland bridges the X11
                    // clipboard to Wayland apps, so the automatic choice falls back to X11.
                    guard choice == .automatic, error == .noDataControl, !display.isEmpty else { throw error }
                    let x11 = try X11Pasteboard()
                    (pasteboard, self.x11, wayland, file) = (x11, x11, nil, nil)
                    self.notice = "the Wayland compositor offers no data-control protocol (ext or wlr); "
                        + "using the X11 clipboard through Xwayland (DISPLAY=\(display))"
                }
            case .file(let path):
                if path.hasPrefix(AgentPaths.unsetRuntimeDirectory) {
                    var why = "there is no runtime folder"
                    do { _ = try AgentPaths.resolvedRuntimeDirectory() } catch { why = error.description }
                    throw LinuxSetupError("there is no pasteboard file: \(why) (or name the file with SHAREBROKER_PASTEBOARD)")
                }
                let file = try FilePasteboard(path: path)
                (pasteboard, x11, wayland, self.file, notice) = (file, nil, nil, file, nil)
            case .automatic:
                throw LinuxSetupError("the pasteboard choice did not resolve; name x11, wayland or a file")
            }
        } catch let error as LinuxSetupError {
            throw error
        } catch {
            throw LinuxSetupError("\(error)")
        }
    }

    /// A selection to read.
    public enum Selection: Sendable, Hashable {
        /// The clipboard (copy and paste).
        case clipboard
        /// The primary selection (select and middle-click); the file pasteboard has none.
        case primary
    }

    /// Why a read of the pasteboard failed (what went wrong and what to do).
    public struct ReadError: Error, Sendable, Hashable, CustomStringConvertible {
        /// What went wrong and what to do.
        public let description: String
    }

    /// What `selection` holds now, read as items (a sealed set as its sealed items, then the
    /// placeholder), and the pasteboard's change count: what ``ShareBroker`` pastes from. This
    /// app's own clipboard item is read without a round trip.
    /// - Throws: ``ReadError`` when the read failed: the owner did not answer, a sealed set
    ///   arrived cut short or does not decode (never read as the placeholder), the connection is
    ///   gone, or the file pasteboard was asked for a primary selection.
    public func read(_ selection: Selection) throws(ReadError) -> (items: [PasteboardItem], changeCount: Int) {
        if let x11 {
            if selection == .clipboard && x11.ownsClipboard { return x11.read() }
            do {
                return (try x11.readSelection(selection == .clipboard ? "CLIPBOARD" : "PRIMARY"), x11.changeCount)
            } catch {
                throw ReadError(description: error.description)
            }
        }
        if let wayland {
            if selection == .clipboard && wayland.ownsClipboard { return wayland.read() }
            do {
                return (try wayland.readSelection(selection == .clipboard ? .clipboard : .primary), wayland.changeCount)
            } catch {
                throw ReadError(description: error.description)
            }
        }
        guard selection == .clipboard else {
            throw ReadError(description: "the pasteboard file has no primary selection; use --pasteboard x11 or wayland")
        }
        return pasteboard.read()
    }

    /// Makes a desktop clipboard offer `broker`'s configured placeholder text in place of a
    /// SecureCopy item's text (the file pasteboard has no placeholder).
    public func followPlaceholder(of broker: ShareBroker) {
        x11?.followPlaceholder(of: broker)
        wayland?.followPlaceholder(of: broker)
    }

    /// Stops serving: on X11 hands what this app owns to a running clipboard manager (waiting
    /// up to `handOffTimeout`), so a copy outlives the app as it would from any other app; on
    /// Wayland releases the connection (the compositor drops the selection).
    public func close(handOffTimeout: Duration = .seconds(1)) {
        _ = x11?.close(handOffTimeout: handOffTimeout)
        wayland?.close()
    }
}

/// The process environment as a dictionary, without Foundation.
public enum ProcessEnvironment {
    /// `environ` now.
    public static var current: [String: String] {
        var result: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            let pair = String(cString: pointer)
            if let equals = pair.firstIndex(of: "=") {
                result[String(pair[..<equals])] = String(pair[pair.index(after: equals)...])
            }
            entry += 1
        }
        return result
    }
}
