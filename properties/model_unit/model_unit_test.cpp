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
  net.handle(0, PostWrite{net.conn[0], stream, wr, kSrc + off, len, net.keys[0][0].lkey, kDst2 + off,
                          net.keys[1][0].rkey, std::nullopt});
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

// The model's memory (the oracle every byte-exact check reads): a registered range reads back what
// was written, and a range outside every region reads nothing.
TEST(ModelMemory, ReadMemoryReturnsTheRegionsBytes) {
  Pair net;
  net.setup();
  net.fill(0, kSrc + 100, 300, 7);
  const auto bytes = net.a().read_memory(kSrc + 100, 300);
  ASSERT_TRUE(bytes.has_value());
  ASSERT_EQ(bytes->size(), 300u);
  for (size_t i = 0; i < 300; ++i) ASSERT_EQ((*bytes)[i], uint8_t(7 + i * 7 + (i >> 8))) << i;
  EXPECT_FALSE(net.a().read_memory(0x10, 4).has_value());
  EXPECT_FALSE(net.a().read_memory(kSrc + (1 << 20) - 2, 4).has_value()) << "past the region's end";
}

// [R-CONN-7] An abort flushes every unfinished send at once, on every stream, each completed exactly
// once, and the peer closes too.
TEST(ModelConn, R_CONN_7_AbortFlushesEveryStreamAtOnce) {
  Pair net;
  net.setup();
  net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>&) { return !(from == 0 && data_pkt(p)); };
  for (uint16_t st = 0; st < 4; ++st) post_write(net, 1 + st, 60000, st, st * 65536u);
  net.run(net.now() + 10);
  net.handle(0, Close{net.conn[0], true});
  ASSERT_EQ(net.completions[0].size(), 4u);
  std::map<uint64_t, int> seen;
  for (const auto& c : net.completions[0]) {
    EXPECT_EQ(c.status, Status::Flushed) << "wr " << c.wr_id;
    ++seen[c.wr_id];
  }
  EXPECT_EQ(seen.size(), 4u);
  net.run(net.now() + 5000, [&] { return net.b().connection_state(net.conn[1]) == ConnState::Closed; });
  EXPECT_EQ(net.b().connection_state(net.conn[1]), ConnState::Closed);
  EXPECT_EQ(net.completions[0].size(), 4u);
}

// [R-REL-4] (L1) and [R-HDR-20] at the bitmap's far end: with a full window of 256 PSNs outstanding on
// a path, an ACK whose only SACK bit is bit 255 (the last PSN of the window) acknowledges that PSN and
// declares every earlier one lost (each was sent once, and a later PSN arrived).
TEST(ModelAck, R_REL_4_SackBit255CountsForTheGapRule) {
  Config ca = Pair::config_for(0), cb = Pair::config_for(1);
  ca.path_count = cb.path_count = 1;
  ca.max_payload = cb.max_payload = 256;  // a window of 256 PSNs is 64 KiB: it fills within the tail probe's delay
  Pair net(ca, cb);
  net.setup(4 << 20);
  std::vector<uint8_t> ack_frame;
  bool freeze = false;
  net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>& f) {
    if (from == 1 && p.opcode == ref::Opcode::Ack) ack_frame = f;
    return !freeze;
  };
  // Grow the window to its cap (256): keep the path busy until cwnd gets there.
  uint64_t wr = 1;
  for (int round = 0; round < 4000 && net.a().path_view(net.conn[0], 0)->cwnd < 256; ++round) {
    if (net.a().outstanding_work(net.conn[0]) < 4) post_write(net, wr++, 1 << 20, 0, 0);
    net.run(net.now() + 50);
  }
  ASSERT_GE(net.a().path_view(net.conn[0], 0)->cwnd, 256u);
  // Freeze the network and fill the window.
  freeze = true;
  for (int i = 0; i < 8; ++i) post_write(net, wr++, 1 << 20, 0, 0);
  net.run(net.now() + 20);
  const PathView before = *net.a().path_view(net.conn[0], 0);
  ASSERT_EQ(before.snxt - before.suna, 256u);
  ASSERT_FALSE(ack_frame.empty());
  ref::Packet ack = ref::decode(ack_frame).packet;
  ack.cpsn = before.suna - 1;
  ack.sack = {};
  ack.sack[31] = 0x01;  // bit 255: PSN SUNA + 255, the window's last
  net.apply(0, net.a().handle(net.now(), Receive{ref::encode(ack, {})}));
  const PathView after = *net.a().path_view(net.conn[0], 0);
  EXPECT_EQ(net.a().counters().sack_beyond_snxt, 0u);
  EXPECT_EQ(after.retransmissions - before.retransmissions, 255u)
      << "PSNs SUNA .. SUNA + 254 are lost by the gap rule: PSN SUNA + 255 arrived after them";
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
  net.handle(
      0, PostWrite{net.conn[0], 0, 1, 0x10000, 100, net.keys[0][0].lkey, 0x90000, net.keys[1][0].rkey, std::nullopt});
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

