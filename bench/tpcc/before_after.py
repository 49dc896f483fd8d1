#!/usr/bin/env python3
"""Two builds of aup through TPC-C and bench/peers in one run: a change's cost.

TPC-C: each build loads W warehouses once into a template of its own (the
two builds' stores need not share a format), and every run starts from a
fresh copy of its build's template, in RAM (/dev/shm) and on disk
(--disk-dir). bench/peers: durable bank transfers on aup alone at each
client count, the store on disk. Rounds alternate the builds (and which
goes first), each run one repetition pinned as the drivers pin (0:1), so
the machine's drift falls on both alike. The `after` build's drivers
(aup-tpcc, peers_bench) drive both, so the load is the same; with
--own-drivers each build's aup-tpcc drives its own runs, with the module
it was built with (for a change to tpcc.aup and the rows its loader
sends, which the other build's module would refuse). Reports the medians
over the rounds, after / before, and the spread (min-max).

Usage:
  bench/tpcc/before_after.py --before DIR --after DIR [--rounds 5]
      [--terminals 64] [--warehouses 1] [--seconds 10] [--clients 1,16,64]
      [--peers-seconds 5] [--no-peers] [--own-drivers] [--disk-dir /var/tmp]
      [--name tpcc-peers-before-after] [--out bench/results]
DIR is a build directory (DIR/cli/aup).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def spread(xs):
    return ("%.0f-%.0f" if min(xs) >= 100 else "%.3g-%.3g") % (min(xs), max(xs))


def tpcc_run(a, tpcc, aup, template, where, tmp):
    run_dir = os.path.join(where, "aup-tpcc-ab-run")
    shutil.rmtree(run_dir, ignore_errors=True)
    shutil.copytree(template, run_dir)
    out = os.path.join(tmp, "run.json")
    try:
        subprocess.run([tpcc, "run", "--aup", aup, "--dir", run_dir, "--warehouses", str(a.warehouses),
                        "--terminals", str(a.terminals), "--seconds", str(a.seconds), "--warmup", "2",
                        "--json", out], check=True, stdout=subprocess.DEVNULL)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    with open(out) as f:
        r = json.load(f)
    if not r["consistent"]:
        sys.exit("before_after.py: a TPC-C run ended inconsistent: %s" % r["problems"])
    return {"per_s": r["transactions_per_s"], "cpu_us": r["cpu_us_per_transaction"]}


def peers_run(a, peers, aup, tmp, name):
    data = os.path.join(a.disk_dir, "aup-peers-ab")
    shutil.rmtree(data, ignore_errors=True)
    os.makedirs(data)
    try:
        subprocess.run([peers, "--aup", aup, "--bank", "examples/bank/bank.aup", "--data", data, "--systems", "aup",
                        "--clients", a.clients, "--seconds", str(a.peers_seconds), "--warmup", "1",
                        "--sync-seconds", "1", "--reps", "1", "--out", tmp, "--name", name],
                       check=True, stdout=subprocess.DEVNULL)
    finally:
        shutil.rmtree(data, ignore_errors=True)
    with open(os.path.join(tmp, name + ".json")) as f:
        points = json.load(f)["points"]
    return {p["clients"]: {"per_s": p["median"]["transfers_per_s"], "cpu_us": p["median"]["server_cpu_us_per_transfer"]}
            for p in points if p["system"] == "aup"}


def row(label, figures):
    b, f = figures["before"], figures["after"]
    pb, pf = [x["per_s"] for x in b], [x["per_s"] for x in f]
    cb, cf = [x["cpu_us"] for x in b], [x["cpu_us"] for x in f]
    return {"case": label, "before_per_s": statistics.median(pb), "after_per_s": statistics.median(pf),
            "per_s_after_over_before": statistics.median(pf) / statistics.median(pb),
            "before_per_s_spread": spread(pb), "after_per_s_spread": spread(pf),
            "before_cpu_us": statistics.median(cb), "after_cpu_us": statistics.median(cf),
            "cpu_after_over_before": statistics.median(cf) / statistics.median(cb)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--terminals", type=int, default=64)
    ap.add_argument("--warehouses", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--clients", default="1,16,64")
    ap.add_argument("--peers-seconds", type=float, default=5)
    ap.add_argument("--no-peers", action="store_true", help="TPC-C only")
    ap.add_argument("--own-drivers", action="store_true",
                    help="each build's aup-tpcc (and the module it was built with) drives its own runs")
    ap.add_argument("--disk-dir", default="/var/tmp")
    ap.add_argument("--name", default="tpcc-peers-before-after")
    ap.add_argument("--out", default="bench/results")
    a = ap.parse_args()
    builds = {w: os.path.join(getattr(a, w), "cli", "aup") for w in ("before", "after")}
    drivers = {w: os.path.join(getattr(a, w) if a.own_drivers else a.after, "bench", "tpcc", "aup-tpcc")
               for w in ("before", "after")}
    peers = os.path.join(a.after, "bench", "peers", "peers_bench")
    places = {"RAM": "/dev/shm", "disk": a.disk_dir}
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = os.getloadavg()[0]
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        templates = {}
        for w, aup in builds.items():
            templates[w] = os.path.join("/dev/shm", "aup-tpcc-ab-" + w)
            shutil.rmtree(templates[w], ignore_errors=True)
            subprocess.run([drivers[w], "load", "--aup", aup, "--dir", templates[w], "--warehouses", str(a.warehouses)],
                           check=True, stdout=subprocess.DEVNULL)
        try:
            for r in range(a.rounds):
                for w in (["before", "after"] if r % 2 == 0 else ["after", "before"]):
                    print("round %d/%d: %s" % (r + 1, a.rounds, w), file=sys.stderr, flush=True)
                    for place, where in places.items():
                        label = "TPC-C W=%d, %d terminals, %s" % (a.warehouses, a.terminals, place)
                        figures.setdefault(label, {"before": [], "after": []})[w].append(
                            tpcc_run(a, drivers[w], builds[w], templates[w], where, tmp))
                    if a.no_peers:
                        continue
                    for clients, f in peers_run(a, peers, builds[w], tmp, "%s-%d" % (w, r)).items():
                        label = "transfers, %d clients, disk" % clients
                        figures.setdefault(label, {"before": [], "after": []})[w].append(f)
        finally:
            for t in templates.values():
                shutil.rmtree(t, ignore_errors=True)
    rows = [row(label, f) for label, f in figures.items()]
    md = ["# TPC-C%s, two builds in one run" % ("" if a.no_peers else " and bench/peers"), "",
          "%d rounds, the builds alternating; TPC-C %g s after 2 s of warm-up%s; "
          "drivers on CPU 0, aup on CPU 1; started %s, load average %.2f. Medians over the rounds; spread min-max."
          % (a.rounds, a.seconds, "" if a.no_peers else ", transfers %g s after 1 s" % a.peers_seconds, started, load),
          "Each build's own aup-tpcc and tpcc.aup drove its runs." if a.own_drivers else
          "The after build's drivers drove both.", "",
          "| case | per s before | after | after ÷ before | spread before | spread after | "
          "server CPU µs before | after | after ÷ before |", "|---|---:|---:|---:|---|---|---:|---:|---:|"]
    for x in rows:
        md.append("| %s | %.0f | %.0f | %.3f | %s | %s | %.1f | %.1f | %.3f |" % (
            x["case"], x["before_per_s"], x["after_per_s"], x["per_s_after_over_before"], x["before_per_s_spread"],
            x["after_per_s_spread"], x["before_cpu_us"], x["after_cpu_us"], x["cpu_after_over_before"]))
    text = "\n".join(md) + "\n"
    print(text)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, a.name + ".md"), "w") as f:
        f.write(text)
    with open(os.path.join(a.out, a.name + ".json"), "w") as f:
        json.dump({"bench": "tpcc-peers-before-after", "date": started, "load_average_at_start": load,
                   "command": " ".join(sys.argv), "rounds": a.rounds, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
