#!/usr/bin/env python3
"""A cluster whose primary etcd elects (runtime/cluster.h,
docs/replication.md, "A cluster with etcd"), against a real etcd on this
machine: three aup nodes with --sync-replicas 1 and a 2 s lease.

  - one node leads, the others follow; `aup call` given every node's
    address reaches the primary, following `not_primary`;
  - kill -9 of the primary: a replica the sync key named takes over within
    the lease and a few seconds, holding every answered event; the killed
    node, started again, follows the new primary;
  - a primary paused (SIGSTOP) past its lease: another takes over, and the
    event it read while paused is not answered ok once it runs again
    (it steps down and follows);
  - the primary and its synchronous replica killed at once: the third node,
    not named synchronous, does not take over; the synchronous one, back,
    does;
  - etcd stopped: the primary answers no event once its lease may have run
    out, the replicas still answer queries; etcd back, events are answered
    again;
  - at the end every node holds the same rows;
  - --sync-replicas 0 (a cluster of its own): two replicas started again
    while the primary is paused, so neither catches up with it, do not
    take over when its lease ends, until the cluster has had no primary
    for 3 TTLs; then one does, the paused primary steps down when it
    runs again, and a replica that caught up with the new one takes over
    from it.

usage: cluster_test.py AUP ROOT
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

TTL = 2
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg, flush=True)


class Node:
    """An aup node of the cluster, on a loopback port."""

    def __init__(self, aup, module, tmp, name, port, etcd_endpoints, cluster="bank", sync=1):
        self.name, self.port = name, port
        self.address = f"127.0.0.1:{port}"
        self.data = os.path.join(tmp, name)
        self.log = os.path.join(tmp, name + ".log")
        self.args = [aup, "run", module, "--data", self.data, "--listen", self.address, "--keys", "100000",
                     "--cluster", f"etcd://{','.join(etcd_endpoints)}/{cluster}", "--node", name, "--advertise",
                     self.address, "--lease-ttl", str(TTL), "--sync-replicas", str(sync), "--sync-timeout", "2"]
        self.proc = None
        self.start()

    def start(self):
        self.proc = harness.Process(self.args, self.log)

    def text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def leads(self):
        return harness.says_it_leads(self.text())


def ask(address, obj, timeout=5):
    try:
        with socket.create_connection(address.rsplit(":", 1), timeout=timeout) as s:
            s.sendall((json.dumps(obj) + "\n").encode())
            f = s.makefile()
            line = f.readline()
            return json.loads(line) if line else None
    except OSError:
        return None


def call(aup, nodes, *words):
    r = subprocess.run([aup, "call", ",".join(n.address for n in nodes), *words], capture_output=True, text=True,
                       timeout=30)
    try:
        return json.loads(r.stdout.strip().splitlines()[-1]) if r.stdout.strip() else None
    except json.JSONDecodeError:
        return None


def leader(nodes, timeout=15):
    found = []
    harness.wait_until(lambda: found.extend(n for n in nodes if n.proc.running() and n.leads()) or found, timeout)
    return found[0] if found else None


def sync_nodes(etcd):
    try:
        kv = harness.etcd_get(etcd.client_endpoints()[0], "/aup/bank/sync")
    except (harness.EtcdError, OSError):
        return []
    return json.loads(kv)["nodes"] if kv else []


def dump(aup, node):
    r = subprocess.run([aup, "replay", "--data", node.data, "--dump", "accounts"], capture_output=True, text=True,
                       timeout=60)
    return r.stdout if r.returncode == 0 else "replay failed: " + r.stderr


def same_everywhere(aup, nodes, timeout=20):
    return harness.wait_until(lambda: len({dump(aup, n) for n in nodes}) == 1, timeout)


def elect_and_follow(aup, nodes, etcd):
    p = leader(nodes)
    if not p:
        fail("no node leads: " + " | ".join(n.text()[-400:] for n in nodes))
        return None
    for i in range(1, 6):
        a = call(aup, nodes, "open", f"id={i}", f"owner=o{i}")
        if not a or not a.get("ok") or "save" not in a:
            fail(f"open {i} through every node's address: {a}")
    a = ask([n for n in nodes if n is not p][0].address, {"event": "deposit", "args": {"id": 1, "amount": 5}})
    if not a or a["error"]["code"] != "not_primary" or a["error"].get("primary") != p.address:
        fail(f"an event sent to a replica: {a}")
    if not harness.wait_until(lambda: p.name in sync_nodes(etcd) and len(sync_nodes(etcd)) == 2, 10):
        fail(f"the sync key names the primary and one replica: {sync_nodes(etcd)}")
    status(aup, etcd, p, nodes)
    return p


def status(aup, etcd, p, nodes):
    """`aup cluster status`, --json and not, says that p leads and every
    other node follows it caught up, each at the primary's save (within
    10 s: a node just started catches up first)."""
    problems = []

    def good():
        problems[:] = status_problems(aup, etcd, p, nodes)
        return not problems
    if not harness.wait_until(good, 10, 0.2):
        fail("aup cluster status: " + "; ".join(problems))


def status_problems(aup, etcd, p, nodes):
    url = f"etcd://{','.join(etcd.client_endpoints())}/bank"
    r = subprocess.run([aup, "cluster", "status", "--cluster", url, "--json"], capture_output=True, text=True,
                       timeout=30)
    try:
        s = json.loads(r.stdout)
    except json.JSONDecodeError:
        return [f"--json: {r.returncode} {r.stdout}{r.stderr}"]
    roles = sorted((n["node"], n.get("role")) for n in s["nodes"])
    want = sorted((n.name, "primary" if n is p else "replica") for n in nodes)
    if r.returncode != 0 or s["primary"] != p.name or roles != want or \
            any(n.get("lag_entries", 1) != 0 for n in s["nodes"] if n.get("role") == "replica"):
        return [f"{r.returncode} {s}"]
    if len({n.get("save") for n in s["nodes"]}) != 1:
        return [f"the nodes, caught up, are not at one save: {s}"]
    r = subprocess.run([aup, "cluster", "status", "--cluster", url], capture_output=True, text=True, timeout=30)
    lines = r.stdout.splitlines()
    if r.returncode != 0 or not lines or not lines[0].startswith(f"cluster bank: primary {p.name} (term ") or \
            len(lines) != 5:
        return [f"{r.returncode} {r.stdout}{r.stderr}"]
    return []


def kill_primary(aup, nodes, etcd, p):
    named = sync_nodes(etcd)
    a = call(aup, nodes, "deposit", "id=2", "amount=7")
    if not a or not a.get("ok"):
        fail(f"a deposit before the kill: {a}")
    t0 = time.monotonic()
    p.proc.kill()
    rest = [n for n in nodes if n is not p]
    q = leader(rest, timeout=TTL + 10)
    took = time.monotonic() - t0
    if not q:
        fail("no node took over after kill -9 of the primary")
        return p
    if q.name not in named:
        fail(f"{q.name} took over, but the sync key named {named}")
    if took > TTL + 5:
        fail(f"the takeover took {took:.1f} s")
    print(f"kill -9: {q.name} leads after {took:.1f} s", flush=True)
    b = call(aup, nodes, "balance", "2")
    if not b or b.get("result") != 7:
        fail(f"the answered deposit on the new primary: {b}")
    p.start()
    if not harness.wait_until(lambda: "following the primary" in p.text().split("--- ")[-1], 15):
        fail(f"the killed primary, started again, does not follow: {p.text()[-600:]}")
    status(aup, etcd, q, nodes)  # no event since the new term began: its primary's save is the term's
    return q


def pause_primary(aup, nodes, etcd, p):
    # A replica named synchronous, to take over (with none, nobody may).
    if not harness.wait_until(lambda: len(sync_nodes(etcd)) == 2, 20):
        fail(f"the new primary names no synchronous replica: {sync_nodes(etcd)}")
    p.proc.pause()
    time.sleep(TTL + 2)
    rest = [n for n in nodes if n is not p]
    q = leader(rest, timeout=10)
    if not q:
        fail("no node took over from a paused primary")
        p.proc.resume()
        return p
    got = {}
    import threading
    t = threading.Thread(target=lambda: got.update(a=ask(p.address, {"event": "deposit",
                                                                      "args": {"id": 3, "amount": 1}}, 15)))
    t.start()
    time.sleep(0.3)
    p.proc.resume()
    t.join()
    a = got.get("a")
    if a and a.get("ok"):
        fail(f"a primary paused past its lease answered an event ok: {a}")
    if not harness.wait_until(lambda: "steps down" in p.text(), 10):
        fail(f"the paused primary did not step down: {p.text()[-600:]}")
    if not harness.wait_until(lambda: "following the primary" in p.text().split("steps down")[-1], 20):
        fail(f"the deposed primary does not follow: {p.text()[-600:]}")
    return q


def kill_both_synchronous(aup, nodes, etcd, p):
    harness.wait_until(lambda: len(sync_nodes(etcd)) == 2, 15)
    named = sync_nodes(etcd)
    r = [n for n in nodes if n.name in named and n is not p]
    other = [n for n in nodes if n.name not in named]
    if len(r) != 1 or len(other) != 1:
        fail(f"the sync key {named} does not name the primary and one replica")
        return p
    r = r[0]
    p.proc.kill()
    r.proc.kill()
    time.sleep(TTL * 2 + 2)
    if other[0].leads():
        fail(f"{other[0].name}, not named synchronous, took over")
    r.start()
    q = leader([r], timeout=TTL + 10)
    if not q:
        fail(f"the synchronous replica, back, does not take over: {r.text()[-600:]}")
    p.start()
    return q or p


def etcd_gone(aup, nodes, etcd, p):
    etcd.stop(0)
    time.sleep(TTL + 1)
    a = ask(p.address, {"event": "deposit", "args": {"id": 4, "amount": 1}}, 10)
    if a and a.get("ok"):
        fail(f"a primary cut off from etcd answered an event ok: {a}")
    for n in nodes:
        if n is not p and n.proc.running():
            b = ask(n.address, {"query": "balance", "args": {"id": 2}})
            if not b or not b.get("ok"):
                fail(f"{n.name} answers no query while etcd is gone: {b}")
    etcd.restart(0)
    q = leader(nodes, timeout=30)
    answers = []
    if q:
        harness.wait_until(lambda: answers.append(call(aup, nodes, "deposit", "id=5", "amount=1")) or
                           (answers[-1] or {}).get("ok"), 30)
    if not answers or not (answers[-1] or {}).get("ok"):
        fail(f"no event answered after etcd came back: {answers[-3:]}")


def laggards(aup, module, tmp, etcd):
    ports = harness.free_ports(3)
    nodes = []
    for i in range(3):
        nodes.append(Node(aup, module, tmp, f"k{i + 1}", ports[i], etcd.client_endpoints(), "lag", 0))
        time.sleep(0.3)
    try:
        p = leader(nodes)
        if not p or not (call(aup, nodes, "open", "id=1", "owner=a") or {}).get("ok"):
            fail(f"K = 0: no primary answers: {[n.text()[-300:] for n in nodes]}")
            return
        rest = [n for n in nodes if n is not p]
        for n in rest:
            n.proc.kill()
        p.proc.pause()
        t0 = time.monotonic()
        for n in rest:
            n.start()
        time.sleep(TTL * 3 - 0.5)  # the lease ends at about TTL; the laggards wait 3 TTLs more
        early = [n.name for n in rest if n.leads()]
        if early or not all("has not caught up with the primary it followed" in n.text() for n in rest):
            fail(f"K = 0: replicas behind the paused primary: {early} took over {time.monotonic() - t0:.1f} s "
                 f"after the pause: {[n.text()[-400:] for n in rest]}")
        q = leader(rest, timeout=TTL * 4 + 10)
        if not q:
            fail(f"K = 0: no replica took over after 3 TTLs without a primary: {[n.text()[-400:] for n in rest]}")
            return
        p.proc.resume()
        # The old primary's log says it leads until, running again, it
        # finds its lease gone and steps down (its next tick): until then
        # leader() below would take it for the cluster's primary.
        if not harness.wait_until(lambda: "steps down" in p.text(), 10):
            fail(f"K = 0: the paused primary {p.name} did not step down: {p.text()[-400:]}")
        r = [n for n in rest if n is not q][0]
        if not harness.wait_until(lambda: "caught up with the primary" in r.text().split("--- ")[-1], 20):
            fail(f"K = 0: {r.name} does not catch up with {q.name}: {r.text()[-400:]}")
        q.proc.kill()
        s = leader([n for n in nodes if n is not q], timeout=TTL * 4 + 10)
        # (Not timed: under the sanitizers a node started again may still
        # be catching up, and then waits its 3 TTLs as it should.)
        if not s or "caught up with the primary" not in s.text().split("--- ")[-1]:
            fail(f"K = 0: no replica that caught up took over from {q.name}: {s and s.text()[-400:]}")
    finally:
        harness.stop_processes([n.proc for n in nodes])


def main():
    aup = sys.argv[1]
    harness.exit_on_sigterm()
    tmp = tempfile.mkdtemp(prefix="aup-cluster-")
    module = os.path.join(sys.argv[2], "examples", "bank", "bank.aup")
    nodes = []
    try:
        with harness.EtcdCluster(1, tmp) as etcd:
            ports = harness.free_ports(3)
            for i in range(3):
                nodes.append(Node(aup, module, tmp, f"n{i + 1}", ports[i], etcd.client_endpoints()))
                time.sleep(0.3)
            p = elect_and_follow(aup, nodes, etcd)
            if p:
                p = kill_primary(aup, nodes, etcd, p)
                p = pause_primary(aup, nodes, etcd, p)
                p = kill_both_synchronous(aup, nodes, etcd, p)
                etcd_gone(aup, nodes, etcd, p)
                if not same_everywhere(aup, nodes):
                    fail("the nodes' rows differ at the end")
            harness.stop_processes([n.proc for n in nodes])
            laggards(aup, module, tmp, etcd)
    finally:
        harness.stop_processes([n.proc for n in nodes if n.proc])
        if failures:
            for n in nodes:
                print(f"--- {n.name}:\n{n.text()[-1500:]}")
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"cluster: {len(failures)} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
