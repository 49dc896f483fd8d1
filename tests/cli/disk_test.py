#!/usr/bin/env python3
"""Small and read-only volumes, as `aup run` meets them (storage/log.h,
storage/file_io.h, storage/read_only.h; docs/operations.md, "Small disks"
and "Serving a store read-only"):

- no space for a new log segment (ENOSPC from fallocate, through
  AUP_FAULTS): the refusal names the segment's size, the free space and
  --segment-size; refused attempts do not use up segment numbers, and once
  space is back the log goes on with the next one;
- a checkpoint stopped while writing an image's .new: the next open removes
  it, says so, and holds every answered event;
- `aup run --read-only`: queries answered on stdin and on --listen, every
  event refused `not_primary`, nothing in the store changed (names, sizes,
  mtimes; under root, where permissions do not stop writes, that is the
  whole check, else the store is made read-only with chmod as well); a
  writer is kept out while it serves and a served store is refused to it;
  a normal `aup run` afterwards finds the store as it was.

usage: disk_test.py AUP ROOT
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg, flush=True)


def run(aup, args, lines=(), env=None, timeout=60):
    return subprocess.run([aup, "run", *args], input="".join(l + "\n" for l in lines), capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ, **(env or {})))


def deposit(n):
    return json.dumps({"event": "deposit", "args": {"id": 1, "amount": n}})


OPEN = json.dumps({"event": "open", "args": {"id": 1, "owner": "ann"}})
BALANCE = '{"query":"balance","args":{"id":1}}'
NO_CHECKPOINTS = ["--image-min", str(1 << 40), "--log-min", str(1 << 40)]


def answers(r):
    return [json.loads(l) for l in r.stdout.splitlines()]


def segments(d):
    return sorted(int(n[4:]) for n in os.listdir(d) if n.startswith("log-"))


def small_disk(aup, module, tmp):
    """Three refused attempts at segment 1, then space comes back."""
    d = os.path.join(tmp, "small")
    plan = "fail:fallocate:2:ENOSPC,fail:fallocate:3:ENOSPC,fail:fallocate:4:ENOSPC"
    lines = [OPEN] + [deposit(1) for _ in range(250)]  # about 83 a segment: three segments
    r = run(aup, [module, "--data", d, "--segment-size", "4096", "--max-batch", "1"] + NO_CHECKPOINTS, lines,
            env={"AUP_FAULTS": plan})
    got = answers(r)
    if len(got) != len(lines):
        fail(f"small disk: {len(got)} answers to {len(lines)} lines (exit {r.returncode}): {r.stderr}")
        return
    refused = [a["error"]["message"] for a in got if not a["ok"]]
    if len(refused) != 3:
        fail(f"small disk: {len(refused)} refusals, expected 3: {refused[:4]}")
    for m in refused:
        want = f"not written: no space for a new log segment {d}/log-1 of 4096 bytes, "
        if not m.startswith(want) or "a smaller --segment-size" not in m or " free: " not in m:
            fail(f"small disk: the refusal does not say the segment, the free space and --segment-size: {m}")
    # The numbers: log-0, then log-1 (the three refused attempts used none),
    # then on without a gap.
    segs = segments(d)
    if segs[:2] != [0, 1] or segs != list(range(len(segs))) or len(segs) < 3:
        fail(f"small disk: the segments are {segs}, expected 0, 1, 2, ... without a gap")
    ok = sum(1 for a in got[1:] if a["ok"])
    r = run(aup, [module, "--data", d], [BALANCE])
    if answers(r) != [{"ok": True, "result": ok}]:
        fail(f"small disk: after a restart the balance is {r.stdout.strip()}, expected {ok} (the deposits answered ok)")
    print(f"small disk: 3 refusals naming log-1 and --segment-size; segments {segs[0]}..{segs[-1]} without a gap")


def leftover_image(aup, module, tmp):
    """A checkpoint stopped inside an image's .new; the next open removes it."""
    d = os.path.join(tmp, "leftover")
    r = run(aup, [module, "--data", d], [OPEN])
    lines = [deposit(1) for _ in range(300)]
    r = run(aup, [module, "--data", d, "--segment-size", "4096", "--image-min", "512", "--log-min", "2048",
                  "--max-batch", "1"], lines, env={"AUP_FAULTS": "crash:image.body_step:1"})
    if r.returncode != 86:
        fail(f"leftover: exit {r.returncode}, expected the crash exit 86: {r.stderr}")
        return
    left = [n for n in os.listdir(d) if n.endswith(".new")]
    if not left:
        fail("leftover: the crash left no .new file")
        return
    # The answers died with the process (a power cut): what the crashed
    # store holds is what `aup replay` reads in it before the reopen, which
    # must hold the same (the previous images and the whole log).
    dump = subprocess.run([aup, "replay", "--data", d, "--dump", "accounts"], capture_output=True, text=True)
    answered = json.loads(dump.stdout.splitlines()[0])["balance"] if dump.returncode == 0 and dump.stdout else -1
    if answered <= 0:
        fail(f"leftover: aup replay reads no deposits in the crashed store: {dump.stdout} {dump.stderr}")
    r = run(aup, [module, "--data", d], [BALANCE])
    said = [f"aup: removed {d}/{n}, left by a write that did not finish" for n in left]
    if not all(s in r.stderr for s in said):
        fail(f"leftover: the open does not say it removed {left}: {r.stderr}")
    if [n for n in os.listdir(d) if n.endswith(".new")]:
        fail(f"leftover: still there after the open: {os.listdir(d)}")
    if answers(r) != [{"ok": True, "result": answered}]:
        fail(f"leftover: the balance is {r.stdout.strip()}, expected {answered} (what the crashed store held)")
    print(f"leftover: {', '.join(left)} removed at the next open; the {answered} deposits the store held kept")


