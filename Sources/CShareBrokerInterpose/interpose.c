/* The in-process clipboard governor's C half (include/CShareBrokerInterpose.h says what).
 *
 * How: for every loaded object, walk its dynamic relocations (JUMP_SLOT and GLOB_DAT) and,
 * where one binds a symbol this file hooks, write the hook's address into that GOT entry
 * (unprotecting a RELRO page for the write and protecting it again). The real function is
 * looked up in the scope of the object that imports it. Three kinds of object are left alone:
 * this library's own object (its calls are the broker's, already decided), and the object
 * that defines the hooked function (libwayland-client calls its own exports through its PLT).
 * dlopen is hooked the same way, and every successful dlopen patches the objects it loaded
 * (Qt's platform plugins, GTK's modules).
 *
 * Not covered (docs/THREAT-MODEL.md): raw system calls on the display socket, function
 * pointers obtained with dlsym, statically linked toolkits, a second process. */
#define _GNU_SOURCE
#include "CShareBrokerInterpose.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <wayland-client-core.h>
#include <xcb/xcb.h>

/* MARK: - The decision */

struct decider {
    sbi_decide_fn decide;
    void *context;
};

/* Never freed: a hook running on another thread may still hold the previous one. */
static _Atomic(struct decider *) current_decider;
static atomic_long patched_entries;
static atomic_long blocked_attempts;
static atomic_long allowed_attempts;

/* Asks the decision function; with none installed (cannot happen once a hook runs), allows. */
static int decide(int selection, int channel) {
    struct decider *decider = atomic_load(&current_decider);
    int verdict = decider ? decider->decide(decider->context, selection, channel) : SBI_ALLOW;
    if (verdict == SBI_ALLOW) {
        atomic_fetch_add(&allowed_attempts, 1);
    } else {
        atomic_fetch_add(&blocked_attempts, 1);
    }
    return verdict;
}

/* MARK: - The hooked functions' real addresses */

enum hook_id {
    HOOK_XSET_SELECTION_OWNER,
    HOOK_XCB_SET_SELECTION_OWNER,
    HOOK_XCB_SET_SELECTION_OWNER_CHECKED,
    HOOK_WL_PROXY_MARSHAL_FLAGS,
    HOOK_WL_PROXY_MARSHAL_ARRAY_FLAGS,
    HOOK_WL_PROXY_MARSHAL,
    HOOK_WL_PROXY_MARSHAL_ARRAY,
    HOOK_DLOPEN,
    HOOK_COUNT
};

/* Helpers the hooks call, found in the same scope as the hooked function they belong to. */
enum helper_id {
    HELPER_XINTERN_ATOM,
    HELPER_XCB_INTERN_ATOM,
    HELPER_XCB_INTERN_ATOM_REPLY,
    HELPER_XCB_NO_OPERATION,
    HELPER_XCB_NO_OPERATION_CHECKED,
    HELPER_WL_PROXY_MARSHAL_ARRAY_FLAGS,
    HELPER_WL_PROXY_MARSHAL_ARRAY,
    HELPER_COUNT
};

static const char *const helper_names[HELPER_COUNT] = {
    "XInternAtom", "xcb_intern_atom", "xcb_intern_atom_reply", "xcb_no_operation",
    "xcb_no_operation_checked", "wl_proxy_marshal_array_flags", "wl_proxy_marshal_array",
};
static _Atomic(void *) helpers[HELPER_COUNT];

struct hook {
    const char *name;
    void *replacement;
    _Atomic(void *) real;
    /* The helpers to find next to it. */
    int helper_first, helper_count;
};

