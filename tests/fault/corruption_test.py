#!/usr/bin/env python3
"""Corrupted stores: every byte region of every file kind of a store, as
docs/store-format.md lays it out, gets a bit flipped, a run of bytes zeroed,
or the file cut there; then, on a fresh copy each time, `aup replay --verify`
and `aup run` must agree on the verdict, and it must be one the region
allows (expect() below):

  refused        exit 1, the message naming the damaged file and a byte
                 offset inside the checksummed unit that holds the damage
                 (the header, the entry, the image body...) or the offset
                 where the file now ends;
  torn           (only the newest segment's last entry or what follows it,
                 or the newest segment emptied) the store opens, says it
                 cut a torn tail, and holds exactly the acknowledged events
                 before the damage;
  intact         (only bytes that are not state: entry padding, bytes after
                 the end marker) the store opens to every acknowledged event;
  silent-prefix  opens without a word to fewer events: allowed only where
                 the damage is indistinguishable from what a failed commit
                 leaves (the last entry's whole header zeroed: a withdrawal).

Anything else fails: a corruption accepted with another state, a crash
(or a sanitizer report), a refusal naming the wrong file or offset, replay
disagreeing with run. Opened stores must also take a new event and verify
cleanly afterwards (the cut left an appendable log).

The store is built with the bank module (examples/bank/bank.aup), one event
per entry (--max-batch 1, so save number k is the state after event k),
small segments and checkpoint thresholds: a first phase writes images and
reuses segments, a second phase writes several segments no image covers.
A Python model of the bank gives the state after every prefix of events.

usage: corruption_test.py AUP BANK_AUP [--full] [--only TEXT] [--table FILE]
                          [--jobs N] [--seed S] [--events N] [--keep] [--quiet]
  (default) one representative offset per region (its first byte), each
            mutation once, on the newest and the oldest live segment, every
            image and the schema: about 400 cases
  --full    every live segment; every byte of each region up to 64 bytes
            long and every 8th byte of longer ones; zero runs of 1, 8, 40
            and 64 bytes: about 12000 cases
  --only    run the cases whose "file region mutation offset" contains TEXT
  --table   write the file kind x region x mutation -> verdict counts
            (Markdown) to FILE
  --jobs    cases run at once (default: the number of cores)
"""

import argparse
import collections
import concurrent.futures
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time

FIXED_TIME = 1700000000000
SEGMENT = 4096
HUGE = str(1 << 40)
# Phase 1 checkpoints often (images with rows, released and reused
# segments); phase 2 never does, so its segments all stay live.
PHASE1 = ["--segment-size", str(SEGMENT), "--image-min", "700", "--log-min", "3000"]
PHASE2 = ["--segment-size", str(SEGMENT), "--image-min", HUGE, "--log-min", HUGE]
ENTRY_HEADER = 40
SEG_HEADER = 64
IMG_HEADER = 64
SCHEMA_HEADER = 24


def u64(b, o):
    return struct.unpack_from("<Q", b, o)[0]


def entry_bytes(n):
    return (ENTRY_HEADER + n + 7) // 8 * 8


# ---- the bank, modelled ---------------------------------------------------------


class Bank:
    """examples/bank/bank.aup's state; only events that succeed are made."""

    def __init__(self):
        self.accounts = {}  # id -> [owner, balance, closed]
        self.transfers = {}  # id -> (from, to, amount)
        self.next_transfer = 1

    def apply(self, ev):
        kind, a = ev["event"], ev["args"]
        if kind == "open":
            assert a["id"] not in self.accounts
            self.accounts[a["id"]] = [a["owner"], 0, False]
        elif kind == "deposit":
            acc = self.accounts[a["id"]]
            assert not acc[2] and a["amount"] > 0
            acc[1] += a["amount"]
        elif kind == "transfer":
            f, t = self.accounts[a["from"]], self.accounts[a["to"]]
            assert a["from"] != a["to"] and not f[2] and not t[2] and 0 < a["amount"] <= f[1]
            f[1] -= a["amount"]
            t[1] += a["amount"]
            self.transfers[self.next_transfer] = (a["from"], a["to"], a["amount"])
            self.next_transfer += 1
        elif kind == "close":
            acc = self.accounts[a["id"]]
            assert not acc[2] and acc[1] == 0
            acc[2] = True

    def state(self):
        """As the state queries answer it (key order), as one string."""
        accounts = [{"id": i, "owner": o, "balance": b, "opened": FIXED_TIME, "closed": c}
                    for i, (o, b, c) in sorted(self.accounts.items())]
        transfers = [{"id": i, "from": f, "to": t, "amount": m, "at": FIXED_TIME}
                     for i, (f, t, m) in sorted(self.transfers.items())]
        return canonical([accounts, transfers, self.next_transfer - 1])


