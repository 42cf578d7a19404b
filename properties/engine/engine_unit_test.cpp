// Requirement-level unit tests of the engine over the in-memory loop (impl/io/mem_loop.hpp): the
// scenarios the harness cannot express (a frame injected by hand, a close), plus engine-specific
// properties: clean errors when pools run out, and byte-exact transfers under random loss. The
// requirement scenarios that a harness::Scenario can express are written once in lockstep_test.cpp
// and run on the model, the engine and both in lockstep.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine/place_bytes.hpp"
#include "engine_pair.hpp"
#include "mroce/testing.hpp"

namespace mroce::testing {
namespace {

constexpr uint64_t kSrc = EnginePair::kBase;
constexpr uint64_t kDst = EnginePair::kBase + 0x80000;

Result write(EnginePair& net, uint64_t wr, uint32_t len, uint16_t stream = 0, uint64_t off = 0, int from = 0) {
  return net.dev(from).post_write(net.conn[from], stream, wr, Sge{kSrc + off, len, net.mr[from].lkey}, kDst + off,
                                  net.mr[1 - from].rkey);
}

bool done_a(EnginePair& net, size_t n = 1) { return net.completions[0].size() >= n; }

// Opens another connection from side `from`; net.conn[] then names it on both sides. True once both
// sides have it.
bool connect_again(EnginePair& net, int from = 0) {
  net.conn[0] = net.conn[1] = 0;
  uint32_t id = 0;
  if (net.dev(from).connect(net.dev(1 - from).config().self, &id) != Result::Ok) return false;
  net.run(net.now() + 1000, [&] { return net.conn[0] != 0 && net.conn[1] != 0; });
  return net.conn[from] == id && net.conn[1 - from] != 0;
}

// A 10-byte Send of A's on (conn, stream) that finds no receive gives up (RnrRetryExceeded); then its
// VOIDs reach B, which remembers the RSN as canceled [R-REL-9].
void send_gives_up(EnginePair& net, uint32_t conn, uint16_t stream, uint64_t wr) {
  const size_t n = net.completions[0].size();
  ASSERT_EQ(net.dev(0).post_send(conn, stream, wr, Sge{kSrc, 10, net.mr[0].lkey}), Result::Ok);
  net.run(net.now() + 100000, [&] { return net.completions[0].size() > n; });
  ASSERT_EQ(net.completions[0].size(), n + 1);
  EXPECT_EQ(net.completions[0].back().status, Status::RnrRetryExceeded);
  net.run(net.now() + 100);  // the VOIDs arrive
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
  mroce::testing::DeviceHooks::input(net.dev(1), first.data(),
                                     uint32_t(first.size()));  // a duplicate: ACKed, not placed again
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
  mroce::testing::DeviceHooks::input(net.dev(1), far.data(), uint32_t(far.size()));
  EXPECT_EQ(net.dev(1).counters().out_of_window, 1u);
  EXPECT_EQ(net.dev(1).counters().tx_frames, sent);
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

// [R-CONN-4] The responder answers a duplicate CONNECT with the same ACCEPT again, so an initiator
// may get ACCEPT after it is established: the duplicate changes nothing (no close, no reply).
TEST(EngineConn, R_CONN_4_ADuplicateAcceptChangesNothing) {
  EnginePair net;
  std::vector<uint8_t> accept;
  net.loop().filter = [&, inner = net.loop().filter](int from, const uint8_t* f, uint32_t len) {
    fast::PacketView v;
    if (from == 1 && accept.empty() && fast::decode(f, len, 4793, v) == fast::Error::None &&
        v.opcode() == fast::Opcode::Accept)
      accept.assign(f, f + len);
    return inner(from, f, len);
  };
  net.setup();
  ASSERT_FALSE(accept.empty());
  const Counters before = net.dev(0).counters();
  mroce::testing::DeviceHooks::input(net.dev(0), accept.data(), uint32_t(accept.size()));
  net.run(net.now() + 100);
  EXPECT_EQ(net.dev(0).connection_state(net.conn[0]), ConnState::Established);
  EXPECT_EQ(net.dev(1).connection_state(net.conn[1]), ConnState::Established);
  EXPECT_EQ(net.dev(0).counters().tx_frames, before.tx_frames);
  ASSERT_EQ(write(net, 1, 1000), Result::Ok);
  net.run(net.now() + 1000, [&] { return done_a(net); });
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, Status::Success);
  // Nor while closing: it is not the DISCONNECT_ACK that A's DISCONNECT waits for.
  net.filter = [](int from, const fast::PacketView& v) {
    return from == 1 && v.opcode() == fast::Opcode::DisconnectAck ? io::Fate::Drop : io::Fate::Deliver;
  };
  ASSERT_EQ(net.dev(0).close(net.conn[0]), Result::Ok);
  net.run(net.now() + 50);
  ASSERT_EQ(net.dev(0).connection_state(net.conn[0]), ConnState::Closing);
  mroce::testing::DeviceHooks::input(net.dev(0), accept.data(), uint32_t(accept.size()));
  EXPECT_EQ(net.dev(0).connection_state(net.conn[0]), ConnState::Closing);
  net.filter = nullptr;
  net.run(net.now() + 20000, [&] { return net.dev(0).connection_state(net.conn[0]) == ConnState::Closed; });
  EXPECT_EQ(net.dev(0).connection_state(net.conn[0]), ConnState::Closed);
}

// [R-CONN-8] A failed connection is released: a frame that still names it is counted as for an
// unknown connection and acted on by nobody.
TEST(EngineConn, R_CONN_8_AFrameForAFailedConnectionIsDropped) {
  EnginePair net;
  net.setup();
  std::vector<uint8_t> ack;
  bool silent = false;
  net.loop().filter = [&, inner = net.loop().filter](int from, const uint8_t* f, uint32_t len) {
    fast::PacketView v;
    if (from == 1 && fast::decode(f, len, 4793, v) == fast::Error::None && v.opcode() == fast::Opcode::Ack)
      ack.assign(f, f + len);
    return silent ? io::Fate::Drop : inner(from, f, len);
  };
  ASSERT_EQ(write(net, 1, 100), Result::Ok);
  net.run(net.now() + 1000, [&] { return done_a(net); });
  ASSERT_FALSE(ack.empty());
  silent = true;  // the peer goes silent while A has work outstanding
  ASSERT_EQ(write(net, 2, 100), Result::Ok);
  net.run(net.now() + 200000, [&] { return net.dev(0).connection_state(net.conn[0]) == ConnState::Failed; });
  ASSERT_EQ(net.dev(0).connection_state(net.conn[0]), ConnState::Failed);
  const Counters c = net.dev(0).counters();
  mroce::testing::DeviceHooks::input(net.dev(0), ack.data(), uint32_t(ack.size()));
  EXPECT_EQ(net.dev(0).counters().unknown_dcid, c.unknown_dcid + 1);
  EXPECT_EQ(net.dev(0).counters().invalid_acks, c.invalid_acks);
  EXPECT_EQ(net.dev(0).counters().tx_frames, c.tx_frames);
  EXPECT_EQ(net.dev(0).connection_state(net.conn[0]), ConnState::Failed);
}

// [R-CONN-2] A connection ID names one connection: once a closed connection's slot is recycled for a
// new one, a frame that still carries the old ID reaches nobody (counted as an unknown DCID). Each
// side has room for one connection, so every cycle recycles the same slot.
TEST(EngineConn, R_CONN_2_ARecycledSlotAnswersOnlyToItsNewId) {
  DeviceConfig a = engine_config(0), b = engine_config(1);
  a.max_connections = 1;
  b.max_connections = 1;
  EnginePair net(a, b);
  net.register_regions();
  std::vector<uint8_t> old_frame;
  for (int cycle = 0; cycle < 6; ++cycle) {
    ASSERT_TRUE(connect_again(net)) << "cycle " << cycle;
    if (cycle == 0)
      net.loop().filter = [&, inner = net.loop().filter](int from, const uint8_t* f, uint32_t len) {
        fast::PacketView v;
        if (from == 0 && old_frame.empty() && fast::decode(f, len, 4793, v) == fast::Error::None && v.is_data())
          old_frame.assign(f, f + len);
        return inner(from, f, len);
      };
    const size_t before = net.completions[0].size();
    ASSERT_EQ(write(net, 100 + cycle, 100), Result::Ok);
    net.run(net.now() + 10000, [&] { return net.completions[0].size() > before; });
    ASSERT_EQ(net.completions[0].size(), before + 1) << "cycle " << cycle;
    EXPECT_EQ(net.completions[0].back().status, Status::Success);
    if (cycle > 0) {
      // The slot now holds another connection; the first one's frame must not reach it.
      ASSERT_FALSE(old_frame.empty());
      const Counters c = net.dev(1).counters();
      mroce::testing::DeviceHooks::input(net.dev(1), old_frame.data(), uint32_t(old_frame.size()));
      EXPECT_EQ(net.dev(1).counters().unknown_dcid, c.unknown_dcid + 1) << "cycle " << cycle;
      EXPECT_EQ(net.dev(1).counters().placed_bytes, c.placed_bytes);
      EXPECT_EQ(net.dev(1).counters().duplicates, c.duplicates);
    }
    ASSERT_EQ(net.dev(0).close(net.conn[0]), Result::Ok);
    net.run(net.now() + 10000, [&] {
      return net.dev(0).connection_state(net.conn[0]) == ConnState::Closed &&
             net.dev(1).connection_state(net.conn[1]) == ConnState::Closed;
    });
    ASSERT_EQ(net.dev(1).connection_state(net.conn[1]), ConnState::Closed) << "cycle " << cycle;
  }
}

// [R-ENC-1] Every frame an end sends carries its own MAC and IP as source and its peer's as
// destination: handshake, data, ACKs and close alike. Every byte of both addresses differs, so a
// wrong byte order or shift in building the headers shows.
TEST(EngineWire, R_ENC_1_EveryFrameCarriesBothEndsAddresses) {
  DeviceConfig a = engine_config(0), b = engine_config(1);
  a.self.mac = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55};
  b.self.mac = {0x06, 0x66, 0x77, 0x88, 0x99, 0xAA};
  a.self.ip = {10, 21, 32, 43};
  b.self.ip = {172, 54, 65, 76};
  EnginePair net(a, b);
  const Address self[2] = {a.self, b.self};
  uint64_t checked[2] = {0, 0};
  net.filter = [&](int from, const fast::PacketView& v) {
    EXPECT_FALSE(v.ipv6());
    EXPECT_EQ(v.eth_src(), self[from].mac);
    EXPECT_EQ(v.eth_dst(), self[1 - from].mac);
    EXPECT_TRUE(std::equal(v.ip_src(), v.ip_src() + 4, self[from].ip.begin())) << "from " << from;
    EXPECT_TRUE(std::equal(v.ip_dst(), v.ip_dst() + 4, self[1 - from].ip.begin())) << "from " << from;
    ++checked[from];
    return io::Fate::Deliver;
  };
  net.setup();
  ASSERT_NE(net.conn[1], 0u);
  ASSERT_EQ(write(net, 1, 20000), Result::Ok);
  net.run(net.now() + 10000, [&] { return done_a(net); });
  ASSERT_EQ(net.dev(0).close(net.conn[0]), Result::Ok);
  net.run(net.now() + 10000, [&] { return net.dev(1).connection_state(net.conn[1]) == ConnState::Closed; });
  EXPECT_GT(checked[0], 5u);
  EXPECT_GT(checked[1], 2u);
  // The tx_frames counter counts exactly the frames that reached the wire.
  for (int i = 0; i < 2; ++i) EXPECT_EQ(net.dev(i).counters().tx_frames, net.frames_[i]) << "side " << i;
}

// ---- engine-specific ----------------------------------------------------------------------------

// [R-CC-11]: a port with no transmit room holds new data back; the engine does not lose it
// (no tx_no_buffer, no retransmission) and sends it at the first progress() after room returns.
TEST(EngineSend, R_CC_11_NewDataWaitsForRoomInThePort) {
  EnginePair net(engine_config(0), engine_config(1));
  net.setup();
  ASSERT_NE(net.conn[1], 0u);
  uint64_t data_frames = 0;
  net.filter = [&](int from, const fast::PacketView& v) {
    if (from == 0 && v.payload_len() > 0) ++data_frames;
    return io::Fate::Deliver;
  };
  net.loop().set_tx_room(0, 0);
  ASSERT_EQ(write(net, 1, 64 * 1024), Result::Ok);
  net.run(net.now() + 2000);
  EXPECT_EQ(data_frames, 0u);
  EXPECT_FALSE(done_a(net));
  EXPECT_EQ(net.dev(0).counters().tx_no_buffer, 0u);
  // Room for one frame at a time: it still goes, a frame per poll.
  net.loop().set_tx_room(0, 1);
  net.run(net.now() + 200);
  EXPECT_GT(data_frames, 0u);
  net.loop().set_tx_room(0, UINT32_MAX);
  net.run(net.now() + 10000, [&] { return done_a(net); });
  ASSERT_TRUE(done_a(net));
  EXPECT_EQ(net.completions[0].back().status, Status::Success);
  EXPECT_EQ(net.dev(0).counters().retransmissions, 0u);
  EXPECT_EQ(net.dev(0).counters().tx_no_buffer, 0u);
}

// A-41 ([R-CC-11], A-37): connections of one device share a port whose ring is short in turns: while
// two connections both have far more than the ring takes, each gets about half of what leaves. (In ID
// order without turns, the lower ID took the ring whole and the other sent nothing until its window
// closed.)
TEST(EngineSend, A_41_ConnectionsShareAShortPortInTurns) {
  EnginePair net(engine_config(0), engine_config(1));
  net.setup();
  const uint32_t first = net.conn[0];
  ASSERT_NE(first, 0u);
  ASSERT_TRUE(connect_again(net));
  const uint32_t second = net.conn[0];
  ASSERT_NE(second, first);
  std::map<uint32_t, uint64_t> frames_to;  // data frames from A by B's connection ID
  uint64_t data_frames = 0;
  net.filter = [&](int from, const fast::PacketView& v) {
    if (from == 0 && v.payload_len() > 0 && data_frames < 40) ++data_frames, ++frames_to[v.dcid()];
    return io::Fate::Deliver;
  };
  net.loop().set_tx_room(0, 4);
  ASSERT_EQ(net.dev(0).post_write(first, 0, 1, Sge{kSrc, 256 * 1024, net.mr[0].lkey}, kDst, net.mr[1].rkey),
            Result::Ok);
  ASSERT_EQ(net.dev(0).post_write(second, 0, 2, Sge{kSrc, 256 * 1024, net.mr[0].lkey}, kDst, net.mr[1].rkey),
            Result::Ok);
  net.run(net.now() + 100000, [&] { return data_frames >= 40; });
  ASSERT_EQ(data_frames, 40u);
  ASSERT_EQ(frames_to.size(), 2u) << "one connection took the port whole";
  for (const auto& [id, n] : frames_to) EXPECT_GE(n, 16u) << "connection " << id << " got " << n << " of 40";
  net.loop().set_tx_room(0, UINT32_MAX);
  net.run(net.now() + 100000, [&] { return done_a(net, 2); });
  ASSERT_EQ(net.completions[0].size(), 2u);
  for (const auto& c : net.completions[0]) EXPECT_EQ(c.status, Status::Success);
}

// Engine choice ([R-CONF-2], impl/engine/README.md): over ports without rx timestamps only
// progress() fires timers, after reading the frames that wait. An application call made after the
// host stalled past the RTO must not retransmit what an unread ACK already acknowledged.
TEST(EngineTimers, WithoutRxTimestampsAPostFiresNoTimerBeforeTheWaitingAckIsRead) {
  EnginePair net(engine_config(0), engine_config(1), 0, 16384, /*nic_timestamps=*/false);
  net.setup();
  ASSERT_NE(net.conn[0], 0u);
  ASSERT_EQ(write(net, 1, 100), Result::Ok);
  net.dev(1).progress();  // B places it
  net.clock().set(net.now() + 20);
  net.dev(1).progress();                // and ACKs it (coalescing timer at the latest): the ACK waits in A's queue
  net.clock().set(net.now() + 100000);  // A's host stalls far past every RTO
  ASSERT_EQ(write(net, 2, 100, 0, 4096), Result::Ok);
  EXPECT_EQ(net.dev(0).counters().retransmissions, 0u) << "the post fired the RTO before the ACK was read";
  net.run(net.now() + 10000, [&] { return done_a(net, 2); });
  EXPECT_EQ(net.completions[0].size(), 2u);
  EXPECT_EQ(net.dev(0).counters().retransmissions, 0u);
  EXPECT_EQ(net.dev(1).counters().duplicates, 0u);
}

// A data packet of A's is lost, then A's host stalls for `stall_us`, then polls once (reading
// nothing): the retransmissions that poll made.
uint64_t retransmissions_after_a_stall(EnginePair& net, uint64_t stall_us) {
  net.setup();
  EXPECT_NE(net.conn[0], 0u);
  net.filter = [](int from, const fast::PacketView& v) {
    return from == 0 && v.is_data() ? io::Fate::Drop : io::Fate::Deliver;
  };
  EXPECT_EQ(write(net, 1, 100), Result::Ok);
  net.dev(0).progress();  // sent, and lost
  const uint64_t retx = net.dev(0).counters().retransmissions;
  net.clock().set(net.now() + stall_us);
  EXPECT_EQ(net.dev(0).progress(), 0);  // nothing to read
  return net.dev(0).counters().retransmissions - retx;
}

// [R-CONV-7] With rx timestamps, frames and timers are events at their own times, as in the lockstep
// calls: a poll after a long stall fires the timers that fell due meanwhile one after another, each at
// its deadline, so a lost packet's RTO expires, backs off and expires again within the stall (without
// timestamps, below, the overdue timers fire once, at the poll's time).
TEST(EngineTimers, WithRxTimestampsAStallReplaysEachTimerAtItsOwnTime) {
  EnginePair net;
  // The host stalls for many RTOs (RTO_INIT 1 ms, doubling).
  EXPECT_GE(retransmissions_after_a_stall(net, 100000), 3u)
      << "the overdue timers fired once, at the poll's time, instead of each at its deadline";
}

// [R-CONV-7] (engine choice over ports without rx timestamps, impl/engine/README.md) A poll that
// reads nothing after a long stall fires the overdue timers once, at the poll's time: the host's own
// stall is not replayed as a string of RTOs with backoff.
TEST(EngineTimers, WithoutRxTimestampsAStallFiresTheOverdueTimersOnce) {
  EnginePair net(engine_config(0), engine_config(1), 0, 16384, /*nic_timestamps=*/false);
  // The host stalls for many RTOs, within the peer timeout.
  EXPECT_EQ(retransmissions_after_a_stall(net, 20000), 1u)
      << "the stall was replayed: each overdue timer fired at its own deadline";
  EXPECT_EQ(net.dev(0).connection_state(net.conn[0]), ConnState::Established);
}

// [R-PLC-1] the placement copy (non-temporal stores from 1 KiB up) writes exactly what memcpy
// would, at every destination alignment and length around its block and threshold edges, and no
// byte outside the range.
TEST(EnginePlacement, R_PLC_1_PlaceBytesMatchesMemcpy) {
  std::vector<uint8_t> src(9000), dst(9200), want(9200);
  for (size_t i = 0; i < src.size(); ++i) src[i] = uint8_t(i * 131 + 7);
  for (uint32_t n : {0u, 1u, 63u, 1023u, 1024u, 1025u, 1087u, 1088u, 4095u, 4096u, 4097u, 8191u, 9000u - 64u})
    for (uint32_t off : {0u, 1u, 7u, 15u, 16u, 33u, 63u})
      for (uint32_t soff : {0u, 5u}) {
        std::fill(dst.begin(), dst.end(), uint8_t(0xEE));
        want = dst;
        std::memcpy(want.data() + off, src.data() + soff, n);
        engine::place_bytes(dst.data() + off, src.data() + soff, n);
        ASSERT_EQ(dst, want) << "n " << n << " dst offset " << off << " src offset " << soff;
      }
}

// A-35 (engine choice over ports without rx timestamps): a stall of both hosts (or of the one
// thread that runs both engines) past the RTO fires no RTO at the first poll after it: the peer's
// ACK is on its way as soon as the peer runs again, and it is read before the postponed RTO is due.
TEST(EngineTimers, WithoutRxTimestampsAStallOfBothHostsFiresNoRto) {
  EnginePair net(engine_config(0), engine_config(1), 0, 16384, /*nic_timestamps=*/false);
  net.setup();
  ASSERT_NE(net.conn[0], 0u);
  ASSERT_EQ(write(net, 1, 100), Result::Ok);
  net.dev(0).progress();              // sent
  net.clock().set(net.now() + 5000);  // both stall, far past the RTO (1 ms), within a quarter of PEER_TIMEOUT
  net.dev(0).progress();              // A first: nothing to read yet
  EXPECT_EQ(net.dev(0).counters().retransmissions, 0u) << "A took the stall for a lost packet";
  net.dev(1).progress();  // B places it
  net.clock().set(net.now() + 20);
  net.dev(1).progress();  // and ACKs it
  net.clock().set(net.now() + 20);
  net.dev(0).progress();  // A reads the ACK
  EXPECT_EQ(net.dev(0).counters().retransmissions, 0u);
  net.run(net.now() + 10000, [&] { return done_a(net, 1); });
  EXPECT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.dev(0).counters().retransmissions, 0u);
  EXPECT_EQ(net.dev(1).counters().duplicates, 0u);
}

