// A variable-length bitmap over caller-provided storage (the engine's per-connection sets of paths
// and streams): set / clear with a running count, next set bit, round-robin search. No allocation.
// Checked against std::vector<bool> by properties/core/bit_span_test.cpp.
#pragma once

#include <bit>
#include <cstdint>

#include "core/sentinel.hpp"

namespace mroce::core {

struct BitSpan {
  uint64_t* w = nullptr;
  uint32_t bits = 0;
  uint32_t count = 0;  // set bits, kept by put()

  uint32_t words() const noexcept { return (bits + 63) / 64; }
  bool test(uint32_t j) const noexcept { return (w[j >> 6] >> (j & 63)) & 1u; }
  void put(uint32_t j, bool v) noexcept {
    const uint64_t m = uint64_t{1} << (j & 63);
    uint64_t& x = w[j >> 6];
    if (((x & m) != 0) == v) return;
    x ^= m;
    if (v)
      ++count;
    else
      --count;
  }
  bool any() const noexcept { return count != 0; }
  // Lowest set bit at or after j, or kNone.
  uint32_t next(uint32_t j) const noexcept {
    const uint32_t n = words();
    while (j < bits) {
      const uint64_t m = w[j >> 6] & (~uint64_t{0} << (j & 63));
      if (m) {
        const uint32_t r = (j & ~63u) + uint32_t(std::countr_zero(m));
        return r < bits ? r : kNone;
      }
      j = (j & ~63u) + 64;
      if ((j >> 6) >= n) break;
    }
    return kNone;
  }
  // First set bit at or after `start`, wrapping around (round robin); kNone when empty.
  uint32_t next_cyclic(uint32_t start) const noexcept {
    const uint32_t a = next(start);
    if (a != kNone) return a;
    return start ? next(0) : kNone;
  }
};

}  // namespace mroce::core
