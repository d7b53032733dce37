/*
 * sharebroker.h: the C interface of ShareBroker, the data-loss-prevention layer a managed app
 * links into its process (libsharebroker.so, pkg-config name "sharebroker").
 *
 * Version 1.0.0 of the interface (SB_VERSION_*). Within one major version, functions, constants
 * and the members of the structures the caller fills (sb_callbacks, sb_policy_update: each starts
 * with struct_size) are only ever added, at the end; the exported symbols are checked against
 * capi/exported-symbols.txt in CI.
 *
 * ---------------------------------------------------------------------------------------------
 * General rules (they apply to every function below unless its comment says otherwise)
 *
 * Status. Every function that can fail returns an sb_status: SB_OK (0) or one of the SB_ERR_*
 *   codes. On failure nothing is written through the out-parameters, nothing is handed over or
 *   put on the pasteboard, and sb_last_error_message() says what went wrong and what to do.
 *
 * Strings. Every `const char *` argument is a NUL-terminated UTF-8 string owned by the caller
 *   and only read during the call. Invalid UTF-8 gives SB_ERR_INVALID_UTF8.
 *
 * Ownership. Handles (sb_broker) and every buffer the library returns (sb_policy, sb_item,
 *   sb_transfer_result, sb_url_result) are owned by the caller from the moment the function
 *   returns SB_OK, and are released with the matching function: sb_broker_destroy,
 *   sb_policy_free, sb_item_free, sb_transfer_result_free, sb_url_result_free. Each free
 *   function accepts NULL and overwrites the buffer's contents with zeros before releasing it
 *   (pasted items and policy configuration can be secrets). Never free them with free(3), and
 *   free each exactly once. Structures the caller passes in (sb_callbacks, sb_policy_update,
 *   sb_item_view) stay the caller's; the library copies what it keeps.
 *
 * Threading. A broker may be used from any thread, and from several threads at once, except
 *   sb_broker_destroy, which must be the last call on the handle, made when no other call on it
 *   is running. This C layer holds no lock of its own while it calls back. Notifications
 *   (open_in_attempted_when_blocked, open_url_attempted_when_unauthorized,
 *   drag_and_drop_attempted_to_non_appconnect_app, copy_attempted_when_unauthorized) run on the
 *   thread making the transfer, with no lock held (unless that transfer is itself made inside a
 *   policy-change callback). Callbacks that announce a policy
 *   change (ready, auth_state_changed and the *_changed ones) and the app's erasers run on the
 *   thread that delivered the change (the thread calling sb_broker_apply, sb_broker_retire and
 *   the like, or the agent client's thread for an attached broker) while the broker's update
 *   lock is held, so that changes are announced one at a time and in order. Inside any callback
 *   you may read the policy and make transfers (sb_policy_get, sb_open_in, sb_copy, sb_paste,
 *   ...); the calls that would need the update lock (sb_broker_start, sb_broker_apply,
 *   sb_broker_update_device, sb_broker_set_secure_services, sb_broker_set_identity,
 *   sb_broker_retire, sb_broker_register_eraser, sb_broker_attach, sb_broker_destroy) return
 *   SB_ERR_CALLBACK_REENTRY instead of deadlocking. A callback must not wait for another thread
 *   that is itself making one of those calls, and must return normally (no C++ exception,
 *   longjmp or thread exit may leave a callback: the library's state would be left half way).
 *   Once sb_broker_destroy has returned, no callback is made.
 *
 * Bad input never aborts the process: NULL pointers, invalid UTF-8, unknown values and huge
 *   sizes are error codes, and no Swift error or exception crosses this interface (only running
 *   out of memory inside the Swift runtime ends the process, as it does for Swift apps). The
 *   library never logs payloads, document contents or keys; it logs decisions and policy
 *   changes to stderr through swift-log, at the policy's log level.
 * ---------------------------------------------------------------------------------------------
 */
#ifndef SHAREBROKER_H
#define SHAREBROKER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SB_VERSION_MAJOR 1
#define SB_VERSION_MINOR 1
#define SB_VERSION_PATCH 0
/* The interface version this header describes, as (major << 16) | (minor << 8) | patch. */
#define SB_VERSION ((SB_VERSION_MAJOR << 16) | (SB_VERSION_MINOR << 8) | SB_VERSION_PATCH)

/* The interface version of the library actually loaded, encoded as SB_VERSION. A program built
 * against major version M must check (sb_version() >> 16) == M. Never fails; any thread. */
uint32_t sb_version(void);

/* ---- Status codes ----------------------------------------------------------------------- */

typedef int32_t sb_status;
#define SB_OK 0
/* A required pointer argument (handle, buffer, out-parameter, required callback) was NULL. */
#define SB_ERR_NULL_ARGUMENT 1
/* A string argument is not valid UTF-8. */
#define SB_ERR_INVALID_UTF8 2
/* A size is over the library's limit (items: 64 MiB in all; documents: 2 GiB - 1 bytes, so 2 GiB
 * or more is refused; lists: 4096). */
#define SB_ERR_TOO_LARGE 3
/* An argument is out of range (an unknown enumeration value, an empty type, a bad struct_size,
 * a document name the outbox refuses, a URL without a scheme, duplicate item types). */
#define SB_ERR_INVALID_ARGUMENT 4
/* sb_broker_start has not been called on this broker. */
#define SB_ERR_NOT_STARTED 5
/* sb_broker_start was already called on this broker. */
#define SB_ERR_ALREADY_STARTED 6
/* No policy has arrived yet (wait for the ready callback). */
#define SB_ERR_NOT_READY 7
/* sb_paste: nothing on the pasteboard this app may read. Not a failure of the library. */
#define SB_ERR_NO_ITEM 8
/* The hand-over could not be written (the outbox refused or failed); nothing was handed over. */
#define SB_ERR_TRANSFER 9
/* The platform's pasteboard refused the write; it keeps what it had. */
#define SB_ERR_PASTEBOARD 10
/* The agent is unreachable or refused this process (sb_broker_attach). */
#define SB_ERR_AGENT 11
/* A platform adapter could not be set up (key memory, clipboard, outbox folder). */
#define SB_ERR_SETUP 12
/* The call is not allowed from inside a callback (see Threading). */
#define SB_ERR_CALLBACK_REENTRY 13
/* The operation does not apply to this kind of broker (e.g. sb_broker_apply on an attached one). */
#define SB_ERR_UNSUPPORTED 14
/* The library could not allocate memory. */
#define SB_ERR_NO_MEMORY 15

