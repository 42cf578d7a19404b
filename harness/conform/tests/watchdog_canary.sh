#!/usr/bin/env bash
# The runner's wall-clock watchdog can fail a run: the "livelock" canary DUT never returns from a
# step once it has sent data, and `mroce conform` must report the test failed (exit 1) within the
# budget, naming the test and a replay command, instead of hanging.
#   watchdog_canary.sh PATH/TO/mroce [extra conform args, e.g. --random 2]
set -u
mroce=$1
shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s)
rc=0
timeout 60 "$mroce" conform --canary livelock --test-budget-s 2 --out '' --no-progress "$@" >"$out" 2>&1 || rc=$?
took=$(( $(date +%s) - start ))
cat "$out"
if [ "$rc" != 1 ]; then echo "FAIL: exit $rc, expected 1 (124: the watchdog never fired)"; exit 1; fi
if ! grep -q "not finished after 2 s of wall clock" "$out"; then echo "FAIL: no watchdog report"; exit 1; fi
if ! grep -q "replay: .*--canary livelock" "$out"; then echo "FAIL: no replay command"; exit 1; fi
if [ "$took" -gt 20 ]; then echo "FAIL: took ${took} s for a 2 s budget"; exit 1; fi
echo "PASS: the watchdog failed the livelocked DUT after ${took} s"
