#!/usr/bin/env bash
# Does `mroce perf` complete, run after run, between two namespaces through a lossy bridge? (Issue
# 13's "done when": 10 runs of 10 at 0, 1 and 10 % nftables loss.) Per port type and loss: RUNS runs
# of SECONDS each (server in namespace B, client in A, one veth plane through the switch namespace
# of ci/netns/lib.sh, nftables random loss there in both directions); prints, per cell, the runs
# that completed with every byte verified, their mean goodput and retransmissions, the spurious share
# of their data packets, and the first error of each failed run. A soak, not a test (root; exit 1
# when a run failed).
#   bench/dpdk/netns_soak.sh PATH/TO/mroce [RUNS] [SECONDS]
# Environment: PORTS ("af_packet af_xdp" by default; also net_tap), LOSSES ("0 1 10"), MTU (1500),
# PAYLOAD (1024), KEEP_FAILED (a folder: each failed run's client and server output is kept there).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../ci/netns/lib.sh"
mroce=${1:?usage: netns_soak.sh PATH/TO/mroce [RUNS] [SECONDS]}
runs=${2:-10}
secs=${3:-2}
ports=${PORTS:-af_packet af_xdp}
losses=${LOSSES:-0 1 10}
mtu=${MTU:-1500}
payload=${PAYLOAD:-1024}
[ "$(id -u)" = 0 ] || { echo "netns_soak.sh: needs root"; exit 2; }
[ -x "$mroce" ] || { echo "netns_soak.sh: $mroce is not executable"; exit 2; }
dir=$(mktemp -d)
MROCE_NETNS_PREFIX="mroce-soak$$"
NS_A="${MROCE_NETNS_PREFIX}-a"
NS_B="${MROCE_NETNS_PREFIX}-b"
cleanup() {
  pkill -f "mroce-soak[sc]$$" 2>/dev/null
  netns_down 2>/dev/null
  rm -rf "$dir" /var/run/dpdk/mroce-soak*$$
}
trap cleanup EXIT INT TERM
netns_up 1 "$mtu" || exit 2
netns_stack_off a 0  # the engines own the veths: the kernel stack leaves our frames alone
netns_stack_off b 0
ns_m=$(netns_switch)
# net_tap: waits (up to 10 s) for the tap a DPDK process creates, then puts it on plane 0's bridge.
tap_join() {
  local t
  for ((t = 0; t < 100; t++)); do
    if ip -n "$ns_m" link show "$1" >/dev/null 2>&1; then
      ip -n "$ns_m" link set "$1" mtu "$mtu" master mbr0 up && return 0
    fi
    sleep 0.1
  done
  echo "netns_soak.sh: tap $1 never appeared" >&2
  return 1
}
sip=$(netns_ip4 b 0) cip=$(netns_ip4 a 0)
failed=0
printf '%-10s %5s %9s %10s %10s %10s  %s\n' port loss completed "Gb/s" retx "spurious" "errors of failed runs"
for port in $ports; do
  for loss in $losses; do
    per10k=$(python3 -c "print(int(float('$loss') * 100))")  # netns_loss: per 10000
    netns_loss a "$per10k"
    netns_loss b "$per10k"
    ok=0 gsum=0 rsum=0 ssum=0 dsum=0 errs=""
    for ((i = 1; i <= runs; i++)); do
      printf '\r%s %s%%: run %d/%d ' "$port" "$loss" "$i" "$runs" >&2
      if [ "$port" = net_tap ]; then
        # DPDK's net_tap makes a kernel tap device in the namespace it runs in: both ends run in the
        # switch namespace, and each tap joins the plane's bridge once it exists (named mx<side>t0,
        # so the loss rules of netns_loss see its frames). Own MACs: the veths' are on the bridge too.
        ip netns exec "$ns_m" "$mroce" --json perf server --port "vdev:net_tap,iface=mxbt0" --mac 02:00:00:00:1b:00 \
          --peer-mac 02:00:00:00:1a:00 --ip "$sip" --peer-ip "$cip" -m "$payload" -q --op mixed --lcores 0@0 \
          --file-prefix "mroce-soaks$$" --timeout $((secs + 30)) >"$dir/s.out" 2>&1 &
        sp=$!
        tap_join mxbt0
        ip netns exec "$ns_m" "$mroce" --json perf client --port "vdev:net_tap,iface=mxat0" --mac 02:00:00:00:1a:00 \
          --peer-mac 02:00:00:00:1b:00 --ip "$cip" --peer-ip "$sip" -m "$payload" -q --op mixed --lcores 0@1 \
          --file-prefix "mroce-soakc$$" -D "$secs" --timeout $((secs + 25)) >"$dir/c.out" 2>&1 &
        cp=$!
        tap_join mxat0
        wait "$cp" 2>/dev/null
      else
        ip netns exec "$NS_B" "$mroce" --json perf server --port "$port:$(netns_if b 0)" --mac "$(netns_mac b 0)" \
          --peer-mac "$(netns_mac a 0)" --ip "$sip" --peer-ip "$cip" -m "$payload" -q --op mixed --lcores 0@0 \
          --file-prefix "mroce-soaks$$" --timeout $((secs + 30)) >"$dir/s.out" 2>&1 &
        sp=$!
        sleep 0.5
        ip netns exec "$NS_A" "$mroce" --json perf client --port "$port:$(netns_if a 0)" --mac "$(netns_mac a 0)" \
          --peer-mac "$(netns_mac b 0)" --ip "$cip" --peer-ip "$sip" -m "$payload" -q --op mixed --lcores 0@1 \
          --file-prefix "mroce-soakc$$" -D "$secs" --timeout $((secs + 25)) >"$dir/c.out" 2>&1
      fi
      wait "$sp" 2>/dev/null
      read -r verdict g r sp_n d_n e < <(python3 - "$dir/c.out" "$dir/s.out" <<'PY'
import json, sys
def last(path):
    try:
        return json.loads(open(path).read().strip().splitlines()[-1])
    except Exception:
        return {}
c, s = last(sys.argv[1]), last(sys.argv[2])
good = c.get("verified") is True and s.get("verified") is True
def error(o, who, path):
    if o.get("error"):
        return who + ":" + o["error"]
    if not o:
        text = open(path).read().strip().splitlines()
        return who + ":" + (text[-1][:80] if text else "no output")
    return ""
err = "" if good else (" / ".join(e for e in (error(c, "client", sys.argv[1]), error(s, "server", sys.argv[2])) if e) or "not verified")
spurious = c.get("retx_by_cause", {}).get("spurious", 0)
print("ok" if good else "fail", c.get("goodput_gbps", 0), c.get("retransmissions", 0), spurious,
      c.get("data_packets", 0), err.replace(" ", "_") or "-")
PY
      )
      if [ "$verdict" = ok ]; then
        ok=$((ok + 1))
        gsum=$(python3 -c "print($gsum + $g)")
        rsum=$((rsum + r))
        ssum=$((ssum + sp_n))
        dsum=$((dsum + d_n))
      else
        errs="$errs ${e}"
        failed=1
        if [ -n "${KEEP_FAILED:-}" ]; then
          mkdir -p "$KEEP_FAILED"
          cp "$dir/c.out" "$KEEP_FAILED/$port-$loss-$i.client.txt"
          cp "$dir/s.out" "$KEEP_FAILED/$port-$loss-$i.server.txt"
        fi
      fi
    done
    printf '\r' >&2
    mean_g=$(python3 -c "print('%.2f' % ($gsum / $ok) if $ok else '-')")
    mean_r=$([ "$ok" -gt 0 ] && echo $((rsum / ok)) || echo -)
    # spurious: of all data packets the completed runs sent, the share sent again needlessly (by the
    # timestamp echo or a duplicate arrival); the aim at 0% loss is at most 0.1%.
    spur=$(python3 -c "print('%.3f%%' % (100 * $ssum / $dsum) if $dsum else '-')")
    printf '%-10s %4s%% %5d/%-3d %10s %10s %10s %s\n' "$port" "$loss" "$ok" "$runs" "$mean_g" "$mean_r" "$spur" "$errs"
  done
done
exit "$failed"
