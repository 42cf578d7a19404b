#!/usr/bin/env bash
# fi.Pingpong{Msg,Rdm}{Memif,Netns,NetnsLoss1pct}: Debian's fi_pingpong (libfabric 1.17) over mroce
# MSG or RDM endpoints between two processes, both ends checked:
#   memif                both processes on this host, joined by a memif socket (no root)
#   netns LOSS           one process in each of two network namespaces, af_packet on veths through a
#                        bridge in a third (ci/netns/lib.sh), LOSS/10000 of the frames of each
#                        direction dropped there; needs root (exit 77 otherwise)
# Two runs per message mode: default sizes with -I 100, and -S all (up to the provider's max_msg_size,
# at most fi_pingpong's 6 MiB) with -I 10; MSG endpoints run -m msg, RDM endpoints -m msg and
# -m tagged. -c makes fi_pingpong verify every payload. Each run must exit 0 on both ends, and both
# must print the size table with exactly the expected sizes, every row with #sent = #ack = iterations.
#   pingpong_msg.sh memif|netns [LOSS [msg|rdm]]      (env: FI_PROVIDER_PATH, FI_PROVIDER)
set -uo pipefail
mode=${1:?memif|netns}
loss=${2:-0}
ep=${3:-msg}
case "$ep" in msg) modes=(msg) ;; rdm) modes=(msg tagged) ;; *) echo "endpoint type msg|rdm" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
port=$((20000 + $$ % 20000))  # fi_pingpong's TCP control port (two tests may run at once)

. "$here/netns_pair.sh"
fi_trap_cleanup "$mode" "$dir"

if [ "$mode" = netns ]; then
  fi_netns_up "fipp$$" "$loss"
fi

max_msg=$(FI_MROCE_PORT=memloop fi_info -v -p mroce -t "FI_EP_${ep^^}" | awk '/max_msg_size:/ {print $2; exit}')

# size_label N: fi_pingpong's way of printing a size (util/shared.c size_str: 1k, 1.5k, 64k, 1m).
size_label() {
  awk -v n="$1" 'BEGIN {
    split("k m g", u, " "); base = 1; s = "";
    for (i = 3; i >= 1; i--) { f = 2 ^ (10 * i); if (n >= f) { v = n / f; s = (v == int(v)) ? sprintf("%d%s", v, u[i]) : sprintf("%.1f%s", v, u[i]); break } }
    if (s == "") s = n; print s }'
}
# The sizes fi_pingpong runs: default 64 256 1k 4k 64k 1m, or -S all: 0 1 2 3 4 6 8 12 ... 6m; both
# cut at max_msg_size.
expected_sizes() {
  local n
  if [ "${1%-*}" = default ]; then
    for n in 64 256 1024 4096 65536 1048576; do [ "$n" -le "$max_msg" ] && size_label "$n"; done
  else
    size_label 0
    for ((n = 1; n <= 6 * 1048576 && n <= max_msg; n *= 2)); do
      size_label "$n"
      [ $((n * 3 / 2)) -gt "$n" ] && [ $((n * 3 / 2)) -le "$max_msg" ] && [ "$n" -ge 2 ] && size_label $((n * 3 / 2))
    done
  fi
}

table_ok() {  # table_ok LOG SIZES ITERS
  local log=$1 want=$2 iters=$3 got
  grep -q '^bytes *#sent *#ack *total' "$log" || { echo "no size table in $log"; return 1; }
  got=$(awk '/^bytes/ {t = 1; next} t && NF >= 7 {print $1}' "$log" | tr '\n' ' ')
  [ "$got" = "$want" ] || { echo "sizes: got '$got', want '$want'"; return 1; }
  awk -v it="$iters" '/^bytes/ {t = 1; next} t && NF >= 7 && ($2 != it || $3 != "=" it) {bad = 1} END {exit bad}' \
    "$log" || { echo "a row without $iters sent and acknowledged"; return 1; }
  ! grep -qi 'error\|check' "$log" || { echo "errors reported"; return 1; }
}

# listening [NAMESPACE]: waits until fi_pingpong's server listens on its TCP control port (it
# opens the provider's port first; a client connecting before the listen is refused).
listening() {
  local in=()
  [ -n "${1:-}" ] && in=(ip netns exec "$1")
  for _ in $(seq 300); do
    [ -n "$("${in[@]}" ss -Hltn "sport = :$port" 2>/dev/null)" ] && return 0
    sleep 0.1
  done
  return 1
}

fail=0
run() {  # run NAME-MODE ITERS SIZE-ARGS...
  local name=$1 iters=$2
  shift 2
  local slog="$dir/$name.server" clog="$dir/$name.client" src dst sock
  local common=(-p mroce -e "$ep" -m "${name#*-}" -c -I "$iters" "$@")
  if [ "$mode" = memif ]; then
    sock="$dir/$name.sock"
    FI_MROCE_PORT="memif:server:$sock" timeout 120 fi_pingpong "${common[@]}" -B "$port" >"$slog" 2>&1 &
    local spid=$!
    listening
    FI_MROCE_PORT="memif:client:$sock" timeout 120 fi_pingpong "${common[@]}" -P "$port" 127.0.0.1 >"$clog" 2>&1
  else
    ip netns exec "$NS_A" env FI_MROCE_PORT=af_packet:mra0 timeout 120 fi_pingpong "${common[@]}" -B "$port" \
      >"$slog" 2>&1 &
    local spid=$!
    listening "$NS_A"
    ip netns exec "$NS_B" env FI_MROCE_PORT=af_packet:mrb0 timeout 120 fi_pingpong "${common[@]}" -P "$port" \
      "$(netns_ip4 a 0)" >"$clog" 2>&1
  fi
  local crc=$? src
  wait "$spid"
  src=$?
  port=$((port + 1))
  local want ok=1
  want=$(expected_sizes "$name" | tr "\n" " ")
  [ "$src" -eq 0 ] && [ "$crc" -eq 0 ] || { echo "exit codes: server $src, client $crc"; ok=0; }
  for log in "$slog" "$clog"; do table_ok "$log" "$want" "$iters" || ok=0; done
  if [ "$ok" = 1 ]; then
    echo "ok   - $name (sizes: $want)"
  else
    echo "FAIL - $name"
    echo "--- server"; cat "$slog"; echo "--- client"; cat "$clog"
    fail=1
  fi
  cat "$clog"
}

for m in "${modes[@]}"; do
  run "default-$m" 100
  run "all-$m" 10 -S all
done
[ "$mode" = netns ] && ip netns exec "$(netns_switch)" nft list ruleset 2>/dev/null | grep -E 'counter packets' | sed 's/^ */switch: /'
exit $fail