def canonical(v):
    def norm(x):
        if isinstance(x, float) and x.is_integer():
            return int(x)
        if isinstance(x, list):
            return [norm(y) for y in x]
        if isinstance(x, dict):
            return {k: norm(y) for k, y in x.items()}
        return x
    return json.dumps(norm(v), sort_keys=True)


def make_events(rng, n):
    """n events that all succeed; account 1 is never closed (the follow-up
    deposit of every opened case goes there)."""
    bank = Bank()
    events = []
    next_id = 1

    def add(kind, **args):
        ev = {"event": kind, "args": args}
        bank.apply(ev)
        events.append(ev)

    while len(events) < n:
        live = [i for i, a in bank.accounts.items() if not a[2]]
        rich = [i for i in live if bank.accounts[i][1] > 0]
        r = rng.random()
        if next_id <= 4 or (r < 0.08 and next_id < 60):
            # Owners of many lengths, so payloads and rows have a middle.
            owner = "owner-%d-" % next_id + "x" * rng.choice([0, 3, 20, 90])
            add("open", id=next_id, owner=owner)
            next_id += 1
        elif r < 0.40 or not rich or len(live) < 2:
            add("deposit", id=rng.choice(live), amount=rng.choice([1, 7, 250, 10 ** 6, 2 ** 40 + 3]))
        elif r < 0.95:
            f = rng.choice(rich)
            t = rng.choice([i for i in live if i != f])
            add("transfer", **{"from": f, "to": t, "amount": rng.randint(1, bank.accounts[f][1])})
        else:
            empty = [i for i in live if bank.accounts[i][1] == 0 and i != 1]
            if empty:
                add("close", id=rng.choice(empty))
            else:
                add("deposit", id=1, amount=3)
    return events


def model_states(events):
    bank = Bank()
    states = [bank.state()]
    for ev in events:
        bank.apply(ev)
        states.append(bank.state())
    return states


STATE_QUERIES = [
    {"query": "accounts_all", "id": "q1"},
    {"query": "recent", "args": {"n": 1 << 40}, "id": "q2"},
    {"query": "transfers_made", "id": "q3"},
]


# ---- aup ------------------------------------------------------------------------


class Aup:
    def __init__(self, exe, module, timeout):
        self.exe, self.module, self.timeout = exe, module, timeout
        self.env = {k: v for k, v in os.environ.items() if k != "AUP_FAULTS"}

    def call(self, args, stdin=b""):
        try:
            r = subprocess.run([self.exe] + args, input=stdin, capture_output=True, timeout=self.timeout,
                               env=self.env)
            return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")
        except subprocess.TimeoutExpired:
            return "timeout", "", "timed out after %ss" % self.timeout

    def run(self, data, lines, extra=PHASE2):
        text = "".join(json.dumps(x) + "\n" for x in lines).encode()
        return self.call(["run", self.module, "--data", data, "--max-batch", "1",
                          "--fixed-time", str(FIXED_TIME)] + extra, text)

    def verify(self, data):
        return self.call(["replay", "--data", data, "--verify"])


def answers(out):
    got = {}
    for line in out.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        got[doc.get("id")] = doc
    return got


def state_of(out):
    a = answers(out)
    try:
        parts = [a[q["id"]] for q in STATE_QUERIES]
    except KeyError:
        return None
    if not all(p.get("ok") for p in parts):
        return None
    return canonical([p["result"] for p in parts])


# ---- the store's layout ----------------------------------------------------------

# A region: a named byte range of one file, the checksummed unit holding
# it (a refusal must name a byte in it), its role (what may become of the
# store, see expect()), and the prefix of events the store may open to.
Region = collections.namedtuple("Region", "kind file name lo hi unit role k zero_len")


