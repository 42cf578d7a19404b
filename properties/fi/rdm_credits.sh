#!/usr/bin/env bash
# fi.RdmCreditsMemif: fi_rdm_credits receiver (memif server) and sender (memif client) in two
# processes; both must exit 0 (each checks its side, see fi_rdm_credits.cpp).
#   rdm_credits.sh PROGRAM      (env: FI_PROVIDER_PATH, FI_PROVIDER)
set -uo pipefail
prog=${1:?fi_rdm_credits}
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
FI_MROCE_PORT="memif:server:$dir/m.sock" timeout 120 "$prog" receiver "$dir" &
rpid=$!
for _ in $(seq 300); do [ -S "$dir/m.sock" ] && break; sleep 0.1; done
FI_MROCE_PORT="memif:client:$dir/m.sock" timeout 120 "$prog" sender "$dir"
src=$?
wait "$rpid"
rrc=$?
echo "sender exit $src, receiver exit $rrc"
[ "$src" -eq 0 ] && [ "$rrc" -eq 0 ]