/* What the most recent failing sb_ call on this thread said went wrong and what to do, in
 * English; "" when no call on this thread has failed yet. Successful calls leave it as it was
 * (so read it right after the failure). The string is owned by the library and stays valid until
 * the next failing sb_ call on the same thread, or the thread's end. Never NULL; any thread (the
 * message is per thread). It never holds payloads or keys. */
const char *sb_last_error_message(void);

/* A short constant name for a status code ("SB_ERR_TOO_LARGE"); "SB_UNKNOWN" for others.
 * Static storage: never free it. Any thread. */
const char *sb_status_name(sb_status status);

/* ---- Policy values (the raw values of the AppConnect enumerations) ---------------------- */

#define SB_AUTH_UNAUTHORIZED 0
#define SB_AUTH_AUTHORIZED 1
#define SB_AUTH_RETIRED 2

#define SB_OPEN_IN_UNAUTHORIZED 0
#define SB_OPEN_IN_AUTHORIZED 1
#define SB_OPEN_IN_WHITELIST 2
/* Only in sb_policy_update.open_in: the server's "All AppConnect apps", which the library
 * expands into a whitelist of the authorized AppConnect apps of the device. */
#define SB_OPEN_IN_ALL_APPCONNECT_APPS 3

#define SB_PASTEBOARD_UNAUTHORIZED 0
#define SB_PASTEBOARD_AUTHORIZED 1
#define SB_PASTEBOARD_SECURE_COPY 2

#define SB_PRINT_UNAUTHORIZED 0
#define SB_PRINT_AUTHORIZED 1

#define SB_SECURE_FILE_IO_OPTIONAL 0
#define SB_SECURE_FILE_IO_REQUIRED 1

#define SB_SECURE_SERVICES_UNAVAILABLE 0
#define SB_SECURE_SERVICES_AVAILABLE 1

#define SB_LOG_ERROR 0
#define SB_LOG_WARNING 1
#define SB_LOG_STATUS 2
#define SB_LOG_INFO 3
#define SB_LOG_VERBOSE 4
#define SB_LOG_DEBUG 5

#define SB_DRAG_AND_DROP_NONE 0
#define SB_DRAG_AND_DROP_ALL 1
#define SB_DRAG_AND_DROP_APPCONNECT_APPS 2

/* How the app answers a policy change (sb_acknowledgment.state). */
#define SB_POLICY_STATE_UNSUPPORTED 0
#define SB_POLICY_STATE_APPLIED 1
#define SB_POLICY_STATE_ERROR 2

/* How a document leaves the app. */
#define SB_CHANNEL_DOCUMENT_INTERACTION 0
#define SB_CHANNEL_PREVIEW_CONTROLLER 1
/* The user picks the target after the decision: under a whitelist this is always blocked. */
#define SB_CHANNEL_ACTIVITY_SHEET 2

/* In sb_policy_update: keep the current value of this member. */
#define SB_KEEP (-1)

/* ---- Decisions ---------------------------------------------------------------------------- */

/* The rule that made a decision (sb_decision.rule); sb_rule_name gives its name. */
#define SB_RULE_NOT_READY 0
#define SB_RULE_NOT_AUTHORIZED 1
#define SB_RULE_OPEN_IN_AUTHORIZED 2
#define SB_RULE_OPEN_IN_UNAUTHORIZED 3
#define SB_RULE_IN_WHITELIST 4
#define SB_RULE_NOT_IN_WHITELIST 5
#define SB_RULE_ACTIVITY_SHEET_UNDER_WHITELIST 6
#define SB_RULE_NATIVE_MAIL_WHITELISTED 7
#define SB_RULE_NATIVE_MAIL_NOT_WHITELISTED 8
#define SB_RULE_SCHEME_BLOCKING_DISABLED 9
#define SB_RULE_APPCONNECT_MAIL_APP 10
#define SB_RULE_NO_HANDLER 11
#define SB_RULE_PRINT_AUTHORIZED 12
#define SB_RULE_PRINT_UNAUTHORIZED 13
#define SB_RULE_DRAG_AND_DROP_ALL 14
#define SB_RULE_DRAG_AND_DROP_APPCONNECT_TARGET 15
#define SB_RULE_DRAG_AND_DROP_NOT_APPCONNECT_TARGET 16
#define SB_RULE_DRAG_AND_DROP_NONE 17
/* Inbound (Open From) and paste-in decisions. */
#define SB_RULE_OPEN_FROM_AUTHORIZED 18
#define SB_RULE_OPEN_FROM_UNAUTHORIZED 19
#define SB_RULE_SOURCE_IN_OPEN_FROM_WHITELIST 20
#define SB_RULE_SOURCE_NOT_IN_OPEN_FROM_WHITELIST 21
#define SB_RULE_UNKNOWN_SOURCE_UNDER_WHITELIST 22
#define SB_RULE_PASTE_INTO_UNMANAGED_CONTENT 23
#define SB_RULE_PASTE_IN_ANY_APP 24
#define SB_RULE_PASTE_IN_OWN_ITEM 25
#define SB_RULE_PASTE_IN_FROM_OTHER_APP 26

/* A decision: whether the action may happen, the rule, and the policy generation it read. */
typedef struct sb_decision {
    int32_t allowed;     /* 1 allowed, 0 blocked */
    int32_t rule;        /* SB_RULE_* */
    uint64_t generation; /* the snapshot the decision read */
} sb_decision;

/* The rule's name as the Swift library and the simulator spell it ("notInWhitelist"), or
 * "unknown". Static storage: never free it. Any thread. */
const char *sb_rule_name(int32_t rule);

/* ---- Callbacks ---------------------------------------------------------------------------- */

/* The longest acknowledgment message, terminating NUL included; longer text is cut. */
#define SB_ACK_MESSAGE_MAX 512

