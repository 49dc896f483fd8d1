#!/usr/bin/env python3
"""`aup replay` on a store that `aup run --listen` is serving (runtime/replay.cpp,
storage/live.h): a loaded server, `aup replay --verify`, `--dump`,
`--entries` and `--dump --at` in a loop beside it, kill -9s of the server
and restarts in between.

Every replay must exit 0 and find a state that holds every deposit answered
before the replay started and none that was never sent: a consistent cut
of what the server made durable. `--entries` lists consecutive save
numbers; `--dump --at` its last one holds every deposit answered before
the listing began, unless a checkpoint has since moved the image past it
(then it must say the older state is no longer in the store). Before each
kill the load pauses, and then, with the server still up, `--dump --at`
the last entry must succeed and hold exactly the deposits answered. The server is run with tiny log segments
and checkpoint thresholds so that segments roll over, images are rewritten
and covered segments come up for release and reuse while the replays read.
Afterwards, with nobody reading, the server must release them again.

usage: replay_live_test.py AUP ROOT [--seconds S]
"""
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

MODULE = """
record Account { id: num, n: num }
table accounts: Account key id
event open { id: num }
on open { accounts.add(Account { id: open.id, n: 0 }) }
event deposit { id: num }
on deposit { accounts[deposit.id].n = accounts[deposit.id].n + 1 }
"""
ACCOUNTS = 4
failures = []


def fail(msg):
    failures.append(msg)
    if len(failures) <= 20:
        print("FAIL:", msg, flush=True)


