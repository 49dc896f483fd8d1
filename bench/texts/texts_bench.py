#!/usr/bin/env python3
"""The text methods beside Lua's string library, in one run (docs/benchmarks.md,
"Texts beside Lua").

Each case is one operation on an ASCII text of 50 or of 500 characters,
written as the same loop in both languages:

  slice  the middle 80% of the text     aup t.slice(a, b)  Lua s:sub(a + 1, b)
  find   "word_mid" at the middle          aup t.find(s)      Lua s:find(s, 1, true)
         (every word before it starts as it does: a false start each 10 bytes)
  split  by "," (pieces of 9 characters) aup t.split(",")   Lua a find loop into a table
  join   those pieces with ","           aup xs.join(",")   Lua table.concat(xs, ",")

aup runs each loop as a query of `aup run --memory` (the interpreter and
the JIT), Lua as a chunk of `lua5.4` (Debian's); both pinned to one CPU, this
driver to the other. An aup query's time is its answer's round trip less
that of the same query with no rounds (taken before each timing); Lua's is
os.clock() around the loop. Each figure is ns per round, the median of
--reps repetitions (min-max beside it), the repetitions of Lua and of each
engine taken in turn; the ratio is aup's median over Lua's. A round's time includes the loop's own step (a counted `for` in
both); the empty loop of each is measured too and reported beside it.

Needs lua5.4 (apt-get install lua5.4); nothing is installed here.
Writes bench/results/texts.{json,md} (--out to change the prefix).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CASES = ["empty", "slice", "find", "split", "join"]
LENGTHS = [50, 500]
# Rounds per timing: the temporaries an aup query makes stay in its arena
# until it ends, so each query's are kept under about 10 MB, within the
# block an arena keeps between runs (vm/arena.h, 16 MiB): what is timed is
# the method, not the kernel faulting in fresh pages (a query making more
# pays that too; the docs give the figure).
ROUNDS = {("empty", 50): 1_000_000, ("empty", 500): 1_000_000,
          ("slice", 50): 150_000, ("slice", 500): 20_000,
          ("find", 50): 500_000, ("find", 500): 200_000,
          ("split", 50): 30_000, ("split", 500): 4_000,
          ("join", 50): 120_000, ("join", 500): 16_000}

AUP_MODULE = """// bench/texts: each query runs one text method n times.
query empty(t: text, xs: [text], n: num) { let r = 0; for i in 0 .. n { r = i }; return r }
query slice(t: text, xs: [text], n: num) {
  let a = floor(len(t) / 10)
  let b = len(t) - a
  let r = ""
  for i in 0 .. n { r = t.slice(a, b) }
  return len(r)
}
query find(t: text, xs: [text], n: num) { let r = 0; for i in 0 .. n { r = t.find("word_mid") }; return r }
query split(t: text, xs: [text], n: num) { let r: [text] = []; for i in 0 .. n { r = t.split(",") }; return r.count }
query join(t: text, xs: [text], n: num) { let r = ""; for i in 0 .. n { r = xs.join(",") }; return len(r) }
"""

LUA_CHUNK = r"""
local case, t, n = arg[1], arg[2], tonumber(arg[3])
local xs = {}
for piece in string.gmatch(t, "[^,]+") do xs[#xs + 1] = piece end
local function split(s, sep)
  local out, i = {}, 1
  while true do
    local a, b = string.find(s, sep, i, true)
    if not a then out[#out + 1] = string.sub(s, i); return out end
    out[#out + 1] = string.sub(s, i, a - 1)
    i = b + 1
  end
end
local r
local t0 = os.clock()
if case == "empty" then
  for i = 1, n do r = i end
elseif case == "slice" then
  local a = #t // 10
  local b = #t - a
  for i = 1, n do r = string.sub(t, a + 1, b) end
elseif case == "find" then
  for i = 1, n do r = string.find(t, "word_mid", 1, true) end
elseif case == "split" then
  for i = 1, n do r = split(t, ",") end
elseif case == "join" then
  for i = 1, n do r = table.concat(xs, ",") end
end
local t1 = os.clock()
io.write(string.format("%.9f\n", t1 - t0))
"""


def text_of(length):
    """ASCII words of 9 characters joined by "," with "word_mid" at the middle."""
    words = []
    total = 0
    i = 0
    while total < length:
        words.append(f"word{i:05d}"[:9])
        total += 10
        i += 1
    t = ",".join(words)[:length]
    mid = length // 2
    return t[:mid] + "word_mid" + t[mid + 8:]


class AupServer:
    def __init__(self, aup, module, engine, cpu):
        self.p = subprocess.Popen(
            ["taskset", "-c", str(cpu), aup, "run", module, "--memory", "--engine", engine,
             "--step-budget", "1000000000000"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)

    def ask(self, case, t, xs, n):
        line = json.dumps({"query": case, "args": {"t": t, "xs": xs, "n": n}})
        start = time.perf_counter()
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        answer = self.p.stdout.readline()
        elapsed = time.perf_counter() - start
        if '"ok":true' not in answer:
            raise SystemExit(f"texts_bench: aup answered {answer!r} to {case}")
        return elapsed

    def timed(self, case, t, xs, n):
        base = min(self.ask(case, t, xs, 0) for _ in range(3))
        return max(self.ask(case, t, xs, n) - base, 0.0)

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


def lua_time(lua, chunk, cpu, case, t, n):
    out = subprocess.run(["taskset", "-c", str(cpu), lua, chunk, case, t, str(n)],
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def summary(times_ns):
    return {"median": statistics.median(times_ns), "min": min(times_ns), "max": max(times_ns)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--aup", default="build/cli/aup")
    ap.add_argument("--lua", default="lua5.4")
    ap.add_argument("--reps", type=int, default=11)
    ap.add_argument("--cpus", default="0:1", help="DRIVER:SUBJECT (default 0:1)")
    ap.add_argument("--engines", default="vm,jit")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every round count (a smoke run: 0.01)")
    ap.add_argument("--out", default="bench/results/texts")
    a = ap.parse_args()
    driver_cpu, cpu = a.cpus.split(":")
    os.sched_setaffinity(0, {int(driver_cpu)})
    work = tempfile.mkdtemp(prefix="aup-texts-bench-")
    module = os.path.join(work, "texts.aup")
    chunk = os.path.join(work, "texts.lua")
    with open(module, "w") as f:
        f.write(AUP_MODULE)
    with open(chunk, "w") as f:
        f.write(LUA_CHUNK)
    engines = a.engines.split(",")
    results = []
    servers = {e: AupServer(a.aup, module, e, cpu) for e in engines}
    try:
        for length in LENGTHS:
            t = text_of(length)
            xs = t.split(",")
            for case in CASES:
                n = max(1, int(ROUNDS[(case, length)] * a.scale))
                row = {"case": case, "length": length, "rounds": n}
                for e in engines:
                    servers[e].timed(case, t, xs, n)  # warm-up: the arena's pages, the caches
                # Repetitions interleaved (Lua, then each engine, then again), so a
                # slow spell of this shared machine falls on all of them alike.
                ns = {name: [] for name in ["lua"] + engines}
                for _ in range(a.reps):
                    ns["lua"].append(lua_time(a.lua, chunk, cpu, case, t, n) * 1e9 / n)
                    for e in engines:
                        ns[e].append(servers[e].timed(case, t, xs, n) * 1e9 / n)
                for name, times in ns.items():
                    row[name] = summary(times)
                for e in engines:
                    row[e + "_ratio"] = row[e]["median"] / row["lua"]["median"]
                results.append(row)
                print(f"{case:6} {length:4}  lua {row['lua']['median']:8.1f} ns  " +
                      "  ".join(f"{e} {row[e]['median']:8.1f} ns ({row[e + '_ratio']:.2f}x)" for e in engines),
                      flush=True)
    finally:
        for s in servers.values():
            s.close()
    write(a, results, engines)


def write(a, results, engines):
    lua_version = subprocess.run([a.lua, "-v"], capture_output=True, text=True).stdout.strip()
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "lua": lua_version, "reps": a.reps,
            "cpus": a.cpus, "scale": a.scale}
    with open(a.out + ".json", "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)
    lines = [f"Texts beside Lua ({meta['date']}, {lua_version}, {a.reps} repetitions, driver:subject CPUs {a.cpus}).",
             "ns per round, median (min-max); ratio = aup's median / Lua's.", "",
             "| case | length | Lua | " + " | ".join(f"aup {e} | ratio" for e in engines) + " |",
             "|---|---:|---:|" + "---:|---:|" * len(engines)]
    for r in results:
        cell = lambda s: f"{s['median']:.1f} ({s['min']:.1f}-{s['max']:.1f})"
        lines.append(f"| {r['case']} | {r['length']} | {cell(r['lua'])} | " +
                     " | ".join(f"{cell(r[e])} | {r[e + '_ratio']:.2f}x" for e in engines) + " |")
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
