#!/usr/bin/env python3
"""`aup run --listen` under many clients, as docs/architecture.md and docs/protocol.md
promise: every acknowledged event is in the state, each connection's
answers come in its request order and a query reads its connection's
earlier events, misbehaving clients cannot hurt the others, limits hold,
SIGTERM answers what is in flight, and a kill -9 under load loses no
acknowledged event.

usage: server_test.py AUP BANK_MODULE [--clients N] [--events N] [--only NAME]
"""
import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

FAILURES = []


def fail(msg):
    FAILURES.append(msg)
    print("FAIL: " + msg, flush=True)


# How this run's servers serve (--mode): "threads", with I/O threads (two,
# or as many as a case asks for), or "owner", the owner thread serving the
# connections itself (--io-threads 0).
MODE = ["threads"]


class Server:
    """An `aup run --listen` process on a Unix socket (or TCP)."""

    def __init__(self, aup, module, work, extra=(), data=None, tcp=False, env=None):
        extra = list(extra)
        if MODE[0] == "owner":
            if "--io-threads" in extra:
                del extra[extra.index("--io-threads"):extra.index("--io-threads") + 2]
            extra += ["--io-threads", "0"]
        elif "--io-threads" not in extra:
            extra += ["--io-threads", "2"]
        self.sock_path = os.path.join(work, "aup.sock")
        listen = "127.0.0.1:0" if tcp else "unix:" + self.sock_path
        store = ["--memory"] if data is None else ["--data", data]
        self.err_path = os.path.join(work, "server.err")
        self.err = open(self.err_path, "wb")
        self.p = subprocess.Popen([aup, "run", module, "--listen", listen] + store + list(extra),
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.err,
                                  env=None if env is None else dict(os.environ, **env))
        self.address = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.address is None:
            if self.p.poll() is not None:
                raise RuntimeError("the server exited: " + open(self.err_path).read())
            for line in open(self.err_path).read().splitlines():
                if line.startswith("aup: listening on "):
                    self.address = line[len("aup: listening on "):]
            time.sleep(0.02)
        if self.address is None:
            raise RuntimeError("the server did not say where it listens")

    def connect(self):
        if self.address.startswith("unix:"):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(self.address[5:])
        else:
            host, port = self.address.rsplit(":", 1)
            s = socket.create_connection((host, int(port)))
        return s

    def stop(self, sig=signal.SIGTERM, timeout=60):
        self.p.send_signal(sig)
        rc = self.p.wait(timeout=timeout)
        self.err.close()
        return rc

    def stderr(self):
        return open(self.err_path).read()


class Client:
    """One connection: writes lines, reads answer lines."""

    def __init__(self, server):
        self.s = server.connect()
        self.buf = b""

    def send(self, lines):
        self.s.sendall(("\n".join(lines) + "\n").encode())

    def read(self, n, timeout=60):
        self.s.settimeout(timeout)
        out = []
        while len(out) < n:
            nl = self.buf.find(b"\n")
            if nl >= 0:
                out.append(self.buf[:nl].decode())
                self.buf = self.buf[nl + 1:]
                continue
            chunk = self.s.recv(1 << 16)
            if not chunk:
                break
            self.buf += chunk
        return out

    def call(self, lines):
        self.send(lines)
        return self.read(len(lines))

    def close(self):
        self.s.close()


def ok_result(line):
    d = json.loads(line)
    if d.get("ok") is not True:
        raise AssertionError(line)
    return d.get("result")


def setup_accounts(server, n, amount):
    c = Client(server)
    lines = []
    for i in range(n):
        lines.append('{"event":"open","args":{"id":%d,"owner":"o%d"}}' % (i, i))
        if amount:
            lines.append('{"event":"deposit","args":{"id":%d,"amount":%d}}' % (i, amount))
    answers = c.call(lines)
    if len(answers) != len(lines) or any('"ok":true' not in a for a in answers):
        fail("setting up accounts: %s" % answers[:3])
    c.close()


def query(server, name, args=None):
    c = Client(server)
    line = json.dumps({"query": name, "args": args or {}})
    r = ok_result(c.call([line])[0])
    c.close()
    return r


