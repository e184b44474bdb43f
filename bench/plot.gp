set terminal pngcairo size 900,560 font "DejaVu Sans,11"
set title "alltoallv, uniform, N = 4 (2 workers x 2 ranks), loopback, 2 cores"
set xlabel "bytes per rank (S)"
set ylabel "algbw (GB/s) = S / time"
set logscale x 2
set logscale y 10
set termoption noenhanced
set xtics ("64 B" 64, "1 KiB" 1024, "16 KiB" 16384, "256 KiB" 262144, "4 MiB" 4194304, "64 MiB" 67108864)
set key left top
set grid
plot "plot.dat" using 1:4 with linespoints lw 2 title "Open MPI 4.1 TCP (btl tcp,self)", \
     "" using 1:2 with linespoints lw 2 title "a2a, plain buffers", \
     "" using 1:3 with linespoints lw 2 title "a2a, a2a_buffer_alloc buffers"
