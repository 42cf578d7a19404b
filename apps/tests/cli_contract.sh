#!/usr/bin/env bash
# Checks the contract every mroce subcommand keeps (README.md, "The `mroce` command": --help, one
# line and exit 2 on misuse, --json ends with one JSON object).
set -u
bin=$1
fails=0
pass=0
check() {  # name, expected-exit, command...; captures stdout/stderr into $out/$err
    local name=$1 want=$2
    shift 2
    out=$("$@" 2>/tmp/cli_err.$$)
    got=$?
    err=$(cat /tmp/cli_err.$$)
    if [ "$got" != "$want" ]; then
        echo "FAIL $name: exit $got, want $want"; fails=$((fails + 1)); return 1
    fi
    pass=$((pass + 1))
    return 0
}
expect() {  # name, condition-result
    if [ "$2" = 0 ]; then pass=$((pass + 1)); else echo "FAIL $1"; fails=$((fails + 1)); fi
}

check help 0 "$bin" --help
echo "$out" | grep -q demo; expect "help lists demo" $?
echo "$out" | grep -qi subcommand; expect "help mentions subcommands" $?

check version 0 "$bin" --version
echo "$out" | grep -qE '^mroce [0-9]+\.[0-9]+\.[0-9]+$'; expect "version format" $?

check nonsense 2 "$bin" nonsense
[ "$(printf '%s\n' "$err" | wc -l)" = 1 ]; expect "nonsense: exactly one stderr line" $?
[ -z "$out" ]; expect "nonsense: nothing on stdout" $?

check no-args 2 "$bin"
[ "$(printf '%s\n' "$err" | wc -l)" = 1 ]; expect "no args: one stderr line" $?

check bad-flag 2 "$bin" demo --no-such-flag
[ "$(printf '%s\n' "$err" | wc -l)" = 1 ]; expect "bad flag: one stderr line" $?

check demo-help 0 "$bin" demo --help

# The demo's JSON contract, on the README's own default (1 GiB per run). Up to 2 attempts, each
# failed one printed: a CI host shares its 2 cores with the rest of the suite. (Until the engine fired
# no timer outside progress() on real ports, this demo failed 3 runs in 3 on this kind of VM: issue 13.)
for attempt in 1 2; do
    demo=$("$bin" --json demo -q 2>/tmp/cli_err.$$) && break
    echo "demo attempt $attempt did not verify: $(printf '%s\n' "$demo" | grep -E 'error|VERIF' | head -3 | tr '\n' ' ')"
done
out=$demo
printf '%s\n' "$out" | tail -n 1 | python3 -c 'import json,sys; assert json.loads(sys.stdin.read())["verified"] is True'
expect "demo --json: a verified run" $?
last=$(printf '%s\n' "$out" | tail -n 1)
echo "$last" | python3 -c 'import json,sys; o=json.loads(sys.stdin.read()); assert isinstance(o, dict)'
expect "demo --json: last line is a JSON object" $?

# Conformance commands: help, misuse and bad input get one line naming it and exit 2.
tmp=$(mktemp -d)
for sub in conform check agent; do
    check "$sub-help" 0 "$bin" "$sub" --help
    check "$sub-bad-flag" 2 "$bin" "$sub" --no-such-flag
    [ "$(printf '%s\n' "$err" | wc -l)" = 1 ]; expect "$sub bad flag: one stderr line" $?
