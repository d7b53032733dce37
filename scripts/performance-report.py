#!/usr/bin/env python3
"""Runs ShareBroker's benchmarks (Benchmarks/, package-benchmark) and writes docs/PERFORMANCE.md.

    python3 scripts/performance-report.py                 # run (release build) + write the report
    python3 scripts/performance-report.py --skip-run      # rewrite the report from the last export
    python3 scripts/performance-report.py --check         # also exit 1 when a goal is not met

Data path: package-benchmark's `histogramPercentiles` export (one TSV per benchmark and metric,
percentiles 0..100, already divided by the benchmark's scalingFactor and in the unit its header
names) into Benchmarks/.benchmark-results/, plus one `--allocation-stacks` pass over the ShareBroker
benchmarks, which gives exact allocation totals (never rounded per call) and the call sites.
Goals live in Benchmarks/goals.json. Standard library only.
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = ROOT / "Benchmarks"
GOALS_FILE = BENCH_DIR / "goals.json"
NOTES_FILE = BENCH_DIR / "performance-notes.md"  # hand-written analysis, appended verbatim if present
RESULTS_DIR_NAME = ".benchmark-results"  # inside Benchmarks/ so the plugin may write there
DEFAULT_OUTPUT = ROOT / "docs" / "PERFORMANCE.md"
TARGET = "ShareBrokerBenchmarks"
UNIT_NS = {"ns": 1.0, "us": 1e3, "μs": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
METRICS = ("wallClock", "mallocCountTotal")


# ----------------------------------------------------------------------------- running

def swift_benchmark(args, capture=False):
    cmd = ["swift", "package", "--allow-writing-to-package-directory", "benchmark"] + args
    print("+ (cd Benchmarks && " + " ".join(quote(a) for a in cmd) + ")", file=sys.stderr, flush=True)
    if capture:
        proc = subprocess.run(cmd, cwd=BENCH_DIR, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        return proc.returncode, proc.stdout
    proc = subprocess.run(cmd, cwd=BENCH_DIR)
    return proc.returncode, ""


def quote(arg):
    return arg if re.fullmatch(r"[\w./:=-]+", arg) else "'" + arg.replace("'", "'\\''") + "'"


def name_filter(names):
    """One regex for package-benchmark's --filter that matches exactly these benchmark names."""
    return "^(" + "|".join(re.escape(n) for n in names) + ")$"


def run_benchmarks(results, filter_regex):
    results.mkdir(parents=True, exist_ok=True)
    for old in results.glob("*.tsv"):
        old.unlink()
    args = ["--format", "histogramPercentiles", "--path", RESULTS_DIR_NAME, "--no-progress"]
    if filter_regex:
        args += ["--filter", filter_regex]
    code, _ = swift_benchmark(args)
    if code != 0:
        sys.exit(f"benchmark run failed (exit {code})")


def run_allocation_stacks(results, names):
    code, out = swift_benchmark(
        ["--allocation-stacks", "--allocation-stack-limit", "10", "--no-progress", "--filter", name_filter(names)],
        capture=True)
    (results / "allocation-stacks.txt").write_text(out)
    if code != 0:
        print(out[-3000:], file=sys.stderr)
        sys.exit(f"allocation-stacks run failed (exit {code})")


# ----------------------------------------------------------------------------- machine

