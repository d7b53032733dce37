/*
 * CWaylandDataControl: the data-control protocols (client side) over libwayland-client, for
 * ShareBrokerLinux/Wayland: ext_data_control_v1 (wayland-protocols staging, preferred) and wlr
 * data-control version 2 (the fallback). Only the generated protocol glue and small helpers live
 * here: the adapter itself is Swift.
 *
 * The generated files (the two -protocol.c files and their include/ headers) are committed so a build
 * needs only libwayland-client (apt libwayland-dev), not wayland-scanner. Regenerate them with
 * `make wayland-protocol` (README.md in this folder).
 *
 * The two protocols are identical on the wire, so the cwdc_ calls below take either protocol's
 * objects and call the generated function of the protocol the object belongs to (by its interface
 * name); listener tables are the wlr ones (the ext ones have the same layout).
 */
#ifndef CWAYLAND_DATA_CONTROL_H
#define CWAYLAND_DATA_CONTROL_H

#include <wayland-client.h>
#include "ext-data-control-v1-client-protocol.h"
#include "wlr-data-control-unstable-v1-client-protocol.h"

/*
 * Binds the registry global `name` as a data-control manager of `version`: an
 * ext_data_control_manager_v1 when `ext` is non-zero, else a zwlr_data_control_manager_v1.
 * (Swift cannot take the address of the extern interface descriptions, so binding is done here.)
 */
struct wl_proxy *cwdc_bind_manager(struct wl_registry *registry, uint32_t name, uint32_t version, int ext);

/* Binds the registry global `name` as a wl_seat of `version`. */
struct wl_seat *cwdc_bind_seat(struct wl_registry *registry, uint32_t name, uint32_t version);

/*
 * pipe2(fds, O_CLOEXEC [| O_NONBLOCK]): pipe2 needs _GNU_SOURCE, which cwdc.c defines.
 * Returns 0, or -1 with errno set.
 */
int cwdc_pipe(int fds[2], int nonblocking);

/* The manager's requests (either protocol). */
struct wl_proxy *cwdc_manager_create_data_source(struct wl_proxy *manager);
struct wl_proxy *cwdc_manager_get_data_device(struct wl_proxy *manager, struct wl_seat *seat);
void cwdc_manager_destroy(struct wl_proxy *manager);

/* The device's listener and requests. */
int cwdc_device_add_listener(struct wl_proxy *device, const struct zwlr_data_control_device_v1_listener *listener, void *data);
void cwdc_device_set_selection(struct wl_proxy *device, struct wl_proxy *source);
void cwdc_device_set_primary_selection(struct wl_proxy *device, struct wl_proxy *source);
void cwdc_device_destroy(struct wl_proxy *device);

/* The source's listener and requests. */
int cwdc_source_add_listener(struct wl_proxy *source, const struct zwlr_data_control_source_v1_listener *listener, void *data);
void cwdc_source_offer(struct wl_proxy *source, const char *mime_type);
void cwdc_source_destroy(struct wl_proxy *source);

/* The offer's listener and requests. */
int cwdc_offer_add_listener(struct wl_proxy *offer, const struct zwlr_data_control_offer_v1_listener *listener, void *data);
void cwdc_offer_receive(struct wl_proxy *offer, const char *mime_type, int32_t fd);
void cwdc_offer_destroy(struct wl_proxy *offer);

/* The interface name of a proxy (e.g. "ext_data_control_manager_v1"), or NULL. */
const char *cwdc_interface_name(struct wl_proxy *object);

#endif
