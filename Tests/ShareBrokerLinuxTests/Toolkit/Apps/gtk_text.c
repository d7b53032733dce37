/* A GTK test app, built against GTK 4 or GTK 3: a text view holding $SB_TEXT, all selected, in
 * a window titled "sbtoolkit-gtk" (GTK 4) or "sbtoolkit-gtk3". Managed by managed.h (one call). Prints "ready" once the window is mapped.
 * Commands on standard input, one a line: "copy" / "cut" activate the clipboard actions (what
 * the context menu's Copy and Cut do), "select" puts the text back and selects all of it (PRIMARY). */
#include <gtk/gtk.h>
#include "managed.h"

static GtkWidget *view;

static gboolean on_command(GIOChannel *channel, GIOCondition condition, gpointer data) {
    (void)condition; (void)data;
    gchar *line = NULL;
    gsize length = 0;
    GIOStatus status = g_io_channel_read_line(channel, &line, &length, NULL, NULL);
    if (status == G_IO_STATUS_EOF || status == G_IO_STATUS_ERROR) exit(0);
    if (line == NULL) return TRUE;
    g_strchomp(line);
    GtkTextBuffer *buffer = gtk_text_view_get_buffer(GTK_TEXT_VIEW(view));
    if (strcmp(line, "copy") == 0) {
#if GTK_MAJOR_VERSION >= 4
        gtk_widget_activate_action(view, "clipboard.copy", NULL);
#else
        g_signal_emit_by_name(view, "copy-clipboard");
#endif
    } else if (strcmp(line, "cut") == 0) {
#if GTK_MAJOR_VERSION >= 4
        gtk_widget_activate_action(view, "clipboard.cut", NULL);
#else
        g_signal_emit_by_name(view, "cut-clipboard");
#endif
    } else if (strcmp(line, "select") == 0) {
        /* The text again (a cut removed it), then all of it selected. */
        gtk_text_buffer_set_text(buffer, getenv("SB_TEXT") ? getenv("SB_TEXT") : "known-text-4711", -1);
        GtkTextIter start, end;
        gtk_text_buffer_get_bounds(buffer, &start, &end);
        gtk_text_buffer_select_range(buffer, &end, &end);
        gtk_text_buffer_select_range(buffer, &start, &end);
    }
    printf("done %s\n", line);
    fflush(stdout);
    g_free(line);
    return TRUE;
}

static gboolean announce(gpointer data) {
    (void)data;
    printf("ready\n");
    fflush(stdout);
    return G_SOURCE_REMOVE;
}

/* "active" once the window has the keyboard focus (a compositor gives it; Xvfb has no window
 * manager, so there it comes with xdotool's focus). */
static void on_active(GObject *window, GParamSpec *spec, gpointer data) {
    (void)spec; (void)data;
    if (gtk_window_is_active(GTK_WINDOW(window))) {
        printf("active\n");
        fflush(stdout);
    }
}

static void on_map(GtkWidget *widget, gpointer data) {
    (void)widget; (void)data;
    g_timeout_add(100, announce, NULL);
}

static void activate(GtkApplication *app, gpointer data) {
    (void)data;
    GtkWidget *window = gtk_application_window_new(app);
    gtk_window_set_title(GTK_WINDOW(window), GTK_MAJOR_VERSION >= 4 ? "sbtoolkit-gtk" : "sbtoolkit-gtk3");
    gtk_window_set_default_size(GTK_WINDOW(window), 300, 100);
    view = gtk_text_view_new();
    GtkTextBuffer *buffer = gtk_text_view_get_buffer(GTK_TEXT_VIEW(view));
    const char *text = getenv("SB_TEXT") ? getenv("SB_TEXT") : "known-text-4711";
    gtk_text_buffer_set_text(buffer, text, -1);
    GtkTextIter start, end;
    gtk_text_buffer_get_bounds(buffer, &start, &end);
    gtk_text_buffer_select_range(buffer, &start, &end);
    g_signal_connect(window, "map", G_CALLBACK(on_map), NULL);
    g_signal_connect(window, "notify::is-active", G_CALLBACK(on_active), NULL);
#if GTK_MAJOR_VERSION >= 4
    gtk_window_set_child(GTK_WINDOW(window), view);
    gtk_window_present(GTK_WINDOW(window));
#else
    gtk_container_add(GTK_CONTAINER(window), view);
    gtk_widget_show_all(window);
#endif
    gtk_widget_grab_focus(view);
    GIOChannel *in = g_io_channel_unix_new(0);
    g_io_add_watch(in, G_IO_IN | G_IO_HUP, on_command, NULL);
}

int main(int argc, char **argv) {
    (void)argc;
    tk_manage("com.example.gtk-text");
    GtkApplication *app = gtk_application_new("com.example.gtktext", G_APPLICATION_NON_UNIQUE);
    g_signal_connect(app, "activate", G_CALLBACK(activate), NULL);
    char *args[] = {argv[0], NULL};
    return g_application_run(G_APPLICATION(app), 1, args);
}