// [R-CONN-8], A-35 (engine choice over ports without rx timestamps): a host stall longer than
// PEER_TIMEOUT is not the peer's silence. A's data is outstanding (so A waits for B), B is unreachable,
// and A's host stalls for 100 ms (PEER_TIMEOUT is 50 ms): the poll after the stall keeps the
// connection; polled on, A still finds B dead, once the silence it listened to reaches PEER_TIMEOUT
// (the stall counts up to a quarter of it).
TEST(EngineTimers, WithoutRxTimestampsAHostStallIsNotThePeersSilence) {
  EnginePair net(engine_config(0), engine_config(1), 0, 16384, /*nic_timestamps=*/false);
  net.setup();
  ASSERT_NE(net.conn[0], 0u);
  net.filter = [](int from, const fast::PacketView& v) {
    return from == 1 || v.is_data() ? io::Fate::Drop : io::Fate::Deliver;
  };
  ASSERT_EQ(write(net, 1, 100), Result::Ok);
  net.dev(0).progress();
  const uint64_t stall_end = net.now() + 100000;
  net.clock().set(stall_end);
  net.dev(0).progress();
  EXPECT_EQ(net.dev(0).connection_state(net.conn[0]), ConnState::Established)
      << "the host's own stall was taken for the peer's silence";
  const uint64_t timeout = engine_config(0).peer_timeout_us;
  auto poll_until = [&](uint64_t t) {
    while (net.now() < t && net.dev(0).connection_state(net.conn[0]) == ConnState::Established) {
      net.clock().set(net.now() + 1000);
      net.dev(0).progress();
    }
  };
  poll_until(stall_end + timeout / 2);
  EXPECT_EQ(net.dev(0).connection_state(net.conn[0]), ConnState::Established)
      << "failed too early after the stall: " << net.now() - stall_end << " us after it";
  poll_until(stall_end + timeout + 5000);
  EXPECT_EQ(net.dev(0).connection_state(net.conn[0]), ConnState::Failed) << "a dead peer was never found";
  EXPECT_LE(net.now(), stall_end + timeout);
}

