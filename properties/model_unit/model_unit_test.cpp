// Requirement-level unit tests of the model, named by the requirement they check.
#include <gtest/gtest.h>

#include <map>

#include "pair.hpp"

namespace mroce::model::testing {
namespace {

constexpr uint64_t kBase = 0x10000;
constexpr uint64_t kDst = kBase + 0x80000;  // second half of the region

bool is_data(const ref::Packet& p) { return ref::is_data_opcode(p.opcode); }

TEST(ModelSetup, R_CONN_1_HandshakeNegotiatesMinimum) {
    Config a = Pair::config_for(0);
    a.path_count = 8;
    a.stream_count = 2;
    Config b = Pair::config_for(1);
    b.path_count = 3;
    b.max_payload = 1024;
    Pair net(a, b);
    net.setup();
    ASSERT_NE(net.conn[0], 0u);
    ASSERT_NE(net.conn[1], 0u);
    EXPECT_EQ(net.a().path_count(net.conn[0]), 3);  // [R-CONN-3]
    EXPECT_EQ(net.b().path_count(net.conn[1]), 3);
    EXPECT_EQ(net.a().stream_count(net.conn[0]), 2);
    EXPECT_EQ(net.a().max_payload(net.conn[0]), 1024);
    EXPECT_EQ(net.sent[0].front().opcode, ref::Opcode::Connect);
    EXPECT_EQ(net.sent[0].front().dcid, 0u);  // [R-HDR-4]
}

TEST(ModelData, R_PLC_2_WriteLandsByteExactOverAllPaths) {
    Pair net;
    net.setup();
    const size_t n = 40000;  // 10 segments of 4096
    net.fill(0, kBase, n, 1);
    net.handle(0, PostWrite{net.conn[0], 0, 7, kBase, uint32_t(n), net.keys[0][0].lkey, kDst,
                            net.keys[1][0].rkey, std::nullopt});
    net.run(10000, [&] { return !net.completions[0].empty(); });
    ASSERT_EQ(net.completions[0].size(), 1u);
    EXPECT_EQ(net.completions[0][0].status, Status::Success);
    EXPECT_EQ(net.mem(1, kDst, n), net.mem(0, kBase, n));
    std::set<uint16_t> paths;
    for (const auto& p : net.sent[0])
        if (is_data(p)) paths.insert(p.path_id);
    EXPECT_EQ(paths.size(), 4u);  // [R-PATH-8] sprayed over every path
    EXPECT_TRUE(net.completions[1].empty());  // [R-CMP-3] no completion for a plain Write
}

TEST(ModelData, R_REL_5_R_REL_4_LostPacketRetransmittedSamePathSamePsn) {
    Pair net;
    net.setup();
    std::optional<ref::Packet> dropped;
    net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>&) {
        if (from == 0 && is_data(p) && p.msg_offset == 4096 && !dropped) {
            dropped = p;
            return false;
        }
        return true;
    };
    const size_t n = 5 * 4096;
    net.fill(0, kBase, n, 3);
    net.handle(0, PostWrite{net.conn[0], 0, 1, kBase, uint32_t(n), net.keys[0][0].lkey, kDst,
                            net.keys[1][0].rkey, std::nullopt});
    net.run(10000, [&] { return !net.completions[0].empty(); });
    ASSERT_TRUE(dropped);
    ASSERT_EQ(net.completions[0].size(), 1u);
    EXPECT_EQ(net.completions[0][0].status, Status::Success);
    EXPECT_EQ(net.mem(1, kDst, n), net.mem(0, kBase, n));
    int retx = 0;
    for (const auto& p : net.sent[0]) {
        if (!is_data(p) || !(p.flags & ref::kFlagRetx)) continue;
        ++retx;
        EXPECT_EQ(p.path_id, dropped->path_id);
        EXPECT_EQ(p.psn, dropped->psn);
        EXPECT_EQ(p.msg_offset, dropped->msg_offset);
    }
    EXPECT_EQ(retx, 1);  // precise: exactly the missing packet
}

TEST(ModelData, R_MATCH_1_R_ARCH_1_R_PLC_1_SendsMatchReceivesByRsnOutOfOrder) {
    Pair net;
    net.setup();
    // Two Sends on stream 1; the first Send's only packet is lost once, so the second arrives first.
    bool dropped = false;
    net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>&) {
        if (from == 0 && p.opcode == ref::Opcode::Send && p.rsn == 0 && !dropped) {
            dropped = true;
            return false;
        }
        return true;
    };
    net.handle(1, PostRecv{net.conn[1], 1, 100, kDst, 1000, net.keys[1][0].lkey});
    net.handle(1, PostRecv{net.conn[1], 1, 101, kDst + 1000, 1000, net.keys[1][0].lkey});
    net.fill(0, kBase, 300, 9);
    net.handle(0, PostSend{net.conn[0], 1, 1, kBase, 100, net.keys[0][0].lkey});
    net.handle(0, PostSend{net.conn[0], 1, 2, kBase + 100, 200, net.keys[0][0].lkey});
    net.run(10000, [&] { return net.completions[0].size() == 2 && net.completions[1].size() == 2; });
    ASSERT_TRUE(dropped);
    ASSERT_EQ(net.completions[1].size(), 2u);
    EXPECT_EQ(net.completions[1][0].wr_id, 100u);  // [R-CMP-2] RSN order
    EXPECT_EQ(net.completions[1][0].byte_len, 100u);
    EXPECT_EQ(net.completions[1][1].wr_id, 101u);
    EXPECT_EQ(net.completions[1][1].byte_len, 200u);
    EXPECT_EQ(net.mem(1, kDst, 100), net.mem(0, kBase, 100));
    EXPECT_EQ(net.mem(1, kDst + 1000, 200), net.mem(0, kBase + 100, 200));
    ASSERT_EQ(net.completions[0].size(), 2u);
    EXPECT_EQ(net.completions[0][0].wr_id, 1u);  // [R-CMP-1] posting order
    EXPECT_EQ(net.completions[0][1].wr_id, 2u);
}

