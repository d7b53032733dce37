#!/usr/bin/env python3
"""Runs ShareBroker's benchmarks (Benchmarks/, package-benchmark) and writes docs/PERFORMANCE.md
and docs/performance-throughput.svg; or checks allocation counts against Benchmarks/goals.json.

    python3 scripts/performance-report.py                     # run everything + write the report
    python3 scripts/performance-report.py --skip-run          # rewrite the report from the last run
    python3 scripts/performance-report.py --check             # also exit 1 when a goal is not met
    python3 scripts/performance-report.py --check-allocations # CI: allocations per call only, no report
    python3 scripts/performance-report.py --filter REGEX      # a few benchmarks; results and report go to
                                                              # Benchmarks/.benchmark-results-filtered/

Three passes, all in release builds:
1. the timed run: every benchmark target, package-benchmark's `histogramPercentiles` export (one
   TSV per benchmark and metric, percentiles 0..100, already divided by the benchmark's scaling
   factor) into Benchmarks/.benchmark-results/;
2. the allocations pass (what --check-allocations runs alone): ShareBrokerBenchmarks only, with
   SHAREBROKER_BENCH_ALLOCATIONS_ONLY=1, so every sample is exactly one call and its
   `mallocCountTotal` is exact, into Benchmarks/.benchmark-results-allocations/;
3. an `--allocation-stacks` pass over the ShareBroker benchmarks that allocate, for the call sites.

Goals and allocation expectations live in Benchmarks/goals.json. Standard library only (no
matplotlib: the SVG is written by hand).
"""

import argparse
import datetime
import html
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
ALLOC_DIR_NAME = ".benchmark-results-allocations"
DEFAULT_OUTPUT = ROOT / "docs" / "PERFORMANCE.md"
SVG_NAME = "performance-throughput.svg"
MAIN_TARGET = "ShareBrokerBenchmarks"
UNIT_NS = {"ns": 1.0, "us": 1e3, "μs": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
ALLOC_ENV = "SHAREBROKER_BENCH_ALLOCATIONS_ONLY"
SIZE_LABELS = [("64 B", 64), ("1 KiB", 1024), ("64 KiB", 65536), ("1 MiB", 1 << 20), ("16 MiB", 16 << 20)]


# ----------------------------------------------------------------------------- running

def swift_benchmark(args, capture=False, env=None):
    cmd = ["swift", "package", "--allow-writing-to-package-directory", "benchmark"] + args
    prefix = "".join(f"{k}={v} " for k, v in (env or {}).items())
    print("+ (cd Benchmarks && " + prefix + " ".join(quote(a) for a in cmd) + ")", file=sys.stderr, flush=True)
    full_env = dict(os.environ, **(env or {}))
    if capture:
        proc = subprocess.run(cmd, cwd=BENCH_DIR, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=full_env)
        return proc.returncode, proc.stdout
    proc = subprocess.run(cmd, cwd=BENCH_DIR, env=full_env)
    return proc.returncode, ""


def quote(arg):
    return arg if re.fullmatch(r"[\w./:=-]+", arg) else "'" + arg.replace("'", "'\\''") + "'"


def name_filter(names):
    """One regex for package-benchmark's --filter that matches exactly these benchmark names."""
    return "^(" + "|".join(re.escape(n) for n in names) + ")$"


def clear_dir(path):
    path.mkdir(parents=True, exist_ok=True)
    for old in path.glob("*.tsv"):
        old.unlink()


def run_benchmarks(results, filter_regex):
    clear_dir(results)
    args = ["--format", "histogramPercentiles", "--path", results.name, "--no-progress"]
    if filter_regex:
        args += ["--filter", filter_regex]
    code, _ = swift_benchmark(args)
    if code != 0:
        sys.exit(f"benchmark run failed (exit {code})")


def run_allocation_pass(alloc_dir, filter_regex=None):
    """ShareBrokerBenchmarks in allocations-only mode: one call per sample, mallocCountTotal only."""
    clear_dir(alloc_dir)
    args = ["--target", MAIN_TARGET, "--metric", "mallocCountTotal", "--format", "histogramPercentiles",
            "--path", alloc_dir.name, "--no-progress"]
    if filter_regex:
        args += ["--filter", filter_regex]
    code, out = swift_benchmark(args, capture=True, env={ALLOC_ENV: "1"})
    (alloc_dir / "run.log").write_text(out)
    if code != 0:
        print(out[-5000:], file=sys.stderr)
        sys.exit(f"allocations pass failed (exit {code})")


def run_allocation_stacks(results, names):
    code, out = swift_benchmark(
        ["--target", MAIN_TARGET, "--allocation-stacks", "--allocation-stack-limit", "10", "--no-progress",
         "--filter", name_filter(names)],
        capture=True, env={ALLOC_ENV: "1"})
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


def cpu_flags():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                return ", ".join(f for f in ("sse4_1", "avx", "avx2", "avx512f") if f in flags) or "none of sse4_1/avx/avx2"
    except OSError:
        pass
    return "unknown"


def memory_total():
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError):
        pass
    return "unknown"


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


def package_versions():
    resolved = BENCH_DIR / "Package.resolved"
    found = {}
    try:
        for pin in json.loads(resolved.read_text()).get("pins", []):
            found[pin.get("identity")] = pin.get("state", {}).get("version", "?")
    except (OSError, ValueError):
        pass
    return {"package_benchmark": found.get("benchmark") or found.get("package-benchmark") or "unknown",
            "swift_crypto": found.get("swift-crypto", "unknown")}


