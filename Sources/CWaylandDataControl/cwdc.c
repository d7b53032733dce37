#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>
#include "CWaylandDataControl.h"

struct zwlr_data_control_manager_v1 *cwdc_bind_manager(struct wl_registry *registry, uint32_t name,
                                                        uint32_t version) {
    if (registry == NULL) return NULL;
    return wl_registry_bind(registry, name, &zwlr_data_control_manager_v1_interface, version);
}

struct wl_seat *cwdc_bind_seat(struct wl_registry *registry, uint32_t name, uint32_t version) {
    if (registry == NULL) return NULL;
    return wl_registry_bind(registry, name, &wl_seat_interface, version);
}

int cwdc_pipe(int fds[2], int nonblocking) {
    if (fds == NULL) return -1;
    return pipe2(fds, O_CLOEXEC | (nonblocking ? O_NONBLOCK : 0));
}
