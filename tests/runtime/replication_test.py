#!/usr/bin/env python3
"""Static replication (runtime/shipper.h, runtime/follower.h,
docs/replication.md): a primary `aup run --listen` and replicas started
with `--replica-of`, each case checked by what the nodes answer and by
`aup replay --dump` of their stores:

  - catching up from the primary's log, then following it live, indexes
    included (a query through an index answers alike on both);
  - events sent to a replica: `not_primary`, naming the primary (421 over
    HTTP);
  - a replica killed with -9 under load and started again goes on from
    its own save;
  - a replica whose module differs is refused, every difference named;
  - a replica ahead of its primary is refused;
  - `replicate` anywhere but as a connection's first request to a primary;
  - a replica's store refuses `aup run` without --replica-of, and `aup
    promote` makes it a primary in a new term; the old primary, which
    answered events of its own meanwhile, follows it after cutting those
    entries off its log (kept in a side file, storage/cut.h);
  - a primary whose checkpoints released its log sends a new replica a
    copy of its store (storage/copy.h), which it installs and follows on
    from; so does one whose replica's images cover entries the primary
    does not hold;
  - --sync-replicas 1: an event is answered once a replica holds it too,
    with its save; with no replica connected it waits --sync-timeout and
    is answered `unavailable`, perhaps written; a query with `after` on a
    replica reads the write it names, and one after a save never reached
    is answered `unavailable` after --after-timeout; a lone node's answers
    carry no save. Both --io-threads 0 and 2.
  - --sync-replicas 1, a replica that connects again holding the primary's
    last save (here: the primary restarted) counts for it at once: a retry
    answered from its idempotency key, which writes no entry, is answered
    ok, not `unavailable` after the timeout.

usage: replication_test.py AUP ROOT
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

MODULE = """
record Account { id: num, owner: text, n: num }
table accounts: Account key id
index by_owner on accounts (owner)
event open { id: num, owner: text }
on open { accounts.add(Account { id: open.id, owner: open.owner, n: 0 }) }
event deposit { id: num }
on deposit { accounts[deposit.id].n = accounts[deposit.id].n + 1 }
event rename { id: num, owner: text }
on rename { accounts[rename.id].owner = rename.owner }
event close { id: num }
on close { accounts.remove(close.id) }
query owned(owner: text) {
  let s = 0
  for a in accounts.by_owner[owner] { s = s + a.id * 1000 + a.n }
  return s
}
"""
# The same module with one more field: a replica of it is refused.
OTHER = MODULE.replace("record Account { id: num, owner: text, n: num }",
                       "record Account { id: num, owner: text, n: num, extra: num = 0 }")

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg, flush=True)


class Node:
    """An `aup run` serving a store on a Unix socket (and HTTP when asked)."""

    def __init__(self, aup, module, data, sock, replica_of=None, http_port=None, extra=(), segment=65536):
        self.sock, self.data = sock, data
        args = [aup, "run", module, "--data", data, "--listen", "unix:" + sock, "--segment-size", str(segment),
                *extra]
        if http_port:
            args += ["--listen", f"http://127.0.0.1:{http_port}"]
        if replica_of:
            args += ["--replica-of", "unix:" + replica_of]
        self.err_path = data + ".err"
        self.err = open(self.err_path, "a")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.err)
        deadline = time.time() + 30
        while time.time() < deadline and not os.path.exists(sock):
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)

    def stderr(self):
        with open(self.err_path) as f:
            return f.read()

    def wait_for(self, text, seconds=15):
        deadline = time.time() + seconds
        while time.time() < deadline:
            if text in self.stderr():
                return True
            time.sleep(0.05)
        return False

    def kill(self, sig=signal.SIGKILL):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=30)
            if sig == signal.SIGTERM and self.proc.returncode != 0:
                fail(f"{self.data}: exit {self.proc.returncode} after SIGTERM: {self.stderr()}")
        self.err.close()
        if sig == signal.SIGKILL and os.path.exists(self.sock):
            os.unlink(self.sock)


class Client:
    def __init__(self, sock):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(sock)
        self.f = self.s.makefile("rw")

    def ask(self, obj):
        self.f.write(json.dumps(obj) + "\n")
        self.f.flush()
        line = self.f.readline()
        return json.loads(line) if line else None

    def close(self):
        self.s.close()


def dump(aup, data):
    r = subprocess.run([aup, "replay", "--data", data, "--dump", "accounts"], capture_output=True, text=True,
                       timeout=60)
    if r.returncode != 0:
        return f"replay failed: {r.stderr}"
    return r.stdout


def same_in_time(aup, a, b, seconds=15):
    """Whether the stores a and b come to hold the same rows."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if dump(aup, a) == dump(aup, b):
            return True
        time.sleep(0.1)
    return False


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def catch_up_and_follow(aup, tmp, module):
    p = Node(aup, module, os.path.join(tmp, "p"), os.path.join(tmp, "p.sock"))
    c = Client(p.sock)
    for i in range(1, 21):
        c.ask({"event": "open", "args": {"id": i, "owner": "o%d" % (i % 3)}})
    for k in range(200):
        c.ask({"event": "deposit", "args": {"id": 1 + k % 20}})
    port = free_port()
    r = Node(aup, module, os.path.join(tmp, "r"), os.path.join(tmp, "r.sock"), replica_of=p.sock, http_port=port)
    if not r.wait_for("following the primary"):
        fail(f"the replica did not start following: {r.stderr()}")
    # Live: renames and closes move rows within and out of the index.
    for i in range(1, 21, 4):
        c.ask({"event": "rename", "args": {"id": i, "owner": "moved"}})
    c.ask({"event": "close", "args": {"id": 2}})
    for k in range(300):
        c.ask({"event": "deposit", "args": {"id": 1 + k % 20 if k % 20 != 1 else 3}})
    if not same_in_time(aup, p.data, r.data):
        fail("the replica's rows differ from the primary's after following it")
    rc = Client(r.sock)
    for owner in ("o0", "o1", "o2", "moved"):
        want, got = c.ask({"query": "owned", "args": {"owner": owner}}), rc.ask(
            {"query": "owned", "args": {"owner": owner}})
        if want != got:
            fail(f"owned({owner}) through the index: primary {want}, replica {got}")
    # Events on a replica: not_primary, naming the primary.
    a = rc.ask({"event": "deposit", "args": {"id": 1}, "id": 7})
    if not a or a.get("ok") or a["error"]["code"] != "not_primary" or ("unix:" + p.sock) not in a["error"]["message"]:
        fail(f"an event sent to the replica: {a}")
    req = urllib.request.Request(f"http://127.0.0.1:{port}/events/deposit", data=b'{"id":1}', method="POST")
    try:
        urllib.request.urlopen(req, timeout=10)
        fail("an event over HTTP to the replica was answered ok")
    except urllib.error.HTTPError as e:
        body = json.loads(e.read())
        if e.code != 421 or body["error"].get("primary") != "unix:" + p.sock:
            fail(f"an event over HTTP to the replica: {e.code} {body}")
    # `aup call` follows the refusal to the primary the replica names.
    r2 = subprocess.run([aup, "call", "unix:" + r.sock, "deposit", "id=1"], capture_output=True, text=True,
                        timeout=30)
    if r2.returncode != 0 or json.loads(r2.stdout) != {"ok": True}:
        fail(f"aup call of an event to a replica, followed to the primary: {r2.stdout}{r2.stderr}")
    rc.close()
    return p, c, r


