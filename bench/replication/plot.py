#!/usr/bin/env python3
"""Failover figures from a failover soak's report (tests/cluster/failover_soak.py
--report FILE --timeline): the failover times as a Markdown table, and a
plot of transfers/s and p99 over time across the failover whose time is the
median, as gnuplot data, script and SVG (gnuplot-nox).

usage: plot.py REPORT.json OUT_DIR [--name replication-failover] [--window 10]
Writes OUT_DIR/NAME.md, NAME.dat, NAME.gp and NAME.svg (the SVG only when
gnuplot is installed; it says so otherwise).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys


def pick(report):
    """The failover whose time is the median (the lower one of an even count)."""
    at = sorted(report["failover_at"], key=lambda f: f[2] - f[1])
    if not at:
        sys.exit("plot.py: the report holds no failover (run the soak with --timeline and --failovers)")
    return at[(len(at) - 1) // 2]


def markdown(report, name, chosen, window):
    f = sorted(report["failover_s"])
    q = lambda p: f[min(len(f) - 1, int(p * len(f)))]
    kinds = sorted(set(a for a, _, _ in report["failover_at"]))
    lines = [
        f"# Failover time ({', '.join(kinds)} of the primary)", "",
        f"Three nodes, `--sync-replicas {report['sync_replicas']}`, `--lease-ttl {report['ttl']}`, "
        f"a three-member etcd, {report['clients']} clients; from the signal to the first transfer a new "
        "primary answers, as a client sees it.", "",
        "| failovers | median s | p90 s | max s | min s | acknowledged | lost | failures |",
        "|---|---|---|---|---|---|---|---|",
        f"| {len(f)} | {statistics.median(f):.2f} | {q(0.9):.2f} | {max(f):.2f} | {min(f):.2f} | "
        f"{report['acknowledged']} | {report.get('lost_acknowledged', '?')} | {len(report['failures'])} |", "",
        f"Plot: `{name}.svg`, {window} s around the failover of median time "
        f"({chosen[0]} at {chosen[1]:.1f} s, answered again at {chosen[2]:.1f} s); "
        f"buckets of {report['timeline']['bucket_s']} s.", "",
    ]
    return "\n".join(lines)


def write_plot(report, out, name, chosen, window):
    lo = max(0.0, chosen[1] - window / 4)
    hi = lo + window
    rows = [r for r in report["timeline"]["rows"] if lo <= r[0] <= hi]
    with open(os.path.join(out, name + ".dat"), "w") as f:
        f.write("# seconds-from-kill transfers/s p50-ms p99-ms (- where none was answered)\n")
        for t, rate, p50, p99 in rows:
            f.write(f"{t - chosen[1]:.3f} {rate} {'-' if p50 is None else p50} {'-' if p99 is None else p99}\n")
    gp = f"""# Draws {name}.svg from {name}.dat: cd to this directory, then `gnuplot {name}.gp`.
set terminal svg size 1100,700 dynamic enhanced font 'sans,11' background rgb 'white'
set output '{name}.svg'
set datafile missing '-'
set multiplot layout 2,1 title 'A failover: {chosen[0]} of the primary at 0 s, first transfer answered by the new primary at {chosen[2] - chosen[1]:.2f} s (--sync-replicas {report['sync_replicas']}, TTL {report['ttl']} s)'
set grid
set xrange [{lo - chosen[1]:.2f}:{hi - chosen[1]:.2f}]
set arrow 1 from 0, graph 0 to 0, graph 1 nohead lc rgb '#d62728' dt 2
set arrow 2 from {chosen[2] - chosen[1]:.3f}, graph 0 to {chosen[2] - chosen[1]:.3f}, graph 1 nohead lc rgb '#2ca02c' dt 2
set xlabel 'seconds from the kill'
set ylabel 'transfers/s'
set yrange [0:*]
plot '{name}.dat' using 1:2 with steps lw 2 lc rgb '#1f77b4' title 'transfers answered/s ({report['timeline']['bucket_s']} s buckets)'
set ylabel 'ms (log scale)'
set logscale y 10
set yrange [*:*]
plot '{name}.dat' using 1:4 with points pt 7 ps 0.5 lc rgb '#d62728' title 'p99, first sent to answered', \\
     '{name}.dat' using 1:3 with points pt 7 ps 0.5 lc rgb '#7f7f7f' title 'p50'
unset multiplot
"""
    with open(os.path.join(out, name + ".gp"), "w") as f:
        f.write(gp)
    if not shutil.which("gnuplot"):
        print(f"plot.py: gnuplot is not installed (Debian: gnuplot-nox); {name}.svg not drawn")
        return
    subprocess.run(["gnuplot", name + ".gp"], cwd=out, check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report")
    ap.add_argument("out")
    ap.add_argument("--name", default="replication-failover")
    ap.add_argument("--window", type=float, default=10)
    o = ap.parse_args()
    with open(o.report) as f:
        report = json.load(f)
    if "timeline" not in report:
        sys.exit("plot.py: the report has no timeline (run the soak with --timeline)")
    chosen = pick(report)
    md = markdown(report, o.name, chosen, o.window)
    with open(os.path.join(o.out, o.name + ".md"), "w") as f:
        f.write(md)
    write_plot(report, o.out, o.name, chosen, o.window)
    print(md)


if __name__ == "__main__":
    main()
