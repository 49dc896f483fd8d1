"""Infrastructure for aup's replication and failover tests, on one machine:
etcd clusters the test starts itself, a TCP proxy between nodes whose
faults the test switches, and child processes stopped by their PID.
Python 3.11 standard library only.

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import harness
    harness.exit_on_sigterm()          # so meson's timeout SIGTERM cleans up
    with harness.EtcdCluster(3, tmp) as etcd, \\
         harness.Proxy(0, "127.0.0.1", node_port) as link:
        ...  # start aup nodes with harness.Process, point them at
             # etcd.client_endpoints() and at link.port
        etcd.kill(etcd.leader_index())
        link.drop()

Everything a test starts is stopped by its context manager, and again at
exit (atexit) if a test forgot: no etcd, aup or proxy outlives the test.

etcd flags (EtcdCluster._flags):
  --heartbeat-interval 100 --election-timeout 1000 (ms) are etcd's own
  defaults, kept on purpose. A follower campaigns one randomized election
  timeout ([1 s, 2 s)) after the leader's last heartbeat: after a SIGKILL
  of the leader of 3 a new one was known in 1.0-2.7 s (12 trials, median
  1.2 s), so a failover test waits seconds, not tens of them. Ten
  heartbeats a timeout leave room for this 2-core machine to be busy
  compiling: a heartbeat late by less than a second starts no election,
  so "the leader changed" happens only when a test makes it.
  --initial-cluster-token is the cluster's own directory name, so two
  clusters started by tests side by side never take each other's members.
  --logger zap --log-outputs stderr: 3.4's default logger (capnslog) is
  deprecated and prints a warning; zap writes one JSON line an event,
  which is what a failure's log tail shows.
  --pre-vote is left at 3.4's default (false); see EtcdCluster.

etcd 3.4 behaviours a failover test meets (measured with these flags):
  - A request in flight to a follower when the leader is killed is not
    retried by etcd: it waits the whole request timeout, 7 s (5 s + 2
    election timeouts), and fails with HTTP 503 "request timed out"
    (gRPC code 14), though a new leader came after 1-2 s; its effect is
    then unknown. Give each request a short timeout (1 s) and retry.
  - stop(i) (SIGTERM) of a leader hands leadership over first: a new
    leader in 0.12 s, no election timeout. kill(i) and pause(i) cost an
    election (1-3 s).
  - A leader paused and resumed is a follower within 0.5 s (it sees the
    newer term); by then another member leads.
"""
import atexit
import base64
import collections
import dataclasses
import errno
import heapq
import http.client
import itertools
import json
import os
import selectors
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request


# --- waiting and ports -------------------------------------------------------

def says_it_leads(log_text):
    """Whether an aup node's log (harness.Process's, a `--- ` line at each
    start) says, last, that the node leads its cluster."""
    t = log_text
    return t.rfind("this node leads the cluster") > max(t.rfind("steps down"), t.rfind("--- "))


def wait_until(predicate, timeout_s, interval_s=0.05):
    """Call predicate until it returns something true, at most timeout_s:
    its last value (true, or the false one at the deadline)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval_s)


def free_ports(count, host="127.0.0.1"):
    """count distinct loopback TCP ports free now: all are bound at once
    (port 0) before any is let go, so none repeats. Another process may
    still take one before the caller binds it; EtcdCluster retries that."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def free_port(host="127.0.0.1"):
    """A loopback TCP port free now."""
    return free_ports(1, host)[0]


