// Behavioural parity of the engine with the executable model: the model's unit-test scenarios (and
// some more) run on both in lockstep; every frame, completion, event, deadline and path view must be
// identical after every event. Named by the requirement each scenario exercises.
#include <gtest/gtest.h>

#include <optional>
#include <set>

#include "lockstep.hpp"

namespace mroce::testing {
namespace {

using model::Config;
using model::PostRead;
using model::PostRecv;
using model::PostSend;
using model::PostWrite;

constexpr uint64_t kBase = 0x10000;
constexpr uint64_t kDst = kBase + 0x80000;

Config config_for(int side) {
  Config c;
  c.self.mac = {0x02, 0, 0, 0, 0, uint8_t(side + 1)};
  c.self.ip = {10, 0, 0, uint8_t(side + 1)};
  c.first_conn_id = side == 0 ? 0x100 : 0x200;
  c.isn = side == 0 ? 0xFFFFFFF0u : 0x7FFFFFF8u;  // wraparound on A's paths
  return c;
}

bool is_data(const ref::Packet& p) { return ref::is_data_opcode(p.opcode); }

#define EXPECT_IN_STEP(net)                                    \
  do {                                                         \
    EXPECT_FALSE((net).diverged()) << (net).divergence;        \
    EXPECT_GT((net).frames_compared, 0u);                      \
  } while (0)

TEST(EngineLockstep, R_CONN_1_HandshakeNegotiatesMinimum) {
  Config a = config_for(0);
  a.path_count = 8;
  a.stream_count = 2;
  Config b = config_for(1);
  b.path_count = 3;
  b.max_payload = 1024;
  Lockstep net(a, b);
  net.setup();
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_NE(net.conn[0], 0u);
  ASSERT_NE(net.conn[1], 0u);
  EXPECT_EQ(net.dev(0).path_count(net.conn[0]), 3);
  EXPECT_EQ(net.dev(1).path_count(net.conn[1]), 3);
  EXPECT_EQ(net.dev(0).stream_count(net.conn[0]), 2);
  EXPECT_EQ(net.dev(0).max_payload(net.conn[0]), 1024);
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_PLC_2_WriteOverAllPaths) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  ASSERT_FALSE(net.diverged()) << net.divergence;
  const size_t n = 40000;
  net.fill(0, kBase, n, 1);
  net.handle(0, PostWrite{net.conn[0], 0, 7, kBase, uint32_t(n), net.keys[0][0].lkey, kDst, net.keys[1][0].rkey,
                          std::nullopt});
  net.run(10000, [&] { return !net.completions[0].empty(); });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, model::Status::Success);
  EXPECT_TRUE(net.same_memory(1, kDst, n));
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_REL_5_LostPacketRetransmittedSamePathSamePsn) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  ASSERT_FALSE(net.diverged()) << net.divergence;
  bool dropped = false;
  net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>&) {
    if (from == 0 && is_data(p) && p.msg_offset == 4096 && !dropped) {
      dropped = true;
      return false;
    }
    return true;
  };
  const size_t n = 5 * 4096;
  net.fill(0, kBase, n, 3);
  net.handle(0, PostWrite{net.conn[0], 0, 1, kBase, uint32_t(n), net.keys[0][0].lkey, kDst, net.keys[1][0].rkey,
                          std::nullopt});
  net.run(10000, [&] { return !net.completions[0].empty(); });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_TRUE(dropped);
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_TRUE(net.same_memory(1, kDst, n));
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_MATCH_1_SendsMatchReceivesByRsnOutOfOrder) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  ASSERT_FALSE(net.diverged()) << net.divergence;
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
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_EQ(net.completions[1].size(), 2u);
  EXPECT_EQ(net.completions[1][0].wr_id, 100u);
  EXPECT_EQ(net.completions[1][1].wr_id, 101u);
  EXPECT_TRUE(net.same_memory(1, kDst, 2000));
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_PLC_4_ReadReturnsRemoteBytes) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  ASSERT_FALSE(net.diverged()) << net.divergence;
  const size_t n = 9000;
  net.fill(1, kDst, n, 77);
  net.handle(0, PostRead{net.conn[0], 2, 5, kBase, uint32_t(n), net.keys[0][0].lkey, kDst, net.keys[1][0].rkey});
  net.run(10000, [&] { return !net.completions[0].empty(); });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, model::Status::Success);
  EXPECT_TRUE(net.same_memory(0, kBase, n));
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_MEM_3_WrongKeyRefusedAndVoided) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  ASSERT_FALSE(net.diverged()) << net.divergence;
  net.fill(0, kBase, 5000, 5);
  net.handle(0, PostWrite{net.conn[0], 0, 9, kBase, 5000, net.keys[0][0].lkey, kDst, net.keys[1][0].rkey ^ 0x55,
                          std::nullopt});
  net.handle(0, PostWrite{net.conn[0], 0, 10, kBase, 100, net.keys[0][0].lkey, kDst + 8192, net.keys[1][0].rkey,
                          std::nullopt});
  net.run(20000, [&] { return net.completions[0].size() == 2; });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_EQ(net.completions[0].size(), 2u);
  EXPECT_EQ(net.completions[0][0].status, model::Status::RemoteAccess);
  EXPECT_EQ(net.completions[0][1].status, model::Status::Success);
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_MATCH_2_SendLongerThanReceive) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  ASSERT_FALSE(net.diverged()) << net.divergence;
  net.handle(1, PostRecv{net.conn[1], 0, 50, kDst, 10, net.keys[1][0].lkey});
  net.handle(0, PostSend{net.conn[0], 0, 1, kBase, 11, net.keys[0][0].lkey});
  net.run(20000, [&] { return !net.completions[0].empty() && !net.completions[1].empty(); });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, model::Status::RemoteLength);
  ASSERT_EQ(net.completions[1].size(), 1u);
  EXPECT_EQ(net.completions[1][0].status, model::Status::LocalLength);
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_PLC_7_ReceiverNotReadyThenReady) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  ASSERT_FALSE(net.diverged()) << net.divergence;
  net.fill(0, kBase, 64, 1);
  net.handle(0, PostSend{net.conn[0], 3, 1, kBase, 64, net.keys[0][0].lkey});
  net.run(net.now() + 150);
  ASSERT_FALSE(net.diverged()) << net.divergence;
  EXPECT_TRUE(net.completions[0].empty());
  net.handle(1, PostRecv{net.conn[1], 3, 60, kDst, 64, net.keys[1][0].lkey});
  net.run(net.now() + 2000, [&] { return !net.completions[0].empty(); });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, model::Status::Success);
  EXPECT_TRUE(net.same_memory(1, kDst, 64));
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_PLC_9_RnrRetryExceeded) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  ASSERT_FALSE(net.diverged()) << net.divergence;
  net.handle(0, PostSend{net.conn[0], 0, 1, kBase, 64, net.keys[0][0].lkey});
  net.run(net.now() + 20000, [&] { return !net.completions[0].empty(); });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, model::Status::RnrRetryExceeded);
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_CONN_8_DeadPeerFailsEverything) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  ASSERT_FALSE(net.diverged()) << net.divergence;
  net.handle(1, PostRecv{net.conn[1], 0, 70, kDst, 64, net.keys[1][0].lkey});
  net.filter = [](int, const ref::Packet&, std::vector<uint8_t>&) { return false; };
  net.handle(0, PostWrite{net.conn[0], 0, 1, kBase, 5000, net.keys[0][0].lkey, kDst, net.keys[1][0].rkey,
                          std::nullopt});
  net.handle(0, PostSend{net.conn[0], 1, 2, kBase, 10, net.keys[0][0].lkey});
  net.run(400000, [&] { return net.completions[0].size() == 2 && net.completions[1].size() == 1; });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_EQ(net.completions[0].size(), 2u);
  for (const auto& c : net.completions[0]) EXPECT_EQ(c.status, model::Status::ConnectionFailed);
  ASSERT_EQ(net.completions[1].size(), 1u);
  EXPECT_EQ(net.completions[1][0].status, model::Status::Flushed);
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_PATH_4_DeadRouteIsRepathed) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  ASSERT_FALSE(net.diverged()) << net.divergence;
  const uint16_t dead = net.dev(0).path_info(net.conn[0], 2)->route;
  net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>&) {
    return !(from == 0 && p.udp_sport == dead);
  };
  const size_t n = 64 * 4096;
  net.fill(0, kBase, n, 11);
  net.handle(0, PostWrite{net.conn[0], 0, 1, kBase, uint32_t(n), net.keys[0][0].lkey, kDst, net.keys[1][0].rkey,
                          std::nullopt});
  net.run(200000, [&] { return !net.completions[0].empty(); });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, model::Status::Success);
  EXPECT_TRUE(net.same_memory(1, kDst, n));
  EXPECT_NE(net.dev(0).path_info(net.conn[0], 2)->route, dead);
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_CC_4_CeHalvesTheWindowOncePerWindow) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  ASSERT_FALSE(net.diverged()) << net.divergence;
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
  net.handle(0, PostWrite{net.conn[0], 0, 1, kBase, 8 * 4096, net.keys[0][0].lkey, kDst, net.keys[1][0].rkey,
                          std::nullopt});
  net.run(10000, [&] { return !net.completions[0].empty(); });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  EXPECT_EQ(marked, 2);
  EXPECT_EQ(net.dev(0).counters().cwnd_decreases, 1u);
  EXPECT_EQ(net.dev(0).path_info(net.conn[0], 0)->cwnd, 8u);
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_CONN_7_GracefulCloseAndAbort) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  ASSERT_FALSE(net.diverged()) << net.divergence;
  net.handle(1, PostRecv{net.conn[1], 0, 1, kDst, 64, net.keys[1][0].lkey});
  net.handle(0, PostWrite{net.conn[0], 1, 2, kBase, 20000, net.keys[0][0].lkey, kDst, net.keys[1][0].rkey,
                          std::nullopt});
  net.handle(0, model::Close{net.conn[0], false});
  net.run(net.now() + 100000, [&] {
    return net.model(0).connection_state(net.conn[0]) == model::ConnState::Closed &&
           net.model(1).connection_state(net.conn[1]) == model::ConnState::Closed;
  });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  EXPECT_EQ(net.dev(0).connection_state(net.conn[0]), ConnState::Closed);
  EXPECT_EQ(net.dev(1).connection_state(net.conn[1]), ConnState::Closed);
  ASSERT_EQ(net.completions[1].size(), 1u);
  EXPECT_EQ(net.completions[1][0].status, model::Status::Flushed);
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_CONN_7_AbortFlushes) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  ASSERT_FALSE(net.diverged()) << net.divergence;
  net.handle(0, PostWrite{net.conn[0], 1, 2, kBase, 200000, net.keys[0][0].lkey, kDst, net.keys[1][0].rkey,
                          std::nullopt});
  net.run(net.now() + 12);
  ASSERT_FALSE(net.diverged()) << net.divergence;
  net.handle(0, model::Close{net.conn[0], true});
  net.run(net.now() + 100000, [&] {
    return net.model(1).connection_state(net.conn[1]) == model::ConnState::Closed;
  });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, model::Status::Flushed);
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_CONN_6_KeepaliveOnIdleConnection) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  ASSERT_FALSE(net.diverged()) << net.divergence;
  net.run(net.now() + 350000);
  ASSERT_FALSE(net.diverged()) << net.divergence;
  EXPECT_GE(net.dev(0).counters().probes_sent, 1u);
  EXPECT_EQ(net.dev(0).connection_state(net.conn[0]), ConnState::Established);
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_CONN_4_RejectWhenNotListening) {
  Config b = config_for(1);
  b.listening = false;
  Lockstep net(config_for(0), b);
  net.handle(0, model::Connect{net.model(1).config().self});
  net.run(2000);
  ASSERT_FALSE(net.diverged()) << net.divergence;
  EXPECT_EQ(net.dev(0).connection_state(0x100), ConnState::Failed);
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_CONN_4_ConnectRetriesThenFails) {
  Lockstep net(config_for(0), config_for(1));
  net.filter = [](int, const ref::Packet&, std::vector<uint8_t>&) { return false; };
  net.handle(0, model::Connect{net.model(1).config().self});
  net.run(20000);
  ASSERT_FALSE(net.diverged()) << net.divergence;
  EXPECT_EQ(net.dev(0).connection_state(0x100), ConnState::Failed);
  EXPECT_IN_STEP(net);
}