def kill_and_restart(aup, tmp, module, p, c, r):
    stop = threading.Event()

    def load():
        lc = Client(p.sock)
        k = 0
        while not stop.is_set():
            lc.ask({"event": "deposit", "args": {"id": 1 + k % 20 if k % 20 != 1 else 4}})
            k += 1
        lc.close()

    t = threading.Thread(target=load)
    t.start()
    time.sleep(0.5)
    r.kill()
    time.sleep(0.3)
    r = Node(aup, module, r.data, r.sock, replica_of=p.sock)
    time.sleep(0.5)
    stop.set()
    t.join()
    if not same_in_time(aup, p.data, r.data):
        fail(f"after kill -9 and a restart, the replica's rows differ from the primary's: {r.stderr()}")
    return r


def refusals(aup, tmp, module, other, p, c, r):
    # Another module.
    x = Node(aup, other, os.path.join(tmp, "x"), os.path.join(tmp, "x.sock"), replica_of=p.sock)
    if not x.wait_for("differs from the primary's") or "extra" not in x.stderr():
        fail(f"a replica of another module: {x.stderr()}")
    x.kill(signal.SIGTERM)
    # A replica ahead of its primary: a fresh primary, a replica copied from p.
    q = Node(aup, module, os.path.join(tmp, "q"), os.path.join(tmp, "q.sock"))
    ahead = os.path.join(tmp, "ahead")
    shutil.copytree(p.data, ahead, ignore=shutil.ignore_patterns("LOCK", "READERS", "LIVE"))
    y = Node(aup, module, ahead, os.path.join(tmp, "y.sock"), replica_of=q.sock)
    if not y.wait_for("past the primary's last save"):
        fail(f"a replica ahead of its primary: {y.stderr()}")
    y.kill(signal.SIGTERM)
    q.kill(signal.SIGTERM)
    # `replicate` as a later request, and on stdin.
    a = c.ask({"query": "owned", "args": {"owner": "o1"}})
    a = c.ask({"replicate": {"save": 0, "covered": 0, "terms": [], "schema": "", "copy": False}})
    if not a or a.get("ok") or a["error"]["code"] != "bad_request":
        fail(f"replicate as a later request: {a}")
    out = subprocess.run([aup, "run", module, "--memory"], input='{"replicate":{}}\n', capture_output=True, text=True,
                         timeout=30)
    if "`replicate` is a replica's first request" not in out.stdout:
        fail(f"replicate on stdin: {out.stdout}{out.stderr}")


