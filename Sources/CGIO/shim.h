// GIO for the Linux desktop adapter (apt libglib2.0-dev): desktop entries (GDesktopAppInfo),
// default handlers, content types and launching. Also two thin wrappers over calls Swift cannot
// import (variadic ioctl, syscall), for the adapter's private copies. No _GNU_SOURCE here: it
// would change libc's types against the other C modules of the package.
//
// The target is found through pkg-config's glib-2.0 (the include folders of GLib and GIO), not
// gio-unix-2.0: the latter's flags carry -pthread (from gmodule), which SwiftPM refuses with a
// warning on every build. The one gio-unix header is included by its path, which Debian's
// libglib2.0-dev installs; the libraries are linked by the module map.
#include <gio/gio.h>
#include "/usr/include/gio-unix-2.0/gio/gdesktopappinfo.h"
#include <sys/ioctl.h>
#include <linux/fs.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>

/// Shares `src`'s extents with `dst` (reflink, FICLONE): 0, or -1 with errno (EOPNOTSUPP, EXDEV...).
static inline int sharebroker_ficlone(int dst, int src) {
    return ioctl(dst, FICLONE, src);
}

/// Opens `path` following no symbolic link anywhere on it (openat2 with RESOLVE_NO_SYMLINKS:
/// ELOOP if one is met); on a kernel without openat2 (before 5.6), open(2) with `flags`, which
/// should hold O_NOFOLLOW.
static inline int sharebroker_open_no_links(const char *path, int flags) {
    struct open_how how = { .flags = (__u64)(unsigned)flags, .mode = 0, .resolve = RESOLVE_NO_SYMLINKS };
    long fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
    if (fd < 0 && errno == ENOSYS) return open(path, flags);
    return (int)fd;
}

/// copy_file_range(2) from the current offsets of both descriptors.
static inline ssize_t sharebroker_copy_file_range(int src, int dst, size_t length) {
    return (ssize_t)syscall(SYS_copy_file_range, src, NULL, dst, NULL, length, 0u);
}