// [R-MEM-6]: a buffer's bytes are read and written in the region its key named, never in the
// oldest region holding the address. B registers a second buffer at the same iova as its first
// (offset mode: different memory, one address space per region) with LocalWrite and RemoteRead only;
// its first region holds a secret there.
TEST(EngineSecurity, R_MEM_6_ABuffersBytesComeFromTheRegionItsKeyNamed) {
  EnginePair net;
  net.setup();
  constexpr uint32_t kLen = 4096;
  net.fill(1, kSrc, kLen, 77);  // the secret, in B's first region
  const std::vector<uint8_t> secret(net.at(1, kSrc), net.at(1, kSrc) + kLen);
  std::vector<uint8_t> other(kLen, 0);
  MemoryRegion second{};
  ASSERT_EQ(net.dev(1).reg_mr(other.data(), kLen, access::kLocalWrite | access::kRemoteRead, &second, kSrc),
            Result::Ok);
  auto b_first = [&] { return std::vector<uint8_t>(net.at(1, kSrc), net.at(1, kSrc) + kLen); };
  // A Read with the second region's rkey returns its bytes (zeros), not the secret [R-PLC-4].
  ASSERT_EQ(net.dev(0).post_read(net.conn[0], 0, 1, Sge{kSrc, kLen, net.mr[0].lkey}, kSrc, second.rkey), Result::Ok);
  net.run(net.now() + 5000, [&] { return done_a(net, 1); });
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, Status::Success);
  EXPECT_EQ(std::vector<uint8_t>(net.at(0, kSrc), net.at(0, kSrc) + kLen), other)
      << "the Read returned another region's bytes";
  // A Send into a receive of the second region's lkey lands there, not in the first region [R-PLC-3].
  net.fill(0, kSrc + 0x10000, kLen, 5);
  const std::vector<uint8_t> sent(net.at(0, kSrc + 0x10000), net.at(0, kSrc + 0x10000) + kLen);
  ASSERT_EQ(net.dev(1).post_recv(net.conn[1], 0, 2, Sge{kSrc, kLen, second.lkey}), Result::Ok);
  ASSERT_EQ(net.dev(0).post_send(net.conn[0], 0, 3, Sge{kSrc + 0x10000, kLen, net.mr[0].lkey}), Result::Ok);
  net.run(net.now() + 5000, [&] { return net.completions[1].size() == 1 && done_a(net, 2); });
  ASSERT_EQ(net.completions[1].size(), 1u);
  EXPECT_EQ(other, sent);
  EXPECT_EQ(b_first(), secret) << "the receive wrote into another region";
  // A Send from the second region carries its bytes, not the secret.
  std::fill(other.begin(), other.end(), 0x5a);
  ASSERT_EQ(net.dev(0).post_recv(net.conn[0], 0, 4, Sge{kSrc + 0x20000, kLen, net.mr[0].lkey}), Result::Ok);
  ASSERT_EQ(net.dev(1).post_send(net.conn[1], 0, 5, Sge{kSrc, kLen, second.lkey}), Result::Ok);
  net.run(net.now() + 5000, [&] { return done_a(net, 3); });
  ASSERT_EQ(net.completions[0].size(), 3u);
  EXPECT_EQ(std::vector<uint8_t>(net.at(0, kSrc + 0x20000), net.at(0, kSrc + 0x20000) + kLen), other)
      << "the Send read another region's bytes";
  // A Read whose sink is the second region leaves the first region alone [R-PLC-5].
  ASSERT_EQ(net.dev(1).post_read(net.conn[1], 0, 6, Sge{kSrc, kLen, second.lkey}, kSrc + 0x10000, net.mr[0].rkey),
            Result::Ok);
  net.run(net.now() + 5000, [&] { return net.completions[1].size() == 3; });
  ASSERT_EQ(net.completions[1].size(), 3u);
  EXPECT_EQ(net.completions[1][2].status, Status::Success);
  EXPECT_EQ(other, sent);
  EXPECT_EQ(b_first(), secret) << "the Read placed into another region";
}