def command_output(cmd):
    try:
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=60).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_average():
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def cpu_counters():
    """Aggregate /proc/stat CPU times (seconds) plus this script's children's CPU time and the clock:
    diffed over the run, they give how busy the cores were with *other* work, and the steal."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    busy = steal = 0.0
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        user, nice, system, idle, iowait, irq, softirq = fields[:7]
        steal = (fields[7] if len(fields) > 7 else 0) / tick
        busy = (user + nice + system + irq + softirq) / tick
    except (OSError, ValueError, IndexError):
        pass
    t = os.times()
    return {"busy": busy, "steal": steal, "mine": t.children_user + t.children_system, "wall": t.elapsed}


def idle_fraction(seconds=5.0):
    def read():
        fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        return fields[3] + fields[4], sum(fields[:8])
    try:
        idle0, total0 = read()
        time.sleep(seconds)
        idle1, total1 = read()
        return (idle1 - idle0) / max(1, total1 - total0)
    except (OSError, ValueError, IndexError):
        return 1.0


def wait_for_quiet(limit_seconds, threshold=0.9):
    """Waits (up to limit_seconds) until the cores are >= threshold idle over 5 s. Returns a note."""
    start = time.monotonic()
    while True:
        idle = idle_fraction()
        waited = time.monotonic() - start
        if idle >= threshold:
            return f"started after waiting {waited:.0f} s for the cores to be {idle:.0%} idle"
        if waited >= limit_seconds:
            return f"started after {waited:.0f} s without a quiet moment (cores {idle:.0%} idle)"
        print(f"waiting for a quiet machine: cores {idle:.0%} idle", file=sys.stderr, flush=True)
        time.sleep(10)


def contention(before, after):
    wall = after["wall"] - before["wall"]
    if wall <= 0:
        return "unknown"
    others = max(0.0, (after["busy"] - before["busy"]) - (after["mine"] - before["mine"])) / wall
    steal = (after["steal"] - before["steal"]) / wall
    return f"other processes used {others:.2f} cores on average; hypervisor steal {steal:.2f} cores"


def benchmark_package_version():
    resolved = BENCH_DIR / "Package.resolved"
    try:
        for pin in json.loads(resolved.read_text()).get("pins", []):
            if pin.get("identity") in ("benchmark", "package-benchmark"):
                return pin.get("state", {}).get("version", "?")
    except (OSError, ValueError):
        pass
    return "unknown"


def machine_info(load_before, load_after, during, quiet):
    swift = command_output(["swift", "--version"]).splitlines()
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": command_output(["nproc"]) or str(os.cpu_count()),
        "cpu": cpu_model(),
        "swift": next((l for l in swift if "Swift version" in l), swift[0] if swift else "unknown"),
        "kernel": platform.release(),
        "libsodium": command_output(["pkg-config", "--modversion", "libsodium"]) or "unknown",
        "package_benchmark": benchmark_package_version(),
        "load_before": load_before,
        "load_after": load_after,
        "during": during,
        "quiet": quiet,
        "commit": command_output(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]) or "unknown",
        "dirty": bool(command_output(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"])),
    }


# ----------------------------------------------------------------------------- parsing

def cleanup(name):
    """package-benchmark's cleanupStringForShellSafety, used in export file names."""
    return name.replace("/", "_").replace(" ", "_")


def read_percentiles(results, name, metric):
    """(percentiles dict, unit) for one benchmark and metric, or None when not exported."""
    suffix = f".{TARGET}.{cleanup(name)}.{metric}.histogram.percentiles.tsv"
    matches = [p for p in results.iterdir() if p.name.endswith(suffix)]
    if not matches:
        return None
    lines = matches[0].read_text().splitlines()
    header = lines[0]
    units = re.findall(r"\(([^()]*)\)", header)
    unit = units[-1] if units else ""
    values = {}
    for line in lines[1:]:
        parts = line.split("\t")
        if len(parts) == 2:
            values[int(parts[0])] = float(parts[1])
    return values, unit


def exported_names(results):
    names = set()
    for p in results.glob("*.wallClock.histogram.percentiles.tsv"):
        m = re.match(rf"^[^.]+\.{TARGET}\.(.+)\.wallClock\.histogram\.percentiles\.tsv$", p.name)
        if m:
            names.add(m.group(1))
    return names


ALLOC_HEADER = re.compile(r"^Allocations: [^:]+:(?P<name>.+?) \W+ (?P<iters>[\d,]+) iterations, "
                          r"(?P<allocs>[\d,]+) allocations")
STACK_HEADER = re.compile(r"^#\d+\s+(?P<allocs>[\d,]+) allocations \((?P<per>[\d.]+)/iteration\)")
FRAME = re.compile(r"^\s*\d+\s+(?P<frame>.+)$")


def read_allocation_stacks(results):
    """{name: {"samples", "allocs", "stacks": [(per_sample, [frames])]}} from the stacks pass."""
    path = results / "allocation-stacks.txt"
    if not path.exists():
        return {}
    found, current, stack = {}, None, None
    for line in path.read_text().splitlines():
        m = ALLOC_HEADER.match(line)
        if m:
            current = {"samples": int(m["iters"].replace(",", "")),
                       "allocs": int(m["allocs"].replace(",", "")), "stacks": []}
            found[m["name"]] = current
            stack = None
            continue
        if current is None:
            continue
        m = STACK_HEADER.match(line)
        if m:
            stack = (float(m["per"]), [])
            current["stacks"].append(stack)
            continue
        m = FRAME.match(line)
        if m and stack is not None:
            stack[1].append(m["frame"].strip())
        elif line.strip() and not line.startswith(" "):
            stack = None
    return found