def port_listening(port, host="127.0.0.1", timeout_s=0.5):
    """Whether something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def exit_on_sigterm():
    """Turn SIGTERM (meson's timeout, a CI cancel) into SystemExit in the
    main thread, so `finally`, context managers and atexit stop the
    children; by default SIGTERM ends Python at once and runs none of them."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def _tail(path, lines):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 256 * lines))  # bounded read of a log of any size
            text = f.read().decode("utf-8", "replace")
    except OSError as e:
        return f"({path}: {e})"
    return "\n".join(text.splitlines()[-lines:])


# --- processes ---------------------------------------------------------------

class Process:
    """A child process with stdout and stderr appended to log_path, stopped
    by its PID. It stays in the test's process group on purpose: a group
    kill (meson's on timeout) reaches it too. Registered with atexit until
    stopped."""

    def __init__(self, args, log_path, env=None, cwd=None):
        self.args = [str(a) for a in args]
        self.log_path = log_path
        self.paused = False
        with open(log_path, "ab") as log:
            log.write(f"--- {time.strftime('%H:%M:%S')} start: {shlex.join(self.args)}\n".encode())
            log.flush()
            self._popen = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=log,
                                           stderr=subprocess.STDOUT, env=env, cwd=cwd)
        self.pid = self._popen.pid
        atexit.register(self.stop)

    def running(self):
        """Whether it has not exited (a paused process is running)."""
        return self._popen.poll() is None

    @property
    def returncode(self):
        return self._popen.poll()

    def pause(self):
        """SIGSTOP: it keeps its sockets but answers nothing. Returns once
        every thread is stopped: kill(2) only queues the signal, and a
        thread running on the other CPU could still answer a request sent
        at once (seen under the sanitizer build's load)."""
        self._popen.send_signal(signal.SIGSTOP)
        self.paused = True
        wait_until(self._stopped, 2.0, 0.005)

    def _stopped(self):
        task = f"/proc/{self._popen.pid}/task"
        try:
            for t in os.listdir(task):
                with open(f"{task}/{t}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] not in ("T", "t"):
                        return False
        except OSError:  # it exited, or a thread did meanwhile
            return self._popen.poll() is not None
        return True

    def resume(self):
        """SIGCONT."""
        self._popen.send_signal(signal.SIGCONT)
        self.paused = False

    def kill(self):
        """SIGKILL and reap: a crash."""
        self._popen.send_signal(signal.SIGKILL)
        self._popen.wait()
        self.paused = False
        atexit.unregister(self.stop)

    def terminate(self):
        """SIGTERM, then SIGCONT: a stopped process keeps SIGTERM pending
        until it runs again."""
        self._popen.send_signal(signal.SIGTERM)
        self._popen.send_signal(signal.SIGCONT)
        self.paused = False

    def wait(self, timeout_s):
        """Its exit status, or None if it is still running after timeout_s."""
        try:
            return self._popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, grace_s=5.0):
        """SIGTERM, SIGKILL if still running after grace_s; its exit status."""
        stop_processes([self], grace_s)
        return self._popen.returncode

    def tail(self, lines=40):
        """The last lines of its log."""
        return _tail(self.log_path, lines)


def stop_processes(processes, grace_s=5.0):
    """SIGTERM to all at once, then SIGKILL to whichever still runs after
    grace_s: stopping n etcd members one after another would make each
    leader hand leadership to a member about to stop."""
    live = [p for p in processes if p.running()]
    for p in live:
        p.terminate()
    deadline = time.monotonic() + grace_s
    for p in live:
        if p.wait(max(0.0, deadline - time.monotonic())) is None:
            p.kill()
    for p in processes:
        p._popen.wait()
        atexit.unregister(p.stop)


# --- etcd's JSON gateway -----------------------------------------------------

class EtcdError(Exception):
    """etcd answered with an error (the gateway's HTTP status and message)."""