/* The answer to an acknowledged policy change: the callback fills it. The library presets
 * state to SB_POLICY_STATE_APPLIED and message to "" before the call and reads it after; the
 * storage is the library's and valid only during the call. An unknown state is reported to the
 * server as SB_POLICY_STATE_ERROR saying so; an authorization change may not be answered
 * SB_POLICY_STATE_UNSUPPORTED (reported as an error, as in Swift). The message is reported with
 * SB_POLICY_STATE_ERROR (why it failed); with the other states it is not used. */
typedef struct sb_acknowledgment {
    int32_t state;                     /* SB_POLICY_STATE_* */
    char message[SB_ACK_MESSAGE_MAX];  /* NUL-terminated UTF-8 (invalid bytes are replaced) */
} sb_acknowledgment;

/* One key and value of the app configuration (both NUL-terminated UTF-8). */
typedef struct sb_config_entry {
    const char *key;
    const char *value;
} sb_config_entry;

/* The callbacks of sb_broker_start / sb_broker_attach: the C form of the Swift
 * ShareBrokerDelegate. Zero the whole structure first (memset or `= {0}`), set struct_size to
 * sizeof(sb_callbacks), then set the members you implement. `ready` and `auth_state_changed` are
 * required (NULL gives SB_ERR_NULL_ARGUMENT). Every other member is optional: left NULL, an
 * acknowledged change is acknowledged as SB_POLICY_STATE_UNSUPPORTED on the app's behalf and a
 * notification is dropped, exactly as the Swift delegate's default implementations do.
 * Pointers passed to a callback (strings, arrays, the acknowledgment) are valid only during the
 * call. See Threading above for where callbacks run and what they may call. */
typedef struct sb_callbacks {
    uint32_t struct_size; /* sizeof(sb_callbacks) of the header the caller was built with */
    void *user_data;      /* passed back as the first argument of every callback */

    /* Required. The first policy arrived: policies are readable from now on. */
    void (*ready)(void *user_data);
    /* Required. The authorization state (SB_AUTH_*) or its message changed. */
    void (*auth_state_changed)(void *user_data, int32_t state, const char *message,
                               sb_acknowledgment *ack);

    /* Optional, acknowledged. The app configuration changed (the whole new configuration). */
    void (*config_changed)(void *user_data, const sb_config_entry *entries, size_t count,
                           sb_acknowledgment *ack);
    /* Optional, acknowledged. The effective Open In policy (SB_OPEN_IN_*) or whitelist changed;
     * the whitelist is sorted. */
    void (*open_in_policy_changed)(void *user_data, int32_t policy, const char *const *whitelist,
                                   size_t whitelist_count, sb_acknowledgment *ack);
    /* Optional. A document transfer was blocked; the target received a dummy file. */
    void (*open_in_attempted_when_blocked)(void *user_data, int32_t policy);
    /* Optional. A URL was not opened because of the Open In policy. */
    void (*open_url_attempted_when_unauthorized)(void *user_data, const char *url);
    /* Optional. A drop toward an app that does not link the library was refused. */
    void (*drag_and_drop_attempted_to_non_appconnect_app)(void *user_data);
    /* Optional, acknowledged. The pasteboard policy (SB_PASTEBOARD_*) changed. */
    void (*pasteboard_policy_changed)(void *user_data, int32_t policy, sb_acknowledgment *ack);
    /* Optional. A copy was refused because the pasteboard policy is unauthorized. */
    void (*copy_attempted_when_unauthorized)(void *user_data, int32_t policy);
    /* Optional, acknowledged. The print policy (SB_PRINT_*) changed. */
    void (*print_policy_changed)(void *user_data, int32_t policy, sb_acknowledgment *ack);
    /* Optional. Secure services became available or unavailable (SB_SECURE_SERVICES_*). */
    void (*secure_services_availability_changed)(void *user_data, int32_t availability);
    /* Optional, acknowledged. The secure file I/O policy (SB_SECURE_FILE_IO_*) changed. */
    void (*secure_file_io_policy_changed)(void *user_data, int32_t policy, sb_acknowledgment *ack);
    /* Optional. The log level (SB_LOG_*) changed. */
    void (*log_level_changed)(void *user_data, int32_t level);
    /* Reserved, never called: the library has no foreground events (kept so the table's layout,
     * and the ABI, stay unchanged). Leave NULL. */
    void (*will_resign_active)(void *user_data);
    /* Reserved, never called, like will_resign_active. Leave NULL. */
    void (*did_become_active)(void *user_data);
} sb_callbacks;

/* ---- Brokers -------------------------------------------------------------------------------- */

/* A broker: the library for one app. Opaque; created by sb_broker_create_embedded or
 * sb_broker_attach, released by sb_broker_destroy. */
typedef struct sb_broker sb_broker;

/* Creates a broker for `app_id` on the embedded in-memory platform: in-memory hand-overs and
 * pasteboard, an in-process key custodian that entitles app_id, and no server: the app (or a
 * test) plays the server with sb_broker_apply. Not started and not ready.
 * Errors: SB_ERR_NULL_ARGUMENT, SB_ERR_INVALID_UTF8, SB_ERR_INVALID_ARGUMENT (empty id, or over
 * 255 bytes), SB_ERR_SETUP (libsodium could not start or allocate key memory).
 * On success *out_broker is a new handle the caller owns (sb_broker_destroy). Any thread. */
sb_status sb_broker_create_embedded(const char *app_id, sb_broker **out_broker);

/* Connects to the running agent (sharebrokerd) on `socket_path` (NULL: $SHAREBROKER_SOCKET, else
 * the agent's runtime folder), which identifies this process from the kernel and answers with
 * its app id, keys and policy; builds a broker over the real Linux adapters (the desktop or file
 * pasteboard, a folder outbox, the desktop's URL handlers), starts it with `callbacks` and
 * applies the policy in force: `ready` and the values' callbacks run on this thread before
 * sb_broker_attach returns. Errors: SB_ERR_NULL_ARGUMENT, SB_ERR_INVALID_UTF8,
 * SB_ERR_INVALID_ARGUMENT (struct_size), SB_ERR_AGENT (agent down, this executable not
 * registered, changed binary), SB_ERR_SETUP. On success *out_broker is a new, started handle the
 * caller owns. */
