// Requirement-level unit tests of the engine over the in-memory loop, mirroring the model's unit
// tests (properties/model_unit) scenario by scenario, plus engine-specific properties: clean errors
// when pools run out, and byte-exact transfers under random loss.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "engine_pair.hpp"

namespace mroce::testing {
namespace {

constexpr uint64_t kSrc = EnginePair::kBase;
constexpr uint64_t kDst = EnginePair::kBase + 0x80000;

bool is_data(const fast::PacketView& v) { return v.is_data(); }

Result write(EnginePair& net, uint64_t wr, uint32_t len, uint16_t stream = 0, uint64_t off = 0, int from = 0) {
  return net.dev(from).post_write(net.conn[from], stream, wr, Sge{kSrc + off, len, net.mr[from].lkey}, kDst + off,
                                  net.mr[1 - from].rkey);
}

bool done_a(EnginePair& net, size_t n = 1) { return net.completions[0].size() >= n; }

TEST(EngineSetup, R_CONN_1_HandshakeNegotiatesMinimum) {
  DeviceConfig a = engine_config(0), b = engine_config(1);
  a.offer.paths = 8;
  a.offer.streams = 2;
  b.offer.paths = 3;
  b.offer.max_payload = 1024;
  EnginePair net(a, b);
  std::vector<fast::Opcode> ops;
  std::vector<uint32_t> dcids;
  net.filter = [&](int from, const fast::PacketView& v) {
    if (from == 0) {
      ops.push_back(v.opcode());
      dcids.push_back(v.dcid());
    }
    return io::Fate::Deliver;
  };
  net.setup();
  ASSERT_NE(net.conn[0], 0u);
  ASSERT_NE(net.conn[1], 0u);
  EXPECT_EQ(net.dev(0).path_count(net.conn[0]), 3);  // [R-CONN-3]
  EXPECT_EQ(net.dev(1).path_count(net.conn[1]), 3);
  EXPECT_EQ(net.dev(0).stream_count(net.conn[0]), 2);
  EXPECT_EQ(net.dev(0).max_payload(net.conn[0]), 1024);
  ASSERT_FALSE(ops.empty());
  EXPECT_EQ(ops.front(), fast::Opcode::Connect);
  EXPECT_EQ(dcids.front(), 0u);  // [R-HDR-4]
}

TEST(EngineData, R_PLC_2_WriteLandsByteExactOverAllPaths) {
  EnginePair net;
  net.setup();
  const size_t n = 40000;
  net.fill(0, kSrc, n, 1);
  std::set<uint16_t> paths;
  net.filter = [&](int from, const fast::PacketView& v) {
    if (from == 0 && is_data(v)) paths.insert(v.path_id());
    return io::Fate::Deliver;
  };
  ASSERT_EQ(write(net, 7, uint32_t(n)), Result::Ok);
  net.run(10000, [&] { return done_a(net); });
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, Status::Success);
  EXPECT_EQ(net.completions[0][0].byte_len, n);
  EXPECT_TRUE(net.same(1, kDst, 0, kSrc, n));
  EXPECT_EQ(paths.size(), 4u);               // [R-PATH-8] sprayed over every path
  EXPECT_TRUE(net.completions[1].empty());   // [R-CMP-3] no completion for a plain Write
}

TEST(EngineData, R_REL_5_LostPacketRetransmittedSamePathSamePsn) {
  EnginePair net;
  net.setup();
  bool dropped = false;
  uint16_t dpath = 0;
  uint32_t dpsn = 0;
  struct Retx {
    uint16_t path;
    uint32_t psn, off;
  };
  std::vector<Retx> retx;
  net.filter = [&](int from, const fast::PacketView& v) {
    if (from != 0 || !is_data(v)) return io::Fate::Deliver;
    if (v.retx()) retx.push_back({v.path_id(), v.psn(), v.msg_offset()});
    if (v.msg_offset() == 4096 && !dropped) {
      dropped = true;
      dpath = v.path_id();
      dpsn = v.psn();
      return io::Fate::Drop;
    }
    return io::Fate::Deliver;
  };
  const size_t n = 5 * 4096;
  net.fill(0, kSrc, n, 3);
  write(net, 1, uint32_t(n));
  net.run(10000, [&] { return done_a(net); });
  ASSERT_TRUE(dropped);
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, Status::Success);
  EXPECT_TRUE(net.same(1, kDst, 0, kSrc, n));
  ASSERT_EQ(retx.size(), 1u);  // precise: exactly the missing packet
  EXPECT_EQ(retx[0].path, dpath);
  EXPECT_EQ(retx[0].psn, dpsn);
  EXPECT_EQ(retx[0].off, 4096u);
}

