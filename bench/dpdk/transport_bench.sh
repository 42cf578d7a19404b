#!/usr/bin/env bash
# The transport (engine + DPDK ports, `mroce perf`, every byte verified) against reference points
# measured in the same run:
#   (a) net_memif between two processes (server CPU 0, client CPU 1), our impairment layer at
#       0 / 1 / 10 % random loss on every port's rx, beside the raw frame rate of dpdk-testpmd
#       txonly -> rxonly over the same memif with frames of the same size;
#   (b) two namespaces joined by one veth plane, engines on af_packet (default; MTU 9000, 8 KiB
#       payloads) or af_xdp (VETH_PORT=af_xdp: veth refuses native XDP above MTU ~3500, so MTU 1500
#       and 1 KiB payloads), nftables random loss at 0 / 1 / 10 % of the frames leaving either namespace, beside
#       iperf3 TCP on the same veth at the same loss. (The veth plane runs through a bridge in a switch
#       namespace, where nftables drops: see ci/netns/lib.sh.)
# Prints tables and the ratios. A benchmark, not a test.
#   bench/dpdk/transport_bench.sh PATH/TO/mroce [SECONDS]      (root for part (b); skipped otherwise)
# Environment: MEMIF_PAYLOAD (default 1024), VETH_PORT (af_packet | af_xdp), VETH_MTU, VETH_PAYLOAD,
# PARTS ("a b" by default), REPS (rounds of part (a), default 3: medians).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../ci/netns/lib.sh"
mroce=${1:?usage: transport_bench.sh PATH/TO/mroce [SECONDS]}
secs=${2:-5}
payload=${MEMIF_PAYLOAD:-1024}   # engine max payload over memif (1024: a frame fits one 2 KiB buffer)
len=$((payload + 114))           # our data frame at that payload (Eth+IPv4+UDP+BTH+RETH+payload+ICRC)
veth_port=${VETH_PORT:-af_packet}
if [ "$veth_port" = af_xdp ]; then veth_mtu=${VETH_MTU:-1500}; veth_payload=${VETH_PAYLOAD:-1024}
else veth_mtu=${VETH_MTU:-9000}; veth_payload=${VETH_PAYLOAD:-8192}; fi
parts=${PARTS:-a b}
reps=${REPS:-3}
dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  netns_down 2>/dev/null || true
  rm -rf "$dir" /var/run/dpdk/mroce-tb*$$
}
trap cleanup EXIT INT TERM
"$mroce" perf --help >/dev/null 2>&1 || { echo "$mroce has no perf subcommand"; exit 1; }
jget() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d.get(sys.argv[2], 0))' "$1" "$2"; }

# ---- (a) memif ----
# perf over memif at LOSS_PPM; prints the client's JSON line (and checks the server verified).
perf_memif() {
  local ppm=$1 sock="$dir/perf.sock" imp=()
  rm -f "$sock"
  [ "$ppm" != 0 ] && imp=(--impair "seed=3 loss_ppm=$ppm")
  local addr_s=(--mac 02:00:00:00:0b:00 --peer-mac 02:00:00:00:0a:00 --ip 198.18.0.2 --peer-ip 198.18.0.1)
  local addr_c=(--mac 02:00:00:00:0a:00 --peer-mac 02:00:00:00:0b:00 --ip 198.18.0.1 --peer-ip 198.18.0.2)
  "$mroce" --json perf server --port "memif:server:$sock" "${addr_s[@]}" "${imp[@]}" -m $payload -q --op mixed \
    --lcores 0@0 --file-prefix "mroce-tbs$$" --timeout $((secs + 30)) >"$dir/s.out" 2>"$dir/s.err" &
  pids=($!)
  sleep 0.5
  "$mroce" --json perf client --port "memif:client:$sock" "${addr_c[@]}" "${imp[@]}" -m $payload -q --op mixed \
    --lcores 0@1 --file-prefix "mroce-tbc$$" -D "$secs" --timeout $((secs + 25)) >"$dir/c.out" 2>"$dir/c.err"
  wait "${pids[0]}" 2>/dev/null
  pids=()
  local sv
  sv=$(tail -n1 "$dir/s.out")
  [ "$(jget "$sv" verified)" = True ] || echo "WARNING: server did not verify: $sv" >&2
  tail -n1 "$dir/c.out"
}

