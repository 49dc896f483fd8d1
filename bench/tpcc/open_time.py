#!/usr/bin/env python3
"""How long `aup run` takes to open a store (TPC-C at each W, and a bank
store of many transfers), what the TPC-C secondary indexes add (they are
rebuilt at every open, not stored: docs/store-format.md), and, with
--before, the same against another build in the same run.

For each W: `aup-tpcc load` makes the store once (kept with --keep: a later
run reuses it); then `aup run MODULE --data STORE --engine vm </dev/null`
(open, recover, rebuild the indexes, exit at the end of input) is timed
with examples/tpcc/tpcc.aup and, as the baseline measured in the same run,
with its schema alone (records, tables and vars; no index, no code:
dropping an index is allowed, the tables are the same). With
--bank-transfers N, a store of examples/bank/bank.aup with 10,000 accounts
and N transfers (sent once to `aup run`, which checkpoints as it serves)
is timed the same way with bank.aup itself. Beside them, in the same
turns, the floor of an open: what any program that reads the store and
holds what aup holds must pay, whatever its format or structures: every
file of the store read once, sequentially, and as many bytes of fresh
memory as the open left aup resident (huge pages advised, as for aup's
heap) written once; no decoding, no tree, no process to start. Every
command (each build, each module) runs once untimed, then all of them in
turn, the order reversed every other repetition. The VM engine keeps JIT
compilation out of the figures; modules are built once beforehand by each
build. aup is pinned to the last CPU. Reports wall and CPU time medians
with their spread, the ratios, and the open time per million rows and per
GB of images, in bench/results/open_time.{json,md}.

usage: open_time.py BUILD_DIR [--before BUILD_DIR] [--warehouses 1,10] [--bank-transfers N] [--reps 5]
                    [--dir DIR] [--keep] [--out DIR]
"""
import argparse
import datetime
import json
import mmap
import os
import platform
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time


def run_timed(cmd):
    """Runs cmd (an argv with stdin from /dev/null, or a function that
    times itself); (wall s, CPU s, peak resident bytes)."""
    if callable(cmd):
        return cmd()
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.monotonic() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"open_time: {' '.join(cmd)} exited {code}: {err.decode(errors='replace')[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def store_files(store):
    return [os.path.join(dp, f) for dp, _, fs in os.walk(store) for f in sorted(fs)]


def floor_open(store, resident):
    """The floor of an open, timed in this process: every file of the store
    read once in 1 MiB reads, and `resident` bytes of fresh anonymous memory
    (MADV_HUGEPAGE, as glibc's heap under aup's tunable) written once, then
    unmapped (as aup's exit does); prints wall s, CPU s."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.monotonic()
    memory = mmap.mmap(-1, resident, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if hasattr(mmap, "MADV_HUGEPAGE"):
        memory.madvise(mmap.MADV_HUGEPAGE)
    chunk = b"\1" * (1 << 20)
    for at in range(0, resident, len(chunk)):
        memory.write(chunk[:resident - at])
    buf = bytearray(1 << 20)
    for path in store_files(store):
        with open(path, "rb", buffering=0) as f:
            while f.readinto(buf):
                pass
    memory.close()
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    print(wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))


def floor_timed(pin, store, resident):
    """floor_open in a child (pinned as aup is), so that this process never
    holds that memory: a child's peak resident memory, which run_timed
    reports, starts from its parent's at the fork."""
    out = subprocess.run(pin + [sys.executable, os.path.abspath(__file__), "--floor", store, str(resident)],
                         check=True, capture_output=True, text=True).stdout.split()
    return float(out[0]), float(out[1]), resident


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


def store_summary(aup, store):
    """(rows, image bytes) of a store, from `aup replay`'s summary."""
    out = subprocess.run([aup, "replay", "--data", store], check=True, capture_output=True, text=True).stdout
    rows = sum(int(n) for n in re.findall(r"^\s+table \S+: (\d+) rows", out, re.M))
    images = sum(os.path.getsize(os.path.join(store, f)) for f in os.listdir(store) if f.startswith("image"))
    return rows, images


def tpcc_store(build, work, w, keep):
    store_dir = os.path.join(work, f"w{w}")
    store = os.path.join(store_dir, "store")
    if keep and os.path.isdir(store):
        print(f"open_time: reusing the W={w} store {store}", flush=True)
        return store
    shutil.rmtree(store_dir, ignore_errors=True)
    print(f"open_time: loading W={w} into {store_dir} ...", flush=True)
    subprocess.run([os.path.join(build, "bench/tpcc/aup-tpcc"), "load", "--backend", "aup", "--dir", store_dir,
                    "--warehouses", str(w)], check=True, stdout=subprocess.DEVNULL)
    return store


