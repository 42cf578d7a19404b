// SackBitmap256 against std::bitset<256>, and its [R-HDR-20] wire form.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/sack_bitmap.hpp"
#include "reference.hpp"

namespace mc = mroce::core;
using mc::SackBitmap256;
using Bits = mc::ref::Bits;

namespace {

// Reference queries on a bitset.
unsigned ref_leading_ones(const Bits& b) {
  unsigned n = 0;
  while (n < 256 && b[n]) ++n;
  return n;
}
int ref_highest(const Bits& b) {
  for (int i = 255; i >= 0; --i)
    if (b[static_cast<unsigned>(i)]) return i;
  return -1;
}
// [R-HDR-20] bit i -> byte i / 8, mask 0x80 >> (i % 8), written out directly.
std::array<std::uint8_t, 32> ref_wire(const Bits& b) {
  std::array<std::uint8_t, 32> out{};
  for (unsigned i = 0; i < 256; ++i)
    if (b[i]) out[i / 8] = static_cast<std::uint8_t>(out[i / 8] | (0x80u >> (i % 8)));
  return out;
}

void expect_same(const SackBitmap256& m, const Bits& r) {
  ASSERT_EQ(mc::ref::to_bitset(m), r);
  for (unsigned i = 0; i < 256; ++i) ASSERT_EQ(m.test(i), static_cast<bool>(r[i])) << i;
  ASSERT_EQ(m.count(), r.count());
  ASSERT_EQ(m.leading_ones(), ref_leading_ones(r));
  ASSERT_EQ(m.highest_set(), ref_highest(r));
  ASSERT_EQ(m.empty(), r.none());
}

// Bitmaps with structure near word boundaries, plus random words.
rc::Gen<SackBitmap256::Words> words_gen() {
  auto word = rc::gen::weightedOneOf<std::uint64_t>({
      {3, rc::gen::arbitrary<std::uint64_t>()},
      {1, rc::gen::just<std::uint64_t>(0)},
      {1, rc::gen::just<std::uint64_t>(~std::uint64_t{0})},
      {1, rc::gen::map(rc::gen::inRange<unsigned>(0, 65),
                       [](unsigned k) { return k == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << k) - 1; })},
      {1, rc::gen::map(rc::gen::inRange<unsigned>(0, 64), [](unsigned k) { return std::uint64_t{1} << k; })},
  });
  return rc::gen::map(rc::gen::tuple(word, word, word, word), [](auto t) {
    return SackBitmap256::Words{std::get<0>(t), std::get<1>(t), std::get<2>(t), std::get<3>(t)};
  });
}

const std::vector<SackBitmap256::Words> kPatterns = {
    {0, 0, 0, 0},
    {~0ull, ~0ull, ~0ull, ~0ull},
    {0xAAAAAAAAAAAAAAAAull, 0x5555555555555555ull, 0xAAAAAAAAAAAAAAAAull, 0x5555555555555555ull},
    {0x8000000000000001ull, 0x8000000000000001ull, 0x8000000000000001ull, 0x8000000000000001ull},
    {0x0123456789ABCDEFull, 0xFEDCBA9876543210ull, 0xDEADBEEFCAFEF00Dull, 0x0F1E2D3C4B5A6978ull},
    {~0ull, ~0ull, 0x7FFFFFFFFFFFFFFFull, 0},
};

}  // namespace

TEST(CoreSackBitmap, SetTestClearEveryIndex) {
  for (unsigned i = 0; i < 256; ++i) {
    SackBitmap256 m;
    Bits r;
    m.set(i);
    r.set(i);
    expect_same(m, r);
    m.clear(i);
    EXPECT_TRUE(m.empty()) << i;
  }
}

TEST(CoreSackBitmap, OutOfRangeIndexTouchesNothing) {
#ifdef NDEBUG
  SackBitmap256 m = SackBitmap256::from_words(kPatterns[4]);
  const SackBitmap256 before = m;
  for (unsigned i : {256u, 257u, 300u, 511u, 0xFFFFFFFFu}) {
    m.set(i);
    m.clear(i);
    EXPECT_FALSE(m.test(i)) << i;
  }
  EXPECT_EQ(m, before);
#else
  // In debug builds set/clear assert on this precondition instead; test() still answers false.
  SackBitmap256 m = SackBitmap256::from_words(kPatterns[1]);
  for (unsigned i : {256u, 257u, 300u, 511u, 0xFFFFFFFFu}) EXPECT_FALSE(m.test(i)) << i;
#endif
}

