// The impairment layer's dependency-free core: the PRNG and fate generator pinned to the outputs
// of the harness's generator (so the two stay equal), fate statistics, frame byte operations (layout,
// CE marking, corruption), the ECMP hash, and
// the online decision rules (exemption, blackholes, virtual queue).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "impair/ecmp.hpp"
#include "impair/ecn.hpp"
#include "impair/fate.hpp"
#include "impair/frame.hpp"
#include "impair/impairer.hpp"
#include "impair/prng.hpp"

using namespace mroce::impair;

namespace {

// An Ethernet/IPv4|IPv6/UDP frame with a BTH opcode byte and a valid IPv4 header checksum.
std::vector<uint8_t> make_frame(bool v6, uint8_t tos, uint16_t sport, uint8_t opcode, size_t payload = 64) {
  std::vector<uint8_t> f(14 + (v6 ? 40 : 20) + 8 + 16 + payload, 0);
  for (size_t i = 0; i < f.size(); ++i) f[i] = uint8_t(i * 7 + 3);
  store16(&f[12], v6 ? kEtherIpv6 : kEtherIpv4);
  uint8_t* ip = &f[14];
  size_t udp;
  if (v6) {
    ip[0] = uint8_t(0x60 | tos >> 4);
    ip[1] = uint8_t(tos << 4);
    ip[6] = 17;
    udp = 14 + 40;
  } else {
    ip[0] = 0x45;
    ip[1] = tos;
    store16(ip + 2, uint16_t(f.size() - 14));
    ip[9] = 17;
    store16(ip + 10, ipv4_checksum({ip, 20}));
    udp = 14 + 20;
  }
  store16(&f[udp], sport);
  store16(&f[udp + 2], 4793);
  f[udp + 8 + 1] = opcode;
  return f;
}

}  // namespace

// --- PRNG: pinned to the harness's generator (values printed by harness/netsim/prng.hpp) ---

