#!/usr/bin/env python3
"""The limits suite (docs/reliability.md): every named bound a user can
reach, tested AT the bound (it works) and ONE PAST it (refused clearly: the
message names the limit and its value, the documented error code or exit
status, and a serving process goes on answering other requests).

Inputs are generated into a temporary directory. One line per bound is
printed (bound, value, what happened at the bound, what happened one past
it), then a summary. Bounds tested elsewhere, and bounds that cannot be
reached from outside, are listed at the end with the reason.

usage: limits_test.py AUP BANK_MODULE [--only SUBSTRING] [--keep]
"""
import argparse
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

MIB = 1 << 20
FAILURES = []
ROWS = []  # (bound, value, at, past)

# The values the code names (compiler/, vm/, runtime/, cli/); a change
# there must be a change here, so a bound cannot move silently.
MAX_SOURCE_BYTES = 64 * MIB          # kMaxSourceBytes, compiler/source.h
MAX_NAME_BYTES = 255                 # kMaxNameBytes, compiler/lexer.h
MAX_NESTING = 256                    # kMaxNesting, compiler/parser.h
MAX_EXPR_DEPTH = 1024                # kMaxExprDepth, compiler/parser.h
MAX_LOCALS = 200                     # kMaxLocals, compiler/checker.h
MAX_PARAMS = 64                      # kMaxParams
MAX_FIELDS = 255                     # kMaxFields
MAX_KEY_FIELDS = 8                   # kMaxKeyFields, vm/key.h
MAX_DECLS = 65535                    # kMaxDeclsPerKind
MAX_BUILTIN_ARGS = 255               # kVariadic, stdlib/builtins.h
MAX_REGISTERS = 256                  # kMaxRegisters, vm/bytecode.h
MAX_JUMP = 32767                     # kMaxJump
MAX_CONSTANTS = 65536                # kMaxBx + 1 constants per function
MAX_SHAPES = 65536                   # kMaxBx + 1 object shapes per module
MAX_TEXT_BYTES = 16 * MIB            # kMaxTextBytes, vm/text.h
MAX_ARRAY_ITEMS = 1 << 24            # kMaxArrayItems, vm/value.h
MAX_CALL_DEPTH = 200                 # kMaxCallDepth, vm/value.h
MAX_JSON_DEPTH = 64                  # kMaxJsonDepth, runtime/json.h
MAX_RESULT_DEPTH = 64                # kMaxResultDepth, runtime/convert.h
MAX_MODULE_BYTES = 256 * MIB         # kMaxFileBytes, vm/module_format.h
MAX_TEMP_BYTES = 1024 * MIB          # kMaxTempBytes, vm/value.h
DEFAULT_MAX_LINE = 16 * MIB          # --max-line
DEFAULT_STEP_BUDGET = 10_000_000     # --step-budget
MAX_HTTP_HEADER_BYTES = 16384        # kMaxHttpHeaderBytes, runtime/http.h


class Failed(Exception):
    pass


def fail(msg):
    FAILURES.append(msg)
    print("FAIL: " + msg, flush=True)


def want(cond, msg):
    if not cond:
        raise Failed(msg)


def row(bound, value, at, past):
    ROWS.append((bound, value, at, past))
    print("%-44s %12s | at: %s | past: %s" % (bound, value, at, past), flush=True)


def short(s, n=110):
    s = s.strip().replace("\n", " | ")
    return s if len(s) <= n else s[:n] + "..."


class Env:
    def __init__(self, aup, bank, work):
        self.aup = aup
        self.bank = bank
        self.work = work
        self.n = 0

    def path(self, name):
        return os.path.join(self.work, name)

    def write(self, name, text):
        p = self.path(name)
        with open(p, "w" if isinstance(text, str) else "wb") as f:
            f.write(text)
        return p

    def run(self, args, stdin=None, timeout=600):
        """Runs aup; stdin is bytes (fed from a file, so large inputs cannot
        deadlock a pipe). Returns (rc, stdout bytes, stderr str)."""
        fin = subprocess.DEVNULL
        if stdin is not None:
            self.n += 1
            fin = open(self.write("stdin-%d" % self.n, stdin), "rb")
        try:
            r = subprocess.run([self.aup] + list(args), stdin=fin, capture_output=True, timeout=timeout)
        finally:
            if stdin is not None:
                fin.close()
                os.unlink(fin.name)
        return r.returncode, r.stdout, r.stderr.decode(errors="replace")

    # ---- the compiler ----

    def check_ok(self, path, what):
        rc, out, err = self.run(["check", "-q", path])
        want(rc == 0, "%s: aup check exited %d: %s" % (what, rc, short(err, 400)))

    def check_refused(self, path, needle, what, cmd="check"):
        """`aup check` (or `aup build`) exits 1 with an error naming the
        limit; returns the error line."""
        args = ["check", path] if cmd == "check" else ["build", path, "-o", path + "m"]
        rc, out, err = self.run(args)
        want(rc == 1, "%s: aup %s exited %d, expected 1: %s" % (what, cmd, rc, short(err, 400)))
        lines = [l for l in err.splitlines() if ": error: " in l]
        want(any(needle in l for l in lines), "%s: no error saying `%s`: %s" % (what, needle, short(err, 400)))
        line = next(l for l in lines if needle in l)
        want(re.match(r"^.+\.aup:\d+:\d+: error: ", line), "%s: the error has no position: %s" % (what, line))
        return line[line.index("error: "):]

    # ---- `aup run` over stdin ----

    def requests(self, module, lines, flags=(), timeout=600):
        """Feeds request lines to `aup run MODULE --memory`; returns the
        answers (parsed) and stderr."""
        data = b"".join((l if isinstance(l, bytes) else l.encode()) + b"\n" for l in lines)
        rc, out, err = self.run(["run", module, "--memory", "--fixed-time", "1"] + list(flags), stdin=data,
                                timeout=timeout)
        want(rc == 0, "aup run %s exited %d: %s" % (os.path.basename(module), rc, short(err, 400)))
        answers = [json.loads(l) for l in out.splitlines()]
        want(len(answers) == len([l for l in lines if l.strip()]),
             "%d requests, %d answers" % (len(lines), len(answers)))
        return answers, err


def ok_result(a, what):
    want(a.get("ok") is True, "%s: answered %s" % (what, short(json.dumps(a), 300)))
    return a.get("result")


def refusal(a, code, needle, what):
    want(a.get("ok") is False, "%s: not refused: %s" % (what, short(json.dumps(a), 200)))
    e = a.get("error", {})
    want(e.get("code") == code and needle in e.get("message", ""),
         "%s: answered %s, expected %s saying `%s`" % (what, short(json.dumps(e), 300), code, needle))
    return "%s \"%s\"" % (code, short(e["message"], 70))


# ---------------------------------------------------------------------------
# The module the run-time bounds use.

def nest_type(k):
    return "[" * k + "num" + "]" * k


def nest_value(k):
    return "[" * k + "1" + "]" * k


def runtime_module(env):
    src = """\
var total: num = 0
event bump { n: num }
on bump {
  total = total + 1
  let c = 0
  for i in 0 .. bump.n { c = c + 1 }
}
query get_total() { return total }
query ping() { return 1 }
query steps(n: num) {
  let c = 0
  for i in 0 .. n { c = c + 1 }
  return c
}
fn down(n: num): num {
  if n == 0 { return 0 }
  return down(n - 1) + 1
}
query calls(n: num) { return down(n) }
query doubled(k: num, tail: text) {
  let s = "x"
  for i in 0 .. k { s = s + s }
  s = s + tail
  return len(s)
}
query blob(k: num) {
  let s = "x"
  for i in 0 .. k { s = s + s }
  return s
}
query text_len(t: text) { return len(t) }
query temps(n: num) {
  let s = "x"
  for i in 0 .. 23 { s = s + s }
  let t = ""
  for i in 0 .. n { t = s + s }
  return len(t)
}
query pushes(n: num) {
  let a: [num] = []
  for i in 0 .. n { a.push(i) }
  return a.count
}
query items(a: [num]) { return a.count }
record Node { v: num, kids: [Node] }
query deep_eq(n: num) {
  let a = Node { v: 0, kids: [] }
  let b = Node { v: 0, kids: [] }
  for i in 0 .. n {
    a = Node { v: i, kids: [a] }
    b = Node { v: i, kids: [b] }
  }
  return a == b
}
record Item { k: num }
query distinct_items(n: num) {
  let xs: [Item] = []
  for i in 0 .. n { xs.push(Item { k: i }) }
  return distinct(xs).count
}
""" + """
query deep_arg(x: %s) { return x.count }
query nest_at() {
  let a: %s = %s
  return a
}
query nest_past() {
  let a: %s = %s
  return a
}
""" % (nest_type(MAX_JSON_DEPTH - 2), nest_type(MAX_RESULT_DEPTH), nest_value(MAX_RESULT_DEPTH),
       nest_type(MAX_RESULT_DEPTH + 1), nest_value(MAX_RESULT_DEPTH + 1))
    path = env.write("runtime.aup", src)
    rc, out, err = env.run(["build", path, "-o", path + "m"])
    if rc != 0:
        raise Failed("the run-time module does not build: " + short(err, 600))
    return path + "m"