done
printf '# id: X\n# requires: R-ACK-2\n0 < WRITE psn=\n' > "$tmp/bad.mcs"
check conform-bad-script 2 "$bin" conform "$tmp/bad.mcs"
echo "$err" | grep -q "bad.mcs:3:"; expect "conform: a bad script names file and line" $?
[ "$(printf '%s\n' "$err" | wc -l)" = 1 ]; expect "conform bad script: one stderr line" $?
check conform-missing-script 2 "$bin" conform "$tmp/none.mcs"
check conform-unreachable-agent 2 "$bin" conform --dut agent=unix:$tmp/no.sock --port af_packet:lo
echo "$err" | grep -q "no.sock"; expect "conform: an unreachable agent is named" $?
check conform-bad-canary 2 "$bin" conform --canary bogus
check conform-list 0 "$bin" --json conform --list
printf '%s\n' "$out" | tail -n 1 | python3 -c 'import json,sys; o=json.loads(sys.stdin.read()); assert len(o["tests"]) >= 80'
expect "conform --list --json: the tests" $?
echo "not a capture" > "$tmp/text.pcap"
check check-garbage 2 "$bin" check "$tmp/text.pcap"
echo "$err" | grep -q "text.pcap"; expect "check: a garbage capture is named" $?
[ "$(printf '%s\n' "$err" | wc -l)" = 1 ]; expect "check garbage: one stderr line" $?
check check-missing 2 "$bin" check "$tmp/none.pcap"
head -c 30 "$(dirname "$0")/../../tools/wireshark/testdata/mroce_all_opcodes.pcap" > "$tmp/trunc.pcap"
check check-truncated 2 "$bin" check "$tmp/trunc.pcap"
# A capture of another protocol: one UDP frame to port 53.
python3 - "$tmp/dns.pcap" <<'PY'
import struct, sys
frame = bytes(12) + b"\x08\x00" + bytes([0x45, 0, 0, 29, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]) \
        + struct.pack(">HHHH", 5353, 53, 9, 0) + b"x"
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    f.write(struct.pack("<IIII", 1, 0, len(frame), len(frame)) + frame)
PY
check check-other-protocol 2 "$bin" check "$tmp/dns.pcap"
echo "$err" | grep -q "no MRoCE frames"; expect "check: another protocol is named" $?
check check-json 1 "$bin" --json check "$(dirname "$0")/../../tools/wireshark/testdata/mroce_all_opcodes.pcap"
printf '%s\n' "$out" | tail -n 1 | python3 -c 'import json,sys; o=json.loads(sys.stdin.read()); assert "conformant" in o'
expect "check --json: last line is a JSON object (a synthetic capture: violations, exit 1)" $?
# perf, demo and conform: out-of-range numbers and unusable folders get one line naming the option
# and exit 2 (issue 17: these once died of SIGFPE, hung, failed later with "Device::open:
# InvalidArgument", or, for conform --out naming a file, of an uncaught filesystem_error).
for args in "perf -s 0 -q" "perf loopback -t 0 -n 1 -q" "perf loopback --paths 0 -q" "perf loopback --paths 1000 -q" \
            "perf loopback --streams 0 -q" "perf loopback -m 100 -q" "perf loopback --loss 200 -q" "demo --mib 0" \
            "perf loopback --timeline /dev/null --timeline-interval-us 0 -q" "perf loopback --timeline /nonexistent/t.csv -q" \
            "conform --out /dev/null" "conform --random 1 --out /dev/null/x"; do
    read -r -a words <<<"$args"
    check "bad: $args" 2 "$bin" "${words[@]}"
    [ "$(printf '%s\n' "$err" | wc -l)" = 1 ]; expect "$args: one stderr line" $?
    echo "$err" | grep -q -- "--"; expect "$args: names the option" $?
done
# A small loopback run with a capture: progress lines (\r) only on a terminal, and each frame
# recorded once, with the ends' MACs (both ends share the process: the tap is at A's ports, so A's
# data frames in the capture are exactly its data packets plus its retransmissions).
check perf-loopback-pcap 0 "$bin" --json perf loopback -n 64 -s 4096 --file-prefix cli-$$ --pcap "$tmp/lp.pcap"
! printf '%s' "$err" | grep -q $'\r'; expect "perf: no progress line when stderr is not a terminal" $?
printf '%s\n' "$out" | tail -n 1 >"$tmp/lp.json"
tshark -r "$tmp/lp.pcap" -X lua_script:"$(dirname "$0")/../../tools/wireshark/mroce.lua" -T fields \
    -e eth.src -e mroce.bth.opcode 2>/dev/null >"$tmp/lp.txt"
