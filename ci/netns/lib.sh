# Shared functions for the two-namespace test network (sourced by netns.sh, smoke.sh and the
# benchmark scripts). Two host namespaces, A and B, and between them a switch namespace M with one
# bridge per plane (the "switch" of that plane):
#
#   ns ${PREFIX}-a  mra<p> <=veth=> mxa<p> [bridge mbr<p>] mxb<p> <=veth=> mrb<p>  ns ${PREFIX}-b
#   198.18.<p>.1/24                     ns ${PREFIX}-m                     198.18.<p>.2/24
#   fd00:6d72:<p>::1/64                 (no addresses)                     fd00:6d72:<p>::2/64
#   02:00:00:00:0a:<p>                                                     02:00:00:00:0b:<p>
#
# Random loss (netns_loss) is applied in M, on the bridges' forward path, like a lossy switch: the
# senders' stacks never see the drop. (Dropping on a sender's own egress hook does not work for
# AF_PACKET senders: the kernel stops walking the TX ring at a dropped frame, so the frames behind
# it wait for the next send call and the "loss" turns into tens of milliseconds of delay.)
# Addresses exist only inside the namespaces; nothing is configured in the root namespace, and no
# traffic leaves the three namespaces. Needs root (ip netns, nft).

MROCE_NETNS_PREFIX=${MROCE_NETNS_PREFIX:-mroce}
NS_A="${MROCE_NETNS_PREFIX}-a"
NS_B="${MROCE_NETNS_PREFIX}-b"
netns_switch() { echo "${MROCE_NETNS_PREFIX}-m"; }

netns_need_root() {
  if [ "$(id -u)" != 0 ]; then
    echo "netns: needs root (ip netns / veth / nftables); not root, nothing done" >&2
    return 77
  fi
}

