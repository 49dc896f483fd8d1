#!/usr/bin/env python3
"""Command-line errors as a user meets them: every usage error is the
command's own (`aup run: ...`), names the closest option or command, and
says how to go on; help and -V; help text without the parser's workings;
--listen refused whole before a store exists; `aup run --bail` and the
exit status of a run whose events were answered `unavailable`; and the
smaller messages (an HTTP port called with the line protocol, `build -o`
into a missing directory, a text file as a module, `replay` without a
store, backup sizes, `aup call --key`).

Usage: errors_test.py AUP AUPC SOURCE_ROOT
"""
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

failures = []


def fail(what):
    failures.append(what)
    print("FAIL:", what)


def run(*args, stdin="", cwd=None, env=None):
    e = dict(os.environ)
    e.pop("AUP_FAULTS", None)
    if env:
        e.update(env)
    return subprocess.run(list(args), input=stdin, capture_output=True, text=True, timeout=120, cwd=cwd, env=e)


def expect(r, rc, pattern, what, stream="stderr"):
    text = getattr(r, stream)
    if r.returncode != rc or not re.search(pattern, text):
        fail(f"{what}: exit {r.returncode} (want {rc}), {stream}: {text!r} (want /{pattern}/)")


def usage_errors(aup, aupc, bank, tmp):
    store = os.path.join(tmp, "s1")
    os.mkdir(store)
    expect(run(aup, "run", bank, "--dta", store), 2,
           r"^aup run: unknown option `--dta`; did you mean `--data`\?", "an option misspelt")
    expect(run(aup, "replay", store), 2,
           r"^aup replay: unexpected argument `.*s1`; a store is given with --data DIR", "a store without --data")
    expect(run(aup, "replay", "s2", cwd=tmp), 2, r"a store is given with --data DIR \(aup replay --data s2\)",
           "a store name that is nothing yet, without --data")
    expect(run(aup, "cluster", "stauts"), 2, r"^aup cluster: no command `stauts`; did you mean `status`\?",
           "a subcommand misspelt")
    expect(run(aup, "--foo"), 2, r"^aup: unknown option `--foo`", "an unknown option of the program")
    expect(run(aupc, "check", "--bogus"), 2, r"^aupc check: unknown option `--bogus`", "aupc's unknown option")
    expect(run(aup, "backup", store), 2, r"^aup backup: unexpected argument `.*s1`; a store is given with --data",
           "a store without --data, --to missing too")
    expect(run(aup, "rnu"), 2, r"^aup: no command `rnu`; did you mean `run`\?", "a command misspelt")
    expect(run(aup, "run", bank, "--memory", "--max-batch", "0"), 2,
           r"^aup run: --max-batch 0: out of range; expected from 1 to 1000000", "a number out of range")
    expect(run(aup, "run", bank, "--memory", "--max-line", "lots"), 2,
           r"^aup run: --max-line lots: expected a whole number of bytes, from 64 bytes to 1 GiB", "not a number")
    expect(run(aup, "run", bank, "--memory", "--engine", "jti"), 2,
           r"^aup run: --engine jti: expected vm or jit; did you mean `jit`\?", "a word not among the choices")
    expect(run(aup, "check", "--color", "sometimes", bank), 2, r"^aup check: --color sometimes: expected auto, always "
           r"or never", "--color")
    expect(run(aup, "backup", "--data", store), 2, r"^aup backup: --to DEST is required", "a required option")
    expect(run(aup, "run"), 2, r"^aup run: no MODULE given", "a required argument")
    expect(run(aup, "run", bank, "--data"), 2, r"^aup run: --data needs a value: --data DIR", "an option's value")
    expect(run(aup, "run", bank, "--memory", "--data", store), 2,
           r"^aup run: --(data|memory) and --(memory|data) cannot be given together", "two options that exclude")
    expect(run(aup, "run", bank, "--memory", "--max-pending", "5"), 2, r"^aup run: --max-pending needs --listen",
           "an option that needs another")
    expect(run(aup, "run", bank, "--listen", ":0", "--bail"), 2, r"^aup run: --(bail|listen) and --(listen|bail) "
           r"cannot be given together", "--bail is for stdin")
    expect(run(aup, "run", bank, "--memory", "--fixed-time", "soon"), 2, r"^aup run: --fixed-time soon: expected a "
           r"time", "--fixed-time")
    for r in [run(aup, "run", bank, "--dta", store), run(aup, "replay", store), run(aup, "backup")]:
        if "following argument" in r.stderr or "Run with --help" in r.stderr or "is required" in r.stderr and \
                "REQUIRED" in r.stderr:
            fail(f"the parser's own words: {r.stderr!r}")