TEST(ModelData, R_PLC_4_ReadReturnsRemoteBytes) {
    Pair net;
    net.setup();
    const size_t n = 9000;
    net.fill(1, kDst, n, 77);
    net.handle(0, PostRead{net.conn[0], 2, 5, kBase, uint32_t(n), net.keys[0][0].lkey, kDst,
                           net.keys[1][0].rkey});
    net.run(10000, [&] { return !net.completions[0].empty(); });
    ASSERT_EQ(net.completions[0].size(), 1u);
    EXPECT_EQ(net.completions[0][0].status, Status::Success);
    EXPECT_EQ(net.completions[0][0].op, WorkOp::Read);
    EXPECT_EQ(net.mem(0, kBase, n), net.mem(1, kDst, n));
}

TEST(ModelErrors, R_MEM_3_WrongKeyRefusedAndVoided) {
    Pair net;
    net.setup();
    net.fill(0, kBase, 5000, 5);
    const auto before = net.mem(1, kDst, 5000);
    net.handle(0, PostWrite{net.conn[0], 0, 9, kBase, 5000, net.keys[0][0].lkey, kDst,
                            net.keys[1][0].rkey ^ 0x55, std::nullopt});
    // A later Write on the same stream still works: the connection goes on.
    net.handle(0, PostWrite{net.conn[0], 0, 10, kBase, 100, net.keys[0][0].lkey, kDst + 8192,
                            net.keys[1][0].rkey, std::nullopt});
    net.run(20000, [&] { return net.completions[0].size() == 2; });
    ASSERT_EQ(net.completions[0].size(), 2u);
    EXPECT_EQ(net.completions[0][0].status, Status::RemoteAccess);  // table 12.3
    EXPECT_EQ(net.completions[0][1].status, Status::Success);
    EXPECT_EQ(net.mem(1, kDst, 5000), before);  // [R-SEC-6] nothing placed
    int voids = 0;
    for (const auto& p : net.sent[0]) voids += is_data(p) && (p.flags & ref::kFlagVoid);
    EXPECT_EQ(voids, 2);  // [R-REL-9] both refused PSNs voided
    // The receiver's windows are not stuck: every path's CPSN caught up with the sender.
    for (uint16_t p = 0; p < 4; ++p) {
        auto v = net.a().path_view(net.conn[0], p);
        ASSERT_TRUE(v);
        EXPECT_EQ(v->snxt, v->suna) << "path " << p;
    }
}

