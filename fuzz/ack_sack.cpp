// Fuzz target ack_sack: the ACK / SACK path.
//
// Input layout (short inputs are zero-padded):
//   bytes 0..47   the AETH, verbatim ([R-HDR-19..23]): CPSN, CE count, TS echo, rate hint, SACK
//   byte  48      control: bit 0 IPv6; bit 1 keep SACK bit 0 as given (else cleared); bits 2..7
//                 pick a window shift n = 5 * (bits 2..7) for SackBitmap256::advance
//   bytes 49..    receive operations, 2 bytes each (at most 256), see psn_for_op()
//
// The AETH is wrapped into an ACK frame by BOTH encoders (fast build() and ref::encode(): the
// bytes must be identical), decoded by both codecs (same outcome; SackBase exactly when bit 0 is
// set, [R-HDR-20]) and the 256 SACK bits are read back through every accessor. When
// impl/core/sack_bitmap.hpp is available the bitmap then goes through SackBitmap256::from_wire /
// to_wire, every kernel the engine uses on it (next_set / next_clear, prefix, retreat, advance, the
// highest set index, & | ~ and the engine's ACK-to-window mapping) is checked against a plain
// std::bitset reference, and it seeds a PathReceiveState that receives the operations' PSNs, checked
// after every step against a set-based model written from [R-PSN-1], [R-PSN-3], [R-HDR-19] and
// [R-HDR-20].
// The final state is sent as a new ACK and decoded by both codecs again.
#include <algorithm>
#include <array>
#include <bit>
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "codec/fast_codec.hpp"
#include "codec/ref_codec.hpp"
#include "frame_fixup.hpp"
#include "fuzz_util.hpp"

#if defined(MROCE_FUZZ_HAVE_SACK_BITMAP)
#include "core/sack_bitmap.hpp"
#endif

