#!/usr/bin/env python3
"""HTTP (docs/protocol.md, "HTTP"): the examples over curl and over
`aup call`, answers compared byte for byte with the line protocol's.

Every event and query of examples/bank (the demo's requests, then the
queries the demo leaves out, and requests each error code answers), and
every event and query of examples/tpcc (from its schema: loads of one row
each, every id 1, then each transaction and query with sample arguments) run
on a fresh `aup run --memory --fixed-time` four ways: over stdin (the
reference), over a unix socket, over HTTP with curl (one curl per request,
and the queries again pipelined over one kept connection), and with `aup
call` over HTTP and over the unix socket. Each answer must be the
reference's, and each HTTP status the one the code's row of the table
gives. Both ways of serving (--io-threads 0 and 2) are run. Then
Idempotency-Key headers, and `Expect: 100-continue` (raw and with curl);
query-string arguments and each way they are refused; HEAD; /health (ready,
and 503 on a store whose commit failed); errors in a short body placed in
that body.

usage: http_cli_test.py AUP SOURCE_ROOT
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

FAILURES = []
STATUS = {"bad_request": 400, "bad_args": 400, "bad_number": 400, "unknown_event": 404, "unknown_query": 404,
          "not_found": 404, "duplicate": 409, "stale_row": 409, "failed": 422, "out_of_range": 422,
          "not_finite": 422, "budget": 422, "unavailable": 503}
FIXED = ["--memory", "--fixed-time", "1700000000000"]


def fail(msg):
    FAILURES.append(msg)
    print("FAIL: " + msg, flush=True)


def requests(root):
    """The demo's requests without their ids, then the rest of the bank's
    queries and requests that fail in each way a client can make them."""
    out = []
    with open(os.path.join(root, "examples/bank/demo.ndjson")) as f:
        for line in f:
            r = json.loads(line)
            r.pop("id", None)
            out.append(r)
    out += [{"query": "accounts_all"}, {"query": "transfers_made"}, {"query": "recent", "args": {"n": 2}},
            {"event": "open", "args": {"id": 1, "owner": "dup"}},     # duplicate
            {"event": "deposit", "args": {"id": 1, "amount": "x"}},   # bad_args
            {"event": "deposit", "args": {"id": 1, "amount": -5}},    # failed (the bank refuses it)
            {"event": "nope", "args": {}}, {"query": "nope"}]
    return out


def sample(type_text, records, depth=0):
    """A value of the schema's type `type_text`: every number 1, every text
    "a", one item an array, a record with each field so filled."""
    if type_text == "num":
        return 1
    if type_text == "text":
        return "a"
    if type_text == "bool":
        return True
    if type_text.startswith("["):
        return [sample(type_text[1:-1], records, depth + 1)]
    if type_text in records and depth < 8:
        return {f["name"]: sample(f["type"], records, depth + 1) for f in records[type_text]}
    raise ValueError("no sample for the type " + type_text)


def schema_requests(aup, module):
    """Every event of `module` in declaration order, then every query, with
    sample arguments, from its schema (the `schema` request)."""
    p = subprocess.run([aup, "run", module] + FIXED, input='{"schema":{}}\n', capture_output=True, text=True,
                       timeout=120)
    schema = json.loads(p.stdout)["result"]
    records = {r["name"]: r["fields"] for r in schema["records"]}
    out = []
    for kind in ("events", "queries"):
        for e in schema[kind]:
            r = {kind[:-1] if kind == "events" else "query": e["name"]}
            if e["args"]:
                r["args"] = {a["name"]: sample(a["type"], records) for a in e["args"]}
            out.append(r)
    return out


def line_of(r):
    return json.dumps(r, separators=(",", ":"))


class Server:
    def __init__(self, aup, module, work, io_threads, extra=()):
        self.sock = os.path.join(work, "s%d.sock" % time.monotonic_ns())
        self.err_path = os.path.join(work, "err-%d" % time.monotonic_ns())
        self.err = open(self.err_path, "wb")
        self.p = subprocess.Popen([aup, "run", module] + FIXED + list(extra) + ["--io-threads", str(io_threads), "--listen",
                                  "unix:" + self.sock, "--listen", "http://:0"],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.err)
        deadline = time.monotonic() + 60
        while True:
            text = open(self.err_path).read()
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", text)
            if m and "listening on unix:" in text:
                self.port = int(m.group(1))
                break
            if self.p.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the server did not start: " + text)
            time.sleep(0.02)
        self.url = "http://127.0.0.1:%d" % self.port

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        rc = self.p.wait(timeout=60)
        self.err.close()
        if rc != 0:
            fail("the server exited %d: %s" % (rc, open(self.err_path).read()))


def over_socket(srv, lines):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(srv.sock)
    s.sendall("".join(l + "\n" for l in lines).encode())
    buf = b""
    while buf.count(b"\n") < len(lines):
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    s.close()
    return buf.decode().splitlines()


def curl_args(srv, r):
    """curl's arguments for request `r`: its route and body."""
    if "event" in r:
        return ["-X", "POST", "--data-binary", json.dumps(r.get("args", {})), srv.url + "/events/" + r["event"]]
    if "args" in r:
        return ["-X", "POST", "--data-binary", json.dumps(r["args"]), srv.url + "/queries/" + r["query"]]
    return [srv.url + "/queries/" + r["query"]]  # GET, no body