def snapshot(d):
    out = {}
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            p = os.path.join(root, n)
            st = os.lstat(p)
            out[os.path.relpath(p, d)] = (st.st_size, st.st_mtime_ns, st.st_mode)
    return out


def chmod_tree(d, writable):
    for root, dirs, files in os.walk(d):
        for n in files + dirs:
            p = os.path.join(root, n)
            m = os.lstat(p).st_mode
            os.chmod(p, (m | 0o200) if writable else (m & ~0o222))
    m = os.lstat(d).st_mode
    os.chmod(d, (m | 0o200) if writable else (m & ~0o222))


def wait_for(path, text, proc, seconds=20):
    end = time.time() + seconds
    while time.time() < end:
        with open(path) as f:
            if text in f.read():
                return True
        if proc.poll() is not None:
            return False
        time.sleep(0.05)
    return False


def ask(sock_path, lines):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock_path)
    s.sendall("".join(l + "\n" for l in lines).encode())
    buf = b""
    while buf.count(b"\n") < len(lines):
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    s.close()
    return [json.loads(l) for l in buf.decode().splitlines()]


def serve(aup, args, tmp, name):
    sock = os.path.join(tmp, name + ".sock")
    err = os.path.join(tmp, name + ".err")
    with open(err, "w") as e:
        p = subprocess.Popen([aup, "run", *args, "--listen", "unix:" + sock], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=e)
    if not wait_for(err, "listening on", p):
        p.kill()
        p.wait()
        with open(err) as f:
            fail(f"{name}: the server did not start: {f.read()}")
        return None, sock, err
    return p, sock, err


def stop(p):
    p.terminate()
    return p.wait(timeout=30)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http_post(port, path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body.encode(), method="POST")
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def check_served_read_only(aup, module, tmp, d):
    """--listen (unix: and http://): queries answered, events refused, a
    writer kept out."""
    port = free_port()
    p, sock, err = serve(aup, [module, "--data", d, "--read-only", "--listen", f"http://127.0.0.1:{port}"], tmp,
                         "reader")
    if not p:
        return
    try:
        code, body = http_post(port, "/events/deposit", '{"id":1,"amount":3}')
        if code != 421 or body.get("error", {}).get("code") != "not_primary":
            fail(f"read-only over HTTP: an event answered {code} {body}")
        code, body = http_post(port, "/queries/balance", '{"id":1}')
        if code != 200 or body != {"ok": True, "result": 12}:
            fail(f"read-only over HTTP: a query answered {code} {body}")
        got = ask(sock, [BALANCE, deposit(7)])
        if got[0] != {"ok": True, "result": 12}:
            fail(f"read-only --listen: the query answered {got[0]}")
        if got[1].get("error", {}).get("code") != "not_primary" or "served read-only" not in got[1]["error"]["message"]:
            fail(f"read-only --listen: the event answered {got[1]}")
        # A writer waits for readers up to 10 s, then is refused: it never
        # starts, so it loses nothing. (Not root, the store's permissions
        # refuse it first, pointing at --read-only.)
        w = run(aup, [module, "--data", d], [deposit(1)], timeout=60)
        said = ("is being read", "aup run --read-only") if os.geteuid() == 0 else ("Permission denied", "--read-only")
        if w.returncode != 2 or not all(x in w.stderr for x in said):
            fail(f"a writer beside --read-only: exit {w.returncode}, {w.stderr.strip()} {w.stdout.strip()}")
    finally:
        rc = stop(p)
    if rc != 0:
        fail(f"read-only --listen: exit {rc} after SIGTERM")


