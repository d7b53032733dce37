/*
 * The C interface's test suite (make capi-check): the decision tables of Open In and of the copy
 * levels through libsharebroker, the callbacks (required, optional, reentry), the ownership rules
 * (run again under AddressSanitizer/LeakSanitizer), and bad input: NULL handles and buffers,
 * invalid UTF-8, huge sizes. Each bad call must return its error code and write nothing.
 * Plain asserts; prints "N passed, N failed" and exits 1 on any failure.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <sharebroker.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int passed, failed;

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (cond) {                                                                    \
            passed++;                                                                  \
        } else {                                                                       \
            failed++;                                                                  \
            fprintf(stderr, "FAIL %s:%d: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
                    sb_last_error_message());                                         \
        }                                                                              \
    } while (0)

#define CHECK_STATUS(call, expected)                                                   \
    do {                                                                               \
        sb_status got_ = (call);                                                       \
        if (got_ == (expected)) {                                                      \
            passed++;                                                                  \
        } else {                                                                       \
            failed++;                                                                  \
            fprintf(stderr, "FAIL %s:%d: %s returned %s, expected %s (last error: %s)\n", \
                    __FILE__, __LINE__, #call, sb_status_name(got_), sb_status_name(expected), \
                    sb_last_error_message());                                         \
        }                                                                              \
    } while (0)

/* What the callbacks saw. */
typedef struct seen {
    int ready;
    int auth;
    int32_t last_auth;
    int pasteboard_changed;
    int open_in_changed;
    size_t last_whitelist_count;
    int blocked_open_in;
    int blocked_url;
    int blocked_drop;
    int blocked_copy;
    int secure_services;
    sb_status reentry_status;      /* what sb_broker_apply returned inside `ready` */
    sb_status policy_in_callback;  /* what sb_policy_get returned inside auth_state_changed */
    sb_broker *broker;
} seen;

static void on_ready(void *user_data) {
    seen *s = user_data;
    s->ready++;
    sb_policy_update update;
    memset(&update, 0, sizeof update);
    update.struct_size = sizeof update;
    s->reentry_status = sb_broker_apply(s->broker, &update, NULL);
}

static void on_auth(void *user_data, int32_t state, const char *message, sb_acknowledgment *ack) {
    seen *s = user_data;
    (void)message;
    s->auth++;
    s->last_auth = state;
    sb_policy *policy = NULL;
    s->policy_in_callback = sb_policy_get(s->broker, &policy);
    sb_policy_free(policy);
    ack->state = SB_POLICY_STATE_APPLIED;
}

static void on_pasteboard(void *user_data, int32_t policy, sb_acknowledgment *ack) {
    seen *s = user_data;
    (void)policy;
    s->pasteboard_changed++;
    ack->state = SB_POLICY_STATE_APPLIED;
    snprintf(ack->message, sizeof ack->message, "pasteboard policy %d applied", (int)policy);
}

static void on_open_in(void *user_data, int32_t policy, const char *const *whitelist, size_t count,
                       sb_acknowledgment *ack) {
    seen *s = user_data;
    (void)policy;
    s->open_in_changed++;
    s->last_whitelist_count = count;
    for (size_t i = 0; i < count; i++) {
        if (whitelist[i] == NULL) ack->state = SB_POLICY_STATE_ERROR;
    }
}

static void on_blocked_open_in(void *user_data, int32_t policy) { (void)policy; ((seen *)user_data)->blocked_open_in++; }
static void on_blocked_url(void *user_data, const char *url) { (void)url; ((seen *)user_data)->blocked_url++; }
static void on_blocked_drop(void *user_data) { ((seen *)user_data)->blocked_drop++; }
static void on_blocked_copy(void *user_data, int32_t policy) { (void)policy; ((seen *)user_data)->blocked_copy++; }
static void on_secure_services(void *user_data, int32_t a) { (void)a; ((seen *)user_data)->secure_services++; }

static sb_callbacks callbacks_for(seen *s) {
    sb_callbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.struct_size = sizeof cb;
    cb.user_data = s;
    cb.ready = on_ready;
    cb.auth_state_changed = on_auth;
    cb.pasteboard_policy_changed = on_pasteboard;
    cb.open_in_policy_changed = on_open_in;
    cb.open_in_attempted_when_blocked = on_blocked_open_in;
    cb.open_url_attempted_when_unauthorized = on_blocked_url;
    cb.drag_and_drop_attempted_to_non_appconnect_app = on_blocked_drop;
    cb.copy_attempted_when_unauthorized = on_blocked_copy;
    cb.secure_services_availability_changed = on_secure_services;
    return cb;
}

static sb_policy_update keep_all(void) {
    sb_policy_update u = SB_POLICY_UPDATE_INIT;
    return u;
}

/* A started, ready, authorized broker for com.acme.notes. */
static sb_broker *ready_broker(seen *s) {
    memset(s, 0, sizeof *s);
    sb_broker *b = NULL;
    CHECK_STATUS(sb_broker_create_embedded("com.acme.notes", &b), SB_OK);
    if (b == NULL) return NULL;
    s->broker = b;
    sb_callbacks cb = callbacks_for(s);
    CHECK_STATUS(sb_broker_start(b, &cb), SB_OK);
    sb_policy_update u = keep_all();
    u.auth = SB_AUTH_AUTHORIZED;
    u.open_in = SB_OPEN_IN_AUTHORIZED;
    u.pasteboard = SB_PASTEBOARD_AUTHORIZED;
    u.print = SB_PRINT_AUTHORIZED;
    u.drag_and_drop = SB_DRAG_AND_DROP_ALL;
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_OK);
    return b;
}

static void expect_open_in(sb_broker *b, const char *target, int32_t channel, int allowed, int32_t rule, int line) {
    sb_decision d = {-1, -1, 0};
    sb_status st = sb_decide_open_in(b, target, channel, &d);
    if (st == SB_OK && d.allowed == allowed && d.rule == rule) {
        passed++;
    } else {
        failed++;
        fprintf(stderr, "FAIL line %d: open in %s via %d: status %s, allowed %d rule %s; expected allowed %d rule %s\n",
                line, target, (int)channel, sb_status_name(st), (int)d.allowed, sb_rule_name(d.rule), allowed,
                sb_rule_name(rule));
    }
}
#define EXPECT_OPEN_IN(b, t, c, a, r) expect_open_in(b, t, c, a, r, __LINE__)

