#!/usr/bin/env bash
# The requirement index must be able to fail, on the real SPEC.md: a tag naming no requirement is an
# error (exit 1); a tagged model rule plus a tagged test counts as covered only when the test asserts.
set -u
reqindex=$1
spec=$2
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/spec_model" "$t/properties"
cp "$spec" "$t/spec_model/SPEC.md"
echo '// [R-SACK-999] no such requirement' > "$t/spec_model/model.cpp"
python3 "$reqindex" --root "$t" >/dev/null 2>&1
[ $? = 1 ] || { echo "FAIL: unknown tag was not rejected"; exit 1; }
echo '// [R-HDR-20] bit order' > "$t/spec_model/model.cpp"
echo 'TEST(X, R_HDR_20_BitOrder) {}' > "$t/properties/t.cpp"
out=$(python3 "$reqindex" --root "$t" --json) || { echo "FAIL: clean tree rejected"; exit 1; }
echo "$out" | tail -1 | grep -q '"covered": 0,' || { echo "FAIL: a test without assertion counted: $out"; exit 1; }
echo 'TEST(X, R_HDR_20_BitOrder) { EXPECT_EQ(1, 1); }' > "$t/properties/t.cpp"
out=$(python3 "$reqindex" --root "$t" --json) || { echo "FAIL: clean tree rejected"; exit 1; }
echo "$out" | tail -1 | grep -q '"covered": 1,' || { echo "FAIL: coverage not counted: $out"; exit 1; }
# --strict: every other MUST of the real spec is uncovered in this tree and has no reason.
python3 "$reqindex" --root "$t" --strict >/dev/null 2>&1
[ $? = 1 ] || { echo "FAIL: --strict accepted uncovered MUSTs"; exit 1; }
echo "4 passed, 0 failed"
