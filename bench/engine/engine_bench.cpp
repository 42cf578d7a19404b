// Two engines back to back over the in-memory loop, on one core: Writes of
// `msg` bytes (4 KiB packets) with up to 64 work requests in flight, under random loss. Reported per
// run: data packets per second and payload Gb/s (both engines' work on this one core: every packet is
// built, sent, received, checked and placed), and the same bytes copied by plain memcpy in 4 KiB
// chunks between buffers of the same size, measured in the same run, with the ratio.
//
// Rates are per second of this thread's CPU time (CLOCK_THREAD_CPUTIME_ID): the machine is shared and
// wall time would measure the other tenants. The engines' clock is virtual, one microsecond per turn of
// the loop (post, then drain both receive rings): with one core playing both ends, the sender's own
// burst (up to 4 paths x 256 packets) would otherwise delay the receiver by milliseconds and fire
// RTOs that no real network caused.
#include <benchmark/benchmark.h>

#include <time.h>

#include <cstring>
#include <memory>
#include <vector>

#include "io/mem_loop.hpp"
#include "mroce/mroce.hpp"

namespace {

using namespace mroce;

constexpr size_t kMem = 16 << 20;

uint64_t thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

struct Rig {
  io::ManualClock clock;
  io::MemLoop loop;
  std::unique_ptr<Device> a, b;
  std::unique_ptr<uint8_t[]> ma, mb;
  MemoryRegion ra{}, rb{};
  uint32_t conn = 0;
  uint64_t x = 88172645463325252ull;
  uint32_t loss_per_100k = 0;

  Rig(uint32_t loss_per_100k_, uint16_t max_payload, uint32_t ack_every = 4)
      : loop(io::MemLoop::Options{4096, 4096, 0, nullptr}), loss_per_100k(loss_per_100k_) {
    if (loss_per_100k) {
      loop.filter = [this](int, const uint8_t*, uint32_t) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return x % 100000 < loss_per_100k ? io::Fate::Drop : io::Fate::Deliver;
      };
    }
    DeviceConfig ca, cb;
    ca.self.mac = {2, 0, 0, 0, 0, 1};
    ca.self.ip = {10, 0, 0, 1};
    cb.self.mac = {2, 0, 0, 0, 0, 2};
    cb.self.ip = {10, 0, 0, 2};
    cb.first_conn_id = 1000;
    ca.offer.max_payload = cb.offer.max_payload = max_payload;
    ca.ack_every = cb.ack_every = ack_every;
    a = Device::open(ca, loop.port(0), clock);
    b = Device::open(cb, loop.port(1), clock);
    ma = std::make_unique<uint8_t[]>(kMem);
    mb = std::make_unique<uint8_t[]>(kMem);
    std::memset(ma.get(), 0x11, kMem);
    std::memset(mb.get(), 0, kMem);
    const uint32_t acc = access::kLocalWrite | access::kRemoteWrite | access::kRemoteRead;
    a->reg_mr(ma.get(), kMem, acc, &ra);
    b->reg_mr(mb.get(), kMem, acc, &rb);
    a->connect(b->config().self, &conn);
    ConnEvent ev;
    while (a->poll_events(&ev, 1) == 0) {
      clock.advance(1);
      a->progress();
      b->progress();
    }
  }
};

double memcpy_seconds(uint64_t bytes) {
  static std::vector<uint8_t> src(kMem, 0x22), dst(kMem, 0);
  const uint64_t t0 = thread_cpu_ns();
  uint64_t off = 0;
  for (uint64_t done = 0; done < bytes; done += 4096) {
    std::memcpy(dst.data() + off, src.data() + off, 4096);
    off = (off + 4096) % kMem;
  }
  benchmark::DoNotOptimize(dst.data());
  benchmark::ClobberMemory();
  return double(thread_cpu_ns() - t0) / 1e9;
}

// Args: loss in 1/100000, message size, packet payload size (the negotiated Max Payload), and
// ACK_EVERY (4 is the spec's default; [R-ACK-3] allows coalescing up to 16).
void BM_Transfer(benchmark::State& state) {
  Rig r(uint32_t(state.range(0)), uint16_t(state.range(2)), uint32_t(state.range(3)));
  const uint32_t msg = uint32_t(state.range(1));
  const uint32_t slots = uint32_t(kMem / 2 / msg);
  uint64_t posted = 0, completed = 0, bytes = 0, failed = 0;
  WorkCompletion wc[64];
  const uint64_t pkts0 = r.a->counters().data_sent;
  const uint64_t t0 = thread_cpu_ns();
  for (auto _ : state) {
    r.clock.advance(1);
    while (posted - completed < 64) {
      const uint64_t off = (posted % slots) * msg;
      if (r.a->post_write(r.conn, uint16_t(posted % 4), posted, Sge{r.ra.iova + off, msg, r.ra.lkey}, r.rb.iova + off,
                          r.rb.rkey) != Result::Ok)
        break;
      ++posted;
    }
    // Drain both receive rings (a NIC's rx ring is emptied continuously, not one burst per turn).
    while (r.a->progress() + r.b->progress() > 0) {}
    for (int n; (n = r.a->poll_cq(wc, 64)) > 0;) {
      completed += uint64_t(n);
      for (int i = 0; i < n; ++i) {
        bytes += wc[i].byte_len;
        failed += wc[i].status != Status::Success;
      }
    }
  }
  const double secs = double(thread_cpu_ns() - t0) / 1e9;
  const uint64_t pkts = r.a->counters().data_sent - pkts0;
  const double mc = memcpy_seconds(bytes);
  state.counters["Gbps"] = double(bytes) * 8 / secs / 1e9;
  state.counters["Mpps"] = double(pkts) / secs / 1e6;
  state.counters["ns_per_pkt"] = secs * 1e9 / double(pkts ? pkts : 1);
  state.counters["memcpy_Gbps"] = double(bytes) * 8 / mc / 1e9;
  state.counters["ratio"] = mc / secs;
  state.counters["retx"] = double(r.a->counters().retransmissions);
  state.counters["probes"] = double(r.a->counters().probes_sent);
  state.counters["repaths"] = double(r.a->counters().repaths);
  state.counters["probes"] = double(r.a->counters().probes_sent);
  state.counters["repaths"] = double(r.a->counters().repaths);
  state.counters["failed"] = double(failed);
  state.counters["nobuf"] = double(r.a->counters().tx_no_buffer + r.b->counters().tx_no_buffer +
                                   r.loop.stats().ring_full[0] + r.loop.stats().ring_full[1]);
  state.SetBytesProcessed(int64_t(bytes));
}
// 4 KiB packets at 0%, 1% and 10% loss; then per-packet cost with small payloads (256-byte packets
// of 64 KiB messages: header processing, little payload work) and per-message cost (64-byte Writes).
BENCHMARK(BM_Transfer)
    ->ArgNames({"loss_per_100k", "msg", "pkt", "ack_every"})
    ->Args({0, 65536, 4096, 4})
    ->Args({1000, 65536, 4096, 4})
    ->Args({10000, 65536, 4096, 4})
    ->Args({0, 65536, 256, 4})
    ->Args({0, 64, 4096, 4})
    ->Args({0, 65536, 4096, 16})
    ->Args({0, 65536, 256, 16})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
