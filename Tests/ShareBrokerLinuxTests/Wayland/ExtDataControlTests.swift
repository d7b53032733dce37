import CExtDataControlServer
import Foundation
import ShareBroker
@testable import ShareBrokerLinux
import ShareBrokerTesting
import Testing

/// The Wayland adapter's ext data-control path end to end, against a minimal compositor the test
/// starts (Tests/CExtDataControlServer: wl_seat and `ext_data_control_manager_v1` only, relaying
/// selections between clients): no compositor on the CI machine offers ext (sway 1.7 and KWin
/// 5.27 offer wlr, mutter neither).
@Suite("Wayland clipboard over ext data-control (a minimal ext-only compositor)", .serialized)
struct ExtDataControlTests {
    static let notes = "com.acme.notes"
    static let viewer = "com.acme.viewer"
    static let secret = "Q3 merger plan over ext data-control"

    /// Runs `body` with an ext-only compositor listening at a fresh socket path.
    static func withCompositor(_ body: (String) throws -> Void) throws {
        let folder = try SwayHeadless.temporaryDirectory("sbext")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/wayland-ext"
        guard let server = ecs_start(path) else { throw HarnessError("the ext test compositor did not start (errno \(errno))") }
        defer { ecs_stop(server) }
        try body(path)
    }

    @Test("ext is bound; a SecureCopy item is offered sealed with the placeholder and the hint on both selections, and opens for a second app")
    func secureCopyOverExt() throws {
        try Self.withCompositor { display in
            let custodian = try InProcessKeyCustodian(entitledAppIDs: [Self.notes, Self.viewer])
            let notes = try ManagedWaylandApp(Self.notes, display: display, custodian: custodian, policy: .secureCopy)
            defer { notes.pasteboard.close() }
            #expect(notes.pasteboard.dataControlProtocol == .ext, "only ext is offered, and it is bound")
            #expect(notes.pasteboard.governsPrimary, "ext carries the primary selection")
            #expect(try notes.broker.copyResult(.text(Self.secret)).action == .writeSealed)
            let viewer = try ManagedWaylandApp(Self.viewer, display: display, custodian: custodian, policy: .authorized)
            defer { viewer.pasteboard.close() }
            for selection in [WaylandPasteboard.Selection.clipboard, .primary] {
                let items = try viewer.pasteboard.readSelection(selection)
                #expect(items.first?.type == PasteboardItem.sealedType, "\(selection): the sealed set arrives")
                #expect(items.last == .text(ServerConfigKey.defaultClipboardPlaceholder), "\(selection): then the placeholder")
                #expect(!items.contains { $0.bytes.containsRun(of: Array(Self.secret.utf8)) }, "\(selection): no plaintext")
            }
            #expect(viewer.broker.paste() == .text(Self.secret), "the second app opens it")
            // What a clipboard manager would see offered: the hint among the types.
            let reader = try WaylandPasteboard(configuration: .init(display: display))
            defer { reader.close() }
            let offered: [String] = try reader.connectionForTests.perform("list the types", timeout: .seconds(5)) { connection, completion in
                completion.complete(.success(connection.offeredTypes(.clipboard)))
            }
            #expect(offered.contains(SealedSet.targetName))
            for hint in DesktopOffer.passwordManagerHintTargets { #expect(offered.contains(hint), "\(hint) is offered") }
            #expect(!offered.contains { $0 == "image/png" })
        }
    }

    @Test("a clear copy round-trips; a new owner replaces it and the first app sees the change")
    func clearRoundTrip() throws {
        try Self.withCompositor { display in
            let custodian = try InProcessKeyCustodian(entitledAppIDs: [Self.notes])
            let notes = try ManagedWaylandApp(Self.notes, display: display, custodian: custodian, policy: .authorized)
            defer { notes.pasteboard.close() }
            #expect(try notes.broker.copyResult(.text("lunch at noon")).action == .writeClear)
            let other = try WaylandPasteboard(configuration: .init(display: display))
            defer { other.close() }
            #expect(try other.readSelection() == [.text("lunch at noon")])
            let before = notes.pasteboard.changeCount
            try other.write([.text("from another app")])
            let deadline = ContinuousClock.now + .seconds(5)
            while notes.pasteboard.ownsClipboard && ContinuousClock.now < deadline { usleep(10_000) }
            #expect(!notes.pasteboard.ownsClipboard, "the compositor cancelled the first app's source")
            #expect(notes.pasteboard.changeCount > before)
            #expect(notes.broker.paste() == .text("from another app"))
        }
    }
}
