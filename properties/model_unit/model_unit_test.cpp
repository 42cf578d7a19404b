// Requirement-level unit tests of the model, named by the requirement they check: the scenarios
// the harness cannot express (a frame edited or injected by hand, a close, a deregistration, an
// ACK on its own route). The requirement scenarios that a harness::Scenario can express are written
// once in properties/engine/lockstep_test.cpp and run on the model, the engine and both in lockstep.
#include <gtest/gtest.h>

#include <map>

#include "pair.hpp"

namespace mroce::model::testing {
namespace {

constexpr uint64_t kSrc = 0x10000;
constexpr uint64_t kDst2 = 0x10000 + 0x80000;

bool data_pkt(const ref::Packet& p) { return ref::is_data_opcode(p.opcode); }

void post_write(Pair& net, uint64_t wr, uint32_t len, uint16_t stream = 0, uint64_t off = 0) {
    net.handle(0, PostWrite{net.conn[0], stream, wr, kSrc + off, len, net.keys[0][0].lkey,
                            kDst2 + off, net.keys[1][0].rkey, std::nullopt});
}

TEST(ModelWindow, R_PSN_3_OutOfWindowDroppedAndDuplicatesNotPlacedTwice_R_REL_8) {
    Pair net;
    net.setup();
    std::vector<uint8_t> first;
    bool edit = false;
    net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>& frame) {
        if (from == 0 && data_pkt(p) && first.empty()) first = frame;
        (void)edit;
        return true;
    };
    post_write(net, 1, 100);
    net.run(10000, [&] { return !net.completions[0].empty(); });
    ASSERT_FALSE(first.empty());
    const uint64_t placed = net.b().counters().placed_bytes;
    net.filter = nullptr;
    // Replay the same frame: a duplicate, ACKed but not placed again.
    net.apply(1, net.b().handle(net.now(), Receive{first}));
    EXPECT_EQ(net.b().counters().duplicates, 1u);
    EXPECT_EQ(net.b().counters().placed_bytes, placed);
    // Move its PSN far ahead: out of window, dropped and counted, no answer.
    auto d = ref::decode(first);
    ref::Packet far = d.packet;
    far.psn += 1000;
    std::vector<uint8_t> payload(first.begin() + d.packet.payload_offset,
                                 first.begin() + d.packet.payload_offset + d.packet.payload_len);
    const size_t sent_before = net.sent[1].size();
    net.apply(1, net.b().handle(net.now(), Receive{ref::encode(far, payload)}));
    EXPECT_EQ(net.b().counters().out_of_window, 1u);
    EXPECT_EQ(net.sent[1].size(), sent_before);
}

// B only receives, so it never re-paths. Its own route for path 2 is dead in the reverse
// direction; ACKs must follow A's data route (and A's re-path), not B's own route, or path 2 is
// never acknowledged again.
TEST(ModelAck, R_ACK_5_AckTakesTheDataRouteAndFollowsARepath) {
    Pair net;
    net.setup();
    const uint16_t b_own = net.b().path_view(net.conn[1], 2)->route;
    const uint16_t a_first = net.a().path_view(net.conn[0], 2)->route;
    std::map<uint16_t, uint16_t> last_data_sport;  // path -> source port of A's latest data/probe
    ASSERT_NE(b_own, a_first);
    int acks = 0, mismatched = 0, via_b_own = 0;
    net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>&) {
        if (from == 0 && p.opcode != ref::Opcode::Ack && p.opcode != ref::Opcode::Nak)
            last_data_sport[p.path_id] = p.udp_sport;
        if (from == 1 && p.opcode == ref::Opcode::Ack) {
            ++acks;
            mismatched += p.udp_sport != last_data_sport[p.path_id];
            via_b_own += p.udp_sport == b_own;
        }
        // Everything on A's first route of path 2 is lost, both ways, from the start, and so is
        // everything B sends on its own route of path 2 (under the old rule: every ACK of path 2).
        return p.udp_sport != a_first && !(from == 1 && p.udp_sport == b_own);
    };
    post_write(net, 1, 64 * 4096);
    net.run(200000, [&] { return !net.completions[0].empty(); });
    ASSERT_EQ(net.completions[0].size(), 1u);
    EXPECT_EQ(net.completions[0][0].status, Status::Success);
    EXPECT_GT(acks, 0);
    EXPECT_EQ(mismatched, 0);  // no reordering here: every ACK carries the latest data source port
    EXPECT_EQ(via_b_own, 0);
    auto v = net.a().path_view(net.conn[0], 2);
    EXPECT_NE(v->route, a_first);
    EXPECT_GE(v->repaths, 1u);
    EXPECT_EQ(v->state, PathState::Active);
}

