#include "capi_bench.h"

#include <sharebroker.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static sb_broker *broker;
static volatile int32_t sink;

static void ready(void *u) { (void)u; }
static void auth(void *u, int32_t s, const char *m, sb_acknowledgment *a) { (void)u; (void)s; (void)m; (void)a; }

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int capi_bench_setup(void) {
    if (sb_broker_create_embedded("com.acme.bench", &broker) != SB_OK) return 1;
    sb_callbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.struct_size = sizeof cb;
    cb.ready = ready;
    cb.auth_state_changed = auth;
    if (sb_broker_start(broker, &cb) != SB_OK) return 2;
    const char *whitelist[] = {"com.acme.documentviewer", "com.acme.mail", "com.acme.notes", "com.acme.browser",
                               "com.acme.pdf"};
    sb_policy_update u;
    memset(&u, 0, sizeof u);
    u.struct_size = sizeof u;
    u.print = u.secure_file_io = u.log_level = u.drag_and_drop = u.managed_browser_required = SB_KEEP;
    u.auth = SB_AUTH_AUTHORIZED;
    u.pasteboard = SB_PASTEBOARD_SECURE_COPY;
    u.open_in = SB_OPEN_IN_WHITELIST;
    u.open_in_whitelist = whitelist;
    u.open_in_whitelist_count = 5;
    if (sb_broker_apply(broker, &u, NULL) != SB_OK) return 3;
    return 0;
}

double capi_bench_open_in(long iterations) {
    const char *target = "com.acme.documentviewer";
    sb_decision d;
    double start = now_ns();
    for (long i = 0; i < iterations; i++) {
        sb_decide_open_in(broker, target, SB_CHANNEL_DOCUMENT_INTERACTION, &d);
        sink += d.allowed;
    }
    return (now_ns() - start) / (double)iterations;
}

double capi_bench_copy64(long iterations) {
    uint8_t bytes[64];
    for (int i = 0; i < 64; i++) bytes[i] = (uint8_t)('a' + i % 26);
    sb_copy_result r;
    double start = now_ns();
    for (long i = 0; i < iterations; i++) {
        sb_copy(broker, SB_TYPE_TEXT, bytes, sizeof bytes, &r);
        sink += r.action;
    }
    return (now_ns() - start) / (double)iterations;
}

void capi_bench_teardown(void) {
    sb_broker_destroy(broker);
    broker = NULL;
}
