import PropertyBased
import ShareBroker
import Testing

/// The character-count exception (Intune's `allowedOutboundClipboardSharingExceptionLength`):
/// plain text of at most N characters (grapheme clusters) is written in the clear whatever the
/// pasteboard level; longer text follows the pasteboard policy.
@Suite("Clipboard character-count exception")
struct ClipboardExceptionTests {
    /// One grapheme cluster each, of 1 to 25 UTF-8 bytes, none of which joins with its neighbour:
    /// a string of k of them is exactly k characters.
    static let clusters: [String] = [
        "a", "Z", "7", " ", "é",                       // ASCII, precomposed
        "e\u{301}", "o\u{308}\u{304}",                  // base + combining marks
        "한", "\u{1100}\u{1161}\u{11A8}",               // Hangul syllable, conjoining jamo L V T
        "中", "𝄞",                                      // CJK, astral
        "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇫🇷",             // modifier, ZWJ family, ZWJ flag, regional pair
        "\r\n", "\u{0915}\u{094D}\u{0937}",             // CRLF, Devanagari conjunct
    ]

    static func text(ofClusters indices: [Int]) -> String {
        indices.map { clusters[$0 % clusters.count] }.joined()
    }

    /// The expected decision for text of `characters` characters under `pasteboard` with exception `n`.
    static func expected(characters: Int, n: Int, pasteboard: PasteboardPolicy) -> CopyAction {
        if pasteboard == .authorized || characters <= n && n > 0 { return .writeClear }
        return pasteboard == .secureCopy ? .writeSealed : .blocked
    }