// [R-ACK-10]: an ACK or NAK naming a PSN never sent acts on nothing (before it, an ACK with CPSN
// beyond SNXT completed a Write whose data had all been lost). The engine's side of this and the
// rules below is properties/engine/peer_trust_test.cpp.
TEST(ModelSecurity, R_ACK_10_AnAckBeyondSnxtAcknowledgesNothing) {
  Pair net;
  net.setup();
  std::vector<uint8_t> ack_frame;
  bool drop_data = false;
  net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>& f) {
    if (from == 1 && p.opcode == ref::Opcode::Ack) ack_frame = f;
    return !(drop_data && from == 0 && data_pkt(p));
  };
  net.fill(0, kSrc, 65536, 7);
  post_write(net, 1, 4096);
  net.run(net.now() + 2000, [&] { return net.completions[0].size() == 1; });
  ASSERT_FALSE(ack_frame.empty());
  const ref::Packet ack = ref::decode(ack_frame).packet;
  drop_data = true;
  post_write(net, 2, 32768, 0, 4096);
  net.run(net.now() + 3);
  ref::Packet beyond = ack;
  beyond.cpsn = ack.cpsn + 1000;
  net.apply(0, net.a().handle(net.now(), Receive{ref::encode(beyond, {})}));
  ref::Packet sack_beyond = ack;
  sack_beyond.sack = {};
  sack_beyond.sack[31] = 0x01;  // bit 255: PSN CPSN + 256, never sent
  net.apply(0, net.a().handle(net.now(), Receive{ref::encode(sack_beyond, {})}));
  ref::Packet nak = ack;
  nak.opcode = ref::Opcode::Nak;
  nak.nak_psn = ack.cpsn + 1000;
  nak.nak_code = uint8_t(ref::NakCode::RemoteAccess);
  nak.nak_detail = 0;
  net.apply(0, net.a().handle(net.now(), Receive{ref::encode(nak, {})}));
  EXPECT_EQ(net.a().counters().invalid_acks, 2u);
  EXPECT_EQ(net.a().counters().sack_beyond_snxt, 1u);
  EXPECT_EQ(net.a().counters().naks_received, 0u);
  EXPECT_EQ(net.completions[0].size(), 1u) << "a forged ACK completed a Write whose bytes never arrived";
  drop_data = false;
  net.run(net.now() + 200000, [&] { return net.completions[0].size() == 2; });
  ASSERT_EQ(net.completions[0].size(), 2u);
  EXPECT_EQ(net.completions[0][1].status, Status::Success);
  EXPECT_EQ(net.mem(0, kSrc + 4096, 32768), net.mem(1, kDst2 + 4096, 32768));
}

// [R-SEC-10]: a DISCONNECT from another address, or over the other IP version, closes nothing.
TEST(ModelSecurity, R_SEC_10_ADisconnectFromAnotherAddressClosesNothing) {
  Pair net;
  net.setup();
  std::vector<uint8_t> ack_frame;
  net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>& f) {
    if (from == 1 && p.opcode == ref::Opcode::Ack) ack_frame = f;
    return true;
  };
  post_write(net, 1, 4096);
  net.run(net.now() + 2000, [&] { return net.completions[0].size() == 1; });
  ASSERT_FALSE(ack_frame.empty());
  ref::Packet real = ref::decode(ack_frame).packet;
  real.opcode = ref::Opcode::Disconnect;
  real.flags = 0;
  real.reason = 0;
  ref::Packet foreign = real;
  foreign.ip_src[3] = 99;
  net.apply(0, net.a().handle(net.now(), Receive{ref::encode(foreign, {})}));
  EXPECT_EQ(net.a().counters().foreign_source, 1u);
  EXPECT_EQ(net.a().connection_state(net.conn[0]), ConnState::Established);
  // Canary: from the peer's address it does close.
  net.apply(0, net.a().handle(net.now(), Receive{ref::encode(real, {})}));
  EXPECT_NE(net.a().connection_state(net.conn[0]), ConnState::Established);
}

