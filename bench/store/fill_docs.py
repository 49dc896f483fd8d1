#!/usr/bin/env python3
"""Puts the figures of bench/results/store.json into docs/benchmarks.md's
store section (run by bench/store/run.sh after the benchmark), so the docs
always show the latest run."""
import json
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "."
r = json.load(open(root + "/bench/results/store.json"))
doc_path = root + "/docs/benchmarks.md"
doc = open(doc_path).read()
rows = []
for row in r["rows"]:
    cells = ["n/a" if row.get(k) is None else "%.0f" % row[k]
             for k in ("process_bytes_per_event", "device_bytes_per_event")]
    rows.append("| %s | %.0f | %.3f | %.1f | %.0f µs | %.2f | %.0f µs | %.1f | %s | %s |" % (
        row["batches"], row["events_per_s"], row["vs_memory"], row["events_per_commit"], row["commit_p50_us"],
        row["p50_vs_floor"], row["commit_p99_us"], row["log_bytes_per_event"], cells[0], cells[1]))
growth = ", ".join("%.1f" % g["image_bytes_per_event"] for g in r["append_only"] if g["events"] >= 100000)
s = r["summary"]
uncapped = [row for row in r["rows"] if row["batches"] == "uncapped"][0]
start = doc.index("## The durable store")
end = doc.index("## Table seek")
section = doc[start:end]
table_head = section.index("|---|")
table_start = section.index("\n", table_head) + 1
table_end = section.index("\n\n", table_start)
section = section[:table_start] + "\n".join(rows) + section[table_end:]
section = re.sub(r"`aup run --memory` [^ ]+ events/s", "`aup run --memory` %.0f events/s" % s["memory_events_per_s"],
                 section)
section = re.sub(r"p50\n[^ ]+ µs, p99 [^ ]+ µs", "p50\n%.0f µs, p99 %.0f µs" % (s["floor_p50_us"], s["floor_p99_us"]),
                 section)
section = re.sub(r"at [^ ]+ of the in-memory rate", "at %.2f of the in-memory rate" % uncapped["vs_memory"], section)
section = re.sub(r"thresholds\): [^:]+: the cost", "thresholds): %s: the cost" % growth, section)
for k, v in {"STORE_ROWS": "\n".join(rows), "STORE_MEMORY": "%.0f" % s["memory_events_per_s"],
             "STORE_FLOOR50": "%.0f" % s["floor_p50_us"], "STORE_FLOOR99": "%.0f" % s["floor_p99_us"],
             "STORE_UNCAPPED_RATIO": "%.2f" % uncapped["vs_memory"], "STORE_GROWTH": growth}.items():
    section = section.replace(k, v)
open(doc_path, "w").write(doc[:start] + section + doc[end:])
print("docs/benchmarks.md: store figures from %s" % r["generated"])