def read_only(aup, module, tmp):
    d = os.path.join(tmp, "ro")
    r = run(aup, [module, "--data", d], [OPEN, deposit(5), deposit(7)])
    with open(os.path.join(d, "image-accounts.new"), "w") as f:
        f.write("a leftover the read-only server must leave alone")
    root = os.geteuid() == 0
    if not root:
        chmod_tree(d, writable=False)
    before = snapshot(d)
    time.sleep(0.02)  # an mtime written now would differ
    try:
        r = run(aup, [module, "--data", d, "--read-only"], [BALANCE, deposit(1), '{"query":"total"}'])
        got = answers(r)
        if r.returncode != 0 or len(got) != 3:
            fail(f"read-only stdin: exit {r.returncode}, {r.stdout} {r.stderr}")
        else:
            if got[0] != {"ok": True, "result": 12} or got[2] != {"ok": True, "result": {"accounts": 1, "total": 12}}:
                fail(f"read-only stdin: the queries answered {got[0]} and {got[2]}")
            e = got[1].get("error", {})
            if e.get("code") != "not_primary" or "is served read-only (aup run --read-only)" not in e.get("message", ""):
                fail(f"read-only stdin: the event answered {got[1]}")
        if f"aup: serving the store {d} read-only, as of save 1" not in r.stderr:
            fail(f"read-only stdin: stderr {r.stderr!r}")
        check_served_read_only(aup, module, tmp, d)
        after = snapshot(d)
        if after != before:
            changed = sorted(set(before.items()) ^ set(after.items()))
            fail(f"read-only: the store changed: {changed}")
    finally:
        if not root:
            chmod_tree(d, writable=True)
    r = run(aup, [module, "--data", d], [BALANCE, deposit(1), BALANCE])
    if answers(r) != [{"ok": True, "result": 12}, {"ok": True, "result": {"balance": 13}}, {"ok": True, "result": 13}]:
        fail(f"after --read-only a normal run answered {r.stdout.strip()} ({r.stderr.strip()})")
    how = "as root: nothing changed" if root else "chmod -R a-w, and nothing changed"
    print(f"read-only: queries answered (stdin, unix:, HTTP), events refused not_primary (HTTP 421), a writer "
          f"refused meanwhile; {how}")


def read_only_refusals(aup, module, tmp):
    d = os.path.join(tmp, "refusals")
    run(aup, [module, "--data", d], [OPEN])
    missing = os.path.join(tmp, "missing")
    r = run(aup, [module, "--data", missing, "--read-only"], [BALANCE])
    if r.returncode != 2 or "there is no store" not in r.stderr or os.path.exists(missing):
        fail(f"read-only of no store: exit {r.returncode}, {r.stderr.strip()}, made: {os.path.exists(missing)}")
    for flags, said in ((["--keys", "10"], "--keys"), (["--segment-size", "4096"], "--segment-size"),
                        (["--memory"], "--memory")):
        args = [module, "--read-only"] + (["--data", d] if flags != ["--memory"] else []) + flags
        r = run(aup, args, [BALANCE])
        if r.returncode != 2 or said not in r.stderr:
            fail(f"--read-only {' '.join(flags)}: exit {r.returncode}, {r.stderr.strip()}")
    p, sock, err = serve(aup, [module, "--data", d], tmp, "writer")
    if p:
        try:
            r = run(aup, [module, "--data", d, "--read-only"], [BALANCE])
            if r.returncode != 2 or "is in use by a running aup (pid " not in r.stderr:
                fail(f"--read-only of a served store: exit {r.returncode}, {r.stderr.strip()}")
        finally:
            stop(p)
    h = subprocess.run([aup, "run", "--help"], capture_output=True, text=True)
    if "--read-only" not in h.stdout:
        fail("aup run --help does not list --read-only")
    print("read-only refusals: no store (none made), --keys, --segment-size, --memory, a served store")


def main():
    aup, root = sys.argv[1], sys.argv[2]
    module = os.path.join(root, "examples", "bank", "bank.aup")
    tmp = tempfile.mkdtemp(prefix="aup-disk-")
    try:
        small_disk(aup, module, tmp)
        leftover_image(aup, module, tmp)
        read_only(aup, module, tmp)
        read_only_refusals(aup, module, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
