#!/usr/bin/env bash
# Smoke test of DPDK ports on the two-namespace network: one DPDK process per namespace (mroce_io_probe)
# on net_af_xdp over every plane's veth, falling back to net_af_packet when AF_XDP cannot start
# (said on stdout, with the PMD's reason). Both exchange probe frames on all planes; midway the last
# plane is taken down (frames on it must stop while the others keep flowing), then up again (frames
# must resume).
#   ci/netns/smoke.sh PATH/TO/mroce_io_probe [--planes P] [--mtu M] [--require af_xdp|af_packet]
# Exits 0 on success, 1 on failure, 77 when not root (skipped, reason printed).
# Note: AF_XDP on veth needs an MTU that fits a page (veth refuses native XDP with a 9000-byte peer
# MTU), so at the default MTU 9000 the fallback is expected; --mtu 1500 exercises AF_XDP itself.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

probe=${1:?usage: smoke.sh PATH/TO/mroce_io_probe [--planes P] [--mtu M] [--require KIND]}
shift
planes=2 mtu=9000 require=""
while [ $# -gt 0 ]; do
  case "$1" in
    --planes) planes=$2; shift 2 ;;
    --mtu) mtu=$2; shift 2 ;;
    --require) require=$2; shift 2 ;;
    *) echo "smoke: unknown option $1" >&2; exit 2 ;;
  esac
done

if [ "$(id -u)" != 0 ]; then
  echo "SKIP: needs root to create network namespaces and veth pairs"
  exit 77
fi

# Own namespace names, so that a concurrent ci/netns user is not disturbed.
MROCE_NETNS_PREFIX="mroce-smoke$$"
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

netns_up "$planes" "$mtu"

# Probe arguments for one side with backend KIND.
probe_args() {
  local side=$1 kind=$2 p args=()
  for ((p = 0; p < planes; p++)); do
    args+=(--port "$kind:$(netns_if "$side" "$p")" --mac "$(netns_mac "$side" "$p")"
           --peer-mac "$(netns_mac "$([ "$side" = a ] && echo b || echo a)" "$p")"
           --ip "$(netns_ip4 "$side" "$p")" --peer-ip "$(netns_ip4 "$([ "$side" = a ] && echo b || echo a)" "$p")")
  done
  echo "${args[@]}"
}

# run KIND: starts both sides; returns 0 once both report ready, 1 if either failed to start.
run() {
  local kind=$1 duration=$2 side cpu=0 len=1024
  pids=()
  for side in a b; do
    # shellcheck disable=SC2046
    ip netns exec "$(netns_ns $side)" "$probe" --file-prefix "mroce-smoke$$-$side" --lcores "$cpu" \
      $(probe_args $side "$kind") --duration-s "$duration" --interval-ms 250 --rate 2000 --frame-len "$len" \
      >"$work/$side.log" 2>&1 &
    pids+=($!)
    cpu=$(( ($(nproc) > 1) ? 1 : 0 ))
  done
  for _ in $(seq 100); do
    if grep -qs '^ready' "$work/a.log" && grep -qs '^ready' "$work/b.log"; then return 0; fi
    if ! kill -0 "${pids[0]}" 2>/dev/null || ! kill -0 "${pids[1]}" 2>/dev/null; then break; fi
    sleep 0.1
  done
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
  return 1
}

kind=af_xdp
if [ "$require" = af_packet ] || ! run af_xdp 6; then
  if [ "$require" != af_packet ]; then
    reason=$(grep -hiE 'error|fail|too large' "$work"/*.log | grep -v '^ready' | sort -u | head -3 | tr '\n' ';')
    echo "NOTE: net_af_xdp could not start on the veth planes (MTU $mtu): $reason"
    if [ "$require" = af_xdp ]; then echo "FAIL: af_xdp required"; exit 1; fi
    echo "NOTE: falling back to net_af_packet"
  fi
  kind=af_packet
  run af_packet 6 || { echo "FAIL: net_af_packet could not start either"; cat "$work"/*.log; exit 1; }
fi
echo "backend: net_$kind, planes: $planes, MTU: $mtu"

last=$((planes - 1))
sleep 1.5
t_down=$(date +%s%3N)
netns_plane "$last" down
echo "plane $last down"
sleep 2
t_up=$(date +%s%3N)
netns_plane "$last" up
echo "plane $last up"
wait "${pids[@]}" || { echo "FAIL: a probe exited with an error"; cat "$work"/*.log; exit 1; }
pids=()

python3 - "$work/a.log" "$work/b.log" "$t_down" "$t_up" "$planes" <<'PY'
import re, sys
logs, t_down, t_up, planes = sys.argv[1:3], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
last = planes - 1
ok = True
for name, path in zip("ab", logs):
    rows = []
    for line in open(path):
        m = re.match(r"t_ms=(\d+) wall_ms=(\d+) rx=([\d,]+) tx=([\d,]+)", line)
        if m:
            rows.append((int(m[2]), [int(x) for x in m[3].split(",")]))
    # An interval covers (wall - 250 ms, wall]; skip the first (start-up) and those around changes.
    before = [rx for w, rx in rows[1:] if w < t_down]
    during = [rx for w, rx in rows if w - 250 > t_down + 300 and w < t_up]
    after = [rx for w, rx in rows if w - 250 > t_up + 1000]
    def total(rs, p): return sum(r[p] for r in rs)
    print(f"side {name}: rx per plane before={[total(before, p) for p in range(planes)]} "
          f"down={[total(during, p) for p in range(planes)]} after={[total(after, p) for p in range(planes)]}")
    if not before or not during or not after:
        print(f"FAIL: side {name}: too few intervals"); ok = False; continue
    for p in range(planes):
        if total(before, p) == 0:
            print(f"FAIL: side {name}: no frames on plane {p} while all planes were up"); ok = False
        if p != last and total(during, p) == 0:
            print(f"FAIL: side {name}: plane {p} stopped although only plane {last} was down"); ok = False
    if total(during, last) != 0:
        print(f"FAIL: side {name}: frames still arrived on plane {last} while it was down"); ok = False
    if total(after, last) == 0:
        print(f"FAIL: side {name}: plane {last} did not resume after coming back up"); ok = False
print("PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PY
