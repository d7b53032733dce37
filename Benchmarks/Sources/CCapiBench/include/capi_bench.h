// The C side of capi-bench: the same calls as the Swift side, made from C through
// libsharebroker's interface (include/sharebroker.h), timed with CLOCK_MONOTONIC.
#ifndef CAPI_BENCH_H
#define CAPI_BENCH_H

// Creates and starts an embedded broker for com.acme.bench, authorized, SecureCopy, with the
// Open In whitelist of the Swift benchmarks; 0 on success.
int capi_bench_setup(void);
// Nanoseconds per sb_decide_open_in of a whitelisted target, over `iterations` calls.
double capi_bench_open_in(long iterations);
// Nanoseconds per sb_copy of 64 bytes of text (sealed), over `iterations` calls.
double capi_bench_copy64(long iterations);
// Destroys the broker.
void capi_bench_teardown(void);

#endif
