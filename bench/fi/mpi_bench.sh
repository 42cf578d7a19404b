#!/usr/bin/env bash
# Open MPI over mroce (pml cm, mtl ofi, af_packet) next to Open MPI's TCP btl (pml ob1, btl tcp,self)
# on the same veths: two network namespaces through a bridge namespace (ci/netns/lib.sh, MTU 1500),
# one rank in each, at each loss rate (1/10000 of the frames of each direction). Prints each run's
# table (bench/fi/mpi_bench.c: op, size, time, algbw, busbw) and the ratio tcp time / mroce time per
# op and size. Not a test (fi.MpiBenchScriptRuns runs it at 4 B for its exit status); needs root.
#   bench/fi/mpi_bench.sh BUILD_DIR [MAXBYTES [LOSS...]]     (defaults: 64 MiB; 0 100 1000)
# At 10 % loss and more the sizes stop at 4 MiB: TCP moves only a few MB/s there.
set -uo pipefail
build=$(cd "${1:?build dir}" && pwd)
max=${2:-67108864}
losses=("${@:3}")
[ ${#losses[@]} -gt 0 ] || losses=(0 100 1000)
here=$(cd "$(dirname "$0")" && pwd)
fi_dir=$here/../../properties/fi
export FI_PROVIDER_PATH=$build/lib/libfabric FI_PROVIDER='^ofi_rxm,ofi_rxd'
dir=$(mktemp -d)
chmod 755 "$dir"
. "$fi_dir/netns_pair.sh"
fi_trap_cleanup netns "$dir"
command -v mpicc >/dev/null || { echo "no Open MPI"; exit 77; }
mpicc -Wall -Wextra -Werror -O2 -o "$dir/mpi_bench" "$here/mpi_bench.c" || exit 1
fi_netns_up "fibm$$" 0
# rtc_hwloc_vmhole none: see properties/fi/mpi/mpi_smoke.sh (an orted crashed in its hwloc shmem).
run=(timeout 3600 ip netns exec "$NS_A" mpirun --allow-run-as-root --host a,b -np 2 --mca rtc_hwloc_vmhole none
  --mca plm_rsh_agent "$fi_dir/mpi/nsrsh" -x MROCE_NETNS_PREFIX --mca oob_tcp_if_include 198.18.0.0/24)
fail=0
for loss in "${losses[@]}"; do
  for side in a b; do netns_loss "$side" "$loss" || exit 1; done
  m=$max
  [ "$loss" -ge 1000 ] && [ "$m" -gt 4194304 ] && m=4194304
  "${run[@]}" --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include mroce -x FI_PROVIDER_PATH -x FI_PROVIDER \
    sh -c "FI_MROCE_PORT=af_packet:\$(ls /sys/class/net | grep -vx lo | head -1) exec $dir/mpi_bench $m" \
    >"$dir/mroce" 2>"$dir/mroce.err" || { echo "mroce run failed at loss $loss"; cat "$dir/mroce.err"; fail=1; }
  "${run[@]}" --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include 198.18.0.0/24 "$dir/mpi_bench" "$m" \
    >"$dir/tcp" 2>"$dir/tcp.err" || { echo "tcp run failed at loss $loss"; cat "$dir/tcp.err"; fail=1; }
  for t in mroce tcp; do
    echo "== $t, loss $loss/10000"
    cat "$dir/$t"
  done
  echo "== tcp time / mroce time, loss $loss/10000"
  awk 'FNR == 1 {f++; next} f == 1 {m[$1 " " $2] = $3; next} ($1 " " $2) in m && m[$1 " " $2] > 0 {
         printf "%-9s %12s %8.2f\n", $1, $2, $3 / m[$1 " " $2] }' "$dir/mroce" "$dir/tcp"
done
exit $fail