sb_status sb_broker_attach(const char *socket_path, const sb_callbacks *callbacks,
                           sb_broker **out_broker);

/* Puts every clipboard write of this process under the broker's pasteboard policy: the app's
 * own GTK or Qt Ctrl+C, Ctrl+X, menu Copy and text selection (X11 CLIPBOARD and PRIMARY through
 * Xlib or libxcb; Wayland clipboard, primary selection and data control through
 * libwayland-client), including libraries loaded later. Call it once at start-up, after
 * sb_broker_attach (or sb_broker_create_embedded). Unauthorized (and SecureCopy without secure
 * services, before the first policy, and, for now, SecureCopy itself): the toolkit's attempt is
 * not sent, the previous owner keeps the selection, the attempt is reported once per burst and
 * copy_attempted_when_unauthorized runs. Authorized: unchanged. Once the broker is destroyed every attempt is
 * refused. docs/DESKTOP-INTEGRATION.md, "Governing a GTK or Qt app", says what is not covered.
 * Errors: SB_ERR_NULL_ARGUMENT, SB_ERR_SETUP (the hooks could not be installed; nothing is
 * governed). */
sb_status sb_broker_govern_clipboard(sb_broker *broker);

/* Starts an embedded broker with `callbacks` (copied). It becomes ready with the first policy.
 * Errors: SB_ERR_NULL_ARGUMENT (broker, callbacks, or a required callback), SB_ERR_INVALID_ARGUMENT
 * (struct_size smaller than version 1's), SB_ERR_ALREADY_STARTED (also for attached brokers,
 * which attach started), SB_ERR_CALLBACK_REENTRY. */
sb_status sb_broker_start(sb_broker *broker, const sb_callbacks *callbacks);

/* Disconnects (attached brokers: flushes acknowledgments, hands a clipboard item to a clipboard
 * manager) and releases the broker. No callback is made once it returns (one running on the
 * agent client's thread is waited for), so user_data may be freed then. NULL is a no-op returning SB_OK. Must be the last call on the
 * handle, with no other call on it running. Errors: SB_ERR_CALLBACK_REENTRY (from inside a
 * callback; the handle stays valid). */
sb_status sb_broker_destroy(sb_broker *broker);

/* Writes the app id of the broker (for an attached broker: the id the agent identified this
 * process as) into buf, NUL-terminated, if it fits in `capacity` bytes; *out_length (if not NULL)
 * receives the length without the NUL either way. Errors: SB_ERR_NULL_ARGUMENT (broker),
 * SB_ERR_TOO_LARGE (buf NULL or too small: nothing written but *out_length). Any thread. */
sb_status sb_broker_app_id(const sb_broker *broker, char *buf, size_t capacity, size_t *out_length);

/* A push from the management server, for embedded brokers (tests, simulations, apps with a
 * server channel of their own). Start from SB_POLICY_UPDATE_INIT (every member "keep"), then set
 * what changes:
 *
 *     sb_policy_update update = SB_POLICY_UPDATE_INIT;
 *     update.auth = SB_AUTH_AUTHORIZED;
 *
 * WARNING: do not zero it as you zero sb_callbacks. 0 is a value of every int32_t member
 * (SB_AUTH_UNAUTHORIZED, SB_OPEN_IN_UNAUTHORIZED, SB_PASTEBOARD_UNAUTHORIZED, ...), so a zeroed
 * update (memset 0, or `= {0}`) pushes the most restrictive policy, not "no change". */
typedef struct sb_policy_update {
    uint32_t struct_size;
    int32_t auth;                      /* SB_AUTH_* or SB_KEEP */
    const char *auth_message;          /* NULL: keep */
    int32_t open_in;                   /* SB_OPEN_IN_* (ALL_APPCONNECT_APPS too) or SB_KEEP */
    const char *const *open_in_whitelist; /* for SB_OPEN_IN_WHITELIST: the ids (may be NULL if 0) */
    size_t open_in_whitelist_count;
    int32_t pasteboard;                /* SB_PASTEBOARD_* or SB_KEEP */
    int32_t print;                     /* SB_PRINT_* or SB_KEEP */
    int32_t secure_file_io;            /* SB_SECURE_FILE_IO_* or SB_KEEP */
    int32_t log_level;                 /* SB_LOG_* or SB_KEEP */
    int32_t drag_and_drop;             /* SB_DRAG_AND_DROP_* or SB_KEEP */
    int32_t managed_browser_required;  /* 0, 1 or SB_KEEP */
    int32_t replace_config;            /* 1: config below replaces the whole configuration */
    const sb_config_entry *config;
    size_t config_count;
} sb_policy_update;

/* An sb_policy_update that changes nothing: struct_size set, every int32_t member SB_KEEP, no
 * message, whitelist or config. Initialize every sb_policy_update with it (see above). */
#define SB_POLICY_UPDATE_INIT                                                                     \
    { (uint32_t)sizeof(sb_policy_update), SB_KEEP, NULL, SB_KEEP, NULL, 0, SB_KEEP, SB_KEEP,      \
      SB_KEEP, SB_KEEP, SB_KEEP, SB_KEEP, 0, NULL, 0 }

/* Which acknowledgment a record answers (sb_acknowledgment_record.kind). */
#define SB_ACK_AUTH 0
#define SB_ACK_CONFIG 1
#define SB_ACK_OPEN_IN 2
#define SB_ACK_PASTEBOARD 3
#define SB_ACK_PRINT 4
#define SB_ACK_SECURE_FILE_IO 5
#define SB_MAX_ACKNOWLEDGMENTS 8

/* One acknowledgment as the server received it: a callback's answer, or the library's on the
 * app's behalf (SB_POLICY_STATE_UNSUPPORTED for an optional callback left NULL). */
typedef struct sb_acknowledgment_record {
    int32_t kind;  /* SB_ACK_* */
    int32_t state; /* SB_POLICY_STATE_* */
} sb_acknowledgment_record;

