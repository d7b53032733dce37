/// What went wrong while sealing or opening a SecureCopy item, and what to do about it.
///
/// Every reader failure has its own case, so a caller can tell "this is not ours" (``badMagic``)
/// from "this is ours but damaged" (``truncated``, ``authenticationFailed``) and from "this is
/// ours but we no longer hold the key" (``unknownKey(id:)``, ``wiped``). No case ever carries
/// key bytes or plaintext.
public enum SealingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// libsodium could not be initialized (`sodium_init` failed). Nothing can be sealed in this
    /// process; report it and treat secure services as unavailable.
    case sodiumInitFailed
    /// Guarded key memory (`sodium_malloc`) could not be allocated. Free memory, or raise the
    /// process limits, and try again; nothing was sealed.
    case outOfSecureMemory
    /// The bytes do not start with the envelope magic: they are not a sealed item (read them as
    /// unsecured content, if policy allows).
    case badMagic
    /// The envelope has a format version this library does not read. Update the library.
    case unsupportedVersion(UInt8)
    /// The envelope's kind byte (single-shot or chunked) is not one this library knows.
    /// Update the library.
    case unsupportedKind(UInt8)
    /// The envelope ends early, or a chunked item lacks its final chunk. The item was damaged or
    /// cut short in transit; copy it again.
    case truncated
    /// The input exceeds the documented cap (``EnvelopeFormat/maxPlaintextSize`` for sealing,
    /// ``EnvelopeFormat/maxEnvelopeSize`` for opening); it was rejected before being read.
    /// Copy less at once.
    case tooLarge(size: Int, limit: Int)
    /// The envelope was sealed with a key this ring does not hold (rotated out long ago, or
    /// another group). Ask the key custodian for a current ring; the item cannot be opened.
    case unknownKey(id: UInt32)
    /// The envelope failed authentication: it was altered, relabelled (type or key id changed),
    /// reordered, or sealed with a different key under the same id. Discard it.
    case authenticationFailed
    /// A raw AEAD call was given a nonce that is not 24 bytes long. Pass a 24-byte nonce.
    case invalidNonceLength
    /// A raw AEAD call or a key import was given a key that is not 32 bytes long.
    /// Pass a 32-byte key.
    case invalidKeyLength
    /// The key ring (or the key this item needs) was wiped. Ask the key custodian for a fresh
    /// ring; items sealed under wiped keys can no longer be opened.
    case wiped
    /// The item type is longer than ``EnvelopeFormat/maxItemTypeLength`` UTF-8 bytes.
    /// Use a shorter type identifier.
    case itemTypeTooLong(length: Int, limit: Int)
    /// The authenticated item type is not valid UTF-8 (the sealer was not this library).
    /// Discard the item.
    case invalidItemType
    /// The authenticated sealer (app id) of a version 2 item is not valid UTF-8 (the sealer was
    /// not this library). Discard the item.
    case invalidSealer
    /// The sealer (app id) is longer than ``EnvelopeFormat/maxSealerLength`` UTF-8 bytes; nothing
    /// was sealed. Use a shorter app id.
    case sealerTooLong(length: Int, limit: Int)
    /// The item is authentic under key `keyID`, but that key had been retired (rotated out) at
    /// `retiredAt` and the item says it was sealed later, at `sealedAt` (Unix seconds): only an
    /// app that kept the key after losing its entitlement seals with it then. Refused as forged;
    /// discard it and do not trust its content or its claimed sealer.
    case sealedAfterKeyRetired(keyID: UInt32, sealedAt: UInt64, retiredAt: UInt64)
    /// The item is authentic under key `keyID`, which became current at `activatedAt`, but it
    /// says it was sealed earlier, at `sealedAt` (Unix seconds): no app held that key then, so
    /// the time was chosen by whoever sealed it (a back-dated forgery). Refused; discard it and
    /// do not trust its content or its claimed sealer.
    case sealedBeforeKeyActivated(keyID: UInt32, sealedAt: UInt64, activatedAt: UInt64)
    /// The item is a legacy (version 1) item, which carries no seal time, under key `keyID`,
    /// which is no longer current: it cannot be told from one forged with the retired key, so it
    /// is refused. Copy the content again from its source.
    case legacyItemUnderRetiredKey(keyID: UInt32)

    /// What went wrong and what to do, in one line (no key bytes, no plaintext).
    public var description: String {
        switch self {
        case .sodiumInitFailed:
            "libsodium could not be initialized; secure services are unavailable in this process"
        case .outOfSecureMemory:
            "guarded key memory could not be allocated; free memory or raise the process limits and retry"
        case .badMagic:
            "the bytes are not a sealed item (wrong magic); treat them as unsecured content"
        case .unsupportedVersion(let version):
            "the sealed item has format version \(version), which this library does not read; update the library"
        case .unsupportedKind(let kind):
            "the sealed item has kind \(kind), which this library does not read; update the library"
        case .truncated:
            "the sealed item is truncated (cut short or missing its final chunk); copy it again"
        case .tooLarge(let size, let limit):
            "the item is \(size) bytes, over the \(limit)-byte limit; it was rejected unread, copy less at once"
        case .unknownKey(let id):
            "the item was sealed with key \(KeyIDFormat.hex(id)), which this key ring does not hold; get a current ring from the key custodian"
        case .authenticationFailed:
            "the sealed item failed authentication (altered, relabelled or reordered); discard it"
        case .invalidNonceLength:
            "the nonce must be exactly 24 bytes for XChaCha20-Poly1305"
        case .invalidKeyLength:
            "the key must be exactly 32 bytes for XChaCha20-Poly1305"
        case .wiped:
            "the key ring was wiped; get a fresh ring from the key custodian"
        case .itemTypeTooLong(let length, let limit):
            "the item type is \(length) UTF-8 bytes, over the \(limit)-byte limit; use a shorter type identifier"
        case .invalidItemType:
            "the sealed item's type is not valid UTF-8; discard the item"
        case .invalidSealer:
            "the sealed item's sealer (app id) is not valid UTF-8; discard the item"
        case .sealerTooLong(let length, let limit):
            "the sealer (app id) is \(length) UTF-8 bytes, over the \(limit)-byte limit; nothing was sealed, use a shorter app id"
        case .sealedAfterKeyRetired(let id, let sealedAt, let retiredAt):
            "the sealed item is refused as forged: key \(KeyIDFormat.hex(id)) was retired at \(retiredAt) (Unix seconds) and the item claims it was sealed later, at \(sealedAt); only an app that kept a revoked key does that, discard it"
        case .sealedBeforeKeyActivated(let id, let sealedAt, let activatedAt):
            "the sealed item is refused as forged: key \(KeyIDFormat.hex(id)) became current at \(activatedAt) (Unix seconds) and the item claims it was sealed earlier, at \(sealedAt), when no app held that key; discard it"
        case .legacyItemUnderRetiredKey(let id):
            "the sealed item is a version 1 item (no seal time) under key \(KeyIDFormat.hex(id)), which has been retired; it cannot be told from a forgery and is refused, copy the content again"
        }
    }
}

/// Formats key ids the same way everywhere (they are not secret; key bytes never are shown).
package enum KeyIDFormat {
    /// `0x` and eight lower-case hex digits.
    package static func hex(_ id: UInt32) -> String {
        let digits = String(id, radix: 16)
        return "0x" + String(repeating: "0", count: max(0, 8 - digits.count)) + digits
    }
}