TEST(EngineData, R_MATCH_1_SendsMatchReceivesByRsnOutOfOrder) {
  EnginePair net;
  net.setup();
  bool dropped = false;
  net.filter = [&](int from, const fast::PacketView& v) {
    if (from == 0 && v.opcode() == fast::Opcode::Send && v.rsn() == 0 && !dropped) {
      dropped = true;
      return io::Fate::Drop;
    }
    return io::Fate::Deliver;
  };
  ASSERT_EQ(net.dev(1).post_recv(net.conn[1], 1, 100, Sge{kDst, 1000, net.mr[1].lkey}), Result::Ok);
  ASSERT_EQ(net.dev(1).post_recv(net.conn[1], 1, 101, Sge{kDst + 1000, 1000, net.mr[1].lkey}), Result::Ok);
  net.fill(0, kSrc, 300, 9);
  ASSERT_EQ(net.dev(0).post_send(net.conn[0], 1, 1, Sge{kSrc, 100, net.mr[0].lkey}), Result::Ok);
  ASSERT_EQ(net.dev(0).post_send(net.conn[0], 1, 2, Sge{kSrc + 100, 200, net.mr[0].lkey}), Result::Ok);
  net.run(10000, [&] { return net.completions[0].size() == 2 && net.completions[1].size() == 2; });
  ASSERT_TRUE(dropped);
  ASSERT_EQ(net.completions[1].size(), 2u);
  EXPECT_EQ(net.completions[1][0].wr_id, 100u);  // [R-CMP-2] RSN order
  EXPECT_EQ(net.completions[1][0].byte_len, 100u);
  EXPECT_EQ(net.completions[1][1].wr_id, 101u);
  EXPECT_EQ(net.completions[1][1].byte_len, 200u);
  EXPECT_TRUE(net.same(1, kDst, 0, kSrc, 100));
  EXPECT_TRUE(net.same(1, kDst + 1000, 0, kSrc + 100, 200));
  ASSERT_EQ(net.completions[0].size(), 2u);
  EXPECT_EQ(net.completions[0][0].wr_id, 1u);  // [R-CMP-1] posting order
  EXPECT_EQ(net.completions[0][1].wr_id, 2u);
}

TEST(EngineData, R_PLC_4_ReadReturnsRemoteBytes) {
  EnginePair net;
  net.setup();
  const size_t n = 9000;
  net.fill(1, kDst, n, 77);
  ASSERT_EQ(net.dev(0).post_read(net.conn[0], 2, 5, Sge{kSrc, uint32_t(n), net.mr[0].lkey}, kDst, net.mr[1].rkey),
            Result::Ok);
  net.run(10000, [&] { return done_a(net); });
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, Status::Success);
  EXPECT_EQ(net.completions[0][0].opcode, WcOpcode::Read);
  EXPECT_TRUE(net.same(0, kSrc, 1, kDst, n));
}

TEST(EngineErrors, R_MEM_3_WrongKeyRefusedAndVoided) {
  EnginePair net;
  net.setup();
  net.fill(0, kSrc, 5000, 5);
  int voids = 0;
  net.filter = [&](int from, const fast::PacketView& v) {
    voids += from == 0 && is_data(v) && v.is_void();
    return io::Fate::Deliver;
  };
  net.dev(0).post_write(net.conn[0], 0, 9, Sge{kSrc, 5000, net.mr[0].lkey}, kDst, net.mr[1].rkey ^ 0x55);
  net.dev(0).post_write(net.conn[0], 0, 10, Sge{kSrc, 100, net.mr[0].lkey}, kDst + 8192, net.mr[1].rkey);
  net.run(20000, [&] { return done_a(net, 2); });
  ASSERT_EQ(net.completions[0].size(), 2u);
  EXPECT_EQ(net.completions[0][0].status, Status::RemoteAccess);  // table 12.3
  EXPECT_EQ(net.completions[0][1].status, Status::Success);
  for (size_t i = 0; i < 5000; ++i) ASSERT_EQ(net.at(1, kDst)[i], 0) << i;  // [R-SEC-6] nothing placed
  EXPECT_EQ(voids, 2);  // [R-REL-9] both refused PSNs voided
  for (uint16_t p = 0; p < 4; ++p) {
    auto v = net.dev(0).path_info(net.conn[0], p);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->snxt, v->suna) << "path " << p;
  }
}

TEST(EngineErrors, R_MATCH_2_SendLongerThanReceive) {
  EnginePair net;
  net.setup();
  net.dev(1).post_recv(net.conn[1], 0, 50, Sge{kDst, 10, net.mr[1].lkey});
  net.dev(0).post_send(net.conn[0], 0, 1, Sge{kSrc, 11, net.mr[0].lkey});
  net.run(20000, [&] { return !net.completions[0].empty() && !net.completions[1].empty(); });
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, Status::RemoteLength);
  ASSERT_EQ(net.completions[1].size(), 1u);
  EXPECT_EQ(net.completions[1][0].status, Status::LocalLength);
}

TEST(EngineErrors, R_PLC_7_ReceiverNotReadyThenReady) {
  EnginePair net;
  net.setup();
  net.fill(0, kSrc, 64, 1);
  int rnr = 0;
  net.filter = [&](int from, const fast::PacketView& v) {
    rnr += from == 1 && v.opcode() == fast::Opcode::Nak && v.nak_code() == 1;
    return io::Fate::Deliver;
  };
  net.dev(0).post_send(net.conn[0], 3, 1, Sge{kSrc, 64, net.mr[0].lkey});
  net.run(net.now() + 150);
  EXPECT_TRUE(net.completions[0].empty());
  EXPECT_GE(rnr, 1);
  net.dev(1).post_recv(net.conn[1], 3, 60, Sge{kDst, 64, net.mr[1].lkey});
  net.run(net.now() + 2000, [&] { return done_a(net); });
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, Status::Success);
  EXPECT_TRUE(net.same(1, kDst, 0, kSrc, 64));
}