/* What one sb_broker_apply did (caller's storage). */
typedef struct sb_update_outcome {
    uint64_t generation;             /* the snapshot it installed */
    int32_t wiped;                   /* 1 when it retired the app and wiped its data */
    uint32_t acknowledgment_count;   /* records below, in the order reported */
    sb_acknowledgment_record acknowledgments[SB_MAX_ACKNOWLEDGMENTS];
} sb_update_outcome;

/* Applies `update` to an embedded, started broker: one atomic swap, then the callbacks of the
 * values that changed, on this thread, before it returns (the first update: only `ready`).
 * An auth of SB_AUTH_RETIRED retires the app (see sb_broker_retire).
 * Errors: SB_ERR_NULL_ARGUMENT, SB_ERR_INVALID_ARGUMENT (unknown value, struct_size),
 * SB_ERR_INVALID_UTF8, SB_ERR_TOO_LARGE (more than 4096 whitelist or config entries),
 * SB_ERR_NOT_STARTED, SB_ERR_UNSUPPORTED (attached brokers take their policy from the agent),
 * SB_ERR_CALLBACK_REENTRY. Nothing changes on error. out_outcome may be NULL; when not, it
 * receives what the update did (the acknowledgments reported to the server). */
sb_status sb_broker_apply(sb_broker *broker, const sb_policy_update *update,
                          sb_update_outcome *out_outcome);

/* Adds or updates an app of the device as the sharing rules see it (embedded brokers): whether
 * it links the library (AppConnect), whether its user is authorized, the URL schemes it opens.
 * Errors as sb_broker_apply. */
sb_status sb_broker_update_device(sb_broker *broker, const char *app_id, int32_t is_appconnect,
                                  int32_t is_authorized, const char *const *schemes,
                                  size_t scheme_count);

/* Secure services (the key custodian) became available or unavailable (embedded brokers;
 * SB_SECURE_SERVICES_*). Errors as sb_broker_apply. */
sb_status sb_broker_set_secure_services(sb_broker *broker, int32_t availability);

/* Retires the app (embedded brokers): every policy goes to its most restrictive value at once,
 * then the library wipes what it holds (keys, its items on the pasteboard, secure files) and
 * calls auth_state_changed with SB_AUTH_RETIRED. `message` may be NULL (keep the message).
 * Errors as sb_broker_apply. */
sb_status sb_broker_retire(sb_broker *broker, const char *message);

/* ---- The policy --------------------------------------------------------------------------- */

/* The policies in force, as one consistent snapshot. Owned by the caller: sb_policy_free. */
typedef struct sb_policy {
    uint64_t generation;
    int32_t auth_state;               /* SB_AUTH_* */
    int32_t open_in_policy;           /* SB_OPEN_IN_* (effective: never ALL_APPCONNECT_APPS) */
    int32_t pasteboard_policy;        /* SB_PASTEBOARD_* */
    int32_t print_policy;             /* SB_PRINT_* */
    int32_t secure_file_io_policy;    /* SB_SECURE_FILE_IO_* */
    int32_t secure_services;          /* SB_SECURE_SERVICES_* */
    int32_t log_level;                /* SB_LOG_* */
    int32_t drag_and_drop_policy;     /* SB_DRAG_AND_DROP_* */
    int32_t managed_browser_required; /* 0 or 1 */
    char *auth_message;               /* NUL-terminated UTF-8, never NULL */
    char **open_in_whitelist;         /* sorted ids; NULL when the count is 0 */
    size_t open_in_whitelist_count;
    sb_config_entry *config;          /* sorted by key; NULL when the count is 0 */
    size_t config_count;
    /* Added at the end (the library allocates sb_policy, so a caller built with an older header
     * reads the members it knows): the ids that count as native mail on this device (see
     * "Native mail" below); the first is the app mailto: opens when the platform names no
     * handler. Never NULL; at least one id. */
    char **native_mail_ids;
    size_t native_mail_id_count;
} sb_policy;

/* Reads the policies in force. Errors: SB_ERR_NULL_ARGUMENT, SB_ERR_NOT_READY (no policy yet),
 * SB_ERR_NO_MEMORY. On success *out_policy is the caller's (sb_policy_free). Any thread. */
sb_status sb_policy_get(const sb_broker *broker, sb_policy **out_policy);

/* Zeroes and releases a policy from sb_policy_get (configuration can hold secrets). NULL: no-op. */
void sb_policy_free(sb_policy *policy);

/* ---- Outbound transfers --------------------------------------------------------------------- */

/* Decides an Open In without handing anything over: what sb_open_in will do for `target` through
 * `channel` (SB_CHANNEL_*). No callback, no report. Errors: SB_ERR_NULL_ARGUMENT,
 * SB_ERR_INVALID_UTF8, SB_ERR_INVALID_ARGUMENT (channel). Any thread. */
sb_status sb_decide_open_in(const sb_broker *broker, const char *target, int32_t channel,
                            sb_decision *out_decision);

#define SB_TRANSFER_DELIVERED 0 /* the target got the document, name and bytes */
#define SB_TRANSFER_DUMMY 1     /* the target got an empty file with a mangled name */

/* What sb_open_in handed over. Owned by the caller: sb_transfer_result_free. */
typedef struct sb_transfer_result {
    int32_t outcome;      /* SB_TRANSFER_* */
    sb_decision decision;
    char *path;           /* the file handed over (in-memory outbox: its key) */
    char *name;           /* its name as the target sees it */
} sb_transfer_result;

/* The one entry point for every outbound document: an allowed target receives `name` with the
 * `length` bytes at `bytes` (NULL only when length is 0); any other receives an empty dummy with
 * a mangled name, and open_in_attempted_when_blocked is called (on this thread, no lock held).
 * Errors: SB_ERR_NULL_ARGUMENT, SB_ERR_INVALID_UTF8, SB_ERR_INVALID_ARGUMENT (channel, a name the
 * outbox refuses: empty, a path, "." or ".."), SB_ERR_TOO_LARGE (2 GiB or more: the largest document
 * is 2147483647 bytes), SB_ERR_TRANSFER.
 * On success *out_result is the caller's. */
sb_status sb_open_in(sb_broker *broker, const char *name, const uint8_t *bytes, size_t length,
                     const char *target, int32_t channel, sb_transfer_result **out_result);

