// What a peer, or someone pretending to be one, can make the engine do (SPEC 12.4, issue #17): ACKs
// that name unsent PSNs [R-ACK-10], packets from another address [R-SEC-10], ACCEPTs above the
// offer [R-CONN-3], and the unpredictability of ISNs and connection IDs [R-CONN-2]. Each forged
// frame is made from a real frame of the peer with one thing changed, and each test first shows
// that the real-address version of the frame does act (so a forged frame that is merely malformed
// cannot pass for a refused one). The model's side is in properties/model_unit/model_unit_test.cpp.
#include <gtest/gtest.h>

#include <set>

#include "engine_pair.hpp"
#include "mroce/testing.hpp"

namespace mroce::testing {
namespace {

constexpr uint64_t kSrc = EnginePair::kBase;
constexpr uint64_t kDst = EnginePair::kBase + 0x80000;
constexpr uint32_t kForeignIp = 0x0A000063;  // 10.0.0.99: neither side

Result write(EnginePair& net, uint64_t wr, uint32_t len, uint64_t off) {
  return net.dev(0).post_write(net.conn[0], 0, wr, Sge{kSrc + off, len, net.mr[0].lkey}, kDst + off, net.mr[1].rkey);
}

void inject(EnginePair& net, int side, const fast::Fields& f) {
  const std::vector<uint8_t> frame = fast::build(f, {});
  DeviceHooks::input(net.dev(side), frame.data(), uint32_t(frame.size()));
}

// Records the latest frame of `opcode` that `from` sent, and drops A's data frames while `drop_data`.
struct Tap {
  std::vector<uint8_t> last[2];
  fast::Opcode opcode = fast::Opcode::Ack;
  bool drop_data = false;
  void attach(EnginePair& net) {
    net.filter = [this](int from, const fast::PacketView& v) {
      if (v.opcode() == opcode) {
        const uint8_t* f = v.frame();
        last[from].assign(f, f + v.frame_len());
      }
      return drop_data && from == 0 && v.is_data() ? io::Fate::Drop : io::Fate::Deliver;
    };
  }
  fast::Fields fields(int from) const {
    fast::PacketView v;
    EXPECT_EQ(fast::decode(last[from].data(), uint32_t(last[from].size()), 4793, v), fast::Error::None);
    return fast::fields_of(v);
  }
};

// Connects, taps the frames, and completes a first 4 KiB Write from A; *ack is B's last ACK for it.
void first_write_acked(EnginePair& net, Tap& tap, uint8_t fill_seed, fast::Fields* ack) {
  net.setup();
  tap.attach(net);
  net.fill(0, kSrc, 65536, fill_seed);
  ASSERT_EQ(write(net, 1, 4096, 0), Result::Ok);
  net.run(net.now() + 2000, [&] { return net.completions[0].size() == 1; });
  ASSERT_FALSE(tap.last[1].empty());
  *ack = tap.fields(1);
}

// Silent data loss before [R-ACK-10]: an ACK whose CPSN is beyond SNXT acknowledged every outstanding
// PSN, and a Write whose data was all dropped completed Success.
TEST(PeerTrust, R_ACK_10_AnAckBeyondSnxtAcknowledgesNothing) {
  EnginePair net;
  Tap tap;
  fast::Fields ack;
  ASSERT_NO_FATAL_FAILURE(first_write_acked(net, tap, 7, &ack));

  tap.drop_data = true;
  ASSERT_EQ(write(net, 2, 32768, 4096), Result::Ok);
  net.run(net.now() + 3);  // A sends the first window; every data frame is lost
  ASSERT_EQ(net.completions[0].size(), 1u);
  const Counters before = net.dev(0).counters();

  fast::Fields beyond = ack;  // CPSN far past anything sent
  beyond.cpsn = ack.cpsn + 1000;
  beyond.rate_hint = 1;  // would throttle the sender to 1 Mb/s if it were believed
  inject(net, 0, beyond);
  fast::Fields sack_beyond = ack;  // a valid CPSN, and a SACK bit for a PSN never sent
  sack_beyond.sack = {};
  sack_beyond.sack[31] = 0x01;  // bit 255: PSN CPSN + 256
  inject(net, 0, sack_beyond);
  fast::Fields nak = ack;
  nak.opcode = uint8_t(fast::Opcode::Nak);
  nak.nak_psn = ack.cpsn + 1000;
  nak.nak_code = uint8_t(fast::NakCode::RemoteAccess);
  inject(net, 0, nak);
  net.collect();

  EXPECT_EQ(net.dev(0).counters().invalid_acks, before.invalid_acks + 2);
  EXPECT_EQ(net.dev(0).counters().sack_beyond_snxt, before.sack_beyond_snxt + 1);
  EXPECT_EQ(net.dev(0).counters().retransmissions, before.retransmissions) << "an unsent SACK bit caused a gap loss";
  EXPECT_EQ(net.dev(0).counters().naks_received, before.naks_received);
  EXPECT_EQ(net.completions[0].size(), 1u) << "a forged ACK completed a Write whose bytes never arrived";
  auto info = net.dev(0).path_info(net.conn[0], 0);
  ASSERT_TRUE(info);
  EXPECT_NE(info->suna, info->snxt) << "the forged ACK acknowledged outstanding PSNs";

  // The loss heals, and the Write completes once, with its bytes at B.
  tap.drop_data = false;
  net.run(net.now() + 200000, [&] { return net.completions[0].size() == 2; });
  ASSERT_EQ(net.completions[0].size(), 2u);
  EXPECT_EQ(net.completions[0][1].status, Status::Success);
  EXPECT_TRUE(net.same(0, kSrc + 4096, 1, kDst + 4096, 32768));

  // Canary: the same ACK with an in-window CPSN is valid (so the forged ones were refused for what
  // they name, not for being malformed).
  const uint64_t invalid = net.dev(0).counters().invalid_acks;
  fast::Fields stale = ack;
  inject(net, 0, stale);
  EXPECT_EQ(net.dev(0).counters().invalid_acks, invalid);
}

// [R-ACK-10] drops only the SACK bits that name unsent PSNs: the bit of the last PSN sent, SNXT - 1,
// still acknowledges it (mutant send_window.cpp `prefix(t.snxt - cpsn - 2)` clipped it too).
TEST(PeerTrust, R_ACK_10_ClippingASackKeepsTheBitOfTheLastSentPsn) {
  EnginePair net;
  Tap tap;
  fast::Fields ack;
  ASSERT_NO_FATAL_FAILURE(first_write_acked(net, tap, 9, &ack));

  tap.drop_data = true;
  ASSERT_EQ(write(net, 2, 32768, 4096), Result::Ok);
  net.run(net.now() + 3);  // the whole window is in flight and lost
  const auto before = net.dev(0).path_info(net.conn[0], 0);
  ASSERT_TRUE(before);
  ASSERT_GE(before->in_flight, 2u);
  ASSERT_EQ(before->suna, ack.cpsn + 1) << "the stale ACK's CPSN is the last acknowledged PSN";
  const uint32_t last_sent_bit = before->snxt - 1 - ack.cpsn - 1;  // bit i names CPSN + 1 + i

  fast::Fields f = ack;  // bits for SNXT - 1 (sent) and SNXT (never sent)
  f.sack = {};
  fast::sack_set(f.sack.data(), last_sent_bit);
  fast::sack_set(f.sack.data(), last_sent_bit + 1);
  const uint64_t clipped = net.dev(0).counters().sack_beyond_snxt;
  inject(net, 0, f);
  EXPECT_EQ(net.dev(0).counters().sack_beyond_snxt, clipped + 1);
  const auto after = net.dev(0).path_info(net.conn[0], 0);
  ASSERT_TRUE(after);
  EXPECT_LT(after->in_flight, before->in_flight) << "the bit of SNXT - 1 was dropped with the unsent one";

  // The forged bit for SNXT - 1 is believed (an ACK in the window is the peer's word; only bits for
  // unsent PSNs are refused), so that PSN's bytes never reach B; the Write still completes once.
  tap.drop_data = false;
  net.run(net.now() + 200000, [&] { return net.completions[0].size() == 2; });
  ASSERT_EQ(net.completions[0].size(), 2u);
  EXPECT_EQ(net.completions[0][1].wr_id, 2u);
}

fast::Fields control_from(const fast::Fields& real, fast::Opcode op) {
  fast::Fields f = real;
  f.opcode = uint8_t(op);
  f.reason = 0;
  f.flags = 0;
  return f;
}

// Before [R-SEC-10] a DISCONNECT from any address closed a live connection.
TEST(PeerTrust, R_SEC_10_ADisconnectFromAnotherAddressClosesNothing) {
  EnginePair net;
  net.setup();
  Tap tap;
  tap.attach(net);
  ASSERT_EQ(write(net, 1, 4096, 0), Result::Ok);
  net.run(net.now() + 2000, [&] { return net.completions[0].size() == 1; });
  const fast::Fields real = control_from(tap.fields(1), fast::Opcode::Disconnect);

  fast::Fields foreign = real;
  foreign.ipv4_src = kForeignIp;
  inject(net, 0, foreign);
  fast::Fields v6 = real;  // the right DCID over the other IP version
  v6.ipv6 = true;
  v6.ipv6_src = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 2};
  v6.ipv6_dst = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 1};
  inject(net, 0, v6);
  EXPECT_EQ(net.dev(0).counters().foreign_source, 2u);
  EXPECT_EQ(net.dev(0).connection_state(net.conn[0]), ConnState::Established);
  ASSERT_EQ(write(net, 2, 4096, 4096), Result::Ok);
  net.run(net.now() + 2000, [&] { return net.completions[0].size() == 2; });
  ASSERT_EQ(net.completions[0].size(), 2u);
  EXPECT_EQ(net.completions[0][1].status, Status::Success);

