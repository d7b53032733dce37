import Foundation
import ShareBroker
@testable import ShareBrokerLinux
import Testing
import ShareBrokerCrypto
import ShareBrokerTesting

/// The sealed set served in parts (its framing, then the envelopes as the core sealed them, never
/// copied into one array) and unwrapped in place on paste: the bytes any client reads are exactly
/// ``SealedSet/encode(_:)``'s, and what does not decode pastes nothing.
@Suite("X11 sealed set in parts")
struct X11SealedPartsTests {
    static let envelopeLists: [[[UInt8]]] = [
        [[1, 2, 3]], [[1, 2, 3], [4]], [[]], [[], [9]],
        [(0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }, [5, 6]],
    ]

    @Test("the parts, joined, are exactly the encoded set, and share the envelopes' storage")
    func partsAreTheEncoding() throws {
        for envelopes in Self.envelopeLists {
            let parts = DesktopOffer.sealedSetParts(envelopes)
            #expect(Array(parts.joined()) == SealedSet.encode(envelopes))
            #expect(parts.count == 2 * envelopes.count)
            for (index, envelope) in envelopes.enumerated() where !envelope.isEmpty {
                let shared = parts[2 * index + 1].withUnsafeBufferPointer { part in
                    envelope.withUnsafeBufferPointer { $0.baseAddress == part.baseAddress }
                }
                #expect(shared, "envelope \(index) is not copied")
            }
        }
        let ring = try KeyRing.generate()
        let text = Array(String(repeating: "secret text ", count: 8_000).utf8) // 96 KB: over the threshold
        let items = [PasteboardItem(type: PasteboardItem.sealedType, bytes: try ring.seal(text, itemType: PasteboardItem.textType)),
                     PasteboardItem(type: PasteboardItem.sealedType, bytes: try ring.seal([0x89, 0x50], itemType: "public.png"))]
        let inParts = try DesktopOffer.offer(for: items, placeholder: "nope", sealedInParts: true)
        let whole = try DesktopOffer.offer(for: items, placeholder: "nope")
        #expect(inParts.targets.map(\.name) == whole.targets.map(\.name))
        #expect(inParts.targets.map(\.bytes) == whole.targets.map(\.bytes))
        #expect(inParts.targets[0].parts.count == 4 && whole.targets[0].parts.count == 1)
        let small = [PasteboardItem(type: PasteboardItem.sealedType, bytes: try ring.seal(Array("secret text".utf8), itemType: PasteboardItem.textType))]
        let smallOffer = try DesktopOffer.offer(for: small, placeholder: "nope", sealedInParts: true)
        #expect(smallOffer.targets[0].parts == [SealedSet.encode(small.map(\.bytes))], "a small set is one array, one request")
        #expect(!inParts.targets[0].zeroedWhenDropped, "ciphertext shared with the app's record is not copied to be zeroed")
        let placeholdersZeroed = inParts.targets.dropFirst().allSatisfy { $0.zeroedWhenDropped }
        #expect(placeholdersZeroed, "the placeholders are zeroed")
    }

    @Test("unwrapping a set in place gives what decoding gives, and refuses what decoding refuses")
    func unwrapMatchesDecode() throws {
        for envelopes in Self.envelopeLists {
            var set: [UInt8]? = SealedSet.encode(envelopes)
            #expect(try DesktopOffer.envelopes(inSet: &set) == envelopes)
            #expect(set == nil)
        }
        var none: [UInt8]? = nil
        #expect(try DesktopOffer.envelopes(inSet: &none) == nil)
        let one = SealedSet.encode([[1, 2, 3, 4, 5]])
        var broken: [[UInt8]] = (0..<one.count).map { Array(one[0..<$0]) }   // every truncation
        broken.append(one + [0])                                              // padded
        var longer = one
        longer[10] = 6                                                        // length past the end
        broken.append(longer)
        var shorter = one
        shorter[10] = 4                                                       // bytes left over
        broken.append(shorter)
        var version = one
        version[4] = 2
        broken.append(version)
        var count = one
        count[6] = 0
        broken.append(count)
        for bytes in broken {
            var set: [UInt8]? = bytes
            #expect(throws: SealedSet.DecodingError.self, "\(bytes)") { try DesktopOffer.envelopes(inSet: &set) }
            #expect(throws: SealedSet.DecodingError.self) { try SealedSet.decode(bytes) }
        }
    }

