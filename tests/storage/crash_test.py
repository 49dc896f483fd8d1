#!/usr/bin/env python3
"""Crash at every step: `aup run --data` is stopped (AUP_FAULTS=crash:POINT:N,
the process exits at that point as if killed) before and after each write,
sync, rename and directory sync of a commit, of a checkpoint, of an
image's save number moved up in place, of segment reuse, and of the schema
file written while the store is created. A client sends groups of events, each in one write, and waits for the
answers. After each crash the store is reopened and must hold exactly the
groups before the crashed one, or those and the crashed one whole (never a
part of it), and every answered group; `aup replay --verify` (its --dump of
each table and its --vars), run on the crashed store before that reopen,
must read the same state; the run then continues to the end and must reach
the same final state as one uninterrupted run. A crash at each step of an
open that gives the store its key tables leaves it opening as it was.

Then failures instead of crashes (EIO, a short write, ENOSPC): whatever was
answered `ok` is in the store after a restart, and whatever was answered
`unavailable: not written` is not.

usage: crash_test.py AUP MODULE [--groups N] [--seed S] [--points POINT,...]
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from aup_driver import (Aup, FIXED_TIME, SMALL_STORE, crash_events, groups_of, result, run_lines,  # noqa: E402
                        states_after_groups)

CRASH_EXIT = 86  # storage/io.h kCrashExitCode

# Every named point of storage/ (grep 'point("' storage/*.cpp), and the
# occurrences to stop at: the first, and later ones once the store has
# checkpointed and reused segments.
POINTS = [
    "commit.before_write", "commit.after_write", "commit.after_sync",
    "log.before_write", "log.after_write", "log.after_sync", "log.after_dir_sync", "log.before_reuse",
    "image.body_step", "image.before_fsync", "image.before_rename", "image.after_rename", "image.after_dir_sync",
    "image.seq_before_fsync",
]
# Points that need a stream of their own: an image's save number is moved
# up in place only for a table unchanged since its image, and the mixed
# stream changes both tables between checkpoints. In this one `words` gets
# one event at the start and none after, while `items` is checkpointed.
OWN_STREAM = {"image.seq_before_fsync"}
# The schema file's points, reached once, while the store is created (the
# schema is written before anything else): crashed_creation.
SCHEMA_POINTS = ["schema.before_fsync", "schema.before_rename", "schema.after_rename", "schema.after_dir_sync"]
NTHS = [1, 2, 7, 23]
# DIR/replica-of, written when `aup run --replica-of` opens a store
# (storage/role.h): role_crash_case.
ROLE_POINTS = ["role.before_fsync", "role.before_rename", "role.after_rename", "role.after_dir_sync"]
# The steps of the open that gives a store its key tables (`--keys` on a
# store that kept none, storage/key_tables.h): the images of `$keys` and
# `$key_order` (then the vars'), then the schema file that names them.
KEY_POINTS = [("image.before_rename", 1), ("image.after_rename", 1), ("image.after_rename", 2),
              ("keys.before_schema", 1), ("schema.before_rename", 1)]

# Failures: a plan, and whether the store must still take events after it.
FAILURES = [
    ("fail:fdatasync:9:EIO", False),
    ("fail:fdatasync:40:EIO", False),
    ("fail:pwrite:30:EIO", None),     # a log write (unavailable) or an image write (checkpoint retried)
    ("short:pwrite:12", None),
    ("fail:fsync:12:EIO", None),      # an image's fsync or a directory sync
    ("fail:rename:9:EIO", None),      # an image rename or a segment reuse
    ("fail:fallocate:2:ENOSPC", True),  # no room for a new segment: a clean refusal
]


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def store_args(module, d):
    return [module, "--data", d] + SMALL_STORE + FIXED_TIME


def reopen_state(aup, module, d):
    rc, out, err = run_lines(aup, store_args(module, d), ['{"query":"state"}'])
    if rc != 0 or len(out) != 1:
        fail("reopening %s: exit %d, %s" % (d, rc, err.strip()))
    return json.dumps(result(out[0]))


def number(x):
    """A number as crash.aup's text() writes it (the state holds whole ones)."""
    return str(int(x)) if float(x).is_integer() else repr(x)


def replayed(aup, d, *args):
    r = subprocess.run([aup, "replay", "--data", d, "--verify"] + list(args), capture_output=True, text=True)
    lines = r.stdout.splitlines()
    if r.returncode != 0 or not lines or not lines[-1].startswith("verified: "):
        fail("aup replay --verify %s on %s: exit %d: %s" % (" ".join(args), d, r.returncode, r.stderr.strip()))
    return [json.loads(l) for l in lines[:-1]]


