#!/usr/bin/env bash
# Draws a `mroce perf --timeline` CSV as one PNG with gnuplot: cwnd and in-flight (per path up to 8
# paths, summed beyond), srtt and RTO (per path, or the mean over paths), cumulative retransmissions
# by cause summed over paths, and the sender's port queue depth when the CSV has it (ring ports).
#
#   bench/dpdk/timeline_plot.sh CSV PNG
#   e.g. build/bin/mroce perf loopback --loss 1 -n 4000 --timeline /tmp/t.csv -q
#        bench/dpdk/timeline_plot.sh /tmp/t.csv /tmp/t.png
set -euo pipefail
if [ $# -ne 2 ]; then
    echo "usage: $0 CSV PNG" >&2
    exit 2
fi
csv=$1
png=$2
[ -r "$csv" ] || { echo "$0: cannot read $csv" >&2; exit 2; }
command -v gnuplot >/dev/null || { echo "$0: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 2; }
head -n 1 "$csv" | grep -q '^time_us,path,state,cwnd,in_flight,srtt_us,rto_us' ||
    { echo "$0: $csv is not a mroce perf --timeline CSV" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One line per sample, summed (mean for srtt/rto) over paths. Rows of one sample are adjacent.
# Columns: time_ms cwnd in_flight srtt rto gap probe rto_retx rnr nak spurious queue_depth
awk -F, 'NR == 1 { next }
    function flush() {
        if (n) printf "%.3f %d %d %.1f %.1f %d %d %d %d %d %d %s\n", t / 1000, cw, inf, srtt / n, rto / n,
                      g, p, r, rnr, nak, sp, (q == "" ? "NaN" : q)
    }
    $1 != t { flush(); t = $1; n = cw = inf = srtt = rto = g = p = r = rnr = nak = sp = 0 }
    { n++; cw += $4; inf += $5; srtt += $6; rto += $7; g += $9; p += $10; r += $11; rnr += $12; nak += $13
      sp += $14; q = $17 }
    END { flush() }' "$csv" >"$tmp/sum.dat"
[ -s "$tmp/sum.dat" ] || { echo "$0: $csv has no rows" >&2; exit 2; }
paths=$(awk -F, 'NR > 1 && $2 + 1 > m { m = $2 + 1 } END { print m + 0 }' "$csv")
has_queue=$(awk '$12 != "NaN" { print 1; exit }' "$tmp/sum.dat")
# A run without retransmissions still gets an axis (gnuplot refuses an empty range).
retx_range=$(awk '$6 + $7 + $8 + $9 + $10 > 0 { any = 1 } END { print any ? "[0:*]" : "[0:1]" }' "$tmp/sum.dat")
panels=$((has_queue == 1 ? 4 : 3))
# Up to 8 paths, one file per path (their rows interleave in the CSV; a line is drawn per file).
# Columns: time_ms cwnd in_flight srtt rto. Beyond 8 paths the panels show sums and means.
if [ "$paths" -le 8 ]; then
    awk -F, -v dir="$tmp" 'NR > 1 { printf "%.3f %s %s %s %s\n", $1 / 1000, $4, $5, ($6 > 0 ? $6 : "NaN"), $7 \
                                      > (dir "/path_" $2 ".dat") }' "$csv"
    last=$((paths - 1))
    window_plot="plot for [p=0:$last] file(p) using 1:2 with lines lc p + 1 title sprintf(\"cwnd %d\", p), \
for [p=0:$last] file(p) using 1:3 with lines dt 2 lc p + 1 title sprintf(\"in flight %d\", p)"
    rtt_plot="plot for [p=0:$last] file(p) using 1:4 with lines lc p + 1 title sprintf(\"srtt %d\", p), \
for [p=0:$last] file(p) using 1:5 with lines dt 2 lc p + 1 title sprintf(\"rto %d\", p)"
    scope="per path"
else
    window_plot="plot \"$tmp/sum.dat\" using 1:2 with lines title \"cwnd\", \"\" using 1:3 with lines dt 2 title \"in flight\""
    rtt_plot="plot \"$tmp/sum.dat\" using 1:4 with lines title \"srtt\", \"\" using 1:5 with lines dt 2 title \"rto\""
    scope="summed (srtt, RTO: mean) over $paths paths"
fi

{
    cat <<EOF
set terminal pngcairo size 1200,$((panels * 300)) font ",10"
set output "$png"
set multiplot layout $panels,1 title "$(basename "$csv"): $paths path(s)"
set grid
set key outside right top
set xlabel "time (ms)"
set lmargin 12
file(p) = sprintf("$tmp/path_%d.dat", p)
set title "cwnd (solid) and in flight (dashed), packets, $scope"
$window_plot
set title "srtt (solid) and RTO with backoff (dashed), µs, $scope"
set logscale y
$rtt_plot
unset logscale y
set title "retransmissions by cause, cumulative, all paths"
set yrange $retx_range
plot "$tmp/sum.dat" using 1:6 with lines lw 2 title "gap", "" using 1:7 with lines lw 2 title "probe", \
     "" using 1:8 with lines lw 2 title "rto", "" using 1:9 with lines lw 2 title "rnr", \
     "" using 1:10 with lines lw 2 title "nak", "" using 1:11 with lines lw 2 dt 2 lc rgb "black" title "spurious"
EOF
    if [ "$has_queue" = 1 ]; then
        cat <<EOF
set title "sender's port queue depth, frames (ring ports)"
set yrange [0:*]
plot "$tmp/sum.dat" using 1:12 with lines title "tx queue"
EOF
    fi
    echo "unset multiplot"
} >"$tmp/plot.gp"
gnuplot "$tmp/plot.gp"
echo "$png"
