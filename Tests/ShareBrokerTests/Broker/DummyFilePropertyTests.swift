import PropertyBased
import ShareBroker
import Testing

@Suite("Dummy file properties")
struct DummyFilePropertyTests {
    /// Whether `haystack` contains any run of `length` consecutive bytes of `needle`.
    static func sharesRun(_ haystack: [UInt8], _ needle: [UInt8], length: Int = 8) -> Bool {
        guard haystack.count >= length, needle.count >= length else { return false }
        var runs = Set<ArraySlice<UInt8>>()
        for i in 0...(needle.count - length) { runs.insert(needle[i..<(i + length)]) }
        for i in 0...(haystack.count - length) where runs.contains(haystack[i..<(i + length)]) { return true }
        return false
    }

    static let policies: [PolicyUpdate?] = [
        nil,
        PolicyUpdate(auth: .unauthorized, openIn: .authorized),
        PolicyUpdate(auth: .authorized, openIn: .unauthorized),
        PolicyUpdate(auth: .authorized, openIn: .whitelist(["com.acme.viewer"])),
        PolicyUpdate(auth: .retired),
    ]

    @Test("a blocked transfer never hands over any 8-byte run of the original, nor its name")
    func blockedNeverLeaks() async throws {
        let content = Gen<UInt8>.value().array(of: 0...512)
        let name = Gen.letterOrNumber.string(of: 1...40)
        await propertyCheck(count: 200, input: content, name, Gen.int(in: 0...(Self.policies.count - 1)),
                            Gen.int(in: 0...2)) { bytes, name, policyIndex, channelIndex in
            let channel = TransferChannel.allCases[channelIndex]
            guard let fixture = try? Fixture(ready: Self.policies[policyIndex]) else {
                Issue.record("fixture")
                return
            }
            let document = (name: name + ".pdf", bytes: bytes)
            guard let result = try? fixture.broker.openIn(document.bytes, named: document.name, target: "org.example.sheets", via: channel) else {
                Issue.record("openIn threw")
                return
            }
            #expect(!result.delivered)
            guard let handed = fixture.outbox.handedOver.last else {
                Issue.record("nothing handed over")
                return
            }
            #expect(!Self.sharesRun(handed.bytes, bytes))
            #expect(!Self.sharesRun(Array(handed.name.utf8), Array(document.name.utf8)))
            #expect(!handed.name.contains(document.name))
            #expect(handed.bytes.count == DummyFile.contents.count)
        }
    }

    @Test("dummy names are fresh and never carry the original extension")
    func mangledNames() {
        let names = (0..<1000).map { _ in DummyFile.mangledName() }
        #expect(Set(names).count == names.count)
        #expect(names.allSatisfy { $0.hasSuffix(".sbwithheld") && !$0.contains("/") })
    }
}