TEST(ImpairPrng, SplitMix64PublishedValues) {
  uint64_t s = 0;
  EXPECT_EQ(splitmix64(s), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(splitmix64(s), 0x6E789E6AA1B965F4ull);
  EXPECT_EQ(mix64(1), 0x910A2DEC89025CC1ull);
}

TEST(ImpairPrng, XoshiroPinnedToHarness) {
  Prng g(42);
  EXPECT_EQ(g.next(), 0x15780B2E0C2EC716ull);
  EXPECT_EQ(g.next(), 0x6104D9866D113A7Eull);
  EXPECT_EQ(g.next(), 0xAE17533239E499A1ull);
  EXPECT_EQ(g.next(), 0xECB8AD4703B360A1ull);
  Prng z(0);
  EXPECT_EQ(z.next(), 0x99EC5F36CB75F2B4ull);
}

TEST(ImpairPrng, BoundedPinnedToHarness) {
  Prng b(7);
  for (uint64_t want : {700576u, 278751u, 839627u, 981097u, 990860u}) EXPECT_EQ(b.below(1000000), want);
  Prng r(7);
  for (uint64_t want : {170u, 128u, 184u, 199u, 200u}) EXPECT_EQ(r.range(100, 200), want);
  EXPECT_EQ(r.below(0), 0u);
  EXPECT_FALSE(r.chance_ppm(0));
  EXPECT_TRUE(r.chance_ppm(1000000));
}

// --- Fate generator ---

namespace {
FaultKnobs pinned_knobs() {
  FaultKnobs k;
  k.frames = 400;
  k.loss_ppm = 20000;
  k.ge_enter_bad_ppm = 10000;
  k.ge_leave_bad_ppm = 300000;
  k.ge_loss_bad_ppm = 500000;
  k.ge_loss_good_ppm = 1000;
  k.dup_ppm = 20000;
  k.delay_ppm = 30000;
  k.ce_ppm = 30000;
  k.corrupt_ppm = 10000;
  return k;
}
}  // namespace

// The first 24 non-Deliver fates of generate_schedule(pinned_knobs(), 4, 2024) in the harness.
TEST(FateGenerator, PinnedToHarnessSchedule) {
  struct Want {
    uint64_t index;
    const char* kind;
    uint32_t delay;
    uint16_t off;
    uint8_t x;
  };
  const std::vector<Want> want = {
      {3, "Duplicate", 11, 0, 0},      {8, "Duplicate", 3, 0, 0}, {19, "Delay", 48, 0, 0},
      {24, "MarkCe", 0, 0, 0},         {27, "Delay", 23, 0, 0},   {31, "MarkCe", 0, 0, 0},
      {76, "Drop", 0, 0, 0},           {87, "Delay", 27, 0, 0},   {95, "MarkCe", 0, 0, 0},
      {96, "Delay", 40, 0, 0},         {100, "MarkCe", 0, 0, 0},  {104, "Delay", 27, 0, 0},
      {125, "Drop", 0, 0, 0},          {135, "MarkCe", 0, 0, 0},  {146, "Duplicate", 18, 0, 0},
      {151, "Corrupt", 0, 31734, 133}, {154, "Delay", 47, 0, 0},  {157, "Delay", 26, 0, 0},
      {162, "Drop", 0, 0, 0},          {195, "Drop", 0, 0, 0},    {225, "MarkCe", 0, 0, 0},
      {226, "Drop", 0, 0, 0},          {230, "Drop", 0, 0, 0},    {231, "Delay", 3, 0, 0},
  };
  FateGenerator g(pinned_knobs(), 2024);
  size_t w = 0;
  while (w < want.size()) {
    ASSERT_LT(g.index(), 400u);
    const uint64_t k = g.index();
    const PacketFate f = g.next();
    if (f.kind == PacketFate::Deliver) continue;
    EXPECT_EQ(k, want[w].index) << "fate #" << w;
    EXPECT_EQ(fate_name(f.kind), want[w].kind) << "frame " << k;
    EXPECT_EQ(f.extra_delay_us, want[w].delay) << "frame " << k;
    EXPECT_EQ(f.corrupt_offset, want[w].off) << "frame " << k;
    EXPECT_EQ(f.corrupt_xor, want[w].x) << "frame " << k;
    ++w;
  }
}

TEST(FateGenerator, SameSeedSameSequenceOtherSeedDiffers) {
  FaultKnobs k = pinned_knobs();
  k.frames = 100000;
  FateGenerator a(k, 5), b(k, 5), c(k, 6);
  bool differs = false;
  for (int i = 0; i < 100000; ++i) {
    const PacketFate fa = a.next();
    ASSERT_EQ(fa, b.next()) << "frame " << i;
    differs |= !(fa == c.next());
  }
  EXPECT_TRUE(differs);
}

TEST(FateGenerator, DeliverFromFramesOn) {
  FaultKnobs k;
  k.frames = 10;
  k.loss_ppm = 1000000;
  FateGenerator g(k, 1);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(g.next().kind, PacketFate::Drop);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(g.next().kind, PacketFate::Deliver);
}

// A knob at zero draws nothing, so adding "ce_ppm=0" must not shift the loss pattern; a non-zero
// knob does shift it (this is what makes schedules sensitive to every knob, as in the harness).
TEST(FateGenerator, ZeroKnobDrawsNothing) {
  FaultKnobs a;
  a.frames = 5000;
  a.loss_ppm = 100000;
  FaultKnobs b = a;
  b.ce_ppm = 0;
  b.dup_gap_max_us = 99;  // not a probability: draws only when a duplicate happens
  FaultKnobs c = a;
  c.corrupt_ppm = 1;
  FateGenerator ga(a, 3), gb(b, 3), gc(c, 3);
  bool c_differs = false;
  for (int i = 0; i < 5000; ++i) {
    const auto fa = ga.next();
    EXPECT_EQ(fa, gb.next());
    c_differs |= fa.kind != gc.next().kind;
  }
  EXPECT_TRUE(c_differs);
}

namespace {
// Counts fates of each kind over n frames.
std::map<PacketFate::Kind, uint64_t> count_fates(const FaultKnobs& k, uint64_t seed, uint32_t n) {
  FateGenerator g(k, seed);
  std::map<PacketFate::Kind, uint64_t> c;
  for (uint32_t i = 0; i < n; ++i) ++c[g.next().kind];
  return c;
}
// |x - n p| within 5 binomial standard deviations.
void expect_binomial(uint64_t x, uint64_t n, double p, const char* what) {
  const double mean = double(n) * p, sd = std::sqrt(double(n) * p * (1 - p));
  EXPECT_NEAR(double(x), mean, 5 * sd) << what;
}
}  // namespace

TEST(FateGenerator, IidLossRates) {
  for (uint32_t ppm : {10000u, 100000u}) {
    FaultKnobs k;
    k.frames = 100000;
    k.loss_ppm = ppm;
    auto c = count_fates(k, 11, 100000);
    expect_binomial(c[PacketFate::Drop], 100000, ppm / 1e6, "loss");
    EXPECT_EQ(c[PacketFate::Drop] + c[PacketFate::Deliver], 100000u);
  }
}

// Gilbert-Elliott: stationary P(bad) = enter / (enter + leave); mean burst of bad frames 1/leave.
TEST(FateGenerator, GilbertElliottLossRateAndBursts) {
  FaultKnobs k;
  k.frames = 200000;
  k.ge_enter_bad_ppm = 5000;    // 0.5 %
  k.ge_leave_bad_ppm = 200000;  // 20 %: mean bad run 5 frames
  k.ge_loss_good_ppm = 0;
  k.ge_loss_bad_ppm = 1000000;  // every bad frame lost
  FateGenerator g(k, 99);
  uint64_t lost = 0, runs = 0;
  bool prev = false;
  for (uint32_t i = 0; i < k.frames; ++i) {
    const bool l = g.next().kind == PacketFate::Drop;
    lost += l;
    runs += l && !prev;
    prev = l;
  }
  const double p_bad = 0.005 / (0.005 + 0.2);
  EXPECT_NEAR(double(lost) / k.frames, p_bad, 0.2 * p_bad);
  EXPECT_NEAR(double(lost) / double(runs), 5.0, 0.75);  // bursty, unlike i.i.d. loss (mean run ~1)
}

TEST(FateGenerator, KindRatesAndParameterRanges) {
  FaultKnobs k;
  k.frames = 100000;
  k.dup_ppm = 10000;
  k.delay_ppm = 20000;
  k.delay_max_us = 50;
  k.dup_gap_max_us = 7;
  k.ce_ppm = 50000;
  k.corrupt_ppm = 5000;
  FateGenerator g(k, 17);
  std::map<PacketFate::Kind, uint64_t> c;
  for (uint32_t i = 0; i < k.frames; ++i) {
    const PacketFate f = g.next();
    ++c[f.kind];
    if (f.kind == PacketFate::Delay) {
      ASSERT_GE(f.extra_delay_us, 1u);
      ASSERT_LE(f.extra_delay_us, 50u);
    }
    if (f.kind == PacketFate::Duplicate) {
      ASSERT_GE(f.extra_delay_us, 1u);
      ASSERT_LE(f.extra_delay_us, 7u);
    }
    if (f.kind == PacketFate::Corrupt) { ASSERT_NE(f.corrupt_xor, 0); }
  }
  // Fates are exclusive and tried in order: corrupt, dup, delay, ce (each on what remains).
  const double pc = 0.005, pd = 0.995 * 0.01, pl = 0.995 * 0.99 * 0.02, pce = 0.995 * 0.99 * 0.98 * 0.05;
  expect_binomial(c[PacketFate::Corrupt], 100000, pc, "corrupt");
  expect_binomial(c[PacketFate::Duplicate], 100000, pd, "dup");
  expect_binomial(c[PacketFate::Delay], 100000, pl, "delay");
  expect_binomial(c[PacketFate::MarkCe], 100000, pce, "ce");
}

// --- Knob strings ---

// Every knob has a name: a knob string carries all of them, so each field survives a round trip even
// when it differs from its default (a knob left out of the list would silently reset).
TEST(ImpairKnobs, EveryFieldRoundTripsThroughItsName) {
  FaultKnobs k;
  k.frames = 11;
  k.loss_ppm = 12;
  k.ge_enter_bad_ppm = 13;
  k.ge_leave_bad_ppm = 14;
  k.ge_loss_good_ppm = 15;
  k.ge_loss_bad_ppm = 16;
  k.dup_ppm = 17;
  k.dup_gap_max_us = 18;
  k.delay_ppm = 19;
  k.delay_max_us = 20;
  k.ce_ppm = 21;
  k.corrupt_ppm = 22;
  k.link_failures = 23;
  k.link_from = 24;
  k.down_min_us = 25;
  k.down_max_us = 26;
  k.faults_until = 27;
  static_assert(sizeof(FaultKnobs) == 80, "FaultKnobs changed: give every field a value above");
  const std::string text = knobs_to_string(k);
  EXPECT_EQ(knobs_from_string(text), k) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '='), 17) << text;
}

