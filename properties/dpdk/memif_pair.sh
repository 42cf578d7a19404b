#!/usr/bin/env bash
# Two DPDK processes joined by net_memif (server in one, client in the other, each on its own
# lcore and --file-prefix) exchange raw probe frames both ways; each must receive most of what the
# other sent. Usage: memif_pair.sh PATH/TO/mroce_io_probe
set -euo pipefail
probe=$1
dir=$(mktemp -d)
sock="$dir/memif.sock"
cleanup() { [ -n "${spid:-}" ] && kill "$spid" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
"$probe" --file-prefix "mroce-ms-$$" --lcores 0 --port "memif:server:$sock" --duration-s 3 --rate 2000 \
  --frame-len 4096 >"$dir/server.log" 2>&1 &
spid=$!
sleep 0.5
"$probe" --file-prefix "mroce-mc-$$" --lcores 1 --port "memif:client:$sock" --duration-s 2 --rate 2000 \
  --frame-len 4096 >"$dir/client.log" 2>&1
wait "$spid"; spid=
s=$(grep '^{' "$dir/server.log") c=$(grep '^{' "$dir/client.log") || true
echo "server: $s"
echo "client: $c"
rx() { echo "$1" | sed -E 's/.*"rx":\[([0-9]+)\].*/\1/'; }
# The client runs 2 s at 2000 frames/s: ~4000 frames each way while both are up.
if [ -z "$s" ] || [ -z "$c" ] || [ "$(rx "$s")" -lt 3000 ] || [ "$(rx "$c")" -lt 3000 ]; then
  echo "FAIL: too few frames crossed memif"; cat "$dir"/*.log; exit 1
fi
echo "PASS"