def expect(case, n_events):
    """What may become of the store: the allowed verdicts, and for `torn`
    and `silent-prefix` the number of events the state must hold.

    refused        exit 1, naming the file and a byte of the unit
    torn           opens, says it cut a torn tail, holds events 1..k
    intact         opens without a word, holds every event
    silent-prefix  opens without a word, holds events 1..k (k < all)
    """
    r, m = case.region, case.mutation
    whole_header = m == "zero" and case.at == r.unit[0] and case.length >= ENTRY_HEADER
    blank = r.role == "segment header" and case.at == 0 and (
        m == "truncate" or (m == "zero" and case.length >= SEG_HEADER))
    if blank and r.k is not None:
        # The newest segment emptied (or its header zeroed) looks exactly
        # like one whose creation a crash interrupted: the log ends before
        # it, said as a torn tail.
        return ("torn",), r.k, ""
    if blank:
        # An older one so emptied is free space and breaks the chain: the
        # store is refused as missing entries, naming the store and the
        # save numbers, not the file (documented limit).
        return ("refused", "intact"), None, "limit: an emptied older segment reads as missing entries"
    if r.role in ("state", "segment header"):
        return ("refused",), None, ""
    if r.role == "tail":
        if whole_header:
            # Exactly what a withdrawal writes (an end marker): the log ends
            # before it, as after a failed sync (documented).
            return ("silent-prefix", "torn", "refused"), n_events - 1, "limit: a zeroed header is an end marker"
        if m == "truncate":
            return ("refused", "torn"), n_events - 1, ""
        return ("torn",), n_events - 1, ""
    if r.role == "after newest":
        return ("intact", "torn", "refused"), n_events, ""
    if r.role == "not state":
        return ("intact", "refused"), n_events, ""
    raise AssertionError(r.role)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def decode_varint(b, o):
    v, shift = 0, 0
    while True:
        x = b[o]
        o += 1
        v |= (x & 0x7F) << shift
        if not x & 0x80:
            return v, o
        shift += 7


def skip_value(b, o, t):
    if t == 1:  # num
        v, o = decode_varint(b, o)
        return o + 8 if v == 1 else o
    if t == 2:  # text
        n, o = decode_varint(b, o)
        return o + n
    return o + 1  # bool


def skip_table_schema(b, o):
    """The table part of an image body (image_format.h); where rows start."""
    for _ in range(2):  # name, record
        n, o = decode_varint(b, o)
        o += n
    nf, o = decode_varint(b, o)
    for _ in range(nf):
        n, o = decode_varint(b, o)
        o += n
        o += 1  # type
        has_default = b[o]
        o += 1
        if has_default:
            t = b[o]
            o = skip_value(b, o + 1, t)
    _, o = decode_varint(b, o)  # key field
    return o


