// [R-PSN-1], [R-PSN-3], [R-PSN-4], [R-HDR-20] index mappings of core/serial.hpp against the spec's
// wording (reference.hpp).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "core/serial.hpp"
#include "reference.hpp"

namespace mc = mroce::core;

namespace {

constexpr std::uint32_t kHalf = 0x80000000u;

// Values around every boundary serial arithmetic has: 0, 2^31, 2^32 - 1 and their neighbours.
const std::vector<std::uint32_t> kEdges = {0u,          1u,          2u,          255u,        256u,
                                           257u,        0x7FFFFEFFu, 0x7FFFFFFFu, 0x80000000u, 0x80000001u,
                                           0xFFFFFEFFu, 0xFFFFFF00u, 0xFFFFFF01u, 0xFFFFFFFEu, 0xFFFFFFFFu};

// Distances d for pairs (a, a + d): the window and span edges, and both sides of 2^31.
const std::vector<std::uint32_t> kDistances = {0u,          1u,          2u,          255u,        256u,
                                               257u,        0x7FFFFFFEu, 0x7FFFFFFFu, kHalf,       0x80000001u,
                                               0xFFFFFEFFu, 0xFFFFFF00u, 0xFFFFFF01u, 0xFFFFFFFEu, 0xFFFFFFFFu};

// Distances skewed toward the interesting ones, for the random properties.
rc::Gen<std::uint32_t> distance_gen() {
  return rc::gen::weightedOneOf<std::uint32_t>({
      {3, rc::gen::inRange<std::uint32_t>(0, 600)},
      {3, rc::gen::map(rc::gen::inRange<std::uint32_t>(0, 600), [](std::uint32_t k) { return 0u - k; })},
      {2, rc::gen::map(rc::gen::inRange<std::uint32_t>(0, 600), [](std::uint32_t k) { return kHalf - 300u + k; })},
      {2, rc::gen::arbitrary<std::uint32_t>()},
  });
}

}  // namespace

TEST(CoreSerial, R_PSN_1_EdgeValuesMatchRfc1982) {
  for (std::uint32_t a : kEdges) {
    for (std::uint32_t d : kDistances) {
      const std::uint32_t b = a + d;
      SCOPED_TRACE(testing::Message() << "a=" << a << " d=" << d);
      const bool expected = d >= 1 && d <= 0x7FFFFFFFu;  // [R-PSN-1] a < a + d iff d in [1, 2^31 - 1]
      EXPECT_EQ(mc::serial_lt(a, b), expected);
      EXPECT_EQ(mc::serial_lt(a, b), mc::ref::serial_lt(a, b));
      EXPECT_EQ(mc::serial_le(a, b), mc::ref::serial_le(a, b));
    }
  }
}

TEST(CoreSerial, R_PSN_1_HalfwayIsIncomparable) {
  for (std::uint32_t a : kEdges) {
    const std::uint32_t b = a + kHalf;
    EXPECT_FALSE(mc::serial_lt(a, b)) << a;
    EXPECT_FALSE(mc::serial_lt(b, a)) << a;
    EXPECT_FALSE(mc::serial_le(a, b)) << a;
  }
}

RC_GTEST_PROP(CoreSerial, R_PSN_1_MatchesRfc1982, ()) {
  const auto a = *rc::gen::arbitrary<std::uint32_t>();
  const auto d = *distance_gen();
  const std::uint32_t b = a + d;
  RC_ASSERT(mc::serial_lt(a, b) == mc::ref::serial_lt(a, b));
  RC_ASSERT(mc::serial_le(a, b) == mc::ref::serial_le(a, b));
  RC_ASSERT(!(mc::serial_lt(a, b) && mc::serial_lt(b, a)));
}

