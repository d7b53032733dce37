#ifndef SHAREBROKER_CSODIUM_SHIM_H
#define SHAREBROKER_CSODIUM_SHIM_H
#include <sodium.h>
#include <stdint.h>

/* The fork canary of ShareBrokerCrypto's ForkGeneration: a word in a MADV_WIPEONFORK page,
   read and re-armed with C atomics (the page is not Swift-managed memory). */

/* The canary now (relaxed). */
static inline uint64_t sb_fork_canary_load(uint64_t *canary) {
    return __atomic_load_n(canary, __ATOMIC_RELAXED);
}

/* Sets the canary from 0 to 1; 1 when this call did it (one caller per wiped page). */
static inline int sb_fork_canary_rearm(uint64_t *canary) {
    uint64_t expected = 0;
    return __atomic_compare_exchange_n(canary, &expected, 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED) ? 1 : 0;
}

/* Sets the canary to 1 (in the pthread_atfork child handler, which announces the fork itself). */
static inline void sb_fork_canary_arm(uint64_t *canary) {
    __atomic_store_n(canary, 1, __ATOMIC_RELAXED);
}
#endif