def call_site(frames):
    """The frames worth showing: symbolized, inside ShareBroker or the stdlib/Foundation it calls,
    from the allocator up to (not including) the benchmark closure."""
    shown = []
    for frame in frames:
        if re.match(r"^0x[0-9a-f]+$", frame):
            continue
        if "variable initialization expression of benchmarks" in frame or "Benchmark.init" in frame:
            break
        frame = re.sub(r" at /\S*/(Sources/\S+)", r" (\1)", frame)
        frame = re.sub(r" in ShareBrokerBenchmarks$", "", frame)
        shown.append(frame)
    return shown


# ----------------------------------------------------------------------------- formatting

def fmt_time(ns):
    if ns is None:
        return "—"
    if ns < 1_000:
        return f"{ns:.0f} ns"
    if ns < 1_000_000:
        return f"{ns / 1e3:.3g} us" if ns < 100_000 else f"{ns / 1e3:.0f} us"
    return f"{ns / 1e6:.3g} ms"


def fmt_count(x):
    if x is None:
        return "—"
    return f"{x:.0f}" if abs(x - round(x)) < 1e-9 else f"{x:.3g}"


def ascii_chart(rows):
    """Log-scale bars of the medians, 1 ns .. 10 ms, with the goal marked '|'."""
    lo, hi, width = 0.0, 7.0, 56  # log10 ns

    def col(ns):
        return max(0, min(width, round((math.log10(max(ns, 1.0)) - lo) / (hi - lo) * width)))
    label_w = max(len(r["name"]) for r in rows)
    out = [" " * label_w + "  1ns      10ns     100ns    1us      10us     100us    1ms      10ms"]
    for r in rows:
        if r["median_ns"] is None:
            continue
        bar = list("#" * col(r["median_ns"]) + " " * (width - col(r["median_ns"])))
        goal = r["goal"].get("median_max_ns")
        if goal:
            g = min(width - 1, col(goal))
            bar[g] = "|"
        out.append(f"{r['name'].ljust(label_w)}  {''.join(bar)} {fmt_time(r['median_ns'])}")
    return "\n".join(out)


# ----------------------------------------------------------------------------- report

def evaluate(results, goals, stacks):
    names = list(goals)
    for extra in sorted(exported_names(results)):
        if extra not in {cleanup(n) for n in names}:
            names.append(extra.replace("_", " "))
    by_name = {}
    rows = []
    for name in names:
        goal = goals.get(name, {})
        wall = read_percentiles(results, name, "wallClock")
        malloc = read_percentiles(results, name, "mallocCountTotal")
        if wall is None:
            rows.append({"name": name, "goal": goal, "median_ns": None, "missing": True})
            continue
        factor = UNIT_NS.get(wall[1], 1.0)
        row = {
            "name": name, "goal": goal, "missing": False,
            "median_ns": wall[0].get(50) * factor, "p99_ns": wall[0].get(99) * factor,
            "allocs_median": malloc[0].get(50) if malloc else None,
            "allocs_p99": malloc[0].get(99) if malloc else None,
        }
        exact = stacks.get(name)
        if exact:
            calls = exact["samples"] * goal.get("calls_per_sample", 1)
            row["exact_allocs"], row["exact_calls"] = exact["allocs"], calls
        rows.append(row)
        by_name[name] = row

    for row in rows:
        goal = row["goal"]
        if row["missing"]:
            row["status"], row["ratio"] = "not run", "—"
            continue
        if goal.get("is_baseline"):
            mb = goal["payload_bytes"]
            row["ratio"] = f"baseline, {mb / row['median_ns']:.2f} GB/s"
        elif goal.get("baseline") and goal["baseline"] in by_name:
            row["ratio"] = f"{row['median_ns'] / by_name[goal['baseline']]['median_ns']:.2f}x"
        else:
            row["ratio"] = "n/a"
        checks = []
        if "median_max_ns" in goal:
            checks.append(row["median_ns"] < goal["median_max_ns"])
        if "p99_max_ns" in goal:
            checks.append(row["p99_ns"] < goal["p99_max_ns"])
        if "allocs_max" in goal:
            if "exact_allocs" in row:
                checks.append(row["exact_allocs"] <= goal["allocs_max"] * row["exact_calls"])
            else:
                checks.append(row["allocs_p99"] is not None and row["allocs_p99"] <= goal["allocs_max"])
        if goal.get("is_baseline"):
            row["status"] = "baseline"
        elif not checks:
            row["status"] = "no goal"
        else:
            row["status"] = "met" if all(checks) else "**NOT met**"
    return rows


