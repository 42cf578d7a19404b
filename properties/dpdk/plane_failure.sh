#!/usr/bin/env bash
# Plane failure under a running transfer, between two namespaces joined by P veth planes:
# `mroce perf server` in namespace B, `mroce perf client` in namespace A, both engines on
# net_af_packet over every plane. Midway the busiest plane is taken down (`ip link set ... down`, both
# ends). Passes when the transfer completes with every byte verified by the server, no error
# completion reached either application, the sender re-pathed (traffic moved off the dead plane)
# and the surviving planes carried frames after the failure. With --loss N (per 10000) nftables
# also drops N/10000 of every frame leaving either namespace.
#   plane_failure.sh PATH/TO/mroce [--planes P] [--loss N] [--iters N]
# Exits 0 pass, 1 fail, 77 skipped (not root, or mroce lacks `perf`), with the reason.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../ci/netns/lib.sh"

mroce=${1:?usage: plane_failure.sh PATH/TO/mroce [--planes P] [--loss N] [--iters N]}
shift
# 24000 x 64 KiB is 1.5 GB: at the ~8 Gb/s af_packet reaches here the transfer lasts well over a
# second, so the plane goes down with most of it still to come (6000 finished in 0.4 s, before the
# 100 ms poll below noticed the traffic, and the test raced).
planes=4 loss=0 iters=24000 size=65536 payload=8192
while [ $# -gt 0 ]; do
  case "$1" in
    --planes) planes=$2; shift 2 ;;
    --loss) loss=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    *) echo "plane_failure: unknown option $1" >&2; exit 2 ;;
  esac
done
if [ "$(id -u)" != 0 ]; then
  echo "SKIP: needs root to create network namespaces and veth pairs"
  exit 77
fi
if ! "$mroce" perf --help >/dev/null 2>&1; then
  echo "SKIP: $mroce has no 'perf' subcommand (not linked in this build)"
  exit 77
fi
command -v jq >/dev/null || { echo "SKIP: jq not installed"; exit 77; }

MROCE_NETNS_PREFIX="mroce-pf$$"
NS_A="${MROCE_NETNS_PREFIX}-a"
NS_B="${MROCE_NETNS_PREFIX}-b"
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  netns_down
  rm -rf "$work"
}
trap cleanup EXIT INT TERM
netns_up "$planes" 9000
if [ "$loss" != 0 ]; then netns_loss a "$loss"; netns_loss b "$loss"; fi

args() {  # side -> addressing options for every plane
  local side=$1 other p out=()
  other=$([ "$side" = a ] && echo b || echo a)
  for ((p = 0; p < planes; p++)); do
    out+=(--port "af_packet:$(netns_if "$side" "$p")")
  done
  # The engine has one address (plane 0's); af_packet ports are promiscuous.
  out+=(--mac "$(netns_mac "$side" 0)" --peer-mac "$(netns_mac "$other" 0)"
        --ip "$(netns_ip4 "$side" 0)" --peer-ip "$(netns_ip4 "$other" 0)")
  echo "${out[@]}"
}

ip netns exec "$NS_B" "$mroce" --json perf server $(args b) --op mixed -s $size -m $payload --timeout 90 -q ${PF_EXTRA:-} \
  --file-prefix "pf-b-$$" --lcores 0@0 >"$work/server.out" 2>"$work/server.err" &
pids+=($!)
sleep 1
ip netns exec "$NS_A" "$mroce" --json perf client $(args a) --op mixed -s $size -m $payload -n "$iters" -t "${PF_DEPTH:-64}" --timeout 80 -q ${PF_EXTRA:-} \
  --file-prefix "pf-a-$$" --lcores 0@1 >"$work/client.out" 2>"$work/client.err" &
cpid=$!
pids+=($cpid)
# Take down the busiest plane once data flows on it. Which planes a run uses depends on its routes
# (random connection IDs, and a path re-pathed by an early spurious RTO moves to another plane), so
# a fixed victim was sometimes a plane no path used any more: it never saw 2000 frames and went
# down after the transfer had ended.
victim=-1 rx=0
for _ in $(seq 1 500); do
  for ((p = 0; p < planes; p++)); do
    n=$(ip netns exec "$NS_B" cat /sys/class/net/$(netns_if b "$p")/statistics/rx_packets)
    if [ "$n" -gt "$rx" ]; then rx=$n victim=$p; fi
  done
  [ "$rx" -gt 2000 ] && break
  sleep 0.01
done
[ "$victim" -ge 0 ] || victim=1
# The failure must land mid-transfer, or the checks below prove nothing about it.
client_running_at_failure=1
kill -0 "$cpid" 2>/dev/null || client_running_at_failure=0
if [ -z "${PF_NO_DOWN:-}" ]; then
  netns_plane "$victim" down
  echo "plane $victim down after $rx frames on it"
fi
surviving_rx() {  # frames B received on every plane but the victim
  local p s=0
  for ((p = 0; p < planes; p++)); do
    [ "$p" = "$victim" ] && continue
    s=$((s + $(ip netns exec "$NS_B" cat /sys/class/net/$(netns_if b "$p")/statistics/rx_packets)))
  done
  echo "$s"
}
down_rx=$(surviving_rx)
rc=0
wait "$cpid" || rc=$?
wait "${pids[0]}" || true
pids=()
client=$(tail -n1 "$work/client.out")
server=$(tail -n1 "$work/server.out")
echo "client: $(head -n -1 "$work/client.out")"
echo "server: $(head -n -1 "$work/server.out")"
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }
check "the plane went down while the client was still sending (else raise --iters)" '[ "$client_running_at_failure" = 1 ]'
check "client exit 0 (rc $rc)" '[ "$rc" = 0 ]'
check "client verified, no error completion" '[ "$(jq -r ".verified and .errors == 0" <<<"$client")" = true ]'
check "server verified every byte, clean close" '[ "$(jq -r ".verified and .errors == 0 and .bad == 0" <<<"$server")" = true ]'
check "server verified all $iters messages" '[ "$(jq -r ".verified_messages" <<<"$server")" = "$iters" ]'
check "sender re-pathed" '[ "$(jq -r ".repaths" <<<"$client")" -gt 0 ]'
surv=$(surviving_rx)
check "surviving planes carried frames after the failure ($down_rx -> $surv)" '[ "$surv" -gt "$down_rx" ]'
jq -c '.paths[] | {path, state, packets, retransmissions, repaths}' <<<"$client" || true
exit $fail
