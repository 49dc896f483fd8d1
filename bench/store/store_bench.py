#!/usr/bin/env python3
"""The durable store under load: bank transfers through `aup run --data`
with commits capped at 1, 16 and 64 events and uncapped, on the volume
that holds --dir. Reports events/s, bytes written per event and commit
(write + fdatasync) latency p50/p99, beside two baselines measured in the
same run: `aup run --memory` on the same input (what durability costs) and
a bare loop of 128-byte writes each followed by fdatasync on a
preallocated file in the same directory (the device's floor).

Then the append-only check: every transfer adds a row to `transfers`, a
table that only grows, so the image bytes per event must stay flat as the
run gets longer (docs/store-format.md's checkpoint policy rewrites an image only
when its table's log bytes pass the image's size).

usage: store_bench.py AUP BANK_MODULE [--dir DIR] [--reps N] [--out DIR] [--quick]
"""
import argparse
import datetime
import json
import os
import platform
import random
import resource
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ACCOUNTS = 1000


def setup_lines():
    out = []
    for i in range(ACCOUNTS):
        out.append('{"event":"open","args":{"id":%d,"owner":"o%d"}}' % (i, i))
        out.append('{"event":"deposit","args":{"id":%d,"amount":1000000000000}}' % i)
    return out


def transfer_lines(n, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a = rng.randrange(ACCOUNTS)
        b = (a + 1 + rng.randrange(ACCOUNTS - 1)) % ACCOUNTS
        out.append('{"event":"transfer","args":{"from":%d,"to":%d,"amount":%d}}' % (a, b, 1 + rng.randrange(10000)))
    return out


def keyed(lines):
    """The same requests, each with its own idempotency key (runtime/keys.h)."""
    return [line[:-1] + ',"key":"t-%07d"}' % i for i, line in enumerate(lines)]


def write_input(path, lines):
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def device_bytes(path):
    """Sectors written x 512 so far by the whole block device holding `path`
    (/sys/block/DEV/stat: every process's writes, the file system's journal
    included), or None when it is not on a block device."""
    st = os.stat(path)
    sys_dir = os.path.realpath("/sys/dev/block/%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev)))
    if not os.path.isdir(sys_dir):
        return None
    if os.path.exists(os.path.join(sys_dir, "partition")):
        sys_dir = os.path.dirname(sys_dir)
    try:
        with open(os.path.join(sys_dir, "stat")) as f:
            return int(f.read().split()[6]) * 512
    except (OSError, IndexError, ValueError):
        return None


def children_cpu():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_aup(aup, args, input_path, cpu=None):
    """Runs aup on a file; (wall seconds, stats dict or None). `cpu`, a
    list, gets the CPU seconds (user + system) aup took appended."""
    with open(input_path, "rb") as inp:
        cpu0 = children_cpu()
        t0 = time.perf_counter()
        r = subprocess.run([aup, "run"] + args, stdin=inp, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wall = time.perf_counter() - t0
        if cpu is not None:
            cpu.append(children_cpu() - cpu0)
    if r.returncode != 0:
        sys.exit("aup run %s failed: %s" % (" ".join(args), r.stderr.decode()))
    if b'"ok":false' in r.stdout:
        sys.exit("a transfer was refused: the workload must only succeed")
    m = re.search(r"aup: totals (\{.*\})", r.stderr.decode())
    return wall, (json.loads(m.group(1)) if m else None)


def fresh_store(aup, module, work, setup_path, name):
    d = os.path.join(work, name)
    shutil.rmtree(d, ignore_errors=True)
    run_aup(aup, [module, "--data", d], setup_path)
    return d


def fdatasync_floor(work, count):
    """128-byte writes into a preallocated file, each followed by fdatasync."""
    path = os.path.join(work, "floor")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    os.posix_fallocate(fd, 0, 64 << 20)
    os.fsync(fd)
    block = b"x" * 128
    lat = []
    for i in range(count):
        t0 = time.perf_counter_ns()
        os.pwrite(fd, block, i * 128)
        os.fdatasync(fd)
        lat.append(time.perf_counter_ns() - t0)
    os.close(fd)
    os.unlink(path)
    lat.sort()
    return {"p50_us": lat[len(lat) // 2] / 1000, "p99_us": lat[int(len(lat) * 0.99)] / 1000, "count": count}


def keys_cost(aup, module, work, setup_path, plain_path, keyed_path, n, reps):
    """Uncapped transfers without keys and with a key on each (`--keys`, a
    window holding them all), alternating which goes first: events/s, log
    and store bytes per event and aup's CPU per event, medians."""
    runs = {"plain": [], "keys": []}
    for rep in range(reps):
        order = ["plain", "keys"] if rep % 2 == 0 else ["keys", "plain"]
        for name in order:
            d = fresh_store(aup, module, work, setup_path, "store-keys-" + name)
            args = [module, "--data", d, "--stats"] + (["--keys", str(2 * n)] if name == "keys" else [])
            cpu = []
            wall, st = run_aup(aup, args, keyed_path if name == "keys" else plain_path, cpu)
            runs[name].append({"events_per_s": n / wall, "cpu_us_per_event": cpu[0] / n * 1e6,
                               "log_bytes_per_event": st["log_bytes"] / n,
                               "store_bytes_per_event": (st["log_bytes"] + st["image_bytes"]) / n})
            shutil.rmtree(d, ignore_errors=True)
            print("keys, rep %d, %-5s %8.0f events/s  %5.1f us CPU/event  %6.1f B/event (log) %6.1f (store)" %
                  (rep + 1, name, runs[name][-1]["events_per_s"], runs[name][-1]["cpu_us_per_event"],
                   runs[name][-1]["log_bytes_per_event"], runs[name][-1]["store_bytes_per_event"]))
    out = {"events": n}
    for name, rs in runs.items():
        out[name] = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
        out[name]["spread"] = {k: [min(r[k] for r in rs), max(r[k] for r in rs)] for k in rs[0]}
    out["extra_log_bytes_per_event"] = out["keys"]["log_bytes_per_event"] - out["plain"]["log_bytes_per_event"]
    out["extra_cpu_us_per_event"] = out["keys"]["cpu_us_per_event"] - out["plain"]["cpu_us_per_event"]
    out["cpu_ratio"] = out["keys"]["cpu_us_per_event"] / out["plain"]["cpu_us_per_event"]
    return out


def write_keys_report(out_dir, stamp, volume, reps, k, command):
    with open(os.path.join(out_dir, "store-keys.json"), "w") as f:
        json.dump({"generated": stamp, "command": command, "volume": volume,
                   "machine": platform.platform(), "repetitions": reps, "keys": k}, f, indent=1)
    with open(os.path.join(out_dir, "store-keys.md"), "w") as f:
        f.write("# What idempotency keys cost\n\n`%s` (generated %s) on %s (%s): %d bank "
                "transfers, uncapped batches, %d repetitions, medians (spread: least, most). `keys`: each "
                "request carries `\"key\":\"t-NNNNNNN\"` and aup runs with `--keys` holding them all.\n\n" %
                (command, stamp, volume["device"], volume["fs"], k["events"], reps))
        f.write("| requests | events/s | aup CPU per event | log B/event | store B/event |\n|---|---:|---:|---:|---:|\n")
        for name in ("plain", "keys"):
            r = k[name]
            sp = r["spread"]
            f.write("| %s | %.0f (%.0f-%.0f) | %.1f us (%.1f-%.1f) | %.1f | %.1f |\n" %
                    (name, r["events_per_s"], sp["events_per_s"][0], sp["events_per_s"][1], r["cpu_us_per_event"],
                     sp["cpu_us_per_event"][0], sp["cpu_us_per_event"][1], r["log_bytes_per_event"],
                     r["store_bytes_per_event"]))
        f.write("\nA key costs %.1f more log bytes and %.1f us more CPU per event (%.2fx).\n" %
                (k["extra_log_bytes_per_event"], k["extra_cpu_us_per_event"], k["cpu_ratio"]))


def bytes_cell(v):
    return "n/a" if v is None else "%.0f" % v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("aup")
    ap.add_argument("module")
    ap.add_argument("--dir", default="build/bench-store", help="where the stores go (the volume measured)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--quick", action="store_true", help="small counts: checks the bench runs (CI smoke)")
    ap.add_argument("--only-keys", action="store_true", help="only what idempotency keys cost (store-keys.*)")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="run-", dir=a.dir)
    scale = 0.02 if a.quick else 1.0
    caps = [("1", 1, 4000), ("16", 16, 40000), ("64", 64, 120000), ("uncapped", 0, 200000)]
    caps = [(name, cap, max(200, int(n * scale))) for name, cap, n in caps]
    setup_path = os.path.join(work, "setup.ndjson")
    write_input(setup_path, setup_lines())
    inputs = {}
    for name, cap, n in caps:
        inputs[name] = os.path.join(work, "transfers-%s.ndjson" % name)
        write_input(inputs[name], transfer_lines(n, 7))
    df = subprocess.run(["df", "-T", a.dir], capture_output=True, text=True).stdout.splitlines()[-1].split()
    volume = {"device": df[0], "fs": df[1], "dir": a.dir}  # as given: results name no checkout path
    print("volume: %s (%s) at %s" % (volume["device"], volume["fs"], volume["dir"]))
    n_keys = max(200, int(100000 * scale))
    plain_keys_path, keyed_path = os.path.join(work, "keys-plain.ndjson"), os.path.join(work, "keys-keyed.ndjson")
    write_input(plain_keys_path, transfer_lines(n_keys, 13))
    write_input(keyed_path, keyed(transfer_lines(n_keys, 13)))
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    def measure_keys():
        k = keys_cost(a.aup, a.module, work, setup_path, plain_keys_path, keyed_path, n_keys, max(3, a.reps))
        print("keys: %.1f more log bytes and %.1f us more CPU per event (%.2fx)" %
              (k["extra_log_bytes_per_event"], k["extra_cpu_us_per_event"], k["cpu_ratio"]))
        if not a.quick:
            os.makedirs(a.out, exist_ok=True)
            command = "sh bench/store/run.sh" + (" --only-keys" if a.only_keys else "")
            write_keys_report(a.out, stamp, volume, max(3, a.reps), k, command)
            print("wrote %s/store-keys.json and store-keys.md" % a.out)

    if a.only_keys:
        measure_keys()
        shutil.rmtree(work, ignore_errors=True)
        return

    reps = []
    for rep in range(a.reps):
        r = {"floor": fdatasync_floor(work, max(100, int(2000 * scale)))}
        # The memory baseline on the largest input.
        # (the setup runs first, as on the stores; its time is taken off)
        big = caps[-1]
        both = os.path.join(work, "both.ndjson")
        if not os.path.exists(both):
            with open(both, "w") as f:
                f.write(open(setup_path).read() + open(inputs[big[0]]).read())
        wall_setup, _ = run_aup(a.aup, [a.module, "--memory"], setup_path)
        wall_both, _ = run_aup(a.aup, [a.module, "--memory"], both)
        r["memory_events_per_s"] = big[2] / max(1e-9, wall_both - wall_setup)
        order = caps if rep % 2 == 0 else list(reversed(caps))
        for name, cap, n in order:
            d = fresh_store(a.aup, a.module, work, setup_path, "store-" + name)
            args = [a.module, "--data", d, "--stats"] + (["--max-batch", str(cap)] if cap else [])
            dev_before = device_bytes(work)
            wall, st = run_aup(a.aup, args, inputs[name])
            dev_after = device_bytes(work)
            r[name] = {
                "events": n,
                "wall_s": wall,
                "events_per_s": n / wall,
                "commits": st["commits"],
                "events_per_commit": n / max(1, st["commits"]),
                "store_bytes_per_event": (st["log_bytes"] + st["image_bytes"]) / n,
                "log_bytes_per_event": st["log_bytes"] / n,
                # write_bytes of /proc/PID/io counts every page dirtied as a
                # whole page; the device counts what it was asked to write.
                "process_bytes_per_event": st["process_write_bytes"] / n if st["process_write_bytes"] >= 0 else None,
                "device_bytes_per_event": (dev_after - dev_before) / n if dev_before is not None else None,
                "commit_p50_us": st["commit_p50_us"],
                "commit_p99_us": st["commit_p99_us"],
                "checkpoints": st["checkpoints"],
            }
            shutil.rmtree(d, ignore_errors=True)
            print("rep %d, batches %-8s %8.0f events/s  %6.1f events/commit  commit p50 %7.1f us  p99 %7.1f us  "
                  "%6.1f B/event (store) %7.1f (process) %7.1f (device)" %
                  (rep + 1, name, r[name]["events_per_s"], r[name]["events_per_commit"], r[name]["commit_p50_us"],
                   r[name]["commit_p99_us"], r[name]["store_bytes_per_event"], r[name]["process_bytes_per_event"] or -1,
                   r[name]["device_bytes_per_event"] or -1))
        print("rep %d, baselines: aup --memory %.0f events/s; bare fdatasync p50 %.1f us, p99 %.1f us" %
              (rep + 1, r["memory_events_per_s"], r["floor"]["p50_us"], r["floor"]["p99_us"]))
        reps.append(r)

    # The append-only check: longer uncapped runs, image bytes per event.
    growth = []
    lengths = [50000, 100000, 200000, 400000, 800000]
    if a.quick:
        lengths = [500, 1000]
    for n in lengths:
        path = os.path.join(work, "grow.ndjson")
        write_input(path, transfer_lines(n, 11))
        d = fresh_store(a.aup, a.module, work, setup_path, "store-grow")
        wall, st = run_aup(a.aup, [a.module, "--data", d, "--stats"], path)
        growth.append({"events": n, "image_bytes": st["image_bytes"], "images_written": st["images_written"],
                       "log_bytes": st["log_bytes"], "image_bytes_per_event": st["image_bytes"] / n,
                       "image_to_log": st["image_bytes"] / max(1, st["log_bytes"])})
        print("append-only: %7d transfers: %9d image bytes written (%5.1f per event, %.2f of the log bytes), "
              "%d images" % (n, st["image_bytes"], st["image_bytes"] / n, growth[-1]["image_to_log"],
                             st["images_written"]))
        shutil.rmtree(d, ignore_errors=True)
    measure_keys()
    shutil.rmtree(work, ignore_errors=True)

    def med(f):
        return statistics.median(f(r) for r in reps)

    summary = {"floor_p50_us": med(lambda r: r["floor"]["p50_us"]), "floor_p99_us": med(lambda r: r["floor"]["p99_us"]),
               "memory_events_per_s": med(lambda r: r["memory_events_per_s"])}
    rows = []
    for name, cap, n in caps:
        row = {k: med(lambda r, k=k: r[name][k]) for k in
               ["events_per_s", "events_per_commit", "commit_p50_us", "commit_p99_us", "store_bytes_per_event",
                "log_bytes_per_event"]}
        for k in ("process_bytes_per_event", "device_bytes_per_event"):
            got = [r[name][k] for r in reps if r[name][k] is not None]
            row[k] = statistics.median(got) if got else None
        row["vs_memory"] = row["events_per_s"] / summary["memory_events_per_s"]
        row["p50_vs_floor"] = row["commit_p50_us"] / summary["floor_p50_us"]
        row["batches"] = name
        row["events"] = n
        rows.append(row)
    print()
    print("median of %d repetitions:" % a.reps)
    for row in rows:
        print("batches %-8s %8.0f events/s (%.3f of --memory)  commit p50 %.1f us (%.2f x bare fdatasync) "
              "p99 %.1f us  %.1f B/event" % (row["batches"], row["events_per_s"], row["vs_memory"],
                                             row["commit_p50_us"], row["p50_vs_floor"], row["commit_p99_us"],
                                             row["store_bytes_per_event"]))
    if a.quick:
        return
    command = "sh bench/store/run.sh"
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "store.json"), "w") as f:
        json.dump({"generated": stamp, "command": command, "volume": volume, "machine": platform.platform(),
                   "cpus": os.cpu_count(), "summary": summary, "rows": rows, "repetitions": reps,
                   "append_only": growth}, f, indent=1)
    with open(os.path.join(a.out, "store.md"), "w") as f:
        f.write("# Store benchmark\n\n`%s` (generated %s) on %s (%s), %d repetitions, medians.\n\n" %
                (command, stamp, volume["device"], volume["fs"], a.reps))
        f.write("Baselines in the same run: `aup run --memory` %.0f events/s; bare 128-byte write + fdatasync "
                "p50 %.1f us, p99 %.1f us.\n\n" % (summary["memory_events_per_s"], summary["floor_p50_us"],
                                                   summary["floor_p99_us"]))
        f.write("| batches | events | events/s | / --memory | events/commit | commit p50 | p50 / bare fdatasync "
                "| commit p99 | store B/event | log B/event | process B/event | device B/event |\n")
        f.write("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
        for row in rows:
            f.write("| %s | %d | %.0f | %.3f | %.1f | %.1f us | %.2f | %.1f us | %.1f | %.1f | %s | %s |\n" %
                    (row["batches"], row["events"], row["events_per_s"], row["vs_memory"], row["events_per_commit"],
                     row["commit_p50_us"], row["p50_vs_floor"], row["commit_p99_us"], row["store_bytes_per_event"],
                     row["log_bytes_per_event"], bytes_cell(row["process_bytes_per_event"]),
                     bytes_cell(row["device_bytes_per_event"])))
        f.write("\nAppend-only table (`transfers` only grows), uncapped batches:\n\n")
        f.write("| transfers | image bytes written | per event | image / log bytes | images written |\n")
        f.write("|---:|---:|---:|---:|---:|\n")
        for g in growth:
            f.write("| %d | %d | %.1f | %.2f | %d |\n" % (g["events"], g["image_bytes"], g["image_bytes_per_event"],
                                                       g["image_to_log"], g["images_written"]))
    print("wrote %s/store.json and store.md" % a.out)


if __name__ == "__main__":
    main()