static void test_open_in_table(void) {
    seen s;
    memset(&s, 0, sizeof s);
    sb_broker *b = NULL;
    CHECK_STATUS(sb_broker_create_embedded("com.acme.notes", &b), SB_OK);
    s.broker = b;
    sb_callbacks cb = callbacks_for(&s);
    CHECK_STATUS(sb_broker_start(b, &cb), SB_OK);

    /* Before the first policy: everything fails closed. */
    EXPECT_OPEN_IN(b, "org.example.sheets", SB_CHANNEL_DOCUMENT_INTERACTION, 0, SB_RULE_NOT_READY);

    /* The first policy makes it ready: only `ready` is called; reentry is refused inside it. */
    sb_policy_update u = keep_all();
    u.auth = SB_AUTH_UNAUTHORIZED;
    u.open_in = SB_OPEN_IN_AUTHORIZED;
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_OK);
    CHECK(s.ready == 1);
    CHECK(s.reentry_status == SB_ERR_CALLBACK_REENTRY);
    EXPECT_OPEN_IN(b, "org.example.sheets", SB_CHANNEL_DOCUMENT_INTERACTION, 0, SB_RULE_NOT_AUTHORIZED);

    u = keep_all();
    u.auth = SB_AUTH_AUTHORIZED;
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_OK);
    CHECK(s.auth == 1 && s.last_auth == SB_AUTH_AUTHORIZED);
    CHECK(s.policy_in_callback == SB_OK);
    for (int32_t ch = 0; ch <= 2; ch++) {
        EXPECT_OPEN_IN(b, "org.example.sheets", ch, 1, SB_RULE_OPEN_IN_AUTHORIZED);
        EXPECT_OPEN_IN(b, "com.apple.mobilemail", ch, 1, SB_RULE_OPEN_IN_AUTHORIZED);
    }

    u = keep_all();
    u.open_in = SB_OPEN_IN_UNAUTHORIZED;
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_OK);
    CHECK(s.open_in_changed == 1);
    EXPECT_OPEN_IN(b, "org.example.sheets", SB_CHANNEL_DOCUMENT_INTERACTION, 0, SB_RULE_OPEN_IN_UNAUTHORIZED);

    const char *wl[] = {"org.example.sheets", "com.apple.mobilemail"};
    u = keep_all();
    u.open_in = SB_OPEN_IN_WHITELIST;
    u.open_in_whitelist = wl;
    u.open_in_whitelist_count = 2;
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_OK);
    CHECK(s.open_in_changed == 2 && s.last_whitelist_count == 2);
    EXPECT_OPEN_IN(b, "org.example.sheets", SB_CHANNEL_DOCUMENT_INTERACTION, 1, SB_RULE_IN_WHITELIST);
    EXPECT_OPEN_IN(b, "org.example.sheets", SB_CHANNEL_PREVIEW_CONTROLLER, 1, SB_RULE_IN_WHITELIST);
    EXPECT_OPEN_IN(b, "org.example.sheets", SB_CHANNEL_ACTIVITY_SHEET, 0, SB_RULE_ACTIVITY_SHEET_UNDER_WHITELIST);
    EXPECT_OPEN_IN(b, "org.example.Sheets", SB_CHANNEL_DOCUMENT_INTERACTION, 0, SB_RULE_NOT_IN_WHITELIST);
    EXPECT_OPEN_IN(b, "org.example.sheets.evil", SB_CHANNEL_DOCUMENT_INTERACTION, 0, SB_RULE_NOT_IN_WHITELIST);
    EXPECT_OPEN_IN(b, "", SB_CHANNEL_DOCUMENT_INTERACTION, 0, SB_RULE_NOT_IN_WHITELIST);
    /* Native mail needs both ids in the whitelist. */
    EXPECT_OPEN_IN(b, "com.apple.mobilemail", SB_CHANNEL_DOCUMENT_INTERACTION, 0, SB_RULE_NATIVE_MAIL_NOT_WHITELISTED);
    const char *wl2[] = {"com.apple.mobilemail", "com.apple.UIKit.activity.Mail"};
    u.open_in_whitelist = wl2;
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_OK);
    EXPECT_OPEN_IN(b, "com.apple.mobilemail", SB_CHANNEL_DOCUMENT_INTERACTION, 1, SB_RULE_NATIVE_MAIL_WHITELISTED);
    EXPECT_OPEN_IN(b, "org.example.sheets", SB_CHANNEL_DOCUMENT_INTERACTION, 0, SB_RULE_NOT_IN_WHITELIST);

    /* "All AppConnect apps" follows the device: authorized AppConnect apps only. */
    CHECK_STATUS(sb_broker_update_device(b, "com.acme.viewer", 1, 1, NULL, 0), SB_OK);
    CHECK_STATUS(sb_broker_update_device(b, "com.acme.locked", 1, 0, NULL, 0), SB_OK);
    CHECK_STATUS(sb_broker_update_device(b, "org.plain.app", 0, 1, NULL, 0), SB_OK);
    u = keep_all();
    u.open_in = SB_OPEN_IN_ALL_APPCONNECT_APPS;
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_OK);
    EXPECT_OPEN_IN(b, "com.acme.viewer", SB_CHANNEL_DOCUMENT_INTERACTION, 1, SB_RULE_IN_WHITELIST);
    EXPECT_OPEN_IN(b, "com.acme.locked", SB_CHANNEL_DOCUMENT_INTERACTION, 0, SB_RULE_NOT_IN_WHITELIST);
    EXPECT_OPEN_IN(b, "org.plain.app", SB_CHANNEL_DOCUMENT_INTERACTION, 0, SB_RULE_NOT_IN_WHITELIST);
    CHECK_STATUS(sb_broker_update_device(b, "com.acme.locked", 1, 1, NULL, 0), SB_OK);
    EXPECT_OPEN_IN(b, "com.acme.locked", SB_CHANNEL_DOCUMENT_INTERACTION, 1, SB_RULE_IN_WHITELIST);

    /* The hand-over itself: allowed -> the document; blocked -> a dummy and the callback. */
    const uint8_t doc[] = "quarterly numbers";
    sb_transfer_result *r = NULL;
    CHECK_STATUS(sb_open_in(b, "Q3.pdf", doc, sizeof doc - 1, "com.acme.viewer", SB_CHANNEL_DOCUMENT_INTERACTION, &r), SB_OK);
    CHECK(r != NULL && r->outcome == SB_TRANSFER_DELIVERED && strcmp(r->name, "Q3.pdf") == 0 && r->decision.allowed == 1);
    sb_transfer_result_free(r);
    r = NULL;
    int before = s.blocked_open_in;
    CHECK_STATUS(sb_open_in(b, "Q3.pdf", doc, sizeof doc - 1, "org.plain.app", SB_CHANNEL_DOCUMENT_INTERACTION, &r), SB_OK);
    CHECK(r != NULL && r->outcome == SB_TRANSFER_DUMMY && strcmp(r->name, "Q3.pdf") != 0 && r->decision.rule == SB_RULE_NOT_IN_WHITELIST);
    CHECK(s.blocked_open_in == before + 1);
    sb_transfer_result_free(r);

    /* The policy as C sees it. */
    sb_policy *p = NULL;
    CHECK_STATUS(sb_policy_get(b, &p), SB_OK);
    CHECK(p != NULL && p->auth_state == SB_AUTH_AUTHORIZED && p->open_in_policy == SB_OPEN_IN_WHITELIST);
    CHECK(p != NULL && p->open_in_whitelist_count == 2 && strcmp(p->open_in_whitelist[0], "com.acme.locked") == 0 &&
          strcmp(p->open_in_whitelist[1], "com.acme.viewer") == 0);
    sb_policy_free(p);

    /* Retired: everything blocked, the auth callback told. */
    CHECK_STATUS(sb_broker_retire(b, "the device was retired"), SB_OK);
    CHECK(s.last_auth == SB_AUTH_RETIRED);
    EXPECT_OPEN_IN(b, "com.acme.viewer", SB_CHANNEL_DOCUMENT_INTERACTION, 0, SB_RULE_NOT_AUTHORIZED);
    CHECK_STATUS(sb_broker_destroy(b), SB_OK);
}

/* sb_decide_open_in decides an ASCII target on its bytes (the policy's table of ids) and leaves
 * anything else to the UTF-8-validated String: the same answers as Swift's String comparison,
 * which is by canonical equivalence. */
static void test_open_in_bytes(void) {
    seen s;
    sb_broker *b = ready_broker(&s);
    if (b == NULL) return;
    /* A whitelist of ASCII ids of every length from 1 to 40 bytes (the hash's short, one-word and
     * several-word paths), each found and each near miss not found. */
    char ids[40][41];
    const char *wl[40];
    for (int n = 1; n <= 40; n++) {
        for (int i = 0; i < n; i++) ids[n - 1][i] = "abcdefghijklmnopqrstuvwxyz0123456789.-_"[(i * 7 + n) % 39];
        ids[n - 1][n] = '\0';
        wl[n - 1] = ids[n - 1];
    }
    sb_policy_update u = keep_all();
    u.open_in = SB_OPEN_IN_WHITELIST;
    u.open_in_whitelist = wl;
    u.open_in_whitelist_count = 40;
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_OK);
    for (int n = 1; n <= 40; n++) {
        char probe[42];
        memcpy(probe, ids[n - 1], (size_t)n + 1);
        EXPECT_OPEN_IN(b, probe, SB_CHANNEL_DOCUMENT_INTERACTION, 1, SB_RULE_IN_WHITELIST);
        probe[n - 1] = probe[n - 1] == 'x' ? 'y' : 'x'; /* the last byte changed */
        EXPECT_OPEN_IN(b, probe, SB_CHANNEL_DOCUMENT_INTERACTION, 0, SB_RULE_NOT_IN_WHITELIST);
        memcpy(probe, ids[n - 1], (size_t)n + 1);
        probe[0] = 'Q'; /* the first byte changed */
        EXPECT_OPEN_IN(b, probe, SB_CHANNEL_DOCUMENT_INTERACTION, 0, SB_RULE_NOT_IN_WHITELIST);
        memcpy(probe, ids[n - 1], (size_t)n + 1);
        probe[n] = 'q'; /* one byte more */
        probe[n + 1] = '\0';
        EXPECT_OPEN_IN(b, probe, SB_CHANNEL_DOCUMENT_INTERACTION, 0, SB_RULE_NOT_IN_WHITELIST);
    }
    EXPECT_OPEN_IN(b, "", SB_CHANNEL_DOCUMENT_INTERACTION, 0, SB_RULE_NOT_IN_WHITELIST);

    /* Ids that are not ASCII: "café" precomposed (U+00E9) and the KELVIN SIGN (U+212A), which
     * is canonically "K". */
    const char *unicode[] = {"org.example.sheets", "com.acme.caf\xc3\xa9", "com.acme.\xe2\x84\xaa"};
    u.open_in_whitelist = unicode;
    u.open_in_whitelist_count = 3;
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_OK);
    EXPECT_OPEN_IN(b, "org.example.sheets", SB_CHANNEL_DOCUMENT_INTERACTION, 1, SB_RULE_IN_WHITELIST);
    EXPECT_OPEN_IN(b, "com.acme.caf\xc3\xa9", SB_CHANNEL_DOCUMENT_INTERACTION, 1, SB_RULE_IN_WHITELIST);
    /* Decomposed (e + U+0301): other bytes, the same text. */
    EXPECT_OPEN_IN(b, "com.acme.cafe\xcc\x81", SB_CHANNEL_DOCUMENT_INTERACTION, 1, SB_RULE_IN_WHITELIST);
    EXPECT_OPEN_IN(b, "com.acme.cafe", SB_CHANNEL_DOCUMENT_INTERACTION, 0, SB_RULE_NOT_IN_WHITELIST);
    /* An ASCII target equal to an id that is not ASCII. */
    EXPECT_OPEN_IN(b, "com.acme.K", SB_CHANNEL_DOCUMENT_INTERACTION, 1, SB_RULE_IN_WHITELIST);
    EXPECT_OPEN_IN(b, "com.acme.\xe2\x84\xaa", SB_CHANNEL_DOCUMENT_INTERACTION, 1, SB_RULE_IN_WHITELIST);
    EXPECT_OPEN_IN(b, "com.acme.k", SB_CHANNEL_DOCUMENT_INTERACTION, 0, SB_RULE_NOT_IN_WHITELIST);
    EXPECT_OPEN_IN(b, "org.example.sheetz", SB_CHANNEL_DOCUMENT_INTERACTION, 0, SB_RULE_NOT_IN_WHITELIST);
    EXPECT_OPEN_IN(b, "com.acme.caf\xc3\xa9", SB_CHANNEL_ACTIVITY_SHEET, 0, SB_RULE_ACTIVITY_SHEET_UNDER_WHITELIST);
    /* Invalid UTF-8 is an error under every policy, nothing written. */
    sb_decision d = {-7, -7, 0};
    CHECK_STATUS(sb_decide_open_in(b, "com.acme.caf\xc3", SB_CHANNEL_DOCUMENT_INTERACTION, &d), SB_ERR_INVALID_UTF8);
    CHECK_STATUS(sb_decide_open_in(b, "com.acme.\xed\xa0\x80", SB_CHANNEL_DOCUMENT_INTERACTION, &d), SB_ERR_INVALID_UTF8);
    CHECK_STATUS(sb_decide_open_in(b, "\xc0\xaf", SB_CHANNEL_ACTIVITY_SHEET, &d), SB_ERR_INVALID_UTF8);
    u = keep_all();
    u.open_in = SB_OPEN_IN_AUTHORIZED;
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_OK);
    CHECK_STATUS(sb_decide_open_in(b, "org.\xff", SB_CHANNEL_DOCUMENT_INTERACTION, &d), SB_ERR_INVALID_UTF8);
    CHECK(d.allowed == -7 && d.rule == -7);
    EXPECT_OPEN_IN(b, "com.acme.cafe\xcc\x81", SB_CHANNEL_DOCUMENT_INTERACTION, 1, SB_RULE_OPEN_IN_AUTHORIZED);
    CHECK_STATUS(sb_broker_destroy(b), SB_OK);
}

