#!/usr/bin/env bash
# Builds every libFuzzer harness once, then runs each for SECONDS (default 180).
#
#   scripts/fuzz.sh [SECONDS]
#
# Environment:
#   FUZZ_TARGETS   harnesses to run (default: every Fuzz/Sources/Fuzz*/main.swift; the Makefile passes its list)
#   FUZZ_WORK      where each harness's growing corpus is kept between runs (default .build-fuzz/corpus)
#   FUZZ_SEED      libFuzzer -seed, to repeat a run exactly (default: libFuzzer picks one and prints it)
#   SWIFT          the swift driver (default swift)
#
# Each harness reads the committed seeds in Fuzz/corpus/<target>/ and the inputs of past findings
# in Fuzz/regressions/<target>/ (read only: new inputs go to FUZZ_WORK). Crashes, timeouts
# (-timeout=10), out-of-memory (-rss_limit_mb=2048) and leaks are written to a fresh temporary
# folder; if any harness finds one, the script prints the reproducer and exits non-zero.
set -uo pipefail
cd "$(dirname "$0")/.."

SECONDS_EACH="${1:-180}"
SWIFT="${SWIFT:-swift}"
SCRATCH="$PWD/.build-fuzz"
WORK="${FUZZ_WORK:-$SCRATCH/corpus}"
if [ -n "${FUZZ_TARGETS:-}" ]; then
    read -r -a TARGETS <<<"$FUZZ_TARGETS"
else
    TARGETS=()
    for main in Fuzz/Sources/Fuzz*/main.swift; do TARGETS+=("$(basename "$(dirname "$main")")"); done
fi

# `--sanitize=fuzzer --sanitize=address` alone compiles Swift with only the last sanitizer (no
# coverage: libFuzzer runs blind), so the combined flag is passed to the compiler as well.
build() {
    "$SWIFT" build --package-path Fuzz -c debug --product "$1" --sanitize=fuzzer --sanitize=address \
        -Xswiftc -sanitize=fuzzer,address --scratch-path "$SCRATCH" 2>&1 \
        | grep -v "Cannot export local symbol '__asan" # ld.gold noise about ASan's own symbols
    return "${PIPESTATUS[0]}"
}

start=$(date +%s)
for target in "${TARGETS[@]}"; do
    [ -f "Fuzz/Sources/$target/main.swift" ] || { echo "fuzz: no harness Fuzz/Sources/$target/main.swift" >&2; exit 2; }
    echo "fuzz: building $target"
    build "$target" || { echo "fuzz: building $target failed" >&2; exit 2; }
done
BIN="$("$SWIFT" build --package-path Fuzz -c debug --scratch-path "$SCRATCH" --show-bin-path)"
echo "fuzz: built ${#TARGETS[@]} harnesses in $(( $(date +%s) - start )) s"

ARTIFACTS="$(mktemp -d "${TMPDIR:-/tmp}/sharebroker-fuzz.XXXXXX")"
failed=()
for target in "${TARGETS[@]}"; do
    mkdir -p "$WORK/$target" "$ARTIFACTS/$target"
    corpora=("$WORK/$target")
    for dir in "Fuzz/corpus/$target" "Fuzz/regressions/$target"; do
        [ -d "$dir" ] && corpora+=("$dir")
    done
    options=(-max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
             -artifact_prefix="$ARTIFACTS/$target/")
    [ -f "Fuzz/dict/$target.dict" ] && options+=(-dict="Fuzz/dict/$target.dict")
    [ -n "${FUZZ_SEED:-}" ] && options+=(-seed="$FUZZ_SEED")
    log="$ARTIFACTS/$target.log"
    echo "fuzz: running $target for $SECONDS_EACH s (log: $log)"
    # The Swift runtime's backtracer would read the stack under ASan and report itself. Shorter
    # allocation stacks (10 frames, not 30) make the allocation-heavy harnesses about 1.5x faster.
    SWIFT_BACKTRACE=enable=no ASAN_OPTIONS="${ASAN_OPTIONS:-malloc_context_size=10}" "$BIN/$target" "${options[@]}" "${corpora[@]}" >"$log" 2>&1
    status=$?
    grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$log" | sed "s/^/fuzz:   /"
    findings=$(find "$ARTIFACTS/$target" -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' \
        -o -name 'leak-*' \) | sort)
    if [ "$status" -ne 0 ] || [ -n "$findings" ]; then
        failed+=("$target")
        echo "fuzz: $target FAILED (exit $status):" >&2
        grep -m 8 -E "Fatal error|==ERROR|^SUMMARY|ALARM|out-of-memory|Test unit written" "$log" | sed "s/^/fuzz:   /" >&2
        echo "fuzz: end of its log:" >&2
        grep -v "^#" "$log" | tail -n 30 >&2
        for finding in $findings; do
            echo "fuzz: reproducer: $finding" >&2
            echo "fuzz:   run it:   SWIFT_BACKTRACE=enable=no $BIN/$target $finding" >&2
        done
    fi
done

echo "fuzz: done in $(( $(date +%s) - start )) s; artifacts and logs in $ARTIFACTS"
if [ "${#failed[@]}" -ne 0 ]; then
    echo "fuzz: findings in: ${failed[*]}. Fix the bug, then add the input to Fuzz/regressions/<target>/" \
         "and a regression test (Fuzz/README.md)." >&2
    exit 1
fi
