// The impairment layer and the in-memory harness must agree frame for frame, so that a run on DPDK
// ports replays in memory from (seed, knobs) and the other way round: same fate sequences
// (FateGenerator vs generate_schedule) and same frame treatment (Impairer/apply_bytes vs
// Network::enter) for random knobs, seeds and frames.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <vector>

#include "impair/impairer.hpp"
#include "netsim/generate.hpp"
#include "netsim/network.hpp"

namespace h = mroce::harness;
namespace im = mroce::impair;

namespace {

// Random knobs over the whole range the generator reads (each probability often 0, to check that
// zero knobs skip their draws identically).
im::FaultKnobs gen_knobs() {
  auto ppm = [] {
    return *rc::gen::oneOf(rc::gen::just<uint32_t>(0), rc::gen::inRange<uint32_t>(0, 1000001),
                           rc::gen::inRange<uint32_t>(0, 50000));
  };
  im::FaultKnobs k;
  k.frames = *rc::gen::inRange<uint32_t>(0, 3000);
  k.loss_ppm = ppm();
  k.ge_enter_bad_ppm = ppm();
  k.ge_leave_bad_ppm = ppm();
  k.ge_loss_good_ppm = ppm();
  k.ge_loss_bad_ppm = ppm();
  k.dup_ppm = ppm();
  k.dup_gap_max_us = *rc::gen::inRange<uint32_t>(0, 100);
  k.delay_ppm = ppm();
  k.delay_max_us = *rc::gen::inRange<uint32_t>(0, 1000);
  k.ce_ppm = ppm();
  k.corrupt_ppm = ppm();
  return k;
}

h::FaultKnobs to_harness(const im::FaultKnobs& k) {
  // Through the shared text form: also checks that the key names agree.
  return h::knobs_from_string(im::knobs_to_string(k));
}

}  // namespace

RC_GTEST_PROP(ImpairVsHarness, FateSequenceEqualsGenerateSchedule, ()) {
  const im::FaultKnobs k = gen_knobs();
  const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
  const h::Schedule s = h::generate_schedule(to_harness(k), 4, seed);
  RC_ASSERT(s.fates.size() == k.frames);
  im::FateGenerator g(k, seed);
  for (uint32_t i = 0; i < k.frames + 10; ++i) {
    const im::PacketFate f = g.next();
    const h::PacketFate want = i < s.fates.size() ? s.fates[i] : h::PacketFate{};
    RC_ASSERT(int(f.kind) == int(want.kind));
    RC_ASSERT(f.extra_delay_us == want.extra_delay_us);
    RC_ASSERT(f.corrupt_offset == want.corrupt_offset);
    RC_ASSERT(f.corrupt_xor == want.corrupt_xor);
    RC_ASSERT(im::fate_name(f.kind) == h::fate_name(want.kind));
  }
}

TEST(ImpairVsHarness, KnobTextIsInterchangeable) {
  im::FaultKnobs k;
  k.loss_ppm = 1;
  k.ge_leave_bad_ppm = 2;
  k.faults_until = 3;
  k.down_max_us = 4;
  EXPECT_EQ(h::knobs_to_string(to_harness(k)), im::knobs_to_string(k));
  EXPECT_EQ(im::knobs_to_string(im::knobs_from_string(h::knobs_to_string(h::FaultKnobs{}))),
            h::knobs_to_string(h::FaultKnobs{}));
}

// Frame by frame: what leaves the impaired link (bytes and times) equals what the harness's network
// delivers with a zero base delay and all links up.
RC_GTEST_PROP(ImpairVsHarness, FrameTreatmentEqualsNetworkEnter, ()) {
  im::FaultKnobs k = gen_knobs();
  k.frames = *rc::gen::inRange<uint32_t>(0, 300);
  // Faults end at a random time (often never), with the same meaning on both sides.
  k.faults_until = *rc::gen::oneOf(rc::gen::just<uint64_t>(uint64_t(h::kNever)), rc::gen::inRange<uint64_t>(0, 4000));
  const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
  const bool protect = *rc::gen::arbitrary<bool>();
  h::NetConfig nc;
  nc.base_delay_us = 0;
  nc.links = 1;
  nc.faults_until = k.faults_until;  // what the harness's callers copy from the knobs
  nc.protect_handshake = protect;
  h::Network net(nc, h::generate_schedule(to_harness(k), 1, seed));
  im::ImpairConfig c;
  c.knobs = k;
  c.seed = seed;
  c.protect_handshake = protect;
  im::Impairer imp(c);
  uint64_t now = 0;
  for (uint32_t i = 0; i < k.frames + 5; ++i) {
    now += *rc::gen::inRange<uint64_t>(0, 20);
    // A frame with valid outer headers (IPv4 with checksum, or IPv6), ECN and opcode random.
    const bool v6 = *rc::gen::arbitrary<bool>();
    const size_t len = (v6 ? 62 : 42) + 18 + *rc::gen::inRange<size_t>(0, 200);
    std::vector<uint8_t> f(len);
    for (auto& b : f) b = *rc::gen::arbitrary<uint8_t>();
    im::store16(&f[12], v6 ? im::kEtherIpv6 : im::kEtherIpv4);
    if (v6) {
      f[14] = uint8_t(0x60 | (f[14] & 0x0f));
    } else {
      f[14] = 0x45;
      im::store16(&f[24], im::ipv4_checksum({&f[14], 20}));
    }
    f[(v6 ? 62 : 42) + 1] = *rc::gen::element<uint8_t>(0x01, 0x02, 0x10, 0x20, 0x22, 0x24);
    const auto e = net.enter(now, h::Side::A, f);
    std::vector<im::TimedFrame> out;
    const im::Decision d = im::apply_bytes(imp, now, f, out);
    RC_ASSERT(d.index == e.index);
    RC_ASSERT(int(d.fate.kind) == int(e.fate.kind));
    RC_ASSERT(d.ce_marked == e.ce_marked);
    RC_ASSERT(out.size() == e.copies.size());
    for (size_t j = 0; j < out.size(); ++j) {
      RC_ASSERT(out[j].release_us == e.copies[j].arrive);
      RC_ASSERT(out[j].frame == e.copies[j].frame);
    }
  }
}