TEST(ModelErrors, R_MATCH_2_SendLongerThanReceive) {
    Pair net;
    net.setup();
    net.handle(1, PostRecv{net.conn[1], 0, 50, kDst, 10, net.keys[1][0].lkey});
    net.handle(0, PostSend{net.conn[0], 0, 1, kBase, 11, net.keys[0][0].lkey});
    net.run(20000, [&] { return !net.completions[0].empty() && !net.completions[1].empty(); });
    ASSERT_EQ(net.completions[0].size(), 1u);
    EXPECT_EQ(net.completions[0][0].status, Status::RemoteLength);
    ASSERT_EQ(net.completions[1].size(), 1u);
    EXPECT_EQ(net.completions[1][0].status, Status::LocalLength);
}

TEST(ModelErrors, R_PLC_7_ReceiverNotReadyThenReady) {
    Pair net;
    net.setup();
    net.fill(0, kBase, 64, 1);
    net.handle(0, PostSend{net.conn[0], 3, 1, kBase, 64, net.keys[0][0].lkey});
    net.run(net.now() + 150);
    EXPECT_TRUE(net.completions[0].empty());
    int rnr = 0;
    for (const auto& p : net.sent[1]) rnr += p.opcode == ref::Opcode::Nak && p.nak_code == 1;
    EXPECT_GE(rnr, 1);
    net.handle(1, PostRecv{net.conn[1], 3, 60, kDst, 64, net.keys[1][0].lkey});
    net.run(net.now() + 2000, [&] { return !net.completions[0].empty(); });
    ASSERT_EQ(net.completions[0].size(), 1u);
    EXPECT_EQ(net.completions[0][0].status, Status::Success);
    EXPECT_EQ(net.mem(1, kDst, 64), net.mem(0, kBase, 64));
}

TEST(ModelFailure, R_CONN_8_DeadPeerFailsEverything) {
    Pair net;
    net.setup();
    net.handle(1, PostRecv{net.conn[1], 0, 70, kDst, 64, net.keys[1][0].lkey});
    net.filter = [](int, const ref::Packet&, std::vector<uint8_t>&) { return false; };
    net.handle(0, PostWrite{net.conn[0], 0, 1, kBase, 5000, net.keys[0][0].lkey, kDst,
                            net.keys[1][0].rkey, std::nullopt});
    net.handle(0, PostSend{net.conn[0], 1, 2, kBase, 10, net.keys[0][0].lkey});
    net.run(400000, [&] { return net.completions[0].size() == 2 && net.completions[1].size() == 1; });
    ASSERT_EQ(net.completions[0].size(), 2u);
    for (const auto& c : net.completions[0]) EXPECT_EQ(c.status, Status::ConnectionFailed);
    ASSERT_EQ(net.completions[1].size(), 1u);  // the waiting receiver finds out too [R-CONN-6]
    EXPECT_EQ(net.completions[1][0].status, Status::Flushed);
    EXPECT_EQ(net.a().connection_state(net.conn[0]), ConnState::Failed);
    EXPECT_EQ(net.b().connection_state(net.conn[1]), ConnState::Failed);
}

TEST(ModelPaths, R_PATH_4_DeadRouteIsRepathed) {
    Pair net;
    net.setup();
    auto v = net.a().path_view(net.conn[0], 2);
    ASSERT_TRUE(v);
    const uint16_t dead = v->route;
    net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>&) {
        return !(from == 0 && p.udp_sport == dead);
    };
    const size_t n = 64 * 4096;
    net.fill(0, kBase, n, 11);
    net.handle(0, PostWrite{net.conn[0], 0, 1, kBase, uint32_t(n), net.keys[0][0].lkey, kDst,
                            net.keys[1][0].rkey, std::nullopt});
    net.run(200000, [&] { return !net.completions[0].empty(); });
    ASSERT_EQ(net.completions[0].size(), 1u);
    EXPECT_EQ(net.completions[0][0].status, Status::Success);
    EXPECT_EQ(net.mem(1, kDst, n), net.mem(0, kBase, n));
    v = net.a().path_view(net.conn[0], 2);
    EXPECT_NE(v->route, dead);
    EXPECT_GE(v->repaths, 1u);
    EXPECT_EQ(v->state, PathState::Active);
}

