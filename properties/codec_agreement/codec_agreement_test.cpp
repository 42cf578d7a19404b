// Cross-codec agreement: the reference codec (spec_model/codec) and the fast codec (impl/codec)
// must turn ANY byte string into the same outcome ([R-VAL-1]): both reject it with the same error
// kind, or both accept it with the same fields, compared through the canonical line of appendix C
// (which prints every field, or "ERROR <Kind>").
//
// Inputs: (a) random bytes, bare and behind valid headers; (b) valid frames from BOTH generators
// (properties/ref_codec/ref_packet_gen.hpp, properties/fast_codec/fast_packet_gen.hpp); (c) valid
// frames with random byte mutations, with and without repairing lengths / checksums / ICRC
// (fuzz/common/frame_fixup.hpp) so that the deeper checks are reached; (d) truncations. Plus the
// encode identities across codecs ([R-VAL-4]) for every opcode of table 3.2.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "codec/fast_codec.hpp"
#include "codec/ref_codec.hpp"
#include "fast_packet_gen.hpp"
#include "frame_fixup.hpp"
#include "mutator.hpp"
#include "ref_packet_gen.hpp"
#include "ref_test_util.hpp"

namespace {

using Bytes = std::vector<uint8_t>;
namespace fz = mroce::fuzzing;
namespace ref = mroce::ref;
namespace fast = mroce::fast;

// ---- the two outcomes ----

std::string ref_line(const Bytes& b, uint16_t port) {
  const ref::DecodeResult r = ref::decode(b, port);
  return ref::canonical(r, b);
}

// Decoded from an exactly-sized heap copy, so that ASan (asan preset) sees any read past the end.
std::string fast_line(const Bytes& b, uint16_t port) {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[b.empty() ? 1 : b.size()]);
  if (!b.empty()) std::memcpy(copy.get(), b.data(), b.size());
  fast::PacketView v;
  const fast::Error e = fast::decode(copy.get(), uint32_t(b.size()), port, v);
  return e == fast::Error::None ? fast::canonical(v) : fast::canonical_error(e);
}

// The property itself; returns the common outcome ("OK" or the error kind) for classification.
std::string assert_agree(const Bytes& b, uint16_t port = ref::kDefaultUdpPort) {
  const std::string r = ref_line(b, port);
  const std::string f = fast_line(b, port);
  RC_ASSERT(r == f);
  return r.rfind("ERROR ", 0) == 0 ? r.substr(6) : "OK";
}

// ---- frames ----

struct FrameCase {
  Bytes bytes;
  uint16_t port = ref::kDefaultUdpPort;
};

rc::Gen<FrameCase> gen_ref_frame() {
  return rc::gen::map(ref::gen_valid_packet_with_payload(), [](const ref::PacketWithPayload& p) {
    return FrameCase{ref::encode(p.packet, p.payload), p.packet.udp_dport};
  });
}

rc::Gen<FrameCase> gen_fast_frame() {
  return rc::gen::map(fast::testgen::gen_valid_packet(), [](const fast::testgen::FastPacket& p) {
    return FrameCase{fast::build(p.f, p.payload), p.port};
  });
}

// A valid frame from either generator.
rc::Gen<FrameCase> gen_valid_frame() { return rc::gen::oneOf(gen_ref_frame(), gen_fast_frame()); }

enum class Fix { None, All, AllUdpComputed, LengthsOnly, IcrcOnly, ChecksumsOnly };

rc::Gen<Fix> gen_fix() {
  return rc::gen::weightedOneOf<Fix>({{1, rc::gen::just(Fix::None)},
                                      {4, rc::gen::just(Fix::All)},
                                      {1, rc::gen::just(Fix::AllUdpComputed)},
                                      {1, rc::gen::just(Fix::LengthsOnly)},
                                      {1, rc::gen::just(Fix::IcrcOnly)},
                                      {1, rc::gen::just(Fix::ChecksumsOnly)}});
}