def over_curl(srv, r):
    p = subprocess.run(["curl", "-s", "-S", "-H", "Expect:", "-w", "%{http_code}"] + curl_args(srv, r),
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0 or "\n" not in p.stdout:
        fail("curl %s: exit %d %s %s" % (line_of(r), p.returncode, p.stdout, p.stderr))
        return "", 0
    body, status = p.stdout.rsplit("\n", 1)
    return body, int(status)


def call_words(r):
    """`aup call`'s short form for `r`: NAME then name=value per argument."""
    words = [r.get("event") or r.get("query")]
    for k, v in r.get("args", {}).items():
        words.append("%s=%s" % (k, v if isinstance(v, str) else json.dumps(v)))
    return words


def check_status(r, answer, status):
    a = json.loads(answer)
    want = 200 if a.get("ok") else STATUS[a["error"]["code"]]
    if status != want:
        fail("%s: HTTP status %d for %s; the table says %d" % (line_of(r), status, answer, want))


def run_mode(aup, module, work, io_threads, reqs, reference):
    # The line protocol over a socket, then curl, each on a fresh server.
    srv = Server(aup, module, work, io_threads)
    got = over_socket(srv, [line_of(r) for r in reqs])
    srv.stop()
    if got != reference:
        fail("--io-threads %d: the socket's answers differ from stdin's:\n%s\n%s" % (io_threads, got, reference))
    srv = Server(aup, module, work, io_threads)
    for r, want in zip(reqs, reference):
        body, status = over_curl(srv, r)
        if body != want:
            fail("--io-threads %d: curl %s answered %r; the line protocol %r" % (io_threads, line_of(r), body, want))
        elif status:
            check_status(r, body, status)
    # The queries again, pipelined on one connection curl keeps alive; the
    # state is the one the whole sequence left.
    queries = [r for r in reqs if "query" in r and "args" not in r]
    p = subprocess.run(["curl", "-s", "-S", "-v"] + [srv.url + "/queries/" + r["query"] for r in queries],
                       capture_output=True, text=True, timeout=60)
    answers = p.stdout.splitlines()
    final = over_socket(srv, [line_of(r) for r in queries])
    if answers != final:
        fail("--io-threads %d: curl's kept-alive queries %s; over the socket %s" % (io_threads, answers, final))
    if "Re-using existing connection" not in p.stderr and "left intact" not in p.stderr:
        fail("--io-threads %d: curl did not keep the connection: %s" % (io_threads, p.stderr[-400:]))
    srv.stop()
    print("--io-threads %d: %d requests over the socket and curl, the same answers" % (io_threads, len(reqs)))


def run_call(aup, module, work, reqs, reference):
    """`aup call` over HTTP and over the unix socket, each on a fresh server."""
    for scheme in ("http", "unix"):
        srv = Server(aup, module, work, 0)
        address = "http://:%d" % srv.port if scheme == "http" else "unix:" + srv.sock
        for r, want in zip(reqs, reference):
            if r.get("event") == "nope" or r.get("query") == "nope":
                words = [line_of(r)]  # the short form refuses unknown names before sending
            elif r.get("args", {}).get("amount") == "x":
                words = [line_of(r)]  # and mistyped arguments
            else:
                words = call_words(r)
            p = subprocess.run([aup, "call", address] + words, capture_output=True, text=True, timeout=60)
            answer = p.stdout.rstrip("\n")
            ok = json.loads(want).get("ok") if want else False
            if answer != want or p.returncode != (0 if ok else 1):
                fail("aup call %s %s: exit %d %r; the line protocol %r (%s)" %
                     (address, words, p.returncode, answer, want, p.stderr.strip()))
        srv.stop()
        print("aup call over %s: %d requests, the same answers" % (scheme, len(reqs)))


def run_keys(aup, bank, work):
    """An Idempotency-Key header is the event's `key` (runtime/keys.h): a
    retry is answered the first answer and applies nothing; other args
    under the key are 409 (duplicate)."""
    srv = Server(aup, bank, work, 0, ["--keys", "100"])
    try:
        def curl(*args):
            p = subprocess.run(["curl", "-s", "-S", "-w", "\n%{http_code}"] + list(args), capture_output=True,
                               text=True, timeout=60)
            body, status = p.stdout.rsplit("\n", 1)
            return body.rstrip("\n"), int(status)  # the answer line's own newline
        curl("--data-binary", '{"id":1,"owner":"ann"}', srv.url + "/events/open")
        deposit = ["-H", 'Idempotency-Key: "d-1"', srv.url + "/events/deposit"]
        first = curl("--data-binary", '{"id":1,"amount":5}', *deposit)
        again = curl("--data-binary", '{ "id": 1, "amount": 5 }', *deposit)
        if first != ('{"ok":true,"result":{"balance":5}}', 200) or again != first:
            fail("Idempotency-Key: first %r, again %r" % (first, again))
        other = curl("--data-binary", '{"id":1,"amount":6}', *deposit)
        if other[1] != 409 or '"code":"duplicate"' not in other[0]:
            fail("Idempotency-Key with other args: %r" % (other,))
        balance = curl("--data-binary", '{"id":1}', srv.url + "/queries/balance")
        if balance != ('{"ok":true,"result":5}', 200):
            fail("after a deposit sent twice with its key the balance is %r" % (balance,))
    finally:
        srv.stop()


def run_expect(aup, bank, work, io_threads):
    """A client that sends `Expect: 100-continue` waits for 100 Continue
    before its body: it comes after the answers owed before it (here a
    pipelined query's), with nothing of the body sent; then the body is
    answered. curl, sending the header, shows the interim response."""
    srv = Server(aup, bank, work, io_threads)
    try:
        # No 100 Continue within 10 s is a failure, not a hang.
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        body = b'{"id":7,"owner":"eve"}'
        s.sendall(b"GET /queries/total HTTP/1.1\r\nHost: h\r\n\r\n"
                  b"POST /events/open HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body))
        want = b"HTTP/1.1 100 Continue\r\n\r\n"
        buf = b""
        while not buf.endswith(want):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        if not buf.startswith(b"HTTP/1.1 200 OK\r\n") or not buf.endswith(want):
            fail("--io-threads %d: before the body, the server sent %r" % (io_threads, buf))
        s.sendall(body)
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        s.close()
        if not buf.startswith(b"HTTP/1.1 200 OK\r\n") or not buf.endswith(b'{"ok":true}\n'):
            fail("--io-threads %d: after the body, the server sent %r" % (io_threads, buf))
        p = subprocess.run(["curl", "-s", "-S", "-v", "-H", "Expect: 100-continue", "--data-binary", '{"id":8,"owner":"al"}',
                            srv.url + "/events/open"], capture_output=True, text=True, timeout=60)
        if p.stdout != '{"ok":true}\n' or "< HTTP/1.1 100 Continue" not in p.stderr:
            fail("--io-threads %d: curl with Expect: 100-continue: %r %s" % (io_threads, p.stdout, p.stderr[-600:]))
    except socket.timeout:
        fail("--io-threads %d: no 100 Continue (or no answer) within 10 s" % io_threads)
    finally:
        srv.stop()


def curl_status(*args):
    """curl's body (its answer line without the newline) and status."""
    p = subprocess.run(["curl", "-s", "-S", "-w", "\n%{http_code}"] + list(args), capture_output=True, text=True,
                       timeout=60)
    body, status = p.stdout.rsplit("\n", 1)
    return body.rstrip("\n"), int(status)


def run_query_strings(aup, bank, work, io_threads):
    """GET /queries/NAME?ARGS: the arguments typed by the query, each
    mistake refused 400 with what is wrong."""
    srv = Server(aup, bank, work, io_threads)
    try:
        curl_status("--data-binary", '{"id":3,"owner":"Ann Lee"}', srv.url + "/events/open")
        curl_status("--data-binary", '{"id":3,"amount":40}', srv.url + "/events/deposit")
        where = "--io-threads %d" % io_threads
        got = curl_status(srv.url + "/queries/balance?id=3")
        want = curl_status("--data-binary", '{"id":3}', srv.url + "/queries/balance")
        if got != want or got[1] != 200:
            fail("%s: GET /queries/balance?id=3 %r; with the body %r" % (where, got, want))
        got = curl_status("-G", "--data-urlencode", "id=3", "--data-urlencode", "since=0",
                          srv.url + "/queries/history")
        if got[1] != 200 or not got[0].startswith('{"ok":true,"result":['):
            fail("%s: curl -G history: %r" % (where, got))
        for query, status, message in (
                ("balance?idd=3", 400, "unknown argument `idd` (`balance` takes id); did you mean `id`?"),
                ("balance?id=three", 400, "id: expected number, got `three`"),
                ("balance?id=3&id=4", 400, "argument `id` appears twice in the query string"),
                ("balance?id=%3", 400, "bad percent-encoding `%3` in the query string"),
                ("balance?id=9", 404, "`accounts` has no key 9"),
                ("balance", 400, "missing field `id`"),
                ("blance?id=3", 404, "no query `blance`; did you mean `balance`?")):
            body, got_status = curl_status(srv.url + "/queries/" + query)
            if got_status != status or message not in body:
                fail("%s: GET /queries/%s: %d %s; want %d with %r" % (where, query, got_status, body, status, message))
        body, status = curl_status("--data-binary", "{}", srv.url + "/events/open?id=1")
        if status != 400 or "an event's arguments go in the body" not in body:
            fail("%s: an event with a query string: %d %s" % (where, status, body))
    finally:
        srv.stop()


def raw_exchange(port, request, until):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(request)
    buf = b""
    while until not in buf:
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    s.close()
    return buf


def run_head_and_health(aup, bank, work, io_threads):
    """HEAD wherever GET: the same head, no body (a GET pipelined after it
    comes whole right after the head). /health: 200 ready, standalone."""
    srv = Server(aup, bank, work, io_threads)
    where = "--io-threads %d" % io_threads
    try:
        for path in ("/queries/total", "/schema", "/stats", "/metrics", "/health", "/queries/balance?id=1"):
            # Bytes, not text: the CRLFs stay as sent.
            head = subprocess.run(["curl", "-s", "-S", "-I", srv.url + path], capture_output=True,
                                  timeout=60).stdout.decode().split("\r\n\r\n", 1)[0]
            get = subprocess.run(["curl", "-s", "-S", "-i", srv.url + path], capture_output=True,
                                 timeout=60).stdout.decode()
            get_head, get_body = get.split("\r\n\r\n", 1) if "\r\n\r\n" in get else (get, "")
            # The figures move between the two requests (uptime): their
            # length may too; anything else is the same bytes.
            moving = path in ("/stats", "/metrics", "/health")
            same = head.splitlines()[:2] == get_head.splitlines()[:2] if moving else head == get_head
            if not same or (not moving and "Content-Length: %d" % len(get_body.encode()) not in head):
                fail("%s: HEAD %s: %r; GET: %r" % (where, path, head, get[:300]))
        buf = raw_exchange(srv.port, b"HEAD /queries/total HTTP/1.1\r\nHost: h\r\n\r\n"
                                     b"GET /queries/total HTTP/1.1\r\nHost: h\r\n\r\n", b"}\n")
        first, rest = buf.split(b"\r\n\r\n", 1)
        if not first.startswith(b"HTTP/1.1 200 OK") or not rest.startswith(b"HTTP/1.1 200 OK"):
            fail("%s: HEAD then GET on one connection: %r" % (where, buf))
        body, status = curl_status(srv.url + "/health")
        health = json.loads(body) if body.startswith("{") else {}
        if status != 200 or health.get("ready") is not True or health.get("role") != "standalone" or \
                health.get("save") != 0:
            fail("%s: GET /health: %d %s" % (where, status, body))
        body, status = curl_status("-X", "DELETE", srv.url + "/health")
        if status != 405:
            fail("%s: DELETE /health: %d %s" % (where, status, body))
    finally:
        srv.stop()


def run_health_failed_store(aup, bank, work):
    """A store whose commit failed refuses every event: /health says 503,
    not ready, and why; queries are still answered."""
    data = os.path.join(work, "failed-store")
    err_path = os.path.join(work, "failed-store.err")
    with open(err_path, "wb") as err:
        p = subprocess.Popen([aup, "run", bank, "--data", data, "--listen", "http://:0"], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=err,
                             env=dict(os.environ, AUP_FAULTS="fail:fdatasync:1:EIO"))
    try:
        deadline = time.monotonic() + 60
        port = None
        while port is None and time.monotonic() < deadline and p.poll() is None:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", open(err_path).read())
            port = int(m.group(1)) if m else None
            time.sleep(0.02)
        if port is None:
            fail("the failing store's server did not start: " + open(err_path).read())
            return
        url = "http://127.0.0.1:%d" % port
        body, status = curl_status(url + "/health")
        before = json.loads(body) if body.startswith("{") else {}
        answers = [curl_status("--data-binary", '{"id":%d,"owner":"x"}' % i, url + "/events/open") for i in (1, 2)]
        body, status = curl_status(url + "/health")
        health = json.loads(body) if body.startswith("{") else {}
        if before.get("ready") is not True or status != 503 or health.get("ready") is not False or \
                not health.get("why"):
            fail("a store whose commit failed: /health before %r, after %d %s (events: %r)" % (before, status, body,
                                                                                             answers))
        if curl_status(url + "/queries/total")[1] != 200:
            fail("a store whose commit failed no longer answers queries")
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=60)


def start(aup, args, err_path, wait_for):
    """`aup run ARGS` in the background, once its stderr matches every
    pattern of `wait_for` (the first group of the first: a port)."""
    err = open(err_path, "wb")
    p = subprocess.Popen([aup, "run"] + args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and p.poll() is None:
        text = open(err_path).read()
        found = [re.search(w, text) for w in wait_for]
        if all(found):
            return p, int(found[0].group(1))
        time.sleep(0.02)
    p.kill()
    p.wait()
    raise RuntimeError("aup run %s did not start: %s" % (args, open(err_path).read()))


def run_health_replication(aup, bank, work):
    """/health after replication: a replica says `replica` and the save it
    holds; the primary it serves says `primary`. Both are ready."""
    sock = os.path.join(work, "p.sock")
    primary, pport = start(aup, [bank, "--data", os.path.join(work, "primary"), "--listen", "unix:" + sock,
                                 "--listen", "http://:0"], os.path.join(work, "primary.err"),
                           [r"listening on http://127\.0\.0\.1:(\d+)", r"listening on unix:"])
    replica = None
    try:
        curl_status("--data-binary", '{"id":1,"owner":"ann"}', "http://127.0.0.1:%d/events/open" % pport)
        replica, rport = start(aup, [bank, "--data", os.path.join(work, "replica"), "--listen", "http://:0",
                                     "--replica-of", "unix:" + sock], os.path.join(work, "replica.err"),
                               [r"listening on http://127\.0\.0\.1:(\d+)", r"caught up with the primary at save 1"])
        body, status = curl_status("http://127.0.0.1:%d/health" % rport)
        health = json.loads(body) if body.startswith("{") else {}
        if status != 200 or health.get("ready") is not True or health.get("role") != "replica" or \
                health.get("save") != 1:
            fail("a replica's /health: %d %s" % (status, body))
        deadline = time.monotonic() + 10
        while True:  # the primary counts its replica once the replica's feed is up
            body, status = curl_status("http://127.0.0.1:%d/health" % pport)
            if '"role":"primary"' in body or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if status != 200 or json.loads(body).get("role") != "primary" or json.loads(body).get("save") != 1:
            fail("a primary's /health: %d %s" % (status, body))
    finally:
        for p in (replica, primary):
            if p:
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=60)


def run_body_errors(aup, bank, work):
    """An error in the body is placed in the body the client sent, and
    worded for HTTP."""
    srv = Server(aup, bank, work, 0)
    try:
        for body, status, message in (
                ('{"id":1', 400, "the body is not JSON: expected `,` or `}` at byte 7"),
                ("[1]", 400, "the body must be a JSON object of arguments"),
                ('{\n "id": 1,\n}', 400, "at byte 12 (line 3, column 1)")):
            got, got_status = curl_status("--data-binary", body, srv.url + "/queries/balance")
            if got_status != status or message not in got or "`args`" in got:
                fail("body %r: %d %s; want %d with %r" % (body, got_status, got, status, message))
    finally:
        srv.stop()


def main():
    aup, root = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    if not shutil.which("curl"):
        print("FAIL: curl is not installed (sh tools/deps.sh installs it)")
        sys.exit(1)
    bank = os.path.join(root, "examples/bank/bank.aup")
    tpcc = os.path.join(root, "examples/tpcc/tpcc.aup")
    work = tempfile.mkdtemp(prefix="aup-http-")
    try:
        # The bank's own requests, then every event and query of TPC-C with
        # a one-row population (every id 1) and sample arguments.
        for module, reqs in ((bank, requests(root)), (tpcc, schema_requests(aup, tpcc))):
            print("%s: %d requests" % (os.path.basename(module), len(reqs)))
            p = subprocess.run([aup, "run", module] + FIXED, input="".join(line_of(r) + "\n" for r in reqs),
                               capture_output=True, text=True, timeout=120)
            reference = p.stdout.splitlines()
            if p.returncode != 0 or len(reference) != len(reqs):
                fail("stdin: exit %d, %d answers for %d requests: %s" % (p.returncode, len(reference), len(reqs),
                                                                        p.stderr))
                sys.exit(1)
            if module == bank:
                codes = {json.loads(a)["error"]["code"] for a in reference if not json.loads(a)["ok"]}
                for code in ("not_found", "duplicate", "bad_args", "failed", "unknown_event", "unknown_query"):
                    if code not in codes:
                        fail("the requests answer no %s: %s" % (code, sorted(codes)))
            for io_threads in (0, 2):
                run_mode(aup, module, work, io_threads, reqs, reference)
            run_call(aup, module, work, reqs, reference)
        run_keys(aup, bank, work)
        for io_threads in (0, 2):
            run_expect(aup, bank, work, io_threads)
            run_query_strings(aup, bank, work, io_threads)
            run_head_and_health(aup, bank, work, io_threads)
        run_health_failed_store(aup, bank, work)
        run_health_replication(aup, bank, work)
        run_body_errors(aup, bank, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("%d failures" % len(FAILURES))
    sys.exit(1 if FAILURES else 0)


if __name__ == "__main__":
    main()