TEST(ModelCc, R_CC_4_CeHalvesTheWindowOncePerWindow) {
    Pair net;
    net.setup();
    int marked = 0;
    net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>& frame) {
        if (from == 0 && is_data(p) && p.path_id == 0 && marked < 3) {
            ++marked;
            ref::Packet q = p;
            q.ecn = 3;
            auto d = ref::decode(frame);
            std::vector<uint8_t> payload(frame.begin() + d.packet.payload_offset,
                                         frame.begin() + d.packet.payload_offset + d.packet.payload_len);
            frame = ref::encode(q, payload);
        }
        return true;
    };
    const size_t n = 8 * 4096;
    net.handle(0, PostWrite{net.conn[0], 0, 1, kBase, uint32_t(n), net.keys[0][0].lkey, kDst,
                            net.keys[1][0].rkey, std::nullopt});
    net.run(10000, [&] { return !net.completions[0].empty(); });
    EXPECT_EQ(marked, 2);  // 8 segments over 4 paths: two on path 0
    EXPECT_EQ(net.a().counters().cwnd_decreases, 1u);
    auto v = net.a().path_view(net.conn[0], 0);
    EXPECT_EQ(v->cwnd, 8u);  // 16 / 2, once
}

}  // namespace
}  // namespace mroce::model::testing

