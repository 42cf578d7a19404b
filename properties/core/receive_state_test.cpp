// PathReceiveState against the std::set reference receiver ([R-PSN-3], [R-HDR-19], [R-HDR-20],
// [R-ACK-2] c/d), with arrivals that duplicate, reorder, leave gaps, jump out of window and wrap 2^32.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "core/sack_bitmap.hpp"
#include "reference.hpp"

namespace mc = mroce::core;
using mc::Arrival;
using mc::PathReceiveState;

namespace {

// Starting ISNs: most in the last 256 values before 2^32 (denser in the last 32, so that short runs
// cross 2^32 too), some 0, the rest anywhere.
rc::Gen<std::uint32_t> isn_gen() {
  return rc::gen::weightedOneOf<std::uint32_t>({
      {3, rc::gen::map(rc::gen::inRange<std::uint32_t>(0, 32), [](std::uint32_t k) { return 0xFFFFFFE0u + k; })},
      {2, rc::gen::map(rc::gen::inRange<std::uint32_t>(0, 256), [](std::uint32_t k) { return 0xFFFFFF00u + k; })},
      {1, rc::gen::just<std::uint32_t>(0)},
      {3, rc::gen::arbitrary<std::uint32_t>()},
  });
}

// Offsets from the current CPSN: often the next PSN (in order), mostly just ahead (reordering, gaps,
// duplicates of SACKed PSNs),
// some at/behind CPSN (old duplicates), some at and past the window edge, some anywhere.
rc::Gen<std::uint32_t> offset_gen() {
  return rc::gen::weightedOneOf<std::uint32_t>({
      {6, rc::gen::just<std::uint32_t>(1)},
      {8, rc::gen::inRange<std::uint32_t>(1, 6)},
      {4, rc::gen::inRange<std::uint32_t>(1, 257)},
      {1, rc::gen::inRange<std::uint32_t>(250, 270)},
      {1, rc::gen::map(rc::gen::inRange<std::uint32_t>(0, 300), [](std::uint32_t k) { return 0u - k; })},
      {1, rc::gen::map(rc::gen::inRange<std::uint32_t>(0, 4), [](std::uint32_t k) { return 0x7FFFFFFEu + k; })},
      {1, rc::gen::arbitrary<std::uint32_t>()},
  });
}

// Full state comparison: CPSN, every bitmap bit against the set, and the [R-HDR-20] invariant.
void check_same(const PathReceiveState& s, const mc::ref::Receiver& r) {
  RC_ASSERT(s.cpsn == r.cpsn);
  RC_ASSERT(!s.bits.test(0));  // [R-HDR-20] bit 0 (CPSN + 1) is never received
  for (unsigned i = 0; i < 256; ++i)
    RC_ASSERT(s.bits.test(i) == (r.after.count(static_cast<std::uint32_t>(r.cpsn + 1u + i)) == 1));
  RC_ASSERT(s.bits.count() == r.after.size());  // nothing received lies outside the bitmap
}

}  // namespace

TEST(CorePathReceiveState, R_HDR_19_StartsAtIsnMinusOne) {
  for (std::uint32_t isn : {0u, 1u, 0xFFFFFFFFu, 0xFFFFFF00u, 0x80000000u}) {
    const auto s = PathReceiveState::starting_at(isn);
    EXPECT_EQ(s.cpsn, isn - 1u);
    EXPECT_TRUE(s.bits.empty());
    EXPECT_EQ(s.classify(isn), Arrival::Accepted);
    EXPECT_EQ(s.classify(isn - 1u), Arrival::Duplicate);
    EXPECT_EQ(s.classify(isn + 255u), Arrival::Accepted);
    EXPECT_EQ(s.classify(isn + 256u), Arrival::OutOfWindow);
  }
  EXPECT_EQ(PathReceiveState{}.cpsn, 0xFFFFFFFFu);
}

RC_GTEST_PROP(CorePathReceiveState, R_PSN_3_MatchesSetReferenceAcrossWrap, ()) {
  const std::uint32_t isn = *isn_gen();
  const auto offsets = *rc::gen::container<std::vector<std::uint32_t>>(offset_gen());
  PathReceiveState s = PathReceiveState::starting_at(isn);
  mc::ref::Receiver r{isn - 1u, {}};
  int accepted = 0, duplicate = 0, outside = 0;
  for (std::uint32_t off : offsets) {
    const std::uint32_t psn = r.cpsn + off;
    const PathReceiveState before = s;
    const Arrival expected = r.accept(psn);
    RC_ASSERT(s.classify(psn) == expected);
    mc::AcceptDetail d;
    const Arrival got = s.accept(psn, d);
    RC_ASSERT(got == expected);
    (got == Arrival::Accepted ? accepted : got == Arrival::Duplicate ? duplicate : outside)++;
    if (got == Arrival::Accepted) {
      RC_ASSERT(d.advanced == s.cpsn - before.cpsn);
      // [R-ACK-2] (c) and (d) against H found by a plain scan of the bitmap before: the
      // distance past CPSN of the highest PSN received, 0 when nothing was SACKed.
      std::uint32_t highest = 0;
      for (std::uint32_t i = 0; i < 256; ++i)
        if (before.bits.test(i)) highest = i + 1;
      const std::uint32_t distance = psn - before.cpsn;
      RC_ASSERT(d.opened_gap == (distance > highest + 1));  // [R-ACK-2](c)
      RC_ASSERT(d.filled_gap == (distance < highest));      // [R-ACK-2](d)
      if (d.advanced > 1) RC_ASSERT(d.filled_gap);          // the old (d) is a case of the new one
      RC_ASSERT(s.received(psn));
    } else {
      // Duplicates and out-of-window packets change no state ([R-PSN-3], [R-REL-8]).
      RC_ASSERT(s.cpsn == before.cpsn);
      RC_ASSERT(s.bits == before.bits);
      RC_ASSERT(d.advanced == 0u && !d.opened_gap && !d.filled_gap);
    }
    check_same(s, r);
  }
  // Coverage, printed by rapidcheck: runs whose CPSN crossed 2^32, and which outcomes occurred.
  RC_TAG(s.cpsn < isn - 1u ? "cpsn wrapped" : "no wrap", accepted > 0, duplicate > 0, outside > 0);
}