// Separators (spaces, commas) may lead, repeat and trail: "seed=9, loss_ppm=5 " is two items.
TEST(ImpairKnobs, SeparatorsMayLeadRepeatAndTrail) {
  for (const char* text :
       {"seed=9 loss_ppm=5", " seed=9,loss_ppm=5 ", "seed=9, loss_ppm=5,", ",, seed=9  loss_ppm=5 ,"}) {
    ImpairConfig c;
    ASSERT_NO_THROW(c = impair_from_string(text)) << "'" << text << "'";
    EXPECT_EQ(c.seed, 9u) << "'" << text << "'";
    EXPECT_EQ(c.knobs.loss_ppm, 5u) << "'" << text << "'";
  }
  EXPECT_NO_THROW(impair_from_string(" "));
  EXPECT_NO_THROW(impair_from_string(""));
}

TEST(ImpairKnobs, StringRoundTripAndErrors) {
  FaultKnobs k = pinned_knobs();
  k.faults_until = 123456789012ull;
  EXPECT_EQ(knobs_from_string(knobs_to_string(k)), k);
  EXPECT_THROW(knobs_from_string("loss=1"), std::invalid_argument);
  EXPECT_THROW(knobs_from_string("loss_ppm=x"), std::invalid_argument);
  EXPECT_THROW(knobs_from_string("loss_ppm"), std::invalid_argument);

  const ImpairConfig c = impair_from_string(
      "seed=9 loss_ppm=10000 blackhole=49153@100-200 blackhole=50000 "
      "ce_threshold_bytes=65536 queue_rate_mbps=10000 protect_handshake=0");
  EXPECT_EQ(c.seed, 9u);
  EXPECT_EQ(c.knobs.loss_ppm, 10000u);
  EXPECT_EQ(c.knobs.frames, UINT32_MAX);  // port defaults: every frame has a fate, faults never end
  EXPECT_EQ(c.knobs.faults_until, kForever);
  ASSERT_EQ(c.blackholes.size(), 2u);
  EXPECT_EQ(c.blackholes[0], (Blackhole{49153, 100, 200}));
  EXPECT_EQ(c.blackholes[1], (Blackhole{50000, 0, kForever}));
  EXPECT_EQ(c.ce_threshold_bytes, 65536u);
  EXPECT_FALSE(c.protect_handshake);
  EXPECT_EQ(impair_from_string(impair_to_string(c), ImpairConfig{}), c);
  EXPECT_THROW(impair_from_string("blackhole=x"), std::invalid_argument);
  EXPECT_THROW(impair_from_string("bogus=1"), std::invalid_argument);
}