typedef int (*xset_selection_owner_fn)(void *, unsigned long, unsigned long, unsigned long);
typedef unsigned long (*xintern_atom_fn)(void *, const char *, int);
typedef xcb_void_cookie_t (*xcb_set_selection_owner_fn)(xcb_connection_t *, xcb_window_t, xcb_atom_t, xcb_timestamp_t);
typedef xcb_intern_atom_cookie_t (*xcb_intern_atom_fn)(xcb_connection_t *, uint8_t, uint16_t, const char *);
typedef xcb_intern_atom_reply_t *(*xcb_intern_atom_reply_fn)(xcb_connection_t *, xcb_intern_atom_cookie_t, xcb_generic_error_t **);
typedef xcb_void_cookie_t (*xcb_no_operation_fn)(xcb_connection_t *);
typedef struct wl_proxy *(*wl_marshal_array_flags_fn)(struct wl_proxy *, uint32_t, const struct wl_interface *,
                                                      uint32_t, uint32_t, union wl_argument *);
typedef void (*wl_marshal_array_fn)(struct wl_proxy *, uint32_t, union wl_argument *);
typedef void *(*dlopen_fn)(const char *, int);

static int hook_XSetSelectionOwner(void *display, unsigned long selection, unsigned long owner, unsigned long time);
static xcb_void_cookie_t hook_xcb_set_selection_owner(xcb_connection_t *c, xcb_window_t owner, xcb_atom_t selection,
                                                      xcb_timestamp_t time);
static xcb_void_cookie_t hook_xcb_set_selection_owner_checked(xcb_connection_t *c, xcb_window_t owner,
                                                              xcb_atom_t selection, xcb_timestamp_t time);
static struct wl_proxy *hook_wl_proxy_marshal_flags(struct wl_proxy *proxy, uint32_t opcode,
                                                    const struct wl_interface *interface, uint32_t version,
                                                    uint32_t flags, ...);
static struct wl_proxy *hook_wl_proxy_marshal_array_flags(struct wl_proxy *proxy, uint32_t opcode,
                                                          const struct wl_interface *interface, uint32_t version,
                                                          uint32_t flags, union wl_argument *args);
static void hook_wl_proxy_marshal(struct wl_proxy *proxy, uint32_t opcode, ...);
static void hook_wl_proxy_marshal_array(struct wl_proxy *proxy, uint32_t opcode, union wl_argument *args);
static void *hook_dlopen(const char *file, int mode);

static struct hook hooks[HOOK_COUNT] = {
    [HOOK_XSET_SELECTION_OWNER] = {"XSetSelectionOwner", (void *)hook_XSetSelectionOwner, NULL, HELPER_XINTERN_ATOM, 1},
    [HOOK_XCB_SET_SELECTION_OWNER] = {"xcb_set_selection_owner", (void *)hook_xcb_set_selection_owner, NULL,
                                      HELPER_XCB_INTERN_ATOM, 4},
    [HOOK_XCB_SET_SELECTION_OWNER_CHECKED] = {"xcb_set_selection_owner_checked",
                                              (void *)hook_xcb_set_selection_owner_checked, NULL,
                                              HELPER_XCB_INTERN_ATOM, 4},
    [HOOK_WL_PROXY_MARSHAL_FLAGS] = {"wl_proxy_marshal_flags", (void *)hook_wl_proxy_marshal_flags, NULL,
                                     HELPER_WL_PROXY_MARSHAL_ARRAY_FLAGS, 1},
    [HOOK_WL_PROXY_MARSHAL_ARRAY_FLAGS] = {"wl_proxy_marshal_array_flags", (void *)hook_wl_proxy_marshal_array_flags,
                                           NULL, 0, 0},
    [HOOK_WL_PROXY_MARSHAL] = {"wl_proxy_marshal", (void *)hook_wl_proxy_marshal, NULL,
                               HELPER_WL_PROXY_MARSHAL_ARRAY, 1},
    [HOOK_WL_PROXY_MARSHAL_ARRAY] = {"wl_proxy_marshal_array", (void *)hook_wl_proxy_marshal_array, NULL, 0, 0},
    [HOOK_DLOPEN] = {"dlopen", (void *)hook_dlopen, NULL, 0, 0},
};

static void *real(enum hook_id id) { return atomic_load(&hooks[id].real); }
static void *helper(enum helper_id id) { return atomic_load(&helpers[id]); }

/* MARK: - X11 */

/* ICCCM's predefined PRIMARY atom (X.h's XA_PRIMARY). */
#define X_ATOM_PRIMARY 1UL

