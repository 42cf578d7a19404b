#!/usr/bin/env bash
# fi.PortErrors: a misconfigured DPDK port gives exactly one warning line from mroce and an error,
# never a crash or a hang: a malformed port spec, an interface that does not exist, a bad
# FI_MROCE_IP / FI_MROCE_MAC (fi_getinfo refuses: no mroce entry), and a memif socket that cannot be
# used (fi_pingpong's fi_passive_ep / fi_domain fail, the program exits with an error).
#   port_errors.sh          (env: FI_PROVIDER_PATH, FI_PROVIDER)
set -uo pipefail
fail=0
check() {  # check <description> <command...>
  local what=$1
  shift
  if "$@"; then echo "ok   - $what"; else echo "FAIL - $what"; fail=1; fi
}
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT

warnings() { grep -ac '::mroce:.*<warn>' "$1"; }

# fi_getinfo refusals: one warning naming the problem, no mroce entry.
refused() {  # refused <pattern> <env assignments...>
  local pattern=$1 out="$dir/info.log"
  shift
  env "$@" FI_LOG_LEVEL=warn fi_info -p mroce >"$out" 2>&1
  [ "$(warnings "$out")" -eq 1 ] && grep -aq "$pattern" "$out" && ! grep -aq '^provider: mroce' "$out" ||
    { cat "$out"; return 1; }
}
check "bad memif role: one warning" refused "memif role must be server or client" FI_MROCE_PORT=memif:sideways:/tmp/x.sock
check "memif without a path: one warning" refused "memif needs a socket path" FI_MROCE_PORT=memif:server
check "missing interface: one warning" refused "no interface 'mroce-none0'" FI_MROCE_PORT=af_packet:mroce-none0
check "af_xdp, missing interface: one warning" refused "no interface 'mroce-none0'" FI_MROCE_PORT=af_xdp:mroce-none0
check "null port: one warning" refused "this port kind is not supported" FI_MROCE_PORT=null
check "bad FI_MROCE_IP: one warning" refused "FI_MROCE_IP='300.1.2.3' is not" FI_MROCE_PORT=memif:server:/tmp/x.sock \
  FI_MROCE_IP=300.1.2.3
check "bad FI_MROCE_MAC: one warning" refused "FI_MROCE_MAC='02:00:00:00:00' is not" \
  FI_MROCE_PORT=memif:server:/tmp/x.sock FI_MROCE_MAC=02:00:00:00:00
check "memif: entries on a usable spec" bash -c \
  'FI_MROCE_PORT=memif:server:/tmp/x.sock fi_info -p mroce | grep -q "domain: memif:server:/tmp/x.sock"'

# An unusable memif socket is found when the port opens: fi_pingpong pairs one such end with a
# memloop peer (its TCP exchange comes first); the memif end exits with an error after one warning.
port=$((20000 + $$ % 20000))
unusable() {  # unusable server|client <memif spec>
  local role=$1 spec=$2 log="$dir/$1.log" rc
  if [ "$role" = server ]; then
    FI_MROCE_PORT=$spec FI_LOG_LEVEL=warn timeout 30 fi_pingpong -p mroce -e msg -B "$port" >"$log" 2>&1 &
    local server=$!
    for _ in $(seq 300); do [ -n "$(ss -Hltn "sport = :$port")" ] && break; sleep 0.1; done
    FI_MROCE_PORT=memloop timeout 30 fi_pingpong -p mroce -e msg -P "$port" 127.0.0.1 >"$dir/peer.log" 2>&1
    wait "$server"
    rc=$?
  else
    FI_MROCE_PORT=memloop timeout 30 fi_pingpong -p mroce -e msg -B "$port" >"$dir/peer.log" 2>&1 &
    for _ in $(seq 300); do [ -n "$(ss -Hltn "sport = :$port")" ] && break; sleep 0.1; done
    FI_MROCE_PORT=$spec FI_LOG_LEVEL=warn timeout 30 fi_pingpong -p mroce -e msg -P "$port" 127.0.0.1 >"$log" 2>&1
    rc=$?
  fi
  wait
  port=$((port + 1))
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -lt 128 ] && [ "$(warnings "$log")" -eq 1 ] &&
    grep -aq "opening the DPDK port failed" "$log" || { echo "rc $rc"; cat "$log"; return 1; }
}
check "memif server socket in a missing directory: one warning, error exit" unusable server \
  "memif:server:$dir/no-such-dir/s.sock"
check "memif client with no server socket: one warning, error exit" unusable client "memif:client:$dir/nobody.sock"

exit $fail
