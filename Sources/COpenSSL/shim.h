#ifndef SHAREBROKER_COPENSSL_SHIM_H
#define SHAREBROKER_COPENSSL_SHIM_H
/* OpenSSL's libcrypto, for one thing only: ChaCha20-Poly1305-IETF over large plaintexts.
 *
 * libsodium 1.0.18 (Debian 12) runs ChaCha20-Poly1305 at about 1.4 GB/s here; OpenSSL 3's
 * AVX2/AVX-512 code runs the same construction at about 3.3 GB/s. The output is byte-identical
 * (RFC 8439), so ShareBrokerCrypto uses these two functions for plaintexts from
 * XChaCha20Poly1305.bulkThreshold up and libsodium below it (where OpenSSL's per-call setup
 * costs more than it saves). HChaCha20, keys, nonces and everything else stay with libsodium.
 *
 * Only ShareBrokerCrypto imports this module. The key passed in is the per-prefix HChaCha20
 * subkey, never a group key; it is copied into a cipher context that lives for one call and is
 * freed with EVP_CIPHER_CTX_free, which zeroes it (OPENSSL_clear_free). */
#include <openssl/evp.h>
#include <openssl/crypto.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

/* The results of the two functions below. */
enum {
    SB_OSSL_OK = 0,
    /* The tag did not verify: the output was zeroed. */
    SB_OSSL_FORGED = -1,
    /* OpenSSL could not do it (no memory, no cipher, size past INT_MAX): nothing was produced;
       the caller uses libsodium instead. */
    SB_OSSL_UNAVAILABLE = -2,
};

/* out[0 ..< mlen + 16] <- ChaCha20-Poly1305-IETF(key, nonce12, ad, m). */
static inline int sb_ossl_chacha20poly1305_encrypt(unsigned char *out, const unsigned char *m, size_t mlen,
                                                   const unsigned char *ad, size_t adlen,
                                                   const unsigned char *nonce12, const unsigned char *key) {
    if (mlen > (size_t)INT_MAX || adlen > (size_t)INT_MAX) return SB_OSSL_UNAVAILABLE;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return SB_OSSL_UNAVAILABLE;
    int len = 0, done = 0;
    int ok = EVP_EncryptInit_ex(ctx, EVP_chacha20_poly1305(), NULL, key, nonce12) == 1
        && (adlen == 0 || EVP_EncryptUpdate(ctx, NULL, &len, ad, (int)adlen) == 1)
        && (mlen == 0 || EVP_EncryptUpdate(ctx, out, &len, m, (int)mlen) == 1)
        && (done = len, EVP_EncryptFinal_ex(ctx, out + done, &len) == 1)
        && (size_t)(done + len) == mlen
        && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, out + mlen) == 1;
    EVP_CIPHER_CTX_free(ctx);
    if (!ok) {
        OPENSSL_cleanse(out, mlen + 16);
        return SB_OSSL_UNAVAILABLE;
    }
    return SB_OSSL_OK;
}

/* Verifies c (clen >= 16: ciphertext || tag) and writes the plaintext to out[0 ..< clen - 16].
 * OpenSSL decrypts before the tag is checked, so out holds unauthenticated bytes until this
 * returns: on SB_OSSL_FORGED and SB_OSSL_UNAVAILABLE they have been zeroed. */
static inline int sb_ossl_chacha20poly1305_decrypt(unsigned char *out, const unsigned char *c, size_t clen,
                                                   const unsigned char *ad, size_t adlen,
                                                   const unsigned char *nonce12, const unsigned char *key) {
    if (clen < 16) return SB_OSSL_FORGED;
    size_t mlen = clen - 16;
    if (mlen > (size_t)INT_MAX || adlen > (size_t)INT_MAX) return SB_OSSL_UNAVAILABLE;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return SB_OSSL_UNAVAILABLE;
    int len = 0, done = 0;
    int ready = EVP_DecryptInit_ex(ctx, EVP_chacha20_poly1305(), NULL, key, nonce12) == 1
        && (adlen == 0 || EVP_DecryptUpdate(ctx, NULL, &len, ad, (int)adlen) == 1)
        && (mlen == 0 || EVP_DecryptUpdate(ctx, out, &len, c, (int)mlen) == 1)
        && (done = len, EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, 16, (void *)(c + mlen)) == 1);
    int result = SB_OSSL_UNAVAILABLE;
    if (ready) {
        result = (EVP_DecryptFinal_ex(ctx, out + done, &len) == 1 && (size_t)(done + len) == mlen)
            ? SB_OSSL_OK : SB_OSSL_FORGED;
    }
    EVP_CIPHER_CTX_free(ctx);
    if (result != SB_OSSL_OK) OPENSSL_cleanse(out, mlen);
    return result;
}
#endif