// --- Frame byte operations ---

// [R-ENC-3] the IPv4 header checksum stays valid after CE marking, and the incremental update
// (RFC 1624) gives the same field as recomputing it (RFC 1071).
RC_GTEST_PROP(ImpairFrame, R_ENC_3_CeMarkKeepsIpv4ChecksumValid, ()) {
  std::array<uint8_t, 20> h;
  for (auto& b : h) b = *rc::gen::arbitrary<uint8_t>();
  h[0] = uint8_t(0x45);
  h[1] = uint8_t((h[1] & 0xfc) | *rc::gen::element(1, 2));  // ECT(1) or ECT(0)
  store16(&h[10], ipv4_checksum(h));
  std::vector<uint8_t> f(14, 0);
  store16(&f[12], kEtherIpv4);
  f.insert(f.end(), h.begin(), h.end());
  f.resize(f.size() + 8);
  RC_ASSERT(ipv4_checksum_ok({&f[14], 20}));
  RC_ASSERT(mark_ce(f));
  RC_ASSERT(read_ecn(f) == Ecn::Ce);
  RC_ASSERT(ipv4_checksum_ok({&f[14], 20}));
  RC_ASSERT(load16(&f[24]) == ipv4_checksum({&f[14], 20}));
  RC_ASSERT(uint8_t(f[15] >> 2) == uint8_t(h[1] >> 2));  // DSCP untouched
}

RC_GTEST_PROP(ImpairFrame, SetTosKeepsChecksumAndRoundTrips, ()) {
  const bool v6 = *rc::gen::arbitrary<bool>();
  auto f = make_frame(v6, *rc::gen::arbitrary<uint8_t>(), 49152, 1);
  const uint8_t dscp = *rc::gen::inRange<uint8_t>(0, 64);
  const Ecn ecn = Ecn(*rc::gen::inRange(0, 4));
  RC_ASSERT(set_tos(f, dscp, ecn));
  RC_ASSERT(read_dscp(f) == dscp);
  RC_ASSERT(read_ecn(f) == ecn);
  if (!v6) RC_ASSERT(ipv4_checksum_ok({&f[14], 20}));
  if (v6) RC_ASSERT((f[14] >> 4) == 6);  // version kept
}

// The readers answer only for a frame that holds the whole traffic-class byte (16 bytes): a shorter
// one has no DSCP or ECN, and is never read past its end.
TEST(ImpairFrame, ReadersRefuseFramesWithoutATosByte) {
  for (bool v6 : {false, true}) {
    const auto whole = make_frame(v6, uint8_t(26 << 2 | 2), 49152, 1);
    for (size_t len = 0; len < 16; ++len) {
      const std::vector<uint8_t> f(whole.begin(), whole.begin() + std::ptrdiff_t(len));
      EXPECT_FALSE(read_dscp(f).has_value()) << "v6=" << v6 << " len=" << len;
      EXPECT_FALSE(read_ecn(f).has_value()) << "v6=" << v6 << " len=" << len;
    }
    const std::vector<uint8_t> f(whole.begin(), whole.begin() + 16);
    EXPECT_EQ(read_dscp(f), 26);
    EXPECT_EQ(read_ecn(f), Ecn::Ect0);
  }
}