def q(name, args=None, id_=None):
    d = {"query": name}
    if args is not None:
        d["args"] = args
    if id_ is not None:
        d["id"] = id_
    return json.dumps(d, separators=(",", ":"))


# ---------------------------------------------------------------------------
# Source-level bounds (compiler/).

def source_size(env):
    """64 MiB of source: a module padded with comment lines to exactly the
    bound checks and runs; one byte more is refused before lexing (exit 2,
    like a file that cannot be read)."""
    head = "query ping() { return 1 }\n"
    line = "// " + "x" * (MIB - 4) + "\n"  # 1 MiB a line
    body = head + line * ((MAX_SOURCE_BYTES - len(head)) // len(line))
    body += "//" + "x" * (MAX_SOURCE_BYTES - len(body) - 3) + "\n"
    assert len(body) == MAX_SOURCE_BYTES
    at = env.write("source_at.aup", body)
    answers, _ = env.requests(at, [q("ping")])
    want(ok_result(answers[0], "64 MiB source") == 1, "64 MiB source: wrong answer")
    past = env.write("source_past.aup", body + "\n")
    del body
    rc, out, err = env.run(["check", past])
    want(rc == 2 and "larger than 64 MiB, the limit for a source file" in err,
         "source one past: aup check exited %d: %s" % (rc, short(err)))
    rc2, out, err2 = env.run(["run", past, "--memory"])
    want(rc2 == 2 and "larger than 64 MiB" in err2, "source one past: aup run exited %d: %s" % (rc2, short(err2)))
    os.unlink(at)
    os.unlink(past)
    row("source file bytes", MAX_SOURCE_BYTES, "compiles and runs",
        "exit 2 \"... %s\"" % err[err.index("is larger"):].strip())


def name_length(env):
    at_name = "q" + "n" * (MAX_NAME_BYTES - 1)
    at = env.write("name_at.aup", "query %s() { return 1 }\n" % at_name)
    answers, _ = env.requests(at, [q(at_name)])
    want(ok_result(answers[0], "255-byte name") == 1, "255-byte name: wrong answer")
    past = env.write("name_past.aup", "query %s() { return 1 }\n" % (at_name + "n"))
    msg = env.check_refused(past, "name is %d bytes long (limit %d)" % (MAX_NAME_BYTES + 1, MAX_NAME_BYTES),
                            "name one past")
    row("name length (bytes)", MAX_NAME_BYTES, "declared, called over JSON", "exit 1 " + msg)


def nested_ifs(k):
    return ("query q() {\n  let x = 0\n" + "  if true {\n" * k + "  x = x + 1\n" + "  }\n" * k +
            "  return x\n}\n")


def nesting(env):
    """Blocks, brackets, prefix operators and type brackets share one
    count: the function body is the first level."""
    cases = [
        # name, at-bound source, expected result
        ("blocks (body + nested ifs)", lambda k: nested_ifs(k - 1), lambda k: 1),
        ("parentheses", lambda k: "query q() {\n  return %s1%s\n}\n" % ("(" * (k - 1), ")" * (k - 1)),
         lambda k: 1),
        ("prefix minus", lambda k: "query q() {\n  return %s1\n}\n" % ("- " * (k - 1)),
         lambda k: -1 if (k - 1) % 2 else 1),
        ("array literal brackets",
         lambda k: "query q() {\n  let a = %s\n  return 1\n}\n" % nest_value(k - 1), lambda k: 1),
        ("type brackets in a body",
         lambda k: "query q() {\n  let a: %s = []\n  return 1\n}\n" % nest_type(k - 2), lambda k: 1),
    ]
    for name, make, result in cases:
        at = env.write("nest_at.aup", make(MAX_NESTING))
        answers, _ = env.requests(at, [q("q")])
        want(ok_result(answers[0], "nesting %s at %d" % (name, MAX_NESTING)) == result(MAX_NESTING),
             "nesting %s: wrong answer %s" % (name, answers[0]))
        past = env.write("nest_past.aup", make(MAX_NESTING + 1))
        msg = env.check_refused(past, "nesting is deeper than %d levels" % MAX_NESTING, "nesting %s one past" % name)
        row("nesting: " + name, MAX_NESTING, "runs", "exit 1 " + msg)
    # A parameter's type: `[` brackets around `num`, outside any body.
    at = env.write("nest_at.aup", "query q(x: %s) { return x.count }\n" % nest_type(MAX_NESTING - 1))
    env.check_ok(at, "type nesting at the bound")
    past = env.write("nest_past.aup", "query q(x: %s) { return x.count }\n" % nest_type(MAX_NESTING))
    msg = env.check_refused(past, "nesting is deeper than %d levels" % MAX_NESTING, "type nesting one past")
    row("nesting: type brackets (parameter)", MAX_NESTING, "checks", "exit 1 " + msg)


def expr_depth(env):
    """A left-leaning chain `t and t and ...`: n operators make a tree n + 1
    tall. (`and` needs no register per level; `1 + 1 + ...` does, and meets
    the register bound, 256, long before the height bound.)"""
    def make(height):
        return "query q() {\n  let t = true\n  return t%s\n}\n" % (" and t" * (height - 1))
    at = env.write("expr_at.aup", make(MAX_EXPR_DEPTH))
    answers, _ = env.requests(at, [q("q")])
    want(ok_result(answers[0], "expression depth") is True, "expression depth: wrong answer")
    past = env.write("expr_past.aup", make(MAX_EXPR_DEPTH + 1))
    msg = env.check_refused(past, "expression is nested more than %d levels deep" % MAX_EXPR_DEPTH,
                            "expression depth one past")
    row("expression tree height", MAX_EXPR_DEPTH, "runs", "exit 1 " + msg)


def locals_(env):
    def make(n):
        lets = "".join("  let a%d = %d\n" % (i, i) for i in range(n))
        return "query q() {\n%s  return a0 + a%d\n}\n" % (lets, n - 1)
    at = env.write("locals_at.aup", make(MAX_LOCALS))
    answers, _ = env.requests(at, [q("q")])
    want(ok_result(answers[0], "200 locals") == MAX_LOCALS - 1, "locals: wrong answer")
    past = env.write("locals_past.aup", make(MAX_LOCALS + 1))
    msg = env.check_refused(past, "too many locals alive at once in `q` (limit %d)" % MAX_LOCALS, "locals one past")
    row("locals alive at once", MAX_LOCALS, "runs", "exit 1 " + msg)


def params(env):
    def make(n):
        ps = ", ".join("p%d: num" % i for i in range(n))
        args = ", ".join(str(i) for i in range(n))
        return ("query q(%s) { return p0 + p%d }\nfn h(%s): num { return p0 + p%d }\n"
                "query viah() { return h(%s) }\n" % (ps, n - 1, ps, n - 1, args))
    at = env.write("params_at.aup", make(MAX_PARAMS))
    answers, _ = env.requests(at, [q("q", {"p%d" % i: i for i in range(MAX_PARAMS)}), q("viah")])
    want(ok_result(answers[0], "64 parameters") == MAX_PARAMS - 1, "params: wrong answer")
    want(ok_result(answers[1], "64 arguments to a helper") == MAX_PARAMS - 1, "params: wrong helper answer")
    past = env.write("params_past.aup", make(MAX_PARAMS + 1))
    msg = env.check_refused(past, "`q` has more than %d parameters" % MAX_PARAMS, "query params one past")
    env.check_refused(past, "`h` has more than %d parameters" % MAX_PARAMS, "helper params one past")
    row("parameters of a query or helper", MAX_PARAMS, "query over JSON, helper call", "exit 1 " + msg)


def fields(env):
    n = MAX_FIELDS
    names = ["f%d" % i for i in range(n)]
    rec = "record R { %s }\n" % ", ".join("%s: num" % f for f in names)
    src = (rec + "table rs: R key f0\n"
           "event put255 { %s }\n" % ", ".join("%s: num" % f for f in names) +
           "on put255 { rs.add(R { %s }) }\n" % ", ".join("%s: put255.%s" % (f, f) for f in names) +
           "query get(k: num) { return rs[k] }\n"
           "query obj() { return { %s } }\n" % ", ".join("%s: %d" % (f, i) for i, f in enumerate(names)) +
           "query shape(o: { %s }) { return o.f%d }\n" % (", ".join("%s: num" % f for f in names), n - 1))
    at = env.write("fields_at.aup", src)
    args = {f: i for i, f in enumerate(names)}
    answers, _ = env.requests(at, [json.dumps({"event": "put255", "args": args}), q("get", {"k": 0}), q("obj"),
                                   q("shape", {"o": args})])
    ok_result(answers[0], "event with 255 fields")
    want(ok_result(answers[1], "row of 255 fields") == args, "fields: the row read back differs")
    want(ok_result(answers[2], "object of 255 fields") == args, "fields: the object differs")
    want(ok_result(answers[3], "object type of 255 fields") == n - 1, "fields: the object argument differs")
    extra = ", f%d: num" % n
    past_rec = env.write("fields_rec.aup", "record R { %s%s }\n" % (", ".join("%s: num" % f for f in names), extra))
    m1 = env.check_refused(past_rec, "record `R` has more than %d fields" % n, "record fields one past")
    past_ev = env.write("fields_ev.aup", "event E { %s%s }\non E { }\n" % (", ".join("%s: num" % f for f in names),
                                                                         extra))
    env.check_refused(past_ev, "event `E` has more than %d fields" % n, "event fields one past")
    past_obj = env.write("fields_obj.aup", "query obj() { return { %s, f%d: 1 } }\n" %
                         (", ".join("%s: %d" % (f, i) for i, f in enumerate(names)), n))
    env.check_refused(past_obj, "an object has at most %d fields" % n, "object literal fields one past")
    past_ty = env.write("fields_ty.aup", "query shape(o: { %s%s }) { return 1 }\n" %
                        (", ".join("%s: num" % f for f in names), extra))
    env.check_refused(past_ty, "an object type has at most %d fields" % n, "object type fields one past")
    row("fields of a record, event, object (type)", n, "row, event, object, object arg", "exit 1 " + m1)


def key_fields(env):
    """A key of 8 fields (texts and numbers alternating) works as a key:
    add, look up, a prefix view; 9 are refused where the ninth is named."""
    n = MAX_KEY_FIELDS
    names = ["k%d" % i for i in range(n + 1)]
    types = ["text" if i % 2 else "num" for i in range(n + 1)]
    rec = "record R { %s, v: num }\n" % ", ".join("%s: %s" % (f, t) for f, t in zip(names, types))
    args = ", ".join("%s: %s" % (f, t) for f, t in zip(names[:n], types))
    src = (rec + "table rs: R key (%s)\n" % ", ".join(names[:n]) +
           "event put { %s, v: num }\n" % args +
           "on put { rs.add(R { %s, k%d: %s, v: put.v }) }\n" % (", ".join("%s: put.%s" % (f, f) for f in names[:n]), n,
                                                                   '""' if types[n] == "text" else "0") +
           "query get(%s) { return rs[%s].v }\n" % (args, ", ".join(names[:n])) +
           "query prefix(k0: num, k1: text) { return rs[k0, k1].count }\n")
    at = env.write("key_fields_at.aup", src)
    key = {f: (("t%d" % i) if t == "text" else i) for i, (f, t) in enumerate(zip(names[:n], types))}
    other = dict(key, k7="other")
    answers, _ = env.requests(at, [json.dumps({"event": "put", "args": dict(key, v=1)}),
                                   json.dumps({"event": "put", "args": dict(other, v=2)}),
                                   q("get", other), q("prefix", {"k0": 0, "k1": "t1"})])
    ok_result(answers[0], "a row with a key of %d fields" % n)
    want(ok_result(answers[2], "a lookup by %d key fields" % n) == 2, "key_fields: the row read back differs")
    want(ok_result(answers[3], "a view over a key prefix") == 2, "key_fields: the prefix view's count differs")
    past = env.write("key_fields_past.aup", rec + "table rs: R key (%s)\n" % ", ".join(names))
    m = env.check_refused(past, "a key has at most %d fields" % n, "key fields one past")
    row("fields of a key", n, "add, lookup, prefix view", "exit 1 " + m)


def decls(env):
    """65,535 of each kind. Records and events share one numbering (an
    event's arguments are a record), as do queries and helpers."""
    def kind(name, make, needle, runs=None):
        at = env.write("decls_at.aup", make(MAX_DECLS))
        t0 = time.monotonic()
        if runs:
            answers, _ = env.requests(at, [runs[0]])
            want(ok_result(answers[0], "%d %s" % (MAX_DECLS, name)) == runs[1], "%s: wrong answer" % name)
            how = "runs"
        else:
            env.check_ok(at, "%d %s" % (MAX_DECLS, name))
            how = "checks"
        how += " (%.1fs)" % (time.monotonic() - t0)
        past = env.write("decls_past.aup", make(MAX_DECLS + 1))
        msg = env.check_refused(past, needle, "%s one past" % name)
        row("declarations: " + name, MAX_DECLS, how, "exit 1 " + msg)

    kind("records", lambda n: "".join("record R%d { id: num }\n" % i for i in range(n)),
         "more than %d records" % MAX_DECLS)
    kind("tables", lambda n: "record R { id: num }\n" + "".join("table t%d: R key id\n" % i for i in range(n)),
         "more than %d tables" % MAX_DECLS)
    kind("vars", lambda n: "".join("var v%d: num = %d\n" % (i, i) for i in range(n)) +
         "query last() { return v%d }\n" % (n - 1), "more than %d vars" % MAX_DECLS,
         runs=(q("last"), MAX_DECLS - 1))
    kind("events (with handlers)", lambda n: "".join("event e%d { }\non e%d { }\n" % (i, i) for i in range(n)),
         "more than %d" % MAX_DECLS)
    kind("functions (helpers)", lambda n: "".join("fn f%d(): num { return %d }\n" % (i, i) for i in range(n - 1)) +
         "query last() { return f%d() }\n" % (n - 2), "more than %d" % MAX_DECLS,
         runs=(q("last"), MAX_DECLS - 2))
    # The worst shapes at the bound: records holding the next one through a
    # field (the cycle check walks the chain), helpers calling the next one
    # with the last writing a var (effects close over the chain).
    def chained_records(n):
        return ("".join("record R%d { id: num, next: R%d }\n" % (i, i + 1) for i in range(n - 1)) +
                "record R%d { id: num }\n" % (n - 1))
    kind("records chained through fields", chained_records, "more than %d records" % MAX_DECLS)

    def chained_helpers(n):
        return ("var v: num = 0\n" + "".join("fn f%d() { f%d() }\n" % (i, i + 1) for i in range(n - 2)) +
                "fn f%d() { v = v + 1 }\nevent e { }\non e { f0() }\nquery last() { return v }\n" % (n - 2))
    kind("helpers chained through calls", chained_helpers, "more than %d" % MAX_DECLS)
    # The shared numberings: 65,535 records leave no room for an event.
    past = env.write("decls_past.aup", "".join("record R%d { id: num }\n" % i for i in range(MAX_DECLS)) +
                     "event e { }\non e { }\n")
    msg = env.check_refused(past, "more than %d records and events" % MAX_DECLS, "records + events one past")
    row("declarations: records + events (one pool)", MAX_DECLS, "(records case)", "exit 1 " + msg)
    past = env.write("decls_past.aup", "".join("fn f%d() { }\n" % i for i in range(MAX_DECLS)) +
                     "query q() { return 1 }\n")
    msg = env.check_refused(past, "more than %d queries and functions" % MAX_DECLS, "queries + helpers one past")
    row("declarations: queries + helpers (one pool)", MAX_DECLS, "(helpers case)", "exit 1 " + msg)


def shapes(env):
    """Distinct object types in a module: NEWOBJ names a shape in 16 bits."""
    def make(n):
        per = 4096  # object literals per query, each in its own block (one local alive)
        out = []
        for f in range((n + per - 1) // per):
            body = "".join("  { let o = { s%d: %d }\n  n = n + o.s%d }\n" % (i, i, i)
                           for i in range(f * per, min(n, (f + 1) * per)))
            out.append("query q%d() {\n  let n = 0\n%s  return n\n}\n" % (f, body))
        return "".join(out)
    at = env.write("shapes_at.aup", make(MAX_SHAPES))
    last = (MAX_SHAPES - 1) // 4096
    want_sum = sum(range(last * 4096, MAX_SHAPES))
    answers, _ = env.requests(at, [q("q%d" % last)])
    want(ok_result(answers[0], "65536 shapes") == want_sum, "shapes: wrong answer %s" % answers[0])
    past = env.write("shapes_past.aup", make(MAX_SHAPES + 1))
    msg = env.check_refused(past, "more than %d object shapes" % MAX_SHAPES, "shapes one past", cmd="build")
    row("object shapes in a module", MAX_SHAPES, "builds, runs", "build exit 1 " + msg)


def registers(env):
    """Registers are the locals, then temporaries: one local, the result
    and the arguments of `max` fill all 256 (the disassembly says how many
    a frame uses); one argument more is refused, not an assertion."""
    def make(args):
        return "query q() {\n  let z = 0\n  return max(%s)\n}\n" % ", ".join(["z"] * args)

    def frame(src, name):
        p = env.write(name, src)
        rc, out, err = env.run(["disasm", p])
        m = re.search(r"^query q\(\) -> num  \((\d+) registers,", out.decode(), re.M)
        want(rc == 0 and m, "registers: disasm: %s" % short(err or out.decode()[:300]))
        return p, int(m.group(1))
    _, used = frame(make(10), "regs_base.aup")
    n = MAX_REGISTERS - (used - 10)
    at, used = frame(make(n), "regs_at.aup")
    want(used == MAX_REGISTERS, "registers: %d arguments use %d registers, expected %d" % (n, used, MAX_REGISTERS))
    answers, _ = env.requests(at, [q("q")])
    want(ok_result(answers[0], "256 registers") == 0, "registers: wrong answer")
    past = env.write("regs_past.aup", make(n + 1))
    msg = env.check_refused(past, "`q` needs more than %d registers here" % MAX_REGISTERS, "registers one past",
                            cmd="build")
    row("registers of a frame", MAX_REGISTERS, "runs (disasm: 256)", "build exit 1 " + msg)


def builtin_args(env):
    def make(n):
        return "query q() { return max(%s) }\n" % ", ".join(str(i) for i in range(n))
    at = env.write("args_at.aup", make(MAX_BUILTIN_ARGS))
    answers, _ = env.requests(at, [q("q")])
    want(ok_result(answers[0], "max of 255") == MAX_BUILTIN_ARGS - 1, "builtin args: wrong answer")
    past = env.write("args_past.aup", make(MAX_BUILTIN_ARGS + 1))
    msg = env.check_refused(past, "`max` takes at most %d arguments, found %d" % (MAX_BUILTIN_ARGS,
                                                                               MAX_BUILTIN_ARGS + 1),
                            "builtin args one past")
    row("arguments of min/max", MAX_BUILTIN_ARGS, "runs", "exit 1 " + msg)


def jumps(env):
    """A jump spans at most 32,767 instructions: an `if` over a body of
    `x = 1` statements (one instruction each), and a `while` loop's jump
    back over the same."""
    def make_if(k):
        return "query q() {\n  let x = 0\n  if x == 0 {\n%s  }\n  return x\n}\n" % ("    x = 1\n" * k)

    def make_while(k):
        return ("query q() {\n  let x = 0\n  while x == 0 {\n%s  }\n  return x\n}\n" % ("    x = 1\n" * k))

    def offsets(src, name):
        p = env.write(name, src)
        rc, out, err = env.run(["disasm", p])
        want(rc == 0, "jumps: disasm failed: %s" % short(err))
        text = out.decode()
        found = re.findall(r"^\s+(\d+)\s+(?:\d+:\d+\s+)?(?:JMP|JT|JF|NEXT|RNEXT)\b.*-> (-?\d+)$", text, re.M)
        return [int(t) - int(pc) - 1 for pc, t in found], text

    results = []
    for name, make in (("forward (if)", make_if), ("backward (while)", make_while)):
        # Calibrate: the longest jump for a body of 10 statements.
        small, text = offsets(make(10), "jump_small.aup")
        want(small, "jumps: no jump offsets in the disassembly: %s" % short(text, 300))
        longest = max(abs(o) for o in small)
        extra = longest - 10
        k = MAX_JUMP - extra
        at = env.write("jump_at.aup", make(k))
        answers, _ = env.requests(at, [q("q")])
        want(ok_result(answers[0], "jump of %d" % MAX_JUMP) == 1, "jumps %s: wrong answer" % name)
        big, _ = offsets(make(k), "jump_at.aup")
        want(max(abs(o) for o in big) == MAX_JUMP, "jumps %s: the longest jump is %d, not %d" %
             (name, max(abs(o) for o in big), MAX_JUMP))
        past = env.write("jump_past.aup", make(k + 1))
        msg = env.check_refused(past, "`q` is too long: a jump spans more than %d instructions" % MAX_JUMP,
                                "jump %s one past" % name, cmd="build")
        row("jump distance: " + name, MAX_JUMP, "runs (disasm: %d)" % MAX_JUMP, "build exit 1 " + msg)


def constants(env):
    def make(n):
        return "query q() {\n  let x = 0\n%s  return x\n}\n" % "".join("  x = %d.5\n" % i for i in range(n))
    at = env.write("konst_at.aup", make(MAX_CONSTANTS))
    answers, _ = env.requests(at, [q("q")])
    want(ok_result(answers[0], "65536 constants") == MAX_CONSTANTS - 0.5, "constants: wrong answer")
    past = env.write("konst_past.aup", make(MAX_CONSTANTS + 1))
    msg = env.check_refused(past, "`q` has more than %d constants" % MAX_CONSTANTS, "constants one past",
                            cmd="build")
    row("constants of a function", MAX_CONSTANTS, "runs", "build exit 1 " + msg)


def text_literal(env):
    """A text literal in the source holds at most 16 MiB, like any text."""
    def make(n):
        return 'query q() { return len("%s") }\n' % ("x" * n)
    at = env.write("lit_at.aup", make(MAX_TEXT_BYTES))
    answers, _ = env.requests(at, [q("q")])
    want(ok_result(answers[0], "16 MiB literal") == MAX_TEXT_BYTES, "text literal: wrong answer")
    past = env.write("lit_past.aup", make(MAX_TEXT_BYTES + 1))
    msg = env.check_refused(past, "text literal is longer than 16 MiB", "text literal one past")
    os.unlink(at)
    os.unlink(past)
    row("text literal bytes", MAX_TEXT_BYTES, "runs", "exit 1 " + msg)


def module_file(env):
    """A module file is read whole up to 256 MiB. No module is that large
    (sources stop at 64 MiB), so at the bound a padded file is read and then
    refused for its content, not its size; one byte more is refused for its
    size. Sparse files: nothing is written to disk."""
    good = env.path("bank.aupm")
    rc, out, err = env.run(["build", env.bank, "-o", good])
    want(rc == 0, "module file: cannot build bank: %s" % err)
    at = env.path("padded_at.aupm")
    past = env.path("padded_past.aupm")
    for p, size in ((at, MAX_MODULE_BYTES), (past, MAX_MODULE_BYTES + 1)):
        shutil.copyfile(good, p)
        os.truncate(p, size)
    rc, out, err_at = env.run(["run", at, "--memory"])
    want(rc == 1 and "limit for a module" not in err_at and at in err_at,
         "module file at the bound: exit %d: %s" % (rc, short(err_at)))
    rc, out, err = env.run(["run", past, "--memory"])
    want(rc == 1 and "is larger than 256 MiB, the limit for a module" in err,
         "module file one past: exit %d: %s" % (rc, short(err)))
    os.unlink(at)
    os.unlink(past)
    row("module file bytes", MAX_MODULE_BYTES, "read, judged by content: " + short(err_at.split(": ")[-1], 40),
        "exit 1 \"... %s\"" % err[err.index("is larger"):].strip())


# ---------------------------------------------------------------------------
# Run-time bounds (vm/, runtime/): over stdin, then over a socket.

def step_budget(env, mod):
    budget = 1000
    answers, _ = env.requests(mod, [q("steps", {"n": budget}), q("steps", {"n": budget + 1}), q("ping"),
                                    json.dumps({"event": "bump", "args": {"n": budget - 1}}),
                                    json.dumps({"event": "bump", "args": {"n": budget + 1}}),
                                    q("get_total")], flags=["--step-budget", str(budget)])
    want(ok_result(answers[0], "steps at the budget") == budget, "steps: wrong answer")
    past = refusal(answers[1], "budget", "the step budget (%d steps) ran out" % budget, "steps one past")
    ok_result(answers[2], "a query after the budget ran out")
    ok_result(answers[3], "an event within the budget")
    refusal(answers[4], "budget", "the step budget (%d steps) ran out" % budget, "an event past the budget")
    want(ok_result(answers[5], "total after a failed event") == 1, "steps: the failed event was not rolled back")
    row("step budget (--step-budget %d)" % budget, budget, "loop of %d rounds" % budget,
        past + ", event rolled back, next answered")
    # The default.
    d = DEFAULT_STEP_BUDGET
    answers, _ = env.requests(mod, [q("steps", {"n": d}), q("steps", {"n": d + 1}), q("ping")])
    want(ok_result(answers[0], "default step budget") == d, "default steps: wrong answer")
    past = refusal(answers[1], "budget", "the step budget (%d steps) ran out" % d, "default steps one past")
    ok_result(answers[2], "a query after the default budget ran out")
    row("step budget (default)", d, "loop of %d rounds" % d, past)


def distinct_steps(env, mod):
    """`distinct` of records compares each item with each kept one; every
    comparison is a step, so the budget bounds it like a loop in aup: 100
    distinct items take 100 loop rounds + 4950 comparisons."""
    n = 100
    need = n + n * (n - 1) // 2
    answers, _ = env.requests(mod, [q("distinct_items", {"n": n})], flags=["--step-budget", str(need)])
    want(ok_result(answers[0], "distinct within the budget") == n, "distinct: wrong answer")
    answers, _ = env.requests(mod, [q("distinct_items", {"n": n}), q("ping")], flags=["--step-budget", str(need - 1)])
    past = refusal(answers[0], "budget", "the step budget (%d steps) ran out" % (need - 1), "distinct one past")
    ok_result(answers[1], "a query after distinct ran out of steps")
    # Without the charge this was quadratic work inside one step: 200,000
    # items under the default budget are 2e10 comparisons; now refused fast.
    t0 = time.monotonic()
    answers, _ = env.requests(mod, [q("distinct_items", {"n": 200000})])
    refusal(answers[0], "budget", "the step budget", "distinct of 200000 items")
    row("step budget: distinct of records (--step-budget %d)" % need, need,
        "%d items, %d comparisons" % (n, need - n),
        past + "; 200000 items refused in %.1fs" % (time.monotonic() - t0))


def deep_equality(env, mod):
    """Values nest without a bound through arrays (a record holding an
    array of itself); `==` on two such values must not overflow the stack.
    There is no limit to be at: 200,000 levels compare."""
    n = 200000
    answers, _ = env.requests(mod, [q("deep_eq", {"n": n}), q("ping")])
    want(ok_result(answers[0], "== of values nested %d deep" % n) is True, "deep equality: wrong answer")
    ok_result(answers[1], "a query after a deep comparison")
    row("== on nested values (no bound: explicit stack)", "none", "%d levels compared" % n, "n/a")


def call_depth(env, mod):
    # calls(n) makes n + 1 nested helper calls: down(n) .. down(0).
    n = MAX_CALL_DEPTH - 1
    answers, _ = env.requests(mod, [q("calls", {"n": n}), q("calls", {"n": n + 1}), q("ping")])
    want(ok_result(answers[0], "200 nested calls") == n, "call depth: wrong answer")
    past = refusal(answers[1], "budget", "calls nested deeper than %d" % MAX_CALL_DEPTH, "call depth one past")
    ok_result(answers[2], "a query after the call depth")
    row("call depth (recursive helpers)", MAX_CALL_DEPTH, "%d nested calls" % MAX_CALL_DEPTH, past + ", next answered")


def text_bytes(env, mod):
    # Built by concatenation: 24 doublings of "x" are 16 MiB exactly.
    answers, _ = env.requests(mod, [q("doubled", {"k": 24, "tail": ""}), q("doubled", {"k": 24, "tail": "y"}),
                                    q("ping")])
    want(ok_result(answers[0], "a 16 MiB text") == MAX_TEXT_BYTES, "text: wrong answer")
    past = refusal(answers[1], "budget", "a text would be longer than 16 MiB", "text one past")
    ok_result(answers[2], "a query after a text too long")
    row("text bytes (concatenation)", MAX_TEXT_BYTES, "built, len 16777216", past + ", next answered")
    # From a request: a JSON string of exactly 16 MiB, then one byte more
    # (the line limit raised so the line itself is not what is refused).
    big = "x" * MAX_TEXT_BYTES
    answers, _ = env.requests(mod, [q("text_len", {"t": big}), q("text_len", {"t": big + "y"}), q("ping")],
                              flags=["--max-line", str(MAX_TEXT_BYTES + 4096)])
    want(ok_result(answers[0], "a 16 MiB string") == MAX_TEXT_BYTES, "text arg: wrong answer")
    past = refusal(answers[1], "bad_args", "t: string longer than 16 MiB", "string arg one past")
    ok_result(answers[2], "a query after a string too long")
    row("text bytes (request string)", MAX_TEXT_BYTES, "accepted", past + ", next answered")


def temp_bytes(env, mod):
    """The temporaries one query may make: 23 doublings leave 16 MiB of
    texts, then every round makes a new 16 MiB text that stays until the
    query ends. 62 rounds hold 1008 MiB; the 63rd text would pass 1024."""
    answers, _ = env.requests(mod, [q("temps", {"n": 62}), q("temps", {"n": 63}), q("ping")])
    want(ok_result(answers[0], "1008 MiB of temporaries") == MAX_TEXT_BYTES, "temps: wrong answer")
    past = refusal(answers[1], "budget", "temporary values would pass %d MiB" % (MAX_TEMP_BYTES >> 20),
                   "temporaries one past")
    ok_result(answers[2], "a query after too many temporaries")
    row("temporaries of one event or query (bytes)", MAX_TEMP_BYTES, "1008 MiB held", past + ", next answered")


def array_items(env, mod):
    n = MAX_ARRAY_ITEMS
    answers, _ = env.requests(mod, [q("pushes", {"n": n}), q("pushes", {"n": n + 1}), q("ping")],
                              flags=["--step-budget", str(2 * n)])
    want(ok_result(answers[0], "an array of 2^24 items") == n, "array: wrong answer")
    past = refusal(answers[1], "budget", "an array would hold more than %d items" % n, "array one past")
    ok_result(answers[2], "a query after an array too long")
    row("array items (push)", n, "filled", past + ", next answered")
    # From a request: 2^24 numbers in one JSON array (a 32 MiB line).
    items = b"[" + b"0," * (n - 1) + b"0]"
    line = b'{"query":"items","args":{"a":' + items + b"}}"
    past_line = b'{"query":"items","args":{"a":' + items[:-1] + b",0]}}"
    answers, _ = env.requests(mod, [line, past_line, q("ping")], flags=["--max-line", str(len(past_line) + 16)])
    want(ok_result(answers[0], "a request array of 2^24 items") == n, "array arg: wrong answer")
    past = refusal(answers[1], "bad_args", "a: array longer than %d items" % n, "array arg one past")
    ok_result(answers[2], "a query after an array too long")
    row("array items (request array)", n, "accepted", past + ", next answered")


def json_depth(env, mod):
    # The request object and `args` are two levels; the argument adds 62.
    def line(arrays):
        return '{"query":"deep_arg","args":{"x":%s}}' % ("[" * arrays + "1" + "]" * arrays)
    answers, _ = env.requests(mod, [line(MAX_JSON_DEPTH - 2), line(MAX_JSON_DEPTH - 1), q("ping")])
    want(ok_result(answers[0], "a request nested 64 deep") == 1, "json depth: wrong answer")
    past = refusal(answers[1], "bad_request", "nesting deeper than %d" % MAX_JSON_DEPTH, "json depth one past")
    ok_result(answers[2], "a query after a request nested too deep")
    row("request JSON nesting", MAX_JSON_DEPTH, "accepted", past + ", next answered")


def result_depth(env, mod):
    answers, _ = env.requests(mod, [q("nest_at"), q("nest_past"), q("ping")])
    r = ok_result(answers[0], "a result nested 64 deep")
    depth = 0
    while isinstance(r, list):
        r, depth = r[0], depth + 1
    want(depth == MAX_RESULT_DEPTH, "result depth: %d levels came back" % depth)
    past = refusal(answers[1], "budget", "the result nests deeper than %d" % MAX_RESULT_DEPTH, "result one past")
    ok_result(answers[2], "a query after a result nested too deep")
    row("result nesting", MAX_RESULT_DEPTH, "written", past + ", next answered")


def max_line_stdin(env):
    def line(n, id_):
        # {"query":"total","id":"xxx"} padded to n bytes
        head, tail = '{"query":"total","id":"%s' % id_, '"}'
        return head + "x" * (n - len(head) - len(tail)) + tail
    for limit, flags, label in ((1000, ["--max-line", "1000"], "--max-line 1000"),
                                (DEFAULT_MAX_LINE, [], "default")):
        lines = [line(limit, "a"), line(limit + 1, "b"), '{"query":"total","id":3}']
        assert len(lines[0]) == limit and len(lines[1]) == limit + 1
        answers, _ = env.requests(env.bank, lines, flags=flags)
        want(answers[0].get("ok") is True and answers[0]["id"].startswith("a"), "max-line at the bound: %s" %
             short(json.dumps(answers[0])))
        past = refusal(answers[1], "bad_request", "line longer than %d bytes" % limit, "max-line one past")
        want(answers[2].get("id") == 3 and answers[2].get("ok") is True, "max-line: the next line: %s" % answers[2])
        row("request line bytes, stdin (%s)" % label, limit, "answered", past + ", next answered")


# ---- over a socket ----

# `--io-threads N` given to this test: every server runs with it.
IO_THREADS = []


class Server:
    def __init__(self, env, module, extra=(), data=None, http=False):
        extra = list(extra) + IO_THREADS
        self.sock_path = env.path("s%d.sock" % time.monotonic_ns())
        store = ["--memory"] if data is None else ["--data", data]
        self.err_path = env.path("server-%d.err" % time.monotonic_ns())
        self.err = open(self.err_path, "wb")
        listen = ["--listen", "unix:" + self.sock_path] + (["--listen", "http://:0"] if http else [])
        self.p = subprocess.Popen([env.aup, "run", module] + listen + store + list(extra),
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.err)
        deadline = time.monotonic() + 60
        while self.stderr().count("aup: listening on") < len(listen) // 2:
            if self.p.poll() is not None or time.monotonic() > deadline:
                raise Failed("the server did not start: " + self.stderr())
            time.sleep(0.02)
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", self.stderr())
        self.http_port = int(m.group(1)) if m else None

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(self.sock_path)
        return s

    def connect_http(self):
        return socket.create_connection(("127.0.0.1", self.http_port))

    def rss_kib(self):
        with open("/proc/%d/status" % self.p.pid) as f:
            for l in f:
                if l.startswith("VmRSS:"):
                    return int(l.split()[1])
        return 0

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        rc = self.p.wait(timeout=120)
        self.err.close()
        return rc

    def stderr(self):
        with open(self.err_path, errors="replace") as f:
            return f.read()


class Client:
    def __init__(self, server):
        self.s = server.connect()
        self.buf = b""

    def send(self, lines):
        self.s.sendall(b"".join((l if isinstance(l, bytes) else l.encode()) + b"\n" for l in lines))

    def read(self, n, timeout=120):
        self.s.settimeout(timeout)
        out = []
        while len(out) < n:
            nl = self.buf.find(b"\n")
            if nl >= 0:
                out.append(json.loads(self.buf[:nl]))
                self.buf = self.buf[nl + 1:]
                continue
            chunk = self.s.recv(1 << 20)
            if not chunk:
                break
            self.buf += chunk
        return out

    def call(self, lines):
        self.send(lines)
        return self.read(len(lines))

    def close(self):
        self.s.close()


def max_line_socket(env):
    limit = 4096
    srv = Server(env, env.bank, ["--max-line", str(limit)])
    try:
        head = '{"query":"total","id":"'
        at = head + "a" * (limit - len(head) - 2) + '"}'
        past = head + "b" * (limit + 1 - len(head) - 2) + '"}'
        c = Client(srv)
        answers = c.call([at, past, '{"query":"total","id":3}'])
        want(len(answers) == 3, "max-line socket: %d answers" % len(answers))
        want(answers[0].get("ok") is True, "max-line socket at the bound: %s" % short(json.dumps(answers[0])))
        p = refusal(answers[1], "bad_request", "line longer than %d bytes" % limit, "max-line socket one past")
        want(answers[2].get("id") == 3 and answers[2].get("ok"), "max-line socket: next line %s" % answers[2])
        c.close()
    finally:
        rc = srv.stop()
    want(rc == 0, "max-line socket: the server exited %d" % rc)
    row("request line bytes, --listen (--max-line %d)" % limit, limit, "answered", p + ", next answered")


def max_pending(env):
    """--max-pending N: at most N requests of a connection are read and not
    yet answered. With one client pipelining events, no commit can then hold
    more than N of them: the store's commit count shows the bound held."""
    n, events = 4, 400
    data = env.path("pending-store")
    srv = Server(env, env.bank, ["--max-pending", str(n), "--stats"], data=data)
    try:
        c = Client(srv)
        ok_result(c.call(['{"event":"open","args":{"id":1,"owner":"a"}}'])[0], "pending: open")
        c.send(['{"event":"deposit","args":{"id":1,"amount":1},"id":%d}' % i for i in range(events)])
        answers = c.read(events)
        want(len(answers) == events, "pending: %d of %d answers" % (len(answers), events))
        for i, a in enumerate(answers):
            want(a.get("id") == i and a.get("ok") and a["result"]["balance"] == i + 1,
                 "pending: answer %d is %s" % (i, a))
        c.close()
    finally:
        rc = srv.stop()
    want(rc == 0, "pending: the server exited %d" % rc)
    m = re.search(r'aup: totals \{"commits":(\d+)', srv.stderr())
    want(m, "pending: no totals line: %s" % short(srv.stderr()))
    commits = int(m.group(1))
    want(commits >= 1 + events // n, "pending: %d commits for %d events; with at most %d in flight there must be "
         "at least %d" % (commits, events, n, 1 + events // n))
    row("pending requests per connection (--max-pending %d)" % n, n,
        "%d pipelined events answered in order" % events,
        "not read until answered: %d commits (>= %d)" % (commits, 1 + events // n))


def hog(sock, request, count):
    """Sends `count` copies of `request` and never reads: the bytes sent."""
    sock.setblocking(False)
    req = request * count
    sent = 0
    deadline = time.monotonic() + 4
    while time.monotonic() < deadline and sent < len(req):
        try:
            sent += sock.send(req[sent:])
        except BlockingIOError:
            time.sleep(0.05)
    time.sleep(1)
    return sent


def max_output(env, mod):
    """--max-output: an answer larger than the limit still goes out whole;
    a client that sends and never reads makes the server stop reading it
    once that many answer bytes wait, so it holds about that much memory,
    and other clients are served meanwhile; the same for a client that
    pipelines HTTP requests and never reads the responses."""
    limit = 65536
    srv = Server(env, mod, ["--max-output", str(limit)], http=True)
    try:
        c = Client(srv)
        answers = c.call([q("blob", {"k": 10}), q("blob", {"k": 20}), q("ping")])
        want(len(answers) == 3 and len(answers[0]["result"]) == 1024 and len(answers[1]["result"]) == MIB and
             answers[2]["result"] == 1, "max-output: answers %s" % short(str(answers)[:300]))
        # An answer just over the limit that one send takes whole: the line
        # read with it, held back while it waited, is still answered (the
        # owner server once waited for a read that never came).
        for k in (16, 17):
            c.send([q("blob", {"k": k}), q("ping")])
            try:
                answers = c.read(2, timeout=10)
            except socket.timeout:
                answers = []
            want(len(answers) == 2 and answers[1].get("result") == 1,
                 "max-output: after a %d-byte answer the next line is not answered: %s" %
                 (1 << k, short(str(answers)[:200])))
        base = srv.rss_kib()
        # The hog: 4 MiB answers to 34-byte requests, never read.
        line_hog = srv.connect()
        sent = hog(line_hog, (q("blob", {"k": 22}) + "\n").encode(), 2000)
        grown_mib = (srv.rss_kib() - base) / 1024
        answers = c.call([q("ping")])
        want(answers and answers[0].get("ok"), "max-output: another client is not served: %s" % answers)
        line_hog.close()
        want(grown_mib < 256, "max-output: a client that never reads grew the server by %.0f MiB (the limit is "
             "%d bytes; %d request bytes were sent)" % (grown_mib, limit, sent))
        # The same over HTTP: pipelined POSTs, the responses never read.
        base = srv.rss_kib()
        http_hog = srv.connect_http()
        sent_http = hog(http_hog, http_post("/queries/blob", '{"k":22}'), 2000)
        http_grown_mib = (srv.rss_kib() - base) / 1024
        answers = c.call([q("ping")])
        want(answers and answers[0].get("ok"), "max-output over HTTP: another client is not served: %s" % answers)
        other = srv.connect_http()
        status, body, _ = http_exchange(other, http_post("/queries/ping", "{}"))
        other.close()
        want(status == 200 and '"result":1' in body,
             "max-output over HTTP: another HTTP client is not served: %s %s" % (status, short(body)))
        http_hog.close()
        want(http_grown_mib < 256, "max-output: an HTTP client that never reads grew the server by %.0f MiB (the "
             "limit is %d bytes; %d request bytes were sent)" % (http_grown_mib, limit, sent_http))
        c.close()
    finally:
        rc = srv.stop()
    want(rc == 0, "max-output: the server exited %d" % rc)
    row("answer bytes waiting per connection (--max-output %d)" % limit, limit,
        "1 MiB answer sent whole", "non-reading client: reading stops, +%.0f MiB held (HTTP: +%.0f MiB), others "
        "served" % (grown_mib, http_grown_mib))


# ---- over HTTP ----

def http_exchange(s, request, timeout=30):
    """Sends `request` (bytes) on `s` and reads what comes back until the
    server has sent one whole response or closed: (status, body, closed)."""
    if request:
        s.sendall(request)
    s.settimeout(timeout)
    buf = b""
    while True:
        head_end = buf.find(b"\r\n\r\n")
        if head_end >= 0:
            m = re.search(rb"Content-Length: (\d+)", buf[:head_end])
            want = head_end + 4 + int(m.group(1))
            if len(buf) >= want:
                status = int(buf.split(b" ", 2)[1])
                closed = b"Connection: close" in buf[:head_end]
                return status, buf[head_end + 4:want].decode(), closed
        try:
            chunk = s.recv(1 << 20)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            return None, buf.decode(errors="replace"), True
        buf += chunk


def http_get(path, extra=b""):
    return b"GET " + path.encode() + b" HTTP/1.1\r\nHost: h\r\n" + extra + b"\r\n"


def http_post(path, body, extra=b""):
    body = body if isinstance(body, bytes) else body.encode()
    return (b"POST " + path.encode() + b" HTTP/1.1\r\nHost: h\r\n" + extra +
            b"Content-Length: %d\r\n\r\n" % len(body) + body)


def peer_closed(s, timeout=10):
    s.settimeout(timeout)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def still_serves(srv, what):
    c = srv.connect_http()
    status, body, _ = http_exchange(c, http_get("/queries/total"))
    c.close()
    want(status == 200 and '"ok":true' in body, "%s: another client is not served: %s %s" % (what, status, body))


def max_http_header(env):
    srv = Server(env, env.bank, http=True)
    try:
        head = b"GET /queries/total HTTP/1.1\r\nX-Pad: "
        at = head + b"a" * (MAX_HTTP_HEADER_BYTES - len(head) - 4) + b"\r\n\r\n"
        past = head + b"a" * (MAX_HTTP_HEADER_BYTES - len(head) - 3) + b"\r\n\r\n"
        c = srv.connect_http()
        status, body, _ = http_exchange(c, at)
        want(status == 200, "http headers at the bound: %s %s" % (status, short(body)))
        status, body, closed = http_exchange(c, past)
        want(status == 431 and closed and "longer than %d bytes" % MAX_HTTP_HEADER_BYTES in body,
             "http headers one past: %s %s" % (status, short(body)))
        want(peer_closed(c), "http headers one past: the connection stays open")
        c.close()
        still_serves(srv, "http headers")
    finally:
        rc = srv.stop()
    want(rc == 0, "http headers: the server exited %d" % rc)
    row("HTTP request line + headers (kMaxHttpHeaderBytes)", MAX_HTTP_HEADER_BYTES, "answered",
        "431, closed, others served")


def max_http_body(env):
    limit = 4096
    srv = Server(env, env.bank, ["--max-line", str(limit)], http=True)
    try:
        c = srv.connect_http()
        at = "{}" + " " * (limit - 2)
        status, body, _ = http_exchange(c, http_post("/queries/total", at))
        want(status == 200 and '"ok":true' in body, "http body at the bound: %s %s" % (status, short(body)))
        status, body, closed = http_exchange(c, http_post("/queries/total", at + " "))
        want(status == 413 and closed and "at most %d" % limit in body,
             "http body one past: %s %s" % (status, short(body)))
        want(peer_closed(c), "http body one past: the connection stays open")
        c.close()
        # Chunked, so no Content-Length says so first: refused once past it.
        c = srv.connect_http()
        chunked = b"POST /queries/total HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        chunked += b"%x\r\n" % (limit + 1) + b" " * (limit + 1) + b"\r\n0\r\n\r\n"
        status, body, closed = http_exchange(c, chunked)
        want(status == 413 and closed, "http chunked body one past: %s %s" % (status, short(body)))
        c.close()
        still_serves(srv, "http body")
    finally:
        rc = srv.stop()
    want(rc == 0, "http body: the server exited %d" % rc)
    row("HTTP body bytes (--max-line %d)" % limit, limit, "answered", "413, closed (chunked too), others served")


def max_http_timeout(env):
    """--http-timeout: a request that arrives whole within it is answered;
    one that trickles (slowloris) is answered 408 and closed, and other
    clients are served meanwhile."""
    srv = Server(env, env.bank, ["--http-timeout", "2"], http=True)
    try:
        request = http_get("/queries/total")
        c = srv.connect_http()
        for i in range(0, len(request), 8):  # whole in about a second
            c.sendall(request[i:i + 8])
            time.sleep(1.0 * 8 / len(request))
        status, body, _ = http_exchange(c, b"")
        want(status == 200, "http timeout at the bound: %s %s" % (status, short(body)))
        slow = srv.connect_http()
        started = time.monotonic()
        slow.sendall(b"GET /queries/total HTTP/1.1\r\n")
        status = None
        for i in range(40):  # a header byte every 0.2 s, for ever
            if i == 3:
                still_serves(srv, "http timeout")
            try:
                slow.sendall(b"X")
            except (BrokenPipeError, ConnectionResetError):
                break
            slow.settimeout(0.2)
            try:
                got = slow.recv(65536)
            except socket.timeout:
                continue
            m = re.match(rb"HTTP/1.1 (\d+)", got)
            status = int(m.group(1)) if m else None
            break
        took = time.monotonic() - started
        want(status == 408 and 2 <= took < 5, "http timeout one past: status %s after %.1f s" % (status, took))
        want(peer_closed(slow), "http timeout: the slow connection stays open")
        slow.close()
        c.close()
    finally:
        rc = srv.stop()
    want(rc == 0, "http timeout: the server exited %d" % rc)
    row("HTTP request time (--http-timeout 2)", 2, "whole in 1 s: answered",
        "trickling: 408 after %.1f s, closed, others served" % took)


def max_http_hostile(env):
    """What is not HTTP is 400 and closed; what is, but asks for nothing
    served, is 404 or 405 and the connection goes on; --max-connections
    counts HTTP's and is answered 503 past it."""
    srv = Server(env, env.bank, ["--max-connections", "3"], http=True)
    try:
        for junk in (b"\x00\x01\x02\r\n\r\n", b"GET / HTTP/1.1\r\nBad Header\r\n\r\n",
                     b"POST /events/open HTTP/1.1\r\nContent-Length: -1\r\n\r\n", b'{"query":"total"}\n'):
            c = srv.connect_http()
            status, body, closed = http_exchange(c, junk)
            want(status == 400 and closed and "bad_request" in body, "http junk %r: %s %s" % (junk, status, body))
            c.close()
        c = srv.connect_http()
        for req, code in ((http_get("/nope"), 404), (http_get("/events/open"), 405),
                          (http_post("/events/open", '{}, "id": 1'), 400), (http_get("/queries/total"), 200)):
            status, body, closed = http_exchange(c, req)
            want(status == code and not closed, "http %r: %s %s, wanted %d" % (req[:30], status, body, code))
        held = [srv.connect_http(), srv.connect_http()]
        for h in held:
            want(http_exchange(h, http_get("/queries/total"))[0] == 200, "http connections: one not served")
        extra = srv.connect_http()
        status, body, closed = http_exchange(extra, b"")
        want(status == 503 and "too many connections (the limit is 3)" in body,
             "http connection one past the limit: %s %s" % (status, short(body)))
        extra.close()
        for h in held:
            h.close()
        c.close()
        time.sleep(0.2)
        still_serves(srv, "http hostile")
    finally:
        rc = srv.stop()
    want(rc == 0, "http hostile: the server exited %d" % rc)
    row("HTTP connections (--max-connections 3)", 3, "served; junk 400, bad routes 404/405",
        "503 \"too many connections\"")


def flag_ranges(env):
    """Every limit flag: its least value works, one below is refused (exit 2)
    with the range in the message; its greatest value works, one above is
    refused."""
    cases = [("--max-line", 64, 1 << 30), ("--step-budget", 1, 1 << 40), ("--max-batch", 1, 1000000),
             ("--max-connections", 1, 1000000), ("--max-pending", 1, 1000000), ("--max-output", 4096, 1 << 40),
             ("--io-threads", 0, 64), ("--http-timeout", 1, 3600)]
    for flag, lo, hi in cases:
        for v in (lo, hi):
            if flag in SERVING_FLAGS:
                want(serves(env, [flag, str(v)], http=flag == "--http-timeout"),
                     "%s %d: the server does not answer" % (flag, v))
                continue
            rc, out, err = env.run(["run", env.bank, "--memory", flag, str(v)], stdin=b'{"query":"total"}\n')
            want(rc == 0 and b'"ok":true' in out, "%s %d: exit %d %s" % (flag, v, rc, short(err)))
        for v in (lo - 1, hi + 1):
            rc, out, err = env.run(["run", env.bank, "--memory", flag, str(v)], stdin=b'{"query":"total"}\n')
            want(rc == 2 and flag in err and str(lo) in err and str(hi) in err,
                 "%s %d: exit %d %s" % (flag, v, rc, short(err)))
        row("flag " + flag, "%d..%d" % (lo, hi), "both ends run", "exit 2 \"%s\"" % short(err, 60))


# Flags that mean something only with --listen (aup run refuses them
# without it), so their ends are run on a server.
SERVING_FLAGS = ("--max-connections", "--max-pending", "--max-output", "--io-threads", "--http-timeout")


def serves(env, flags, http=False):
    """Whether a server started with `flags` answers a query and stops with 0."""
    saved = IO_THREADS[:]
    if "--io-threads" in flags:
        IO_THREADS.clear()  # the flag under test stands in for this run's
    try:
        srv = Server(env, env.bank, flags, http=http)
    finally:
        IO_THREADS[:] = saved
    c = Client(srv)
    answers = c.call(['{"query":"total"}'])
    c.close()
    return srv.stop() == 0 and len(answers) == 1 and answers[0].get("ok") is True


# ---------------------------------------------------------------------------

NOT_HERE = [
    ("--max-connections", "tests/runtime/server_test.py `limits`: 3 connections served, the 4th answered "
     "unavailable \"too many connections (the limit is 3)\", a new one served after one closes"),
    ("--max-errors (aup check)", "tests/cli/check_cli_test.sh"),
    ("a batch's log payload (2 GiB, kMaxPayloadBytes)", "not reachable in CI time: 2 GiB of changes in one batch"),
    ("B+tree depth (48, vm/btree.h kMaxDepth)", "not reachable: the fan-out makes 2^64 rows far shallower"),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("aup")
    ap.add_argument("bank")
    ap.add_argument("--only")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--io-threads", type=int)
    a = ap.parse_args()
    if a.io_threads is not None:
        IO_THREADS.extend(["--io-threads", str(a.io_threads)])
    work = tempfile.mkdtemp(prefix="aup-limits-")
    env = Env(os.path.abspath(a.aup), os.path.abspath(a.bank), work)
    started = time.monotonic()
    mod = [None]

    def runtime(f):
        def go():
            if mod[0] is None:
                mod[0] = runtime_module(env)
            f(env, mod[0])
        return go

    cases = [
        ("source_size", lambda: source_size(env)),
        ("name_length", lambda: name_length(env)),
        ("nesting", lambda: nesting(env)),
        ("expr_depth", lambda: expr_depth(env)),
        ("locals", lambda: locals_(env)),
        ("params", lambda: params(env)),
        ("fields", lambda: fields(env)),
        ("key_fields", lambda: key_fields(env)),
        ("decls", lambda: decls(env)),
        ("shapes", lambda: shapes(env)),
        ("registers", lambda: registers(env)),
        ("builtin_args", lambda: builtin_args(env)),
        ("jumps", lambda: jumps(env)),
        ("constants", lambda: constants(env)),
        ("text_literal", lambda: text_literal(env)),
        ("module_file", lambda: module_file(env)),
        ("step_budget", runtime(step_budget)),
        ("call_depth", runtime(call_depth)),
        ("distinct_steps", runtime(distinct_steps)),
        ("deep_equality", runtime(deep_equality)),
        ("text_bytes", runtime(text_bytes)),
        ("temp_bytes", runtime(temp_bytes)),
        ("array_items", runtime(array_items)),
        ("json_depth", runtime(json_depth)),
        ("result_depth", runtime(result_depth)),
        ("max_line_stdin", lambda: max_line_stdin(env)),
        ("max_line_socket", lambda: max_line_socket(env)),
        ("max_pending", lambda: max_pending(env)),
        ("max_output", runtime(max_output)),
        ("max_http_header", lambda: max_http_header(env)),
        ("max_http_body", lambda: max_http_body(env)),
        ("max_http_timeout", lambda: max_http_timeout(env)),
        ("max_http_hostile", lambda: max_http_hostile(env)),
        ("flag_ranges", lambda: flag_ranges(env)),
    ]
    try:
        for name, case in cases:
            if a.only and a.only not in name:
                continue
            t0 = time.monotonic()
            try:
                case()
            except Failed as e:
                fail("%s: %s" % (name, e))
            except Exception as e:  # a crashed case is a failure; the others still run
                fail("%s: %s: %s" % (name, type(e).__name__, e))
            print("  (%s: %.1fs)" % (name, time.monotonic() - t0), flush=True)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    if not a.only:
        for what, why in NOT_HERE:
            print("not here: %s: %s" % (what, why))
    print("%d bounds checked at and one past their limit in %.0fs; %d failures" %
          (len(ROWS), time.monotonic() - started, len(FAILURES)))
    sys.exit(1 if FAILURES else 0)


if __name__ == "__main__":
    main()
