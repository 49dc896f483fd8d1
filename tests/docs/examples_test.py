#!/usr/bin/env python3
"""Every example in the docs runs, with the output shown.

usage: examples_test.py BUILD_DIR SOURCE_ROOT [--only TEXT]

Reads README.md, docs/*.md and bench/*/README.md and runs their examples:

  ```aup       a module: `aup check` must accept it.
  ```console   a session: each `$ command` (continued over the next lines
               while a quote is open) runs with sh in a scratch directory,
               and what it prints (stdout and stderr, in order) must be the
               lines shown below it, exactly, and its exit status 0 unless
               the page shows an error (a line `...: N error(s)`). A `...`
               line stands for any lines, a `…` in a line for any text
               and the spaces around it (figures that differ on every run,
               and so do the columns that align them). The sessions of one
               page share one scratch directory, in order: a page is one
               tour. A command ending in `&` runs in
               the background until `kill %N` stops it (SIGTERM; it must
               exit 0); the lines shown under it must appear before the
               next command runs.

The scratch directory holds `examples/` (a copy), the source folders and
`tools/` (links) and `build/` (links to BUILD_DIR's programs), so the
pages' commands run as written from the top of a checkout. Two things are allowed to differ, because they differ on
every run: paths under /tmp/ and /dev/shm/ are moved into the scratch
directory, and a 13-digit number (a time in ms, `now`) matches any other.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

PAGES = ["README.md"]
COMMAND_TIMEOUT_S = 300


def pages(root):
    found = list(PAGES)
    found += sorted("docs/" + n for n in os.listdir(os.path.join(root, "docs")) if n.endswith(".md"))
    bench = os.path.join(root, "bench")
    for d in sorted(os.listdir(bench)):
        if os.path.isfile(os.path.join(bench, d, "README.md")):
            found.append(f"bench/{d}/README.md")
    return found


def blocks(text):
    """(info string, first line number, lines) of each fenced block."""
    out = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\S*)\s*$", lines[i])
        if m:
            start = i + 1
            j = start
            while j < len(lines) and lines[j] != "```":
                j += 1
            out.append((m.group(1), start + 1, lines[start:j]))
            i = j
        i += 1
    return out


def quotes_open(s):
    """Whether a shell quote is still open at the end of `s`."""
    single = double = False
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\" and not single:
            i += 2
            continue
        if c == "'" and not double:
            single = not single
        elif c == '"' and not single:
            double = not double
        i += 1
    return single or double


def session(lines):
    """The console block as [(command, expected lines)]."""
    steps = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            raise ValueError(f"a line before any command: {lines[i]!r}")
        cmd = lines[i][2:]
        i += 1
        while quotes_open(cmd) and i < len(lines):
            cmd += "\n" + lines[i]
            i += 1
        expected = []
        while i < len(lines) and not lines[i].startswith("$ "):
            expected.append(lines[i])
            i += 1
        steps.append((cmd, expected))
    return steps


def line_pattern(line):
    # A time in ms (13 digits) differs on every run; `…` is any text, and
    # takes the spaces beside it: a column padded for a 4-digit figure is
    # one space narrower beside a 5-digit one.
    parts = re.split(r"(\d{13}| *… *)", line)
    return "".join(r"\d{13}" if re.fullmatch(r"\d{13}", p) else "[^\n]*" if "…" in p else re.escape(p)
                   for p in parts)


def matches(expected, got):
    """Whether `got` lines are `expected` (with `...` standing for any lines)."""
    pattern = ""
    for e in expected:
        pattern += r"(?:.*\n)*?" if e == "..." else line_pattern(e) + r"\n"
    text = "".join(g + "\n" for g in got)
    return re.fullmatch(pattern, text) is not None


class Scratch:
    def __init__(self, build, root):
        self.dir = tempfile.mkdtemp(prefix="aup-docs-")
        shutil.copytree(os.path.join(root, "examples"), os.path.join(self.dir, "examples"))
        # The sources and tools, for examples that read them (linked: no
        # example writes there).
        for d in ("compiler", "vm", "stdlib", "storage", "runtime", "cli", "tools"):
            os.symlink(os.path.join(os.path.abspath(root), d), os.path.join(self.dir, d))
        for prog in ("cli/aup", "bench/tpcc/aup-tpcc", "compiler/aupc"):
            src = os.path.join(build, prog)
            if os.path.exists(src):
                dst = os.path.join(self.dir, "build", prog)
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                os.symlink(os.path.abspath(src), dst)
        os.makedirs(os.path.join(self.dir, "tmp"))
        os.makedirs(os.path.join(self.dir, "shm"))
        self.background = []

    def localize(self, s):
        return re.sub(r"(?<![\w.-])/(dev/shm|tmp)/", lambda m: f"{self.dir}/{'shm' if m.group(1) == 'dev/shm' else 'tmp'}/", s)

    def close(self):
        for p, _ in self.background:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def run_step(scratch, cmd, expected, problems, where):
    env = dict(os.environ, AUP_JIT_CACHE=os.path.join(scratch.dir, "jit-cache"))
    local = scratch.localize(cmd)
    want = [scratch.localize(e) for e in expected]
    kill = re.fullmatch(r"kill %(\d+)(\s+#.*)?", cmd)
    if kill:
        n = int(kill.group(1))
        if n > len(scratch.background):
            problems.append(f"{where}: `{cmd}`: no background job {n}")
            return
        p, out_path = scratch.background[n - 1]
        p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            problems.append(f"{where}: `{cmd}`: the job did not exit on SIGTERM")
            return
        if rc != 0:
            problems.append(f"{where}: `{cmd}`: the job exited {rc}: {open(out_path).read()[-500:]}")
        return
    if re.search(r"&(\s+#.*)?$", local.split("\n")[-1]) and not local.rstrip().endswith("&&"):
        body = re.sub(r"&(\s+#.*)?$", "", local)
        out_path = os.path.join(scratch.dir, f"job{len(scratch.background) + 1}.out")
        out = open(out_path, "w")
        p = subprocess.Popen(["sh", "-c", "exec " + body], cwd=scratch.dir, stdout=out, stderr=subprocess.STDOUT,
                             env=env)
        scratch.background.append((p, out_path))
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            got = open(out_path).read().splitlines()
            if matches(want, got):
                return
            if p.poll() is not None:
                break
            time.sleep(0.05)
        problems.append(f"{where}: `{cmd}` printed {open(out_path).read()!r}, the page shows {expected!r}")
        return
    try:
        r = subprocess.run(["sh", "-c", local], cwd=scratch.dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, env=env, timeout=COMMAND_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        problems.append(f"{where}: `{cmd}` did not finish in {COMMAND_TIMEOUT_S} s")
        return
    got = r.stdout.splitlines()
    shows_error = any(re.search(r": \d+ errors?$", e) for e in expected)
    if (r.returncode != 0) != shows_error:
        problems.append(f"{where}: `{cmd}` exited {r.returncode}: {r.stdout[-800:]}")
    if not matches(want, got):
        problems.append(f"{where}: `{cmd}` printed:\n{r.stdout}the page shows:\n" + "\n".join(expected))


def check_module(build, scratch, lines, problems, where):
    path = os.path.join(scratch.dir, "example.aup")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    r = subprocess.run([os.path.join(build, "cli/aup"), "check", "--color", "never", path], capture_output=True,
                       text=True)
    if r.returncode != 0:
        problems.append(f"{where}: the module does not check: {r.stdout}{r.stderr}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("root")
    ap.add_argument("--only", help="run only the pages whose name contains TEXT")
    a = ap.parse_args()
    problems = []
    counts = {"aup": 0, "console": 0}
    for page in pages(a.root):
        if a.only and a.only not in page:
            continue
        text = open(os.path.join(a.root, page), encoding="utf-8").read()
        # One scratch directory a page: a page's sessions are one tour (a
        # module built in one is run in the next).
        scratch = Scratch(a.build, a.root)
        try:
            for info, first, lines in blocks(text):
                if info not in counts:
                    continue
                counts[info] += 1
                where = f"{page}:{first}"
                try:
                    if info == "aup":
                        check_module(a.build, scratch, lines, problems, where)
                    else:
                        for cmd, expected in session(lines):
                            run_step(scratch, cmd, expected, problems, where)
                except ValueError as e:
                    problems.append(f"{where}: {e}")
        finally:
            scratch.close()
    for p in problems:
        print("FAIL: " + p)
    def counted(n, one, many):
        return f"{n} {one if n == 1 else many}"
    print(f"{counted(counts['aup'], 'module', 'modules')} and "
          f"{counted(counts['console'], 'console session', 'console sessions')} from the docs; "
          f"{counted(len(problems), 'problem', 'problems')}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
