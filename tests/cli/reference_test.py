#!/usr/bin/env python3
"""What docs/protocol.md states of requests that a golden program cannot
hold (tests/programs/reference.aup holds the rest):

  - invalid UTF-8 in a request line (raw bytes: in a text, a member name,
    outside any string) is `bad_request`, "not JSON: invalid UTF-8 at byte
    N" with N counted from 0, answered without an `id`; in an HTTP body,
    and a lone surrogate there, "the body is not JSON: ...";
  - which requests the stats request counts, and where: every kind of
    request over stdin with --keys, then the stats answer's counters, each
    exactly; a line over --max-line is answered without its `id`.

usage: reference_test.py AUP
"""
import json
import re
import socket
import subprocess
import sys
import tempfile

FAILURES = []


def fail(msg):
    FAILURES.append(msg)
    print("FAIL: " + msg, flush=True)


def check(got, want, what):
    if got != want:
        fail(f"{what}: got {got!r}, want {want!r}")


MODULE = """
record Account { id: num, balance: num }
table accounts: Account key id
event open { id: num }
on open { accounts.add(Account { id: open.id, balance: 0 }) }
event say { m: text }
on say { fail m_of(say.m) }
fn m_of(m: text): text { return m }
event parse { t: text }
on parse { return num(parse.t) }
event infinite {}
on infinite { return 1 / 0 }
event deposit { id: num, amount: num }
on deposit {
  let a = accounts[deposit.id]
  a.balance = a.balance + deposit.amount
  return a.balance
}
query balance(id: num) { return accounts[id].balance }
"""


def run(aup, module, lines, *flags):
    data = b"".join(l + b"\n" for l in lines)
    p = subprocess.run([aup, "run", module, "--memory", "--fixed-time", "1700000000000", *flags], input=data,
                       capture_output=True, timeout=60)
    if p.returncode != 0:
        fail(f"aup run exited {p.returncode}: {p.stderr.decode(errors='replace')}")
    return p.stdout.split(b"\n")[:-1]


def invalid_utf8(aup, module):
    cases = [
        (b'{"event":"say","args":{"m":"\xff"},"id":1}', 28),
        (b'{"event":"say","args":{"m":"\xc0\xaf"},"id":2}', 28),      # an overlong `/`
        (b'{"event":"say","args":{"m":"\xed\xa0\x80"},"id":3}', 28),  # a surrogate, encoded
        (b'{"event":"say","args":{"m":"ok \xe2\x82"},"id":4}', 31),   # a sequence cut short
        (b'{"ev\xffent":"say","id":5}', 4),
    ]
    answers = run(aup, module, [c for c, _ in cases])
    check(len(answers), len(cases), "one answer a line")
    for (line, at), answer in zip(cases, answers):
        want = ('{"ok":false,"error":{"code":"bad_request","message":"not JSON: invalid UTF-8 at byte %d"}}' % at)
        check(answer.decode(), want, f"invalid UTF-8 in {line!r}")
    # Outside a string the byte is not JSON at all.
    answers = run(aup, module, [b'{"event":"say","args":{"m":"a"},"id":6}\xff'])
    check(answers[0].decode(),
          '{"ok":false,"error":{"code":"bad_request","message":"not JSON: unexpected byte 0xFF after the value at byte 39"}}',
          "a byte after the object")


def http_bodies(aup, module):
    p = subprocess.Popen([aup, "run", module, "--memory", "--listen", "http://:0"], stderr=subprocess.PIPE,
                         stdout=subprocess.DEVNULL)
    try:
        line = p.stderr.readline().decode()
        m = re.search(r"listening on http://([0-9.]+):(\d+)", line)
        if not m:
            fail(f"no HTTP address: {line!r}")
            return
        address = (m.group(1), int(m.group(2)))
        for body, want in ((b'{"m":"\xff"}', "the body is not JSON: invalid UTF-8 at byte 6"),
                           (b'{"m":"\\ud800"}', "the body is not JSON: lone surrogate at byte 12")):
            with socket.create_connection(address, timeout=10) as s:
                s.sendall(b"POST /events/say HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %d\r\n\r\n"
                          % len(body) + body)
                reply = b""
                while chunk := s.recv(65536):
                    reply += chunk
            head, _, payload = reply.partition(b"\r\n\r\n")
            check(head.split(b"\r\n")[0], b"HTTP/1.1 400 Bad Request", f"status for body {body!r}")
            check(payload.decode(), '{"ok":false,"error":{"code":"bad_request","message":"%s"}}\n' % want,
                  f"body {body!r}")
    finally:
        p.terminate()
        p.wait(timeout=10)