def machine_info(load_before, load_after, during, quiet, seconds):
    swift = command_output(["swift", "--version"]).splitlines()
    info = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": command_output(["nproc"]) or str(os.cpu_count()),
        "cpu": cpu_model(),
        "cpu_flags": cpu_flags(),
        "memory": memory_total(),
        "swift": next((l for l in swift if "Swift version" in l), swift[0] if swift else "unknown"),
        "kernel": platform.release(),
        "libc": " ".join(platform.libc_ver()) or "unknown",
        "libsodium": command_output(["pkg-config", "--modversion", "libsodium"]) or "unknown",
        "load_before": load_before,
        "load_after": load_after,
        "during": during,
        "quiet": quiet,
        "seconds": seconds,
        "commit": command_output(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]) or "unknown",
        # Changes to the generated report itself do not count.
        "dirty": bool(command_output(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no", "--",
                                      ".", ":!docs/PERFORMANCE.md", ":!docs/" + SVG_NAME])),
    }
    info.update(package_versions())
    return info


# ----------------------------------------------------------------------------- parsing

def cleanup(name):
    """package-benchmark's cleanupStringForShellSafety, used in export file names."""
    return name.replace("/", "_").replace(" ", "_")


def read_percentiles(results, target, name, metric):
    """(percentiles dict, unit) for one benchmark and metric, or None when not exported."""
    suffix = f".{target}.{cleanup(name)}.{metric}.histogram.percentiles.tsv"
    if not results.exists():
        return None
    matches = [p for p in results.iterdir() if p.name.endswith(suffix)]
    if not matches:
        return None
    lines = matches[0].read_text().splitlines()
    units = re.findall(r"\(([^()]*)\)", lines[0])
    unit = units[-1] if units else ""
    values = {}
    for line in lines[1:]:
        parts = line.split("\t")
        if len(parts) == 2:
            values[int(parts[0])] = float(parts[1])
    return values, unit


def exported(results, metric="wallClock"):
    """{(target, cleaned name)} of every benchmark exported for `metric`."""
    found = set()
    if not results.exists():
        return found
    for p in results.glob(f"*.{metric}.histogram.percentiles.tsv"):
        m = re.match(rf"^[^.]+\.([^.]+)\.(.+)\.{metric}\.histogram\.percentiles\.tsv$", p.name)
        if m:
            found.add((m.group(1), m.group(2)))
    return found


ALLOC_HEADER = re.compile(r"^Allocations: [^:]+:(?P<name>.+?) \W+ (?P<iters>[\d,]+) iterations, "
                          r"(?P<allocs>[\d,]+) allocations")
STACK_HEADER = re.compile(r"^#\d+\s+(?P<allocs>[\d,]+) allocations \((?P<per>[\d.]+)/iteration\)")
FRAME = re.compile(r"^\s*\d+\s+(?P<frame>.+)$")


def read_allocation_stacks(results):
    """{name: {"samples", "allocs", "stacks": [(per_call, [frames])]}} from the stacks pass (one call
    per sample: it runs in allocations-only mode)."""
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
        if ("variable initialization expression of benchmarks" in frame or "Benchmark.init" in frame
                or "Benchmarks()" in frame or "closure #" in frame and "Benchmarks" in frame
                or "BenchmarkMode.measure" in frame):
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


def fmt_gbs(x):
    if x is None:
        return "—"
    return f"{x:.3f} GB/s" if x < 0.1 else f"{x:.2f} GB/s"


def fmt_ratio(x, spread=True):
    """A ratio triple (p25, median, p75): '1.02x (0.98-1.06)' when paired, '1.02x†' from two
    separate benchmarks."""
    if x is None:
        return "—"
    lo, mid, hi = x
    if lo is None:
        return f"{mid:.2f}x†"
    if lo == "via":
        return f"{mid:.2f}x‡"
    return f"{mid:.2f}x ({lo:.2f}-{hi:.2f})" if spread else f"{mid:.2f}x"


def log_time_chart(rows):
    """Log-scale bars of the medians, 1 ns .. 10 ms, with the goal marked '|'."""
    lo, hi, width = 0.0, 7.0, 56  # log10 ns

    def col(ns):
        return max(0, min(width, round((math.log10(max(ns, 1.0)) - lo) / (hi - lo) * width)))
    label_w = max(len(r["name"]) for r in rows)
    out = [" " * label_w + "  1ns      10ns     100ns    1us      10us     100us    1ms      10ms"]
    for r in rows:
        bar = list("#" * col(r["median_ns"]) + " " * (width - col(r["median_ns"])))
        goal = r["goal"].get("median_max_ns")
        if goal:
            bar[min(width - 1, col(goal))] = "|"
        out.append(f"{r['name'].ljust(label_w)}  {''.join(bar)} {fmt_time(r['median_ns'])}")
    return "\n".join(out)


# ----------------------------------------------------------------------------- evaluation

