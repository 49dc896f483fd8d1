#!/bin/sh
# Benchmark: `aup check` on generated modules of 5,000 and 50,000 lines,
# measured with hyperfine in one run beside two baselines: `aup --version`
# (process start-up) and `wc -l` of the big module (reading its bytes).
# Writes bench/results/check.json and bench/results/check.md.
# Usage: bench/check/run.sh [BUILD_DIR]   (default: build)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
aup="$root/$build/cli/aup"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$root/bench/check/gen_module.py" 5000 >"$work/m5k.aup"
python3 "$root/bench/check/gen_module.py" 50000 >"$work/m50k.aup"
"$aup" check -q "$work/m50k.aup"  # must be well-formed, or the timing means nothing
hyperfine --warmup 3 --runs 20 --style basic --export-json "$work/h.json" \
  -n startup "$aup --version" \
  -n read "wc -l $work/m50k.aup" \
  -n check5k "$aup check -q $work/m5k.aup" \
  -n check50k "$aup check -q $work/m50k.aup"
python3 - "$work/h.json" "$root/bench/results" "$(wc -l <"$work/m50k.aup")" "$(wc -c <"$work/m50k.aup")" <<'PY'
import json, os, platform, subprocess, sys, time
h = json.load(open(sys.argv[1]))
out_dir, lines, size = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
r = {x["command"]: x for x in h["results"]}
med = {k: v["median"] for k, v in r.items()}
res = {
    "bench": "check",
    "date": time.strftime("%Y-%m-%d"),
    "machine": platform.processor() or platform.machine(),
    "command": "bench/check/run.sh",
    "module_lines": lines,
    "module_bytes": size,
    "median_s": med,
    "ratios": {
        "check50k_vs_startup": med["check50k"] / med["startup"],
        "check50k_vs_check5k": med["check50k"] / med["check5k"],
        "check50k_vs_read": med["check50k"] / med["read"],
    },
    "lines_per_s": lines / (med["check50k"] - med["startup"]),
}
os.makedirs(out_dir, exist_ok=True)
json.dump(res, open(os.path.join(out_dir, "check.json"), "w"), indent=2)
md = [
    "# `aup check` on generated modules",
    "",
    f"Measured {res['date']} with `bench/check/run.sh` (hyperfine, 20 runs, medians).",
    f"Module: {lines} lines, {size} bytes (bench/check/gen_module.py).",
    "",
    "| command | median | ratio to start-up |",
    "|---|---:|---:|",
]
for k in ["startup", "read", "check5k", "check50k"]:
    md.append(f"| {k} | {med[k]*1000:.1f} ms | {med[k]/med['startup']:.1f}x |")
md += [
    "",
    f"50k lines / 5k lines: {res['ratios']['check50k_vs_check5k']:.2f}x (10x would be linear).",
    f"Throughput after start-up: {res['lines_per_s']:,.0f} lines/s.",
    "",
]
open(os.path.join(out_dir, "check.md"), "w").write("\n".join(md))
print("\n".join(md))
PY