# Loopback requests never go through an http_proxy from the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _b64(data):
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def etcd_call(endpoint, path, body, timeout_s=2.0):
    """POST body as JSON to http://endpoint/v3/path; the answer as a dict.
    Raises EtcdError for an error answer, OSError (TimeoutError,
    ConnectionError, urllib.error.URLError) when there is no answer."""
    req = urllib.request.Request(f"http://{endpoint}/v3/{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    try:
        with _OPENER.open(req, timeout=timeout_s) as r:
            return json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        raise EtcdError(f"{endpoint} {path}: HTTP {e.code}: {e.read().decode('utf-8', 'replace')}") from None
    except http.client.HTTPException as e:  # a torn answer: as good as none
        raise ConnectionError(f"{endpoint} {path}: {e!r}") from None


def etcd_put(endpoint, key, value, timeout_s=2.0):
    """Put key = value (str or bytes); the store's revision after it."""
    a = etcd_call(endpoint, "kv/put", {"key": _b64(key), "value": _b64(value)}, timeout_s)
    return int(a["header"]["revision"])


def etcd_get(endpoint, key, timeout_s=2.0, serializable=False):
    """key's value as bytes, or None if absent. Linearizable (through the
    leader) unless serializable, which answers from the member's own copy."""
    a = etcd_call(endpoint, "kv/range", {"key": _b64(key), "serializable": serializable}, timeout_s)
    kvs = a.get("kvs") or []
    return base64.b64decode(kvs[0].get("value", "")) if kvs else None


def etcd_status(endpoint, timeout_s=1.0):
    """The member's maintenance/status as a dict, or None if it does not
    answer within timeout_s. Ids and numbers are decimal strings there."""
    try:
        return etcd_call(endpoint, "maintenance/status", {}, timeout_s)
    except (OSError, EtcdError, ValueError):
        return None


# --- etcd clusters -----------------------------------------------------------

class EtcdStartError(Exception):
    """A cluster did not come up; the message carries the members' logs."""


@dataclasses.dataclass
class EtcdMember:
    name: str
    client_port: int
    peer_port: int
    dir: str            # holds data/ and etcd.log
    member_id: str = ""  # etcd's id, a decimal string, known once it answered
    process: Process = None

    @property
    def endpoint(self):
        return f"127.0.0.1:{self.client_port}"

    @property
    def data_dir(self):
        return os.path.join(self.dir, "data")

    @property
    def log_path(self):
        return os.path.join(self.dir, "etcd.log")

    def running(self):
        return self.process is not None and self.process.running()

    def answering(self):
        """Running and not paused: worth asking."""
        return self.running() and not self.process.paused


class EtcdCluster:
    """n etcd members (1 or 3, any n works) on loopback ports, in a new
    directory under workdir (kept after stop, for its logs; the caller owns
    workdir). Started and answering, with a leader, when the constructor
    returns; stopped by stop_all(), which the context manager and atexit
    call. Member i is 0-based everywhere.

    Pre-vote is off (3.4's default; 3.5 turns it on): a member cut off and
    then healed raises the term and makes the leader step down, a
    disruption a partition test will see. Pass pre_vote=True for 3.5's."""

    START_ATTEMPTS = 3  # fresh ports each time: a port taken by another process between free_ports and etcd's bind

    def __init__(self, n, workdir, heartbeat_ms=100, election_ms=1000, pre_vote=False, start_timeout_s=30.0,
                 etcd="etcd"):
        assert n >= 1, n
        self.n, self.heartbeat_ms, self.election_ms, self.pre_vote = n, heartbeat_ms, election_ms, pre_vote
        self.etcd = etcd
        self.dir = tempfile.mkdtemp(prefix="etcd-", dir=workdir)
        self.token = os.path.basename(self.dir)
        self.members = []
        atexit.register(self.stop_all)
        try:
            self._start_new(start_timeout_s)
        except BaseException:
            self.stop_all()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop_all()

    # Starting.

    def _start_new(self, timeout_s):
        for attempt in range(1, self.START_ATTEMPTS + 1):
            ports = free_ports(2 * self.n)
            self.members = []
            for i in range(self.n):
                d = os.path.join(self.dir, f"m{i}")
                shutil.rmtree(d, ignore_errors=True)
                os.makedirs(d)
                self.members.append(EtcdMember(f"m{i}", ports[2 * i], ports[2 * i + 1], d))
            for i in range(self.n):
                self._spawn(i, "new")
            if self._wait_ready(timeout_s):
                return
            taken = any("address already in use" in _tail(m.log_path, 200) for m in self.members)
            stop_processes([m.process for m in self.members], grace_s=2.0)
            if not taken or attempt == self.START_ATTEMPTS:
                raise EtcdStartError(f"{self.n}-member etcd cluster in {self.dir} did not come up in {timeout_s} s "
                                     f"(attempt {attempt}):\n{self.log_tails()}")

    def _flags(self, i, state):
        m = self.members[i]
        cluster = ",".join(f"{x.name}=http://127.0.0.1:{x.peer_port}" for x in self.members)
        return [self.etcd, "--name", m.name, "--data-dir", m.data_dir,
                "--listen-client-urls", f"http://{m.endpoint}", "--advertise-client-urls", f"http://{m.endpoint}",
                "--listen-peer-urls", f"http://127.0.0.1:{m.peer_port}",
                "--initial-advertise-peer-urls", f"http://127.0.0.1:{m.peer_port}",
                "--initial-cluster", cluster, "--initial-cluster-state", state,
                "--initial-cluster-token", self.token,
                "--heartbeat-interval", str(self.heartbeat_ms), "--election-timeout", str(self.election_ms),
                f"--pre-vote={'true' if self.pre_vote else 'false'}",
                "--logger", "zap", "--log-outputs", "stderr"]

    def _spawn(self, i, state):
        m = self.members[i]
        m.process = Process(self._flags(i, state), m.log_path)

    def _wait_ready(self, timeout_s):
        """Every member answers status and one is the leader; False if one
        exits or the time is up."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not all(m.running() for m in self.members):
                return False
            if all(self.status(i) for i in range(self.n)) and self.leader_index() is not None:
                return True
            time.sleep(0.05)
        return False

    # Asking.

    def client_endpoints(self):
        """Every member's "127.0.0.1:PORT", in member order."""
        return [m.endpoint for m in self.members]

    def endpoint(self, i):
        return self.members[i].endpoint

    def status(self, i, timeout_s=1.0):
        """Member i's maintenance/status, or None if it does not answer."""
        m = self.members[i]
        st = etcd_status(m.endpoint, timeout_s) if m.running() else None
        if st and not m.member_id:
            m.member_id = st["header"]["member_id"]
        return st

    def leader_index(self, timeout_s=0.5):
        """The member that says it is raft's leader, in the newest term if
        two do (an old leader cut off keeps saying so until it steps down,
        one election timeout later); None if none does. Only running,
        unpaused members are asked, so a leader just killed is not named
        by followers that have not noticed yet."""
        best = None
        for i, m in enumerate(self.members):
            if not m.answering():
                continue
            st = self.status(i, timeout_s)
            if st and st.get("leader") == m.member_id:
                term = int(st.get("raftTerm", 0))
                if best is None or term > best[0]:
                    best = (term, i)
        return None if best is None else best[1]

    def wait_leader(self, timeout_s=10.0, other_than=None):
        """The leader's index once there is one (not other_than), or None."""
        deadline = time.monotonic() + timeout_s
        while True:
            i = self.leader_index()
            if i is not None and i != other_than:
                return i
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)

    def pids(self):
        """PIDs of the running members."""
        return [m.process.pid for m in self.members if m.running()]

    def ports(self):
        """Every port the cluster listens on (client and peer)."""
        return [p for m in self.members for p in (m.client_port, m.peer_port)]

    # Faults.

    def kill(self, i):
        """SIGKILL member i (a crash)."""
        self.members[i].process.kill()

    def stop(self, i, grace_s=5.0):
        """SIGTERM member i (a leader hands over leadership first), SIGKILL
        after grace_s."""
        self.members[i].process.stop(grace_s)

    def restart(self, i, wait_s=15.0):
        """Start member i again on its data dir and ports, as an existing
        member (stopping it first if it runs); waits until it answers status
        (EtcdStartError otherwise; wait_s=0 returns at once)."""
        if self.members[i].running():
            self.stop(i)
        self._spawn(i, "existing")
        if wait_s and not wait_until(lambda: not self.members[i].running() or self.status(i), wait_s):
            raise EtcdStartError(f"member {i} did not answer within {wait_s} s of its restart:\n{self.log_tail(i)}")
        if not self.members[i].running():
            raise EtcdStartError(f"member {i} exited after its restart:\n{self.log_tail(i)}")

    def pause(self, i):
        """SIGSTOP member i: its sockets stay open, nothing answers."""
        self.members[i].process.pause()

    def resume(self, i):
        """SIGCONT member i."""
        self.members[i].process.resume()

    # How long a leader's transport goes on counting a stopped peer as
    # connected, at most (seen: 60 ms; 0.1 s and more were always enough).
    PEER_GONE_S = 0.2

    def stop_all(self, grace_s=5.0, leader_grace_s=1.0):
        """Stop every member, paused ones too, and wait for them: SIGTERM
        to the followers at once (SIGKILL after grace_s), PEER_GONE_S, then
        SIGTERM to the leader, SIGKILL after leader_grace_s. Idempotent.
        Why: a leader that stops hands leadership to a follower its
        transport counts as connected first (etcd 3.4's EtcdServer.Stop),
        waiting up to 7 s with these flags (5 s + 2 election timeouts);
        stopped together with its followers it picked one that was just
        stopping in 1 of 3 trials, and campaigned alone for the 7 s.
        Stopped last, after PEER_GONE_S, it has no one to hand over to and
        exits in milliseconds; leader_grace_s bounds the case it does not,
        and its SIGKILL loses nothing etcd acknowledged (it syncs its WAL
        first)."""
        leader = self.leader_index() if any(m.answering() for m in self.members) else None
        last = [self.members[leader].process] if leader is not None else []
        first = [m.process for m in self.members if m.process and m.process not in last]
        followers_ran = any(p.running() for p in first)
        stop_processes(first, grace_s)
        if last and followers_ran:
            time.sleep(self.PEER_GONE_S)
        stop_processes(last, leader_grace_s)
        atexit.unregister(self.stop_all)

    # Logs.

    def log_tail(self, i, lines=40):
        """The last lines of member i's log."""
        return _tail(self.members[i].log_path, lines)

    def log_tails(self, lines=20):
        """Every member's log tail, headed by its name, port and state."""
        out = []
        for i, m in enumerate(self.members):
            state = "running" if m.running() else f"exited {m.process.returncode}" if m.process else "not started"
            out.append(f"--- {m.name} client {m.client_port} peer {m.peer_port} ({state}) {m.log_path}\n"
                       f"{self.log_tail(i, lines)}")
        return "\n".join(out)


