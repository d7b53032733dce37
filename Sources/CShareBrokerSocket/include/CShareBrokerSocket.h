// Linux socket and process glue the agent and its client need and Glibc's Swift module does not export
// without _GNU_SOURCE: struct ucred (SO_PEERCRED, SCM_CREDENTIALS), SO_PASSCRED, SO_PEERPIDFD,
// pidfd_open and pidfd_send_signal. Plain C over the kernel's own structures: nothing here is
// copied by hand into Swift.
#ifndef CSHAREBROKERSOCKET_H
#define CSHAREBROKERSOCKET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/// What the kernel says about the other end of a Unix socket, or about the writer of some bytes.
typedef struct {
    int32_t pid;
    uint32_t uid;
    uint32_t gid;
} sbs_credentials;

/// SO_PEERCRED: the process that called connect (or listen). 0, or -1 with errno.
int sbs_peer_credentials(int fd, sbs_credentials *out);

/// Turns SO_PASSCRED on: every recvmsg then carries the writer's SCM_CREDENTIALS. 0, or -1.
int sbs_enable_pass_credentials(int fd);

/// recvmsg into buf, with the writer's credentials. Returns the byte count (0 at end of file),
/// or -1 with errno. *has_credentials is 1 when the kernel attached SCM_CREDENTIALS. File
/// descriptors passed with SCM_RIGHTS are closed at once (the agent accepts none).
ssize_t sbs_receive(int fd, void *buf, size_t len, sbs_credentials *credentials, int *has_credentials);

/// A pidfd for the socket's peer: SO_PEERPIDFD (Linux 6.5+) when the kernel has it and
/// allow_peerpidfd is 1, else pidfd_open(pid) of the SO_PEERCRED pid. *source is 1 for
/// SO_PEERPIDFD, 2 for pidfd_open. Returns the descriptor (O_CLOEXEC) or -1 with errno.
int sbs_peer_pidfd(int fd, int32_t pid, int allow_peerpidfd, int *source);

/// Whether the process behind pidfd is still alive: 1 alive, 0 exited, -1 with errno.
int sbs_pidfd_alive(int pidfd);

/// The pid the pidfd refers to (the "Pid:" line of /proc/self/fdinfo), -1 when it exited or
/// cannot be read.
int32_t sbs_pidfd_pid(int pidfd);

/// The namespace of kind `kind` (0: pid, 1: user) the process behind pidfd is in, as the device
/// and inode of its nsfs file: through PIDFD_GET_PID_NAMESPACE / PIDFD_GET_USER_NAMESPACE (Linux
/// 6.11+; needs the same access as /proc/PID/ns). 0, or -1 with errno (ENOTTY or EINVAL: the
/// kernel has no such ioctl).
int sbs_pidfd_namespace(int pidfd, int kind, uint64_t *device, uint64_t *inode);

/// accept4 with SOCK_CLOEXEC. The descriptor, or -1 with errno.
int sbs_accept(int listener);

/// An eventfd (EFD_CLOEXEC, and EFD_NONBLOCK when nonblocking is 1), or -1 with errno.
int sbs_eventfd(int nonblocking);

/// prctl(PR_SET_DUMPABLE, 0): no core dump, no ptrace and no /proc/PID/mem, environ or fd
/// for processes of the same user (the process's /proc files become root's). 0, or -1 with errno.
int sbs_deny_inspection(void);

/// prctl(PR_SET_DUMPABLE, 1): the process is dumpable again (its /proc files its user's).
/// 0, or -1 with errno.
int sbs_allow_inspection(void);

/// The pid of the process tracing this one (TracerPid in /proc/self/status): 0 when none,
/// -1 when it could not be read.
int sbs_tracer_pid(void);

/// mallopt(M_ARENA_MAX, count): at most `count` malloc arenas. 1 when set, 0 when not.
int sbs_limit_malloc_arenas(int count);

/// Puts back the kernel's default action for the signals of a crash (SIGSEGV, SIGBUS, SIGILL,
/// SIGFPE, SIGTRAP, SIGABRT, SIGQUIT): the Swift runtime's backtracer, which prints registers
/// and the memory around them, no longer runs. 0, or -1 with errno.
int sbs_default_crash_signals(void);

/// prctl(PR_GET_DUMPABLE): 1 when dumpable, 0 when not, -1 with errno.
int sbs_dumpable(void);

/// prctl(PR_SET_NAME): names the calling thread (the kernel keeps the first 15 bytes).
/// 0, or -1 with errno.
int sbs_set_thread_name(const char *name);

#endif
