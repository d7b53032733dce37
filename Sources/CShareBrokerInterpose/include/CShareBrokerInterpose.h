/* The in-process clipboard governor's C half: it redirects, inside this process, the calls
 * toolkits make across library boundaries to take a clipboard selection (Xlib's
 * XSetSelectionOwner, libxcb's xcb_set_selection_owner(_checked), libwayland-client's
 * wl_proxy_marshal* carrying wl_data_device / primary-selection / data-control set_selection)
 * to hooks that ask a decision function first. It works by rewriting the GOT entries of every
 * loaded object (and of objects dlopen loads later), so it sees GTK's calls despite -Bsymbolic.
 * The Swift module ShareBrokerInterpose is its only user (docs/ARCHITECTURE.md). */
#ifndef CSHAREBROKER_INTERPOSE_H
#define CSHAREBROKER_INTERPOSE_H

#ifdef __cplusplus
extern "C" {
#endif

/* Which selection a toolkit is taking. */
enum {
    SBI_SELECTION_CLIPBOARD = 1,
    SBI_SELECTION_PRIMARY = 2,
};

/* Through which call. */
enum {
    SBI_CHANNEL_XLIB = 1,
    SBI_CHANNEL_XCB = 2,
    SBI_CHANNEL_WAYLAND = 3,
};

/* The decision: let the toolkit take the selection, or keep the previous owner. */
enum {
    SBI_BLOCK = 0,
    SBI_ALLOW = 1,
};

/* Decides one attempt to take `selection` through `channel`. Called on the thread that made
 * the toolkit call (usually the UI thread); must not block and must not call back into the
 * toolkit. Returns SBI_ALLOW or SBI_BLOCK. */
typedef int (*sbi_decide_fn)(void *context, int selection, int channel);

/* Installs the hooks in every loaded object and in objects loaded later, with `decide` and
 * `context` (both replace earlier ones atomically; the hooks are installed once). Returns 0,
 * or an errno value (ENOTSUP when the C library offers no dl_iterate_phdr). */
int sbi_install(sbi_decide_fn decide, void *context);

/* How many GOT entries the hooks own now (diagnostics and tests). */
long sbi_patched_count(void);

/* How many selection attempts were blocked and allowed since sbi_install (tests). */
long sbi_blocked_count(void);
long sbi_allowed_count(void);

#ifdef __cplusplus
}
#endif

#endif
