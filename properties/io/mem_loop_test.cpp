// impl/io: what the in-memory loop does to each frame for each fate, and the route every frame the
// engine transmits carries in its PacketBuf (the UDP source port it wrote, [R-ENC-6]).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include "impair/ecn.hpp"
#include "impair/frame.hpp"
#include "io/mem_loop.hpp"
#include "mroce/mroce.hpp"

namespace mroce::testing {
namespace {

namespace im = impair;

// An Ethernet / IPv4 / UDP frame with a valid header checksum, the given ECN and a BTH opcode.
std::vector<uint8_t> ipv4_frame(uint8_t ecn, uint16_t sport, uint8_t fill) {
  std::vector<uint8_t> f(14 + 20 + 8 + 16 + 64, fill);
  im::store16(&f[12], im::kEtherIpv4);
  f[14] = 0x45;
  f[15] = uint8_t(26 << 2 | ecn);
  im::store16(&f[16], uint16_t(f.size() - 14));
  f[23] = 17;
  im::store16(&f[24], im::ipv4_checksum({&f[14], 20}));
  im::store16(&f[34], sport);
  im::store16(&f[36], 4793);
  f[43] = 0x02;
  return f;
}

// Sends `frames` from port 0 (one burst) and returns what port 1 receives.
std::vector<std::vector<uint8_t>> cross(io::MemLoop& loop, const std::vector<std::vector<uint8_t>>& frames) {
  std::vector<io::PacketBuf*> out;
  for (const auto& f : frames) {
    io::PacketBuf* b = loop.port(0).alloc_tx();
    EXPECT_NE(b, nullptr);
    std::memcpy(b->data, f.data(), f.size());
    b->len = uint32_t(f.size());
    b->route = im::load16(&f[34]);
    out.push_back(b);
  }
  loop.port(0).tx_burst(out.data(), uint16_t(out.size()));
  std::vector<std::vector<uint8_t>> got;
  io::PacketBuf* rx[64];
  for (uint16_t n; (n = loop.port(1).rx_burst(rx, 64)) > 0;) {
    for (uint16_t i = 0; i < n; ++i) {
      got.emplace_back(rx[i]->data, rx[i]->data + rx[i]->len);
      loop.port(1).free_rx(rx[i]);
    }
  }
  return got;
}

TEST(MemLoop, EachFateDoesWhatItSays) {
  io::MemLoop loop({});
  const std::vector<io::Fate> fates = {io::Fate::Deliver, io::Fate::Drop,      io::Fate::MarkCe,
                                       io::Fate::Corrupt, io::Fate::Duplicate, io::Fate::Delay};
  size_t k = 0;
  loop.filter = [&](int from, const uint8_t*, uint32_t) {
    EXPECT_EQ(from, 0);
    return fates[k++];
  };
  std::vector<std::vector<uint8_t>> sent;
  for (uint8_t i = 0; i < fates.size(); ++i) sent.push_back(ipv4_frame(2, uint16_t(49152 + i), i));
  const auto got = cross(loop, sent);
  ASSERT_EQ(got.size(), 6u);  // 6 sent, 1 dropped, 1 duplicated
  EXPECT_EQ(got[0], sent[0]);
  auto ce = sent[2];
  ASSERT_TRUE(im::mark_ce(ce));  // the one CE marking: ECT(0) -> CE, checksum updated
  EXPECT_EQ(got[1], ce);
  EXPECT_TRUE(im::ipv4_checksum_ok({&got[1][14], 20}));
  auto bad = sent[3];
  bad[bad.size() - 10] ^= 0x01;  // inside the ICRC coverage
  EXPECT_EQ(got[2], bad);
  EXPECT_EQ(got[3], sent[4]);  // the duplicate, right behind its original
  EXPECT_EQ(got[4], sent[4]);
  EXPECT_EQ(got[5], sent[5]);  // Delay: a FIFO wire delivers it in order
  const auto& s = loop.stats();
  EXPECT_EQ(s.sent[0], 6u);
  EXPECT_EQ(s.dropped[0], 1u);
  EXPECT_EQ(s.ce_marked[0], 1u);
  EXPECT_EQ(s.corrupted[0], 1u);
  EXPECT_EQ(s.duplicated[0], 1u);
  EXPECT_EQ(s.undelayed[0], 1u);
  EXPECT_EQ(s.delivered[0], 6u);
  EXPECT_EQ(loop.pool().available(), loop.pool().capacity());  // every buffer came back
}

// MarkCe marks only ECN-capable frames, as a switch would; Not-ECT and CE frames pass unchanged.
TEST(MemLoop, MarkCeOnlyOnEcnCapableFrames) {
  io::MemLoop loop({});
  loop.filter = [](int, const uint8_t*, uint32_t) { return io::Fate::MarkCe; };
  std::vector<std::vector<uint8_t>> sent;
  for (uint8_t ecn = 0; ecn < 4; ++ecn) sent.push_back(ipv4_frame(ecn, 49152, ecn));
  const auto got = cross(loop, sent);
  ASSERT_EQ(got.size(), 4u);
  for (uint8_t ecn = 0; ecn < 4; ++ecn) {
    const im::Ecn want = ecn == 1 || ecn == 2 ? im::Ecn::Ce : im::Ecn(ecn);
    EXPECT_EQ(im::read_ecn(got[ecn]), want);
    EXPECT_TRUE(im::ipv4_checksum_ok({&got[ecn][14], 20}));
    if (ecn == 0 || ecn == 3) { EXPECT_EQ(got[ecn], sent[ecn]); }
  }
  EXPECT_EQ(loop.stats().ce_marked[0], 2u);
}

// A PacketIo in front of a MemLoop port that checks, for every frame handed to tx_burst, that
// PacketBuf::route is the frame's UDP source port (what a port uses for ECMP instead of parsing).
class RouteCheck final : public io::PacketIo {
 public:
  explicit RouteCheck(io::PacketIo& inner) : inner_(inner) {}
  uint16_t rx_burst(io::PacketBuf** out, uint16_t n) noexcept override { return inner_.rx_burst(out, n); }
  void free_rx(io::PacketBuf* b) noexcept override { inner_.free_rx(b); }
  io::PacketBuf* alloc_tx() noexcept override {
    io::PacketBuf* b = inner_.alloc_tx();
    if (b) b->route = 0xdead;  // stale: the builder must set it
    return b;
  }
  void tx_burst(io::PacketBuf** pkts, uint16_t n) noexcept override {
    for (uint16_t i = 0; i < n; ++i) {
      const auto lay = im::frame_layout({pkts[i]->data, pkts[i]->len});
      ++frames;
      if (!lay || lay->sport != pkts[i]->route) ++wrong;
      routes.insert(pkts[i]->route);
      if (lay && lay->opcode) opcodes.insert(*lay->opcode);
    }
    inner_.tx_burst(pkts, n);
  }
  uint64_t frames = 0, wrong = 0;
  std::set<uint16_t> routes;
  std::set<uint8_t> opcodes;