// READ responses waiting to be sent hold entries of the responder's work-request pool; an abort
// drops them and must give those entries back, or the pool leaks until posts fail.
TEST(EnginePools, R_CONN_7_AnAbortReturnsQueuedReadResponsesToThePool) {
  DeviceConfig b = engine_config(1);
  b.max_work_requests = 4;
  EnginePair net(engine_config(0), b);
  net.setup();
  ASSERT_NE(net.conn[1], 0u);
  for (uint16_t i = 0; i < 4; ++i)
    ASSERT_EQ(net.dev(0).post_read(net.conn[0], i, 10 + i, Sge{kSrc + i * 120000u, 120000, net.mr[0].lkey},
                                   kDst + i * 120000u, net.mr[1].rkey),
              Result::Ok);
  net.run(net.now() + 8);  // the requests arrived; B has only begun to answer
  ASSERT_EQ(net.dev(1).close(net.conn[1], true), Result::Ok);
  net.run(net.now() + 10000, [&] { return net.dev(0).connection_state(net.conn[0]) == ConnState::Closed; });
  ASSERT_EQ(net.completions[0].size(), 4u);
  // B reconnects and uses its whole pool again.
  ASSERT_TRUE(connect_again(net, /*from=*/1));
  for (uint64_t i = 0; i < 4; ++i)
    EXPECT_EQ(write(net, 20 + i, 1000, uint16_t(i), i * 4096, /*from=*/1), Result::Ok) << "post " << i;
}

