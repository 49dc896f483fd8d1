# Draws tpcc-latency.svg from tpcc-latency.dat: cd to this directory, then `gnuplot tpcc-latency.gp`.
set terminal svg size 1280,400 dynamic enhanced font 'sans,11' background rgb 'white'
set output 'tpcc-latency.svg'
set multiplot layout 1,2 title 'TPC-C: latency of all transactions (CDF)'
set grid
set xrange [0.001:10000]
set logscale x 10
set xlabel 'latency, ms (log scale)'
set ylabel 'fraction of transactions at or below'
set yrange [0:1]
set key outside right top vertical
set title 'ram, W=1'
plot 'tpcc-latency.dat' index 0 using 1:2 with lines lw 2 dt 1 lc rgb '#d62728' title 'aup 16', \
     'tpcc-latency.dat' index 1 using 1:2 with lines lw 2 dt 2 lc rgb '#d62728' title 'aup 64', \
     'tpcc-latency.dat' index 2 using 1:2 with lines lw 2 dt 1 lc rgb '#7f7f7f' title 'sqlite 1', \
     'tpcc-latency.dat' index 3 using 1:2 with lines lw 2 dt 2 lc rgb '#7f7f7f' title 'sqlite 4', \
     'tpcc-latency.dat' index 4 using 1:2 with lines lw 2 dt 1 lc rgb '#1f77b4' title 'sqlite-tuned 1', \
     'tpcc-latency.dat' index 5 using 1:2 with lines lw 2 dt 2 lc rgb '#1f77b4' title 'sqlite-tuned 4', \
     'tpcc-latency.dat' index 6 using 1:2 with lines lw 2 dt 1 lc rgb '#2ca02c' title 'sqlite-grouped 16', \
     'tpcc-latency.dat' index 7 using 1:2 with lines lw 2 dt 2 lc rgb '#2ca02c' title 'sqlite-grouped 64'
set title 'disk, W=1'
plot 'tpcc-latency.dat' index 8 using 1:2 with lines lw 2 dt 1 lc rgb '#d62728' title 'aup 16', \
     'tpcc-latency.dat' index 9 using 1:2 with lines lw 2 dt 2 lc rgb '#d62728' title 'aup 64', \
     'tpcc-latency.dat' index 10 using 1:2 with lines lw 2 dt 1 lc rgb '#7f7f7f' title 'sqlite 1', \
     'tpcc-latency.dat' index 11 using 1:2 with lines lw 2 dt 2 lc rgb '#7f7f7f' title 'sqlite 4', \
     'tpcc-latency.dat' index 12 using 1:2 with lines lw 2 dt 1 lc rgb '#1f77b4' title 'sqlite-tuned 1', \
     'tpcc-latency.dat' index 13 using 1:2 with lines lw 2 dt 2 lc rgb '#1f77b4' title 'sqlite-tuned 4', \
     'tpcc-latency.dat' index 14 using 1:2 with lines lw 2 dt 1 lc rgb '#2ca02c' title 'sqlite-grouped 16', \
     'tpcc-latency.dat' index 15 using 1:2 with lines lw 2 dt 2 lc rgb '#2ca02c' title 'sqlite-grouped 64'
unset multiplot
