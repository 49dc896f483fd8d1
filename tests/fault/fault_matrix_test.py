#!/usr/bin/env python3
"""The fault matrix: `aup run --data` on the bank module with one system call
of the store failing (AUP_FAULTS, storage/io.h) at a time, for every call
the store makes that can fail x errno x occurrence (the first, the second,
and later ones: during checkpoints, segment creation and segment reuse,
which small --segment-size/--image-min/--log-min bring into a short run),
plus short writes, a short write whose retry fails, a failed sync whose
withdrawal fails too, faults while a store is created, while an existing
store opens, and while a torn tail is cut. For each case:

  - the run ends in success or a clear refusal: every refusal names the
    operation, the file and the error; a store that cannot open exits 2
    with `aup run: ...`; a failed checkpoint says so on stderr; nothing
    hangs or crashes;
  - every answer matches a model of the bank (balances, transfers,
    transfers_made): an event answered `ok` is applied, a batch answered
    `unavailable` is not (`not written: ...`), or may be (`perhaps
    written: ...`: the state after the restart must be the model with or
    without that batch);
  - after an uncertain write or sync every later event is refused, not
    applied (several are sent), while queries are still answered;
  - a restart without faults opens the store, holds exactly the model, and
    takes further events; `aup replay --verify`, `--dump` and `--vars`
    read the same state before and after that restart.

Then `aup replay` itself under faults: on an existing store, each call it
makes (the lock, the directory listing, every open and every read) fails
in turn, for the summary with --verify, for --dump and for --entries,
until an occurrence is not reached (and replay then prints what it prints
without faults). Each must be a clean refusal: exit 2 with `aup replay:
cannot ...` naming the file and the error, no crash, no sanitizer report,
and not a byte of the store changed.

The stores a case starts from (the second column of its line):
  fresh   created by the faulted run, checkpoints and segment reuse on;
  grow    the same without checkpoints: the calls come in a fixed order, so
          a count aims at one call (a new segment's create, header, sync);
  reopen  an existing store whose open moves an image's save number up;
  grown   an existing long log without images: the first checkpoint
          deletes most segments and the next segment reuses one;
  torn    an existing store whose log ends in a torn entry (cut at open);
  listen  fresh, served with `--listen unix:`: the server keeps answering
          queries and refusals, and exits 0 on SIGTERM.

One line per case, then a count. Cases run two at a time (--jobs). The CI
run takes each occurrence with the next errno in turn (so every errno of
every call is covered); --full takes every errno at every occurrence, more
occurrences and longer runs. --part K/N runs every N-th case from the K-th:
the sanitizer build's suite runs a third (tests/meson.build).

usage: fault_matrix_test.py AUP BANK_MODULE [--full] [--groups N] [--seed S]
                            [--jobs J] [--only TEXT] [--part K/N] [--keep]
                            [--markdown FILE]
"""
import argparse
import concurrent.futures
import copy
import errno
import hashlib
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "storage"))
from aup_driver import Aup, FIXED_TIME, Hang  # noqa: E402

NOW = 1700000000000  # FIXED_TIME: `now` of every event
# Segments of 4 KiB and low checkpoint thresholds: a run of a few hundred
# batches creates, fills, releases and reuses segments and writes images
# of both tables many times.
SMALL_STORE = ["--segment-size", "4096", "--image-min", "512", "--log-min", "2048"]
# No checkpoints at all: the store's calls come in a fixed order (only the
# owner thread makes them), so a rule can aim at one particular call. With
# large segments, one segment for the whole run; with small ones, a new
# segment every 40 or so batches.
QUIET_STORE = ["--segment-size", "1048576", "--image-min", str(1 << 40), "--log-min", str(1 << 40)]
NO_CHECKPOINTS = ["--segment-size", "4096", "--image-min", str(1 << 40), "--log-min", str(1 << 40)]
READ_TIMEOUT = float(os.environ.get("AUP_FAULT_TIMEOUT", "60"))  # an answer later than this is a hang

# Every call of storage/io.h a plan can fail, with the errors that call can
# really return (rmdir is in the interface but `aup run` never calls it,
# only `aup backup` does: its cases must show the fault is never reached).
CALLS = {
    "open": ["EIO", "ENOSPC", "EDQUOT", "EROFS"],     # creating a file: no inode, quota, read-only
    "pread": ["EIO"],
    "pwrite": ["EIO", "ENOSPC", "EDQUOT"],
    "fdatasync": ["EIO", "ENOSPC", "EDQUOT", "EROFS"],
    "fsync": ["EIO", "ENOSPC", "EDQUOT", "EROFS"],     # files and directories
    "fallocate": ["ENOSPC", "EDQUOT", "EIO"],
    "sync_file_range": ["EIO", "ENOSPC"],
    "rename": ["EIO", "ENOSPC", "EDQUOT", "EROFS"],
    "unlink": ["EIO", "EROFS"],
    "ftruncate": ["EIO", "ENOSPC"],
    "list_dir": ["EIO"],                               # listing the store's directory
    "lock": ["EIO", "EROFS"],                          # taking the store's lock (EROFS: creating LOCK)
    "flock": ["EIO"],                                  # the gate on READERS: a failure only defers a release
    "mkdir": ["EROFS", "ENOSPC", "EDQUOT", "EIO"],     # the store's directory, made (or found) at open
    "rmdir": ["EIO"],
    "map_shared": ["EIO"],                             # mapping the live mark (storage/live.h) at open
}
# Calls made only while a store opens: the lock once, the listing once for
# the log (and once more before a new store is created, to see that the
# directory holds no store files), the store's directory made once, and the
# live mark sized and mapped once (after the open the server only stores
# to the mapped page: no call a fault could fail). Later occurrences are
# never reached.
AT_OPEN = {"lock": [1], "list_dir": [1, 2], "mkdir": [1], "ftruncate": [1], "map_shared": [1]}
ERRNO = {name: getattr(errno, name) for name in ("EIO", "ENOSPC", "EDQUOT", "EROFS")}
# Occurrences of a call: the first ones (creating or opening the store, the
# first commits) and later ones (checkpoints, new and reused segments).
NTHS_CI = [1, 2, 3, 5, 9, 17, 33, 65, 129]
NTHS_FULL = [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 17, 20, 24, 29, 35, 42, 50, 60, 72, 86, 103, 124, 149,
             179, 215, 258, 310, 372, 446]
