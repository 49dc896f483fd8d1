#!/usr/bin/env python3
"""`aup shell` on a terminal, typed into as a person would (a pty).

usage: shell_pty_test.py AUP SOURCE_ROOT

Tab completes a request's name and then its argument names, listed in the
module's order; rows print as an aligned table (.mode line and .mode json
otherwise); a failed request shows its code; the up arrow brings back the
last line; the history file keeps the lines for the next session, where
the up arrow finds them again. Ctrl-C drops the line being typed and
leaves the --memory state alone; Ctrl-C twice on an empty line, Ctrl-D and
.quit leave, a --memory shell whose state changed asking first; Ctrl-C
while an answer is awaited says so and the answer still comes. .tables
shows keys and indexes. A non-ASCII letter is typed whole. The exit status is the session's (1: a request
failed).
"""
import json
import os
import pty
import re
import select
import socket
import subprocess
import sys
import tempfile
import termios
import threading
import time

aup, root = sys.argv[1], sys.argv[2]
bank = os.path.join(root, "examples/bank/bank.aup")
tmp = tempfile.mkdtemp()
history = os.path.join(tmp, "history")
failures = []
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]|[\r\x07\x08]")


class Shell:
    def __init__(self, *target):
        env = dict(os.environ, TERM="xterm", AUP_HISTORY=history, AUP_ENGINE="vm", LC_ALL="C.UTF-8")
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execve(aup, [aup, "shell"] + list(target or (bank, "--memory")), env)
        self.screen = b""
        self.status = None  # the exit status, once it has left

    def left(self):
        """Whether the shell has left (then the keys for it are not typed: each would wait in vain)."""
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
                failures.append(f"the shell left (status {self.status}) before it was told to; the screen "
                                f"showed {ANSI.sub(b'', self.screen).decode(errors='replace')[-300:]!r}")
        return self.status is not None

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
        while time.time() < deadline and not self.left():
            if not termios.tcgetattr(self.fd)[3] & termios.ICANON:
                return
            self.read_until("\0", timeout=0.05)  # keep the terminal drained
        if self.status is None:
            failures.append("the shell never took the terminal for line editing")

    def type(self, keys):
        self.wait_for_editing()
        if self.status is None:
            os.write(self.fd, keys.encode())

    def expect(self, keys, text, what):
        mark = len(self.screen)
        self.type(keys)
        if self.status is None and not self.read_until(text):
            failures.append(f"{what}: typed {keys!r}, expected {text!r}; the screen showed "
                            f"{ANSI.sub(b'', self.screen[mark:]).decode(errors='replace')!r}")

    def close(self):
        """The exit status, once the shell has left (killed, and a failure, if it has not in 10 s)."""
        if self.status is not None:
            return self.status
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
# Nothing in common to add: the choices listed as the module declares them.
s.expect("transfer \t", "from=  to=  amount=", "completion lists arguments in declared order")
s.expect("\x15deposit 1 100\r", "| balance |\n+---------+\n|     100 |", "a row prints as a table")
s.expect("balance 9\r", "not_found: `accounts` has no key 9", "a failed request shows its code")
# On a terminal the failure is in red (SGR 31), and so is a refusal's "error".
if b"\x1b[31mnot_found: `accounts` has no key 9" not in s.screen:
    failures.append("a failed request's code and message are red on a terminal")
s.expect("depost 1 1\r", "did you mean `deposit`?", "a misspelt name is caught before sending")
if b"\x1b[31merror\x1b[0m no event or query `depost`" not in s.screen:
    failures.append("a refusal before sending says `error` in red on a terminal")
s.expect("\x1b[A", "depost 1 1", "the up arrow brings back the last line")
# Ctrl-C drops the line (it is not run) and the shell, and its --memory
# state, stay: the balance is still 100, not 150.
mark = len(s.screen)
s.expect("\x15deposit 1 50\x03", "aup> ", "Ctrl-C gives a new prompt")
s.expect("balance 1\r", "100", "after Ctrl-C the shell and its state are there")
if b"150" in s.screen[mark:]:
    failures.append("Ctrl-C ran the line it should have dropped")
# A letter beyond ASCII is typed whole (libedit reads it as one character).
s.expect("open 2 Zoë\r", "ok", "a text with a non-ASCII letter")
s.expect("accounts_all\r", "| id | owner | balance |", "rows print as a table")
if "|  2 | Zoë   |".encode() not in ANSI.sub(b"", s.screen):
    failures.append("a non-ASCII text arrives whole, and its column is aligned by characters")