// set_tos() answers whether it wrote: a frame too short to hold the TOS byte, or one that is not
// IPv4/IPv6, is left as it was and reported false (the caller counts it as not marked).
TEST(ImpairFrame, SetTosRefusesFramesWithoutATosByte) {
  for (bool v6 : {false, true}) {
    const auto whole = make_frame(v6, uint8_t(26 << 2 | 2), 49152, 1);
    for (size_t len = 0; len < 16; ++len) {
      std::vector<uint8_t> f(whole.begin(), whole.begin() + std::ptrdiff_t(len));
      const auto before = f;
      EXPECT_FALSE(set_tos(f, 46, Ecn::Ce)) << "v6=" << v6 << " len=" << len;
      EXPECT_EQ(f, before);
    }
    auto other = whole;
    store16(&other[12], 0x0806);  // ARP
    const auto before = other;
    EXPECT_FALSE(set_tos(other, 46, Ecn::Ce));
    EXPECT_EQ(other, before);
    auto wrong_version = whole;
    wrong_version[14] = uint8_t((v6 ? 4 : 6) << 4 | (wrong_version[14] & 0x0f));
    EXPECT_FALSE(set_tos(wrong_version, 46, Ecn::Ce)) << "v6=" << v6;
  }
}

TEST(ImpairFrame, CeOnlyOnEcnCapableFrames) {
  for (bool v6 : {false, true}) {
    for (uint8_t ecn = 0; ecn < 4; ++ecn) {
      auto f = make_frame(v6, uint8_t(26 << 2 | ecn), 49152, 1);
      const auto before = f;
      const bool marked = mark_ce(f);
      EXPECT_EQ(marked, ecn == 1 || ecn == 2) << "v6=" << v6 << " ecn=" << int(ecn);
      if (!marked) {
        EXPECT_EQ(f, before);
      } else {
        EXPECT_EQ(read_ecn(f), Ecn::Ce);
        EXPECT_EQ(read_dscp(f), 26);
      }
    }
  }
}

TEST(ImpairFrame, CorruptionStaysInsideTheIpPacket) {
  auto f = make_frame(false, 0, 49152, 1);
  for (uint32_t off = 0; off < 70000; off += 997) {
    auto g = f;
    const size_t at = corrupt_frame(g, uint16_t(off), 0);
    ASSERT_GE(at, kEthLen);
    ASSERT_LT(at, g.size());
    EXPECT_EQ(g[at], uint8_t(f[at] ^ 1));  // mask 0 acts as 0x01
  }
  std::vector<uint8_t> tiny(14, 0);
  EXPECT_EQ(corrupt_frame(tiny, 5, 0xff), 0u);
}

// A pinned example, so a change of the checksum arithmetic shows: 10.0.0.1 -> 10.0.0.2, DSCP 26
// ECT(1), checksum 0x262e; marked: TOS 0x6b, checksum 0x262c (both computed by hand, RFC 1071).
TEST(ImpairFrame, CeMarkIpv4PinnedChecksum) {
  const std::array<uint8_t, 20> ip = {0x45, 0x69, 0x00, 0x54, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                                      0x26, 0x2e, 0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02};
  std::vector<uint8_t> f(14 + 0x54, 0);
  store16(&f[12], kEtherIpv4);
  std::copy(ip.begin(), ip.end(), f.begin() + 14);
  ASSERT_TRUE(ipv4_checksum_ok({&f[14], 20}));
  const auto before = f;
  ASSERT_TRUE(mark_ce(f));
  EXPECT_EQ(f[15], 0x6b);
  EXPECT_EQ(load16(&f[24]), 0x262c);
  for (size_t i = 0; i < f.size(); ++i)
    if (i != 15 && i != 24 && i != 25) { EXPECT_EQ(f[i], before[i]) << "byte " << i; }
  EXPECT_FALSE(mark_ce(f));  // already CE: left alone
}

