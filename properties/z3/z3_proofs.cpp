// Z3 proofs of the core PSN / SACK arithmetic (impl/core: serial numbers, windows and every kernel of
// the SACK bitmap the engine uses) and of the fast codec's length and range
// predicates (impl/codec/predicates.hpp), each instantiated from the engine's own template source
// with the bit-vector policy Z3Ops and compared with the spec's wording written here independently,
// in mathematical integers (Z3 Int sort) where the spec speaks of numbers.
//
// Every obligation is printed with its result. A claim is proven when its negation is UNSAT; SAT
// prints the counterexample. Implications also check that their hypotheses are satisfiable, so a
// proof cannot pass vacuously. Canaries are deliberately wrong claims that MUST come out SAT (the
// prover can fail); witnesses are SAT checks documenting that a hypothesis is needed.
// Exit status: 0 iff every obligation came out as required.
#include <z3++.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "codec/predicates.hpp"
#include "core/sack_bitmap.hpp"
#include "core/serial.hpp"
#include "z3_ops.hpp"

namespace {

using mroce::proofs::Z3Ops;
using z3::expr;
namespace core = mroce::core;
namespace kernel = mroce::core::kernel;
namespace codec = mroce::fast::pred;

z3::context& C = Z3Ops::ctx();

constexpr unsigned kTimeoutMs = 120000;

// ---- output and bookkeeping -------------------------------------------------------------------

struct Tally {
  int proven = 0;
  int sat_as_required = 0;
  int failed = 0;
} tally;

std::string numeral(const expr& v) {
  if (v.is_bool()) return v.is_true() ? "true" : "false";
  if (v.is_numeral()) {
    std::string dec = v.get_decimal_string(0);
    if (v.is_bv() && v.get_sort().bv_size() <= 64) {
      char hex[32];
      std::snprintf(hex, sizeof hex, " (0x%llx)", static_cast<unsigned long long>(v.get_numeral_uint64()));
      dec += hex;
    }
    return dec;
  }
  return v.to_string();
}

void print_model(const z3::model& m) {
  for (unsigned i = 0; i < m.size(); ++i) {
    const z3::func_decl d = m[i];
    if (d.arity() != 0) continue;
    std::cout << "        " << d.name().str() << " = " << numeral(m.get_const_interp(d)) << "\n";
  }
}

long long last_ms = 0;  // solver time of the latest check, printed with each result

z3::check_result check(const expr& formula, z3::model* model_out) {
  if (!formula.is_bool()) throw std::logic_error("obligation is not a formula: " + formula.to_string());
  z3::solver s(C);
  z3::params p(C);
  p.set("timeout", kTimeoutMs);
  s.set(p);
  s.add(formula);
  const auto t0 = std::chrono::steady_clock::now();
  const z3::check_result r = s.check();
  last_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  if (r == z3::sat && model_out != nullptr) *model_out = s.get_model();
  return r;
}

void header(const std::string& id, const std::string& text) { std::cout << "[" << id << "] " << text << "\n"; }

// Claim valid for all values of its free constants.
bool prove(const std::string& id, const std::string& text, const expr& claim) {
  header(id, text);
  z3::model m(C);
  const z3::check_result r = check(!claim, &m);
  if (r == z3::unsat) {
    std::cout << "    -> UNSAT: proven (" << last_ms << " ms)\n";
    ++tally.proven;
    return true;
  }
  ++tally.failed;
  if (r == z3::sat) {
    std::cout << "    -> SAT: BUG, counterexample:\n";
    print_model(m);
  } else {
    std::cout << "    -> UNKNOWN: not proven (timeout or incompleteness)\n";
  }
  return false;
}

// hyp => concl, after checking that hyp can hold at all.
bool prove_under(const std::string& id, const std::string& text, const expr& hyp, const expr& concl) {
  if (check(hyp, nullptr) != z3::sat) {
    header(id, text);
    std::cout << "    -> hypotheses are UNSATISFIABLE: the proof would be vacuous\n";
    ++tally.failed;
    return false;
  }
  return prove(id, text, z3::implies(hyp, concl));
}

// formula must be satisfiable: a canary (deliberately wrong claim, negated) or a witness.
bool expect_sat(const std::string& kind, const std::string& id, const std::string& text, const expr& formula) {
  std::cout << "[" << id << "] " << kind << " (must be SAT): " << text << "\n";
  z3::model m(C);
  const z3::check_result r = check(formula, &m);
  if (r == z3::sat) {
    std::cout << "    -> SAT as required, model:\n";
    print_model(m);
    ++tally.sat_as_required;
    return true;
  }
  std::cout << "    -> " << (r == z3::unsat ? "UNSAT" : "UNKNOWN") << ": " << kind
            << " FAILED, the prover did not find the expected model\n";
  ++tally.failed;
  return false;
}

// ---- spec side: mathematical integers ------------------------------------------------------------
//
// Spec-side integers are exact integers held in 64-bit two's-complement bit-vectors: a 32-bit field
// enters zero-extended (its value 0..2^32-1), and every spec expression below stays within +-2^35,
// far from +-2^63, so 64-bit + and - never wrap and are the integer operations; z3++'s < <= > >= on
// bit-vectors are the signed comparisons, and mod is bvsmod (the mathematical mod for a positive
// divisor). (Z3's Int sort with bv2int was tried first: Z3 4.8 answers UNKNOWN on those queries.)

expr bv32(const char* name) { return C.bv_const(name, 32); }
expr bv64(const char* name) { return C.bv_const(name, 64); }
expr int_of(const expr& bv32v) { return z3::zext(bv32v, 32); }  // the value 0..2^32-1, as an integer
expr num(std::int64_t v) { return C.bv_val(v, 64); }
const std::int64_t kTwo31 = std::int64_t{1} << 31;
const std::int64_t kTwo32 = std::int64_t{1} << 32;

// [R-PSN-1] RFC 1982 section 3.2 with SERIAL_BITS = 32, over integers A, B in [0, 2^32).
expr rfc_lt(const expr& A, const expr& B) { return (A < B && B - A < num(kTwo31)) || (A > B && A - B > num(kTwo31)); }
expr rfc_le(const expr& A, const expr& B) { return A == B || rfc_lt(A, B); }
expr mod32(const expr& X) { return z3::mod(X, num(kTwo32)); }

// ---- obligations ----------------------------------------------------------------------------------

void serial_obligations() {
  std::cout << "\n== [R-PSN-1] serial-number arithmetic (core/serial.hpp) ==\n";
  const expr a = bv32("a"), b = bv32("b"), c = bv32("c"), d = bv32("d");
  auto lt = [](const expr& x, const expr& y) { return core::serial_lt<Z3Ops>(x, y); };
  auto le = [](const expr& x, const expr& y) { return core::serial_le<Z3Ops>(x, y); };

  prove("R-PSN-1.irreflexive", "forall a: !(a < a)", !lt(a, a));
  prove("R-PSN-1.antisymmetric", "forall a,b: a < b => !(b < a)", z3::implies(lt(a, b), !lt(b, a)));
  prove("R-PSN-1.rfc1982", "forall a,b: serial_lt(a,b) <=> RFC 1982: (A<B & B-A<2^31) | (A>B & A-B>2^31) over integers",
        lt(a, b) == rfc_lt(int_of(a), int_of(b)));
  prove("R-PSN-1.le", "forall a,b: serial_le(a,b) <=> a = b | RFC-lt(a,b)", le(a, b) == rfc_le(int_of(a), int_of(b)));
  prove_under("R-PSN-1.forward", "forall a, d in [1, 2^31-1]: a < a+d and !(a+d < a) (sum mod 2^32, wrap included)",
              z3::uge(d, Z3Ops::u32(1)) && z3::ule(d, Z3Ops::u32(0x7FFFFFFFu)), lt(a, a + d) && !lt(a + d, a));
  prove("R-PSN-1.halfway", "forall a: a and a+2^31 are incomparable (the undefined case)",
        !lt(a, a + Z3Ops::u32(0x80000000u)) && !lt(a + Z3Ops::u32(0x80000000u), a));
  prove_under("R-PSN-1.total", "forall a,b: a != b and b-a != 2^31 => a < b | b < a",
              a != b && (b - a) != Z3Ops::u32(0x80000000u), lt(a, b) || lt(b, a));
  prove_under("R-PSN-1.transitive-live", "forall a,b,c: a<b, b<c, b-a <= 256, c-b <= 256 => a<c (live PSNs, [R-REL-2])",
              lt(a, b) && lt(b, c) && z3::ule(b - a, Z3Ops::u32(256)) && z3::ule(c - b, Z3Ops::u32(256)), lt(a, c));
  expect_sat("witness", "R-PSN-1.not-transitive",
             "serial order is not transitive in general (why Psn must not key an ordered container)",
             lt(a, b) && lt(b, c) && !lt(a, c));
}

void window_obligations() {
  std::cout << "\n== [R-PSN-3] receive window, [R-HDR-20] SACK index (core/serial.hpp) ==\n";
  const expr c = bv32("cpsn"), p = bv32("p"), k = bv32("k");
  auto win = [](const expr& x, const expr& y) { return core::in_receive_window<Z3Ops>(x, y); };
  auto idx = [](const expr& x, const expr& y) { return core::sack_index<Z3Ops>(x, y); };
  const expr C_ = int_of(c), P = int_of(p);

  prove("R-PSN-3.window-spec", "forall cpsn,p: in_receive_window <=> CPSN < p <= CPSN+256 (RFC 1982, integers)",
        win(c, p) == (rfc_lt(C_, P) && rfc_le(P, mod32(C_ + num(256)))));
  // The wording "p <= CPSN is a duplicate, p > CPSN + 256 is out of window" overlaps: both hold
  // exactly when p - CPSN is in [2^31 + 1, 2^31 + 255]. PathReceiveState::classify calls those
  // Duplicate (at_or_before is tested first); reported as a spec ambiguity.
  const expr d = p - c;
  prove("R-PSN-3.wording-overlap",
        "forall cpsn,p: (p <= CPSN and p > CPSN+256, RFC 1982) <=> p - CPSN in [2^31+1, 2^31+255]",
        (rfc_le(P, C_) && rfc_lt(mod32(C_ + num(256)), P)) ==
            (z3::uge(d, Z3Ops::u32(0x80000001u)) && z3::ule(d, Z3Ops::u32(0x800000FFu))));
  const expr i = idx(c, p);
  prove_under("R-HDR-20.index-in-map",
              "in_receive_window(cpsn,p) => i = sack_index <= 255, word i>>6 < 4, bit i&63 < 64, "
              "64*word + bit = i, cpsn+1+i = p",
              win(c, p),
              z3::ule(i, Z3Ops::u32(255)) && z3::ult(core::sack_word<Z3Ops>(i), Z3Ops::u32(4)) &&
                  z3::ult(core::sack_bit<Z3Ops>(i), Z3Ops::u32(64)) &&
                  core::sack_word<Z3Ops>(i) * Z3Ops::u32(64) + core::sack_bit<Z3Ops>(i) == i &&
                  c + Z3Ops::u32(1) + i == p);
  prove_under("R-PSN-3.accept-vs-duplicate", "in_receive_window(cpsn,p) => !(p <= cpsn): the two classes are disjoint",
              win(c, p), !core::at_or_before<Z3Ops>(c, p));
  prove_under("R-HDR-20.advance-keeps-meaning",
              "in window, k <= sack_index(cpsn,p) => still in window of cpsn+k at index sack_index - k "
              "(shifting the map by k keeps bit i <-> PSN CPSN+1+i)",
              win(c, p) && z3::ule(k, idx(c, p)), win(c + k, p) && idx(c + k, p) == idx(c, p) - k);
  prove_under("R-HDR-20.advance-fills-zero",
              "k <= 256, p in window of cpsn+k but not of cpsn => p was after the old window (never received) "
              "and sits at index >= 256-k (the bits advance() fills with 0)",
              z3::ule(k, Z3Ops::u32(256)) && win(c + k, p) && !win(c, p),
              !core::at_or_before<Z3Ops>(c, p) && z3::uge(idx(c + k, p), Z3Ops::u32(256) - k));
}

void span_obligations() {
  std::cout << "\n== [R-PSN-4] sender span vs receive window ==\n";
  const expr s = bv32("suna"), p = bv32("p"), c = bv32("cpsn"), n = bv32("snxt");
  auto span = [](const expr& x, const expr& y) { return core::within_send_span<Z3Ops>(x, y); };
  auto win = [](const expr& x, const expr& y) { return core::in_receive_window<Z3Ops>(x, y); };
  const expr S = int_of(s), P = int_of(p), Cp = int_of(c);
  const expr one = Z3Ops::u32(1);

  prove("R-PSN-4.span-spec", "forall suna,p: within_send_span <=> p < SUNA+256 (RFC 1982, integers)",
        span(s, p) == rfc_lt(P, mod32(S + num(256))));

  // The receiver's CPSN is at least SUNA-1 (everything before SUNA is known received) and before p.
  const expr sunam1 = int_of(s - one);
  const expr hyp = rfc_le(S, P) && span(s, p) && rfc_le(sunam1, Cp) && rfc_lt(Cp, P);
  prove_under("R-PSN-4.sendable-is-in-window",
              "SUNA <= p, within_send_span(suna,p), SUNA-1 <= CPSN < p (serial) => in_receive_window(cpsn,p) "
              "and sack_index(cpsn,p) <= 255",
              hyp, win(c, p) && z3::ule(core::sack_index<Z3Ops>(c, p), Z3Ops::u32(255)));
  expect_sat("witness", "R-PSN-4.needs-suna-le-p",
             "dropping SUNA <= p: the span test alone admits a p the receiver drops (a PSN 2^31 behind)",
             span(s, p) && rfc_le(sunam1, Cp) && rfc_lt(Cp, P) && !win(c, p));

  // The same in the sender's own terms ([R-REL-2]): outstanding PSNs are [SUNA, SNXT), SNXT-SUNA <=
  // 256, and the receiver's CPSN lies in [SUNA-1, SNXT-1]. Then every PSN the sender may (re)transmit
  // passes the span test and is, at the receiver, accepted or a duplicate, never out of window.
  const expr flight = n - s;
  const expr inv = z3::ule(flight, Z3Ops::u32(256)) && z3::ule(c - (s - one), flight) && z3::ult(p - s, flight);
  prove_under("R-PSN-4.never-out-of-window",
              "SNXT-SUNA <= 256, CPSN in [SUNA-1, SNXT-1], p in [SUNA, SNXT) (mod 2^32) => within_send_span(suna,p) "
              "and (in_receive_window(cpsn,p) or p <= CPSN)",
              inv, span(s, p) && (win(c, p) || core::at_or_before<Z3Ops>(c, p)));
  prove_under(
      "R-REL-2.span-bounds-flight",
      "SNXT-SUNA <= 256 => (within_send_span(suna, snxt) <=> SNXT-SUNA < 256): sending SNXT keeps SNXT-SUNA <= 256",
      z3::ule(flight, Z3Ops::u32(256)), span(s, n) == z3::ult(flight, Z3Ops::u32(256)));
}

void wire_obligations() {
  std::cout << "\n== [R-HDR-20] SACK wire mapping (core/serial.hpp, core/sack_bitmap.hpp kernels) ==\n";
  const expr i = bv32("i"), j = bv32("j"), byte = bv32("byte"), mask = bv32("mask");
  auto B = [](const expr& x) { return core::wire_byte_index<Z3Ops>(x); };
  auto M = [](const expr& x) { return core::wire_bit_mask<Z3Ops>(x); };
  const expr u256 = Z3Ops::u32(256);
  auto one_bit_byte = [](const expr& m) {
    return m != Z3Ops::u32(0) && (m & (m - Z3Ops::u32(1))) == Z3Ops::u32(0) && z3::ult(m, Z3Ops::u32(256));
  };
  // Spec-side inverse: the index of (byte b, single-bit mask m) is 8b + (position of m from the MSB).
  auto inverse = [](const expr& b, const expr& m) {
    expr pos = Z3Ops::u32(0);
    for (unsigned t = 1; t < 8; ++t) pos = z3::ite(m == Z3Ops::u32(0x80u >> t), Z3Ops::u32(t), pos);
    return b * Z3Ops::u32(8) + pos;
  };

  prove_under("R-HDR-20.wire-codomain",
              "i < 256 => byte = i>>3 < 32 and mask = 0x80>>(i&7) has exactly one bit, < 0x100", z3::ult(i, u256),
              z3::ult(B(i), Z3Ops::u32(32)) && one_bit_byte(M(i)));
  prove_under("R-HDR-20.wire-injective", "i, j < 256, i != j => (byte(i), mask(i)) != (byte(j), mask(j))",
              z3::ult(i, u256) && z3::ult(j, u256) && i != j, B(i) != B(j) || M(i) != M(j));
  prove_under("R-HDR-20.wire-left-inverse", "i < 256 => inverse(byte(i), mask(i)) = i", z3::ult(i, u256),
              inverse(B(i), M(i)) == i);
  prove_under("R-HDR-20.wire-surjective",
              "byte < 32, mask a single bit => i = inverse(byte, mask) < 256 with byte(i) = byte and mask(i) = mask",
              z3::ult(byte, Z3Ops::u32(32)) && one_bit_byte(mask),
              z3::ult(inverse(byte, mask), u256) && B(inverse(byte, mask)) == byte && M(inverse(byte, mask)) == mask);

  // The bitmap's own conversion code (kernel::wire_byte / word_from_wire), on symbolic words: bit i of
  // the 256-bit map (word i/64, bit i%64) is exactly the bit at (byte(i), mask(i)) on the wire.
  const kernel::Words<Z3Ops> w{bv64("w0"), bv64("w1"), bv64("w2"), bv64("w3")};
  std::vector<expr> bytes;
  for (unsigned k = 0; k < 32; ++k) bytes.push_back(kernel::wire_byte<Z3Ops>(w, k));
  expr agree = C.bool_val(true);
  for (unsigned k = 0; k < 32; ++k) agree = agree && z3::ult(bytes[k], Z3Ops::u64(256));
  for (std::uint32_t idx = 0; idx < 256; ++idx) {
    const std::uint32_t k = core::wire_byte_index(idx), m = core::wire_bit_mask(idx);
    const expr on_wire = (bytes[k] & Z3Ops::u64(m)) != Z3Ops::u64(0);
    const expr in_map = (w[idx / 64] & Z3Ops::u64(std::uint64_t{1} << (idx % 64))) != Z3Ops::u64(0);
    agree = agree && (on_wire == in_map);
  }
  prove("R-HDR-20.to_wire-bits",
        "forall words: every wire byte < 256 and, for all 256 indices i, wire bit (i>>3, 0x80>>(i&7)) == map bit i",
        agree);

  auto from_bytes = [](const std::vector<expr>& by) {
    auto byte_at = [&by](unsigned k) { return by[k]; };
    return kernel::Words<Z3Ops>{kernel::word_from_wire<Z3Ops>(byte_at, 0), kernel::word_from_wire<Z3Ops>(byte_at, 1),
                                kernel::word_from_wire<Z3Ops>(byte_at, 2), kernel::word_from_wire<Z3Ops>(byte_at, 3)};
  };
  const kernel::Words<Z3Ops> back = from_bytes(bytes);
  prove("R-HDR-20.from_wire-after-to_wire", "forall words: from_wire(to_wire(w)) = w",
        back[0] == w[0] && back[1] == w[1] && back[2] == w[2] && back[3] == w[3]);

  std::vector<expr> in;
  for (unsigned k = 0; k < 32; ++k) in.push_back(z3::zext(C.bv_const(("in" + std::to_string(k)).c_str(), 8), 56));
  const kernel::Words<Z3Ops> parsed = from_bytes(in);
  expr same = C.bool_val(true);
  for (unsigned k = 0; k < 32; ++k) same = same && kernel::wire_byte<Z3Ops>(parsed, k) == in[k];
  prove("R-HDR-20.to_wire-after-from_wire", "forall 32 wire bytes: to_wire(from_wire(bytes)) = bytes", same);
}

// One claim per value of a plain (concrete) kernel parameter n in [lo, hi]; prints one line per
// family and the counterexample of any n that fails.
template <class Claim>
void prove_each(const std::string& id, const std::string& text, unsigned lo, unsigned hi, Claim claim) {
  std::cout << "[" << id << "] for each n in " << lo << ".." << hi << ": " << text << "\n";
  int ok = 0, bad = 0;
  for (unsigned n = lo; n <= hi; ++n) {
    z3::model m(C);
    const z3::check_result r = check(!claim(n), &m);
    if (r == z3::unsat) {
      ++ok;
      continue;
    }
    ++bad;
    std::cout << "    n=" << n << " -> " << (r == z3::sat ? "SAT: BUG, counterexample:" : "UNKNOWN") << "\n";
    if (r == z3::sat) print_model(m);
  }
  std::cout << "    -> " << ok << "/" << (hi - lo + 1) << " UNSAT: proven"
            << (bad != 0 ? ", " + std::to_string(bad) + " FAILED" : "") << "\n";
  tally.proven += ok;
  tally.failed += bad;
}

void advance_obligations() {
  std::cout << "\n== SackBitmap256::advance (kernel::shift_down) vs a 256-bit logical shift ==\n";
  const kernel::Words<Z3Ops> w{bv64("w0"), bv64("w1"), bv64("w2"), bv64("w3")};
  auto as256 = [](const kernel::Words<Z3Ops>& x) { return z3::concat(x[3], z3::concat(x[2], z3::concat(x[1], x[0]))); };
  const expr whole = as256(w);
  prove_each("advance.n", "forall 4 words: shift_down(w, n) = (w as 256-bit) >> n", 0, 300,
             [&](unsigned n) { return as256(kernel::shift_down<Z3Ops>(w, n)) == z3::lshr(whole, C.bv_val(n, 256)); });
}

// The remaining SackBitmap256 kernels, which the engine runs on every ACK it builds or reads and on
// its per-path sender state (acknowledged / lost / in-flight / retransmitted / RNR-waiting PSNs):
// each against a definition on the 256-bit value (bit i = index i) written here independently.
void bitmap_obligations() {
  std::cout << "\n== SackBitmap256 kernels the engine runs (core/sack_bitmap.hpp) vs 256-bit definitions ==\n";
  const kernel::Words<Z3Ops> w{bv64("w0"), bv64("w1"), bv64("w2"), bv64("w3")};
  const kernel::Words<Z3Ops> x{bv64("x0"), bv64("x1"), bv64("x2"), bv64("x3")};
  auto as256 = [](const kernel::Words<Z3Ops>& y) { return z3::concat(y[3], z3::concat(y[2], z3::concat(y[1], y[0]))); };
  auto c256 = [](unsigned n) { return C.bv_val(n, 256); };
  const expr v = as256(w), u = as256(x);
  const expr zero = c256(0), one = c256(1), ones = ~c256(0);
  // Index i of a 256-bit value, i a 256-bit vector (bits at and past 256 read as clear).
  auto bit_at = [&](const expr& val, const expr& i) { return (z3::lshr(val, i) & one) == one; };
  // Indices [0, i) set; i = 256 gives all (2^256 - 1, as bit-vector arithmetic wraps).
  auto below = [&](const expr& i) { return z3::shl(one, i) - one; };

  prove_each("bitmap.retreat", "forall 4 words: shift_up(w, n) = (w as 256-bit) << n (retreat: index i -> i + n)", 0,
             300, [&](unsigned n) { return as256(kernel::shift_up<Z3Ops>(w, n)) == z3::shl(v, c256(n)); });
  prove_each("bitmap.prefix", "prefix(n) = indices [0, min(n, 256)) set", 0, 300,
             [&](unsigned n) { return as256(kernel::prefix<Z3Ops>(n)) == (n >= 256 ? ones : below(c256(n))); });
  prove("bitmap.and", "forall w, x: and_words(w, x) = w & x (256-bit)",
        as256(kernel::and_words<Z3Ops>(w, x)) == (v & u));
  prove("bitmap.or", "forall w, x: or_words(w, x) = w | x (256-bit)", as256(kernel::or_words<Z3Ops>(w, x)) == (v | u));
  prove("bitmap.not", "forall w: not_words(w) = ~w (256-bit)", as256(kernel::not_words<Z3Ops>(w)) == ~v);

  // next_set(w, j): the least set index r >= j, 256 when none. Spelled out per index (cheaper for
  // the solver than symbolic 256-bit shifts): j <= r <= 256 (r = 256 for j >= 256), every index in
  // [j, r) clear, and index r set when r < 256.
  auto next_spec = [&](const expr& val, unsigned j, const expr& r) {
    expr ok = z3::ule(r, Z3Ops::u32(256)) && z3::uge(r, Z3Ops::u32(j > 256 ? 256 : j));
    for (unsigned i = j; i < 256; ++i) {
      const expr b = val.extract(i, i) == C.bv_val(1, 1);
      ok = ok && z3::implies(z3::ult(Z3Ops::u32(i), r), !b) && z3::implies(r == Z3Ops::u32(i), b);
    }
    return ok;
  };
  prove_each("bitmap.next_set",
             "forall w: r = next_set(w, n) is 256 if no index >= n is set, else n <= r < 256, index r set, "
             "none in [n, r)",
             0, 260, [&](unsigned j) { return next_spec(v, j, kernel::next_set<Z3Ops>(w, j)); });
  prove_each("bitmap.next_clear", "forall w: next_clear(w, n) = next_set of the complement (same definition on ~w)", 0,
             260, [&](unsigned j) { return next_spec(~v, j, kernel::next_clear<Z3Ops>(w, j)); });
  {
    const expr r = z3::zext(kernel::next_clear<Z3Ops>(w, 0), 224);
    prove("bitmap.leading_ones",
          "forall w: r = leading_ones = next_clear(w, 0) has indices [0, r) set and r = 256 or index r clear",
          z3::ule(r, c256(256)) && (v & below(r)) == below(r) && (r == c256(256) || !bit_at(v, r)));
  }
  {
    const expr r = z3::zext(kernel::bit_width<Z3Ops>(w), 224);
    prove("bitmap.bit_width",
          "forall w: r = bit_width(w) (highest_set + 1) is 0 iff w = 0, else index r-1 is set and none above it",
          z3::ule(r, c256(256)) && ((r == zero) == (v == zero)) &&
              z3::implies(r != zero, bit_at(v, r - one) && z3::lshr(v, r) == zero));
  }
  // The wire words the engine stores and loads with 8-byte little-endian moves are the wire bytes
  // proven above: byte b of wire_word(w, j) is wire_byte(w, 8j + b), and word_of_wire_word inverts it.
  {
    expr same = C.bool_val(true);
    for (unsigned j = 0; j < 4; ++j)
      for (unsigned b = 0; b < 8; ++b)
        same = same && (z3::lshr(kernel::wire_word<Z3Ops>(w, j), Z3Ops::u64(8 * b)) & Z3Ops::u64(0xFF)) ==
                           kernel::wire_byte<Z3Ops>(w, 8 * j + b);
    prove("R-HDR-20.wire_word", "forall w: byte b (bits 8b..8b+7) of wire_word(w, j) = wire_byte(w, 8j + b)", same);
    const expr y = bv64("y");
    prove("R-HDR-20.word_of_wire_word", "forall y: word_of_wire_word(wire_word({y,..}, 0)) = y",
          kernel::word_of_wire_word<Z3Ops>(kernel::wire_word<Z3Ops>(kernel::Words<Z3Ops>{y, y, y, y}, 0)) == y);
  }
  // Canary: a search that forgets to mask the indices below j is wrong (must be refuted).
  expect_sat("canary", "canary.next_set-unmasked",
             "next_set(w, 0) as an answer for next_set from 5 violates the definition",
             !next_spec(v, 5, kernel::next_set<Z3Ops>(w, 0)));
}

void codec_obligations() {
  std::cout << "\n== [R-VAL-1] checks 6, 16, 20: codec/predicates.hpp vs the spec's arithmetic (integers) ==\n";
  const expr frame = bv32("frame_len"), total = bv32("total_len"), plen6 = bv32("payload_len");
  const expr F = int_of(frame);

  // Check 6, IPv4: 28 <= total length and 14 + total length <= frame length.
  prove("R-VAL-1.6.ipv4", "forall frame_len,total_len: ipv4_length_ok <=> 28 <= T and 14 + T <= F",
        codec::ipv4_length_ok<Z3Ops>(frame, total) == (num(28) <= int_of(total) && num(14) + int_of(total) <= F));
  // Check 6, IPv6: 8 <= payload length and 54 + payload length <= frame length.
  prove("R-VAL-1.6.ipv6", "forall frame_len,payload_len: ipv6_length_ok <=> 8 <= L and 54 + L <= F",
        codec::ipv6_length_ok<Z3Ops>(frame, plen6) == (num(8) <= int_of(plen6) && num(54) + int_of(plen6) <= F));

  // Check 16, [R-HDR-7] / [R-HDR-8]: need = 16 (BTH) + extension + 4 (ICRC). Non-data: UDP payload =
  // need exactly. Data: UDP payload >= need and the data payload (UDP payload - need) <= 8192.
  const expr udp = bv32("udp_payload_len"), ext = bv32("ext_len");
  const expr is_data = C.bool_const("is_data");
  const expr U = int_of(udp), need = num(16) + int_of(ext) + num(4);
  const expr spec16 = z3::ite(is_data, need <= U && U - need <= num(8192), U == need);
  prove("R-VAL-1.16.transport",
        "forall udp_len, ext_len (any 32-bit), is_data: transport_length_ok <=> "
        "data ? 20+E <= U and U-(20+E) <= 8192 : U = 20+E",
        codec::transport_length_ok<Z3Ops>(udp, ext, is_data) == spec16);

  // Check 20, [R-HDR-12,13,15,16].
  const expr mlen = bv32("msg_len"), off = bv32("msg_offset"), plen = bv32("payload_len");
  const expr is_rr = C.bool_const("is_read_req"), is_void = C.bool_const("is_void");
  const expr Ml = int_of(mlen), O = int_of(off), Pl = int_of(plen);
  const expr spec20 = Ml <= num(kTwo31) && O + Pl <= Ml && z3::implies(is_rr, Pl == num(0) && O == num(0)) &&
                      z3::implies(is_void, Pl == num(0));
  prove("R-VAL-1.20.range",
        "forall mlen, off, plen, is_read_req, is_void: data_range_ok <=> M <= 2^31, O+P <= M (integers), "
        "READ_REQ => P = 0 and O = 0, VOID => P = 0",
        codec::data_range_ok<Z3Ops>(mlen, off, plen, is_rr, is_void) == spec20);

  // Canary: the classic bug [R-HDR-13] forbids, a 32-bit sum that wraps. Must be refuted.
  const expr wrong = Z3Ops::ule32(off + plen, mlen);
  expect_sat("canary", "canary.R-HDR-13-overflow",
             "wrong predicate (off + len) mod 2^32 <= mlen differs from O+P <= M somewhere", wrong != (O + Pl <= Ml));
}

void canary_serial() {
  // Canary: plain integer comparison instead of serial arithmetic ([R-CONV-6]). Must be refuted.
  const expr a = bv32("a"), b = bv32("b");
  expect_sat("canary", "canary.R-CONV-6-plain-compare", "wrong predicate a <u b differs from RFC 1982 a < b somewhere",
             z3::ult(a, b) != rfc_lt(int_of(a), int_of(b)));
}

}  // namespace

int main() {
  std::cout << std::unitbuf;  // progress stays visible when ctest captures the output
  try {
    serial_obligations();
    window_obligations();
    span_obligations();
    wire_obligations();
    advance_obligations();
    bitmap_obligations();
    codec_obligations();
    std::cout << "\n== canaries ==\n";
    canary_serial();
  } catch (const std::exception& e) {
    std::cout << "\nERROR: " << e.what() << "\n";
    return 2;
  }
  std::cout << "\nSUMMARY: " << tally.proven << " proven (UNSAT), " << tally.sat_as_required
            << " canaries/witnesses SAT as required, " << tally.failed << " failed\n";
  std::cout << (tally.failed == 0 ? "RESULT: PASS\n" : "RESULT: FAIL\n");
  return tally.failed == 0 ? 0 : 1;
}
