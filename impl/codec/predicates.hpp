// Length / range predicates of [R-VAL-1] checks 6, 16 and 20, written once as templates over an
// arithmetic policy so that the same source text is (a) what decode() executes, with NativeOps, and
// (b) what the Z3 proofs (properties/) instantiate with a policy over bit-vector expressions to show
// these fast formulations equal the spec's mathematical wording for every 32-bit input.
//
// Rules for the template bodies (so a symbolic policy can instantiate them):
//   * arithmetic only with + - * on U32/U64 values (modular, like bit-vectors);
//   * constants only through O::u32 / O::u64;
//   * comparisons and logic only through the policy functions; no if / ?: / && / || on values.
#pragma once

#include <cstdint>

namespace mroce::fast::pred {

struct NativeOps {
  using U32 = uint32_t;
  using U64 = uint64_t;
  using Bool = bool;
  static constexpr U32 u32(uint32_t v) { return v; }
  static constexpr U64 u64(uint64_t v) { return v; }
  static constexpr U64 zext(U32 v) { return v; }  // zero-extend 32 -> 64
  static constexpr Bool ule32(U32 a, U32 b) { return a <= b; }
  static constexpr Bool ult32(U32 a, U32 b) { return a < b; }
  static constexpr Bool ule64(U64 a, U64 b) { return a <= b; }
  static constexpr Bool ult64(U64 a, U64 b) { return a < b; }
  static constexpr Bool eq32(U32 a, U32 b) { return a == b; }
  // Non-short-circuit on purpose: both operands are cheap, and a branch-free and/or keeps the
  // validation path free of data-dependent jumps.
  static constexpr Bool all(Bool a, Bool b) { return a & b; }
  static constexpr Bool any(Bool a, Bool b) { return a | b; }
  static constexpr Bool neg(Bool a) { return !a; }
  static constexpr Bool lit(bool b) { return b; }
};

// [R-VAL-1] check 6, IPv4: 28 <= total_len and 14 + total_len <= frame_len (mathematical integers).
// Subtraction form: frame_len - 14 cannot wrap once 14 <= frame_len is known, so no widening needed.
template <class O>
typename O::Bool ipv4_length_ok(typename O::U32 frame_len, typename O::U32 total_len) {
  return O::all(O::ule32(O::u32(28), total_len),
                O::all(O::ule32(O::u32(14), frame_len), O::ule32(total_len, frame_len - O::u32(14))));
}

// [R-VAL-1] check 6, IPv6: 8 <= payload_len and 54 + payload_len <= frame_len.
template <class O>
typename O::Bool ipv6_length_ok(typename O::U32 frame_len, typename O::U32 payload_len) {
  return O::all(O::ule32(O::u32(8), payload_len),
                O::all(O::ule32(O::u32(54), frame_len), O::ule32(payload_len, frame_len - O::u32(54))));
}

// [R-VAL-1] check 16 ([R-HDR-7], [R-HDR-8]): with need = 16 (BTH) + ext_len + 4 (ICRC),
//   non-data: udp_payload_len == need;  data: need <= udp_payload_len and udp_payload_len - need <= 8192.
// Subtraction form: peel off the 20 fixed bytes, then the extension, each guarded against wrap;
// `rest` is then the data payload length and one compare finishes either class.
template <class O>
typename O::Bool transport_length_ok(typename O::U32 udp_payload_len, typename O::U32 ext_len,
                                     typename O::Bool is_data) {
  typename O::U32 after_fixed = udp_payload_len - O::u32(20);
  typename O::U32 rest = after_fixed - ext_len;
  typename O::Bool fits = O::all(O::ule32(O::u32(20), udp_payload_len), O::ule32(ext_len, after_fixed));
  typename O::Bool rest_ok =
      O::any(O::all(is_data, O::ule32(rest, O::u32(8192))), O::all(O::neg(is_data), O::eq32(rest, O::u32(0))));
  return O::all(fits, rest_ok);
}

// [R-VAL-1] check 20 ([R-HDR-12], [R-HDR-13], [R-HDR-15], [R-HDR-16]):
//   msg_len <= 2^31; msg_offset + payload_len <= msg_len without overflow (64-bit widened sum);
//   READ_REQ: payload_len == 0 and msg_offset == 0; VOID: payload_len == 0.
template <class O>
typename O::Bool data_range_ok(typename O::U32 msg_len, typename O::U32 msg_offset, typename O::U32 payload_len,
                               typename O::Bool is_read_req, typename O::Bool is_void) {
  typename O::Bool len_ok = O::ule32(msg_len, O::u32(0x80000000u));
  typename O::Bool seg_ok = O::ule64(O::zext(msg_offset) + O::zext(payload_len), O::zext(msg_len));
  typename O::Bool rr_ok =
      O::any(O::neg(is_read_req), O::all(O::eq32(payload_len, O::u32(0)), O::eq32(msg_offset, O::u32(0))));
  typename O::Bool void_ok = O::any(O::neg(is_void), O::eq32(payload_len, O::u32(0)));
  return O::all(O::all(len_ok, seg_ok), O::all(rr_ok, void_ok));
}

}  // namespace mroce::fast::pred