def evaluate(results, alloc_dir, goals, stacks):
    """One row per benchmark in goals.json (plus any exported one not there)."""
    entries = dict(goals)
    known = {(g.get("target", MAIN_TARGET), cleanup(n)) for n, g in goals.items()}
    for target, cleaned in sorted(exported(results) - known):
        entries[cleaned.replace("_", " ")] = {"target": target, "goal": "no goal (not in goals.json)"}

    rows, by_name = [], {}
    for name, goal in entries.items():
        target = goal.get("target", MAIN_TARGET)
        row = {"name": name, "goal": goal, "target": target, "median_ns": None, "p99_ns": None,
               "planned": bool(goal.get("planned"))}
        wall = read_percentiles(results, target, name, "wallClock")
        row["missing"] = wall is None
        if wall is not None:
            factor = UNIT_NS.get(wall[1], 1.0)
            row["median_ns"] = wall[0].get(50) * factor
            row["p99_ns"] = wall[0].get(99) * factor
            malloc = read_percentiles(results, target, name, "mallocCountTotal")
            row["allocs_timed"] = malloc[0].get(50) if malloc else None
            faults = read_percentiles(results, target, name, "pageFaults")
            row["page_faults"] = faults[0].get(50) if faults else None
            for key, metric in (("ours", "pairedOursNs"), ("fresh", "pairedRawFreshNs"),
                                ("recycled", "pairedRawRecycledNs")):
                paired = read_percentiles(results, target, name, metric)
                if paired:
                    row.setdefault("paired", {})[key] = paired[0].get(50)
            for key, metric in (("fresh", "ratioToRawFreshPermille"), ("recycled", "ratioToRawRecycledPermille")):
                permille = read_percentiles(results, target, name, metric)
                if permille:
                    row.setdefault("paired_ratio", {})[key] = tuple(permille[0].get(p) / 1000 for p in (25, 50, 75))
            if goal.get("payload_bytes"):
                row["gbs"] = goal["payload_bytes"] / row["median_ns"]
        exact = read_percentiles(alloc_dir, target, name, "mallocCountTotal")
        if exact:
            row["allocs_min"], row["allocs_max"] = exact[0].get(0), exact[0].get(100)
        if name in stacks:
            row["stack_calls"], row["stack_allocs"] = stacks[name]["samples"], stacks[name]["allocs"]
        rows.append(row)
        by_name[name] = row

    def ratio(row, key):
        """(p25, median, p75) of the paired per-sample ratio, or (None, median/median, None) from two
        separate benchmarks, or None."""
        paired = row.get("paired_ratio", {}).get(key.replace("ratio_", ""))
        if paired:
            return paired
        other = by_name.get(row["goal"].get(key) or "")
        if row["median_ns"] is None or not other or other["median_ns"] is None:
            return None
        mine, theirs = row.get("paired_ratio", {}).get("fresh"), other.get("paired_ratio", {}).get("fresh")
        if mine and theirs:
            # Both were paired with raw libsodium (fresh output): compare through it.
            return ("via", mine[1] / theirs[1], None)
        return (None, row["median_ns"] / other["median_ns"], None)

    for row in rows:
        goal = row["goal"]
        row["ratio_fresh"] = ratio(row, "ratio_fresh")
        row["ratio_recycled"] = ratio(row, "ratio_recycled")
        row["ratio_swift_crypto"] = ratio(row, "ratio_swift_crypto")
        row["allocs"] = allocs_per_call(row)
        if row["planned"]:
            row["status"] = "not measured yet"
            continue
        if row["missing"]:
            row["status"] = "not run"
            continue
        checks = []
        if "median_max_ns" in goal:
            checks.append(row["median_ns"] < goal["median_max_ns"])
        if "p99_max_ns" in goal:
            checks.append(row["p99_ns"] < goal["p99_max_ns"])
        if "ratio_max" in goal:
            r = row["ratio_fresh"] if goal.get("ratio_against") == "fresh" else row["ratio_recycled"]
            row["goal_ratio"] = r
            checks.append(r is not None and r[1] <= goal["ratio_max"])
        if "goal_allocs_max" in goal:
            a = row["allocs"]
            checks.append(a is not None and a[1] <= goal["goal_allocs_max"])
        if goal.get("is_baseline"):
            row["status"] = "comparison" if "swift-crypto" in row["name"] else "baseline"
        elif not checks:
            row["status"] = "no goal"
        else:
            row["status"] = "met" if all(checks) else "**NOT met**"
    return rows


def allocs_per_call(row):
    """(value shown, worst per call, exact?) from the allocations pass, else the timed run's median."""
    if row.get("allocs_max") is not None:
        lo, hi = row["allocs_min"], row["allocs_max"]
        return (fmt_count(hi) if lo == hi else f"{fmt_count(lo)}-{fmt_count(hi)}", hi, True)
    if row.get("allocs_timed") is not None:
        return ("~" + fmt_count(row["allocs_timed"]), row["allocs_timed"], False)
    return None


# ----------------------------------------------------------------------------- throughput plot

SERIES_STYLE = {
    # label: (colour, dash, width, marker)
    "ShareBroker KeyRing.seal": ("#c0392b", "", 3, "circle"),
    "ShareBroker KeyRing.open": ("#c0392b", "", 3, "circle"),
    "ShareBroker SecureCopy copy": ("#e67e22", "6 4", 2, "square"),
    "ShareBroker SecureCopy paste": ("#e67e22", "6 4", 2, "square"),
    "raw libsodium, fresh output": ("#1f5fa8", "", 2, "diamond"),
    "raw libsodium, recycled output": ("#1f5fa8", "2 4", 2, "diamond"),
    "swift-crypto ChaChaPoly": ("#2e8b57", "", 2, "triangle"),
}
SERIES_ORDER = list(SERIES_STYLE)


def throughput_series(rows):
    """{"seal"/"open": {series label: [(bytes, GB/s)]}} from goals' `series` fields. Paired benchmarks
    plot their paired medians (ours, and with `plot_raw_pairs` the raw lines too), so the lines that
    are compared were measured in the same samples; swift-crypto plots its own median."""
    panels = {"seal": {}, "open": {}}
    raw_fresh = {}  # (panel, bytes) -> ns of raw libsodium (fresh output) in the reference pairs
    for r in rows:
        series = r["goal"].get("series")
        if series and r["goal"].get("plot_raw_pairs") and r.get("paired", {}).get("fresh"):
            raw_fresh[(series.split(":", 1)[0], r["goal"]["payload_bytes"])] = r["paired"]["fresh"]
    for r in rows:
        series = r["goal"].get("series")
        if not series or r.get("gbs") is None:
            continue
        panel, label = series.split(":", 1)
        n = r["goal"]["payload_bytes"]
        paired = r.get("paired", {})
        ours = paired.get("ours") or r["median_ns"]
        ratio = r.get("paired_ratio", {}).get("fresh")
        if r["goal"].get("plot_via_raw") and ratio and (panel, n) in raw_fresh:
            ours = raw_fresh[(panel, n)] * ratio[1]
        panels[panel].setdefault(label, []).append((n, n / ours))
        if r["goal"].get("plot_raw_pairs"):
            for key, raw_label in (("fresh", "raw libsodium, fresh output"), ("recycled", "raw libsodium, recycled output")):
                if paired.get(key):
                    panels[panel].setdefault(raw_label, []).append((n, n / paired[key]))
    for panel in panels.values():
        for points in panel.values():
            points.sort()
    return panels


