// bench_codec: per-packet decode + validation cost of the wire codecs, and CRC-32C throughput.
//
//   build-*/bin/bench_codec --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Machines are shared and noisy: compare codecs by the ratio of numbers taken in the same run.
// "Write0" (no payload) is the header cost: every check of [R-VAL-1] plus an ICRC over the 48
// header bytes. "Write4K" adds the ICRC over 4 KiB; Crc32c/4152 is that ICRC alone.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <span>
#include <vector>

#include "codec/fast_codec.hpp"
#include "codec/ref_codec.hpp"

namespace {

using namespace mroce::fast;

// A frame built with the production in-place builder.
struct Frame {
  alignas(64) uint8_t buf[kMaxFrameLen];
  uint32_t len = 0;
};

FrameTemplate path_template(bool v6) {
  PathConfig pc;
  pc.eth_dst = {2, 0, 0, 0, 0, 1};
  pc.eth_src = {2, 0, 0, 0, 0, 2};
  pc.ipv6 = v6;
  pc.ipv4_src = 0x0a000001;
  pc.ipv4_dst = 0x0a000002;
  pc.ipv6_src[0] = pc.ipv6_dst[0] = 0xfd;
  pc.ipv6_src[15] = 1;
  pc.ipv6_dst[15] = 2;
  pc.udp_sport = 50000;
  return FrameTemplate(pc);
}

Frame make_write(uint32_t payload, bool v6 = false) {
  Frame f;
  const FrameTemplate tpl = path_template(v6);
  uint8_t* p = put_write(tpl.begin(f.buf, true), BthFields{kFlagAr, 0x1234, 3, 1000},
                         DhFields{77, 2, 9, 1u << 20, 4096 * 5}, 0x7f0000001000ull, 0xabcd);
  for (uint32_t i = 0; i < payload; ++i) p[i] = uint8_t(i * 7);
  f.len = finalize(f.buf, payload);
  return f;
}

Frame make_ack(bool v6 = false) {
  Frame f;
  const FrameTemplate tpl = path_template(v6);
  uint8_t sack[32] = {0x5a, 0xff, 0x01};
  put_ack(tpl.begin(f.buf, false), BthFields{0, 0x1234, 3, 1000}, AckFields{1000, 3, 999, 25000, sack});
  f.len = finalize(f.buf, 0);
  return f;
}

void run_decode(benchmark::State& st, const Frame& f) {
  PacketView v;
  if (decode(f.buf, f.len, kDefaultUdpPort, v) != Error::None) {
    st.SkipWithError("frame does not decode");
    return;
  }
  for (auto _ : st) {
    const uint8_t* p = f.buf;
    benchmark::DoNotOptimize(p);  // the compiler must not hoist decode out of the loop
    Error e = decode(p, f.len, kDefaultUdpPort, v);
    benchmark::DoNotOptimize(e);
    benchmark::DoNotOptimize(v);
  }
  st.SetItemsProcessed(int64_t(st.iterations()));
  st.counters["frame_bytes"] = f.len;
}

// ---- fast codec: decode + validate ----

void BM_FastDecode_Write4K(benchmark::State& st) { run_decode(st, make_write(4096)); }
void BM_FastDecode_Write0(benchmark::State& st) { run_decode(st, make_write(0)); }
void BM_FastDecode_Write4K_V6(benchmark::State& st) { run_decode(st, make_write(4096, true)); }
void BM_FastDecode_Ack(benchmark::State& st) { run_decode(st, make_ack()); }
void BM_FastDecode_Ack_V6(benchmark::State& st) { run_decode(st, make_ack(true)); }
BENCHMARK(BM_FastDecode_Write4K);
BENCHMARK(BM_FastDecode_Write0);
BENCHMARK(BM_FastDecode_Write4K_V6);
BENCHMARK(BM_FastDecode_Ack);
BENCHMARK(BM_FastDecode_Ack_V6);

// Decode + read the fields an engine's receive path touches.
void BM_FastDecodeAndRead_Write0(benchmark::State& st) {
  const Frame f = make_write(0);
  PacketView v;
  for (auto _ : st) {
    const uint8_t* p = f.buf;
    benchmark::DoNotOptimize(p);
    Error e = decode(p, f.len, kDefaultUdpPort, v);
    uint64_t acc = uint64_t(e) + v.dcid() + v.path_id() + v.psn() + v.stream_id() + v.msn() + v.msg_offset() +
                   v.remote_va() + v.rkey() + v.ecn() + v.payload_len();
    benchmark::DoNotOptimize(acc);
  }
  st.SetItemsProcessed(int64_t(st.iterations()));
}
BENCHMARK(BM_FastDecodeAndRead_Write0);

// ---- fast codec: build in place (headers + finalize incl. ICRC; payload already in place) ----

void BM_FastBuild_Write(benchmark::State& st) {
  const uint32_t payload = uint32_t(st.range(0));
  const FrameTemplate tpl = path_template(false);
  Frame f = make_write(payload);
  uint32_t psn = 0;
  for (auto _ : st) {
    uint8_t* bth = tpl.begin(f.buf, true);
    put_write(bth, BthFields{0, 0x1234, 3, psn}, DhFields{psn, 2, 9, 1u << 20, 0}, 0x7f0000001000ull, 0xabcd);
    uint32_t n = finalize(f.buf, payload);
    benchmark::DoNotOptimize(n);
    benchmark::ClobberMemory();
    ++psn;
  }
  st.SetItemsProcessed(int64_t(st.iterations()));
}
BENCHMARK(BM_FastBuild_Write)->Arg(0)->Arg(4096);

void BM_FastBuild_Ack(benchmark::State& st) {
  const FrameTemplate tpl = path_template(false);
  Frame f;
  uint8_t sack[32] = {0x5a};
  uint32_t cpsn = 0;
  for (auto _ : st) {
    put_ack(tpl.begin(f.buf, false), BthFields{0, 0x1234, 3, cpsn}, AckFields{cpsn, 0, cpsn, 0, sack});
    uint32_t n = finalize(f.buf, 0);
    benchmark::DoNotOptimize(n);
    benchmark::ClobberMemory();
    ++cpsn;
  }
  st.SetItemsProcessed(int64_t(st.iterations()));
}
BENCHMARK(BM_FastBuild_Ack);

// ---- CRC-32C throughput ----

template <uint32_t (*Fn)(const uint8_t*, size_t)>
void BM_Crc(benchmark::State& st) {
  std::vector<uint8_t> buf(size_t(st.range(0)));
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = uint8_t(i * 13 + 1);
  for (auto _ : st) {
    const uint8_t* p = buf.data();
    benchmark::DoNotOptimize(p);
    uint32_t c = Fn(p, buf.size());
    benchmark::DoNotOptimize(c);
  }
  st.SetBytesProcessed(int64_t(st.iterations()) * int64_t(buf.size()));
}
// 64: an ACK's ICRC coverage; 4152: a 4 KiB WRITE's (BTH + DH + RETH + payload).
BENCHMARK_TEMPLATE(BM_Crc, crc32c)->Name("BM_Crc32c")->Arg(48)->Arg(64)->Arg(1500)->Arg(4152)->Arg(8192);
BENCHMARK_TEMPLATE(BM_Crc, crc32c_scalar)->Name("BM_Crc32cScalar")->Arg(48)->Arg(64)->Arg(1500)->Arg(4152)->Arg(8192);

// ---- reference codec (spec_model/codec) ----
// Decode + validate of the same Frame bytes by the reference codec. The reference codec favours
// clarity (bitwise CRC-32C, a vector per frame), so it is expected to be far slower; the counters
// below give the ratio from one measurement: each benchmark also times the fast decode of the
// same frame, interleaved with the reference decode, and reports
//   fast_ns, ref_ns   best-of-rounds ns per decode
//   ref_over_fast     ref_ns / fast_ns (how many times faster the fast codec is)

// Best-of-5 ns per call of fn over `iters` calls.
template <class Fn>
double best_ns_per_call(Fn&& fn, int iters) {
  double best = 1e300;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) fn();
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count() / iters);
  }
  return best;
}