NTHS_OPEN = [1, 2, 3, 4, 5, 6]  # at the open of an existing store

# What a refusal must say: the operation, then the file (the store's
# directory is in the path) and the error's text.
OPERATION = re.compile(r"cannot (write|sync|rename|create|open|read|flush|allocate|update|list|lock|map)|no space for")
# The calls `aup replay` makes, and the error each fails with.
REPLAY_CALLS = [("lock", "EIO"), ("list_dir", "EIO"), ("open", "EIO"), ("pread", "EIO")]
REPLAY_MODES = [["--verify"], ["--dump", "accounts", "--verify"], ["--entries"]]
REPLAY_REFUSAL = re.compile(r"aup replay: cannot (lock|list|open|read) ")

class CaseFailure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise CaseFailure(msg)


def clean_env(faulted=False):
    """The environment of an aup process: without AUP_FAULTS, and, unless
    the process is the one a fault is injected into, without the leak
    check at exit. Under the sanitizers that check costs about 0.09 s of
    the 0.17 s a short process takes, and the processes around a case (the
    restart without faults, the replays) take the paths the rest of the
    suite already runs with leak checks on; the faulted process, whose
    error paths are this suite's own, keeps it."""
    env = {k: v for k, v in os.environ.items() if k != "AUP_FAULTS"}
    if not faulted and "ASAN_OPTIONS" in env:
        env["ASAN_OPTIONS"] = ":".join([o for o in env["ASAN_OPTIONS"].split(":")
                                        if not o.startswith("detect_leaks=")] + ["detect_leaks=0"])
    return env


# ---- the bank, as a model ---------------------------------------------------------------


class Bank:
    """examples/bank/bank.aup in Python: what each event answers and does."""

    def __init__(self):
        self.accounts = {}
        self.transfers = {}
        self.next_transfer = 1

    def copy(self):
        return copy.deepcopy(self)

    def event(self, req):
        """Applies one event if it succeeds; (True, result) or (False, code)."""
        name, a = req["event"], req["args"]

        def bad_amount(x):
            return x <= 0 or x != int(x)

        if name == "open":
            if a["id"] in self.accounts:
                return False, "duplicate"
            self.accounts[a["id"]] = {"id": a["id"], "owner": a["owner"], "balance": 0, "opened": NOW,
                                      "closed": False}
            return True, None
        if name == "deposit":
            if bad_amount(a["amount"]):
                return False, "failed"
            acc = self.accounts.get(a["id"])
            if acc is None:
                return False, "not_found"
            if acc["closed"]:
                return False, "failed"
            acc["balance"] += a["amount"]
            return True, {"balance": acc["balance"]}
        if name == "transfer":
            if bad_amount(a["amount"]) or a["from"] == a["to"]:
                return False, "failed"
            src, dst = self.accounts.get(a["from"]), self.accounts.get(a["to"])
            if src is None or dst is None:
                return False, "not_found"
            if src["closed"] or dst["closed"] or src["balance"] < a["amount"]:
                return False, "failed"
            src["balance"] -= a["amount"]
            dst["balance"] += a["amount"]
            tid = self.next_transfer
            self.next_transfer += 1
            self.transfers[tid] = {"id": tid, "from": a["from"], "to": a["to"], "amount": a["amount"], "at": NOW}
            return True, {"transfer": tid, "balance": src["balance"]}
        if name == "close":
            acc = self.accounts.get(a["id"])
            if acc is None:
                return False, "not_found"
            if acc["closed"] or acc["balance"] != 0:
                return False, "failed"
            acc["closed"] = True
            return True, None
        raise AssertionError(name)

    def query(self, req):
        name = req["query"]
        if name == "transfers_made":
            return self.next_transfer - 1
        if name == "total":
            return {"accounts": len(self.accounts), "total": sum(a["balance"] for a in self.accounts.values())}
        raise AssertionError(name)

    def state(self):
        return canonical([self.accounts[k] for k in sorted(self.accounts)],
                         [self.transfers[k] for k in sorted(self.transfers)], self.next_transfer - 1)


def whole(v):
    """Numbers as the model has them: aup writes the shortest form
    (`1.7e+12`), which Python reads as a float."""
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, list):
        return [whole(x) for x in v]
    if isinstance(v, dict):
        return {k: whole(x) for k, x in v.items()}
    return v


def canonical(accounts, transfers, made):
    return json.dumps(whole({"accounts": accounts, "transfers": transfers, "transfers_made": made}), sort_keys=True)


STATE_QUERIES = ['{"query":"accounts_all"}', '{"query":"recent","args":{"n":1000000000}}',
                 '{"query":"transfers_made"}']
QUERY_GROUP = ['{"query":"transfers_made"}', '{"query":"total"}']


def event_line(name, **args):
    return json.dumps({"event": name, "args": args}, separators=(",", ":"))