s.expect(".mode line\r", "aup> ", ".mode line")
s.expect("accounts_all\r", "  owner = ann", ".mode line: field = value")
s.expect(".mode json\r", "aup> ", ".mode json")
s.expect("accounts_all\r", '"owner": "ann"', ".mode json: the result as JSON")
s.expect(".mode\r", "json", ".mode alone says the mode")
s.expect(".mode table\r", "aup> ", ".mode table")
s.expect(".tables\r", "accounts   key (id)", ".tables shows each table's key")
# Leaving a --memory shell whose state changed asks, whichever way.
s.expect("\x03", "(Ctrl-C again, Ctrl-D or .quit leaves)", "Ctrl-C on an empty line says how to leave")
s.expect("\x03", "(3 events applied) ends with it. Leave? (y/N)", "Ctrl-C twice asks before leaving")
s.expect("n\r", "aup> ", "no: the shell stays")
s.expect(".quit\r", "Leave? (y/N)", ".quit asks too")
s.expect("\r", "aup> ", "no by default")
s.expect("balance 1\r", "100", "the state is still there")
s.expect("\x04", "Leave? (y/N)", "Ctrl-D asks too")
s.type("y\r")  # close() checks that it left
code = s.close()
if code != 0:
    failures.append(f"a session whose failed request was answered exits 0, as aup run does, got {code}")
# libedit's history file writes a space as \040.
kept = open(history).read().replace("\\040", " ") if os.path.exists(history) else ""
for line in ["open id=1 owner=ann", "balance 9"]:
    if line not in kept:
        failures.append(f"the history file keeps {line!r}: {kept!r}")
if "deposit 1 50" in kept:
    failures.append(f"a line dropped by Ctrl-C is not kept in the history: {kept!r}")

s = Shell()
s.read_until("aup> ")
s.expect("\x1b[A", "balance 1", "history from the last session")
s.expect("\x15.timing on\r", "aup> ", ".timing on")
s.expect("total\r", " ms)", ".timing prints the time an answer took")
s.type("\x04")  # end of input leaves, no question: no event was applied (close() checks that it did)
code = s.close()
if code != 0:
    failures.append(f"a session of ok requests exits 0, got {code}")
if b"Leave?" in s.screen:
    failures.append("a --memory shell no event changed leaves without asking")

# .tables: keys and indexes; Ctrl-C twice on an empty line leaves a shell
# without changes at once.
people = os.path.join(tmp, "people.aup")
with open(people, "w") as f:
    f.write("record Person { id: num, name: text, email: text }\n"
            "table people: Person key id\n"
            "index by_name on people (name)\n"
            "unique index by_email on people (email)\n"
            "query count() { return people.count }\n")
s = Shell(people, "--memory")
s.read_until("aup> ")
s.expect(".tables\r", "people  key (id)  index by_name (name)  unique index by_email (email)",
         ".tables shows keys and indexes")
s.expect("\x03", "(Ctrl-C again", "the first Ctrl-C on an empty line")
s.type("\x03")
code = s.close()
if code != 0:
    failures.append(f"Ctrl-C twice leaves with the session's status, got {code}")


# Ctrl-C while an answer is awaited: a server that takes its time (its
# schema is bank's, as a shell from a pipe prints it).
schema = subprocess.run([aup, "shell", bank, "--memory"], input=".schema\n", capture_output=True, text=True,
                        env=dict(os.environ, AUP_ENGINE="vm")).stdout.strip()
sock_path = os.path.join(tmp, "slow.sock")
listener = socket.socket(socket.AF_UNIX)
listener.bind(sock_path)
listener.listen(1)


def slow_server():
    conn, _ = listener.accept()
    reader = conn.makefile("rb")
    for n, _ in enumerate(reader):
        if n == 0:
            conn.sendall(json.dumps({"ok": True, "result": json.loads(schema)}).encode() + b"\n")
        else:
            time.sleep(2)
            conn.sendall(b'{"ok":true,"result":4242}\n')


threading.Thread(target=slow_server, daemon=True).start()
s = Shell("unix:" + sock_path)
s.read_until("aup> ")
s.type("total\r")
time.sleep(0.5)
os.write(s.fd, b"\x03")
if not s.read_until("waiting for its answer"):
    failures.append(f"Ctrl-C while waiting says what happens: {ANSI.sub(b'', s.screen).decode(errors='replace')!r}")
if not s.read_until("4242"):
    failures.append(f"the answer still comes after Ctrl-C: {ANSI.sub(b'', s.screen).decode(errors='replace')!r}")
s.type("\x04")
code = s.close()
if code != 0:
    failures.append(f"a session with a Ctrl-C while waiting exits 0, got {code}")

for f in failures:
    print("FAIL: " + f)
if not failures:
    print("shell: all checks passed")
sys.exit(1 if failures else 0)