// A sender-like schedule: every PSN of a long run arrives, shuffled inside blocks no wider than the
// window, with duplicates; CPSN must end exactly after the last PSN, across 2^32.
RC_GTEST_PROP(CorePathReceiveState, R_PSN_3_ReorderedRunCompletesAcrossWrap, ()) {
  const std::uint32_t isn = *isn_gen();
  const auto count = *rc::gen::inRange<std::uint32_t>(1, 2000);
  const auto block = *rc::gen::inRange<std::uint32_t>(1, 257);
  const auto seed = *rc::gen::arbitrary<std::uint32_t>();
  std::mt19937 rng(seed);
  PathReceiveState s = PathReceiveState::starting_at(isn);
  mc::ref::Receiver r{isn - 1u, {}};
  for (std::uint32_t base = 0; base < count; base += block) {
    std::vector<std::uint32_t> order;
    for (std::uint32_t k = base; k < std::min(count, base + block); ++k) order.push_back(isn + k);
    const std::size_t n = order.size();
    for (std::size_t k = 0; k < n / 4; ++k) order.push_back(order[rng() % n]);  // duplicates
    std::shuffle(order.begin(), order.end(), rng);
    for (std::uint32_t psn : order) {
      RC_ASSERT(s.accept(psn) == r.accept(psn));
      check_same(s, r);
    }
  }
  RC_ASSERT(s.cpsn == isn + count - 1u);
  RC_ASSERT(s.bits.empty());
}

// [R-ACK-2] (c) and (d), A-34: only the packet that opens a gap and the one that lands below the
// highest received PSN draw an ACK at once; one that extends the run above a gap does not.
TEST(CorePathReceiveState, R_ACK_2_OpensAndFillsGapsNotTheRunAbove) {
  struct Step {
    std::uint32_t psn;
    bool opened, filled;
  };
  // PSN 0 and 3 lost: 1 opens, 2 extends, 4 opens, 5 extends, 3 fills (above the hole at 0),
  // 0 fills (CPSN jumps to 5), 6 arrives in order.
  const Step steps[] = {{1, true, false}, {2, false, false}, {4, true, false}, {5, false, false},
                        {3, false, true}, {0, false, true},  {6, false, false}};
  for (std::uint32_t isn : {0u, 0xFFFFFFFCu}) {
    PathReceiveState s = PathReceiveState::starting_at(isn);
    for (const Step& st : steps) {
      mc::AcceptDetail d;
      ASSERT_EQ(s.accept(isn + st.psn, d), Arrival::Accepted) << st.psn;
      EXPECT_EQ(d.opened_gap, st.opened) << "psn " << st.psn;
      EXPECT_EQ(d.filled_gap, st.filled) << "psn " << st.psn;
    }
    EXPECT_EQ(s.cpsn, isn + 6u);
  }
}

TEST(CorePathReceiveState, R_PSN_3_FullWindowThenAdvanceAll) {
  // Fill indices 1..255 (everything but CPSN + 1), then the missing one: CPSN jumps by 256.
  for (std::uint32_t isn : {0u, 0xFFFFFF00u, 0xFFFFFF80u, 0xFFFFFFFFu}) {
    PathReceiveState s = PathReceiveState::starting_at(isn);
    for (std::uint32_t k = 1; k < 256; ++k) ASSERT_EQ(s.accept(isn + k), Arrival::Accepted) << k;
    EXPECT_EQ(s.bits.count(), 255u);
    EXPECT_EQ(s.classify(isn + 256u), Arrival::OutOfWindow);
    mc::AcceptDetail d;
    EXPECT_EQ(s.accept(isn, d), Arrival::Accepted);
    EXPECT_EQ(d.advanced, 256u);
    EXPECT_FALSE(d.opened_gap);
    EXPECT_TRUE(d.filled_gap);
    EXPECT_EQ(s.cpsn, isn + 255u);
    EXPECT_TRUE(s.bits.empty());
    EXPECT_EQ(s.classify(isn + 511u), Arrival::Accepted);
    EXPECT_EQ(s.classify(isn + 512u), Arrival::OutOfWindow);
  }
}

TEST(CorePathReceiveState, R_PSN_3_HalfwayPsnIsOutOfWindow) {
  // (p - CPSN) = 2^31 is neither before nor after CPSN ([R-PSN-1]): not a duplicate, so dropped.
  const auto s = PathReceiveState::starting_at(0x12345678u);
  EXPECT_EQ(s.classify(s.cpsn + 0x80000000u), Arrival::OutOfWindow);
  EXPECT_EQ(s.classify(s.cpsn + 0x80000001u), Arrival::Duplicate);
  EXPECT_EQ(s.classify(s.cpsn + 0x7FFFFFFFu), Arrival::OutOfWindow);
}