  // Canary: from the peer's address the same DISCONNECT does close.
  inject(net, 0, real);
  EXPECT_NE(net.dev(0).connection_state(net.conn[0]), ConnState::Established);
}

// Before [R-SEC-10] the first ACCEPT to arrive, from any address, took over a new connection.
TEST(PeerTrust, R_SEC_10_AnAcceptFromAnotherAddressIsIgnored) {
  EnginePair net;
  Tap tap;
  tap.opcode = fast::Opcode::Connect;
  tap.attach(net);
  bool drop_b = true;  // B's first ACCEPT is lost, so the forged one arrives first
  net.filter = [&, inner = net.filter](int from, const fast::PacketView& v) {
    const io::Fate fate = inner(from, v);
    return from == 1 && drop_b ? io::Fate::Drop : fate;
  };
  uint32_t id = 0;
  ASSERT_EQ(net.dev(0).connect(net.dev(1).config().self, &id), Result::Ok);
  net.run(net.now() + 10);
  ASSERT_FALSE(tap.last[0].empty());
  const fast::Fields connect = tap.fields(0);
  fast::Fields accept = connect;  // from "B" to A, naming A's SCID
  accept.opcode = uint8_t(fast::Opcode::Accept);
  std::swap(accept.eth_src, accept.eth_dst);
  accept.ipv4_dst = connect.ipv4_src;
  accept.ipv4_src = kForeignIp;
  accept.dcid = connect.scid;
  accept.scid = 0x5EC0;
  inject(net, 0, accept);
  EXPECT_EQ(net.dev(0).counters().foreign_source, 1u);
  EXPECT_EQ(net.dev(0).connection_state(id), ConnState::Connecting);

  drop_b = false;  // the CONNECT retry gets B's ACCEPT
  net.run(net.now() + 5000, [&] { return net.dev(0).connection_state(id) == ConnState::Established; });
  ASSERT_EQ(net.dev(0).connection_state(id), ConnState::Established);
  net.collect();
  // The connection is B's: a write lands there.
  net.register_regions();
  net.conn[0] = id;
  net.fill(0, kSrc, 4096, 3);
  ASSERT_EQ(write(net, 1, 4096, 0), Result::Ok);
  net.run(net.now() + 2000, [&] { return net.completions[0].size() == 1; });
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, Status::Success);
  EXPECT_TRUE(net.same(0, kSrc, 1, kDst, 4096));
}