/* The CLIPBOARD atom of the last display asked (atoms are per server; one display is usual). */
static pthread_mutex_t atom_lock = PTHREAD_MUTEX_INITIALIZER;
static void *xlib_display;
static unsigned long xlib_clipboard;
static xcb_connection_t *xcb_conn;
static xcb_atom_t xcb_clipboard;

/* Which selection `selection` is on an Xlib display: 0 for neither. */
static int xlib_selection(void *display, unsigned long selection) {
    if (selection == X_ATOM_PRIMARY) return SBI_SELECTION_PRIMARY;
    pthread_mutex_lock(&atom_lock);
    unsigned long clipboard = display == xlib_display ? xlib_clipboard : 0;
    pthread_mutex_unlock(&atom_lock);
    if (clipboard == 0) {
        xintern_atom_fn intern = (xintern_atom_fn)helper(HELPER_XINTERN_ATOM);
        /* Unknown: treat as the clipboard (fail closed). */
        if (intern == NULL) return SBI_SELECTION_CLIPBOARD;
        clipboard = intern(display, "CLIPBOARD", 0);
        pthread_mutex_lock(&atom_lock);
        xlib_display = display;
        xlib_clipboard = clipboard;
        pthread_mutex_unlock(&atom_lock);
    }
    return selection == clipboard ? SBI_SELECTION_CLIPBOARD : 0;
}

static int hook_XSetSelectionOwner(void *display, unsigned long selection, unsigned long owner, unsigned long time) {
    xset_selection_owner_fn forward = (xset_selection_owner_fn)real(HOOK_XSET_SELECTION_OWNER);
    /* Giving a selection up (owner None) is never a disclosure. */
    if (owner != 0) {
        int which = xlib_selection(display, selection);
        if (which != 0 && decide(which, SBI_CHANNEL_XLIB) == SBI_BLOCK) {
            /* Not sent: the previous owner keeps the selection; the toolkit's own check
             * (XGetSelectionOwner) sees it did not get it. XSetSelectionOwner returns 1 always. */
            return 1;
        }
    }
    return forward ? forward(display, selection, owner, time) : 1;
}

/* Which selection `selection` is on an xcb connection: 0 for neither. */
static int xcb_selection(xcb_connection_t *c, xcb_atom_t selection) {
    if (selection == X_ATOM_PRIMARY) return SBI_SELECTION_PRIMARY;
    pthread_mutex_lock(&atom_lock);
    xcb_atom_t clipboard = c == xcb_conn ? xcb_clipboard : 0;
    pthread_mutex_unlock(&atom_lock);
    if (clipboard == 0) {
        xcb_intern_atom_fn intern = (xcb_intern_atom_fn)helper(HELPER_XCB_INTERN_ATOM);
        xcb_intern_atom_reply_fn reply_of = (xcb_intern_atom_reply_fn)helper(HELPER_XCB_INTERN_ATOM_REPLY);
        if (intern == NULL || reply_of == NULL) return SBI_SELECTION_CLIPBOARD;
        xcb_intern_atom_reply_t *reply = reply_of(c, intern(c, 0, 9, "CLIPBOARD"), NULL);
        if (reply == NULL) return SBI_SELECTION_CLIPBOARD;
        clipboard = reply->atom;
        free(reply);
        pthread_mutex_lock(&atom_lock);
        xcb_conn = c;
        xcb_clipboard = clipboard;
        pthread_mutex_unlock(&atom_lock);
    }
    return selection == clipboard ? SBI_SELECTION_CLIPBOARD : 0;
}

/* A harmless request in place of a blocked one, so the caller gets a real cookie to check. */
static xcb_void_cookie_t xcb_instead(xcb_connection_t *c, int checked) {
    xcb_no_operation_fn noop = (xcb_no_operation_fn)helper(checked ? HELPER_XCB_NO_OPERATION_CHECKED
                                                                    : HELPER_XCB_NO_OPERATION);
    if (noop) return noop(c);
    xcb_void_cookie_t none = {0};
    return none;
}