TEST(CoreSackBitmap, AdvanceByEveryNFrom0To300) {
  for (const auto& w : kPatterns) {
    for (unsigned n = 0; n <= 300; ++n) {
      SackBitmap256 m = SackBitmap256::from_words(w);
      Bits r = mc::ref::to_bitset(m);
      m.advance(n);
      r >>= n;  // index i takes index i + n
      SCOPED_TRACE(testing::Message() << "pattern " << (&w - kPatterns.data()) << " n=" << n);
      expect_same(m, r);
    }
  }
}

RC_GTEST_PROP(CoreSackBitmap, AdvanceMatchesBitsetShift, ()) {
  const auto w = *words_gen();
  const auto n = *rc::gen::weightedOneOf<std::uint32_t>({
      {4, rc::gen::inRange<std::uint32_t>(0, 301)},
      {1, rc::gen::arbitrary<std::uint32_t>()},
  });
  SackBitmap256 m = SackBitmap256::from_words(w);
  Bits r = mc::ref::to_bitset(m);
  m.advance(n);
  r = n >= 256 ? Bits{} : (r >> n);
  RC_ASSERT(mc::ref::to_bitset(m) == r);
}

RC_GTEST_PROP(CoreSackBitmap, QueriesMatchBitset, ()) {
  const SackBitmap256 m = SackBitmap256::from_words(*words_gen());
  const Bits r = mc::ref::to_bitset(m);
  RC_ASSERT(m.count() == r.count());
  RC_ASSERT(m.leading_ones() == ref_leading_ones(r));
  RC_ASSERT(m.highest_set() == ref_highest(r));
  RC_ASSERT(m.empty() == r.none());
}

// The operations the engine runs on its per-path sender state and on received ACKs.
unsigned ref_next(const Bits& b, unsigned j, bool value) {
  while (j < 256 && b[j] != value) ++j;
  return j < 256 ? j : 256;
}

TEST(CoreSackBitmap, NextSetAndNextClearFromEveryStart) {
  for (const auto& w : kPatterns) {
    const SackBitmap256 m = SackBitmap256::from_words(w);
    const Bits r = mc::ref::to_bitset(m);
    for (unsigned j = 0; j <= 300; ++j) {
      ASSERT_EQ(m.next_set(j), ref_next(r, j, true)) << "pattern " << (&w - kPatterns.data()) << " j=" << j;
      ASSERT_EQ(m.next_clear(j), ref_next(r, j, false)) << "pattern " << (&w - kPatterns.data()) << " j=" << j;
    }
  }
}

TEST(CoreSackBitmap, PrefixAndRetreatByEveryNFrom0To300) {
  for (unsigned n = 0; n <= 300; ++n) {
    Bits want;
    for (unsigned i = 0; i < 256 && i < n; ++i) want.set(i);
    ASSERT_EQ(mc::ref::to_bitset(SackBitmap256::prefix(n)), want) << n;
    for (const auto& w : kPatterns) {
      SackBitmap256 m = SackBitmap256::from_words(w);
      const Bits r = mc::ref::to_bitset(m);
      m.retreat(n);
      ASSERT_EQ(mc::ref::to_bitset(m), n >= 256 ? Bits{} : (r << n))
          << "pattern " << (&w - kPatterns.data()) << " n=" << n;
    }
  }
}

RC_GTEST_PROP(CoreSackBitmap, SearchesShiftsAndLogicMatchBitset, ()) {
  const SackBitmap256 a = SackBitmap256::from_words(*words_gen());
  const SackBitmap256 b = SackBitmap256::from_words(*words_gen());
  const Bits ra = mc::ref::to_bitset(a), rb = mc::ref::to_bitset(b);
  const auto j = *rc::gen::inRange<unsigned>(0, 300);
  const auto n = *rc::gen::weightedOneOf<std::uint32_t>({
      {4, rc::gen::inRange<std::uint32_t>(0, 301)},
      {1, rc::gen::arbitrary<std::uint32_t>()},
  });
  RC_ASSERT(a.next_set(j) == ref_next(ra, j, true));
  RC_ASSERT(a.next_clear(j) == ref_next(ra, j, false));
  SackBitmap256 up = a;
  up.retreat(n);
  RC_ASSERT(mc::ref::to_bitset(up) == (n >= 256 ? Bits{} : (ra << n)));
  RC_ASSERT(mc::ref::to_bitset(a & b) == (ra & rb));
  RC_ASSERT(mc::ref::to_bitset(a | b) == (ra | rb));
  RC_ASSERT(mc::ref::to_bitset(~a) == ~ra);
  // Iterating with next_set visits exactly the set indices, in increasing order.
  std::vector<unsigned> seen, want;
  for (unsigned i = a.next_set(0); i < 256; i = a.next_set(i + 1)) seen.push_back(i);
  for (unsigned i = 0; i < 256; ++i)
    if (ra[i]) want.push_back(i);
  RC_ASSERT(seen == want);
}

