#!/usr/bin/env python3
"""`aup shell` on a terminal, typed into as a person would (a pty).

usage: shell_pty_test.py AUP SOURCE_ROOT

Tab completes a request's name and then its argument names; an answer is
laid out; a failed request shows its code; the up arrow brings back the
last line; the history file keeps the lines for the next session, where
the up arrow finds them again; .quit leaves with the exit status of the
session (1: a request failed).
"""
import os
import pty
import re
import select
import sys
import tempfile
import termios
import time

aup, root = sys.argv[1], sys.argv[2]
bank = os.path.join(root, "examples/bank/bank.aup")
tmp = tempfile.mkdtemp()
history = os.path.join(tmp, "history")
failures = []
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]|[\r\x07\x08]")


class Shell:
    def __init__(self):
        env = dict(os.environ, TERM="xterm", AUP_HISTORY=history, AUP_ENGINE="vm")
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execve(aup, [aup, "shell", bank, "--memory"], env)
        self.screen = b""

    def read_until(self, text, timeout=10):
        """Reads the terminal until `text` (ANSI codes stripped) shows up after what was read so far."""
        start = len(ANSI.sub(b"", self.screen))
        deadline = time.time() + timeout
        while time.time() < deadline:
            if text.encode() in ANSI.sub(b"", self.screen)[start:]:
                return True
            r, _, _ = select.select([self.fd], [], [], 0.2)
            if r:
                try:
                    self.screen += os.read(self.fd, 65536)
                except OSError:
                    break
        return text.encode() in ANSI.sub(b"", self.screen)[start:]

    def wait_for_editing(self, timeout=20):
        """Waits until libedit has the terminal (canonical mode off): keys typed before
        that are read by the terminal driver as plain text."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if not termios.tcgetattr(self.fd)[3] & termios.ICANON:
                return
            self.read_until("\0", timeout=0.05)  # keep the terminal drained
        failures.append("the shell never took the terminal for line editing")

    def type(self, keys):
        self.wait_for_editing()
        os.write(self.fd, keys.encode())

    def expect(self, keys, text, what):
        mark = len(self.screen)
        self.type(keys)
        if not self.read_until(text):
            failures.append(f"{what}: typed {keys!r}, expected {text!r}; the screen showed "
                            f"{ANSI.sub(b'', self.screen[mark:]).decode(errors='replace')!r}")

    def close(self):
        """The exit status, once the shell has left (killed, and a failure, if it has not in 10 s)."""
        deadline = time.time() + 10
        while time.time() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
            self.read_until("\0", timeout=0.2)  # keep the terminal drained
        failures.append(f"the shell did not leave; the screen showed {ANSI.sub(b'', self.screen).decode(errors='replace')!r}")
        os.kill(self.pid, 9)
        os.waitpid(self.pid, 0)
        return None


s = Shell()
if not s.read_until("aup> "):
    failures.append(f"no prompt: {s.screen!r}")
s.expect("op\t", "open ", "tab completes a name")
s.expect("i\t", "id=", "tab completes an argument name")
s.expect("1 own\t", "owner=", "tab completes the next argument")
s.expect("ann\r", "ok", "an event without a result answers ok")
s.expect("deposit 1 100\r", '{"balance": 100}', "an answer is laid out")
s.expect("balance 9\r", "not_found: `accounts` has no key 9", "a failed request shows its code")
# On a terminal the failure is in red (SGR 31), and so is a refusal's "error".
if b"\x1b[31mnot_found: `accounts` has no key 9" not in s.screen:
    failures.append("a failed request's code and message are red on a terminal")
s.expect("depost 1 1\r", "did you mean `deposit`?", "a misspelt name is caught before sending")
if b"\x1b[31merror\x1b[0m no event or query `depost`" not in s.screen:
    failures.append("a refusal before sending says `error` in red on a terminal")
s.expect("\x1b[A", "depost 1 1", "the up arrow brings back the last line")
s.type("\x15.quit\r")  # ctrl-U clears the line; .quit leaves (close() checks that it did)
code = s.close()
if code != 1:
    failures.append(f"a session with a failed request exits 1, got {code}")
# libedit's history file writes a space as \040.
kept = open(history).read().replace("\\040", " ") if os.path.exists(history) else ""
for line in ["open id=1 owner=ann", "balance 9"]:
    if line not in kept:
        failures.append(f"the history file keeps {line!r}: {kept!r}")

s = Shell()
s.read_until("aup> ")
s.expect("\x1b[A\x1b[A", "depost 1 1", "history from the last session")
s.expect("\x15.timing on\r", "aup> ", ".timing on")
s.expect("total\r", " ms)", ".timing prints the time an answer took")
s.type("\x04")  # end of input leaves (close() checks that it did)
code = s.close()
if code != 0:
    failures.append(f"a session of ok requests exits 0, got {code}")

for f in failures:
    print("FAIL: " + f)
if not failures:
    print("shell: all checks passed")
sys.exit(1 if failures else 0)
