// BitSpan (impl/core/bit_span.hpp) against std::vector<bool>: put / test / count / any, next set bit
// from every start and the round-robin search, over sizes that end inside and at word boundaries. A
// guard word after the span's storage must never change.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <vector>

#include "core/bit_span.hpp"

namespace mc = mroce::core;
using mc::BitSpan;
using mc::kNone;

namespace {

constexpr std::uint64_t kGuard = 0xA5A5A5A5A5A5A5A5ull;

std::uint32_t ref_next(const std::vector<bool>& r, std::uint32_t j) {
  for (std::uint32_t i = j; i < r.size(); ++i)
    if (r[i]) return i;
  return kNone;
}
std::uint32_t ref_next_cyclic(const std::vector<bool>& r, std::uint32_t start) {
  const std::uint32_t a = ref_next(r, start);
  if (a != kNone) return a;
  return ref_next(r, 0);
}

void expect_agrees(const BitSpan& s, const std::vector<bool>& r, const std::vector<std::uint64_t>& store) {
  std::uint32_t n = 0;
  for (std::uint32_t i = 0; i < r.size(); ++i) {
    RC_ASSERT(s.test(i) == r[i]);
    n += r[i];
  }
  RC_ASSERT(s.count == n);
  RC_ASSERT(s.any() == (n != 0));
  RC_ASSERT(store.back() == kGuard);
}

}  // namespace

RC_GTEST_PROP(CoreBitSpan, MatchesVectorOfBool, ()) {
  const auto bits = *rc::gen::weightedOneOf<std::uint32_t>({
      {3, rc::gen::inRange<std::uint32_t>(1, 300)},
      {1, rc::gen::element<std::uint32_t>(1, 63, 64, 65, 127, 128, 129, 256, 257)},
  });
  std::vector<std::uint64_t> store((bits + 63) / 64 + 1, 0);
  store.back() = kGuard;
  BitSpan s{store.data(), bits};
  RC_ASSERT(s.words() == (bits + 63) / 64);
  std::vector<bool> ref(bits, false);
  const auto ops = *rc::gen::container<std::vector<std::tuple<std::uint8_t, std::uint32_t, bool>>>(rc::gen::tuple(
      rc::gen::inRange<std::uint8_t>(0, 4), rc::gen::inRange<std::uint32_t>(0, bits + 70), rc::gen::arbitrary<bool>()));
  for (const auto& [kind, x, v] : ops) {
    if (kind < 2) {
      const std::uint32_t j = x % bits;
      s.put(j, v);
      ref[j] = v;
    } else if (kind == 2) {
      RC_ASSERT(s.next(x) == ref_next(ref, x));
    } else {
      const std::uint32_t start = x % bits;
      RC_ASSERT(s.next_cyclic(start) == ref_next_cyclic(ref, start));
    }
    expect_agrees(s, ref, store);
  }
  for (std::uint32_t j = 0; j <= bits + 64; ++j) RC_ASSERT(s.next(j) == ref_next(ref, j));
  for (std::uint32_t j = 0; j < bits; ++j) RC_ASSERT(s.next_cyclic(j) == ref_next_cyclic(ref, j));
}

TEST(CoreBitSpan, IteratesSetBitsAcrossWordBoundaries) {
  std::vector<std::uint64_t> store(3, 0);
  BitSpan s{store.data(), 130};
  for (std::uint32_t j : {0u, 63u, 64u, 127u, 128u, 129u}) s.put(j, true);
  std::vector<std::uint32_t> seen;
  for (std::uint32_t j = s.next(0); j != kNone; j = s.next(j + 1)) seen.push_back(j);
  EXPECT_EQ(seen, (std::vector<std::uint32_t>{0, 63, 64, 127, 128, 129}));
  EXPECT_EQ(s.count, 6u);
  EXPECT_EQ(s.next_cyclic(130), 0u);
  s.put(0, false);
  EXPECT_EQ(s.next_cyclic(1), 63u);
}