def replay_state(aup, d):
    """The state `aup replay` reads, as crash.aup's `state` query gives it."""
    out = []
    for i in replayed(aup, d, "--dump", "items"):
        out.append("%s:%s:%s%s" % (number(i["id"]), number(i["qty"]), i["tag"], ":hot" if i["hot"] else ""))
    for w in replayed(aup, d, "--dump", "words"):
        out.append("%s=%s" % (w["w"], number(w["n"])))
    v = replayed(aup, d, "--vars")[0]
    return json.dumps(out + [number(v["events"]), v["last"]])


def verify(aup, d):
    r = subprocess.run([aup, "replay", "--data", d, "--verify"], capture_output=True, text=True)
    if r.returncode != 0:
        fail("aup replay --verify on %s: exit %d: %s" % (d, r.returncode, r.stderr.strip()))


def crash_case(aup, module, work, point, nth, groups, states):
    d = os.path.join(work, "store")
    shutil.rmtree(d, ignore_errors=True)
    p = Aup(aup, store_args(module, d), {"AUP_FAULTS": "crash:%s:%d" % (point, nth)},
            stderr_path=os.path.join(work, "stderr"))
    answered = 0   # groups answered in full
    partial = False
    for g in groups:
        got = p.request(g)
        if len(got) < len(g):
            partial = len(got) > 0
            break
        for line in got:
            if line != '{"ok":true}':
                fail("%s:%d: group %d answered %s" % (point, nth, answered, line))
        answered += 1
    rc, rest = p.finish()
    if rc == 0 and answered == len(groups):
        return False  # the point was not reached that often
    if rc != CRASH_EXIT:
        with open(os.path.join(work, "stderr")) as f:
            fail("%s:%d: exit %d (expected the crash exit %d): %s" % (point, nth, rc, CRASH_EXIT, f.read()))
    # Replay reads the crashed store as it is (a torn tail not yet cut, a
    # checkpoint not finished); the reopened run must hold the same state.
    read = replay_state(aup, d)
    state = reopen_state(aup, module, d)
    # A checkpoint's image-T.new is never needed: the reopen removed it.
    left = [n for n in os.listdir(d) if n.endswith(".new")]
    if left:
        fail("%s:%d: the reopened store still holds %s" % (point, nth, ", ".join(left)))
    if read != state:
        fail("%s:%d: aup replay read %s before the reopen, the reopened run holds %s" %
             (point, nth, read[:300], state[:300]))
    # The groups the store holds: a whole number of them.
    held = [g for g in range(answered, min(answered + 2, len(states))) if states[g] == state]
    if not held:
        fail("%s:%d: after the crash the store matches neither %d groups (answered) nor %d: %s" %
             (point, nth, answered, answered + 1, state[:300]))
    if partial and held[0] != answered + 1:
        fail("%s:%d: part of group %d was answered, but the store does not hold it" % (point, nth, answered))
    verify(aup, d)
    # Carry on to the end: the recovered store takes the rest.
    rest_lines = [l for g in groups[held[0]:] for l in g] + ['{"query":"state"}']
    rc, out, err = run_lines(aup, store_args(module, d), rest_lines)
    if rc != 0 or json.dumps(result(out[-1])) != states[-1]:
        fail("%s:%d: after recovering, the run did not end in the uninterrupted run's state (exit %d) %s" %
             (point, nth, rc, err.strip()))
    if reopen_state(aup, module, d) != states[-1]:
        fail("%s:%d: the final state did not survive a restart" % (point, nth))
    return True


def keys_crash_case(aup, module, work, point, nth, groups, states):
    """A crash while `aup run --keys` gives a store its key tables: the
    store reads and reopens as it was (without keys), and a run with
    --keys then gains them and takes the rest of the groups."""
    d = os.path.join(work, "store")
    shutil.rmtree(d, ignore_errors=True)
    half = len(groups) // 2
    rc, out, err = run_lines(aup, store_args(module, d), [l for g in groups[:half] for l in g])
    if rc != 0:
        fail("keys %s:%d: the first half: exit %d %s" % (point, nth, rc, err.strip()))
    env = dict(os.environ, AUP_FAULTS="crash:%s:%d" % (point, nth))
    r = subprocess.run([aup, "run"] + store_args(module, d) + ["--keys", "100"], input=b"", capture_output=True,
                       env=env)
    if r.returncode != CRASH_EXIT:
        fail("keys %s:%d: exit %d (expected the crash exit %d): %s" %
             (point, nth, r.returncode, CRASH_EXIT, r.stderr.decode().strip()))
    verify(aup, d)
    if replay_state(aup, d) != states[half] or reopen_state(aup, module, d) != states[half]:
        fail("keys %s:%d: after the crash the store does not hold the first half" % (point, nth))
    rest = [l for g in groups[half:] for l in g] + ['{"query":"state"}']
    rc, out, err = run_lines(aup, store_args(module, d) + ["--keys", "100"], rest)
    if rc != 0 or json.dumps(result(out[-1])) != states[-1]:
        fail("keys %s:%d: the run with --keys did not end in the uninterrupted run's state (exit %d) %s" %
             (point, nth, rc, err.strip()))
    if "keeps idempotency keys from now on" not in err:
        fail("keys %s:%d: the run with --keys did not say the store keeps keys: %s" % (point, nth, err.strip()))
    verify(aup, d)


