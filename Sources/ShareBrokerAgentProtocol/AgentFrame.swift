/// One frame of the agent protocol (`docs/FORMATS.md`, "Agent protocol").
///
/// On the wire a frame is a 4-byte big-endian length `N`, then `N` bytes: the protocol version
/// (one byte), the frame type (one byte) and the body (`N - 2` bytes, JSON or, for key frames,
/// a small binary layout).
///
/// ```swift
/// let bytes = AgentFrame(type: .hello, body: body).encoded()
/// let frame = try AgentFrame.decode(bytes)       // the whole frame, length prefix included
/// ```
///
/// ``decode(_:)`` is a pure function over untrusted bytes: it checks the length prefix against
/// ``maxFrameSize`` before it copies anything, and never traps.
public struct AgentFrame: Sendable, Hashable {
    /// The protocol version this library speaks and accepts.
    public static let protocolVersion: UInt8 = 1
    /// The largest frame either end accepts: the length prefix's value, in bytes (version, type
    /// and body). Checked before any buffer is allocated for the frame.
    public static let maxFrameSize = 4 * 1024 * 1024
    /// Bytes before the body: the length prefix, the version and the type.
    public static let headerSize = 6

    /// What the frame carries.
    public var type: AgentFrameType
    /// The body (JSON, or binary for ``AgentFrameType/keys``).
    public var body: [UInt8]

    /// Creates a frame.
    public init(type: AgentFrameType, body: [UInt8]) {
        self.type = type
        self.body = body
    }

    /// The frame as it goes on the wire, length prefix included.
    ///
    /// A body longer than ``maxFrameSize`` minus 2 makes a frame the other end refuses; the
    /// senders in this package never build one (``encodedChecked()`` refuses it).
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(Self.headerSize + body.count)
        let length = UInt32(truncatingIfNeeded: body.count + 2)
        out.append(UInt8(truncatingIfNeeded: length >> 24))
        out.append(UInt8(truncatingIfNeeded: length >> 16))
        out.append(UInt8(truncatingIfNeeded: length >> 8))
        out.append(UInt8(truncatingIfNeeded: length))
        out.append(Self.protocolVersion)
        out.append(type.rawValue)
        out.append(contentsOf: body)
        return out
    }

    /// The frame as it goes on the wire, or ``FrameError/tooLarge(length:limit:)`` when the
    /// body does not fit in ``maxFrameSize``.
    public func encodedChecked() throws(FrameError) -> [UInt8] {
        guard body.count + 2 <= Self.maxFrameSize else {
            throw .tooLarge(length: body.count + 2, limit: Self.maxFrameSize)
        }
        return encoded()
    }

    /// The value of a length prefix: how many bytes follow it. Readers call this on the first
    /// four bytes, before reading (or allocating for) the rest.
    ///
    /// - Throws: ``FrameError/truncated`` with fewer than 4 bytes; ``FrameError/tooLarge(length:limit:)``
    ///   over ``maxFrameSize``; ``FrameError/tooShort(length:)`` under 2 (no room for version and type).
    public static func bodyLength<C: Collection>(prefix: C) throws(FrameError) -> Int where C.Element == UInt8 {
        guard prefix.count >= 4 else { throw .truncated }
        var length = 0
        for byte in prefix.prefix(4) { length = length << 8 | Int(byte) }
        guard length <= maxFrameSize else { throw .tooLarge(length: length, limit: maxFrameSize) }
        guard length >= 2 else { throw .tooShort(length: length) }
        return length
    }

    /// Decodes one whole frame (length prefix included) from untrusted bytes.
    ///
    /// Checks, in order: the prefix is there, its length is within ``maxFrameSize`` and at least
    /// 2, the bytes hold exactly that much, the version is ``protocolVersion``, the type is known.
    /// - Throws: ``FrameError``; never traps, whatever the bytes.
    public static func decode(_ bytes: [UInt8]) throws(FrameError) -> AgentFrame {
        let length = try bodyLength(prefix: bytes)
        guard bytes.count - 4 >= length else { throw .truncated }
        guard bytes.count - 4 == length else { throw .trailingBytes(bytes.count - 4 - length) }
        let version = bytes[4]
        guard version == protocolVersion else { throw .unsupportedVersion(version) }
        guard let type = AgentFrameType(rawValue: bytes[5]) else { throw .unknownType(bytes[5]) }
        return AgentFrame(type: type, body: Array(bytes[6...]))
    }

    /// Decodes a frame from the bytes that follow its length prefix (version, type, body), as a
    /// stream reader that has already checked the prefix with ``bodyLength(prefix:)`` holds them.
    public static func decode(afterPrefix bytes: ArraySlice<UInt8>) throws(FrameError) -> AgentFrame {
        guard bytes.count <= maxFrameSize else { throw .tooLarge(length: bytes.count, limit: maxFrameSize) }
        guard bytes.count >= 2 else { throw .tooShort(length: bytes.count) }
        let version = bytes[bytes.startIndex]
        guard version == protocolVersion else { throw .unsupportedVersion(version) }
        let rawType = bytes[bytes.startIndex + 1]
        guard let type = AgentFrameType(rawValue: rawType) else { throw .unknownType(rawType) }
        return AgentFrame(type: type, body: Array(bytes[(bytes.startIndex + 2)...]))
    }
}

