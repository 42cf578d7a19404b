#!/usr/bin/env bash
# Black-box test of what `mroce diff` tells the user: the replay command it prints for a divergence
# must run as printed (pasted into a shell) and reproduce the divergence (exit 1), and the trace must
# agree without the planted canary bug (exit 0), so the exit 1 is the canary's and nothing else's.
# Misuse of the replay and diff flags: one stderr line, exit 2.
#   diff_replay.sh MROCE_BINARY
set -u
bin=$1
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
        echo "  stdout: $(printf '%s\n' "$out" | head -n 3)"
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

# ---- a divergence (the planted canary bug) and the command printed for it ----
# A trace directory with a space: the printed command must quote it.
dir="$tmp/trace dir"
check diff-canary 1 "$bin" --json diff --canary --runs 20 --seed 1 --trace-dir "$dir"
cmd=$(printf '%s\n' "$out" | sed -n 's/^replay: //p')
trace=$(printf '%s\n' "$out" | sed -n 's/^trace: //p')
[ -n "$cmd" ]; expect "diff-canary: a replay command is printed" $?
[ -n "$trace" ] && [ -f "$trace" ]; expect "diff-canary: the trace is written" $?
printf '%s\n' "$out" | tail -n 1 | python3 -c "
import json, sys
o = json.loads(sys.stdin.read())
assert o['command'] == 'diff' and o['divergences'] == 1, o
assert o['replay'] == sys.argv[1] and o['trace'] == sys.argv[2], o" "$cmd" "$trace"
expect "diff-canary: the JSON names the same trace and replay command" $?

# Run as printed, by a shell, from another directory.
check replay-as-printed 1 bash -c "cd / && $cmd"
printf '%s\n' "$out" | grep -q '^divergence at t='; expect "replay-as-printed: the divergence is reproduced" $?
check replay-without-canary 0 "$bin" replay --engine lockstep "$trace"
printf '%s\n' "$out" | grep -q '^in step$'; expect "replay-without-canary: model and engine agree" $?

# ---- no divergence: no replay command ----
check diff-clean 0 "$bin" --json diff --runs 2 --seed 1 --trace-dir "$tmp/clean"
printf '%s\n' "$out" | grep -q '^no divergence$'; expect "diff-clean: no divergence" $?
! printf '%s\n' "$out" | grep -q '^replay: '; expect "diff-clean: no replay command" $?

# ---- misuse: exit 2, one line ----
check replay-canary-model 2 "$bin" replay --canary "$trace" && one_line replay-canary-model
check replay-lockstep-save 2 "$bin" replay --engine lockstep --save "$tmp/x.trace" "$trace" &&
    one_line replay-lockstep-save
check replay-lockstep-missing 2 "$bin" replay --engine lockstep "$tmp/none.trace" && one_line replay-lockstep-missing
touch "$tmp/a-file"
check diff-bad-trace-dir 2 "$bin" diff --runs 1 --trace-dir "$tmp/a-file" && one_line diff-bad-trace-dir

echo "$pass passed, $fails failed"
[ "$fails" = 0 ]
