# Sourced by the fi scripts that run more than two processes (mpi/mpi_smoke.sh star,
# bench/fi/mpi_bench.sh): N host namespaces on one bridge, one veth each, MTU 1500.
#
#   ns ${PREFIX}-h<i>  mrh<i> <=veth=> mxh<i> [bridge mbr] in ns ${PREFIX}-m
#   198.18.0.<i+1>/24, 02:00:00:00:0c:<i+1>
#
# As in ci/netns/lib.sh (the two-namespace network of the other tests): loss is dropped in the switch
# namespace on the bridge's forward path (nftables numgen, LOSS/10000 of every host's frames), GSO is
# capped at one segment so that one drop is one frame, and each host's kernel stack ignores the
# transport's UDP (an nftables ingress drop after the af_packet tap). mpirun reaches host h<i>
# through mpi/nsrsh (ip netns exec ${PREFIX}-h<i>). Needs root.

star_ns() { echo "${MROCE_NETNS_PREFIX:?}-$1"; }

# star_down: removes every namespace of the prefix (set by star_up: nothing before). Idempotent.
star_down() {
  local ns
  [ -n "${STAR_PREFIX:-}" ] || return 0
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$STAR_PREFIX-"); do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf /tmp/mroce-ompi-"$STAR_PREFIX"-*  # mpi/nsrsh's session directories
}

# star_up PREFIX N LOSS: exits 77 without root, 1 on a failed step (the caller's EXIT trap runs
# star_down).
star_up() {
  export MROCE_NETNS_PREFIX=$1
  STAR_PREFIX=$1
  local n=$2 loss=$3 i m
  [ "$(id -u)" = 0 ] || { echo "netns: needs root: skipped"; exit 77; }
  if ! [[ "$loss" =~ ^[0-9]+$ ]] || [ "$loss" -gt 10000 ]; then
    echo "netns: loss must be 0..10000 (per 10000), got '$loss'" >&2
    exit 2
  fi
  star_down
  m=$(star_ns m)
  ip netns add "$m" && ip -n "$m" link set lo up || exit 1
  ip -n "$m" link add mbr mtu 1500 type bridge stp_state 0 forward_delay 0 mcast_snooping 0 || exit 1
  ip netns exec "$m" sysctl -qw net.bridge.bridge-nf-call-iptables=0 net.bridge.bridge-nf-call-ip6tables=0 \
    net.bridge.bridge-nf-call-arptables=0 2>/dev/null || true
  for ((i = 0; i < n; i++)); do
    local ns ifc=mrh$i
    ns=$(star_ns "h$i")
    ip netns add "$ns" && ip -n "$ns" link set lo up || exit 1
    ip link add "$ifc" netns "$ns" type veth peer name "mxh$i" netns "$m" || exit 1
    ip -n "$m" link set "mxh$i" mtu 1500 master mbr up || exit 1
    ip -n "$ns" link set "$ifc" address "$(printf '02:00:00:00:0c:%02x' $((i + 1)))" mtu 1500 gso_max_segs 1 || exit 1
    ip -n "$ns" addr add "198.18.0.$((i + 1))/24" dev "$ifc" || exit 1
    ip -n "$ns" link set "$ifc" up || exit 1
    ip netns exec "$ns" nft -f - <<NFT || exit 1
table netdev mroce_stack_off {
  chain in {
    type filter hook ingress device "$ifc" priority 0;
    udp dport 4793 counter drop
  }
}
NFT
  done
  ip -n "$m" link set mbr up || exit 1
  [ "$loss" = 0 ] && return 0
  ip netns exec "$m" nft -f - <<NFT || exit 1
table bridge mroce_loss {
  chain forward_loss {
    type filter hook forward priority 0;
    iifname "mxh*" numgen random mod 10000 < $loss counter drop
  }
}
NFT
}

# star_loss LOSS: changes the loss of a network that is up.
star_loss() {
  local m
  m=$(star_ns m)
  ip netns exec "$m" nft delete table bridge mroce_loss 2>/dev/null || true
  [ "$1" = 0 ] && return 0
  ip netns exec "$m" nft -f - <<NFT
table bridge mroce_loss {
  chain forward_loss {
    type filter hook forward priority 0;
    iifname "mxh*" numgen random mod 10000 < $1 counter drop
  }
}
NFT
}
