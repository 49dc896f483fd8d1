# Draws replication-failover.svg from replication-failover.dat: cd to this directory, then `gnuplot replication-failover.gp`.
set terminal svg size 1100,700 dynamic enhanced font 'sans,11' background rgb 'white'
set output 'replication-failover.svg'
set datafile missing '-'
set multiplot layout 2,1 title 'A failover: kill of the primary at 0 s, first transfer answered by the new primary at 2.49 s (--sync-replicas 1, TTL 2 s)'
set grid
set xrange [-2.50:7.50]
set arrow 1 from 0, graph 0 to 0, graph 1 nohead lc rgb '#d62728' dt 2
set arrow 2 from 2.492, graph 0 to 2.492, graph 1 nohead lc rgb '#2ca02c' dt 2
set xlabel 'seconds from the kill'
set ylabel 'transfers/s'
set yrange [0:*]
plot 'replication-failover.dat' using 1:2 with steps lw 2 lc rgb '#1f77b4' title 'transfers answered/s (0.25 s buckets)'
set ylabel 'ms (log scale)'
set logscale y 10
set yrange [*:*]
plot 'replication-failover.dat' using 1:4 with points pt 7 ps 0.5 lc rgb '#d62728' title 'p99, first sent to answered', \
     'replication-failover.dat' using 1:3 with points pt 7 ps 0.5 lc rgb '#7f7f7f' title 'p50'
unset multiplot