def listed_commands(aup):
    """The commands `aup --help` lists (a name at column 2 under Commands:),
    so that a command added later has its help checked too."""
    text = run(aup, "--help").stdout
    section = text.split("\nCommands:\n", 1)[1] if "\nCommands:\n" in text else ""
    return re.findall(r"^  ([a-z][a-z-]*) ", section, re.M)


def help_and_version(aup, aupc):
    for exe, name in [(aup, "aup"), (aupc, "aupc")]:
        for flag in ["-V", "--version"]:
            expect(run(exe, flag), 0, rf"^{name} \S+", f"{name} {flag}", stream="stdout")
    direct = run(aup, "run", "--help")
    helped = run(aup, "help", "run")
    if helped.returncode != 0 or helped.stdout != direct.stdout or "--engine" not in helped.stdout:
        fail(f"aup help run: exit {helped.returncode}, {helped.stdout[:200]!r}")
    if "Usage: aup run [OPTIONS] MODULE\n" not in direct.stdout:
        fail(f"aup run --help: the usage line names MODULE: {direct.stdout[:600]!r}")
    nested = run(aup, "help", "cluster", "status")
    if nested.returncode != 0 or "--cluster" not in nested.stdout or "Usage: aup cluster status" not in nested.stdout:
        fail(f"aup help cluster status: exit {nested.returncode}, {nested.stdout[:200]!r}")
    expect(run(aupc, "help", "build"), 0, r"--output", "aupc help build", stream="stdout")
    expect(run(aup, "help", "rnu"), 2, r"^aup: no command `rnu`; did you mean `run`\?", "aup help of no command")
    # The help of every command: plain type names, no validator workings.
    internals = re.compile(r"\b(UINT|INT|FLOAT|TEXT|ENUM|REQUIRED)\b|in \[| OR \{|->\d|\{vm,jit\}|Positionals|"
                           r"Subcommands")
    commands = [[c] for c in listed_commands(aup)] + [["cluster", "status"]]
    for c in ["check", "run", "get", "scan", "dump", "load"]:  # the list is read, not empty
        if [c] not in commands:
            fail(f"aup --help does not list `{c}`: {commands}")
    for exe, name, cmds in [(aup, "aup", commands), (aupc, "aupc", [["check"], ["build"]])]:
        for cmd in [[]] + cmds:
            r = run(exe, *cmd, "--help")
            m = internals.search(r.stdout)
            if r.returncode != 0 or m:
                fail(f"{name} {' '.join(cmd)} --help: exit {r.returncode}, shows `{m.group(0) if m else ''}`")
            lines = r.stdout.splitlines() + [""]
            for i, line in enumerate(lines[:-1]):
                # Every option has its help text, on its line or (a long
                # option) indented on the next.
                # CLI11 starts the text at column 30.
                if not re.match(r"^  -", line) or (len(line) > 30 and line[29] == " " and line[30] != " "):
                    continue
                if not re.match(r"^ {30}\S", lines[i + 1]):
                    fail(f"{name} {' '.join(cmd)} --help: no text for `{line.strip()}`")


