#!/usr/bin/env python3
"""The failover tests' harness (tests/cluster/harness.py), each behaviour a
named case:

  - etcd: a 1-member and a 3-member cluster start, answer and keep a key
    (put and range through the JSON gateway, on every member); killing the
    raft leader of 3 leaves a new leader and a put that succeeds through
    another member within seconds; restart(i) brings the member back, with
    what was written while it was away; pause(i) silences a member and
    resume(i) brings it back;
  - the proxy: 8 MiB each way over concurrent connections arrive intact
    (SHA-256) and are counted; switching modes mid-stream keeps the bytes'
    order; delay(200) adds 200 ms each way; drop() answers nothing and keeps
    the connection open, then pass_() serves new connections, resets those
    that lost bytes and keeps those that did not; stall() holds bytes and
    delivers them when healed; cut() resets open connections at once and
    serves no new one; a target that refuses makes the client's connection
    reset; an idle proxy takes no CPU;
  - cleanup: after close() and stop_all() no child process, thread or
    listening port remains, and a test ended by SIGTERM leaves no etcd.

usage: harness_test.py   (about 10 s)
"""
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

failures = []
# Everything the cases started, for the last case to check it is gone.
started = {"pids": set(), "ports": set(), "threads": set()}


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg, flush=True)


def info(msg):
    print("  " + msg, flush=True)


def remember_cluster(c):
    started["pids"].update(c.pids())
    started["ports"].update(c.ports())


# --- a local echo server, the proxy's target ---------------------------------

class EchoServer:
    """Echoes every connection's bytes back, then its EOF; counts connections."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.conns = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            self.conns.append(c)
            threading.Thread(target=self._echo, args=(c,), daemon=True).start()

    @staticmethod
    def _echo(c):
        try:
            while True:
                data = c.recv(65536)
                if not data:
                    c.shutdown(socket.SHUT_WR)
                    return
                c.sendall(data)
        except OSError:
            pass
        finally:
            c.close()

    def close(self):
        self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        for c in self.conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.thread.join(5)


def connect(port, timeout_s=5.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def echo_ok(s, payload=b"ping", timeout_s=2.0):
    """Whether payload comes back on s within timeout_s."""
    s.settimeout(timeout_s)
    try:
        s.sendall(payload)
        got = b""
        while len(got) < len(payload):
            chunk = s.recv(len(payload) - len(got))
            if not chunk:
                return False
            got += chunk
        return got == payload
    except OSError:
        return False


def outcome(s, timeout_s):
    """What s sees within timeout_s: "data", "eof", "reset" or "silence"."""
    s.settimeout(timeout_s)
    try:
        return "data" if s.recv(1) else "eof"
    except TimeoutError:
        return "silence"
    except ConnectionError:
        return "reset"


def stream(port, payload, timeout_s=30.0, during=None, pace_s=0.0):
    """Send payload over a new connection to port and read the echo to EOF;
    (sha256 of what came back, its length). during() runs while it flows;
    with pace_s, 16 KiB are sent every pace_s."""
    s = connect(port, timeout_s)
    got = hashlib.sha256()
    length = [0]

    def send():
        step = 16 << 10 if pace_s else len(payload)
        for k in range(0, len(payload), step):
            s.sendall(payload[k:k + step])
            time.sleep(pace_s)
        s.shutdown(socket.SHUT_WR)

    t = threading.Thread(target=send)
    t.start()
    if during:
        during()
    while True:
        chunk = s.recv(1 << 16)
        if not chunk:
            break
        got.update(chunk)
        length[0] += len(chunk)
    t.join()
    s.close()
    return got.hexdigest(), length[0]


# --- etcd --------------------------------------------------------------------

def check_put_get(c, key, value, where):
    rev = harness.etcd_put(c.endpoint(0), key, value)
    if rev < 2:
        fail(f"{where}: put answered revision {rev}")
    for i, ep in enumerate(c.client_endpoints()):
        got = harness.etcd_get(ep, key)
        if got != value.encode():
            fail(f"{where}: member {i} reads {key!r} as {got!r}, not {value!r}")
    if harness.etcd_get(c.endpoint(0), key + "-absent") is not None:
        fail(f"{where}: an absent key reads as present")


def case_etcd_one_member(tmp):
    t0 = time.monotonic()
    with harness.EtcdCluster(1, tmp) as c:
        info(f"1 member up in {time.monotonic() - t0:.2f} s")
        remember_cluster(c)
        if len(c.client_endpoints()) != 1:
            fail(f"one member: endpoints {c.client_endpoints()}")
        if c.leader_index() != 0:
            fail(f"one member: leader_index {c.leader_index()}")
        check_put_get(c, "k1", "v1", "one member")
        pid = c.pids()[0]
    if pid_alive(pid):
        fail(f"one member: etcd {pid} still runs after the context manager")


def case_etcd_three_members(tmp):
    t0 = time.monotonic()
    with harness.EtcdCluster(3, tmp) as c:
        info(f"3 members up in {time.monotonic() - t0:.2f} s")
        remember_cluster(c)
        try:
            three_members_answer(c)
            killed = leader_kill_fails_over(c)
            restart_rejoins(c, killed)
            pause_and_resume(c)
        except Exception:
            fail(f"three members: {traceback.format_exc()}\n{c.log_tails()}")
            raise
        remember_cluster(c)
        # The leader stops last (EtcdCluster.stop_all): stopped with its
        # followers it may wait 7 s for one to take over.
        t0 = time.monotonic()
        c.stop_all()
        took = time.monotonic() - t0
        info(f"stop_all of 3 members in {took:.2f} s")
        if took > 3.0:
            fail(f"three members: stop_all took {took:.2f} s\n{c.log_tails()}")


def three_members_answer(c):
    if len(set(c.client_endpoints())) != 3:
        fail(f"three members: endpoints {c.client_endpoints()}")
    for i in range(3):
        if not c.status(i):
            fail(f"three members: member {i} does not answer status")
    ids = {c.members[i].member_id for i in range(3)}
    if len(ids) != 3:
        fail(f"three members: member ids {ids}")
    if c.leader_index() is None:
        fail("three members: no leader")
    check_put_get(c, "k3", "v3", "three members")


def put_until_ok(endpoints, key, value, timeout_s):
    """Put through each endpoint in turn until one succeeds: the seconds it
    took, or None. Each try gives up after 0.5 s: a put in flight when the
    leader died is not answered for 7 s (harness.py, "etcd 3.4 behaviours")."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        for ep in endpoints:
            try:
                harness.etcd_put(ep, key, value, timeout_s=0.5)
                return time.monotonic() - t0
            except (OSError, harness.EtcdError):
                pass
        time.sleep(0.05)
    return None