    @Test("any range of bytes across parts reads as the same range of the joined bytes")
    func rangesAcrossParts() {
        let parts: [[UInt8]] = [[1, 2, 3], [4, 5], [], [6, 7, 8, 9]]
        let joined = Array(parts.joined())
        for lower in 0...joined.count {
            for upper in lower...joined.count {
                var seen: [UInt8] = []
                SelectionServer.withBytes(of: parts, in: lower..<upper) { seen = Array($0) }
                #expect(seen == Array(joined[lower..<upper]), "\(lower)..<\(upper)")
            }
        }
    }
}

/// The same against a private Xvfb: what xclip reads of a sealed copy in parts, directly and
/// through INCR, and what a managed app pastes of a broken or altered set (nothing).
@Suite("X11 sealed set in parts against Xvfb", .serialized, .enabled(if: X11Tools.available, X11Tools.skipReason))
struct X11SealedPartsDisplayTests {
    static let notes = "com.acme.notes"
    static let viewer = "com.acme.viewer"

    static func random(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    @Test("a sealed copy of two representations reads byte for byte as the encoded set, directly (2 x 40 KiB) and through INCR (2 x 3 MiB); the second app opens both")
    func setInPartsReadsExactly() throws {
        let display = try XvfbDisplay()
        let custodian = try InProcessKeyCustodian(entitledAppIDs: [Self.notes, Self.viewer])
        let notes = try ManagedX11App(Self.notes, display: display, custodian: custodian, policy: .secureCopy)
        let viewer = try ManagedX11App(Self.viewer, display: display, custodian: custodian, policy: .authorized)
        defer { [notes, viewer].forEach { $0.pasteboard.close(handOffTimeout: .zero) } }
        for size in [40 << 10, 3 << 20] {
            let text = PasteboardItem(type: PasteboardItem.textType, bytes: Array(String(repeating: "quarterly figures ", count: size / 18).utf8))
            let png = PasteboardItem(type: "public.png", bytes: Self.random(size))
            #expect(try notes.broker.copyResult([text, png]).action == .writeSealed)
            let own = notes.pasteboard.read().items
            #expect(own.count == 2 && own.allSatisfy { $0.type == PasteboardItem.sealedType })
            let served = try DesktopOffer.offer(for: own, placeholder: "p", sealedInParts: true)
            #expect(served.targets[0].parts.count == 4, "served in parts")
            let read = try display.run(X11Tools.xclip, ["-o", "-selection", "clipboard", "-t", SealedSet.targetName], timeout: .seconds(30))
            #expect(read.status == 0)
            #expect(read.output == SealedSet.encode(own.map(\.bytes)), "xclip reads the set exactly (\(size) bytes per representation)")
            #expect(!read.output.containsRun(of: Array(text.bytes.prefix(64))), "no plaintext in the set")
            let pasted = try viewer.pasteboard.readSelection("CLIPBOARD")
            #expect(pasted.prefix(2).map(\.bytes) == own.map(\.bytes), "the second app reads the same envelopes")
            #expect(viewer.broker.paste() == text, "and opens the first representation")
        }
    }

    @Test("a sealed set that is cut, padded or altered pastes nothing, and nothing of the plaintext is readable; a set cut short or padded is a broken transfer, not the placeholder")
    func brokenSetPastesNothing() throws {
        let display = try XvfbDisplay()
        let custodian = try InProcessKeyCustodian(entitledAppIDs: [Self.notes, Self.viewer])
        let notes = try ManagedX11App(Self.notes, display: display, custodian: custodian, policy: .secureCopy)
        let viewer = try ManagedX11App(Self.viewer, display: display, custodian: custodian, policy: .authorized)
        defer { [notes, viewer].forEach { $0.pasteboard.close(handOffTimeout: .zero) } }
        let secret = Array(String(repeating: "merger with Initech, 41 million; ", count: 40_000).utf8) // 1.3 MB: chunked
        #expect(try notes.broker.copyResult(PasteboardItem(type: PasteboardItem.textType, bytes: secret)).action == .writeSealed)
        let envelope = try #require(notes.pasteboard.read().items.first?.bytes)
        let set = SealedSet.encode([envelope])
        #expect(viewer.broker.paste()?.bytes == secret, "the intact set opens")
        var altered = set
        altered[set.count / 2] ^= 0x01                 // a chunk in the middle
        var lastTag = set
        lastTag[set.count - 3] ^= 0x80                 // the final chunk's tag
        // The envelope without its last chunk: a stream cut at a chunk boundary (then framed
        // correctly, so only the opener can tell).
        let header = EnvelopeFormat.headerLength(itemTypeLength: PasteboardItem.textType.utf8.count, sealerLength: Self.notes.utf8.count)
        let frame = EnvelopeFormat.chunkSize + EnvelopeFormat.chunkOverhead
        let body = envelope.count - header
        let lastChunk = body - (body - 1) / frame * frame
        // (what, bytes, whether the set's framing is broken: then the read itself is an error)
        let broken: [(String, [UInt8], Bool)] = [
            ("cut in the middle", Array(set.prefix(set.count / 2)), true),
            ("cut by a chunk's length", Array(set.prefix(set.count - 65_553)), true),
            ("padded", set + [0], true),
            ("a chunk altered", altered, false),
            ("the last chunk altered", lastTag, false),
            ("the envelope cut at a chunk boundary, framing fixed", SealedSet.encode([Array(envelope.dropLast(lastChunk))]), false),
            ("two chunks swapped", SealedSet.encode([Array(envelope.prefix(header)) + Array(envelope[(header + frame)..<(header + 2 * frame)])
                                                     + Array(envelope[header..<(header + frame)]) + Array(envelope[(header + 2 * frame)...])]), false),
        ]
        // Another owner offers only the broken set (xclip would also answer UTF8_STRING with it).
        let other = try SelectionServer(display: display.name, selections: ["CLIPBOARD"], transferTimeout: .seconds(5))
        other.start()
        defer { other.stop() }
        for (what, bytes, framingBroken) in broken {
            let offer = SelectionOffer(targets: [.init(SealedSet.targetName, bytes), .init("UTF8_STRING", Array("placeholder".utf8))])
            #expect(other.perform { (try? $0.own(offer)) != nil } == true, "\(what): the other owner took the clipboard")
            #expect(try display.xclipOut(target: SealedSet.targetName) == bytes, "\(what): offered as is")
            #expect(!notes.pasteboard.ownsClipboard, "\(what): the other owner owns the clipboard")
            #expect(viewer.broker.paste() == nil, "\(what): nothing pastes")
            let selection: [PasteboardItem]
            do {
                selection = try viewer.pasteboard.readSelection("CLIPBOARD")
                #expect(!framingBroken, "\(what): a broken set must not read as items")
            } catch {
                let broke = if case .sealedSetBroken = error { true } else { false }
                #expect(broke && framingBroken, "\(what): only a broken set is a broken transfer (\(error))")
                selection = []
            }
            for items in [selection, viewer.pasteboard.read().items] {
                #expect(!items.contains { $0.type != PasteboardItem.sealedType && $0 != .text("placeholder") },
                        "\(what): no clear item but the placeholder offered with the set")
                if framingBroken { #expect(items.isEmpty, "\(what): a broken set reads as nothing at all") }
                #expect(!items.contains { $0.bytes.containsRun(of: Array(secret.prefix(64))) }, "\(what): no plaintext")
            }
        }
    }
}