def nice_log_ticks(lo, hi):
    ticks = []
    for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        for m in (1, 2, 5):
            v = m * 10 ** e
            if lo <= v <= hi:
                ticks.append(v)
    return ticks


def marker_svg(kind, x, y, colour):
    if kind == "square":
        return f'<rect x="{x - 3.5:.1f}" y="{y - 3.5:.1f}" width="7" height="7" fill="{colour}"/>'
    if kind == "diamond":
        return (f'<polygon points="{x:.1f},{y - 4.5:.1f} {x + 4.5:.1f},{y:.1f} {x:.1f},{y + 4.5:.1f} '
                f'{x - 4.5:.1f},{y:.1f}" fill="{colour}"/>')
    if kind == "triangle":
        return (f'<polygon points="{x:.1f},{y - 4.5:.1f} {x + 4.5:.1f},{y + 3.5:.1f} {x - 4.5:.1f},{y + 3.5:.1f}" '
                f'fill="{colour}"/>')
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{colour}"/>'


def throughput_svg(panels, machine):
    """A two-panel log-log line chart (seal | open): throughput in GB/s against payload size."""
    values = [g for panel in panels.values() for pts in panel.values() for _, g in pts]
    if not values:
        return None
    y_lo = min(values) / 1.3
    y_hi = max(values) * 1.3
    x_lo, x_hi = 64, 16 << 20
    W, H = 980, 540
    pw, ph, top, left0, gap = 380, 330, 88, 80, 110
    legend_y = top + ph + 62

    def px(n, left):
        return left + (math.log(n) - math.log(x_lo)) / (math.log(x_hi) - math.log(x_lo)) * pw

    def py(g):
        return top + ph - (math.log(g) - math.log(y_lo)) / (math.log(y_hi) - math.log(y_lo)) * ph

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
           'font-family="Helvetica, Arial, sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="24" text-anchor="middle" font-size="17" font-weight="bold">'
           'Throughput against payload size (higher is better)</text>',
           f'<text x="{W / 2}" y="44" text-anchor="middle" fill="#555">'
           f'{html.escape(machine.get("date", ""))}, one run, release build, medians; '
           f'{html.escape(machine.get("cpu", ""))}, libsodium {html.escape(machine.get("libsodium", ""))}; '
           'both axes logarithmic</text>']
    ticks = nice_log_ticks(y_lo, y_hi)
    for i, (panel, title) in enumerate((("seal", "Seal (encrypt)"), ("open", "Open (decrypt)"))):
        left = left0 + i * (pw + gap)
        out.append(f'<text x="{left + pw / 2}" y="{top - 10}" text-anchor="middle" font-size="14" '
                   f'font-weight="bold">{title}</text>')
        out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="#fafafa" stroke="#999"/>')
        for t in ticks:
            y = py(t)
            out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" stroke="#ddd"/>')
            out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{t:g}</text>')
        for label, n in SIZE_LABELS:
            x = px(n, left)
            out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + ph}" stroke="#e4e4e4"/>')
            out.append(f'<text x="{x:.1f}" y="{top + ph + 18}" text-anchor="middle">{label}</text>')
        out.append(f'<text x="{left + pw / 2}" y="{top + ph + 38}" text-anchor="middle" fill="#333">payload size</text>')
        out.append(f'<text transform="translate({left - 48},{top + ph / 2}) rotate(-90)" text-anchor="middle" '
                   'fill="#333">GB/s</text>')
        # ShareBroker last, so its line stays visible where it lies on raw libsodium's.
        for label in sorted(panels[panel], key=lambda l: -(SERIES_ORDER.index(l) if l in SERIES_ORDER else 99)):
            colour, dash, width, marker = SERIES_STYLE.get(label, ("#777", "", 2, "circle"))
            pts = [(px(n, left), py(g)) for n, g in panels[panel][label]]
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
            dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
            out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="{width}"{dash_attr}/>')
            out.extend(marker_svg(marker, x, y, colour) for x, y in pts)
    # Legend: one entry per style (seal and open lines of one kind share a style).
    present = {label for panel in panels.values() for label in panel}
    legend = [("ShareBroker KeyRing.seal", "ShareBroker KeyRing.seal / .open"),
              ("ShareBroker SecureCopy copy", "ShareBroker SecureCopy copy / paste (whole path)"),
              ("raw libsodium, fresh output", "raw libsodium, fresh output"),
              ("raw libsodium, recycled output", "raw libsodium, recycled output"),
              ("swift-crypto ChaChaPoly", "swift-crypto ChaChaPoly (ChaCha20, not XChaCha)")]
    alias = {"ShareBroker KeyRing.open": "ShareBroker KeyRing.seal", "ShareBroker SecureCopy paste": "ShareBroker SecureCopy copy"}
    shown = {alias.get(l, l) for l in present}
    x, y = left0 - 40, legend_y
    for key, text in legend:
        if key not in shown:
            continue
        colour, dash, width, marker = SERIES_STYLE[key]
        span = 48 + 6.4 * len(text)
        if x + span > W - 10:
            x, y = left0 - 40, y + 22
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<line x1="{x}" y1="{y}" x2="{x + 28}" y2="{y}" stroke="{colour}" stroke-width="{width}"{dash_attr}/>')
        out.append(marker_svg(marker, x + 14, y, colour))
        out.append(f'<text x="{x + 34}" y="{y + 4}">{html.escape(text)}</text>')
        x += span
    out.append("</svg>")
    return "\n".join(out) + "\n"


