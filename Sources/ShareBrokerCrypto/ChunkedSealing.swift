import CSodium

/// Chunked envelopes (``EnvelopeFormat/Kind/chunked``): `crypto_secretstream_xchacha20poly1305`
/// over chunks of ``EnvelopeFormat/chunkSize`` plaintext bytes, written straight into the one
/// output buffer, so a 64 MiB item never needs a second payload-sized buffer.
///
/// * Key: `crypto_kdf_derive_from_key(32, 1, "SBX1strm", groupKey)`, a stream key separate from
///   the single-shot key (domain separation), derived on the stack and zeroed after use.
/// * The envelope's 24-byte nonce field is the secretstream header from `init_push` (random,
///   from the OS: one system call per chunked item, negligible next to sealing 1 MiB or more).
/// * The whole envelope header is the associated data of the first chunk. Every chunk's MAC
///   feeds the state of the next, so the header is bound to all of them.
/// * Every chunk is tagged MESSAGE except the last, tagged FINAL. Reading a stream cut at a
///   chunk boundary ends on a MESSAGE chunk: ``SealingError/truncated``. A reordered, dropped,
///   duplicated or altered chunk fails its MAC: ``SealingError/authenticationFailed``.
package enum ChunkedSealing {
    private static let streamKeyID: UInt64 = 1
    private static let streamKeyContext: StaticString = "SBX1strm"
    private static var tagMessage: UInt8 { SecretStream.tagMessage }
    private static var tagFinal: UInt8 { SecretStream.tagFinal }

    /// Runs `body` with the stream key derived from `key`, zeroed afterwards.
    private static func withStreamKey<R, E: Error>(key: UnsafeRawPointer,
                                                   _ body: (UnsafePointer<UInt8>) throws(E) -> R) throws(E) -> R {
        try SecretStream.withDerivedKey(from: key, id: streamKeyID, context: streamKeyContext, body)
    }

    /// Runs `body` with a zeroed secretstream state on the stack, zeroed again afterwards.
    private static func withState<R, E: Error>(
        _ body: (UnsafeMutablePointer<SecretStream.State>) throws(E) -> R) throws(E) -> R {
        try SecretStream.withState(body)
    }

    /// Seals `plaintext` (any size up to the cap) as a chunked envelope under `key`.
    package static func seal(key: UnsafeRawPointer, keyID: UInt32, typeBytes: UnsafeRawBufferPointer,
                             sealedAt: UInt64, sealerBytes: UnsafeRawBufferPointer,
                             plaintext: UnsafeRawBufferPointer) throws(SealingError) -> [UInt8] {
        let chunkSize = EnvelopeFormat.chunkSize
        let chunks = EnvelopeFormat.chunkCount(plaintextCount: plaintext.count)
        let headerLength = EnvelopeFormat.headerLength(itemTypeLength: typeBytes.count, sealerLength: sealerBytes.count)
        let total = headerLength + plaintext.count + chunks * EnvelopeFormat.chunkOverhead
        return try withStreamKey(key: key) { (streamKey) throws(SealingError) -> [UInt8] in
            try withState { (state) throws(SealingError) -> [UInt8] in
                try [UInt8](unsafeUninitializedCapacity: total) { (buffer, initialized) throws(SealingError) in
                    guard let out = UnsafeMutableRawPointer(buffer.baseAddress) else { throw .outOfSecureMemory }
                    let nonceOffset = EnvelopeHeader.write(kind: .chunked, keyID: keyID, typeBytes: typeBytes,
                                                          sealedAt: sealedAt, sealerBytes: sealerBytes, to: out)
                    SecretStream.initPush(state, header: out + nonceOffset, key: streamKey)
                    var input = plaintext.baseAddress
                    var output = out + headerLength
                    var remaining = plaintext.count
                    for index in 0..<chunks {
                        let length = min(remaining, chunkSize)
                        let isFirst = index == 0
                        let written = SecretStream.push(
                            state, into: output, message: UnsafeRawBufferPointer(start: input, count: length),
                            aad: isFirst ? UnsafeRawBufferPointer(start: out, count: headerLength)
                                : UnsafeRawBufferPointer(start: nil, count: 0),
                            tag: index == chunks - 1 ? tagFinal : tagMessage)
                        input = input.map { $0 + length }
                        output += written
                        remaining -= length
                    }
                    initialized = total
                }
            }
        }
    }

    /// Verifies and decrypts a chunked body. `header` is the envelope header (the first chunk's
    /// associated data) and `nonce` the secretstream header inside it.
    ///
    /// The plaintext is decrypted chunk by chunk straight into the result; if any chunk fails,
    /// what was written is zeroed before the error is thrown.
    package static func open(key: UnsafeRawPointer, header: UnsafeRawBufferPointer, nonce: UnsafeRawPointer,
                     body: UnsafeRawBufferPointer) throws(SealingError) -> [UInt8] {
        let frame = EnvelopeFormat.chunkSize + EnvelopeFormat.chunkOverhead
        let chunks = (body.count + frame - 1) / frame
        guard chunks >= 1, let input = body.baseAddress else { throw .truncated }
        let lastFrame = body.count - (chunks - 1) * frame
        guard lastFrame >= EnvelopeFormat.chunkOverhead else { throw .truncated }
        let count = body.count - chunks * EnvelopeFormat.chunkOverhead
        guard count <= EnvelopeFormat.maxPlaintextSize else {
            throw .tooLarge(size: count, limit: EnvelopeFormat.maxPlaintextSize)
        }
        return try withStreamKey(key: key) { (streamKey) throws(SealingError) -> [UInt8] in
            try withState { (state) throws(SealingError) -> [UInt8] in
                guard SecretStream.initPull(state, header: nonce, key: streamKey) else {
                    throw .authenticationFailed
                }
                return try [UInt8](unsafeUninitializedCapacity: count) { (buffer, initialized) throws(SealingError) in
                    let failure = { () -> SealingError? in
                        var output = UnsafeMutableRawPointer(buffer.baseAddress) // nil for an empty item
                        var position = input
                        for index in 0..<chunks {
                            let isFirst = index == 0, isLast = index == chunks - 1
                            let length = isLast ? lastFrame : frame
                            guard let pulled = SecretStream.pull(
                                state, into: output, ciphertext: UnsafeRawBufferPointer(start: position, count: length),
                                aad: isFirst ? header : UnsafeRawBufferPointer(start: nil, count: 0)) else {
                                return .authenticationFailed
                            }
                            let (produced, tag) = pulled
                            if isLast {
                                if tag == tagMessage { return .truncated } // cut at a chunk boundary
                                if tag != tagFinal { return .authenticationFailed }
                            } else if tag != tagMessage {
                                return .authenticationFailed // FINAL (or another tag) too early
                            }
                            if produced > 0 { output = output.map { $0 + produced } }
                            position += length
                        }
                        return nil
                    }()
                    if let failure {
                        if let base = buffer.baseAddress { sodium_memzero(base, count) }
                        throw failure
                    }
                    initialized = count
                }
            }
        }
    }
}