void run_ref_decode(benchmark::State& st, const Frame& f) {
  const std::span<const uint8_t> bytes(f.buf, f.len);
  if (!mroce::ref::decode(bytes).ok()) {
    st.SkipWithError("frame does not decode (reference codec)");
    return;
  }
  for (auto _ : st) {
    const uint8_t* p = f.buf;
    benchmark::DoNotOptimize(p);
    auto r = mroce::ref::decode(std::span<const uint8_t>(p, f.len));
    benchmark::DoNotOptimize(r);
  }
  st.SetItemsProcessed(int64_t(st.iterations()));
  st.counters["frame_bytes"] = f.len;

  // The ratio, from interleaved timings of both codecs on these bytes.
  PacketView v;
  const auto fast_once = [&] {
    const uint8_t* p = f.buf;
    benchmark::DoNotOptimize(p);
    Error e = decode(p, f.len, kDefaultUdpPort, v);
    benchmark::DoNotOptimize(e);
    benchmark::DoNotOptimize(v);
  };
  const auto ref_once = [&] {
    const uint8_t* p = f.buf;
    benchmark::DoNotOptimize(p);
    auto r = mroce::ref::decode(std::span<const uint8_t>(p, f.len));
    benchmark::DoNotOptimize(r);
  };
  // Size the loops to ~2 ms each from one quick probe of the reference decode.
  const double probe = best_ns_per_call(ref_once, 8);
  const int ref_iters = std::max(8, int(2e6 / std::max(probe, 1.0)));
  double fast_ns = 1e300, ref_ns = 1e300;
  for (int k = 0; k < 3; ++k) {
    fast_ns = std::min(fast_ns, best_ns_per_call(fast_once, ref_iters * 20));
    ref_ns = std::min(ref_ns, best_ns_per_call(ref_once, ref_iters));
  }
  st.counters["fast_ns"] = fast_ns;
  st.counters["ref_ns"] = ref_ns;
  st.counters["ref_over_fast"] = ref_ns / fast_ns;
}

void BM_RefDecode_Write4K(benchmark::State& st) { run_ref_decode(st, make_write(4096)); }
void BM_RefDecode_Write0(benchmark::State& st) { run_ref_decode(st, make_write(0)); }
void BM_RefDecode_Write4K_V6(benchmark::State& st) { run_ref_decode(st, make_write(4096, true)); }
void BM_RefDecode_Ack(benchmark::State& st) { run_ref_decode(st, make_ack()); }
void BM_RefDecode_Ack_V6(benchmark::State& st) { run_ref_decode(st, make_ack(true)); }
BENCHMARK(BM_RefDecode_Write4K);
BENCHMARK(BM_RefDecode_Write0);
BENCHMARK(BM_RefDecode_Write4K_V6);
BENCHMARK(BM_RefDecode_Ack);
BENCHMARK(BM_RefDecode_Ack_V6);

}  // namespace

BENCHMARK_MAIN();
