/*
 * A minimal Wayland compositor for the tests: it offers only wl_seat and
 * ext_data_control_manager_v1 (the standard data-control protocol no compositor on the CI
 * machine offers), and relays selections between its clients as a compositor does. Enough to
 * run the Wayland adapter's ext path end to end; nothing else.
 */
#ifndef CEXT_DATA_CONTROL_SERVER_H
#define CEXT_DATA_CONTROL_SERVER_H

/* Starts the server on a thread of its own, listening at the absolute socket `path`.
 * Returns an opaque handle, or NULL (errno set). One server per process at a time. */
void *ecs_start(const char *path);

/* Stops the server (disconnecting every client), joins its thread, frees it, removes the socket. */
void ecs_stop(void *server);

#endif
