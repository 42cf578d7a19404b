#!/usr/bin/env bash
# Our DPDK layer against the I/O ceiling, side by side on the same net_memif between two processes
# (receiver on CPU 0, sender on CPU 1, 4 KiB frames):
#   testpmd   dpdk-testpmd txonly -> rxonly           (the ceiling: no per-frame work of ours)
#   ours      mroce_pump --mode tx -> --mode rx        (Pump, mbufs built in place)
#   ours+imp  the same, the receiver impairing (loss, dup, delay, CE at 1 % each)
# and, in one process, mroce_pump --mode ring with and without impairment. Prints a table and the
# ratios ours/testpmd.
#   bench/dpdk/memif_vs_testpmd.sh BUILD_DIR [SECONDS] [FRAME_LEN]
set -euo pipefail
build=${1:?usage: memif_vs_testpmd.sh BUILD_DIR [SECONDS] [FRAME_LEN]}
secs=${2:-5}
len=${3:-4096}
pump="$build/bin/mroce_pump"
imp="seed=1 loss_ppm=10000 dup_ppm=10000 delay_ppm=10000 delay_max_us=50 ce_ppm=10000"
command -v dpdk-testpmd >/dev/null || { echo "dpdk-testpmd not installed (package dpdk)"; exit 1; }
[ -x "$pump" ] || { echo "$pump not built (cmake --build $build --target mroce_pump)"; exit 1; }
dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir" /var/run/dpdk/mroce-tprx$$ /var/run/dpdk/mroce-tptx$$  # testpmd leaves its runtime dirs
}
trap cleanup EXIT INT TERM
memif_args="bsize=$(( len > 2048 ? 4096 : 2048 ))"
mbuf_room=$(( (len > 2048 ? 4096 : 2048) + 128 ))

# ours: receiver (server) on CPU 0, sender (client) on CPU 1. Prints the receiver's JSON line.
ours() {
  local impair=$1 sock="$dir/ours.sock" args=()
  rm -f "$sock"
  [ -n "$impair" ] && args=(--impair "$impair")
  "$pump" --mode rx --lcores 0 --file-prefix "mroce-brx$$" --port "memif:server:$sock,$memif_args" \
    --data-room "$mbuf_room" --duration-s "$secs" "${args[@]}" >"$dir/rx.json" 2>"$dir/rx.err" &
  pids=($!)
  sleep 0.5
  "$pump" --mode tx --lcores 1 --file-prefix "mroce-btx$$" --port "memif:client:$sock,$memif_args" \
    --data-room "$mbuf_room" --duration-s "$((secs + 1))" --frame-len "$len" >"$dir/tx.json" 2>"$dir/tx.err"
  wait "${pids[0]}" || { cat "$dir"/rx.err >&2; return 1; }
  pids=()
  cat "$dir/rx.json"
}

# testpmd: rxonly (server) and txonly (client), two lcores each on one CPU (the main lcore only
# prints stats); the receiver's per-second Rx-pps, median of the steady seconds.
testpmd() {
  local sock="$dir/tp.sock" common=(--no-huge -m 512 --no-pci --no-telemetry --log-level='*:warning')
  rm -f "$sock"
  dpdk-testpmd --lcores '0@0,1@0' --file-prefix "mroce-tprx$$" "${common[@]}" \
    --vdev="net_memif0,role=server,socket=$sock,socket-abstract=no,$memif_args" -- \
    --total-num-mbufs=16384 --mbuf-size="$mbuf_room" --burst=32 -a --forward-mode=rxonly --stats-period=1 \
    </dev/null >"$dir/tprx.log" 2>&1 &
  local rxp=$!
  pids=("$rxp")
  sleep 1
  timeout -s INT "$((secs + 2))" dpdk-testpmd --lcores '0@1,1@1' --file-prefix "mroce-tptx$$" "${common[@]}" \
    --vdev="net_memif0,role=client,socket=$sock,socket-abstract=no,$memif_args" -- \
    --total-num-mbufs=16384 --mbuf-size="$mbuf_room" --txpkts="$len" --burst=32 -a --forward-mode=txonly \
    --stats-period=1 </dev/null >"$dir/tptx.log" 2>&1 || true
  kill -INT "$rxp" 2>/dev/null || true
  wait "$rxp" 2>/dev/null || true
  pids=()
  # Rx-pps lines of port 0 of the receiver, while the sender ran (non-zero), steady ones only.
  # The first and last non-zero seconds are partial (sender starting, stopping): dropped.
  grep -o 'Rx-pps: *[0-9]*' "$dir/tprx.log" | awk '{print $2}' | awk '$1 > 0' | sed '1d;$d' | sort -n |
    awk '{v[NR]=$1} END {if (NR == 0) print 0; else print v[int((NR + 1) / 2)]}'
}

reps=${REPS:-3}
echo "frame length $len bytes, $secs s per run, memif $memif_args, $reps alternating repetitions (medians)"
tp_all=() o_all=() oi_all=()
for ((i = 0; i < reps; i++)); do
  # Alternated so that load from other processes on the machine hits every variant alike.
  tp_all+=("$(testpmd)")
  o_all+=("$(ours "")")
  oi_all+=("$(ours "$imp")")
done
echo "testpmd Rx-pps per repetition: ${tp_all[*]}"
median_num() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR + 1) / 2)]}'; }
median_json() {  # the JSON line with the median mpps
  local m
  m=$(for j in "$@"; do sed -E 's/.*"mpps":([0-9.]+).*/\1/' <<<"$j"; done | sort -n | awk '{v[NR]=$1} END {print v[int((NR + 1) / 2)]}')
  for j in "$@"; do grep -q "\"mpps\":$m," <<<"$j" && { echo "$j"; return; }; done
}
tp_pps=$(median_num "${tp_all[@]}")
o=$(median_json "${o_all[@]}")
oi=$(median_json "${oi_all[@]}")
r=$("$pump" --mode ring --lcores 0 --file-prefix "mroce-bring$$" --duration-s "$secs" --frame-len "$len" 2>/dev/null)
ri=$("$pump" --mode ring --lcores 0 --file-prefix "mroce-bringi$$" --duration-s "$secs" --frame-len "$len" --impair "$imp" 2>/dev/null)

python3 - "$tp_pps" "$len" "$o" "$oi" "$r" "$ri" <<'PY'
import json, sys
tp, length = float(sys.argv[1]), int(sys.argv[2])
rows = [("memif testpmd txonly->rxonly (ceiling)", tp / 1e6, tp * length * 8 / 1e9)]
for name, js in zip(["memif mroce_pump tx->rx", "memif mroce_pump tx->rx + impairment",
                     "ring  mroce_pump (one process, one core)", "ring  mroce_pump + impairment"], sys.argv[3:]):
    d = json.loads(js)
    rows.append((name, d["mpps"], d["gbps"]))
print(f"{'path':44s} {'Mpps':>9s} {'Gb/s':>9s} {'vs testpmd':>10s}")
for name, mpps, gbps in rows:
    ratio = f"{mpps / (tp / 1e6):.2f}" if tp > 0 and name.startswith("memif") else ""
    print(f"{name:44s} {mpps:9.3f} {gbps:9.2f} {ratio:>10s}")
PY