def throughput_ascii(panels):
    """The same data as text: linear bars in GB/s, one block per payload size."""
    gmax = max((g for p in panels.values() for pts in p.values() for _, g in pts), default=1)
    width = 40
    out = []
    for panel, title in (("seal", "Seal (encrypt)"), ("open", "Open (decrypt)")):
        labels = sorted(panels[panel], key=lambda l: SERIES_ORDER.index(l) if l in SERIES_ORDER else 99)
        if not labels:
            continue
        lw = max(len(l) for l in labels)
        out.append(f"{title}: GB/s, bar length linear, higher is better")
        for size_label, n in SIZE_LABELS:
            first = True
            for label in labels:
                g = dict(panels[panel][label]).get(n)
                if g is None:
                    continue
                bar = "#" * max(1, round(g / gmax * width))
                out.append(f"{(size_label if first else ''):7} {label.ljust(lw)}  {bar.ljust(width)} {g:.3f}")
                first = False
        out.append("")
    return "\n".join(out).rstrip()


# ----------------------------------------------------------------------------- report

def goal_measured(r):
    """What the goals table shows as measured for a row."""
    if r["planned"]:
        return "—"
    if r["missing"]:
        return "not run"
    goal = r["goal"]
    parts = []
    if "median_max_ns" in goal or not any(k in goal for k in ("ratio_max", "p99_max_ns")):
        parts.append(f"median {fmt_time(r['median_ns'])}")
    if "p99_max_ns" in goal:
        parts.append(f"p99 {fmt_time(r['p99_ns'])}")
    if "ratio_max" in goal:
        which = goal.get("ratio_against")
        parts.append(f"{fmt_ratio(r.get('goal_ratio'))} raw ({'fresh output' if which == 'fresh' else 'preallocated'}), "
                     f"median {fmt_time(r['median_ns'])}")
    if r["allocs"] is not None:
        parts.append(f"{r['allocs'][0]} alloc/call")
    return "; ".join(parts)