// [R-ENC-3] with IPv4 options (IHL 6..15): the updated checksum equals the one recomputed over the
// whole header (what the harness's network used to do), and only the ECN bits and the checksum change.
RC_GTEST_PROP(ImpairFrame, CeMarkIpv4WithOptionsEqualsRecompute, ()) {
  const size_t ihl = *rc::gen::inRange<size_t>(5, 16);
  std::vector<uint8_t> f(14 + ihl * 4 + 8 + 16);
  for (auto& b : f) b = *rc::gen::arbitrary<uint8_t>();
  store16(&f[12], kEtherIpv4);
  f[14] = uint8_t(0x40 | ihl);
  const uint8_t ecn = *rc::gen::inRange<uint8_t>(0, 4);
  f[15] = uint8_t((f[15] & 0xfc) | ecn);
  const std::span<uint8_t> hdr(&f[14], ihl * 4);
  store16(&f[24], ipv4_checksum(hdr));
  const auto before = f;
  const bool marked = mark_ce(f);
  RC_ASSERT(marked == (ecn == 1 || ecn == 2));
  if (!marked) {
    RC_ASSERT(f == before);
    return;
  }
  RC_ASSERT(read_ecn(f) == Ecn::Ce);
  RC_ASSERT(ipv4_checksum_ok(hdr));
  RC_ASSERT(load16(&f[24]) == ipv4_checksum(hdr));
  for (size_t i = 0; i < f.size(); ++i)
    if (i != 15 && i != 24 && i != 25) RC_ASSERT(f[i] == before[i]);
  RC_ASSERT((f[15] & 0xfc) == (before[15] & 0xfc));
}

// IPv6 has no header checksum: marking changes the two ECN bits of the traffic class and nothing
// else (version, DSCP, flow label kept).
RC_GTEST_PROP(ImpairFrame, CeMarkIpv6TouchesOnlyTheEcnBits, ()) {
  std::vector<uint8_t> f(14 + 40 + 8 + 16);
  for (auto& b : f) b = *rc::gen::arbitrary<uint8_t>();
  store16(&f[12], kEtherIpv6);
  f[14] = uint8_t(0x60 | (f[14] & 0x0f));
  const auto before = f;
  const Ecn ecn = *read_ecn(f);
  const bool marked = mark_ce(f);
  RC_ASSERT(marked == (ecn == Ecn::Ect0 || ecn == Ecn::Ect1));
  if (marked) {
    RC_ASSERT(read_ecn(f) == Ecn::Ce);
    RC_ASSERT(f[15] == uint8_t(before[15] | 0x30));
    RC_ASSERT(read_dscp(f) == read_dscp(before));
  }
  for (size_t i = 0; i < f.size(); ++i)
    if (i != 15) RC_ASSERT(f[i] == before[i]);
}

// Frames that are not IPv4 / IPv6 (ARP, a wrong version nibble, a truncated header) are never changed.
TEST(ImpairFrame, CeMarkLeavesOtherFramesAlone) {
  auto arp = make_frame(false, 2, 49152, 1);
  store16(&arp[12], 0x0806);
  auto v4_bad_version = make_frame(false, 2, 49152, 1);
  v4_bad_version[14] = 0x65;
  auto v6_bad_version = make_frame(true, 2, 49152, 1);
  v6_bad_version[14] = uint8_t(0x40 | (v6_bad_version[14] & 0x0f));
  std::vector<uint8_t> truncated(15, 0);
  store16(&truncated[12], kEtherIpv4);
  for (auto* f : {&arp, &v4_bad_version, &v6_bad_version, &truncated}) {
    const auto before = *f;
    EXPECT_FALSE(mark_ce(*f));
    EXPECT_EQ(*f, before);
  }
}

TEST(ImpairFrame, LayoutFindsUdpAndBth) {
  struct Case {
    bool v6;
    uint16_t sport;
    uint8_t opcode;
    size_t udp;
  };
  for (const Case c : {Case{false, 49153, 0x22, 34}, Case{true, 50000, 0x01, 54}}) {
    const auto f = make_frame(c.v6, 0, c.sport, c.opcode);
    const auto l = frame_layout(f);
    ASSERT_TRUE(l);
    EXPECT_EQ(l->ipv6, c.v6);
    EXPECT_EQ(l->udp, c.udp);
    EXPECT_EQ(l->bth, c.udp + 8);
    EXPECT_EQ(l->sport, c.sport);
    EXPECT_EQ(l->dport, 4793);
    EXPECT_EQ(l->opcode, c.opcode);
    // The opcode needs two BTH bytes; the UDP header is required.
    EXPECT_FALSE(frame_layout(std::span<const uint8_t>(f.data(), c.udp + 9))->opcode);
    EXPECT_FALSE(frame_layout(std::span<const uint8_t>(f.data(), c.udp + 7)));
  }
  EXPECT_FALSE(frame_layout(std::span<const uint8_t>(make_frame(false, 0, 1, 1).data(), 13)));
}

// --- ECMP hash (impl/impair/ecmp.hpp: the harness's links and the DPDK planes) ---

