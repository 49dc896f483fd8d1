#!/usr/bin/env python3
"""The stats request end to end (docs/protocol.md, "Stats"; docs/operations.md,
"Monitoring"): a real `aup run --data` server, with --io-threads 0 and 2,
takes events of which some fail with known codes, and its `{"stats":{}}`
answer counts them exactly; GET /metrics on its HTTP listener says the same
counters in the Prometheus text format; the stats request is not logged;
`aup stats` prints each figure in its unit and exits as `aup call` does;
over stdin the request works too, and a failed commit is counted as one.
Prometheus's own parser (Debian's python3-prometheus-client) reads
/metrics: the commit and request histograms with cumulative buckets, the
process_* families, the build info. A schema request (`aup call` makes one
a call) is counted apart from the queries.

usage: stats_test.py AUP SOURCE_ROOT
"""
import http.client
import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

FAILURES = []


def fail(msg):
    FAILURES.append(msg)
    print("FAIL: " + msg, flush=True)


def check(cond, msg):
    if not cond:
        fail(msg)


class Server:
    def __init__(self, aup, module, work, io_threads):
        self.sock = os.path.join(work, "s.sock")
        self.err_path = os.path.join(work, "server.err")
        self.err = open(self.err_path, "wb")
        self.p = subprocess.Popen([aup, "run", module, "--data", os.path.join(work, "data"),
                                   "--io-threads", str(io_threads), "--listen", "unix:" + self.sock,
                                   "--listen", "http://127.0.0.1:0"],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.err)
        self.http_port = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.http_port is None:
            if self.p.poll() is not None:
                raise RuntimeError("the server exited: " + open(self.err_path).read())
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", open(self.err_path).read())
            if m:
                self.http_port = int(m.group(1))
            time.sleep(0.02)
        if self.http_port is None:
            raise RuntimeError("the server did not say where it listens")

    def stop(self):
        self.p.terminate()
        rc = self.p.wait(timeout=60)
        self.err.close()
        return rc


def exchange(s, lines):
    """Sends the lines pipelined and reads one answer each."""
    s.sendall("".join(json.dumps(x) + "\n" for x in lines).encode())
    buf = b""
    while buf.count(b"\n") < len(lines):
        chunk = s.recv(65536)
        if not chunk:
            raise RuntimeError("the server closed the connection")
        buf += chunk
    return [json.loads(x) for x in buf.decode().splitlines()]


def stats_over(s):
    [a] = exchange(s, [{"stats": {"memory": True}}])
    if not a.get("ok"):
        raise RuntimeError("the stats request failed: %r" % a)
    return a["result"]


# Requests and what they leave in the figures.
EVENTS = ([{"event": "open", "args": {"id": i, "owner": "o%d" % i}} for i in range(1, 6)] +
          [{"event": "open", "args": {"id": 1, "owner": "again"}}] * 2 +   # duplicate x2
          [{"event": "missing", "args": {"id": 99}}] * 3 +                 # not_found x3
          [{"event": "say", "args": {"message": "no"}}] +                 # failed x1
          [{"event": "nope", "args": {}}, {"stats": {"x": 1}},            # invalid x3
           {"stats": {}, "event": "open"}] +
          [{"query": "q_missing", "args": {"id": 1}}, {"schema": {}}])     # a query, a schema request
WANT_FAILED = {"duplicate": 2, "not_found": 3, "failed": 1}


def check_counts(st, where):
    check(st["events_applied"] == 5, "%s: events_applied %r, not 5" % (where, st["events_applied"]))
    for code, n in st["events_failed"].items():
        check(n == WANT_FAILED.get(code, 0), "%s: events_failed[%s] %r, not %r" % (where, code, n,
                                                                                 WANT_FAILED.get(code, 0)))
    check(set(st["events_failed"]) >= set(WANT_FAILED) | {"unavailable", "budget"},
          "%s: codes missing from events_failed: %r" % (where, st["events_failed"]))
    check(st["requests_invalid"] == 3, "%s: requests_invalid %r, not 3" % (where, st["requests_invalid"]))
    check(st["queries"] == 1, "%s: queries %r, not 1 (schema and stats requests are not queries)" % (
        where, st["queries"]))
    check(st["schema_requests"] == 1, "%s: schema_requests %r, not 1" % (where, st["schema_requests"]))


