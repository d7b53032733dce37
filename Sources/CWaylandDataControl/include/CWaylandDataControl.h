/*
 * CWaylandDataControl: the wlr data-control protocol (client side) over libwayland-client, for
 * ShareBrokerLinux/Wayland. Only the generated protocol glue and three small helpers live here:
 * the adapter itself is Swift.
 *
 * The generated files (wlr-data-control-unstable-v1-protocol.c and
 * include/wlr-data-control-unstable-v1-client-protocol.h) are committed so a build needs only
 * libwayland-client (apt libwayland-dev), not wayland-scanner. Regenerate them with
 * `make wayland-protocol` (README.md in this folder).
 */
#ifndef CWAYLAND_DATA_CONTROL_H
#define CWAYLAND_DATA_CONTROL_H

#include <wayland-client.h>
#include "wlr-data-control-unstable-v1-client-protocol.h"

/*
 * Binds the registry global `name` as a zwlr_data_control_manager_v1 of `version`.
 * (Swift cannot take the address of the extern interface descriptions, so binding is done here.)
 */
struct zwlr_data_control_manager_v1 *cwdc_bind_manager(struct wl_registry *registry, uint32_t name,
                                                        uint32_t version);

/* Binds the registry global `name` as a wl_seat of `version`. */
struct wl_seat *cwdc_bind_seat(struct wl_registry *registry, uint32_t name, uint32_t version);

/*
 * pipe2(fds, O_CLOEXEC [| O_NONBLOCK]): pipe2 needs _GNU_SOURCE, which cwdc.c defines.
 * Returns 0, or -1 with errno set.
 */
int cwdc_pipe(int fds[2], int nonblocking);

#endif
