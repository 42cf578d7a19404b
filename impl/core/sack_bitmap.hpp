// The 256-bit SACK bitmap ([R-HDR-20]) and the receiver's per-path sequence state ([R-PSN-3],
// [R-HDR-19]). Fixed size, no allocation.
//
// Layout: SACK index i (PSN CPSN + 1 + i) is bit i % 64 (LSB first) of words[i / 64]. Index, word,
// bit and byte positions are all in BITS until the wire conversion, which alone deals in bytes.
// The word-level kernels (window shifts both ways, prefixes, set / clear-bit searches, the highest
// set bit, word-wise logic and the wire conversion) are templates over the arithmetic policy of
// serial.hpp, so properties/z3 proves the very code that runs here against a 256-bit bit-vector.
// The engine keeps its per-path sender state (acknowledged, lost, in-flight, retransmitted and
// RNR-waiting PSNs relative to SUNA) in the same type, so the proofs cover that code too.
#pragma once

#include <array>
#include <bit>
#include <cassert>
#include <cstdint>
#include <cstring>

#include "core/serial.hpp"

namespace mroce::core {

namespace kernel {

template <class O>
using Words = std::array<typename O::U64, 4>;

// Shift the 256-bit value down by n bits (bit i takes bit i + n; the top n bits become 0), i.e. the
// window moves forward by n PSNs. n is a plain count (concrete in both instantiations); every shift
// amount used is in 1..63.
template <class O>
constexpr Words<O> shift_down(const Words<O>& w, unsigned n) {
  const auto zero = O::u64(0);
  if (n >= 256) return Words<O>{zero, zero, zero, zero};
  const unsigned ws = n / 64;  // whole words dropped
  const unsigned bs = n % 64;  // bits moved across each word boundary
  auto out_word = [&](unsigned i) {
    const auto lo = i + ws < 4 ? w[i + ws] : zero;
    if (bs == 0) return lo;
    const auto hi = i + ws + 1 < 4 ? w[i + ws + 1] : zero;
    return O::or64(O::shr64(lo, O::u64(bs)), O::shl64(hi, O::u64(64 - bs)));
  };
  return Words<O>{out_word(0), out_word(1), out_word(2), out_word(3)};
}

// Shift the 256-bit value up by n bits (bit i takes bit i - n; the low n bits become 0 and the top n
// bits are dropped), i.e. the window's base moves back by n PSNs. n is a plain count.
template <class O>
constexpr Words<O> shift_up(const Words<O>& w, unsigned n) {
  const auto zero = O::u64(0);
  if (n >= 256) return Words<O>{zero, zero, zero, zero};
  const unsigned ws = n / 64;  // whole words moved
  const unsigned bs = n % 64;  // bits moved across each word boundary
  auto out_word = [&](unsigned i) {
    const auto hi = i >= ws ? w[i - ws] : zero;
    if (bs == 0) return hi;
    const auto lo = i >= ws + 1 ? w[i - ws - 1] : zero;
    return O::or64(O::shl64(hi, O::u64(bs)), O::shr64(lo, O::u64(64 - bs)));
  };
  return Words<O>{out_word(0), out_word(1), out_word(2), out_word(3)};
}

// Indices [0, n) set, the rest clear (all 256 set when n >= 256). n is a plain count.
template <class O>
constexpr Words<O> prefix(unsigned n) {
  auto word = [n](unsigned k) {
    if (n >= 64 * k + 64) return O::u64(~std::uint64_t{0});
    if (n <= 64 * k) return O::u64(0);
    return O::shl64(O::u64(1), O::u64(n - 64 * k)) - O::u64(1);
  };
  return Words<O>{word(0), word(1), word(2), word(3)};
}

// Word-wise logic.
template <class O>
constexpr Words<O> and_words(const Words<O>& a, const Words<O>& b) {
  return Words<O>{O::and64(a[0], b[0]), O::and64(a[1], b[1]), O::and64(a[2], b[2]), O::and64(a[3], b[3])};
}
template <class O>
constexpr Words<O> or_words(const Words<O>& a, const Words<O>& b) {
  return Words<O>{O::or64(a[0], b[0]), O::or64(a[1], b[1]), O::or64(a[2], b[2]), O::or64(a[3], b[3])};
}
template <class O>
constexpr Words<O> not_words(const Words<O>& a) {
  return Words<O>{O::not64(a[0]), O::not64(a[1]), O::not64(a[2]), O::not64(a[3])};
}

namespace detail {

// The lowest set index >= j (j < 256 plain) among words K..3 of word(0..3), 256 when none. Word K
// with the indices below j masked off; the next word is looked at only when this one is empty.
template <class O, unsigned K, class Word>
constexpr typename O::U32 first_set(const Word& word, unsigned j) {
  const auto x = word(K);
  const auto m = j >= 64 * K + 64 ? O::u64(0)
                 : j < 64 * K     ? x
                                  : O::and64(x, O::shl64(O::u64(~std::uint64_t{0}), O::u64(j - 64 * K)));
  if constexpr (K == 3) {
    return O::u32(64 * K) + O::ctz64(m);  // ctz64(0) = 64: none gives 256
  } else {
    return O::pick(
        O::neg(O::eq64(m, O::u64(0))), [&] { return O::u32(64 * K) + O::ctz64(m); },
        [&] { return first_set<O, K + 1>(word, j); });
  }
}

// One more than the highest set index among words 0..K, 0 when none.
template <class O, unsigned K>
constexpr typename O::U32 bit_width(const Words<O>& w) {
  if constexpr (K == 0) {
    return O::u32(64) - O::clz64(w[0]);  // clz64(0) = 64: none gives 0
  } else {
    return O::pick(
        O::neg(O::eq64(w[K], O::u64(0))), [&] { return O::u32(64 * K + 64) - O::clz64(w[K]); },
        [&] { return bit_width<O, K - 1>(w); });
  }
}

}  // namespace detail

// The lowest set index at or after j, 256 when there is none (also for j >= 256). j is a plain
// count.
template <class O>
constexpr typename O::U32 next_set(const Words<O>& w, unsigned j) {
  if (j >= 256) return O::u32(256);
  return detail::first_set<O, 0>([&w](unsigned k) { return w[k]; }, j);
}

// The lowest clear index at or after j, 256 when there is none (also for j >= 256).
template <class O>
constexpr typename O::U32 next_clear(const Words<O>& w, unsigned j) {
  if (j >= 256) return O::u32(256);
  return detail::first_set<O, 0>([&w](unsigned k) { return O::not64(w[k]); }, j);
}

// One more than the highest set index (0..256), 0 when empty.
template <class O>
constexpr typename O::U32 bit_width(const Words<O>& w) {
  return detail::bit_width<O, 3>(w);
}

// Reverse the order of the 8 bits inside each byte of x; bytes stay where they are. An involution.
template <class O>
constexpr typename O::U64 reverse_bits_in_bytes(typename O::U64 x) {
  auto swap = [](typename O::U64 v, std::uint64_t mask, unsigned s) {
    return O::or64(O::and64(O::shr64(v, O::u64(s)), O::u64(mask)), O::shl64(O::and64(v, O::u64(mask)), O::u64(s)));
  };
  x = swap(x, 0x5555555555555555ull, 1);
  x = swap(x, 0x3333333333333333ull, 2);
  x = swap(x, 0x0F0F0F0F0F0F0F0Full, 4);
  return x;
}

// [R-HDR-20] wire byte k (0..31) of the bitmap, as a U64 in 0..255. Byte k holds indices 8k..8k+7:
// bits 8(k%8)..8(k%8)+7 of word k/8, with index 8k at mask 0x80, hence the per-byte bit reversal.
// wire_word(w, j) holds wire bytes 8j..8j+7, byte 8j+b in bits 8b..8b+7: the word an 8-byte
// little-endian store writes there (SackBitmap256::to_wire). word_of_wire_word is its inverse, for
// the word an 8-byte little-endian load reads (SackBitmap256::from_wire). wire_byte and
// word_from_wire below spell the same byte order out byte by byte.
template <class O>
constexpr typename O::U64 wire_word(const Words<O>& w, unsigned j) {
  return reverse_bits_in_bytes<O>(w[j]);
}
template <class O>
constexpr typename O::U64 word_of_wire_word(typename O::U64 x) {
  return reverse_bits_in_bytes<O>(x);
}
template <class O>
constexpr typename O::U64 wire_byte(const Words<O>& w, unsigned k) {
  return O::and64(O::shr64(wire_word<O>(w, k / 8), O::u64(8 * (k % 8))), O::u64(0xFF));
}

// Inverse of wire_byte: word j (0..3) from wire bytes 8j..8j+7. byte_at(k) returns byte k as a U64
// in 0..255.
template <class O, class ByteAt>
constexpr typename O::U64 word_from_wire(ByteAt byte_at, unsigned j) {
  auto acc = byte_at(8 * j);
  for (unsigned b = 1; b < 8; ++b) acc = O::or64(acc, O::shl64(byte_at(8 * j + b), O::u64(8 * b)));
  return word_of_wire_word<O>(acc);
}

}  // namespace kernel

class SackBitmap256 {
 public:
  static constexpr unsigned kBits = 256;
  static constexpr unsigned kWords = 4;
  static constexpr unsigned kWireBytes = 32;
  using Words = std::array<std::uint64_t, kWords>;