/* Zeroes and releases a result of sb_open_in. NULL: no-op. */
void sb_transfer_result_free(sb_transfer_result *result);

#define SB_URL_OPENED 0    /* the handler opens it */
#define SB_URL_BLOCKED 1   /* the Open In policy blocks it */
#define SB_URL_UNHANDLED 2 /* no app on the device opens the scheme */

/* What sb_open_url did. Owned by the caller: sb_url_result_free. */
typedef struct sb_url_result {
    int32_t outcome;         /* SB_URL_* */
    sb_decision decision;
    char *handler;           /* the app that opens it; NULL unless opened */
    char *intended_handler;  /* the app it was headed to; NULL when no app opens the scheme */
} sb_url_result;

/* Native mail. Which ids count as the device's native mail app is per device: the device
 * document's "nativeMail" list (an attached broker gets it from the agent; on a Linux desktop
 * these are desktop app ids, such as "org.gnome.Evolution"); without one, and for embedded
 * brokers, the seeds' two ids, "com.apple.mobilemail" and "com.apple.UIKit.activity.Mail".
 * sb_policy.native_mail_ids lists them. An Open In whitelist allows native mail (sb_compose_mail,
 * mailto:, an Open In to one of the ids) only when it holds EVERY one of them.
 * sb_url_result.intended_handler for a mailto: URL is, on an attached broker, the desktop's
 * x-scheme-handler/mailto handler (native mail only if it is one of the ids; otherwise an
 * ordinary Open In target), and otherwise native_mail_ids[0]. */

/* Opens a URL in another app if the policy allows (custom schemes follow the Open In policy
 * toward the scheme's handler, mailto: the mail rules); a blocked one may call
 * open_url_attempted_when_unauthorized. Errors: SB_ERR_NULL_ARGUMENT, SB_ERR_INVALID_UTF8,
 * SB_ERR_INVALID_ARGUMENT (no valid scheme, or http/https, which are web navigation). */
sb_status sb_open_url(sb_broker *broker, const char *url, sb_url_result **out_result);

/* Zeroes and releases a result of sb_open_url. NULL: no-op. */
void sb_url_result_free(sb_url_result *result);

/* Whether the app may show its mail composer (native mail under the Open In policy); a blocked
 * one calls open_in_attempted_when_blocked. Errors: SB_ERR_NULL_ARGUMENT. Any thread. */
sb_status sb_compose_mail(sb_broker *broker, sb_decision *out_decision);
/* Whether the app may print (the print policy); a block is reported to the server's audit.
 * Errors: SB_ERR_NULL_ARGUMENT. Any thread. */
sb_status sb_print(sb_broker *broker, sb_decision *out_decision);
/* Whether content may be dropped onto `target` (a refused drop to an app that does not link the
 * library calls drag_and_drop_attempted_to_non_appconnect_app). Errors: SB_ERR_NULL_ARGUMENT,
 * SB_ERR_INVALID_UTF8. */
sb_status sb_drag_and_drop(sb_broker *broker, const char *target, sb_decision *out_decision);

/* ---- The clipboard -------------------------------------------------------------------------- */

/* The type of plain UTF-8 text. */
#define SB_TYPE_TEXT "public.utf8-plain-text"
/* The most representations one copy carries. */
#define SB_MAX_REPRESENTATIONS 16
/* The most bytes one copy carries, all representations together (64 MiB). */
#define SB_MAX_ITEM_SIZE ((size_t)64 << 20)

#define SB_COPY_WRITE_CLEAR 0  /* written in the clear: every app can read it */
#define SB_COPY_WRITE_SEALED 1 /* sealed (SecureCopy): only authorized managed apps read it */
#define SB_COPY_BLOCKED 2      /* nothing written; the pasteboard keeps what it had */

#define SB_COPY_RULE_UNMANAGED_CONTENT 0
#define SB_COPY_RULE_NOT_READY 1
#define SB_COPY_RULE_NOT_AUTHORIZED 2
#define SB_COPY_RULE_PASTEBOARD_AUTHORIZED 3
#define SB_COPY_RULE_PASTEBOARD_UNAUTHORIZED 4
#define SB_COPY_RULE_SECURE_COPY 5
#define SB_COPY_RULE_SECURE_SERVICES_UNAVAILABLE 6
#define SB_COPY_RULE_NO_KEYS 7
/* Plain text within the policy's character-count exception: written in the clear. Characters are
 * grapheme clusters; the text must also hold at most 8 code points per allowed character and be
 * valid UTF-8 (longer or invalid text follows the pasteboard policy). */
#define SB_COPY_RULE_SHORT_TEXT_EXCEPTION 8

/* What a copy did. */
typedef struct sb_copy_result {
    int32_t action;        /* SB_COPY_WRITE_CLEAR, SB_COPY_WRITE_SEALED, SB_COPY_BLOCKED */
    int32_t rule;          /* SB_COPY_RULE_* */
    int32_t notifies_app;  /* 1 when copy_attempted_when_unauthorized was owed */
    uint64_t generation;
} sb_copy_result;

/* The copy rule's name ("secureCopy"), or "unknown". Static storage. Any thread. */
const char *sb_copy_rule_name(int32_t rule);

/* One representation handed to sb_copy_representations (read only during the call). */
typedef struct sb_item_view {
    const char *type;     /* 1 to 255 bytes of UTF-8, e.g. SB_TYPE_TEXT or "text/html" */
    const uint8_t *bytes; /* NULL only when length is 0 */
    size_t length;
} sb_item_view;

/* Copies one item (type and bytes) to the general pasteboard as the pasteboard policy says: in
 * the clear, sealed, or not at all (then copy_attempted_when_unauthorized may be called).
 * A policy block is SB_OK with action SB_COPY_BLOCKED. Errors: SB_ERR_NULL_ARGUMENT,
 * SB_ERR_INVALID_UTF8 (type), SB_ERR_INVALID_ARGUMENT (empty or over-long type),
 * SB_ERR_TOO_LARGE (over SB_MAX_ITEM_SIZE; the bytes are not read), SB_ERR_PASTEBOARD.
 * out_result may be NULL. */
