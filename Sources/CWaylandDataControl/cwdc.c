#define _GNU_SOURCE
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include "CWaylandDataControl.h"

/*
 * The two protocols are the same on the wire (ext_data_control_v1 is wlr data-control version 2
 * standardised: same requests, events, arguments and order), and their listener tables have the
 * same layout. Each call below picks the generated function of the protocol the object belongs
 * to, by its interface name, so the adapter's Swift code is written once.
 */
_Static_assert(sizeof(struct ext_data_control_device_v1_listener) == sizeof(struct zwlr_data_control_device_v1_listener),
               "device listeners differ");
_Static_assert(sizeof(struct ext_data_control_source_v1_listener) == sizeof(struct zwlr_data_control_source_v1_listener),
               "source listeners differ");
_Static_assert(sizeof(struct ext_data_control_offer_v1_listener) == sizeof(struct zwlr_data_control_offer_v1_listener),
               "offer listeners differ");

static int is_ext(void *object) {
    const char *name = wl_proxy_get_class((struct wl_proxy *)object);
    return name != NULL && strncmp(name, "ext_", 4) == 0;
}

struct wl_proxy *cwdc_bind_manager(struct wl_registry *registry, uint32_t name, uint32_t version, int ext) {
    if (registry == NULL) return NULL;
    return wl_registry_bind(registry, name,
                            ext ? &ext_data_control_manager_v1_interface : &zwlr_data_control_manager_v1_interface,
                            version);
}

struct wl_seat *cwdc_bind_seat(struct wl_registry *registry, uint32_t name, uint32_t version) {
    if (registry == NULL) return NULL;
    return wl_registry_bind(registry, name, &wl_seat_interface, version);
}

int cwdc_pipe(int fds[2], int nonblocking) {
    if (fds == NULL) return -1;
    return pipe2(fds, O_CLOEXEC | (nonblocking ? O_NONBLOCK : 0));
}

struct wl_proxy *cwdc_manager_create_data_source(struct wl_proxy *manager) {
    if (is_ext(manager)) return (struct wl_proxy *)ext_data_control_manager_v1_create_data_source((void *)manager);
    return (struct wl_proxy *)zwlr_data_control_manager_v1_create_data_source((void *)manager);
}

struct wl_proxy *cwdc_manager_get_data_device(struct wl_proxy *manager, struct wl_seat *seat) {
    if (is_ext(manager)) return (struct wl_proxy *)ext_data_control_manager_v1_get_data_device((void *)manager, seat);
    return (struct wl_proxy *)zwlr_data_control_manager_v1_get_data_device((void *)manager, seat);
}

void cwdc_manager_destroy(struct wl_proxy *manager) {
    if (is_ext(manager)) ext_data_control_manager_v1_destroy((void *)manager);
    else zwlr_data_control_manager_v1_destroy((void *)manager);
}

int cwdc_device_add_listener(struct wl_proxy *device, const struct zwlr_data_control_device_v1_listener *listener, void *data) {
    return wl_proxy_add_listener(device, (void (**)(void))listener, data);
}

void cwdc_device_set_selection(struct wl_proxy *device, struct wl_proxy *source) {
    if (is_ext(device)) ext_data_control_device_v1_set_selection((void *)device, (void *)source);
    else zwlr_data_control_device_v1_set_selection((void *)device, (void *)source);
}

void cwdc_device_set_primary_selection(struct wl_proxy *device, struct wl_proxy *source) {
    if (is_ext(device)) ext_data_control_device_v1_set_primary_selection((void *)device, (void *)source);
    else zwlr_data_control_device_v1_set_primary_selection((void *)device, (void *)source);
}

void cwdc_device_destroy(struct wl_proxy *device) {
    if (is_ext(device)) ext_data_control_device_v1_destroy((void *)device);
    else zwlr_data_control_device_v1_destroy((void *)device);
}

int cwdc_source_add_listener(struct wl_proxy *source, const struct zwlr_data_control_source_v1_listener *listener, void *data) {
    return wl_proxy_add_listener(source, (void (**)(void))listener, data);
}

void cwdc_source_offer(struct wl_proxy *source, const char *mime_type) {
    if (is_ext(source)) ext_data_control_source_v1_offer((void *)source, mime_type);
    else zwlr_data_control_source_v1_offer((void *)source, mime_type);
}

void cwdc_source_destroy(struct wl_proxy *source) {
    if (is_ext(source)) ext_data_control_source_v1_destroy((void *)source);
    else zwlr_data_control_source_v1_destroy((void *)source);
}

int cwdc_offer_add_listener(struct wl_proxy *offer, const struct zwlr_data_control_offer_v1_listener *listener, void *data) {
    return wl_proxy_add_listener(offer, (void (**)(void))listener, data);
}

void cwdc_offer_receive(struct wl_proxy *offer, const char *mime_type, int32_t fd) {
    if (is_ext(offer)) ext_data_control_offer_v1_receive((void *)offer, mime_type, fd);
    else zwlr_data_control_offer_v1_receive((void *)offer, mime_type, fd);
}

void cwdc_offer_destroy(struct wl_proxy *offer) {
    if (is_ext(offer)) ext_data_control_offer_v1_destroy((void *)offer);
    else zwlr_data_control_offer_v1_destroy((void *)offer);
}

const char *cwdc_interface_name(struct wl_proxy *object) {
    return object == NULL ? NULL : wl_proxy_get_class(object);
}