TEST(EngineFailure, R_CONN_8_DeadPeerFailsEverything) {
  EnginePair net;
  net.setup();
  net.dev(1).post_recv(net.conn[1], 0, 70, Sge{kDst, 64, net.mr[1].lkey});
  net.filter = [](int, const fast::PacketView&) { return io::Fate::Drop; };
  write(net, 1, 5000);
  net.dev(0).post_send(net.conn[0], 1, 2, Sge{kSrc, 10, net.mr[0].lkey});
  net.run(400000, [&] { return net.completions[0].size() == 2 && net.completions[1].size() == 1; });
  ASSERT_EQ(net.completions[0].size(), 2u);
  for (const auto& c : net.completions[0]) EXPECT_EQ(c.status, Status::ConnectionFailed);
  ASSERT_EQ(net.completions[1].size(), 1u);  // the waiting receiver finds out too [R-CONN-6]
  EXPECT_EQ(net.completions[1][0].status, Status::Flushed);
  EXPECT_EQ(net.dev(0).connection_state(net.conn[0]), ConnState::Failed);
  EXPECT_EQ(net.dev(1).connection_state(net.conn[1]), ConnState::Failed);
  // [R-CONN-8] new work requests are refused
  EXPECT_EQ(write(net, 3, 10), Result::NotConnected);
}

TEST(EnginePaths, R_PATH_4_DeadRouteIsRepathed) {
  EnginePair net;
  net.setup();
  const uint16_t dead = net.dev(0).path_info(net.conn[0], 2)->route;
  net.filter = [&](int from, const fast::PacketView& v) {
    return from == 0 && v.udp_sport() == dead ? io::Fate::Drop : io::Fate::Deliver;
  };
  const size_t n = 64 * 4096;
  net.fill(0, kSrc, n, 11);
  write(net, 1, uint32_t(n));
  net.run(200000, [&] { return done_a(net); });
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, Status::Success);
  EXPECT_TRUE(net.same(1, kDst, 0, kSrc, n));
  auto v = net.dev(0).path_info(net.conn[0], 2);
  EXPECT_NE(v->route, dead);
  EXPECT_GE(v->repaths, 1u);
  EXPECT_EQ(v->state, PathState::Active);
}

TEST(EngineCc, R_CC_4_CeHalvesTheWindowOncePerWindow) {
  EnginePair net;
  net.setup();
  int marked = 0;
  net.filter = [&](int from, const fast::PacketView& v) {
    if (from == 0 && is_data(v) && v.path_id() == 0 && marked < 3) {
      ++marked;
      return io::Fate::MarkCe;
    }
    return io::Fate::Deliver;
  };
  write(net, 1, 8 * 4096);
  net.run(10000, [&] { return done_a(net); });
  EXPECT_EQ(marked, 2);  // 8 segments over 4 paths: two on path 0
  EXPECT_EQ(net.dev(0).counters().cwnd_decreases, 1u);
  EXPECT_EQ(net.dev(0).path_info(net.conn[0], 0)->cwnd, 8u);  // 16 / 2, once
}

TEST(EngineWire, R_ENC_9_R_ENC_10_EcnAndDscpByPacketClass) {
  EnginePair net;
  net.setup();
  int data = 0, acks = 0;
  net.filter = [&](int from, const fast::PacketView& v) {
    if (from == 0 && is_data(v)) {
      ++data;
      EXPECT_EQ(v.ecn(), 2);   // ECT(0)
      EXPECT_EQ(v.dscp(), 26);
      EXPECT_GE(v.udp_sport(), 49152);  // [R-ENC-6]
      EXPECT_EQ(v.udp_dport(), 4793);   // [R-ENC-5]
    }
    if (from == 1 && v.opcode() == fast::Opcode::Ack) {
      ++acks;
      EXPECT_EQ(v.ecn(), 0);   // Not-ECT
      EXPECT_EQ(v.dscp(), 48);
    }
    return io::Fate::Deliver;
  };
  write(net, 1, 10000);
  net.run(10000, [&] { return done_a(net); });
  EXPECT_GT(data, 0);
  EXPECT_GT(acks, 0);
}

TEST(EngineAck, R_ACK_2_GapDrawsImmediateAckWithSackBits_R_HDR_20) {
  EnginePair net;
  net.setup();
  bool dropped = false, found = false;
  uint32_t lost = 0;
  net.filter = [&](int from, const fast::PacketView& v) {
    if (from == 0 && is_data(v) && v.path_id() == 1 && !dropped) {
      dropped = true;
      lost = v.psn();
      return io::Fate::Drop;
    }
    if (from == 1 && dropped && !found && v.opcode() == fast::Opcode::Ack && v.path_id() == 1 && v.cpsn() == lost - 1) {
      found = true;
      EXPECT_FALSE(v.sack(0));  // bit 0 always clear
      EXPECT_TRUE(v.sack(1));   // bit 1: lost + 1 received
    }
    return io::Fate::Deliver;
  };
  write(net, 1, 12 * 4096);  // three segments per path
  net.run(10000, [&] { return done_a(net); });
  ASSERT_TRUE(dropped);
  EXPECT_TRUE(found);
}

TEST(EngineAck, R_ACK_3_CoalescesUpToAckEvery) {
  EnginePair net;
  net.setup();
  int acks = 0;
  net.filter = [&](int from, const fast::PacketView& v) {
    acks += from == 1 && v.opcode() == fast::Opcode::Ack;
    return io::Fate::Deliver;
  };
  write(net, 1, 32 * 4096);  // 8 in-order packets per path
  net.run(10000, [&] { return done_a(net); });
  EXPECT_EQ(acks, 8);  // 4 paths x (8 packets / ACK_EVERY 4)
}