testpmd_pps() {
  local sock="$dir/tp.sock" common=(--no-huge -m 512 --no-pci --no-telemetry --log-level='*:warning')
  rm -f "$sock"
  dpdk-testpmd --lcores '0@0,1@0' --file-prefix "mroce-tbrx$$" "${common[@]}" \
    --vdev="net_memif0,role=server,socket=$sock,socket-abstract=no" -- \
    --total-num-mbufs=16384 --burst=32 -a --forward-mode=rxonly --stats-period=1 </dev/null >"$dir/tprx.log" 2>&1 &
  local rxp=$!
  pids=("$rxp")
  sleep 1
  timeout -s INT "$((secs + 2))" dpdk-testpmd --lcores '0@1,1@1' --file-prefix "mroce-tbtx$$" "${common[@]}" \
    --vdev="net_memif0,role=client,socket=$sock,socket-abstract=no" -- \
    --total-num-mbufs=16384 --txpkts="$len" --burst=32 -a --forward-mode=txonly --stats-period=1 \
    </dev/null >"$dir/tptx.log" 2>&1 || true
  kill -INT "$rxp" 2>/dev/null || true
  wait "$rxp" 2>/dev/null || true
  pids=()
  grep -o 'Rx-pps: *[0-9]*' "$dir/tprx.log" | awk '{print $2}' | awk '$1 > 0' | sed '1d;$d' | sort -n |
    awk '{v[NR]=$1} END {if (NR == 0) print 0; else print v[int((NR + 1) / 2)]}'
}

if [[ " $parts " == *" a "* ]]; then
echo "== (a) net_memif, two processes, $secs s per run, max payload $payload B, mixed Writes+Sends 64 KiB"
# testpmd's txonly builds each frame in one mbuf segment of one 2 KiB memif buffer: no reference
# point for larger frames.
# REPS rounds, each of testpmd then mroce at 0, 1 and 10 % back to back: the machine's load drifts,
# so every figure is the median of its rounds, and the ratios are taken between medians.
tp_ok=1
if [ "$len" -gt 2048 ]; then tp_ok=0; echo "testpmd raw: n/a ($len B frames do not fit one 2 KiB memif buffer)"
elif ! command -v dpdk-testpmd >/dev/null; then tp_ok=0; echo "dpdk-testpmd not installed"; fi
: >"$dir/rounds.jsonl"
for ((r = 1; r <= reps; r++)); do
  printf '\rround %d/%d ' "$r" "$reps" >&2
  tp=0
  [ "$tp_ok" = 1 ] && tp=$(testpmd_pps)
  echo "{\"round\": $r, \"loss_ppm\": -1, \"testpmd_pps\": $tp}" >>"$dir/rounds.jsonl"
  for ppm in 0 10000 100000; do
    j=$(perf_memif $ppm)
    python3 -c 'import json,sys; d=json.loads(sys.argv[1] or "{}"); d["round"]=int(sys.argv[2]); d["loss_ppm"]=int(sys.argv[3]); print(json.dumps(d))' \
      "$j" "$r" "$ppm" >>"$dir/rounds.jsonl" 2>/dev/null || echo "{\"round\": $r, \"loss_ppm\": $ppm}" >>"$dir/rounds.jsonl"
  done
done
printf '\r' >&2
python3 - "$dir/rounds.jsonl" "$payload" "$len" "$reps" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
payload, length, reps = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
med = lambda xs: statistics.median(xs) if xs else 0.0
span = lambda xs: f"{min(xs):.2f}-{max(xs):.2f}" if xs else "-"
raw = [r["testpmd_pps"] * payload * 8 / 1e9 for r in rows if r["loss_ppm"] == -1 and r.get("testpmd_pps")]
raw_m = med(raw)
print(f"{reps} rounds; medians, with the range over rounds")
print(f"{'run':34s} {'Gb/s':>10s} {'range':>13s} {'retx':>9s} {'vs raw':>8s}")
print(f"{'testpmd raw (' + str(length) + ' B frames, payload)':34s} {raw_m:10.3f} {span(raw):>13s} {'-':>9s} {'1.00':>8s}")
g0 = None
for ppm in (0, 10000, 100000):
    rs = [r for r in rows if r["loss_ppm"] == ppm]
    good = [r for r in rs if r.get("verified")]
    g = [r.get("goodput_gbps", 0) for r in good]
    gm = med(g)
    if g0 is None:
        g0 = gm
    retx = int(med([r.get("retransmissions", 0) for r in good])) if good else 0
    name = f"mroce perf memif {ppm / 1e4:g}% loss" + ("" if len(good) == len(rs) else f" ({len(rs) - len(good)} NOT VERIFIED)")
    print(f"{name:34s} {gm:10.3f} {span(g):>13s} {retx:9d} {(gm / raw_m if raw_m else 0):8.3f}   retained {(gm / g0 if g0 else 0):.2f}")