// Random sequences of set / clear / advance / reset against the bitset.
RC_GTEST_PROP(CoreSackBitmap, RandomOperationSequencesMatchBitset, ()) {
  const auto ops = *rc::gen::container<std::vector<std::pair<std::uint8_t, std::uint32_t>>>(
      rc::gen::pair(rc::gen::inRange<std::uint8_t>(0, 10), rc::gen::inRange<std::uint32_t>(0, 300)));
  SackBitmap256 m;
  Bits r;
  for (const auto& [op, x] : ops) {
    if (op < 6) {
      const unsigned i = x % 256;
      m.set(i);
      r.set(i);
    } else if (op < 8) {
      const unsigned i = x % 256;
      m.clear(i);
      r.reset(i);
    } else if (op < 9) {
      m.advance(x);
      r = x >= 256 ? Bits{} : (r >> x);
    } else {
      m.reset();
      r.reset();
    }
    RC_ASSERT(mc::ref::to_bitset(m) == r);
    RC_ASSERT(m.leading_ones() == ref_leading_ones(r));
    RC_ASSERT(m.highest_set() == ref_highest(r));
    RC_ASSERT(m.count() == r.count());
  }
}

TEST(CoreSackBitmap, R_HDR_20_WireBitOrderEveryIndex) {
  for (unsigned i = 0; i < 256; ++i) {
    SackBitmap256 m;
    m.set(i);
    std::uint8_t out[32];
    m.to_wire(out);
    for (unsigned k = 0; k < 32; ++k) {
      const unsigned expected = k == i / 8 ? (0x80u >> (i % 8)) : 0u;
      ASSERT_EQ(out[k], expected) << "index " << i << " byte " << k;
    }
    EXPECT_EQ(SackBitmap256::from_wire(out), m) << i;
  }
}

TEST(CoreSackBitmap, R_HDR_20_WireKnownVector) {
  SackBitmap256 m;
  for (unsigned i : {1u, 7u, 8u, 63u, 64u, 100u, 255u}) m.set(i);
  std::uint8_t out[32];
  m.to_wire(out);
  std::uint8_t expected[32] = {};
  expected[0] = 0x41;   // indices 1 (0x40) and 7 (0x01)
  expected[1] = 0x80;   // index 8
  expected[7] = 0x01;   // index 63
  expected[8] = 0x80;   // index 64
  expected[12] = 0x08;  // index 100 = 12 * 8 + 4
  expected[31] = 0x01;  // index 255
  EXPECT_EQ(std::memcmp(out, expected, 32), 0);
}

RC_GTEST_PROP(CoreSackBitmap, R_HDR_20_WireMatchesReferenceAndRoundTrips, ()) {
  const SackBitmap256 m = SackBitmap256::from_words(*words_gen());
  std::uint8_t out[32];
  m.to_wire(out);
  const auto expected = ref_wire(mc::ref::to_bitset(m));
  RC_ASSERT(std::memcmp(out, expected.data(), 32) == 0);
  RC_ASSERT(SackBitmap256::from_wire(out) == m);
}

RC_GTEST_PROP(CoreSackBitmap, R_HDR_20_WireBytesRoundTrip, ()) {
  const auto bytes = *rc::gen::container<std::array<std::uint8_t, 32>>(rc::gen::arbitrary<std::uint8_t>());
  const SackBitmap256 m = SackBitmap256::from_wire(bytes.data());
  for (unsigned i = 0; i < 256; ++i) RC_ASSERT(m.test(i) == ((bytes[i / 8] & (0x80u >> (i % 8))) != 0));
  std::uint8_t out[32];
  m.to_wire(out);
  RC_ASSERT(std::memcmp(out, bytes.data(), 32) == 0);
}