// [R-SEC-11], [R-REL-9] A canceled RSN remembered ahead of its receive holds an entry of the
// connection's share until that receive is posted (and completes Canceled); then the entry is back.
// With a share of one entry, Send after Send gives up and each late receive is canceled in turn.
TEST(EnginePools, R_SEC_11_ACanceledRsnGivesItsShareBackWhenItsReceiveIsPosted) {
  DeviceConfig b = engine_config(1);
  b.max_receives_per_conn = 2;  // the canceled-RSN share is half of it: one entry
  EnginePair net(engine_config(0), b);
  net.setup();
  ASSERT_NE(net.conn[1], 0u);
  for (uint64_t cycle = 0; cycle < 4; ++cycle) {
    const size_t b0 = net.completions[1].size();
    ASSERT_NO_FATAL_FAILURE(send_gives_up(net, net.conn[0], 0, 100 + cycle)) << "cycle " << cycle;
    ASSERT_EQ(net.dev(1).post_recv(net.conn[1], 0, 200 + cycle, Sge{kDst, 64, net.mr[1].lkey}), Result::Ok);
    net.run(net.now() + 1000, [&] { return net.completions[1].size() > b0; });
    ASSERT_EQ(net.completions[1].size(), b0 + 1) << "cycle " << cycle;
    EXPECT_EQ(net.completions[1].back().status, Status::Canceled) << "cycle " << cycle;
    // Every VOID found room: the entry the previous cycle used was given back.
    EXPECT_EQ(net.dev(1).counters().rnr_receive_limit, 0u) << "cycle " << cycle;
  }
}

// [R-REL-9] A canceled RSN belongs to its connection: RSN 0 canceled on one connection does not
// cancel the receive posted for RSN 0 of the same stream on another connection from the same peer.
TEST(EngineConn, R_REL_9_ACanceledRsnCancelsOnlyItsOwnConnectionsReceive) {
  EnginePair net;
  net.setup();
  ASSERT_NE(net.conn[1], 0u);
  const uint32_t a1 = net.conn[0], b1 = net.conn[1];
  ASSERT_TRUE(connect_again(net));  // the second connection
  const uint32_t a2 = net.conn[0], b2 = net.conn[1];
  ASSERT_NE(a2, a1);
  ASSERT_NE(b2, b1);
  // On the first connection a Send gives up; B remembers its RSN 0 as canceled.
  ASSERT_NO_FATAL_FAILURE(send_gives_up(net, a1, 0, 1));
  // The second connection holds a canceled RSN too (stream 1), so it looks its receives up.
  ASSERT_NO_FATAL_FAILURE(send_gives_up(net, a2, 1, 5));
  // RSN 0 of stream 0 on the second connection is another receive: it waits for its Send.
  ASSERT_EQ(net.dev(1).post_recv(b2, 0, 2, Sge{kDst, 64, net.mr[1].lkey}), Result::Ok);
  net.run(net.now() + 100);
  EXPECT_TRUE(net.completions[1].empty()) << "canceled by the other connection's VOID";
  ASSERT_EQ(net.dev(0).post_send(a2, 0, 3, Sge{kSrc, 20, net.mr[0].lkey}), Result::Ok);
  net.run(net.now() + 10000, [&] { return net.completions[1].size() >= 1 && net.completions[0].size() >= 3; });
  ASSERT_EQ(net.completions[1].size(), 1u);
  EXPECT_EQ(net.completions[1][0].wr_id, 2u);
  EXPECT_EQ(net.completions[1][0].status, Status::Success);
  EXPECT_EQ(net.completions[1][0].byte_len, 20u);
  // And the first connection's late receive is still canceled.
  ASSERT_EQ(net.dev(1).post_recv(b1, 0, 4, Sge{kDst + 4096, 64, net.mr[1].lkey}), Result::Ok);
  net.run(net.now() + 1000, [&] { return net.completions[1].size() >= 2; });
  ASSERT_EQ(net.completions[1].size(), 2u);
  EXPECT_EQ(net.completions[1][1].status, Status::Canceled);
}