sb_status sb_copy(sb_broker *broker, const char *type, const uint8_t *bytes, size_t length,
                  sb_copy_result *out_result);

/* Copies 1 to SB_MAX_REPRESENTATIONS representations of one item, of distinct types, decided
 * once for all. Errors as sb_copy, and SB_ERR_INVALID_ARGUMENT for a count of 0, over 16, or a
 * type given twice. */
sb_status sb_copy_representations(sb_broker *broker, const sb_item_view *items, size_t count,
                                  sb_copy_result *out_result);

/* A pasted item. Owned by the caller: sb_item_free (which zeroes it: it may be the plaintext of
 * a sealed item). */
typedef struct sb_item {
    char *type;      /* NUL-terminated */
    uint8_t *bytes;  /* `length` bytes, plus a NUL after them for convenience; never NULL */
    size_t length;
} sb_item;

/* What this app reads from the general pasteboard: clear items always, sealed items only while
 * the user is authorized and secure services are available (opened with the group keys).
 * Errors: SB_ERR_NULL_ARGUMENT, SB_ERR_NO_ITEM (nothing readable), SB_ERR_NO_MEMORY. */
sb_status sb_paste(sb_broker *broker, sb_item **out_item);

/* Zeroes and releases an item from sb_paste. NULL: no-op. */
void sb_item_free(sb_item *item);

/* ---- Identity and web views ---------------------------------------------------------------- */

/* Whose content the user is looking at. */
#define SB_IDENTITY_MANAGED 0
#define SB_IDENTITY_UNMANAGED 1

/* The app switched accounts: decisions made after this call use the new identity (content of an
 * unmanaged identity is not restricted). No callback. Errors: SB_ERR_NULL_ARGUMENT,
 * SB_ERR_INVALID_ARGUMENT (identity), SB_ERR_NOT_STARTED, SB_ERR_CALLBACK_REENTRY. */
sb_status sb_broker_set_identity(sb_broker *broker, int32_t identity);

/* A viewer's own policy (Intune's IntuneMAMWebViewPolicy raw values). */
#define SB_WEBVIEW_UNSET 0                          /* inherit from the nearest ancestor */
#define SB_WEBVIEW_UNMANAGED 1                      /* its content counts as unmanaged */
#define SB_WEBVIEW_CURRENT_IDENTITY 2               /* its content is the current identity's */
#define SB_WEBVIEW_CURRENT_IDENTITY_BLOCK_UPLOAD 3  /* and, while managed, no uploads or pastes */

/* Declares a viewer (a web view or a container) `id`, under `parent` (NULL: a root when new, else
 * where it is) with its own `policy` (SB_WEBVIEW_* or SB_KEEP). Errors: SB_ERR_NULL_ARGUMENT,
 * SB_ERR_INVALID_UTF8, SB_ERR_INVALID_ARGUMENT (policy, or a parent that is the node or under
 * it), SB_ERR_TOO_LARGE (the hierarchy is full). Nothing changes on error. Any thread. */
sb_status sb_webview_declare(sb_broker *broker, const char *id, const char *parent, int32_t policy);

/* A web view's effective identity now (caller's storage). */
typedef struct sb_webview_resolution {
    int32_t identity;                /* SB_IDENTITY_*: whose content the web view shows */
    int32_t blocks_upload_and_paste; /* 1: no file uploads or pastes into the page */
    int32_t policy;                  /* the effective SB_WEBVIEW_* (UNSET when nothing decided) */
} sb_webview_resolution;

/* Resolves the web view `id` under the current identity. Errors: SB_ERR_NULL_ARGUMENT,
 * SB_ERR_INVALID_UTF8, SB_ERR_INVALID_ARGUMENT (a web view never declared). Any thread. */
sb_status sb_webview_resolve(const sb_broker *broker, const char *id, sb_webview_resolution *out_resolution);

/* sb_copy of content shown in the web view `webview`: its effective identity decides whether the
 * content is managed. Errors as sb_copy, and SB_ERR_INVALID_ARGUMENT for an undeclared web view. */
sb_status sb_copy_from_webview(sb_broker *broker, const char *webview, const char *type, const uint8_t *bytes,
                               size_t length, sb_copy_result *out_result);

/* ---- Erasers (what a retire wipes) ----------------------------------------------------------- */

/* Erases what the app holds under this eraser (idempotent: finding nothing is success). Returns 0
 * on success, any other value when something could not be erased (reported in the wipe report,
 * as the step's failure; never content). Called during a retire, on the retiring thread, as a
 * policy-change callback (see Threading). */
typedef int32_t (*sb_eraser_fn)(void *user_data);

/* Registers an eraser named `name` (a short, stable step name for the wipe journal, never
 * content; erasers sharing a name run as one step) that a retire calls. Register every eraser
 * before sb_broker_start: an embedded broker collects them and builds the library's
 * configuration with them at sb_broker_start (the Swift library takes its erasers only when it
 * is made, so that a retire a crash interrupted, finished during start, finds them all). An
 * eraser registered later (and every eraser of an attached broker, which sb_broker_attach
 * started) is run by the retires to come, not by one finished during start. Errors: SB_ERR_NULL_ARGUMENT (broker, name, erase),
 * SB_ERR_INVALID_UTF8, SB_ERR_INVALID_ARGUMENT (empty name), SB_ERR_CALLBACK_REENTRY. */
sb_status sb_broker_register_eraser(sb_broker *broker, const char *name, sb_eraser_fn erase, void *user_data);

/* ---- Warnings: the user may go on with a reason (since 1.1) --------------------------------- */

/* The exits that may warn instead of only blocking: a copy under pasteboard unauthorized (the
 * clear copy is held, in protected memory, until the user decides), Open In to a target outside
 * the whitelist, print under print unauthorized, a drop the policy refuses. */
#define SB_WARN_EXIT_COPY 0
#define SB_WARN_EXIT_OPEN_IN 1
#define SB_WARN_EXIT_PRINT 2
#define SB_WARN_EXIT_DRAG_AND_DROP 3

