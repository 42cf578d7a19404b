// The engine's io::PacketIo on DPDK ports: frames built in place in PacketBufs cross net_ring
// planes byte for byte without a copy, spread over the planes by ECMP on the UDP source port (the
// route the builder recorded in PacketBuf::route).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <vector>

#include "dpdk/engine_port.hpp"
#include "dpdk/udp_frame.hpp"
#include "impair/ecmp.hpp"
#include "impair/prng.hpp"

using namespace mroce;
using namespace mroce::dpdk;

namespace {

IoOptions two_ring_planes() {
  IoOptions o;
  o.eal.file_prefix = "mroce-test-" + std::to_string(getpid());
  o.ports = {"ring", "ring"};  // ports 0|1 and 2|3: two planes joining A and B
  o.mbuf_priv = kEnginePriv;
  return o;
}

size_t build(io::PacketBuf* b, uint64_t seq, uint16_t sport, size_t len) {
  UdpFrameSpec s;
  s.src_ip = *parse_ip("198.18.0.1");
  s.dst_ip = *parse_ip("198.18.0.2");
  s.sport = sport;
  const size_t off = build_udp_headers({b->data, b->cap}, len, s);
  b->data[off + 1] = 0x01;
  std::memcpy(b->data + off + 16, &seq, 8);
  for (size_t i = off + 24; i < len; ++i) b->data[i] = uint8_t(impair::mix64(seq + i));
  b->len = uint32_t(len);
  b->route = sport;  // what the engine's frame builder records: the port reads it, never the frame
  return off;
}

}  // namespace

TEST(DpdkEnginePort, FramesCrossPlanesByEcmpWithoutCopy) {
  IoContext ctx(two_ring_planes());
  ASSERT_EQ(ctx.planes(), 4u);
  EnginePort a(ctx, {0, 2}), b(ctx, {1, 3});
  DpdkClock clock;
  EXPECT_GT(clock.now_us(), 0u);
  const uint64_t n = 4000;
  std::map<uint8_t*, uint64_t> sent_data;  // data pointer -> seq (zero copy: same buffer arrives)
  std::vector<std::vector<uint8_t>> want(n);
  uint64_t got = 0, same_buffer = 0;
  uint64_t per_plane_want[2] = {0, 0};
  for (uint64_t seq = 0; seq < n;) {
    io::PacketBuf* burst[16];
    uint16_t k = 0;
    for (; k < 16 && seq < n; ++k, ++seq) {
      burst[k] = a.alloc_tx();
      ASSERT_NE(burst[k], nullptr);
      ASSERT_GE(burst[k]->cap, io::kBufSize);  // room for the engine's largest frame
      const uint16_t sport = uint16_t(49152 + seq % 16);
      build(burst[k], seq, sport, 100 + seq % 8000);
      want[seq].assign(burst[k]->data, burst[k]->data + burst[k]->len);
      sent_data[burst[k]->data] = seq;
      ++per_plane_want[impair::ecmp_link(sport, 2)];
    }
    a.tx_burst(burst, k);
    io::PacketBuf* rx[32];
    for (uint16_t r; (r = b.rx_burst(rx, 32)) > 0;) {
      for (uint16_t i = 0; i < r; ++i) {
        uint64_t s;
        std::memcpy(&s, rx[i]->data + 42 + 16, 8);
        ASSERT_LT(s, n);
        ASSERT_EQ(std::vector<uint8_t>(rx[i]->data, rx[i]->data + rx[i]->len), want[s]);
        same_buffer += sent_data.count(rx[i]->data) && sent_data[rx[i]->data] == s;
        ++got;
        b.free_rx(rx[i]);
      }
    }
  }
  EXPECT_EQ(got, n);
  EXPECT_EQ(same_buffer, n);
  // ECMP: each plane carried exactly the frames whose source port hashes to it, and both did.
  EXPECT_GT(per_plane_want[0], 0u);
  EXPECT_GT(per_plane_want[1], 0u);
  EXPECT_EQ(ctx.port(0).counters().tx_frames, per_plane_want[0]);
  EXPECT_EQ(ctx.port(2).counters().tx_frames, per_plane_want[1]);
  EXPECT_EQ(ctx.port(1).counters().rx_frames + ctx.port(3).counters().rx_frames, n);
}

TEST(DpdkEnginePort, RefusesPoolWithoutPrivateArea) {
  IoOptions o = two_ring_planes();
  o.mbuf_priv = 0;
  IoContext ctx(o);
  EXPECT_THROW(EnginePort(ctx, {0}), std::invalid_argument);
  o.mbuf_priv = kEnginePriv;
  EXPECT_THROW(EnginePort(ctx, {7}), std::invalid_argument);
}
