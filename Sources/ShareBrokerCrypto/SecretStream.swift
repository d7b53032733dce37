import CSodium

/// The one binding of `crypto_secretstream_xchacha20poly1305` in the library, shared by chunked
/// envelopes (``ChunkedSealing``) and secure files (``SecureFileKey``).
///
/// Thin pointer wrappers: callers own the buffers and guarantee their sizes; nothing here
/// allocates. States live on the stack (``withState(_:)``) and are zeroed afterwards; derived
/// keys likewise (``withDerivedKey(from:id:context:_:)``).
enum SecretStream {
    /// The libsodium state type.
    typealias State = crypto_secretstream_xchacha20poly1305_state

    /// Key size in bytes (32).
    static let keyByteCount = 32
    /// Size of the header `init_push` writes and `init_pull` reads (24).
    static let headerByteCount = 24
    /// Bytes a pushed message grows by: one encrypted tag byte and a 16-byte MAC (17).
    static let overhead = 17

    /// The tag of every message but the last.
    static var tagMessage: UInt8 { crypto_secretstream_xchacha20poly1305_tag_message() }
    /// The tag of the last message of a stream.
    static var tagFinal: UInt8 { crypto_secretstream_xchacha20poly1305_tag_final() }

    /// Runs `body` with a zeroed state on the stack, zeroed again afterwards.
    @inline(__always)
    static func withState<R, E: Error>(_ body: (UnsafeMutablePointer<State>) throws(E) -> R) throws(E) -> R {
        var state = State()
        return try withUnsafeMutablePointer(to: &state) { (state) throws(E) -> R in
            defer { sodium_memzero(state, MemoryLayout<State>.size) }
            return try body(state)
        }
    }

    /// Runs `body` with `crypto_kdf_derive_from_key(32, id, context, key)` on the stack, zeroed
    /// afterwards. `context` must be exactly 8 bytes (libsodium's `crypto_kdf_CONTEXTBYTES`).
    static func withDerivedKey<R, E: Error>(from key: UnsafeRawPointer, id: UInt64, context: StaticString,
                                            _ body: (UnsafePointer<UInt8>) throws(E) -> R) throws(E) -> R {
        var derived: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        return try withUnsafeMutablePointer(to: &derived) { (derived) throws(E) -> R in
            let raw = UnsafeMutableRawPointer(derived)
            defer { sodium_memzero(raw, keyByteCount) }
            derive(from: key, id: id, context: context, into: raw)
            return try body(UnsafePointer(raw.assumingMemoryBound(to: UInt8.self)))
        }
    }

    /// Writes `crypto_kdf_derive_from_key(32, id, context, key)` to `out` (32 bytes).
    /// `context` must be exactly 8 bytes.
    static func derive(from key: UnsafeRawPointer, id: UInt64, context: StaticString, into out: UnsafeMutableRawPointer) {
        context.withUTF8Buffer { context in
            UnsafeRawPointer(context.baseAddress).map { context in
                _ = crypto_kdf_derive_from_key(
                    out.assumingMemoryBound(to: UInt8.self), keyByteCount, id,
                    context.assumingMemoryBound(to: CChar.self), key.assumingMemoryBound(to: UInt8.self))
            }
        }
    }

    /// Starts a stream under `key` (32 bytes): draws a random header (one `getrandom`) into
    /// `header` (24 bytes) and initializes `state`.
    @inline(__always)
    static func initPush(_ state: UnsafeMutablePointer<State>, header: UnsafeMutableRawPointer, key: UnsafeRawPointer) {
        _ = crypto_secretstream_xchacha20poly1305_init_push(
            state, header.assumingMemoryBound(to: UInt8.self), key.assumingMemoryBound(to: UInt8.self))
    }

    /// Encrypts `message` as the next message of the stream, with associated data `aad` (may be
    /// empty) and `tag`, into `out` (`message.count + overhead` bytes). Returns the bytes written.
    @inline(__always)
    @discardableResult
    static func push(_ state: UnsafeMutablePointer<State>, into out: UnsafeMutableRawPointer,
                     message: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer, tag: UInt8) -> Int {
        var written: UInt64 = 0
        _ = crypto_secretstream_xchacha20poly1305_push(
            state, out.assumingMemoryBound(to: UInt8.self), &written,
            message.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(message.count),
            aad.count > 0 ? aad.baseAddress?.assumingMemoryBound(to: UInt8.self) : nil, UInt64(aad.count),
            tag)
        return Int(written)
    }

    /// Initializes `state` to read the stream whose header is `header` (24 bytes) under `key`.
    /// Returns `false` if libsodium rejects the header.
    @inline(__always)
    static func initPull(_ state: UnsafeMutablePointer<State>, header: UnsafeRawPointer, key: UnsafeRawPointer) -> Bool {
        crypto_secretstream_xchacha20poly1305_init_pull(
            state, header.assumingMemoryBound(to: UInt8.self), key.assumingMemoryBound(to: UInt8.self)) == 0
    }

    /// Verifies the next message of the stream (`ciphertext`, at least ``overhead`` bytes, with
    /// associated data `aad`) and, only if it is authentic, decrypts it into `out`
    /// (`ciphertext.count - overhead` bytes; may be `nil` for an empty message).
    ///
    /// Returns the plaintext length and the tag, or `nil` when the message is not authentic
    /// (libsodium checks the MAC before it writes a byte of `out`).
    @inline(__always)
    static func pull(_ state: UnsafeMutablePointer<State>, into out: UnsafeMutableRawPointer?,
                     ciphertext: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer) -> (count: Int, tag: UInt8)? {
        guard ciphertext.count >= overhead, let input = ciphertext.baseAddress else { return nil }
        guard out != nil || ciphertext.count == overhead else { return nil } // nowhere to write
        var produced: UInt64 = 0
        var tag: UInt8 = 0
        var scratch: UInt8 = 0
        let status = withUnsafeMutablePointer(to: &scratch) { scratch in
            crypto_secretstream_xchacha20poly1305_pull(
                state, out?.assumingMemoryBound(to: UInt8.self) ?? scratch, &produced, &tag,
                input.assumingMemoryBound(to: UInt8.self), UInt64(ciphertext.count),
                aad.count > 0 ? aad.baseAddress?.assumingMemoryBound(to: UInt8.self) : nil, UInt64(aad.count))
        }
        guard status == 0 else { return nil }
        return (Int(produced), tag)
    }
}