TEST(EngineWindow, R_PSN_3_OutOfWindowDroppedAndDuplicatesNotPlacedTwice_R_REL_8) {
  EnginePair net;
  net.setup();
  std::vector<uint8_t> first;
  net.loop().filter = [&, inner = net.loop().filter](int from, const uint8_t* f, uint32_t len) {
    fast::PacketView v;
    if (from == 0 && first.empty() && fast::decode(f, len, 4793, v) == fast::Error::None && v.is_data())
      first.assign(f, f + len);
    return inner(from, f, len);
  };
  write(net, 1, 100);
  net.run(10000, [&] { return done_a(net); });
  ASSERT_FALSE(first.empty());
  const uint64_t placed = net.dev(1).counters().placed_bytes;
  const uint64_t acks = net.dev(1).counters().acks_sent;
  net.dev(1).input(first.data(), uint32_t(first.size()));  // a duplicate: ACKed, not placed again
  EXPECT_EQ(net.dev(1).counters().duplicates, 1u);
  EXPECT_EQ(net.dev(1).counters().placed_bytes, placed);
  EXPECT_EQ(net.dev(1).counters().acks_sent, acks + 1);
  // Its PSN moved far ahead: out of window, dropped and counted, no answer.
  fast::PacketView v;
  ASSERT_EQ(fast::decode(first.data(), uint32_t(first.size()), 4793, v), fast::Error::None);
  fast::Fields f = fast::fields_of(v);
  f.psn += 1000;
  const std::vector<uint8_t> far = fast::build(f, std::vector<uint8_t>(v.payload(), v.payload() + v.payload_len()));
  const uint64_t sent = net.dev(1).counters().tx_frames;
  net.dev(1).input(far.data(), uint32_t(far.size()));
  EXPECT_EQ(net.dev(1).counters().out_of_window, 1u);
  EXPECT_EQ(net.dev(1).counters().tx_frames, sent);
}

TEST(EngineLoss, R_REL_6_TailLossRecoveredByProbe) {
  EnginePair net;
  net.setup();
  bool dropped = false;
  net.filter = [&](int from, const fast::PacketView& v) {
    if (from == 0 && is_data(v) && !dropped) {
      dropped = true;
      return io::Fate::Drop;
    }
    return io::Fate::Deliver;
  };
  write(net, 1, 100);
  net.run(5000, [&] { return done_a(net); });
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, Status::Success);
  EXPECT_GE(net.dev(0).counters().probes_sent, 1u);
  EXPECT_EQ(net.dev(0).counters().repaths, 0u);  // recovered by the probe, before the RTO
}

TEST(EngineLoss, R_REL_7_RtoBacksOffAndRepaths_R_PATH_2) {
  EnginePair net;
  net.setup();
  const uint16_t route = net.dev(0).path_info(net.conn[0], 0)->route;
  int blocked = 0;
  net.filter = [&](int from, const fast::PacketView& v) {
    if (from == 0 && v.udp_sport() == route) {
      ++blocked;
      return io::Fate::Drop;
    }
    return io::Fate::Deliver;
  };
  write(net, 1, 100);  // one segment: path 0
  net.run(net.now() + 1200);
  auto v = net.dev(0).path_info(net.conn[0], 0);
  EXPECT_EQ(v->state, PathState::Active);  // recovered on its new route
  EXPECT_NE(v->route, route);
  EXPECT_EQ(v->repaths, 1u);
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_GT(blocked, 0);
}

TEST(EnginePaths, R_PATH_5_FailedPathAdoptsRouteOfActivePath) {
  EnginePair net;
  net.setup();
  std::set<uint16_t> good;
  for (uint16_t p = 0; p < 3; ++p) good.insert(net.dev(0).path_info(net.conn[0], p)->route);
  net.filter = [&](int from, const fast::PacketView& v) {
    return from == 0 && v.path_id() == 3 && !good.count(v.udp_sport()) ? io::Fate::Drop : io::Fate::Deliver;
  };
  write(net, 1, 16 * 4096);
  // Paths 0..2 kept busy, so they are donors known to work now.
  auto wr1_done = [&] {
    for (const auto& c : net.completions[0])
      if (c.wr_id == 1) return c.status == Status::Success;
    return false;
  };
  for (uint64_t wr = 100; net.now() < 200000 && !wr1_done(); ++wr) {
    write(net, wr, 3 * 4096, 1, 0x20000);
    net.run(net.now() + 500, wr1_done);
  }
  ASSERT_TRUE(wr1_done());
  auto v = net.dev(0).path_info(net.conn[0], 3);
  EXPECT_TRUE(good.count(v->route));
  EXPECT_EQ(v->repaths, 3u);  // SUSPECT twice on fresh routes, then FAILED adopts a working one
}

TEST(EngineErrors, R_PLC_9_RnrRetryExceeded) {
  EnginePair net;
  net.setup();
  net.dev(0).post_send(net.conn[0], 0, 1, Sge{kSrc, 10, net.mr[0].lkey});
  net.run(net.now() + 5000, [&] { return done_a(net); });
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, Status::RnrRetryExceeded);
  EXPECT_EQ(net.dev(0).counters().naks_received, 7u);
}

TEST(EngineErrors, R_SEC_9_CheckOrderInvalidBeforeAccess) {
  EnginePair net;
  net.setup();
  // A Write-with-immediate with a bad key and no posted receive: RemoteAccess (2) before RNR (3).
  net.dev(0).post_write_imm(net.conn[0], 1, 1, Sge{kSrc, 10, net.mr[0].lkey}, kDst, net.mr[1].rkey + 1, 42);
  net.run(net.now() + 2000, [&] { return done_a(net); });
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, Status::RemoteAccess);
}