// Before [R-CONN-3]'s check, an endpoint that offered 4 paths, 4 streams and 4096 B took an ACCEPT
// of 256 paths, 65535 streams and 8192 B, and allocated for them.
TEST(PeerTrust, R_CONN_3_AnAcceptAboveTheOfferIsDroppedAndTheRealOneCounts) {
  DeviceConfig a = engine_config(0);
  a.offer.window_cap = 64;  // so that one above it is still a valid Window Cap [R-HDR-26]
  EnginePair net(a);
  Tap tap;
  tap.opcode = fast::Opcode::Accept;
  tap.attach(net);
  net.filter = [&, inner = net.filter](int from, const fast::PacketView& v) {
    const io::Fate fate = inner(from, v);
    if (from == 1 && v.opcode() == fast::Opcode::Accept) return io::Fate::Drop;  // we inject them by hand
    return fate;
  };
  uint32_t id = 0;
  ASSERT_EQ(net.dev(0).connect(net.dev(1).config().self, &id), Result::Ok);
  net.run(net.now() + 10);
  ASSERT_FALSE(tap.last[1].empty());
  const fast::Fields real = tap.fields(1);
  const ConnParams offer = net.dev(0).config().offer;
  for (int k = 0; k < 4; ++k) {  // each value above the offer on its own
    fast::Fields big = real;
    if (k == 0) big.path_count = uint16_t(offer.paths + 1);
    if (k == 1) big.stream_count = uint16_t(offer.streams + 1);
    if (k == 2) big.max_payload = uint16_t(offer.max_payload + 64);
    if (k == 3) big.window_cap = uint16_t(offer.window_cap + 1);
    inject(net, 0, big);
  }
  EXPECT_EQ(net.dev(0).counters().bad_accepts, 4u);
  EXPECT_EQ(net.dev(0).connection_state(id), ConnState::Connecting);
  const uint64_t bytes_connecting = net.dev(0).memory_usage().connection_bytes;

  inject(net, 0, real);  // the real ACCEPT still completes the connection
  EXPECT_EQ(net.dev(0).connection_state(id), ConnState::Established);
  EXPECT_LE(net.dev(0).path_count(id), offer.paths);
  EXPECT_LE(net.dev(0).stream_count(id), offer.streams);
  EXPECT_LE(net.dev(0).max_payload(id), offer.max_payload);
  EXPECT_LE(net.dev(0).memory_usage().connection_bytes, bytes_connecting + MemoryUsage::connection_base_bytes() +
                                                            offer.paths * MemoryUsage::per_path_bytes() +
                                                            offer.streams * MemoryUsage::per_stream_bytes());
}