def bank_groups(rng, n, prelude=True, first_new=100):
    """n groups of request lines: accounts opened, then mostly transfers,
    with deposit-only stretches (so one table stays unchanged while the
    other is checkpointed), some events that fail (insufficient funds,
    closed or missing accounts, bad amounts) and a query group now and
    then. Each group is sent in one write and is one batch."""
    groups = []
    if prelude:
        groups.append([event_line("open", id=i, owner="o%d" % i) for i in range(1, 11)])
        groups.append([event_line("deposit", id=i, amount=1000) for i in range(1, 11)])
    new_id = first_new
    while len(groups) < n:
        g = len(groups)
        if g % 13 == 0:
            groups.append(list(QUERY_GROUP))
            continue
        deposits_only = (g // 40) % 3 == 2  # a stretch of deposits: `transfers` untouched
        lines = []
        for _ in range(rng.randint(1, 6)):
            k = rng.randrange(100)
            if deposits_only or k < 15:
                lines.append(event_line("deposit", id=rng.randint(1, 10), amount=rng.randint(1, 50)))
            elif k < 88:
                lines.append(event_line("transfer", **{"from": rng.randint(1, 11), "to": rng.randint(1, 10),
                                                       "amount": rng.randint(1, 400)}))
            elif k < 91:
                lines.append(event_line("transfer", **{"from": 3, "to": 3, "amount": 5}))
            elif k < 93:
                lines.append(event_line("deposit", id=rng.randint(1, 10), amount=2.5))
            elif k < 97:
                # A new account, closed again at once (balance 0): later
                # transfers to it fail.
                lines.append(event_line("open", id=new_id, owner="n%d" % new_id))
                lines.append(event_line("close", id=new_id))
                new_id += 1
            else:
                lines.append(event_line("close", id=rng.randint(1, 10)))  # a balance: refused
        groups.append(lines)
    return groups


# ---- processes ----------------------------------------------------------------------------


class Proc(Aup):
    """aup_driver.Aup with a deadline on every answer (a hang is a finding)."""

    def read_lines(self, n, timeout=READ_TIMEOUT):
        return Aup.read_lines(self, n, timeout)

    def finish(self, timeout=READ_TIMEOUT):
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        rest = self.read_lines(1 << 30, timeout)
        try:
            rc = self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise Hang("did not exit after its input ended")
        if self.err is not subprocess.DEVNULL:
            self.err.close()
        return rc, rest


def sanitizer_clean(stderr, what):
    """Under a sanitizer build a report may not change the exit status."""
    check("AddressSanitizer" not in stderr and "runtime error:" not in stderr and "LeakSanitizer" not in stderr,
          "%s: a sanitizer report: %s" % (what, stderr[-2000:]))


def run_lines(aup, args, lines):
    data = ("\n".join(lines) + "\n").encode() if lines else b""
    try:
        r = subprocess.run([aup, "run"] + args, input=data, capture_output=True, timeout=READ_TIMEOUT * 2,
                           env=clean_env())
    except subprocess.TimeoutExpired:
        raise Hang("aup run %s did not finish" % " ".join(args))
    sanitizer_clean(r.stderr.decode(), "aup run")
    return r.returncode, r.stdout.decode().splitlines(), r.stderr.decode()


def replay(aup, d, *args, faults=None):
    env = clean_env(faulted=faults is not None)
    if faults:
        env["AUP_FAULTS"] = faults
    try:
        r = subprocess.run([aup, "replay", "--data", d] + list(args), capture_output=True, text=True,
                           timeout=READ_TIMEOUT * 2, env=env)
    except subprocess.TimeoutExpired:
        raise Hang("aup replay %s did not finish" % " ".join(args))
    sanitizer_clean(r.stderr, "aup replay")
    return r.returncode, r.stdout, r.stderr


def replay_verified(aup, d, *args):
    """`aup replay ARGS --verify`: the lines before `verified: ...`."""
    rc, out, err = replay(aup, d, *args, "--verify")
    lines = out.splitlines()
    check(rc == 0 and lines and lines[-1].startswith("verified: "),
          "aup replay %s --verify: exit %d: %s%s" % (" ".join(args), rc, out[-500:], err))
    return lines[:-1]


def replay_state(aup, d):
    """The state `aup replay` reads (every read also verifying the store)."""
    dumps = {t: [json.loads(l) for l in replay_verified(aup, d, "--dump", t)] for t in ("accounts", "transfers")}
    made = replay_made(aup, d)
    return canonical(dumps["accounts"], dumps["transfers"], made)


def replay_made(aup, d):
    return json.loads(replay_verified(aup, d, "--vars")[0])["next_transfer"] - 1


def answer_state(lines):
    """The state from the answers to STATE_QUERIES."""
    docs = [json.loads(l) for l in lines]
    check(all(d.get("ok") is True for d in docs), "a state query failed: %s" % lines)
    return canonical(docs[0]["result"], docs[1]["result"], docs[2]["result"])


def difference(a, b):
    """Where two states first differ, for a failure message."""
    a, b = json.loads(a), json.loads(b)
    for key in ("transfers_made", "accounts", "transfers"):
        if a[key] == b[key]:
            continue
        if key == "transfers_made":
            return "transfers_made %s vs %s" % (a[key], b[key])
        for x, y in zip(a[key], b[key]):
            if x != y:
                return "%s: %s vs %s" % (key, json.dumps(x), json.dumps(y))
        return "%s: %d rows vs %d" % (key, len(a[key]), len(b[key]))
    return "no difference"


def describe(state):
    s = json.loads(state)
    return "%d accounts, %d transfers, transfers_made %d" % (len(s["accounts"]), len(s["transfers"]),
                                                            s["transfers_made"])


# ---- one run under faults -------------------------------------------------------------------


class Run:
    """Follows one faulted run's answers against the model."""

    def __init__(self, name, store_dir, model):
        self.name = name
        self.dir = store_dir
        self.model = model          # the state without any `perhaps written` batch
        self.perhaps = None         # the model with it
        self.refusing = False       # the store took no more events (an uncertain write or sync)
        self.clean_refusals = 0     # batches refused with nothing changed; the store carried on
        self.refused_after = 0      # events refused once refusing
        self.first_refusal = None   # the message of the batch whose commit failed
        self.accepted_after_clean = 0
        self.groups = 0             # event and query groups answered
        self.refused_at = None      # the group whose commit failed

    def clear_message(self, msg, what):
        check(OPERATION.search(msg) is not None, "%s does not say which operation failed: %r" % (what, msg))
        check(self.dir in msg, "%s does not name the file: %r" % (what, msg))
        check(any(os.strerror(e) in msg for e in ERRNO.values()), "%s does not give the error: %r" % (what, msg))

    def group(self, lines, answers):
        check(len(answers) == len(lines), "%d answers to %d requests" % (len(answers), len(lines)))
        self.groups += 1
        reqs = [json.loads(l) for l in lines]
        docs = [json.loads(a) for a in answers]
        if "query" in reqs[0]:
            for req, doc, ans in zip(reqs, docs, answers):
                check(doc.get("ok") is True, "query %s answered %s" % (req["query"], ans))
                want = self.model.query(req)
                check(doc["result"] == want, "query %s answered %r, the model says %r" %
                      (req["query"], doc["result"], want))
            return
        # The batch as the process applied it in memory, before its commit.
        scratch = self.model.copy()
        predicted = [scratch.event(r) for r in reqs]
        unavailable = [d for d in docs if not d["ok"] and d["error"]["code"] == "unavailable"]
        if self.refusing:
            for d, a in zip(docs, answers):
                check(not d["ok"], "an event was applied after the store became unavailable: %s" % a)
                check(d["error"]["code"] == "unavailable", "after the store became unavailable: %s" % a)
                check(d["error"]["message"].startswith("not written: "),
                      "a refusal after the store became unavailable does not say `not written:`: %s" % a)
                self.refused_after += 1
            return
        if not unavailable:
            for (ok, result), d, a, r in zip(predicted, docs, answers, lines):
                if ok:
                    check(d["ok"] is True and d.get("result") == result,
                          "%s answered %s; the model says ok %s" % (r, a, json.dumps(result)))
                else:
                    check(not d["ok"] and d["error"]["code"] == result,
                          "%s answered %s; the model says %s" % (r, a, result))
            self.model = scratch
            if self.clean_refusals and any(ok for ok, _ in predicted):
                self.accepted_after_clean += 1  # a batch committed after the refusal
            return
        # The batch's commit failed: its applied events say so, the others
        # keep their own failure; nothing of it is in memory any more.
        message = unavailable[0]["error"]["message"]
        for (ok, result), d, a, r in zip(predicted, docs, answers, lines):
            if ok:
                check(not d["ok"] and d["error"]["code"] == "unavailable" and d["error"]["message"] == message,
                      "a batch whose commit failed answered %s with %s" % (r, a))
            else:
                check(not d["ok"] and d["error"]["code"] == result, "%s answered %s; the model says %s" % (r, a, result))
        self.clear_message(message, "the refusal")
        if message.startswith("perhaps written: "):
            self.refusing = True
            self.perhaps = scratch
        elif message.startswith("not written: the store takes no events"):
            self.refusing = True
        elif message.startswith("not written: "):
            self.clean_refusals += 1
        else:
            raise CaseFailure("a refusal says neither `not written:` nor `perhaps written:`: %r" % message)
        if self.first_refusal is None:
            self.first_refusal = message
            self.refused_at = self.groups


def fired_rules(stderr):
    return [l for l in stderr.splitlines() if l.startswith("aup: fault plan: ")]


def checkpoint_failures(stderr):
    return [l for l in stderr.splitlines() if l.startswith("aup: checkpoint failed")]


class Case:
    def __init__(self, plan, scenario, args=None, expect=None, group_count=None, store=None):
        self.plan = plan
        self.scenario = scenario          # fresh | reopen | torn | listen | replay
        self.store = store                # replay: the prepared store it reads (reopen, torn)
        self.args = args or SMALL_STORE
        self.expect = expect              # a path the case must take ("perhaps-present", ...)
        self.group_count = group_count
        self.name = "%-40s %-6s" % (plan, scenario)  # scenario: fresh grow reopen grown torn listen replay
        if scenario == "replay":
            self.name += " %s %s" % (store, " ".join(self.args))
        if "--io-threads" in self.args:
            self.name += " io-threads %s" % self.args[self.args.index("--io-threads") + 1]


class Matrix:
    def __init__(self, a, work):
        self.aup = a.aup
        self.module = a.module
        self.work = work
        self.seed = a.seed
        self.groups = a.groups
        self.keep = a.keep
        self.full = a.full
        self.prepared = {}

    def store_args(self, case, d, served=True):
        """The run's arguments; without `served`, for a restart on stdin
        (--io-threads is refused without --listen)."""
        args = list(case.args)
        if not served and "--io-threads" in args:
            del args[args.index("--io-threads"):args.index("--io-threads") + 2]
        return [self.module, "--data", d] + args + FIXED_TIME

    # An existing store for the reopen and torn scenarios: built once, clean,
    # with segments released and reused, then a few deposits without
    # checkpoints, so `transfers` is unchanged since its image and the open
    # moves its image's save number up (the first pwrite, fsync and pread
    # after the reads of the open).
    def prepare(self, scenario):
        if scenario in self.prepared:
            return self.prepared[scenario]
        d = os.path.join(self.work, "prepared-" + scenario)
        rng = random.Random(self.seed * 7919 + 1)
        model = Bank()
        deposits = [[event_line("deposit", id=rng.randint(1, 10), amount=rng.randint(1, 9)) for _ in range(4)]
                    for _ in range(40)]  # `transfers` unchanged: its image comes to cover all of it
        phases = ((SMALL_STORE, bank_groups(rng, 120) + deposits),
                  (NO_CHECKPOINTS, [[event_line("deposit", id=i, amount=7)] for i in (1, 2, 3)]))
        if scenario == "grown":
            # A long log and no image since the store was created: the first
            # checkpoint releases a dozen segments at once (most are deleted,
            # two kept), and the next segment reuses one.
            phases = ((NO_CHECKPOINTS, bank_groups(rng, 300)),)
        for args, groups in phases:
            p = Proc(self.aup, [self.module, "--data", d] + args + FIXED_TIME)
            run = Run("prepare", d, model)
            for g in groups:
                run.group(g, p.request(g))
            rc, _ = p.finish()
            check(rc == 0 and not run.first_refusal, "preparing a store: exit %d" % rc)
            model = run.model
        if scenario == "torn":
            torn_tail(self.aup, d)
        self.prepared[scenario] = (d, run.model)
        return self.prepared[scenario]

    def run_case(self, case):
        started = time.monotonic()
        cdir = tempfile.mkdtemp(prefix="c", dir=self.work)
        try:
            run = {"listen": self.listen_case, "replay": self.replay_case}.get(case.scenario, self.stdio_case)
            summary = run(case, cdir)
            return case, True, summary, time.monotonic() - started
        except (CaseFailure, Hang) as e:
            kind = "HANG: " if isinstance(e, Hang) else ""
            err_path = os.path.join(cdir, "stderr")
            tail = open(err_path, errors="replace").read().strip()[-600:] if os.path.exists(err_path) else ""
            return case, False, kind + str(e) + (" [stderr: %s]" % tail if tail else ""), time.monotonic() - started
        finally:
            if not self.keep:
                shutil.rmtree(cdir, ignore_errors=True)

    def start_store(self, case, cdir):
        d = os.path.join(cdir, "store")
        if case.scenario in ("fresh", "grow", "listen"):
            return d, Bank()
        src, model = self.prepare(case.scenario)
        shutil.copytree(src, d)
        return d, model.copy()

    def stdio_case(self, case, cdir):
        d, model = self.start_store(case, cdir)
        rng = random.Random(self.seed)
        fresh = case.scenario in ("fresh", "grow")
        groups = bank_groups(rng, case.group_count or (self.groups if fresh else 60), fresh, 100 if fresh else 500)
        err_path = os.path.join(cdir, "stderr")
        p = Proc(self.aup, self.store_args(case, d), {"AUP_FAULTS": case.plan}, stderr_path=err_path)
        run = Run(case.name, d, model)
        sent_after = 0
        answered_any = False
        try:
            for g in groups:
                got = p.request(g)
                if not got and not answered_any:
                    break  # the store did not open: below
                answered_any = True
                run.group(g, got)
                if run.refusing:
                    sent_after += 1
                    if sent_after > 5:  # several batches refused: enough
                        break
            if run.clean_refusals and not run.accepted_after_clean and not run.refusing:
                # Refused in the last batch: one more shows the store carries on.
                more = [event_line("open", id=99999, owner="late"), event_line("deposit", id=99999, amount=1)]
                run.group(more, p.request(more))
            rc, rest = p.finish()
        finally:
            if p.p.poll() is None:
                p.kill()
        with open(err_path) as f:
            stderr = f.read()
        fired = fired_rules(stderr)
        sanitizer_clean(stderr, "the faulted run")
        if not answered_any:
            # Refused to open: exit 2 (the disk refuses), the reason on stderr.
            opening = [l for l in stderr.splitlines() if l.startswith("aup run: ")]
            check(rc == 2, "the store did not open and aup exited %d (expected 2): %s" % (rc, stderr.strip()))
            check(opening, "the store did not open and stderr does not say why: %r" % stderr)
            check(fired, "the store did not open, yet no fault fired: %s" % stderr.strip())
            run.clear_message(opening[0], "the refusal to open")
            outcome = "open refused, exit 2: " + opening[0][len("aup run: "):]
        else:
            # An event answered `unavailable` makes the run exit 1
            # (docs/operations.md, "Exit status of a batch run").
            want = 0 if run.first_refusal is None else 1
            check(rc == want, "exit %d at the end of input (expected %d): %s" % (rc, want, stderr.strip()[-500:]))
            check(not rest, "answers after the end: %s" % rest[:3])
            for line in checkpoint_failures(stderr):
                run.clear_message(line, "the checkpoint failure")
            if run.refusing:
                check(run.refused_after >= 5, "only %d events were sent after the store became unavailable" %
                      run.refused_after)
                outcome = "%s; %d later events refused" % (shorten(run.first_refusal, d), run.refused_after)
            elif run.clean_refusals:
                check(run.accepted_after_clean > 0,
                      "the store did not carry on after a clean refusal (batch %d of %d)" % (run.refused_at, run.groups))
                outcome = "%d batch refused cleanly (%s), the store carried on" % (
                    run.clean_refusals, shorten(run.first_refusal, d))
            elif checkpoint_failures(stderr):
                outcome = "events carried on; " + shorten(checkpoint_failures(stderr)[0], d)
            elif fired:
                outcome = "fired, absorbed (%s)" % ("short write completed" if case.plan.startswith("short")
                                                    else "no effect on events")
            else:
                outcome = "not reached"
        if case.expect == "fired":
            check(fired, "the fault never fired")
        if case.expect == "not reached":
            check(not fired, "fired, but nothing in storage/ should make this call: %s" % fired)
        if case.expect in ("refusing", "perhaps", "perhaps-present", "perhaps-absent"):
            check(run.refusing, "expected the store to become unavailable: %s" % outcome)
        if case.expect and case.expect.startswith("perhaps"):
            check(run.perhaps is not None, "expected a `perhaps written` answer: %s" % outcome)
        restart = self.after_restart(case, d, run, answered_any or not fresh, cdir)
        return "%s | %s" % (outcome, restart)

    def after_restart(self, case, d, run, replay_first, cdir):
        """Replay, restart without faults, continue; everything must agree."""
        before = replay_state(self.aup, d) if replay_first else None
        rng = random.Random(self.seed + 99)
        more = [l for g in bank_groups(rng, 10, False, 900) for l in g if not l.startswith('{"query"')]
        rc, out, err = run_lines(self.aup, self.store_args(case, d, served=False),
                                 STATE_QUERIES + more + STATE_QUERIES)
        check(rc == 0, "the restart without faults: exit %d: %s" % (rc, err.strip()))
        check(len(out) == 2 * len(STATE_QUERIES) + len(more), "the restart answered %d lines" % len(out))
        state = answer_state(out[:3])
        options = [("without", run.model)] + ([("with", run.perhaps)] if run.perhaps is not None else [])
        held = [(label, m) for label, m in options if m.state() == state]
        check(held, "after the restart the store holds %s; the model %s (%s)" % (
            describe(state), " or ".join("%s the uncertain batch: %s" % (l, describe(m.state())) for l, m in options)
            if run.perhaps is not None else "says " + describe(run.model.state()),
            difference(state, run.model.state())))
        label, model = held[0]
        if case.expect == "perhaps-present":
            check(label == "with", "the `perhaps written` batch was expected to survive (its withdrawal failed)")
        if case.expect == "perhaps-absent":
            check(label == "without", "the `perhaps written` batch was expected to be gone (its header was zeroed)")
        if before is not None:
            check(before == state, "aup replay read %s before the restart, the restart %s" % (describe(before),
                                                                                              describe(state)))
        cont = Run(case.name + " (continued)", d, model.copy())
        for line, ans in zip(more, out[3:3 + len(more)]):
            cont.group([line], [ans])
        check(not cont.first_refusal, "the restarted store refused: %s" % cont.first_refusal)
        after = answer_state(out[-3:])
        check(after == cont.model.state(), "the restarted store's state after more events differs: " +
              difference(after, cont.model.state()))
        # The events after the restart are on disk too (the whole state
        # again with --full; a process start costs much under a sanitizer).
        if self.full:
            check(replay_state(self.aup, d) == cont.model.state(), "aup replay disagrees after the restart")
        else:
            check(replay_made(self.aup, d) == cont.model.next_transfer - 1, "aup replay disagrees after the restart")
        what = "restart: " + describe(state)
        if run.perhaps is not None:
            what += " (%s the uncertain batch)" % label
        return what + "; replay agrees"

    # ---- aup replay under faults -------------------------------------------------------------

    def replay_case(self, case, cdir):
        """`aup replay ARGS` on a prepared store with the Nth call of one kind
        failing, for N = 1, 2, ... until the call is not reached that often."""
        d, _ = self.prepare(case.store)
        call, e = case.plan.split(":")[1], case.plan.split(":")[3]
        what = "aup replay " + " ".join(case.args)
        rc, clean, err = replay(self.aup, d, *case.args)
        check(rc == 0, "%s without faults: exit %d: %s" % (what, rc, err))
        before = store_bytes(d)
        first = None
        for nth in range(1, 1000):
            plan = "fail:%s:%d:%s" % (call, nth, e)
            rc, out, err = replay(self.aup, d, *case.args, faults=plan)
            if not fired_rules(err):
                check(rc == 0 and out == clean, "%s, %s never reached, printed otherwise (exit %d): %s" %
                      (what, plan, rc, err.strip()[-300:]))
                break
            said = [l for l in err.splitlines() if l.startswith("aup replay: ")]
            check(rc == 2, "%s, %s: exit %d (expected 2): %s" % (what, plan, rc, err.strip()[-500:]))
            check(len(said) == 1, "%s, %s: not one refusal: %r" % (what, plan, said))
            check(REPLAY_REFUSAL.match(said[0]) is not None,
                  "%s, %s: the refusal does not say which operation failed: %r" % (what, plan, said[0]))
            check(d in said[0] and os.strerror(ERRNO[e]) in said[0],
                  "%s, %s: the refusal does not name the file and the error: %r" % (what, plan, said[0]))
            first = first or shorten(said[0][len("aup replay: "):], d)
        check(nth > 1, "%s never made a %s call" % (what, call))
        check(store_bytes(d) == before, "%s under faults changed the store's files" % what)
        return "%d %s calls, each failing refused (exit 2: %s); the store unchanged" % (nth - 1, call, first)

    # ---- --listen unix: ------------------------------------------------------------------

    def listen_case(self, case, cdir):
        d, model = self.start_store(case, cdir)
        sock = os.path.join(cdir, "s")
        err_path = os.path.join(cdir, "stderr")
        env = clean_env(faulted=True)
        env["AUP_FAULTS"] = case.plan
        errf = open(err_path, "wb")
        p = subprocess.Popen([self.aup, "run", "--listen", "unix:" + sock] + self.store_args(case, d),
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errf, env=env)
        try:
            deadline = time.monotonic() + READ_TIMEOUT
            while "aup: listening on" not in open(err_path).read():
                check(p.poll() is None, "the server exited: " + open(err_path).read())
                check(time.monotonic() < deadline, "the server did not start listening")
                time.sleep(0.01)
            events = Conn(sock)
            queries = Conn(sock)
            run = Run(case.name, d, model)
            rng = random.Random(self.seed)
            sent_after = 0
            for g in bank_groups(rng, case.group_count or 120):
                for line in g:  # one at a time: each event its own batch
                    conn = queries if line.startswith('{"query"') else events
                    run.group([line], conn.call([line]))
                if run.refusing:
                    run.group(QUERY_GROUP, queries.call(QUERY_GROUP))  # queries still answered
                    sent_after += 1
                    if sent_after > 5:
                        break
            check(run.refusing, "the store never became unavailable: %s" % open(err_path).read())
            check(run.refused_after >= 5, "only %d events were refused after" % run.refused_after)
            p.send_signal(signal.SIGTERM)
            try:
                rc = p.wait(timeout=READ_TIMEOUT)
            except subprocess.TimeoutExpired:
                raise Hang("the server did not exit on SIGTERM")
            events.close()
            queries.close()
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            errf.close()
        stderr = open(err_path).read()
        sanitizer_clean(stderr, "the server")
        check(rc == 0, "the server exited %d on SIGTERM: %s" % (rc, stderr))
        check(not os.path.exists(sock), "the socket file was left behind")
        outcome = "%s; %d later events refused, queries answered, SIGTERM exit 0" % (
            shorten(run.first_refusal, d), run.refused_after)
        return "%s | %s" % (outcome, self.after_restart(case, d, run, True, cdir))


class Conn:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)
        self.s.settimeout(READ_TIMEOUT)
        self.buf = b""

    def call(self, lines):
        self.s.sendall(("\n".join(lines) + "\n").encode())
        out = []
        while len(out) < len(lines):
            nl = self.buf.find(b"\n")
            if nl >= 0:
                out.append(self.buf[:nl].decode())
                self.buf = self.buf[nl + 1:]
                continue
            try:
                chunk = self.s.recv(65536)
            except socket.timeout:
                raise Hang("no answer from the server within %ds" % READ_TIMEOUT)
            if not chunk:
                break
            self.buf += chunk
        return out

    def close(self):
        self.s.close()