  constexpr SackBitmap256() = default;
  static constexpr SackBitmap256 from_words(const Words& w) {
    SackBitmap256 b;
    b.w_ = w;
    return b;
  }
  constexpr const Words& words() const { return w_; }

  // Index i in 0..255. Out of range: test is false and set/clear do nothing (asserted in debug
  // builds); the bitmap is never written outside its 4 words.
  constexpr bool test(unsigned i) const { return i < kBits && ((w_[i >> 6] >> (i & 63)) & 1u) != 0; }
  constexpr void set(unsigned i) {
    assert(i < kBits);
    if (i < kBits) w_[i >> 6] |= std::uint64_t{1} << (i & 63);
  }
  constexpr void clear(unsigned i) {
    assert(i < kBits);
    if (i < kBits) w_[i >> 6] &= ~(std::uint64_t{1} << (i & 63));
  }
  constexpr void reset() { w_ = Words{}; }
  constexpr bool empty() const { return (w_[0] | w_[1] | w_[2] | w_[3]) == 0; }

  // Number of set bits.
  constexpr unsigned count() const {
    unsigned n = 0;
    for (auto x : w_) n += static_cast<unsigned>(std::popcount(x));
    return n;
  }

  // Indices [0, n) set, the rest clear; n >= 256 sets all.
  static constexpr SackBitmap256 prefix(std::uint32_t n) {
    return from_words(kernel::prefix<NativeOps>(n >= kBits ? kBits : n));
  }

