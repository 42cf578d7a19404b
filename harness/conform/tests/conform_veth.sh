#!/usr/bin/env bash
# conform.SuiteOverVeth: the whole conformance suite against our engine behind a real port, the
# way a vendor runs it against a NIC. Two namespaces joined by one veth plane (ci/netns/lib.sh):
# `mroce agent` on af_packet in namespace B serves the control protocol on a Unix socket (path
# sockets cross namespaces); in namespace A `mroce conform --dut agent=...` plays the peer over
# its own af_packet port on the other end of the veth. Every test must pass (or be unsupported:
# those that need a virtual-time DUT); a failure is rerun up to twice before it counts (the host stalls
# the tester at times).
#   [MROCE_CONFORM_VETH_ARGS="--only ID ..."] conform_veth.sh PATH/TO/mroce SCRIPTS_DIR [OUT_DIR]
# Exits 0 pass, 1 fail, 77 skipped (not root only).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mroce=${1:?usage: conform_veth.sh PATH/TO/mroce SCRIPTS_DIR [OUT_DIR]}
scripts=${2:?usage: conform_veth.sh PATH/TO/mroce SCRIPTS_DIR [OUT_DIR]}
if [ "$(id -u)" != 0 ]; then
  echo "SKIP: needs root to create network namespaces and veth pairs"
  exit 77
fi
fail() { echo "FAIL: $*"; exit 1; }

MROCE_NETNS_PREFIX="mroce-cf$$"
. "$here/../../../ci/netns/lib.sh"
. "$here/agent_lib.sh"
work=$(mktemp -d)
out=${3:-$work/out}
sock="$work/agent.sock"
agent_pid=
cleanup() {
  if [ -n "$agent_pid" ]; then kill "$agent_pid" 2>/dev/null || true; wait "$agent_pid" 2>/dev/null || true; fi
  netns_down
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

netns_up 1 9000 || fail "could not build the namespaces"
# The hosts' own IPv6 (neighbour discovery, MLD) would reach the DUT's port as frames it counts as
# malformed: the tests read that counter. This wire carries the test's frames only.
for side in a b; do
  ip netns exec "$(netns_ns $side)" sysctl -qw "net.ipv6.conf.$(netns_if $side 0).disable_ipv6=1"
done
# MACs of their own: the namespaces' IP stacks ignore the test's frames.
agent_mac=02:00:00:00:0b:98
tester_mac=02:00:00:00:0a:98
# The DUT's timers slowed down 20-fold (scripts use the constants it declares; RTO_MAX stays at
# PEER_TIMEOUT / 8): on a shared 2-core host the tester itself stalls for milliseconds, which must
# stay small against the DUT's timers. PTO_MIN, KEEPALIVE and CONNECT_RETRY keep their spec values (the
# agent declares them in info). Timer expiries late by more than that are allowed (the runner's late
# tolerance, traces/conformance/README.md).
start_agent() {  # DUT_IP FILE_PREFIX
  rm -f "$sock"
  ip netns exec "$NS_B" "$mroce" agent --port "af_packet:$(netns_if b 0)" --listen "unix:$sock" -q \
    --rto-init-us 20000 --rto-min-us 2000 --rto-max-us 125000 --peer-timeout-us 1000000 \
    --rnr-default-us 2000 \
    --mac "$agent_mac" --ip "$1" --file-prefix "$2" --lcores 0@1 \
    >"$work/agent.out" 2>"$work/agent.err" &
  agent_pid=$!
  wait_agent_ready "$work/agent.out" "$agent_pid" || { cat "$work/agent.out" "$work/agent.err"; fail "the agent did not come up"; }
}
stop_agent() {
  kill "$agent_pid" 2>/dev/null || true
  wait "$agent_pid" 2>/dev/null || true
  agent_pid=
}
tester_ip=$(netns_ip4 a 0)
start_agent "$(netns_ip4 b 0)" "cf-b-$$"

conform() {  # extra args...; writes $out/matrix.json (the --json line)
  ip netns exec "$NS_A" "$mroce" --json conform --dut "agent=unix:$sock" --port "af_packet:$(netns_if a 0)" \
    --tester-mac "$tester_mac" --tester-ip "$tester_ip" --lcores 0@0 --file-prefix "cf-a-$$" \
    --out "$out" --no-progress --assume-defaults "$@" >"$out.log" 2>&1
  local rc=$?
  grep -v '^{' "$out.log"
  tail -n 1 "$out.log" >"$out.json"
  return $rc
}
mkdir -p "$out"
# MROCE_CONFORM_VETH_ARGS: extra options of the first run (e.g. "--only RTO-*" while debugging).
read -r -a extra <<<"${MROCE_CONFORM_VETH_ARGS:-}"
conform --junit "$out/junit.xml" ${extra[@]+"${extra[@]}"} "$scripts" || true
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$out.json" || fail "no JSON matrix from mroce conform"
# IDs of the tests that did not pass. Unsupported counts as passing when a qualifier says so
# (time=virtual, fragments, IPv6), not when a line's assumption went unmet: our engine follows the
# SHOULD of work conservation and the default choices (should= / default= lines), so such a test
# is a regression here.
failed() {
  python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))
def ok(t):
    if t["outcome"] == "pass":
        return True
    return t["outcome"] == "unsupported" and not any("the line assumes" in m for m in t.get("messages", []))
print(" ".join(t["id"] for t in o["tests"] if not ok(t)))' "$out.json"
}
read -r -a still <<<"$(failed)"
# A shared host stalls the tester (or the agent) for up to ~8 ms at times, idle or not (measured
# here): a failing test gets up to two more runs, a few seconds apart, and fails the suite only if
# it fails all three. Every rerun is printed, so a flaky test shows in the log.
for attempt in 2 3; do
  [ ${#still[@]} -gt 0 ] || break
  echo "run $attempt of: ${still[*]}"
  sleep 2
  only=()
  for id in "${still[@]}"; do only+=(--only "$id"); done
  conform "${only[@]}" "$scripts" || true
  read -r -a still <<<"$(failed)"
done
[ ${#still[@]} = 0 ] || { echo "agent stderr:"; sed 's/^/  /' "$work/agent.err" | tail -20; fail "failed three times over veth: ${still[*]}"; }
# The tests that need an IPv6 DUT (dut: ip=6), against the agent on an IPv6 address (the frames
# carry it; the namespaces' own IPv6 stays off).
if [ -z "${MROCE_CONFORM_VETH_ARGS:-}" ]; then
  v6=()
  for f in "$scripts"/*.mcs; do
    grep -q '^# dut:.*\bip=6\b' "$f" && v6+=(--only "$(sed -n 's/^# id: *//p' "$f")")
  done
  if [ ${#v6[@]} -gt 0 ]; then
    stop_agent
    tester_ip=fd00:6d72::1
    start_agent fd00:6d72::2 "cf-b6-$$"
    for attempt in 1 2 3; do
      conform --strict "${v6[@]}" "$scripts" || true  # --strict: ENC-4-flow-label is a SHOULD
      read -r -a still <<<"$(failed)"
      [ ${#still[@]} -gt 0 ] || break
      echo "IPv6 run $attempt failed: ${still[*]}"
      sleep 2
    done
    python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))
bad = [t["id"] + ":" + t["outcome"] for t in o["tests"] if t["outcome"] != "pass"]
print("IPv6 DUT: %d tests, all passed" % len(o["tests"]) if not bad else "IPv6 DUT: not passed: " + " ".join(bad))
sys.exit(1 if bad or not o["tests"] else 0)' "$out.json" || fail "the IPv6 tests did not pass over veth"
  fi
fi
echo "PASS"
