# Sourced by the fi two-process scripts (pingpong_msg.sh, mpi/mpi_smoke.sh).

# fi_trap_cleanup MODE DIR: on any exit, stop the background jobs, remove the namespaces (MODE
# netns) and DIR. A TERM or INT (ctest's timeout) becomes an exit: bash skips the EXIT trap when a
# signal kills it.
fi_trap_cleanup() {
  trap "kill \$(jobs -p) 2>/dev/null; wait 2>/dev/null; [ '$1' = netns ] && netns_down; rm -rf '$2' \
    /tmp/mroce-ompi-\${MROCE_NETNS_PREFIX:-none}-*" EXIT
  trap 'exit 143' TERM
  trap 'exit 130' INT
}

# fi_netns_up PREFIX LOSS: namespaces PREFIX-a and PREFIX-b joined by one veth plane at MTU 1500
# through a bridge namespace (ci/netns/lib.sh; the provider derives its max_payload from the MTU);
# the namespaces' stacks ignore mroce's UDP (no ICMP answers to it); LOSS/10000 of the frames of
# each direction dropped in the bridge namespace. Exits 77 without root, 1 on a failed step; the
# caller's EXIT trap runs netns_down.
fi_netns_up() {
  export MROCE_NETNS_PREFIX=$1
  . "$(dirname "${BASH_SOURCE[0]}")/../../ci/netns/lib.sh"
  netns_need_root || exit 77
  netns_up 1 1500 || exit 1
  local side
  for side in a b; do
    netns_stack_off "$side" 0 || exit 1
    netns_loss "$side" "$2" || exit 1
  done
}