TEST(EngineData, R_CMP_2_WriteImmConsumesReceiveWithImmediate) {
  EnginePair net;
  net.setup();
  net.dev(1).post_recv(net.conn[1], 2, 77, Sge{kDst, 0, net.mr[1].lkey});
  net.fill(0, kSrc, 5000, 4);
  net.dev(0).post_write_imm(net.conn[0], 2, 1, Sge{kSrc, 5000, net.mr[0].lkey}, kDst + 100, net.mr[1].rkey, 0xABCD);
  net.run(net.now() + 5000, [&] { return !net.completions[1].empty() && !net.completions[0].empty(); });
  ASSERT_EQ(net.completions[1].size(), 1u);
  EXPECT_EQ(net.completions[1][0].wr_id, 77u);
  EXPECT_EQ(net.completions[1][0].byte_len, 5000u);
  EXPECT_EQ(net.completions[1][0].opcode, WcOpcode::Recv);
  ASSERT_TRUE(net.completions[1][0].has_imm);
  EXPECT_EQ(net.completions[1][0].imm, 0xABCDu);
  EXPECT_TRUE(net.same(1, kDst + 100, 0, kSrc, 5000));
}

TEST(EngineConn, R_CONN_4_ConnectRetriedThenFails) {
  EnginePair net;
  int connects = 0;
  net.filter = [&](int from, const fast::PacketView& v) {
    connects += from == 0 && v.opcode() == fast::Opcode::Connect;
    return io::Fate::Drop;
  };
  uint32_t id = 0;
  ASSERT_EQ(net.dev(0).connect(net.dev(1).config().self, &id), Result::Ok);
  net.run(20000);
  EXPECT_EQ(connects, 8);
  EXPECT_EQ(net.dev(0).connection_state(id), ConnState::Failed);
  ASSERT_FALSE(net.events[0].empty());
  EXPECT_EQ(net.events[0].back().kind, ConnEvent::Kind::Down);
  EXPECT_EQ(net.events[0].back().status, Status::ConnectionFailed);
}

TEST(EngineConn, R_CONN_4_RejectWhenNotListening) {
  DeviceConfig b = engine_config(1);
  b.listening = false;
  EnginePair net(engine_config(0), b);
  uint32_t id = 0;
  net.dev(0).connect(net.dev(1).config().self, &id);
  net.run(5000);
  EXPECT_EQ(net.dev(0).connection_state(id), ConnState::Failed);
}

TEST(EngineConn, R_CONN_7_GracefulCloseFlushesPeerReceives) {
  EnginePair net;
  net.setup();
  net.dev(1).post_recv(net.conn[1], 0, 5, Sge{kDst, 10, net.mr[1].lkey});
  write(net, 1, 9000);
  ASSERT_EQ(net.dev(0).close(net.conn[0]), Result::Ok);
  EXPECT_EQ(write(net, 2, 10), Result::NotConnected);  // closing: no new work
  net.run(net.now() + 5000, [&] { return net.completions[1].size() == 1; });
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, Status::Success);  // waited for outstanding work
  ASSERT_EQ(net.completions[1].size(), 1u);
  EXPECT_EQ(net.completions[1][0].status, Status::Flushed);
  EXPECT_EQ(net.dev(0).connection_state(net.conn[0]), ConnState::Closed);
  EXPECT_EQ(net.dev(1).connection_state(net.conn[1]), ConnState::Closed);
}

TEST(EngineConn, R_CONN_7_AbortFlushesAtOnce) {
  EnginePair net;
  net.setup();
  write(net, 1, 500000);
  net.run(net.now() + 10);
  ASSERT_EQ(net.dev(0).close(net.conn[0], true), Result::Ok);
  net.collect();
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, Status::Flushed);
  net.run(net.now() + 5000, [&] { return net.dev(1).connection_state(net.conn[1]) == ConnState::Closed; });
  EXPECT_EQ(net.dev(1).connection_state(net.conn[1]), ConnState::Closed);
}

TEST(EngineMemory, R_MEM_4_LocalBuffersMustBeRegistered) {
  EnginePair net;
  net.setup();
  EXPECT_EQ(net.dev(0).post_send(net.conn[0], 0, 1, Sge{0x5, 10, net.mr[0].lkey}), Result::LocalProtection);
  EXPECT_EQ(net.dev(0).post_recv(net.conn[0], 0, 2, Sge{kSrc, 10, net.mr[0].lkey + 7}), Result::LocalProtection);
  EXPECT_EQ(net.dev(0).post_send(net.conn[0], 0, 3, Sge{kSrc + (1 << 20) - 5, 10, net.mr[0].lkey}),
            Result::LocalProtection);
  EXPECT_EQ(net.dev(0).post_send(net.conn[0], 9, 4, Sge{kSrc, 10, net.mr[0].lkey}), Result::InvalidStream);
  EXPECT_EQ(net.dev(0).post_send(0x999, 0, 5, Sge{kSrc, 10, net.mr[0].lkey}), Result::NotConnected);
  // A read sink and a receive buffer need LocalWrite.
  std::vector<uint8_t> ro(4096);
  MemoryRegion r;
  ASSERT_EQ(net.dev(0).reg_mr(ro.data(), ro.size(), access::kRemoteRead, &r, 0x900000), Result::Ok);
  EXPECT_EQ(net.dev(0).post_read(net.conn[0], 0, 6, Sge{0x900000, 10, r.lkey}, kDst, net.mr[1].rkey),
            Result::LocalProtection);
  EXPECT_EQ(net.dev(0).post_send(net.conn[0], 0, 7, Sge{0x900000, 10, r.lkey}), Result::Ok);  // a source may be read-only
  net.run(net.now() + 1000);
  for (const auto& c : net.completions[0]) EXPECT_NE(c.wr_id, 1u);  // refused posts: no completion
  // [R-MEM-2] deregistered keys are not honoured
  ASSERT_EQ(net.dev(1).dereg_mr(net.mr[1].lkey), Result::Ok);
  EXPECT_EQ(net.dev(1).dereg_mr(net.mr[1].lkey), Result::UnknownKey);
  write(net, 8, 100);
  net.run(net.now() + 5000, [&] {
    for (const auto& c : net.completions[0])
      if (c.wr_id == 8) return true;
    return false;
  });
  EXPECT_EQ(net.completions[0].back().wr_id, 8u);
  EXPECT_EQ(net.completions[0].back().status, Status::RemoteAccess);
}

