// The monitors report what they should (so that properties 4-6 can fail).
#include <gtest/gtest.h>

#include "netsim/checks.hpp"

using namespace mroce;
using namespace mroce::harness;

namespace {

WireInfo control(uint8_t op, uint32_t scid, uint32_t dcid) {
    WireInfo w;
    w.opcode = op;
    w.scid = scid;
    w.dcid = dcid;
    return w;
}

WireInfo ack(uint32_t dcid, uint16_t path, uint32_t cpsn, std::initializer_list<int> sack_bits = {}) {
    WireInfo w;
    w.opcode = 0x10;
    w.dcid = dcid;
    w.path = path;
    w.cpsn = cpsn;
    for (int i : sack_bits) w.sack[size_t(i / 8)] |= uint8_t(0x80 >> (i % 8));
    return w;
}

WireInfo data(uint32_t dcid, uint16_t path, uint32_t psn, uint16_t flags = 0) {
    WireInfo w;
    w.opcode = 0x02;
    w.dcid = dcid;
    w.path = path;
    w.psn = psn;
    w.flags = flags;
    return w;
}

class FakeEndpoint : public SimEndpoint {
public:
    model::PathView pv;
    std::map<uint32_t, uint32_t> shares;
    std::vector<model::Action> handle(model::Time, const model::Event&) override { return {}; }
    std::optional<std::vector<uint8_t>> read_memory(uint64_t, uint64_t) const override { return std::nullopt; }
    std::vector<uint32_t> connections() const override { return {1}; }
    std::optional<model::ConnState> connection_state(uint32_t) const override { return model::ConnState::Established; }
    std::optional<model::PathView> path_view(uint32_t, uint16_t) const override { return pv; }
    uint16_t path_count(uint32_t) const override { return 1; }
    std::map<uint32_t, uint32_t> rate_shares() const override { return shares; }
    uint32_t capacity_mbps() const override { return 1000; }
    size_t outstanding_work(uint32_t) const override { return 0; }
    std::optional<model::Time> next_deadline() const override { return std::nullopt; }
};

}  // namespace

TEST(Monitor, R_REL_3_AckedPsnResentIsReported) {
    AckedPsnMonitor m;
    m.on_control(Side::A, control(0x20, 0x100, 0));      // CONNECT a=0x100
    m.on_control(Side::B, control(0x21, 0x200, 0x100));  // ACCEPT b=0x200
    // A sends on path 1 before any ACK: fine.
    m.on_data_sent(1, Side::A, data(0x200, 1, 0xfffffffe));
    EXPECT_TRUE(m.take().empty());
    // B's ACK reaches A: CPSN 0xffffffff (wraps next), SACK bit 2 = PSN 0x00000002.
    m.on_ack_delivered(2, Side::A, ack(0x100, 1, 0xffffffff, {2}));
    m.on_data_sent(3, Side::A, data(0x200, 1, 0x00000000));  // not acknowledged
    m.on_data_sent(3, Side::A, data(0x200, 2, 0xfffffffe));  // other path
    m.on_data_sent(3, Side::B, data(0x100, 1, 0xfffffffe));  // other direction
    EXPECT_TRUE(m.take().empty());
    m.on_data_sent(4, Side::A, data(0x200, 1, 0xfffffffe, 0x4000));  // RETX of a CPSN-acked PSN
    m.on_data_sent(4, Side::A, data(0x200, 1, 0x00000002, 0x2000));  // VOID of a SACKed PSN
    const auto v = m.take();
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(v[0].check, "acked_psn_resent");
    EXPECT_NE(v[0].detail.find("RETX"), std::string::npos);
    EXPECT_NE(v[1].detail.find("VOID"), std::string::npos);
    // An older ACK does not move the cumulative point backwards [R-ACK-9].
    m.on_ack_delivered(5, Side::A, ack(0x100, 1, 0xfffffff0));
    m.on_data_sent(6, Side::A, data(0x200, 1, 0xfffffffe));
    EXPECT_EQ(m.take().size(), 1u);
}

TEST(Monitor, R_CC_3_R_PSN_4_R_FS_4_StepChecks) {
    FakeEndpoint ep;
    ep.pv.cwnd = 4;
    ep.pv.in_flight = 4;
    ep.pv.suna = 0xffffff80;
    ep.pv.snxt = 0x00000080;  // span exactly 256 across the wrap
    ep.shares = {{1, 600}, {2, 400}};
    const std::set<std::pair<uint32_t, uint16_t>> sent{{7, 0}};
    EXPECT_TRUE(check_step(1, Side::A, ep, sent, 1u).empty());
    ep.pv.in_flight = 5;
    ep.pv.snxt = 0x00000081;
    ep.shares[3] = 1;
    const auto v = check_step(1, Side::A, ep, sent, 1u);
    std::set<std::string> kinds;
    for (const auto& x : v) kinds.insert(x.check);
    EXPECT_EQ(kinds, (std::set<std::string>{"window", "span", "rate_shares"}));
    // Window and span are only judged on paths that sent data in the step.
    EXPECT_EQ(check_step(1, Side::A, ep, {}, 1u).size(), 1u);
}
