#!/usr/bin/env python3
"""Retries that never apply twice (runtime/keys.h), end to end: clients that
send every deposit with its idempotency key and send it again, key and all,
after every disconnect of their own (a connection closed before its answer
came), every `unavailable` and every kill -9 of the server, until it is
answered ok. The server is killed at random and restarted throughout.

Each client owns one account and sends its deposits one after another, so
the balance after its i-th deposit is the sum of its first i amounts. Every
answer must say exactly that (a retry of an applied deposit is answered the
first answer, not applied again), and at the end every account must hold
each of its client's deposits exactly once: the balance the sum of them
all, the count their number.

usage: keys_retry_test.py AUP ROOT [--seconds S]
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
record Account { id: num, balance: num, n: num }
table accounts: Account key id
event open { id: num }
on open { accounts.add(Account { id: open.id, balance: 0, n: 0 }) }
event deposit { id: num, amount: num }
on deposit {
  let a = accounts[deposit.id]
  a.balance = a.balance + deposit.amount
  a.n = a.n + 1
  return a.balance
}
query account(id: num) { return accounts[id] }
"""
CLIENTS = 4
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
        # Tiny segments and checkpoint thresholds: the keys go through log
        # entries, images and released segments while clients retry.
        self.p = subprocess.Popen(
            [aup, "run", module, "--data", data, "--listen", "unix:" + sock, "--keys", "100000",
             "--segment-size", "4096", "--image-min", "512", "--log-min", "2048"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
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

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(30)
        self.p.stderr.close()


class Client(threading.Thread):
    """Deposits to its own account, each sent until answered ok."""

    def __init__(self, number, sock, seed):
        super().__init__(daemon=True)
        self.account = number + 1
        self.sock_path = sock
        self.rng = random.Random(seed)
        self.amounts = []  # every deposit answered ok, in order
        self.resent = 0
        self.stop = False
        self.conn = None

    def connect(self):
        deadline = time.time() + 60
        while time.time() < deadline:
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(self.sock_path)
                self.conn = (s, s.makefile("rb"))
                return True
            except OSError:
                s.close()
                time.sleep(0.01)
        fail(f"client {self.account}: no server for 60 s")
        return False

    def drop(self):
        if self.conn:
            self.conn[0].close()
            self.conn = None

    def attempt(self, line):
        """One send: the answer, or None when the connection went (or this
        client dropped it on purpose before the answer)."""
        if not self.conn and not self.connect():
            raise SystemExit
        s, f = self.conn
        try:
            s.sendall(line)
            if self.rng.random() < 0.1:
                self.drop()  # gone before its answer: was it applied?
                return None
            answer = f.readline()
        except OSError:
            answer = b""
        if not answer:
            self.drop()
            return None
        return json.loads(answer)

    def deposit(self, i, amount):
        key = f"c{self.account}-{i}"
        line = json.dumps({"event": "deposit", "args": {"id": self.account, "amount": amount},
                           "key": key}).encode() + b"\n"
        tries = 0
        # Not `while not self.stop`: a deposit perhaps applied is sent until
        # answered, so the client's record is exact when it stops.
        while True:
            tries += 1
            answer = self.attempt(line)
            if answer is None:
                continue
            if answer.get("ok"):
                expected = sum(self.amounts) + amount
                if answer.get("result") != expected:
                    fail(f"{key}: answered {answer}, the balance after it is {expected}")
                self.amounts.append(amount)
                self.resent += tries - 1
                return True
            code = answer.get("error", {}).get("code")
            if code != "unavailable":
                fail(f"{key}: answered {answer} (attempt {tries})")
                return False

    def run(self):
        i = 0
        while not self.stop:
            if not self.deposit(i, self.rng.randint(1, 100)):
                return
            i += 1
        self.drop()


def call(sock, request):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall(json.dumps(request).encode() + b"\n")
    line = s.makefile("rb").readline()
    s.close()
    return json.loads(line)


def main():
    aup = sys.argv[1]
    seconds = float(sys.argv[sys.argv.index("--seconds") + 1]) if "--seconds" in sys.argv else 8.0
    rng = random.Random(11)
    with tempfile.TemporaryDirectory(prefix="aup-keys-retry-") as tmp:
        module = os.path.join(tmp, "retry.aup")
        with open(module, "w") as f:
            f.write(MODULE)
        data, sock = os.path.join(tmp, "store"), os.path.join(tmp, "s")
        server = Server(aup, module, data, sock)
        for c in range(CLIENTS):
            assert call(sock, {"event": "open", "args": {"id": c + 1}})["ok"]
        clients = [Client(c, sock, 100 + c) for c in range(CLIENTS)]
        for c in clients:
            c.start()
        kills = 0
        end = time.time() + seconds
        while time.time() < end:
            time.sleep(rng.uniform(0.2, 0.8))
            server.kill()
            kills += 1
            server = Server(aup, module, data, sock)
        # Every client finishes the deposit it is on (the server stays up
        # now), then stops.
        for c in clients:
            c.stop = True
        for c in clients:
            c.join(60)
            if c.is_alive():
                fail(f"client {c.account} did not finish")
        for c in clients:
            got = call(sock, {"query": "account", "args": {"id": c.account}})["result"]
            if got["balance"] != sum(c.amounts) or got["n"] != len(c.amounts):
                fail(f"account {c.account}: holds {got}, its client's deposits answered ok: "
                     f"{len(c.amounts)} summing to {sum(c.amounts)}")
        server.stop()
        deposits = sum(len(c.amounts) for c in clients)
        resent = sum(c.resent for c in clients)
        print(f"{deposits} deposits by {CLIENTS} clients, {resent} sent again, {kills} kill -9s of the server; "
              f"{len(failures)} failures")
        if resent == 0 or kills == 0:
            fail("nothing was retried: the test tested nothing")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
