#include <gtest/gtest.h>

#include "codec/ref_codec.hpp"
#include "netsim/network.hpp"
#include "netsim/wire.hpp"

using namespace mroce;
using namespace mroce::harness;

namespace {

ref::Packet data_packet(bool ipv6, uint8_t ecn, uint16_t sport = 50000) {
    ref::Packet p{};
    p.eth_dst = {2, 0, 0, 0, 0, 2};
    p.eth_src = {2, 0, 0, 0, 0, 1};
    p.ipv6 = ipv6;
    p.ip_src = {10, 0, 0, 1};
    p.ip_dst = {10, 0, 0, 2};
    if (ipv6) {
        p.ip_src = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
        p.ip_dst = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
    }
    p.dscp = 26;
    p.ecn = ecn;
    p.ipv4_df = true;
    p.ttl = 64;
    p.udp_sport = sport;
    p.udp_dport = ref::kDefaultUdpPort;
    p.version = 1;
    p.opcode = ref::Opcode::Write;
    p.dcid = 7;
    p.path_id = 1;
    p.psn = 0xfffffffe;
    p.msg_length = 64;
    p.remote_va = 0x1000;
    p.rkey = 0x42;
    return p;
}

std::vector<uint8_t> frame_of(const ref::Packet& p) {
    std::vector<uint8_t> payload(64);
    for (size_t i = 0; i < payload.size(); ++i) payload[i] = uint8_t(i * 7);
    return ref::encode(p, payload);
}

std::vector<uint8_t> control_frame() {
    ref::Packet p = data_packet(false, 0);
    p.opcode = ref::Opcode::Connect;
    p.dcid = 0;
    p.path_id = 0;
    p.scid = 1;
    p.path_count = 4;
    p.stream_count = 4;
    p.max_payload = 4096;
    p.window_cap = 256;
    return ref::encode(p, {});
}

}  // namespace

TEST(Network, EcmpHashIsFixedAndSpreads) {
    std::array<int, 4> hist{};
    for (uint32_t sport = 49152; sport <= 65535; ++sport) {
        const uint16_t l = ecmp_link(uint16_t(sport), 4);
        ASSERT_LT(l, 4);
        EXPECT_EQ(l, ecmp_link(uint16_t(sport), 4));
        ++hist[l];
    }
    for (int h : hist) EXPECT_NEAR(h, 4096, 400);
    EXPECT_EQ(ecmp_link(12345, 1), 0);
}

// MarkCe sets CE only on ECT frames and keeps the frame valid (IPv4 checksum recomputed).
TEST(Network, MarkCeReencodesLikeASwitch) {
    for (bool v6 : {false, true}) {
        for (uint8_t ecn : {0, 1, 2, 3}) {
            auto f = frame_of(data_packet(v6, ecn));
            const auto before = f;
            const bool marked = mark_ce(f);
            EXPECT_EQ(marked, ecn == 1 || ecn == 2) << "v6=" << v6 << " ecn=" << int(ecn);
            const auto r = ref::decode(f);
            ASSERT_TRUE(r.ok()) << "v6=" << v6 << " ecn=" << int(ecn) << " "
                                << (r.error ? ref::error_name(*r.error) : "");
            EXPECT_EQ(r.packet.ecn, marked ? 3 : ecn);
            if (!marked) { EXPECT_EQ(f, before); }
        }
    }
}

// A one-byte corruption anywhere in an IPv4 packet is caught by a checksum or the ICRC, except in
// the UDP source port, which nothing protects and nothing may rely on ([R-ENC-6]).
TEST(Network, CorruptionIsDetectedByTheReceiver) {
    const auto f0 = frame_of(data_packet(false, 2));
    const size_t sport_at = 14 + 20;
    for (uint16_t off = 0; off < f0.size() - 14; ++off) {
        for (uint8_t mask : {uint8_t(0x01), uint8_t(0x80), uint8_t(0xff)}) {
            auto f = f0;
            const size_t at = corrupt_frame(f, off, mask);
            EXPECT_EQ(at, 14u + off);
            const auto r = ref::decode(f);
            if (at == sport_at || at == sport_at + 1) {
                EXPECT_TRUE(r.ok());
            } else {
                EXPECT_FALSE(r.ok()) << "corruption at frame offset " << at << " mask " << int(mask) << " not detected";
            }
        }
    }
    auto f = f0;
    EXPECT_EQ(corrupt_frame(f, uint16_t(f.size() - 14 + 3), 0),
              17u);  // offset wraps, mask 0 acts as 1
    EXPECT_EQ(f[17], uint8_t(f0[17] ^ 1));
}