def promote(aup, tmp, module, p, c, r):
    c.close()
    p.kill(signal.SIGTERM)
    r.kill(signal.SIGTERM)
    out = subprocess.run([aup, "run", module, "--data", r.data, "--listen", "unix:" + r.sock], capture_output=True,
                         text=True, timeout=30)
    if out.returncode != 2 or f"is a replica of unix:{p.sock}" not in out.stderr or "aup promote" not in out.stderr:
        fail(f"aup run of a replica's store without --replica-of: {out.returncode} {out.stderr}")
    out = subprocess.run([aup, "promote", "--data", r.data], capture_output=True, text=True, timeout=30)
    if out.returncode != 0 or "it is a primary now, in term 1" not in out.stderr:
        fail(f"aup promote: {out.returncode} {out.stderr}")
    out = subprocess.run([aup, "promote", "--data", r.data], capture_output=True, text=True, timeout=30)
    if out.returncode != 1 or "is not a replica" not in out.stderr:
        fail(f"aup promote of a primary: {out.returncode} {out.stderr}")
    # The promoted store serves; the old primary follows it.
    newp = Node(aup, module, r.data, r.sock)
    if newp.proc.poll() is not None:
        fail(f"the promoted store does not serve: {newp.stderr()}")
        return
    nc = Client(newp.sock)
    a = nc.ask({"event": "deposit", "args": {"id": 1}})
    if not a or not a.get("ok"):
        fail(f"an event on the promoted primary: {a}")
    # Meanwhile the old primary, alone, answers events the new one never
    # sees: they are cut off its log when it follows.
    solo = Node(aup, module, p.data, p.sock)
    sc = Client(solo.sock)
    for i in (5, 6, 7):
        sc.ask({"event": "deposit", "args": {"id": i}})
    sc.close()
    solo.kill(signal.SIGTERM)
    old = Node(aup, module, p.data, p.sock, replica_of=newp.sock)
    if not old.wait_for("cut entries") or not old.wait_for("following the primary"):
        fail(f"the old primary does not cut its entries and follow the new one: {old.stderr()}")
    sides = [n for n in os.listdir(p.data) if n.startswith("cut-")]
    if len(sides) != 1 or sides[0] not in old.stderr():
        fail(f"the side file of the cut entries: {sides}, {old.stderr()}")
    nc.ask({"event": "deposit", "args": {"id": 3}})
    if not same_in_time(aup, newp.data, old.data):
        fail("the old primary's rows differ from the new primary's")
    nc.close()
    old.kill(signal.SIGTERM)
    newp.kill(signal.SIGTERM)