static xcb_void_cookie_t xcb_set_owner(enum hook_id id, int checked, xcb_connection_t *c, xcb_window_t owner,
                                       xcb_atom_t selection, xcb_timestamp_t time) {
    if (owner != 0) {
        int which = xcb_selection(c, selection);
        if (which != 0 && decide(which, SBI_CHANNEL_XCB) == SBI_BLOCK) return xcb_instead(c, checked);
    }
    xcb_set_selection_owner_fn forward = (xcb_set_selection_owner_fn)real(id);
    if (forward == NULL) return xcb_instead(c, checked);
    return forward(c, owner, selection, time);
}

static xcb_void_cookie_t hook_xcb_set_selection_owner(xcb_connection_t *c, xcb_window_t owner, xcb_atom_t selection,
                                                      xcb_timestamp_t time) {
    return xcb_set_owner(HOOK_XCB_SET_SELECTION_OWNER, 0, c, owner, selection, time);
}

static xcb_void_cookie_t hook_xcb_set_selection_owner_checked(xcb_connection_t *c, xcb_window_t owner,
                                                              xcb_atom_t selection, xcb_timestamp_t time) {
    return xcb_set_owner(HOOK_XCB_SET_SELECTION_OWNER_CHECKED, 1, c, owner, selection, time);
}

/* MARK: - Wayland */

/* The interface of a proxy: the first member of libwayland's struct wl_proxy is its struct
 * wl_object, whose first member is the interface (unchanged since libwayland 1.0). */
static const struct wl_interface *proxy_interface(struct wl_proxy *proxy) {
    return proxy ? *(const struct wl_interface *const *)(const void *)proxy : NULL;
}

/* Which selection a request sets, 0 for none. args[0] is the source (NULL: clearing). */
static int wayland_selection(struct wl_proxy *proxy, uint32_t opcode, const union wl_argument *args) {
    const struct wl_interface *interface = proxy_interface(proxy);
    if (interface == NULL || interface->name == NULL) return 0;
    const char *name = interface->name;
    int which = 0;
    if (strcmp(name, "wl_data_device") == 0) {
        which = opcode == 1 ? SBI_SELECTION_CLIPBOARD : 0;
    } else if (strcmp(name, "zwp_primary_selection_device_v1") == 0 ||
               strcmp(name, "gtk_primary_selection_device") == 0) {
        which = opcode == 0 ? SBI_SELECTION_PRIMARY : 0;
    } else if (strcmp(name, "zwlr_data_control_device_v1") == 0 ||
               strcmp(name, "ext_data_control_device_v1") == 0) {
        which = opcode == 0 ? SBI_SELECTION_CLIPBOARD : opcode == 2 ? SBI_SELECTION_PRIMARY : 0;
    }
    if (which == 0) return 0;
    /* Clearing a selection (no source) discloses nothing. */
    return args != NULL && args[0].o == NULL ? 0 : which;
}

/* Whether a request must not be sent. */
static int wayland_blocks(struct wl_proxy *proxy, uint32_t opcode, const union wl_argument *args) {
    int which = wayland_selection(proxy, opcode, args);
    return which != 0 && decide(which, SBI_CHANNEL_WAYLAND) == SBI_BLOCK;
}

/* The variadic arguments of request `opcode` of `proxy`, as libwayland reads them (its
 * wl_argument_from_va_list). Returns the count, or -1 for a request it cannot read. */
static int arguments_from(struct wl_proxy *proxy, uint32_t opcode, union wl_argument *args, int capacity,
                          va_list ap) {
    const struct wl_interface *interface = proxy_interface(proxy);
    if (interface == NULL || opcode >= (uint32_t)interface->method_count) return -1;
    const char *signature = interface->methods[opcode].signature;
    int count = 0;
    for (const char *p = signature; p && *p; p++) {
        if (*p == '?' || (*p >= '0' && *p <= '9')) continue;
        if (count == capacity) return -1;
        switch (*p) {
        case 'i': args[count++].i = va_arg(ap, int32_t); break;
        case 'u': args[count++].u = va_arg(ap, uint32_t); break;
        case 'f': args[count++].f = va_arg(ap, wl_fixed_t); break;
        case 's': args[count++].s = va_arg(ap, const char *); break;
        case 'o': args[count++].o = va_arg(ap, struct wl_object *); break;
        case 'n': args[count++].o = va_arg(ap, struct wl_object *); break;
        case 'a': args[count++].a = va_arg(ap, struct wl_array *); break;
        case 'h': args[count++].h = va_arg(ap, int32_t); break;
        default: return -1;
        }
    }
    return count;
}

