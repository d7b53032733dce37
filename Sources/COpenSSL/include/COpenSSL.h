#ifndef SHAREBROKER_COPENSSL_H
#define SHAREBROKER_COPENSSL_H
/* OpenSSL's libcrypto, for one thing only: ChaCha20-Poly1305-IETF over large plaintexts.
 *
 * libsodium 1.0.18 (Debian 12) runs ChaCha20-Poly1305 at about 1.4 GB/s here; OpenSSL 3's
 * AVX2/AVX-512 code runs the same construction (RFC 8439) at about 3.3 GB/s, byte for byte the
 * same output. ShareBrokerCrypto calls these two functions for plaintexts from
 * XChaCha20Poly1305.bulkThreshold up and libsodium below it; HChaCha20, keys, nonces and
 * everything else stay with libsodium. Only ShareBrokerCrypto imports this module.
 *
 * The key passed in is the HChaCha20 subkey of one nonce prefix, never a group key. The cipher
 * contexts come from a small pool made once per process (no allocation per call); each is
 * re-keyed with zeros as soon as its call ends, so no subkey stays in OpenSSL's memory between
 * calls. When every context is in use (or OpenSSL cannot make one) the functions answer
 * SHAREBROKER_CRYPTO_UNAVAILABLE and the caller uses libsodium. */
#include <stddef.h>

/* Not part of any exported interface: hidden in every library that links ShareBrokerCrypto (the
 * C interface's libsharebroker exports only sb_ functions, checked by make capi-check). */
#define SHAREBROKER_CRYPTO_INTERNAL __attribute__((visibility("hidden")))

/* The results of the two functions below. */
#define SHAREBROKER_CRYPTO_OK 0
/* The tag did not verify: the output was zeroed. */
#define SHAREBROKER_CRYPTO_FORGED 1
/* Not done (every pooled context busy, no memory, size past INT_MAX): nothing was produced. */
#define SHAREBROKER_CRYPTO_UNAVAILABLE 2

/* out[0 ..< mlen + 16] <- ChaCha20-Poly1305-IETF(key (32 bytes), nonce12, ad, m). */
SHAREBROKER_CRYPTO_INTERNAL int sharebroker_crypto_chacha20poly1305_encrypt(unsigned char *out, const unsigned char *m, size_t mlen,
                                     const unsigned char *ad, size_t adlen,
                                     const unsigned char *nonce12, const unsigned char *key);

/* Verifies c (clen >= 16: ciphertext || tag) and writes the plaintext to out[0 ..< clen - 16].
 * OpenSSL decrypts before the tag is checked, so out holds unauthenticated bytes during the
 * call: on any result but SHAREBROKER_CRYPTO_OK they have been zeroed before it returns. */
SHAREBROKER_CRYPTO_INTERNAL int sharebroker_crypto_chacha20poly1305_decrypt(unsigned char *out, const unsigned char *c, size_t clen,
                                     const unsigned char *ad, size_t adlen,
                                     const unsigned char *nonce12, const unsigned char *key);
#endif