# ---- the cases ---------------------------------------------------------------------


def many_clients(aup, module, work, clients, events):
    """64 clients pipelining transfers and deposits at once; afterwards every
    acknowledged event is in the state and the money adds up."""
    data = os.path.join(work, "store")
    srv = Server(aup, module, work, data=data)
    accounts = 100
    setup_accounts(srv, accounts, 10 ** 9)
    acked_deposits = [0] * clients
    acked_transfers = [0] * clients
    errors = []

    def run(k):
        rng = random.Random(k)
        c = Client(srv)
        sent = 0
        window = 200
        while sent < events:
            lines = []
            kinds = []
            for _ in range(min(window, events - sent)):
                if rng.random() < 0.2:
                    amt = rng.randrange(1, 1000)
                    lines.append('{"event":"deposit","args":{"id":%d,"amount":%d},"id":%d}' %
                                 (rng.randrange(accounts), amt, sent))
                    kinds.append(("d", amt))
                else:
                    a = rng.randrange(accounts)
                    b = (a + 1 + rng.randrange(accounts - 1)) % accounts
                    lines.append('{"event":"transfer","args":{"from":%d,"to":%d,"amount":%d},"id":%d}' %
                                 (a, b, rng.randrange(1, 100), sent))
                    kinds.append(("t", 0))
                sent += 1
            answers = c.call(lines)
            if len(answers) != len(lines):
                errors.append("client %d: %d answers for %d requests" % (k, len(answers), len(lines)))
                return
            for want_id, (kind, amt), a in zip(range(sent - len(lines), sent), kinds, answers):
                d = json.loads(a)
                if d.get("id") != want_id or d.get("ok") is not True:
                    errors.append("client %d: request %d answered %s" % (k, want_id, a))
                    return
                if kind == "d":
                    acked_deposits[k] += amt
                else:
                    acked_transfers[k] += 1
        c.close()

    threads = [threading.Thread(target=run, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for e in errors[:5]:
        fail(e)
    total = query(srv, "total")
    made = query(srv, "transfers_made")
    want_total = accounts * 10 ** 9 + sum(acked_deposits)
    if total["total"] != want_total:
        fail("many clients: total %s, expected %s" % (total["total"], want_total))
    if made != sum(acked_transfers):
        fail("many clients: %s transfers made, %s acknowledged" % (made, sum(acked_transfers)))
    rc = srv.stop()
    if rc != 0:
        fail("many clients: exit %d after SIGTERM: %s" % (rc, srv.stderr()))
    # The same after a restart: everything acknowledged was durable.
    rc2, out = run_stdin(aup, module, data, ['{"query":"total"}', '{"query":"transfers_made"}'])
    if rc2 != 0 or ok_result(out[0])["total"] != want_total or ok_result(out[1]) != made:
        fail("many clients: the restarted store differs: %s" % out)
    print("many clients: %d clients x %d events, %d transfers, total %d: all acknowledged events present" %
          (clients, events, made, want_total))


def run_stdin(aup, module, data, lines):
    r = subprocess.run([aup, "run", module, "--data", data], input=("\n".join(lines) + "\n").encode(),
                       capture_output=True, timeout=120)
    return r.returncode, r.stdout.decode().splitlines()


def order_and_read_your_writes(aup, module, work, clients, events):
    """Each client owns an account: deposits, each followed (pipelined) by a
    balance query that must show every deposit before it and none after."""
    srv = Server(aup, module, work, extra=["--io-threads", "3"])
    setup_accounts(srv, clients, 0)
    errors = []

    def run(k):
        rng = random.Random(100 + k)
        c = Client(srv)
        balance = 0
        expect = []
        lines = []
        for i in range(events // 4):
            amt = rng.randrange(1, 50)
            balance += amt
            lines.append('{"event":"deposit","args":{"id":%d,"amount":%d}}' % (k, amt))
            expect.append(("deposit", balance))
            if rng.random() < 0.5:
                lines.append('{"query":"balance","args":{"id":%d},"id":"q%d"}' % (k, i))
                expect.append(("query", balance))
        for at in range(0, len(lines), 300):
            answers = c.call(lines[at:at + 300])
            for (kind, want), a in zip(expect[at:at + 300], answers):
                r = ok_result(a)
                got = r["balance"] if kind == "deposit" else r
                if got != want:
                    errors.append("client %d: %s answered %s, expected %s" % (k, kind, a, want))
                    return
        c.close()

    threads = [threading.Thread(target=run, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for e in errors[:5]:
        fail(e)
    srv.stop()
    print("order and read-your-writes: %d clients, answers in order, every query saw its own deposits" % clients)


def misbehaving_clients(aup, module, work):
    """Garbage, half lines then a disconnect, huge lines, a client that never
    reads, thousands of connects: the well-behaved client loses nothing."""
    srv = Server(aup, module, work, extra=["--max-line", "4096", "--max-pending", "64", "--max-output", "65536"])
    setup_accounts(srv, 2, 0)
    good = Client(srv)
    stop = threading.Event()
    acked = [0]

    def steady():
        while not stop.is_set():
            a = good.call(['{"event":"deposit","args":{"id":0,"amount":1}}'] * 20)
            for x in a:
                if '"ok":true' not in x:
                    fail("misbehaving: the good client got %s" % x)
                    return
            acked[0] += len(a)

    t = threading.Thread(target=steady)
    t.start()
    # Garbage and bad requests, answered in order.
    c = Client(srv)
    got = c.call(["not json", "{}", '{"event":"nope"}', '{"query":"balance","args":{"id":"x"}}', "[1,2]",
                  '{"query":"total"}'])
    codes = [json.loads(a).get("error", {}).get("code") for a in got]
    if codes != ["bad_request", "bad_request", "unknown_event", "bad_args", "bad_request", None]:
        fail("misbehaving: garbage answered %s" % got)
    c.close()
    # A huge line: answered bad_request, the next line read normally.
    c = Client(srv)
    c.s.sendall(b'{"query":"total","pad":"' + b"x" * 100000 + b'"}\n{"query":"total"}\n')
    got = c.read(2)
    if len(got) != 2 or "line longer than 4096 bytes" not in got[0] or '"ok":true' not in got[1]:
        fail("misbehaving: huge line answered %s" % [g[:100] for g in got])
    c.close()
    # Half a line, then gone; events sent by clients that leave still commit.
    for _ in range(50):
        c = Client(srv)
        c.s.sendall(b'{"event":"deposit","args":{"id":1,"amount":1}}\n{"event":"depo')
        c.close()
    # A client that sends and never reads: back-pressured, never fatal.
    hog = srv.connect()
    hog.setblocking(False)
    big = ('{"query":"accounts_all"}\n' * 2000).encode()
    sent = 0
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        try:
            sent += hog.send(big)
        except BlockingIOError:
            time.sleep(0.05)
    # Thousands of connects and disconnects.
    for _ in range(2000):
        s = srv.connect()
        s.close()
    time.sleep(0.5)
    stop.set()
    t.join()
    # The server may not have seen all 2000 closes yet (on a loaded machine,
    # under the sanitizers): until it has, a new connection past the limit is
    # rightly answered "too many connections". Wait for it to catch up.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        c = Client(srv)
        got = c.call(['{"query":"total"}'])[0]
        c.close()
        if "too many connections" not in got:
            break
        time.sleep(0.2)
    if acked[0] == 0:
        fail("misbehaving: the good client got nothing done")
    # The departed clients' complete deposits all committed.
    bal = query(srv, "balance", {"id": 1})
    if bal != 50:
        fail("misbehaving: account 1 holds %s, expected 50 (each departed client's whole line)" % bal)
    bal0 = query(srv, "balance", {"id": 0})
    if bal0 != acked[0]:
        fail("misbehaving: account 0 holds %s, the good client had %d acknowledged" % (bal0, acked[0]))
    hog.close()
    rc = srv.stop()
    if rc != 0:
        fail("misbehaving: exit %d" % rc)
    print("misbehaving clients: garbage, a 100 kB line, 50 half lines, a hog that sent %d kB and never read, "
          "2000 connects: the good client had %d events acknowledged, all present" % (sent // 1024, acked[0]))


def limits(aup, module, work):
    """The connection limit, the socket's mode, TCP on loopback, and a
    listener that cannot start."""
    srv = Server(aup, module, work, extra=["--max-connections", "3"])
    mode = os.stat(srv.sock_path).st_mode & 0o777
    if mode != 0o600:
        fail("limits: the socket's mode is %o, expected 600" % mode)
    keep = [Client(srv) for _ in range(3)]
    for c in keep:
        ok_result(c.call(['{"query":"total"}'])[0])
    extra = Client(srv)
    got = extra.read(1, timeout=10)
    if not got or '"code":"unavailable"' not in got[0] or "too many connections (the limit is 3)" not in got[0]:
        fail("limits: a fourth connection was answered %s" % got)
    keep[0].close()
    time.sleep(0.2)
    again = Client(srv)
    if '"ok":true' not in again.call(['{"query":"total"}'])[0]:
        fail("limits: a connection after one closed was not served")
    # A second server on the same socket path is refused.
    r = subprocess.run([aup, "run", module, "--memory", "--listen", "unix:" + srv.sock_path],
                       capture_output=True, text=True, timeout=30)
    if r.returncode != 2 or "is in use by another server" not in r.stderr:
        fail("limits: a second server on the socket: exit %d %s" % (r.returncode, r.stderr))
    srv.stop()
    if os.path.exists(srv.sock_path):
        fail("limits: the socket file was left behind")
    tcp = Server(aup, module, work, tcp=True)
    if not tcp.address.startswith("127.0.0.1:"):
        fail("limits: TCP listens on %s, expected loopback" % tcp.address)
    c = Client(tcp)
    if '"ok":true' not in c.call(['{"query":"total"}'])[0]:
        fail("limits: TCP does not answer")
    c.close()
    tcp.stop()
    for bad in ["unix:", "nonsense", "127.0.0.1:99999"]:
        r = subprocess.run([aup, "run", module, "--memory", "--listen", bad], capture_output=True, text=True,
                           timeout=30)
        if r.returncode != 2 or "--listen" not in r.stderr:
            fail("limits: --listen %s: exit %d %s" % (bad, r.returncode, r.stderr))
    print("limits: connection limit answered, socket 0600 and removed at exit, TCP on loopback, bad addresses refused")


def failed_commit(aup, module, work):
    """An event and a query in one send, the batch's commit failing: the
    event is answered `unavailable`, and the query reads the state before
    it, never the event that was undone."""
    data = os.path.join(work, "store-failed")
    rc, out = run_stdin(aup, module, data, ['{"event":"open","args":{"id":1,"owner":"ann"}}',
                                            '{"event":"deposit","args":{"id":1,"amount":100}}'])
    if rc != 0:
        fail("failed commit: seeding the store: exit %d" % rc)
    srv = Server(aup, module, work, data=data, env={"AUP_FAULTS": "fail:fdatasync:1:EIO"})
    c = Client(srv)
    got = c.call(['{"event":"deposit","args":{"id":1,"amount":5},"id":"d"}',
                  '{"query":"balance","args":{"id":1},"id":"q"}'])
    c.close()
    srv.stop()
    if len(got) != 2 or '"code":"unavailable"' not in got[0] or '"id":"d"' not in got[0]:
        fail("failed commit: the event is answered unavailable: %s" % got)
    elif got[1] != '{"id":"q","ok":true,"result":100}':
        fail("failed commit: the query reads the state before the event: %s" % got)
    else:
        print("failed commit: event unavailable, the query after it read the state before it")


def sigterm_in_flight(aup, module, work):
    """SIGTERM while events stream in: whatever was answered is durable, the
    server exits 0, and nothing answered is missing after a restart."""
    data = os.path.join(work, "store-term")
    srv = Server(aup, module, work, data=data)
    setup_accounts(srv, 2, 0)
    c = Client(srv)
    acked = [0]

    def reader():
        while True:
            try:
                got = c.read(1, timeout=30)
            except OSError:  # reset: the server closed with our lines unread
                return
            if not got:
                return
            if '"ok":true' in got[0]:
                acked[0] += 1

    t = threading.Thread(target=reader)
    t.start()
    try:
        for _ in range(200):
            c.send(['{"event":"deposit","args":{"id":0,"amount":1}}'] * 50)
    except OSError:
        pass
    rc = srv.stop()
    t.join()
    if rc != 0:
        fail("sigterm: exit %d: %s" % (rc, srv.stderr()))
    rc2, out = run_stdin(aup, module, data, ['{"query":"balance","args":{"id":0}}'])
    held = ok_result(out[0])
    if held < acked[0]:
        fail("sigterm: %d deposits acknowledged, %d in the store" % (acked[0], held))
    print("sigterm: %d deposits acknowledged before the exit, %d in the store, exit 0" % (acked[0], held))


def kill9_under_load(aup, module, work, kills):
    """kill -9 of the server under socket load: every acknowledged event
    survives the restart."""
    data = os.path.join(work, "store-kill")
    srv = Server(aup, module, work, data=data)
    setup_accounts(srv, 8, 0)
    srv.stop()
    acked_total = [0] * 8
    rng = random.Random(7)
    for round_ in range(kills):
        srv = Server(aup, module, work, data=data)
        acked = [0] * 8
        done = threading.Event()

        def run(k):
            try:
                c = Client(srv)
                while not done.is_set():
                    got = c.call(['{"event":"deposit","args":{"id":%d,"amount":1}}' % k] * 25)
                    acked[k] += sum(1 for a in got if '"ok":true' in a)
                    if len(got) < 25:
                        return
            except OSError:
                return

        threads = [threading.Thread(target=run, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        time.sleep(rng.uniform(0.1, 0.5))
        srv.p.kill()
        srv.p.wait()
        srv.err.close()
        done.set()
        for t in threads:
            t.join()
        for k in range(8):
            acked_total[k] += acked[k]
        lines = ['{"query":"balance","args":{"id":%d}}' % k for k in range(8)]
        rc, out = run_stdin(aup, module, data, lines)
        if rc != 0:
            fail("kill -9: the store does not reopen: %s" % out)
            return
        for k in range(8):
            held = ok_result(out[k])
            if held < acked_total[k]:
                fail("kill -9 round %d: account %d has %d deposits acknowledged, %d in the store" %
                     (round_ + 1, k, acked_total[k], held))
            acked_total[k] = held  # unanswered ones may have committed: carry on from what is there
    print("kill -9 under load: %d kills, every acknowledged deposit present" % kills)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("aup")
    ap.add_argument("module")
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--events", type=int, default=2000)
    ap.add_argument("--kills", type=int, default=4)
    ap.add_argument("--only")
    ap.add_argument("--mode", choices=["threads", "owner"], default="threads")
    a = ap.parse_args()
    MODE[0] = a.mode
    cases = {
        "many": lambda w: many_clients(a.aup, a.module, w, a.clients, a.events),
        "order": lambda w: order_and_read_your_writes(a.aup, a.module, w, min(a.clients, 32), a.events),
        "misbehaving": lambda w: misbehaving_clients(a.aup, a.module, w),
        "limits": lambda w: limits(a.aup, a.module, w),
        "failed_commit": lambda w: failed_commit(a.aup, a.module, w),
        "sigterm": lambda w: sigterm_in_flight(a.aup, a.module, w),
        "kill9": lambda w: kill9_under_load(a.aup, a.module, w, a.kills),
    }
    for name, case in cases.items():
        if a.only and name != a.only:
            continue
        work = tempfile.mkdtemp(prefix="aup-server-")
        try:
            case(work)
        except Exception as e:  # a case that crashed is a failure, and the others still run
            fail("%s: %s: %s" % (name, type(e).__name__, e))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    if FAILURES:
        print("%d failures" % len(FAILURES))
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
