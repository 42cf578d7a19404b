#!/usr/bin/env bash
# fi_pingpong -e msg over mroce (libmroce-fi.so) next to libfabric's own tcp provider, for
# impl/fi/README.md: memif on this host, and two network namespaces joined by veths through a bridge
# namespace (ci/netns/lib.sh, MTU 1500) at 0 % and 1 % loss (both directions). Not a test: prints the
# client's table of each run. Needs root for the namespaces.
#   bench/fi/pingpong_msg.sh BUILD_DIR [ITERATIONS]
set -uo pipefail
build=$(cd "${1:?build dir}" && pwd)
iters=${2:-200}
here=$(cd "$(dirname "$0")" && pwd)
export FI_PROVIDER_PATH=$build/lib/libfabric FI_PROVIDER='^ofi_rxm,ofi_rxd'
export MROCE_NETNS_PREFIX="fibench$$"
. "$here/../../ci/netns/lib.sh"
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; netns_down; rm -rf "$dir"' EXIT
port=$((20000 + $$ % 20000))

show() { echo "== $1"; grep -A20 '^bytes' "$2" | grep -v '^$'; }

echo "== memif, mroce (fi_pingpong -p mroce -e msg -I $iters)"
FI_MROCE_PORT="memif:server:$dir/m.sock" fi_pingpong -p mroce -e msg -I "$iters" -B "$port" >"$dir/s" 2>&1 &
for _ in $(seq 100); do [ -S "$dir/m.sock" ] && break; sleep 0.1; done
FI_MROCE_PORT="memif:client:$dir/m.sock" fi_pingpong -p mroce -e msg -I "$iters" -P "$port" 127.0.0.1 >"$dir/c" 2>&1
wait
show "memif mroce" "$dir/c"
port=$((port + 1))

netns_up 1 1500 || exit 1
for side in a b; do netns_stack_off "$side" 0; done
for loss in 0 100; do
  for side in a b; do netns_loss "$side" "$loss"; done
  ip netns exec "$NS_A" env FI_MROCE_PORT=af_packet:mra0 fi_pingpong -p mroce -e msg -I "$iters" -B "$port" \
    >"$dir/s" 2>&1 &
  sleep 1
  ip netns exec "$NS_B" env FI_MROCE_PORT=af_packet:mrb0 fi_pingpong -p mroce -e msg -I "$iters" -P "$port" \
    198.18.0.1 >"$dir/c" 2>&1
  wait
  show "netns loss $loss/10000, mroce (af_packet)" "$dir/c"
  port=$((port + 1))
  ip netns exec "$NS_A" fi_pingpong -p tcp -d mra0 -e msg -I "$iters" -B "$port" >"$dir/s" 2>&1 &
  sleep 1
  ip netns exec "$NS_B" fi_pingpong -p tcp -d mrb0 -e msg -I "$iters" -P "$port" 198.18.0.1 >"$dir/c" 2>&1
  wait
  show "netns loss $loss/10000, tcp provider" "$dir/c"
  port=$((port + 1))
done
