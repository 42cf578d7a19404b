#!/usr/bin/env bash
# Instructions per data packet on the engine's send and receive paths, counted by callgrind on a fixed
# workload (bench/engine/workload.cpp: two engines over the in-memory loop, Writes of 64 KiB in 4 KiB
# packets by default, no loss, virtual time).
#
#   bench/engine/callgrind.sh [build-dir] [packets] [message-bytes] [packet-payload-bytes]
#
# Send path: Device::post_write + Device::progress on the sender (building and sending data, reading
# ACKs). Receive path: Device::progress on the receiver (checking, placing, acknowledging). Setup is
# excluded. The ICRC (CRC-32C, computed on send and verified on receive) and the payload copies are
# reported separately because they scale with the payload, not with the header processing.
set -euo pipefail
build=${1:-build}
packets=${2:-20000}
msg=${3:-65536}
pkt=${4:-4096}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin="$root/$build/bin/engine_workload"
[[ -x $bin ]] || { echo "build $bin first: cmake --build $build --target engine_workload" >&2; exit 1; }
out=$(mktemp /tmp/engine_callgrind.XXXXXX)
trap 'rm -f "$out"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" "$packets" "$msg" "$pkt" >/dev/null 2>&1
incl() {  # inclusive instruction count of the first function matching $1
  local v
  v=$(callgrind_annotate --auto=no --inclusive=yes "$out" 2>/dev/null | grep -E "$1" | head -1 | awk '{gsub(",","",$1); print $1}')
  echo "${v:-0}"
}
send=$(( $(incl 'workload\.cpp:send_side\(') + $(incl 'workload\.cpp:post\(') ))
recv=$(incl 'workload\.cpp:recv_side\(')
crc=$(incl 'crc32c\.cpp:mroce::fast::crc32c\(')
copy=$(incl 'memmove-vec-unaligned-erms|memcpy-vec-unaligned-erms')
awk -v s="$send" -v r="$recv" -v c="$crc" -v m="$copy" -v n="$packets" -v b="$msg" -v p="$pkt" 'BEGIN {
  printf "workload: %d data packets, Writes of %d bytes (%d-byte packets), no loss\n", n, b, p
  printf "send path:    %7.0f instructions per data packet\n", s / n
  printf "receive path: %7.0f instructions per data packet\n", r / n
  printf "  of which ICRC (CRC-32C, both sides): %7.0f per data packet\n", c / n
  if (m > 0) printf "  of which payload copies (both sides): %7.0f per data packet\n", m / n
  else printf "  payload copies: not attributed separately (small copies)\n"
  printf "header processing (both paths, without ICRC and copies): %7.0f per data packet\n", (s + r - c - m) / n
}'