/* libwayland's WL_CLOSURE_MAX_ARGS. */
#define MAX_ARGS 20

static struct wl_proxy *hook_wl_proxy_marshal_flags(struct wl_proxy *proxy, uint32_t opcode,
                                                    const struct wl_interface *interface, uint32_t version,
                                                    uint32_t flags, ...) {
    union wl_argument args[MAX_ARGS];
    memset(args, 0, sizeof(args));
    va_list ap;
    va_start(ap, flags);
    int count = arguments_from(proxy, opcode, args, MAX_ARGS, ap);
    va_end(ap);
    wl_marshal_array_flags_fn forward = (wl_marshal_array_flags_fn)helper(HELPER_WL_PROXY_MARSHAL_ARRAY_FLAGS);
    if (count < 0 || forward == NULL) abort(); /* cannot forward: libwayland would abort too */
    if (wayland_blocks(proxy, opcode, args)) return NULL;
    return forward(proxy, opcode, interface, version, flags, args);
}

static struct wl_proxy *hook_wl_proxy_marshal_array_flags(struct wl_proxy *proxy, uint32_t opcode,
                                                          const struct wl_interface *interface, uint32_t version,
                                                          uint32_t flags, union wl_argument *args) {
    wl_marshal_array_flags_fn forward = (wl_marshal_array_flags_fn)real(HOOK_WL_PROXY_MARSHAL_ARRAY_FLAGS);
    if (wayland_blocks(proxy, opcode, args)) return NULL;
    return forward ? forward(proxy, opcode, interface, version, flags, args) : NULL;
}

static void hook_wl_proxy_marshal(struct wl_proxy *proxy, uint32_t opcode, ...) {
    union wl_argument args[MAX_ARGS];
    memset(args, 0, sizeof(args));
    va_list ap;
    va_start(ap, opcode);
    int count = arguments_from(proxy, opcode, args, MAX_ARGS, ap);
    va_end(ap);
    wl_marshal_array_fn forward = (wl_marshal_array_fn)helper(HELPER_WL_PROXY_MARSHAL_ARRAY);
    if (count < 0 || forward == NULL) abort();
    if (wayland_blocks(proxy, opcode, args)) return;
    forward(proxy, opcode, args);
}

static void hook_wl_proxy_marshal_array(struct wl_proxy *proxy, uint32_t opcode, union wl_argument *args) {
    wl_marshal_array_fn forward = (wl_marshal_array_fn)real(HOOK_WL_PROXY_MARSHAL_ARRAY);
    if (wayland_blocks(proxy, opcode, args)) return;
    if (forward) forward(proxy, opcode, args);
}

/* MARK: - Patching the GOT */

static pthread_mutex_t patch_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int installed;

/* One loaded object, as dl_iterate_phdr described it (collected first, patched after: the
 * patching calls dlopen, which must not run inside dl_iterate_phdr's lock). */
struct object {
    char *name;
    ElfW(Addr) base;
    const ElfW(Phdr) *phdr;
    ElfW(Half) phnum;
};

struct objects {
    struct object *items;
    size_t count, capacity;
};

static int collect(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct objects *objects = data;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    if (strncmp(name, "linux-vdso", 10) == 0 || strncmp(name, "linux-gate", 10) == 0) return 0;
    if (objects->count == objects->capacity) {
        size_t capacity = objects->capacity ? objects->capacity * 2 : 64;
        struct object *grown = realloc(objects->items, capacity * sizeof(*grown));
        if (grown == NULL) return 1;
        objects->items = grown;
        objects->capacity = capacity;
    }
    char *copy = strdup(name);
    if (copy == NULL) return 1;
    objects->items[objects->count++] = (struct object){copy, info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum};
    return 0;
}

