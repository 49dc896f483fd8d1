#!/usr/bin/env python3
"""The failover soak (docs/replication.md, "What the soak holds"): three aup
nodes of one cluster and a three-member etcd on this machine, clients
sending bank transfers the whole time, and a nemesis that breaks things.

Each node listens on a loopback port behind a fault proxy
(harness.Proxy), and advertises the proxy's address: clients and the
other nodes' replication reach it only through the proxy, so cutting the
proxy cuts the node off from both (not from etcd).

Clients (threads, one request at a time) send transfers between 20
accounts, each with an id of the client's own and an idempotency key made
of it; on `unavailable`, `not_primary` (they follow its `primary`), a
timeout or a lost connection they send the same request again, on the
primary they know of or the next node, until it is answered (they wait
ANSWER_TIMEOUT_S for an answer).

The nemesis, one action at a time, chosen by a seeded random generator,
waiting between two until the cluster is whole again (every node running,
a primary that answers, with --sync-replicas K >= 1 a sync key naming K
replicas, with K = 0 every replica caught up with the primary):
  kill     kill -9 of the primary; started again once another leads
  pause    SIGSTOP of the primary past the lease TTL; SIGCONT once
           another leads (it must step down and follow)
  cut      the primary's proxy resets every connection for 1-3 s
  replica  kill -9 of a replica, started again half a second later
  etcd     kill -9 of an etcd member (the leader half the time), started
           again 2 s later
kill and pause are failovers; the run ends after --failovers of them (or
--actions actions). Then everything heals, the clients finish what they
have in flight, and the checker reads every node's store:
  - every acknowledged transfer is stored, exactly once (K >= 1; with
    K = 0 the acknowledged transfers lost are counted and reported);
  - nothing is stored that no client sent, or with other fields;
  - every balance is the opening balance plus what the stored transfers
    moved;
  - no term was led by two nodes, and every acknowledged transfer that is
    stored was answered by the node that led the term its save is in (so
    no event was answered by two primaries of one term; with K = 0 those
    answered at a save later cut but stored by an earlier attempt are
    counted instead);
  - every node's accounts and transfers are the same, row for row;
  - no answer but ok, `unavailable` and `not_primary` (and `duplicate`,
    which would say a key was lost, counts as a failure).
Failover times (kill -9 or pause of the primary to the first transfer a
new primary answers) are printed, median and max; --report FILE writes
everything as JSON (each failover's action, start and end in
`failover_at`; with --timeline, transfers/s and latency over the run).

usage: failover_soak.py AUP ROOT [--sync-replicas K] [--failovers N]
       [--actions N] [--only ACTION,...] [--clients N] [--ttl S] [--seed N] [--dwell S]
       [--report FILE [--timeline]] [--keep DIR]
"""
import argparse
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

ACCOUNTS = 20
OPENING = 1000
CLUSTER = "soak"
ACTIONS = {"kill": 3, "pause": 2, "cut": 1, "replica": 1, "etcd": 1}
FAILOVERS = ("kill", "pause")
# How long a client waits for an answer before it sends again elsewhere:
# past the nodes' --sync-timeout (2 s), so that a live node's `unavailable`
# comes first, and short, so that a client of a paused primary is not what
# the pause's failover time measures.
ANSWER_TIMEOUT_S = 3


def log(msg):
    print(f"{time.strftime('%H:%M:%S')} {msg}", flush=True)


class Node:
    """An aup node behind its proxy; its address is the proxy's."""

    def __init__(self, opts, tmp, name, etcd_endpoints):
        self.name = name
        listen_port = harness.free_port()
        self.proxy = harness.Proxy(0, "127.0.0.1", listen_port)
        self.address = f"127.0.0.1:{self.proxy.port}"
        self.data = os.path.join(tmp, name)
        self.log = os.path.join(tmp, name + ".log")
        module = os.path.join(os.path.dirname(os.path.abspath(__file__)), "soak.aup")
        self.args = [opts.aup, "run", module, "--data", self.data, "--listen", f"127.0.0.1:{listen_port}",
                     "--keys", "1000000", "--cluster", f"etcd://{','.join(etcd_endpoints)}/{CLUSTER}",
                     "--node", name, "--advertise", self.address, "--lease-ttl", str(opts.ttl),
                     "--sync-replicas", str(opts.sync_replicas), "--sync-timeout", "2"]
        self.proc = None
        self.start()

    def start(self):
        self.proc = harness.Process(self.args, self.log)

    def up(self):
        return self.proc.running() and not self.proc.paused

    def text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def leads(self):
        return harness.says_it_leads(self.text())

    def caught_up(self):
        """Whether, since it last began following a primary, it has caught up."""
        t = self.text()
        return t.rfind("caught up with the primary") > max(t.rfind("--- "), t.rfind("is led by node"))

    def led_terms(self):
        """Every term this node said it leads."""
        terms = []
        for line in self.text().splitlines():
            marker = "this node leads the cluster " + CLUSTER + " in term "
            if marker in line:
                terms.append(int(line.split(marker)[1].split(",")[0]))
        return terms


