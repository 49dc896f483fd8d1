#!/usr/bin/env python3
"""Prints the longest C++ functions of the project's folders.

Usage: tools/function_lengths.py [--top N] [--over LINES] [FOLDER...]

A function is a brace block opened at namespace or class scope by a line
that closes a parameter list (`) {`, `) const {`, `) -> T {`, a
constructor's initialiser list); its length is the lines from the first
line of its signature to its closing brace. Lambdas and local classes count
in the function that holds them. Comments, strings and character literals
are blanked first, so braces inside them do not count.

With --over, prints only functions longer than LINES and exits 1 if there
is one (except those named in ALLOWED below, which say why they are long).
"""
import argparse
import os
import re
import sys

# Long by design: one case per opcode, or one rule per token, where
# splitting would scatter a table that reads best whole.
ALLOWED = {
    ("vm/interp.cpp", "execute"): "one case per opcode",  # the interpreter's dispatch loop
    ("vm/jit/translate.cpp", "instruction"): "one case per opcode",  # the JIT's instruction switch
    ("compiler/lexer.re", "next"): "one rule per token",  # the lexer's re2c rules
}

DEFAULT_FOLDERS = ["compiler", "vm", "runtime", "storage", "cli", "stdlib"]


def blank_comments_and_strings(text):
    """Replaces comments, strings and char literals with spaces (keeps newlines)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            # A digit separator (1'000) is not a character literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


SIGNATURE_END = re.compile(
    r"\)\s*(const\s*)?(noexcept\s*)?(override\s*)?(final\s*)?(->\s*[\w:<>,\s*&]+)?\s*$|"  # ) const {
    r"\)\s*:\s*[\w:]+[({].*$|"  # constructor initialiser list on the same line
    r"^\s*[:,]\s*\w+[({].*[)}]\s*$"  # a line of an initialiser list
)
NAME = re.compile(r"([~\w]+(?:::[~\w]+)*)\s*\($")


def function_name(before):
    """The name of the function whose signature ends in `before`."""
    depth = 0
    for i in range(len(before) - 1, -1, -1):
        ch = before[i]
        if ch == ")":
            depth += 1
        elif ch == "(":
            depth -= 1
            if depth == 0:
                m = NAME.search(before[: i + 1])
                if m and m.group(1) not in ("if", "for", "while", "switch", "catch", "return"):
                    # An initialiser list: the name is the constructor's,
                    # before its parameters, not the member's.
                    rest = before[:i]
                    init = re.search(r"\)\s*:\s*$|\)\s*:\s*[\w\s(){},:.*&]*,\s*$", rest)
                    if init:
                        return function_name(rest[: init.start() + 1])
                    return m.group(1).split("::")[-1]
                return None
    return None


def functions(path):
    text = blank_comments_and_strings(open(path, encoding="utf-8", errors="replace").read())
    found = []
    # A stack of open braces: (kind, line, name), kind 'scope' for namespace,
    # class, struct, enum, extern, or a brace we do not know; 'function'.
    stack = []
    line = 1
    start_of_stmt = 0  # offset where the current declaration began
    depth_fn = 0
    i = 0
    for i, ch in enumerate(text):
        if ch == "\n":
            line += 1
        elif ch == ";" and depth_fn == 0:
            start_of_stmt = i + 1
        elif ch == "{":
            if depth_fn > 0:
                stack.append(("inner", line, None))
                depth_fn += 1
                continue
            before = text[start_of_stmt:i].rstrip()
            name = None
            if before.endswith(")") or re.search(r"\)\s*(const|noexcept|override|final|->[^;{}]*)\s*[\w\s:<>,*&]*$", before) or re.search(r"\)\s*:\s*[^;{}]*[)}]\s*$", before, re.S):
                name = function_name(before[: before.rfind(")") + 1]) if ")" in before else None
                if re.match(r"\s*(namespace|class|struct|enum|union|extern)\b", before.split("\n")[-1]):
                    name = None
            if name:
                first = line - before.lstrip("\n").count("\n")
                # The signature begins after the previous declaration: skip
                # blank lines and template or attribute lines above it.
                stack.append(("function", first, name))
                depth_fn = 1
            else:
                stack.append(("scope", line, None))
            start_of_stmt = i + 1
        elif ch == "}":
            if not stack:
                continue
            kind, first, name = stack.pop()
            if kind == "inner":
                depth_fn -= 1
            elif kind == "function":
                depth_fn = 0
                found.append((line - first + 1, name, first))
            start_of_stmt = i + 1
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=5, help="functions to list per folder (default 5)")
    ap.add_argument("--over", type=int, help="list only functions longer than this; exit 1 if any")
    ap.add_argument("folders", nargs="*", default=DEFAULT_FOLDERS)
    args = ap.parse_args()
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    os.chdir(root)
    long_found = False
    for folder in args.folders:
        rows = []
        for dirpath, _, names in os.walk(folder):
            for n in sorted(names):
                if n.endswith((".cpp", ".h", ".re")):
                    p = os.path.join(dirpath, n)
                    rows += [(length, p, name, first) for length, name, first in functions(p)]
        rows.sort(key=lambda r: (-r[0], r[1], r[3]))
        if args.over is not None:
            rows = [r for r in rows if r[0] > args.over]
            bad = [r for r in rows if (r[1], r[2]) not in ALLOWED]
            long_found = long_found or bool(bad)
        else:
            rows = rows[: args.top]
        if not rows and args.over is not None:
            continue
        print(f"{folder}/")
        for length, p, name, first in rows:
            note = f"  (allowed: {ALLOWED[(p, name)]})" if (p, name) in ALLOWED else ""
            print(f"  {length:5d}  {p}:{first}  {name}{note}")
    return 1 if long_found else 0


if __name__ == "__main__":
    sys.exit(main())
