// 32-bit serial-number arithmetic for PSNs, MSNs and RSNs ([R-PSN-1]) and the two window tests built
// on it: the receiver's window ([R-PSN-3]) and the sender's span ([R-PSN-4]).
//
// Every predicate is a template over an arithmetic policy O, so the same source text is what the
// engine executes (O = NativeOps) and what properties/z3 instantiates with Z3 bit-vector expressions
// to prove it against the spec's wording. Rules for the template bodies:
//   * arithmetic only with + - * on O::U32 / O::U64 values (modular, like bit-vectors);
//   * constants only through O::u32 / O::u64;
//   * comparisons, logic, shifts and masks only through the policy functions;
//   * no if / ?: / && / || on policy values (branching on plain `unsigned` parameters is fine:
//     those are concrete in both instantiations); a choice on a policy value goes through
//     O::pick(c, then, else), which runs one branch here and becomes an if-then-else term in Z3.
// The policy has the shape of impl/codec/predicates.hpp's NativeOps (so one Z3 policy serves both),
// plus bitwise operations, bit counts and pick() that the SACK-bitmap kernels need.
#pragma once

#include <bit>
#include <cstdint>

namespace mroce::core {

struct NativeOps {
  using U32 = std::uint32_t;
  using U64 = std::uint64_t;
  using Bool = bool;
  static constexpr U32 u32(std::uint32_t v) { return v; }
  static constexpr U64 u64(std::uint64_t v) { return v; }
  static constexpr U64 zext(U32 v) { return v; }  // zero-extend 32 -> 64
  static constexpr Bool ule32(U32 a, U32 b) { return a <= b; }
  static constexpr Bool ult32(U32 a, U32 b) { return a < b; }
  static constexpr Bool ule64(U64 a, U64 b) { return a <= b; }
  static constexpr Bool ult64(U64 a, U64 b) { return a < b; }
  static constexpr Bool eq32(U32 a, U32 b) { return a == b; }
  static constexpr Bool eq64(U64 a, U64 b) { return a == b; }
  static constexpr Bool all(Bool a, Bool b) { return a & b; }
  static constexpr Bool any(Bool a, Bool b) { return a | b; }
  static constexpr Bool neg(Bool a) { return !a; }
  static constexpr Bool lit(bool b) { return b; }
  // Bitwise. Shift amounts must be below the width (C++ leaves larger ones undefined; Z3 would give
  // 0); the kernels only shift by amounts they have already bounded.
  static constexpr U32 and32(U32 a, U32 b) { return a & b; }
  static constexpr U32 or32(U32 a, U32 b) { return a | b; }
  static constexpr U32 shl32(U32 a, U32 s) { return a << s; }
  static constexpr U32 shr32(U32 a, U32 s) { return a >> s; }
  static constexpr U64 and64(U64 a, U64 b) { return a & b; }
  static constexpr U64 or64(U64 a, U64 b) { return a | b; }
  static constexpr U64 shl64(U64 a, U64 s) { return a << s; }
  static constexpr U64 shr64(U64 a, U64 s) { return a >> s; }
  static constexpr U64 not64(U64 a) { return ~a; }
  // Trailing / leading zero bits of a 64-bit word, 64 for 0 (std::countr_zero / countl_zero).
  static constexpr U32 ctz64(U64 a) { return static_cast<U32>(std::countr_zero(a)); }
  static constexpr U32 clz64(U64 a) { return static_cast<U32>(std::countl_zero(a)); }
  // c ? then_() : else_(): only the chosen branch runs (Z3Ops builds ite(c, then_(), else_())).
  template <class Then, class Else>
  static constexpr auto pick(Bool c, Then&& then_, Else&& else_) {
    return c ? then_() : else_();
  }
};

// Appendix A: SACK span. Also the largest sender span ([R-PSN-4]) and receive window ([R-PSN-3]).
inline constexpr std::uint32_t kSackSpan = 256;

// [R-PSN-1] a precedes b iff (b - a) mod 2^32 lies in [1, 2^31 - 1]. Subtracting one more maps that
// range onto [0, 2^31 - 2] (and a == b onto 2^32 - 1), so one unsigned compare decides.
// (b - a) = 2^31 is the undefined case: neither a < b nor b < a.
template <class O = NativeOps>
constexpr typename O::Bool serial_lt(typename O::U32 a, typename O::U32 b) {
  return O::ult32(b - a - O::u32(1), O::u32(0x7FFFFFFFu));
}

// [R-PSN-1] a <= b: equal, or a precedes b.
template <class O = NativeOps>
constexpr typename O::Bool serial_le(typename O::U32 a, typename O::U32 b) {
  return O::any(O::eq32(a, b), serial_lt<O>(a, b));
}

// [R-PSN-3] CPSN < p <= CPSN + 256 (serial). Equivalently (p - CPSN) mod 2^32 in [1, 256]; minus one
// more it is [0, 255], i.e. exactly the valid SACK indices.
template <class O = NativeOps>
constexpr typename O::Bool in_receive_window(typename O::U32 cpsn, typename O::U32 psn) {
  return O::ult32(psn - cpsn - O::u32(1), O::u32(kSackSpan));
}

// [R-HDR-20] bit i of the SACK bitmap stands for PSN CPSN + 1 + i, so PSN p sits at index
// p - CPSN - 1 (mod 2^32). Only meaningful (< 256) when in_receive_window(cpsn, p).
template <class O = NativeOps>
constexpr typename O::U32 sack_index(typename O::U32 cpsn, typename O::U32 psn) {
  return psn - cpsn - O::u32(1);
}

// [R-HDR-20] an index at or before CPSN: p <= CPSN (serial). A PSN there is a duplicate ([R-PSN-3]).
template <class O = NativeOps>
constexpr typename O::Bool at_or_before(typename O::U32 cpsn, typename O::U32 psn) {
  return serial_le<O>(psn, cpsn);
}

// [R-PSN-4] the sender may transmit p only if p < SUNA + 256 (serial).
template <class O = NativeOps>
constexpr typename O::Bool within_send_span(typename O::U32 suna, typename O::U32 psn) {
  return serial_lt<O>(psn, suna + O::u32(kSackSpan));
}

// Where SACK index idx lives in SackBitmap256's words: word idx / 64, bit idx % 64 (LSB first).
template <class O = NativeOps>
constexpr typename O::U32 sack_word(typename O::U32 idx) {
  return O::shr32(idx, O::u32(6));
}
template <class O = NativeOps>
constexpr typename O::U32 sack_bit(typename O::U32 idx) {
  return O::and32(idx, O::u32(63));
}

// [R-HDR-20] where SACK index i lives on the wire: byte i / 8, mask 0x80 >> (i % 8).
template <class O = NativeOps>
constexpr typename O::U32 wire_byte_index(typename O::U32 i) {
  return O::shr32(i, O::u32(3));
}
template <class O = NativeOps>
constexpr typename O::U32 wire_bit_mask(typename O::U32 i) {
  return O::shr32(O::u32(0x80), O::and32(i, O::u32(7)));
}

// A PSN with serial comparison operators, for engine code. Serial order is not a strict weak order
// over all of 2^32 (it is not transitive, and a, a + 2^31 are incomparable), so do not use Psn as a
// key of ordered containers or in std::sort; it is meant for comparing live PSNs of one path, which
// [R-REL-2] keeps within 256 of each other.
class Psn {
 public:
  constexpr Psn() = default;
  constexpr explicit Psn(std::uint32_t v) : v_(v) {}
  constexpr std::uint32_t value() const { return v_; }

