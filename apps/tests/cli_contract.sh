#!/usr/bin/env bash
# Checks the contract every mroce subcommand keeps (DEVELOPERS.md "Every CLI has ...").
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

check demo-json 0 "$bin" --json demo
last=$(printf '%s\n' "$out" | tail -n 1)
echo "$last" | python3 -c 'import json,sys; o=json.loads(sys.stdin.read()); assert isinstance(o, dict)'
expect "demo --json: last line is a JSON object" $?

rm -f /tmp/cli_err.$$
echo "$pass passed, $fails failed"
[ "$fails" = 0 ]