// [R-SEC-11] A canceled RSN still remembered when its connection ends, and a receive kept after it
// failed with LocalLength, give their entries back to the device's pool: a new connection can then
// post the whole pool.
TEST(EnginePools, R_SEC_11_ReceiveEntriesHeldAtTheEndGoBackToThePool) {
  DeviceConfig b = engine_config(1);
  b.max_receives = 4;
  EnginePair net(engine_config(0), b);
  net.setup();
  ASSERT_NE(net.conn[1], 0u);
  ASSERT_NO_FATAL_FAILURE(send_gives_up(net, net.conn[0], 0, 1));  // B remembers RSN 0: one pool entry
  // And a receive too short for its Send, kept after its LocalLength completion ([R-SEC-7]).
  ASSERT_EQ(net.dev(1).post_recv(net.conn[1], 1, 2, Sge{kDst, 10, net.mr[1].lkey}), Result::Ok);
  ASSERT_EQ(net.dev(0).post_send(net.conn[0], 1, 3, Sge{kSrc, 100, net.mr[0].lkey}), Result::Ok);
  net.run(net.now() + 10000, [&] { return net.completions[0].size() >= 2 && !net.completions[1].empty(); });
  ASSERT_EQ(net.completions[1].size(), 1u);
  EXPECT_EQ(net.completions[1][0].status, Status::LocalLength);
  const uint32_t old_b = net.conn[1];
  ASSERT_EQ(net.dev(0).close(net.conn[0], true), Result::Ok);
  net.run(net.now() + 10000, [&] { return net.dev(1).connection_state(old_b) == ConnState::Closed; });
  ASSERT_EQ(net.dev(1).connection_state(old_b), ConnState::Closed);
  ASSERT_TRUE(connect_again(net));
  ASSERT_NE(net.conn[1], old_b);
  for (uint64_t i = 0; i < 4; ++i)
    EXPECT_EQ(net.dev(1).post_recv(net.conn[1], uint16_t(i), 10 + i, Sge{kDst + i * 4096, 64, net.mr[1].lkey}),
              Result::Ok)
        << "receive " << i;
}

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
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(net.dev(1).post_recv(net.conn[1], 0, i, Sge{kDst, 100, net.mr[1].lkey}), Result::Ok);
  EXPECT_EQ(net.dev(1).post_recv(net.conn[1], 0, 9, Sge{kDst, 100, net.mr[1].lkey}), Result::NoResources);
}

// [R-SEC-11]: a connection at its share of a pool gets NoResources; another connection still posts.
TEST(EnginePools, R_SEC_11_LocalPostsStopAtTheConnectionsShareOnly) {
  DeviceConfig a = engine_config(0), b = engine_config(1);
  b.max_receives = 64;
  b.max_receives_per_conn = 8;
  b.max_work_requests = 64;
  b.max_work_requests_per_conn = 8;
  EnginePair net(a, b);
  net.setup();
  uint32_t second = 0;
  ASSERT_EQ(net.dev(0).connect(net.dev(1).config().self, &second), Result::Ok);
  uint32_t theirs = 0;
  net.run(net.now() + 1000, [&] {
    for (const ConnEvent& e : net.events[1])
      if (e.kind == ConnEvent::Kind::Up && e.conn != net.conn[1]) theirs = e.conn;
    return theirs != 0;
  });
  ASSERT_NE(theirs, 0u);
  auto recv = [&](uint32_t conn, uint64_t wr) {
    return net.dev(1).post_recv(conn, 0, wr, Sge{kDst, 100, net.mr[1].lkey});
  };
  auto write_b = [&](uint32_t conn, uint64_t wr) {
    return net.dev(1).post_write(conn, 0, wr, Sge{kSrc, 100, net.mr[1].lkey}, kDst, net.mr[0].rkey);
  };
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(recv(net.conn[1], i), Result::Ok);
    EXPECT_EQ(write_b(net.conn[1], 100 + i), Result::Ok);
  }
  EXPECT_EQ(recv(net.conn[1], 8), Result::NoResources);
  EXPECT_EQ(write_b(net.conn[1], 108), Result::NoResources);
  EXPECT_EQ(recv(theirs, 9), Result::Ok) << "the other connection keeps its share";
  EXPECT_EQ(write_b(theirs, 109), Result::Ok);
  // The share refills as work completes.
  net.run(net.now() + 5000, [&] { return net.completions[1].size() >= 9; });
  EXPECT_EQ(write_b(net.conn[1], 110), Result::Ok);
}

TEST(EnginePools, R_SEC_11_SharesAreValidatedAtOpen) {
  io::MemLoop loop(io::MemLoop::Options{});
  io::ManualClock clock;
  DeviceConfig c = engine_config(0);
  c.max_receives_per_conn = c.max_receives + 1;
  Result err = Result::Ok;
  EXPECT_EQ(Device::open(c, loop.port(0), clock, &err), nullptr);
  EXPECT_EQ(err, Result::InvalidArgument);
  c = engine_config(0);
  c.max_work_requests_per_conn = c.max_work_requests + 1;
  EXPECT_EQ(Device::open(c, loop.port(0), clock), nullptr);
  c = engine_config(0);
  c.max_unconfirmed_per_source = c.max_connections + 1;
  EXPECT_EQ(Device::open(c, loop.port(0), clock), nullptr);
  c.max_unconfirmed_per_source = c.max_connections;
  EXPECT_NE(Device::open(c, loop.port(0), clock), nullptr);
}

// [R-RTO-3]: the RTO lives in [RTO_MIN, RTO_MAX]; a configuration with an empty range or a zero
// RTO_MIN or RTO_INIT (every timer due at once, re-armed at once) does not open.
// The names the CLI, the timelines and error messages print: one distinct name per value, never null.
TEST(EngineApi, StateResultAndStatusNamesAreDistinct) {
  std::set<std::string> names;
  for (ConnState s :
       {ConnState::Connecting, ConnState::Established, ConnState::Closing, ConnState::Closed, ConnState::Failed}) {
    ASSERT_NE(conn_state_name(s), nullptr);
    names.insert(conn_state_name(s));
  }
  EXPECT_EQ(names, (std::set<std::string>{"Connecting", "Established", "Closing", "Closed", "Failed"}));
  names.clear();
  for (PathState s : {PathState::Active, PathState::Suspect, PathState::Failed}) {
    ASSERT_NE(path_state_name(s), nullptr);
    names.insert(path_state_name(s));
  }
  EXPECT_EQ(names.size(), 3u);
  EXPECT_EQ(std::string(path_state_name(PathState::Failed)), "FAILED");
  // Results and completion statuses too: every value has its own name (a Result's is its enumerator).
  names.clear();
  for (int r = 0; r >= -8; --r) {
    ASSERT_NE(result_name(Result(r)), nullptr) << r;
    names.insert(result_name(Result(r)));
  }
  EXPECT_EQ(names.size(), 9u);
  EXPECT_EQ(std::string(result_name(Result::Busy)), "Busy");
  EXPECT_EQ(std::string(result_name(Result::NoResources)), "NoResources");
  names.clear();
  for (int st = 0; st <= int(Status::LocalProtection); ++st) {
    ASSERT_NE(status_name(Status(st)), nullptr) << st;
    names.insert(status_name(Status(st)));
  }
  EXPECT_EQ(names.size(), size_t(Status::LocalProtection) + 1);
}

// The queries about a connection answer 0 (or nothing) for an ID that names none, and the negotiated
// values for one that does.
TEST(EngineApi, QueriesAboutAnUnknownConnectionAnswerZero) {
  EnginePair net;
  net.setup();
  ASSERT_NE(net.conn[0], 0u);
  const uint32_t unknown = net.conn[0] ^ 0x5a5a5a5au;
  EXPECT_EQ(net.dev(0).path_count(unknown), 0u);
  EXPECT_EQ(net.dev(0).stream_count(unknown), 0u);
  EXPECT_EQ(net.dev(0).max_payload(unknown), 0u);
  EXPECT_EQ(net.dev(0).path_count(net.conn[0]), 4u);
  EXPECT_EQ(net.dev(0).stream_count(net.conn[0]), 4u);
  EXPECT_EQ(net.dev(0).max_payload(net.conn[0]), 4096u);
}

