// impl/io: the route every frame the engine transmits carries in its PacketBuf (the UDP source port
// it wrote, [R-ENC-6]).
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <vector>

#include "impair/frame.hpp"
#include "io/mem_loop.hpp"
#include "mroce/mroce.hpp"

namespace mroce::testing {
namespace {

namespace im = impair;

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
    constexpr size_t kLen = 256 << 10;
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
    EXPECT_GT(ia.frames, 100u);
    EXPECT_GT(ib.frames, 10u);
    EXPECT_EQ(ia.wrong, 0u);
    EXPECT_EQ(ib.wrong, 0u);
    EXPECT_GE(ia.routes.size(), 4u);  // the paths' routes, not one
    EXPECT_TRUE(ib.opcodes.count(0x22)) << "no REJECT seen";
    EXPECT_EQ(ia.routes.count(0xdead) + ib.routes.count(0xdead), 0u);
}

}  // namespace
}  // namespace mroce::testing