/* Whether `address` lies in one of the object's loaded segments. */
static int contains(const struct object *object, const void *address) {
    uintptr_t a = (uintptr_t)address;
    for (ElfW(Half) i = 0; i < object->phnum; i++) {
        const ElfW(Phdr) *ph = &object->phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t start = object->base + ph->p_vaddr;
        if (a >= start && a < start + ph->p_memsz) return 1;
    }
    return 0;
}

/* Whether `address` lies in the object's RELRO segment (read-only after relocation). */
static int in_relro(const struct object *object, uintptr_t address) {
    for (ElfW(Half) i = 0; i < object->phnum; i++) {
        const ElfW(Phdr) *ph = &object->phdr[i];
        if (ph->p_type != PT_GNU_RELRO) continue;
        uintptr_t start = object->base + ph->p_vaddr;
        if (address >= start && address < start + ph->p_memsz) return 1;
    }
    return 0;
}

/* Writes `value` into the GOT entry at `slot`. Returns 0 or -1. */
static int write_slot(const struct object *object, void **slot, void *value) {
    if (atomic_load_explicit((_Atomic(void *) *)slot, memory_order_relaxed) == value) return 0;
    uintptr_t address = (uintptr_t)slot;
    int relro = in_relro(object, address);
    long page_size = sysconf(_SC_PAGESIZE);
    uintptr_t page = address & ~((uintptr_t)page_size - 1);
    /* An entry straddles no page (it is aligned); one page is enough. */
    if (relro && mprotect((void *)page, (size_t)page_size, PROT_READ | PROT_WRITE) != 0) return -1;
    atomic_store((_Atomic(void *) *)slot, value);
    if (relro) mprotect((void *)page, (size_t)page_size, PROT_READ);
    return 0;
}

#if defined(__x86_64__)
#define RELOC_JUMP_SLOT R_X86_64_JUMP_SLOT
#define RELOC_GLOB_DAT R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define RELOC_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define RELOC_GLOB_DAT R_AARCH64_GLOB_DAT
#else
#error "the clipboard governor knows the GOT relocations of x86-64 and AArch64 only"
#endif

/* A dynamic-section address: glibc relocates some in place, others not (and base 0 is the
 * non-PIE executable, whose addresses are absolute). */
static uintptr_t dynamic_address(const struct object *object, ElfW(Addr) value) {
    return value < object->base ? object->base + value : value;
}

/* Finds the real function and its helpers in the scope of the object importing it. */
static void *resolve(const struct object *object, struct hook *hook, void **handle) {
    void *found = atomic_load(&hook->real);
    if (found != NULL) return found;
    if (*handle == NULL) {
        *handle = dlopen(object->name[0] ? object->name : NULL, RTLD_LAZY | RTLD_NOLOAD);
        if (*handle == NULL) return NULL;
    }
    found = dlsym(*handle, hook->name);
    if (found == NULL || found == hook->replacement) return NULL;
    for (int i = 0; i < hook->helper_count; i++) {
        int id = hook->helper_first + i;
        if (atomic_load(&helpers[id]) == NULL) atomic_store(&helpers[id], dlsym(*handle, helper_names[id]));
    }
    void *expected = NULL;
    atomic_compare_exchange_strong(&hook->real, &expected, found);
    return atomic_load(&hook->real);
}

