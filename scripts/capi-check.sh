#!/usr/bin/env bash
# make capi-check: the C interface end to end (Makefile comment; README "Using it from C and
# other languages"). Uses the debug build (`make test` has built it); prints the time each step took.
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
work=$(mktemp -d "${TMPDIR:-/tmp}/sharebroker-capi.XXXXXX")
agent_pid=""
cleanup() {
    if [ -n "$agent_pid" ]; then kill "$agent_pid" 2>/dev/null || true; wait "$agent_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
start=$SECONDS
step() { echo "== capi-check [$((SECONDS - start)) s]: $*"; }

step "the header as C11 and as C++17, warnings as errors"
printf '#include <sharebroker.h>\nint main(void) { sb_policy_update u = SB_POLICY_UPDATE_INIT; return sb_version() == 0 || u.auth != SB_KEEP; }\n' > "$work/header.c"
gcc -std=c11 -Wall -Wextra -Werror -pedantic -Iinclude -c "$work/header.c" -o "$work/header-c.o"
cp "$work/header.c" "$work/header.cpp"
g++ -std=c++17 -Wall -Wextra -Werror -pedantic -Iinclude -c "$work/header.cpp" -o "$work/header-cpp.o"

step "make install into a temporary prefix (debug build)"
prefix="$work/prefix"
make --no-print-directory install PREFIX="$prefix" INSTALL_CONFIG=debug SWIFT="$SWIFT" > "$work/install.log" 2>&1 \
    || { cat "$work/install.log"; exit 1; }
for f in include/sharebroker.h lib/libsharebroker.so lib/libsharebroker.so.1 lib/pkgconfig/sharebroker.pc bin/sharebroker bin/sharebrokerd; do
    [ -e "$prefix/$f" ] || { echo "capi-check: make install did not install $f"; exit 1; }
done
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
soname=$(readelf -d "$prefix/lib/libsharebroker.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = "libsharebroker.so.1" ] || { echo "capi-check: SONAME is '$soname', expected libsharebroker.so.1"; exit 1; }

step "exported symbols against capi/exported-symbols.txt"
nm -D --defined-only "$prefix/lib/libsharebroker.so" | awk '$2 ~ /^[A-Z]$/ && $2 != "A" {sub(/@.*/, "", $3); print $3}' \
    | sort > "$work/exported.txt"
if ! diff -u capi/exported-symbols.txt "$work/exported.txt"; then
    echo "capi-check: the exported symbols changed (above: - committed, + built). An ABI change must be deliberate:"
    echo "  add new sb_ functions to capi/exported-symbols.txt (and bump SB_VERSION_MINOR); never remove one within a major version."
    exit 1
fi

step "the C example through pkg-config (embedded)"
cflags=$(pkg-config --cflags sharebroker)
libs=$(pkg-config --libs sharebroker)
# shellcheck disable=SC2086
gcc -std=c11 -Wall -Wextra -Werror $cflags examples/c/copy_and_open_in.c $libs -o "$work/copy_and_open_in"
"$work/copy_and_open_in" --embedded | tee "$work/example.out"
grep -q "copy: sealed (secureCopy)" "$work/example.out"
grep -q "open in org.example.sheets: delivered" "$work/example.out"
grep -q "open in org.example.chat: dummy" "$work/example.out"

step "the C test suite"
# shellcheck disable=SC2086
gcc -std=c11 -Wall -Wextra -Werror -g -pthread $cflags Tests/CAPI/test_capi.c $libs -o "$work/test_capi"
"$work/test_capi"

step "the C test suite under AddressSanitizer and LeakSanitizer (ownership: no leak, no double free)"
# shellcheck disable=SC2086
gcc -std=c11 -Wall -Wextra -Werror -g -pthread -fsanitize=address -fno-omit-frame-pointer $cflags Tests/CAPI/test_capi.c $libs \
    -o "$work/test_capi_asan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 LSAN_OPTIONS=suppressions=$PWD/scripts/sanitizers/capi-lsan.supp \
    "$work/test_capi_asan"

step "the Python ctypes example (embedded)"
python3 examples/python/copy_and_open_in.py --embedded --lib "$prefix/lib/libsharebroker.so" | tee "$work/python.out"
grep -q "copy: sealed (secureCopy)" "$work/python.out"
grep -q "open in org.example.chat: dummy" "$work/python.out"

step "the C test suite and both examples attached to a real sharebrokerd"
python=$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')
export SHAREBROKER_RUNTIME_DIR="$work/run"
mkdir -p "$SHAREBROKER_RUNTIME_DIR"
chmod 700 "$SHAREBROKER_RUNTIME_DIR"
cat > "$work/device.json" <<JSON
{
  "format": "sharebroker.device",
  "version": 1,
  "apps": [
    {"id": "com.acme.notes", "executable": "$work/copy_and_open_in", "appConnect": true,
     "policy": {"auth": "authorized", "openIn": "whitelist", "openInWhitelist": ["com.acme.viewer"],
                "pasteboard": "secureCopy", "print": "authorized"}},
    {"id": "com.acme.pytool", "executable": "$python", "appConnect": true,
     "policy": {"auth": "authorized", "openIn": "whitelist", "openInWhitelist": ["com.acme.viewer"],
                "pasteboard": "secureCopy", "print": "authorized"}},
    {"id": "com.acme.tests", "executable": "$work/test_capi", "appConnect": true,
     "policy": {"auth": "authorized", "openIn": "whitelist", "openInWhitelist": ["com.acme.viewer"],
                "pasteboard": "secureCopy", "print": "authorized"}},
    {"id": "com.acme.viewer", "executable": "/opt/acme/viewer/bin/acme-viewer", "appConnect": true,
     "policy": {"auth": "authorized"}}
  ]
}
JSON
env -u DISPLAY -u WAYLAND_DISPLAY "$prefix/bin/sharebrokerd" --policy "$work/device.json" > "$work/agent.log" 2>&1 &
agent_pid=$!
for _ in $(seq 1 100); do [ -S "$SHAREBROKER_RUNTIME_DIR/agent.sock" ] && break; sleep 0.1; done
[ -S "$SHAREBROKER_RUNTIME_DIR/agent.sock" ] || { cat "$work/agent.log"; echo "capi-check: sharebrokerd did not start"; exit 1; }
env -u DISPLAY -u WAYLAND_DISPLAY "$work/test_capi" --attached
env -u DISPLAY -u WAYLAND_DISPLAY "$work/copy_and_open_in" com.acme.viewer org.example.chat | tee "$work/attached.out"
grep -q "app: com.acme.notes" "$work/attached.out"
grep -q "copy: sealed (secureCopy)" "$work/attached.out"
grep -q "paste: 11 bytes of public.utf8-plain-text: secret plan" "$work/attached.out"
grep -q "open in com.acme.viewer: delivered" "$work/attached.out"
grep -q "open in org.example.chat: dummy" "$work/attached.out"
env -u DISPLAY -u WAYLAND_DISPLAY python3 examples/python/copy_and_open_in.py --lib "$prefix/lib/libsharebroker.so" \
    com.acme.viewer org.example.chat | tee "$work/attached-python.out"
grep -q "copy: sealed (secureCopy)" "$work/attached-python.out"
grep -q "paste: 11 bytes of public.utf8-plain-text: secret plan" "$work/attached-python.out"
grep -q "open in com.acme.viewer: delivered" "$work/attached-python.out"
grep -q "open in org.example.chat: dummy" "$work/attached-python.out"

step "passed"
