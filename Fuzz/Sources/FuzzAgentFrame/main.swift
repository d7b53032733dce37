// libFuzzer harness: the agent's frame decoder (`AgentFrame.decode`) and the decoders of every
// frame body (`AgentMessage.decode`, `KeyRingMessage.withEntries`). Built and run by
// scripts/fuzz.sh; a plain `swift build` makes it a do-nothing executable. Only declarations
// here: under libFuzzer, libFuzzer owns `main` and top-level code never runs.
//
// Checks beyond "no crash, no leak, no hang": a frame that decodes re-encodes to exactly the
// bytes it came from (up to its declared length), and decodes again to the same frame.

import FuzzSupport
import ShareBrokerAgentProtocol

enum AgentFrameFuzz {
    static func run(_ bytes: [UInt8]) {
        let frame: AgentFrame
        do {
            frame = try withExactCopy(of: bytes) { raw in try AgentFrame.decode(Array(raw)) }
        } catch {
            return
        }
        let encoded = frame.encoded()
        fuzzRequire(encoded.count <= bytes.count, "re-encoding grew the frame")
        fuzzRequire(sameBytes(encoded, Array(bytes.prefix(encoded.count))), "re-encoding changed the bytes")
        do {
            let again = try AgentFrame.decode(encoded)
            fuzzRequire(again == frame, "a re-encoded frame decodes differently")
        } catch {
            fuzzRequire(false, "a re-encoded frame no longer decodes: \(error)")
        }
        decodeBody(frame)
    }

    /// Every body decoder the agent or the client runs on untrusted bytes.
    static func decodeBody(_ frame: AgentFrame) {
        switch frame.type {
        case .hello: _ = try? AgentMessage.decode(HelloMessage.self, from: frame.body)
        case .welcome: _ = try? AgentMessage.decode(WelcomeMessage.self, from: frame.body)
        case .refused: _ = try? AgentMessage.decode(RefusalMessage.self, from: frame.body)
        case .keys: _ = try? KeyRingMessage.withEntries(in: frame.body) { group, files in group.count + files.count }
        case .policy: _ = try? AgentMessage.decode(PolicyPushMessage.self, from: frame.body)
        case .acknowledgments: _ = try? AgentMessage.decode(AcknowledgmentBatch.self, from: frame.body)
        case .audit: _ = try? AgentMessage.decode(AuditBatch.self, from: frame.body)
        case .receipt: _ = try? AgentMessage.decode(ReceiptMessage.self, from: frame.body)
        case .adminRequest: _ = try? AgentMessage.decode(AdminRequest.self, from: frame.body)
        case .adminResponse: _ = try? AgentMessage.decode(AdminResponse.self, from: frame.body)
        case .error: _ = try? AgentMessage.decode(ErrorMessage.self, from: frame.body)
        case .keyRequest: break
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAgentFrame(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    AgentFrameFuzz.run(FuzzInput(start, count).bytes)
    return 0
}