# --- the fault proxy ---------------------------------------------------------

# Bytes read from one side and not yet written to the other, per direction
# of a connection: at the bound the proxy stops reading that side, so the
# sender's kernel buffers fill and it blocks, as with a slow network.
# Under delay(ms) this bounds a direction's throughput to 1 MiB per ms.
BUFFER_LIMIT_BYTES = 1 << 20
READ_CHUNK_BYTES = 64 << 10
# Connections at once (two descriptors each); more are refused, counted.
MAX_CONNECTIONS = 1000
# Connections accepted per wake-up of the loop, so a flood of connects does
# not starve the bytes of open connections.
ACCEPTS_PER_WAKE = 64

MODES = ("pass", "delay", "drop", "stall", "cut")
_HELD = ("drop", "stall")  # modes in which nothing reaches the other side
_LINGER_RST = struct.pack("ii", 1, 0)


@dataclasses.dataclass
class ProxyStats:
    bytes_to_target: int = 0    # forwarded client -> target
    bytes_to_client: int = 0    # forwarded target -> client
    bytes_dropped: int = 0      # read and discarded by drop()
    accepted: int = 0           # connections served (forwarded or black-holed)
    refused: int = 0            # accepted and reset at once (cut, MAX_CONNECTIONS)
    reset: int = 0              # served connections the proxy reset
    open: int = 0               # served connections open now