/* Patches the relocations of one table of an object. */
static void patch_table(const struct object *object, const ElfW(Rela) *relocations, size_t count,
                        const ElfW(Sym) *symbols, const char *strings, void **handle) {
    for (size_t i = 0; i < count; i++) {
        const ElfW(Rela) *r = &relocations[i];
        unsigned long type = ELF64_R_TYPE(r->r_info);
        if (type != RELOC_JUMP_SLOT && type != RELOC_GLOB_DAT) continue;
        unsigned long index = ELF64_R_SYM(r->r_info);
        if (index == 0) continue;
        const char *name = strings + symbols[index].st_name;
        for (int h = 0; h < HOOK_COUNT; h++) {
            struct hook *hook = &hooks[h];
            if (strcmp(name, hook->name) != 0) continue;
            void *found = resolve(object, hook, handle);
            /* Not found (not loaded in that scope): nothing can call it from there either. The
             * object that defines the function keeps its own calls to it. */
            if (found == NULL || contains(object, found)) break;
            void **slot = (void **)(object->base + r->r_offset);
            if (write_slot(object, slot, hook->replacement) == 0) atomic_fetch_add(&patched_entries, 1);
            break;
        }
    }
}

/* Patches one object's GOT entries. */
static void patch_object(const struct object *object, const void *self) {
    if (contains(object, self)) return;
    const ElfW(Dyn) *dynamic = NULL;
    for (ElfW(Half) i = 0; i < object->phnum; i++) {
        if (object->phdr[i].p_type == PT_DYNAMIC) {
            dynamic = (const ElfW(Dyn) *)(object->base + object->phdr[i].p_vaddr);
        }
    }
    if (dynamic == NULL) return;
    const ElfW(Sym) *symbols = NULL;
    const char *strings = NULL;
    const ElfW(Rela) *plt = NULL, *rela = NULL;
    size_t plt_size = 0, rela_size = 0;
    int plt_is_rela = 1;
    for (const ElfW(Dyn) *d = dynamic; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB: symbols = (const ElfW(Sym) *)dynamic_address(object, d->d_un.d_ptr); break;
        case DT_STRTAB: strings = (const char *)dynamic_address(object, d->d_un.d_ptr); break;
        case DT_JMPREL: plt = (const ElfW(Rela) *)dynamic_address(object, d->d_un.d_ptr); break;
        case DT_PLTRELSZ: plt_size = d->d_un.d_val; break;
        case DT_PLTREL: plt_is_rela = d->d_un.d_val == DT_RELA; break;
        case DT_RELA: rela = (const ElfW(Rela) *)dynamic_address(object, d->d_un.d_ptr); break;
        case DT_RELASZ: rela_size = d->d_un.d_val; break;
        default: break;
        }
    }
    if (symbols == NULL || strings == NULL) return;
    void *handle = NULL;
    if (plt && plt_is_rela) patch_table(object, plt, plt_size / sizeof(ElfW(Rela)), symbols, strings, &handle);
    if (rela) patch_table(object, rela, rela_size / sizeof(ElfW(Rela)), symbols, strings, &handle);
    if (handle) dlclose(handle);
}

/* Patches every loaded object. */
static void patch_all(void) {
    struct objects objects = {0};
    pthread_mutex_lock(&patch_lock);
    dl_iterate_phdr(collect, &objects);
    for (size_t i = 0; i < objects.count; i++) patch_object(&objects.items[i], (const void *)sbi_install);
    pthread_mutex_unlock(&patch_lock);
    for (size_t i = 0; i < objects.count; i++) free(objects.items[i].name);
    free(objects.items);
}

static void *hook_dlopen(const char *file, int mode) {
    dlopen_fn forward = (dlopen_fn)real(HOOK_DLOPEN);
    if (forward == NULL) forward = dlopen;
    void *handle = forward(file, mode);
    if (handle != NULL && (mode & RTLD_NOLOAD) == 0) patch_all();
    return handle;
}

int sbi_install(sbi_decide_fn decide_fn, void *context) {
    if (decide_fn == NULL) return EINVAL;
    struct decider *decider = malloc(sizeof(*decider));
    if (decider == NULL) return ENOMEM;
    *decider = (struct decider){decide_fn, context};
    atomic_store(&current_decider, decider);
    if (atomic_exchange(&installed, 1) == 0) patch_all();
    return 0;
}

long sbi_patched_count(void) { return atomic_load(&patched_entries); }
long sbi_blocked_count(void) { return atomic_load(&blocked_attempts); }
long sbi_allowed_count(void) { return atomic_load(&allowed_attempts); }