namespace mroce::model::testing {
namespace {

constexpr uint64_t kSrc = 0x10000;
constexpr uint64_t kDst2 = 0x10000 + 0x80000;

bool data_pkt(const ref::Packet& p) { return ref::is_data_opcode(p.opcode); }

bool wr1_done(Pair& net) {
    for (const auto& c : net.completions[0])
        if (c.wr_id == 1) return c.status == Status::Success;
    return false;
}

void post_write(Pair& net, uint64_t wr, uint32_t len, uint16_t stream = 0, uint64_t off = 0) {
    net.handle(0, PostWrite{net.conn[0], stream, wr, kSrc + off, len, net.keys[0][0].lkey,
                            kDst2 + off, net.keys[1][0].rkey, std::nullopt});
}

TEST(ModelWire, R_ENC_9_R_ENC_10_EcnAndDscpByPacketClass) {
    Pair net;
    net.setup();
    post_write(net, 1, 10000);
    net.run(10000, [&] { return !net.completions[0].empty(); });
    int data = 0, acks = 0;
    for (const auto& p : net.sent[0]) {
        if (!data_pkt(p)) continue;
        ++data;
        EXPECT_EQ(p.ecn, 2);    // ECT(0)
        EXPECT_EQ(p.dscp, 26);  // default data DSCP
        EXPECT_GE(p.udp_sport, 49152);  // [R-ENC-6]
        EXPECT_EQ(p.udp_dport, 4793);   // [R-ENC-5]
    }
    for (const auto& p : net.sent[1]) {
        if (p.opcode != ref::Opcode::Ack) continue;
        ++acks;
        EXPECT_EQ(p.ecn, 0);    // Not-ECT
        EXPECT_EQ(p.dscp, 48);  // control DSCP
    }
    EXPECT_GT(data, 0);
    EXPECT_GT(acks, 0);
}

TEST(ModelAck, R_ACK_2_R_ACK_4_GapDrawsImmediateAckWithSackBits_R_HDR_20) {
    Pair net;
    net.setup();
    uint32_t lost_psn = 0;
    bool dropped = false;
    net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>&) {
        if (from == 0 && data_pkt(p) && p.path_id == 1 && !dropped) {
            dropped = true;
            lost_psn = p.psn;
            return false;
        }
        return true;
    };
    post_write(net, 1, 12 * 4096);  // three segments per path
    net.run(10000, [&] { return !net.completions[0].empty(); });
    ASSERT_TRUE(dropped);
    // The first ACK of path 1 after the drop: CPSN just below the hole, bit 0 clear, bit 1 set
    // (the next PSN arrived), sent at once although fewer than ACK_EVERY packets arrived.
    bool found = false;
    for (const auto& a : net.sent[1]) {
        if (a.opcode != ref::Opcode::Ack || a.path_id != 1) continue;
        if (a.cpsn != lost_psn - 1) continue;
        EXPECT_EQ(a.sack[0] & 0x80, 0);  // bit 0 always clear
        EXPECT_NE(a.sack[0] & 0x40, 0);  // bit 1: lost_psn + 1 received
        found = true;
        break;
    }
    EXPECT_TRUE(found);
}

TEST(ModelAck, R_ACK_3_CoalescesUpToAckEvery) {
    Pair net;
    net.setup();
    const size_t before = net.sent[1].size();
    post_write(net, 1, 32 * 4096);  // 8 in-order packets per path
    net.run(10000, [&] { return !net.completions[0].empty(); });
    int acks = 0;
    for (size_t i = before; i < net.sent[1].size(); ++i) acks += net.sent[1][i].opcode == ref::Opcode::Ack;
    EXPECT_EQ(acks, 8);  // 4 paths x (8 packets / ACK_EVERY 4)

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

TEST(ModelLoss, R_REL_6_TailLossRecoveredByProbe) {
    Pair net;
    net.setup();
    bool dropped = false;
    net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>&) {
        if (from == 0 && data_pkt(p) && !dropped) {  // the only packet of a one-segment Write
            dropped = true;
            return false;
        }
        return true;
    };
    post_write(net, 1, 100);
    net.run(5000, [&] { return !net.completions[0].empty(); });
    ASSERT_EQ(net.completions[0].size(), 1u);
    EXPECT_EQ(net.completions[0][0].status, Status::Success);
    EXPECT_GE(net.a().counters().probes_sent, 1u);
    // Recovered by the probe (PTO = RTO_INIT / 2 before any sample), well before the RTO.
    EXPECT_EQ(net.a().counters().repaths, 0u);
}

TEST(ModelLoss, R_REL_7_RtoBacksOffAndRepaths_R_PATH_2) {
    Pair net;
    net.setup();
    const uint16_t route = net.a().path_view(net.conn[0], 0)->route;
    int blocked = 0;
    net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>&) {
        // Path 0's first route is dead in both directions (data, probes and ACKs).
        if (from == 0 && p.udp_sport == route) {
            ++blocked;
            return false;
        }
        return true;
    };
    post_write(net, 1, 100);  // one segment: path 0
    net.run(net.now() + 1200);
    auto v = net.a().path_view(net.conn[0], 0);
    EXPECT_EQ(v->state, PathState::Active);  // recovered on its new route
    EXPECT_NE(v->route, route);
    EXPECT_EQ(v->repaths, 1u);
    ASSERT_EQ(net.completions[0].size(), 1u);
    EXPECT_GT(blocked, 0);
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

TEST(ModelPaths, R_PATH_5_FailedPathAdoptsRouteOfActivePath) {
    Pair net;
    net.setup();
    // Everything path 3 sends is lost whatever its route, until it takes the route of an ACTIVE
    // path (routes of paths 0..2 keep working).
    std::set<uint16_t> good;
    for (uint16_t p = 0; p < 3; ++p) good.insert(net.a().path_view(net.conn[0], p)->route);
    net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>&) {
        if (from == 0 && p.path_id == 3 && !good.count(p.udp_sport)) return false;
        return true;
    };
    post_write(net, 1, 16 * 4096);
    // Keep paths 0..2 busy (a write on stream 1 every 500 µs) so that they are acknowledged after
    // path 3's re-paths: donors known to work now.
    for (uint64_t wr = 100; net.now() < 200000 && !wr1_done(net); ++wr) {
        post_write(net, wr, 3 * 4096, 1, 0x20000);
        net.run(net.now() + 500, [&] { return wr1_done(net); });
    }
    ASSERT_TRUE(wr1_done(net));
    auto v = net.a().path_view(net.conn[0], 3);
    EXPECT_TRUE(good.count(v->route));
    EXPECT_EQ(v->repaths, 3u);  // SUSPECT twice on fresh routes, then FAILED adopts a working one
}