TEST(EngineConfig, R_RTO_3_TimerRangesAreValidatedAtOpen) {
  io::MemLoop loop(io::MemLoop::Options{});
  io::ManualClock clock;
  const auto opens = [&](auto change) {
    DeviceConfig c = engine_config(0);
    change(c);
    Result err = Result::Ok;
    const bool ok = Device::open(c, loop.port(0), clock, &err) != nullptr;
    EXPECT_EQ(err, ok ? Result::Ok : Result::InvalidArgument);
    return ok;
  };
  EXPECT_FALSE(opens([](DeviceConfig& c) { c.rto_min_us = 0; }));
  EXPECT_FALSE(opens([](DeviceConfig& c) { c.rto_init_us = 0; }));
  EXPECT_FALSE(opens([](DeviceConfig& c) { c.rto_min_us = c.rto_max_us + 1; }));
  EXPECT_TRUE(opens([](DeviceConfig& c) { c.rto_min_us = c.rto_max_us; }));
  EXPECT_TRUE(opens([](DeviceConfig& c) { c.rto_min_us = 1; }));
}

// [R-SEC-12]: a source holds at most half the table in connections it has not used; using one
// (any packet from the initiator) makes room for the next.
TEST(EnginePools, R_SEC_12_UnusedConnectionsPerSourceAreBounded) {
  DeviceConfig b = engine_config(1);
  b.max_connections = 8;
  EnginePair net(engine_config(0), b);
  net.setup();  // connection 1, used below
  std::vector<uint32_t> ids(4);
  for (auto& id : ids) ASSERT_EQ(net.dev(0).connect(net.dev(1).config().self, &id), Result::Ok);
  net.run(net.now() + 1000);
  int up = 0;
  for (uint32_t id : ids) up += net.dev(0).connection_state(id) == ConnState::Established;
  EXPECT_EQ(up, 3) << "setup's connection and three more: the source's bound is 4";
  EXPECT_EQ(net.dev(1).counters().rejects_unconfirmed, 1u);
  // The first connection was never used either; a packet on it confirms it.
  ASSERT_EQ(write(net, 1, 100), Result::Ok);
  net.run(net.now() + 1000, [&] { return done_a(net); });
  uint32_t next = 0;
  ASSERT_EQ(net.dev(0).connect(net.dev(1).config().self, &next), Result::Ok);
  net.run(net.now() + 1000);
  EXPECT_EQ(net.dev(0).connection_state(next), ConnState::Established);
  EXPECT_EQ(net.dev(1).counters().rejects_unconfirmed, 1u);
}

TEST(EnginePools, ConnectionPoolExhaustionRejectsWithReason2) {
  DeviceConfig b = engine_config(1);
  b.max_connections = 2;
  b.max_unconfirmed_per_source = 2;  // [R-SEC-12] as large as the table: one source may fill it
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
  // The two accepted connections are still unused, so the source's bound, which is checked first,
  // refuses the others: the table is full of that source's unconfirmed connections.
  EXPECT_EQ(net.dev(1).counters().rejects_unconfirmed, 2u);
  EXPECT_EQ(net.dev(1).counters().rejects_no_resources, 0u);
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
  const uint64_t per =
      MemoryUsage::connection_base_bytes() + 4 * MemoryUsage::per_path_bytes() + 4 * MemoryUsage::per_stream_bytes();
  EXPECT_LE(u.connection_bytes, per + 64);
  EXPECT_LT(u.connection_bytes, 4096u);  // an idle 4-path, 4-stream connection
  std::printf("idle connection (4 paths, 4 streams): %llu bytes (base %llu, per path %llu, per stream %llu)\n",
              (unsigned long long)u.connection_bytes, (unsigned long long)MemoryUsage::connection_base_bytes(),
              (unsigned long long)MemoryUsage::per_path_bytes(), (unsigned long long)MemoryUsage::per_stream_bytes());
}