  friend constexpr bool operator==(Psn a, Psn b) = default;
  friend constexpr bool operator<(Psn a, Psn b) { return serial_lt(a.v_, b.v_); }
  friend constexpr bool operator>(Psn a, Psn b) { return serial_lt(b.v_, a.v_); }
  friend constexpr bool operator<=(Psn a, Psn b) { return serial_le(a.v_, b.v_); }
  friend constexpr bool operator>=(Psn a, Psn b) { return serial_le(b.v_, a.v_); }

  // Modular steps ([R-PSN-2]: PSNs increment by one modulo 2^32).
  friend constexpr Psn operator+(Psn a, std::uint32_t n) { return Psn(a.v_ + n); }
  friend constexpr Psn operator-(Psn a, std::uint32_t n) { return Psn(a.v_ - n); }
  // Forward distance from `from` to `to`, modulo 2^32.
  friend constexpr std::uint32_t operator-(Psn to, Psn from) { return to.v_ - from.v_; }
  constexpr Psn& operator+=(std::uint32_t n) {
    v_ += n;
    return *this;
  }
  constexpr Psn& operator++() {
    ++v_;
    return *this;
  }
  constexpr Psn operator++(int) {
    Psn old = *this;
    ++v_;
    return old;
  }

 private:
  std::uint32_t v_ = 0;
};

}  // namespace mroce::core