# Each round runs 0, 1 and 10 % back to back: a round's own ratios drift less with the machine's load
# than ratios of medians taken over different rounds.
by_round = {}
for r in rows:
    if r["loss_ppm"] >= 0 and r.get("verified"):
        by_round.setdefault(r["round"], {})[r["loss_ppm"]] = r.get("goodput_gbps", 0)
for ppm in (10000, 100000):
    ratios = [d[ppm] / d[0] for d in by_round.values() if d.get(0) and ppm in d]
    if ratios:
        print(f"retained at {ppm / 1e4:g}% per round: " + " ".join(f"{x:.2f}" for x in ratios) +
              f"   median {med(ratios):.2f}")
PY
fi

# ---- (b) namespaces ----
[[ " $parts " == *" b "* ]] || exit 0
echo
echo "== (b) two namespaces, one veth plane (MTU $veth_mtu, $veth_port, payload $veth_payload B), nftables loss in the switch namespace (both directions), $secs s per run"
if [ "$(id -u)" != 0 ]; then echo "SKIP: needs root"; exit 0; fi
MROCE_NETNS_PREFIX="mroce-tb$$"
NS_A="${MROCE_NETNS_PREFIX}-a"
NS_B="${MROCE_NETNS_PREFIX}-b"
netns_up 1 "$veth_mtu"
netns_stack_off a 0  # the engines own the veths: the kernel stack leaves our frames alone
netns_stack_off b 0
sip=$(netns_ip4 b 0)
ip netns exec "$NS_B" iperf3 -s -B "$sip" -D -I "$dir/iperf.pid" >/dev/null
sleep 0.3
printf '%-8s %12s %12s %8s %8s %9s\n' "loss" "mroce Gb/s" "iperf3 Gb/s" "ratio" "retx" "retained"
echo 0 >"$dir/g0"
for n in 0 100 1000; do
  netns_loss a "$n"
  netns_loss b "$n"
  # The server must run inside B: wrap it.
  j=$(
    ip netns exec "$NS_B" "$mroce" --json perf server --port "$veth_port:$(netns_if b 0)" --mac "$(netns_mac b 0)" \
      --peer-mac "$(netns_mac a 0)" --ip "$sip" --peer-ip "$(netns_ip4 a 0)" -m $veth_payload -q --op mixed --lcores 0@0 \
      --file-prefix "mroce-tbvs$$" --timeout $((secs + 30)) >"$dir/vs.out" 2>&1 &
    sp=$!
    sleep 0.5
    ip netns exec "$NS_A" "$mroce" --json perf client --port "$veth_port:$(netns_if a 0)" --mac "$(netns_mac a 0)" \
      --peer-mac "$(netns_mac b 0)" --ip "$(netns_ip4 a 0)" --peer-ip "$sip" -m $veth_payload -q --lcores 0@1 \
      --file-prefix "mroce-tbvc$$" -D "$secs" --timeout $((secs + 25)) --op mixed >"$dir/vc.out" 2>&1
    wait "$sp" 2>/dev/null
    tail -n1 "$dir/vc.out"
  )
  ip netns exec "$NS_A" timeout $((secs + 20)) iperf3 -c "$sip" -t "$secs" -J >"$dir/i.json" 2>&1 || true
  python3 - "$j" "$dir/i.json" "$n" "$dir/g0" <<'PY'
import json, sys
try:
    d = json.loads(sys.argv[1])
except Exception:
    d = {"goodput_gbps": 0, "verified": False}
try:
    i = json.load(open(sys.argv[2]))["end"]["sum_received"]["bits_per_second"] / 1e9
except Exception:
    i = 0.0
g = d.get("goodput_gbps", 0)
g0 = float(open(sys.argv[4]).read())
if g0 == 0:
    g0 = g
    open(sys.argv[4], "w").write(str(g))
v = "" if d.get("verified") else "  (NOT VERIFIED: " + str(d.get("error", "")) + ")"
print(f"{int(sys.argv[3]) / 100:6.1f} % {g:12.3f} {i:12.3f} {(g / i if i else 0):8.2f} {d.get('retransmissions', 0):8d}"
      f" {(g / g0 if g0 else 0):9.2f}{v}")
PY
done