def leader_kill_fails_over(c):
    old = c.leader_index()
    c.kill(old)
    t0 = time.monotonic()
    others = [c.endpoint(i) for i in range(3) if i != old]
    took = put_until_ok(others, "after-kill", "yes", 10.0)
    if took is None:
        fail(f"leader kill: no put through members {others} within 10 s of killing member {old}\n{c.log_tails()}")
        return old
    new = c.wait_leader(10.0, other_than=old)
    info(f"leader {old} killed: a put through another member succeeded after {took:.2f} s "
         f"(tries of 0.5 s), new leader {new}")
    if new is None:
        fail("leader kill: no new leader")
    return old


def restart_rejoins(c, i):
    t0 = time.monotonic()
    c.restart(i)
    info(f"member {i} answers again {time.monotonic() - t0:.2f} s after restart({i})")
    if not c.status(i):
        fail(f"restart: member {i} does not answer status")
    # It catches up on the put made while it was dead (its own copy).
    got = harness.wait_until(lambda: harness.etcd_get(c.endpoint(i), "after-kill", serializable=True), 10.0)
    if got != b"yes":
        fail(f"restart: member {i} reads the put made while it was away as {got!r}")


def pause_and_resume(c):
    leader = c.leader_index()
    i = next(j for j in range(3) if j != leader)  # a follower: no election to wait for
    c.pause(i)
    if c.status(i, timeout_s=0.5) is not None:
        fail(f"pause: member {i} answers status while stopped")
    if c.leader_index() is None:
        fail("pause: no leader with one follower paused")
    c.resume(i)
    if not harness.wait_until(lambda: c.status(i), 5.0):
        fail(f"resume: member {i} does not answer status")


# --- the proxy ---------------------------------------------------------------

def case_proxy_pass_8mib(echo):
    with harness.Proxy(0, "127.0.0.1", echo.port) as p:
        started["ports"].add(p.port)
        started["threads"].add(p._thread)
        n, each = 4, 2 << 20
        payloads = [os.urandom(each) for _ in range(n)]
        results = [None] * n

        def run(k):
            try:
                results[k] = stream(p.port, payloads[k])
            except OSError as e:
                results[k] = repr(e)

        t0 = time.monotonic()
        threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        info(f"8 MiB each way over {n} connections in {time.monotonic() - t0:.2f} s")
        for k in range(n):
            if results[k] != (hashlib.sha256(payloads[k]).hexdigest(), each):
                fail(f"pass 8 MiB: connection {k} came back as {results[k]!r}")
        st = p.stats()
        if (st.bytes_to_target, st.bytes_to_client, st.accepted) != (n * each, n * each, n):
            fail(f"pass 8 MiB: counters {st}")
        if not harness.wait_until(lambda: p.stats().open == 0, 2.0):
            fail(f"pass 8 MiB: {p.stats().open} connections still open after both sides closed")


