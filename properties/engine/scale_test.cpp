// [R-CONN-5] at scale: 100,000 connections between two engines in one process, handshake included,
// over the in-memory loop. Reports the bytes an idle connection costs, then runs one keep-alive round
// on every connection (the timer wheel firing 100k timers per side) and a transfer on one of them.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "io/mem_loop.hpp"
#include "mroce/mroce.hpp"

namespace mroce::testing {
namespace {

uint64_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * 4096;
}

constexpr uint32_t kConns = 100000;

DeviceConfig scale_config(int side) {
  DeviceConfig c;
  c.self.mac = {0x02, 0, 0, 0, 0, uint8_t(side + 1)};
  c.self.ip = {10, 0, 0, uint8_t(side + 1)};
  c.first_conn_id = side == 0 ? 1 : 0x10000000;
  c.max_connections = kConns + 16;
  c.max_work_requests = 1024;
  c.max_receives = 1024;
  c.max_unconfirmed_per_source = kConns + 16;  // one initiator opens them all before using any
  c.max_window_blocks = 256;
  c.cq_size = 1024;
  c.event_queue_size = 1024;
  c.offer.max_payload = 256;  // small frames: the loop's buffers are 512 bytes
  return c;
}

TEST(EngineScale, R_CONN_5_HundredThousandConnections) {
  const uint64_t rss0 = rss_bytes();
  io::ManualClock clock;
  io::MemLoop loop(io::MemLoop::Options{300000, 262144, 0, &clock, 512});
  auto a = Device::open(scale_config(0), loop.port(0), clock);
  auto b = Device::open(scale_config(1), loop.port(1), clock);
  ASSERT_TRUE(a && b);
  const uint64_t rss1 = rss_bytes();

  uint32_t up[2] = {0, 0}, down[2] = {0, 0};
  uint32_t last_a = 0;
  auto drain = [&] {
    for (;;) {
      const int n = a->progress() + b->progress();
      ConnEvent ev[256];
      for (int s = 0; s < 2; ++s) {
        Device& d = s ? *b : *a;
        for (int k; (k = d.poll_events(ev, 256)) > 0;)
          for (int i = 0; i < k; ++i) {
            if (ev[i].kind == ConnEvent::Kind::Up) {
              ++up[s];
              if (s == 0) last_a = ev[i].conn;
            } else {
              ++down[s];
            }
          }
      }
      if (n == 0) break;
    }
  };
  for (uint32_t i = 0; i < kConns; ++i) {
    uint32_t id = 0;
    ASSERT_EQ(a->connect(b->config().self, &id), Result::Ok) << i;
    if (i % 1000 == 999) drain();
  }
  drain();
  EXPECT_EQ(up[0], kConns);
  EXPECT_EQ(up[1], kConns);
  EXPECT_EQ(down[0] + down[1], 0u);
  const uint64_t rss2 = rss_bytes();

  const MemoryUsage ua = a->memory_usage(), ub = b->memory_usage();
  const double state_per_conn = double(ua.connection_bytes + ub.connection_bytes) / (2.0 * kConns);
  const double prealloc_per_conn = double(ua.preallocated_bytes + ub.preallocated_bytes) / (2.0 * kConns);
  const double rss_per_conn = double(rss2 - rss1) / (2.0 * kConns);
  std::printf("connections: %u per side, all up\n", kConns);
  std::printf(
      "bytes per idle connection: %.0f (connection state incl. 4 paths + 4 streams), "
      "%.0f (its share of the pools sized for %u connections)\n",
      state_per_conn, prealloc_per_conn, kConns + 16);
  std::printf(
      "process RSS: %.1f MB before open, %.1f MB after open, %.1f MB with 2 x %u connections "
      "(%.0f bytes per connection measured)\n",
      rss0 / 1e6, rss1 / 1e6, rss2 / 1e6, kConns, rss_per_conn);
  EXPECT_LT(state_per_conn, 2048.0);

  // One keep-alive round on every connection of both sides [R-CONN-6]: 2 x 100k timers fire at the
  // same time; every PROBE is answered, nothing fails.
  const uint64_t probes0 = a->counters().probes_sent + b->counters().probes_sent;
  clock.set(clock.now_us() + 100000);
  drain();
  EXPECT_EQ(a->counters().probes_sent + b->counters().probes_sent - probes0, 2ull * kConns);
  EXPECT_EQ(loop.stats().ring_full[0] + loop.stats().ring_full[1], 0u);
  clock.set(clock.now_us() + 60000);  // past PEER_TIMEOUT: answered probes leave nothing waiting
  drain();
  EXPECT_EQ(down[0] + down[1], 0u);

  // And the last connection still carries data.
  std::vector<uint8_t> src(100000, 0x5A), dst(100000, 0);
  MemoryRegion ms, md;
  ASSERT_EQ(a->reg_mr(src.data(), src.size(), access::kLocalWrite, &ms), Result::Ok);
  ASSERT_EQ(b->reg_mr(dst.data(), dst.size(), access::kRemoteWrite | access::kLocalWrite, &md), Result::Ok);
  ASSERT_EQ(a->post_write(last_a, 0, 1, Sge{ms.iova, uint32_t(src.size()), ms.lkey}, md.iova, md.rkey), Result::Ok);
  WorkCompletion wc;
  int got = 0;
  for (int k = 0; k < 100000 && !got; ++k) {
    clock.advance(1);
    drain();
    got = a->poll_cq(&wc, 1);
  }
  ASSERT_EQ(got, 1);
  EXPECT_EQ(wc.status, Status::Success);
  EXPECT_EQ(src, dst);
}

}  // namespace
}  // namespace mroce::testing