// ---- the model's second batch of requirement scenarios ----

void post_write(Lockstep& net, uint64_t wr, uint32_t len, uint16_t stream = 0, uint64_t off = 0) {
  net.handle(0, PostWrite{net.conn[0], stream, wr, kBase + off, len, net.keys[0][0].lkey, kDst + off,
                          net.keys[1][0].rkey, std::nullopt});
}

TEST(EngineLockstep, R_ENC_9_R_ENC_10_EcnAndDscpByPacketClass) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  post_write(net, 1, 10000);
  net.run(10000, [&] { return !net.completions[0].empty(); });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  int data = 0;
  for (const auto& p : net.sent[0]) {
    if (!is_data(p)) continue;
    ++data;
    EXPECT_EQ(p.ecn, 2);
    EXPECT_EQ(p.dscp, 26);
  }
  EXPECT_GT(data, 0);
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_ACK_2_GapDrawsImmediateAckWithSackBits_R_HDR_20) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  bool dropped = false;
  net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>&) {
    if (from == 0 && is_data(p) && p.path_id == 1 && !dropped) {
      dropped = true;
      return false;
    }
    return true;
  };
  post_write(net, 1, 12 * 4096);
  net.run(10000, [&] { return !net.completions[0].empty(); });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_TRUE(dropped);
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_ACK_3_CoalescesUpToAckEvery) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  post_write(net, 1, 32 * 4096);
  net.run(10000, [&] { return !net.completions[0].empty(); });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  EXPECT_EQ(net.dev(1).counters().acks_sent, 8u);
  EXPECT_IN_STEP(net);
}