TEST(EngineFairShare, R_FS_4_SharesSplitCapacityAndNeverExceedIt) {
  DeviceConfig bcfg = engine_config(1);
  bcfg.capacity_mbps = 1000;
  EnginePair net(engine_config(0), bcfg);
  net.setup();
  const uint32_t first = net.conn[0];
  uint32_t second = 0;
  net.dev(0).connect(net.dev(1).config().self, &second);
  net.run(net.now() + 1000, [&] { return net.dev(0).connection_state(second) == ConnState::Established; });
  ASSERT_NE(first, second);
  for (uint32_t c : {first, second})
    net.dev(0).post_write(c, 0, c, Sge{kSrc, 200000, net.mr[0].lkey}, kDst, net.mr[1].rkey);
  uint64_t checked = 0;
  uint32_t ids[8], shares[8];
  while (net.now() < 3000) {
    net.run(net.now() + 10);
    const int n = net.dev(1).rate_shares(ids, shares, 8);
    uint64_t sum = 0;
    for (int i = 0; i < n; ++i) sum += shares[i];
    EXPECT_LE(sum, 1000u);  // [R-FS-4]
    checked += n > 0;
  }
  EXPECT_GT(checked, 0u);
  const int n = net.dev(1).rate_shares(ids, shares, 8);
  if (n == 2) {
    EXPECT_EQ(shares[0], 500u);
    EXPECT_EQ(shares[1], 500u);
  }
}

// ---- engine-specific ----------------------------------------------------------------------------

TEST(EnginePools, WorkRequestPoolExhaustionIsACleanError) {
  DeviceConfig a = engine_config(0);
  a.max_work_requests = 8;
  EnginePair net(a, engine_config(1));
  net.setup();
  int ok = 0;
  Result last = Result::Ok;
  for (int i = 0; i < 20; ++i) {
    last = write(net, 100 + i, 64 * 1024, uint16_t(i % 4));
    ok += last == Result::Ok;
  }
  EXPECT_EQ(ok, 8);
  EXPECT_EQ(last, Result::NoResources);
  net.run(net.now() + 100000, [&] { return done_a(net, 8); });
  ASSERT_EQ(net.completions[0].size(), 8u);
  for (const auto& c : net.completions[0]) EXPECT_EQ(c.status, Status::Success);
  EXPECT_EQ(write(net, 200, 10), Result::Ok);  // the pool refills as work completes
}

TEST(EnginePools, ReceivePoolExhaustionIsACleanError) {
  DeviceConfig b = engine_config(1);
  b.max_receives = 4;
  EnginePair net(engine_config(0), b);
  net.setup();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(net.dev(1).post_recv(net.conn[1], 0, i, Sge{kDst, 100, net.mr[1].lkey}), Result::Ok);
  EXPECT_EQ(net.dev(1).post_recv(net.conn[1], 0, 9, Sge{kDst, 100, net.mr[1].lkey}), Result::NoResources);
}

TEST(EnginePools, ConnectionPoolExhaustionRejectsWithReason2) {
  DeviceConfig b = engine_config(1);
  b.max_connections = 2;
  DeviceConfig a = engine_config(0);
  a.max_connections = 8;
  EnginePair net(a, b);
  std::vector<uint32_t> ids(4);
  int rejects = 0;
  net.filter = [&](int from, const fast::PacketView& v) {
    if (from == 1 && v.opcode() == fast::Opcode::Reject) {
      ++rejects;
      EXPECT_EQ(v.reason(), 2);  // [R-HDR-27] resources exhausted
    }
    return io::Fate::Deliver;
  };
  for (auto& id : ids) ASSERT_EQ(net.dev(0).connect(net.dev(1).config().self, &id), Result::Ok);
  net.run(net.now() + 5000);
  int up = 0, failed = 0;
  for (uint32_t id : ids) {
    up += net.dev(0).connection_state(id) == ConnState::Established;
    failed += net.dev(0).connection_state(id) == ConnState::Failed;
  }
  EXPECT_EQ(up, 2);
  EXPECT_EQ(failed, 2);
  EXPECT_EQ(rejects, 2);
  EXPECT_EQ(net.dev(1).counters().rejects_no_resources, 2u);
  // The initiator's own pool: connect() refuses once it is full of live connections.
  DeviceConfig c = engine_config(0);
  c.max_connections = 1;
  EnginePair small(c, engine_config(1));
  uint32_t x = 0;
  EXPECT_EQ(small.dev(0).connect(small.dev(1).config().self, &x), Result::Ok);
  EXPECT_EQ(small.dev(0).connect(small.dev(1).config().self, &x), Result::NoResources);
}

TEST(EnginePools, WindowBlockShortageOnlySlowsTransfers) {
  DeviceConfig a = engine_config(0);
  a.max_window_blocks = 1;  // one path at a time may have outstanding PSNs
  EnginePair net(a, engine_config(1));
  net.setup();
  const size_t n = 300000;
  net.fill(0, kSrc, n, 21);
  write(net, 1, uint32_t(n));
  net.run(net.now() + 200000, [&] { return done_a(net); });
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, Status::Success);
  EXPECT_TRUE(net.same(1, kDst, 0, kSrc, n));
  EXPECT_GT(net.dev(0).counters().window_block_waits, 0u);
}

