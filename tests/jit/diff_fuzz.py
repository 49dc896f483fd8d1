#!/usr/bin/env python3
"""Differential fuzz test: two engines (the VM and the JIT) run the same
bytecode and must give the same answers and leave the same state
(docs/jit.md: the same answers, failures and final state, byte for byte).

For every program it generates a random well-typed aup module and random
requests (seeded, so a run is repeatable), builds the module once and runs
the requests under both engine command lines:

  - `aup run --memory --fixed-time ...`: stdout compared byte for byte;
  - `aup run --data DIR` on fresh stores: stdout compared, then the final
    state as `aup replay --data DIR --dump TABLE` (every table) and `--vars`.

On a difference it prints the seed, keeps the program, the input, both
outputs and a shell reproducer under --keep DIR, shrinks the input to the
requests that still show it, and exits 1.

Usage:
  diff_fuzz.py AUP [--seed N] [--programs N] [--seconds S]
               [--engines "--engine vm" "--engine jit"] [--keep DIR]

Exit status: 0 no difference; 1 a difference, a crash or a hang; 2 a
generated program that does not build (a generator bug) or bad usage.

Program i of a run with --seed S is generated from seed S+i, so
`--seed S+i --programs 1` repeats exactly that program.
"""

import argparse
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass

FIXED_TIME = "1700000000000"
RUN_TIMEOUT = 120  # seconds for one process; far above a normal run

# ---------------------------------------------------------------------------
# Types. Tuples, so they compare and hash by value:
#   ("num",) ("text",) ("bool",)  scalars
#   ("rec", R)    a record value of record R
#   ("row", t)    a reference to a row of table t
#   ("view", t)   a key range of table t (only held by locals / loops)
#   ("arr", T)    an array of T
#   ("obj", ((field, T), ...))  an anonymous object
# ---------------------------------------------------------------------------
NUM, TEXT, BOOL = ("num",), ("text",), ("bool",)
SCALARS = (NUM, TEXT, BOOL)


def arr(t):
    return ("arr", t)


def rec(name):
    return ("rec", name)


def row(table):
    return ("row", table)


def view(table):
    return ("view", table)


# Literals chosen for edges: negative zero, fractions, 2^53 + 1 (rounds),
# huge values (overflow to inf under *), and `_` separators.
NUM_LITERALS = ["0", "1", "2", "3", "4", "5", "7", "10", "0.5", "1.5", "0.1",
                "100", "1e3", "2.5e-3", "9007199254740992", "1e300", "1_000",
                "255", "6"]
NEG_LITERALS = ["1", "2", "0", "0.5", "3", "1e300"]
TEXT_LITERALS = ['""', '"a"', '"b"', '"ab"', '"zz"', '"12"', '"-3.5"', '"1e3"',
                 '"x y"', '"é"', '"\\u{1F600}"', '"q\\"t"', '"tab\\t"',
                 '"1e400"', '" 1"', '".5"', '"日本"', '"k1"', '"7"']
# Text keys: the fill events use the first ones, lookups use all of them.
TEXT_KEYS = ["a", "b", "c", "k1", "k2", "", "zz", "é", "ab", "B"]
# A pad's fill: none (a space), one code point, or two (out_of_range).
PAD_FILLS = ["", ', "*"', ', "é"', ', "ab"']
FAIL_TEXTS = ['"stop"', '"no"', '"bad \\"x\\""', '"é!"']


@dataclass
class Local:
    """Something a body can read: a local, a parameter, a var or an event
    field (`src` is how it is written, e.g. `l3` or `e0.xs`)."""
    src: str
    ty: tuple
    assignable: bool = False      # `x = e` is allowed
    mutable: bool = False         # push/pop, field or element assignment
    fields_writable: bool = False  # a row whose fields may be assigned
    is_var: bool = False


@dataclass
class Helper:
    name: str
    params: list                  # [(name, type)]
    ret: object                   # a type, or None
    writes: bool                  # may change state (handlers only)
    changes: set                  # tables it adds to / removes from
    lines: list = None
    recursive_arg: int = -1       # index of the bounded-recursion argument


class Fn:
    """The state of the body being generated."""

    def __init__(self, kind, writable, ret, early_returns=True):
        self.kind = kind
        self.writable = writable
        self.ret = ret
        self.early_returns = early_returns
        self.scopes = [[]]
        self.loops = 0
        self.iterating = []       # tables walked by enclosing `for`s
        self.changes = set()      # tables this body adds to / removes from

    def visible(self):
        return [loc for scope in self.scopes for loc in scope]

    def declare(self, loc):
        self.scopes[-1].append(loc)


