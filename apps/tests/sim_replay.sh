#!/usr/bin/env bash
# Black-box tests of `mroce sim` and `mroce replay`: --help, misuse (exit 2, one stderr line), a
# short campaign that passes with a JSON last line, a failing campaign (the deliberately broken
# model) whose trace replays to the same failure, and the replay of a known trace.
#   sim_replay.sh MROCE_BINARY DATA_DIR
set -u
bin=$1
data=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
pass=0
check() {  # name, expected-exit, command...; captures stdout/stderr into $out/$err
    local name=$1 want=$2
    shift 2
    out=$("$@" 2>"$tmp/err")
    got=$?
    err=$(cat "$tmp/err")
    if [ "$got" != "$want" ]; then
        echo "FAIL $name: exit $got, want $want"
        echo "  stderr: $err"
        fails=$((fails + 1))
        return 1
    fi
    pass=$((pass + 1))
    return 0
}
expect() {  # name, condition-result
    if [ "$2" = 0 ]; then pass=$((pass + 1)); else echo "FAIL $1"; fails=$((fails + 1)); fi
}
one_line() {  # name: stderr is exactly one non-empty line, stdout empty
    [ -n "$err" ] && [ "$(printf '%s\n' "$err" | wc -l)" = 1 ]; expect "$1: one stderr line" $?
    [ -z "$out" ]; expect "$1: nothing on stdout" $?
}
json_last() {  # name, python condition on o (the last stdout line as JSON)
    printf '%s\n' "$out" | tail -n 1 |
        python3 -c "import json,sys; o=json.loads(sys.stdin.read()); assert isinstance(o, dict); assert $2, o"
    expect "$1: last line is a JSON object with $2" $?
}

# ---- help ----
check sim-help 0 "$bin" sim --help
echo "$out" | grep -q -- "--runs"; expect "sim help names --runs" $?
echo "$out" | grep -q "loss_ppm="; expect "sim help lists the knobs" $?
check replay-help 0 "$bin" replay --help
echo "$out" | grep -q -- "--engine"; expect "replay help names --engine" $?
check help-lists 0 "$bin" --help
echo "$out" | grep -q "sim"; expect "help lists sim" $?
echo "$out" | grep -q "replay"; expect "help lists replay" $?

# ---- misuse: exit 2, one line ----
check sim-zero-runs 2 "$bin" sim --runs 0 && one_line sim-zero-runs
check sim-runs-and-minutes 2 "$bin" sim --runs 3 --minutes 1 && one_line sim-runs-and-minutes
check sim-unknown-knob 2 "$bin" sim --runs 1 --trace-dir "$tmp" no_such_knob=1 && one_line sim-unknown-knob
check sim-bad-knob 2 "$bin" sim --runs 1 --trace-dir "$tmp" loss_ppm=lots && one_line sim-bad-knob
check sim-not-a-knob 2 "$bin" sim --runs 1 --trace-dir "$tmp" loss_ppm && one_line sim-not-a-knob
check sim-bad-ppm 2 "$bin" sim --runs 1 --loss-ppm 2000000 && one_line sim-bad-ppm
check sim-bad-flag 2 "$bin" sim --no-such-flag && one_line sim-bad-flag
check replay-no-file 2 "$bin" replay && one_line replay-no-file
check replay-missing-file 2 "$bin" replay "$tmp/does-not-exist.trace" && one_line replay-missing-file
check replay-bad-engine 2 "$bin" replay --engine warp "$data/known_canceled.trace" && one_line replay-bad-engine
printf 'mroce-trace 1\nseed 1\nbogus line\n' >"$tmp/bad.trace"
check replay-malformed 2 "$bin" replay "$tmp/bad.trace" && one_line replay-malformed
echo "$err" | grep -q "trace line 3"; expect "replay-malformed names the line" $?

# ---- a short campaign passes ----
check sim-short 0 "$bin" --json sim --runs 6 --seed 5 --trace-dir "$tmp"
json_last sim-short 'o["command"] == "sim" and o["pass"] is True and o["runs"] == 6 and o["violations"] == 0 and o["frames"] > 0 and o["completions"] > 0'
[ "$(printf '%s\n' "$out" | grep -c '^run ')" = 6 ]; expect "sim-short: one line per run" $?
printf '%s\n' "$out" | grep -q '^total runs=6 '; expect "sim-short: totals line" $?
check sim-loss 0 "$bin" sim --runs 3 --loss-ppm 50000 --ce-ppm 20000 connections=2 handshake_fault_ppm=1000000 --trace-dir "$tmp"
printf '%s\n' "$out" | grep -q 'handshake=faulty'; expect "sim-loss: handshake faults applied" $?
printf '%s\n' "$out" | grep -q 'loss_ppm=50000'; expect "sim-loss: --loss-ppm applied" $?

# ---- a failing campaign writes a trace that replays to the same failure ----
check sim-canary 1 "$bin" --json sim --runs 10 --seed 1 --trace-dir "$tmp/canary" canary=1 loss_ppm=150000 bad_ppm=0 handshake_fault_ppm=0
json_last sim-canary 'o["pass"] is False and o["failed_runs"] > 0 and "trace" in o["failed"][0]'
trace=$(printf '%s\n' "$out" | sed -n 's/^  trace: //p' | head -n 1)
[ -n "$trace" ] && [ -f "$trace" ]; expect "sim-canary: trace file written" $?
printf '%s\n' "$out" | grep -q "^  replay: .* replay $trace\$"; expect "sim-canary: replay command printed" $?
check replay-canary 1 "$bin" --json replay "$trace"
printf '%s\n' "$out" | grep -q '^reproduced: yes'; expect "replay-canary: reproduced" $?
printf '%s\n' "$out" | grep -q '^verdict: fail'; expect "replay-canary: fails again" $?
printf '%s\n' "$out" | grep -q '^first violation: '; expect "replay-canary: names the first violation" $?
json_last replay-canary 'o["reproduced"] is True and o["pass"] is False and o["violations"] > 0 and o["first_violation"]'
# A tampered event line is a divergence.
sed '0,/ tx #3 /s// tx #9 /' "$trace" >"$tmp/tampered.trace"
check replay-tampered 1 "$bin" --json replay "$tmp/tampered.trace"
printf '%s\n' "$out" | grep -q '^reproduced: NO, first difference at event'; expect "replay-tampered: divergence found" $?
json_last replay-tampered 'o["reproduced"] is False and o["first_difference"]["recorded"] != o["first_difference"]["replayed"]'

# ---- a known trace (scenario only: Canceled receives, refused posts, two connections) ----
check replay-known 0 "$bin" --json replay --save "$tmp/known-full.trace" "$data/known_canceled.trace"
printf '%s\n' "$out" | grep -q '^verdict: pass'; expect "replay-known: passes" $?
json_last replay-known 'o["pass"] is True and o["reproduced"] is None and o["events"] > 0'
grep -q 'status=Canceled' "$tmp/known-full.trace"; expect "replay-known: Canceled receives in the rerun" $?
check replay-known-full 0 "$bin" replay "$tmp/known-full.trace"
printf '%s\n' "$out" | grep -q '^reproduced: yes'; expect "replay-known-full: the saved trace reproduces" $?
check replay-stdin 0 "$bin" replay - <"$data/known_canceled.trace"

echo "$pass passed, $fails failed"
[ "$fails" = 0 ]