// [R-ACK-3]: whatever the coalescing choice, an ACK no later than 16 accepted packets of a path.
TEST(EngineLockstep, R_ACK_3_AckNoLaterThanSixteenPackets) {
  Config a = config_for(0), b = config_for(1);
  a.path_count = b.path_count = 1;
  b.ack_every = 64;      // a choice above the cap: the cap decides
  b.ack_delay_us = 16;   // the latest the delay rule allows
  Lockstep net(a, b);
  net.setup();
  // Without loss, each ACK's CPSN advance is the number of packets it acknowledges.
  std::optional<uint32_t> last_cpsn;
  uint32_t longest = 0;
  net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>&) {
    if (from == 1 && p.opcode == ref::Opcode::Ack) {
      if (last_cpsn) longest = std::max(longest, p.cpsn - *last_cpsn);
      last_cpsn = p.cpsn;
    }
    return true;
  };
  post_write(net, 1, 64 * 4096);
  net.run(net.now() + 20000, [&] { return !net.completions[0].empty(); });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(longest, 16u);  // never more than 16 packets per ACK, and 16 when the window allows
  EXPECT_IN_STEP(net);
}

// [R-PSN-4]: with one PSN held lost while later ones are acknowledged, a path sends until
// SNXT = SUNA + 256, and not one PSN further.
TEST(EngineLockstep, R_PSN_4_SpanStopsAtSunaPlus256WhileAHoleIsHeld) {
  Config a = config_for(0), b = config_for(1);
  a.path_count = b.path_count = 1;
  a.max_payload = b.max_payload = 1024;
  Lockstep net(a, b);
  net.setup();
  std::optional<uint32_t> hole;
  bool full = false;
  uint32_t widest = 0;
  net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>&) {
    if (from != 0 || !is_data(p)) return true;
    if (!hole) hole = p.psn;
    return full || p.psn != *hole;
  };
  post_write(net, 1, 400 * 1024);
  net.run(net.now() + 200000, [&] {
    const auto v = net.dev(0).path_info(net.conn[0], 0);
    widest = std::max(widest, v->snxt - v->suna);
    full = full || widest >= 256;
    return !net.completions[0].empty();
  });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  EXPECT_EQ(widest, 256u);
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, model::Status::Success);
  EXPECT_IN_STEP(net);
}

