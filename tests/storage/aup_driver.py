"""Helpers for the process-level store tests (crash_test.py, soak_test.py):
an `aup run` process driven over pipes, and request lines for crash.aup."""
import json
import os
import random
import select
import subprocess
import time

# Small segments and checkpoint thresholds, so a short run creates, fills,
# releases and reuses segments and writes images many times.
SMALL_STORE = ["--segment-size", "8192", "--image-min", "512", "--log-min", "4096"]
FIXED_TIME = ["--fixed-time", "1700000000000"]


def crash_events(rng, n):
    """n request lines for crash.aup; every one of them succeeds."""
    out = []
    for _ in range(n):
        k = rng.randrange(6)
        i = rng.randrange(200)
        if k < 2:
            out.append('{"event":"put","args":{"id":%d,"qty":%d}}' % (i, rng.randrange(100)))
        elif k == 2:
            out.append('{"event":"bump","args":{"id":%d,"by":%d}}' % (i, rng.randrange(5)))
        elif k == 3:
            out.append('{"event":"del","args":{"id":%d}}' % i)
        elif k == 4:
            out.append('{"event":"word","args":{"w":"w%d"}}' % rng.randrange(50))
        else:
            out.append('{"event":"churn","args":{"id":%d}}' % (1000 + i))
    return out


def groups_of(rng, lines, largest):
    """Splits lines into groups of 1..largest."""
    groups, at = [], 0
    while at < len(lines):
        k = rng.randint(1, largest)
        groups.append(lines[at:at + k])
        at += k
    return groups


class Hang(Exception):
    """An `aup run` process did not answer (or exit) in time."""


class Aup:
    """One `aup run` process. Requests are written in one write() each
    (under PIPE_BUF bytes, so the process reads a group whole and commits
    it as one batch) and answered lines are read back."""

    def __init__(self, aup, args, env_extra=None, stderr_path=None):
        env = dict(os.environ)
        env.pop("AUP_FAULTS", None)
        if env_extra:
            env.update(env_extra)
        self.err = open(stderr_path, "wb") if stderr_path else subprocess.DEVNULL
        self.p = subprocess.Popen([aup, "run"] + args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.err, env=env)
        self.buffered = b""

    def send(self, lines):
        data = ("\n".join(lines) + "\n").encode()
        assert len(data) <= 4096, "a group must fit one atomic pipe write"
        try:
            os.write(self.p.stdin.fileno(), data)
            return True
        except BrokenPipeError:
            return False

    def read_lines(self, n, timeout=None):
        """Up to n answer lines; fewer when the process ends first. With a
        timeout (seconds for the whole call), raises Hang when the answers
        do not come in time."""
        got = []
        fd = self.p.stdout.fileno()
        deadline = None if timeout is None else time.monotonic() + timeout
        while len(got) < n:
            nl = self.buffered.find(b"\n")
            if nl >= 0:
                got.append(self.buffered[:nl].decode())
                self.buffered = self.buffered[nl + 1:]
                continue
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Hang("no answer within %ds" % timeout)
                if not select.select([fd], [], [], left)[0]:
                    continue
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            self.buffered += chunk
        return got

    def request(self, lines):
        """Sends a group and waits for its answers; None if none came."""
        if not self.send(lines):
            return []
        return self.read_lines(len(lines))

    def finish(self, timeout=60):
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        rest = self.p.stdout.read().decode()
        rc = self.p.wait(timeout=timeout)
        if self.err is not subprocess.DEVNULL:
            self.err.close()
        return rc, rest

    def kill(self):
        self.p.kill()
        self.p.wait()
        if self.err is not subprocess.DEVNULL:
            self.err.close()


def run_lines(aup, args, lines, timeout=300):
    """Runs aup over the given lines at once; (exit code, answer lines, stderr)."""
    data = ("\n".join(lines) + "\n").encode() if lines else b""
    r = subprocess.run([aup, "run"] + args, input=data, capture_output=True, timeout=timeout,
                       env={k: v for k, v in os.environ.items() if k != "AUP_FAULTS"})
    return r.returncode, r.stdout.decode().splitlines(), r.stderr.decode()


def result(line):
    doc = json.loads(line)
    assert doc.get("ok") is True, line
    return doc["result"]


def states_after_groups(aup, module, groups):
    """The state (crash.aup's `state` query) after each prefix of whole
    groups, from one in-memory run: index g is the state after g groups."""
    lines = ['{"query":"state"}']
    for g in groups:
        lines += g
        lines.append('{"query":"state"}')
    rc, out, err = run_lines(aup, [module, "--memory"] + FIXED_TIME, lines)
    assert rc == 0, err
    states = [json.dumps(result(l)) for l in out if l.startswith('{"ok":true,"result":[')]
    assert len(states) == len(groups) + 1, (len(states), len(groups))
    return states