class Gen:
    """Generates one module and its requests from one seeded Random."""

    def __init__(self, rng, low_budget=False, heavy=False):
        self.rng = rng
        self.heavy = heavy            # allow code that allocates 1 GiB (seconds a run)
        self.low_budget = low_budget  # loops that never end are allowed
        self.in_return = False        # generating a return's value
        self.records = {}     # record -> [(field, type, default or None)]
        self.table_rec = {}   # table -> record
        self.table_key = {}   # table -> its key fields, in key order (several: a composite key)
        self.indexes = {}     # table -> [(index, [fields], unique)]
        self.vars = {}        # var -> type
        self.shapes = []      # object types in use
        self.helpers = []     # callable helpers, in order
        self.events = []      # (name, [(field, type)], lines)
        self.queries = []     # (name, [(param, type)], lines)
        self.counter = 0

    # --- small utilities -------------------------------------------------

    def fresh(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def pick(self, opts):
        """Weighted choice among (weight, thunk); a thunk that returns None
        (nothing fits) is dropped and another is tried."""
        opts = [o for o in opts if o[0] > 0]
        while opts:
            total = sum(w for w, _ in opts)
            x = self.rng.uniform(0, total)
            for i, (w, f) in enumerate(opts):
                x -= w
                if x <= 0 or i == len(opts) - 1:
                    out = f()
                    if out is not None:
                        return out
                    del opts[i]
                    break
        raise AssertionError("no option fits")

    def tsrc(self, ty):
        k = ty[0]
        if k in ("num", "text", "bool"):
            return k
        if k in ("rec", "row"):
            return ty[1]
        if k == "arr":
            return "[" + self.tsrc(ty[1]) + "]"
        if k == "obj":
            return "{" + ", ".join(f"{n}: {self.tsrc(t)}" for n, t in ty[1]) + "}"
        raise AssertionError(ty)

    def key_types(self, table):
        fields = dict((f, t) for f, t, _ in self.records[self.table_rec[table]])
        return [fields[k] for k in self.table_key[table]]

    def key_type(self, table):
        """The type of a table's key, or of its first field if composite."""
        return self.key_types(table)[0]

    def fields_of(self, ty):
        """The fields a value of this type has, as [(name, type)]."""
        if ty[0] == "rec":
            return [(f, t) for f, t, _ in self.records[ty[1]]]
        if ty[0] == "row":
            return [(f, t) for f, t, _ in self.records[self.table_rec[ty[1]]]]
        if ty[0] == "obj":
            return list(ty[1])
        return []

    def fits(self, have, want):
        """A value of type `have` can stand where `want` is expected: the
        same type, or a row where its record is expected (it is copied)."""
        if have == want:
            return True
        return have[0] == "row" and want[0] == "rec" and self.table_rec[have[1]] == want[1]

    def comparable(self, ty):
        """distinct() works on it: not on arrays or objects (records holding
        them are fine: `==` compares them field by field)."""
        return ty[0] in ("num", "text", "bool", "rec")

    # --- declarations ----------------------------------------------------

    def declare_module(self):
        r = self.rng
        for i in range(r.randint(1, 3)):
            rname, tname = f"R{i}", f"t{i}"
            if r.random() < 0.4:  # a composite key of 2 or 3 fields
                keys = [f"k{j}" for j in range(r.randint(2, 3))]
            else:
                keys = [r.choice(["id", "k", "key"])]  # `key` as a field name: allowed
            fields = [(k, r.choice([NUM, NUM, TEXT]), None) for k in keys]
            for j in range(r.randint(1, 3)):
                fty = r.choice(SCALARS)
                default = self.literal(fty) if r.random() < 0.25 else None
                fields.append((f"f{j}", fty, default))
            r.shuffle(fields)
            self.records[rname] = fields
            self.table_rec[tname] = rname
            self.table_key[tname] = keys
            self.indexes[tname] = self.declare_indexes(fields)
        # Value records may hold arrays, objects and other records.
        tabled = [rec(n) for n in self.records]
        self.shapes.append(("obj", (("a", NUM), ("b", r.choice(SCALARS)))))
        v0 = [("x", NUM, "0" if r.random() < 0.3 else None), ("s", TEXT, None),
              ("xs", arr(NUM), "[]" if r.random() < 0.3 else None)]
        if r.random() < 0.6:
            v0.append(("r", r.choice(tabled), None))
        if r.random() < 0.4:
            v0.append(("ok", BOOL, "true" if r.random() < 0.5 else None))
        self.records["V0"] = v0
        if r.random() < 0.6:
            self.records["V1"] = [("n", NUM, None), ("v", rec("V0"), None),
                                  ("vs", arr(rec("V0")), None), ("o", self.shapes[0], None)]
        self.shapes.append(("obj", (("n", NUM), ("xs", arr(NUM)), ("v", r.choice(tabled + [rec("V0")])))))
        for i, ty in enumerate(r.sample(SCALARS, r.randint(1, 3))):
            self.vars[f"g{i}"] = ty

    def declare_indexes(self, fields):
        """Secondary indexes of one table: 0 to 2, over 1 to 3 of its num
        and text fields (key fields too), some unique."""
        r = self.rng
        orderable = [f for f, t, _ in fields if t in (NUM, TEXT)]
        out = []
        for _ in range(r.choice([0, 1, 1, 2])):
            chosen = r.sample(orderable, r.randint(1, min(3, len(orderable))))
            out.append((self.fresh("ix"), chosen, r.random() < 0.3))
        return out

    def index_types(self, table, ix):
        fields = dict((f, t) for f, t, _ in self.records[self.table_rec[table]])
        return [fields[f] for f in ix[1]]

    def index_view_expr(self, fn, table, d):
        """A view over one of the table's indexes: all of it, a prefix of its
        fields, or a prefix and a range in the next field."""
        r = self.rng
        ix = r.choice(self.indexes[table])
        types = self.index_types(table, ix)
        if r.random() < 0.2:
            return f"{table}.{ix[0]}"
        n = r.randint(1, len(types))
        parts = [self.key_part(fn, ty, 0 if r.random() < 0.8 else max(d - 1, 0)) for ty in types[:n - 1]]
        if r.random() < 0.5:
            last = self.key_part(fn, types[n - 1], 0)
            if ix[2] and n == len(types):  # every field of a unique index is a row, not a view
                return f"{table}.{ix[0]}[{', '.join(parts)}]" if parts else f"{table}.{ix[0]}"
            return f"{table}.{ix[0]}[{', '.join(parts + [last])}]"
        if types[n - 1] == NUM:
            lo, hi = r.choice(["0", "1", "(-5)", "3"]), r.choice(["3", "5", "100", "2"])
        else:
            lo, hi = r.choice(['""', '"a"', '"c"', '"k"']), r.choice(['"b"', '"k"', '"z"', '"é"'])
        return f"{table}.{ix[0]}[{', '.join(parts + [f'{lo} .. {hi}'])}]"

    def unique_row_expr(self, fn, table, d):
        """The row a unique index finds by all its fields, or None."""
        unique = [ix for ix in self.indexes[table] if ix[2]]
        if not unique:
            return None
        ix = self.rng.choice(unique)
        parts = [self.key_part(fn, ty, d) for ty in self.index_types(table, ix)]
        return f"{table}.{ix[0]}[{', '.join(parts)}]"

    def literal(self, ty):
        r = self.rng
        if ty == NUM:
            if r.random() < 0.2:
                return "-" + r.choice(NEG_LITERALS)
            return r.choice(NUM_LITERALS)
        if ty == TEXT:
            return r.choice(TEXT_LITERALS)
        if ty == BOOL:
            return r.choice(["true", "false"])
        raise AssertionError(ty)

    def pick_type(self, rows=True):
        """A type for a local, a parameter or a result."""
        r = self.rng
        tables = list(self.table_rec)
        recs = list(self.records)
        opts = [(5, lambda: NUM), (2, lambda: TEXT), (2, lambda: BOOL),
                (1.5, lambda: arr(NUM)), (0.5, lambda: arr(TEXT)), (0.3, lambda: arr(BOOL)),
                (1, lambda: arr(rec(r.choice(recs)))), (1.5, lambda: rec(r.choice(recs))),
                (1, lambda: r.choice(self.shapes))]
        if rows:
            opts.append((2, lambda: row(r.choice(tables))))
        return self.pick(opts)

    # --- expressions -----------------------------------------------------

    def walk(self, src, ty, steps):
        """(source, type) pairs readable from `src`: itself and up to
        `steps` field or element steps into it."""
        yield src, ty
        if steps <= 0:
            return
        k = ty[0]
        if k in ("rec", "row", "obj"):
            for f, fty in self.fields_of(ty):
                yield from self.walk(f"{src}.{f}", fty, steps - 1)
        elif k == "arr":
            yield f"{src}.count", NUM
            idx = self.rng.choice(["0", "0", "1", f"{src}.count - 1"])
            yield from self.walk(f"{src}[{idx}]", ty[1], steps - 1)
        elif k == "view":
            yield f"{src}.count", NUM
            yield f"{src}.empty", BOOL
            yield f"{src}.first", row(ty[1])
            yield f"{src}.last", row(ty[1])

    def readable(self, fn, want):
        out = []
        for loc in fn.visible() + self.var_locals(fn):
            for src, ty in self.walk(loc.src, loc.ty, 2):
                if self.fits(ty, want):
                    out.append(src)
        return out

    def var_locals(self, fn):
        return [Local(v, t, assignable=fn.writable, is_var=True) for v, t in self.vars.items()]

    def expr(self, fn, ty, d):
        """An expression of type `ty` at most about `d` levels deep."""
        r = self.rng
        opts = []
        reads = self.readable(fn, ty)
        if reads:
            opts.append((5 if d > 0 else 6, lambda: r.choice(reads)))
        k = ty[0]
        if k == "num":
            self.num_opts(fn, d, opts)
        elif k == "text":
            self.text_opts(fn, d, opts)
        elif k == "bool":
            self.bool_opts(fn, d, opts)
        elif k == "rec":
            self.rec_opts(fn, ty, d, opts)
        elif k == "row":
            self.row_opts(fn, ty[1], d, opts)
        elif k == "view":
            opts.append((2, lambda: self.view_expr(fn, ty[1], d)))
        elif k == "arr":
            self.arr_opts(fn, ty, d, opts)
        elif k == "obj":
            opts.append((2, lambda: self.obj_literal(fn, ty, d)))
        if d > 0 and k != "view":
            opts.append((1.2, lambda: self.call_expr(fn, ty, d)))
        return self.pick(opts)

    def num_opts(self, fn, d, opts):
        r = self.rng
        lit = self.literal(NUM)
        opts.append((2, lambda: f"({lit})" if lit.startswith("-") else lit))
        # Not finite: storing or returning these fails (not_finite); they
        # flow through comparisons, min/max, indexes and keys first.
        opts.append((0.3, lambda: r.choice(["(0 / 0)", "(1 / 0)", "(-1 / 0)", "(1e300 * 1e300)", "sqrt(-1)"])))
        if d <= 0:
            return

        def e(ty=NUM):
            return self.expr(fn, ty, d - 1)
        opts += [
            (5, lambda: f"({e()} {r.choice(['+', '-', '*', '/', '%', '+', '-', '*'])} {e()})"),
            (0.7, lambda: f"(-{e()})"),
            (1, lambda: f"{r.choice(['abs', 'floor', 'ceil', 'round', 'sqrt'])}({e()})"),
            (1, lambda: f"{r.choice(['min', 'max'])}({', '.join(e() for _ in range(r.randint(2, 4)))})"),
            (0.7, lambda: f"len({e(TEXT)})"),
            (0.5, lambda: f"num({e(TEXT)})"),
            (1, lambda: f"{r.choice(list(self.table_rec))}.count"),
            (0.5, lambda: f"{self.view_expr(fn, r.choice(list(self.table_rec)), d - 1)}.count"),
            (0.7, lambda: f"{e(arr(r.choice([NUM, TEXT, rec('V0')])))}.count"),
            (2, lambda: self.field_of_row(fn, NUM, d)),
            (1, lambda: self.field_of_rec(fn, NUM, d)),
            (1, lambda: f"{e(arr(NUM))}[{self.index(fn, d)}]"),
            (0.3, lambda: "now"),
            (0.3, lambda: self.pop_expr(fn, NUM)),
            # Text and array methods (NaN and -0 flow into min/max/sum).
            (0.6, lambda: f"{e(TEXT)}.find({e(TEXT)})"),
            (0.6, lambda: f"{e(arr(NUM))}.{r.choice(['sum', 'sum', 'min', 'max'])}()"),
        ]

    def text_opts(self, fn, d, opts):
        r = self.rng
        lit = self.literal(TEXT)
        opts.append((2, lambda: lit))
        if d <= 0:
            return

        def e(ty=TEXT):
            return self.expr(fn, ty, d - 1)
        opts += [
            (4, lambda: f"({e()} + {e()})"),
            (2, lambda: f"text({e(NUM)})"),
            (1.5, lambda: self.field_of_row(fn, TEXT, d)),
            (1, lambda: self.field_of_rec(fn, TEXT, d)),
            (0.7, lambda: f"{e(arr(TEXT))}[{self.index(fn, d)}]"),
            (0.2, lambda: self.pop_expr(fn, TEXT)),
            # Positions and widths from any number: clamped, or out_of_range
            # when not whole; repeat's count kept small (% 4, which may be
            # negative or not whole too).
            (1, lambda: f"{e()}.slice({e(NUM)}, {e(NUM)})" if r.random() < 0.7 else f"{e()}.slice({e(NUM)})"),
            (0.5, lambda: f"{e()}.replace({e()}, {e()})"),
            (0.8, lambda: f"{e()}.{r.choice(['trim', 'upper', 'lower'])}()"),
            (0.5, lambda: f"{e()}.{r.choice(['pad_left', 'pad_right'])}({self.index(fn, d)}"
                          f"{r.choice(PAD_FILLS)})"),
            (0.3, lambda: f"{e()}.repeat({e(NUM)} % 4)"),
            (0.6, lambda: f"{e(arr(TEXT))}.join({e()})"),
            (0.3, lambda: f"{e(arr(TEXT))}.{r.choice(['min', 'max'])}()"),
        ]

    def bool_opts(self, fn, d, opts):
        r = self.rng
        lit = self.literal(BOOL)
        opts.append((1, lambda: lit))
        if d <= 0:
            return

        def e(ty=BOOL):
            return self.expr(fn, ty, d - 1)
        ops = ["==", "!=", "<", "<=", ">", ">="]
        recs = list(self.records)
        opts += [
            (4, lambda: f"({e(NUM)} {r.choice(ops)} {e(NUM)})"),
            (1.5, lambda: f"({e(TEXT)} {r.choice(ops)} {e(TEXT)})"),
            (0.7, lambda: f"({e()} {r.choice(['==', '!='])} {e()})"),
            (1.2, lambda: (lambda t: f"({e(t)} {r.choice(['==', '!='])} {e(t)})")(rec(r.choice(recs)))),
            (2, lambda: f"({e()} {r.choice(['and', 'or'])} {e()})"),
            (1, lambda: f"(not {e()})"),
            (1.5, lambda: (lambda t: f"{t}.has({self.key_expr(fn, t, d - 1)})")(r.choice(list(self.table_rec)))),
            (0.7, lambda: f"{self.view_expr(fn, r.choice(list(self.table_rec)), d - 1)}.empty"),
            (0.7, lambda: self.field_of_row(fn, BOOL, d)),
            (0.4, lambda: self.field_of_rec(fn, BOOL, d)),
            (0.8, lambda: f"{e(TEXT)}.{r.choice(['contains', 'starts_with', 'ends_with', 'eq_ignore_case'])}({e(TEXT)})"),
        ]

    def rec_opts(self, fn, ty, d, opts):
        opts.append((3, lambda: self.rec_literal(fn, ty[1], d)))
        if d <= 0:
            return
        tables = [t for t, rn in self.table_rec.items() if rn == ty[1]]
        if tables:
            opts.append((2, lambda: self.expr(fn, row(self.rng.choice(tables)), d - 1)))
        opts.append((0.7, lambda: f"{self.expr(fn, arr(ty), d - 1)}[{self.index(fn, d)}]"))
        opts.append((0.3, lambda: self.pop_expr(fn, ty)))

    def row_opts(self, fn, table, d, opts):
        r = self.rng
        opts += [
            (4, lambda: f"{table}[{self.key_expr(fn, table, d - 1)}]"),
            (1, lambda: f"{table}.first"),
            (1, lambda: f"{table}.last"),
            (1, lambda: f"{table}.at({self.index(fn, d)})"),
            (1, lambda: self.unique_row_expr(fn, table, d - 1)),
        ]
        if d > 0:
            opts.append((1, lambda: f"{self.view_expr(fn, table, d - 1)}.{r.choice(['first', 'last'])}"))
            opts.append((1, lambda: f"{self.view_expr(fn, table, d - 1)}.at({self.index(fn, d - 1)})"))

    def arr_opts(self, fn, ty, d, opts):
        r = self.rng
        elem = ty[1]
        opts.append((3, lambda: "[" + ", ".join(self.expr(fn, elem, d - 1) for _ in range(r.randint(1, 3))) + "]"))
        if d > 0 and self.comparable(elem):
            opts.append((1, lambda: f"distinct({self.expr(fn, ty, d - 1)})"))
        if d > 0 and elem == TEXT:
            opts.append((1, lambda: f"{self.expr(fn, TEXT, d - 1)}.split({self.expr(fn, TEXT, d - 1)})"))
        if d > 0 and elem in SCALARS:
            opts.append((1, lambda: f"{self.expr(fn, ty, d - 1)}.sorted({r.choice(['', 'desc'])})"))
        if d > 0 and elem[0] == "rec":
            keys = [f for f, t, _ in self.records[elem[1]] if t in SCALARS]
            if keys:
                opts.append((1, lambda: f"{self.expr(fn, ty, d - 1)}.sorted(" + ", ".join(
                    k + r.choice(["", " desc"]) for k in r.sample(keys, r.randint(1, min(3, len(keys))))) + ")"))

    def obj_literal(self, fn, ty, d):
        fields = list(ty[1])
        if not self.in_return:
            # A literal takes the order of the type expected of it. Not in a
            # return: the first return's type, order included, is the
            # function's, and a later `return p` of the declared shape
            # would not match it.
            self.rng.shuffle(fields)
        return "{ " + ", ".join(f"{n}: {self.expr(fn, t, d - 1)}" for n, t in fields) + " }"

    def rec_literal(self, fn, rname, d):
        parts = []
        for f, t, default in self.records[rname]:
            if default is not None and self.rng.random() < 0.5:
                continue  # a field with a default may be left out
            if t[0] == "arr" and self.rng.random() < 0.3:
                parts.append(f"{f}: []")  # the field's type types the []
            else:
                parts.append(f"{f}: {self.expr(fn, t, d - 1)}")
        # Parenthesized: a bare `R {` after `if`/`while`/`in` opens a block.
        return f"({rname} {{ " + ", ".join(parts) + " })"

    def field_of_row(self, fn, fty, d):
        cands = [(t, f) for t, rn in self.table_rec.items() for f, ft, _ in self.records[rn] if ft == fty]
        if not cands:
            return None
        t, f = self.rng.choice(cands)
        return f"{self.expr(fn, row(t), d - 1)}.{f}"

    def field_of_rec(self, fn, fty, d):
        cands = [(rn, f) for rn in self.records for f, ft, _ in self.records[rn] if ft == fty]
        if not cands:
            return None
        rn, f = self.rng.choice(cands)
        return f"{self.expr(fn, rec(rn), d - 1)}.{f}"

    def pop_expr(self, fn, elem):
        places = [p for p, t in self.places(fn) if t == arr(elem)]
        return f"{self.rng.choice(places)}.pop()" if places else None

    def index(self, fn, d):
        """An array index or table position: mostly small, sometimes out of
        range, negative or fractional."""
        r = self.rng
        if r.random() < 0.05:
            # Edges of the whole-number check: NaN, infinities, -0, huge.
            return r.choice(["(0 / 0)", "(1 / 0)", "(-1 / 0)", "(-0)", "1e300", "4294967296",
                             "9007199254740992", "(-0.5)", "1e-300"])
        if d <= 1 or r.random() < 0.6:
            return r.choice(["0", "0", "1", "2", "3", "(-1)", "0.5"])
        return self.expr(fn, NUM, d - 2)

    def key_expr(self, fn, table, d):
        """Every field of the key: `k` or, composite, `k1, k2, ...`."""
        return ", ".join(self.key_part(fn, ty, d) for ty in self.key_types(table))

    def key_part(self, fn, ty, d):
        r = self.rng
        if ty == NUM:
            if d <= 0 or r.random() < 0.7:
                return r.choice(["0", "1", "2", "3", "4", "5", "6", "7", "9", "(-0)", "0.5"])
            return self.expr(fn, NUM, d)
        if d <= 0 or r.random() < 0.7:
            return json.dumps(r.choice(TEXT_KEYS), ensure_ascii=False)
        return self.expr(fn, TEXT, d)

    def view_expr(self, fn, table, d):
        """A key range; for a composite key also a prefix of its fields, or
        a prefix and a range in the field after it."""
        r = self.rng
        if self.indexes.get(table) and r.random() < 0.4:
            return self.index_view_expr(fn, table, d)
        types = self.key_types(table)
        prefix = r.randint(0, len(types) - 1)
        parts = [self.key_part(fn, ty, 0 if r.random() < 0.8 else max(d - 1, 0)) for ty in types[:prefix]]
        if prefix > 0 and r.random() < 0.4:
            return f"{table}[{', '.join(parts)}]"
        if types[prefix] == NUM:
            lo = r.choice(["0", "1", "2", "(-5)", "3"]) if r.random() < 0.7 else self.expr(fn, NUM, max(d - 1, 0))
            hi = r.choice(["3", "5", "8", "100", "2"]) if r.random() < 0.7 else self.expr(fn, NUM, max(d - 1, 0))
        else:
            keys = ['""', '"a"', '"b"', '"c"', '"k"', '"z"', '"zzz"', '"é"']
            lo = r.choice(keys) if r.random() < 0.8 else self.expr(fn, TEXT, max(d - 1, 0))
            hi = r.choice(keys) if r.random() < 0.8 else self.expr(fn, TEXT, max(d - 1, 0))
        return f"{table}[{', '.join(parts + [f'{lo} .. {hi}'])}]"

    def callable(self, fn, h):
        if h.writes and not fn.writable:
            return False
        return not (h.changes & set(fn.iterating))

    def call_expr(self, fn, ty, d):
        cands = [h for h in self.helpers if h.ret is not None and self.fits(h.ret, ty) and self.callable(fn, h)]
        if not cands:
            return None
        return self.call(fn, self.rng.choice(cands), d)

    def call(self, fn, h, d):
        args = []
        for i, (_, pty) in enumerate(h.params):
            if i == h.recursive_arg:
                args.append(self.depth_arg())
            else:
                args.append(self.arg_expr(fn, pty, d - 1))
        fn.changes |= h.changes
        return f"{h.name}({', '.join(args)})"

    def depth_arg(self):
        """How deep a bounded recursion goes: mostly shallow, sometimes past
        the call-depth limit of 200 (budget), sometimes a fraction."""
        return self.rng.choice(["0", "1", "2", "3", "5", "8", "2.5", "(-1)", "250"] if self.rng.random() < 0.9
                               else ["199", "198", "1e300"])

    def arg_expr(self, fn, ty, d):
        """A view can be given where an array of its rows is expected."""
        if ty[0] == "arr" and ty[1][0] == "rec" and self.rng.random() < 0.25:
            tables = [t for t, rn in self.table_rec.items() if rn == ty[1][1]]
            if tables:
                return self.view_expr(fn, self.rng.choice(tables), d)
        return self.expr(fn, ty, max(d, 0))

    # --- places: what push/pop and element/field assignment may change -----

    def places(self, fn):
        out = []
        for loc in fn.visible():
            if loc.mutable and loc.ty[0] in ("arr", "rec", "obj"):
                out += self.place_walk(loc.src, loc.ty, 3)
        return out

    def place_walk(self, src, ty, steps):
        yield src, ty
        if steps <= 0:
            return
        if ty[0] in ("rec", "obj"):
            for f, fty in self.fields_of(ty):
                yield from self.place_walk(f"{src}.{f}", fty, steps - 1)
        elif ty[0] == "arr":
            idx = self.rng.choice(["0", "1", f"{src}.count - 1"])
            yield from self.place_walk(f"{src}[{idx}]", ty[1], steps - 1)

    # --- statements ------------------------------------------------------

    def block(self, fn, n, d, head=(), tail=()):
        """Lines of a nested block: `head` statements, n random ones, then
        `tail` (a leaving statement goes last: code after it is unreachable)."""
        fn.scopes.append([])
        lines = list(head)
        for _ in range(n):
            lines += self.stmt(fn, d)
        lines += list(tail)
        fn.scopes.pop()
        return ["  " + ln for ln in lines]

    def nstmts(self, d):
        return self.rng.randint(1, 3 if d <= 1 else 4)

    def stmt(self, fn, d):
        opts = [
            (5, lambda: self.s_let(fn, d)),
            (3, lambda: self.s_assign(fn, d)),
            (2.5, lambda: self.s_row_set(fn, d) if fn.writable else None),
            (1.5, lambda: self.s_var_set(fn, d) if fn.writable and self.vars else None),
            (2, lambda: self.s_place_set(fn, d)),
            (2, lambda: self.s_push(fn, d)),
            (0.7, lambda: self.s_pop(fn)),
            (3, lambda: self.s_table_op(fn, d) if fn.writable else None),
            (1, lambda: self.s_call(fn, d)),
            (0.6, lambda: self.s_fail(fn, d)),
            (0.6, lambda: self.s_return(fn, d) if fn.early_returns else None),
            (0.8, lambda: self.s_break(fn, d) if fn.loops else None),
            (1.5, lambda: self.s_copy(fn, d)),
            (0.5, lambda: self.s_stale(fn, d) if fn.writable else None),
            (0.06, lambda: self.s_big_text(fn)),
            (0.02 if self.heavy else 0, lambda: self.s_big_copies(fn)),
        ]
        if d > 0:
            opts += [
                (3, lambda: self.s_if(fn, d)),
                (1.2, lambda: self.s_if_let(fn, d)),
                (1.2, lambda: self.s_while(fn, d)),
                (1.2, lambda: self.s_for_range(fn, d)),
                (1, lambda: self.s_for_array(fn, d)),
                (0.8, lambda: self.s_for_changing_array(fn, d)),
                (1.5, lambda: self.s_for_table(fn, d)),
                (0.3, lambda: ["{"] + self.block(fn, self.nstmts(d), d - 1) + ["}"]),
            ]
        return self.pick(opts)

    def s_let(self, fn, d):
        r = self.rng
        ty = self.pick_type() if r.random() < 0.92 else view(r.choice(list(self.table_rec)))
        name = self.fresh("l")
        k = ty[0]
        if k == "view":
            line = f"let {name} = {self.view_expr(fn, ty[1], d)}"
        elif k == "row":
            decl = f": {ty[1]}" if r.random() < 0.3 else ""
            line = f"let {name}{decl} = {self.expr(fn, ty, d)}"
        elif k in SCALARS:
            decl = f": {k}" if r.random() < 0.3 else ""
            line = f"let {name}{decl} = {self.expr(fn, ty, d)}"
        elif k == "arr" and r.random() < 0.25:
            line = f"let {name}: {self.tsrc(ty)} = []"
        elif k == "arr" and ty[1][0] == "rec" and r.random() < 0.3 and \
                [t for t, rn in self.table_rec.items() if rn == ty[1][1]]:
            # A view given where an array of its rows is expected is copied.
            t = r.choice([t for t, rn in self.table_rec.items() if rn == ty[1][1]])
            line = f"let {name}: {self.tsrc(ty)} = {self.view_expr(fn, t, d)}"
        else:
            # Declared: `let x: R = row` copies the row into a value.
            line = f"let {name}: {self.tsrc(ty)} = {self.expr(fn, ty, d)}"
        fn.declare(Local(name, ty, assignable=k != "view", mutable=k in ("arr", "rec", "obj"),
                         fields_writable=k == "row" and fn.writable))
        return [line]

    def s_assign(self, fn, d):
        cands = [loc for loc in fn.visible() if loc.assignable and loc.ty[0] != "view"]
        if not cands:
            return None
        loc = self.rng.choice(cands)
        return [f"{loc.src} = {self.expr(fn, loc.ty, d)}"]

    def s_var_set(self, fn, d):
        v = self.rng.choice(list(self.vars))
        return [f"{v} = {self.expr(fn, self.vars[v], d)}"]

    def s_row_set(self, fn, d):
        """Assign a row's field: it writes the table (rolled back on failure)."""
        r = self.rng
        rows = [loc for loc in fn.visible() if loc.ty[0] == "row" and loc.fields_writable]
        if rows and r.random() < 0.6:
            loc = r.choice(rows)
            target, table = loc.src, loc.ty[1]
        else:
            table = r.choice(list(self.table_rec))
            target = self.expr(fn, row(table), min(d, 1))
        fields = [(f, t) for f, t, _ in self.records[self.table_rec[table]] if f not in self.table_key[table]]
        if not fields:
            return None
        f, fty = r.choice(fields)
        return [f"{target}.{f} = {self.expr(fn, fty, d)}"]

    def s_place_set(self, fn, d):
        cands = [(p, t) for p, t in self.places(fn) if "." in p or "[" in p]
        if not cands:
            return None
        p, t = self.rng.choice(cands)
        return [f"{p} = {self.expr(fn, t, d)}"]

    def s_push(self, fn, d):
        cands = [(p, t) for p, t in self.places(fn) if t[0] == "arr"]
        if not cands:
            return None
        p, t = self.rng.choice(cands)
        return [f"{p}.push({self.expr(fn, t[1], d)})"]

    def s_pop(self, fn):
        cands = [p for p, t in self.places(fn) if t[0] == "arr"]
        return [f"{self.rng.choice(cands)}.pop()"] if cands else None

    def s_table_op(self, fn, d):
        """add / put / remove, never on a table a loop around is walking."""
        r = self.rng
        tables = [t for t in self.table_rec if t not in fn.iterating]
        if not tables:
            return None
        t = r.choice(tables)
        fn.changes.add(t)
        op = r.choice(["add", "add", "put", "put", "remove"])
        if op == "remove":
            return [f"{t}.remove({self.key_expr(fn, t, d)})"]
        return [f"{t}.{op}({self.expr(fn, rec(self.table_rec[t]), d)})"]

    def s_call(self, fn, d):
        cands = [h for h in self.helpers if self.callable(fn, h)]
        if not cands:
            return None
        return [self.call(fn, self.rng.choice(cands), d)]

    def s_fail(self, fn, d):
        msg = self.rng.choice(FAIL_TEXTS) if self.rng.random() < 0.6 else self.expr(fn, TEXT, 1)
        body = self.block(fn, self.rng.randint(0, 1), d - 1, tail=[f"fail {msg}"])
        return [f"if {self.expr(fn, BOOL, max(d, 1))} {{"] + body + ["}"]

    def return_value(self, fn, d):
        self.in_return = True
        value = self.expr(fn, fn.ret, d)
        self.in_return = False
        return value

    def s_return(self, fn, d):
        val = "return" if fn.ret is None else f"return {self.return_value(fn, max(d, 1))}"
        return [f"if {self.expr(fn, BOOL, max(d, 1))} {{"] + self.block(fn, 0, 0, tail=[val]) + ["}"]

    def s_break(self, fn, d):
        word = self.rng.choice(["break", "continue"])
        return [f"if {self.expr(fn, BOOL, max(d, 1))} {{ {word} }}"]

    def s_copy(self, fn, d):
        """Copy a value, change the copy: the original must not change."""
        cands = [loc for loc in fn.visible() if loc.ty[0] in ("arr", "rec", "obj")]
        if not cands:
            return None
        src = self.rng.choice(cands)
        name = self.fresh("c")
        lines = [f"let {name}: {self.tsrc(src.ty)} = {src.src}"]
        fn.declare(Local(name, src.ty, assignable=True, mutable=True))
        for p, t in list(self.place_walk(name, src.ty, 2))[1:3] + [(name, src.ty)]:
            if t[0] == "arr":
                lines.append(f"{p}.push({self.expr(fn, t[1], 1)})")
            elif p != name:
                lines.append(f"{p} = {self.expr(fn, t, 1)}")
        return lines

    def s_stale(self, fn, d):
        """Hold a row, remove it (and maybe add its key back), then use the
        reference: stale_row, or the new row."""
        r = self.rng
        tables = [t for t in self.table_rec if t not in fn.iterating]
        if not tables:
            return None
        t = r.choice(tables)
        fn.changes.add(t)
        key = self.key_expr(fn, t, 0)
        name = self.fresh("s")
        fields = [f for f, _, _ in self.records[self.table_rec[t]]]
        lines = [f"let {name} = {t}[{key}]", f"{t}.remove({key})"]
        if r.random() < 0.3:
            lit = self.rec_literal(fn, self.table_rec[t], 1)
            lines.append(f"{t}.put({lit})")
        other = self.fresh("l")
        lines.append(f"let {other} = {name}.{r.choice(fields)}")
        fn.declare(Local(name, row(t), assignable=True, fields_writable=True))
        return lines

    def s_if(self, fn, d):
        lines = [f"if {self.expr(fn, BOOL, d)} {{"] + self.block(fn, self.nstmts(d), d - 1)
        while self.rng.random() < 0.3:
            lines += [f"}} else if {self.expr(fn, BOOL, d)} {{"] + self.block(fn, self.nstmts(d), d - 1)
        if self.rng.random() < 0.4:
            lines += ["} else {"] + self.block(fn, self.nstmts(d), d - 1)
        return lines + ["}"]

    def s_if_let(self, fn, d):
        """`if let r = t.get(key)`: the row (in its block) or none (else)."""
        r = self.rng
        t = r.choice(list(self.table_rec))
        # Not "g": the vars are g0, g1, ... and a local may not take a
        # top-level name (the counter can reach a var's number).
        name = self.fresh("row")
        fn.scopes.append([])
        fn.declare(Local(name, row(t), assignable=False, fields_writable=fn.writable))
        body = self.block(fn, self.nstmts(d), d - 1)
        fn.scopes.pop()
        lines = [f"if let {name} = {t}.get({self.key_expr(fn, t, d - 1)}) {{"] + body
        if r.random() < 0.5:
            lines += ["} else {"] + self.block(fn, self.nstmts(d), d - 1)
        return lines + ["}"]

    def s_while(self, fn, d):
        """A counted loop; the counter is read-only to the generator, so the
        loop ends (or the step budget stops it)."""
        w = self.fresh("w")
        bound = self.rng.randint(0, 6) if not self.low_budget or self.rng.random() < 0.7 else 1_000_000
        fn.loops += 1
        if self.rng.random() < 0.5:
            head = [f"let {w} = 0", f"while {w} < {bound} and {self.expr(fn, BOOL, 1)} {{"]
            fn.scopes[-1].append(Local(w, NUM))
            body = self.block(fn, self.nstmts(d), d - 1, head=[f"{w} = {w} + 1"])
        else:
            head = [f"let {w} = 0", "while true {"]
            fn.scopes[-1].append(Local(w, NUM))
            body = self.block(fn, self.nstmts(d), d - 1, head=[f"{w} = {w} + 1", f"if {w} > {bound} {{ break }}"])
        fn.loops -= 1
        return head + body + ["}"]

    def s_for_range(self, fn, d):
        r = self.rng
        i = self.fresh("i")
        if self.low_budget and r.random() < 0.3:
            # Ranges that never end: +1 is lost at 2^53 and on infinities,
            # or the bound is infinite; the step budget stops them.
            lo, hi = r.choice([("9007199254740992", "9007199254740994"), ("0", "(1 / 0)"),
                               ("(-1 / 0)", "0"), ("0", "1e300"), ("(0 / 0)", "5"), ("0", "(0 / 0)"),
                               ("(-0)", "3"), ("1e16", "1e16 + 4")])
        else:
            lo = r.choice(["0", "1", "(-2)", "0.5"]) if r.random() < 0.6 else f"max({self.expr(fn, NUM, 1)}, -3)"
            hi = r.choice(["0", "3", "5", "2.5"]) if r.random() < 0.6 else f"min({self.expr(fn, NUM, 1)}, 6)"
        return self.loop(fn, d, f"for {i} in {lo} .. {hi} {{", Local(i, NUM), None)

    def s_for_array(self, fn, d):
        ty = self.pick_type(rows=False)
        while ty[0] != "arr":
            ty = self.pick_type(rows=False)
        x = self.fresh("x")
        # An element is a copy: read-only, its fields too.
        return self.loop(fn, d, f"for {x} in {self.expr(fn, ty, max(d - 1, 1))} {{", Local(x, ty[1]), None)

    def s_for_changing_array(self, fn, d):
        """Loop over an array while changing it: the loop goes over the
        items it started with, the changes go to a copy."""
        r = self.rng
        cands = [loc for loc in fn.visible() if loc.mutable and loc.ty[0] == "arr"]
        if not cands:
            return None
        loc = r.choice(cands)
        x = self.fresh("x")
        changes = [f"{loc.src}.push({x})", f"{loc.src}[0] = {x}", f"{loc.src}.pop()",
                   f"{loc.src} = [{x}, {x}]"]
        head = r.sample(changes, r.randint(1, 3))
        fn.loops += 1
        fn.scopes.append([Local(x, loc.ty[1])])
        body = self.block(fn, r.randint(0, 2), d - 1, head=head)
        fn.scopes.pop()
        fn.loops -= 1
        return [f"for {x} in {loc.src} {{"] + body + ["}"]

    def s_big_text(self, fn):
        """Double a text past 16 MiB (budget) or up to it (4 bytes * 2^22 is
        exactly 16 MiB, which is allowed)."""
        t, i, n = self.fresh("l"), self.fresh("i"), self.fresh("l")
        k = self.rng.choice([10, 21, 22, 23])
        fn.declare(Local(n, NUM, assignable=True))
        return [f'let {t} = "abcd"', f"for {i} in 0 .. {k} {{ {t} = {t} + {t} }}", f"let {n} = len({t})"]

    def s_big_copies(self, fn):
        """Copies of an 8 MiB array, each kept until the event ends: past
        1 GiB of temporaries the step check of the loop's backward jump
        fails (budget), or the step budget runs out first."""
        b, i, j, c = self.fresh("l"), self.fresh("i"), self.fresh("i"), self.fresh("l")
        return [f"let {b}: [num] = []", f"for {i} in 0 .. 1048576 {{ {b}.push({i}) }}",
                f"for {j} in 0 .. 200 {{", f"  let {c} = {b}", f"  {c}.push({j})", "}"]

    def s_for_table(self, fn, d):
        r = self.rng
        t = r.choice(list(self.table_rec))
        views = [loc for loc in fn.visible() if loc.ty == view(t)]
        if views and r.random() < 0.4:
            over = r.choice(views).src
        elif r.random() < 0.5:
            over = self.view_expr(fn, t, 1)
        else:
            over = t
        x = self.fresh("r")
        desc = " desc" if r.random() < 0.3 else ""
        return self.loop(fn, d, f"for {x} in {over}{desc} {{", Local(x, row(t), fields_writable=fn.writable), t)

    def loop(self, fn, d, head, var, table):
        fn.loops += 1
        if table:
            fn.iterating.append(table)
        fn.scopes.append([var])
        body = self.block(fn, self.nstmts(d), d - 1)
        fn.scopes.pop()
        if table:
            fn.iterating.pop()
        fn.loops -= 1
        return [head] + body + ["}"]

    # --- functions -------------------------------------------------------

    def body(self, fn, n, d, final_return=True):
        lines = []
        for _ in range(n):
            lines += self.stmt(fn, d)
        if final_return and fn.ret is not None:
            lines.append(f"return {self.return_value(fn, 2)}")
        return lines

    def snapshot_return(self, fn):
        """Return the locals of the top scope as one object, so the copies
        and changes made to them are seen in the answer."""
        locs = [loc for loc in fn.scopes[0] if not loc.is_var and "." not in loc.src]
        self.rng.shuffle(locs)
        parts = [f"{loc.src}: {loc.src}" for loc in locs[:6]]
        if not parts:
            parts = [f"n: {self.expr(fn, NUM, 1)}"]
        return "return { " + ", ".join(parts) + " }"

    def gen_helpers(self):
        r = self.rng
        for _ in range(r.randint(2, 6)):
            kind = r.choice(["pure", "pure", "recursive", "finder", "writer", "writer", "pure", "recursive"])
            getattr(self, f"helper_{kind}")()
        if r.random() < 0.25:
            self.helper_wide()
        if r.random() < 0.4:
            self.helper_mutual()

    def params(self, n, rows=True):
        return [(self.fresh("p"), self.pick_type(rows=rows)) for _ in range(n)]

    def param_locals(self, fn, params):
        for name, ty in params:
            fn.declare(Local(name, ty, assignable=True, mutable=ty[0] in ("arr", "rec", "obj"),
                             fields_writable=ty[0] == "row" and fn.writable))

    def helper_pure(self, writable=False):
        r = self.rng
        params = self.params(r.randint(0, 4))
        ret = self.pick_type() if r.random() < 0.9 or not writable else None
        fn = Fn("helper", writable, ret)
        self.param_locals(fn, params)
        lines = self.body(fn, r.randint(1, 4), 2)
        self.add_helper(params, ret, writable, fn, lines)

    def helper_wide(self):
        """Many parameters (up to the limit of 64): calls pass them all."""
        r = self.rng
        params = [(self.fresh("p"), r.choice([NUM, NUM, TEXT, BOOL, arr(NUM)])) for _ in range(r.randint(8, 64))]
        fn = Fn("helper", False, NUM)
        self.param_locals(fn, params)
        lines = self.body(fn, r.randint(0, 3), 1, final_return=False)
        terms = [p if t == NUM else f"len({p})" if t == TEXT else f"{p}.count" if t[0] == "arr" else None
                 for p, t in params]
        total = " + ".join(t for t in terms if t) or "0"
        lines.append(f"return {total}")
        self.add_helper(params, NUM, False, fn, lines)

    def helper_writer(self):
        """Changes state: a row it is given, vars, tables."""
        r = self.rng
        t = r.choice(list(self.table_rec))
        params = [(self.fresh("p"), row(t))] + self.params(r.randint(0, 2))
        r.shuffle(params)
        ret = None if r.random() < 0.6 else self.pick_type()
        fn = Fn("helper", True, ret)
        self.param_locals(fn, params)
        lines = self.body(fn, r.randint(1, 4), 2)
        self.add_helper(params, ret, True, fn, lines)

    def helper_finder(self):
        """Returns a row reference: callers may write through it."""
        r = self.rng
        t = r.choice(list(self.table_rec))
        keys = [(self.fresh("p"), ty) for ty in self.key_types(t)]
        params = keys + self.params(r.randint(0, 1), rows=False)
        fn = Fn("helper", False, row(t))
        self.param_locals(fn, params)
        lines = self.body(fn, r.randint(0, 2), 1, final_return=False)
        lookup = f"{t}[{', '.join(k for k, _ in keys)}]"
        lines.append(f"return {lookup}" if r.random() < 0.7 else f"return {self.expr(fn, row(t), 1)}")
        self.add_helper(params, row(t), False, fn, lines)

    def helper_recursive(self):
        """Recursion with a bound: `n` counts down; a NaN, huge or negative
        start ends at once or runs into the call-depth limit (budget)."""
        r = self.rng
        name = self.fresh("h")
        n = self.fresh("p")
        others = self.params(r.randint(1, 2), rows=False)
        params = [(n, NUM)] + others
        writable = r.random() < 0.4
        ret = None if writable and r.random() < 0.5 else r.choice([NUM, NUM, TEXT, arr(NUM)])
        h = Helper(name, params, ret, writable, set(), recursive_arg=0)
        fn = Fn("helper", writable, ret)
        self.param_locals(fn, params)
        base = "return" if ret is None else f"return {self.expr(fn, ret, 1)}"
        lines = [f"if {n} <= 0 {{", f"  {base}", "}"]
        for _ in range(r.randint(0, 2)):
            lines += self.stmt(fn, 1)
        # The recursive call: itself, with n - 1 and the other arguments
        # passed on or changed.
        args = [f"{n} - {r.choice(['1', '1', '0.5'])}"] + [
            p if r.random() < 0.5 else self.expr(fn, t, 1) for p, t in others]
        self_call = f"{name}({', '.join(args)})"
        if ret is None:
            lines.append(self_call)
        elif ret == NUM:
            lines.append(f"return {self.expr(fn, NUM, 1)} + {self_call}")
        elif ret == TEXT:
            lines.append(f"return {self_call} + {self.expr(fn, TEXT, 0)}")
        else:
            tmp = self.fresh("l")
            lines += [f"let {tmp} = {self_call}", f"{tmp}.push({n})", f"return {tmp}"]
        h.lines = lines
        h.changes = set(fn.changes)
        self.helpers.append(h)

    def helper_mutual(self):
        """Two helpers calling each other (the checker allows recursion
        between helpers)."""
        a, b = self.fresh("h"), self.fresh("h")
        ha = Helper(a, [("n", NUM), ("s", TEXT)], TEXT, False, set(), recursive_arg=0)
        hb = Helper(b, [("n", NUM), ("s", TEXT)], TEXT, False, set(), recursive_arg=0)
        ha.lines = ["if n <= 0 { return s }", f'return {b}(n - 1, s + "a")']
        hb.lines = ['if n <= 0 { return s + "!" }', f"return {a}(n - 1, s + text(n % 3))"]
        self.helpers += [ha, hb]

    def add_helper(self, params, ret, writable, fn, lines):
        h = Helper(self.fresh("h"), params, ret, writable, set(fn.changes), lines)
        self.helpers.append(h)

    # --- events and queries ------------------------------------------------

    def event_field_type(self):
        r = self.rng
        return self.pick([(4, lambda: NUM), (2, lambda: TEXT), (1.5, lambda: BOOL),
                          (1, lambda: arr(NUM)), (0.5, lambda: arr(TEXT)),
                          (1, lambda: rec(r.choice(list(self.records)))),
                          (0.5, lambda: arr(rec(r.choice(list(self.records))))),
                          (0.5, lambda: r.choice(self.shapes))])

    def gen_fill_events(self):
        """One event per table that puts rows 0..n-1, so lookups often hit."""
        for t, rn in self.table_rec.items():
            ev = f"fill_{t}"
            keys = self.table_key[t]
            types = self.key_types(t)
            pre = ["let names = [" + ", ".join(json.dumps(k, ensure_ascii=False) for k in TEXT_KEYS[:7]) + "]"] \
                if TEXT in types else []
            # Row i's key: one field is i itself; a composite key's fields
            # are i's digits in base 3, the last one i's rest, so the rows
            # share prefixes and every key is distinct.
            keyval = {}
            for j, (k, ty) in enumerate(zip(keys, types)):
                v = f"floor(i / {3 ** j}) % 3" if j < len(keys) - 1 else (f"floor(i / {3 ** j})" if j else "i")
                keyval[k] = v if ty == NUM else f"names[{v}]"
            parts = []
            for f, ty, _ in self.records[rn]:
                if f in keyval:
                    parts.append(f"{f}: {keyval[f]}")
                elif ty == NUM:
                    parts.append(f"{f}: {ev}.base + i * 3")
                elif ty == TEXT:
                    parts.append(f'{f}: "v" + text(i)')
                else:
                    parts.append(f"{f}: i % 2 == 0")
            # A text last field indexes `names` (7 of them) with i's rest.
            limit = str(7 * 3 ** (len(keys) - 1)) if types[-1] == TEXT else "20"
            lines = pre + [f"for i in 0 .. min({ev}.n, {limit}) {{",
                           f"  {t}.put({rn} {{ {', '.join(parts)} }})", "}", f"return {t}.count"]
            self.events.append((ev, [("n", NUM), ("base", NUM)], lines))

    def gen_events(self):
        r = self.rng
        self.gen_fill_events()
        for _ in range(r.randint(2, 5)):
            name = self.fresh("e")
            fields = [(f"a{j}", self.event_field_type()) for j in range(r.randint(0, 4))]
            snapshot = r.random() < 0.4
            ret = None if snapshot or r.random() < 0.4 else self.pick_type(rows=False)
            fn = Fn("event", True, ret, early_returns=not snapshot)
            for f, t in fields:
                fn.declare(Local(f"{name}.{f}", t))  # event arguments are read-only
            lines = self.body(fn, r.randint(2, 7), r.randint(1, 3))
            if snapshot:
                lines.append(self.snapshot_return(fn))
            self.events.append((name, fields, lines))

    def gen_queries(self):
        r = self.rng
        for _ in range(r.randint(1, 4)):
            name = self.fresh("q")
            params = self.params(r.randint(0, 3) if r.random() < 0.95 else r.randint(10, 64), rows=False)
            snapshot = r.random() < 0.4
            ret = None if snapshot else self.pick_type(rows=False)
            fn = Fn("query", False, ret, early_returns=not snapshot)
            self.param_locals(fn, params)
            lines = self.body(fn, r.randint(1, 6), r.randint(1, 3))
            if snapshot:
                lines.append(self.snapshot_return(fn))
            self.queries.append((name, params, lines))
        # Whole-state queries: what an in-memory run can show of the state.
        for t in self.table_rec:
            self.queries.append((f"all_{t}", [], [f"return {{ n: {t}.count, rows: {t}[{self.full_range(t)}] }}"]))
        if self.vars:
            self.queries.append(("all_vars", [], ["return { " + ", ".join(f"{v}: {v}" for v in self.vars) + " }"]))

    def full_range(self, t):
        return "-1e308 .. 1e308" if self.key_type(t) == NUM else '"" .. "\\u{10FFFF}"'

    # --- the module text --------------------------------------------------

    def module(self):
        self.declare_module()
        self.gen_helpers()
        self.gen_events()
        self.gen_queries()
        return self.render()

    def render(self):
        out = ["// generated by tests/jit/diff_fuzz.py"]
        for rn, fields in self.records.items():
            fs = ", ".join(f"{f}: {self.tsrc(t)}" + (f" = {dflt}" if dflt is not None else "")
                           for f, t, dflt in fields)
            out.append(f"record {rn} {{ {fs} }}")
        for t, rn in self.table_rec.items():
            keys = self.table_key[t]
            out.append(f"table {t}: {rn} key {keys[0] if len(keys) == 1 else '(' + ', '.join(keys) + ')'}")
            for name, fields, unique in self.indexes[t]:
                out.append(f"{'unique ' if unique else ''}index {name} on {t} ({', '.join(fields)})")
        for v, ty in self.vars.items():
            out.append(f"var {v}: {ty[0]} = {self.literal(ty)}")
        out.append("")
        for h in self.helpers:
            ps = ", ".join(f"{p}: {self.tsrc(t)}" for p, t in h.params)
            ret = f": {self.tsrc(h.ret)}" if h.ret is not None else ""
            out.append(f"fn {h.name}({ps}){ret} {{")
            out += ["  " + ln for ln in h.lines]
            out += ["}", ""]
        for name, fields, lines in self.events:
            out.append(f"event {name} {{ " + ", ".join(f"{f}: {self.tsrc(t)}" for f, t in fields) + " }")
            out.append(f"on {name} {{")
            out += ["  " + ln for ln in lines]
            out += ["}", ""]
        for name, params, lines in self.queries:
            out.append(f"query {name}(" + ", ".join(f"{p}: {self.tsrc(t)}" for p, t in params) + ") {")
            out += ["  " + ln for ln in lines]
            out += ["}", ""]
        return "\n".join(out)

    # --- requests ----------------------------------------------------------

    def json_value(self, ty):
        r = self.rng
        k = ty[0]
        if k == "num":
            return r.choice([0, 1, 2, 3, 4, 5, 6, 7, 1, 2, 3, -1, -2, 0.5, 2.5, -0.0, 1e300,
                             -1e300, 5e-324, 123456789.125, 9007199254740993, 250, 1e16])
        if k == "text":
            return r.choice(TEXT_KEYS + ["12", "-3.5", "1e3", "1e400", " 1", "0x10", ".5", "x\"y", "日本", "\n"])
        if k == "bool":
            return r.random() < 0.5
        if k == "arr":
            return [self.json_value(ty[1]) for _ in range(r.choice([0, 1, 2, 3, 3, 4]))]
        if k == "rec":
            out = {}
            for f, t, dflt in self.records[ty[1]]:
                if dflt is None or r.random() < 0.5:
                    out[f] = self.json_value(t)
            return out
        if k == "obj":
            return {f: self.json_value(t) for f, t in ty[1]}
        raise AssertionError(ty)

    def requests(self, n):
        """Fill the tables first (mostly), then a random mix; ids count up."""
        r = self.rng
        reqs = []
        for t in self.table_rec:
            if r.random() < 0.85:
                reqs.append({"event": f"fill_{t}", "args": {"n": r.randint(0, 8), "base": r.choice([0, 1, -5, 0.5])}})
        events = [(nm, fs) for nm, fs, _ in self.events]
        while len(reqs) < n:
            if r.random() < 0.65:
                name, fields = r.choice(events)
                req = {"event": name, "args": {f: self.json_value(t) for f, t in fields}}
            else:
                name, params, _ = r.choice(self.queries)
                req = {"query": name, "args": {p: self.json_value(t) for p, t in params}}
            if r.random() < 0.03 and req["args"]:
                req["args"][r.choice(list(req["args"]))] = "wrong" if r.random() < 0.5 else {"x": []}  # bad_args
            reqs.append(req)
        lines = []
        for i, req in enumerate(reqs):
            req["id"] = i + 1
            lines.append(json.dumps(req, separators=(",", ":"), ensure_ascii=r.random() < 0.5))
            if r.random() < 0.015:
                # Requests that are not run (bad_request, unknown_event,
                # unknown_query): nothing of them may differ either.
                lines.append(r.choice(['{"event":"no_such"}', '{"query":"no_such","id":"x"}', "not json",
                                       '{"event":"a","query":"b"}', "[1]"]))
        return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# Running the engines
# ---------------------------------------------------------------------------

class Finding(Exception):
    """A difference between the engines (or a crash / hang of one)."""


def run(cmd, stdin=None):
    try:
        p = subprocess.run(cmd, input=stdin, capture_output=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        return None
    return p


def run_engine(aup, engine, module, flags, stdin, data=None):
    cmd = [aup, "run"] + engine + [module, "--fixed-time", FIXED_TIME] + flags
    cmd += ["--data", data] if data else ["--memory"]
    return cmd, run(cmd, stdin)


def describe(p):
    if p is None:
        return "timed out"
    return f"exit {p.returncode}" + (f", stderr: {p.stderr.decode(errors='replace').strip()[:500]}" if p.stderr else "")


MASKS = []  # --mask: compiled regexes blanked before comparing


def masked(out):
    for m in MASKS:
        out = m.sub(b"<masked>", out)
    return out


def compare_runs(what, pa, pb):
    """Both ran to the end (exit 0) and printed the same bytes."""
    for p in (pa, pb):
        if p is None or p.returncode != 0:
            raise Finding(f"{what}: engine A {describe(pa)}; engine B {describe(pb)}")
    if masked(pa.stdout) != masked(pb.stdout):
        raise Finding(f"{what}: stdout differs\n{first_diff(pa.stdout, pb.stdout)}")


def first_diff(a, b):
    la, lb = a.decode(errors="replace").split("\n"), b.decode(errors="replace").split("\n")
    for i in range(max(len(la), len(lb))):
        x = la[i] if i < len(la) else "<none>"
        y = lb[i] if i < len(lb) else "<none>"
        if x != y:
            return f"  line {i + 1}:\n  A: {x[:1000]}\n  B: {y[:1000]}"
    return "  (same lines)"


class Program:
    """One generated module, its input and flags, and how to run both engines."""

    def __init__(self, seed, work, aup, engines, heavy=False):
        self.seed = seed
        rng = random.Random(seed)
        # A low step budget sometimes, so loops and recursion run out
        # (budget); only then may the generator write loops that never end.
        budget = rng.choice([30, 100, 300, 1000, 3000, 20000]) if rng.random() < 0.3 else None
        self.flags = ["--step-budget", str(budget)] if budget else []
        self.gen = Gen(rng, low_budget=budget is not None, heavy=heavy)
        self.source = self.gen.module()
        self.input = self.gen.requests(rng.randint(15, 45))
        self.work, self.aup, self.engines = work, aup, engines
        self.src_path = os.path.join(work, "prog.aup")
        self.module_path = os.path.join(work, "prog.aupm")
        self.outputs = {}  # name -> bytes, for the report

    def build(self):
        with open(self.src_path, "w", encoding="utf-8") as f:
            f.write(self.source)
        p = run([self.aup, "build", self.src_path, "-o", self.module_path])
        if p is None or p.returncode != 0:
            return describe(p) + "\n" + (p.stdout.decode(errors="replace") if p else "")
        return None

    def mem_outputs(self, stdin):
        a = run_engine(self.aup, self.engines[0], self.module_path, self.flags, stdin.encode())
        b = run_engine(self.aup, self.engines[1], self.module_path, self.flags, stdin.encode())
        return a[1], b[1]

    def check(self):
        """Every comparison; raises Finding on the first difference."""
        pa, pb = self.mem_outputs(self.input)
        self.outputs["memory.A"] = pa.stdout if pa else b""
        self.outputs["memory.B"] = pb.stdout if pb else b""
        compare_runs("aup run --memory", pa, pb)
        self.memory_stdout = pa.stdout
        dirs = []
        for i, engine in enumerate(self.engines):
            d = os.path.join(self.work, f"store{i}")
            shutil.rmtree(d, ignore_errors=True)
            _, p = run_engine(self.aup, engine, self.module_path, self.flags, self.input.encode(), data=d)
            self.outputs[f"store.{'AB'[i]}"] = p.stdout if p else b""
            dirs.append((d, p))
        compare_runs("aup run --data", dirs[0][1], dirs[1][1])
        for what in [["--dump", t] for t in self.gen.table_rec] + [["--vars"]]:
            ps = [run([self.aup, "replay", "--data", d] + what) for d, _ in dirs]
            for i, p in enumerate(ps):
                self.outputs[f"replay{'_'.join(what).replace('--', '_')}.{'AB'[i]}"] = p.stdout if p else b""
            compare_runs("aup replay " + " ".join(what), ps[0], ps[1])

    def differs_on(self, stdin):
        pa, pb = self.mem_outputs(stdin)
        if pa is None or pb is None or pa.returncode != 0 or pb.returncode != 0:
            return True
        return masked(pa.stdout) != masked(pb.stdout)

    def shrink_input(self, deadline):
        """Drop requests while the in-memory outputs still differ (greedy,
        chunks then single lines), so the report shows the few that matter."""
        lines = self.input.splitlines()
        if not self.differs_on(self.input):
            return None  # only the store runs differ: keep the whole input
        chunk = max(len(lines) // 2, 1)
        while chunk >= 1 and time.monotonic() < deadline:
            i = 0
            while i < len(lines) and time.monotonic() < deadline:
                trial = lines[:i] + lines[i + chunk:]
                if trial and self.differs_on("\n".join(trial) + "\n"):
                    lines = trial
                else:
                    i += chunk
            chunk //= 2
        return "\n".join(lines) + "\n"

    def keep(self, keep_dir, reason):
        os.makedirs(keep_dir, exist_ok=True)
        base = os.path.join(keep_dir, f"seed{self.seed}")
        os.makedirs(base, exist_ok=True)
        with open(os.path.join(base, "prog.aup"), "w", encoding="utf-8") as f:
            f.write(self.source)
        with open(os.path.join(base, "input.ndjson"), "w", encoding="utf-8") as f:
            f.write(self.input)
        for name, data in self.outputs.items():
            with open(os.path.join(base, name + ".out"), "wb") as f:
                f.write(data)
        with open(os.path.join(base, "reason.txt"), "w", encoding="utf-8") as f:
            f.write(reason + "\n")
        small = self.shrink_input(time.monotonic() + 120) if "memory" in reason else None
        if small is not None:
            with open(os.path.join(base, "input.min.ndjson"), "w", encoding="utf-8") as f:
                f.write(small)
        flags = " ".join(shlex.quote(x) for x in self.flags)
        with open(os.path.join(base, "repro.sh"), "w", encoding="utf-8") as f:
            f.write("#!/bin/sh\n# Runs the kept program under both engines and diffs the answers.\n"
                    f'aup=${{1:-{shlex.quote(os.path.abspath(self.aup))}}}\n'
                    'cd "$(dirname "$0")"\n'
                    'in=input.ndjson; [ -f input.min.ndjson ] && in=input.min.ndjson\n'
                    '"$aup" build prog.aup -o prog.aupm >/dev/null || exit 2\n'
                    f'"$aup" run {" ".join(map(shlex.quote, self.engines[0]))} prog.aupm --memory '
                    f'--fixed-time {FIXED_TIME} {flags} <"$in" >a.txt\n'
                    f'"$aup" run {" ".join(map(shlex.quote, self.engines[1]))} prog.aupm --memory '
                    f'--fixed-time {FIXED_TIME} {flags} <"$in" >b.txt\n'
                    'diff a.txt b.txt && echo same\n')
        return base


def count_answers(stdout, codes):
    """Tally ok answers and failure codes from one engine's output."""
    for line in stdout.decode(errors="replace").splitlines():
        try:
            ans = json.loads(line)
        except ValueError:
            codes["unparsable"] += 1
            continue
        codes["ok" if ans.get("ok") else ans.get("error", {}).get("code", "?")] += 1


def request_kind(line):
    """events, queries, or other (the lines that are not run)."""
    try:
        req = json.loads(line)
    except ValueError:
        return "other"
    if not isinstance(req, dict) or ("event" in req) == ("query" in req):
        return "other"
    return "events" if "event" in req else "queries"


def default_engines(aup):
    """`--engine vm` / `--engine jit` when this aup has them, otherwise the
    default engine twice (a self-check of the harness)."""
    p = run([aup, "run", "--help"])
    if p is not None and b"--engine" in p.stdout:
        return ["--engine vm", "--engine jit"]
    print("diff_fuzz: `aup run` has no --engine; comparing the default engine with itself", flush=True)
    return ["", ""]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("aup")
    ap.add_argument("--seed", type=int, default=None, help="first program's seed (default: from the clock)")
    ap.add_argument("--programs", type=int, default=60, help="at most this many programs (default 60)")
    ap.add_argument("--seconds", type=float, default=60, help="start no program after this (default 60)")
    ap.add_argument("--engines", nargs=2, metavar=("A", "B"), default=None,
                    help='two engine flag strings (default "--engine vm" "--engine jit")')
    ap.add_argument("--keep", default=None, help="where to keep a differing program (default: a temp dir)")
    ap.add_argument("--keep-going", action="store_true", help="go on after a difference (report all)")
    ap.add_argument("--heavy", action="store_true",
                    help="also generate code that passes 1 GiB of temporaries (seconds a run)")
    ap.add_argument("--mask", action="append", default=[], metavar="REGEX",
                    help="blank what matches in outputs before comparing, to look past a known difference")
    args = ap.parse_args()
    MASKS.extend(re.compile(m.encode()) for m in args.mask)

    aup = os.path.abspath(args.aup)
    engines = args.engines if args.engines is not None else default_engines(aup)
    engines = [shlex.split(e) for e in engines]
    seed = args.seed if args.seed is not None else int(time.time()) % 1_000_000
    keep_dir = args.keep or tempfile.mkdtemp(prefix="aup-diff-fuzz-keep-")
    print(f"diff_fuzz: seed {seed}, engines A {engines[0]} B {engines[1]}, up to {args.programs} programs "
          f"or {args.seconds:g} s", flush=True)

    start = time.monotonic()
    codes = Counter()
    sent = Counter()  # events, queries, other lines
    done = 0
    findings = []
    # Stores on tmpfs when there is one: fdatasync is not what is tested here.
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(prefix="aup-diff-fuzz-", dir=shm) as work:
        for i in range(args.programs):
            if time.monotonic() - start > args.seconds:
                break
            prog = Program(seed + i, work, aup, engines, heavy=args.heavy)
            err = prog.build()
            if err is not None:
                where = prog.keep(keep_dir, "does not build")
                print(f"diff_fuzz: GENERATOR BUG: program of seed {seed + i} does not build ({where}):\n{err}",
                      flush=True)
                return 2
            try:
                prog.check()
            except Finding as f:
                where = prog.keep(keep_dir, str(f))
                print(f"diff_fuzz: DIFFERENCE for seed {seed + i} (kept in {where}):\n{f}", flush=True)
                findings.append(seed + i)
                if not args.keep_going:
                    break
            else:
                count_answers(prog.memory_stdout, codes)
            for line in prog.input.splitlines():
                sent[request_kind(line)] += 1
            done += 1
            if done % 10 == 0:
                print(f"diff_fuzz: {done} programs, {sent['events']} events, {sent['queries']} queries, "
                      f"{time.monotonic() - start:.1f} s", flush=True)

    failures = {k: v for k, v in sorted(codes.items()) if k != "ok"}
    print(f"diff_fuzz: {done} programs, {sent['events']} events, {sent['queries']} queries, "
          f"{sent['other']} bad lines; {codes['ok']} answers ok, "
          f"{time.monotonic() - start:.1f} s; failures by code: "
          + ", ".join(f"{k} {v}" for k, v in failures.items()), flush=True)
    if findings:
        print(f"diff_fuzz: FAILED: {len(findings)} program(s) differ (seeds {findings}); kept in {keep_dir}")
        return 1
    if not args.keep:
        shutil.rmtree(keep_dir, ignore_errors=True)
    print("diff_fuzz: no differences")
    return 0


if __name__ == "__main__":
    sys.exit(main())