// Negotiated values are at most both offers, whoever offers what [R-CONN-3].
TEST(PeerTrust, R_CONN_3_NegotiatedValuesAreAtMostBothOffers) {
  const uint16_t paths[] = {1, 3, 8}, streams[] = {1, 4, 9}, payloads[] = {256, 1024, 8192};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      DeviceConfig a = engine_config(0), b = engine_config(1);
      a.offer = ConnParams{paths[i], streams[j], payloads[(i + j) % 3], uint16_t(16 << i)};
      b.offer = ConnParams{paths[j], streams[i], payloads[(2 * i + j) % 3], uint16_t(64 >> j)};
      EnginePair net(a, b);
      net.setup();
      ASSERT_NE(net.conn[0], 0u);
      ASSERT_NE(net.conn[1], 0u);
      for (int s = 0; s < 2; ++s) {
        Device& d = net.dev(s);
        EXPECT_EQ(d.path_count(net.conn[s]), std::min(a.offer.paths, b.offer.paths));
        EXPECT_EQ(d.stream_count(net.conn[s]), std::min(a.offer.streams, b.offer.streams));
        EXPECT_EQ(d.max_payload(net.conn[s]), std::min(a.offer.max_payload, b.offer.max_payload));
      }
    }
}

// [R-CONN-2]: with no test option set, ISNs and connection IDs are neither fixed nor counting, and
// differ between devices; a fixed random_seed reproduces them.
struct Hello {
  uint32_t scid, isn;
};
std::vector<Hello> connects(uint64_t seed, int n) {
  DeviceConfig a = engine_config(0), b = engine_config(1);
  a.isn.reset();
  a.first_conn_id.reset();
  a.random_seed = seed;
  EnginePair net(a, b);
  std::vector<Hello> out;
  net.filter = [&](int from, const fast::PacketView& v) {
    if (from == 0 && v.opcode() == fast::Opcode::Connect) out.push_back({v.scid(), v.isn()});
    return io::Fate::Deliver;
  };
  for (int i = 0; i < n; ++i) {
    uint32_t id = 0;
    EXPECT_EQ(net.dev(0).connect(net.dev(1).config().self, &id), Result::Ok);
    net.run(net.now() + 100);
  }
  return out;
}

