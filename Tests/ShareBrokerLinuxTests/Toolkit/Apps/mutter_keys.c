/* Keys for a headless mutter through its RemoteDesktop D-Bus API, for the governed-toolkit tests.
 * The session belongs to the D-Bus connection that made it, and the seat has a keyboard only
 * while it lives, so this stays running: it creates and starts a session, taps Shift (which gives
 * the seat its keyboard), prints "ready", then reads commands on standard input, one a line:
 *   keys ctrl+c      presses the keys (modifiers first) and releases them in reverse order
 * and prints "done <command>" after each. Exits at end of input. */
#include <gio/gio.h>
#include <stdio.h>
#include <string.h>

static GDBusConnection *bus;
static char session[256];

static int keysym(const char *name) {
    if (strcmp(name, "ctrl") == 0) return 0xffe3;    /* Control_L */
    if (strcmp(name, "shift") == 0) return 0xffe1;   /* Shift_L */
    if (strcmp(name, "right") == 0) return 0xff53;   /* Right */
    if (strlen(name) == 1) return (unsigned char)name[0];
    return -1;
}

static int notify(int sym, gboolean pressed) {
    GError *error = NULL;
    GVariant *reply = g_dbus_connection_call_sync(
        bus, "org.gnome.Mutter.RemoteDesktop", session, "org.gnome.Mutter.RemoteDesktop.Session",
        "NotifyKeyboardKeysym", g_variant_new("(ub)", (guint32)sym, pressed), NULL, G_DBUS_CALL_FLAGS_NONE,
        5000, NULL, &error);
    if (reply == NULL) {
        fprintf(stderr, "NotifyKeyboardKeysym: %s\n", error->message);
        return -1;
    }
    g_variant_unref(reply);
    return 0;
}

static int press(const char *combo) {
    int syms[8];
    int count = 0;
    char copy[128];
    g_strlcpy(copy, combo, sizeof copy);
    for (char *part = strtok(copy, "+"); part && count < 8; part = strtok(NULL, "+")) {
        int sym = keysym(part);
        if (sym < 0) return -1;
        syms[count++] = sym;
    }
    for (int i = 0; i < count; i++) if (notify(syms[i], TRUE) != 0) return -1;
    for (int i = count - 1; i >= 0; i--) if (notify(syms[i], FALSE) != 0) return -1;
    return 0;
}

int main(void) {
    GError *error = NULL;
    bus = g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, &error);
    if (bus == NULL) { fprintf(stderr, "session bus: %s\n", error->message); return 2; }
    GVariant *reply = NULL;
    for (int attempt = 0; attempt < 100 && reply == NULL; attempt++) {
        g_clear_error(&error);
        reply = g_dbus_connection_call_sync(bus, "org.gnome.Mutter.RemoteDesktop", "/org/gnome/Mutter/RemoteDesktop",
                                            "org.gnome.Mutter.RemoteDesktop", "CreateSession", NULL,
                                            G_VARIANT_TYPE("(o)"), G_DBUS_CALL_FLAGS_NONE, 5000, NULL, &error);
        if (reply == NULL) g_usleep(50000);
    }
    if (reply == NULL) { fprintf(stderr, "CreateSession: %s\n", error->message); return 2; }
    const char *path = NULL;
    g_variant_get(reply, "(&o)", &path);
    g_strlcpy(session, path, sizeof session);
    g_variant_unref(reply);
    reply = g_dbus_connection_call_sync(bus, "org.gnome.Mutter.RemoteDesktop", session,
                                        "org.gnome.Mutter.RemoteDesktop.Session", "Start", NULL, NULL,
                                        G_DBUS_CALL_FLAGS_NONE, 5000, NULL, &error);
    if (reply == NULL) { fprintf(stderr, "Start: %s\n", error->message); return 2; }
    g_variant_unref(reply);
    if (press("shift") != 0) return 2;
    printf("ready\n");
    fflush(stdout);
    char line[256];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = 0;
        if (strncmp(line, "keys ", 5) == 0 && press(line + 5) != 0) return 2;
        printf("done %s\n", line);
        fflush(stdout);
    }
    return 0;
}
