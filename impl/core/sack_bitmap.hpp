// The 256-bit SACK bitmap ([R-HDR-20]) and the receiver's per-path sequence state ([R-PSN-3],
// [R-HDR-19]). Fixed size, no allocation.
//
// Layout: SACK index i (PSN CPSN + 1 + i) is bit i % 64 (LSB first) of words[i / 64]. Index, word,
// bit and byte positions are all in BITS until the wire conversion, which alone deals in bytes.
// The word-level kernels (window shift, wire conversion) are templates over the arithmetic policy of
// serial.hpp, so properties/z3 proves the very code that runs here against a 256-bit bit-vector.
#pragma once

#include <array>
#include <bit>
#include <cassert>
#include <cstdint>

#include "core/serial.hpp"

namespace mroce::core {

namespace kernel {

template <class O>
using Words = std::array<typename O::U64, 4>;

// Shift the 256-bit value down by n bits (bit i takes bit i + n; the top n bits become 0), i.e. the
// window moves forward by n PSNs. n is a plain count (concrete in both instantiations); every shift
// amount used is in 1..63.
template <class O>
Words<O> shift_down(const Words<O>& w, unsigned n) {
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

// Reverse the order of the 8 bits inside each byte of x; bytes stay where they are. An involution.
template <class O>
typename O::U64 reverse_bits_in_bytes(typename O::U64 x) {
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
template <class O>
typename O::U64 wire_byte(const Words<O>& w, unsigned k) {
  const auto rev = reverse_bits_in_bytes<O>(w[k / 8]);
  return O::and64(O::shr64(rev, O::u64(8 * (k % 8))), O::u64(0xFF));
}

// Inverse of wire_byte: word j (0..3) from wire bytes 8j..8j+7. byte_at(k) returns byte k as a U64
// in 0..255.
template <class O, class ByteAt>
typename O::U64 word_from_wire(ByteAt byte_at, unsigned j) {
  auto acc = byte_at(8 * j);
  for (unsigned b = 1; b < 8; ++b) acc = O::or64(acc, O::shl64(byte_at(8 * j + b), O::u64(8 * b)));
  return reverse_bits_in_bytes<O>(acc);
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

  // Length of the run of set bits starting at index 0 (0..256): how far CPSN can advance.
  constexpr unsigned leading_ones() const {
    unsigned n = 0;
    for (auto x : w_) {
      const auto r = static_cast<unsigned>(std::countr_one(x));
      n += r;
      if (r < 64) break;
    }
    return n;
  }

  // Highest set index, or -1 when empty.
  constexpr int highest_set() const {
    for (int j = kWords - 1; j >= 0; --j) {
      if (w_[j] != 0) return j * 64 + 63 - std::countl_zero(w_[j]);
    }
    return -1;
  }

  // The window moves forward by n PSNs: index i takes index i + n, the top n indices become clear.
  // Any n is allowed (n >= 256 clears everything).
  void advance(std::uint32_t n) { w_ = kernel::shift_down<NativeOps>(w_, n >= kBits ? kBits : n); }

  // [R-HDR-20] wire form: index i in byte i / 8 at mask 0x80 >> (i % 8).
  void to_wire(std::uint8_t out[kWireBytes]) const {
    for (unsigned k = 0; k < kWireBytes; ++k) out[k] = static_cast<std::uint8_t>(kernel::wire_byte<NativeOps>(w_, k));
  }
  static SackBitmap256 from_wire(const std::uint8_t in[kWireBytes]) {
    auto byte_at = [in](unsigned k) { return std::uint64_t{in[k]}; };
    SackBitmap256 b;
    for (unsigned j = 0; j < kWords; ++j) b.w_[j] = kernel::word_from_wire<NativeOps>(byte_at, j);
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
  std::uint32_t advanced = 0;  // how far CPSN moved (0 when the PSN left or widened a gap)
  bool left_gap = false;       // [R-ACK-2](c): accepted PSN was not CPSN + 1
  bool filled_gap = false;     // [R-ACK-2](d): CPSN moved past previously SACKed PSNs
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
    bits.set(idx);
    const unsigned run = bits.leading_ones();
    bits.advance(run);
    cpsn += run;
    detail.advanced = run;
    detail.left_gap = idx != 0;
    detail.filled_gap = run > 1;
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
