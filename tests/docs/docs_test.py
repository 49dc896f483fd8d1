#!/usr/bin/env python3
"""The docs stay true to the code.

usage: docs_test.py SOURCE_ROOT

  - every opcode of vm/opcodes.def is in docs/bytecode.md's table;
  - every failure code is explained in docs/protocol.md and raised somewhere
    in vm/ or runtime/;
  - every file format's magic (the byte tables in storage/*_format.h and
    storage/schema_file.h) is shown in docs/store-format.md;
  - every document cited anywhere (a `*.md` name in a source comment, a
    script, a build file or a doc) is a file of the repository, and nothing
    cites the design pages the project grew from (they are not in it);
  - the README shows the two set-up commands, and .ci/run runs the second;
  - docs/operations.md's Monitoring table lists every metric of
    runtime/metrics.cpp's table, with its kind and unit, and no other;
  - every crash point of storage/ (an Io::point name, or one of a
    DurablePoints set) is in docs/store-format.md's table of points and
    is crashed at by tests/storage/crash_test.py or tests/cli/backup_test.py.

Each problem is one line; the exit status is the number of problems.
"""
import os
import re
import sys

root = sys.argv[1]
problems = []


def fail(msg):
    problems.append(msg)
    print("FAIL: " + msg)


def read(rel):
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        return f.read()


def check_opcodes():
    table = read("docs/bytecode.md")
    for op in re.findall(r"^AUP_OP\(([A-Z0-9_]+),", read("vm/opcodes.def"), re.M):
        if f"| `{op}` |" not in table:
            fail(f"docs/bytecode.md does not list {op}")


FAILURE_CODES = ["failed", "not_found", "duplicate", "stale_row", "out_of_range", "not_finite", "bad_number",
                 "budget", "bad_request", "unknown_event", "unknown_query", "bad_args", "unavailable"]


def check_failure_codes():
    protocol = read("docs/protocol.md")
    code = "".join(read(os.path.join(d, f)) for d in ("vm", "runtime")
                   for f in sorted(os.listdir(os.path.join(root, d))) if f.endswith((".cpp", ".h", ".def")))
    for c in FAILURE_CODES:
        if f"`{c}`" not in protocol:
            fail(f"docs/protocol.md does not explain {c}")
        if f'"{c}"' not in code:
            fail(f"{c} is documented but not in the code")


def check_magics():
    store_format = read("docs/store-format.md")
    for rel in ("storage/log_format.h", "storage/image_format.h", "storage/schema_file.h"):
        m = re.search(r'^//\s+0\s+8\s+magic "([A-Z]+)', read(rel), re.M)
        if not m:
            fail(f"{rel} has no magic line")
        elif f"`{m.group(1)}" not in store_format:
            fail(f"docs/store-format.md does not show {rel}'s magic {m.group(1)}")


# Where a bare `name.md` may live: beside the file citing it, in docs/, in
# bench/results/ (the benchmarks write NAME.md there), or at the top.
SEARCH_DIRS = ["docs", "bench/results", "."]
# The design pages and reports the project grew from: not in the
# repository, so never to be cited.
DESIGN_PAGES = ["runtime.md", "storage.md", "style.md", "toolchain.md", "bench.md"]
SCANNED = (".h", ".cpp", ".def", ".re", ".py", ".sh", ".md", ".aup", "meson.build")
SKIP_DIRS = {".git", "corpus", "results"}  # fuzz inputs and generated reports cite nothing


def sources():
    for dirpath, dirs, names in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith("build")]
        for n in names:
            if n.endswith(SCANNED):
                yield os.path.normpath(os.path.join(rel_dir, n))


def cited_exists(citing, name):
    if name.startswith("/"):
        return False
    here = os.path.dirname(citing)
    candidates = [os.path.join(here, name)] + [os.path.join(d, name) for d in SEARCH_DIRS]
    return any(os.path.isfile(os.path.join(root, c)) for c in candidates)


