// Trivially-correct references the core types are compared against: the spec's wording evaluated in
// wide signed integers, a std::bitset for the bitmap, a std::set of received PSNs for the receiver.
#pragma once

#include <bitset>
#include <cstdint>
#include <set>

#include "core/sack_bitmap.hpp"

namespace mroce::core::ref {

// [R-PSN-1] RFC 1982 section 3.2, literally, with SERIAL_BITS = 32, in 64-bit integers.
inline bool serial_lt(std::uint32_t a, std::uint32_t b) {
  const std::int64_t i1 = a, i2 = b, half = std::int64_t{1} << 31;
  return (i1 < i2 && i2 - i1 < half) || (i1 > i2 && i1 - i2 > half);
}
inline bool serial_le(std::uint32_t a, std::uint32_t b) { return a == b || serial_lt(a, b); }

// [R-PSN-3] CPSN < p <= CPSN + 256, as written.
inline bool in_window(std::uint32_t cpsn, std::uint32_t p) {
  return serial_lt(cpsn, p) && serial_le(p, static_cast<std::uint32_t>(cpsn + 256u));
}

using Bits = std::bitset<256>;

inline Bits to_bitset(const SackBitmap256& b) {
  Bits r;
  for (unsigned i = 0; i < 256; ++i) r[i] = ((b.words()[i / 64] >> (i % 64)) & 1u) != 0;
  return r;
}

// Receiver per [R-PSN-3] / [R-HDR-19]: the set of received PSNs after CPSN, and CPSN moved by
// repeatedly looking up CPSN + 1.
struct Receiver {
  std::uint32_t cpsn;
  std::set<std::uint32_t> after;  // received PSNs beyond CPSN

  Arrival accept(std::uint32_t p) {
    if (in_window(cpsn, p)) {
      if (!after.insert(p).second) return Arrival::Duplicate;
      while (after.erase(static_cast<std::uint32_t>(cpsn + 1u)) == 1) ++cpsn;
      return Arrival::Accepted;
    }
    return serial_le(p, cpsn) ? Arrival::Duplicate : Arrival::OutOfWindow;
  }
};

}  // namespace mroce::core::ref
