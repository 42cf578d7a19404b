#!/usr/bin/env bash
# fi.MpiSmokeMemif / fi.MpiSmokeNetns: Open MPI 4.1.4 over the mroce provider (pml cm, mtl ofi,
# mtl_ofi_provider_include mroce), 2 ranks running mpi_smoke.c (every rank checks every payload and
# result):
#   memif        both ranks on this host, rank 0 the memif server (no root)
#   netns LOSS   one rank per network namespace (ci/netns/lib.sh, af_packet on the namespace's veth,
#                MTU 1500), mpirun in namespace a starting its daemons through nsrsh (ip netns exec);
#                LOSS/10000 of the frames of each direction dropped in the bridge namespace; root
#                (exit 77 otherwise)
#   star LOSS    4 ranks, one per namespace on one bridge (../netns_star.sh), otherwise as netns
# Passes when mpirun exits 0 and every rank prints "rank R of N ok". mpirun gets 240 s, less than
# ctest's 300, so that a hang still ends in this script's cleanup (the namespaces go).
#   mpi_smoke.sh memif|netns|star [LOSS]      (env: FI_PROVIDER_PATH, FI_PROVIDER)
set -uo pipefail
mode=${1:?memif|netns|star}
loss=${2:-0}
ranks=2
[ "$mode" = star ] && ranks=4
here=$(cd "$(dirname "$0")" && pwd)
command -v mpicc >/dev/null && command -v mpirun >/dev/null || { echo "no Open MPI: skipped"; exit 77; }
dir=$(mktemp -d)
chmod 755 "$dir"

if [ "$mode" = star ]; then
  . "$here/../netns_star.sh"
  trap 'star_down; rm -rf "$dir"' EXIT
  trap 'exit 143' TERM INT
else
  . "$here/../netns_pair.sh"
  fi_trap_cleanup "$mode" "$dir"
fi

mpicc -Wall -Wextra -Werror -O2 -o "$dir/mpi_smoke" "$here/mpi_smoke.c" || exit 1
# rtc_hwloc_vmhole none: an orted mapped its hwloc topology shmem into the "biggest" VM hole, which
# was its own stack once, and crashed in hwloc_shmem_topology_write (seen in CI); nothing needs it.
mca=(--mca rtc_hwloc_vmhole none --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include mroce
  -x FI_PROVIDER_PATH -x FI_PROVIDER)
log=$dir/log

if [ "$mode" = memif ]; then
  # Rank 1's memif client port opens only once rank 0's server socket exists.
  sock=$dir/m.sock
  timeout 240 mpirun --allow-run-as-root --oversubscribe -np 2 "${mca[@]}" sh -c "
    if [ \"\$OMPI_COMM_WORLD_RANK\" = 0 ]; then export FI_MROCE_PORT=memif:server:$sock
    else for i in \$(seq 300); do [ -S $sock ] && break; sleep 0.1; done; export FI_MROCE_PORT=memif:client:$sock; fi
    exec $dir/mpi_smoke" >"$log" 2>&1
  rc=$?
elif [ "$mode" = star ]; then
  star_up "fimpi$$" 4 "$loss"
  timeout 240 ip netns exec "$(star_ns h0)" mpirun --allow-run-as-root --host h0,h1,h2,h3 -np 4 \
    --mca plm_rsh_agent "$here/nsrsh" -x MROCE_NETNS_PREFIX --mca oob_tcp_if_include 198.18.0.0/24 "${mca[@]}" \
    sh -c "export FI_MROCE_PORT=af_packet:\$(ls /sys/class/net | grep -vx lo | head -1)
      echo \"rank \$OMPI_COMM_WORLD_RANK: \$FI_MROCE_PORT\"; exec $dir/mpi_smoke" >"$log" 2>&1
  rc=$?
else
  fi_netns_up "fimpi$$" "$loss"
  # Each rank's port is the one veth of its namespace (ip netns exec remounts /sys for it).
  timeout 240 ip netns exec "$NS_A" mpirun --allow-run-as-root --host a,b -np 2 \
    --mca plm_rsh_agent "$here/nsrsh" -x MROCE_NETNS_PREFIX --mca oob_tcp_if_include 198.18.0.0/24 "${mca[@]}" \
    sh -c "export FI_MROCE_PORT=af_packet:\$(ls /sys/class/net | grep -vx lo | head -1)
      echo \"rank \$OMPI_COMM_WORLD_RANK: \$FI_MROCE_PORT\"; exec $dir/mpi_smoke" >"$log" 2>&1
  rc=$?
fi
cat "$log"
ok=1
[ "$rc" -eq 0 ] || { echo "mpirun exit $rc"; ok=0; }
for ((r = 0; r < ranks; r++)); do
  grep -q "mpi_smoke: rank $r of $ranks ok" "$log" || { echo "rank $r did not finish"; ok=0; }
done
if [ "$mode" = netns ]; then  # one rank in each namespace
  for v in mra0 mrb0; do grep -q "^rank [01]: af_packet:$v\$" "$log" || { echo "no rank on $v"; ok=0; }; done
elif [ "$mode" = star ]; then
  for v in mrh0 mrh1 mrh2 mrh3; do grep -q "^rank [0-3]: af_packet:$v\$" "$log" || { echo "no rank on $v"; ok=0; }; done
fi
[ "$ok" = 1 ] && echo "ok - mpi_smoke over mroce ($mode $loss)" || echo "FAIL - mpi_smoke over mroce ($mode $loss)"
[ "$ok" = 1 ]
