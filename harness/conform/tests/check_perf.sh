#!/usr/bin/env bash
# conform.CheckPerfCapture.*: a capture of our engine under `mroce perf` (two processes over
# memif, loss applied by the impairment layer on both receivers) must pass `mroce check`, with the
# tap's endpoint inferred and judged fully. A FAULT workload takes the transfer through the rare
# paths of the protocol, which the mutants of ci/mutation/conform break:
#   badkey  every 10th write carries a key naming no region: NAK RemoteAccess, VOIDs [R-REL-9]
#   rnr     4 KiB writes into a server with 2 receives per stream, each posted again 1 ms after
#           use, RNR Detail 20: RNR waits, retries and exhausted retries [R-PLC-9]
#   wcap    Window Cap 8 negotiated [R-CC-1]
#   check_perf.sh PATH/TO/mroce LOSS_PERCENT [FAULT]
set -euo pipefail
mroce=$1 loss=$2 fault=${3:-}
work=$(mktemp -d)
spid=
# CHECK_PERF_KEEP=DIR keeps the captures and logs of a failing run in DIR (for a timeline).
cleanup() {
  [ -n "$spid" ] && kill "$spid" 2>/dev/null
  if [ -n "${CHECK_PERF_KEEP:-}" ] && [ "${rc:-1}" != 0 ]; then mkdir -p "$CHECK_PERF_KEEP" && cp -r "$work"/. "$CHECK_PERF_KEEP"/; fi
  rm -rf "$work"
}
trap cleanup EXIT
sock="$work/m.sock"
# The ports' backlog CE marking is on (memif's default): the captures carry CE and its decreases.
common=(-q --timeout 60)
[ "$loss" != 0 ] && common+=(--loss "$loss")
server_extra=() client_extra=()
case "$fault" in
  "") common+=(-s 16384 -n 600) ;;
  badkey) common+=(-s 16384 -n 600 --bad-rkey-every 10) ;;
  rnr) common+=(-s 4096 -t 16 -n 2000)
       server_extra=(--recv-depth 2 --recv-hold-us 1000 --rnr-detail 20)
       client_extra=(--expect-rnr-failures) ;;
  wcap) common+=(-s 16384 -n 600 --window-cap 8) ;;
  *) echo "check_perf.sh: unknown fault workload $fault"; exit 2 ;;
esac
# The transfer itself is `mroce perf`'s business (and its own tests'): on a loaded host a run can
# give up (issue: connections that fail under host stalls); up to 3 tries for one that completes.
# What is under test here is the checker's verdict on the capture of a completed run.
ok=0
for try in 1 2 3; do
  rm -f "$work"/*.pcap "$sock"
  "$mroce" --json perf server --port "memif:server:$sock" --ip 198.18.0.2 --peer-ip 198.18.0.1 --file-prefix "chk-s-$$" \
    --lcores 0@1 --pcap "$work/server.pcap" "${common[@]}" ${server_extra[@]+"${server_extra[@]}"} >"$work/server.log" 2>&1 &
  spid=$!
  sleep 1
  crc=0
  "$mroce" --json perf client --port "memif:client:$sock" --ip 198.18.0.1 --peer-ip 198.18.0.2 --file-prefix "chk-c-$$" \
    --lcores 0@0 --pcap "$work/client.pcap" "${common[@]}" ${client_extra[@]+"${client_extra[@]}"} >"$work/client.log" 2>&1 || crc=$?
  src=0
  wait "$spid" || src=$?
  spid=
  if [ "$crc" = 0 ] && [ "$src" = 0 ]; then ok=1; break; fi
  echo "perf run $try did not complete (client exit $crc, server exit $src): $(tail -n 1 "$work/client.log")"
done
[ "$ok" = 1 ] || { cat "$work/client.log" "$work/server.log"; echo "FAIL: no perf run completed in 3 tries"; exit 1; }
# The fault must have happened, or the capture shows nothing of it.
tail -n 1 "$work/client.log" >"$work/client.json"
tail -n 1 "$work/server.log" >"$work/server.json"
python3 - "$fault" "$work/client.json" "$work/server.json" <<'PY'
import json, sys
fault, c, s = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
ef = c.get("expected_failures", {})
if fault == "badkey":
    assert ef.get("remote_access") == 60 and s.get("canceled") == 60, (ef, s.get("canceled"))
elif fault == "rnr":
    assert s.get("naks_sent", 0) > 100, s.get("naks_sent")
elif fault == "wcap":
    assert all(p["cwnd"] <= 8 for p in c["paths"]), c["paths"]
print("workload %s: client expected failures %s, server NAKs %s, canceled %s" % (fault or "plain", ef, s.get("naks_sent"), s.get("canceled")))
PY
rc=0
# Each capture is taken at its own endpoint's port: judged twice, with the endpoint inferred and
# with it named (--at: the ACK deadlines are judged too).
for side in client server; do
  ip=198.18.0.1; [ "$side" = server ] && ip=198.18.0.2
  out=$("$mroce" --json check "$work/$side.pcap" --rto-min-us 2000 2>&1) || rc=1
  echo "$out" | grep -v '^{'
  out=$("$mroce" --json check "$work/$side.pcap" --rto-min-us 2000 --at "$ip" 2>&1) || rc=1
  echo "$out" | grep -v '^{'
  echo "$out" | tail -n 1 | python3 -c '
import json, sys
o = json.loads(sys.stdin.read())
assert o["fully_judged"] or "--at" not in sys.argv[2:], "no endpoint judged fully"
checked = sum(r["checked"] for r in o["rules"].values())
assert checked > 1000, f"only {checked} checks"
print("%s: conformant=%s quality=%.4f checks=%d judged=%s" % (sys.argv[1], o["conformant"], o["quality"], checked, o["fully_judged"]))
' "$side" --at || rc=1
done
# Both taps in one pcapng, one interface each (mergecap -I none keeps them apart): two taps.
mergecap -I none -F pcapng -w "$work/both.pcapng" "$work/client.pcap" "$work/server.pcap"
out=$("$mroce" --json check "$work/both.pcapng" --rto-min-us 2000 2>&1) || rc=1
echo "$out" | grep -v '^{'
echo "$out" | tail -n 1 | python3 -c '
import json, sys
o = json.loads(sys.stdin.read())
assert len(o["taps"]) == 2, "expected two taps (interfaces)"
assert set(o["fully_judged"]) <= {"198.18.0.1", "198.18.0.2"}, o["fully_judged"]
print("pcapng with two taps: conformant=%s" % o["conformant"])
' || rc=1
[ "$rc" = 0 ] && echo PASS || echo "FAIL: mroce check found violations"
exit "$rc"
