#include "COpenSSL.h"

#include <limits.h>
#include <stdatomic.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

/* A few cipher contexts, made on first use and kept for the process's life (reachable from
 * here, so not a leak): re-keying a context allocates nothing, making one allocates three
 * blocks. A context is claimed with a compare-and-swap and never waited for. */
#define POOL_SIZE 4
static EVP_CIPHER_CTX *pool[POOL_SIZE];
static atomic_int busy[POOL_SIZE];

static const unsigned char zeros[32];

static EVP_CIPHER_CTX *claim(int *slot) {
    for (int index = 0; index < POOL_SIZE; index++) {
        int expected = 0;
        if (!atomic_compare_exchange_strong_explicit(&busy[index], &expected, 1,
                                                     memory_order_acquire, memory_order_relaxed)) {
            continue;
        }
        if (pool[index] == NULL) {
            EVP_CIPHER_CTX *made = EVP_CIPHER_CTX_new();
            if (made != NULL && EVP_CipherInit_ex(made, EVP_chacha20_poly1305(), NULL, NULL, NULL, 1) != 1) {
                EVP_CIPHER_CTX_free(made);
                made = NULL;
            }
            if (made == NULL) {
                atomic_store_explicit(&busy[index], 0, memory_order_release);
                return NULL;
            }
            pool[index] = made;
        }
        *slot = index;
        return pool[index];
    }
    return NULL;
}

/* Re-keys the context with zeros (the subkey is gone from OpenSSL's memory) and gives it back. */
static void release(int slot) {
    (void)EVP_CipherInit_ex(pool[slot], NULL, NULL, zeros, zeros, 1);
    atomic_store_explicit(&busy[slot], 0, memory_order_release);
}

int sharebroker_crypto_chacha20poly1305_encrypt(unsigned char *out, const unsigned char *m, size_t mlen,
                                     const unsigned char *ad, size_t adlen,
                                     const unsigned char *nonce12, const unsigned char *key) {
    if (mlen > (size_t)INT_MAX - 64 || adlen > (size_t)INT_MAX) return SHAREBROKER_CRYPTO_UNAVAILABLE;
    int slot = 0;
    EVP_CIPHER_CTX *ctx = claim(&slot);
    if (ctx == NULL) return SHAREBROKER_CRYPTO_UNAVAILABLE;
    int len = 0, done = 0;
    int ok = EVP_CipherInit_ex(ctx, NULL, NULL, key, nonce12, 1) == 1
        && (adlen == 0 || EVP_EncryptUpdate(ctx, NULL, &len, ad, (int)adlen) == 1)
        && (mlen == 0 || EVP_EncryptUpdate(ctx, out, &len, m, (int)mlen) == 1)
        && (done = (mlen == 0 ? 0 : len), EVP_EncryptFinal_ex(ctx, out + done, &len) == 1)
        && (size_t)(done + len) == mlen
        && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, out + mlen) == 1;
    release(slot);
    if (!ok) {
        OPENSSL_cleanse(out, mlen + 16);
        return SHAREBROKER_CRYPTO_UNAVAILABLE;
    }
    return SHAREBROKER_CRYPTO_OK;
}

int sharebroker_crypto_chacha20poly1305_decrypt(unsigned char *out, const unsigned char *c, size_t clen,
                                     const unsigned char *ad, size_t adlen,
                                     const unsigned char *nonce12, const unsigned char *key) {
    if (clen < 16) return SHAREBROKER_CRYPTO_FORGED;
    size_t mlen = clen - 16;
    if (mlen > (size_t)INT_MAX - 64 || adlen > (size_t)INT_MAX) return SHAREBROKER_CRYPTO_UNAVAILABLE;
    int slot = 0;
    EVP_CIPHER_CTX *ctx = claim(&slot);
    if (ctx == NULL) return SHAREBROKER_CRYPTO_UNAVAILABLE;
    int len = 0, done = 0;
    int ready = EVP_CipherInit_ex(ctx, NULL, NULL, key, nonce12, 0) == 1
        && (adlen == 0 || EVP_DecryptUpdate(ctx, NULL, &len, ad, (int)adlen) == 1)
        && (mlen == 0 || EVP_DecryptUpdate(ctx, out, &len, c, (int)mlen) == 1)
        && (done = (mlen == 0 ? 0 : len),
            EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, 16, (void *)(c + mlen)) == 1);
    int result = SHAREBROKER_CRYPTO_UNAVAILABLE;
    if (ready) {
        result = (EVP_DecryptFinal_ex(ctx, out + done, &len) == 1 && (size_t)(done + len) == mlen)
            ? SHAREBROKER_CRYPTO_OK : SHAREBROKER_CRYPTO_FORGED;
    }
    release(slot);
    if (result != SHAREBROKER_CRYPTO_OK) OPENSSL_cleanse(out, mlen);
    return result;
}
