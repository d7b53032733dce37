#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <wayland-server.h>
#include "include/CExtDataControlServer.h"
#include "ext-data-control-v1-server-protocol.h"

#define MAX_TYPES 64

struct source {
    struct wl_resource *resource;
    char *types[MAX_TYPES];
    int count;
};

struct server {
    struct wl_display *display;
    pthread_t thread;
    atomic_int stopping;
    char path[108];
    struct wl_list devices;   /* device resources' links */
    struct wl_list offers;    /* offer resources' links */
    struct source *selection[2];  /* clipboard, primary */
};

static struct server *server_of(struct wl_resource *resource) { return wl_resource_get_user_data(resource); }

/* Offers: user data is the source they read from (NULL once it is gone). */
static void offer_receive(struct wl_client *client, struct wl_resource *resource, const char *mime, int32_t fd) {
    (void)client;
    struct source *source = wl_resource_get_user_data(resource);
    if (source != NULL) ext_data_control_source_v1_send_send(source->resource, mime, fd);
    close(fd);
}
static void offer_destroy(struct wl_client *client, struct wl_resource *resource) { (void)client; wl_resource_destroy(resource); }
static const struct ext_data_control_offer_v1_interface offer_impl = { offer_receive, offer_destroy };
static void offer_gone(struct wl_resource *resource) { wl_list_remove(wl_resource_get_link(resource)); }

static void send_selection(struct server *server, struct wl_resource *device, int which) {
    struct source *source = server->selection[which];
    struct wl_resource *offer = NULL;
    if (source != NULL) {
        offer = wl_resource_create(wl_resource_get_client(device), &ext_data_control_offer_v1_interface,
                                   wl_resource_get_version(device), 0);
        if (offer == NULL) return;
        wl_resource_set_implementation(offer, &offer_impl, source, offer_gone);
        wl_list_insert(&server->offers, wl_resource_get_link(offer));
        ext_data_control_device_v1_send_data_offer(device, offer);
        for (int i = 0; i < source->count; i++) ext_data_control_offer_v1_send_offer(offer, source->types[i]);
    }
    if (which == 0) ext_data_control_device_v1_send_selection(device, offer);
    else ext_data_control_device_v1_send_primary_selection(device, offer);
}

static void set_selection(struct server *server, struct wl_resource *source_resource, int which) {
    struct source *source = source_resource ? wl_resource_get_user_data(source_resource) : NULL;
    struct source *previous = server->selection[which];
    server->selection[which] = source;
    if (previous != NULL && previous != source && previous != server->selection[1 - which]) {
        ext_data_control_source_v1_send_cancelled(previous->resource);
    }
    struct wl_resource *device;
    wl_resource_for_each(device, &server->devices) send_selection(server, device, which);
}

static void device_set_selection(struct wl_client *c, struct wl_resource *r, struct wl_resource *s) { (void)c; set_selection(server_of(r), s, 0); }
static void device_set_primary(struct wl_client *c, struct wl_resource *r, struct wl_resource *s) { (void)c; set_selection(server_of(r), s, 1); }
static void device_destroy(struct wl_client *client, struct wl_resource *resource) { (void)client; wl_resource_destroy(resource); }
static const struct ext_data_control_device_v1_interface device_impl = { device_set_selection, device_destroy, device_set_primary };
static void device_gone(struct wl_resource *resource) { wl_list_remove(wl_resource_get_link(resource)); }

/* Sources: user data is the struct source; its server is found through the manager's. */
static struct server *the_server;  /* one server per process at a time (the tests run it serialized) */

static void source_offer(struct wl_client *client, struct wl_resource *resource, const char *mime) {
    (void)client;
    struct source *source = wl_resource_get_user_data(resource);
    if (source->count < MAX_TYPES) source->types[source->count++] = strdup(mime);
}
static void source_destroy(struct wl_client *client, struct wl_resource *resource) { (void)client; wl_resource_destroy(resource); }
static const struct ext_data_control_source_v1_interface source_impl = { source_offer, source_destroy };
static void source_gone(struct wl_resource *resource) {
    struct source *source = wl_resource_get_user_data(resource);
    struct server *server = the_server;
    struct wl_resource *offer;
    wl_resource_for_each(offer, &server->offers) {
        if (wl_resource_get_user_data(offer) == source) wl_resource_set_user_data(offer, NULL);
    }
    for (int which = 0; which < 2; which++) {
        if (server->selection[which] == source) {
            server->selection[which] = NULL;
            struct wl_resource *device;
            wl_resource_for_each(device, &server->devices) send_selection(server, device, which);
        }
    }
    for (int i = 0; i < source->count; i++) free(source->types[i]);
    free(source);
}