TEST(EnginePools, TxBufferExhaustionBehavesLikeLoss) {
  // A loop with very few buffers: frames the engine cannot get a buffer for are lost locally, and
  // loss recovery delivers everything anyway.
  EnginePair net(engine_config(0), engine_config(1), 5, 24);
  net.setup();
  const size_t n = 200000;
  net.fill(0, kSrc, n, 31);
  write(net, 1, uint32_t(n));
  net.run(net.now() + 400000, [&] { return done_a(net); });
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, Status::Success);
  EXPECT_TRUE(net.same(1, kDst, 0, kSrc, n));
  EXPECT_GT(net.dev(0).counters().tx_no_buffer, 0u);
}

TEST(EnginePools, CompletionQueueOverflowIsCounted) {
  DeviceConfig a = engine_config(0);
  a.cq_size = 4;
  EnginePair net(a, engine_config(1));
  net.setup();
  for (int i = 0; i < 10; ++i) write(net, i, 100);
  // Run without polling: completions beyond the CQ size are dropped and counted.
  for (int k = 0; k < 200; ++k) {
    net.clock().advance(5);
    net.dev(0).progress();
    net.dev(1).progress();
  }
  EXPECT_EQ(net.dev(0).counters().cq_overflow, 6u);
  WorkCompletion wc[16];
  EXPECT_EQ(net.dev(0).poll_cq(wc, 16), 4);
}

TEST(EngineConn, R_CONN_5_IdleConnectionStateIsSmallAndBounded) {
  EnginePair net;
  net.setup();
  const MemoryUsage u = net.dev(0).memory_usage();
  ASSERT_EQ(u.connections, 1u);
  const uint64_t per = MemoryUsage::connection_base_bytes() + 4 * MemoryUsage::per_path_bytes() +
                       4 * MemoryUsage::per_stream_bytes();
  EXPECT_LE(u.connection_bytes, per + 64);
  EXPECT_LT(u.connection_bytes, 4096u);  // an idle 4-path, 4-stream connection
  std::printf("idle connection (4 paths, 4 streams): %llu bytes (base %llu, per path %llu, per stream %llu)\n",
              (unsigned long long)u.connection_bytes, (unsigned long long)MemoryUsage::connection_base_bytes(),
              (unsigned long long)MemoryUsage::per_path_bytes(), (unsigned long long)MemoryUsage::per_stream_bytes());
}

// A mixed workload (Writes, Sends, Reads, Write-imms on every stream, both directions) under random
// loss must complete byte-exact.
void lossy_transfer(uint32_t loss_pct_x10, uint64_t seed) {
  EnginePair net;
  net.setup(4 << 20);
  std::mt19937_64 rng(seed);
  net.filter = [&](int, const fast::PacketView&) {
    return rng() % 1000 < loss_pct_x10 ? io::Fate::Drop : io::Fate::Deliver;
  };
  const uint64_t half = 2 << 20;
  net.fill(0, kSrc, half, 7);
  net.fill(1, kSrc, half, 8);
  size_t expect[2] = {0, 0};
  uint64_t wr = 1;
  for (uint16_t st = 0; st < 4; ++st) {
    const uint64_t off = st * 400000;
    // A -> B: a large Write, a Send, a Write-imm; B -> A: a Write; A reads back from B.
    net.dev(0).post_write(net.conn[0], st, wr++, Sge{kSrc + off, 300000, net.mr[0].lkey}, kSrc + half + off,
                          net.mr[1].rkey);
    net.dev(1).post_recv(net.conn[1], st, wr++, Sge{kSrc + half + off + 300000, 50000, net.mr[1].lkey});
    net.dev(0).post_send(net.conn[0], st, wr++, Sge{kSrc + off + 300000, 50000, net.mr[0].lkey});
    net.dev(1).post_recv(net.conn[1], st, wr++, Sge{kSrc + half + off + 399000, 1, net.mr[1].lkey});
    net.dev(0).post_write_imm(net.conn[0], st, wr++, Sge{kSrc + off + 350000, 49000, net.mr[0].lkey},
                              kSrc + half + off + 350000, net.mr[1].rkey, st);
    net.dev(1).post_write(net.conn[1], st, wr++, Sge{kSrc + off, 100000, net.mr[1].lkey}, kSrc + half + off,
                          net.mr[0].rkey);
    net.dev(0).post_read(net.conn[0], st, wr++, Sge{kSrc + half + off + 100000, 90000, net.mr[0].lkey}, kSrc + off + 100000,
                         net.mr[1].rkey);
    expect[0] += 4;
    expect[1] += 3;
  }
  net.run(net.now() + 2000000,
          [&] { return net.completions[0].size() == expect[0] && net.completions[1].size() == expect[1]; });
  ASSERT_EQ(net.completions[0].size(), expect[0]);
  ASSERT_EQ(net.completions[1].size(), expect[1]);
  for (int s = 0; s < 2; ++s)
    for (const auto& c : net.completions[s]) EXPECT_EQ(c.status, Status::Success) << "side " << s << " wr " << c.wr_id;
  for (uint16_t st = 0; st < 4; ++st) {
    const uint64_t off = st * 400000;
    EXPECT_TRUE(net.same(1, kSrc + half + off, 0, kSrc + off, 300000));
    EXPECT_TRUE(net.same(1, kSrc + half + off + 300000, 0, kSrc + off + 300000, 50000));
    EXPECT_TRUE(net.same(1, kSrc + half + off + 350000, 0, kSrc + off + 350000, 49000));
    EXPECT_TRUE(net.same(0, kSrc + half + off, 1, kSrc + off, 100000));
    EXPECT_TRUE(net.same(0, kSrc + half + off + 100000, 1, kSrc + off + 100000, 90000));
  }
  EXPECT_GT(net.loop().stats().dropped[0] + net.loop().stats().dropped[1], 0u);
  EXPECT_GT(net.dev(0).counters().retransmissions, 0u);
}

