#!/usr/bin/env python3
"""`aup backup --data DIR --to DEST` (cli/backup.cpp, storage/backup.h): a
stopped store, refusals, a crash at each named point, a failed write and
each fsync failing in turn, then the soak: a loaded server with `aup
backup` and `aup replay --verify` of the served store in a loop beside it,
the backups killed at random moments and the server killed and restarted
between. Every finished backup must verify, hold every deposit answered
before it started and none that was never sent, and open as a store with
`aup run` (which takes an event on it); every killed one must leave DEST
absent (DEST.partial being recognisably incomplete) or complete; every
replay of the source must verify; nothing answered is lost in the source,
which is only read.

usage: backup_test.py AUP ROOT [--seconds S]
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runtime"))
import replay_live_test as live  # noqa: E402  (its Server, Load, Totals and MODULE)

failures = []


def fail(msg):
    failures.append(msg)
    if len(failures) <= 20:
        print("FAIL:", msg, flush=True)


def run(aup, *args, env=None, **kw):
    return subprocess.run([aup, *args], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, **(env or {})), **kw)


def rows_of(aup, data):
    r = run(aup, "replay", "--data", data, "--dump", "accounts")
    if r.returncode != 0:
        fail(f"replay --dump {data}: exit {r.returncode}: {r.stderr}")
        return {}
    return {row["id"]: row["n"] for row in map(json.loads, r.stdout.splitlines())}


def stopped_store(aup, tmp, module):
    data = os.path.join(tmp, "stopped")
    lines = [json.dumps({"event": "open", "args": {"id": a}}) for a in range(1, 5)]
    lines += [json.dumps({"event": "deposit", "args": {"id": 1 + k % 4}}) for k in range(400)]
    r = run(aup, "run", module, "--data", data, "--segment-size", "4096", "--image-min", "512", "--log-min", "2048",
            input="\n".join(lines) + "\n")
    assert r.returncode == 0, r.stderr
    want = rows_of(aup, data)
    dest = os.path.join(tmp, "copy")
    r = run(aup, "backup", "--data", data, "--to", dest)
    if r.returncode != 0 or not r.stdout.startswith(f"backed up {data} to {dest}: save ") or "verified" not in r.stdout:
        fail(f"backup of a stopped store: exit {r.returncode}: {r.stdout}{r.stderr}")
    if rows_of(aup, dest) != want:
        fail(f"the copy's rows differ from the source's: {rows_of(aup, dest)} != {want}")
    # The copy opens as a store (restoring is opening it) and takes events.
    r = run(aup, "run", module, "--data", dest, input='{"event":"deposit","args":{"id":1}}\n')
    if r.returncode != 0 or '"ok":true' not in r.stdout:
        fail(f"the copy does not open as a store: {r.stdout}{r.stderr}")
    # Refusals: an existing --to, a partial one left by a stopped backup, no store.
    for to, words in ((dest, "it exists; a backup makes a new directory"),):
        r = run(aup, "backup", "--data", data, "--to", to)
        if r.returncode != 2 or words not in r.stderr:
            fail(f"backup --to an existing directory: exit {r.returncode}: {r.stderr}")
    os.mkdir(os.path.join(tmp, "left.partial"))
    r = run(aup, "backup", "--data", data, "--to", os.path.join(tmp, "left"))
    if r.returncode != 2 or "a backup that did not finish; remove it first" not in r.stderr:
        fail(f"backup beside a partial one: exit {r.returncode}: {r.stderr}")
    r = run(aup, "backup", "--data", os.path.join(tmp, "none"), "--to", os.path.join(tmp, "x"))
    if r.returncode != 2 or "no store at" not in r.stderr:
        fail(f"backup of no store: exit {r.returncode}: {r.stderr}")
    return data, want


def crashes(aup, tmp, data, want):
    """A crash at every point (storage/backup.cpp): DEST absent with
    DEST.partial, or complete. before_rename: DEST.partial whole and
    synced; after_rename: renamed, the parent not yet synced;
    after_dir_sync: renamed and synced, not yet verified."""
    points = [f"backup.copied:{n}" for n in range(1, 5)] + \
        ["backup.before_rename:1", "backup.after_rename:1", "backup.after_dir_sync:1"]
    for point in points:
        dest = os.path.join(tmp, "crash-" + point.replace(":", "-"))
        r = run(aup, "backup", "--data", data, "--to", dest, env={"AUP_FAULTS": "crash:" + point})
        if r.returncode != 86 or f"aup: fault plan: crash at {point.split(':')[0]}" not in r.stderr:
            fail(f"crash at {point}: exit {r.returncode} (expected the crash exit 86): {r.stderr}")
        if point.startswith(("backup.after_rename", "backup.after_dir_sync")):
            if not os.path.isdir(dest) or rows_of(aup, dest) != want:
                fail(f"crash at {point}: the renamed copy is not complete")
        elif os.path.exists(dest) or not os.path.isdir(dest + ".partial"):
            fail(f"crash at {point}: DEST {'exists' if os.path.exists(dest) else 'absent'}, "
                 f"DEST.partial {'there' if os.path.isdir(dest + '.partial') else 'missing'}")
    # A write that fails: refused, nothing half-made left, the source as it was.
    dest = os.path.join(tmp, "nospace")
    r = run(aup, "backup", "--data", data, "--to", dest, env={"AUP_FAULTS": "fail:pwrite:2:ENOSPC"})
    if r.returncode != 2 or "cannot write" not in r.stderr or os.path.exists(dest) or os.path.exists(dest + ".partial"):
        fail(f"a failed write: exit {r.returncode}: {r.stderr}; left {os.listdir(tmp)}")
    # Its directories go through the store's Io too: DEST.partial that
    # cannot be made, or a rename that fails, is a clean refusal.
    for plan, words in (("fail:mkdir:1:EROFS", f"cannot create {dest}.partial: Read-only file system"),
                        ("fail:rename:1:EIO", f"cannot rename {dest}.partial to {dest}: Input/output error")):
        r = run(aup, "backup", "--data", data, "--to", dest, env={"AUP_FAULTS": plan})
        if r.returncode != 2 or words not in r.stderr or os.path.exists(dest) or os.path.exists(dest + ".partial"):
            fail(f"{plan}: exit {r.returncode}: {r.stderr}; left {os.listdir(tmp)}")
    if rows_of(aup, data) != want or run(aup, "replay", "--data", data, "--verify").returncode != 0:
        fail("the source changed under the backups")


def failing_syncs(aup, tmp, data, want):
    """Each fsync of a backup failing in turn (AUP_FAULTS fail:fsync:N, N = 1,
    2, ... until one that never fires): every such run is refused (exit 2,
    naming what it could not sync) and leaves nothing behind, no DEST and no
    DEST.partial. One of them is the sync of DEST.partial's directory, after
    its files' and before the rename: without it a crash after the rename
    could leave DEST without the names of the files in it."""
    n, synced_partial = 0, False
    while True:
        n += 1
        dest = os.path.join(tmp, f"fsync-{n}")
        r = run(aup, "backup", "--data", data, "--to", dest, env={"AUP_FAULTS": f"fail:fsync:{n}:EIO"})
        if "aup: fault plan: fsync" not in r.stderr:  # the Nth fsync never came: a backup has N - 1
            if r.returncode != 0 or rows_of(aup, dest) != want:
                fail(f"backup with no fsync failing: exit {r.returncode}: {r.stdout}{r.stderr}")
            break
        left = [p for p in (dest, dest + ".partial") if os.path.exists(p)]
        if r.returncode != 2 or "aup backup: cannot sync " not in r.stderr or left:
            fail(f"fsync {n} failing: exit {r.returncode}: {r.stderr.strip()}; left {left}")
        synced_partial = synced_partial or f"aup backup: cannot sync the directory {dest}.partial:" in r.stderr
        if n == 50:
            fail("a backup of the small store makes more than 50 fsyncs")
            break
    if not synced_partial:
        fail(f"none of the {n - 1} fsyncs of a backup is DEST.partial's directory's")
    print(f"each of a backup's {n - 1} fsyncs failed in turn")


def opens_as_store(aup, module, dest, rows):
    """Restoring is opening the copy: `aup run` on it, then one deposit,
    which lands on top of the rows the copy held."""
    r = run(aup, "replay", "--data", dest, "--verify")
    if r.returncode != 0 or "verified:" not in r.stdout:
        fail(f"backup {dest} does not verify: exit {r.returncode}: {r.stdout}{r.stderr}")
    r = run(aup, "run", module, "--data", dest, "--engine", "vm", input='{"event":"deposit","args":{"id":1}}\n')
    if r.returncode != 0 or '"ok":true' not in r.stdout:
        fail(f"backup {dest} does not open as a store: exit {r.returncode}: {r.stdout}{r.stderr}")
    elif rows_of(aup, dest).get(1) != rows.get(1, 0) + 1:
        fail(f"backup {dest}: a deposit on the opened copy did not add to its {rows.get(1)}")


def soak(aup, tmp, module, seconds, rng):
    data, sock = os.path.join(tmp, "served"), os.path.join(tmp, "s")
    server = live.Server(aup, module, data, sock)
    for a in range(1, live.ACCOUNTS + 1):
        assert live.call(sock, {"event": "open", "args": {"id": a}})["ok"]
    # The live mark read through the Io: a mapping that fails refuses the
    # backup (exit 2, the file and the error named), leaving nothing.
    dest = os.path.join(tmp, "unmapped")
    r = run(aup, "backup", "--data", data, "--to", dest, env={"AUP_FAULTS": "fail:map_shared:1:EIO"})
    if r.returncode != 2 or f"cannot map {data}/LIVE: Input/output error" not in r.stderr or \
            os.path.exists(dest) or os.path.exists(dest + ".partial"):
        fail(f"a live mark that cannot be mapped: exit {r.returncode}: {r.stderr}")
    totals = live.Totals()
    finished = killed = kills = verifies = 0
    end = time.time() + seconds
    while time.time() < end:
        load = live.Load(sock)
        load.start()
        life_end = time.time() + rng.uniform(0.5, 1.5)
        while time.time() < life_end:
            dest = os.path.join(tmp, f"b{finished + killed}")
            acked_before = totals.now(load)[1]
            p = subprocess.Popen([aup, "backup", "--data", data, "--to", dest], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            if rng.random() < 0.3:  # kill it at a random moment
                time.sleep(rng.uniform(0, 0.02))
                p.kill()
            out, err = p.communicate(timeout=60)
            sent = totals.now(load)[0]
            if p.returncode == 0:
                finished += 1
                rows = rows_of(aup, dest)
                for a in range(1, live.ACCOUNTS + 1):
                    if not acked_before[a - 1] <= rows.get(a, -1) <= sent[a - 1]:
                        fail(f"backup {dest}: account {a} has {rows.get(a)}, answered before "
                             f"{acked_before[a - 1]}, sent {sent[a - 1]}")
                opens_as_store(aup, module, dest, rows)
            elif p.returncode < 0:
                killed += 1
                if os.path.exists(dest) and run(aup, "replay", "--data", dest, "--verify").returncode != 0:
                    fail(f"a killed backup left {dest} that does not verify")
            else:
                fail(f"backup beside the server: exit {p.returncode}: {out}{err}")
            shutil.rmtree(dest, ignore_errors=True)
            shutil.rmtree(dest + ".partial", ignore_errors=True)
            # The served store itself, read beside the server and the backups.
            r = run(aup, "replay", "--data", data, "--verify")
            verifies += 1
            if r.returncode != 0 or "verified:" not in r.stdout:
                fail(f"replay --verify of the served store: exit {r.returncode}: {r.stdout}{r.stderr}")
        server.kill()
        kills += 1
        totals.end_life(load)
        server = live.Server(aup, module, data, sock)
    server.kill()
    rows = rows_of(aup, data)
    for a in range(1, live.ACCOUNTS + 1):
        if rows.get(a, -1) < totals.acked[a - 1]:
            fail(f"the source lost answered deposits: account {a} has {rows.get(a)}, {totals.acked[a - 1]} answered")
    print(f"{finished} backups finished (each verified and opened) and {killed} killed beside the server, "
          f"{verifies} verifies of the served store, {kills} server kills")
    if finished == 0:
        fail("no backup finished beside the server")


def main():
    aup = os.path.abspath(sys.argv[1])
    seconds = float(sys.argv[sys.argv.index("--seconds") + 1]) if "--seconds" in sys.argv else 8.0
    with tempfile.TemporaryDirectory(prefix="aup-backup-") as tmp:
        module = os.path.join(tmp, "live.aup")
        with open(module, "w") as f:
            f.write(live.MODULE)
        data, want = stopped_store(aup, tmp, module)
        crashes(aup, tmp, data, want)
        failing_syncs(aup, tmp, data, want)
        soak(aup, tmp, module, seconds, random.Random(11))
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)


if __name__ == "__main__":
    main()
