#!/usr/bin/env bash
# `mroce perf --timeline`: a short loopback run writes a CSV with the documented header and one row
# per path per sample, with plausible values, whose last rows match the run's JSON; and
# bench/dpdk/timeline_plot.sh turns it into a PNG (when gnuplot is installed). Not a timed test.
set -u
bin=$1
plot=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! "$bin" --json perf loopback -n 400 -s 65536 --loss 1 --paths 4 --timeline "$tmp/t.csv" \
        --timeline-interval-us 200 -q --file-prefix "timeline-$$" >"$tmp/out.txt" 2>"$tmp/err.txt"; then
    echo "FAIL: perf run"; cat "$tmp/out.txt" "$tmp/err.txt"; exit 1
fi
tail -n 1 "$tmp/out.txt" >"$tmp/run.json"
python3 - "$tmp/t.csv" "$tmp/run.json" <<'PY' || exit 1
import csv, json, sys
header = ("time_us,path,state,cwnd,in_flight,srtt_us,rto_us,packets_sent,retx_gap,retx_probe,retx_rto,"
          "retx_rnr,retx_nak,retx_spurious,rate_ceiling_mbps,credit_bits,tx_queue_depth")
lines = open(sys.argv[1]).read().splitlines()
run = json.load(open(sys.argv[2]))
assert lines[0] == header, f"header: {lines[0]}"
rows = list(csv.DictReader(lines))
paths = len(run["paths"])
assert run["timeline"]["rows"] == len(rows), "the JSON counts the rows"
assert len(rows) >= 2 * paths and len(rows) % paths == 0, f"{len(rows)} rows for {paths} paths"
causes = ("gap", "probe", "rto", "rnr", "nak", "spurious")
last = {}
prev_t = -1
for r in rows:
    t, p = int(r["time_us"]), int(r["path"])
    assert t >= prev_t, "time goes forward"
    prev_t = t
    assert 0 <= p < paths and r["state"] in ("ACTIVE", "SUSPECT", "FAILED"), r
    assert 1 <= int(r["cwnd"]) <= 256 and 0 <= int(r["in_flight"]) <= 256, r
    assert 0 <= int(r["srtt_us"]) < 10_000_000 and 0 < int(r["rto_us"]) < 10_000_000, r
    assert int(r["tx_queue_depth"]) >= 0, "ring ports report their queue depth"
    if p in last:  # cumulative counts never go back
        for k in ["packets_sent"] + ["retx_" + c for c in causes]:
            assert int(r[k]) >= int(last[p][k]), (k, r)
    last[p] = r
for q in run["paths"]:  # the final sample is the run's end state
    r = last[q["path"]]
    assert int(r["packets_sent"]) == q["packets"], (r, q)
    for c in causes:
        assert int(r["retx_" + c]) == q["retx_by_cause"][c], (c, r, q)
assert int(rows[-1]["time_us"]) > 0
print(f"{len(rows)} rows, {paths} paths, retransmissions by cause {run['retx_by_cause']}")
PY
if command -v gnuplot >/dev/null; then
    bash "$plot" "$tmp/t.csv" "$tmp/t.png" >/dev/null || { echo "FAIL: timeline_plot.sh"; exit 1; }
    [ "$(head -c 8 "$tmp/t.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || { echo "FAIL: not a PNG"; exit 1; }
    echo "plot: $(stat -c %s "$tmp/t.png") bytes"
fi
echo "perf --timeline: ok"