// [R-PLC-9], [R-HDR-24]: an RNR NAK's Detail (10 µs units) sets the sender's wait.
TEST(EngineLockstep, R_PLC_9_RnrWaitFollowsTheNakDetail) {
  Config a = config_for(0), b = config_for(1);
  b.rnr_detail = 7;  // 70 µs
  Lockstep net(a, b);
  net.setup();
  std::vector<model::Time> sent;
  net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>&) {
    if (from == 0 && is_data(p)) sent.push_back(net.now());
    return true;
  };
  net.handle(0, PostSend{net.conn[0], 0, 1, kBase, 64, net.keys[0][0].lkey});
  net.run(net.now() + 150, [&] { return sent.size() >= 2; });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_GE(sent.size(), 2u);
  EXPECT_GE(sent[1] - sent[0], 70u);   // NAK after one RTT, then the 70 µs wait
  EXPECT_LT(sent[1] - sent[0], 100u);  // not the default wait, not 700 µs
  net.handle(1, PostRecv{net.conn[1], 0, 2, kDst, 64, net.keys[1][0].lkey});
  net.run(net.now() + 20000, [&] { return !net.completions[0].empty(); });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, model::Status::Success);
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_PSN_3_OutOfWindowDroppedAndDuplicatesNotPlacedTwice_R_REL_8) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  std::vector<uint8_t> first;
  net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>& frame) {
    if (from == 0 && is_data(p) && first.empty()) first = frame;
    return true;
  };
  post_write(net, 1, 100);
  net.run(10000, [&] { return !net.completions[0].empty(); });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_FALSE(first.empty());
  const uint64_t placed = net.dev(1).counters().placed_bytes;
  net.filter = nullptr;
  net.handle(1, model::Receive{first});
  EXPECT_EQ(net.dev(1).counters().duplicates, 1u);
  EXPECT_EQ(net.dev(1).counters().placed_bytes, placed);
  auto d = ref::decode(first);
  ref::Packet far = d.packet;
  far.psn += 1000;
  std::vector<uint8_t> payload(first.begin() + d.packet.payload_offset,
                               first.begin() + d.packet.payload_offset + d.packet.payload_len);
  net.handle(1, model::Receive{ref::encode(far, payload)});
  EXPECT_EQ(net.dev(1).counters().out_of_window, 1u);
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_REL_6_TailLossRecoveredByProbe) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  bool dropped = false;
  net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>&) {
    if (from == 0 && is_data(p) && !dropped) {
      dropped = true;
      return false;
    }
    return true;
  };
  post_write(net, 1, 100);
  net.run(5000, [&] { return !net.completions[0].empty(); });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_GE(net.dev(0).counters().probes_sent, 1u);
  EXPECT_EQ(net.dev(0).counters().repaths, 0u);
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_REL_7_RtoBacksOffAndRepaths_R_PATH_2) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  const uint16_t route = net.dev(0).path_info(net.conn[0], 0)->route;
  net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>&) {
    return !(from == 0 && p.udp_sport == route);
  };
  post_write(net, 1, 100);
  net.run(net.now() + 1200);
  ASSERT_FALSE(net.diverged()) << net.divergence;
  auto v = net.dev(0).path_info(net.conn[0], 0);
  EXPECT_EQ(v->state, PathState::Active);
  EXPECT_NE(v->route, route);
  EXPECT_EQ(v->repaths, 1u);
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_PATH_5_FailedPathAdoptsRouteOfActivePath) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  std::set<uint16_t> good;
  for (uint16_t p = 0; p < 3; ++p) good.insert(net.dev(0).path_info(net.conn[0], p)->route);
  net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>&) {
    return !(from == 0 && p.path_id == 3 && !good.count(p.udp_sport));
  };
  post_write(net, 1, 16 * 4096);
  // Paths 0..2 kept busy, so they are donors known to work now.
  auto wr1_done = [&] {
    for (const auto& c : net.completions[0])
      if (c.wr_id == 1) return true;
    return false;
  };
  for (uint64_t wr = 100; !net.diverged() && net.now() < 200000 && !wr1_done(); ++wr) {
    post_write(net, wr, 3 * 4096, 1, 0x20000);
    net.run(net.now() + 500, wr1_done);
  }
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_TRUE(wr1_done());
  auto v = net.dev(0).path_info(net.conn[0], 3);
  EXPECT_TRUE(good.count(v->route));
  EXPECT_EQ(v->repaths, 3u);
  EXPECT_IN_STEP(net);
}

