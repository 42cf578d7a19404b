#!/usr/bin/env bash
# conform.AgentOverVeth: the agent protocol end to end over a real port. Two namespaces joined by
# one veth plane (ci/netns/lib.sh); `mroce agent` on af_packet in namespace B, serving a Unix
# socket (path sockets cross network namespaces); in namespace A the probe (AgentDut on its own
# af_packet port) does hello, info, reg_mr, write_mem/read_mem, listen, sends a hand-built CONNECT
# and expects the engine's ACCEPT back, then quits the agent.
#   agent_veth.sh PATH/TO/mroce PATH/TO/conform_agent_probe
# Exits 0 pass, 1 fail, 77 skipped (not root only).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mroce=${1:?usage: agent_veth.sh PATH/TO/mroce PATH/TO/conform_agent_probe}
probe=${2:?usage: agent_veth.sh PATH/TO/mroce PATH/TO/conform_agent_probe}
if [ "$(id -u)" != 0 ]; then
  echo "SKIP: needs root to create network namespaces and veth pairs"
  exit 77
fi
fail() { echo "FAIL: $*"; exit 1; }
"$mroce" agent --help >/dev/null 2>&1 || fail "$mroce has no 'agent' subcommand"
[ -x "$probe" ] || fail "no probe at $probe"

MROCE_NETNS_PREFIX="mroce-ag$$"
. "$here/../../../ci/netns/lib.sh"
. "$here/agent_lib.sh"
work=$(mktemp -d)
sock="$work/agent.sock"
agent_pid=
cleanup() {
  if [ -n "$agent_pid" ]; then kill "$agent_pid" 2>/dev/null || true; wait "$agent_pid" 2>/dev/null || true; fi
  netns_down
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

netns_up 1 9000 || fail "could not build the namespaces"
# MACs of their own, not the kernel interfaces': the namespaces' IP stacks ignore the test's frames
# (no ICMP port-unreachable for the CONNECT), and the probe keeps only frames from the agent's MAC.
agent_mac=02:00:00:00:0b:99
probe_mac=02:00:00:00:0a:99
ip netns exec "$NS_B" "$mroce" --json agent --port "af_packet:$(netns_if b 0)" --listen "unix:$sock" \
  --mac "$agent_mac" --ip "$(netns_ip4 b 0)" --file-prefix "ag-b-$$" --lcores 0@1 \
  >"$work/agent.out" 2>"$work/agent.err" &
agent_pid=$!
if ! wait_agent_ready "$work/agent.out" "$agent_pid" >/dev/null; then
  cat "$work/agent.out" "$work/agent.err"
  fail "the agent did not come up"
fi
grep '^agent ready on ' "$work/agent.out"

rc=0
ip netns exec "$NS_A" "$probe" --agent "unix:$sock" --wire "af_packet:$(netns_if a 0)" \
  --mac "$probe_mac" --ip "$(netns_ip4 a 0)" --file-prefix "ag-a-$$" --lcores 0@0 --quit || rc=$?

# The probe quit the agent: it must end by itself and report.
for _ in $(seq 1 50); do
  kill -0 "$agent_pid" 2>/dev/null || break
  sleep 0.1
done
arc=0
if kill -0 "$agent_pid" 2>/dev/null; then
  arc=124
else
  wait "$agent_pid" || arc=$?
fi
agent_pid=
echo "agent stderr:"; sed 's/^/  /' "$work/agent.err"
echo "agent stdout:"; sed 's/^/  /' "$work/agent.out"
[ "$rc" = 0 ] || fail "probe exit $rc"
[ "$arc" = 0 ] || fail "agent exit $arc (124: did not quit)"
last=$(tail -n 1 "$work/agent.out")
python3 - "$last" <<'PY' || fail "the agent's last line is not its JSON summary"
import json, sys
o = json.loads(sys.argv[1])
assert o["command"] == "agent" and o["stopped_by"] == "quit", o
assert o["clients"] == 1 and o["requests"] >= 10 and o["rx_frames"] >= 1 and o["tx_frames"] >= 1, o
PY
[ ! -e "$sock" ] || fail "the agent left its socket behind"
echo "PASS"