// [R-CONN-3]: an ACCEPT above the initiator's offer is dropped and counted; the real one still counts.
TEST(ModelSecurity, R_CONN_3_AnAcceptAboveTheOfferIsDropped) {
  Pair net;
  std::vector<uint8_t> accept_frame;
  net.filter = [&](int from, const ref::Packet& p, std::vector<uint8_t>& f) {
    if (from == 1 && p.opcode == ref::Opcode::Accept) {
      accept_frame = f;
      return false;
    }
    return true;
  };
  net.handle(0, Connect{net.b().config().self});
  net.run(net.now() + 10);
  ASSERT_FALSE(accept_frame.empty());
  const ref::Packet real = ref::decode(accept_frame).packet;
  ref::Packet big = real;
  big.path_count = uint16_t(net.a().config().path_count + 1);
  big.max_payload = 8192;
  net.apply(0, net.a().handle(net.now(), Receive{ref::encode(big, {})}));
  EXPECT_EQ(net.a().counters().bad_accepts, 1u);
  EXPECT_EQ(net.conn[0], 0u);
  net.apply(0, net.a().handle(net.now(), Receive{accept_frame}));
  ASSERT_NE(net.conn[0], 0u);
  EXPECT_EQ(net.a().path_count(net.conn[0]), std::min(net.a().config().path_count, net.b().config().path_count));
}

TEST(ModelSecurity, R_MEM_2_DeregisteredKeyRefused) {
  Pair net;
  net.setup();
  net.handle(1, RegisterMemory{0x200000, 4096, access::kRemoteWrite | access::kLocalWrite});
  ASSERT_EQ(net.keys[1].size(), 2u);
  const auto k = net.keys[1][1];
  net.handle(1, DeregisterMemory{k.lkey});
  net.handle(0, PostWrite{net.conn[0], 0, 1, 0x10000, 100, net.keys[0][0].lkey, 0x200000, k.rkey, std::nullopt});
  net.run(net.now() + 5000, [&] { return !net.completions[0].empty(); });
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, Status::RemoteAccess);
}

// [R-MEM-1]: the keys are the implementation's; the model registers with the keys it is given
// and refuses a key of 0 or one that names a valid region already.
TEST(ModelSecurity, R_MEM_1_TheModelTakesTheImplementationsKeys) {
  Pair net;
  net.setup();
  RegisterMemory given{0x200000, 4096, access::kRemoteWrite | access::kLocalWrite};
  given.lkey = 0x9e3779b9u;
  given.rkey = 0x7f4a7c15u;
  net.handle(1, given);
  ASSERT_EQ(net.keys[1].size(), 2u);
  EXPECT_EQ(net.keys[1][1].lkey, 0x9e3779b9u);
  EXPECT_EQ(net.keys[1][1].rkey, 0x7f4a7c15u);
  for (auto [lkey, rkey] :
       {std::pair{0x1u, 0x7f4a7c15u}, std::pair{0x9e3779b9u, 0x2u}, std::pair{0u, 3u}, std::pair{4u, 0u}}) {
    RegisterMemory bad{0x300000, 64, access::kLocalWrite};
    bad.lkey = lkey;
    bad.rkey = rkey;
    net.handle(1, bad);
  }
  EXPECT_EQ(net.keys[1].size(), 2u);
  EXPECT_EQ(net.rejected[1].size(), 4u);
  // The given rkey is the region's: a Write with it lands.
  net.fill(0, 0x10000, 100, 5);
  net.handle(0, PostWrite{net.conn[0], 0, 1, 0x10000, 100, net.keys[0][0].lkey, 0x200000, 0x7f4a7c15u, std::nullopt});
  net.run(net.now() + 5000, [&] { return !net.completions[0].empty(); });
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, Status::Success);
  EXPECT_EQ(net.mem(1, 0x200000, 100), net.mem(0, 0x10000, 100));
}