namespace {

constexpr const char* kTargetName = "ack_sack";
namespace fz = mroce::fuzzing;

constexpr uint32_t kDcid = 0x00C0FFEE;
constexpr uint16_t kPath = 7;
constexpr uint32_t kTs = 123456;

// [R-HDR-20] SACK bit i: byte i / 8, mask 0x80 >> (i % 8); written here independently.
bool wire_bit(const uint8_t* sack, unsigned i) { return (sack[i >> 3] & (0x80u >> (i & 7))) != 0; }

struct Aeth {
  uint32_t cpsn, ce, tse, hint;
  std::array<uint8_t, 32> sack;
};

// The same ACK through the fast codec's Fields encoder.
std::vector<uint8_t> fast_ack(const Aeth& a, bool v6) {
  mroce::fast::Fields f;
  f.eth_dst = {0x02, 0, 0, 0, 0, 0x01};
  f.eth_src = {0x02, 0, 0, 0, 0, 0x02};
  f.ipv6 = v6;
  f.ipv4_src = 0x0A000001;
  f.ipv4_dst = 0x0A000002;
  f.ipv6_src = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  f.ipv6_dst = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
  f.dscp = 48;  // [R-ENC-10] CS6 for ACKs
  f.ecn = 0;    // [R-ENC-9] Not-ECT
  f.ttl = 64;
  f.ipv4_id = 0;
  f.ipv4_df = true;
  f.flow_label = 0;
  f.udp_sport = 49152;
  f.opcode = uint8_t(mroce::fast::Opcode::Ack);
  f.flags = 0;
  f.dcid = kDcid;
  f.path_id = kPath;
  f.timestamp = kTs;
  f.cpsn = a.cpsn;
  f.ce_count = a.ce;
  f.ts_echo = a.tse;
  f.rate_hint = a.hint;
  f.sack = a.sack;
  return mroce::fast::build(f, {});
}

// ... and through the reference encoder.
std::vector<uint8_t> ref_ack(const Aeth& a, bool v6) {
  mroce::ref::Packet p{};
  p.eth_dst = {0x02, 0, 0, 0, 0, 0x01};
  p.eth_src = {0x02, 0, 0, 0, 0, 0x02};
  p.ipv6 = v6;
  if (v6) {
    p.ip_src = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    p.ip_dst = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
  } else {
    p.ip_src = {10, 0, 0, 1};
    p.ip_dst = {10, 0, 0, 2};
    p.ipv4_df = true;
  }
  p.dscp = 48;
  p.ttl = 64;
  p.udp_sport = 49152;
  p.udp_dport = mroce::ref::kDefaultUdpPort;
  p.version = 1;
  p.opcode = mroce::ref::Opcode::Ack;
  p.dcid = kDcid;
  p.path_id = kPath;
  p.timestamp = kTs;
  p.cpsn = a.cpsn;
  p.ce_count = a.ce;
  p.ts_echo = a.tse;
  p.rate_hint = a.hint;
  p.sack = a.sack;
  return mroce::ref::encode(p, {});
}

// Both codecs on one ACK frame: returns the fast view (valid while `frame` lives) when accepted.
// Checks: same outcome, same canonical line, every AETH field and SACK bit as sent.
bool decode_both(const std::vector<uint8_t>& frame, const Aeth& a, mroce::fast::PacketView& v, const uint8_t* data,
                 size_t size) {
  using namespace mroce;
  const fast::Error fe = fast::decode(frame.data(), uint32_t(frame.size()), fast::kDefaultUdpPort, v);
  const ref::DecodeResult rr = ref::decode(frame);
  const std::string fl = fe == fast::Error::None ? fast::canonical(v) : fast::canonical_error(fe);
  const std::string rl = ref::canonical(rr, frame);
  FUZZ_CHECK(fl == rl, "codecs disagree on an ACK:\n  fast: " + fl + "\n  ref:  " + rl);
  const bool bit0 = wire_bit(a.sack.data(), 0);
  if (bit0) {  // [R-VAL-1] check 21
    FUZZ_CHECK(fe == fast::Error::SackBase, fl);
    return false;
  }
  FUZZ_CHECK(fe == fast::Error::None, fl);
  FUZZ_CHECK(v.opcode() == fast::Opcode::Ack && v.cpsn() == a.cpsn && v.ce_count() == a.ce && v.ts_echo() == a.tse &&
                 v.rate_hint() == a.hint && v.dcid() == kDcid && v.path_id() == kPath && v.timestamp() == kTs,
             "AETH fields: " + fl);
  FUZZ_CHECK(rr.packet.cpsn == a.cpsn && rr.packet.sack == a.sack, "ref AETH fields: " + rl);
  for (unsigned i = 0; i < 256; ++i) {
    const bool want = wire_bit(a.sack.data(), i);
    FUZZ_CHECK(
        v.sack(i) == want && fast::sack_bit(v.sack_bytes(), i) == want && wire_bit(rr.packet.sack.data(), i) == want,
        "SACK bit " + std::to_string(i));
  }
  return true;
}

#if defined(MROCE_FUZZ_HAVE_SACK_BITMAP)

// [R-PSN-1], [R-PSN-3], [R-HDR-19]: CPSN plus the set of PSNs received beyond it.
struct Model {
  uint32_t cpsn;
  std::set<uint32_t> got;  // absolute PSNs, each in (cpsn, cpsn + 256]

