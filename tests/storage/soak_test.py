#!/usr/bin/env python3
"""kill -9 soak: runs the bank module on a store under a stream of
transfers, kills it with SIGKILL at random moments, restarts it, and checks
each time that every acknowledged transfer is in the store and that the
store equals an in-memory replay of exactly the transfers it holds (a
prefix of the stream: nothing reordered, nothing half-applied).

Transfers are pipelined (the client does not wait for answers), so a kill
lands with batches in flight: in the parse, the commit, the sync, or a
checkpoint on its thread.

usage: soak_test.py AUP BANK_MODULE [--kills N] [--seed S] [--accounts N]
"""
import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aup_driver import Aup, FIXED_TIME, SMALL_STORE, result, run_lines  # noqa: E402


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def transfer_stream(seed, accounts):
    """The i-th transfer of one deterministic stream (never refused: the
    balances are far larger than all the amounts)."""
    rng = random.Random(seed)
    while True:
        a = rng.randrange(accounts)
        b = (a + 1 + rng.randrange(accounts - 1)) % accounts
        yield '{"event":"transfer","args":{"from":%d,"to":%d,"amount":%d}}' % (a, b, 1 + rng.randrange(100))


SNAPSHOT = ['{"query":"transfers_made"}', '{"query":"accounts_all"}', '{"query":"recent","args":{"n":25}}',
            '{"query":"total"}']


def snapshot(out):
    return [json.dumps(result(line)) for line in out[-len(SNAPSHOT):]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("aup")
    ap.add_argument("module")
    ap.add_argument("--kills", type=int, default=6)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--accounts", type=int, default=40)
    ap.add_argument("--max-wait", type=float, default=0.4, help="longest run before a kill, in seconds")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    work = tempfile.mkdtemp(prefix="aup-soak-")
    d = os.path.join(work, "store")
    args = [a.module, "--data", d] + SMALL_STORE + FIXED_TIME
    setup = []
    for i in range(a.accounts):
        setup.append('{"event":"open","args":{"id":%d,"owner":"o%d"}}' % (i, i))
        setup.append('{"event":"deposit","args":{"id":%d,"amount":1000000000}}' % i)
    rc, out, err = run_lines(a.aup, args, setup)
    if rc != 0 or any(l.startswith('{"ok":false') for l in out):
        fail("setting up the accounts: exit %d %s" % (rc, err))
    stream = transfer_stream(a.seed, a.accounts)
    transfers = []  # the stream so far
    held = 0        # transfers the store holds
    try:
        for kill in range(a.kills):
            p = Aup(a.aup, args, stderr_path=os.path.join(work, "stderr"))
            acked = [0]
            sent = [held]
            wrong = []

            def reader():
                while True:
                    got = p.read_lines(1)
                    if not got:
                        return
                    if not got[0].startswith('{"ok":true,"result":{"transfer":'):
                        wrong.append(got[0])
                    acked[0] += 1

            t = threading.Thread(target=reader)
            t.start()
            deadline = time.monotonic() + rng.uniform(0.02, a.max_wait)
            while time.monotonic() < deadline:
                group = []
                for _ in range(rng.randint(1, 40)):
                    while len(transfers) <= sent[0]:
                        transfers.append(next(stream))
                    group.append(transfers[sent[0]])
                    sent[0] += 1
                if not p.send(group):
                    fail("aup stopped reading before it was killed")
            p.kill()
            t.join()
            if wrong:
                fail("a transfer was answered %s" % wrong[0])
            acked_total = held + acked[0]
            rc, out, err = run_lines(a.aup, args, SNAPSHOT)
            if rc != 0:
                fail("restart %d: exit %d %s" % (kill + 1, rc, err.strip()))
            got = snapshot(out)
            now_held = int(json.loads(got[0]))
            if now_held < acked_total:
                fail("restart %d: %d transfers acknowledged, but the store holds only %d" %
                     (kill + 1, acked_total, now_held))
            if now_held > sent[0]:
                fail("restart %d: the store holds %d transfers, more than the %d sent" % (kill + 1, now_held, sent[0]))
            rc, out, err = run_lines(a.aup, [a.module, "--memory"] + FIXED_TIME,
                                     setup + transfers[:now_held] + SNAPSHOT)
            if snapshot(out) != got:
                fail("restart %d: the store differs from a replay of the %d transfers it holds" %
                     (kill + 1, now_held))
            print("kill %d: %d acknowledged, %d sent, %d held; equal to their replay" %
                  (kill + 1, acked_total, sent[0], now_held))
            held = now_held
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()