/// The frame types. Which end sends each, and its body, are in `docs/FORMATS.md`.
public enum AgentFrameType: UInt8, Sendable, Hashable, CaseIterable {
    /// Client → agent, first frame: ``HelloMessage``.
    case hello = 0x01
    /// Agent → client: who the agent found the client to be, its policy and device (``WelcomeMessage``).
    case welcome = 0x02
    /// Agent → client: no keys and no policy for this process (``RefusalMessage``); the agent closes.
    case refused = 0x03
    /// Agent → client: the key ring (binary, ``KeyRingMessage``); zero keys means "drop yours".
    case keys = 0x04
    /// Agent → client: a new policy (``PolicyPushMessage``).
    case policy = 0x05
    /// Client → agent: the acknowledgments of one push (``AcknowledgmentBatch``).
    case acknowledgments = 0x06
    /// Client → agent: blocked attempts and wipe reports (``AuditBatch``).
    case audit = 0x07
    /// Agent → client: these records are on disk (``ReceiptMessage``).
    case receipt = 0x08
    /// Admin client → agent: a command (``AdminRequest``).
    case adminRequest = 0x09
    /// Agent → admin client: the command's result (``AdminResponse``).
    case adminResponse = 0x0A
    /// Agent → client: the last frame was not acceptable (``ErrorMessage``); the agent closes.
    case error = 0x0B
    /// Client → agent, after it read the welcome: send the key ring (empty body). Written by the
    /// identified process once it knows it was identified, so bytes written by a process before
    /// it exec'd the registered binary can never ask for keys.
    case keyRequest = 0x0C
}

/// Why bytes are not a frame, and what to do.
public enum FrameError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Fewer bytes than the length prefix announces (or than a prefix). Wait for more, or the
    /// peer cut the frame short.
    case truncated
    /// More bytes than the length prefix announces.
    case trailingBytes(Int)
    /// The length prefix is over the limit; the frame was refused before anything was allocated.
    case tooLarge(length: Int, limit: Int)
    /// The length prefix leaves no room for the version and type bytes.
    case tooShort(length: Int)
    /// The frame speaks another protocol version. Use matching versions of the agent and client.
    case unsupportedVersion(UInt8)
    /// The type byte is not one of ``AgentFrameType``.
    case unknownType(UInt8)
    /// The body is not what the type requires (bad JSON, missing field, bad key layout).
    case invalidBody(String)

    public var description: String {
        switch self {
        case .truncated: "the frame is cut short"
        case .trailingBytes(let n): "\(n) bytes follow the frame"
        case .tooLarge(let length, let limit): "the frame announces \(length) bytes, over the \(limit)-byte limit; it was refused unread"
        case .tooShort(let length): "the frame announces \(length) bytes, too few for a version and a type"
        case .unsupportedVersion(let v): "the frame has protocol version \(v); this end speaks version \(AgentFrame.protocolVersion): use matching agent and client"
        case .unknownType(let t): "unknown frame type \(t)"
        case .invalidBody(let why): "the frame body is invalid: \(why)"
        }
    }
}