def store_bytes(d):
    """Every file of a store and a digest of its bytes."""
    out = {}
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name), "rb") as f:
            out[name] = hashlib.sha256(f.read()).hexdigest()
    return out


def shorten(msg, d):
    msg = msg.replace(d + "/", "").replace(d, "DIR")
    return msg if len(msg) < 150 else msg[:147] + "..."


def torn_tail(aup, d):
    """Writes a torn entry after the log's last one: a header whose digest
    does not match, nothing valid after it (what a crash mid-write leaves)."""
    rc, out, err = replay(aup, d, "--entries")
    check(rc == 0 and out, "aup replay --entries: %s" % err)
    last = json.loads(out.splitlines()[-1])
    at = last["offset"] + (40 + last["bytes"] + 7) // 8 * 8
    path = os.path.join(d, "log-%d" % last["segment"])
    check(at + 64 <= os.path.getsize(path), "no room for a torn entry in %s" % path)
    head = (48).to_bytes(4, "little") + bytes(4) + (last["seq"] + 1).to_bytes(8, "little") + \
        last["seq"].to_bytes(8, "little") + bytes.fromhex(last["digest"])[::-1] + (12345).to_bytes(8, "little")
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(head + b"\x07" * 24)
    rc, out, err = replay(aup, d, "--verify")
    check(rc == 0 and "torn write" in out, "the torn tail was not seen as one: %s %s" % (out, err))