void apply_fix(Bytes& b, Fix fix) {
  fz::FixOptions o;
  switch (fix) {
    case Fix::None:
      return;
    case Fix::All:
      break;
    case Fix::AllUdpComputed:
      o.udp = fz::UdpCsum::Compute;
      break;
    case Fix::LengthsOnly:
      o.icrc = o.payload_length = false;
      o.udp = fz::UdpCsum::Keep;
      break;  // the IPv4 checksum follows the lengths, or check 7 would stop everything
    case Fix::IcrcOnly:
      o.lengths = o.payload_length = o.ipv4_checksum = false;
      o.udp = fz::UdpCsum::Keep;
      break;
    case Fix::ChecksumsOnly:
      o.lengths = o.payload_length = false;
      break;
  }
  fz::fix_frame(b.data(), b.size(), o);
}

// Uniform in [lo, hi): rapidcheck's inRange narrows the range at small sizes, which would bunch
// cut points and mutation positions at the front of the frame (the early checks).
size_t uniform(size_t lo, size_t hi) { return *rc::gen::resize(rc::kNominalSize, rc::gen::inRange<size_t>(lo, hi)); }

// Offset of the BTH of a frame with a valid EtherType (else 0).
size_t bth_offset(const Bytes& b) {
  const fz::Layout l = fz::layout_of(b.data(), b.size());
  return l.ok ? l.l4 + fz::kUdp : 0;
}

// k random byte edits; half of them aimed at the BTH and the extensions, where checks 14..23 look.
void mutate(Bytes& b) {
  if (b.empty()) return;
  const int k = *rc::gen::inRange(1, 5);
  for (int i = 0; i < k; ++i) {
    const size_t bth = bth_offset(b);
    size_t pos;
    if (bth > 0 && bth < b.size() && *rc::gen::arbitrary<bool>()) {
      pos = uniform(bth, std::min(b.size(), bth + fz::kBth + 48));
    } else {
      pos = uniform(0, b.size());
    }
    switch (*rc::gen::inRange(0, 3)) {
      case 0:
        b[pos] ^= uint8_t(1u << *rc::gen::inRange(0, 8));
        break;
      case 1:
        b[pos] = *rc::gen::arbitrary<uint8_t>();
        break;
      default:
        b[pos] = *rc::gen::elementOf(std::vector<uint8_t>{0x00, 0x01, 0x10, 0x80, 0xFF, 0x7F, 0x20, 0x12});
        break;
    }
  }
}

}  // namespace

// The error kinds of SPEC section 4 are one list with one spelling in both codecs.
TEST(CodecAgreement, R_VAL_1_ErrorKindNamesMatch) {
  const std::vector<std::string> spec = {"Truncated",    "EtherType",       "IpVersion", "Ipv4Options", "IpLength",
                                         "Ipv4Checksum", "Fragment",        "NotUdp",    "UdpLength",   "UdpPort",
                                         "UdpChecksum",  "TransportLength", "Version",   "Opcode",      "Icrc",
                                         "Reserved",     "PayloadLength",   "Range",     "SackBase"};
  ASSERT_EQ(spec.size() + 1, fast::kErrorCount);
  for (size_t i = 0; i < spec.size(); ++i) {
    EXPECT_EQ(ref::error_name(static_cast<ref::ErrorKind>(i)), spec[i]);
    EXPECT_EQ(fast::error_name(static_cast<fast::Error>(i + 1)), spec[i]);
    EXPECT_EQ(fast::canonical_error(static_cast<fast::Error>(i + 1)), "ERROR " + spec[i]);
  }
}

// (a) fully random bytes: almost always an early error, but it must be the same one.
RC_GTEST_PROP(CodecAgreement, R_VAL_1_RandomBytesAgree, (const std::vector<uint8_t>& bytes)) {
  RC_TAG(assert_agree(bytes));
}

