/*
 * A C app on ShareBroker: attach to the running agent (or, with --embedded, use the in-memory
 * platform and play the server), copy under the policy and paste back, and Open In to an allowed
 * and a blocked target.
 *
 *   cc copy_and_open_in.c $(pkg-config --cflags --libs sharebroker) -o copy_and_open_in
 *   ./copy_and_open_in --embedded
 *   ./copy_and_open_in [--socket PATH] ALLOWED_TARGET BLOCKED_TARGET   (attached to sharebrokerd)
 */
#include <sharebroker.h>

#include <stdio.h>
#include <string.h>

static void on_ready(void *user_data) {
    (void)user_data;
    printf("ready: policies are readable\n");
}

static void on_auth(void *user_data, int32_t state, const char *message, sb_acknowledgment *ack) {
    (void)user_data;
    printf("authorization: %d (%s)\n", (int)state, message);
    ack->state = SB_POLICY_STATE_APPLIED;
}

static void on_blocked(void *user_data, int32_t policy) {
    (void)user_data;
    printf("open in blocked by policy %d: the target got a dummy file\n", (int)policy);
}

static int fail(const char *what, sb_status status) {
    fprintf(stderr, "%s failed: %s: %s\n", what, sb_status_name(status), sb_last_error_message());
    return 1;
}

int main(int argc, char **argv) {
    if ((sb_version() >> 16) != SB_VERSION_MAJOR) {
        fprintf(stderr, "libsharebroker has interface %u, this program was built for %d\n",
                (unsigned)(sb_version() >> 16), SB_VERSION_MAJOR);
        return 1;
    }
    sb_callbacks callbacks;
    memset(&callbacks, 0, sizeof callbacks);
    callbacks.struct_size = sizeof callbacks;
    callbacks.ready = on_ready;
    callbacks.auth_state_changed = on_auth;
    callbacks.open_in_attempted_when_blocked = on_blocked;

    sb_broker *broker = NULL;
    const char *allowed = "org.example.sheets", *blocked = "org.example.chat";
    sb_status status;
    if (argc > 1 && strcmp(argv[1], "--embedded") == 0) {
        if ((status = sb_broker_create_embedded("com.acme.notes", &broker)) != SB_OK) return fail("create", status);
        if ((status = sb_broker_start(broker, &callbacks)) != SB_OK) return fail("start", status);
        /* Every member "keep", then what changes (a zeroed update would be the strictest policy). */
        sb_policy_update update = SB_POLICY_UPDATE_INIT;
        update.auth = SB_AUTH_AUTHORIZED;
        update.pasteboard = SB_PASTEBOARD_SECURE_COPY;
        update.open_in = SB_OPEN_IN_WHITELIST;
        const char *whitelist[] = {allowed};
        update.open_in_whitelist = whitelist;
        update.open_in_whitelist_count = 1;
        if ((status = sb_broker_apply(broker, &update, NULL)) != SB_OK) return fail("apply", status);
    } else {
        const char *socket = NULL;
        int i = 1;
        if (argc > 2 && strcmp(argv[1], "--socket") == 0) {
            socket = argv[2];
            i = 3;
        }
        if (argc - i >= 2) {
            allowed = argv[i];
            blocked = argv[i + 1];
        }
        if ((status = sb_broker_attach(socket, &callbacks, &broker)) != SB_OK) return fail("attach", status);
    }

    char app_id[256];
    if (sb_broker_app_id(broker, app_id, sizeof app_id, NULL) == SB_OK) printf("app: %s\n", app_id);

    const char secret[] = "secret plan";
    sb_copy_result copied;
    if ((status = sb_copy(broker, SB_TYPE_TEXT, (const uint8_t *)secret, strlen(secret), &copied)) != SB_OK)
        return fail("copy", status);
    printf("copy: %s (%s)\n",
           copied.action == SB_COPY_WRITE_SEALED ? "sealed" : copied.action == SB_COPY_WRITE_CLEAR ? "clear" : "blocked",
           sb_copy_rule_name(copied.rule));

    sb_item *item = NULL;
    status = sb_paste(broker, &item);
    if (status == SB_OK) {
        printf("paste: %zu bytes of %s: %s\n", item->length, item->type, (const char *)item->bytes);
        sb_item_free(item);
    } else {
        printf("paste: nothing readable (%s)\n", sb_status_name(status));
    }

    const uint8_t document[] = "%PDF-1.7 quarterly numbers";
    const char *targets[] = {allowed, blocked};
    for (int t = 0; t < 2; t++) {
        sb_transfer_result *result = NULL;
        status = sb_open_in(broker, "Q3.pdf", document, sizeof document - 1, targets[t],
                            SB_CHANNEL_DOCUMENT_INTERACTION, &result);
        if (status != SB_OK) return fail("open in", status);
        printf("open in %s: %s (%s)\n", targets[t], result->outcome == SB_TRANSFER_DELIVERED ? "delivered" : "dummy",
               sb_rule_name(result->decision.rule));
        sb_transfer_result_free(result);
    }
    if ((status = sb_broker_destroy(broker)) != SB_OK) return fail("destroy", status);
    return 0;
}