// [R-MEM-5]: a region serves only the connections of its protection domain: a Write naming a
// region of another PD gets RemoteAccess (counted), and a post naming one is refused.
TEST(ModelSecurity, R_MEM_5_ARegionOfAnotherProtectionDomainIsRefused) {
  Config b = Pair::config_for(1);
  b.listen_pd = 7;  // B's accepted connections are in PD 7
  Pair net(Pair::config_for(0), b);
  net.handle(0, RegisterMemory{0x10000, 4096, access::kLocalWrite | access::kRemoteWrite});
  net.handle(1, RegisterMemory{0x10000, 4096, access::kLocalWrite | access::kRemoteWrite});  // PD 0
  net.handle(1, RegisterMemory{0x20000, 4096, access::kLocalWrite | access::kRemoteWrite, 7});
  net.handle(0, Connect{net.b().config().self});
  net.run(net.now() + 1000, [&] { return net.conn[0] != 0 && net.conn[1] != 0; });
  ASSERT_EQ(net.keys[1].size(), 2u);
  net.fill(0, 0x10000, 64, 9);
  const uint32_t lkey = net.keys[0][0].lkey;
  net.handle(0, PostWrite{net.conn[0], 0, 1, 0x10000, 64, lkey, 0x10000, net.keys[1][0].rkey, std::nullopt});
  net.handle(0, PostWrite{net.conn[0], 0, 2, 0x10000, 64, lkey, 0x20000, net.keys[1][1].rkey, std::nullopt});
  net.run(net.now() + 5000, [&] { return net.completions[0].size() == 2; });
  ASSERT_EQ(net.completions[0].size(), 2u);
  EXPECT_EQ(net.completions[0][0].status, Status::RemoteAccess);  // PD 0 region, PD 7 connection
  EXPECT_EQ(net.completions[0][1].status, Status::Success);
  EXPECT_EQ(net.b().counters().remote_access_naks, 1u);
  EXPECT_EQ(net.mem(1, 0x10000, 64), std::vector<uint8_t>(64, 0));
  // Locally too: B's PD 7 connection cannot post from its PD 0 region.
  net.handle(1, PostSend{net.conn[1], 0, 3, 0x10000, 8, net.keys[1][0].lkey});
  ASSERT_EQ(net.rejected[1].size(), 1u);
}

}  // namespace
// [R-MEM-6]: a buffer's bytes are read and written in the region its key named, never in the
// first region holding the address. B's first region (all rights) holds a secret at 0x10000; a second
// region over the same addresses grants LocalWrite and RemoteRead (in the model every region is its own
// memory, as offset-mode regions at one iova over different memory are).
TEST(ModelSecurity, R_MEM_6_ABuffersBytesComeFromTheRegionItsKeyNamed) {
  Pair net;
  net.setup();
  constexpr uint32_t kLen = 4096;
  net.fill(1, 0x10000, kLen, 77);  // the secret, in B's first region
  const std::vector<uint8_t> secret = net.mem(1, 0x10000, kLen);
  net.handle(1, RegisterMemory{0x10000, kLen, access::kLocalWrite | access::kRemoteRead});
  ASSERT_EQ(net.keys[1].size(), 2u);
  const MemoryRegistered second = net.keys[1][1];
  // A Read with the second region's rkey returns its bytes (zeros), not the secret [R-PLC-4].
  net.handle(0, PostRead{net.conn[0], 0, 1, 0x10000, kLen, net.keys[0][0].lkey, 0x10000, second.rkey});
  net.run(net.now() + 5000, [&] { return net.completions[0].size() == 1; });
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, Status::Success);
  EXPECT_EQ(net.mem(0, 0x10000, kLen), std::vector<uint8_t>(kLen, 0)) << "the Read returned another region's bytes";
  // A Send into a receive of the second region's lkey lands there and leaves the first region alone
  // [R-PLC-3].
  net.fill(0, 0x20000, kLen, 5);
  const std::vector<uint8_t> sent = net.mem(0, 0x20000, kLen);
  net.handle(1, PostRecv{net.conn[1], 0, 2, 0x10000, kLen, second.lkey});
  net.handle(0, PostSend{net.conn[0], 0, 3, 0x20000, kLen, net.keys[0][0].lkey});
  net.run(net.now() + 5000, [&] { return net.completions[1].size() == 1; });
  ASSERT_EQ(net.completions[1].size(), 1u);
  EXPECT_EQ(net.mem(1, 0x10000, kLen), secret) << "the receive wrote into another region";
  // A Send from the second region's lkey carries what landed there, not the secret.
  net.handle(0, PostRecv{net.conn[0], 0, 4, 0x30000, kLen, net.keys[0][0].lkey});
  net.handle(1, PostSend{net.conn[1], 0, 5, 0x10000, kLen, second.lkey});
  net.run(net.now() + 5000, [&] { return net.completions[0].size() == 3; });
  ASSERT_EQ(net.completions[0].size(), 3u);
  EXPECT_EQ(net.mem(0, 0x30000, kLen), sent) << "the Send read another region's bytes";
  // A Read whose sink is the second region leaves the first region alone [R-PLC-5].
  net.handle(1, PostRead{net.conn[1], 0, 6, 0x10000, kLen, second.lkey, 0x20000, net.keys[0][0].rkey});
  net.run(net.now() + 5000, [&] { return net.completions[1].size() == 3; });
  ASSERT_EQ(net.completions[1].size(), 3u);
  EXPECT_EQ(net.completions[1][2].status, Status::Success);
  EXPECT_EQ(net.mem(1, 0x10000, kLen), secret) << "the Read placed into another region";
}

}  // namespace mroce::model::testing