def goals_calls(rows, name):
    for r in rows:
        if r["name"] == name:
            return r["goal"].get("calls_per_sample", 1)
    return 1


def render(rows, machine, stacks):
    L = []
    L.append("# ShareBroker performance")
    L.append("")
    L.append("Generated by `scripts/performance-report.py` from one release-build run of the "
             "`Benchmarks/` package (package-benchmark). Do not edit by hand: rerun the script.")
    L.append("")
    L.append("## Results")
    L.append("")
    L.append("| Benchmark | Goal | Median | p99 | Allocs/call (median / p99) | Exact allocations | "
             "Ratio to raw libsodium | Status |")
    L.append("|---|---|--:|--:|--:|--:|--:|---|")
    for r in rows:
        if r["missing"]:
            L.append(f"| {r['name']} | {r['goal'].get('goal', '—')} | — | — | — | — | — | not run |")
            continue
        exact = "—"
        if "exact_allocs" in r:
            exact = f"{r['exact_allocs']:,} in {r['exact_calls']:,} calls"
        ratio = r["ratio"]
        L.append(f"| {r['name']} | {r['goal'].get('goal', '—')} | {fmt_time(r['median_ns'])} | "
                 f"{fmt_time(r['p99_ns'])} | {fmt_count(r['allocs_median'])} / {fmt_count(r['allocs_p99'])} | "
                 f"{exact} | {ratio} | {r['status']} |")
    L.append("")
    L.append("* Median and p99 are per call. Benchmarks with 1,000 calls per sample (`scalingFactor: .kilo`, "
             "the decisions and the 64 B and 1 KiB seals) record one sample per 1,000 calls, so their p99 is the "
             "99th percentile of 1,000-call averages: it shows preemption and machine noise, not one slow call.")
    L.append("* *Allocs/call* comes from the `mallocCountTotal` metric, divided by the calls per sample and rounded; "
             "*Exact allocations* comes from a separate `--allocation-stacks` pass over the ShareBroker benchmarks "
             "and is never rounded (0 there means not one allocation in every measured call).")
    L.append("* *Ratio to raw libsodium* compares a benchmark with the raw XChaCha20-Poly1305 seal of the same "
             "payload size, measured in the same run (`baseline` in `Benchmarks/goals.json`). The Open In benchmarks "
             "carry no payload (a blocked target gets an empty dummy), so no ratio applies to them; the baselines "
             "show their throughput instead.")
    L.append("")
    L.append("## Medians (log scale, `|` = goal)")
    L.append("")
    L.append("```")
    L.append(ascii_chart([r for r in rows if not r["missing"]]))
    L.append("```")
    L.append("")

    with_allocs = [(n, s) for n, s in stacks.items() if s["allocs"] > 0]
    if with_allocs:
        L.append("## Where the allocations come from")
        L.append("")
        L.append("From the `--allocation-stacks` pass (innermost frame first; `(file:line)` is where the "
                 "optimizer attributes the call, which for inlined helpers is the helper's own line).")
        L.append("")
        for name, s in with_allocs:
            calls = s["samples"] * goals_calls(rows, name)
            L.append(f"**{name}**: {s['allocs']:,} allocations in {calls:,} calls "
                     f"({s['allocs'] / calls:.3g} per call)")
            L.append("")
            # Stacks that differ only in unsymbolized frames (two calls on one line) are merged.
            merged = {}
            for per, frames in s["stacks"]:
                site = tuple(call_site(frames)[:4])
                merged[site] = merged.get(site, 0.0) + per
            for site, per in sorted(merged.items(), key=lambda kv: -kv[1]):
                per_call = per / goals_calls(rows, name)
                L.append(f"* {per_call:g} per call: " + " ← ".join(f"`{f}`" for f in site))
            L.append("")

    if NOTES_FILE.exists():
        L.append(NOTES_FILE.read_text().rstrip())
        L.append("")

    L.append("## Machine")
    L.append("")
    L.append(f"* Date: {machine['date']}; commit {machine['commit']}{' (with uncommitted changes)' if machine['dirty'] else ''}")
    L.append(f"* CPU: {machine['cpu']}, nproc {machine['nproc']}")
    L.append(f"* {machine['swift']}; kernel {machine['kernel']}")
    L.append(f"* libsodium {machine['libsodium']}; package-benchmark {machine['package_benchmark']}")
    L.append(f"* Load average (1/5/15 min) before the run: {machine['load_before']}; after: {machine['load_after']}. "
             "The machine is shared: a load above nproc means other work competed for the cores, which "
             "shows first in p99.")
    L.append(f"* During the timed run (build included): {machine.get('during', 'not recorded')}; "
             f"{machine.get('quiet', 'started at once')}.")
    L.append("")
    L.append("## How it is measured")
    L.append("")
    L.append("* `cd Benchmarks && swift package --allow-writing-to-package-directory benchmark` runs everything "
             "(release build). This script adds `--format histogramPercentiles --path .benchmark-results` and "
             "then an `--allocation-stacks` pass.")
    L.append("* Metrics: wall clock (recorded in nanoseconds), `mallocCountTotal`, throughput. Every result goes "
             "through `blackHole`.")
    L.append("* Decisions: `ShareBroker.decideOpenIn(target:via:)` for a whitelisted target (23-byte bundle id "
             "built at run time, so it never shares storage with the whitelist's copy), whitelist of 5 ids or 5 + "
             "10,000 ids.")
    L.append("* Blocked Open In: the full `openIn(_:target:via:)` to a target outside the whitelist, through a "
             "discarding outbox, report sink and URL opener defined in the benchmark target (the embedded "
             "recording ones grow without bound).")
    L.append("* Raw libsodium: `crypto_aead_xchacha20poly1305_ietf_encrypt`, no AAD, fixed key and nonce, "
             "message and output buffers allocated and touched once and reused (recycled memory, no page faults), "
             "`sodium_init()` called first so libsodium picks its SIMD implementations.")
    L.append("")
    return "\n".join(L)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--skip-run", action="store_true", help="reuse the last export in Benchmarks/.benchmark-results")
    ap.add_argument("--no-allocation-stacks", action="store_true", help="skip the allocation-stacks pass")
    ap.add_argument("--filter", help="only run benchmarks matching this regex (package-benchmark --filter)")
    ap.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="report path (default docs/PERFORMANCE.md)")
    ap.add_argument("--check", action="store_true", help="exit 1 if any goal is not met")
    ap.add_argument("--wait-quiet", type=float, default=0, metavar="SECONDS",
                    help="first wait up to SECONDS for the cores to be >= 90%% idle (the machine is shared)")
    args = ap.parse_args()

    goals = json.loads(GOALS_FILE.read_text())["benchmarks"]
    results = BENCH_DIR / RESULTS_DIR_NAME
    machine_file = results / "machine.json"

    if not args.skip_run:
        quiet = wait_for_quiet(args.wait_quiet) if args.wait_quiet > 0 else "started at once"
        load_before = load_average()
        counters = cpu_counters()
        run_benchmarks(results, args.filter)
        during = contention(counters, cpu_counters())
        if not args.no_allocation_stacks:
            names = [n for n, g in goals.items() if not g.get("is_baseline")]
            if args.filter:
                names = [n for n in names if re.search(args.filter, n)]
            if names:
                run_allocation_stacks(results, names)
        machine = machine_info(load_before, load_average(), during, quiet)
        machine_file.write_text(json.dumps(machine, indent=2))
    else:
        if not machine_file.exists():
            sys.exit(f"no earlier run in {results}; run without --skip-run first")
        machine = json.loads(machine_file.read_text())

    stacks = read_allocation_stacks(results)
    rows = evaluate(results, goals, stacks)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(render(rows, machine, stacks))

    for r in rows:
        if r["missing"]:
            print(f"{r['name']:48} not run")
        else:
            print(f"{r['name']:48} median {fmt_time(r['median_ns']):>9}  p99 {fmt_time(r['p99_ns']):>9}  "
                  f"allocs {fmt_count(r['allocs_median']):>3}  {r['status']}")
    print(f"wrote {args.output.relative_to(ROOT) if args.output.is_relative_to(ROOT) else args.output}")
    if args.check and any(r.get("status") == "**NOT met**" for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