// an idle ACTIVE path is no donor; model and engine both take fresh routes.
TEST(EngineLockstep, R_PATH_5_IdleActivePathIsNoDonor) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>&) { return !(from == 0 && p.path_id == 3); };
  std::set<uint16_t> others;
  for (uint16_t p = 0; p < 3; ++p) others.insert(net.dev(0).path_info(net.conn[0], p)->route);
  post_write(net, 1, 16 * 4096);
  net.run(net.now() + 20000);
  ASSERT_FALSE(net.diverged()) << net.divergence;
  auto v = net.dev(0).path_info(net.conn[0], 3);
  EXPECT_GE(v->repaths, 4u);
  EXPECT_FALSE(others.count(v->route));
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_SEC_9_CheckOrderInvalidBeforeAccess) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  net.handle(0, PostWrite{net.conn[0], 1, 1, kBase, 10, net.keys[0][0].lkey, kDst, net.keys[1][0].rkey + 1, 42u});
  net.run(net.now() + 2000, [&] { return !net.completions[0].empty(); });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, model::Status::RemoteAccess);
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_CMP_2_WriteImmConsumesReceiveWithImmediate) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  net.handle(1, PostRecv{net.conn[1], 2, 77, kDst, 0, net.keys[1][0].lkey});
  net.fill(0, kBase, 5000, 4);
  net.handle(0, PostWrite{net.conn[0], 2, 1, kBase, 5000, net.keys[0][0].lkey, kDst + 100, net.keys[1][0].rkey,
                          0xABCDu});
  net.run(net.now() + 5000, [&] { return !net.completions[1].empty() && !net.completions[0].empty(); });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_EQ(net.completions[1].size(), 1u);
  ASSERT_TRUE(net.completions[1][0].immediate);
  EXPECT_EQ(*net.completions[1][0].immediate, 0xABCDu);
  EXPECT_TRUE(net.same_memory(1, kDst + 100, 5000));
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_MEM_4_LocalBuffersMustBeRegistered) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  net.handle(0, PostSend{net.conn[0], 0, 1, 0x5, 10, net.keys[0][0].lkey});
  net.handle(0, PostRecv{net.conn[0], 0, 2, kBase, 10, net.keys[0][0].lkey + 7});
  net.handle(0, PostRead{net.conn[0], 9, 3, kBase, 10, net.keys[0][0].lkey, kDst, net.keys[1][0].rkey});
  net.run(net.now() + 1000);
  ASSERT_FALSE(net.diverged()) << net.divergence;
  EXPECT_TRUE(net.completions[0].empty());
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_FS_4_SharesSplitCapacityTwoConnections) {
  Config bcfg = config_for(1);
  bcfg.capacity_mbps = 1000;
  Lockstep net(config_for(0), bcfg);
  net.setup();
  ASSERT_FALSE(net.diverged()) << net.divergence;
  const uint32_t first = net.conn[0];
  net.conn[0] = 0;
  net.handle(0, model::Connect{net.model(1).config().self});
  net.run(net.now() + 1000, [&] { return net.conn[0] != 0; });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  const uint32_t second = net.conn[0];
  ASSERT_NE(first, second);
  for (uint32_t c : {first, second})
    net.handle(0, PostWrite{c, 0, c, kBase, 200000, net.keys[0][0].lkey, kDst, net.keys[1][0].rkey, std::nullopt});
  net.run(30000, [&] { return net.completions[0].size() == 2; });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  EXPECT_EQ(net.completions[0].size(), 2u);
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_PLC_4_ReadsWritesSendsMixedOnManyStreams) {
  Config a = config_for(0), b = config_for(1);
  a.stream_count = b.stream_count = 8;
  Lockstep net(a, b);
  net.setup();
  net.fill(0, kBase, 200000, 3);
  net.fill(1, kDst, 200000, 5);
  int drops = 0;
  uint64_t k = 0;
  net.filter = [&](int, const ref::Packet&, std::vector<uint8_t>&) {
    ++k;
    if (k % 17 == 0) {
      ++drops;
      return false;
    }
    return true;
  };
  for (uint16_t st = 0; st < 8; ++st) {
    net.handle(1, PostRecv{net.conn[1], st, 1000u + st, kDst + 100000 + st * 5000, 5000, net.keys[1][0].lkey});
    net.handle(0, PostSend{net.conn[0], st, 10u + st, kBase + st * 3000, uint32_t(3000 + st * 100), net.keys[0][0].lkey});
    net.handle(0, PostWrite{net.conn[0], st, 20u + st, kBase + st * 7000, 7000, net.keys[0][0].lkey, kDst + st * 7000,
                            net.keys[1][0].rkey, st % 2 ? std::optional<uint32_t>(st) : std::nullopt});
    net.handle(0, PostRead{net.conn[0], st, 30u + st, kBase + 100000 + st * 6000, 6000, net.keys[0][0].lkey,
                           kDst + 150000 + st * 10, net.keys[1][0].rkey});
  }
  net.run(net.now() + 400000, [&] { return net.completions[0].size() == 24; });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  EXPECT_EQ(net.completions[0].size(), 24u);
  EXPECT_GT(drops, 0);
  EXPECT_TRUE(net.same_memory(1, kDst, 200000));
  EXPECT_TRUE(net.same_memory(0, kBase, 200000));
  EXPECT_IN_STEP(net);
}