  bool in_window(uint32_t p) const { return p - cpsn >= 1u && p - cpsn <= 256u; }
  // p <= cpsn in serial order: (cpsn - p) mod 2^32 in [0, 2^31 - 1].
  bool at_or_before(uint32_t p) const { return cpsn - p < 0x80000000u; }
  mroce::core::Arrival classify(uint32_t p) const {
    if (in_window(p)) return got.count(p) ? mroce::core::Arrival::Duplicate : mroce::core::Arrival::Accepted;
    return at_or_before(p) ? mroce::core::Arrival::Duplicate : mroce::core::Arrival::OutOfWindow;
  }
  // Returns how far CPSN moved.
  uint32_t accept(uint32_t p) {
    got.insert(p);
    uint32_t moved = 0;
    while (got.erase(cpsn + 1) == 1) {
      ++cpsn;
      ++moved;
    }
    return moved;
  }
};

// Operation (a, b) -> a PSN relative to the current CPSN:
//   a < 0x80:  CPSN + 1 + ((a & 1) << 8 | b)   1..512: in window, its edge, just beyond
//   a < 0xC0:  CPSN - ((a & 0x3F) << 8 | b)    at or before CPSN: duplicates
//   a = 0xFF:  CPSN + 2^31 - 8 + (b & 15)      around the undefined serial distance 2^31
//   else:      CPSN + ((a & 0x3F) << 24 | b << 16 | b)   far away
uint32_t psn_for_op(uint32_t cpsn, uint8_t a, uint8_t b) {
  if (a < 0x80) return cpsn + 1 + ((uint32_t{a} & 1u) << 8 | b);
  if (a < 0xC0) return cpsn - ((uint32_t{a} & 0x3Fu) << 8 | b);
  if (a == 0xFF) return cpsn + 0x7FFFFFF8u + (b & 15u);
  return cpsn + ((uint32_t{a} & 0x3Fu) << 24 | uint32_t{b} << 16 | b);
}

// Checking code needs no coverage feedback of its own (it only slows the fuzzer down).
#if defined(__clang__)
#define MROCE_NO_COVERAGE __attribute__((no_sanitize("coverage")))
#else
#define MROCE_NO_COVERAGE
#endif

// The state equals the model: same CPSN, and the model's PSNs are exactly the set SACK indices
// (compared as words(), whose layout sack_bitmap.hpp documents: index i is bit i % 64 of word i / 64;
// test() itself is checked bit by bit against the wire form in bitmap_and_state).
MROCE_NO_COVERAGE void check_state(const mroce::core::PathReceiveState& s, const Model& m, const uint8_t* data,
                                   size_t size, const char* when, size_t op) {
  const auto at = [&] { return std::string(when) + " " + std::to_string(op); };
  FUZZ_CHECK(s.cpsn == m.cpsn, at() + ": CPSN " + std::to_string(s.cpsn) + " vs model " + std::to_string(m.cpsn));
  FUZZ_CHECK(!s.bits.test(0), at() + ": [R-HDR-20] bit 0 set in the receive state");
  std::array<uint64_t, 4> want{};
  for (const uint32_t p : m.got) {
    const uint32_t idx = p - m.cpsn - 1u;
    FUZZ_CHECK(idx < 256u, at() + ": model PSN outside the window");
    want[idx / 64] |= uint64_t{1} << (idx % 64);
  }
  FUZZ_CHECK(s.bits.words() == want, at() + ": SACK bits differ from the model");
  FUZZ_CHECK(s.bits.count() == m.got.size(), at() + ": bit count");
}

// The kernels the engine runs on SackBitmap256 (next_set / next_clear, prefix, retreat, & | ~, and
// the engine's [R-REL-3] mapping of an ACK onto its own window), each against a plain reference
// over std::bitset<256> built from the wire bytes. The second operand of & and | is the AETH's
// first 32 bytes read as a bitmap.
MROCE_NO_COVERAGE void bitmap_kernels(const Aeth& a, const mroce::core::SackBitmap256& b, unsigned shift, unsigned lead,
                                      const uint8_t* data, size_t size) {
  using mroce::core::SackBitmap256;
  std::bitset<256> ref, ref2;
  uint8_t head[32];
  fz::put_be32(head, a.cpsn);
  fz::put_be32(head + 4, a.ce);
  fz::put_be32(head + 8, a.tse);
  fz::put_be32(head + 12, a.hint);
  std::memcpy(head + 16, a.sack.data(), 16);
  const SackBitmap256 c = SackBitmap256::from_wire(head);
  for (unsigned i = 0; i < 256; ++i) {
    ref[i] = wire_bit(a.sack.data(), i);
    ref2[i] = wire_bit(head, i);
  }
  // next_set / next_clear from every start, against the next set / clear index found backwards.
  unsigned want_set = 256, want_clear = 256;
  FUZZ_CHECK(
      b.next_set(256) == 256 && b.next_clear(256) == 256 && b.next_set(257 + shift) == 256 && b.next_clear(~0u) == 256,
      "next_set / next_clear past the end");
  for (int j = 255; j >= 0; --j) {
    if (ref[j])
      want_set = unsigned(j);
    else
      want_clear = unsigned(j);
    FUZZ_CHECK(b.next_set(unsigned(j)) == want_set, "next_set(" + std::to_string(j) + ")");
    FUZZ_CHECK(b.next_clear(unsigned(j)) == want_clear, "next_clear(" + std::to_string(j) + ")");
  }
  FUZZ_CHECK(b.leading_ones() == b.next_clear(0) && lead == b.next_clear(0), "leading_ones vs next_clear(0)");
  // Iterating the set indices visits exactly the set bits, in order.
  unsigned visited = 0;
  for (unsigned i = b.next_set(0); i < 256; i = b.next_set(i + 1)) {
    FUZZ_CHECK(ref[i], "iteration visits a clear index " + std::to_string(i));
    ++visited;
  }
  FUZZ_CHECK(visited == ref.count(), "iteration misses set indices");
  // retreat(n): index i takes index i - n.
  SackBitmap256 up = b;
  up.retreat(shift);
  for (unsigned i = 0; i < 256; ++i) {
    const bool want = i >= shift && ref[i - shift];
    FUZZ_CHECK(up.test(i) == want, "retreat(" + std::to_string(shift) + ") index " + std::to_string(i));
  }
  // prefix(n) for the shift, the leading run and the highest index.
  for (const unsigned n : {shift, lead, unsigned(b.highest_set() + 1), 256u + shift}) {
    const SackBitmap256 p = SackBitmap256::prefix(n);
    for (unsigned i = 0; i < 256; ++i) FUZZ_CHECK(p.test(i) == (i < n), "prefix(" + std::to_string(n) + ")");
  }
  // Word-wise logic.
  const SackBitmap256 both = b & c, either = b | c, inv = ~b;
  for (unsigned i = 0; i < 256; ++i) {
    FUZZ_CHECK(both.test(i) == (ref[i] && ref2[i]) && either.test(i) == (ref[i] || ref2[i]) && inv.test(i) == !ref[i],
               "& | ~ at index " + std::to_string(i));
  }
  // The engine's [R-REL-3] mapping (impl/engine/sender.cpp, on_ack): with SUNA = CPSN + 1 - k and n
  // outstanding PSNs, bit j (PSN SUNA + j) is acknowledged iff PSN <= CPSN (serial) or its SACK bit
  // (index PSN - CPSN - 1) is set; for k <= 256 the engine computes prefix(min(k, n)) | retreat(k),
  // cut to [0, n).
  const unsigned k = shift > 256 ? 256 : shift, n_out = 256 - (a.ce & 255u) % 257u;
  SackBitmap256 sk = b;
  sk.retreat(k);
  const SackBitmap256 ackm = (SackBitmap256::prefix(k < n_out ? k : n_out) | sk) & SackBitmap256::prefix(n_out);
  const uint32_t suna = a.cpsn + 1 - k;
  for (unsigned j = 0; j < 256; ++j) {
    const uint32_t psn = suna + j, i = psn - a.cpsn - 1;
    const bool want = j < n_out && (a.cpsn - psn < 0x80000000u || (i < 256 && ref[i]));
    FUZZ_CHECK(ackm.test(j) == want, "ACK mapping k=" + std::to_string(k) + " bit " + std::to_string(j));
  }
}

void bitmap_and_state(const Aeth& a, unsigned shift, const uint8_t* ops, size_t nops, const uint8_t* data,
                      size_t size) {
  using mroce::core::Arrival;
  using mroce::core::PathReceiveState;
  using mroce::core::SackBitmap256;

  // ---- wire conversion ([R-HDR-20]) ----
  const SackBitmap256 b = SackBitmap256::from_wire(a.sack.data());
  uint8_t back[32];
  b.to_wire(back);
  FUZZ_CHECK(std::memcmp(back, a.sack.data(), 32) == 0, "to_wire(from_wire(x)) != x");
  unsigned pop = 0, lead = 0;
  int high = -1;
  bool run = true;
  for (unsigned i = 0; i < 256; ++i) {
    const bool bit = wire_bit(a.sack.data(), i);
    FUZZ_CHECK(b.test(i) == bit, "from_wire: index " + std::to_string(i));
    pop += bit;
    if (run && bit) ++lead;
    if (!bit) run = false;
    if (bit) high = int(i);
  }
  FUZZ_CHECK(b.count() == pop && b.empty() == (pop == 0), "count/empty");
  FUZZ_CHECK(b.leading_ones() == lead, "leading_ones");
  FUZZ_CHECK(b.highest_set() == high, "highest_set");
  SackBitmap256 moved = b;
  moved.advance(shift);
  for (unsigned i = 0; i < 256; ++i) {
    const bool want = i + shift < 256 && b.test(i + shift);
    FUZZ_CHECK(moved.test(i) == want, "advance(" + std::to_string(shift) + ") index " + std::to_string(i));
  }
  bitmap_kernels(a, b, shift, lead, data, size);

  // ---- receive state seeded from the ACK ([R-HDR-19]: bit 0 is CPSN + 1, never received) ----
  PathReceiveState s;
  s.cpsn = a.cpsn;
  s.bits = b;
  s.bits.clear(0);
  Model m{a.cpsn, {}};
  for (unsigned i = 1; i < 256; ++i) {
    if (b.test(i)) m.got.insert(a.cpsn + 1 + i);
  }
  check_state(s, m, data, size, "seeded", 0);

  for (size_t k = 0; k < nops; ++k) {
    const uint32_t psn = psn_for_op(s.cpsn, ops[2 * k], ops[2 * k + 1]);
    // Built only on failure: the message says which operation and PSN went wrong.
    const auto when = [&] { return "op " + std::to_string(k) + " psn " + std::to_string(psn); };
    const Arrival want = m.classify(psn);
    FUZZ_CHECK(s.classify(psn) == want, when() + ": classify");
    const uint32_t old_cpsn = s.cpsn;
    const SackBitmap256 old_bits = s.bits;
    mroce::core::AcceptDetail d;
    const Arrival got = s.accept(psn, d);
    FUZZ_CHECK(got == want, when() + ": accept");
    if (want == Arrival::Accepted) {
      const uint32_t mv = m.accept(psn);
      FUZZ_CHECK(d.advanced == mv, when() + ": advanced " + std::to_string(d.advanced) + " vs " + std::to_string(mv));
      // [R-ACK-2] (c) and (d) against H found by a plain scan of the bitmap before.
      uint32_t highest = 0;
      for (uint32_t i = 0; i < 256; ++i)
        if (old_bits.test(i)) highest = i + 1;
      const uint32_t distance = psn - old_cpsn;
      FUZZ_CHECK(d.opened_gap == (distance > highest + 1), when() + ": opened_gap");  // [R-ACK-2](c)
      FUZZ_CHECK(d.filled_gap == (distance < highest), when() + ": filled_gap");      // [R-ACK-2](d)
      FUZZ_CHECK(mv <= 1 || d.filled_gap, when() + ": CPSN moved by more than one without filled_gap");
      FUZZ_CHECK(s.received(psn), when() + ": accepted PSN not received");
    } else {
      // [R-PSN-3] duplicates and out-of-window packets change no state.
      FUZZ_CHECK(s.cpsn == old_cpsn && s.bits == old_bits, when() + ": state changed");
    }
    check_state(s, m, data, size, "after op", k);
  }

  // ---- the final state goes out as an ACK (in-place builder) and comes back through both ----
  uint8_t wire[32];
  s.bits.to_wire(wire);
  mroce::fast::FrameTemplate tpl;
  std::vector<uint8_t> frame(mroce::fast::kMaxFrameLen);
  mroce::fast::put_ack(tpl.begin(frame.data(), false), mroce::fast::BthFields{0, kDcid, kPath, kTs},
                       mroce::fast::AckFields{s.cpsn, a.ce, a.tse, a.hint, wire});
  frame.resize(mroce::fast::finalize(frame.data(), 0));
  Aeth out{s.cpsn, a.ce, a.tse, a.hint, {}};
  std::memcpy(out.sack.data(), wire, 32);
  mroce::fast::PacketView v;
  FUZZ_CHECK(decode_both(frame, out, v, data, size), "final state's ACK rejected");
}

#endif  // MROCE_FUZZ_HAVE_SACK_BITMAP

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint8_t head[49] = {};
  std::memcpy(head, data, size < sizeof head ? size : sizeof head);
  const uint8_t ctrl = head[48];
  Aeth a{fz::be32(head), fz::be32(head + 4), fz::be32(head + 8), fz::be32(head + 12), {}};
  std::memcpy(a.sack.data(), head + 16, 32);
  if (!(ctrl & 2)) a.sack[0] &= 0x7F;
  const bool v6 = ctrl & 1;

  // Both encoders, one ACK: identical bytes.
  const std::vector<uint8_t> ff = fast_ack(a, v6);
  const std::vector<uint8_t> rf = ref_ack(a, v6);
  FUZZ_CHECK(ff == rf, "fast build() and ref::encode() differ on the same ACK");

  mroce::fast::PacketView v;
  if (!decode_both(ff, a, v, data, size)) return 0;

#if defined(MROCE_FUZZ_HAVE_SACK_BITMAP)
  const size_t nops = size > 49 ? std::min<size_t>((size - 49) / 2, 256) : 0;
  bitmap_and_state(a, 5u * (ctrl >> 2), nops ? data + 49 : nullptr, nops, data, size);
#endif
  return 0;
}
