#!/usr/bin/env python3
"""How long `aup run` takes to open a TPC-C store, and what its secondary
indexes add (they are rebuilt at every open, not stored: docs/store-format.md).

For each W: `aup-tpcc load` makes the store once; then `aup run MODULE
--data STORE --engine vm </dev/null` (open, recover, rebuild the indexes,
exit at the end of input) is timed with examples/tpcc/tpcc.aup and, as the
baseline measured in the same run, with its schema alone (records, tables
and vars; no index, no code: dropping an index is allowed, the tables are
the same), the two alternating, after one untimed open of each. The VM engine keeps JIT
compilation out of the figures; modules are built once beforehand. aup is
pinned to the last CPU. Reports wall and CPU time medians with their
spread and the ratio, in bench/results/open_time.{json,md}.

usage: open_time.py BUILD_DIR [--warehouses 1,10] [--reps 5] [--dir DIR] [--out DIR]
"""
import argparse
import datetime
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time


def run_timed(cmd):
    """Runs cmd with stdin from /dev/null; (wall s, child CPU s, stderr)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"open_time: {' '.join(cmd)} exited {p.returncode}: {p.stderr.decode(errors='replace')[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, p.stderr.decode(errors="replace")


def spread(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "all": xs}


def without_indexes(source):
    """The module's schema alone: its records, tables and vars, with no index
    and no code (the code uses the indexes). The store opens with it as with
    the module: the same tables, indexes dropped."""
    kept, depth, keep = [], 0, False
    for line in source.splitlines():
        if depth == 0:
            keep = re.match(r"(record|table|var)\s", line) is not None
        if keep:
            kept.append(line)
        depth += line.count("{") - line.count("}")
    return "\n".join(kept) + "\n"


def index_count(source):
    return sum(1 for l in source.splitlines() if re.match(r"\s*(unique\s+)?index\s+\w+\s+on\s", l))


def measure(build, aup, w, reps, work, modules, pin):
    store_dir = os.path.join(work, f"w{w}")
    shutil.rmtree(store_dir, ignore_errors=True)
    print(f"open_time: loading W={w} into {store_dir} ...", flush=True)
    t0 = time.monotonic()
    subprocess.run([os.path.join(build, "bench/tpcc/aup-tpcc"), "load", "--backend", "aup", "--dir", store_dir,
                    "--warehouses", str(w)], check=True, stdout=subprocess.DEVNULL)
    load_s = time.monotonic() - t0
    store = os.path.join(store_dir, "store")
    res = {"warehouses": w, "load_s": load_s, "sides": {}}
    cmds = {side: pin + [aup, "run", m, "--data", store, "--engine", "vm"] for side, m in modules.items()}
    for side in cmds:  # untimed: the first open after the load may replay the log and write images
        run_timed(cmds[side])
    walls = {s: [] for s in cmds}
    cpus = {s: [] for s in cmds}
    for rep in range(reps):
        order = list(cmds) if rep % 2 == 0 else list(reversed(list(cmds)))
        for side in order:
            wall, cpu, _ = run_timed(cmds[side])
            walls[side].append(wall)
            cpus[side].append(cpu)
        print(f"open_time: W={w} rep {rep + 1}/{reps}: " +
              ", ".join(f"{s} {walls[s][-1] * 1000:.0f} ms" for s in cmds), flush=True)
    for side in cmds:
        res["sides"][side] = {"wall_s": spread(walls[side]), "cpu_s": spread(cpus[side])}
    ratios = [a / b for a, b in zip(walls["indexes"], walls["no_indexes"])]
    res["wall_ratio"] = spread(ratios)
    res["store_bytes"] = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(store) for f in fs)
    return res


def markdown(env, results, n_indexes):
    out = [f"# Opening a TPC-C store: what rebuilding the indexes costs\n",
           f"Generated {env['date']} by `{env['command']}`.\n",
           f"Machine: {env['machine']}; load average {env['load']:.2f} at the start. `aup run tpcc.aup --data STORE "
           f"--engine vm </dev/null` (open, recover, rebuild {n_indexes} index(es), exit), against the module's "
           f"schema alone (no indexes, no code), alternating, {env['reps']} repetitions after one untimed open each; "
           f"medians, min–max in brackets; aup pinned to CPU {env['cpu']}.\n",
           "| W | store MB | open, indexes (ms) | open, no indexes (ms) | ratio | CPU, indexes (ms) | CPU, none (ms) |",
           "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        a, b = r["sides"]["indexes"], r["sides"]["no_indexes"]
        ms = lambda x: f"{x['median'] * 1000:.0f} ({x['min'] * 1000:.0f}–{x['max'] * 1000:.0f})"
        out.append(f"| {r['warehouses']} | {r['store_bytes'] / 1e6:.0f} | {ms(a['wall_s'])} | {ms(b['wall_s'])} | "
                   f"{r['wall_ratio']['median']:.2f} | {ms(a['cpu_s'])} | {ms(b['cpu_s'])} |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build")
    ap.add_argument("--warehouses", default="1,10")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--dir", default="/dev/shm/aup-open-time")
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--module", default="examples/tpcc/tpcc.aup")
    a = ap.parse_args()
    aup = os.path.join(a.build, "cli/aup")
    os.makedirs(a.dir, exist_ok=True)
    source = open(a.module).read()
    n_indexes = index_count(source)
    if n_indexes == 0:
        sys.exit(f"open_time: {a.module} declares no index: nothing to measure")
    plain = os.path.join(a.dir, "tpcc_no_indexes.aup")
    with open(plain, "w") as f:
        f.write(without_indexes(source))
    modules = {}
    for side, src in (("indexes", a.module), ("no_indexes", plain)):
        out = os.path.join(a.dir, side + ".aupm")
        subprocess.run([aup, "build", src, "-o", out], check=True, stdout=subprocess.DEVNULL)
        modules[side] = out
    load_at_start = os.getloadavg()[0]
    cpu = os.cpu_count() - 1
    pin = ["taskset", "-c", str(cpu)] if shutil.which("taskset") and cpu > 0 else []
    results = [measure(a.build, aup, int(w), a.reps, a.dir, modules, pin) for w in a.warehouses.split(",")]
    env = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "command": "python3 bench/tpcc/open_time.py " + " ".join(sys.argv[1:]),
           "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}",
           "load": load_at_start, "reps": a.reps, "cpu": cpu}
    md = markdown(env, results, n_indexes)
    os.makedirs(a.out, exist_ok=True)
    base = os.path.join(a.out, "open_time")  # .json and .md, as the other benchmarks' reports
    with open(base + ".json", "w") as f:
        json.dump({"environment": env, "indexes": n_indexes, "results": results}, f, indent=1)
    with open(base + ".md", "w") as f:
        f.write(md)
    print(md)
    shutil.rmtree(a.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