static void expect_copy(sb_broker *b, int32_t action, int32_t rule, int line) {
    sb_copy_result r = {-1, -1, -1, 0};
    const char text[] = "secret plan";
    sb_status st = sb_copy(b, SB_TYPE_TEXT, (const uint8_t *)text, sizeof text - 1, &r);
    if (st == SB_OK && r.action == action && r.rule == rule) {
        passed++;
    } else {
        failed++;
        fprintf(stderr, "FAIL line %d: copy: status %s action %d rule %s; expected action %d rule %s\n", line,
                sb_status_name(st), (int)r.action, sb_copy_rule_name(r.rule), (int)action, sb_copy_rule_name(rule));
    }
}
#define EXPECT_COPY(b, a, r) expect_copy(b, a, r, __LINE__)

static int paste_equals(sb_broker *b, const char *type, const char *text) {
    sb_item *item = NULL;
    if (sb_paste(b, &item) != SB_OK || item == NULL) return 0;
    int same = strcmp(item->type, type) == 0 && item->length == strlen(text) && memcmp(item->bytes, text, item->length) == 0;
    sb_item_free(item);
    return same;
}

static void test_copy_table(void) {
    seen s;
    memset(&s, 0, sizeof s);
    sb_broker *b = NULL;
    CHECK_STATUS(sb_broker_create_embedded("com.acme.notes", &b), SB_OK);
    s.broker = b;
    sb_callbacks cb = callbacks_for(&s);
    CHECK_STATUS(sb_broker_start(b, &cb), SB_OK);
    EXPECT_COPY(b, SB_COPY_BLOCKED, SB_COPY_RULE_NOT_READY);
    sb_item *none = (sb_item *)0x1;
    CHECK_STATUS(sb_paste(b, &none), SB_ERR_NO_ITEM);
    CHECK(none == (sb_item *)0x1);

    sb_policy_update u = keep_all();
    u.auth = SB_AUTH_UNAUTHORIZED;
    u.pasteboard = SB_PASTEBOARD_AUTHORIZED;
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_OK);
    EXPECT_COPY(b, SB_COPY_BLOCKED, SB_COPY_RULE_NOT_AUTHORIZED);

    u = keep_all();
    u.auth = SB_AUTH_AUTHORIZED;
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_OK);
    EXPECT_COPY(b, SB_COPY_WRITE_CLEAR, SB_COPY_RULE_PASTEBOARD_AUTHORIZED);
    CHECK(paste_equals(b, SB_TYPE_TEXT, "secret plan"));

    u = keep_all();
    u.pasteboard = SB_PASTEBOARD_UNAUTHORIZED;
    sb_update_outcome o;
    CHECK_STATUS(sb_broker_apply(b, &u, &o), SB_OK);
    CHECK(s.pasteboard_changed == 1);
    CHECK(o.acknowledgment_count == 1 && o.acknowledgments[0].kind == SB_ACK_PASTEBOARD &&
          o.acknowledgments[0].state == SB_POLICY_STATE_APPLIED);
    int before = s.blocked_copy;
    sb_copy_result r;
    const char other[] = "other";
    CHECK_STATUS(sb_copy(b, "text/html", (const uint8_t *)other, 5, &r), SB_OK);
    CHECK(r.action == SB_COPY_BLOCKED && r.rule == SB_COPY_RULE_PASTEBOARD_UNAUTHORIZED && r.notifies_app == 1);
    CHECK(s.blocked_copy == before + 1);
    CHECK(paste_equals(b, SB_TYPE_TEXT, "secret plan")); /* the pasteboard kept what it had */

    u = keep_all();
    u.pasteboard = SB_PASTEBOARD_SECURE_COPY;
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_OK);
    EXPECT_COPY(b, SB_COPY_WRITE_SEALED, SB_COPY_RULE_SECURE_COPY);
    CHECK(paste_equals(b, SB_TYPE_TEXT, "secret plan")); /* this app holds the keys */

    /* Several representations, sealed one by one; paste reads the first. */
    const uint8_t html[] = "<b>plan</b>";
    sb_item_view views[2] = {{"text/html", html, sizeof html - 1}, {SB_TYPE_TEXT, (const uint8_t *)"plan", 4}};
    CHECK_STATUS(sb_copy_representations(b, views, 2, &r), SB_OK);
    CHECK(r.action == SB_COPY_WRITE_SEALED);
    CHECK(paste_equals(b, "text/html", "<b>plan</b>"));

    CHECK_STATUS(sb_broker_set_secure_services(b, SB_SECURE_SERVICES_UNAVAILABLE), SB_OK);
    CHECK(s.secure_services == 1);
    EXPECT_COPY(b, SB_COPY_BLOCKED, SB_COPY_RULE_SECURE_SERVICES_UNAVAILABLE);

    /* A retire takes back this app's item from the pasteboard. */
    CHECK_STATUS(sb_broker_set_secure_services(b, SB_SECURE_SERVICES_AVAILABLE), SB_OK);
    u = keep_all();
    u.pasteboard = SB_PASTEBOARD_AUTHORIZED;
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_OK);
    EXPECT_COPY(b, SB_COPY_WRITE_CLEAR, SB_COPY_RULE_PASTEBOARD_AUTHORIZED);
    CHECK_STATUS(sb_broker_retire(b, NULL), SB_OK);
    sb_item *gone = NULL;
    CHECK_STATUS(sb_paste(b, &gone), SB_ERR_NO_ITEM);
    CHECK(gone == NULL);
    EXPECT_COPY(b, SB_COPY_BLOCKED, SB_COPY_RULE_NOT_AUTHORIZED);
    CHECK_STATUS(sb_broker_destroy(b), SB_OK);
}

/* The copy reads the caller's bytes only during the call: sealed straight from the buffer, copied
 * into the pasteboard's own item when written in the clear. Each buffer is overwritten and freed
 * right after sb_copy returns; what is pasted afterwards is still the original (AddressSanitizer,
 * in the run under it, would report a later read of the freed buffer). */
static void test_copy_borrows_only_during_the_call(void) {
    seen s;
    memset(&s, 0, sizeof s);
    sb_broker *b = NULL;
    CHECK_STATUS(sb_broker_create_embedded("com.acme.notes", &b), SB_OK);
    s.broker = b;
    sb_callbacks cb = callbacks_for(&s);
    CHECK_STATUS(sb_broker_start(b, &cb), SB_OK);
    const int32_t levels[2] = {SB_PASTEBOARD_AUTHORIZED, SB_PASTEBOARD_SECURE_COPY};
    const int32_t actions[2] = {SB_COPY_WRITE_CLEAR, SB_COPY_WRITE_SEALED};
    for (int level = 0; level < 2; level++) {
        sb_policy_update u = keep_all();
        u.auth = SB_AUTH_AUTHORIZED;
        u.pasteboard = levels[level];
        CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_OK);

        const char text[] = "the borrowed plan";
        uint8_t *one = malloc(sizeof text - 1);
        CHECK(one != NULL);
        if (one == NULL) break;
        memcpy(one, text, sizeof text - 1);
        sb_copy_result r = {-1, -1, -1, 0};
        CHECK_STATUS(sb_copy(b, SB_TYPE_TEXT, one, sizeof text - 1, &r), SB_OK);
        CHECK(r.action == actions[level]);
        memset(one, 'X', sizeof text - 1);
        free(one);
        CHECK(paste_equals(b, SB_TYPE_TEXT, text));

        const char html_text[] = "<b>borrowed</b>";
        uint8_t *html = malloc(sizeof html_text - 1);
        uint8_t *plain = malloc(8);
        CHECK(html != NULL && plain != NULL);
        if (html == NULL || plain == NULL) {
            free(html);
            free(plain);
            break;
        }
        memcpy(html, html_text, sizeof html_text - 1);
        memcpy(plain, "borrowed", 8);
        sb_item_view views[2] = {{"text/html", html, sizeof html_text - 1}, {SB_TYPE_TEXT, plain, 8}};
        CHECK_STATUS(sb_copy_representations(b, views, 2, &r), SB_OK);
        CHECK(r.action == actions[level]);
        memset(html, 'X', sizeof html_text - 1);
        memset(plain, 'X', 8);
        free(html);
        free(plain);
        CHECK(paste_equals(b, "text/html", html_text));
    }
    CHECK_STATUS(sb_broker_destroy(b), SB_OK);
}

