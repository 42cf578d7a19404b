// rapidcheck properties of the reference codec.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "codec/ref_codec.hpp"
#include "ref_packet_gen.hpp"
#include "ref_test_util.hpp"

namespace mroce::ref {
namespace {

using test::Frame;
using test::rd16;
using test::rd32;

std::string outcome(const DecodeResult& r) { return r.ok() ? "OK" : std::string(error_name(*r.error)); }

// Expected frame size, from section 2 and table 3.2.
size_t expected_frame_size(const Packet& p) {
  return 14 + (p.ipv6 ? 40 : 20) + 8 + 16 + gen_detail::table_3_2_extension_length(p.opcode) + p.payload_len + 4;
}

// The bytes a re-encoding must reproduce: the frame up to the end of the IP packet ([R-VAL-4]).
Frame ip_packet_prefix(const Frame& f) { return Frame(f.begin(), f.begin() + static_cast<long>(test::ip_end(f))); }

// ---------------------------------------------------------------------------------------------
// encode -> decode is the identity, for every opcode ([R-VAL-4])
// ---------------------------------------------------------------------------------------------

void check_encode_decode_identity(Opcode op) {
  const auto [p, payload] = *gen_valid_packet_with_payload(op);
  const Frame f = encode(p, payload);
  RC_ASSERT(f.size() == expected_frame_size(p));
  const Frame copy = f;  // exact-size buffer
  const DecodeResult r = decode(copy);
  RC_ASSERT(outcome(r) == "OK");
  // The ICRC: the last 4 bytes, CRC-32C of the UDP payload before them ([R-HDR-28]).
  const size_t bth = test::bth_off(f);
  RC_ASSERT(r.packet.icrc == rd32(f, f.size() - 4));
  RC_ASSERT(r.packet.icrc == crc32c(std::span<const uint8_t>(f).subspan(bth, f.size() - 4 - bth)));
  Packet got = r.packet;
  got.icrc = 0;
  RC_ASSERT(got == p);
  // The payload bytes sit where payload_offset says.
  RC_ASSERT(std::equal(payload.begin(), payload.end(), f.begin() + static_cast<long>(r.packet.payload_offset)));
}

TEST(RefCodecProp, R_VAL_4_EncodeDecodeIdentityEveryOpcode) {
  for (const Opcode op : all_opcodes()) {
    EXPECT_TRUE(rc::check("encode->decode identity, " + std::string(opcode_name(op)), [op] {
      check_encode_decode_identity(op);
    })) << opcode_name(op);
  }
}

RC_GTEST_PROP(RefCodecProp, R_ENC_7_ComputedUdpChecksumIsAccepted, ()) {
  const auto [p, payload] = *gen_valid_packet_with_payload();
  const Frame f = encode(p, payload, true);
  const uint16_t csum = rd16(f, test::udp_off(f) + 6);
  RC_ASSERT(csum != 0);
  const DecodeResult r = decode(f);
  RC_ASSERT(outcome(r) == "OK");
  RC_ASSERT(r.packet.udp_checksum == csum);
  Packet got = r.packet;
  got.udp_checksum = 0;
  got.icrc = 0;
  RC_ASSERT(got == p);
  // Without the checksum only the checksum field differs.
  Frame plain = encode(p, payload, false);
  test::wr16(plain, test::udp_off(plain) + 6, csum);
  RC_ASSERT(plain == f);
}

RC_GTEST_PROP(RefCodecProp, R_ENC_7_NonZeroUdpChecksumCatchesAnyByteChange, ()) {
  const auto [p, payload] = *gen_valid_packet_with_payload();
  Frame f = encode(p, payload, true);
  // Any single byte of the UDP source port or of the UDP payload: the checksum (check 12) catches
  // it before the ICRC (check 17) does.
  std::vector<size_t> positions = {test::udp_off(f), test::udp_off(f) + 1};
  for (size_t i = test::bth_off(f); i < f.size(); ++i) positions.push_back(i);
  const size_t at = *rc::gen::elementOf(positions);
  const uint8_t flip = *rc::gen::inRange<uint8_t>(1, 255);
  f[at] ^= flip;
  RC_ASSERT(outcome(decode(f)) == "UdpChecksum");
}

// ---------------------------------------------------------------------------------------------
// decode -> encode reproduces the frame up to the end of the IP packet ([R-VAL-4], [R-ENC-8])
// ---------------------------------------------------------------------------------------------

RC_GTEST_PROP(RefCodecProp, R_VAL_4_DecodeEncodeReproducesBytes, ()) {
  const auto [p, payload] = *gen_valid_packet_with_payload();
  const bool with_checksum = *rc::gen::arbitrary<bool>();
  const Frame f = encode(p, payload, with_checksum);
  const auto padding =
      *rc::gen::container<std::vector<uint8_t>>(*rc::gen::inRange<size_t>(0, 64), rc::gen::arbitrary<uint8_t>());
  Frame padded = f;
  padded.insert(padded.end(), padding.begin(), padding.end());
  const DecodeResult r = decode(padded);
  RC_ASSERT(outcome(r) == "OK");
  const auto view = std::span<const uint8_t>(padded).subspan(r.packet.payload_offset, r.packet.payload_len);
  RC_ASSERT(encode(r.packet, view, r.packet.udp_checksum != 0) == f);
}

// ---------------------------------------------------------------------------------------------
// [R-VAL-2]: no input makes the decoder read outside the frame or fail other than by an error
// ---------------------------------------------------------------------------------------------

RC_GTEST_PROP(RefCodecProp, R_VAL_2_EveryTruncationIsAnError, ()) {
  const auto [p, payload] = *gen_valid_packet_with_payload();
  const Frame f = encode(p, payload, *rc::gen::arbitrary<bool>());
  const size_t ip_header_end = 14 + (p.ipv6 ? 40 : 20);
  for (size_t len = 0; len < f.size(); ++len) {
    const Frame cut(f.begin(), f.begin() + static_cast<long>(len));  // exact-size buffer
    const DecodeResult r = decode(cut);
    // Checks 1 and 3 while the fixed headers are incomplete, then check 6: the IP length points
    // past the end of the frame.
    const std::string expected = len < ip_header_end ? "Truncated" : "IpLength";
    RC_ASSERT(outcome(r) == expected);
    RC_ASSERT(canonical(r, cut) == "ERROR " + expected);
  }
}

RC_GTEST_PROP(RefCodecProp, R_VAL_2_ArbitraryBytesNeverCrash, (const std::vector<uint8_t>& bytes)) {
  const DecodeResult r = decode(bytes);
  const std::string line = canonical(r, bytes);
  RC_ASSERT((line.rfind("ERROR ", 0) == 0) == !r.ok());
}

// Arbitrary bytes behind a plausible Ethernet + IP + UDP prefix, so the decoder gets further in.
RC_GTEST_PROP(RefCodecProp, R_VAL_2_ArbitraryTransportNeverCrashes, ()) {
  const auto [p, payload] = *gen_valid_packet_with_payload();
  Frame f = encode(p, payload);
  const auto tail =
      *rc::gen::container<std::vector<uint8_t>>(*rc::gen::inRange<size_t>(0, 200), rc::gen::arbitrary<uint8_t>());
  test::resize_transport(f, tail.size());
  std::copy(tail.begin(), tail.end(), f.begin() + static_cast<long>(test::bth_off(f)));
  if (*rc::gen::arbitrary<bool>() && tail.size() >= 4) test::fix_icrc(f);
  const DecodeResult r = decode(f);
  RC_ASSERT((canonical(r, f).rfind("ERROR ", 0) == 0) == !r.ok());
  if (tail.size() < 20) RC_ASSERT(outcome(r) == "TransportLength");
}

// Random byte changes to a valid frame, optionally with the IPv4 checksum and ICRC repaired so
// that the change reaches the transport checks. The decoder either rejects the frame or accepts
// it with fields that re-encode to exactly the same bytes: nothing accepted is lost or invented.
RC_GTEST_PROP(RefCodecProp, R_VAL_4_MutatedFramesRejectedOrFaithful, ()) {
  const auto [p, payload] = *gen_valid_packet_with_payload();
  Frame f = encode(p, payload);
  const int changes = *rc::gen::inRange(1, 5);
  for (int i = 0; i < changes; ++i) {
    // Mostly in the headers, where the rules are.
    const size_t headers_end = p.payload_offset != 0 ? size_t{p.payload_offset} : f.size();
    const size_t at = *rc::gen::weightedOneOf<size_t>(
        {{4, rc::gen::inRange<size_t>(0, headers_end)}, {1, rc::gen::inRange<size_t>(0, f.size())}});
    f[at] ^= *rc::gen::inRange<uint8_t>(1, 255);
  }
  if (*rc::gen::arbitrary<bool>()) {
    // Repair what checks 7 and 17 would catch, if the frame still has a sane layout.
    if (f.size() >= 34 && test::rd16(f, 12) == 0x0800) test::fix_ipv4_checksum(f);
    const bool layout_ok = (test::rd16(f, 12) == 0x0800 || test::rd16(f, 12) == 0x86DD) &&
                           f.size() >= test::udp_off(f) + 8 && test::ip_end(f) <= f.size() &&
                           test::ip_end(f) >= test::bth_off(f) + 4;
    if (layout_ok) test::fix_icrc(f);
  }
  const DecodeResult r = decode(f);
  const std::string line = canonical(r, f);
  RC_ASSERT((line.rfind("ERROR ", 0) == 0) == !r.ok());
  if (!r.ok()) return;
  RC_TAG(std::string(opcode_name(r.packet.opcode)));
  const auto view = std::span<const uint8_t>(f).subspan(r.packet.payload_offset, r.packet.payload_len);
  Frame again = encode(r.packet, view, r.packet.udp_checksum != 0);
  const Frame original = ip_packet_prefix(f);
  // The one accepted difference: an IPv4 header checksum of 0xFFFF where the sum of the other
  // words is 0xFFFF verifies (RFC 1071) but is re-encoded as 0x0000.
  if (!r.packet.ipv6 && rd16(original, 24) == 0xFFFF && rd16(again, 24) == 0x0000) { test::wr16(again, 24, 0xFFFF); }
  RC_ASSERT(again == original);
}

// ---------------------------------------------------------------------------------------------
// Field rules checked against independent predicates
// ---------------------------------------------------------------------------------------------

// [R-HDR-3]: a flag outside the opcode's allowed set is Reserved; allowed ones are accepted.
RC_GTEST_PROP(RefCodecProp, R_HDR_3_FlagsPerOpcode, ()) {
  auto [p, payload] = *gen_valid_packet_with_payload();
  const uint16_t flags = *rc::gen::arbitrary<uint16_t>();
  const bool data = gen_detail::is_data(p.opcode);
  const uint16_t allowed = data ? 0xE000 : (p.opcode == Opcode::Probe ? 0x8000 : 0x0000);
  p.flags = flags;
  if ((flags & 0x2000) && data) {
    payload.clear();  // VOID carries nothing ([R-HDR-16])
    p.payload_length = 0;
    p.payload_len = 0;
  }
  const DecodeResult r = decode(encode(p, payload));
  RC_ASSERT(outcome(r) == ((flags & ~allowed) != 0 ? "Reserved" : "OK"));
}

// [R-HDR-12], [R-HDR-13]: Range exactly when the length exceeds 2^31 or the segment overruns it.
RC_GTEST_PROP(RefCodecProp, R_HDR_13_RangeRule, ()) {
  const Opcode op = *rc::gen::element(Opcode::Send, Opcode::Write, Opcode::WriteImm, Opcode::ReadResp);
  Packet p = *gen_valid_packet(op);
  p.flags = 0;
  p.msg_length = *gen_detail::u32_edgy();
  p.msg_offset = *rc::gen::oneOf(gen_detail::u32_edgy(), rc::gen::just(p.msg_length), rc::gen::just(p.msg_length - 1),
                                 rc::gen::just(p.msg_length - 8));
  const std::vector<uint8_t> payload =
      *rc::gen::container<std::vector<uint8_t>>(*rc::gen::inRange<size_t>(0, 17), rc::gen::arbitrary<uint8_t>());
  const bool in_range =
      p.msg_length <= 0x80000000u && uint64_t{p.msg_offset} + payload.size() <= uint64_t{p.msg_length};
  RC_ASSERT(outcome(decode(encode(p, payload))) == (in_range ? "OK" : "Range"));
}

// [R-HDR-26]: CONNECT/ACCEPT fields, each in its range or Range.
RC_GTEST_PROP(RefCodecProp, R_HDR_26_ConnRanges, ()) {
  Packet p = *gen_valid_packet(*rc::gen::element(Opcode::Connect, Opcode::Accept));
  p.scid = *rc::gen::weightedOneOf<uint32_t>({{1, rc::gen::just(0u)}, {4, rc::gen::arbitrary<uint32_t>()}});
  const auto u16 = [] {
    return rc::gen::weightedOneOf<uint16_t>(
        {{2, rc::gen::arbitrary<uint16_t>()},
         {2, rc::gen::inRange<uint16_t>(0, 300)},
         {1, rc::gen::elementOf(std::vector<uint16_t>{0, 1, 255, 256, 257, 8191, 8192, 8193, 8256, 65535})}});
  };
  p.path_count = *u16();
  p.stream_count = *u16();
  p.max_payload = *u16();
  p.window_cap = *u16();
  const bool ok = p.scid != 0 && p.path_count >= 1 && p.path_count <= 256 && p.stream_count >= 1 &&
                  p.max_payload >= 256 && p.max_payload <= 8192 && p.max_payload % 64 == 0 && p.window_cap >= 1 &&
                  p.window_cap <= 256;
  RC_ASSERT(outcome(decode(encode(p, {}))) == (ok ? "OK" : "Range"));
}

// [R-ENC-5]: the configured port decides, whatever it is.
RC_GTEST_PROP(RefCodecProp, R_ENC_5_ConfiguredPort, (uint16_t port, uint16_t other)) {
  RC_PRE(port != other);
  const auto [p, payload] = *gen_valid_packet_with_payload(port);
  const Frame f = encode(p, payload);
  RC_ASSERT(outcome(decode(f, port)) == "OK");
  RC_ASSERT(outcome(decode(f, other)) == "UdpPort");
}

}  // namespace
}  // namespace mroce::ref