 private:
  io::PacketIo& inner_;
};

DeviceConfig config(uint8_t i) {
  DeviceConfig c;
  c.self.mac = {2, 0, 0, 0, 0, uint8_t(1 + i)};
  c.self.ip = {10, 0, 0, uint8_t(1 + i)};
  c.first_conn_id = 1 + 1000u * i;
  return c;
}

// Every frame the engine builds (CONNECT, ACCEPT, data, retransmissions, ACKs, probes, REJECT)
// reaches the port with its route in the buffer. 2% loss makes the recovery paths send too.
TEST(PacketBufRoute, EngineFramesCarryTheirRoute) {
  io::ManualClock clock;
  io::MemLoop loop(io::MemLoop::Options{4096, 4096, 3, &clock});
  uint64_t x = 0x9e3779b97f4a7c15ull;
  loop.filter = [&x](int, const uint8_t*, uint32_t) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x % 50 == 0 ? io::Fate::Drop : io::Fate::Deliver;
  };
  RouteCheck ia(loop.port(0)), ib(loop.port(1));
  auto a = Device::open(config(0), ia, clock);
  auto b = Device::open(config(1), ib, clock);
  ASSERT_TRUE(a && b);
  constexpr size_t kLen = 1 << 20;
  std::vector<uint8_t> src(kLen, 0x5a), dst(kLen, 0);
  MemoryRegion sm, dm;
  ASSERT_EQ(a->reg_mr(src.data(), kLen, 0, &sm), Result::Ok);
  ASSERT_EQ(b->reg_mr(dst.data(), kLen, access::kLocalWrite | access::kRemoteWrite, &dm), Result::Ok);
  uint32_t conn = 0;
  ASSERT_EQ(a->connect(b->config().self, &conn), Result::Ok);
  bool posted = false, done = false;
  WorkCompletion wc[16];
  ConnEvent ev[4];
  for (int turn = 0; turn < 2000000 && !done; ++turn) {
    a->progress();
    b->progress();
    b->poll_events(ev, 4);
    if (!posted && a->poll_events(ev, 4) > 0 && ev[0].kind == ConnEvent::Kind::Up) {
      ASSERT_EQ(a->post_write(conn, 0, 1, {sm.iova, uint32_t(kLen), sm.lkey}, dm.iova, dm.rkey), Result::Ok);
      posted = true;
    }
    for (int i = 0, n = a->poll_cq(wc, 16); i < n; ++i) {
      EXPECT_EQ(wc[i].status, Status::Success);
      done = true;
    }
    clock.advance(1);
  }
  ASSERT_TRUE(done);
  EXPECT_EQ(src, dst);
  // A CONNECT to a device that does not listen draws a REJECT, built outside any connection.
  b->listen(false);
  uint32_t refused = 0;
  ASSERT_EQ(a->connect(b->config().self, &refused), Result::Ok);
  for (int turn = 0; turn < 2000; ++turn) {
    a->progress();
    b->progress();
    clock.advance(1);
  }
  EXPECT_GT(ia.frames, kLen / 8192);                                 // data frames at the largest payload, at least
  EXPECT_GT(loop.stats().dropped[0] + loop.stats().dropped[1], 0u);  // recovery ran
  EXPECT_GT(ib.frames, 10u);
  EXPECT_EQ(ia.wrong, 0u);
  EXPECT_EQ(ib.wrong, 0u);
  EXPECT_GE(ia.routes.size(), 4u);  // the paths' routes, not one
  EXPECT_TRUE(ib.opcodes.count(0x22)) << "no REJECT seen";
  EXPECT_EQ(ia.routes.count(0xdead) + ib.routes.count(0xdead), 0u);
}

}  // namespace
}  // namespace mroce::testing