def failure_case(aup, module, work, plan, must_continue, groups):
    d = os.path.join(work, "store")
    shutil.rmtree(d, ignore_errors=True)
    p = Aup(aup, store_args(module, d), {"AUP_FAULTS": plan}, stderr_path=os.path.join(work, "stderr"))
    kept, refused = [], 0
    for g in groups:
        got = p.request(g)
        if len(got) != len(g):
            fail("%s: the process stopped answering" % plan)
        for line, req in zip(got, g):
            if line == '{"ok":true}':
                if refused and must_continue is False:
                    fail("%s: an event was taken after the store became unavailable" % plan)
                kept.append(req)
                continue
            doc = json.loads(line)
            err = doc.get("error", {})
            if err.get("code") != "unavailable" or not err.get("message", "").startswith(
                    ("not written: ", "the store takes no events")):
                fail("%s: unexpected answer %s" % (plan, line))
            refused += 1
    rc, rest = p.finish()
    # A run that answered an event `unavailable` exits 1 (docs/operations.md,
    # "Exit status of a batch run").
    if rc != (1 if refused else 0):
        fail("%s: exit %d after %d events answered unavailable" % (plan, rc, refused))
    if must_continue is not None and refused == 0:
        fail("%s: the fault never fired" % plan)
    if must_continue and refused > sum(len(g) for g in groups) // 2:
        fail("%s: the store did not carry on after a clean refusal (%d refused)" % (plan, refused))
    # The state after a restart is exactly the events answered ok.
    rc, out, err = run_lines(aup, [module, "--memory"] + FIXED_TIME, kept + ['{"query":"state"}'])
    expected = json.dumps(result(out[-1]))
    if reopen_state(aup, module, d) != expected:
        fail("%s: after a restart the store does not hold exactly the %d events answered ok" % (plan, len(kept)))
    verify(aup, d)
    return refused


def failed_creation(aup, module, work, plan, groups, states):
    """A failure while the store is being created: `aup run` refuses to
    start, saying why, and the next run finishes the store and works."""
    d = os.path.join(work, "store")
    shutil.rmtree(d, ignore_errors=True)
    p = Aup(aup, store_args(module, d), {"AUP_FAULTS": plan}, stderr_path=os.path.join(work, "stderr"))
    got = p.request(groups[0])
    rc, rest = p.finish()
    with open(os.path.join(work, "stderr")) as f:
        err = f.read()
    if got or rc != 2 or "Input/output error" not in err:
        fail("%s: expected a refusal to start (exit 2, the error named), got exit %d, %r" % (plan, rc, err))
    lines = [l for g in groups for l in g] + ['{"query":"state"}']
    rc, out, err = run_lines(aup, store_args(module, d), lines)
    if rc != 0 or json.dumps(result(out[-1])) != states[-1] or reopen_state(aup, module, d) != states[-1]:
        fail("%s: the store was not usable after a failed creation: exit %d %s" % (plan, rc, err.strip()))
    verify(aup, d)


def crashed_creation(aup, module, work, point, groups, states):
    """A crash while the store's schema file is written: nothing was
    answered; `aup replay` finds no store before the rename (the schema is
    still DIR/schema.new) and an empty one after; the next run creates or
    finishes the store and works."""
    d = os.path.join(work, "store")
    shutil.rmtree(d, ignore_errors=True)
    p = Aup(aup, store_args(module, d), {"AUP_FAULTS": "crash:%s:1" % point},
            stderr_path=os.path.join(work, "stderr"))
    got = p.request(groups[0])
    rc, rest = p.finish()
    if got or rc != CRASH_EXIT:
        with open(os.path.join(work, "stderr")) as f:
            fail("%s: expected a crash before any answer (exit %d), got exit %d, %d answers: %s" %
                 (point, CRASH_EXIT, rc, len(got), f.read()))
    renamed = os.path.exists(os.path.join(d, "schema"))
    if renamed != (point in ("schema.after_rename", "schema.after_dir_sync")):
        fail("%s: the schema file is %s" % (point, "in place" if renamed else "not in place"))
    r = subprocess.run([aup, "replay", "--data", d, "--verify"], capture_output=True, text=True)
    if (r.returncode == 0) != renamed:
        fail("%s: aup replay --verify on the crashed store: exit %d: %s" % (point, r.returncode, r.stderr.strip()))
    lines = [l for g in groups for l in g] + ['{"query":"state"}']
    rc, out, err = run_lines(aup, store_args(module, d), lines)
    if rc != 0 or json.dumps(result(out[-1])) != states[-1] or reopen_state(aup, module, d) != states[-1]:
        fail("%s: the store was not usable after the crash: exit %d %s" % (point, rc, err.strip()))
    verify(aup, d)