# ---- the cases --------------------------------------------------------------------------------


def cases(full):
    out = []
    nths = NTHS_FULL if full else NTHS_CI
    for call, errnos in CALLS.items():
        expect = "not reached" if call == "rmdir" else None
        few = call == "rmdir" and not full  # never called: two cases show it
        if call in AT_OPEN:
            expect = "fired"
        # A fresh store: creating it, then running with checkpoints and
        # segment reuse. In CI each occurrence takes the next errno in turn
        # (every errno of a call is covered); --full takes every pair.
        fresh_nths = AT_OPEN[call] if call in AT_OPEN else nths[:1] if few else nths
        for i, nth in enumerate(fresh_nths):
            for e in (errnos if full else [errnos[i % len(errnos)]]):
                out.append(Case("fail:%s:%d:%s" % (call, nth, e), "fresh", expect=expect))
        # An existing store opening (its images' save numbers moved up).
        open_nths = AT_OPEN[call][:1] if call in AT_OPEN else NTHS_OPEN if full else NTHS_OPEN[:1] if few else \
            NTHS_OPEN[:4]
        for i, nth in enumerate(open_nths):
            for e in (errnos if full else [errnos[i % len(errnos)]]):
                out.append(Case("fail:%s:%d:%s" % (call, nth, e), "reopen", expect=expect))
    # A store that only grows (no checkpoints): the calls come in a fixed
    # order, so these hit creating new segments: open 15 and 17 create
    # log-0 and log-1 (a clean refusal), 16 and 18 open the directory to
    # sync it (unavailable), fsync 9 and 10 are those directory syncs,
    # pwrite 11 writes log-0's header, fallocate N allocates log-(N-1).
    # (Opens 1 to 14 create the store: LIVE, READERS, the schema file and
    # the images, each file's directory synced.)
    grow = [("open", [15, 16, 17, 18]), ("fsync", [9, 10]), ("pwrite", [11]), ("fallocate", [1, 2, 3, 6])]
    for call, ns in grow:
        for i, nth in enumerate(ns):
            for e in (CALLS[call] if full else [CALLS[call][i % len(CALLS[call])]]):
                out.append(Case("fail:%s:%d:%s" % (call, nth, e), "grow", args=NO_CHECKPOINTS, expect="fired"))
    out.append(Case("short:pwrite:11", "grow", args=NO_CHECKPOINTS, expect="fired"))
    # log-0's header written in part, then the rest refused: the file must
    # not be left with half a header (the next open would call it damage).
    out.append(Case("short:pwrite:11,fail:pwrite:12:ENOSPC", "grow", args=NO_CHECKPOINTS, expect="refusing"))
    # A long log opened with checkpoints on: the first checkpoint (images
    # of both tables and the vars) releases most segments (unlink 1..4),
    # and the next segment reuses a freed one: rename 4 renames it, open 20
    # opens it, open 21 and fsync 7 sync the directory, pwrite 34 and 35
    # write its header and first entry. (The checkpoint runs on its own
    # thread, so a count may land on a neighbouring call: the checks hold
    # whichever it is.)
    grown = [("rename", [1, 3, 4]), ("unlink", [1, 2, 3, 4]), ("open", [6, 13, 20, 21]), ("fsync", [7, 8]),
             ("pwrite", [12, 34, 35])]
    for call, ns in grown:
        for i, nth in enumerate(ns):
            for e in (CALLS[call] if full else [CALLS[call][i % len(CALLS[call])]]):
                out.append(Case("fail:%s:%d:%s" % (call, nth, e), "grown"))
    out.append(Case("short:pwrite:34,fail:pwrite:35:ENOSPC", "grown"))
    # A torn tail cut at the open: its write and its sync, and reading it.
    for plan in ("fail:pwrite:1:EIO", "fail:pwrite:1:ENOSPC", "fail:fdatasync:1:EIO", "fail:fdatasync:1:EROFS",
                 "fail:pread:5:EIO", "fail:pread:6:EIO", "short:pwrite:1"):
        out.append(Case(plan, "torn", expect="fired"))
    # Short writes: completed by the retry; and a short write whose retry
    # fails (the disk filled up mid-write).
    for nth in nths:
        out.append(Case("short:pwrite:%d" % nth, "fresh"))
        out.append(Case("short:pwrite:%d,fail:pwrite:%d:ENOSPC" % (nth, nth + 1), "fresh"))
    for nth in NTHS_OPEN[:3]:
        out.append(Case("short:pwrite:%d" % nth, "reopen"))
        out.append(Case("short:pwrite:%d,fail:pwrite:%d:EIO" % (nth, nth + 1), "reopen"))
    # A failed sync whose withdrawal fails too: `perhaps written`. Its sync
    # failing leaves zeros in the page cache (the batch is gone after the
    # restart); its write failing leaves the entry (the batch survives).
    for nth in (1, 4, 30, 150) if not full else (1, 2, 4, 9, 30, 77, 150, 260):
        out.append(Case("fail:fdatasync:%d:EIO,fail:fdatasync:%d:EIO" % (nth, nth + 1), "fresh", expect="perhaps"))
    out.append(Case("fail:fdatasync:3:EIO,fail:fdatasync:4:EIO", "reopen", expect="perhaps-absent"))
    out.append(Case("fail:fdatasync:20:EIO,fail:pwrite:*:EIO", "fresh", args=QUIET_STORE,
                    expect="perhaps-present"))
    # aup replay: each call it makes, at every occurrence (N), each way of
    # reading, on a store with images and a log, and on one whose log ends
    # in a torn entry (read to the end of its segment).
    for store in ("reopen", "torn"):
        for mode in REPLAY_MODES:
            for call, e in REPLAY_CALLS:
                out.append(Case("fail:%s:N:%s" % (call, e), "replay", args=mode, store=store))
    # The same faults through `--listen unix:`.
    # Both ways of serving sockets: I/O threads, and the owner serving the
    # connections itself (--io-threads 0).
    for io in ("2", "0"):
        served = ["--io-threads", io]
        out.append(Case("fail:fdatasync:12:EIO", "listen", args=SMALL_STORE + served, expect="refusing"))
        out.append(Case("fail:fdatasync:12:EIO,fail:fdatasync:13:EIO", "listen", args=SMALL_STORE + served,
                        expect="perhaps"))
        out.append(Case("fail:pwrite:40:ENOSPC", "listen", args=QUIET_STORE + served, expect="refusing"))
    return out


