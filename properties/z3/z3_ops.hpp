// Arithmetic policy over Z3 bit-vector expressions: instantiating the policy templates of
// impl/core/serial.hpp, impl/core/sack_bitmap.hpp and impl/codec/predicates.hpp with it turns the
// very source the engine runs into formulas. U32 / U64 are 32- / 64-bit bit-vectors (modular, like
// the C++ unsigned types), Bool is a Z3 Boolean.
#pragma once

#include <z3++.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace mroce::proofs {

struct Z3Ops {
  using expr = z3::expr;
  using U32 = z3::expr;
  using U64 = z3::expr;
  using Bool = z3::expr;

  // One context for the whole program (the policy functions are static, like NativeOps').
  static z3::context& ctx() {
    static z3::context c;
    return c;
  }

  static U32 u32(std::uint32_t v) { return ctx().bv_val(v, 32); }
  static U64 u64(std::uint64_t v) { return ctx().bv_val(v, 64); }
  static U64 zext(const U32& v) { return z3::zext(bv(v, 32), 32); }
  static Bool ule32(const U32& a, const U32& b) { return z3::ule(bv(a, 32), bv(b, 32)); }
  static Bool ult32(const U32& a, const U32& b) { return z3::ult(bv(a, 32), bv(b, 32)); }
  static Bool ule64(const U64& a, const U64& b) { return z3::ule(bv(a, 64), bv(b, 64)); }
  static Bool ult64(const U64& a, const U64& b) { return z3::ult(bv(a, 64), bv(b, 64)); }
  static Bool eq32(const U32& a, const U32& b) { return bv(a, 32) == bv(b, 32); }
  static Bool eq64(const U64& a, const U64& b) { return bv(a, 64) == bv(b, 64); }
  static Bool all(const Bool& a, const Bool& b) { return boolean(a) && boolean(b); }
  static Bool any(const Bool& a, const Bool& b) { return boolean(a) || boolean(b); }
  static Bool neg(const Bool& a) { return !boolean(a); }
  static Bool lit(bool b) { return ctx().bool_val(b); }
  static U32 and32(const U32& a, const U32& b) { return bv(a, 32) & bv(b, 32); }
  static U32 or32(const U32& a, const U32& b) { return bv(a, 32) | bv(b, 32); }
  static U32 shl32(const U32& a, const U32& s) { return z3::shl(bv(a, 32), bv(s, 32)); }
  static U32 shr32(const U32& a, const U32& s) { return z3::lshr(bv(a, 32), bv(s, 32)); }
  static U64 and64(const U64& a, const U64& b) { return bv(a, 64) & bv(b, 64); }
  static U64 or64(const U64& a, const U64& b) { return bv(a, 64) | bv(b, 64); }
  static U64 shl64(const U64& a, const U64& s) { return z3::shl(bv(a, 64), bv(s, 64)); }
  static U64 shr64(const U64& a, const U64& s) { return z3::lshr(bv(a, 64), bv(s, 64)); }
  static U64 not64(const U64& a) { return ~bv(a, 64); }
  // Count of trailing / leading zero bits (64 for 0), as the definition reads: the position of the
  // lowest / highest set bit, found by testing the bits one by one (an if-then-else chain).
  static U32 ctz64(const U64& a) {
    expr r = u32(64);
    for (int t = 63; t >= 0; --t) r = z3::ite(bit(bv(a, 64), unsigned(t)), u32(std::uint32_t(t)), r);
    return r;
  }
  static U32 clz64(const U64& a) {
    expr r = u32(64);
    for (unsigned t = 0; t < 64; ++t) r = z3::ite(bit(bv(a, 64), t), u32(63 - t), r);
    return r;
  }
  // Both branches are built; the choice becomes an if-then-else term.
  template <class Then, class Else>
  static expr pick(const Bool& c, Then&& then_, Else&& else_) {
    const expr a = then_(), b = else_();
    if (!z3::eq(a.get_sort(), b.get_sort())) throw std::logic_error("Z3Ops::pick: branches of different sorts");
    return z3::ite(boolean(c), a, b);
  }

 private:
  // Z3 checks that both operands have the same sort, but not that a "32-bit" operation got 32-bit
  // operands; a template mixing U32 and U64 would otherwise prove something about the wrong width.
  static const z3::expr& bv(const z3::expr& e, unsigned width) {
    if (!e.is_bv() || e.get_sort().bv_size() != width)
      throw std::logic_error("Z3Ops: expected a " + std::to_string(width) + "-bit vector, got " + e.to_string());
    return e;
  }
  static expr bit(const expr& a, unsigned t) { return a.extract(t, t) == ctx().bv_val(1, 1); }
  static const z3::expr& boolean(const z3::expr& e) {
    if (!e.is_bool()) throw std::logic_error("Z3Ops: expected a Boolean, got " + e.to_string());
    return e;
  }
};

}  // namespace mroce::proofs