TEST(Network, FatesApplyByEntryIndex) {
    Schedule s;
    s.fates = {{PacketFate::Drop},
               {PacketFate::Duplicate, 3},
               {PacketFate::Delay, 40},
               {PacketFate::MarkCe},
               {PacketFate::Corrupt, 0, 100, 0x10}};
    NetConfig nc;
    nc.base_delay_us = 5;
    nc.links = 1;
    nc.faults_until = 1000;
    Network n(nc, s);
    const auto f = frame_of(data_packet(false, 2));
    auto e0 = n.enter(10, Side::A, f);
    EXPECT_EQ(e0.index, 0u);
    EXPECT_TRUE(e0.copies.empty());
    auto e1 = n.enter(10, Side::B, f);
    ASSERT_EQ(e1.copies.size(), 2u);
    EXPECT_EQ(e1.copies[0].arrive, 15u);
    EXPECT_EQ(e1.copies[1].arrive, 18u);
    EXPECT_EQ(e1.copies[0].frame, f);
    auto e2 = n.enter(10, Side::A, f);
    ASSERT_EQ(e2.copies.size(), 1u);
    EXPECT_EQ(e2.copies[0].arrive, 55u);
    auto e3 = n.enter(10, Side::A, f);
    ASSERT_EQ(e3.copies.size(), 1u);
    EXPECT_TRUE(e3.ce_marked);
    EXPECT_EQ(ref::decode(e3.copies[0].frame).packet.ecn, 3);
    auto e4 = n.enter(10, Side::A, f);
    ASSERT_EQ(e4.copies.size(), 1u);
    EXPECT_EQ(e4.corrupted_at, 114u);
    EXPECT_FALSE(ref::decode(e4.copies[0].frame).ok());
    auto e5 = n.enter(10, Side::A, f);  // beyond the list: delivered
    EXPECT_EQ(e5.index, 5u);
    ASSERT_EQ(e5.copies.size(), 1u);
    EXPECT_EQ(e5.copies[0].frame, f);
    EXPECT_EQ(n.frames_entered(), 6u);
}

TEST(Network, FaultsStopAndHandshakeIsProtected) {
    Schedule s;
    s.fates.assign(10, PacketFate{PacketFate::Drop});
    NetConfig nc;
    nc.faults_until = 100;
    nc.links = 2;
    Network n(nc, s);
    const auto f = frame_of(data_packet(false, 2));
    EXPECT_TRUE(n.enter(99, Side::A, f).copies.empty());
    EXPECT_EQ(n.enter(99, Side::A, control_frame()).copies.size(),
              1u);                                          // protected, index consumed
    EXPECT_EQ(n.enter(100, Side::A, f).copies.size(), 1u);  // faults over
    EXPECT_EQ(n.frames_entered(), 3u);
}

TEST(Network, LinksFailPerDirectionAndRecover) {
    NetConfig nc;
    nc.links = 4;
    nc.faults_until = kNever;
    Network n(nc, {});
    const auto f = frame_of(data_packet(false, 2, 50000));
    const uint16_t link = ecmp_link(50000, 4);
    n.set_link(LinkDir::AtoB, link, false);
    auto e = n.enter(1, Side::A, f);
    EXPECT_TRUE(e.link_down);
    EXPECT_TRUE(e.copies.empty());
    EXPECT_EQ(n.enter(1, Side::B, f).copies.size(), 1u);  // other direction unaffected
    // Another route (source port) on a different link gets through: re-pathing works.
    uint16_t sport = 50001;
    while (ecmp_link(sport, 4) == link) ++sport;
    EXPECT_EQ(n.enter(1, Side::A, frame_of(data_packet(false, 2, sport))).copies.size(), 1u);
    n.all_links_up();
    EXPECT_EQ(n.enter(2, Side::A, f).copies.size(), 1u);
    n.set_link(LinkDir::Both, link, false);
    EXPECT_TRUE(n.enter(3, Side::B, f).link_down);
}

TEST(Wire, ParsesAndSummarizes) {
    const auto f = frame_of(data_packet(false, 2));
    const auto w = parse_wire(f);
    ASSERT_TRUE(w);
    EXPECT_TRUE(w->is_data());
    EXPECT_EQ(w->psn, 0xfffffffeu);
    EXPECT_EQ(w->path, 1);
    EXPECT_EQ(w->plen, 64);
    EXPECT_EQ(w->rkey, 0x42u);
    EXPECT_EQ(summarize(*w),
              "WRITE p=1 psn=0xfffffffe st=0 msn=0 off=0 len=64 mlen=64 va=0x1000 rkey=0x00000042 ecn=2 "
              "dcid=0x00000007 sp=50000 ts=0");
    ref::Packet a = data_packet(false, 0);
    a.opcode = ref::Opcode::Ack;
    a.cpsn = 0xffffffff;
    a.sack[0] = 0x60;  // bits 1 and 2
    a.sack[1] = 0x01;  // bit 15
    const auto af = ref::encode(a, {});
    EXPECT_EQ(summarize(*parse_wire(af)),
              "ACK p=1 cpsn=0xffffffff sack=+1..2,+15 ce=0 tse=0 hint=0 dcid=0x00000007 sp=50000 ts=0");
    EXPECT_FALSE(parse_wire(std::vector<uint8_t>(20)));
}
