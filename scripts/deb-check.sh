#!/usr/bin/env bash
# make deb-check: the Debian packages of `make deb`, installed as an administrator would, on a
# machine without Swift (docs/DEPLOYMENT.md, "Installing the packages").
#
#   scripts/deb-check.sh [DEB_DIR]
#
# 1. lintian on every package (errors and warnings fail, but the tags listed below with why).
# 2. In a private mount namespace (unshare -m): a copy-on-write copy of this machine's root
#    (overlayfs over /, changes in a tmpfs, all discarded at the end) with the Swift toolchain's
#    folder hidden under an empty tmpfs, then, chrooted there:
#    * dpkg -i of the five packages; ldd finds every library of the three programs;
#    * the agent started as the unit says (its user and group, CAP_SYS_PTRACE only, no new
#      privileges, its state and runtime folders, no network as PrivateNetwork=), with
#      /etc/sharebroker/device.json registering a C app built from libsharebroker-dev's example
#      through pkg-config, and a Python app (the Python example under a launcher of its own, as
#      a Python app is deployed; the system's python3 is refused as an interpreter);
#    * both apps, run as a desktop user, attach, copy sealed, paste, and are refused Open In to an
#      unlisted app; /usr/bin/sharebroker itself, registered as an app, gets its keys, and the
#      system's python3, registered as one, is refused as an interpreter; `sharebroker policy check` and `explain` on the installed policy, and
#      `sharebroker admin status` from root against the service;
#    * dpkg -r, then dpkg -P: nothing of the packages is left but what DEPLOYMENT.md names (the
#      system user, and /etc/sharebroker while it holds the administrator's files).
# Needs root. Takes about a minute once the packages are built (lintian 50 s of it;
# DEB_CHECK_SKIP_LINTIAN=1 skips lintian while iterating on the rest).
set -euo pipefail

# Runs an account command, again while /etc/passwd is locked by another process (exit 1 with
# "cannot lock"), for up to 10 s.
with_account_lock() {
    local try
    for try in $(seq 1 20); do
        "$@" 2>"/tmp/deb-check-account.$$" && { rm -f "/tmp/deb-check-account.$$"; return 0; }
        grep -q 'lock' "/tmp/deb-check-account.$$" || { cat "/tmp/deb-check-account.$$" >&2; rm -f "/tmp/deb-check-account.$$"; return 1; }
        sleep 0.5
    done
    cat "/tmp/deb-check-account.$$" >&2; rm -f "/tmp/deb-check-account.$$"; return 1
}
cd "$(dirname "$0")/.."
start=$SECONDS
step() { echo "== deb-check [$((SECONDS - start)) s]: $*"; }
fail() { echo "deb-check: $*" >&2; exit 1; }