// ---- the model's third batch: security, windows, stale ACKs, canceled receives ----

TEST(EngineLockstep, R_HDR_29_R_VAL_3_CorruptFrameDroppedCountedUnanswered) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  bool done = false;
  net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>& f) {
    if (from == 0 && is_data(p) && !done) {
      done = true;
      f[f.size() - 10] ^= 0x01;  // a payload byte: only the ICRC can tell
    }
    return true;
  };
  post_write(net, 1, 100);
  net.run(net.now() + 6);
  ASSERT_FALSE(net.diverged()) << net.divergence;
  EXPECT_EQ(net.dev(1).counters().decode_errors[size_t(fast::Error::Icrc) - 1], 1u);
  EXPECT_EQ(net.dev(1).counters().placed_bytes, 0u);
  net.filter = nullptr;
  net.run(net.now() + 5000, [&] { return !net.completions[0].empty(); });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_CONN_9_UnknownDcidDropped_R_PATH_1_BadPathDropped) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  std::vector<uint8_t> frame;
  net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>& f) {
    if (from == 0 && is_data(p) && frame.empty()) frame = f;
    return true;
  };
  post_write(net, 1, 100);
  net.run(net.now() + 5000, [&] { return !net.completions[0].empty(); });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_FALSE(frame.empty());
  auto d = ref::decode(frame);
  std::vector<uint8_t> payload(frame.begin() + d.packet.payload_offset,
                               frame.begin() + d.packet.payload_offset + d.packet.payload_len);
  ref::Packet p = d.packet;
  p.dcid = 0xDEADBEEF;
  net.handle(1, model::Receive{ref::encode(p, payload)});
  EXPECT_EQ(net.dev(1).counters().unknown_dcid, 1u);
  p = d.packet;
  p.path_id = 4;
  p.psn += 1;
  net.handle(1, model::Receive{ref::encode(p, payload)});
  EXPECT_EQ(net.dev(1).counters().bad_path, 1u);
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_MEM_2_DeregisteredKeyRefused) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  net.handle(1, model::RegisterMemory{0x200000, 4096, model::access::kRemoteWrite | model::access::kLocalWrite});
  ASSERT_EQ(net.keys[1].size(), 2u);
  const auto k = net.keys[1][1];
  net.handle(1, model::DeregisterMemory{k.lkey});
  net.handle(0, PostWrite{net.conn[0], 0, 1, kBase, 100, net.keys[0][0].lkey, 0x200000, k.rkey, std::nullopt});
  net.run(net.now() + 5000, [&] { return !net.completions[0].empty(); });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, model::Status::RemoteAccess);
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_CC_5_LossDoesNotShrinkTheWindow_R_CC_3_InFlightBoundedByCwnd) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  int n = 0;
  net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>&) {
    return !(from == 0 && is_data(p) && (++n % 7) == 0);
  };
  post_write(net, 1, 400 * 1024);
  uint32_t min_cwnd = 1000;
  while (net.completions[0].empty() && net.now() < 100000 && !net.diverged()) {
    net.run(net.now() + 3);
    for (uint16_t p = 0; p < 4; ++p) {
      auto v = net.dev(0).path_info(net.conn[0], p);
      EXPECT_LE(v->in_flight, v->cwnd);
      EXPECT_LE(v->snxt - v->suna, 256u);
      min_cwnd = std::min(min_cwnd, v->cwnd);
    }
  }
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_GE(min_cwnd, 16u);
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_ACK_9_OlderAckMovesNothingBack) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  std::vector<std::vector<uint8_t>> acks;
  net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>& f) {
    if (from == 1 && p.opcode == ref::Opcode::Ack && p.path_id == 0) acks.push_back(f);
    return true;
  };
  post_write(net, 1, 64 * 4096);
  net.run(net.now() + 5000, [&] { return !net.completions[0].empty(); });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_GE(acks.size(), 2u);
  const auto before = *net.dev(0).path_info(net.conn[0], 0);
  net.handle(0, model::Receive{acks.front()});
  const auto after = *net.dev(0).path_info(net.conn[0], 0);
  EXPECT_EQ(after.suna, before.suna);
  EXPECT_EQ(after.cwnd, before.cwnd);
  EXPECT_EQ(after.in_flight, 0u);
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_REL_9_VoidedSendCancelsItsReceiveLater_R_CMP_2) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  net.handle(0, PostSend{net.conn[0], 0, 1, kBase, 10, net.keys[0][0].lkey});
  net.run(net.now() + 5000, [&] { return !net.completions[0].empty(); });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_EQ(net.completions[0].size(), 1u);
  ASSERT_EQ(net.completions[0][0].status, model::Status::RnrRetryExceeded);
  net.handle(1, PostRecv{net.conn[1], 0, 50, kDst, 64, net.keys[1][0].lkey});
  net.handle(1, PostRecv{net.conn[1], 0, 51, kDst + 0x100, 64, net.keys[1][0].lkey});
  net.handle(0, PostSend{net.conn[0], 0, 2, kBase, 20, net.keys[0][0].lkey});
  net.run(net.now() + 5000, [&] { return net.completions[1].size() == 2; });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_EQ(net.completions[1].size(), 2u);
  EXPECT_EQ(net.completions[1][0].status, model::Status::Canceled);
  EXPECT_EQ(net.completions[1][1].status, model::Status::Success);
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_REL_9_RefusedWriteImmCancelsPostedReceive) {
  Lockstep net(config_for(0), config_for(1));
  net.setup();
  net.handle(1, PostRecv{net.conn[1], 1, 60, kDst, 0, net.keys[1][0].lkey});
  net.handle(0, PostWrite{net.conn[0], 1, 1, kBase, 100, net.keys[0][0].lkey, kDst, net.keys[1][0].rkey ^ 0xFF00, 7u});
  net.run(net.now() + 5000, [&] { return !net.completions[1].empty() && !net.completions[0].empty(); });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_EQ(net.completions[1].size(), 1u);
  EXPECT_EQ(net.completions[1][0].status, model::Status::Canceled);
  EXPECT_IN_STEP(net);
}