// (a) random bytes behind a valid Ethernet + IP + UDP prefix (cut anywhere), repaired or not.
RC_GTEST_PROP(CodecAgreement, R_VAL_1_RandomTailBehindValidHeadersAgree, ()) {
  const FrameCase c = *gen_valid_frame();
  Bytes b(c.bytes.begin(), c.bytes.begin() + uniform(0, c.bytes.size() + 1));
  const auto tail = *rc::gen::container<Bytes>(rc::gen::arbitrary<uint8_t>());
  b.insert(b.end(), tail.begin(), tail.end());
  apply_fix(b, *gen_fix());
  RC_TAG(assert_agree(b, c.port));
}

// (b) valid frames from both generators: both accept, with the same fields.
RC_GTEST_PROP(CodecAgreement, R_VAL_1_ValidFramesFromBothGeneratorsAgree, ()) {
  const FrameCase c = *gen_valid_frame();
  RC_ASSERT(assert_agree(c.bytes, c.port) == "OK");
}

// (c) valid frames with byte mutations, with and without fix-up of lengths, checksums and ICRC.
RC_GTEST_PROP(CodecAgreement, R_VAL_1_MutatedFramesAgree, ()) {
  FrameCase c = *gen_valid_frame();
  mutate(c.bytes);
  const Fix fix = *gen_fix();
  apply_fix(c.bytes, fix);
  const std::string outcome = assert_agree(c.bytes, c.port);
  RC_TAG(outcome);
}

// (d) every truncation of a valid frame, with the lengths left as they were or repaired to match.
RC_GTEST_PROP(CodecAgreement, R_VAL_2_TruncationsAgree, ()) {
  const FrameCase c = *gen_valid_frame();
  // Anywhere, or within the last 80 bytes (transport and extension lengths).
  const size_t size = c.bytes.size();
  const size_t n =
      *rc::gen::arbitrary<bool>() ? uniform(0, size + 1) : size - uniform(0, std::min<size_t>(size, 80) + 1);
  Bytes b(c.bytes.begin(), c.bytes.begin() + n);
  if (*rc::gen::arbitrary<bool>()) apply_fix(b, *rc::gen::element(Fix::All, Fix::LengthsOnly));
  RC_TAG(assert_agree(b, c.port));
}

// (c) deterministic: the fuzzers' own post-mutation step (fuzz/common/mutator.hpp) over the sample
// frames of every opcode. Besides agreement, the fix-ups must carry mutations past the ICRC check:
// at least 4 of the 5 error kinds of checks 18..23 must show up, and some frames must be accepted.
TEST(CodecAgreement, R_VAL_1_FuzzMutatorFramesAgreeAndReachDeepChecks) {
  std::map<std::string, int> seen;
  fz::Rng rng(20240601);
  std::vector<Bytes> seeds;
  for (const bool v6 : {false, true}) {
    for (const ref::Opcode op : ref::test::all_known_opcodes()) seeds.push_back(ref::test::sample_frame(op, v6));
  }
  for (int iter = 0; iter < 20000; ++iter) {
    Bytes b = seeds[rng.below(uint32_t(seeds.size()))];
    const size_t max = b.size() + 64;
    b.resize(max);
    size_t n = max - 64;
    for (uint32_t k = 1 + rng.below(3); k > 0; --k) {
      const uint32_t bth = uint32_t(bth_offset(b));
      const size_t pos = rng.one_in(2) && bth + 64 < n ? bth + rng.below(64) : rng.below(uint32_t(n));
      b[pos] = uint8_t(rng.next());
    }
    n = fz::post_mutate(b.data(), n, max, rng.next());
    b.resize(n);
    const std::string r = ref_line(b, ref::kDefaultUdpPort);
    const std::string f = fast_line(b, ref::kDefaultUdpPort);
    ASSERT_EQ(r, f) << "iteration " << iter;
    ++seen[r.rfind("ERROR ", 0) == 0 ? r.substr(6) : "OK"];
  }
  int deep = 0;
  for (const char* k : {"Reserved", "PayloadLength", "Range", "SackBase"}) deep += seen.count(k) ? 1 : 0;
  std::string summary;
  for (const auto& [k, n] : seen) summary += k + "=" + std::to_string(n) + " ";
  EXPECT_GE(deep, 4) << summary;
  EXPECT_GT(seen["OK"], 100) << summary;
  EXPECT_GT(seen["Icrc"], 0) << summary;
}

