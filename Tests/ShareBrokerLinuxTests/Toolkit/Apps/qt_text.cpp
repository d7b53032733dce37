// A Qt 6 test app: a QTextEdit holding $SB_TEXT, all selected, in a window titled
// "sbtoolkit-qt". Managed by managed.h (one call). Prints "ready" once the window is shown.
// Prints "active" when the window gets the focus. Commands on standard input, one a line: "copy" / "cut" call the edit's copy() / cut() (what
// the context menu's Copy and Cut do), "select" selects everything again and puts it on the
// selection clipboard as Qt's text widgets do when the mouse selects (PRIMARY).
#include <QApplication>
#include <QClipboard>
#include <QSocketNotifier>
#include <QTextEdit>
#include <QTimer>
#include <QWindow>
#include <cstdio>
#include <string>
#include <unistd.h>

extern "C" {
#include "managed.h"
}

int main(int argc, char **argv) {
    tk_manage("com.example.qt-text");
    QApplication app(argc, argv);
    QTextEdit edit;
    edit.setWindowTitle("sbtoolkit-qt");
    edit.setAcceptRichText(false);
    const char *text = getenv("SB_TEXT") ? getenv("SB_TEXT") : "known-text-4711";
    edit.setPlainText(QString::fromUtf8(text));
    edit.selectAll();
    edit.resize(300, 100);
    edit.show();
    edit.activateWindow();
    edit.setFocus();
    QTimer::singleShot(200, [] { std::printf("ready\n"); std::fflush(stdout); });
    // "active" once the window has the keyboard focus (a compositor gives it; Xvfb has no window
    // manager, so there it comes with xdotool's focus).
    QObject::connect(&app, &QGuiApplication::focusWindowChanged, [](QWindow *window) {
        if (window) { std::printf("active\n"); std::fflush(stdout); }
    });

    std::string pending;
    QSocketNotifier notifier(0, QSocketNotifier::Read);
    QObject::connect(&notifier, &QSocketNotifier::activated, [&](QSocketDescriptor, QSocketNotifier::Type) {
        char buffer[256];
        ssize_t n = read(0, buffer, sizeof buffer);
        if (n <= 0) { QApplication::quit(); return; }
        pending.append(buffer, static_cast<size_t>(n));
        size_t end;
        while ((end = pending.find('\n')) != std::string::npos) {
            std::string line = pending.substr(0, end);
            pending.erase(0, end + 1);
            if (line == "copy") {
                edit.copy();
            } else if (line == "cut") {
                edit.cut();
            } else if (line == "select") {
                edit.setPlainText(QString::fromUtf8(text));
                edit.selectAll();
                QApplication::clipboard()->setText(edit.textCursor().selectedText(), QClipboard::Selection);
            }
            std::printf("done %s\n", line.c_str());
            std::fflush(stdout);
        }
    });
    return app.exec();
}