def segment_regions(kind, name, data, entries, newest, n_events, before_k):
    """Regions of one live segment: its header, entries, the end. before_k:
    the events held by the segments before this one."""
    regs = []
    fields = [("magic", 0, 8), ("version", 8, 12), ("header size", 12, 16), ("segment number", 16, 24),
              ("generation", 24, 32), ("predecessor", 32, 40), ("segment size", 40, 48),
              ("reserved", 48, 56), ("header checksum", 56, 64)]
    for f, lo, hi in fields:
        regs.append(Region(kind, name, "header " + f, lo, hi, (0, SEG_HEADER), "segment header", before_k, hi - lo))

    def entry_regions(label, e, role, pad_role):
        start, n = e["offset"], e["bytes"]
        end = start + entry_bytes(n)
        unit = (start, end)
        out = []
        for f, lo, hi in [("length", 0, 4), ("reserved", 4, 8), ("save number", 8, 16),
                          ("previous save", 16, 24), ("previous digest", 24, 32), ("digest", 32, 40)]:
            out.append(Region(kind, name, "%s: %s" % (label, f), start + lo, start + hi, unit, role, None, hi - lo))
        p = start + ENTRY_HEADER
        out.append(Region(kind, name, label + ": payload start", p, p + min(8, n), unit, role, None, 8))
        mid = p + n // 2
        out.append(Region(kind, name, label + ": payload middle", mid, mid + 1, unit, role, None, 8))
        out.append(Region(kind, name, label + ": payload end", p + n - 1, p + n, unit, role, None, 1))
        if p + n < end:
            out.append(Region(kind, name, label + ": padding", p + n, end, unit, pad_role, None, end - p - n))
        return out

    last = entries[-1]
    older = entries[:-1] if newest else entries
    if older:
        regs += entry_regions("first entry", older[0], "state", "not state")
    if len(older) > 2:
        regs += entry_regions("middle entry", older[len(older) // 2], "state", "not state")
    if newest:
        regs += entry_regions("last entry (tail)", last, "tail", "after newest")
    elif len(older) > 1:
        regs += entry_regions("last entry", older[-1], "state", "not state")
    end = last["offset"] + entry_bytes(last["bytes"])
    after = "after newest" if newest else "not state"
    if end + ENTRY_HEADER <= len(data):
        regs.append(Region(kind, name, "end marker", end, end + ENTRY_HEADER, (end, end + ENTRY_HEADER), after,
                           None, 8))
    beyond = end + ENTRY_HEADER
    if beyond < len(data):
        # Stale bytes of a reused segment when there are any, else zeros.
        nz = next((i for i in range(beyond, len(data)) if data[i]), None)
        at = nz if nz is not None else (beyond + len(data)) // 2
        label = "after the end marker (stale bytes)" if nz is not None else "after the end marker (zeros)"
        regs.append(Region(kind, name, label, at, min(at + 64, len(data)), (beyond, len(data)), after, None, 8))
    return regs


def image_regions(kind, name, data, table):
    body = u64(data, 32)
    fields = [("magic", 0, 8), ("version", 8, 12), ("header size", 12, 16), ("save number", 16, 24),
              ("row count", 24, 32), ("body length", 32, 40), ("kind", 40, 41), ("reserved", 41, 56),
              ("header checksum", 56, 64)]
    regs = [Region(kind, name, "header " + f, lo, hi, (0, IMG_HEADER), "state", None, hi - lo)
            for f, lo, hi in fields]
    unit = (IMG_HEADER, IMG_HEADER + body + 8)
    b0, b1 = IMG_HEADER, IMG_HEADER + body
    if table:
        rows = skip_table_schema(data, b0)
        regs.append(Region(kind, name, "body: columns", b0, rows, unit, "state", None, 8))
        regs.append(Region(kind, name, "body: first row", rows, min(rows + 8, b1), unit, "state", None, 8))
        mid = (rows + b1) // 2
        regs.append(Region(kind, name, "body: middle row", mid, mid + 1, unit, "state", None, 8))
        regs.append(Region(kind, name, "body: last byte", b1 - 1, b1, unit, "state", None, 1))
    else:
        regs.append(Region(kind, name, "body: start", b0, min(b0 + 8, b1), unit, "state", None, 8))
        regs.append(Region(kind, name, "body: last byte", b1 - 1, b1, unit, "state", None, 1))
    regs.append(Region(kind, name, "body digest", b1, b1 + 8, unit, "state", None, 8))
    return regs


def schema_regions(data):
    body = u64(data, 16)
    head = (0, SCHEMA_HEADER)
    regs = [Region("schema", "schema", "magic", 0, 8, head, "state", None, 8),
            Region("schema", "schema", "version", 8, 12, head, "state", None, 4),
            Region("schema", "schema", "reserved", 12, 16, head, "state", None, 4),
            Region("schema", "schema", "body length", 16, 24, head, "state", None, 8)]
    unit = (SCHEMA_HEADER, SCHEMA_HEADER + body + 8)
    b0, b1 = SCHEMA_HEADER, SCHEMA_HEADER + body
    mid = (b0 + b1) // 2
    regs += [Region("schema", "schema", "body start", b0, b0 + 8, unit, "state", None, 8),
             Region("schema", "schema", "body middle", mid, mid + 1, unit, "state", None, 8),
             Region("schema", "schema", "body end", b1 - 1, b1, unit, "state", None, 1),
             Region("schema", "schema", "digest", b1, b1 + 8, unit, "state", None, 8)]
    return regs


# ---- cases ----------------------------------------------------------------------

Case = collections.namedtuple("Case", "region mutation at length")


def mutate(path, mutation, at, length):
    """Applies the damage; False when it changes nothing."""
    data = bytearray(read(path))
    if mutation == "truncate":
        if at >= len(data):
            return False
        os.truncate(path, at)
        return True
    if at >= len(data):
        return False
    if mutation == "flip":
        data[at] ^= 1 << (at % 8)
    else:
        end = min(at + length, len(data))
        if not any(data[at:end]):
            return False
        data[at:end] = bytes(end - at)
    with open(path, "wb") as f:
        f.write(data)
    return True


def named_file(msg, name):
    """Whether the message names the file (as a path or a bare log-N)."""
    return re.search(r"(^|[/\s(])" + re.escape(name) + r"($|[\s:,;)])", msg, re.M) is not None


def named_offsets(msg):
    offs = [int(m) for m in re.findall(r"\bat byte (\d+)", msg)]
    offs += [int(m) for m in re.findall(r"\bends at byte (\d+)", msg)]
    ranges = [(int(a), int(b)) for a, b in re.findall(r"\bbytes (\d+)\.\.(\d+)", msg)]
    return offs, ranges


def offset_ok(msg, case):
    lo, hi = case.region.unit
    if case.mutation == "truncate":
        lo = min(lo, case.at)
    offs, ranges = named_offsets(msg)
    if any(lo <= o <= hi or o == case.at for o in offs):
        return True
    return any(a <= case.at <= b or (a <= hi and lo <= b) for a, b in ranges)


def first_problem(err):
    lines = [ln for ln in err.splitlines()
             if ln.startswith("aup replay: ") and not re.match(r"aup replay: the store .* is damaged$", ln)]
    return lines[0] if lines else err


def sanitizer(err):
    return "Sanitizer" in err or "runtime error:" in err


def evaluate(aup, src, d, case, states, index_of):
    """One case on a fresh copy in d: (verdict, problems, detail)."""
    reg = case.region
    n_events = len(states) - 1
    allowed, want_k, note = expect(case, n_events)
    if os.path.exists(d):
        shutil.rmtree(d)
    shutil.copytree(src, d)
    if not mutate(os.path.join(d, reg.file), case.mutation, case.at, case.length):
        return "no-op", [], ""
    problems = []
    vrc, vout, verr = aup.verify(d)
    follow = {"event": "deposit", "args": {"id": 1, "amount": 1}, "id": "f"}
    rrc, rout, rerr = aup.run(d, STATE_QUERIES + [follow])
    if sanitizer(verr) or sanitizer(rerr) or vrc not in (0, 1) or rrc not in (0, 1):
        return "crash", ["replay exit %s, run exit %s: %s %s" % (
            vrc, rrc, verr.strip()[-600:], rerr.strip()[-600:])], ""
    got = state_of(rout) if rrc == 0 else None
    k = index_of.get(got)
    # run's verdict, and replay's
    if rrc == 1:
        verdict = "refused"
    elif "torn write" in rerr:
        verdict = "torn"
    elif k == n_events:
        verdict = "intact"
    else:
        verdict = "silent-prefix"
    if vrc == 1:
        rv = "refused"
    elif "torn write" in vout:
        rv = "torn"
    elif re.search(r"^verified:", vout, re.M):
        rv = "intact" if verdict != "silent-prefix" else "silent-prefix"
    else:
        rv = "other"
    detail = note
    if verdict != rv:
        problems.append("replay --verify says %s (exit %s: %s), run says %s (exit %s: %s)" % (
            rv, vrc, (vout + verr).strip()[:300], verdict, rrc, rerr.strip()[:300]))
    if verdict not in allowed:
        problems.append("%s is not allowed here (allowed: %s)" % (verdict, ", ".join(allowed)))
    if verdict == "refused":
        msg = rerr.strip()
        detail = (msg.replace("aup run: ", "")[:150] + ("  [%s]" % note if note else "")).strip()
        if note:
            pass  # a documented limit: the message need not name the file
        elif not named_file(msg, reg.file):
            problems.append("run's refusal does not name %s: %s" % (reg.file, msg))
        elif not offset_ok(msg, case):
            problems.append("run's refusal names no byte in %d..%d: %s" % (reg.unit[0], reg.unit[1], msg))
        if vrc == 1 and not note:
            vmsg = first_problem(verr)
            if not named_file(vmsg, reg.file):
                problems.append("replay's first problem does not name %s: %s" % (reg.file, verr.strip()))
            elif not offset_ok(vmsg, case):
                problems.append("replay names no byte in %d..%d: %s" % (reg.unit[0], reg.unit[1], vmsg))
        return verdict, problems, detail
    detail = ("state after %s of %d events %s" % (k, n_events, note)).strip()
    if got is None:
        problems.append("run opened but the state queries failed: %s %s" % (rout[:300], rerr[:300]))
    elif k is None:
        problems.append("run opened to a state that is no prefix of the acknowledged events")
    elif verdict in ("torn", "silent-prefix") and want_k is not None and k != want_k:
        problems.append("opened to the state after %d events, expected %d" % (k, want_k))
    if verdict == "torn":
        m = re.search(r"torn write \((.*?)\); it was cut", rerr)
        where = m.group(1) if m else ""
        detail = where + "; " + detail
        if not named_file(where, reg.file) or not offset_ok(where, case):
            problems.append("the torn tail is not placed in %s at %d..%d: %s" % (
                reg.file, reg.unit[0], reg.unit[1], rerr.strip()))
        if rv == "torn" and where and where not in vout:
            problems.append("replay places the torn tail elsewhere: %s vs %s" % (vout.strip(), where))
    f = answers(rout).get("f")
    if not f or not f.get("ok"):
        problems.append("the store opened but did not take a new event: %s" % (f,))
    arc, aout, aerr = aup.verify(d)
    if arc != 0 or "torn" in aout or sanitizer(aerr):
        problems.append("after the open and one event, replay --verify: exit %s %s %s" % (arc, aout.strip(),
                                                                                           aerr.strip()))
    return verdict, problems, detail


# ---- building the store -----------------------------------------------------------


def build_store(aup, d, events, split):
    for part, extra in ((events[:split], PHASE1), (events[split:], PHASE2)):
        lines = [dict(ev, id=i) for i, ev in enumerate(part)]
        rc, out, err = aup.run(d, lines, extra)
        a = answers(out)
        bad = [i for i in range(len(part)) if not a.get(i, {}).get("ok")]
        if rc != 0 or bad:
            fail("building the store: exit %s, %d events not ok (first %s): %s" % (
                rc, len(bad), bad[:1] and a.get(bad[0]), err))


def live_entries(aup, d):
    rc, out, err = aup.call(["replay", "--data", d, "--entries"])
    if rc != 0:
        fail("replay --entries on the built store: %s" % err)
    return [json.loads(line) for line in out.splitlines()]


def layout(aup, d, n_events, full):
    entries = live_entries(aup, d)
    seqs = [e["seq"] for e in entries]
    if seqs != list(range(seqs[0], n_events + 1)):
        fail("the live log is not one entry per event up to %d: %s" % (n_events, seqs))
    by_seg = collections.OrderedDict()
    for e in entries:
        by_seg.setdefault(e["segment"], []).append(e)
    segs = sorted(by_seg)
    if len(segs) < 3 or len(by_seg[segs[-1]]) < 4 or len(by_seg[segs[0]]) < 4:
        fail("the live log (%s) needs 3 segments, the newest and the oldest with 4 entries each: "
             "try another --events" % {s: len(es) for s, es in by_seg.items()})
    regions = []
    last_seq = {seg: es[-1]["seq"] for seg, es in by_seg.items()}
    newest = segs[-1]
    name = "log-%d" % newest
    regions += segment_regions("log segment (newest)", name, read(os.path.join(d, name)), by_seg[newest], True,
                               n_events, last_seq[segs[-2]])
    older = segs[:-1] if full else [segs[0]]
    for s in older:
        name = "log-%d" % s
        regions += segment_regions("log segment (older)", name, read(os.path.join(d, name)), by_seg[s], False,
                                   n_events, None)
    for f in sorted(os.listdir(d)):
        if f.startswith("image-") and not f.endswith(".new"):
            regions += image_regions("image (table)", f, read(os.path.join(d, f)), True)
    regions += image_regions("image (vars)", "image.vars", read(os.path.join(d, "image.vars")), False)
    regions += schema_regions(read(os.path.join(d, "schema")))
    return regions, segs, entries


def cases_of(regions, full):
    out = []
    for r in regions:
        if not full:
            out.append(Case(r, "flip", r.lo, 1))
            out.append(Case(r, "zero", r.lo, r.zero_len))
            out.append(Case(r, "truncate", r.lo, 0))
            continue
        step = 1 if r.hi - r.lo <= 64 else 8
        for at in range(r.lo, r.hi, step):
            out.append(Case(r, "flip", at, 1))
            for n in (1, 8, 40, 64):
                out.append(Case(r, "zero", at, n))
            out.append(Case(r, "truncate", at, 0))
    return out


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("aup")
    ap.add_argument("module")
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--events", type=int, default=360)
    ap.add_argument("--only", default="")
    ap.add_argument("--table", default="")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="cases run at once (default: cores)")
    o = ap.parse_args()
    started = time.time()
    work = tempfile.mkdtemp(prefix="aup-corruption-")
    try:
        # A copy: a long run must not meet a relink of a shared build.
        exe = os.path.join(work, "aup")
        shutil.copy2(o.aup, exe)
        aup = Aup(exe, "", o.timeout)
        module = os.path.join(work, "bank.aupm")
        rc, out, err = aup.call(["build", o.module, "-o", module])
        if rc != 0:
            fail("aup build: %s" % err)
        aup.module = module
        rng = random.Random(o.seed)
        events = make_events(rng, o.events)
        states = model_states(events)
        index_of = {s: k for k, s in enumerate(states)}
        store = os.path.join(work, "store")
        build_store(aup, store, events, len(events) * 5 // 9)
        # The built store is whole: verified, and it holds every event.
        rc, out, err = aup.verify(store)
        if rc != 0 or "torn" in out:
            fail("the built store does not verify: %s %s" % (out, err))
        probe = os.path.join(work, "probe")
        shutil.copytree(store, probe)
        rc, out, err = aup.run(probe, STATE_QUERIES)
        if rc != 0 or state_of(out) != states[-1]:
            fail("the built store does not hold the model's state (exit %s): %s %s" % (rc, out[:500], err))
        regions, segs, entries = layout(aup, store, len(events), o.full)
        cases = [c for c in cases_of(regions, o.full)
                 if o.only in "%s %s %s %s" % (c.region.file, c.region.name, c.mutation, c.at)]
        print("store: %d events, live log %s (%d entries), images %s; %d cases" % (
            len(events), ", ".join("log-%d" % s for s in segs), len(entries),
            ", ".join(sorted(f for f in os.listdir(store) if f.startswith("image"))), len(cases)))
        table = collections.OrderedDict()
        counts = collections.Counter()
        failures = 0
        slot = threading.local()

        def one(c):
            if not hasattr(slot, "dir"):
                slot.dir = tempfile.mkdtemp(prefix="case-", dir=work)
            return evaluate(aup, store, os.path.join(slot.dir, "store"), c, states, index_of)

        with concurrent.futures.ThreadPoolExecutor(max_workers=o.jobs) as pool:
            results = pool.map(one, cases)
            for c, (verdict, problems, detail) in zip(cases, results):
                counts[verdict] += 1
                key = (c.region.kind, c.region.name, c.mutation)
                table.setdefault(key, collections.Counter())[verdict] += 1
                status = "FAIL" if problems else "ok"
                if problems:
                    failures += 1
                if problems or not o.quiet:
                    print("%-4s %-7s %-9s %s %s @%d: %s" % (status, verdict, c.mutation, c.region.file, c.region.name,
                                                           c.at, detail))
                for p in problems:
                    print("       " + p)
        elapsed = time.time() - started
        summary = ", ".join("%d %s" % (n, v) for v, n in sorted(counts.items()))
        print("%d cases in %.1fs: %s; %d failed" % (len(cases), elapsed, summary, failures))
        if o.table:
            with open(o.table, "w") as f:
                f.write("| file kind | region | mutation | verdict |\n|---|---|---|---|\n")
                for (kind, name, mutation), v in table.items():
                    f.write("| %s | %s | %s | %s |\n" % (kind, name, mutation,
                                                         ", ".join("%s %d" % x for x in sorted(v.items()))))
        if failures:
            sys.exit(1)
        print("ok")
    finally:
        if o.keep:
            print("kept " + work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
