#!/usr/bin/env bash
# conform.Canary.*: the suite must fail a deliberately non-conformant DUT, naming the requirement
# its fault breaks.
#   canary.sh PATH/TO/mroce CANARY RULE [--random N]
# Passes when `mroce conform --canary CANARY` exits 1 and its JSON names RULE in a violation.
set -euo pipefail
mroce=$1 canary=$2 rule=$3
shift 3
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc=0
"$mroce" --json conform --canary "$canary" --out '' --no-progress "$@" >"$out" 2>&1 || rc=$?
if [ "$rc" != 1 ]; then
  tail -5 "$out"
  echo "FAIL: the canary DUT '$canary' was not failed (exit $rc, expected 1)"
  exit 1
fi
tail -n 1 "$out" | python3 -c '
import json, sys
rule = sys.argv[1]
o = json.loads(sys.stdin.read())
tests = o.get("tests", []) + o.get("failures", [])
rules = {v["rule"] for t in tests for v in t.get("violations", [])}
failed = [t.get("id", t.get("seed")) for t in tests if t.get("outcome", "fail") in ("fail", "timing")]
print(f"canary failed {len(failed)} tests; rules named: {sorted(rules)}")
sys.exit(0 if rule in rules else 1)
' "$rule" || { echo "FAIL: no violation of $rule reported"; exit 1; }
echo "PASS"
