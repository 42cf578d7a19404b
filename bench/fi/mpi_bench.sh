#!/usr/bin/env bash
# Open MPI over mroce (pml cm, mtl ofi, af_packet) next to Open MPI's TCP btl (pml ob1, btl tcp,self)
# on the same veths: RANKS network namespaces (default 2, up to 4) on one bridge in a switch namespace
# (properties/fi/netns_star.sh, MTU 1500), one rank in each, at each loss rate (1/10000 of every
# host's frames, dropped in the bridge). Prints each run's table (bench/fi/mpi_bench.c: op, size,
# time, algbw, busbw), the ratio tcp time / mroce time per op and size, and for the collectives the
# busbw kept at each loss: busbw(loss) / busbw(0) per transport (issue #18's aim: mroce at 1 % keeps
# 0.9). Not a test (fi.MpiBenchScriptRuns runs it at 4 B for its exit status); needs root.
#   [RANKS=2..4] bench/fi/mpi_bench.sh BUILD_DIR [MAXBYTES [LOSS...]]   (defaults: 64 MiB; 0 100 1000)
# At 10 % loss and more the sizes stop at 4 MiB: TCP moves only a few MB/s there.
set -uo pipefail
build=$(cd "${1:?build dir}" && pwd)
max=${2:-67108864}
losses=("${@:3}")
[ ${#losses[@]} -gt 0 ] || losses=(0 100 1000)
ranks=${RANKS:-2}
[[ "$ranks" =~ ^[2-4]$ ]] || { echo "mpi_bench.sh: RANKS must be 2, 3 or 4, got '$ranks'" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
fi_dir=$here/../../properties/fi
export FI_PROVIDER_PATH=$build/lib/libfabric FI_PROVIDER='^ofi_rxm,ofi_rxd'
dir=$(mktemp -d)
chmod 755 "$dir"
. "$fi_dir/netns_star.sh"
trap 'star_down; rm -rf "$dir"' EXIT
trap 'exit 143' TERM INT
command -v mpicc >/dev/null || { echo "no Open MPI"; exit 77; }
mpicc -Wall -Wextra -Werror -O2 -o "$dir/mpi_bench" "$here/mpi_bench.c" || exit 1
star_up "fibm$$" "$ranks" 0
hosts=$(seq -s, -f 'h%g' 0 $((ranks - 1)))
# rtc_hwloc_vmhole none: see properties/fi/mpi/mpi_smoke.sh (an orted crashed in its hwloc shmem).
run=(timeout 3600 ip netns exec "$(star_ns h0)" mpirun --allow-run-as-root --host "$hosts" -np "$ranks"
  --mca rtc_hwloc_vmhole none --mca plm_rsh_agent "$fi_dir/mpi/nsrsh" -x MROCE_NETNS_PREFIX
  --mca oob_tcp_if_include 198.18.0.0/24)
fail=0
for loss in "${losses[@]}"; do
  star_loss "$loss" || exit 1
  m=$max
  [ "$loss" -ge 1000 ] && [ "$m" -gt 4194304 ] && m=4194304
  "${run[@]}" --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include mroce -x FI_PROVIDER_PATH -x FI_PROVIDER \
    sh -c "FI_MROCE_PORT=af_packet:\$(ls /sys/class/net | grep -vx lo | head -1) exec $dir/mpi_bench $m" \
    >"$dir/mroce.$loss" 2>"$dir/mroce.err" || { echo "mroce run failed at loss $loss"; cat "$dir/mroce.err"; fail=1; }
  "${run[@]}" --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include 198.18.0.0/24 "$dir/mpi_bench" "$m" \
    >"$dir/tcp.$loss" 2>"$dir/tcp.err" || { echo "tcp run failed at loss $loss"; cat "$dir/tcp.err"; fail=1; }
  for t in mroce tcp; do
    echo "== $t, $ranks ranks, loss $loss/10000"
    cat "$dir/$t.$loss"
  done
  # The tables below number their inputs by file: a failed run's empty file would shift them.
  for t in mroce tcp; do [ -s "$dir/$t.$loss" ] || { echo "no $t table at loss $loss"; fail=1; continue 2; }; done
  echo "== tcp time / mroce time, $ranks ranks, loss $loss/10000"
  awk 'FNR == 1 {f++; next} f == 1 {m[$1 " " $2] = $3; next} ($1 " " $2) in m && m[$1 " " $2] > 0 {
         printf "%-9s %12s %8.2f\n", $1, $2, $3 / m[$1 " " $2] }' "$dir/mroce.$loss" "$dir/tcp.$loss"
done
# busbw kept: each collective row's busbw over the same transport's busbw at loss 0.
if [ -f "$dir/mroce.0" ] && [ ${#losses[@]} -gt 1 ]; then
  for loss in "${losses[@]}"; do
    [ "$loss" = 0 ] && continue
    for f in mroce.0 tcp.0 "mroce.$loss" "tcp.$loss"; do [ -s "$dir/$f" ] || continue 2; done
    echo "== busbw at loss $loss/10000 / busbw at loss 0, $ranks ranks (mroce, tcp)"
    awk 'FNR == 1 {f++; next} $1 != "allreduce" && $1 != "alltoall" {next}
         {b[f "|" $1 " " $2] = $5; if (f == 1) {op[++n] = $1; size[n] = $2}}
         function kept(num, den) { return (num in b) && (den in b) && b[den] > 0 ? b[num] / b[den] : 0 }
         END {for (i = 1; i <= n; i++) {k = op[i] " " size[i]; if (!(("3|" k) in b)) continue
                printf "%-9s %12s %8.2f %8.2f\n", op[i], size[i], kept("3|" k, "1|" k), kept("4|" k, "2|" k)}}' \
      "$dir/mroce.0" "$dir/tcp.0" "$dir/mroce.$loss" "$dir/tcp.$loss"
  done
fi
exit $fail