// a donor idle since the failing path's previous re-path is not known to work (its route may
// have died unseen): the FAILED path takes a fresh route instead of the idle path's.
TEST(ModelPaths, R_PATH_5_IdleActivePathIsNoDonor) {
    Pair net;
    net.setup();
    // Path 3 loses everything whatever its route; paths 0..2 finish at once and fall idle.
    net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>&) {
        return !(from == 0 && p.path_id == 3);
    };
    std::set<uint16_t> others;
    for (uint16_t p = 0; p < 3; ++p) others.insert(net.a().path_view(net.conn[0], p)->route);
    post_write(net, 1, 16 * 4096);
    net.run(net.now() + 20000);
    auto v = net.a().path_view(net.conn[0], 3);
    EXPECT_EQ(v->state, PathState::Failed);
    EXPECT_GE(v->repaths, 4u);
    EXPECT_FALSE(others.count(v->route));
}

TEST(ModelErrors, R_PLC_9_RnrRetryExceeded) {
    Pair net;
    net.setup();
    net.handle(0, PostSend{net.conn[0], 0, 1, kSrc, 10, net.keys[0][0].lkey});
    net.run(net.now() + 5000, [&] { return !net.completions[0].empty(); });
    ASSERT_EQ(net.completions[0].size(), 1u);
    EXPECT_EQ(net.completions[0][0].status, Status::RnrRetryExceeded);
    EXPECT_EQ(net.a().counters().naks_received, 7u);
}

TEST(ModelErrors, R_SEC_9_CheckOrderInvalidBeforeAccess) {
    Pair net;
    net.setup();
    // A Write-with-immediate with a bad key and no posted receive: RemoteAccess (2) before RNR (3).
    net.handle(0, PostWrite{net.conn[0], 1, 1, kSrc, 10, net.keys[0][0].lkey, kDst2,
                            net.keys[1][0].rkey + 1, 42u});
    net.run(net.now() + 2000, [&] { return !net.completions[0].empty(); });
    ASSERT_EQ(net.completions[0].size(), 1u);
    EXPECT_EQ(net.completions[0][0].status, Status::RemoteAccess);
}

TEST(ModelData, R_CMP_2_WriteImmConsumesReceiveWithImmediate) {
    Pair net;
    net.setup();
    net.handle(1, PostRecv{net.conn[1], 2, 77, kDst2, 0, net.keys[1][0].lkey});
    net.fill(0, kSrc, 5000, 4);
    net.handle(0, PostWrite{net.conn[0], 2, 1, kSrc, 5000, net.keys[0][0].lkey, kDst2 + 100,
                            net.keys[1][0].rkey, 0xABCDu});
    net.run(net.now() + 5000, [&] { return !net.completions[1].empty() && !net.completions[0].empty(); });
    ASSERT_EQ(net.completions[1].size(), 1u);
    EXPECT_EQ(net.completions[1][0].wr_id, 77u);
    EXPECT_EQ(net.completions[1][0].byte_len, 5000u);
    ASSERT_TRUE(net.completions[1][0].immediate);
    EXPECT_EQ(*net.completions[1][0].immediate, 0xABCDu);
    EXPECT_EQ(net.mem(1, kDst2 + 100, 5000), net.mem(0, kSrc, 5000));
}