static void test_other_actions(void) {
    seen s;
    sb_broker *b = ready_broker(&s);
    if (b == NULL) return;
    sb_decision d;
    CHECK_STATUS(sb_print(b, &d), SB_OK);
    CHECK(d.allowed == 1 && d.rule == SB_RULE_PRINT_AUTHORIZED);
    CHECK_STATUS(sb_compose_mail(b, &d), SB_OK);
    CHECK(d.allowed == 1 && d.rule == SB_RULE_OPEN_IN_AUTHORIZED);
    CHECK_STATUS(sb_drag_and_drop(b, "org.plain.app", &d), SB_OK);
    CHECK(d.allowed == 1 && d.rule == SB_RULE_DRAG_AND_DROP_ALL);

    const char *schemes[] = {"sheets"};
    CHECK_STATUS(sb_broker_update_device(b, "org.example.sheets", 0, 0, schemes, 1), SB_OK);
    sb_url_result *ur = NULL;
    CHECK_STATUS(sb_open_url(b, "sheets://open?id=1", &ur), SB_OK);
    CHECK(ur != NULL && ur->outcome == SB_URL_OPENED && ur->handler != NULL && strcmp(ur->handler, "org.example.sheets") == 0);
    sb_url_result_free(ur);
    ur = NULL;
    CHECK_STATUS(sb_open_url(b, "nobody-handles-this:x", &ur), SB_OK);
    CHECK(ur != NULL && ur->outcome == SB_URL_UNHANDLED && ur->handler == NULL);
    sb_url_result_free(ur);

    CHECK_STATUS(sb_broker_update_device(b, "com.acme.viewer", 1, 1, NULL, 0), SB_OK);
    sb_policy_update u = keep_all();
    u.open_in = SB_OPEN_IN_UNAUTHORIZED;
    u.print = SB_PRINT_UNAUTHORIZED;
    u.drag_and_drop = SB_DRAG_AND_DROP_APPCONNECT_APPS;
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_OK);
    CHECK_STATUS(sb_print(b, &d), SB_OK);
    CHECK(d.allowed == 0 && d.rule == SB_RULE_PRINT_UNAUTHORIZED);
    int before = s.blocked_open_in;
    CHECK_STATUS(sb_compose_mail(b, &d), SB_OK);
    CHECK(d.allowed == 0 && d.rule == SB_RULE_OPEN_IN_UNAUTHORIZED && s.blocked_open_in == before + 1);
    CHECK_STATUS(sb_drag_and_drop(b, "com.acme.viewer", &d), SB_OK);
    CHECK(d.allowed == 1 && d.rule == SB_RULE_DRAG_AND_DROP_APPCONNECT_TARGET);
    CHECK_STATUS(sb_drag_and_drop(b, "org.plain.app", &d), SB_OK);
    CHECK(d.allowed == 0 && d.rule == SB_RULE_DRAG_AND_DROP_NOT_APPCONNECT_TARGET && s.blocked_drop == 1);
    ur = NULL;
    CHECK_STATUS(sb_open_url(b, "sheets://open?id=1", &ur), SB_OK);
    CHECK(ur != NULL && ur->outcome == SB_URL_BLOCKED && ur->handler == NULL && s.blocked_url == 1);
    sb_url_result_free(ur);

    char id[64];
    size_t len = 0;
    CHECK_STATUS(sb_broker_app_id(b, id, sizeof id, &len), SB_OK);
    CHECK(len == 14 && strcmp(id, "com.acme.notes") == 0);
    char small[4] = "xyz";
    CHECK_STATUS(sb_broker_app_id(b, small, sizeof small, &len), SB_ERR_TOO_LARGE);
    CHECK(len == 14 && strcmp(small, "xyz") == 0);
    CHECK_STATUS(sb_broker_destroy(b), SB_OK);
}

/* Optional callbacks left NULL and a minimal table: the library must not call through NULL. */
static void minimal_ready(void *u) { (void)u; }
static void minimal_auth(void *u, int32_t st, const char *m, sb_acknowledgment *ack) {
    (void)u; (void)st; (void)m;
    if (strcmp(m, "answer unsupported") == 0) ack->state = SB_POLICY_STATE_UNSUPPORTED;
    if (strcmp(m, "answer 9") == 0) ack->state = 9;
}

/* The acknowledgment of `kind` in `o`, or -1. */
static int32_t ack_state(const sb_update_outcome *o, int32_t kind) {
    for (uint32_t i = 0; i < o->acknowledgment_count; i++) {
        if (o->acknowledgments[i].kind == kind) return o->acknowledgments[i].state;
    }
    return -1;
}

static void test_callbacks_table(void) {
    sb_broker *b = NULL;
    CHECK_STATUS(sb_broker_create_embedded("com.acme.min", &b), SB_OK);
    sb_callbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.struct_size = sizeof cb;
    CHECK_STATUS(sb_broker_start(b, &cb), SB_ERR_NULL_ARGUMENT); /* required ones missing */
    cb.ready = minimal_ready;
    CHECK_STATUS(sb_broker_start(b, &cb), SB_ERR_NULL_ARGUMENT);
    cb.auth_state_changed = minimal_auth;
    cb.struct_size = 8;
    CHECK_STATUS(sb_broker_start(b, &cb), SB_ERR_INVALID_ARGUMENT);
    /* A structure from an older, smaller header: only its struct_size is read (ASan checks). */
    uint32_t *small = malloc(sizeof(uint32_t));
    *small = sizeof(uint32_t);
    CHECK_STATUS(sb_broker_start(b, (const sb_callbacks *)(void *)small), SB_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(sb_broker_apply(b, (const sb_policy_update *)(void *)small, NULL), SB_ERR_INVALID_ARGUMENT);
    free(small);
    cb.struct_size = sizeof cb;
    CHECK_STATUS(sb_broker_start(b, &cb), SB_OK);
    CHECK_STATUS(sb_broker_start(b, &cb), SB_ERR_ALREADY_STARTED);
    sb_policy_update u = keep_all();
    u.auth = SB_AUTH_AUTHORIZED;
    u.pasteboard = SB_PASTEBOARD_UNAUTHORIZED;
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_OK);
    u = keep_all();
    u.pasteboard = SB_PASTEBOARD_AUTHORIZED; /* acknowledged as unsupported: no callback set */
    u.open_in = SB_OPEN_IN_AUTHORIZED;
    u.print = SB_PRINT_AUTHORIZED;
    u.log_level = SB_LOG_DEBUG;
    u.auth_message = "welcome";
    sb_config_entry cfg[] = {{"server", "mdm.example"}, {"token", "s3cret"}};
    u.replace_config = 1;
    u.config = cfg;
    u.config_count = 2;
    sb_update_outcome o;
    memset(&o, 0xff, sizeof o);
    CHECK_STATUS(sb_broker_apply(b, &u, &o), SB_OK);
    /* The optional callbacks left NULL are acknowledged unsupported, as the Swift defaults do;
     * the required auth callback's answer (preset: applied) is reported as given. */
    CHECK(o.wiped == 0 && o.acknowledgment_count == 5);
    CHECK(ack_state(&o, SB_ACK_AUTH) == SB_POLICY_STATE_APPLIED);
    CHECK(ack_state(&o, SB_ACK_CONFIG) == SB_POLICY_STATE_UNSUPPORTED);
    CHECK(ack_state(&o, SB_ACK_OPEN_IN) == SB_POLICY_STATE_UNSUPPORTED);
    CHECK(ack_state(&o, SB_ACK_PASTEBOARD) == SB_POLICY_STATE_UNSUPPORTED);
    CHECK(ack_state(&o, SB_ACK_PRINT) == SB_POLICY_STATE_UNSUPPORTED);
    CHECK(ack_state(&o, SB_ACK_SECURE_FILE_IO) == -1); /* unchanged: not announced */
    /* An authorization change may not be answered unsupported: reported as an error. */
    u = keep_all();
    u.auth_message = "answer unsupported";
    CHECK_STATUS(sb_broker_apply(b, &u, &o), SB_OK);
    CHECK(o.acknowledgment_count == 1 && ack_state(&o, SB_ACK_AUTH) == SB_POLICY_STATE_ERROR);
    u.auth_message = "answer 9"; /* an unknown state is reported as an error */
    CHECK_STATUS(sb_broker_apply(b, &u, &o), SB_OK);
    CHECK(o.acknowledgment_count == 1 && ack_state(&o, SB_ACK_AUTH) == SB_POLICY_STATE_ERROR);
    u.auth_message = "welcome";
    CHECK_STATUS(sb_broker_apply(b, &u, &o), SB_OK);
    sb_copy_result r;
    CHECK_STATUS(sb_copy(b, SB_TYPE_TEXT, (const uint8_t *)"x", 1, &r), SB_OK);
    sb_policy *p = NULL;
    CHECK_STATUS(sb_policy_get(b, &p), SB_OK);
    CHECK(p != NULL && p->config_count == 2 && strcmp(p->config[1].key, "token") == 0 &&
          strcmp(p->config[1].value, "s3cret") == 0 && strcmp(p->auth_message, "welcome") == 0 &&
          p->log_level == SB_LOG_DEBUG && p->open_in_whitelist == NULL);
    sb_policy_free(p);
    CHECK_STATUS(sb_broker_destroy(b), SB_OK);
}