# ---------------------------------------------------------------------------------------------
# Inside the chroot: the administrator's machine.
if [ "${1:-}" = "--inside" ]; then
    toolchain_runtime=$2
    export PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8
    cd /
    [ ! -e "$toolchain_runtime/linux/libswiftCore.so" ] || fail "the Swift toolchain is still visible at $toolchain_runtime"
    ! command -v swift >/dev/null 2>&1 || fail "swift is still on the PATH: $(command -v swift)"
    ! ldconfig -p | grep -q 'libswiftCore\|libFoundation' || fail "a Swift runtime library is in the linker cache"

    # The account files as they are before the install, copied up into this root first (touch),
    # so that users the real machine adds or removes meanwhile do not count.
    touch /etc/passwd /etc/group
    cp /etc/passwd /tmp/passwd.before; cp /etc/group /tmp/group.before

    step "dpkg -i (toolchain hidden)"
    dpkg -i /tmp/debs/*.deb > /tmp/dpkg-install.log 2>&1 || { cat /tmp/dpkg-install.log; fail "dpkg -i failed"; }
    multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
    library=/usr/lib/$multiarch/libsharebroker.so.1
    for f in /usr/bin/sharebroker /usr/bin/sharebrokerd "$library"; do
        [ -f "$f" ] || fail "$f is not installed"
        if ldd "$f" | grep -q 'not found'; then ldd "$f"; fail "$f needs a library that is not installed"; fi
        if ldd "$f" | grep -Eq 'swift|Foundation|icu'; then ldd "$f"; fail "$f loads a Swift toolchain library"; fi
    done
    getent passwd sharebroker >/dev/null || fail "the postinst did not create the user sharebroker"
    [ -d /etc/sharebroker/policies.d ] || fail "/etc/sharebroker/policies.d is missing"
    [ -L /etc/systemd/system/multi-user.target.wants/sharebrokerd.service ] || fail "the unit was not enabled"
    dpkg-query -W -f='${Package} ${Installed-Size} KiB\n' sharebroker libsharebroker1 libsharebroker-dev \
        sharebroker-dbgsym libsharebroker1-dbgsym

    step "a C app and a Python app, built from libsharebroker-dev as an app vendor would"
    work=$(mktemp -d)
    cflags=$(pkg-config --cflags sharebroker)
    libs=$(pkg-config --libs sharebroker)
    case "$cflags $libs" in *rpath*) fail "sharebroker.pc carries -rpath: $libs";; esac
    examples=/usr/share/doc/libsharebroker-dev/examples
    # shellcheck disable=SC2086
    gcc -std=c11 -Wall -Wextra -Werror $cflags "$examples/c/copy_and_open_in.c" $libs -o "$work/acme-notes"
    install -D -m 0755 "$work/acme-notes" /opt/acme/bin/acme-notes
    # A Python app is deployed as a program of its own that runs its script, in isolated mode (no
    # PYTHONPATH, no user site): the system's python3 runs whatever it is given and is refused.
    python_include=$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
    python_version=$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_config_var("LDVERSION"))')
    install -D -m 0644 "$examples/python/copy_and_open_in.py" /opt/acme/share/pytool/copy_and_open_in.py
    cat > "$work/launcher.c" <<'C'
#include <Python.h>
int main(int argc, char **argv) {
    char *args[64] = {argv[0], "-I", "/opt/acme/share/pytool/copy_and_open_in.py"};
    int n = 3;
    for (int i = 1; i < argc && n < 63; i++) args[n++] = argv[i];
    return Py_BytesMain(n, args);
}
C
    gcc -Wall -Werror -I"$python_include" "$work/launcher.c" -lpython"$python_version" -o "$work/acme-pytool"
    install -D -m 0755 "$work/acme-pytool" /opt/acme/bin/acme-pytool
    # useradd and userdel refuse at once while another process of the machine holds the account
    # files' lock (a test suite creating its throwaway users): try again for a few seconds.
    with_account_lock useradd --no-create-home --shell /usr/sbin/nologin sbdesk
    desktop=$(id -u sbdesk)
    cat > /etc/sharebroker/device.json <<JSON
{
  "format": "sharebroker.device",
  "version": 1,
  "apps": [
    {"id": "com.acme.notes", "executable": "/opt/acme/bin/acme-notes", "appConnect": true, "users": [$desktop],
     "policy": {"auth": "authorized", "openIn": "whitelist", "openInWhitelist": ["com.acme.viewer"],
                "pasteboard": "secureCopy", "print": "authorized"}},
    {"id": "com.acme.pytool", "executable": "/opt/acme/bin/acme-pytool", "appConnect": true, "users": [$desktop],
     "policy": {"auth": "authorized", "openIn": "whitelist", "openInWhitelist": ["com.acme.viewer"],
                "pasteboard": "secureCopy", "print": "authorized"}},
    {"id": "com.acme.systempython", "executable": "$(readlink -f /usr/bin/python3)", "appConnect": true, "users": [$desktop],
     "policy": {"auth": "authorized", "pasteboard": "secureCopy"}},
    {"id": "com.acme.cli", "executable": "/usr/bin/sharebroker", "appConnect": true, "users": [$desktop],
     "policy": {"auth": "authorized", "pasteboard": "secureCopy"}},
    {"id": "com.acme.viewer", "executable": "/opt/acme/viewer/bin/acme-viewer", "appConnect": true,
     "policy": {"auth": "authorized"}}
  ]
}
JSON
    chmod 0644 /etc/sharebroker/device.json

    step "sharebroker policy check and explain on the installed policy"
    sharebroker policy check /etc/sharebroker/device.json > "$work/check.out" || { cat "$work/check.out"; fail "policy check failed"; }
    grep -q "com.acme.notes" "$work/check.out" || { cat "$work/check.out"; fail "policy check did not list the app"; }
    sharebroker explain --policy /etc/sharebroker/device.json --app com.acme.notes -- \
        '{"op":"openIn","document":"Q3.pdf","content":"x","target":"org.example.chat"}' > "$work/explain.out" 2>&1 \
        || { cat "$work/explain.out"; fail "explain failed"; }
    grep -q "^dummy: blocked: target org.example.chat is not in the whitelist" "$work/explain.out" \
        || { cat "$work/explain.out"; fail "explain did not explain the blocked Open In"; }

    step "the agent as the installed unit runs it"
    unit=/lib/systemd/system/sharebrokerd.service
    value() { sed -n "s/^$1=//p" "$unit" | tail -1; }
    user=$(value User) group=$(value Group)
    [ "$user" = sharebroker ] || fail "the unit runs as '$user'"
    install -d -m "$(value StateDirectoryMode)" -o "$user" -g "$group" "/var/lib/$(value StateDirectory)"
    install -d -m "$(value RuntimeDirectoryMode)" -o "$user" -g "$group" "/run/$(value RuntimeDirectory)"
    capability=$(value AmbientCapabilities | tr 'A-Z' 'a-z' | sed 's/^cap_//')
    [ "$capability" = sys_ptrace ] || fail "the unit grants '$capability'"
    # shellcheck disable=SC2046
    set -- $(value ExecStart)
    [ "$1" = /usr/bin/sharebrokerd ] || fail "the unit starts '$1'"
    # PrivateNetwork=yes: a network namespace of its own (unshare -n), then the user and capability.
    # LIBDISPATCH_LOG=stderr: libdispatch's own complaints (which go to syslog, the journal under
    # the unit) land in the log this checks ("Failed to set thread priority ... errno=13").
    (umask "$(value UMask)"; export LIBDISPATCH_LOG=stderr; exec unshare -n setpriv --reuid="$user" --regid="$group" --init-groups --no-new-privs \
        --inh-caps=+sys_ptrace --ambient-caps=+sys_ptrace --bounding-set=-all,+sys_ptrace -- "$@") \
        > /tmp/agent.log 2>&1 &
    agent=$!
    trap 'kill $agent 2>/dev/null || true' EXIT
    for _ in $(seq 1 100); do [ -S /run/sharebroker/agent.sock ] && break; sleep 0.1; done
    [ -S /run/sharebroker/agent.sock ] || { cat /tmp/agent.log; fail "the agent did not start"; }
    # $agent is the agent itself: the subshell execs unshare, which execs setpriv, which execs it.
    [ "$(ps -o user= -p "$agent")" = sharebroker ] && [ "$(ps -o comm= -p "$agent")" = sharebrokerd ] \
        || fail "the agent does not run as sharebroker: $(ps -o user=,comm= -p "$agent")"
    grep -q '^CapEff:.*0000000000080000$' "/proc/$agent/status" || fail "the agent's capabilities are not CAP_SYS_PTRACE alone: $(grep Cap "/proc/$agent/status")"
    if grep -q 'Failed to set thread priority' /tmp/agent.log; then cat /tmp/agent.log; fail "the agent logged the thread-priority noise"; fi

    step "sharebroker admin status from root's shell, as DEPLOYMENT.md shows it"
    sharebroker admin status > "$work/status.out" 2>&1 || { cat "$work/status.out"; cat /tmp/agent.log; fail "admin status failed"; }
    cat "$work/status.out"

    step "the C app and the Python app attached, as the desktop user"
    install -d -m 0700 -o sbdesk -g sbdesk "/run/user/$desktop"
    as_desktop() {
        env -i PATH=/usr/bin:/bin HOME=/nonexistent XDG_RUNTIME_DIR="/run/user/$desktop" \
            SHAREBROKER_SOCKET=/run/sharebroker/agent.sock SHAREBROKER_AGENT_UID="$(id -u sharebroker)" \
            setpriv --reuid=sbdesk --regid=sbdesk --init-groups -- "$@"
    }
    as_desktop /opt/acme/bin/acme-notes com.acme.viewer org.example.chat > "$work/notes.out" 2>&1 \
        || { cat "$work/notes.out" /tmp/agent.log; fail "the C app failed"; }
    as_desktop /opt/acme/bin/acme-pytool com.acme.viewer org.example.chat > "$work/pytool.out" 2>&1 \
        || { cat "$work/pytool.out" /tmp/agent.log; fail "the Python app failed"; }
    for out in notes pytool; do
        for expected in "copy: sealed (secureCopy)" "paste: 11 bytes of public.utf8-plain-text: secret plan" \
                        "open in com.acme.viewer: delivered" "open in org.example.chat: dummy"; do
            grep -q "$expected" "$work/$out.out" || { cat "$work/$out.out" /tmp/agent.log; fail "$out: no '$expected'"; }
        done
    done
    grep -q "app: com.acme.notes" "$work/notes.out" || fail "the C app was not identified as com.acme.notes"
    # The system's python3 registered as an app: an interpreter, refused (so the launcher above).
    if as_desktop /usr/bin/python3 -I /opt/acme/share/pytool/copy_and_open_in.py > "$work/python3.out" 2>&1; then
        cat "$work/python3.out"; fail "the system's python3, registered as an app, was admitted"
    fi
    grep -q "interpreter" "$work/python3.out" || { cat "$work/python3.out"; fail "the system's python3 was not refused as an interpreter"; }
    # The host tool itself registered as an app, installed in /usr/bin (a name starting with "sh"
    # was once taken for a shell's): identified, not refused as an interpreter.
    as_desktop /usr/bin/sharebroker status > "$work/cli.out" 2>&1 || { cat "$work/cli.out" /tmp/agent.log; fail "sharebroker status as com.acme.cli failed"; }
    grep -q "keys 0x" "$work/cli.out" || { cat "$work/cli.out"; fail "sharebroker, registered as an app, got no keys"; }
    kill $agent; wait $agent 2>/dev/null || true
    trap - EXIT
    grep -q 'Failed to set thread priority' /tmp/agent.log && { cat /tmp/agent.log; fail "the agent logged the thread-priority noise"; }

    step "dpkg -r, then dpkg -P"
    dpkg -r sharebroker-dbgsym libsharebroker1-dbgsym libsharebroker-dev sharebroker libsharebroker1 > /tmp/dpkg-remove.log 2>&1 \
        || { cat /tmp/dpkg-remove.log; fail "dpkg -r failed"; }
    [ ! -e /usr/bin/sharebrokerd ] || fail "dpkg -r left /usr/bin/sharebrokerd"
    [ -d /var/lib/sharebroker ] || fail "dpkg -r removed the agent's state (only a purge may)"
    dpkg -P sharebroker-dbgsym libsharebroker1-dbgsym libsharebroker-dev sharebroker libsharebroker1 > /tmp/dpkg-purge.log 2>&1 \
        || { cat /tmp/dpkg-purge.log; fail "dpkg -P failed"; }
    [ ! -e /var/lib/sharebroker ] || fail "dpkg -P left /var/lib/sharebroker"
    # The administrator's device.json stays, and with it /etc/sharebroker (dpkg keeps a folder that
    # is not empty); the test's own apps and user go here, so that the comparison outside sees
    # only what the packages left.
    [ ! -e /etc/sharebroker/policies.d ] || fail "dpkg -P left the empty /etc/sharebroker/policies.d"
    [ -f /etc/sharebroker/device.json ] || fail "dpkg -P removed the administrator's /etc/sharebroker/device.json"
    rm /etc/sharebroker/device.json
    rmdir /etc/sharebroker
    rm -rf /opt/acme "/run/user/$desktop" "$work"
    with_account_lock userdel sbdesk
    # Debian leaves system users: the account files gained the user sharebroker and nothing else.
    for file in passwd group; do
        extra=$( (diff <(cut -d: -f1 "/tmp/$file.before" | sort) <(cut -d: -f1 "/etc/$file" | sort) || true) | sed -n 's/^[<>] //p' | tr '\n' ' ')
        [ "$extra" = "sharebroker " ] || fail "/etc/$file changed by '$extra' (expected only the user sharebroker added)"
    done
    exit 0
fi

# ---------------------------------------------------------------------------------------------
# In the private mount namespace: the copy of the root, the toolchain hidden, then the chroot.
if [ "${1:-}" = "--namespace" ]; then
    debs=$2 toolchain=$3 base=$4
    mount -t tmpfs -o mode=0755 tmpfs "$base"
    mkdir -p "$base/upper" "$base/work" "$base/root"
    mount -t overlay overlay -o "lowerdir=/,upperdir=$base/upper,workdir=$base/work" "$base/root"
    root=$base/root
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    mount --rbind /sys "$root/sys"
    for folder in /tmp /run; do mount -t tmpfs -o mode=1777 tmpfs "$root$folder"; done
    chmod 0755 "$root/run"
    # The toolchain: its whole folder (/opt/swift for /opt/swift/usr/bin/swift) when it is a
    # folder of its own, else (a toolchain in /usr) its runtime libraries.
    if [ "$toolchain" != /usr ] && [ "$(dirname "$toolchain")" != / ]; then
        mount -t tmpfs -o ro,mode=0755 tmpfs "$root$(dirname "$toolchain")"
    else
        mount -t tmpfs -o ro,mode=0755 tmpfs "$root$toolchain/lib/swift"
    fi
    mkdir -p "$root/tmp/debs"
    cp "$debs"/*.deb "$root/tmp/debs/"
    cp "$0" "$root/tmp/deb-check.sh"
    # ldconfig's cache of the copy must not list the toolchain either.
    chroot "$root" ldconfig
    status=0
    chroot "$root" /bin/bash /tmp/deb-check.sh --inside "$toolchain/lib/swift" || status=$?
    if [ $status -ne 0 ]; then exit $status; fi
    # What the packages left in the root, seen in the overlay's upper layer: every file, link or
    # whiteout there is a change. Allowed: dpkg's own records and log, the linker cache, the
    # system user in the account files (DEPLOYMENT.md: Debian leaves system users), and the
    # folders the copy-up made (they exist in the real root).
    step "what is left after the purge"
    left=$(cd "$base/upper" && find . -mindepth 1 \( -type d -o -type f -o -type l -o -type c \) -printf '%y %P\n' | sort | while read -r kind path; do
        case "$path" in
            var/lib/dpkg|var/lib/dpkg/*|var/log/dpkg.log|var/log/apt|var/log/apt/*|etc/ld.so.cache) continue;;
            etc/passwd|etc/group|etc/shadow|etc/gshadow|etc/passwd-|etc/group-|etc/shadow-|etc/gshadow-|etc/subuid|etc/subgid|etc/subuid-|etc/subgid-) continue;;
            var/log/lastlog|var/log/faillog|var/mail|var/spool/mail|etc/.pwd.lock|var/cache/ldconfig|var/cache/ldconfig/*) continue;;
        esac
        if [ "$kind" = d ] && [ -d "/$path" ]; then continue; fi
        echo "$kind /$path"
    done)
    if [ -n "$left" ]; then echo "$left"; fail "the packages left the files above after dpkg -P"; fi
    exit 0
fi

# ---------------------------------------------------------------------------------------------
debs=$(realpath "${1:-.build-deb}")
[ "$(id -u)" = 0 ] || fail "needs root (dpkg -i into a private copy of the root, in a mount namespace)"
ls "$debs"/sharebroker_*.deb "$debs"/libsharebroker1_*.deb "$debs"/libsharebroker-dev_*.deb >/dev/null \
    || fail "no packages in $debs: make deb"
swift=$(command -v swift || true)
[ -n "$swift" ] || fail "swift is not on the PATH: the toolchain to hide is unknown"
toolchain=$(dirname "$(dirname "$(realpath "$swift")")")   # .../usr/bin/swift -> .../usr

step "lintian"
command -v lintian >/dev/null || fail "lintian is missing: make deps installs it"
# Suppressed, with why: no-manual-page (the programs' --help is their manual; man pages are
# future work); initial-upload-closes-no-bugs (no Debian bug tracks this package);
# debian-changelog-file-missing-or-wrong-name and the like would be real; nothing else is.
[ -n "${DEB_CHECK_SKIP_LINTIAN:-}" ] || lintian --fail-on error,warning --tag-display-limit 0 \
    --suppress-tags no-manual-page,initial-upload-closes-no-bugs \
    "$debs"/*.deb

for deb in "$debs"/*.deb; do
    printf '%-44s installs %6s KiB (package file %s KiB)\n' "$(basename "$deb")" \
        "$(dpkg-deb -f "$deb" Installed-Size)" "$(( $(stat -c %s "$deb") / 1024 ))"
done

base=$(mktemp -d "${TMPDIR:-/tmp}/sharebroker-deb-check.XXXXXX")
status=0
unshare --mount --propagation private "$0" --namespace "$debs" "$toolchain" "$base" || status=$?
rmdir "$base" 2>/dev/null || true
[ $status -eq 0 ] || fail "failed (above)"
step "passed"