def case_proxy_switches_keep_order(echo):
    with harness.Proxy(0, "127.0.0.1", echo.port) as p:
        payload = os.urandom(2 << 20)

        # Each long delay leaves chunks not yet due in the pipes; the shorter
        # delay or pass after it must not let the chunks read next overtake
        # them. The sender is paced (about 8 MB/s, 0.25 s in all) so that
        # the pipes stay under their bound and do read on.
        def toggle():
            for ms in (0, 100, 3, 100, 0, 80, 1, 100, 0, 60, 0):
                p.delay(ms) if ms else p.pass_()
                time.sleep(0.03 if ms >= 60 else 0.01)

        p.delay(100)
        got = stream(p.port, payload, during=toggle, pace_s=0.002)
        if got != (hashlib.sha256(payload).hexdigest(), len(payload)):
            fail(f"mode switches: 2 MiB came back as {got}")
        p.pass_()
        p.delay(20)
        got = stream(p.port, payload)
        if got != (hashlib.sha256(payload).hexdigest(), len(payload)):
            fail(f"delay(20): 2 MiB came back as {got}")


def round_trip_s(s):
    t0 = time.monotonic()
    return time.monotonic() - t0 if echo_ok(s, b"x", 5.0) else None


def case_proxy_delay(echo):
    with harness.Proxy(0, "127.0.0.1", echo.port) as p:
        s = connect(p.port)
        fast = round_trip_s(s)
        p.delay(200)
        slow = round_trip_s(s)
        p.pass_()
        again = round_trip_s(s)
        s.close()
        info(f"round trip: {fast * 1000:.1f} ms passed, {slow * 1000:.1f} ms under delay(200), "
             f"{again * 1000:.1f} ms passed again")
        if fast is None or fast > 0.15:
            fail(f"delay: a passed round trip took {fast} s")
        # 200 ms each way.
        if slow is None or not 0.39 <= slow < 2.0:
            fail(f"delay(200): a round trip took {slow} s, not 0.4 s")
        if again is None or again > 0.15:
            fail(f"delay: after pass_(), a round trip took {again} s")


def case_proxy_drop(echo):
    with harness.Proxy(0, "127.0.0.1", echo.port) as p:
        talker, idle = connect(p.port), connect(p.port)
        if not (echo_ok(talker) and echo_ok(idle)):
            fail("drop: no echo before drop()")
        reached = echo.accepted
        p.drop()
        talker.sendall(b"lost")
        got = outcome(talker, 1.0)
        if got != "silence":
            fail(f"drop: a request got {got} within 1 s, not silence on an open connection")
        late = connect(p.port)  # accepted, black-holed, never reaches the target
        late.sendall(b"lost too")
        if outcome(late, 0.3) != "silence" or echo.accepted != reached:
            fail(f"drop: a new connection was served (target saw {echo.accepted - reached} new)")
        if p.stats().bytes_dropped != 12:
            fail(f"drop: bytes_dropped {p.stats().bytes_dropped}, not 12")
        p.pass_()
        fresh = connect(p.port)
        if not echo_ok(fresh):
            fail("drop: after pass_(), a new connection gets no echo")
        if not echo_ok(idle):
            fail("drop: after pass_(), a connection idle during drop() gets no echo")
        for name, s in (("talker", talker), ("late", late)):
            got = outcome(s, 1.0)
            if got not in ("eof", "reset"):
                fail(f"drop: after pass_(), a connection that lost bytes ({name}) saw {got}, not a reset")
        for s in (talker, idle, late, fresh):
            s.close()


def case_proxy_stall(echo):
    with harness.Proxy(0, "127.0.0.1", echo.port) as p:
        s = connect(p.port)
        p.stall()
        s.sendall(b"held")
        if outcome(s, 0.5) != "silence":
            fail("stall: an answer came while stalled")
        p.pass_()
        s.settimeout(2.0)
        got = b""
        while len(got) < 4:
            chunk = s.recv(4)
            if not chunk:
                break
            got += chunk
        if got != b"held":
            fail(f"stall: after pass_(), got {got!r}, not the held bytes")
        s.close()


def case_proxy_cut(echo):
    with harness.Proxy(0, "127.0.0.1", echo.port) as p:
        s = connect(p.port)
        if not echo_ok(s):
            fail("cut: no echo before cut()")
        t0 = time.monotonic()
        p.cut()
        got = outcome(s, 1.0)
        if got not in ("eof", "reset") or time.monotonic() - t0 > 0.5:
            fail(f"cut: an open connection saw {got} after {time.monotonic() - t0:.2f} s, not a prompt reset")
        s.close()
        reached = echo.accepted
        try:
            n = connect(p.port, 1.0)
            n.sendall(b"x")
            got = outcome(n, 1.0)
            n.close()
        except ConnectionError as e:
            got = repr(e)
        if got in ("data", "silence") or echo.accepted != reached:
            fail(f"cut: a new connection saw {got} (target saw {echo.accepted - reached} new), not a reset")
        if p.stats().refused < 1:
            fail(f"cut: refused counter {p.stats().refused}")
        p.pass_()
        s = connect(p.port)
        if not echo_ok(s):
            fail("cut: after pass_(), a new connection gets no echo")
        s.close()