python3 - "$tmp/lp.json" "$tmp/lp.txt" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
rows = [l.split("\t") for l in open(sys.argv[2]).read().splitlines() if l]
assert rows, "no frames"
assert all(src not in ("00:00:00:00:00:00", "") for src, _ in rows), "a zero MAC"
a_data = sum(1 for src, op in rows if src == "02:00:00:00:00:0a" and int(op, 16) <= 0x05)
want = o["data_packets"] + o["retransmissions"]
assert a_data == want, f"A's data frames in the capture: {a_data}, sent: {want}"
PY
expect "perf loopback --pcap: every frame once, real MACs" $?
# fabric collective (when the fabric is built): misuse gets one line and exit 2; a small run ends
# with one JSON object whose every host holds the expected result.
if "$bin" fabric --help >/dev/null 2>&1; then
    for args in "fabric collective --op allgather" "fabric collective --algos tree" "fabric collective --min-mib 0" \
        "fabric planes --host-ring both" "fabric planes --hosts 8 --per-host 2 --watch-flow 16" \
        "fabric collective --hosts 8 --planes 2 --min-mib 0.25 --max-mib 0.25 --watch-flow 448"; do
        read -r -a words <<<"$args"
        check "bad: $args" 2 "$bin" "${words[@]}"
        [ "$(printf '%s\n' "$err" | wc -l)" = 1 ]; expect "$args: one stderr line" $?
    done
    check fabric-collective-json 0 "$bin" --json fabric collective --hosts 8 --planes 2 --min-mib 0.25 \
        --max-mib 0.25 --loss 0,1 --transports mroce --no-plots --watch-flow 100
    printf '%s\n' "$out" | tail -n 1 | python3 -c '
import json, sys
o = json.loads(sys.stdin.read())
rows = o["collective"]
assert o["pass"] and len(rows) == 4, rows
assert all(r["wrong_hosts"] == 0 and r["time_us"] > 0 for r in rows), rows
# The slowest step of the timed iteration, and the watched step sampled until it was done.
assert all(r["slowest_step"]["fct_us"] > 0 and r["slowest_step"]["step"] < r["steps"] for r in rows), rows
for r in rows:
    w = r["watch"]
    assert w["step"] == 100 and len(w["samples"]) > 1 and "retx_rto" in w["columns"], w
assert o["config"]["planes"] == 2 and all(r["planes"] == 2 for r in o["runs"]), o["config"]'
    expect "fabric collective --json: every host right, a row per algorithm and loss" $?
    check fabric-planes-json 0 "$bin" --json fabric planes --hosts 8 --per-host 2 --bytes 1000000 \
        --transports mroce --no-plots --watch-flow 3 --host-ring per-plane
    printf '%s\n' "$out" | tail -n 1 | python3 -c '
import json, sys
o = json.loads(sys.stdin.read())
assert o["pass"] and o["config"]["planes"] == [4, 8], o["config"]
assert o["config"]["mroce_host_ring"] == "per-plane", o["config"]
assert [r["planes"] for r in o["runs"]] == [4, 8], [r["planes"] for r in o["runs"]]
assert all(r["flows_done"] == r["flows"] == 16 for r in o["runs"]), o["runs"]
assert o["plane_ratio"]["mroce"] > 0, o["plane_ratio"]
assert o["plane_ratio_sustained"]["mroce"] > 0, o["plane_ratio_sustained"]
assert all(r["timeline"]["sustained_gbps"] > 0 for r in o["runs"]), o["runs"]
for r in o["runs"]:
    t = r["timeline"]
    done = t["done_50_90_99_100_us"]
    assert done == sorted(done) and abs(done[-1] - r["fct_max_us"]) < 1e-6, (done, r["fct_max_us"])
    assert len(t["flow_fct_us"]) == 16 and abs(max(t["flow_fct_us"]) - r["fct_max_us"]) < 1e-6, t["flow_fct_us"]
    assert abs(t["slowest_flow"]["fct_us"] - r["fct_max_us"]) < 1e-6, t["slowest_flow"]
    w = t["watch"]
    assert w["flow"] == 3 and w["columns"][4] == "share_mbps", w
    live = [s for s in w["samples"] if s[0] >= 0]
    assert any(s[1] > 0 and s[4] > 0 and s[5] >= 1 for s in live), live
    assert all(s[4] <= r["planes"] * 100000 for s in w["samples"]), w["samples"]'
    expect "fabric planes --json: the plane counts compared, each run with its own; timeline, watched flow" $?
fi
rm -rf "$tmp"

rm -f /tmp/cli_err.$$
echo "$pass passed, $fails failed"
[ "$fails" = 0 ]