// Pinned: MurmurHash3's fmix32 (fmix32(1) = 0x514e28b7 is its published value). A change of the
// hash moves routes to other links and so changes every recorded trace: it must show here.
TEST(ImpairEcmp, HashIsPinnedFmix32) {
  static_assert(ecmp_hash(0) == 0);
  EXPECT_EQ(ecmp_hash(1), 0x514e28b7u);
  EXPECT_EQ(ecmp_hash(4793), 0xe4c1c358u);
  EXPECT_EQ(ecmp_hash(49152), 0x4ae34609u);
  EXPECT_EQ(ecmp_hash(49153), 0x7e8c174bu);
  EXPECT_EQ(ecmp_hash(50000), 0x1d54feeau);
  EXPECT_EQ(ecmp_hash(65535), 0xa23bae67u);
  EXPECT_EQ(ecmp_link(49152, 4), 1);
  EXPECT_EQ(ecmp_link(49153, 4), 3);
  EXPECT_EQ(ecmp_link(50000, 4), 2);
  EXPECT_EQ(ecmp_link(50000, 3), 1);
  EXPECT_EQ(ecmp_link(12345, 1), 0);
  EXPECT_EQ(ecmp_link(12345, 0), 0);  // no links: link 0, no division by zero
}

// The ephemeral source ports (the routes the engine draws) spread evenly over any link count, and
// the next port (a re-pathed route) stays on the same link only about 1 time in `links`.
TEST(ImpairEcmp, SpreadsSourcePorts) {
  for (uint16_t links : {2, 3, 4, 8, 16}) {
    std::vector<int> hist(links, 0);
    for (uint32_t sport = 49152; sport <= 65535; ++sport) ++hist[ecmp_link(uint16_t(sport), links)];
    const double mean = 16384.0 / links;
    for (int h : hist) EXPECT_NEAR(h, mean, mean * 0.1) << links << " links";
  }
  int same = 0;
  for (uint32_t sport = 49152; sport < 65535; ++sport)
    same += ecmp_link(uint16_t(sport), 4) == ecmp_link(uint16_t(sport + 1), 4);
  EXPECT_NEAR(same, 16383 / 4, 16383 / 4 * 0.15);
}

// --- Online decisions ---

TEST(Impairer, ControlFramesExemptWhenProtected) {
  ImpairConfig c = ImpairConfig::for_ports();
  c.knobs.loss_ppm = 1000000;
  Impairer on(c);
  c.protect_handshake = false;
  Impairer off(c);
  for (uint8_t op : {0x01, 0x10, 0x20, 0x24, 0x25}) {
    auto f = make_frame(false, 0, 49152, op);
    const bool control = op >= 0x20 && op <= 0x24;
    EXPECT_EQ(on.decide(0, f, uint32_t(f.size())).dropped(), !control) << int(op);
    EXPECT_TRUE(off.decide(0, f, uint32_t(f.size())).dropped()) << int(op);
  }
  EXPECT_EQ(on.stats().exempt, 2u);
}

// A Corrupt fate flips one byte of the IP packet; a runt frame with no byte past the Ethernet header
// is left whole (corrupt_at 0), and a byte beyond the part the caller passed is left to the caller.
TEST(Impairer, CorruptionNeverTouchesTheEthernetHeader) {
  ImpairConfig c = ImpairConfig::for_ports();
  c.knobs.corrupt_ppm = 1000000;
  c.protect_handshake = false;
  Impairer imp(c);
  const auto whole = make_frame(false, 0, 49152, 0x01);
  for (size_t len = 1; len <= whole.size(); ++len) {
    std::vector<uint8_t> f(whole.begin(), whole.begin() + std::ptrdiff_t(len));
    const Decision d = imp.decide(0, f, uint32_t(len));
    ASSERT_EQ(d.fate.kind, PacketFate::Corrupt);
    size_t changed = 0, first = 0;
    for (size_t i = 0; i < len; ++i)
      if (f[i] != whole[i] && !changed++) first = i;
    if (len <= 14) {
      EXPECT_EQ(d.corrupt_at, 0u) << "len " << len;
      EXPECT_EQ(changed, 0u) << "len " << len;
    } else {
      EXPECT_EQ(changed, 1u) << "len " << len;
      EXPECT_EQ(first, d.corrupt_at) << "len " << len;
      EXPECT_GE(d.corrupt_at, 14u);
    }
    EXPECT_FALSE(d.corrupt_pending);
  }
  // Only the first 20 bytes passed: an offset beyond them is the caller's to flip.
  bool pending = false;
  for (int k = 0; k < 50 && !pending; ++k) {
    auto f = whole;
    const Decision d = imp.decide(0, std::span<uint8_t>(f.data(), 20), uint32_t(f.size()));
    pending = d.corrupt_pending;
    if (pending) { EXPECT_GE(d.corrupt_at, 20u); }
    EXPECT_TRUE(std::equal(f.begin() + 20, f.end(), whole.begin() + 20));
  }
  EXPECT_TRUE(pending);
}