def role_crash_case(aup, module, work, point, groups, states):
    """A crash while a store becomes a replica (DIR/replica-of written,
    before anything is followed): once the file is renamed into place the
    store is a replica (`aup run` without --replica-of refuses it, `aup
    promote` makes it a primary again); before, it is still a primary.
    Either way it holds its rows, and the next run works."""
    d = os.path.join(work, "store")
    shutil.rmtree(d, ignore_errors=True)
    rc, out, err = run_lines(aup, store_args(module, d), groups[0])
    sock = os.path.join(work, "r.sock")
    r = subprocess.run([aup, "run", *store_args(module, d), "--listen", "unix:" + sock, "--replica-of",
                        "unix:" + os.path.join(work, "nobody.sock")], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, AUP_FAULTS="crash:%s:1" % point))
    if r.returncode != CRASH_EXIT:
        fail("%s: expected a crash (exit %d), got exit %d: %s" % (point, CRASH_EXIT, r.returncode, r.stderr))
    placed = os.path.exists(os.path.join(d, "replica-of"))
    if placed != (point in ("role.after_rename", "role.after_dir_sync")):
        fail("%s: the replica-of file is %s" % (point, "in place" if placed else "not in place"))
    rc, out, err = run_lines(aup, store_args(module, d), ['{"query":"state"}'])
    if placed and (rc != 2 or "is a replica of" not in err):
        fail("%s: a replica's store run without --replica-of: exit %d %s" % (point, rc, err.strip()))
    if placed:
        p = subprocess.run([aup, "promote", "--data", d], capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            fail("%s: aup promote: exit %d %s" % (point, p.returncode, p.stderr.strip()))
    # The first group was answered before the crash: states[1].
    if reopen_state(aup, module, d) != states[1]:
        fail("%s: the store does not hold its rows after the crash" % point)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("aup")
    ap.add_argument("module")
    ap.add_argument("--groups", type=int, default=260)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--points", help="only these crash points (comma-separated), for a quick look at a few")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    groups = groups_of(rng, crash_events(rng, a.groups * 5), 9)[:a.groups]
    states = states_after_groups(a.aup, a.module, groups)
    no_words = [e for e in crash_events(rng, a.groups * 2) if '"word"' not in e]
    quiet_groups = groups_of(rng, ['{"event":"word","args":{"w":"once"}}'] + no_words, 9)[:a.groups // 3]
    quiet_states = states_after_groups(a.aup, a.module, quiet_groups)
    work = tempfile.mkdtemp(prefix="aup-crash-")
    try:
        only = set(a.points.split(",")) if a.points else None
        for point in POINTS:
            if only is not None and point not in only:
                continue
            g, st = (quiet_groups, quiet_states) if point in OWN_STREAM else (groups, states)
            fired = [n for n in NTHS if crash_case(a.aup, a.module, work, point, n, g, st)]
            if 1 not in fired:
                fail("%s was never reached: the test does not cover it" % point)
            print("crash at %-22s occurrences %s: recovered whole groups" % (point, fired))
        if only is not None:
            print("ok (only %s)" % a.points)
            return
        for point in SCHEMA_POINTS:
            crashed_creation(a.aup, a.module, work, point, groups, states)
            print("crash at %-22s creating the store: nothing answered, the next run made it" % point)
        for point in ROLE_POINTS:
            role_crash_case(a.aup, a.module, work, point, groups, states)
        print("crash at %s: a replica once the file is in place, a primary before" % ", ".join(ROLE_POINTS))
        for point, n in KEY_POINTS:
            keys_crash_case(a.aup, a.module, work, point, n, groups, states)
        print("crash gaining the key tables  at %s: reopened as it was, then gained them" %
              ", ".join("%s:%d" % p for p in KEY_POINTS))
        for n in (1, 2, 3, 4):
            failed_creation(a.aup, a.module, work, "fail:fsync:%d:EIO" % n, groups, states)
        print("fail:fsync:1..4:EIO         creating the store: refused to start, the next run finished it")
        for plan, must_continue in FAILURES:
            refused = failure_case(a.aup, a.module, work, plan, must_continue, groups)
            print("%-26s %4d events refused; the restarted store holds exactly those answered ok" %
                  (plan, refused))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()