class _Pipe:
    """One direction of a connection: chunks read, each with the time it
    may go (delay), then ready bytes in order. pending = all of them."""
    __slots__ = ("chunks", "ready", "pending", "eof", "shut")

    def __init__(self):
        # (due monotonic s, bytes). Only the head is ever released, so a
        # chunk due sooner (the delay shortened) still waits for those before it.
        self.chunks = collections.deque()
        self.ready = bytearray()
        self.pending = 0
        self.eof = False   # its source said EOF
        self.shut = False  # the EOF was passed on (shutdown(SHUT_WR) of the destination)


class _Conn:
    __slots__ = ("socks", "registered", "connecting", "up", "down", "lossy", "dead", "closed")

    def __init__(self, client):
        self.socks = {"c": client, "t": None}  # client side, target side (None until connected to)
        self.registered = {"c": 0, "t": 0}
        self.connecting = False
        self.up = _Pipe()    # client -> target
        self.down = _Pipe()  # target -> client
        self.lossy = False   # drop() discarded some of its bytes: its streams have a gap
        self.dead = False    # a side failed while held: reset both when the mode heals
        self.closed = False

    def source_pipe(self, side):
        return self.up if side == "c" else self.down

    def sink_pipe(self, side):
        return self.down if side == "c" else self.up