// ---- large configurations: multi-word path and stream sets ----

TEST(EngineLockstep, R_PATH_1_TwoHundredFiftySixPathsAndManyStreamsUnderLoss) {
  Config a = config_for(0), b = config_for(1);
  a.path_count = b.path_count = 256;  // [R-PATH-1] an implementation MUST support P = 256
  a.stream_count = b.stream_count = 300;
  a.max_payload = b.max_payload = 1024;
  Lockstep net(a, b);
  net.setup(4 << 20);
  ASSERT_FALSE(net.diverged()) << net.divergence;
  ASSERT_EQ(net.dev(0).path_count(net.conn[0]), 256);
  net.fill(0, kBase, 2 << 20, 9);
  uint64_t k = 0;
  net.filter = [&](int, const ref::Packet& p, std::vector<uint8_t>&) { return !(is_data(p) && ++k % 13 == 0); };
  for (uint16_t st = 0; st < 300; st += 7) {
    net.handle(0, PostWrite{net.conn[0], st, 1000u + st, kBase + st * 6000ull, 6000, net.keys[0][0].lkey,
                            kBase + (2 << 20) + st * 6000ull, net.keys[1][0].rkey, std::nullopt});
    net.handle(1, PostRecv{net.conn[1], st, 5000u + st, kBase + (3 << 20) + st * 3000ull, 3000, net.keys[1][0].lkey});
    net.handle(0, PostSend{net.conn[0], st, 2000u + st, kBase + st * 6000ull, 2500, net.keys[0][0].lkey});
  }
  net.run(net.now() + 300000, [&] { return net.completions[0].size() == 2 * 43 && net.completions[1].size() == 43; });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  EXPECT_EQ(net.completions[0].size(), 2u * 43);
  EXPECT_TRUE(net.same_memory(1, kBase + (2 << 20), 300 * 6000));
  std::set<uint16_t> used;
  for (const auto& p : net.sent[0])
    if (is_data(p)) used.insert(p.path_id);
  EXPECT_GT(used.size(), 64u);  // spraying reached paths beyond the first bitmap word
  EXPECT_IN_STEP(net);
}

TEST(EngineLockstep, R_CC_1_WindowCapOneAndTinyPayloads) {
  Config a = config_for(0), b = config_for(1);
  a.window_cap = 1;
  a.max_payload = b.max_payload = 256;
  a.path_count = 2;
  Lockstep net(a, b);
  net.setup();
  bool drop = true;
  net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>&) {
    if (from == 0 && is_data(p) && drop) {
      drop = false;
      return false;
    }
    return true;
  };
  net.fill(0, kBase, 20000, 4);
  post_write(net, 1, 20000);
  net.handle(0, PostRead{net.conn[0], 1, 2, kBase + 0x40000, 5000, net.keys[0][0].lkey, kDst, net.keys[1][0].rkey});
  net.run(net.now() + 200000, [&] { return net.completions[0].size() == 2; });
  ASSERT_FALSE(net.diverged()) << net.divergence;
  EXPECT_EQ(net.completions[0].size(), 2u);
  EXPECT_TRUE(net.same_memory(1, kDst, 20000));
  EXPECT_IN_STEP(net);
}

}  // namespace
}  // namespace mroce::testing