static void test_bad_input(void) {
    sb_broker *const sentinel = (sb_broker *)0x5b;
    sb_broker *out = sentinel;
    CHECK(strcmp(sb_status_name(SB_ERR_TOO_LARGE), "SB_ERR_TOO_LARGE") == 0);
    CHECK(strcmp(sb_status_name(999), "SB_UNKNOWN") == 0);
    CHECK(strcmp(sb_rule_name(SB_RULE_DRAG_AND_DROP_NONE), "dragAndDropNone") == 0);
    CHECK(strcmp(sb_rule_name(SB_RULE_NOT_IN_WHITELIST), "notInWhitelist") == 0);
    CHECK(strcmp(sb_rule_name(-1), "unknown") == 0);
    CHECK(strcmp(sb_copy_rule_name(SB_COPY_RULE_NO_KEYS), "noKeys") == 0);
    CHECK((sb_version() >> 16) == SB_VERSION_MAJOR);

    CHECK_STATUS(sb_broker_create_embedded(NULL, &out), SB_ERR_NULL_ARGUMENT);
    CHECK(out == sentinel);
    CHECK(strstr(sb_last_error_message(), "app_id") != NULL);
    CHECK_STATUS(sb_broker_create_embedded("com.acme.\xff\xfe", &out), SB_ERR_INVALID_UTF8);
    CHECK(out == sentinel);
    CHECK_STATUS(sb_broker_create_embedded("\xc0\xaf", &out), SB_ERR_INVALID_UTF8); /* overlong '/' */
    CHECK_STATUS(sb_broker_create_embedded("", &out), SB_ERR_INVALID_ARGUMENT);
    CHECK(out == sentinel);
    CHECK_STATUS(sb_broker_create_embedded("com.acme.notes", NULL), SB_ERR_NULL_ARGUMENT);

    /* NULL handles. */
    sb_decision d = {7, 7, 7};
    CHECK_STATUS(sb_decide_open_in(NULL, "a", 0, &d), SB_ERR_NULL_ARGUMENT);
    CHECK(d.allowed == 7 && d.rule == 7 && d.generation == 7);
    CHECK_STATUS(sb_broker_start(NULL, NULL), SB_ERR_NULL_ARGUMENT);
    CHECK_STATUS(sb_broker_apply(NULL, NULL, NULL), SB_ERR_NULL_ARGUMENT);
    CHECK_STATUS(sb_print(NULL, &d), SB_ERR_NULL_ARGUMENT);
    CHECK_STATUS(sb_compose_mail(NULL, &d), SB_ERR_NULL_ARGUMENT);
    CHECK_STATUS(sb_drag_and_drop(NULL, "a", &d), SB_ERR_NULL_ARGUMENT);
    CHECK_STATUS(sb_copy(NULL, SB_TYPE_TEXT, (const uint8_t *)"a", 1, NULL), SB_ERR_NULL_ARGUMENT);
    CHECK_STATUS(sb_paste(NULL, NULL), SB_ERR_NULL_ARGUMENT);
    CHECK_STATUS(sb_policy_get(NULL, NULL), SB_ERR_NULL_ARGUMENT);
    CHECK_STATUS(sb_broker_destroy(NULL), SB_OK);
    CHECK_STATUS(sb_broker_app_id(NULL, NULL, 0, NULL), SB_ERR_NULL_ARGUMENT);
    sb_policy_free(NULL);
    sb_item_free(NULL);
    sb_transfer_result_free(NULL);
    sb_url_result_free(NULL);

    seen s;
    sb_broker *b = ready_broker(&s);
    if (b == NULL) return;
    CHECK(paste_equals(b, SB_TYPE_TEXT, "x") == 0); /* empty pasteboard */
    const char keep[] = "keep me";
    CHECK_STATUS(sb_copy(b, SB_TYPE_TEXT, (const uint8_t *)keep, sizeof keep - 1, NULL), SB_OK);

    /* NULL buffers and out-parameters: nothing written. */
    CHECK_STATUS(sb_decide_open_in(b, NULL, 0, &d), SB_ERR_NULL_ARGUMENT);
    CHECK_STATUS(sb_decide_open_in(b, "a", 0, NULL), SB_ERR_NULL_ARGUMENT);
    CHECK_STATUS(sb_decide_open_in(b, "org.\xff", 0, &d), SB_ERR_INVALID_UTF8);
    CHECK_STATUS(sb_decide_open_in(b, "a", 3, &d), SB_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(sb_decide_open_in(b, "a", -1, &d), SB_ERR_INVALID_ARGUMENT);
    CHECK(d.allowed == 7 && d.rule == 7);
    CHECK_STATUS(sb_copy(b, SB_TYPE_TEXT, NULL, 5, NULL), SB_ERR_NULL_ARGUMENT);
    CHECK_STATUS(sb_copy(b, NULL, (const uint8_t *)"a", 1, NULL), SB_ERR_NULL_ARGUMENT);
    CHECK_STATUS(sb_copy(b, "", (const uint8_t *)"a", 1, NULL), SB_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(sb_copy(b, "text/\xff", (const uint8_t *)"a", 1, NULL), SB_ERR_INVALID_UTF8);
    char long_type[300];
    memset(long_type, 'a', sizeof long_type - 1);
    long_type[sizeof long_type - 1] = 0;
    CHECK_STATUS(sb_copy(b, long_type, (const uint8_t *)"a", 1, NULL), SB_ERR_INVALID_ARGUMENT);

    /* Huge sizes: refused before the bytes are read (the buffer is only one byte). */
    sb_copy_result cr = {9, 9, 9, 9};
    const uint8_t one = 'a';
    CHECK_STATUS(sb_copy(b, SB_TYPE_TEXT, &one, SIZE_MAX, &cr), SB_ERR_TOO_LARGE);
    CHECK_STATUS(sb_copy(b, SB_TYPE_TEXT, &one, SB_MAX_ITEM_SIZE + 1, &cr), SB_ERR_TOO_LARGE);
    CHECK_STATUS(sb_copy(b, SB_TYPE_TEXT, &one, (size_t)INT64_MAX + 1, &cr), SB_ERR_TOO_LARGE);
    CHECK(cr.action == 9 && cr.rule == 9);
    sb_item_view huge[2] = {{"a", &one, SIZE_MAX / 2 + 1}, {"b", &one, SIZE_MAX / 2 + 1}};
    CHECK_STATUS(sb_copy_representations(b, huge, 2, &cr), SB_ERR_TOO_LARGE);
    sb_item_view dup[2] = {{"a", &one, 1}, {"a", &one, 1}};
    CHECK_STATUS(sb_copy_representations(b, dup, 2, &cr), SB_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(sb_copy_representations(b, dup, 0, &cr), SB_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(sb_copy_representations(b, dup, SIZE_MAX, &cr), SB_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(sb_copy_representations(b, NULL, 1, &cr), SB_ERR_NULL_ARGUMENT);
    CHECK(cr.action == 9);
    CHECK(paste_equals(b, SB_TYPE_TEXT, "keep me")); /* nothing was written by any of them */

    sb_transfer_result *tr = (sb_transfer_result *)0x7;
    CHECK_STATUS(sb_open_in(b, "a.pdf", &one, SIZE_MAX, "t", 0, &tr), SB_ERR_TOO_LARGE);
    CHECK_STATUS(sb_open_in(b, "a.pdf", NULL, 3, "t", 0, &tr), SB_ERR_NULL_ARGUMENT);
    CHECK_STATUS(sb_open_in(b, "dir/a.pdf", &one, 1, "t", 0, &tr), SB_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(sb_open_in(b, "..", &one, 1, "t", 0, &tr), SB_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(sb_open_in(b, "a\xff.pdf", &one, 1, "t", 0, &tr), SB_ERR_INVALID_UTF8);
    CHECK_STATUS(sb_open_in(b, "a.pdf", &one, 1, "t", 0, NULL), SB_ERR_NULL_ARGUMENT);
    CHECK(tr == (sb_transfer_result *)0x7);

    sb_url_result *ur = (sb_url_result *)0x7;
    CHECK_STATUS(sb_open_url(b, "no scheme here", &ur), SB_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(sb_open_url(b, "https://example.com", &ur), SB_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(sb_open_url(b, NULL, &ur), SB_ERR_NULL_ARGUMENT);
    CHECK(ur == (sb_url_result *)0x7);

    sb_policy_update u = keep_all();
    u.auth = 7;
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_ERR_INVALID_ARGUMENT);
    u = keep_all();
    u.open_in = SB_OPEN_IN_WHITELIST;
    u.open_in_whitelist_count = 5000;
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_ERR_TOO_LARGE);
    u.open_in_whitelist_count = SIZE_MAX; /* a huge count is refused before anything is read */
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_ERR_TOO_LARGE);
    u.open_in_whitelist_count = 1;
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_ERR_NULL_ARGUMENT);
    const char *bad_wl[] = {"ok", "\xff"};
    u.open_in_whitelist = bad_wl;
    u.open_in_whitelist_count = 2;
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_ERR_INVALID_UTF8);
    u = keep_all();
    u.struct_size = 4;
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_ERR_INVALID_ARGUMENT);
    EXPECT_OPEN_IN(b, "anything", 0, 1, SB_RULE_OPEN_IN_AUTHORIZED); /* nothing changed */
    CHECK_STATUS(sb_broker_set_secure_services(b, 5), SB_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(sb_broker_update_device(b, NULL, 0, 0, NULL, 0), SB_ERR_NULL_ARGUMENT);
    CHECK_STATUS(sb_broker_update_device(b, "a", 0, 0, NULL, 2), SB_ERR_NULL_ARGUMENT);
    const char *one_scheme[] = {"x"};
    CHECK_STATUS(sb_broker_update_device(b, "a", 0, 0, one_scheme, SIZE_MAX), SB_ERR_TOO_LARGE);
    CHECK_STATUS(sb_broker_update_device(b, "a", 0, 0, one_scheme, (size_t)INT64_MAX + 2), SB_ERR_TOO_LARGE);
    sb_policy_update cu = keep_all();
    sb_config_entry one_entry[] = {{"k", "v"}};
    cu.replace_config = 1;
    cu.config = one_entry;
    cu.config_count = SIZE_MAX;
    CHECK_STATUS(sb_broker_apply(b, &cu, NULL), SB_ERR_TOO_LARGE);
    cu.config_count = 1;
    one_entry[0].value = NULL;
    CHECK_STATUS(sb_broker_apply(b, &cu, NULL), SB_ERR_NULL_ARGUMENT);

    sb_policy *p = (sb_policy *)0x7;
    CHECK_STATUS(sb_policy_get(b, NULL), SB_ERR_NULL_ARGUMENT);
    CHECK(p == (sb_policy *)0x7);
    CHECK_STATUS(sb_broker_destroy(b), SB_OK);

    /* Not started, not ready. */
    b = NULL;
    CHECK_STATUS(sb_broker_create_embedded("com.acme.fresh", &b), SB_OK);
    u = keep_all();
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_ERR_NOT_STARTED);
    CHECK_STATUS(sb_broker_retire(b, NULL), SB_ERR_NOT_STARTED);
    CHECK_STATUS(sb_policy_get(b, &p), SB_ERR_NOT_READY);
    CHECK(strstr(sb_last_error_message(), "wait for the ready callback") != NULL);
    CHECK_STATUS(sb_broker_set_identity(b, SB_IDENTITY_UNMANAGED), SB_ERR_NOT_STARTED);
    CHECK(strstr(sb_last_error_message(), "call sb_broker_start first") != NULL);
    CHECK(p == (sb_policy *)0x7);
    CHECK_STATUS(sb_broker_destroy(b), SB_OK);
}

/* Several threads on one broker: decisions (each thread alternating targets, so the per-thread
 * target cache misses and hits), copies and pastes, and per-thread error messages. */
typedef struct worker {
    sb_broker *broker;
    int index;
    int wrong;       /* answers that differ from the table */
    int message_ok;  /* this thread's last error message is its own */
} worker;

static void *work(void *arg) {
    worker *w = arg;
    const char *targets[] = {"org.example.sheets", "org.example.chat", "com.apple.mobilemail"};
    const int allowed[] = {1, 0, 0};
    for (int i = 0; i < 20000; i++) {
        int t = (i / (1 + w->index)) % 3;
        sb_decision d;
        if (sb_decide_open_in(w->broker, targets[t], SB_CHANNEL_DOCUMENT_INTERACTION, &d) != SB_OK || d.allowed != allowed[t])
            w->wrong++;
        if (i % 500 == 0) {
            char text[32];
            int n = snprintf(text, sizeof text, "thread %d item %d", w->index, i);
            sb_copy_result r;
            if (sb_copy(w->broker, SB_TYPE_TEXT, (const uint8_t *)text, (size_t)n, &r) != SB_OK || r.action != SB_COPY_WRITE_SEALED)
                w->wrong++;
            sb_item *item = NULL;
            if (sb_paste(w->broker, &item) != SB_OK || item == NULL || item->length == 0) w->wrong++;
            sb_item_free(item);
        }
    }
    /* Each thread fails differently and reads its own message. */
    sb_decision d;
    if (w->index % 2 == 0) {
        sb_decide_open_in(w->broker, NULL, 0, &d);
        w->message_ok = strstr(sb_last_error_message(), "target is NULL") != NULL;
    } else {
        sb_decide_open_in(w->broker, "bad\xff", 0, &d);
        w->message_ok = strstr(sb_last_error_message(), "not valid UTF-8") != NULL;
    }
    return NULL;
}

static void test_threads(void) {
    seen s;
    sb_broker *b = ready_broker(&s);
    if (b == NULL) return;
    const char *wl[] = {"org.example.sheets"};
    sb_policy_update u = keep_all();
    u.open_in = SB_OPEN_IN_WHITELIST;
    u.open_in_whitelist = wl;
    u.open_in_whitelist_count = 1;
    u.pasteboard = SB_PASTEBOARD_SECURE_COPY;
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_OK);
    enum { N = 4 };
    pthread_t threads[N];
    worker workers[N];
    for (int i = 0; i < N; i++) {
        workers[i] = (worker){b, i, 0, 0};
        CHECK(pthread_create(&threads[i], NULL, work, &workers[i]) == 0);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(threads[i], NULL);
        CHECK(workers[i].wrong == 0);
        CHECK(workers[i].message_ok == 1);
    }
    /* The main thread's cached target is not another thread's: a new policy is seen at once. */
    EXPECT_OPEN_IN(b, "org.example.sheets", 0, 1, SB_RULE_IN_WHITELIST);
    u = keep_all();
    u.open_in = SB_OPEN_IN_UNAUTHORIZED;
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_OK);
    EXPECT_OPEN_IN(b, "org.example.sheets", 0, 0, SB_RULE_OPEN_IN_UNAUTHORIZED);
    /* The cached target does not bypass the checks of the other arguments. */
    sb_decision d = {7, 7, 7};
    CHECK_STATUS(sb_decide_open_in(b, "org.example.sheets", 3, &d), SB_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(sb_decide_open_in(b, "org.example.sheets", 0, NULL), SB_ERR_NULL_ARGUMENT);
    CHECK_STATUS(sb_decide_open_in(NULL, "org.example.sheets", 0, &d), SB_ERR_NULL_ARGUMENT);
    CHECK(d.allowed == 7 && d.rule == 7);
    CHECK_STATUS(sb_broker_destroy(b), SB_OK);
}

/* Web views, identity and erasers. */
typedef struct erasers_seen {
    int calls;
    sb_broker *broker;
    sb_status apply_inside;
} erasers_seen;

static int32_t count_eraser(void *user_data) {
    erasers_seen *e = user_data;
    e->calls++;
    sb_policy_update u = keep_all();
    e->apply_inside = sb_broker_apply(e->broker, &u, NULL);
    return 0;
}

static int32_t failing_eraser(void *user_data) {
    ((erasers_seen *)user_data)->calls++;
    return 5;
}

static void test_webviews_identity_erasers(void) {
    erasers_seen e = {0, NULL, SB_OK};
    seen s;
    memset(&s, 0, sizeof s);
    sb_broker *b = NULL;
    CHECK_STATUS(sb_broker_create_embedded("com.acme.browser", &b), SB_OK);
    e.broker = b;
    s.broker = b;
    CHECK_STATUS(sb_broker_register_eraser(b, "app.cache", count_eraser, &e), SB_OK);
    CHECK_STATUS(sb_broker_register_eraser(b, "app.tokens", failing_eraser, &e), SB_OK);
    CHECK_STATUS(sb_broker_register_eraser(b, "", count_eraser, &e), SB_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(sb_broker_register_eraser(b, "x", NULL, &e), SB_ERR_NULL_ARGUMENT);
    sb_callbacks cb = callbacks_for(&s);
    CHECK_STATUS(sb_broker_start(b, &cb), SB_OK);
    sb_policy_update u = keep_all();
    u.auth = SB_AUTH_AUTHORIZED;
    u.pasteboard = SB_PASTEBOARD_UNAUTHORIZED;
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_OK);

    CHECK_STATUS(sb_webview_declare(b, "tabs", NULL, SB_WEBVIEW_CURRENT_IDENTITY_BLOCK_UPLOAD), SB_OK);
    CHECK_STATUS(sb_webview_declare(b, "tab1", "tabs", SB_KEEP), SB_OK);
    CHECK_STATUS(sb_webview_declare(b, "personal", NULL, SB_WEBVIEW_UNMANAGED), SB_OK);
    CHECK_STATUS(sb_webview_declare(b, "tabs", "tab1", SB_KEEP), SB_ERR_INVALID_ARGUMENT); /* a cycle */
    CHECK_STATUS(sb_webview_declare(b, "x", NULL, 9), SB_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(sb_webview_declare(b, "\xff", NULL, SB_KEEP), SB_ERR_INVALID_UTF8);
    sb_webview_resolution r = {7, 7, 7};
    CHECK_STATUS(sb_webview_resolve(b, "nowhere", &r), SB_ERR_INVALID_ARGUMENT);
    CHECK(r.identity == 7);
    CHECK_STATUS(sb_webview_resolve(b, "tab1", &r), SB_OK);
    CHECK(r.identity == SB_IDENTITY_MANAGED && r.blocks_upload_and_paste == 1 && r.policy == SB_WEBVIEW_CURRENT_IDENTITY_BLOCK_UPLOAD);
    CHECK_STATUS(sb_webview_resolve(b, "personal", &r), SB_OK);
    CHECK(r.identity == SB_IDENTITY_UNMANAGED && r.blocks_upload_and_paste == 0);

    /* Unmanaged content is not restricted; managed content follows the pasteboard policy. */
    sb_copy_result c;
    CHECK_STATUS(sb_copy_from_webview(b, "personal", SB_TYPE_TEXT, (const uint8_t *)"p", 1, &c), SB_OK);
    CHECK(c.action == SB_COPY_WRITE_CLEAR && c.rule == SB_COPY_RULE_UNMANAGED_CONTENT);
    CHECK_STATUS(sb_copy_from_webview(b, "tab1", SB_TYPE_TEXT, (const uint8_t *)"m", 1, &c), SB_OK);
    CHECK(c.action == SB_COPY_BLOCKED && c.rule == SB_COPY_RULE_PASTEBOARD_UNAUTHORIZED);
    CHECK_STATUS(sb_copy_from_webview(b, "nowhere", SB_TYPE_TEXT, (const uint8_t *)"m", 1, &c), SB_ERR_INVALID_ARGUMENT);
    CHECK(paste_equals(b, SB_TYPE_TEXT, "p"));
    CHECK_STATUS(sb_broker_set_identity(b, SB_IDENTITY_UNMANAGED), SB_OK);
    CHECK_STATUS(sb_copy(b, SB_TYPE_TEXT, (const uint8_t *)"u", 1, &c), SB_OK);
    CHECK(c.action == SB_COPY_WRITE_CLEAR && c.rule == SB_COPY_RULE_UNMANAGED_CONTENT);
    CHECK_STATUS(sb_broker_set_identity(b, SB_IDENTITY_MANAGED), SB_OK);
    CHECK_STATUS(sb_copy(b, SB_TYPE_TEXT, (const uint8_t *)"m", 1, &c), SB_OK);
    CHECK(c.action == SB_COPY_BLOCKED);
    CHECK_STATUS(sb_broker_set_identity(b, 4), SB_ERR_INVALID_ARGUMENT);

    /* A retire runs the app's erasers (a failing one does not stop the retire); inside an eraser
     * the calls that need the update lock are refused. */
    sb_update_outcome o;
    u = keep_all();
    u.auth = SB_AUTH_RETIRED;
    CHECK_STATUS(sb_broker_apply(b, &u, &o), SB_OK);
    CHECK(o.wiped == 1);
    CHECK(e.calls == 2);
    CHECK(e.apply_inside == SB_ERR_CALLBACK_REENTRY);
    CHECK(s.last_auth == SB_AUTH_RETIRED);
    CHECK_STATUS(sb_broker_destroy(b), SB_OK);
}

/* Attached to a running sharebrokerd that registered this executable as com.acme.tests (the
 * device document scripts/capi-check.sh writes): run with --attached. */
static void test_attached(void) {
    sb_broker *b = (sb_broker *)0x5b;
    seen s;
    memset(&s, 0, sizeof s);
    sb_callbacks cb = callbacks_for(&s);
    CHECK_STATUS(sb_broker_attach("/nonexistent/agent.sock", &cb, &b), SB_ERR_AGENT);
    CHECK(b == (sb_broker *)0x5b && strlen(sb_last_error_message()) > 0);
    CHECK_STATUS(sb_broker_attach(NULL, NULL, &b), SB_ERR_NULL_ARGUMENT);
    CHECK_STATUS(sb_broker_attach("\xff", &cb, &b), SB_ERR_INVALID_UTF8);
    CHECK(b == (sb_broker *)0x5b);

    b = NULL;
    CHECK_STATUS(sb_broker_attach(NULL, &cb, &b), SB_OK);
    if (b == NULL) return;
    s.broker = b;
    CHECK(s.ready == 1); /* before attach returned */
    char id[64];
    CHECK_STATUS(sb_broker_app_id(b, id, sizeof id, NULL), SB_OK);
    CHECK(strcmp(id, "com.acme.tests") == 0);
    sb_policy *p = NULL;
    CHECK_STATUS(sb_policy_get(b, &p), SB_OK);
    CHECK(p != NULL && p->auth_state == SB_AUTH_AUTHORIZED && p->pasteboard_policy == SB_PASTEBOARD_SECURE_COPY &&
          p->open_in_policy == SB_OPEN_IN_WHITELIST && p->secure_services == SB_SECURE_SERVICES_AVAILABLE);
    sb_policy_free(p);
    EXPECT_OPEN_IN(b, "com.acme.viewer", SB_CHANNEL_DOCUMENT_INTERACTION, 1, SB_RULE_IN_WHITELIST);
    EXPECT_OPEN_IN(b, "org.example.chat", SB_CHANNEL_DOCUMENT_INTERACTION, 0, SB_RULE_NOT_IN_WHITELIST);
    EXPECT_COPY(b, SB_COPY_WRITE_SEALED, SB_COPY_RULE_SECURE_COPY);
    CHECK(paste_equals(b, SB_TYPE_TEXT, "secret plan"));
    /* The agent plays the server: the embedded-only calls say so. */
    sb_policy_update u = keep_all();
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_ERR_UNSUPPORTED);
    CHECK_STATUS(sb_broker_retire(b, NULL), SB_ERR_UNSUPPORTED);
    CHECK_STATUS(sb_broker_update_device(b, "x", 0, 0, NULL, 0), SB_ERR_UNSUPPORTED);
    CHECK_STATUS(sb_broker_set_secure_services(b, 0), SB_ERR_UNSUPPORTED);
    CHECK_STATUS(sb_broker_start(b, &cb), SB_ERR_ALREADY_STARTED);
    CHECK_STATUS(sb_broker_destroy(b), SB_OK);
}

/* Issue 31: SB_POLICY_UPDATE_INIT keeps every value (a zeroed update is the most restrictive
 * policy, which the header warns about); the document limit is 2 GiB - 1 bytes. */
static void test_update_initializer_and_limits(void) {
    seen s;
    sb_broker *b = ready_broker(&s);
    if (b == NULL) return;
    sb_policy *before = NULL, *after = NULL;
    CHECK_STATUS(sb_policy_get(b, &before), SB_OK);
    sb_policy_update keep = SB_POLICY_UPDATE_INIT;
    CHECK(keep.struct_size == sizeof(sb_policy_update));
    CHECK_STATUS(sb_broker_apply(b, &keep, NULL), SB_OK);
    CHECK_STATUS(sb_policy_get(b, &after), SB_OK);
    if (before != NULL && after != NULL) {
        CHECK(after->auth_state == SB_AUTH_AUTHORIZED && after->auth_state == before->auth_state);
        CHECK(after->open_in_policy == before->open_in_policy && after->pasteboard_policy == before->pasteboard_policy);
        CHECK(after->print_policy == before->print_policy && after->drag_and_drop_policy == before->drag_and_drop_policy);
        CHECK(after->secure_file_io_policy == before->secure_file_io_policy && after->log_level == before->log_level);
        CHECK(after->managed_browser_required == before->managed_browser_required);
    }
    sb_policy_free(before);
    sb_policy_free(after);
    /* The hazard the header warns of: zeroed, every member is a value, the most restrictive. */
    sb_policy_update zeroed;
    memset(&zeroed, 0, sizeof zeroed);
    zeroed.struct_size = sizeof zeroed;
    CHECK_STATUS(sb_broker_apply(b, &zeroed, NULL), SB_OK);
    after = NULL;
    CHECK_STATUS(sb_policy_get(b, &after), SB_OK);
    CHECK(after != NULL && after->auth_state == SB_AUTH_UNAUTHORIZED && after->pasteboard_policy == SB_PASTEBOARD_UNAUTHORIZED);
    sb_policy_free(after);
    sb_broker_destroy(b);

    /* Native mail: the policy names the ids to whitelist, and mailto: is headed to the first. */
    b = ready_broker(&s);
    if (b == NULL) return;
    sb_policy_update wl = SB_POLICY_UPDATE_INIT;
    const char *sheets[] = {"org.example.sheets"};
    wl.open_in = SB_OPEN_IN_WHITELIST;
    wl.open_in_whitelist = sheets;
    wl.open_in_whitelist_count = 1;
    CHECK_STATUS(sb_broker_apply(b, &wl, NULL), SB_OK);
    sb_policy *p = NULL;
    CHECK_STATUS(sb_policy_get(b, &p), SB_OK);
    CHECK(p != NULL && p->native_mail_id_count == 2 && p->native_mail_ids != NULL);
    if (p != NULL && p->native_mail_id_count == 2 && p->native_mail_ids != NULL) {
        CHECK(strcmp(p->native_mail_ids[0], "com.apple.mobilemail") == 0);
        CHECK(strcmp(p->native_mail_ids[1], "com.apple.UIKit.activity.Mail") == 0);
        sb_url_result *ur = NULL;
        CHECK_STATUS(sb_open_url(b, "mailto:cfo@example.org", &ur), SB_OK);
        CHECK(ur != NULL && ur->outcome == SB_URL_BLOCKED && ur->intended_handler != NULL
              && strcmp(ur->intended_handler, p->native_mail_ids[0]) == 0);
        sb_url_result_free(ur);
        /* Whitelisting every listed id allows it. */
        const char *all[] = {p->native_mail_ids[0], p->native_mail_ids[1]};
        wl.open_in_whitelist = all;
        wl.open_in_whitelist_count = 2;
        CHECK_STATUS(sb_broker_apply(b, &wl, NULL), SB_OK);
        ur = NULL;
        CHECK_STATUS(sb_open_url(b, "mailto:cfo@example.org", &ur), SB_OK);
        CHECK(ur != NULL && ur->outcome == SB_URL_OPENED);
        sb_url_result_free(ur);
    }
    sb_policy_free(p);

    /* Exactly 2 GiB is over the limit (checked before a byte is read). */
    uint8_t one = 1;
    sb_transfer_result *tr = NULL;
    CHECK_STATUS(sb_open_in(b, "a.pdf", &one, (size_t)1 << 31, "t", SB_CHANNEL_DOCUMENT_INTERACTION, &tr), SB_ERR_TOO_LARGE);
    CHECK(tr == NULL);
    CHECK(strstr(sb_last_error_message(), "2147483647") != NULL);
    sb_broker_destroy(b);
}

/* ---- Warnings: the handler answers on another thread, once ------------------------------ */

typedef struct warn_state {
    pthread_mutex_t lock;
    sb_warn_question *question; /* the open question, taken by the answering thread */
    int asked;
    int done;                   /* completions seen */
    sb_status status;
    int32_t action;
    int32_t outcome;
    int32_t allowed;
} warn_state;

static void on_warn(void *user_data, sb_warn_question *question) {
    warn_state *w = user_data;
    pthread_mutex_lock(&w->lock);
    w->question = question;
    w->asked++;
    pthread_mutex_unlock(&w->lock);
}

static void on_copy_done(void *user_data, sb_status status, int32_t action, int32_t outcome) {
    warn_state *w = user_data;
    pthread_mutex_lock(&w->lock);
    w->done++;
    w->status = status;
    w->action = action;
    w->outcome = outcome;
    pthread_mutex_unlock(&w->lock);
}

static void on_decision_done(void *user_data, int32_t allowed, int32_t outcome) {
    warn_state *w = user_data;
    pthread_mutex_lock(&w->lock);
    w->done++;
    w->allowed = allowed;
    w->outcome = outcome;
    pthread_mutex_unlock(&w->lock);
}

typedef struct answer_job {
    warn_state *w;
    int32_t proceed;
    const char *code;
    const char *text;
    sb_status status;
    int32_t accepted;
} answer_job;

static void *answer_thread(void *arg) {
    answer_job *job = arg;
    pthread_mutex_lock(&job->w->lock);
    sb_warn_question *q = job->w->question;
    job->w->question = NULL;
    pthread_mutex_unlock(&job->w->lock);
    job->status = sb_warn_answer(q, job->proceed, job->code, job->text, &job->accepted);
    return NULL;
}

/* Answers the open question on a new thread and waits for it. */
static answer_job answer_elsewhere(warn_state *w, int32_t proceed, const char *code, const char *text) {
    answer_job job = {w, proceed, code, text, -1, -1};
    pthread_t t;
    pthread_create(&t, NULL, answer_thread, &job);
    pthread_join(t, NULL);
    return job;
}

static void reset(warn_state *w) {
    pthread_mutex_lock(&w->lock);
    w->asked = w->done = 0;
    w->status = -1;
    w->action = w->outcome = w->allowed = -9;
    pthread_mutex_unlock(&w->lock);
}

static void test_warnings(void) {
    seen s;
    memset(&s, 0, sizeof s);
    sb_broker *b = ready_broker(&s);
    if (b == NULL) return;
    sb_policy_update u = keep_all();
    u.pasteboard = SB_PASTEBOARD_UNAUTHORIZED;
    u.print = SB_PRINT_UNAUTHORIZED;
    CHECK_STATUS(sb_broker_apply(b, &u, NULL), SB_OK);

    const char *codes[] = {"customer", "internal"};
    const char *labels[] = {"A customer asked", "Internal use"};
    sb_warn_settings ws;
    memset(&ws, 0, sizeof ws);
    ws.struct_size = sizeof ws;
    ws.reason_required = 1;
    ws.reason_codes = codes;
    ws.reason_labels = labels;
    ws.reason_count = 2;
    ws.free_text = 1;
    ws.answer_seconds = 30;
    CHECK_STATUS(sb_broker_set_warn(b, SB_WARN_EXIT_COPY, &ws), SB_OK);
    /* Bad settings change nothing. */
    sb_warn_settings bad = ws;
    bad.reason_count = 0;
    bad.free_text = 0;
    CHECK_STATUS(sb_broker_set_warn(b, SB_WARN_EXIT_COPY, &bad), SB_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(sb_broker_set_warn(b, 9, &ws), SB_ERR_INVALID_ARGUMENT);

    warn_state w;
    memset(&w, 0, sizeof w);
    pthread_mutex_init(&w.lock, NULL);
    const char *text = "the merger plan";

    /* No handler: blocked at once. */
    reset(&w);
    CHECK_STATUS(sb_copy_asking(b, SB_TYPE_TEXT, (const uint8_t *)text, strlen(text), on_copy_done, &w), SB_OK);
    CHECK(w.done == 1 && w.action == SB_COPY_BLOCKED && w.outcome == SB_WARN_NO_HANDLER);

    CHECK_STATUS(sb_broker_set_warn_handler(b, on_warn, &w), SB_OK);

    /* Cancelled on another thread. The copy did not block this thread: done comes later. */
    reset(&w);
    CHECK_STATUS(sb_copy_asking(b, SB_TYPE_TEXT, (const uint8_t *)text, strlen(text), on_copy_done, &w), SB_OK);
    CHECK(w.asked == 1 && w.done == 0 && w.question != NULL);
    if (w.question != NULL) {
        CHECK(sb_warn_question_exit(w.question) == SB_WARN_EXIT_COPY);
        CHECK(sb_warn_question_target(w.question) == NULL);
        CHECK(sb_warn_question_reason_required(w.question) == 1 && sb_warn_question_free_text(w.question) == 1);
        CHECK(sb_warn_question_timeout_ms(w.question) == 30000);
        CHECK(sb_warn_question_reason_count(w.question) == 2);
        CHECK(strcmp(sb_warn_question_reason_code(w.question, 1), "internal") == 0);
        CHECK(strcmp(sb_warn_question_reason_label(w.question, 0), "A customer asked") == 0);
        CHECK(sb_warn_question_reason_code(w.question, 2) == NULL);
        answer_job job = answer_elsewhere(&w, 0, NULL, NULL);
        CHECK(job.status == SB_OK && job.accepted == 1);
    }
    CHECK(w.done == 1 && w.action == SB_COPY_BLOCKED && w.outcome == SB_WARN_CANCELLED);
    sb_item *item = NULL;
    CHECK_STATUS(sb_paste(b, &item), SB_ERR_NO_ITEM);

    /* Proceeded with a reason on another thread: written in the clear. */
    reset(&w);
    CHECK_STATUS(sb_copy_asking(b, SB_TYPE_TEXT, (const uint8_t *)text, strlen(text), on_copy_done, &w), SB_OK);
    answer_job ok = answer_elsewhere(&w, 1, "internal", "ticket 42\n\x1b[31m");
    CHECK(ok.status == SB_OK && ok.accepted == 1);
    CHECK(w.done == 1 && w.status == SB_OK && w.action == SB_COPY_WRITE_CLEAR && w.outcome == SB_WARN_PROCEEDED);
    CHECK(paste_equals(b, SB_TYPE_TEXT, text));

    /* A reason not offered: blocked. */
    reset(&w);
    CHECK_STATUS(sb_copy_asking(b, SB_TYPE_TEXT, (const uint8_t *)"x", 1, on_copy_done, &w), SB_OK);
    answer_elsewhere(&w, 1, "because", NULL);
    CHECK(w.done == 1 && w.action == SB_COPY_BLOCKED && w.outcome == SB_WARN_INVALID_ANSWER);

    /* Invalid UTF-8 text: an error, the question still freed and the copy blocked as cancelled. */
    reset(&w);
    CHECK_STATUS(sb_copy_asking(b, SB_TYPE_TEXT, (const uint8_t *)"x", 1, on_copy_done, &w), SB_OK);
    answer_job badtext = answer_elsewhere(&w, 1, "internal", "\xff\xfe");
    CHECK(badtext.status == SB_ERR_INVALID_UTF8);
    CHECK(w.done == 1 && w.outcome == SB_WARN_CANCELLED);

    /* The timeout: 1 s, then blocked; the late answer frees the question and is ignored. */
    ws.answer_seconds = 1;
    CHECK_STATUS(sb_broker_set_warn(b, SB_WARN_EXIT_COPY, &ws), SB_OK);
    reset(&w);
    CHECK_STATUS(sb_copy_asking(b, SB_TYPE_TEXT, (const uint8_t *)"late", 4, on_copy_done, &w), SB_OK);
    for (int i = 0; i < 300; i++) {
        pthread_mutex_lock(&w.lock);
        int finished = w.done;
        pthread_mutex_unlock(&w.lock);
        if (finished) break;
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    CHECK(w.done == 1 && w.outcome == SB_WARN_TIMED_OUT && w.action == SB_COPY_BLOCKED);
    answer_job late = answer_elsewhere(&w, 1, "internal", NULL);
    CHECK(late.status == SB_OK && late.accepted == 0);
    CHECK(w.done == 1);

    /* Print: proceeded on another thread. */
    sb_warn_settings ps;
    memset(&ps, 0, sizeof ps);
    ps.struct_size = sizeof ps;
    CHECK_STATUS(sb_broker_set_warn(b, SB_WARN_EXIT_PRINT, &ps), SB_OK);
    reset(&w);
    CHECK_STATUS(sb_print_asking(b, on_decision_done, &w), SB_OK);
    CHECK(w.asked == 1 && w.done == 0);
    answer_elsewhere(&w, 1, NULL, NULL);
    CHECK(w.done == 1 && w.allowed == 1 && w.outcome == SB_WARN_PROCEEDED);
    /* Drag and drop does not warn here: decided at once, as sb_drag_and_drop. */
    reset(&w);
    CHECK_STATUS(sb_drag_and_drop_asking(b, "org.example.sheets", on_decision_done, &w), SB_OK);
    CHECK(w.done == 1 && w.allowed == 1 && w.outcome == SB_WARN_NOT_WARNED);

    CHECK_STATUS(sb_warn_answer(NULL, 0, NULL, NULL, NULL), SB_ERR_NULL_ARGUMENT);
    CHECK_STATUS(sb_copy_asking(b, SB_TYPE_TEXT, (const uint8_t *)"x", 1, NULL, &w), SB_ERR_NULL_ARGUMENT);
    CHECK_STATUS(sb_broker_destroy(b), SB_OK);
    pthread_mutex_destroy(&w.lock);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--attached") == 0) {
        test_attached();
        printf("%d passed, %d failed\n", passed, failed);
        return failed == 0 ? 0 : 1;
    }
    test_bad_input();
    test_open_in_table();
    test_open_in_bytes();
    test_copy_table();
    test_copy_borrows_only_during_the_call();
    test_other_actions();
    test_callbacks_table();
    test_threads();
    test_webviews_identity_erasers();
    test_update_initializer_and_limits();
    test_warnings();
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