  // The lowest set index at or after i, kBits (256) when none; any i is allowed. Iterate with
  // for (unsigned i = b.next_set(0); i < 256; i = b.next_set(i + 1)).
  constexpr unsigned next_set(unsigned i) const { return kernel::next_set<NativeOps>(w_, i); }
  // The lowest clear index at or after i, kBits when none.
  constexpr unsigned next_clear(unsigned i) const { return kernel::next_clear<NativeOps>(w_, i); }

  // Length of the run of set bits starting at index 0 (0..256): how far CPSN can advance.
  constexpr unsigned leading_ones() const { return next_clear(0); }

  // Highest set index, or -1 when empty.
  constexpr int highest_set() const { return static_cast<int>(kernel::bit_width<NativeOps>(w_)) - 1; }

  // The window moves forward by n PSNs: index i takes index i + n, the top n indices become clear.
  // Any n is allowed (n >= 256 clears everything).
  constexpr void advance(std::uint32_t n) { w_ = kernel::shift_down<NativeOps>(w_, n >= kBits ? kBits : n); }
  // The window's base moves back by n PSNs: index i takes index i - n, the low n indices become
  // clear and indices pushed past 255 are dropped. Any n is allowed (n >= 256 clears everything).
  constexpr void retreat(std::uint32_t n) { w_ = kernel::shift_up<NativeOps>(w_, n >= kBits ? kBits : n); }

  friend constexpr SackBitmap256 operator&(const SackBitmap256& a, const SackBitmap256& b) {
    return from_words(kernel::and_words<NativeOps>(a.w_, b.w_));
  }
  friend constexpr SackBitmap256 operator|(const SackBitmap256& a, const SackBitmap256& b) {
    return from_words(kernel::or_words<NativeOps>(a.w_, b.w_));
  }
  constexpr SackBitmap256 operator~() const { return from_words(kernel::not_words<NativeOps>(w_)); }

