// libFuzzer harness: the sealed set a desktop clipboard owner offers under
// `application/x-sharebroker-sealed` (`SealedSet.decode`), which any X11 or Wayland client can
// write, and the envelope header peek the X11 adapter runs on each envelope
// (`EnvelopeFormat.itemType(ofEnvelope:)`). Built and run by scripts/fuzz.sh; a plain
// `swift build` makes it a do-nothing executable.
//
// Checks beyond "no crash, no leak, no hang": a set that decodes re-encodes to exactly the bytes
// it came from, and every envelope it holds lies within those bytes.

import FuzzSupport
@_spi(Fuzzing) import ShareBroker
import ShareBrokerCrypto

enum SealedSetFuzz {
    static func run(_ bytes: [UInt8]) {
        guard let envelopes = SealedSetCodec.decode(bytes) else { return }
        fuzzRequire(!envelopes.isEmpty && envelopes.count <= SealedSetCodec.maxEnvelopes, "a decoded set has \(envelopes.count) envelopes")
        fuzzRequire(sameBytes(SealedSetCodec.encode(envelopes), bytes), "re-encoding changed the bytes")
        for envelope in envelopes {
            if let type = EnvelopeFormat.itemType(ofEnvelope: envelope) {
                fuzzRequire(type.utf8.count <= EnvelopeFormat.maxItemTypeLength, "an item type over the limit")
            }
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSealedSet(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    SealedSetFuzz.run(FuzzInput(start, count).bytes)
    return 0
}