def prometheus(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    # Without ?memory no walk, so no aup_memory_bytes; a query string
    # other than memory is refused.
    c.request("GET", "/metrics")
    plain = c.getresponse().read().decode()
    check("aup_memory_bytes{" not in plain and "# HELP aup_memory_bytes" in plain,
          "GET /metrics without ?memory has memory parts: %r" % plain[-400:])
    c.request("GET", "/metrics?mem")
    r0 = c.getresponse()
    refusal = r0.read().decode()
    check(r0.status == 400 and "takes one query string, `memory`" in refusal, "GET /metrics?mem: %d %r" % (
        r0.status, refusal))
    c.request("GET", "/metrics?memory")
    r = c.getresponse()
    body = r.read().decode()
    ctype = r.getheader("Content-Type")
    c.request("POST", "/metrics", body="")
    r2 = c.getresponse()
    r2.read()
    c.close()
    return r.status, ctype, body, r2.status, r2.getheader("Allow")


def prometheus_parser():
    """prometheus_client's text parser. Debian's package puts it under
    /usr/lib/python3/dist-packages, where an interpreter other than
    Debian's (a pyenv one first on PATH) does not look."""
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        sys.path.append("/usr/lib/python3/dist-packages")
        try:
            from prometheus_client.parser import text_string_to_metric_families
        except ImportError:
            fail("python3-prometheus-client is not installed (sh tools/deps.sh installs it)")
            return None
    return text_string_to_metric_families


def parse_prometheus(text):
    """{(sample name, code-or-None): value}, each family's type, and the
    histograms' samples by family, as Prometheus's own parser reads them."""
    parse = prometheus_parser()
    values, types, histograms = {}, {}, {}
    if parse is None:
        return values, types, histograms
    try:
        for family in parse(text):
            types[family.name] = family.type
            for sample in family.samples:
                values[(sample.name, sample.labels.get("code"))] = sample.value
                if family.type == "histogram":
                    histograms.setdefault(family.name, []).append(sample)
                if family.name == "aup_build_info":
                    values[("aup_build_info", "labels")] = dict(sample.labels)
                if family.name == "aup_memory_bytes":
                    values[("aup_memory_bytes", sample.labels.get("part"), sample.labels.get("table"),
                            sample.labels.get("index"))] = sample.value
    except ValueError as e:
        fail("Prometheus's parser refused /metrics: %s" % e)
    return values, types, histograms


def check_histogram(name, samples, where):
    """Buckets cumulative: rising with `le`, +Inf last and equal to _count."""
    buckets = [(float(s.labels["le"]), s.value) for s in samples if s.name == name + "_bucket"]
    count = [s.value for s in samples if s.name == name + "_count"]
    total = [s.value for s in samples if s.name == name + "_sum"]
    check(len(buckets) > 10 and buckets[-1][0] == math.inf, "%s: %s has buckets %r" % (where, name, buckets))
    check(all(a[0] < b[0] and a[1] <= b[1] for a, b in zip(buckets, buckets[1:])),
          "%s: %s's buckets are not cumulative: %r" % (where, name, buckets))
    check(len(count) == 1 and len(total) == 1 and buckets and buckets[-1][1] == count[0],
          "%s: %s: +Inf %r, _count %r, _sum %r" % (where, name, buckets[-1:], count, total))
    return count[0] if count else 0


def check_metrics_endpoint(server, st, where):
    status, ctype, body, post_status, allow = prometheus(server.http_port)
    check(status == 200, "%s: GET /metrics answered %d" % (where, status))
    check(ctype == "text/plain; version=0.0.4; charset=utf-8", "%s: GET /metrics Content-Type %r" % (where, ctype))
    check(post_status == 405 and allow == "GET, HEAD", "%s: POST /metrics: %r, Allow %r" % (where, post_status,
                                                                                         allow))
    values, types, histograms = parse_prometheus(body)
    # Every counter of the JSON answer, the same in the text (nothing
    # changed in between: neither request counts itself). The parser
    # names a counter's family without `_total`, its sample with it.
    check(values.get(("aup_events_applied_total", None)) == st["events_applied"],
          "%s: aup_events_applied_total %r, JSON %r" % (where, values.get(("aup_events_applied_total", None)),
                                                       st["events_applied"]))
    for code, n in st["events_failed"].items():
        got = values.get(("aup_events_failed_total", code))
        check(got == n, "%s: aup_events_failed_total{code=%s} %r, JSON %r" % (where, code, got, n))
    for name in ("queries", "schema_requests", "requests_invalid", "commits", "commit_failures", "log_written_bytes",
                 "checkpoints"):
        got = values.get(("aup_%s_total" % name, None))
        check(got == st[name], "%s: aup_%s_total %r, JSON %r" % (where, name, got, st[name]))
        check(types.get("aup_%s" % name) == "counter", "%s: aup_%s_total has no TYPE counter" % (where, name))
    for name in ("image_bytes", "log_bytes", "state_bytes", "connections", "events_queued"):
        check(("aup_" + name, None) in values and types.get("aup_" + name) == "gauge",
              "%s: no gauge aup_%s in the text" % (where, name))
    for name in ("commit", "event", "query"):
        family = "aup_%s_duration_seconds" % name
        check(types.get(family) == "histogram", "%s: no histogram %s" % (where, family))
        count = check_histogram(family, histograms.get(family, []), where)
        check(count == st["%s_duration_seconds" % name]["count"], "%s: %s_count %r, JSON %r" % (
            where, family, count, st["%s_duration_seconds" % name]))
    check(types.get("process_cpu_seconds") == "counter" and values.get(("process_cpu_seconds_total", None), 0) > 0,
          "%s: process_cpu_seconds_total %r" % (where, values.get(("process_cpu_seconds_total", None))))
    for name in ("process_resident_memory_bytes", "process_open_fds", "process_max_fds", "process_start_time_seconds"):
        check(types.get(name) == "gauge" and values.get((name, None), 0) > 0, "%s: %s %r" % (
            where, name, values.get((name, None))))
    check(abs(values.get(("process_start_time_seconds", None), 0) - (time.time() - st["uptime_seconds"])) < 30,
          "%s: process_start_time_seconds %r, uptime %r" % (where, values.get(("process_start_time_seconds", None)),
                                                            st["uptime_seconds"]))
    # The memory breakdown: the same parts as the JSON's, labelled (the
    # tables' and indexes': the allocator's move between two requests).
    check(any(p["part"] == "rows" and p.get("table") == "accounts" and p["bytes"] > 0 for p in st["memory_bytes"]),
          "%s: memory_bytes %r" % (where, st["memory_bytes"]))
    for part in (p for p in st["memory_bytes"] if "table" in p):
        key = ("aup_memory_bytes", part["part"], part.get("table"), part.get("index"))
        check(values.get(key) == part["bytes"], "%s: %r is %r, JSON %r" % (where, key, values.get(key), part))
    labels = values.get(("aup_build_info", "labels"), {})
    check(labels.get("engine") in ("vm", "jit") and labels.get("version") == st["build_info"]["version"],
          "%s: aup_build_info %r" % (where, labels))
    check(body.count("# HELP ") == len(st), "%s: %d HELP lines for %d metrics" % (where, body.count("# HELP "),
                                                                               len(st)))


def check_schema_not_a_query(aup, server, where):
    """`aup call` asks for the schema before its request: one query is one
    query, and the schema request is counted apart."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(server.sock)
    before = stats_over(s)
    subprocess.run([aup, "call", "unix:" + server.sock, "q_missing", "id=1"], capture_output=True, text=True,
                   timeout=60)
    after = stats_over(s)
    s.close()
    check(after["queries"] - before["queries"] == 1, "%s: aup call of one query counted %r queries" % (
        where, after["queries"] - before["queries"]))
    check(after["schema_requests"] - before["schema_requests"] == 1, "%s: aup call's schema request counted %r" % (
        where, after["schema_requests"] - before["schema_requests"]))


def serve_case(aup, module, io_threads):
    where = "--io-threads %d" % io_threads
    work = tempfile.mkdtemp(prefix="aup-stats-")
    server = Server(aup, module, work, io_threads)
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(server.sock)
        # One at a time, so each event is its own batch: commits is exact.
        for r in EVENTS:
            exchange(s, [r])
        st = stats_over(s)
        check_counts(st, where)
        check(st["commits"] == 5, "%s: commits %r, not 5 (one a batch of one applied event)" % (where, st["commits"]))
        check(st["commit_failures"] == 0, "%s: commit_failures %r" % (where, st["commit_failures"]))
        check(st["events_per_commit"] == 1, "%s: events_per_commit %r, not 1" % (where, st["events_per_commit"]))
        check(0 < st["commit_latency_p50_seconds"] <= st["commit_latency_p99_seconds"]
              <= st["commit_latency_max_seconds"] < 10, "%s: commit latencies %r" % (where, st))
        check(st["log_written_bytes"] > 0 and st["log_bytes"] >= st["log_written_bytes"],
              "%s: log bytes %r / %r" % (where, st["log_written_bytes"], st["log_bytes"]))
        check(st["image_bytes"] > 0, "%s: image_bytes %r" % (where, st["image_bytes"]))
        check(st["state_bytes"] > 0 and st["process_resident_memory_bytes"] > st["state_bytes"],
              "%s: state %r, resident %r" % (where, st["state_bytes"], st["process_resident_memory_bytes"]))
        commit = st["commit_duration_seconds"]
        check(commit["count"] == 5 and commit["sum"] > 0, "%s: commit_duration_seconds %r" % (where, commit))
        check(st["event_duration_seconds"]["count"] >= 5 and st["query_duration_seconds"]["count"] == 1,
              "%s: event and query durations %r %r" % (where, st["event_duration_seconds"],
                                                       st["query_duration_seconds"]))
        check(st["connections"] == 1, "%s: connections %r, not 1" % (where, st["connections"]))
        check(st["events_queued"] == 0 and st["answer_bytes_waiting"] == 0,
              "%s: queued %r, waiting %r" % (where, st["events_queued"], st["answer_bytes_waiting"]))
        check(0 <= st["checkpoint_age_seconds"] <= st["uptime_seconds"], "%s: checkpoint age %r, uptime %r" % (
            where, st["checkpoint_age_seconds"], st["uptime_seconds"]))
        if io_threads == 0:
            check(st["snapshot_age_seconds"] == 0, "%s: snapshot_age %r without snapshots" % (
                where, st["snapshot_age_seconds"]))
        else:
            check(0 < st["snapshot_age_seconds"] <= st["uptime_seconds"], "%s: snapshot_age %r" % (
                where, st["snapshot_age_seconds"]))
        # A second connection counts; the stats request is not an event:
        # nothing more is logged or committed.
        s2 = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s2.connect(server.sock)
        again = stats_over(s2)
        check(again["connections"] == 2, "%s: connections %r with two open" % (where, again["connections"]))
        for k in ("commits", "log_written_bytes", "events_applied", "queries"):
            check(again[k] == st[k], "%s: %s went from %r to %r over a stats request" % (where, k, st[k], again[k]))
        s2.close()
        check_metrics_endpoint(server, again, where)
        check_cli(aup, server, again, where)
        check_schema_not_a_query(aup, server, where)
        s.close()
    finally:
        rc = server.stop()
        check(rc == 0, "%s: the server exited %r: %s" % (where, rc, open(server.err_path).read()))
        shutil.rmtree(work, ignore_errors=True)


def check_cli(aup, server, st, where):
    p = subprocess.run([aup, "stats", "--memory", "unix:" + server.sock], capture_output=True, text=True,
                       timeout=60)
    check(p.returncode == 0, "%s: aup stats exited %d: %s" % (where, p.returncode, p.stderr))
    # A metric a line; memory_bytes's parts follow it, indented.
    parts = [line for line in p.stdout.splitlines() if line.startswith("  ")]
    lines = dict(re.split(r"\s{2,}", line.strip(), maxsplit=1) for line in p.stdout.splitlines()
                 if "  " in line and not line.startswith("  "))
    check(len(lines) == len(st), "%s: aup stats printed %d metrics for %d: %r" % (where, len(lines), len(st), p.stdout))
    check(any(re.fullmatch(r"  accounts +rows [0-9.]+ (B|KiB) \([0-9]+% of the leaves\), inner .*", line)
              for line in parts), "%s: aup stats has no line for the accounts' memory: %r" % (where, parts))
    check(any(line.split()[0] == "malloc_in_use" for line in parts), "%s: aup stats memory %r" % (where, parts))
    check(lines.get("events_applied") == "%d" % st["events_applied"], "%s: aup stats events_applied %r" % (
        where, lines.get("events_applied")))
    check(lines.get("events_failed") == "duplicate 2, not_found 3, failed 1" or
          set(lines.get("events_failed", "").split(", ")) == {"duplicate 2", "not_found 3", "failed 1"},
          "%s: aup stats events_failed %r" % (where, lines.get("events_failed")))
    # Each value in its unit, none raw.
    for name, unit in (("uptime_seconds", r"(µs|ms|s)"), ("commit_latency_p50_seconds", r"(µs|ms|s)"),
                       ("log_bytes", r"(B|KiB|MiB|GiB)"), ("process_resident_memory_bytes", r"(KiB|MiB|GiB)"),
                       ("process_cpu_seconds", r"(µs|ms|s) \([0-9.]+% of a core since the start\)")):
        check(re.fullmatch(r"[0-9.]+ " + unit, lines.get(name, "")) is not None,
              "%s: aup stats %s is %r" % (where, name, lines.get(name)))
    check(re.fullmatch(r"5, mean [0-9.]+ (µs|ms|s), median ≤ [0-9.]+ (µs|ms|s), 99% ≤ [0-9.]+ (µs|ms|s)",
                       lines.get("commit_duration_seconds", "")) is not None,
          "%s: aup stats commit_duration_seconds %r" % (where, lines.get("commit_duration_seconds")))
    check(lines.get("replication_role") == "standalone", "%s: aup stats role %r" % (where,
                                                                                 lines.get("replication_role")))
    p = subprocess.run([aup, "stats", "--json", "http://127.0.0.1:%d" % server.http_port], capture_output=True,
                       text=True, timeout=60)
    check(p.returncode == 0, "%s: aup stats --json over HTTP exited %d: %s" % (where, p.returncode, p.stderr))
    lines = p.stdout.splitlines()
    check(len(lines) == 1 and json.loads(lines[0]).get("ok") is True and
          json.loads(lines[0])["result"]["commits"] == st["commits"],
          "%s: aup stats --json printed %r" % (where, p.stdout))


def refusing_server(work):
    """A socket that answers every line with bad_request, for exit 1."""
    path = os.path.join(work, "refuse.sock")
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ls.bind(path)
    ls.listen(1)

    def serve():
        c, _ = ls.accept()
        c.recv(4096)
        c.sendall(b'{"ok":false,"error":{"code":"bad_request","message":"no stats here"}}\n')
        c.close()
        ls.close()
    threading.Thread(target=serve, daemon=True).start()
    return path


def cli_cases(aup):
    work = tempfile.mkdtemp(prefix="aup-stats-cli-")
    try:
        path = refusing_server(work)
        p = subprocess.run([aup, "stats", "unix:" + path], capture_output=True, text=True, timeout=60)
        check(p.returncode == 1, "aup stats of a refusal exited %d, not 1" % p.returncode)
        check("aup stats: bad_request: no stats here" in p.stderr, "aup stats of a refusal said %r" % p.stderr)
        p = subprocess.run([aup, "stats", "unix:" + os.path.join(work, "none.sock")], capture_output=True, text=True,
                           timeout=60)
        check(p.returncode == 2 and p.stderr.startswith("aup stats: "),
              "aup stats of no server exited %d: %r" % (p.returncode, p.stderr))
        p = subprocess.run([aup, "stats"], capture_output=True, text=True, timeout=60)
        check(p.returncode == 2, "aup stats without an address exited %d" % p.returncode)
        p = subprocess.run([aup, "--help"], capture_output=True, text=True, timeout=60)
        check(re.search(r"^\s+stats\s", p.stdout, re.M) is not None, "aup --help does not list stats")
        p = subprocess.run([aup, "stat"], capture_output=True, text=True, timeout=60)
        check("did you mean `stats`?" in p.stderr, "a misspelt stats: %r" % p.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def stdin_case(aup, module):
    lines = "".join(json.dumps(x) + "\n" for x in EVENTS + [{"stats": {}}])
    p = subprocess.run([aup, "run", module, "--memory"], input=lines, capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, "over stdin: exited %d: %s" % (p.returncode, p.stderr))
    answers = [json.loads(x) for x in p.stdout.splitlines()]
    check(len(answers) == len(EVENTS) + 1, "over stdin: %d answers for %d requests" % (len(answers),
                                                                                   len(EVENTS) + 1))
    st = answers[-1].get("result", {})
    if not answers[-1].get("ok"):
        fail("over stdin: the stats request failed: %r" % answers[-1])
        return
    check_counts(st, "over stdin")
    for k in ("log_written_bytes", "log_bytes", "image_bytes", "checkpoints", "checkpoint_age_seconds",
              "snapshot_age_seconds", "connections"):
        check(st[k] == 0, "over stdin with --memory: %s %r, not 0" % (k, st[k]))


def failed_commit_case(aup, module):
    """A commit whose fdatasync fails: its event counts as applied, the
    commit as failed, and the event after it, refused, as unavailable."""
    work = tempfile.mkdtemp(prefix="aup-stats-fault-")
    try:
        lines = "".join(json.dumps(x) + "\n" for x in [{"event": "open", "args": {"id": 1, "owner": "a"}},
                                                        {"event": "open", "args": {"id": 2, "owner": "b"}},
                                                        {"stats": {}}])
        p = subprocess.run([aup, "run", module, "--data", os.path.join(work, "data"), "--max-batch", "1"],
                           input=lines, capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, AUP_FAULTS="fail:fdatasync:1:EIO"))
        answers = [json.loads(x) for x in p.stdout.splitlines()]
        if len(answers) != 3 or answers[0].get("ok") or not answers[2].get("ok"):
            fail("a failed commit: the first fdatasync was not the first commit's? %r %s" % (answers, p.stderr))
            return
        st = answers[2]["result"]
        want = {"events_applied": 1, "commits": 1, "commit_failures": 1}
        for k, v in want.items():
            check(st[k] == v, "a failed commit: %s %r, not %r" % (k, st[k], v))
        check(st["events_failed"]["unavailable"] == 1, "a failed commit: events_failed %r" % st["events_failed"])
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    aup, root = sys.argv[1], sys.argv[2]
    module = os.path.join(root, "tests/programs/error_codes.aup")
    for io_threads in (0, 2):
        serve_case(aup, module, io_threads)
    cli_cases(aup)
    stdin_case(aup, module)
    failed_commit_case(aup, module)
    if FAILURES:
        print("%d failure(s)" % len(FAILURES))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
