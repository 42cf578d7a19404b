#!/usr/bin/env bash
# The two-namespace test network (see lib.sh for the layout).
#   ci/netns/netns.sh up [PLANES] [MTU]    create (default 2 planes, MTU 9000); recreates if present
#   ci/netns/netns.sh loss a|b N|off       nftables random loss of N/10000 of frames from a or b (in the switch)
#   ci/netns/netns.sh plane P down|up      take plane P down or up (both veth ends)
#   ci/netns/netns.sh down                 remove everything (idempotent)
#   ci/netns/netns.sh status
# Environment: MROCE_NETNS_PREFIX (default mroce) names the namespaces <prefix>-a, <prefix>-b, <prefix>-m.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

cmd=${1:-}
shift || true
netns_need_root || exit $?
case "$cmd" in
  up) netns_up "${1:-2}" "${2:-9000}" ;;
  loss) netns_loss "${1:?side a|b}" "${2:?N per 10000 or off}" ;;
  plane) netns_plane "${1:?plane}" "${2:?down|up}" ;;
  down) netns_down ;;
  status) netns_status ;;
  *) sed -n '2,9p' "$0" >&2; exit 2 ;;
esac
