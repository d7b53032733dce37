#!/usr/bin/env bash
# make capi-bench: an Open In decision and a 64 B SecureCopy copy through the C interface against
# the same calls from Swift (Benchmarks/Sources/capi-bench), in several processes.
#
# Each process times the C and Swift calls in paired samples and prints the median of the
# per-sample ratios. A process's memory layout (the stack's and the heap's addresses, which ASLR
# draws anew each time) shifts one side of a pair for the whole process now and then (a run at
# 1.13x or 1.36x among runs at 1.06-1.08x, 2026-11-26), which pairing within the process cannot
# cancel; so the figure is the median over PROCESSES processes (default 7), with their range.
# The goal: at most 1.10x.
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
processes=${PROCESSES:-7}
"$SWIFT" build -c release --product sharebroker-c
ln -sf libsharebroker-c.so "$("$SWIFT" build -c release --show-bin-path)/libsharebroker.so.1"
cd Benchmarks
"$SWIFT" build -c release --product capi-bench
bench="$("$SWIFT" build -c release --show-bin-path)/capi-bench"
runs=$(mktemp "${TMPDIR:-/tmp}/capi-bench.XXXXXX")
trap 'rm -f "$runs"' EXIT
for run in $(seq 1 "$processes"); do
    "$bench" "$@" | sed "s/^/process $run: /" | tee -a "$runs"
done
# The median over the processes of each benchmark's ratio, with the lowest and highest.
for name in openIn copy64; do
    grep "^process [0-9]*: $name:" "$runs" | sed -E 's/.* ratio ([0-9.]+)x.*/\1/' | sort -n | awk -v name="$name" '
        { ratio[NR] = $1 }
        END {
            if (NR == 0) { print name ": no runs"; exit 1 }
            median = ratio[int((NR + 1) / 2)]
            printf "%s: median over %d processes %.2fx (lowest %.2fx, highest %.2fx)%s\n", name, NR, median,
                   ratio[1], ratio[NR], median <= 1.10 ? " within 1.10x" : " OVER 1.10x"
        }'
done