def check_citations():
    this = os.path.relpath(os.path.abspath(__file__), os.path.abspath(root))
    for rel in sources():
        if rel == this:
            continue
        text = read(rel)
        for m in re.finditer(r"(?<![\w/.-])([\w.-]+(?:/[\w.-]+)*\.md)\b", text):
            name = m.group(1)
            line = text.count("\n", 0, m.start()) + 1
            if os.path.basename(name) in DESIGN_PAGES:
                fail(f"{rel}:{line} cites {name}, a design page the repository does not have")
            elif name.isupper() or "NAME" in name or name.startswith(("tmp/", "root/")):
                continue  # a placeholder in a usage line, not a citation
            elif "/" + name in text:
                continue  # a file the script itself writes or reads (`$tmp/results/x.md`)
            elif not cited_exists(rel, name):
                fail(f"{rel}:{line} cites {name}, which is not in the repository")


def check_setup_commands():
    readme = read("README.md")
    for cmd in ("sh tools/demo.sh", "sh tools/test.sh"):
        if not re.search(rf"^{re.escape(cmd)}$", readme, re.M):
            fail(f"README does not show `{cmd}`")
    if "tools/test.sh" not in read(".ci/run"):
        fail(".ci/run does not run the README's test command")


def check_metrics():
    code = re.findall(r'^\s*\{"([a-z0-9_]+)", K::(Counter|Gauge|Histogram|Info), "([a-z]+)"',
                      read("runtime/metrics.cpp"), re.M)
    if not code:
        fail("runtime/metrics.cpp has no metric table")
    ops = read("docs/operations.md")
    section = ops[ops.find("## Monitoring"):]
    section = section[:section.find("\n## ", 1)]
    rows = re.findall(r"^\| `([a-z0-9_]+)` \| (counter|gauge|histogram|info) \| ([a-z]+) \|", section, re.M)
    want = [(n, k.lower(), u) for n, k, u in code]
    for m in want:
        if m not in rows:
            fail(f"docs/operations.md's Monitoring table does not list {m[0]} as a {m[1]} in {m[2]}")
    for r in rows:
        if r not in want:
            fail(f"docs/operations.md's Monitoring table lists {r[0]} ({r[1]}, {r[2]}), not in runtime/metrics.cpp")
    if [n for n, _, _ in rows] != [n for n, _, _ in want]:
        fail("docs/operations.md's Monitoring table is not in runtime/metrics.cpp's order")


def check_crash_points():
    code = "".join(read(os.path.join("storage", f)) for f in sorted(os.listdir(os.path.join(root, "storage")))
                   if f.endswith(".cpp"))
    names = set(re.findall(r'\bpoint\("([a-z_]+\.[a-z_]+)"\)', code))
    for group in re.findall(r"DurablePoints k\w+\{([^}]*)\}", code):
        names.update(re.findall(r'"([a-z_]+\.[a-z_]+)"', group))
    if len(names) < 10:
        fail(f"found only {len(names)} crash points in storage/: the pattern no longer matches the code")
    store_format = read("docs/store-format.md")
    # The process-level crash suites, and the storage units that fork a
    # process to stop at a point (store_test's terms cases, cut_test,
    # copy_test).
    tests = "".join(read(f) for f in ("tests/storage/crash_test.py", "tests/cli/backup_test.py",
                                      "tests/storage/store_test.cpp", "tests/storage/cut_test.cpp",
                                      "tests/storage/copy_test.cpp"))
    for name in sorted(names):
        if f"`{name}`" not in store_format:
            fail(f"docs/store-format.md does not list the crash point {name}")
        if f'"{name}' not in tests and f"'{name}" not in tests and f"crash:{name}:" not in tests:
            fail(f"no crash test stops at {name}")


check_opcodes()
check_metrics()
check_crash_points()
check_failure_codes()
check_magics()
check_citations()
check_setup_commands()
if not problems:
    print("docs agree with the code")
sys.exit(min(len(problems), 100))
