#!/usr/bin/env bash
# `mroce perf` server and client over memif, with the first 24 frames the client receives dropped
# (its impairment stage: three handshakes' ACCEPTs, protect_handshake=0; counted in frames, not time,
# so a slow start on a loaded machine cannot dodge them). The client's handshakes time out on its side
# and it connects again; the server saw the first connection come up.
# The run must still complete with every byte verified: the server's run starts at the client's
# hello, so it takes the newer connection (without that, the server waited for a hello on the dead
# first connection, failed with "key exchange Flushed", and the client could not connect: seen over
# net_tap at 1% loss in bench/dpdk/netns_soak.sh). Not a timed test.
set -u
bin=$1
tmp=$(mktemp -d)
sock="$tmp/perf.sock"
spid=
trap '[ -n "$spid" ] && kill "$spid" 2>/dev/null; rm -rf "$tmp" /var/run/dpdk/reconn-[sc]-$$' EXIT
"$bin" --json perf server --port "memif:server:$sock" --mac 02:00:00:00:0b:00 --peer-mac 02:00:00:00:0a:00 \
    --ip 198.18.0.2 --peer-ip 198.18.0.1 -m 1024 -q --op mixed --lcores 0@0 --file-prefix "reconn-s-$$" \
    --timeout 30 >"$tmp/server.txt" 2>&1 &
spid=$!
sleep 0.5
crc=0
"$bin" --json perf client --port "memif:client:$sock" --mac 02:00:00:00:0a:00 --peer-mac 02:00:00:00:0b:00 \
    --ip 198.18.0.1 --peer-ip 198.18.0.2 -m 1024 -q --op mixed --lcores 0@1 --file-prefix "reconn-c-$$" \
    --impair "seed=1 frames=24 loss_ppm=1000000 protect_handshake=0" -n 500 --timeout 25 \
    >"$tmp/client.txt" 2>&1 || crc=$?
src=0
wait "$spid" || src=$?
spid=
python3 - "$tmp/client.txt" "$tmp/server.txt" "$crc" "$src" <<'PY' || { cat "$tmp/client.txt" "$tmp/server.txt"; exit 1; }
import json, sys
def last(path):
    lines = open(path).read().strip().splitlines()
    return json.loads(lines[-1]) if lines else {}
c, s = last(sys.argv[1]), last(sys.argv[2])
assert sys.argv[3] == "0" and sys.argv[4] == "0", f"exit codes: client {sys.argv[3]}, server {sys.argv[4]}"
assert c.get("verified") is True, f"client: {c.get('error')}"
assert s.get("verified") is True and s.get("errors") == 0, f"server: {s.get('error')}"
# The first connection did come up at the server and went down there: its flushed receives are
# counted apart, not as errors (otherwise this test did not exercise the reconnect).
assert s.get("abandoned_completions", 0) > 0, "the server never saw an abandoned connection"
print(f"PASS: {c['messages']} messages verified after a reconnect; the server set aside "
      f"{s['abandoned_completions']} completions of the abandoned connection")
PY