/* How a warned attempt ended (the audit record's outcome). */
#define SB_WARN_NOT_WARNED (-1)     /* the exit did not warn: the policy alone decided */
#define SB_WARN_PROCEEDED 0         /* the user went on: the transfer happened */
#define SB_WARN_REMEMBERED 1        /* a proceed for this exit and target is still in force */
#define SB_WARN_CANCELLED 2
#define SB_WARN_TIMED_OUT 3
#define SB_WARN_NO_HANDLER 4        /* no sb_broker_set_warn_handler */
#define SB_WARN_INVALID_ANSWER 5    /* a reason not offered, or none where one is required */
#define SB_WARN_RATE_LIMITED 6      /* too many proceeds in the policy's window */
#define SB_WARN_POLICY_CHANGED 7    /* the exit stopped warning while the user decided */
#define SB_WARN_HOLD_FAILED 8       /* the copy could not be held in protected memory */

/* One warn setting of an exit (sb_broker_set_warn). Zero-initialize and set struct_size. */
typedef struct sb_warn_settings {
    uint32_t struct_size;              /* sizeof(sb_warn_settings) */
    int32_t reason_required;           /* going on needs a listed code (or text when none listed) */
    const char *const *reason_codes;   /* reason_count codes: 1 to 64 of A-Z a-z 0-9 . - _ */
    const char *const *reason_labels;  /* reason_count labels: what the app shows */
    size_t reason_count;               /* at most 32 */
    int32_t free_text;                 /* the user may add text (kept up to 256 characters) */
    int32_t proceed_minutes;           /* 0 to 1440: how long a proceed lasts for the same target */
    int32_t answer_seconds;            /* 1 to 600: then blocked; 0 means the default, 60 */
    int32_t rate_proceeds;             /* with rate_minutes: at most so many proceeds per window; */
    int32_t rate_minutes;              /*   0 and 0: no limit */
} sb_warn_settings;

/* Sets (settings) or removes (NULL) the warning of `exit` in the policy of an embedded broker.
 * Errors: SB_ERR_NULL_ARGUMENT, SB_ERR_INVALID_ARGUMENT (unknown exit, struct_size, or settings
 * that say what is wrong in sb_last_error_message), SB_ERR_INVALID_UTF8, SB_ERR_UNSUPPORTED
 * (attached brokers take their policy from the agent), SB_ERR_NOT_STARTED. */
sb_status sb_broker_set_warn(sb_broker *broker, int32_t exit, const sb_warn_settings *settings);

/* An open question. Read it with the accessors below; answer it with sb_warn_answer exactly once
 * (also after its time ran out: the answer then frees it and is ignored). Never content, never a
 * document name. */
typedef struct sb_warn_question sb_warn_question;

/* Shows `question` to the user. Called on the thread that attempted the transfer: return at
 * once, and answer later from any thread (sb_warn_answer). Set it after sb_broker_start. */
typedef void (*sb_warn_fn)(void *user_data, sb_warn_question *question);

/* Sets (or removes, with NULL) the handler of warnings. Without one, every warned attempt is
 * blocked (SB_WARN_NO_HANDLER). Errors: SB_ERR_NULL_ARGUMENT (broker). */
sb_status sb_broker_set_warn_handler(sb_broker *broker, sb_warn_fn ask, void *user_data);

/* The question's exit (SB_WARN_EXIT_*), target (an app id, or NULL), whether a reason is
 * required, whether free text is allowed, the time to answer in milliseconds, and the offered
 * reasons (index < count; NULL out of range). Strings are valid until sb_warn_answer. Any thread. */
int32_t sb_warn_question_exit(const sb_warn_question *question);
const char *sb_warn_question_target(const sb_warn_question *question);
int32_t sb_warn_question_reason_required(const sb_warn_question *question);
int32_t sb_warn_question_free_text(const sb_warn_question *question);
int32_t sb_warn_question_timeout_ms(const sb_warn_question *question);
size_t sb_warn_question_reason_count(const sb_warn_question *question);
const char *sb_warn_question_reason_code(const sb_warn_question *question, size_t index);
const char *sb_warn_question_reason_label(const sb_warn_question *question, size_t index);

/* Answers and frees `question`: proceed (1, with reason_code and text, each NULL for none) or
 * cancel (0). Once per question, from any thread. *out_accepted (may be NULL): 1 when this
 * answer decided, 0 when the question had already timed out (the attempt stayed blocked).
 * Errors: SB_ERR_NULL_ARGUMENT (question), SB_ERR_INVALID_UTF8 (the question is still freed
 * and the attempt blocked as cancelled). */
sb_status sb_warn_answer(sb_warn_question *question, int32_t proceed, const char *reason_code, const char *text,
                         int32_t *out_accepted);

/* The end of a copy that may warn: status SB_OK or the error, the action (SB_COPY_*), and the
 * warning's outcome (SB_WARN_*, SB_WARN_NOT_WARNED when the copy did not warn). */
typedef void (*sb_copy_done_fn)(void *user_data, sb_status status, int32_t action, int32_t warn_outcome);

/* sb_copy that asks the user when the copy warns, without blocking the calling thread. The bytes
 * are read during the call only (a held copy is kept in protected memory, zeroed when the
 * question ends). `done` is called exactly once: before this returns when nothing is asked, else
 * on the thread that answers (or the timer's). Errors (then `done` is not called): as sb_copy. */
sb_status sb_copy_asking(sb_broker *broker, const char *type, const uint8_t *bytes, size_t length,
                         sb_copy_done_fn done, void *user_data);

/* The end of a print or a drop that may warn: allowed (1/0) and the outcome (SB_WARN_*). */
typedef void (*sb_warn_done_fn)(void *user_data, int32_t allowed, int32_t warn_outcome);

/* sb_print and sb_drag_and_drop that ask the user when they warn; `done` exactly once, as for
 * sb_copy_asking. Errors: SB_ERR_NULL_ARGUMENT, SB_ERR_INVALID_UTF8 (target). */
sb_status sb_print_asking(sb_broker *broker, sb_warn_done_fn done, void *user_data);
sb_status sb_drag_and_drop_asking(sb_broker *broker, const char *target, sb_warn_done_fn done, void *user_data);

#ifdef __cplusplus
}
#endif

#endif /* SHAREBROKER_H */
