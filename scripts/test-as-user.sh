#!/usr/bin/env bash
# Runs test suites of the built test bundle as an ordinary user (issue 29: the agent runs as a
# desktop user without CAP_SYS_PTRACE in the one-user deployment, and root hides what that user
# cannot read). As root: a throwaway system user is created with useradd, the bundle runs as it
# with setpriv, and the user is removed afterwards. As any other user: the bundle runs as that
# user. Build first (`swift build --build-tests`, and the sharebroker and sharebrokerd products).
#
#   scripts/test-as-user.sh SUITE-FILTER...     e.g. scripts/test-as-user.sh AgentTests AgentCoreTests
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT="${SWIFT:-swift}"
[ "$#" -gt 0 ] || { echo "usage: $0 SUITE-FILTER..." >&2; exit 64; }
bin="$($SWIFT build --show-bin-path)"
bundle="$bin/ShareBrokerPackageTests.xctest"
[ -x "$bundle" ] || { echo "$bundle is missing: run swift build --build-tests first" >&2; exit 66; }
filters=()
for suite in "$@"; do filters+=(--filter "$suite"); done
home="$(mktemp -d /tmp/sharebroker-test-home.XXXXXX)"
if [ "$(id -u)" != 0 ]; then
    trap 'rm -rf "$home"' EXIT
    echo "test-as-user: running $* as $(id -un) (uid $(id -u))"
    HOME="$home" "$bundle" --testing-library swift-testing "${filters[@]}"
    exit
fi
user="sbci$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')"
useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
trap 'userdel "$user" >/dev/null 2>&1 || true; rm -rf "$home"' EXIT
chown "$user:" "$home"
uid="$(id -u "$user")"
echo "test-as-user: running $* as $user (uid $uid), created for this run"
# No XDG_RUNTIME_DIR of root's: the tests give every process its own runtime folder.
setpriv --reuid="$user" --regid="$user" --clear-groups -- \
    env -u XDG_RUNTIME_DIR HOME="$home" USER="$user" LOGNAME="$user" \
    "$bundle" --testing-library swift-testing "${filters[@]}"
