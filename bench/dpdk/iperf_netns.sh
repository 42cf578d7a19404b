#!/usr/bin/env bash
# TCP (iperf3) over one veth plane of the two-namespace network, at 0 %, 1 % and 10 % random loss
# (nftables numgen in the switch namespace on frames from the sender's side: data frames are lost, ACKs are not). The
# reference point for what the kernel's TCP gets from the same links the DPDK ports use.
#   bench/dpdk/iperf_netns.sh [SECONDS] [MTU]        (root; exits 77 when not root)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../ci/netns/lib.sh"
secs=${1:-5}
mtu=${2:-9000}
if [ "$(id -u)" != 0 ]; then echo "SKIP: needs root (network namespaces)"; exit 77; fi
command -v iperf3 >/dev/null || { echo "iperf3 not installed"; exit 1; }
MROCE_NETNS_PREFIX="mroce-iperf$$"
NS_A="${MROCE_NETNS_PREFIX}-a"
NS_B="${MROCE_NETNS_PREFIX}-b"
dir=$(mktemp -d)
cleanup() { netns_down; rm -rf "$dir"; }
trap cleanup EXIT INT TERM
netns_up 1 "$mtu"
server=$(netns_ip4 b 0)
ip netns exec "$NS_B" iperf3 -s -B "$server" -D -I "$dir/server.pid" >/dev/null
sleep 0.3
printf '%-8s %10s %10s %8s %12s\n' "loss" "send Gb/s" "recv Gb/s" "retrans" "nft dropped"
for n in 0 100 1000; do  # per 10000: 0 %, 1 %, 10 %
  netns_loss a "$n"
  ip netns exec "$NS_A" timeout $((secs + 20)) iperf3 -c "$server" -t "$secs" -J >"$dir/c.json" 2>&1 || true
  dropped=$({ ip netns exec "$NS_A" nft list table netdev mroce_loss 2>/dev/null || true; } |
    { grep -o 'packets [0-9]*' || true; } | awk '{s += $2} END {print s + 0}')
  python3 - "$dir/c.json" "$n" "$dropped" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    e = d["end"]
    s, r = e["sum_sent"], e["sum_received"]
    # iperf3's retransmit count (TCP_INFO) is unreliable under heavy loss; the nftables counter
    # tells what was really dropped.
    print(f"{int(sys.argv[2]) / 100:6.1f} % {s['bits_per_second'] / 1e9:10.3f} {r['bits_per_second'] / 1e9:10.3f} "
          f"{s.get('retransmits', 0):8d} {int(sys.argv[3]):12d}")
except Exception as ex:
    print(f"{int(sys.argv[2]) / 100:6.1f} %  iperf3 failed: {ex}")
PY
done
kill "$(cat "$dir/server.pid")" 2>/dev/null || true