def stats_counts(aup, module):
    lines = [
        b'{"event":"open","args":{"id":1}}',                          # applied
        b'{"event":"open","args":{"id":1}}',                          # failed: duplicate
        b'{"event":"say","args":{"m":"no"}}',                         # failed: failed
        b'{"event":"parse","args":{"t":"x"}}',                        # failed: bad_number (num)
        b'{"event":"infinite"}',                                      # failed: not_finite (the result)
        b'{"event":"deposit","args":{"id":2,"amount":1}}',            # failed: not_found
        b'{"event":"deposit","args":{"id":1,"amount":5},"key":"a"}',  # applied
        b'{"event":"deposit","args":{"id":1,"amount":5},"key":"a"}',  # applied, replayed
        b'{"event":"deposit","args":{"id":1,"amount":6},"key":"a"}',  # failed: duplicate (the key)
        b'{"query":"balance","args":{"id":1}}',                       # a query
        b'{"query":"balance","args":{"id":9}}',                       # a query (it failed: not_found)
        b'{"schema":{}}',                                             # a schema request: not a query
        b'{"stats":{}}',                                              # not counted
        b'{"event":"open","args":{}}',                                # invalid: bad_args
        b'{"event":"open","args":{"id":9007199254740993}}',           # invalid: bad_number (args)
        b'{"event":"nope"}',                                          # invalid: unknown_event
        b'{"query":"nope"}',                                          # invalid: unknown_query
        b'{"query":"balance","args":{"id":"1"}}',                     # invalid: bad_args
        b'{"query":"balance","args":{"id":1},"key":"q"}',             # invalid: bad_request (a key on a query)
        b'{"event":"say"',                                            # invalid: not JSON
        b'{"event":"say","args":{"m":"\xff"}}',                       # invalid: not JSON (UTF-8)
        b'{"event":"say","args":{"m":"x"},"id":[1]}',                 # invalid: a non-scalar id
        b'{"stats":{"x":1}}',                                         # invalid
        b'{"schema":[]}',                                             # invalid
        b'{"event":"open","args":{"id":3},"x":1}',                    # invalid: an unknown member
        b'',                                                          # a blank line: not a request
        b'{"id":5,"event":"say","args":{"m":"' + b'y' * 300 + b'"}}', # over --max-line: not counted
        b'{"stats":{}}',
    ]
    answers = run(aup, module, lines, "--keys", "10", "--max-line", "256")
    check(len(answers), len(lines) - 1, "every line but the blank one answered")
    first, last = json.loads(answers[12])["result"], json.loads(answers[-1])["result"]
    check(answers[-2].decode(), '{"ok":false,"error":{"code":"bad_request","message":"line longer than 256 bytes"}}',
          "the long line, answered without its id")
    # The first stats request comes before the invalid ones; neither it
    # nor the last is counted among the queries.
    for name, at_first, at_last in (("events_applied", 3, 3), ("events_replayed", 1, 1), ("queries", 2, 2),
                                    ("schema_requests", 1, 1), ("requests_invalid", 0, 12)):
        check(first[name], at_first, f"{name} at the first stats request")
        check(last[name], at_last, f"{name} at the last stats request")
    failed = {"failed": 1, "not_found": 1, "duplicate": 2, "stale_row": 0, "out_of_range": 0, "not_finite": 1,
              "bad_number": 1, "budget": 0, "unavailable": 0, "not_primary": 0}
    check(first["events_failed"], failed, "events_failed at the first stats request")
    check(last["events_failed"], failed, "events_failed at the last stats request")


def main():
    aup = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        module = tmp + "/m.aup"
        with open(module, "w") as f:
            f.write(MODULE)
        invalid_utf8(aup, module)
        http_bodies(aup, module)
        stats_counts(aup, module)
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)")
        return 1
    print("reference: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
