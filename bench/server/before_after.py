#!/usr/bin/env python3
"""Two builds of aup through bench/server in one run: a change's cost.

Runs server_bench once per round for each build, the two alternating (and
which goes first alternating too), each run a single repetition pinned as
asked (--cpus, default 0:1), so that the machine's drift falls on both
alike. Reports, per store, transport and connection count, the medians over
the rounds of the server's CPU per request and of events per second for
each build, after / before, and the spread (min-max over rounds); and for
each build HTTP's server CPU per request against the line protocol's over
a Unix socket and over TCP, in the same rounds.

Usage:
  bench/server/before_after.py --before DIR --after DIR [--rounds 5]
      [--window 64] [--connections 16,64] [--transports unix,tcp,http]
      [--store shm=/dev/shm] [--io-threads 0] [--seconds 5] [--cpus 0:1]
      [--name server-before-after] [--out bench/results]
DIR is a build directory (DIR/cli/aup, DIR/bench/server/server_bench) or a
folder holding `aup`, `server_bench` and `libaupjit.so` (a build kept
aside: AUP_JIT_LIB is set to its libaupjit.so). The `after` build's
server_bench drives both, so the load is the same.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def tools(d):
    if os.path.exists(os.path.join(d, "cli", "aup")):
        return os.path.join(d, "cli", "aup"), os.path.join(d, "bench", "server", "server_bench"), None
    lib = os.path.join(d, "libaupjit.so")
    return os.path.join(d, "aup"), os.path.join(d, "server_bench"), lib if os.path.exists(lib) else None


def run_one(bench, aup, lib, a, out, name):
    cmd = [bench, "--aup", aup, "--bank", a.bank, "--connections", a.connections, "--seconds", str(a.seconds),
           "--warmup", "1", "--accounts", "10000", "--window", str(a.window), "--io-threads", str(a.io_threads),
           "--transports", a.transports, "--reps", "1", "--out", out, "--name", name]
    if a.cpus != "none":
        cmd += ["--cpus", a.cpus]
    for s in a.store:
        cmd += ["--store", s]
    env = dict(os.environ)
    if lib:
        env["AUP_JIT_LIB"] = lib
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, name + ".json")) as f:
        return json.load(f)["points"]


def key(p):
    # server_bench names rows "STORE" (unix) or "STORE TRANSPORT".
    parts = p["store"].split(" ")
    return (parts[0], parts[1] if len(parts) > 1 else "unix", p["connections"])


def spread(xs):
    return "%.3g-%.3g" % (min(xs), max(xs))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--bank", default="examples/bank/bank.aup")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--window", type=int, default=64)
    ap.add_argument("--connections", default="16,64")
    ap.add_argument("--transports", default="unix,tcp,http")
    ap.add_argument("--store", action="append", default=[], help="LABEL=DIR (repeatable; default shm=/dev/shm)")
    ap.add_argument("--io-threads", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--cpus", default="0:1")
    ap.add_argument("--name", default="server-before-after")
    ap.add_argument("--out", default="bench/results")
    a = ap.parse_args()
    a.store = a.store or ["shm=/dev/shm"]  # server_bench runs each store against --memory
    builds = {"before": tools(a.before), "after": tools(a.after)}
    bench = builds["after"][1]
    cpu = {"before": {}, "after": {}}
    rate = {"before": {}, "after": {}}
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            order = ["before", "after"] if r % 2 == 0 else ["after", "before"]
            for which in order:
                aup, _, lib = builds[which]
                print("round %d/%d: %s" % (r + 1, a.rounds, which), file=sys.stderr, flush=True)
                for p in run_one(bench, aup, lib, a, tmp, "%s-%d" % (which, r)):
                    k = key(p)
                    cpu[which].setdefault(k, []).append(p["median"]["server_cpu_us_per_event"])
                    rate[which].setdefault(k, []).append(p["median"]["events_per_s"])
    rows = []
    for k in sorted(cpu["after"]):
        b, f = cpu["before"].get(k, []), cpu["after"][k]
        rows.append({"store": k[0], "transport": k[1], "connections": k[2],
                     "before_cpu_us": statistics.median(b), "after_cpu_us": statistics.median(f),
                     "after_over_before": statistics.median(f) / statistics.median(b),
                     "before_spread": spread(b), "after_spread": spread(f),
                     "before_events_per_s": statistics.median(rate["before"][k]),
                     "after_events_per_s": statistics.median(rate["after"][k])})
    http = []
    for row in rows:
        if row["transport"] != "http":
            continue
        for base in ("unix", "tcp"):
            other = [x for x in rows if x["store"] == row["store"] and x["connections"] == row["connections"]
                     and x["transport"] == base]
            if other:
                http.append({"store": row["store"], "connections": row["connections"], "against": base,
                             "before_http_over_line": row["before_cpu_us"] / other[0]["before_cpu_us"],
                             "http_over_line": row["after_cpu_us"] / other[0]["after_cpu_us"]})
    mode = "closed loop" if a.window == 1 else "pipelined (%d outstanding a connection)" % a.window
    md = ["# bench/server, two builds in one run", "",
          "%s; %d rounds, the builds alternating, each run one repetition of %g s after 1 s of warm-up; "
          "--io-threads %d, --cpus %s; started %s, load average %.2f. Medians over the rounds; spread min-max."
          % (mode, a.rounds, a.seconds, a.io_threads, a.cpus, started, load),
          "", "| store | transport | connections | server CPU µs/request before | after | after ÷ before | "
          "spread before | spread after | events/s before | after |",
          "|---|---|---:|---:|---:|---:|---|---|---:|---:|"]
    for x in rows:
        md.append("| %s | %s | %d | %.3f | %.3f | %.3f | %s | %s | %.0f | %.0f |" % (
            x["store"], x["transport"], x["connections"], x["before_cpu_us"], x["after_cpu_us"],
            x["after_over_before"], x["before_spread"], x["after_spread"], x["before_events_per_s"],
            x["after_events_per_s"]))
    if http:
        md += ["", "HTTP's server CPU per request against the line protocol's (medians of each):", "",
               "| store | connections | against | HTTP ÷ line before | after |", "|---|---:|---|---:|---:|"]
        for h in http:
            md.append("| %s | %d | %s | %.3f | %.3f |" % (h["store"], h["connections"], h["against"],
                                                      h["before_http_over_line"], h["http_over_line"]))
    text = "\n".join(md) + "\n"
    print(text)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, a.name + ".md"), "w") as f:
        f.write(text)
    with open(os.path.join(a.out, a.name + ".json"), "w") as f:
        json.dump({"bench": "server-before-after", "date": started, "load_average_at_start": load,
                   "command": " ".join(sys.argv), "rounds": a.rounds, "window": a.window,
                   "io_threads": a.io_threads, "cpus": a.cpus, "rows": rows, "http_over_line": http}, f, indent=1)


if __name__ == "__main__":
    main()