TEST(ModelConn, R_CONN_4_ConnectRetriedThenFails) {
    Pair net;
    net.filter = [](int, const ref::Packet&, std::vector<uint8_t>&) { return false; };
    net.handle(0, Connect{net.b().config().self});
    net.run(20000);
    int connects = 0;
    for (const auto& p : net.sent[0]) connects += p.opcode == ref::Opcode::Connect;
    EXPECT_EQ(connects, 8);
    ASSERT_EQ(net.a().connections().size(), 1u);
    EXPECT_EQ(net.a().connection_state(net.a().connections()[0]), ConnState::Failed);
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

TEST(ModelMemory, R_MEM_4_LocalBuffersMustBeRegistered) {
    Pair net;
    net.setup();
    net.handle(0, PostSend{net.conn[0], 0, 1, 0x5, 10, net.keys[0][0].lkey});
    net.handle(0, PostRecv{net.conn[0], 0, 2, kSrc, 10, net.keys[0][0].lkey + 7});
    ASSERT_EQ(net.rejected[0].size(), 2u);
    net.run(net.now() + 1000);
    EXPECT_TRUE(net.completions[0].empty());  // refused at post time: no completion follows
}

TEST(ModelFairShare, R_FS_4_SharesSplitCapacityAndNeverExceedIt) {
    Config bcfg = Pair::config_for(1);
    bcfg.capacity_mbps = 1000;
    Pair net(Pair::config_for(0), bcfg);
    net.setup();
    uint32_t first = net.conn[0];
    net.conn[0] = 0;
    net.handle(0, Connect{net.b().config().self});
    net.run(net.now() + 1000, [&] { return net.conn[0] != 0; });
    uint32_t second = net.conn[0];
    ASSERT_NE(first, second);
    for (uint32_t c : {first, second})
        net.handle(0, PostWrite{c, 0, c, kSrc, 200000, net.keys[0][0].lkey, kDst2,
                                net.keys[1][0].rkey, std::nullopt});
    uint64_t checked = 0;
    while (net.now() < 3000) {
        net.run(net.now() + 10);
        uint64_t sum = 0;
        for (auto [id, share] : net.b().rate_shares()) sum += share;
        EXPECT_LE(sum, 1000u);  // [R-FS-4]
        checked += !net.b().rate_shares().empty();
    }
    EXPECT_GT(checked, 0u);
    auto shares = net.b().rate_shares();
    if (shares.size() == 2) {
        auto it = shares.begin();
        EXPECT_EQ(it->second, 500u);
        EXPECT_EQ(std::next(it)->second, 500u);
    }
}

}  // namespace
}  // namespace mroce::model::testing

namespace mroce::model::testing {
namespace {

TEST(ModelSecurity, R_HDR_29_R_VAL_3_CorruptFrameDroppedCountedUnanswered) {
    Pair net;
    net.setup();
    std::vector<uint8_t> frame;
    net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>& f) {
        if (from == 0 && ref::is_data_opcode(p.opcode) && frame.empty()) {
            frame = f;
            f[f.size() - 10] ^= 0x01;  // a payload byte: only the ICRC can tell
        }
        return true;
    };
    net.handle(0, PostWrite{net.conn[0], 0, 1, 0x10000, 100, net.keys[0][0].lkey, 0x90000,
                            net.keys[1][0].rkey, std::nullopt});
    const size_t b_sent = net.sent[1].size();
    net.run(net.now() + 6);  // the corrupted frame arrives; nothing else yet
    EXPECT_EQ(net.b().counters().decode_errors[size_t(ref::ErrorKind::Icrc)], 1u);
    EXPECT_EQ(net.sent[1].size(), b_sent);  // not answered
    EXPECT_EQ(net.b().counters().placed_bytes, 0u);
    net.filter = nullptr;
    net.run(net.now() + 5000, [&] { return !net.completions[0].empty(); });
    ASSERT_EQ(net.completions[0].size(), 1u);  // recovered by loss recovery
    EXPECT_EQ(net.completions[0][0].status, Status::Success);
}

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

TEST(ModelCc, R_CC_5_LossDoesNotShrinkTheWindow_R_CC_3_InFlightBoundedByCwnd) {
    Pair net;
    net.setup();
    int n = 0;
    net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>&) {
        return !(from == 0 && ref::is_data_opcode(p.opcode) && (++n % 7) == 0);
    };
    net.handle(0, PostWrite{net.conn[0], 0, 1, 0x10000, 400 * 1024, net.keys[0][0].lkey, 0x90000,
                            net.keys[1][0].rkey, std::nullopt});
    uint32_t min_cwnd = 1000;
    while (net.completions[0].empty() && net.now() < 100000) {
        net.run(net.now() + 3);
        for (uint16_t p = 0; p < 4; ++p) {
            auto v = net.a().path_view(net.conn[0], p);
            EXPECT_LE(v->in_flight, v->cwnd);             // [R-CC-3]
            EXPECT_LE(v->snxt - v->suna, 256u);           // [R-PSN-4]
            min_cwnd = std::min(min_cwnd, v->cwnd);
        }
    }
    ASSERT_EQ(net.completions[0].size(), 1u);
    EXPECT_GE(min_cwnd, 16u);  // never below INIT_CWND: loss is not congestion
    EXPECT_GT(net.a().counters().retransmissions, 0u);
}

