# Sourced by the veth tests that start `mroce agent` in the background.
# wait_agent_ready OUT_FILE PID: waits up to 10 s for the agent's "agent ready on" line; prints it
# and returns 0, or returns 1 when the agent exited or never said it.
wait_agent_ready() {
  local out=$1 pid=$2
  for _ in $(seq 1 100); do
    grep -q '^agent ready on ' "$out" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  grep '^agent ready on ' "$out"
}