TEST(CoreSerial, PsnOperatorsFollowSerialOrder) {
  const mc::Psn top(0xFFFFFFFFu);
  const mc::Psn zero(0u);
  EXPECT_TRUE(top < zero);  // wraparound: 2^32 - 1 precedes 0
  EXPECT_TRUE(zero > top);
  EXPECT_TRUE(top <= zero);
  EXPECT_TRUE(zero >= top);
  EXPECT_FALSE(zero < top);
  EXPECT_TRUE(top <= top);
  EXPECT_FALSE(top < top);
  EXPECT_EQ(top + 1u, zero);
  EXPECT_EQ(zero - 1u, top);
  EXPECT_EQ(zero - top, 1u);
  EXPECT_EQ(top - zero, 0xFFFFFFFFu);
  mc::Psn p = top;
  EXPECT_EQ(p++, top);
  EXPECT_EQ(p, zero);
  EXPECT_EQ(++p, mc::Psn(1u));
  p += 255u;
  EXPECT_EQ(p.value(), 256u);
  const mc::Psn far(kHalf);
  EXPECT_FALSE(zero < far);
  EXPECT_FALSE(far < zero);
}

TEST(CoreSerial, R_PSN_3_ReceiveWindowEdges) {
  for (std::uint32_t c : kEdges) {
    for (std::uint32_t d : kDistances) {
      const std::uint32_t p = c + d;
      SCOPED_TRACE(testing::Message() << "cpsn=" << c << " d=" << d);
      EXPECT_EQ(mc::in_receive_window(c, p), d >= 1 && d <= 256);
      EXPECT_EQ(mc::in_receive_window(c, p), mc::ref::in_window(c, p));
    }
  }
}

RC_GTEST_PROP(CoreSerial, R_PSN_3_WindowMatchesSpecAndIndexIsInMap, ()) {
  const auto c = *rc::gen::arbitrary<std::uint32_t>();
  const std::uint32_t p = c + *distance_gen();
  RC_ASSERT(mc::in_receive_window(c, p) == mc::ref::in_window(c, p));
  if (mc::in_receive_window(c, p)) {
    const std::uint32_t i = mc::sack_index(c, p);
    RC_ASSERT(i < 256u);
    RC_ASSERT(static_cast<std::uint32_t>(c + 1u + i) == p);  // [R-HDR-20] bit i is PSN CPSN + 1 + i
    RC_ASSERT(mc::sack_word(i) * 64u + mc::sack_bit(i) == i);
  } else {
    // Outside the window a PSN is either at/before CPSN (duplicate) or beyond: never both.
    RC_ASSERT(!(mc::at_or_before(c, p) && mc::ref::in_window(c, p)));
  }
}

TEST(CoreSerial, R_PSN_4_SendSpanEdges) {
  for (std::uint32_t s : kEdges) {
    for (std::uint32_t d : kDistances) {
      const std::uint32_t p = s + d;
      SCOPED_TRACE(testing::Message() << "suna=" << s << " d=" << d);
      EXPECT_EQ(mc::within_send_span(s, p), mc::ref::serial_lt(p, static_cast<std::uint32_t>(s + 256u)));
    }
    for (std::uint32_t d = 0; d < 256; ++d) EXPECT_TRUE(mc::within_send_span(s, s + d)) << s << "+" << d;
    EXPECT_FALSE(mc::within_send_span(s, s + 256u)) << s;
  }
}

TEST(CoreSerial, R_HDR_20_WireIndexMappingIsBijective) {
  std::set<std::pair<std::uint32_t, std::uint32_t>> seen;
  for (std::uint32_t i = 0; i < 256; ++i) {
    const std::uint32_t byte = mc::wire_byte_index(i);
    const std::uint32_t mask = mc::wire_bit_mask(i);
    EXPECT_EQ(byte, i / 8);
    EXPECT_EQ(mask, 0x80u >> (i % 8));
    EXPECT_LT(byte, 32u);
    EXPECT_EQ(__builtin_popcount(mask), 1);
    EXPECT_LT(mask, 0x100u);
    seen.emplace(byte, mask);
  }
  EXPECT_EQ(seen.size(), 256u);
}