def copy_catch_up(aup, tmp, module):
    # Checkpoints at every commit release the primary's log as it goes.
    quick = ("--image-min", "1", "--log-min", "1")
    p = Node(aup, module, os.path.join(tmp, "cp"), os.path.join(tmp, "cp.sock"), extra=quick, segment=4096)
    c = Client(p.sock)
    for i in range(1, 21):
        c.ask({"event": "open", "args": {"id": i, "owner": "o%d" % (i % 3)}})
    for k in range(300):
        c.ask({"event": "deposit", "args": {"id": 1 + k % 20}})
    r = Node(aup, module, os.path.join(tmp, "cr"), os.path.join(tmp, "cr.sock"), replica_of=p.sock)
    if not r.wait_for("received a copy of the primary's store") or not r.wait_for("following the primary"):
        fail(f"a new replica of a primary whose log was released: {r.stderr()}")
    if "is sent a copy of the store" not in p.stderr():
        fail(f"the primary does not say it sent a copy: {p.stderr()}")
    for k in range(50):
        c.ask({"event": "deposit", "args": {"id": 1 + k % 20}})
    if not same_in_time(aup, p.data, r.data):
        fail(f"the replica made from a copy differs from its primary: {r.stderr()}")
    c.close()
    # The replica is promoted; the old primary answers events alone and
    # checkpoints them into its images: it cannot cut them, and is sent a
    # copy of the new primary's store instead.
    r.kill(signal.SIGTERM)
    p.kill(signal.SIGTERM)
    out = subprocess.run([aup, "promote", "--data", r.data], capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        fail(f"aup promote: {out.stderr}")
    solo = Node(aup, module, p.data, p.sock, extra=quick, segment=4096)
    sc = Client(solo.sock)
    for k in range(40):
        sc.ask({"event": "deposit", "args": {"id": 2}})
    sc.close()
    solo.kill(signal.SIGTERM)
    newp = Node(aup, module, r.data, r.sock)
    old = Node(aup, module, p.data, p.sock, replica_of=newp.sock)
    if not old.wait_for("received a copy") or "cut entries" in old.stderr():
        fail(f"a replica whose images cover entries its primary lacks: {old.stderr()}")
    if not same_in_time(aup, newp.data, old.data):
        fail("the old primary, made from a copy, differs from the new primary")
    old.kill(signal.SIGTERM)
    newp.kill(signal.SIGTERM)


def sync_and_after(aup, tmp, module, io_threads):
    tag = f"s{io_threads}"
    threads = ("--io-threads", str(io_threads))
    p = Node(aup, module, os.path.join(tmp, tag + "p"), os.path.join(tmp, tag + "p.sock"),
             extra=threads + ("--sync-replicas", "1", "--sync-timeout", "1"))
    c = Client(p.sock)
    t0 = time.time()
    a = c.ask({"event": "open", "args": {"id": 1, "owner": "a"}})
    waited = time.time() - t0
    if not a or a.get("ok") or a["error"]["code"] != "unavailable" or \
            not a["error"]["message"].startswith("perhaps written: replicas did not confirm save") or \
            "save" not in a or waited < 0.9:
        fail(f"{tag}: an event with no replica to confirm it: {a} after {waited:.2f} s")
    r = Node(aup, module, os.path.join(tmp, tag + "r"), os.path.join(tmp, tag + "r.sock"), replica_of=p.sock,
             extra=threads + ("--after-timeout", "0.5"))
    if not r.wait_for("following the primary"):
        fail(f"{tag}: the replica does not follow: {r.stderr()}")
    t0 = time.time()
    a = c.ask({"event": "deposit", "args": {"id": 1}})
    if not a or not a.get("ok") or not isinstance(a.get("save"), int) or time.time() - t0 > 0.9:
        fail(f"{tag}: an event a replica confirms: {a} after {time.time() - t0:.2f} s")
        return
    rc = Client(r.sock)
    b = rc.ask({"query": "owned", "args": {"owner": "a"}, "after": a["save"]})
    if not b or b.get("result") != 1001:
        fail(f"{tag}: a query after the save on the replica: {b}")
    t0 = time.time()
    b = rc.ask({"query": "owned", "args": {"owner": "a"}, "after": a["save"] + 1000, "id": 7})
    if not b or b.get("id") != 7 or b.get("ok") or "not yet save" not in b["error"]["message"] or \
            time.time() - t0 < 0.4:
        fail(f"{tag}: a query after a save never reached: {b}")
    b = rc.ask({"query": "owned", "args": {"owner": "a"}})
    if not b or b.get("result") != 1001:
        fail(f"{tag}: the connection goes on after a query that waited: {b}")
    b = rc.ask({"event": "deposit", "args": {"id": 1}, "after": 3})
    if not b or b.get("ok") or "`after` is a query's" not in b["error"]["message"]:
        fail(f"{tag}: `after` on an event: {b}")
    rc.close()
    r.kill(signal.SIGTERM)
    a = c.ask({"event": "deposit", "args": {"id": 1}})
    if not a or a.get("ok") or a["error"]["code"] != "unavailable":
        fail(f"{tag}: an event after the replica went: {a}")
    c.close()
    p.kill(signal.SIGTERM)
    lone = Node(aup, module, os.path.join(tmp, tag + "lone"), os.path.join(tmp, tag + "lone.sock"), extra=threads)
    lc = Client(lone.sock)
    a = lc.ask({"event": "open", "args": {"id": 1, "owner": "a"}})
    if a != {"ok": True}:
        fail(f"{tag}: a lone node's answer: {a}")
    lc.close()
    lone.kill(signal.SIGTERM)


def sync_after_reconnect(aup, tmp, module):
    sync = ("--keys", "100", "--sync-replicas", "1", "--sync-timeout", "1")
    pdata, psock = os.path.join(tmp, "rcp"), os.path.join(tmp, "rcp.sock")
    p = Node(aup, module, pdata, psock, extra=sync)
    r = Node(aup, module, os.path.join(tmp, "rcr"), os.path.join(tmp, "rcr.sock"), replica_of=psock,
             extra=("--keys", "100"))
    if not r.wait_for("caught up with the primary"):
        fail(f"reconnect: the replica does not follow: {r.stderr()}")
    c = Client(p.sock)
    req = {"event": "open", "args": {"id": 5, "owner": "e"}, "key": "open-5"}
    a = c.ask(req)
    c.close()
    if not a or not a.get("ok"):
        fail(f"reconnect: the first answer: {a}")
        return
    p.kill(signal.SIGTERM)
    p = Node(aup, module, pdata, psock, extra=sync)
    deadline = time.time() + 15
    while time.time() < deadline and r.stderr().count("following the primary") < 2:
        time.sleep(0.05)
    c = Client(p.sock)
    t0 = time.time()
    b = c.ask(req)
    waited = time.time() - t0
    c.close()
    if b != a or waited > 0.9:
        fail(f"reconnect: a retry by key after the replica came back holding its save: {b} after {waited:.2f} s "
             f"(first {a})")
    r.kill(signal.SIGTERM)
    p.kill(signal.SIGTERM)


def main():
    aup = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="aup-repl-")
    try:
        module = os.path.join(tmp, "m.aup")
        other = os.path.join(tmp, "other.aup")
        with open(module, "w") as f:
            f.write(MODULE)
        with open(other, "w") as f:
            f.write(OTHER)
        p, c, r = catch_up_and_follow(aup, tmp, module)
        r = kill_and_restart(aup, tmp, module, p, c, r)
        refusals(aup, tmp, module, other, p, c, r)
        promote(aup, tmp, module, p, c, r)
        copy_catch_up(aup, tmp, module)
        for io_threads in (0, 2):
            sync_and_after(aup, tmp, module, io_threads)
        sync_after_reconnect(aup, tmp, module)
    finally:
        subprocess.run(["pkill", "-f", tmp], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"replication: {len(failures)} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