def render(rows, machine, stacks, svg_written):
    by_name = {r["name"]: r for r in rows}
    goal_rows = [r for r in rows if r["goal"].get("issue") and str(r["goal"]["issue"]).rstrip("*").isdigit()]
    issue_rows = [r for r in goal_rows if not str(r["goal"]["issue"]).endswith("*")]
    met = sum(1 for r in issue_rows if r["status"] == "met")
    not_met = sum(1 for r in issue_rows if r["status"] == "**NOT met**")
    planned = sum(1 for r in issue_rows if r["status"] == "not measured yet")
    no_goal = sum(1 for r in issue_rows if r["status"] == "no goal")
    other = len(issue_rows) - met - not_met - planned - no_goal

    L = ["# ShareBroker performance", "",
         "Generated by `scripts/performance-report.py` from one run of the `Benchmarks/` package "
         "(package-benchmark, release build). Do not edit by hand: rerun `make bench` "
         "(or the script). Wall-time figures are reported, not gated (the machines are shared and noisy); "
         "allocation counts are gated in CI by `scripts/performance-report.py --check-allocations`.", ""]
    L.append(f"**Goals of issues 2-6:** {met} met, {not_met} not met, {planned} not measured yet"
             + (f", {other} not run" if other else "") + f" ({len(issue_rows) - no_goal} goal rows; "
             f"{no_goal} more rows of those issues carry no goal). "
             f"This report's own goals for KeyRing alone (\"3\\*\"): "
             f"{sum(1 for r in goal_rows if str(r['goal']['issue']).endswith('*') and r['status'] == 'met')} met, "
             f"{sum(1 for r in goal_rows if str(r['goal']['issue']).endswith('*') and r['status'] == '**NOT met**')} not met. "
             f"Run on {machine['date']}, commit {machine['commit']}; machine below.")
    L.append("")

    L.append("## Goals")
    L.append("")
    L.append("Every goal the issues set, met or not. A ratio is ours over raw libsodium of the same size, "
             "measured *in the same samples*: each sample of a paired benchmark times N calls of ours and N raw "
             "calls right before or after (alternating), and the figure is the median of the per-sample ratios, "
             "with the 25th-75th percentiles in brackets. \"Issue 3\\*\" rows are this report's goals for "
             "`KeyRing` alone, in the spirit of issue 3 (sealing costs what libsodium costs and almost nothing "
             "more); they compare like with like: both sides return a fresh buffer. Issue 3's own goals compare "
             "the whole copy and paste paths with raw libsodium on preallocated (recycled) buffers, as the issue "
             "states them.")
    L.append("")
    L.append("| Issue | Benchmark | Goal | Measured | Status |")
    L.append("|---|---|---|---|---|")
    order = lambda r: (int(str(r["goal"]["issue"]).rstrip("*")), str(r["goal"]["issue"]).endswith("*"))
    for r in sorted(goal_rows, key=order):
        L.append(f"| {r['goal']['issue']} | {r['name']} | {r['goal'].get('goal', '—')} | {goal_measured(r)} | "
                 f"{r['status']} |")
    L.append("")

    L.append("## Throughput against payload size")
    L.append("")
    L.append("ShareBroker and raw libsodium lines come from the paired loops of the KeyRing benchmarks "
             "(measured in the same samples). swift-crypto ran as separate benchmarks, each paired with raw "
             "libsodium too; its line is drawn at the raw line's throughput divided by swift-crypto's own paired "
             "ratio to raw libsodium (fresh output), so that load changing between benchmarks does not move one "
             "line against the others. The SecureCopy copy and paste paths are in the tables, not the plot.")
    L.append("")
    if svg_written:
        L.append(f"![Throughput against payload size: ShareBroker, raw libsodium and swift-crypto]({SVG_NAME})")
        L.append("")
        L.append(f"([{SVG_NAME}]({SVG_NAME}); the same figures as text:)")
        L.append("")
    L.append("```")
    L.append(throughput_ascii(throughput_series(rows)))
    L.append("```")
    L.append("")
    L.append("* *Fresh output*: a new buffer per call, as `KeyRing.seal`/`open` return a new `[UInt8]`; "
             "*recycled output*: one buffer allocated and touched before the run, no allocation or page fault "
             "per call (issue 3's \"preallocated buffers\").")
    big_faults = [r.get("page_faults") for r in rows
                  if r.get("page_faults") is not None and (r["goal"].get("payload_bytes") or 0) >= 1 << 20
                  and not r["name"].startswith("swift-crypto")]
    faulting = [f"{r['name']} ({fmt_count(round(r['page_faults']))} per call)" for r in rows
                if (r.get("page_faults") or 0) >= 1]
    if big_faults and max(big_faults) < 1:
        L.append("* Page faults: none per call in steady state for ShareBroker and raw libsodium, even at 16 MiB "
                 "(median of the page-fault column"
                 + (f"; the exceptions: {', '.join(faulting)}" if faulting else "") + "). "
                 "glibc raises its mmap threshold after the first large block is freed (up to 32 MiB), so the next "
                 "buffer of that size is recycled from the heap rather than mapped fresh; fresh output then costs "
                 "one allocation and no page faults. The ~1.65x that reference.md measured for fresh pages at 1 MiB "
                 "and 16 MiB applies when the allocator does hand out new pages: a process's first large item, or "
                 "items past the 32 MiB ceiling (a 64 MiB copy maps and faults in every page, every time).")
    else:
        L.append("* From 64 KiB up, a gap between fresh and recycled output is page faults: the kernel maps and "
                 "zeroes every 4 KiB page of a fresh large buffer on first touch (see the page-fault column). "
                 "No API that returns new memory can beat the fresh-output line.")
    L.append("* KeyRing seals items over 1 MiB in 64 KiB secretstream chunks; the raw rows at 16 MiB are one "
             "single-shot call. `libsodium secretstream push 16 MiB (fresh output)` is the chunked construction in "
             "raw libsodium.")
    L.append("* swift-crypto's ChaChaPoly is ChaCha20-Poly1305 IETF through BoringSSL (96-bit nonce), not "
             "XChaCha20: the peer a Swift developer would otherwise pick, a comparison and not a baseline.")
    L.append("")

    L.append("## All benchmarks")
    L.append("")
    L.append("| Benchmark | Median | p99 | Throughput | Allocs/call | Page faults/call | vs raw, fresh output | "
             "vs raw, recycled output | vs swift-crypto |")
    L.append("|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    for r in rows:
        if r["missing"]:
            continue
        allocs = r["allocs"][0] if r["allocs"] else "—"
        faults = "—" if r.get("page_faults") is None else fmt_count(round(r["page_faults"], 1))
        L.append(f"| {r['name']} | {fmt_time(r['median_ns'])} | {fmt_time(r['p99_ns'])} | {fmt_gbs(r.get('gbs'))} | "
                 f"{allocs} | {faults} | {fmt_ratio(r['ratio_fresh'])} | {fmt_ratio(r['ratio_recycled'])} | "
                 f"{fmt_ratio(r['ratio_swift_crypto'])} |")
    L.append("")
    L.append("* Median and p99 are per call. Benchmarks of 64 B and 1 KiB payloads, the decisions and the web-view "
             "lookups time 1,000 calls per sample (`scalingFactor: .kilo`): their p99 is the 99th percentile of "
             "1,000-call averages, so it shows preemption and machine noise, not one slow call.")
    L.append("* *Allocs/call* is exact: the allocations pass (`--check-allocations`) runs every ShareBrokerBenchmarks "
             "benchmark with one call per sample and records `mallocCountTotal` for each call; the figure is the "
             "largest count of any call (a range when calls differ). `~` marks a median from the timed run "
             "(swift-crypto), rounded per call.")
    L.append("* *Page faults/call*: minor page faults (`getrusage`) during the timed loop, per call.")
    L.append("* Ratios to raw libsodium: median of per-sample ratios from the paired loops (ours and raw "
             "interleaved within each sample; 25th-75th percentile in brackets), so load that other processes "
             "put on the shared cores affects both sides alike. `†`: the median of this row over the median of "
             "the comparison row, two benchmarks run seconds apart: read those as rough. `‡`: through raw "
             "libsodium: both rows were paired with raw libsodium (fresh output) and this is the quotient of their "
             "two paired ratios. Raw libsodium uses no AAD and a fixed nonce; KeyRing authenticates "
             "its 57-byte header and draws a nonce per call, which is part of what the ratio shows.")
    L.append("* The raw rows listed on their own (`libsodium ...`) are separate benchmarks of the same calls: "
             "absolute figures for reference, taken at a different moment than the paired loops.")
    L.append("")

    timed = [r for r in rows if not r["missing"] and r["goal"].get("median_max_ns")]
    if timed:
        L.append("## Time goals (log scale, `|` = goal)")
        L.append("")
        L.append("```")
        L.append(log_time_chart(timed))
        L.append("```")
        L.append("")

    with_allocs = [(n, s) for n, s in stacks.items() if s["allocs"] > 0]
    if with_allocs:
        L.append("## Where the allocations come from")
        L.append("")
        L.append("From an `--allocation-stacks` pass (one call per sample) over the ShareBroker benchmarks that "
                 "allocate; innermost frame first, `(file:line)` where the optimizer attributes the call. "
                 "Expected counts and why are in `Benchmarks/goals.json` (`allocs_max`, `allocs_note`).")
        L.append("")
        for name, s in sorted(with_allocs):
            calls = s["samples"]
            note = by_name.get(name, {}).get("goal", {}).get("allocs_note")
            L.append(f"**{name}**: {s['allocs']:,} allocations in {calls:,} calls ({s['allocs'] / calls:.3g} per call)"
                     + (f"; expected: {note}" if note else ""))
            L.append("")
            merged = {}
            for per, frames in s["stacks"]:
                site = tuple(call_site(frames)[:4])
                merged[site] = merged.get(site, 0.0) + per
            for site, per in sorted(merged.items(), key=lambda kv: -kv[1]):
                L.append(f"* {per:g} per call: " + " ← ".join(f"`{f}`" for f in site))
            L.append("")

    if NOTES_FILE.exists():
        L.append(NOTES_FILE.read_text().rstrip())
        L.append("")

    L.append("## Machine")
    L.append("")
    L.append(f"* Date: {machine['date']}; commit {machine['commit']}"
             f"{' (with uncommitted changes)' if machine['dirty'] else ''}")
    L.append(f"* CPU: {machine['cpu']} ({machine.get('cpu_flags', 'unknown')}), nproc {machine['nproc']}, "
             f"memory {machine.get('memory', 'unknown')}")
    L.append(f"* {machine['swift']}; kernel {machine['kernel']}; {machine.get('libc', '')}")
    L.append(f"* libsodium {machine['libsodium']}; package-benchmark {machine.get('package_benchmark', 'unknown')}; "
             f"swift-crypto {machine.get('swift_crypto', 'unknown')}")
    L.append(f"* Load average (1/5/15 min) before the run: {machine['load_before']}; after: {machine['load_after']}. "
             "The machine is shared: a load above nproc means other work competed for the cores, which "
             "shows first in p99.")
    L.append(f"* During the timed run (build included, {machine.get('seconds', '?')} s): "
             f"{machine.get('during', 'not recorded')}; {machine.get('quiet', 'started at once')}.")
    L.append("")
    L.append("## How it is measured")
    L.append("")
    L.append("* `make bench` = `python3 scripts/performance-report.py --wait-quiet 300`: the timed run "
             "(`cd Benchmarks && swift package --allow-writing-to-package-directory benchmark --format "
             "histogramPercentiles --path .benchmark-results`), the allocations pass and the allocation-stacks pass; "
             "then this file and `docs/performance-throughput.svg`.")
    L.append("* `make bench-check-allocations` = `python3 scripts/performance-report.py --check-allocations`: the "
             "allocations pass alone (`SHAREBROKER_BENCH_ALLOCATIONS_ONLY=1 swift package ... benchmark --target "
             "ShareBrokerBenchmarks --metric mallocCountTotal`); exits 1 if any call of any benchmark allocates more "
             "than its `allocs_max` in `Benchmarks/goals.json`.")
    L.append("* Metrics: wall clock (nanoseconds), `mallocCountTotal`, throughput, and a custom `pageFaults` "
             "(minor faults around the timed loop). Every result goes through `blackHole`.")
    L.append("* Decisions: `ShareBroker.decideOpenIn(target:via:)` for a whitelisted 23-byte bundle id built at "
             "run time (never sharing storage with the whitelist's copy), whitelist of 5 ids or 5 + 10,000. "
             "Blocked Open In: the full `openIn(_:target:via:)` through discarding adapters.")
    L.append("* KeyRing: `seal(_:itemType:)` of random bytes as `public.utf8-plain-text` (57-byte header) and "
             "`open(_:)`. `KeyRing open N` opens an envelope sealed as another process would have (its own nonce "
             "prefix, so the cached HChaCha20 subkey does not apply: the paste-from-another-app case); "
             "`KeyRing open 64 B (sealed by this process)` takes the cached subkey.")
    L.append("* SecureCopy: `ShareBroker.copy(_:)` / `paste()` of a text item on a started, authorized broker "
             "under the SecureCopy policy, with the embedded `InMemoryPasteboard` and `InProcessKeyCustodian`: "
             "snapshot, decision, key ring, nonce, envelope, seal, pasteboard write (and back). The paste reads the "
             "item the broker sealed (this process).")
    L.append("* Web view: a `WebViewHierarchy` of 10,000 nodes in 10 levels (policies on the root and on a few "
             "nodes at levels 5 and 8), resolving a level-10 leaf whose deciding node is the root, by "
             "`WebViewHandle` and by id.")
    L.append("* Raw libsodium: `crypto_aead_xchacha20poly1305_ietf_encrypt`/`_decrypt`, no AAD, fixed key and "
             "nonce, `sodium_init()` first. *Fresh output* rows make a new `[UInt8]` per call the way KeyRing does "
             "(stack buffer and one copy up to 1 KiB, `unsafeUninitializedCapacity` above); the others reuse one "
             "buffer touched in setup.")
    L.append("")
    return "\n".join(L)


# ----------------------------------------------------------------------------- allocation check

THRESHOLDS_DIR = BENCH_DIR / "Thresholds"


def load_goals():
    """goals.json, with each ShareBrokerBenchmarks benchmark's allocs_max read from its static
    package-benchmark threshold (Benchmarks/Thresholds/<target>.<name>.p90.json, mallocCountTotal):
    the one place the expected allocations per call are kept."""
    goals = json.loads(GOALS_FILE.read_text())["benchmarks"]
    prefix = MAIN_TARGET + "."
    for path in sorted(THRESHOLDS_DIR.glob(prefix + "*.p90.json")):
        name = path.name[len(prefix):-len(".p90.json")]
        limit = json.loads(path.read_text()).get("mallocCountTotal")
        if limit is not None:
            goals.setdefault(name, {})["allocs_max"] = limit
    return goals


def check_allocations(goals, alloc_dir, run=True):
    """Runs the allocations pass (unless run=False) and compares every call with allocs_max."""
    start = time.monotonic()
    if run:
        run_allocation_pass(alloc_dir)
    failures, rows = [], []
    expected = {n: g for n, g in goals.items()
                if "allocs_max" in g and g.get("target", MAIN_TARGET) == MAIN_TARGET and not g.get("planned")}
    for name, goal in expected.items():
        exact = read_percentiles(alloc_dir, MAIN_TARGET, name, "mallocCountTotal")
        if exact is None:
            failures.append(f"{name}: not run (renamed or removed? update Benchmarks/Thresholds/)")
            rows.append((name, "—", goal["allocs_max"], "MISSING"))
            continue
        worst = exact[0].get(100)
        ok = worst <= goal["allocs_max"]
        rows.append((name, fmt_count(worst), goal["allocs_max"], "ok" if ok else "TOO MANY"))
        if not ok:
            failures.append(f"{name}: {fmt_count(worst)} allocations in one call, expected at most {goal['allocs_max']}")
    unexpected = sorted(cleaned for target, cleaned in exported(alloc_dir, "mallocCountTotal")
                        if target == MAIN_TARGET and cleaned not in {cleanup(n) for n in expected})
    width = max(len(r[0]) for r in rows) if rows else 40
    print(f"{'benchmark'.ljust(width)}  allocs/call (max)  expected <=  result")
    for name, worst, limit, result in rows:
        print(f"{name.ljust(width)}  {worst:>17}  {limit:>11}  {result}")
    for cleaned in unexpected:
        print(f"warning: {cleaned} has no threshold in Benchmarks/Thresholds/ (not checked)")
    print(f"allocation check: {len(rows) - len(failures)} of {len(rows)} within expectations "
          f"({time.monotonic() - start:.0f} s)")
    return failures


# ----------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--skip-run", action="store_true", help="reuse the last results in Benchmarks/.benchmark-results*")
    ap.add_argument("--no-allocation-stacks", action="store_true", help="skip the allocation-stacks pass")
    ap.add_argument("--filter", help="only run benchmarks matching this regex (package-benchmark --filter)")
    ap.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="report path (default docs/PERFORMANCE.md)")
    ap.add_argument("--check", action="store_true", help="exit 1 if any goal is not met")
    ap.add_argument("--check-allocations", action="store_true",
                    help="only run the allocations pass and print each benchmark's allocations per call next to "
                         "its threshold in Benchmarks/Thresholds/ (exit 1 above it); the CI gate is "
                         "`make bench-check-allocations` (package-benchmark's own thresholds check)")
    ap.add_argument("--wait-quiet", type=float, default=0, metavar="SECONDS",
                    help="first wait up to SECONDS for the cores to be >= 90%% idle (the machine is shared)")
    args = ap.parse_args()

    goals = load_goals()
    # A --filter run keeps its results apart, so a partial run never replaces the full run's data
    # (which --skip-run and the committed report are made from).
    suffix = "-filtered" if args.filter else ""
    results = BENCH_DIR / (RESULTS_DIR_NAME + suffix)
    alloc_dir = BENCH_DIR / (ALLOC_DIR_NAME + suffix)
    if suffix and args.output == DEFAULT_OUTPUT:
        args.output = results / "PERFORMANCE.md"
    machine_file = results / "machine.json"

    if args.check_allocations:
        failures = check_allocations(goals, alloc_dir, run=not args.skip_run)
        if failures:
            print("\n".join(["allocation check FAILED:"] + failures), file=sys.stderr)
            sys.exit(1)
        return

    if not args.skip_run:
        quiet = wait_for_quiet(args.wait_quiet) if args.wait_quiet > 0 else "started at once"
        load_before = load_average()
        counters = cpu_counters()
        started = time.monotonic()
        run_benchmarks(results, args.filter)
        seconds = round(time.monotonic() - started)
        during = contention(counters, cpu_counters())
        load_after = load_average()
        run_allocation_pass(alloc_dir, args.filter)
        if not args.no_allocation_stacks:
            allocating = [n for n, g in goals.items()
                          if not g.get("is_baseline") and not g.get("planned")
                          and g.get("target", MAIN_TARGET) == MAIN_TARGET
                          and (read_percentiles(alloc_dir, MAIN_TARGET, n, "mallocCountTotal") or ({100: 0},))[0].get(100, 0) > 0]
            if args.filter:
                allocating = [n for n in allocating if re.search(args.filter, n)]
            if allocating:
                run_allocation_stacks(results, allocating)
        machine = machine_info(load_before, load_after, during, quiet, seconds)
        machine_file.write_text(json.dumps(machine, indent=2))
    else:
        if not machine_file.exists():
            sys.exit(f"no earlier run in {results}; run without --skip-run first")
        machine = json.loads(machine_file.read_text())

    stacks = read_allocation_stacks(results)
    rows = evaluate(results, alloc_dir, goals, stacks)
    svg = throughput_svg(throughput_series(rows), machine)
    svg_path = args.output.parent / SVG_NAME
    args.output.parent.mkdir(parents=True, exist_ok=True)
    if svg:
        svg_path.write_text(svg)
    args.output.write_text(render(rows, machine, stacks, svg is not None))

    for r in rows:
        if r["missing"]:
            print(f"{r['name']:60} {r['status']}")
        else:
            ratio = r.get("goal_ratio") or r["ratio_fresh"]
            print(f"{r['name']:60} median {fmt_time(r['median_ns']):>9}  p99 {fmt_time(r['p99_ns']):>9}  "
                  f"allocs {(r['allocs'] or ('—',))[0]:>4}  {fmt_ratio(ratio):>6}  {r['status']}")
    rel = lambda p: p.relative_to(ROOT) if p.is_relative_to(ROOT) else p
    print(f"wrote {rel(args.output)}" + (f" and {rel(svg_path)}" if svg else ""))
    if args.check and any(r.get("status") == "**NOT met**" for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