static void manager_create_source(struct wl_client *client, struct wl_resource *manager, uint32_t id) {
    struct source *source = calloc(1, sizeof *source);
    struct wl_resource *resource = wl_resource_create(client, &ext_data_control_source_v1_interface,
                                                      wl_resource_get_version(manager), id);
    if (source == NULL || resource == NULL) { free(source); wl_client_post_no_memory(client); return; }
    source->resource = resource;
    wl_resource_set_implementation(resource, &source_impl, source, source_gone);
}
static void manager_get_device(struct wl_client *client, struct wl_resource *manager, uint32_t id, struct wl_resource *seat) {
    (void)seat;
    struct server *server = server_of(manager);
    struct wl_resource *device = wl_resource_create(client, &ext_data_control_device_v1_interface,
                                                    wl_resource_get_version(manager), id);
    if (device == NULL) { wl_client_post_no_memory(client); return; }
    wl_resource_set_implementation(device, &device_impl, server, device_gone);
    wl_list_insert(&server->devices, wl_resource_get_link(device));
    send_selection(server, device, 0);
    send_selection(server, device, 1);
}
static void manager_destroy(struct wl_client *client, struct wl_resource *resource) { (void)client; wl_resource_destroy(resource); }
static const struct ext_data_control_manager_v1_interface manager_impl = { manager_create_source, manager_get_device, manager_destroy };

static void bind_manager(struct wl_client *client, void *data, uint32_t version, uint32_t id) {
    struct wl_resource *resource = wl_resource_create(client, &ext_data_control_manager_v1_interface, (int)version, id);
    if (resource == NULL) { wl_client_post_no_memory(client); return; }
    wl_resource_set_implementation(resource, &manager_impl, data, NULL);
}

static void seat_release(struct wl_client *client, struct wl_resource *resource) { (void)client; wl_resource_destroy(resource); }
static void seat_unsupported(struct wl_client *client, struct wl_resource *resource, uint32_t id) {
    (void)client; (void)id;
    wl_resource_post_error(resource, WL_DISPLAY_ERROR_INVALID_METHOD, "this test compositor has no input devices");
}
static const struct wl_seat_interface seat_impl = { seat_unsupported, seat_unsupported, seat_unsupported, seat_release };
static void bind_seat(struct wl_client *client, void *data, uint32_t version, uint32_t id) {
    (void)data;
    struct wl_resource *resource = wl_resource_create(client, &wl_seat_interface, (int)version, id);
    if (resource == NULL) { wl_client_post_no_memory(client); return; }
    wl_resource_set_implementation(resource, &seat_impl, NULL, NULL);
    wl_seat_send_capabilities(resource, 0);
}

static void *run(void *data) {
    struct server *server = data;
    struct wl_event_loop *loop = wl_display_get_event_loop(server->display);
    while (!atomic_load(&server->stopping)) {
        wl_event_loop_dispatch(loop, 50);
        wl_display_flush_clients(server->display);
    }
    return NULL;
}

void *ecs_start(const char *path) {
    if (path == NULL || strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path) || the_server != NULL) { errno = EINVAL; return NULL; }
    struct server *server = calloc(1, sizeof *server);
    if (server == NULL) return NULL;
    strcpy(server->path, path);
    wl_list_init(&server->devices);
    wl_list_init(&server->offers);
    server->display = wl_display_create();
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un address = { .sun_family = AF_UNIX };
    strcpy(address.sun_path, path);
    if (server->display == NULL || fd < 0 || bind(fd, (struct sockaddr *)&address, sizeof address) != 0 || listen(fd, 16) != 0
        || wl_display_add_socket_fd(server->display, fd) != 0
        || wl_global_create(server->display, &wl_seat_interface, 1, server, bind_seat) == NULL
        || wl_global_create(server->display, &ext_data_control_manager_v1_interface, 1, server, bind_manager) == NULL) {
        int code = errno;
        if (fd >= 0) close(fd);
        if (server->display) wl_display_destroy(server->display);
        unlink(path);
        free(server);
        errno = code;
        return NULL;
    }
    the_server = server;
    if (pthread_create(&server->thread, NULL, run, server) != 0) {
        the_server = NULL;
        wl_display_destroy(server->display);
        unlink(path);
        free(server);
        return NULL;
    }
    return server;
}

void ecs_stop(void *handle) {
    struct server *server = handle;
    if (server == NULL) return;
    atomic_store(&server->stopping, 1);
    pthread_join(server->thread, NULL);
    wl_display_destroy_clients(server->display);
    wl_display_destroy(server->display);
    unlink(server->path);
    the_server = NULL;
    free(server);
}
