#define _GNU_SOURCE
#include "CShareBrokerSocket.h"

#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

int sbs_peer_credentials(int fd, sbs_credentials *out) {
    if (out == NULL) { errno = EINVAL; return -1; }
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
    out->pid = cred.pid;
    out->uid = cred.uid;
    out->gid = cred.gid;
    return 0;
}

int sbs_enable_pass_credentials(int fd) {
    int one = 1;
    return setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one));
}

ssize_t sbs_receive(int fd, void *buf, size_t len, sbs_credentials *credentials, int *has_credentials) {
    if (buf == NULL || credentials == NULL || has_credentials == NULL) { errno = EINVAL; return -1; }
    *has_credentials = 0;
    union {
        char bytes[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(sizeof(int) * 16)];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof(control));
    struct iovec iov = { .iov_base = buf, .iov_len = len };
    struct msghdr msg;
    memset(&msg, 0, sizeof(msg));
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.bytes;
    msg.msg_controllen = sizeof(control.bytes);
    ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0) return -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET) continue;
        if (c->cmsg_type == SCM_CREDENTIALS && c->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
            struct ucred cred;
            memcpy(&cred, CMSG_DATA(c), sizeof(cred));
            credentials->pid = cred.pid;
            credentials->uid = cred.uid;
            credentials->gid = cred.gid;
            *has_credentials = 1;
        } else if (c->cmsg_type == SCM_RIGHTS) {
            size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < count; i++) {
                int passed;
                memcpy(&passed, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                close(passed);
            }
        }
    }
    return n;
}

int sbs_peer_pidfd(int fd, int32_t pid, int allow_peerpidfd, int *source) {
    if (source == NULL) { errno = EINVAL; return -1; }
    *source = 0;
    if (allow_peerpidfd) {
        int pidfd = -1;
        socklen_t len = sizeof(pidfd);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 && pidfd >= 0) {
            *source = 1;
            return pidfd;
        }
        if (errno != ENOPROTOOPT && errno != EINVAL) return -1;
    }
    long pidfd = syscall(SYS_pidfd_open, (pid_t)pid, 0);
    if (pidfd < 0) return -1;
    *source = 2;
    return (int)pidfd;
}

int sbs_pidfd_alive(int pidfd) {
    if (syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0) return 1;
    if (errno == ESRCH) return 0;
    // EPERM: the process exists, but we may not signal it.
    if (errno == EPERM) return 1;
    return -1;
}

int32_t sbs_pidfd_pid(int pidfd) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
    FILE *file = fopen(path, "re");
    if (file == NULL) return -1;
    char line[256];
    int32_t pid = -1;
    while (fgets(line, sizeof(line), file) != NULL) {
        if (strncmp(line, "Pid:", 4) == 0) {
            pid = (int32_t)strtol(line + 4, NULL, 10);
            break;
        }
    }
    fclose(file);
    return pid <= 0 ? -1 : pid;
}

// include/uapi/linux/pidfd.h (Linux 6.11); older headers lack them.
#ifndef PIDFD_GET_PID_NAMESPACE
#define PIDFD_GET_PID_NAMESPACE _IO(0xFF, 5)
#endif
#ifndef PIDFD_GET_USER_NAMESPACE
#define PIDFD_GET_USER_NAMESPACE _IO(0xFF, 9)
#endif

int sbs_pidfd_namespace(int pidfd, int kind, uint64_t *device, uint64_t *inode) {
    if (device == NULL || inode == NULL || (kind != 0 && kind != 1)) { errno = EINVAL; return -1; }
    int ns = ioctl(pidfd, kind == 0 ? PIDFD_GET_PID_NAMESPACE : PIDFD_GET_USER_NAMESPACE, 0);
    if (ns < 0) return -1;
    struct stat info;
    int result = fstat(ns, &info);
    int saved = errno;
    close(ns);
    if (result != 0) { errno = saved; return -1; }
    *device = (uint64_t)info.st_dev;
    *inode = (uint64_t)info.st_ino;
    return 0;
}

int sbs_accept(int listener) {
    return accept4(listener, NULL, NULL, SOCK_CLOEXEC);
}

int sbs_eventfd(int nonblocking) {
    return eventfd(0, EFD_CLOEXEC | (nonblocking ? EFD_NONBLOCK : 0));
}

int sbs_deny_inspection(void) {
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

int sbs_allow_inspection(void) {
    return prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
}

int sbs_tracer_pid(void) {
    FILE *file = fopen("/proc/self/status", "re");
    if (file == NULL) return -1;
    char line[256];
    int pid = -1;
    while (fgets(line, sizeof line, file) != NULL) {
        if (strncmp(line, "TracerPid:", 10) == 0) {
            pid = atoi(line + 10);
            break;
        }
    }
    fclose(file);
    return pid;
}

int sbs_limit_malloc_arenas(int count) {
    return mallopt(M_ARENA_MAX, count);
}

int sbs_default_crash_signals(void) {
    const int signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGABRT, SIGQUIT };
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = SIG_DFL;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) {
        if (sigaction(signals[i], &action, NULL) != 0) return -1;
    }
    return 0;
}

int sbs_dumpable(void) {
    return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
}

int sbs_set_thread_name(const char *name) {
    if (name == NULL) { errno = EINVAL; return -1; }
    return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}