TEST(Impairer, FaultsStopAtFaultsUntilAndIndexStillAdvances) {
  ImpairConfig c = ImpairConfig::for_ports();
  c.knobs.loss_ppm = 1000000;
  c.knobs.faults_until = 1000;
  Impairer imp(c);
  auto f = make_frame(false, 0, 49152, 1);
  EXPECT_TRUE(imp.decide(999, f, uint32_t(f.size())).dropped());
  const Decision d = imp.decide(1000, f, uint32_t(f.size()));
  EXPECT_FALSE(d.dropped());
  EXPECT_EQ(d.reason, Decision::Exempt);
  EXPECT_EQ(d.index, 1u);
}

TEST(Impairer, BlackholeBySourcePortAndTime) {
  ImpairConfig c = impair_from_string("blackhole=49153@100-200");
  Impairer imp(c);
  auto a = make_frame(false, 0, 49152, 1), b = make_frame(true, 0, 49153, 1);
  EXPECT_FALSE(imp.decide(150, a, uint32_t(a.size())).dropped());
  EXPECT_FALSE(imp.decide(99, b, uint32_t(b.size())).dropped());
  EXPECT_EQ(imp.decide(100, b, uint32_t(b.size())).reason, Decision::Blackholed);
  EXPECT_EQ(imp.decide(199, b, uint32_t(b.size())).reason, Decision::Blackholed);
  EXPECT_FALSE(imp.decide(200, b, uint32_t(b.size())).dropped());
  imp.set_blackhole(49152, true, 300);
  EXPECT_TRUE(imp.decide(300, a, uint32_t(a.size())).dropped());
  imp.set_blackhole(49152, false, 400);
  EXPECT_FALSE(imp.decide(400, a, uint32_t(a.size())).dropped());
  EXPECT_EQ(imp.stats().blackholed, 3u);
}

// Step marking: a 1000 Mb/s bottleneck (125 bytes/µs) fed 1000-byte frames every 4 µs (2 Gb/s)
// builds a queue; frames above the threshold get CE, the queue never exceeds the limit.
TEST(Impairer, VirtualQueueMarksAboveThresholdAndTailDrops) {
  ImpairConfig c = impair_from_string("queue_rate_mbps=1000 ce_threshold_bytes=20000 queue_limit_bytes=40000");
  Impairer imp(c);
  uint64_t marked = 0, dropped = 0, first_mark = 0;
  for (uint64_t i = 0; i < 200; ++i) {
    auto f = make_frame(false, 26 << 2 | 2, 49152, 1, 1000 - 58);
    ASSERT_EQ(f.size(), 1000u);
    const Decision d = imp.decide(i * 4, f, 1000);
    if (d.reason == Decision::TailDrop) ++dropped;
    if (d.queue_ce) {
      EXPECT_EQ(read_ecn(f), Ecn::Ce);
      EXPECT_TRUE(ipv4_checksum_ok({&f[14], 20}));
      if (!marked) first_mark = i;
      ++marked;
    }
    EXPECT_LE(imp.queue_depth_bytes(), 40000u);
  }
  // Net growth 500 bytes per frame: depth passes 20000 after ~40 frames, 40000 after ~80.
  EXPECT_NEAR(double(first_mark), 40, 3);
  EXPECT_GT(marked, 30u);
  EXPECT_GT(dropped, 50u);
  EXPECT_EQ(imp.stats().tail_dropped, dropped);
}

TEST(Impairer, ApplyBytesDuplicatesAndDelays) {
  ImpairConfig c = impair_from_string("dup_ppm=1000000 dup_gap_max_us=1");
  Impairer dup(c);
  std::vector<TimedFrame> out;
  auto f = make_frame(false, 0, 49152, 1);
  apply_bytes(dup, 10, f, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], (TimedFrame{10, f}));
  EXPECT_EQ(out[1], (TimedFrame{11, f}));
  out.clear();
  Impairer del(impair_from_string("delay_ppm=1000000 delay_max_us=5"));
  apply_bytes(del, 10, f, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_GE(out[0].release_us, 11u);
  EXPECT_LE(out[0].release_us, 15u);
}

TEST(DelayLine, ReleasesInTimeThenInsertionOrder) {
  DelayLine<int> d(4);
  EXPECT_TRUE(d.push(30, 1));
  EXPECT_TRUE(d.push(10, 2));
  EXPECT_TRUE(d.push(30, 3));
  EXPECT_TRUE(d.push(20, 4));
  EXPECT_FALSE(d.push(5, 5));  // full
  EXPECT_EQ(d.next_release(), 10u);
  int x;
  EXPECT_FALSE(d.pop_due(9, x));
  std::vector<int> got;
  while (d.pop_due(30, x)) got.push_back(x);
  EXPECT_EQ(got, (std::vector<int>{2, 4, 1, 3}));
  EXPECT_EQ(d.next_release(), kForever);
}
