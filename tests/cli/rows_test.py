#!/usr/bin/env python3
"""Rows by hand (cli/rows.h, runtime/read.h): `aup get` and `aup scan`
against a served store (from, to, index, limit, next, --all), each refusal
of the read request with its code, the limits at and past them, the
shell's `.get` and `.scan`, the reads counted in the stats, reads on a
replica, and `aup dump`
from a server and from a store directory loaded with `aup load` into a
store of another module: a success, and rows that do not fit, reported by
line, table and field, with nothing loaded.

usage: rows_test.py AUP
"""
import json
import os
import subprocess
import sys
import tempfile
import time

failures = []

MODULE = """
record Account { id: num, owner: text, balance: num = 0 }
record Line { w: num, o: text, qty: num }
table accounts: Account key id
table lines: Line key (w, o)
index by_owner on accounts (owner)
event open { id: num, owner: text }
on open { accounts.add(Account { id: open.id, owner: open.owner, balance: 0 }) }
event line { w: num, o: text, qty: num }
on line { lines.add(Line { w: line.w, o: line.o, qty: line.qty }) }
event many { n: num }
on many {
  let i = 100
  while i < 100 + many.n {
    accounts.add(Account { id: i, owner: "m", balance: 0 })
    i = i + 1
  }
}
"""

# The same tables with a new field (with a default) and without `balance`'s
# default: rows dumped above load into it.
MODULE_NEW = """
record Account { id: num, owner: text, balance: num, tier: text = "basic" }
record Line { w: num, o: text, qty: num }
table accounts: Account key id
table lines: Line key (w, o)
query n() { return accounts.count }
"""

# `owner` is a num here: the dumped rows do not fit.
MODULE_BAD = """
record Account { id: num, owner: num, balance: num }
record Line { w: num, o: text, qty: num }
table accounts: Account key id
table lines: Line key (w, o)
query n() { return accounts.count }
"""


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg, flush=True)


def check(cond, msg):
    if not cond:
        fail(msg)


def run(aup, *args, input=None):
    return subprocess.run([aup, *args], capture_output=True, text=True, timeout=60, input=input)


def expect(r, code, out=None, err=None, what=""):
    where = what or " ".join(r.args[1:])
    check(r.returncode == code, f"{where}: exit {r.returncode}, not {code}: {r.stderr.strip()}")
    if out is not None:
        check(r.stdout == out, f"{where}: stdout {r.stdout!r}, not {out!r}")
    if err is not None:
        check(err in r.stderr, f"{where}: stderr {r.stderr!r} lacks {err!r}")


def row(i, owner):
    return json.dumps({"id": i, "owner": owner, "balance": 0}, separators=(",", ":"))