    @Test("the units table: each entry is one character, and several side by side stay apart")
    func clustersAreSingle() {
        for c in Self.clusters { #expect(c.count == 1, "\(c.unicodeScalars.map { String($0.value, radix: 16) })") }
        #expect(Self.text(ofClusters: Array(0 ..< Self.clusters.count)).count == Self.clusters.count)
        #expect(Self.clusters.contains { $0.utf8.count > 20 }, "the table must hold clusters far longer than a byte")
    }

    @Test("decision table: level x length relative to N (N-1, N, N+1) x exception on or off",
          arguments: [PasteboardPolicy.unauthorized, .secureCopy, .authorized], [0, 1, 5, 64])
    func table(pasteboard: PasteboardPolicy, n: Int) throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: pasteboard,
                                                      clipboardExceptionLength: n))
        for length in [max(n - 1, 0), n, n + 1] {
            // Use the longest cluster so bytes are far more than characters.
            let text = String(repeating: "👨‍👩‍👧‍👦", count: length)
            let result = try fixture.broker.copyResult(.text(text))
            let want = Self.expected(characters: length, n: n, pasteboard: pasteboard)
            #expect(result.action == want, "\(pasteboard) N=\(n) length=\(length)")
            if want == .writeClear && pasteboard != .authorized {
                #expect(result.decision.rule == .shortTextException)
                #expect(fixture.pasteboard.read().items == [.text(text)])
            }
        }
    }

    @Test("the exception never opens a closed gate: before ready, unauthorized, retired, unmanaged rules stay")
    func gates() throws {
        let notReady = try Fixture()
        #expect(try notReady.broker.copyResult(.text("hi")).decision.rule == .notReady)
        let unauthorized = try Fixture(ready: PolicyUpdate(auth: .unauthorized, clipboardExceptionLength: 100))
        #expect(try unauthorized.broker.copyResult(.text("hi")).action == .blocked)
        let retired = try Fixture(ready: PolicyUpdate(auth: .authorized, clipboardExceptionLength: 100))
        try retired.broker.apply(PolicyUpdate(auth: .retired))
        #expect(try retired.broker.copyResult(.text("hi")).action == .blocked)
        #expect(try retired.broker.policy().clipboardExceptionLength == 0, "a retire resets the exception")
    }

    @Test("only plain text qualifies: a 1-byte PNG under the exception follows the policy")
    func onlyText() throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: .unauthorized,
                                                      clipboardExceptionLength: 1000))
        #expect(try fixture.broker.copyResult(PasteboardItem(type: "public.png", bytes: [1])).action == .blocked)
        #expect(try fixture.broker.copyResult([.text("ok"), PasteboardItem(type: "public.html", bytes: Array("<b>ok</b>".utf8))])
            .action == .blocked, "several representations are not a short text")
        #expect(try fixture.broker.copyResult(.text("ok")).action == .writeClear)
    }

    @Test("characterCount(limit:) counts grapheme clusters, stops at limit + 1, and is nil for other types")
    func characterCount() {
        #expect(PasteboardItem.text("e\u{301}e\u{301}").characterCount(limit: 10) == 2)
        #expect(PasteboardItem.text("👨‍👩‍👧‍👦").characterCount(limit: 10) == 1)
        #expect(PasteboardItem.text(String(repeating: "x", count: 1000)).characterCount(limit: 3) == 4)
        #expect(PasteboardItem.text("").characterCount(limit: 0) == 0)
        #expect(PasteboardItem(type: "public.png", bytes: [1]).characterCount(limit: 10) == nil)
        #expect(PasteboardItem(type: PasteboardItem.textType, bytes: [0xFF, 0xFE, 0x41]).characterCount(limit: 10) == 11,
                "invalid UTF-8 is never short text")
        #expect(PasteboardItem.text("e" + String(repeating: "\u{301}", count: 5_000)).characterCount(limit: 8) == 9,
                "one grapheme of 5,001 code points is more than 8 characters' worth")
    }

    @Test("issue 31.4: the exception is bounded in code points too, and invalid UTF-8 never qualifies")
    func boundedInBytes() throws {
        let fixture = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: .unauthorized,
                                                      clipboardExceptionLength: 8))
        let zalgo = "e" + String(repeating: "\u{301}", count: 5_000)
        #expect(zalgo.count == 1 && zalgo.utf8.count > 10_000)
        #expect(try fixture.broker.copyResult(.text(zalgo)).action == .blocked, "10 KB in one grapheme")
        #expect(try fixture.broker.copyResult(PasteboardItem(type: PasteboardItem.textType, bytes: [0xFF, 0x41])).action == .blocked)
        #expect(fixture.pasteboard.read().items.isEmpty)
        // The bound: 8 code points per allowed character. 8 characters of 8 code points pass, one more does not.
        let eight = String(repeating: "e" + String(repeating: "\u{301}", count: 7), count: 8)
        #expect(eight.count == 8 && eight.unicodeScalars.count == 64)
        #expect(try fixture.broker.copyResult(.text(eight)).action == .writeClear)
        #expect(try fixture.broker.copyResult(.text(eight + "\u{301}")).action == .blocked)
        let sealed = try Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: .secureCopy, clipboardExceptionLength: 8))
        #expect(try sealed.broker.copyResult(.text(zalgo)).action == .writeSealed, "long text follows the policy")
    }

    @Test("property: random Unicode scalars; the decision follows String.count against N")
    func randomUnicode() async {
        let scalars = Gen.uint32().array(of: 0 ... 40)
        await propertyCheck(count: 300, input: scalars, Gen.int(in: 1 ... 30), Gen.bool) { raw, n, secure in
            var text = ""
            for value in raw { text.unicodeScalars.append(Unicode.Scalar(value % 0x11_0000) ?? "\u{FFFD}") }
            let policy: PasteboardPolicy = secure ? .secureCopy : .unauthorized
            guard let fixture = try? Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: policy,
                                                                 clipboardExceptionLength: n)),
                  let result = try? fixture.broker.copyResult(.text(text)) else {
                Issue.record("fixture or copy failed")
                return
            }
            #expect(PasteboardItem.text(text).characterCount(limit: n) == min(text.count, n + 1))
            #expect(result.action == Self.expected(characters: text.count, n: n, pasteboard: policy),
                    "\(text.count) characters, \(text.utf8.count) bytes, N=\(n)")
        }
    }

    @Test("property: texts of exactly N-1, N and N+1 clusters of every shape")
    func boundaries() async {
        await propertyCheck(count: 200, input: Gen.int(in: 0 ... 1000).array(of: 2 ... 60), Gen.bool) { picks, secure in
            let n = picks.count - 1
            let policy: PasteboardPolicy = secure ? .secureCopy : .unauthorized
            guard let fixture = try? Fixture(ready: PolicyUpdate(auth: .authorized, pasteboard: policy,
                                                                 clipboardExceptionLength: n)) else {
                Issue.record("fixture")
                return
            }
            for length in [n - 1, n, n + 1] {
                let text = Self.text(ofClusters: Array(picks.prefix(length)) + (length > picks.count ? [picks[0]] : []))
                #expect(text.count == length)
                let action = (try? fixture.broker.copyResult(.text(text)))?.action
                let want: CopyAction = length <= n && n > 0 ? .writeClear : (secure ? .writeSealed : .blocked)
                #expect(action == want, "N=\(n) length=\(length) bytes=\(text.utf8.count)")
            }
        }
    }
}