TEST(ModelAck, R_ACK_9_OlderAckMovesNothingBack) {
    Pair net;
    net.setup();
    std::vector<std::vector<uint8_t>> acks;
    net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>& f) {
        if (from == 1 && p.opcode == ref::Opcode::Ack && p.path_id == 0) acks.push_back(f);
        return true;
    };
    net.handle(0, PostWrite{net.conn[0], 0, 1, 0x10000, 64 * 4096, net.keys[0][0].lkey, 0x90000,
                            net.keys[1][0].rkey, std::nullopt});
    net.run(net.now() + 5000, [&] { return !net.completions[0].empty(); });
    ASSERT_GE(acks.size(), 2u);
    const auto before = *net.a().path_view(net.conn[0], 0);
    net.apply(0, net.a().handle(net.now(), Receive{acks.front()}));  // a stale ACK, replayed
    const auto after = *net.a().path_view(net.conn[0], 0);
    EXPECT_EQ(after.suna, before.suna);
    EXPECT_EQ(after.snxt, before.snxt);
    EXPECT_EQ(after.cwnd, before.cwnd);
    EXPECT_EQ(after.in_flight, 0u);
}

}  // namespace
}  // namespace mroce::model::testing

namespace mroce::model::testing {
namespace {

TEST(ModelErrors, R_REL_9_VoidedSendCancelsItsReceiveLater_R_CMP_2) {
    Pair net;
    net.setup();
    net.handle(0, PostSend{net.conn[0], 0, 1, 0x10000, 10, net.keys[0][0].lkey});
    net.run(net.now() + 5000, [&] { return !net.completions[0].empty(); });
    ASSERT_EQ(net.completions[0].size(), 1u);
    ASSERT_EQ(net.completions[0][0].status, Status::RnrRetryExceeded);
    // The receive for RSN 0 is posted after the Send gave up: it is canceled at once, and the next
    // Send/receive pair of the stream is not blocked behind it.
    net.handle(1, PostRecv{net.conn[1], 0, 50, 0x90000, 64, net.keys[1][0].lkey});
    net.handle(1, PostRecv{net.conn[1], 0, 51, 0x90100, 64, net.keys[1][0].lkey});
    net.handle(0, PostSend{net.conn[0], 0, 2, 0x10000, 20, net.keys[0][0].lkey});
    net.run(net.now() + 5000, [&] { return net.completions[1].size() == 2; });
    ASSERT_EQ(net.completions[1].size(), 2u);
    EXPECT_EQ(net.completions[1][0].wr_id, 50u);
    EXPECT_EQ(net.completions[1][0].status, Status::Canceled);
    EXPECT_EQ(net.completions[1][1].wr_id, 51u);
    EXPECT_EQ(net.completions[1][1].status, Status::Success);
    EXPECT_EQ(net.completions[1][1].byte_len, 20u);
}

TEST(ModelErrors, R_REL_9_RefusedWriteImmCancelsPostedReceive) {
    Pair net;
    net.setup();
    net.handle(1, PostRecv{net.conn[1], 1, 60, 0x90000, 0, net.keys[1][0].lkey});
    net.handle(0, PostWrite{net.conn[0], 1, 1, 0x10000, 100, net.keys[0][0].lkey, 0x90000,
                            net.keys[1][0].rkey ^ 0xFF00, 7u});
    net.run(net.now() + 5000, [&] { return !net.completions[1].empty() && !net.completions[0].empty(); });
    ASSERT_EQ(net.completions[0].size(), 1u);
    EXPECT_EQ(net.completions[0][0].status, Status::RemoteAccess);
    ASSERT_EQ(net.completions[1].size(), 1u);
    EXPECT_EQ(net.completions[1][0].status, Status::Canceled);
}

}  // namespace
}  // namespace mroce::model::testing