class Proxy:
    """A TCP proxy listening on listen_host:listen_port (0: a free port, see
    .port) and forwarding every accepted connection to target_host:
    target_port, both ways, in one selector thread with non-blocking
    sockets. Modes, switched at any time from any thread (each call returns
    once the loop has applied it):

      pass_()    forward.
      delay(ms)  forward each chunk ms after it was read, order kept in
                 each direction (chunks read under an earlier, longer delay
                 still go first).
      drop()     a black hole: connections stay open, bytes read either way
                 are discarded (FINs too), new connections are accepted and
                 not passed on. Streams are not patched up afterwards: when
                 the mode heals, a connection that lost bytes (or whose
                 other side went away) is reset, like a TCP connection
                 whose retransmissions timed out; one that lost nothing
                 carries on, and one accepted during drop() is connected to
                 the target then.
      stall()    a partition TCP survives: nothing is read or written,
                 bytes wait in the kernels' buffers and flow, intact, when
                 the mode heals.
      cut()      reset every connection (SO_LINGER 0, both sides), and
                 reset new ones as soon as accepted, until the mode changes.
                 The port stays bound, so nothing else can take it.

    Counters: stats(). close() resets every connection and stops the thread.
    """

    def __init__(self, listen_port, target_host, target_port, listen_host="127.0.0.1"):
        info = socket.getaddrinfo(target_host, target_port, type=socket.SOCK_STREAM)[0]
        self._target_family, self._target_addr = info[0], info[4]
        self.target = (target_host, target_port)
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((listen_host, listen_port))
        self._listener.listen(128)
        self._listener.setblocking(False)
        self.port = self._listener.getsockname()[1]
        self._mode, self._delay_s = "pass", 0.0
        self._stats = ProxyStats()
        self._conns = set()
        self._timers = []  # heap of (due, seq, conn, pipe): when a pipe's head chunk may be ready
        self._seq = itertools.count()
        self._commands = collections.deque()
        self._commands_lock = threading.Lock()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._listener, selectors.EVENT_READ, "listen")
        self._sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        self._error = None
        self._thread = threading.Thread(target=self._run, name=f"proxy-{self.port}", daemon=True)
        self._thread.start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # The test's side: commands run by the loop thread.

    def _command(self, fn, *args):
        """Run fn(*args) in the loop thread; its result once it has run."""
        if not self._thread.is_alive():
            raise RuntimeError(f"proxy {self.port} is closed" + (f": {self._error!r}" if self._error else ""))
        done, result = threading.Event(), []
        with self._commands_lock:
            self._commands.append((fn, args, done, result))
        try:
            self._wake_w.send(b"x")
        except BlockingIOError:  # a wake-up is pending already
            pass
        except OSError:  # the loop closed its end: it has stopped
            pass
        while not done.wait(0.1):
            if not self._thread.is_alive():
                raise RuntimeError(f"proxy {self.port} stopped: {self._error!r}")
        return result[0] if result else None

    def set_mode(self, mode, delay_ms=0):
        """Switch to mode (one of MODES); delay_ms for "delay"."""
        assert mode in MODES, mode
        assert mode != "delay" or delay_ms >= 0, delay_ms
        self._command(self._apply_mode, mode, delay_ms / 1000.0 if mode == "delay" else 0.0)

    def pass_(self):
        self.set_mode("pass")

    def delay(self, ms):
        self.set_mode("delay", ms)

    def drop(self):
        self.set_mode("drop")

    def stall(self):
        self.set_mode("stall")

    def cut(self):
        self.set_mode("cut")

    @property
    def mode(self):
        return self._mode

    def stats(self):
        """A consistent copy of the counters (the last ones after close())."""
        if not self._thread.is_alive():
            return dataclasses.replace(self._stats, open=0)
        return self._command(lambda: dataclasses.replace(self._stats, open=len(self._conns)))

    def close(self):
        """Reset every connection, stop listening, end the thread; idempotent."""
        if self._thread.is_alive():
            self._command(self._shutdown)
            self._thread.join(10)
        assert not self._thread.is_alive(), f"proxy {self.port}: the loop thread did not end"
        self._wake_w.close()

    # The loop thread.

    def _run(self):
        try:
            while self._sel is not None:
                timeout = max(0.0, self._timers[0][0] - time.monotonic()) if self._timers else None
                events = self._sel.select(timeout)
                touched = set()
                for key, mask in events:
                    if key.data == "listen":
                        self._accept()
                    elif key.data == "wake":
                        self._run_commands()
                        if self._sel is None:
                            return
                    else:
                        conn, side = key.data
                        self._on_event(conn, side, mask)
                        touched.add(conn)
                now = time.monotonic()
                while self._timers and self._timers[0][0] <= now:
                    _, _, conn, pipe = heapq.heappop(self._timers)
                    if not conn.closed:
                        self._release(pipe, now)
                        touched.add(conn)
                for conn in touched:
                    self._settle(conn)
        except BaseException as e:  # a bug here: say so, and let the test's next call fail
            self._error = e
            traceback.print_exc()
            if self._sel is not None:
                self._shutdown()

    def _run_commands(self):
        try:
            while self._wake_r.recv(4096):
                pass
        except BlockingIOError:
            pass
        while True:
            with self._commands_lock:
                if not self._commands:
                    return
                fn, args, done, result = self._commands.popleft()
            result.append(fn(*args))
            done.set()

    def _shutdown(self):
        for conn in list(self._conns):
            self._reset(conn)
        self._sel.close()
        self._sel = None
        for s in (self._listener, self._wake_r):
            s.close()
        with self._commands_lock:  # anyone still waiting is let go
            for _, _, done, _ in self._commands:
                done.set()
            self._commands.clear()

    def _apply_mode(self, mode, delay_s):
        old, self._mode, self._delay_s = self._mode, mode, delay_s
        if mode == "cut":
            for conn in list(self._conns):
                self._reset(conn)
        elif mode == "drop":
            for conn in self._conns:
                for pipe in (conn.up, conn.down):
                    if pipe.pending:
                        conn.lossy = True
                        self._stats.bytes_dropped += pipe.pending
                        pipe.chunks.clear()
                        pipe.ready.clear()
                        pipe.pending = 0
        elif old in _HELD and mode not in _HELD:
            for conn in list(self._conns):
                if conn.lossy or conn.dead:
                    self._reset(conn)
                elif conn.socks["t"] is None:
                    self._connect(conn)
        for conn in list(self._conns):
            self._settle(conn)

    def _accept(self):
        for _ in range(ACCEPTS_PER_WAKE):
            try:
                sock, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:  # EMFILE and the like: leave it in the backlog
                print(f"proxy {self.port}: accept: {e}", file=sys.stderr)
                return
            if self._mode == "cut" or len(self._conns) >= MAX_CONNECTIONS:
                self._stats.refused += 1
                _close_rst(sock)
                continue
            self._stats.accepted += 1
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Conn(sock)
            self._conns.add(conn)
            if self._mode != "drop":
                self._connect(conn)
            self._settle(conn)

    def _connect(self, conn):
        t = socket.socket(self._target_family, socket.SOCK_STREAM)
        t.setblocking(False)
        t.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        err = t.connect_ex(self._target_addr)
        if err not in (0, errno.EINPROGRESS):
            t.close()
            self._reset(conn)
            return
        conn.socks["t"], conn.connecting = t, True  # writable once connected, or failed

    def _on_event(self, conn, side, mask):
        if conn.closed or conn.socks[side] is None:
            return  # closed by an earlier event of the same select
        if side == "t" and conn.connecting:
            if conn.socks["t"].getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                self._reset(conn)  # the target refused: so is the client
            else:
                conn.connecting = False
            return
        if mask & selectors.EVENT_READ:
            self._read(conn, side)
        if not conn.closed and conn.socks[side] is not None and mask & selectors.EVENT_WRITE:
            self._write(conn, side)

    def _read(self, conn, side):
        pipe = conn.source_pipe(side)
        try:
            data = conn.socks[side].recv(READ_CHUNK_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._side_failed(conn, side)
            return
        if not data:
            pipe.eof = True
            return
        if self._mode == "drop":
            conn.lossy = True
            self._stats.bytes_dropped += len(data)
            return
        now = time.monotonic()
        due = now + self._delay_s
        pipe.chunks.append((due, data))
        pipe.pending += len(data)
        self._release(pipe, now)
        if pipe.chunks and due > now:
            heapq.heappush(self._timers, (due, next(self._seq), conn, pipe))
        other = "t" if side == "c" else "c"
        if pipe.ready and conn.socks[other] is not None and not (other == "t" and conn.connecting):
            self._write(conn, other)  # at once: saves a select per chunk

    def _write(self, conn, side):
        pipe = conn.sink_pipe(side)
        if not pipe.ready or self._mode in _HELD:
            return
        try:
            n = conn.socks[side].send(pipe.ready)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._side_failed(conn, side)
            return
        del pipe.ready[:n]
        pipe.pending -= n
        if side == "t":
            self._stats.bytes_to_target += n
        else:
            self._stats.bytes_to_client += n

    @staticmethod
    def _release(pipe, now):
        while pipe.chunks and pipe.chunks[0][0] <= now:
            pipe.ready += pipe.chunks.popleft()[1]

    def _side_failed(self, conn, side):
        """A reset or error on one side: passed on as a reset of the other,
        unless the mode holds everything back (then when it heals)."""
        if self._mode in _HELD:
            self._unregister(conn, side)
            _close_rst(conn.socks[side])
            conn.socks[side] = None
            conn.dead = True
        else:
            self._reset(conn)

    def _settle(self, conn):
        """Pass on EOFs that are due, close a connection done both ways,
        and register for exactly the events there is something to do for
        (no busy loop: a socket with nothing to write is not polled for
        writing)."""
        if conn.closed:
            return
        if self._mode not in _HELD:
            if conn.dead:
                self._reset(conn)
                return
            for pipe, dst in ((conn.up, "t"), (conn.down, "c")):
                s = conn.socks[dst]
                if pipe.eof and not pipe.shut and pipe.pending == 0 and s is not None and \
                        not (dst == "t" and conn.connecting):
                    try:
                        s.shutdown(socket.SHUT_WR)
                    except OSError:
                        self._reset(conn)
                        return
                    pipe.shut = True
            if conn.up.shut and conn.down.shut:
                self._close(conn)
                return
        for side in ("c", "t"):
            self._register(conn, side, self._interest(conn, side))

    def _interest(self, conn, side):
        if conn.socks[side] is None:
            return 0
        if side == "t" and conn.connecting:
            return selectors.EVENT_WRITE
        events = 0
        src = conn.source_pipe(side)
        if self._mode != "stall" and not src.eof and (self._mode == "drop" or src.pending < BUFFER_LIMIT_BYTES):
            events |= selectors.EVENT_READ
        if self._mode not in _HELD and conn.sink_pipe(side).ready:
            events |= selectors.EVENT_WRITE
        return events

    def _register(self, conn, side, events):
        old = conn.registered[side]
        if events == old:
            return
        s = conn.socks[side]
        if not old:
            self._sel.register(s, events, (conn, side))
        elif not events:
            self._sel.unregister(s)
        else:
            self._sel.modify(s, events, (conn, side))
        conn.registered[side] = events

    def _unregister(self, conn, side):
        self._register(conn, side, 0)

    def _reset(self, conn):
        self._stats.reset += 1
        self._close(conn, _close_rst)

    def _close(self, conn, close=socket.socket.close):
        for side in ("c", "t"):
            if conn.socks[side] is not None:
                self._unregister(conn, side)
                close(conn.socks[side])
                conn.socks[side] = None
        conn.closed = True
        self._conns.discard(conn)


def _close_rst(sock):
    """Close with SO_LINGER 0: the peer gets a RST, not a FIN."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RST)
    except OSError:
        pass
    sock.close()