TEST(EngineLoss, R_ARCH_3_TransferUnderOnePercentLossIsByteExact) { lossy_transfer(10, 1); }
TEST(EngineLoss, R_ARCH_3_TransferUnderTenPercentLossIsByteExact) { lossy_transfer(100, 2); }


// ---- the model's third batch ----

TEST(EngineSecurity, R_HDR_29_R_VAL_3_CorruptFrameDroppedCountedUnanswered) {
  EnginePair net;
  net.setup();
  bool done = false;
  net.filter = [&](int from, const fast::PacketView& v) {
    if (from == 0 && is_data(v) && !done) {
      done = true;
      return io::Fate::Corrupt;  // a payload byte: only the ICRC can tell
    }
    return io::Fate::Deliver;
  };
  const uint64_t b_sent = net.dev(1).counters().tx_frames;
  write(net, 1, 100);
  net.run(net.now() + 6);
  EXPECT_EQ(net.dev(1).counters().decode_errors[size_t(fast::Error::Icrc) - 1], 1u);
  EXPECT_EQ(net.dev(1).counters().tx_frames, b_sent);  // not answered
  EXPECT_EQ(net.dev(1).counters().placed_bytes, 0u);
  net.run(net.now() + 5000, [&] { return done_a(net); });
  ASSERT_EQ(net.completions[0].size(), 1u);  // recovered by loss recovery
  EXPECT_EQ(net.completions[0][0].status, Status::Success);
}

TEST(EngineCc, R_CC_5_LossDoesNotShrinkTheWindow_R_CC_3_InFlightBoundedByCwnd) {
  EnginePair net;
  net.setup();
  int n = 0;
  net.filter = [&](int from, const fast::PacketView& v) {
    return from == 0 && is_data(v) && (++n % 7) == 0 ? io::Fate::Drop : io::Fate::Deliver;
  };
  write(net, 1, 400 * 1024);
  uint32_t min_cwnd = 1000;
  while (net.completions[0].empty() && net.now() < 100000) {
    net.run(net.now() + 3);
    for (uint16_t p = 0; p < 4; ++p) {
      auto v = net.dev(0).path_info(net.conn[0], p);
      EXPECT_LE(v->in_flight, v->cwnd);    // [R-CC-3]
      EXPECT_LE(v->snxt - v->suna, 256u);  // [R-PSN-4]
      min_cwnd = std::min(min_cwnd, v->cwnd);
    }
  }
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_GE(min_cwnd, 16u);  // loss is not congestion
  EXPECT_GT(net.dev(0).counters().retransmissions, 0u);
}

TEST(EngineErrors, R_REL_9_VoidedSendCancelsItsReceiveLater_R_CMP_2) {
  EnginePair net;
  net.setup();
  net.dev(0).post_send(net.conn[0], 0, 1, Sge{kSrc, 10, net.mr[0].lkey});
  net.run(net.now() + 5000, [&] { return done_a(net); });
  ASSERT_EQ(net.completions[0].size(), 1u);
  ASSERT_EQ(net.completions[0][0].status, Status::RnrRetryExceeded);
  // The receive for RSN 0 is posted after the Send gave up: canceled at once; the next pair flows.
  net.dev(1).post_recv(net.conn[1], 0, 50, Sge{kDst, 64, net.mr[1].lkey});
  net.dev(1).post_recv(net.conn[1], 0, 51, Sge{kDst + 0x100, 64, net.mr[1].lkey});
  net.dev(0).post_send(net.conn[0], 0, 2, Sge{kSrc, 20, net.mr[0].lkey});
  net.run(net.now() + 5000, [&] { return net.completions[1].size() == 2; });
  ASSERT_EQ(net.completions[1].size(), 2u);
  EXPECT_EQ(net.completions[1][0].wr_id, 50u);
  EXPECT_EQ(net.completions[1][0].status, Status::Canceled);
  EXPECT_EQ(net.completions[1][0].byte_len, 0u);
  EXPECT_EQ(net.completions[1][1].wr_id, 51u);
  EXPECT_EQ(net.completions[1][1].status, Status::Success);
  EXPECT_EQ(net.completions[1][1].byte_len, 20u);
}

TEST(EngineErrors, R_REL_9_RefusedWriteImmCancelsPostedReceive) {
  EnginePair net;
  net.setup();
  net.dev(1).post_recv(net.conn[1], 1, 60, Sge{kDst, 0, net.mr[1].lkey});
  net.dev(0).post_write_imm(net.conn[0], 1, 1, Sge{kSrc, 100, net.mr[0].lkey}, kDst, net.mr[1].rkey ^ 0xFF00, 7);
  net.run(net.now() + 5000, [&] { return !net.completions[1].empty() && !net.completions[0].empty(); });
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, Status::RemoteAccess);
  ASSERT_EQ(net.completions[1].size(), 1u);
  EXPECT_EQ(net.completions[1][0].status, Status::Canceled);
}

}  // namespace
}  // namespace mroce::testing