def bank_store(aup, module, work, transfers, keep):
    """A bank store as serving makes one: 10,000 accounts opened and funded,
    then `transfers` transfers of 1 between random accounts (seeded), sent
    to `aup run` (which checkpoints as it goes, so the images hold most
    rows and the log the rest)."""
    store = os.path.join(work, f"bank{transfers}")
    if keep and os.path.isdir(store):
        print(f"open_time: reusing the bank store {store}", flush=True)
        return store
    shutil.rmtree(store, ignore_errors=True)
    print(f"open_time: sending {transfers:,} transfers to a store in {store} ...", flush=True)
    rng = random.Random(36)
    accounts = 10000
    p = subprocess.Popen([aup, "run", module, "--data", store], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    out = p.stdin
    lines = [f'{{"event":"open","args":{{"id":{a},"owner":"owner {a}"}}}}\n' for a in range(1, accounts + 1)]
    lines += [f'{{"event":"deposit","args":{{"id":{a},"amount":1000000000}}}}\n' for a in range(1, accounts + 1)]
    out.write("".join(lines).encode())
    for start in range(0, transfers, 100000):
        chunk = []
        for _ in range(min(100000, transfers - start)):
            f = rng.randrange(1, accounts + 1)
            t = rng.randrange(1, accounts)
            chunk.append(f'{{"event":"transfer","args":{{"from":{f},"to":{t if t < f else t + 1},"amount":1}}}}\n')
        out.write("".join(chunk).encode())
    out.close()
    if p.wait() != 0:
        sys.exit(f"open_time: making the bank store {store} failed")
    return store


def measure(name, store, cmds, reps, summary_aup, pin):
    """Times every command of `cmds` (side -> argv) on `store`, alternating,
    and the floor of an open into what the first command left resident."""
    resident = {}
    for side in cmds:  # untimed: the first open after a load may replay the log and write images
        resident[side] = run_timed(cmds[side])[2]
    floor_bytes = resident[next(iter(cmds))]
    cmds = dict(cmds, floor=lambda: floor_timed(pin, store, floor_bytes))
    run_timed(cmds["floor"])
    rows, images = store_summary(summary_aup, store)
    walls = {s: [] for s in cmds}
    cpus = {s: [] for s in cmds}
    for rep in range(reps):
        order = list(cmds) if rep % 2 == 0 else list(reversed(list(cmds)))
        for side in order:
            wall, used, _ = run_timed(cmds[side])
            walls[side].append(wall)
            cpus[side].append(used)
        print(f"open_time: {name} rep {rep + 1}/{reps}: " +
              ", ".join(f"{s} {walls[s][-1] * 1000:.0f} ms" for s in cmds), flush=True)
    res = {"store": name, "rows": rows, "image_bytes": images, "sides": {}, "floor_bytes": floor_bytes,
           "resident_bytes": resident}
    res["store_bytes"] = sum(os.path.getsize(f) for f in store_files(store))
    for side in cmds:
        res["sides"][side] = {"wall_s": spread(walls[side]), "cpu_s": spread(cpus[side])}
    for side in cmds:  # after / before, per pair of runs
        if side.startswith("after/") and ("before/" + side[6:]) in cmds:
            b = "before/" + side[6:]
            res.setdefault("after_over_before", {})[side[6:]] = spread(
                [x / y for x, y in zip(walls[side], walls[b])])
    for side in cmds:  # each open over the floor, per turn
        if side != "floor":
            res.setdefault("over_floor", {})[side] = spread([x / y for x, y in zip(walls[side], walls["floor"])])
    return res


def ms(x):
    return f"{x['median'] * 1000:,.0f} ({x['min'] * 1000:,.0f}–{x['max'] * 1000:,.0f})"


def markdown(env, results, n_indexes):
    builds = env["builds"]
    out = [f"# Opening a store: TPC-C with and without its indexes, a bank store\n",
           f"Generated {env['date']} by `{env['command']}`.\n",
           f"Machine: {env['machine']}; load average {env['load']:.2f} at the start. `aup run MODULE --data STORE "
           f"--engine vm </dev/null` (open, recover, rebuild the indexes, exit); TPC-C with tpcc.aup (its "
           f"{n_indexes} indexes rebuilt) and with its schema alone (no indexes, no code), the bank store with "
           f"bank.aup; builds: {', '.join(f'{k} = {v}' for k, v in builds.items())}. Every command alternating, "
           f"{env['reps']} repetitions after one untimed open each; medians, min–max in brackets; aup pinned to "
           f"CPU {env['cpu']}. Per million rows and per GB of images: the median open, module with indexes. "
           f"The floor: every file of the store read once and, written once, fresh memory as large as the first "
           f"build's open left resident (bench/tpcc/open_time.py, floor_open), in the same turns.\n",
           "| store | rows | images MB | build | open (ms) | open, no indexes (ms) | CPU (ms) | ms per M rows "
           "| ms per GB |",
           "|---|---:|---:|---|---:|---:|---:|---:|---:|"]
    for r in results:
        for b in builds:
            main = r["sides"].get(f"{b}/indexes") or r["sides"].get(f"{b}/module")
            plain = r["sides"].get(f"{b}/no_indexes")
            med = main["wall_s"]["median"] * 1000
            out.append(f"| {r['store']} | {r['rows']:,} | {r['image_bytes'] / 1e6:,.0f} | {b} | {ms(main['wall_s'])} | "
                       f"{ms(plain['wall_s']) if plain else '—'} | {ms(main['cpu_s'])} | "
                       f"{med / (r['rows'] / 1e6):,.0f} | {med / (r['image_bytes'] / 1e9):,.0f} |")
        fl = r["sides"]["floor"]
        out.append(f"| {r['store']} | | | floor ({r['floor_bytes'] / 1e6:,.0f} MB) | {ms(fl['wall_s'])} | — | "
                   f"{ms(fl['cpu_s'])} | | |")
    if any("after_over_before" in r for r in results):
        out += ["", "After ÷ before, per pair of runs (median, min–max):", "",
                "| store | module | after ÷ before |", "|---|---|---:|"]
        for r in results:
            for side, x in r.get("after_over_before", {}).items():
                out.append(f"| {r['store']} | {side} | {x['median']:.2f} ({x['min']:.2f}–{x['max']:.2f}) |")
    out += ["", "Each open over the floor, per turn (median, min–max), and what it left resident:", "",
            "| store | build/module | ÷ floor | resident MB |", "|---|---|---:|---:|"]
    for r in results:
        for side, x in r["over_floor"].items():
            out.append(f"| {r['store']} | {side} | {x['median']:.2f} ({x['min']:.2f}–{x['max']:.2f}) | "
                       f"{r['resident_bytes'][side] / 1e6:,.0f} |")
    return "\n".join(out) + "\n"


def build_modules(builds, sources, work):
    """Each build's .aupm of each module: (build, module) -> path."""
    modules = {}
    for b, build in builds.items():
        for side, src in sources.items():
            out = os.path.join(work, f"{b}-{side}.aupm")
            subprocess.run([os.path.join(build, "cli/aup"), "build", src, "-o", out], check=True,
                           stdout=subprocess.DEVNULL)
            modules[(b, side)] = out
    return modules


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--floor":  # floor_timed's child
        floor_open(sys.argv[2], int(sys.argv[3]))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build")
    ap.add_argument("--before", help="another build directory, timed in the same run (`before`; BUILD is `after`)")
    ap.add_argument("--warehouses", default="1,10", help="TPC-C stores to time (empty: none)")
    ap.add_argument("--bank-transfers", type=int, default=0, help="also a bank store of this many transfers")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--dir", default="/dev/shm/aup-open-time")
    ap.add_argument("--keep", action="store_true", help="reuse the stores in --dir, and leave them there")
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--module", default="examples/tpcc/tpcc.aup")
    ap.add_argument("--bank-module", default="examples/bank/bank.aup")
    a = ap.parse_args()
    builds = {"after": a.build, "before": a.before} if a.before else {"this": a.build}
    aup = os.path.join(a.build, "cli/aup")
    os.makedirs(a.dir, exist_ok=True)
    source = open(a.module).read()
    n_indexes = index_count(source)
    if n_indexes == 0:
        sys.exit(f"open_time: {a.module} declares no index: nothing to measure")
    plain = os.path.join(a.dir, "tpcc_no_indexes.aup")
    with open(plain, "w") as f:
        f.write(without_indexes(source))
    modules = build_modules(builds, {"indexes": a.module, "no_indexes": plain, "module": a.bank_module}, a.dir)
    load_at_start = os.getloadavg()[0]
    cpu = os.cpu_count() - 1
    pin = ["taskset", "-c", str(cpu)] if shutil.which("taskset") and cpu > 0 else []

    def cmds(store, sides):
        return {f"{b}/{s}": pin + [os.path.join(builds[b], "cli/aup"), "run", modules[(b, s)], "--data", store,
                                   "--engine", "vm"] for b in builds for s in sides}

    results = []
    for w in [int(x) for x in a.warehouses.split(",") if x]:
        store = tpcc_store(a.build, a.dir, w, a.keep)
        results.append(measure(f"TPC-C W={w}", store, cmds(store, ["indexes", "no_indexes"]), a.reps, aup, pin))
    if a.bank_transfers:
        store = bank_store(aup, a.bank_module, a.dir, a.bank_transfers, a.keep)
        results.append(measure(f"bank, {a.bank_transfers:,} transfers", store, cmds(store, ["module"]), a.reps,
                               aup, pin))
    env = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "command": "python3 bench/tpcc/open_time.py " + " ".join(sys.argv[1:]),
           "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}",
           "load": load_at_start, "reps": a.reps, "cpu": cpu, "builds": builds}
    md = markdown(env, results, n_indexes)
    os.makedirs(a.out, exist_ok=True)
    base = os.path.join(a.out, "open_time")  # .json and .md, as the other benchmarks' reports
    with open(base + ".json", "w") as f:
        json.dump({"environment": env, "indexes": n_indexes, "results": results}, f, indent=1)
    with open(base + ".md", "w") as f:
        f.write(md)
    print(md)
    if not a.keep:
        shutil.rmtree(a.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