def resolve(m, case):
    """`fail:pwrite:*`: the pwrite of the withdrawal after fdatasync K fails.
    With no checkpoints the calls come in a fixed order: the store's
    creation writes, one segment header, then one pwrite per commit; the
    withdrawal is the pwrite after commit K's. Found by trying the few
    candidates rather than by counting, so the case does not depend on how
    many writes creating a store takes."""
    if "*" not in case.plan:
        return [case]
    k = int(case.plan.split(":")[2])
    return [Case(case.plan.replace("*", str(k + base)), case.scenario, case.args, case.expect, case.group_count)
            for base in range(8, 16)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("aup")
    ap.add_argument("module")
    ap.add_argument("--full", action="store_true", help="every errno at every occurrence, more occurrences")
    ap.add_argument("--groups", type=int, default=None, help="batches per run (default 240, 480 with --full)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--only", default=None, help="only cases whose plan or scenario contains this")
    ap.add_argument("--keep", action="store_true", help="keep the stores of the cases")
    ap.add_argument("--markdown", default=None, help="also write the cases as a Markdown table to this file")
    ap.add_argument("--part", default=None, metavar="K/N",
                    help="only every N-th case, from the K-th (the sanitizer build's suite runs 1/3)")
    a = ap.parse_args()
    a.groups = a.groups or (480 if a.full else 240)
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None  # fdatasync on tmpfs is cheap
    work = tempfile.mkdtemp(prefix="aup-faults-", dir=base)
    if a.module.endswith(".aup"):
        # Compiled once, not at each of the thousands of process starts.
        built = os.path.join(work, "bank.aupm")
        r = subprocess.run([a.aup, "build", a.module, "-o", built], capture_output=True, text=True)
        if r.returncode != 0:
            print("FAIL: aup build %s: %s" % (a.module, r.stderr))
            sys.exit(1)
        a.module = built
    m = Matrix(a, work)
    started = time.monotonic()
    todo = [c for c in cases(a.full) if not a.only or a.only in c.name]
    if a.part:
        k, n = (int(x) for x in a.part.split("/"))
        todo = todo[k - 1::n]
    for scenario in ("reopen", "torn", "grown"):
        if any(scenario in (c.scenario, c.store) for c in todo):
            m.prepare(scenario)  # before the cases run in parallel
    failures, results = [], []
    try:
        plain = [c for c in todo if "*" not in c.plan]
        with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
            for case, ok, summary, secs in pool.map(m.run_case, plain):
                print("%s %s %5.2fs  %s" % ("ok  " if ok else "FAIL", case.name, secs, summary), flush=True)
                results.append((case, ok, summary))
                if not ok:
                    failures.append(case.name)
        for case in [c for c in todo if "*" in c.plan]:
            tried = []
            for cand in resolve(m, case):
                case_, ok, summary, secs = m.run_case(cand)
                tried.append(cand.plan)
                if ok or not ("expected a `perhaps written`" in summary or "expected to survive" in summary):
                    break  # passed, or failed for another reason than taking another path
            print("%s %s %5.2fs  %s" % ("ok  " if ok else "FAIL", cand.name, secs, summary), flush=True)
            results.append((cand, ok, summary))
            if not ok:
                failures.append(cand.name + " (tried %s)" % ", ".join(tried))
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("stores kept in " + work)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("| plan | store | held | what happened | after a restart without faults |\n|---|---|---|---|---|\n")
            for case, ok, summary in results:
                what, _, after = summary.partition(" | ")
                f.write("| `%s` | %s | %s | %s | %s |\n" % (case.plan, case.scenario, "yes" if ok else "**no**",
                                                         what.replace("|", "/"), after.replace("|", "/")))
    reached = sum(1 for _, ok, s in results if ok and not s.startswith("not reached"))
    print("%d cases (%d reached their fault), %d failed, %.0fs" % (len(results), reached, len(failures),
                                                                    time.monotonic() - started))
    if failures:
        for f in failures:
            print("FAIL: " + f)
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