// [R-CONN-5] A connection's one allocation holds its paths, its streams and their bitmaps: two bits
// per path and one per stream plus the response slot, in 64-bit words. At the word boundaries the
// allocation must still have room for every bit (a word short would be written past its end).
TEST(EngineConn, R_CONN_5_TheConnectionsAllocationHoldsEveryBitmapWord) {
  const auto words = [](uint64_t bits) { return (bits + 63) / 64; };
  for (auto [paths, streams] : {std::pair<uint16_t, uint16_t>{1, 63},
                                {1, 64},
                                {1, 65},
                                {1, 127},
                                {1, 128},
                                {63, 1},
                                {64, 1},
                                {65, 1},
                                {128, 4}}) {
    DeviceConfig a = engine_config(0), b = engine_config(1);
    a.offer.paths = b.offer.paths = paths;
    a.offer.streams = b.offer.streams = streams;
    EnginePair net(a, b);
    net.setup();
    ASSERT_NE(net.conn[0], 0u) << paths << " paths, " << streams << " streams";
    ASSERT_EQ(net.dev(0).path_count(net.conn[0]), paths);
    const uint64_t least = MemoryUsage::connection_base_bytes() + paths * MemoryUsage::per_path_bytes() +
                           streams * MemoryUsage::per_stream_bytes() + 8 * (2 * words(paths) + words(streams + 1u));
    EXPECT_GE(net.dev(0).memory_usage().connection_bytes, least) << paths << " paths, " << streams << " streams";
    EXPECT_GE(net.dev(1).memory_usage().connection_bytes, least) << paths << " paths, " << streams << " streams";
  }
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
    net.dev(0).post_read(net.conn[0], st, wr++, Sge{kSrc + half + off + 100000, 90000, net.mr[0].lkey},
                         kSrc + off + 100000, net.mr[1].rkey);
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

// ---- retransmissions by cause (diagnosis counters; they change nothing on the wire) ---------------

// One path on both sides, so that every data packet of A shares one PSN space and one SACK.
EnginePair one_path_pair() {
  DeviceConfig a = engine_config(0), b = engine_config(1);
  a.offer.paths = b.offer.paths = 1;
  return EnginePair(a, b);
}

// The engine-wide causes and the sum over the connection's paths agree, and add up to the total.
RetransmissionCauses checked_causes(EnginePair& net) {
  const Counters& k = net.dev(0).counters();
  RetransmissionCauses sum;
  uint64_t path_total = 0;
  for (uint16_t p = 0; p < net.dev(0).path_count(net.conn[0]); ++p) {
    const auto pi = net.dev(0).path_info(net.conn[0], p);
    if (!pi) continue;
    EXPECT_EQ(pi->retransmissions, pi->retx_by_cause.total());
    path_total += pi->retransmissions;
    sum.gap += pi->retx_by_cause.gap;
    sum.probe += pi->retx_by_cause.probe;
    sum.rto += pi->retx_by_cause.rto;
    sum.rnr += pi->retx_by_cause.rnr;
    sum.nak += pi->retx_by_cause.nak;
    sum.spurious += pi->retx_by_cause.spurious;
  }
  EXPECT_EQ(k.retx_by_cause.total(), k.retransmissions);
  EXPECT_EQ(path_total, k.retransmissions);
  EXPECT_EQ(sum.gap, k.retx_by_cause.gap);
  EXPECT_EQ(sum.probe, k.retx_by_cause.probe);
  EXPECT_EQ(sum.rto, k.retx_by_cause.rto);
  EXPECT_EQ(sum.rnr, k.retx_by_cause.rnr);
  EXPECT_EQ(sum.nak, k.retx_by_cause.nak);
  EXPECT_EQ(sum.spurious, k.retx_by_cause.spurious);
  return k.retx_by_cause;
}

// One Write of `bytes` over one path whose first data packet's first copy is lost (and every tail
// probe too, when `lose_probes`): returns the causes the completed transfer counted.
RetransmissionCauses causes_after_losing_first_copy(uint32_t bytes, bool lose_probes) {
  EnginePair net = one_path_pair();
  net.setup();
  bool dropped = false;
  net.filter = [&](int from, const fast::PacketView& v) {
    if (from != 0) return io::Fate::Deliver;
    if (lose_probes && v.opcode() == fast::Opcode::Probe) return io::Fate::Drop;
    if (v.is_data() && !dropped) {
      dropped = true;
      return io::Fate::Drop;
    }
    return io::Fate::Deliver;
  };
  write(net, 1, bytes);
  net.run(net.now() + 100000, [&] { return done_a(net); });
  EXPECT_TRUE(dropped);
  EXPECT_EQ(net.completions[0].size(), 1u);
  return checked_causes(net);
}

TEST(EngineRetxCause, R_REL_4_GapLossIsCountedUnderGap) {
  // Later PSNs of the path arrive: the SACK shows the gap.
  const RetransmissionCauses k = causes_after_losing_first_copy(8 * 4096, false);
  EXPECT_EQ(k.gap, 1u);
  EXPECT_EQ(k.total(), 1u);
  EXPECT_EQ(k.spurious, 0u);
}

TEST(EngineRetxCause, R_REL_6_TailLossFoundByTheProbesAckIsCountedUnderProbe) {
  // The only packet: nothing after it shows a gap, the probe's ACK finds it by the time rule.
  const RetransmissionCauses k = causes_after_losing_first_copy(100, false);
  EXPECT_EQ(k.probe, 1u);
  EXPECT_EQ(k.total(), 1u);
  EXPECT_EQ(k.spurious, 0u);
}

TEST(EngineRetxCause, R_REL_7_RtoIsCountedUnderRto) {
  // The probe is lost too: only the RTO is left.
  const RetransmissionCauses k = causes_after_losing_first_copy(100, true);
  EXPECT_EQ(k.rto, 1u);
  EXPECT_EQ(k.total(), 1u);
  EXPECT_EQ(k.spurious, 0u);
}

TEST(EngineRetxCause, R_PLC_9_RnrRetryIsCountedUnderRnr) {
  EnginePair net = one_path_pair();
  net.setup();
  ASSERT_EQ(net.dev(0).post_send(net.conn[0], 0, 1, Sge{kSrc, 100, net.mr[0].lkey}), Result::Ok);
  net.run(net.now() + 250);  // no receive posted yet: RNR NAKs, retries after RNR_DEFAULT
  const uint64_t rnr_naks = net.dev(0).counters().naks_received;
  ASSERT_GE(rnr_naks, 2u);
  ASSERT_EQ(net.dev(1).post_recv(net.conn[1], 0, 9, Sge{kDst, 100, net.mr[1].lkey}), Result::Ok);
  net.run(net.now() + 100000, [&] { return done_a(net); });
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, Status::Success);
  const RetransmissionCauses k = checked_causes(net);
  EXPECT_EQ(k.rnr, net.dev(0).counters().naks_received);  // one retry per RNR NAK
  EXPECT_EQ(k.total(), k.rnr);
  EXPECT_EQ(k.spurious, 0u);
}

TEST(EngineRetxCause, R_REL_9_VoidAfterNakIsCountedUnderNak) {
  EnginePair net = one_path_pair();
  net.setup();
  ASSERT_EQ(net.dev(0).post_write(net.conn[0], 0, 1, Sge{kSrc, 100, net.mr[0].lkey}, kDst, net.mr[1].rkey ^ 0xff00),
            Result::Ok);  // a key naming no region: NAK, then a VOID
  net.run(net.now() + 100000, [&] { return done_a(net); });
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, Status::RemoteAccess);
  const RetransmissionCauses k = checked_causes(net);
  EXPECT_EQ(k.nak, 1u);
  EXPECT_EQ(k.total(), 1u);
  EXPECT_EQ(net.dev(0).counters().voids_sent, 1u);
}

// [R-ACK-7]: the ACK of the first copy is late, not lost: it arrives after the RTO retransmitted, and
// its timestamp echo names the first copy, so that retransmission was spurious.
TEST(EngineRetxCause, R_REL_7_RtoWhoseFirstCopyArrivedIsCountedSpurious) {
  EnginePair net = one_path_pair();
  net.setup();
  std::vector<uint8_t> late_ack;
  bool hold_acks = true;
  net.loop().filter = [&, inner = net.loop().filter](int from, const uint8_t* f, uint32_t len) {
    fast::PacketView v;
    if (from == 1 && hold_acks && fast::decode(f, len, 4793, v) == fast::Error::None) {
      if (v.opcode() == fast::Opcode::Ack && late_ack.empty()) late_ack.assign(f, f + len);
      return io::Fate::Drop;  // B's ACKs (of the data and of the probe) do not arrive in time
    }
    if (from == 0 && hold_acks && fast::decode(f, len, 4793, v) == fast::Error::None &&
        v.opcode() == fast::Opcode::Probe)
      return io::Fate::Drop;
    return inner(from, f, len);
  };
  write(net, 1, 100);
  net.run(net.now() + 100000, [&] { return net.dev(0).counters().retransmissions == 1; });
  ASSERT_EQ(net.dev(0).counters().retransmissions, 1u);
  ASSERT_FALSE(late_ack.empty());
  EXPECT_EQ(net.dev(0).counters().retx_by_cause.spurious, 0u);  // nothing judged before an ACK
  hold_acks = false;
  DeviceHooks::input(net.dev(0), late_ack.data(), uint32_t(late_ack.size()));
  net.collect();
  ASSERT_EQ(net.completions[0].size(), 1u);
  const RetransmissionCauses k = checked_causes(net);
  EXPECT_EQ(k.rto, 1u);
  EXPECT_EQ(k.spurious, 1u);
}

}  // namespace
}  // namespace mroce::testing