def start(aup, module, data, sock):
    p = subprocess.Popen([aup, "run", module, "--data", data, "--listen", "unix:" + sock, "--io-threads", "1"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for _ in range(200):
        if os.path.exists(sock):
            return p
        time.sleep(0.05)
    p.kill()
    raise SystemExit("the server did not start: " + p.stderr.read())


def get_and_scan(aup, addr):
    expect(run(aup, "get", addr, "accounts", "3"), 0, row(3, "ann") + "\n")
    expect(run(aup, "get", addr, "accounts", "9"), 0, "", "`accounts` has no row with that key")
    expect(run(aup, "get", addr, "lines", "1", "b"), 0, '{"w":1,"o":"b","qty":6}\n')
    expect(run(aup, "get", addr, "lines", '[2,"a"]'), 0, '{"w":2,"o":"a","qty":7}\n')
    expect(run(aup, "scan", addr, "accounts", "--from", "2", "--to", "4"), 0,
           "".join(row(i, o) + "\n" for i, o in [(2, "bo"), (3, "ann"), (4, "cy")]))
    r = run(aup, "scan", addr, "accounts", "--limit", "2")
    expect(r, 0, row(1, "ann") + "\n" + row(2, "bo") + "\n", "more rows follow: continue with --from 3")
    expect(run(aup, "scan", addr, "accounts", "--limit", "2", "--all"), 0,
           "".join(row(i, o) + "\n" for i, o in [(1, "ann"), (2, "bo"), (3, "ann"), (4, "cy"), (5, "bo")]))
    r = run(aup, "scan", addr, "accounts", "--index", "by_owner", "--limit", "3")
    expect(r, 0, row(1, "ann") + "\n" + row(3, "ann") + "\n" + row(2, "bo") + "\n",
           "continue with --from bo --from 5")
    expect(run(aup, "scan", addr, "accounts", "--index", "by_owner", "--from", "bo", "--from", "5"), 0,
           row(5, "bo") + "\n" + row(4, "cy") + "\n")
    expect(run(aup, "scan", addr, "lines", "--from", "1", "--to", "1"), 0,
           '{"w":1,"o":"a","qty":5}\n{"w":1,"o":"b","qty":6}\n')
    # Mistakes the client tells before sending (exit 2), as `aup call` does.
    expect(run(aup, "scan", addr, "acounts"), 2, "", "no table `acounts`; did you mean `accounts`?")
    expect(run(aup, "get", addr, "accounts", "x"), 2, "", "id: expected number, got `x`")
    expect(run(aup, "get", addr, "lines", "1"), 2, "", "the key of `lines` is (w, o): 2 values, not 1")
    expect(run(aup, "scan", addr, "accounts", "--index", "by_ownr"), 2, "", "did you mean `by_owner`?")
    expect(run(aup, "scan", addr, "accounts", "--limit", "10001"), 2)


def refusals(aup, addr):
    """Each refusal of the read request, as the server answers it (exit 1)."""
    def refused(body, code, message):
        r = run(aup, "call", addr, json.dumps({"read": body}))
        expect(r, 1, what=f"read {body}")
        try:
            err = json.loads(r.stdout)["error"]
        except (ValueError, KeyError):
            return fail(f"read {body}: answer {r.stdout!r}")
        check(err == {"code": code, "message": message}, f"read {body}: {err}")
    refused({"table": "acounts"}, "bad_request", "no table `acounts`; did you mean `accounts`?")
    refused({"table": "accounts", "key": [1, 2]}, "bad_request",
            "`key` has 2 values; the key of `accounts` is (id): one value each")
    refused({"table": "accounts", "key": ["1"]}, "bad_args", "key[0] (`id` of `accounts`): expected number, got string")
    refused({"table": "accounts", "index": "by_ownr"}, "bad_request",
            "`accounts` has no index `by_ownr`; did you mean `by_owner`?")
    refused({"table": "accounts", "limit": 0}, "bad_request", "`limit` must be a whole number of rows, 1 to 10000")
    refused({"table": "accounts", "limit": 10001}, "bad_request",
            "`limit` 10001 is over 10000, the most rows one read answers: page on with `next`")
    refused({"table": "accounts", "bytes": 16777217}, "bad_request",
            "`bytes` 16777217 is over 16777216, the most bytes of rows one read answers: page on with `next`")
    refused({"table": "accounts", "key": [1], "bytes": 10}, "bad_request",
            "`key` reads the one row with that key: no `from`, `to`, `index`, `limit` or `bytes` beside it")


def limits(aup, addr):
    """The row limit at its default and most, and past it; the byte limit."""
    expect(run(aup, "call", addr, "many", "10100"), 0)
    r = run(aup, "call", addr, json.dumps({"read": {"table": "accounts", "from": [100]}}))
    res = json.loads(r.stdout)["result"]
    check(len(res["rows"]) == 100 and res["next"] == [200], f"default limit: {len(res['rows'])} rows, {res.get('next')}")
    r = run(aup, "call", addr, json.dumps({"read": {"table": "accounts", "from": [100], "limit": 10000}}))
    res = json.loads(r.stdout)["result"]
    check(len(res["rows"]) == 10000 and res["next"] == [10100], f"limit 10000: {len(res['rows'])}, {res.get('next')}")
    r = run(aup, "call", addr, json.dumps({"read": {"table": "accounts", "bytes": 16777216, "limit": 10000}}))
    check(len(json.loads(r.stdout)["result"]["rows"]) == 10000, "bytes 16777216: not 10000 rows")
    one = len(row(100, "m"))
    r = run(aup, "call", addr, json.dumps({"read": {"table": "accounts", "from": [100], "bytes": 2 * one}}))
    res = json.loads(r.stdout)["result"]
    check(len(res["rows"]) == 2 and res["next"] == [102], f"bytes at two rows: {res}")
    r = run(aup, "call", addr, json.dumps({"read": {"table": "accounts", "from": [100], "bytes": 2 * one - 1}}))
    res = json.loads(r.stdout)["result"]
    check(len(res["rows"]) == 1 and res["next"] == [101], f"bytes past one row: {res}")
    r = run(aup, "scan", addr, "accounts", "--from", "100", "--all")
    check(r.returncode == 0 and len(r.stdout.splitlines()) == 10100, f"--all: {len(r.stdout.splitlines())} rows")


def shell(aup, addr):
    script = ".get accounts 2\n.scan accounts from=4\n.scan accounts limit=1 index=by_owner\n.get nope 1\n"
    r = run(aup, "shell", addr, input=script)
    lines = r.stdout.splitlines()
    check(len(lines) == 3, f"shell: {r.stdout!r}")
    if len(lines) == 3:
        check(json.loads(lines[0])["result"]["rows"] == [json.loads(row(2, "bo"))], f"shell .get: {lines[0]}")
        check([x["id"] for x in json.loads(lines[1])["result"]["rows"]][:2] == [4, 5], f"shell .scan: {lines[1]}")
        check(json.loads(lines[2])["result"]["next"] == ["ann", 3], f"shell .scan index: {lines[2]}")
    # A refused line is said and the script goes on: exit 0, as `aup run` (only --bail stops, exit 1).
    check("no table `nope`" in r.stderr and r.returncode == 0, f"shell .get nope: {r.returncode} {r.stderr!r}")
    r = run(aup, "shell", addr, "--bail", input=".get nope 1\n.get accounts 2\n")
    check(r.returncode == 1 and r.stdout == "", f"shell --bail at .get nope: {r.returncode} {r.stdout!r}")


def stats(aup, addr):
    r = run(aup, "stats", addr, "--json")
    st = json.loads(r.stdout)["result"]
    # get_and_scan sent 12 reads (the --all scan three pages; its mistakes
    # none), the shell 3; the refusals count as requests_invalid.
    check(st.get("reads") == 15, f"stats: reads {st.get('reads')}, not 15")


def dump_and_load(aup, tmp, addr, data):
    new = os.path.join(tmp, "new.aup")
    bad = os.path.join(tmp, "bad.aup")
    with open(new, "w") as f:
        f.write(MODULE_NEW)
    with open(bad, "w") as f:
        f.write(MODULE_BAD)
    served = run(aup, "dump", addr, "--table", "accounts", "--table", "lines")
    expect(served, 0)
    from_dir = run(aup, "dump", "--data", data)
    expect(from_dir, 0, served.stdout, "read as of save")
    lines = served.stdout.splitlines()
    check(json.loads(lines[0]) == {"table": "accounts", "row": json.loads(row(1, "ann"))}, f"dump: {lines[0]}")
    dump_file = os.path.join(tmp, "rows.ndjson")
    with open(dump_file, "w") as f:
        f.write(served.stdout)
    target = os.path.join(tmp, "target")
    expect(run(aup, "load", new, "--data", target, dump_file), 0, "", f"loaded {len(lines)} rows into {target}")
    got = run(aup, "dump", "--data", target, "--table", "accounts").stdout.splitlines()
    check(json.loads(got[0])["row"] == {"id": 1, "owner": "ann", "balance": 0, "tier": "basic"}, f"loaded: {got[:1]}")
    # Again into the same store: every key is there already.
    expect(run(aup, "load", new, "--data", target, dump_file), 1, "",
           "nothing was loaded: line 1: table `accounts`: `accounts` already has key 1")
    expect(run(aup, "load", bad, "--data", os.path.join(tmp, "bad"), dump_file), 1, "",
           "nothing was loaded: line 1: table `accounts`: owner: expected number, got string")
    broken = lines[:3] + ['{"table":"accounts","row":{"id":7,"ownr":"x","balance":1}}'] + lines[3:]
    other = os.path.join(tmp, "other")
    expect(run(aup, "load", new, "--data", other, input="\n".join(broken) + "\n"), 1, "",
           "nothing was loaded: line 4: table `accounts`: unknown field `ownr`; did you mean `owner`?")
    expect(run(aup, "dump", "--data", other), 0, "")  # nothing of the first three lines
    # A served store is held by its server: load into it after it stops.
    expect(run(aup, "load", new, "--data", data, dump_file), 2, "", f"the store {data} is in use by another aup")
    expect(run(aup, "load", new, "--data", other, input='{"table":"acount","row":{}}\n'), 1, "",
           "line 1: the module has no table `acount`; did you mean `accounts`?")
    expect(run(aup, "load", new, "--data", other, input='{"table":"lines","row":{"w":1,"o":"a","qty":5}}\n'
               '{"table":"lines","row":{"w":1,"o":"a","qty":6}}\n'), 1, "",
           "line 2: table `lines`: `lines` already has key (1, \"a\")")


def replica(aup, tmp, module, addr):
    """A replica answers reads as it answers queries, `after` a save too."""
    sock = os.path.join(tmp, "r.sock")
    p = subprocess.Popen([aup, "run", module, "--data", os.path.join(tmp, "replica"), "--listen", "unix:" + sock,
                          "--replica-of", addr], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        save = json.loads(run(aup, "stats", addr, "--json").stdout)["result"]["replication_save"]
        r = run(aup, "call", "unix:" + sock,
                json.dumps({"read": {"table": "accounts", "key": [3]}, "after": int(save)}))
        expect(r, 0, '{"ok":true,"result":{"rows":[' + row(3, "ann") + ']}}\n', what="read on a replica")
        expect(run(aup, "scan", "unix:" + sock, "lines", "--from", "3"), 0, '{"w":3,"o":"c","qty":8}\n')
    finally:
        p.terminate()
        p.wait(timeout=10)


def main():
    aup = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        module = os.path.join(tmp, "rows.aup")
        with open(module, "w") as f:
            f.write(MODULE)
        data, sock = os.path.join(tmp, "data"), os.path.join(tmp, "s.sock")
        server = start(aup, module, data, sock)
        addr = "unix:" + sock
        try:
            for i, owner in enumerate(["ann", "bo", "ann", "cy", "bo"], 1):
                expect(run(aup, "call", addr, "open", str(i), owner), 0)
            for w, o, q in [(1, "a", 5), (1, "b", 6), (2, "a", 7), (3, "c", 8)]:
                expect(run(aup, "call", addr, "line", str(w), o, str(q)), 0)
            get_and_scan(aup, addr)
            refusals(aup, addr)
            shell(aup, addr)
            stats(aup, addr)
            dump_and_load(aup, tmp, addr, data)
            replica(aup, tmp, module, addr)
            limits(aup, addr)
        finally:
            server.terminate()
            server.wait(timeout=10)
    if failures:
        print(f"{len(failures)} failures")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