TEST(PeerTrust, R_CONN_2_IsnsAndConnectionIdsAreUnpredictable) {
  const std::vector<Hello> x = connects(0, 16), y = connects(0, 16);
  ASSERT_EQ(x.size(), 16u);
  ASSERT_EQ(y.size(), 16u);
  std::set<uint32_t> isns, ids;
  int counting = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    isns.insert(x[i].isn);
    isns.insert(y[i].isn);
    ids.insert(x[i].scid);
    ids.insert(y[i].scid);
    EXPECT_NE(x[i].scid, 0u);
    if (i > 0 && x[i].scid - x[i - 1].scid < 16) ++counting;
  }
  EXPECT_EQ(isns.size(), 32u) << "ISNs repeat across connections or devices";
  EXPECT_EQ(ids.size(), 32u) << "connection IDs repeat across connections or devices";
  EXPECT_LT(counting, 3) << "connection IDs count up";
  // Reproducible under a seed (replays), and a different seed gives different values.
  const std::vector<Hello> s1 = connects(42, 4), s2 = connects(42, 4), s3 = connects(43, 4);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(s1[i].isn, s2[i].isn);
    EXPECT_EQ(s1[i].scid, s2[i].scid);
    EXPECT_NE(s1[i].isn, s3[i].isn);
  }
}

// [R-MEM-1] Keys are a keyed pseudo-random permutation of slot and generation: across 64 registrations
// every one of the 32 bits of lkeys and of rkeys takes both values. A weak round function (one that
// never sets some bit) would leave bits that follow the slot number linearly, so one key would tell
// another's bits.
TEST(PeerTrust, R_MEM_1_EveryBitOfTheKeysVaries) {
  EnginePair net;
  std::vector<uint8_t> mem(64 * 4096);
  uint32_t lk_or = 0, lk_and = ~0u, rk_or = 0, rk_and = ~0u;
  std::set<uint32_t> keys;
  for (int i = 0; i < 64; ++i) {
    MemoryRegion mr;
    ASSERT_EQ(net.dev(0).reg_mr(mem.data() + i * 4096, 4096, access::kRemoteWrite | access::kLocalWrite, &mr),
              Result::Ok);
    lk_or |= mr.lkey;
    lk_and &= mr.lkey;
    rk_or |= mr.rkey;
    rk_and &= mr.rkey;
    keys.insert(mr.lkey);
    keys.insert(mr.rkey);
  }
  EXPECT_EQ(keys.size(), 128u);
  EXPECT_EQ(lk_or, ~0u) << std::hex << "lkey bits never set: " << ~lk_or;
  EXPECT_EQ(lk_and, 0u) << std::hex << "lkey bits always set: " << lk_and;
  EXPECT_EQ(rk_or, ~0u) << std::hex << "rkey bits never set: " << ~rk_or;
  EXPECT_EQ(rk_and, 0u) << std::hex << "rkey bits always set: " << rk_and;
}

// [R-MEM-1] A key names its region's slot through the keyed permutation, for every slot the table
// allows (up to 2^24): a region in slot 65,536 or above (past 16 bits) is found by its lkey too.
TEST(PeerTrust, R_MEM_1_KeysOfSlotsPast16BitsResolve) {
  DeviceConfig a = engine_config(0);
  a.max_regions = (1u << 16) + 8;
  EnginePair net(a, engine_config(1));
  net.setup();
  ASSERT_NE(net.conn[0], 0u);
  std::vector<uint8_t> mem(4096);
  MemoryRegion last{};
  for (uint32_t i = 0; i < (1u << 16); ++i)
    ASSERT_EQ(net.dev(0).reg_mr(mem.data(), mem.size(), access::kLocalWrite, &last), Result::Ok) << i;
  // setup() registered slot 0; the last one above is slot 65,536.
  EXPECT_EQ(net.dev(0).post_write(net.conn[0], 0, 1, Sge{last.iova, 64, last.lkey}, EnginePair::kBase, net.mr[1].rkey),
            Result::Ok);
  net.run(net.now() + 1000, [&] { return !net.completions[0].empty(); });
  ASSERT_EQ(net.completions[0].size(), 1u);
  EXPECT_EQ(net.completions[0][0].status, Status::Success);
}

}  // namespace
}  // namespace mroce::testing