def listen_refusals(aup, bank, tmp):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    cases = [
        ("tcp:127.0.0.1:18500", r"`tcp:127.0.0.1:18500` is not an address: its host would be `tcp:127.0.0.1`.*"
                                r"the forms are unix:PATH, HOST:PORT"),
        ("https://:18500", r"`https://:18500` is not an address \(no `https://`"),
        ("unix:" + os.path.join(tmp, "no", "such", "x.sock"), r"the directory .*/no/such does not exist"),
        ("unix:" + tmp + "/" + "x" * 120 + ".sock", r"the socket path of .* is \d+ bytes; at most 107 fit"),
        ("127.0.0.1:%d" % port, r"cannot listen on 127.0.0.1:%d: Address already in use" % port),
        ("no-such-host.invalid:18500", r"cannot resolve the host `no-such-host.invalid` of "
                                       r"`no-such-host.invalid:18500`.*an address is HOST:PORT; the forms are"),
    ]
    for i, (spec, pattern) in enumerate(cases):
        data = os.path.join(tmp, "listen-store-%d" % i)
        # A good address first: the bad one must be refused all the same,
        # with the good one's socket gone.
        good = os.path.join(tmp, "good-%d.sock" % i)
        r = run(aup, "run", bank, "--data", data, "--listen", "unix:" + good, "--listen", spec)
        expect(r, 2, r"^aup run: --listen: .*" + pattern, f"--listen {spec}")
        if os.path.exists(data):
            fail(f"--listen {spec}: the store {data} was created")
        if os.path.exists(good):
            fail(f"--listen {spec}: the socket of the good address was left behind")
    taken.close()


def bail_and_unavailable(aup, bank, tmp):
    lines = ['{"event":"open","args":{"id":1,"owner":"ann"},"id":1}',
             '{"event":"opne","args":{"id":2,"owner":"bob"},"id":2}',
             '{"event":"open","args":{"id":3,"owner":"cy"},"id":3}']
    stdin = "\n".join(lines) + "\n"
    r = run(aup, "run", bank, "--memory", stdin=stdin)
    if r.returncode != 0 or len(r.stdout.splitlines()) != 3:
        fail(f"a failed request without --bail: exit {r.returncode}, {r.stdout!r}")
    r = run(aup, "run", bank, "--memory", "--bail", stdin=stdin)
    out = r.stdout.splitlines()
    if r.returncode != 1 or len(out) != 2 or '"unknown_event"' not in out[1] or "--bail" not in r.stderr:
        fail(f"--bail: exit {r.returncode}, {r.stdout!r} {r.stderr!r}")
    # The request after the failed one was not run: the store has 1 only.
    data = os.path.join(tmp, "bail-store")
    run(aup, "run", bank, "--data", data, "--bail", stdin=stdin)
    dump = run(aup, "replay", "--data", data, "--dump", "accounts")
    if dump.stdout.count("\n") != 1 or '"ann"' not in dump.stdout:
        fail(f"--bail ran requests after the failed one: {dump.stdout!r}")
    r = run(aup, "run", bank, "--data", data, "--bail", stdin=lines[2] + "\n" + lines[2] + "\n")
    if r.returncode != 1 or len(r.stdout.splitlines()) != 2:
        fail(f"--bail at a failed event (`duplicate`): exit {r.returncode}, {r.stdout!r}")
    # An event the store cannot commit: exit 1 even without --bail.
    r = run(aup, "run", bank, "--data", data, stdin='{"event":"deposit","args":{"id":1,"amount":5}}\n',
            env={"AUP_FAULTS": "fail:fdatasync:1:EIO"})
    if r.returncode != 1 or '"unavailable"' not in r.stdout or "could not commit" not in r.stderr:
        fail(f"an event answered unavailable: exit {r.returncode}, {r.stdout!r} {r.stderr!r}")


def start_server(aup, bank, tmp, listen, *more):
    p = subprocess.Popen([aup, "run", bank, "--memory", "--listen", listen, *more], stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, text=True)
    line = p.stderr.readline()
    m = re.search(r"listening on (\S+)", line)
    if not m:
        p.kill()
        raise SystemExit(f"the server did not start: {line!r}")
    return p, m.group(1)