def case_proxy_target_down(echo):
    listen, nobody = harness.free_ports(2)  # distinct: the proxy must not be its own target
    with harness.Proxy(listen, "127.0.0.1", nobody) as p:
        try:
            s = connect(p.port)
        except ConnectionResetError:  # the reset came before connect() returned
            return
        got = outcome(s, 1.0)
        if got not in ("eof", "reset"):
            fail(f"target down: the client saw {got}, not a reset")
        s.close()


def case_proxy_idle_cpu(echo):
    with harness.Proxy(0, "127.0.0.1", echo.port) as p:
        conns = [connect(p.port) for _ in range(8)]
        for s in conns:
            echo_ok(s)
        for mode in ("pass", "delay", "drop"):
            p.set_mode(mode, 50)
            cpu0, t0 = time.process_time(), time.monotonic()
            time.sleep(0.5)
            used = (time.process_time() - cpu0) / (time.monotonic() - t0)
            if used > 0.05:
                fail(f"idle cpu: {used:.1%} of a core with 8 idle connections in {mode}")
        for s in conns:
            s.close()


# --- cleanup -----------------------------------------------------------------

def pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def children():
    """PIDs whose parent is this process (zombies too)."""
    me, out = os.getpid(), []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == me:
                out.append(int(d))
    return out


CHILD = """
import sys, time
sys.path.insert(0, sys.argv[1])
import harness
harness.exit_on_sigterm()
c = harness.EtcdCluster(1, sys.argv[2])   # no `with`: atexit must stop it
print(c.pids()[0], c.members[0].client_port, flush=True)
time.sleep(60)
"""


def case_sigterm_leaves_nothing(tmp):
    """A test killed by SIGTERM (meson's timeout) leaves no etcd."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, os.path.dirname(os.path.abspath(harness.__file__)), tmp],
                             stdout=subprocess.PIPE, text=True)
    line = child.stdout.readline().split()
    if len(line) != 2:
        fail(f"sigterm: the child printed {line}")
        child.kill()
        child.wait()
        return
    pid, port = int(line[0]), int(line[1])
    child.send_signal(signal.SIGTERM)
    rc = child.wait(10)
    if pid_alive(pid) or harness.port_listening(port):
        fail(f"sigterm: etcd {pid} (port {port}) outlived its test (exit {rc})")
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def case_nothing_left(tmp):
    alive = [pid for pid in started["pids"] if pid_alive(pid)]
    if alive:
        fail(f"cleanup: processes still alive: {alive}")
    if not started["pids"]:
        fail("cleanup: no process was recorded, so nothing was checked")
    listening = [port for port in sorted(started["ports"]) if harness.port_listening(port)]
    if listening:
        fail(f"cleanup: ports still listening: {listening}")
    running = [t.name for t in started["threads"] if t.is_alive()] + \
        [t.name for t in threading.enumerate() if t.name.startswith("proxy-")]
    if running:
        fail(f"cleanup: proxy threads still running: {running}")
    left = children()
    if left:
        fail(f"cleanup: child processes left: {left}")


def main():
    harness.exit_on_sigterm()
    tmp = tempfile.mkdtemp(prefix="aup-harness-")
    echo = EchoServer()
    t_all = time.monotonic()
    cases = [(case_etcd_one_member, tmp), (case_etcd_three_members, tmp),
             (case_proxy_pass_8mib, echo), (case_proxy_switches_keep_order, echo), (case_proxy_delay, echo),
             (case_proxy_drop, echo), (case_proxy_stall, echo), (case_proxy_cut, echo),
             (case_proxy_target_down, echo), (case_proxy_idle_cpu, echo),
             (case_sigterm_leaves_nothing, tmp), (case_nothing_left, tmp)]
    try:
        for case, arg in cases:
            t0 = time.monotonic()
            before = len(failures)
            try:
                case(arg)
            except Exception:
                if len(failures) == before:
                    fail(f"{case.__name__}: {traceback.format_exc()}")
            print(f"{case.__name__}: {'ok' if len(failures) == before else 'FAILED'} "
                  f"({time.monotonic() - t0:.2f} s)", flush=True)
    finally:
        echo.close()
        if failures:
            print(f"logs kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"harness: {len(failures)} failure(s) in {time.monotonic() - t_all:.1f} s")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