netns_exists() { ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$1"; }

netns_if() {  # side plane -> interface name
  echo "mr$1$2"
}
netns_ip4() { echo "198.18.$2.$([ "$1" = a ] && echo 1 || echo 2)"; }
netns_ip6() { echo "fd00:6d72:$2::$([ "$1" = a ] && echo 1 || echo 2)"; }
netns_mac() { printf '02:00:00:00:0%s:%02x\n' "$1" "$2"; }
netns_ns() { [ "$1" = a ] && echo "$NS_A" || echo "$NS_B"; }

# netns_up PLANES [MTU]: creates both namespaces and the veth pairs (recreates them when present).
netns_up() {
  local planes=${1:-2} mtu=${2:-9000} p
  netns_need_root || return $?
  netns_down
  local ns_m
  ns_m=$(netns_switch)
  ip netns add "$NS_A"
  ip netns add "$NS_B"
  ip netns add "$ns_m"
  for ns in "$NS_A" "$NS_B" "$ns_m"; do
    ip -n "$ns" link set lo up
    # No DAD: addresses usable at once; no router solicitations and such on the test links.
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
  done
  for ((p = 0; p < planes; p++)); do
    local ia ib
    ia=$(netns_if a "$p")
    ib=$(netns_if b "$p")
    ip link add "$ia" netns "$NS_A" type veth peer name "mxa$p" netns "$ns_m"
    ip link add "$ib" netns "$NS_B" type veth peer name "mxb$p" netns "$ns_m"
    ip -n "$ns_m" link add "mbr$p" mtu "$mtu" type bridge stp_state 0 forward_delay 0 mcast_snooping 0
    for x in "mxa$p" "mxb$p"; do
      ip -n "$ns_m" link set "$x" mtu "$mtu" master "mbr$p" up
    done
    ip -n "$ns_m" link set "mbr$p" up
    # A switch forwards what it gets: bridged frames must not go through iptables (br_netfilter,
    # where loaded, drops frames with broken IPv4 headers, which the conformance tests send on
    # purpose). The keys exist only while br_netfilter is loaded.
    ip netns exec "$ns_m" sysctl -qw net.bridge.bridge-nf-call-iptables=0 net.bridge.bridge-nf-call-ip6tables=0 \
      net.bridge.bridge-nf-call-arptables=0 2>/dev/null || true
    for side in a b; do
      local ns ifc
      ns=$(netns_ns $side)
      ifc=$(netns_if $side "$p")
      ip -n "$ns" link set "$ifc" address "$(netns_mac $side "$p")" mtu "$mtu"
      ip -n "$ns" addr add "$(netns_ip4 $side "$p")/24" dev "$ifc"
      ip -n "$ns" addr add "$(netns_ip6 $side "$p")/64" dev "$ifc" nodad
      ip -n "$ns" link set "$ifc" up
    done
  done
}

# netns_down: removes both namespaces (their veths go with them). Idempotent.
netns_down() {
  local ns
  for ns in "$NS_A" "$NS_B" "$(netns_switch)"; do
    if netns_exists "$ns"; then
      ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null || true
      ip netns del "$ns" 2>/dev/null || true
    fi
  done
}

# netns_planes: number of planes currently set up.
netns_planes() { ip -n "$NS_A" -o link show 2>/dev/null | grep -c ' mra[0-9]*@' || true; }

# netns_loss SIDE N|off: drops N/10000 of the frames leaving namespace SIDE (a|b) on every plane,
# in the switch namespace: nftables `numgen random mod 10000 < N drop` on the bridges' forward hook
# for frames that entered from SIDE's veths. Every kind of sender sees the same loss (kernel TCP,
# af_packet, af_xdp). GSO is capped to one segment on SIDE so that one drop is one frame.
netns_loss() {
  local side=$1 n=$2 ns ns_m p
  ns=$(netns_ns "$side")
  ns_m=$(netns_switch)
  ip netns exec "$ns_m" nft delete table bridge "mroce_loss_$side" 2>/dev/null || true
  [ "$n" = off ] || [ "$n" = 0 ] && return 0
  if ! [[ "$n" =~ ^[0-9]+$ ]] || [ "$n" -gt 10000 ]; then
    echo "netns: loss must be 0..10000 (per 10000) or off, got '$n'" >&2
    return 2
  fi
  for ((p = 0; p < $(netns_planes); p++)); do
    ip -n "$ns" link set "$(netns_if "$side" "$p")" gso_max_segs 1 2>/dev/null || true
  done
  ip netns exec "$ns_m" nft -f - <<NFT
table bridge mroce_loss_$side {
  chain forward_loss {
    type filter hook forward priority 0;
    iifname "mx$side*" numgen random mod 10000 < $n counter drop
  }
}
NFT
}

# netns_plane PLANE down|up: takes a plane's veth pair down (both ends) or up again.
netns_plane() {
  local p=$1 state=$2
  [ "$state" = down ] || [ "$state" = up ] || { echo "netns: state must be down or up" >&2; return 2; }
  ip -n "$NS_A" link set "$(netns_if a "$p")" "$state"
  ip -n "$NS_B" link set "$(netns_if b "$p")" "$state"
}

netns_status() {
  local ns
  for ns in "$NS_A" "$NS_B" "$(netns_switch)"; do
    if netns_exists "$ns"; then
      echo "== $ns"
      ip -n "$ns" -br addr show
      ip netns exec "$ns" nft list tables 2>/dev/null
    else
      echo "== $ns (absent)"
    fi
  done
}

# netns_stack_off SIDE PLANE [PORT]: the namespace's kernel stack no longer processes the transport's
# UDP frames (destination port PORT, default 4793) arriving on that plane's veth. A DPDK port on the
# veth (af_packet) gets its copy of each frame before the stack; without this the stack also took
# every frame through IP input and a route lookup to answer it with an ICMP port unreachable (rate
# limited, but looked up every time), on the CPU of the sender's af_packet send. An nftables netdev
# ingress drop comes after the af_packet tap and before IP. (A NIC given to DPDK has no kernel stack.)
netns_stack_off() {
  local side=$1 p=$2 port=${3:-4793} ns ifc
  ns=$(netns_ns "$side")
  ifc=$(netns_if "$side" "$p")
  ip netns exec "$ns" nft -f - <<NFT
table netdev mroce_stack_off_$p {
  chain in {
    type filter hook ingress device "$ifc" priority 0;
    udp dport $port counter drop
  }
}
NFT
}