def call_messages(aup, bank, tmp):
    p, where = start_server(aup, bank, tmp, "http://:0")
    try:
        port = where.rsplit(":", 1)[1]
        r = run(aup, "call", ":" + port, "open", "1", "ann")
        expect(r, 2, r"the server answered in HTTP.*http://HOST:PORT", "aup call of an HTTP port")
        if "unexpected `H`" in r.stderr:
            fail(f"aup call of an HTTP port: {r.stderr!r}")
    finally:
        p.terminate()
        p.wait(timeout=30)
    sock = os.path.join(tmp, "keys.sock")
    p, where = start_server(aup, bank, tmp, "unix:" + sock, "--keys", "100")
    try:
        first = run(aup, "call", where, "--key", "k-1", "open", "1", "ann")
        again = run(aup, "call", where, "--key", "k-1", "open", "1", "ann")
        if first.returncode != 0 or again.returncode != 0 or first.stdout != again.stdout:
            fail(f"aup call --key: a retry is answered again: {first.stdout!r} {again.stdout!r} {again.stderr!r}")
        expect(run(aup, "call", where, "--key", "k-2", "balance", "1"), 2,
               r"^aup call: --key: `balance` is a query; an idempotency key is for an event", "--key on a query")
        expect(run(aup, "call", where, "--key", "k-3", '{"event":"open","args":{"id":2,"owner":"b"}}'), 2,
               r"a JSON request carries its own \"key\"", "--key with a JSON request")
    finally:
        p.terminate()
        p.wait(timeout=30)


def smaller_messages(aup, bank, tmp):
    r = run(aup, "build", bank, "-o", os.path.join(tmp, "missing", "x.aupm"))
    expect(r, 2, r"cannot write .*/missing/x\.aupm: the directory .*/missing does not exist", "build -o MISSING/x")
    if ".tmp" in r.stderr:
        fail(f"build -o MISSING/x names a temporary file: {r.stderr!r}")
    notes = os.path.join(tmp, "notes.txt")
    with open(notes, "w") as f:
        f.write("hello!\n")
    r = run(aup, "run", notes, "--memory")
    expect(r, 1, r"not an aup module.*to run source, name an \.aup file", "a text file as a module")
    if "truncated" in r.stderr:
        fail(f"a text file as a module: {r.stderr!r}")
    empty = os.path.join(tmp, "empty")
    os.mkdir(empty)
    expect(run(aup, "replay", cwd=empty), 2, r"^aup replay: no store at aup-data \(aup-data is the default; name the "
           r"store with --data DIR\)", "replay without a store")
    expect(run(aup, "replay", "--data", empty), 2, r"is not a store: it has no schema file", "replay of no store")
    data = os.path.join(tmp, "small-store")
    run(aup, "run", bank, "--data", data, stdin='{"event":"open","args":{"id":1,"owner":"ann"}}\n')
    r = run(aup, "backup", "--data", data, "--to", os.path.join(tmp, "small-copy"))
    expect(r, 0, r", \d+(\.\d)? (bytes|KiB), 1 row; verified", "backup of a small store", stream="stdout")
    if " MB" in r.stdout:
        fail(f"backup reports MB: {r.stdout!r}")


def main():
    aup, aupc, root = (os.path.abspath(a) for a in sys.argv[1:4])
    bank = os.path.join(root, "examples", "bank", "bank.aup")
    with tempfile.TemporaryDirectory() as tmp:
        usage_errors(aup, aupc, bank, tmp)
        help_and_version(aup, aupc)
        listen_refusals(aup, bank, tmp)
        bail_and_unavailable(aup, bank, tmp)
        call_messages(aup, bank, tmp)
        smaller_messages(aup, bank, tmp)
    if failures:
        print(f"{len(failures)} failed")
        return 1
    print("command-line errors: all as documented")
    return 0


if __name__ == "__main__":
    sys.exit(main())
