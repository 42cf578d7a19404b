#!/usr/bin/env bash
# Two processes of fi_rdm_procs over memif (the first the memif server, the second the client):
#   rdm_procs.sh PROGRAM credits    fi.RdmCreditsMemif: receiver and sender; both must exit 0
#   rdm_procs.sh PROGRAM dead-peer  fi.RdmDeadPeerMemif: survivor and victim; once the victim has
#                                   taken its message it is killed (SIGKILL), and the survivor must
#                                   exit 0 (each of its later sends failed once, none hung)
# See fi_rdm_procs.cpp.           (env: FI_PROVIDER_PATH, FI_PROVIDER)
set -uo pipefail
prog=${1:?fi_rdm_procs}
mode=${2:?credits|dead-peer}
dir=$(mktemp -d)
# TERM first: `timeout` passes it on to its child (a SIGKILL would leave the child running).
trap 'kill $(jobs -p) 2>/dev/null; sleep 0.2; kill -9 $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
trap 'exit 143' TERM INT
case $mode in
  credits) first=receiver second=sender ;;
  dead-peer) first=survivor second=victim ;;
  *) echo "rdm_procs.sh: mode must be credits or dead-peer, got '$mode'" >&2; exit 2 ;;
esac
FI_MROCE_PORT="memif:server:$dir/m.sock" timeout 120 "$prog" "$first" "$dir" &
fpid=$!
for _ in $(seq 300); do [ -S "$dir/m.sock" ] && break; sleep 0.1; done
if [ "$mode" = credits ]; then
  FI_MROCE_PORT="memif:client:$dir/m.sock" timeout 120 "$prog" "$second" "$dir"
  src=$?
  wait "$fpid"
  frc=$?
  echo "sender exit $src, receiver exit $frc"
  [ "$src" -eq 0 ] && [ "$frc" -eq 0 ]
  exit
fi
FI_MROCE_PORT="memif:client:$dir/m.sock" "$prog" "$second" "$dir" &
vpid=$!
for _ in $(seq 600); do [ -e "$dir/victim.ready" ] && break; sleep 0.05; done
[ -e "$dir/victim.ready" ] || { echo "the victim never got its message"; exit 1; }
kill -9 "$vpid"
wait "$vpid" 2>/dev/null
echo 1 >"$dir/victim.dead"
wait "$fpid"
frc=$?
echo "survivor exit $frc"
[ "$frc" -eq 0 ]