TEST(ModelConn, R_CONN_7_GracefulCloseFlushesPeerReceives) {
    Pair net;
    net.setup();
    net.handle(1, PostRecv{net.conn[1], 0, 5, kDst2, 10, net.keys[1][0].lkey});
    post_write(net, 1, 9000);
    net.handle(0, Close{net.conn[0], false});
    net.run(net.now() + 5000, [&] { return net.completions[1].size() == 1; });
    ASSERT_EQ(net.completions[0].size(), 1u);
    EXPECT_EQ(net.completions[0][0].status, Status::Success);  // waited for outstanding work
    ASSERT_EQ(net.completions[1].size(), 1u);
    EXPECT_EQ(net.completions[1][0].status, Status::Flushed);
    EXPECT_EQ(net.a().connection_state(net.conn[0]), ConnState::Closed);
    EXPECT_EQ(net.b().connection_state(net.conn[1]), ConnState::Closed);
}

}  // namespace
}  // namespace mroce::model::testing

namespace mroce::model::testing {
namespace {

TEST(ModelSecurity, R_CONN_9_UnknownDcidDropped_R_PATH_1_BadPathDropped) {
    Pair net;
    net.setup();
    std::vector<uint8_t> frame;
    net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>& f) {
        if (from == 0 && ref::is_data_opcode(p.opcode) && frame.empty()) frame = f;
        return true;
    };
    net.handle(0, PostWrite{net.conn[0], 0, 1, 0x10000, 100, net.keys[0][0].lkey, 0x90000,
                            net.keys[1][0].rkey, std::nullopt});
    net.run(net.now() + 5000, [&] { return !net.completions[0].empty(); });
    ASSERT_FALSE(frame.empty());
    auto d = ref::decode(frame);
    std::vector<uint8_t> payload(frame.begin() + d.packet.payload_offset,
                                 frame.begin() + d.packet.payload_offset + d.packet.payload_len);
    ref::Packet p = d.packet;
    p.dcid = 0xDEADBEEF;
    const size_t sent = net.sent[1].size();
    net.apply(1, net.b().handle(net.now(), Receive{ref::encode(p, payload)}));
    EXPECT_EQ(net.b().counters().unknown_dcid, 1u);
    p = d.packet;
    p.path_id = 4;  // negotiated P = 4
    p.psn += 1;
    net.apply(1, net.b().handle(net.now(), Receive{ref::encode(p, payload)}));
    EXPECT_EQ(net.b().counters().bad_path, 1u);
    EXPECT_EQ(net.sent[1].size(), sent);  // neither answered
}

TEST(ModelSecurity, R_MEM_2_DeregisteredKeyRefused) {
    Pair net;
    net.setup();
    net.handle(1, RegisterMemory{0x200000, 4096, access::kRemoteWrite | access::kLocalWrite});
    ASSERT_EQ(net.keys[1].size(), 2u);
    const auto k = net.keys[1][1];
    net.handle(1, DeregisterMemory{k.lkey});
    net.handle(0, PostWrite{net.conn[0], 0, 1, 0x10000, 100, net.keys[0][0].lkey, 0x200000, k.rkey,
                            std::nullopt});
    net.run(net.now() + 5000, [&] { return !net.completions[0].empty(); });
    ASSERT_EQ(net.completions[0].size(), 1u);
    EXPECT_EQ(net.completions[0][0].status, Status::RemoteAccess);
}

}  // namespace
}  // namespace mroce::model::testing
