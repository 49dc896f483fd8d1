# Draws tpcc-throughput.svg from tpcc-throughput.dat: cd to this directory, then `gnuplot tpcc-throughput.gp`.
set terminal svg size 1280,800 dynamic enhanced font 'sans,11' background rgb 'white'
set output 'tpcc-throughput.svg'
set multiplot layout 2,2 title 'TPC-C: transactions/s by terminals'
set grid
set logscale x 2
set xtics (1, 4, 16, 64)
set xrange [0.71:89.60]
set logscale y 10
set format y '%.0s%c'
set xlabel 'terminals'
set ylabel 'transactions/s (log scale)'
set key outside right top vertical
set title 'ram, W=1'
plot 'tpcc-throughput.dat' index 0 using 1:2 with linespoints lw 2 pt 7 lc rgb '#d62728' title 'aup', \
     'tpcc-throughput.dat' index 1 using 1:2 with linespoints lw 2 pt 7 lc rgb '#7f7f7f' title 'sqlite', \
     'tpcc-throughput.dat' index 2 using 1:2 with linespoints lw 2 pt 7 lc rgb '#1f77b4' title 'sqlite-tuned', \
     'tpcc-throughput.dat' index 3 using 1:2 with linespoints lw 2 pt 7 lc rgb '#2ca02c' title 'sqlite-grouped'
set title 'ram, W=4'
plot 'tpcc-throughput.dat' index 4 using 1:2 with linespoints lw 2 pt 7 lc rgb '#d62728' title 'aup', \
     'tpcc-throughput.dat' index 5 using 1:2 with linespoints lw 2 pt 7 lc rgb '#7f7f7f' title 'sqlite', \
     'tpcc-throughput.dat' index 6 using 1:2 with linespoints lw 2 pt 7 lc rgb '#1f77b4' title 'sqlite-tuned', \
     'tpcc-throughput.dat' index 7 using 1:2 with linespoints lw 2 pt 7 lc rgb '#2ca02c' title 'sqlite-grouped'
set title 'disk, W=1'
plot 'tpcc-throughput.dat' index 8 using 1:2 with linespoints lw 2 pt 7 lc rgb '#d62728' title 'aup', \
     'tpcc-throughput.dat' index 9 using 1:2 with linespoints lw 2 pt 7 lc rgb '#7f7f7f' title 'sqlite', \
     'tpcc-throughput.dat' index 10 using 1:2 with linespoints lw 2 pt 7 lc rgb '#1f77b4' title 'sqlite-tuned', \
     'tpcc-throughput.dat' index 11 using 1:2 with linespoints lw 2 pt 7 lc rgb '#2ca02c' title 'sqlite-grouped'
set title 'disk, W=4'
plot 'tpcc-throughput.dat' index 12 using 1:2 with linespoints lw 2 pt 7 lc rgb '#d62728' title 'aup', \
     'tpcc-throughput.dat' index 13 using 1:2 with linespoints lw 2 pt 7 lc rgb '#7f7f7f' title 'sqlite', \
     'tpcc-throughput.dat' index 14 using 1:2 with linespoints lw 2 pt 7 lc rgb '#1f77b4' title 'sqlite-tuned', \
     'tpcc-throughput.dat' index 15 using 1:2 with linespoints lw 2 pt 7 lc rgb '#2ca02c' title 'sqlite-grouped'
unset multiplot
