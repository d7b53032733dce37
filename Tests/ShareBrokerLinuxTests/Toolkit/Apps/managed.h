/* The managed part of the toolkit test apps: an embedded broker with the pasteboard policy the
 * test asks for (SB_POLICY: unauthorized, authorized or securecopy), then the one call,
 * sb_broker_govern_clipboard (SB_GOVERN=0 leaves it out: the same app unmanaged). Lines on
 * standard output tell the test what happened: "copy-attempted" per copy_attempted callback. */
#ifndef TOOLKIT_TEST_MANAGED_H
#define TOOLKIT_TEST_MANAGED_H

#include <sharebroker.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void tk_ready(void *user_data) { (void)user_data; }
static void tk_auth(void *user_data, int32_t state, const char *message, sb_acknowledgment *ack) {
    (void)user_data; (void)state; (void)message; (void)ack;
}
static void tk_copy_attempted(void *user_data, int32_t policy) {
    (void)user_data;
    printf("copy-attempted %d\n", (int)policy);
    fflush(stdout);
}

/* Sets up the broker and governs the clipboard; exits 3 on any failure. */
static sb_broker *tk_manage(const char *app_id) {
    const char *policy = getenv("SB_POLICY") ? getenv("SB_POLICY") : "unauthorized";
    sb_broker *broker = NULL;
    if (sb_broker_create_embedded(app_id, &broker) != SB_OK) exit(3);
    sb_callbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.struct_size = sizeof cb;
    cb.ready = tk_ready;
    cb.auth_state_changed = tk_auth;
    cb.copy_attempted_when_unauthorized = tk_copy_attempted;
    if (sb_broker_start(broker, &cb) != SB_OK) exit(3);
    sb_policy_update u;
    memset(&u, 0, sizeof u);
    u.struct_size = sizeof u;
    u.auth = u.open_in = u.pasteboard = u.print = u.secure_file_io = u.log_level = SB_KEEP;
    u.drag_and_drop = u.managed_browser_required = SB_KEEP;
    u.auth = SB_AUTH_AUTHORIZED;
    u.pasteboard = strcmp(policy, "authorized") == 0 ? SB_PASTEBOARD_AUTHORIZED
                 : strcmp(policy, "securecopy") == 0 ? SB_PASTEBOARD_SECURE_COPY
                 : SB_PASTEBOARD_UNAUTHORIZED;
    if (sb_broker_apply(broker, &u, NULL) != SB_OK) exit(3);
    const char *govern = getenv("SB_GOVERN");
    if (govern == NULL || strcmp(govern, "0") != 0) {
        sb_status status = sb_broker_govern_clipboard(broker);
        if (status != SB_OK) {
            fprintf(stderr, "sb_broker_govern_clipboard: %d\n", (int)status);
            exit(3);
        }
    }
    return broker;
}

#endif