class Server:
    def __init__(self, aup, module, data, sock):
        self.sock = sock
        if os.path.exists(sock):
            os.unlink(sock)
        self.p = subprocess.Popen(
            [aup, "run", module, "--data", data, "--listen", "unix:" + sock, "--segment-size", "4096",
             "--image-min", "512", "--log-min", "2048"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # Ready once it accepts (the socket file appears at bind, before listen).
        deadline = time.time() + 30
        while not self.accepts():
            if self.p.poll() is not None or time.time() > deadline:
                sys.exit("server did not start: " + self.p.stderr.read().decode(errors="replace"))
            time.sleep(0.01)

    def accepts(self):
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(self.sock)
            return True
        except OSError:
            return False
        finally:
            s.close()

    def kill(self):
        self.p.send_signal(signal.SIGKILL)
        self.p.wait()
        self.p.stderr.close()


class Load(threading.Thread):
    """Deposits to account k % ACCOUNTS, pipelined 8 deep; counts what was
    sent and what was answered ok, per account."""

    def __init__(self, sock):
        super().__init__(daemon=True)
        self.sock_path = sock
        self.sent = [0] * ACCOUNTS
        self.acked = [0] * ACCOUNTS
        self.lock = threading.Lock()
        self.stop = False

    def run(self):
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect(self.sock_path)
            f = s.makefile("rwb")
            k = 0
            while not self.stop:
                batch = []
                for _ in range(8):
                    a = k % ACCOUNTS + 1
                    k += 1
                    with self.lock:
                        self.sent[a - 1] += 1
                    f.write(json.dumps({"event": "deposit", "args": {"id": a}, "id": a}).encode() + b"\n")
                    batch.append(a)
                f.flush()
                for a in batch:
                    line = f.readline()
                    if not line:
                        return  # the server was killed
                    if json.loads(line)["ok"]:
                        with self.lock:
                            self.acked[a - 1] += 1
        except OSError:
            return

    def snapshot(self):
        with self.lock:
            return list(self.sent), list(self.acked)


class Totals:
    """Deposits sent and answered per account over every server life, each
    counted by its own Load (the store's counts run on across lives)."""

    def __init__(self):
        self.sent, self.acked = [0] * ACCOUNTS, [0] * ACCOUNTS

    def now(self, load):
        """(sent, answered) so far, `load` being the current life's."""
        sent, acked = load.snapshot()
        return [b + x for b, x in zip(self.sent, sent)], [b + x for b, x in zip(self.acked, acked)]

    def end_life(self, load):
        load.stop = True
        load.join(5)
        self.sent, self.acked = self.now(load)


def call(sock, request):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall(json.dumps(request).encode() + b"\n")
    line = s.makefile("rb").readline()
    s.close()
    return json.loads(line)


def replay(aup, data, *args):
    return subprocess.run([aup, "replay", "--data", data, *args], capture_output=True, text=True, timeout=60)


def check_dump(aup, data, load, totals, acked_before):
    """The dump holds every deposit answered before it started and no more
    than were sent by its end (counted before they are written)."""
    r = replay(aup, data, "--dump", "accounts")
    sent_total = totals.now(load)[0]
    if r.returncode != 0:
        fail(f"replay --dump on the served store: exit {r.returncode}: {r.stderr}")
        return
    if "is served by aup" not in r.stderr:
        fail(f"replay says it read a served store: {r.stderr!r}")
    rows = {row["id"]: row["n"] for row in map(json.loads, r.stdout.splitlines())}
    for a in range(1, ACCOUNTS + 1):
        n = rows.get(a)
        if n is None or not (acked_before[a - 1] <= n <= sent_total[a - 1]):
            fail(f"account {a}: dump has {n}, answered before {acked_before[a - 1]}, sent {sent_total[a - 1]}")


def check_entries_at(aup, data, load, totals, quiet=False):
    """--entries on the served store, then --dump --at its last entry.
    True when the --at read succeeded (under load a checkpoint may have
    overtaken it; `quiet`: nothing is being written, so none can)."""
    acked_before = totals.now(load)[1]
    r = replay(aup, data, "--entries")
    if r.returncode != 0:
        fail(f"replay --entries on the served store: exit {r.returncode}: {r.stderr}")
        return False
    try:
        seqs = [json.loads(line)["seq"] for line in r.stdout.splitlines()]
    except (ValueError, KeyError) as e:
        fail(f"replay --entries printed what is not one entry a line ({e}): {r.stdout[:200]!r}")
        return False
    if not seqs or seqs != list(range(seqs[0], seqs[0] + len(seqs))):
        fail(f"replay --entries: the save numbers are not consecutive: {seqs[:5]}...{seqs[-5:]}")
        return False
    r = replay(aup, data, "--dump", "accounts", "--at", str(seqs[-1]))
    sent = totals.now(load)[0]
    if r.returncode == 2 and "the older state is no longer in the store" in r.stderr and not quiet:
        return False
    if r.returncode != 0:
        fail(f"replay --dump --at {seqs[-1]} on the served store: exit {r.returncode}: {r.stderr}")
        return False
    rows = {row["id"]: row["n"] for row in map(json.loads, r.stdout.splitlines())}
    for a in range(1, ACCOUNTS + 1):
        n = rows.get(a)
        if n is None or not (acked_before[a - 1] <= n <= sent[a - 1]):
            fail(f"account {a}: --at {seqs[-1]} has {n}, answered before {acked_before[a - 1]}, sent {sent[a - 1]}")
    return True


def main():
    aup, root = sys.argv[1], sys.argv[2]
    seconds = float(sys.argv[sys.argv.index("--seconds") + 1]) if "--seconds" in sys.argv else 8.0
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="aup-live-replay-") as tmp:
        module = os.path.join(tmp, "live.aup")
        with open(module, "w") as f:
            f.write(MODULE)
        data, sock = os.path.join(tmp, "store"), os.path.join(tmp, "s")
        server = Server(aup, module, data, sock)
        for a in range(1, ACCOUNTS + 1):
            assert call(sock, {"event": "open", "args": {"id": a}})["ok"]
        totals = Totals()
        replays = kills = at_reads = quiet_reads = 0
        end = time.time() + seconds
        while time.time() < end:
            load = Load(sock)
            load.start()
            life_end = time.time() + rng.uniform(0.5, 1.5)
            while time.time() < life_end:
                acked_before = totals.now(load)[1]
                r = replay(aup, data, "--verify")
                replays += 1
                # The cut is a durable entry's end: never a torn tail, never damage.
                if r.returncode != 0 or "verified:" not in r.stdout or "torn" in r.stdout:
                    fail(f"replay --verify on the served store: exit {r.returncode}: {r.stdout}{r.stderr}")
                check_dump(aup, data, load, totals, acked_before)
                at_reads += check_entries_at(aup, data, load, totals)
                replays += 3
            load.stop = True
            load.join(5)
            quiet_reads += check_entries_at(aup, data, load, totals, quiet=True)
            server.kill()
            kills += 1
            totals.end_life(load)
            server = Server(aup, module, data, sock)
        # Nobody reads now: the covered segments go again (4 KiB segments,
        # a few kept for reuse), so the log does not keep growing.
        load = Load(sock)
        load.start()
        time.sleep(1.0)
        load.stop = True
        load.join(5)
        segments = [n for n in os.listdir(data) if n.startswith("log-")]
        if len(segments) > 40:
            fail(f"with no reader, the served store still holds {len(segments)} log segments")
        # Without READERS (a server of an aup from before live reads), replay says so.
        os.unlink(os.path.join(data, "READERS"))
        r = replay(aup, data, "--verify")
        if r.returncode != 2 or "does not let it be read while it serves; stop it first" not in r.stderr:
            fail(f"replay without READERS: exit {r.returncode}: {r.stderr}")
        server.kill()
        # Stopped, the store reads as any other, with everything answered.
        r = replay(aup, data, "--dump", "accounts")
        rows = {row["id"]: row["n"] for row in map(json.loads, r.stdout.splitlines())}
        acked = totals.now(load)[1]
        for a in range(1, ACCOUNTS + 1):
            if not acked[a - 1] <= rows.get(a, -1):
                fail(f"account {a}: {rows.get(a)} after the last kill, {acked[a - 1]} answered")
        print(f"{replays} replays beside the server ({at_reads} --at reads of the last entry under load, "
              f"{quiet_reads} with the load paused), {kills} kills")
        if quiet_reads != kills:
            fail(f"with the load paused, {kills - quiet_reads} of {kills} --dump --at reads of the last entry failed")
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)


if __name__ == "__main__":
    main()