  // [R-HDR-20] wire form: index i in byte i / 8 at mask 0x80 >> (i % 8). Word j is wire bytes
  // 8j..8j+7, moved by one 8-byte little-endian store / load of kernel::wire_word (the byte order
  // kernel::wire_byte and kernel::word_from_wire spell out).
  void to_wire(std::uint8_t out[kWireBytes]) const {
    static_assert(std::endian::native == std::endian::little);
    for (unsigned j = 0; j < kWords; ++j) {
      const std::uint64_t x = kernel::wire_word<NativeOps>(w_, j);
      std::memcpy(out + 8 * j, &x, 8);
    }
  }
  static SackBitmap256 from_wire(const std::uint8_t in[kWireBytes]) {
    static_assert(std::endian::native == std::endian::little);
    SackBitmap256 b;
    for (unsigned j = 0; j < kWords; ++j) {
      std::uint64_t x;
      std::memcpy(&x, in + 8 * j, 8);
      b.w_[j] = kernel::word_of_wire_word<NativeOps>(x);
    }
    return b;
  }

  friend constexpr bool operator==(const SackBitmap256&, const SackBitmap256&) = default;

 private:
  Words w_{};
};

// How a data packet's PSN relates to a path's receive state ([R-PSN-3]).
enum class Arrival : std::uint8_t {
  Accepted,     // in window and not yet received: now marked received
  Duplicate,    // at or before CPSN, or in window with its SACK bit set: draws an ACK, not placed
  OutOfWindow,  // beyond CPSN + 256 (or exactly 2^31 away): dropped and counted, no state change
};

// What an accepted arrival did, for the ACK triggers of [R-ACK-2] (c) and (d).
struct AcceptDetail {
  std::uint32_t advanced = 0;  // how far CPSN moved (0 when the PSN opened, extended or filled a gap)
  bool opened_gap = false;     // [R-ACK-2](c): PSN beyond the highest received + 1 (a new hole below it)
  bool filled_gap = false;     // [R-ACK-2](d): PSN below the highest received (a hole closed, in part)
};

// The receiver's sequence state for one path, one direction.
// Invariant ([R-HDR-20]): bit 0 of `bits` (PSN CPSN + 1) is clear.
struct PathReceiveState {
  std::uint32_t cpsn = 0xFFFFFFFFu;  // [R-HDR-19] ISN - 1 before any data (ISN 0 by default)
  SackBitmap256 bits;

  // [R-HDR-19] before any data packet arrives, CPSN is ISN - 1.
  static constexpr PathReceiveState starting_at(std::uint32_t isn) {
    PathReceiveState s;
    s.cpsn = isn - 1u;
    return s;
  }

  // [R-PSN-3] classify without changing anything (the engine checks placement between classify and
  // accept: a NAKed packet is not marked received, [R-PLC-8]).
  constexpr Arrival classify(std::uint32_t psn) const {
    if (in_receive_window(cpsn, psn)) return bits.test(sack_index(cpsn, psn)) ? Arrival::Duplicate : Arrival::Accepted;
    return at_or_before(cpsn, psn) ? Arrival::Duplicate : Arrival::OutOfWindow;
  }

  // [R-PSN-3] mark psn received if it is new and in window, then move CPSN over the contiguous run
  // of received PSNs so that bit 0 is clear again ([R-HDR-19], [R-HDR-20]).
  Arrival accept(std::uint32_t psn, AcceptDetail& detail) {
    detail = AcceptDetail{};
    const Arrival a = classify(psn);
    if (a != Arrival::Accepted) return a;
    const std::uint32_t idx = sack_index(cpsn, psn);
    const int top = bits.highest_set();  // the highest received PSN is CPSN + 1 + top (CPSN when -1)
    bits.set(idx);
    const unsigned run = bits.leading_ones();
    bits.advance(run);
    cpsn += run;
    detail.advanced = run;
    detail.opened_gap = int(idx) > top + 1;
    detail.filled_gap = int(idx) < top;
    return a;
  }
  Arrival accept(std::uint32_t psn) {
    AcceptDetail ignored;
    return accept(psn, ignored);
  }

  // Has psn been received (at or before CPSN, or SACKed)? Out-of-window PSNs have not.
  constexpr bool received(std::uint32_t psn) const { return classify(psn) == Arrival::Duplicate; }
};

}  // namespace mroce::core