class Ledger:
    """What the clients sent and were answered, shared by their threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.sent = {}       # id -> (from, to, amount)
        self.acked = {}      # id -> (save, address, time answered, seconds from first sent)
        self.unanswered = set()
        self.unexpected = []
        self.retries = {}    # why -> count

    def send(self, tid, fields):
        with self.lock:
            self.sent[tid] = fields

    def ack(self, tid, save, address, sent_at):
        now = time.monotonic()
        with self.lock:
            self.acked[tid] = (save, address, now, now - sent_at)

    def retry(self, why):
        with self.lock:
            self.retries[why] = self.retries.get(why, 0) + 1

    def first_ack_after(self, t0, not_address):
        with self.lock:
            times = [t for (_, a, t, _) in self.acked.values() if t > t0 and a != not_address]
        return min(times) if times else None

    def acks(self):
        with self.lock:
            return len(self.acked)


class Client(threading.Thread):
    """Sends transfers one at a time until told to stop, each until answered."""

    def __init__(self, index, addresses, ledger, stop, seed):
        super().__init__(name=f"client-{index}", daemon=True)
        self.index, self.addresses, self.ledger, self.stop = index, addresses, ledger, stop
        self.rng = random.Random(seed)
        self.target = self.rng.randrange(len(addresses))
        self.sock = self.reader = None
        self.give_up_at = None  # set once stopped: the last in-flight request's deadline

    def run(self):
        n = 0
        while not self.stop.is_set():
            n += 1
            tid = self.index * 10_000_000 + n
            a, b = self.rng.sample(range(1, ACCOUNTS + 1), 2)
            fields = (a, b, self.rng.randint(1, 50))
            self.ledger.send(tid, fields)
            req = {"event": "transfer", "args": {"id": tid, "from": a, "to": b, "amount": fields[2]},
                   "key": f"t{tid}"}
            if not self.until_answered(tid, req):
                with self.ledger.lock:
                    self.ledger.unanswered.add(tid)
        self.close()

    def until_answered(self, tid, req):
        line = (json.dumps(req) + "\n").encode()
        sent_at = time.monotonic()
        while True:
            if self.stop.is_set() and self.give_up_at is None:
                self.give_up_at = time.monotonic() + 120
            if self.give_up_at is not None and time.monotonic() > self.give_up_at:
                return False
            answer = self.ask(line)
            if answer is None:
                self.ledger.retry("connection")
                self.next_node()
                time.sleep(0.05)
                continue
            if answer.get("ok"):
                self.ledger.ack(tid, answer.get("save"), self.addresses[self.target], sent_at)
                return True
            code = answer["error"]["code"]
            if code == "not_primary":
                self.ledger.retry("not_primary")
                primary = answer["error"].get("primary")
                if primary in self.addresses:
                    self.switch(self.addresses.index(primary))
                else:
                    self.next_node()
                    time.sleep(0.1)
            elif code == "unavailable":
                self.ledger.retry("unavailable")
                time.sleep(0.05)
            else:
                with self.ledger.lock:
                    self.ledger.unexpected.append((tid, answer))
                return True

    def ask(self, line):
        try:
            if self.sock is None:
                self.sock = socket.create_connection(self.addresses[self.target].rsplit(":", 1), timeout=2)
                self.sock.settimeout(ANSWER_TIMEOUT_S)
                self.reader = self.sock.makefile("rb")
            self.sock.sendall(line)
            got = self.reader.readline()
            if got:
                return json.loads(got)
        except (OSError, ValueError):
            pass
        self.close()
        return None

    def switch(self, target):
        if target != self.target:
            self.close()
            self.target = target

    def next_node(self):
        self.switch((self.target + 1) % len(self.addresses))

    def close(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
        self.sock = self.reader = None


class Soak:
    def __init__(self, opts, tmp, etcd):
        self.opts, self.tmp, self.etcd = opts, tmp, etcd
        self.rng = random.Random(opts.seed)
        self.nodes = []
        for i in range(3):
            self.nodes.append(Node(opts, tmp, f"n{i + 1}", etcd.client_endpoints()))
            time.sleep(0.3)
        self.ledger = Ledger()
        self.stop = threading.Event()
        self.clients = []
        self.failures = []
        self.failover_s = []
        self.failover_at = []  # (action, when it began, first answer after), seconds from the clients' start
        self.started = None
        self.actions = []

    def fail(self, msg):
        self.failures.append(msg)
        log("FAIL: " + msg)

    def leader(self, timeout=30, among=None):
        found = []
        among = among or self.nodes
        harness.wait_until(lambda: found.extend(n for n in among if n.up() and n.leads()) or found, timeout)
        return found[0] if found else None

    def sync_count(self):
        try:
            kv = harness.etcd_get(self.etcd.client_endpoints()[0], f"/aup/{CLUSTER}/sync", timeout_s=1)
        except (harness.EtcdError, OSError):
            return 0
        return len(json.loads(kv)["nodes"]) if kv else 0

    def whole(self, timeout=90):
        """Every node running, a primary, its sync key full, and transfers
        answered again: the state the next action starts from."""
        def ok():
            p = self.leader(0.1) if all(n.up() for n in self.nodes) else None
            if not p:
                return False
            if self.opts.sync_replicas == 0:  # what a node may take over with is what it holds
                return all(n.caught_up() for n in self.nodes if n is not p)
            return self.sync_count() == self.opts.sync_replicas + 1
        if not harness.wait_until(ok, timeout, 0.2):
            return False
        acks = self.ledger.acks()
        return harness.wait_until(lambda: self.ledger.acks() > acks + 10, 30, 0.1)

    # --- the nemesis ---------------------------------------------------------

    def failover(self, what, p):
        t0 = time.monotonic()
        if what == "kill":
            p.proc.kill()
        else:
            p.proc.pause()
            time.sleep(self.opts.ttl + 1)
        q = self.leader(self.opts.ttl + 30, [n for n in self.nodes if n is not p])
        if not q:
            self.fail(f"{what} of the primary {p.name}: no other node took over")
        first = harness.wait_until(lambda: self.ledger.first_ack_after(t0, p.address), 30, 0.02)
        if q and first:
            self.failover_s.append(round(first - t0, 3))
            self.failover_at.append((what, round(t0 - self.started, 3), round(first - self.started, 3)))
            log(f"{what} {p.name}: {q.name} leads; first transfer answered {first - t0:.2f} s after")
        if what == "kill":
            p.start()
        else:
            p.proc.resume()

    def cut(self, p):
        p.proxy.cut()
        time.sleep(self.rng.uniform(1, 3))
        p.proxy.pass_()

    def restart_replica(self, p):
        r = self.rng.choice([n for n in self.nodes if n is not p])
        r.proc.kill()
        time.sleep(0.5)
        r.start()

    def kill_etcd_member(self):
        leader = self.etcd.leader_index()
        i = leader if leader is not None and self.rng.random() < 0.5 else self.rng.randrange(3)
        self.etcd.kill(i)
        time.sleep(2)
        self.etcd.restart(i)

    def act(self, what):
        p = self.leader()
        if not p:
            self.fail("no primary before an action")
            return False
        self.actions.append(what)
        if what in FAILOVERS:
            self.failover(what, p)
        elif what == "cut":
            self.cut(p)
        elif what == "replica":
            self.restart_replica(p)
        else:
            self.kill_etcd_member()
        if not self.whole():
            self.fail(f"the cluster is not whole again after {what}: " +
                      " | ".join(f"{n.name} up={n.up()} leads={n.leads()}" for n in self.nodes) +
                      f" sync={self.sync_count()}")
            return False
        return True

    def run(self):
        if not self.leader(60):
            self.fail("no node leads at the start")
            return
        self.open_accounts()
        addresses = [n.address for n in self.nodes]
        for i in range(self.opts.clients):
            self.clients.append(Client(i + 1, addresses, self.ledger, self.stop, self.opts.seed * 100 + i))
        self.started = time.monotonic()
        for c in self.clients:
            c.start()
        if not self.whole():
            self.fail("no transfers answered at the start")
        choices = [a for a in ACTIONS if a in self.opts.only]
        weights = [ACTIONS[a] for a in choices]
        failovers = 0
        while not self.failures and failovers < self.opts.failovers and len(self.actions) < self.opts.actions:
            what = self.rng.choices(choices, weights)[0]
            if not self.act(what):
                break
            time.sleep(self.opts.dwell)
            failovers += what in FAILOVERS
        log(f"{len(self.actions)} actions, {failovers} failovers; healing")
        self.heal()
        self.stop.set()
        for c in self.clients:
            c.join(150)

    def open_accounts(self):
        for i in range(1, ACCOUNTS + 1):
            c = Client(0, [n.address for n in self.nodes], self.ledger, threading.Event(), i)
            req = {"event": "open", "args": {"id": i, "balance": OPENING}, "key": f"open{i}"}
            c.give_up_at = time.monotonic() + 60
            if not c.until_answered(-i, req):
                self.fail(f"account {i} was not opened")
            c.close()

    def heal(self):
        for n in self.nodes:
            n.proxy.pass_()
            if n.proc.paused:
                n.proc.resume()
            if not n.proc.running():
                n.start()
        for i, m in enumerate(self.etcd.members):
            if not m.running():
                self.etcd.restart(i)


# --- the checker ---------------------------------------------------------------

def replay(aup, node, *args):
    r = subprocess.run([aup, "replay", "--data", node.data, *args], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"aup replay {' '.join(args)} of {node.name}: {r.stderr.strip()}")
    return r.stdout


def terms_of(node):
    """The term history (DIR/terms: `TERM FIRST_SAVE` lines)."""
    path = os.path.join(node.data, "terms")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [tuple(int(x) for x in line.split()) for line in f if line.strip()]


def term_of(history, save):
    term = 0
    for t, first in history:
        if first <= save:
            term = t
    return term


def check(soak):
    opts, ledger, nodes = soak.opts, soak.ledger, soak.nodes
    if not soak.leader(60):
        soak.fail("no primary after healing")
    dumps, errors = {}, []

    def settled():
        dumps.clear()
        errors.clear()
        for n in nodes:
            try:
                dumps[n.name] = (replay(opts.aup, n, "--dump", "accounts"),
                                 replay(opts.aup, n, "--dump", "transfers"))
            except RuntimeError as e:  # a node starting again (it stepped down, or cut its log) is opening
                errors.append(str(e))
                return False
        return len(set(dumps.values())) == 1
    if not harness.wait_until(settled, 60, 1):
        if errors:
            soak.fail(errors[0])
            return None
        soak.fail("the nodes' stores differ: " + ", ".join(
            f"{k}: {len(v[1].splitlines())} transfers" for k, v in dumps.items()))
    harness.stop_processes([n.proc for n in nodes])
    accounts_text, transfers_text = dumps[nodes[0].name]
    stored = [json.loads(line) for line in transfers_text.splitlines()]
    balances = {a["id"]: a["balance"] for a in map(json.loads, accounts_text.splitlines())}
    result = {"sync_replicas": opts.sync_replicas, "ttl": opts.ttl, "clients": opts.clients,
              "actions": soak.actions, "failovers": sum(a in FAILOVERS for a in soak.actions),
              "failover_s": soak.failover_s, "failover_at": soak.failover_at,
              "sent": len(ledger.sent), "acknowledged": len(ledger.acked), "stored": len(stored),
              "unanswered": len(ledger.unanswered), "retries": ledger.retries}
    if opts.timeline:
        result["timeline"] = timeline(soak)
    check_rows(soak, stored, balances, result)
    check_terms(soak, stored, result)
    if ledger.unexpected:
        soak.fail(f"{len(ledger.unexpected)} unexpected answers, first {ledger.unexpected[0]}")
    return result


def timeline(soak, bucket_s=0.25):
    """Transfers answered per second and their latency (first sent to
    answered, retries included) in buckets of the run, for a plot: rows of
    [seconds from the start, transfers/s, p50 ms, p99 ms]."""
    buckets = {}
    with soak.ledger.lock:
        for tid, (_, _, at, took) in soak.ledger.acked.items():
            if tid > 0:
                buckets.setdefault(int((at - soak.started) / bucket_s), []).append(took * 1000)
    rows = []
    for b in range(max(buckets) + 1 if buckets else 0):
        got = sorted(buckets.get(b, []))
        p = (lambda q: round(got[min(len(got) - 1, int(q * len(got)))], 2)) if got else (lambda q: None)
        rows.append([round(b * bucket_s, 3), round(len(got) / bucket_s, 1), p(0.5), p(0.99)])
    return {"bucket_s": bucket_s, "rows": rows}


def check_rows(soak, stored, balances, result):
    ledger = soak.ledger
    ids = [t["id"] for t in stored]
    if len(ids) != len(set(ids)):
        soak.fail("a transfer id is stored twice")
    phantoms = [t for t in stored if ledger.sent.get(t["id"]) != (t["from"], t["to"], t["amount"])]
    if phantoms:
        soak.fail(f"{len(phantoms)} transfers stored that no client sent, first {phantoms[0]}")
    lost = sorted(t for t in set(ledger.acked) - set(ids) if t > 0)  # the opens' are < 0
    result["lost_acknowledged"] = len(lost)
    if lost and soak.opts.sync_replicas >= 1:
        soak.fail(f"{len(lost)} acknowledged transfers are not stored, first {lost[:5]}")
    want = {i: OPENING for i in range(1, ACCOUNTS + 1)}
    for t in stored:
        want[t["from"]] -= t["amount"]
        want[t["to"]] += t["amount"]
    if balances != want:
        soak.fail(f"balances are not what the stored transfers make them: {balances} != {want}")


def check_terms(soak, stored, result):
    led = {}
    for n in soak.nodes:
        for t in n.led_terms():
            led.setdefault(t, set()).add(n.name)
    twice = {t: sorted(v) for t, v in led.items() if len(v) > 1}
    if twice:
        soak.fail(f"terms led by two nodes: {twice}")
    history = terms_of(soak.nodes[0])
    by_address = {n.address: n.name for n in soak.nodes}
    ids = {t["id"] for t in stored}
    wrong = []
    for tid, (save, address, _, _) in soak.ledger.acked.items():
        if tid > 0 and tid not in ids:
            continue
        leaders = led.get(term_of(history, save), set())
        if by_address[address] not in leaders:
            wrong.append((tid, save, by_address[address], sorted(leaders)))
    # With K = 0 an answered entry can be cut off a deposed primary's log
    # while an earlier attempt of the same transfer (perhaps written, on
    # another primary) survives: stored once, but not at the save the
    # answer named. Counted; with K >= 1 no answered entry is ever cut.
    result["answered_entry_cut_but_stored"] = len(wrong)
    if wrong and soak.opts.sync_replicas >= 1:
        soak.fail(f"{len(wrong)} transfers answered by a node that did not lead their save's term, first {wrong[0]}")
    result["terms"] = len(led)


def summary(result):
    f = result["failover_s"]
    line = (f"K={result['sync_replicas']}: {result['failovers']} failovers in {len(result['actions'])} actions; "
            f"{result['acknowledged']} transfers acknowledged, {result['stored']} stored, "
            f"{result.get('lost_acknowledged', '?')} acknowledged lost, {result['unanswered']} unanswered")
    if f:
        line += f"; failover median {statistics.median(f):.2f} s, max {max(f):.2f} s"
    return line


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("aup")
    ap.add_argument("root")
    ap.add_argument("--sync-replicas", type=int, default=1)
    ap.add_argument("--failovers", type=int, default=1_000_000, help="stop after this many failovers")
    ap.add_argument("--actions", type=int, default=1_000_000, help="stop after this many actions")
    ap.add_argument("--only", default=",".join(ACTIONS), help="the actions to choose from, comma-separated")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--ttl", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dwell", type=float, default=0,
                    help="seconds the cluster runs whole between two actions (a steady state for --timeline)")
    ap.add_argument("--report", help="write the result as JSON here")
    ap.add_argument("--timeline", action="store_true",
                    help="put in the report transfers/s, p50 and p99 in 0.25 s buckets")
    ap.add_argument("--keep", help="keep the nodes' directories and logs here")
    opts = ap.parse_args()
    opts.only = opts.only.split(",")
    if opts.failovers == 1_000_000 and opts.actions == 1_000_000:
        ap.error("give --failovers or --actions")
    harness.exit_on_sigterm()
    tmp = tempfile.mkdtemp(prefix="aup-soak-")
    soak, result = None, None
    try:
        with harness.EtcdCluster(3, tmp) as etcd:
            soak = Soak(opts, tmp, etcd)
            soak.run()
            result = check(soak)
    finally:
        if soak:
            soak.stop.set()
            harness.stop_processes([n.proc for n in soak.nodes])
            for n in soak.nodes:
                n.proxy.close()
            if soak.failures:
                for n in soak.nodes:
                    print(f"--- {n.name}:\n{n.text()[-2000:]}")
        if opts.keep:
            shutil.copytree(tmp, opts.keep, dirs_exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
    if result:
        result["failures"] = soak.failures
        print(summary(result), flush=True)
        if opts.report:
            with open(opts.report, "w") as f:
                json.dump(result, f, indent=1)
    print(f"failover soak: {len(soak.failures) if soak else 1} failure(s)")
    sys.exit(1 if not soak or soak.failures else 0)


if __name__ == "__main__":
    main()
