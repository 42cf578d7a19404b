#!/usr/bin/env bash
# Two DPDK processes joined by net_memif (server in one, client in the other, each on its own
# lcore and --file-prefix) exchange raw probe frames both ways; each must receive most of what the
# other sent. Usage: memif_pair.sh PATH/TO/mroce_io_probe
# The client starts once the server's port is up, and the server polls until the client has
# finished (--until-peer-done), so both are up for the client's whole run however slowly either
# starts. The two must end in order (see impl/dpdk/tools/io_probe.cpp): a memif peer that closes
# while the other side still polls unmaps the rings under that side's rx burst (SIGSEGV). Each
# probe says when it has stopped polling (--done-file) and keeps its port open until the other has
# stopped too (--peer-done-file); the client then closes first and the server (--close-last) after.
set -euo pipefail
probe=$1
dir=$(mktemp -d)
sock="$dir/memif.sock"
cleanup() { [ -n "${spid:-}" ] && kill "$spid" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
"$probe" --file-prefix "mroce-ms-$$" --lcores 0 --port "memif:server:$sock" --duration-s 3 --rate 2000 \
  --frame-len 4096 --done-file "$dir/server.done" --peer-done-file "$dir/client.done" --until-peer-done \
  --close-last >"$dir/server.log" 2>&1 &
spid=$!
for _ in $(seq 200); do grep -q '^ready' "$dir/server.log" && break; kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
grep -q '^ready' "$dir/server.log" || { echo "FAIL: the memif server did not start"; cat "$dir/server.log"; exit 1; }
"$probe" --file-prefix "mroce-mc-$$" --lcores 1 --port "memif:client:$sock" --duration-s 2 --rate 2000 \
  --frame-len 4096 --done-file "$dir/client.done" --peer-done-file "$dir/server.done" >"$dir/client.log" 2>&1
wait "$spid"; spid=
s=$(grep '^{' "$dir/server.log") c=$(grep '^{' "$dir/client.log") || true
echo "server: $s"
echo "client: $c"
rx() { echo "$1" | sed -E 's/.*"rx":\[([0-9]+)\].*/\1/'; }
# The client runs 2 s at 2000 frames/s: ~4000 frames each way, both up all along.
if [ -z "$s" ] || [ -z "$c" ] || [ "$(rx "$s")" -lt 3000 ] || [ "$(rx "$c")" -lt 3000 ]; then
  echo "FAIL: too few frames crossed memif"; cat "$dir"/*.log; exit 1
fi
echo "PASS"