namespace {

// What ref::decode must return for a frame that fast::build made from `f` + `payload`.
ref::Packet expected_ref_packet(const fast::Fields& f, const Bytes& payload, const Bytes& frame) {
  ref::Packet p{};
  p.eth_dst = f.eth_dst;
  p.eth_src = f.eth_src;
  p.ipv6 = f.ipv6;
  if (f.ipv6) {
    p.ip_src = f.ipv6_src;
    p.ip_dst = f.ipv6_dst;
    p.ipv6_flow_label = f.flow_label;
  } else {
    for (int i = 0; i < 4; ++i) {
      p.ip_src[i] = uint8_t(f.ipv4_src >> (24 - 8 * i));
      p.ip_dst[i] = uint8_t(f.ipv4_dst >> (24 - 8 * i));
    }
    p.ipv4_id = f.ipv4_id;
    p.ipv4_df = f.ipv4_df;
  }
  p.dscp = f.dscp;
  p.ecn = f.ecn;
  p.ttl = f.ttl;
  p.udp_sport = f.udp_sport;
  p.udp_dport = f.udp_dport;
  const size_t l4 = f.ipv6 ? 54 : 34;
  p.udp_checksum = fz::be16(frame.data() + l4 + 6);  // checked separately
  p.version = f.version;
  p.opcode = static_cast<ref::Opcode>(f.opcode);
  p.flags = f.flags;
  p.dcid = f.dcid;
  p.path_id = f.path_id;
  p.timestamp = f.timestamp;
  const ref::Opcode op = p.opcode;
  if (ref::is_data_opcode(op)) {
    p.psn = f.psn;
    p.stream_id = f.stream_id;
    p.payload_length = uint16_t(payload.size());
    p.msn = f.msn;
    p.msg_length = f.msg_length;
    p.msg_offset = f.msg_offset;
    p.payload_offset = uint32_t(l4 + 8 + 16 + fz::ext_len(f.opcode));
    p.payload_len = uint32_t(payload.size());
  }
  if (op == ref::Opcode::Send || op == ref::Opcode::WriteImm) p.rsn = f.rsn;
  if (op == ref::Opcode::Write || op == ref::Opcode::WriteImm || op == ref::Opcode::ReadReq) {
    p.remote_va = f.remote_va;
    p.rkey = f.rkey;
  }
  if (op == ref::Opcode::WriteImm) p.immediate = f.immediate;
  if (op == ref::Opcode::Ack) {
    p.cpsn = f.cpsn;
    p.ce_count = f.ce_count;
    p.ts_echo = f.ts_echo;
    p.rate_hint = f.rate_hint;
    p.sack = f.sack;
  }
  if (op == ref::Opcode::Nak) {
    p.nak_psn = f.nak_psn;
    p.nak_code = f.nak_code;
    p.nak_detail = f.nak_detail;
  }
  if (op == ref::Opcode::Connect || op == ref::Opcode::Accept) {
    p.scid = f.scid;
    p.isn = f.isn;
    p.path_count = f.path_count;
    p.stream_count = f.stream_count;
    p.max_payload = f.max_payload;
    p.window_cap = f.window_cap;
  }
  if (op == ref::Opcode::Reject || op == ref::Opcode::Disconnect) p.reason = f.reason;
  const size_t ip_end = frame.size() - f.raw.eth_padding;
  p.icrc = fz::be32(frame.data() + ip_end - 4);
  return p;
}

// fast encoder -> reference decoder, for a valid packet of opcode `op`.
void fast_encode_ref_decode(fast::Opcode op) {
  const auto p = *fast::testgen::gen_valid_packet_for(op);
  const Bytes frame = fast::build(p.f, p.payload);
  const ref::DecodeResult r = ref::decode(frame, p.port);
  RC_ASSERT(r.ok());
  const ref::Packet want = expected_ref_packet(p.f, p.payload, frame);
  RC_ASSERT(r.packet == want);
  // The ICRC and a non-zero UDP checksum verify by our own arithmetic ([R-HDR-28], [R-ENC-7]).
  const size_t ip_end = frame.size() - p.f.raw.eth_padding;
  const size_t bth = p.f.ipv6 ? 62 : 42;
  RC_ASSERT(fz::crc32c(frame.data() + bth, ip_end - 4 - bth) == r.packet.icrc);
  RC_ASSERT((r.packet.udp_checksum != 0) == p.f.raw.udp_checksum_compute);
  if (r.packet.udp_checksum != 0) {
    Bytes again(frame.begin(), frame.begin() + long(ip_end));
    fz::FixOptions o;
    o.lengths = o.payload_length = o.icrc = o.ipv4_checksum = false;
    o.udp = fz::UdpCsum::Compute;
    fz::fix_frame(again.data(), again.size(), o);
    RC_ASSERT(fz::be16(again.data() + bth - 2) == r.packet.udp_checksum);
  }
  RC_ASSERT(std::equal(p.payload.begin(), p.payload.end(), frame.begin() + r.packet.payload_offset));
  // Both codecs print it the same way, and the reference encoder reproduces the IP packet.
  RC_ASSERT(ref::canonical(r, frame) == fast_line(frame, p.port));
  const Bytes back = ref::encode(r.packet, p.payload, r.packet.udp_checksum != 0);
  RC_ASSERT(Bytes(frame.begin(), frame.begin() + long(ip_end)) == back);
}

// reference encoder -> fast decoder, for a valid packet of opcode `op`.
void ref_encode_fast_decode(ref::Opcode op) {
  const auto [p, payload] = *ref::gen_valid_packet_with_payload(op);
  const Bytes frame = ref::encode(p, payload);
  fast::PacketView v;
  const fast::Error e = fast::decode(frame.data(), uint32_t(frame.size()), p.udp_dport, v);
  RC_ASSERT(e == fast::Error::None);
  ref::Packet want = p;
  want.icrc = fz::crc32c(frame.data() + (p.ipv6 ? 62 : 42), frame.size() - 4 - (p.ipv6 ? 62 : 42));
  // Appendix C prints every field, so equal lines mean equal fields.
  RC_ASSERT(fast::canonical(v) == ref::canonical(ref::DecodeResult{std::nullopt, want}, frame));
  RC_ASSERT(v.icrc() == want.icrc);
  RC_ASSERT(v.payload_len() == payload.size());
  RC_ASSERT(std::equal(payload.begin(), payload.end(), v.payload()));
  // And the fast encoder, given the fast view's fields, writes the same bytes.
  RC_ASSERT(fast::build(fast::fields_of(v), payload) == frame);
}

}  // namespace

TEST(CodecAgreement, R_VAL_4_FastEncodeRefDecodeIdentityEveryOpcode) {
  for (const fast::Opcode op : fast::kAllOpcodes) {
    EXPECT_TRUE(rc::check(std::string("fast encode -> ref decode, ") + fast::opcode_name(op), [op] {
      fast_encode_ref_decode(op);
    })) << fast::opcode_name(op);
  }
}

TEST(CodecAgreement, R_VAL_4_RefEncodeFastDecodeIdentityEveryOpcode) {
  for (const ref::Opcode op : ref::all_opcodes()) {
    EXPECT_TRUE(rc::check("ref encode -> fast decode, " + std::string(ref::opcode_name(op)), [op] {
      ref_encode_fast_decode(op);
    })) << ref::opcode_name(op);
  }
}
