// rapidcheck properties of the fast codec: build/decode round trips, [R-VAL-4] re-encoding,
// truncation ([R-VAL-2]), robustness on arbitrary bytes, and [R-VAL-1] precedence between checks.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "codec/fast_codec.hpp"
#include "fast_packet_gen.hpp"

using namespace mroce::fast;
using mroce::fast::testgen::FastPacket;

namespace mroce::fast {
// Lets rapidcheck and gtest print error kinds in failure reports.
inline std::ostream& operator<<(std::ostream& os, Error e) { return os << error_name(e); }
}  // namespace mroce::fast

namespace {

using Bytes = std::vector<uint8_t>;

// The frame in an exactly-sized heap block, so ASan flags any read past `len`.
struct Exact {
  std::unique_ptr<uint8_t[]> p;
  uint32_t n;
  explicit Exact(const uint8_t* src, uint32_t len) : p(new uint8_t[len ? len : 1]), n(len) {
    if (len) std::memcpy(p.get(), src, len);
  }
};

uint32_t ip_end(const Bytes& b) {  // end of the IP packet of a well-formed frame
  const bool v6 = b[12] == 0x86;
  return v6 ? 54 + (uint32_t(b[18]) << 8 | b[19]) : 14 + (uint32_t(b[16]) << 8 | b[17]);
}

// Every field of f that the opcode carries equals what the view reports.
void check_fields(const Fields& f, const Bytes& payload, const PacketView& v, const Bytes& frame) {
  RC_ASSERT(v.eth_dst() == f.eth_dst);
  RC_ASSERT(v.eth_src() == f.eth_src);
  RC_ASSERT(v.ipv6() == f.ipv6);
  RC_ASSERT(v.ether_type() == (f.ipv6 ? 0x86DD : 0x0800));
  if (f.ipv6) {
    RC_ASSERT(v.ipv6_src() == f.ipv6_src);
    RC_ASSERT(v.ipv6_dst() == f.ipv6_dst);
    RC_ASSERT(v.flow_label() == f.flow_label);
    RC_ASSERT(std::memcmp(v.ip_src(), f.ipv6_src.data(), 16) == 0);
  } else {
    RC_ASSERT(v.ipv4_src() == f.ipv4_src);
    RC_ASSERT(v.ipv4_dst() == f.ipv4_dst);
    RC_ASSERT(v.ipv4_id() == f.ipv4_id);
    RC_ASSERT(v.ipv4_df() == f.ipv4_df);
  }
  RC_ASSERT(v.dscp() == f.dscp);
  RC_ASSERT(v.ecn() == f.ecn);
  RC_ASSERT(v.ttl() == f.ttl);
  RC_ASSERT(v.udp_sport() == f.udp_sport);
  RC_ASSERT(v.udp_dport() == f.udp_dport);
  RC_ASSERT(v.version() == f.version);
  RC_ASSERT(uint8_t(v.opcode()) == f.opcode);
  RC_ASSERT(v.flags() == f.flags);
  RC_ASSERT(v.ar() == bool(f.flags & kFlagAr));
  RC_ASSERT(v.retx() == bool(f.flags & kFlagRetx));
  RC_ASSERT(v.is_void() == bool(f.flags & kFlagVoid));
  RC_ASSERT(v.dcid() == f.dcid);
  RC_ASSERT(v.path_id() == f.path_id);
  RC_ASSERT(v.timestamp() == f.timestamp);
  const Opcode op = v.opcode();
  RC_ASSERT(v.is_data() == opcode_info(f.opcode).data);
  if (v.is_data()) {
    RC_ASSERT(v.psn() == f.psn);
    RC_ASSERT(v.stream_id() == f.stream_id);
    RC_ASSERT(v.payload_length() == payload.size());
    RC_ASSERT(v.msn() == f.msn);
    RC_ASSERT(v.msg_length() == f.msg_length);
    RC_ASSERT(v.msg_offset() == f.msg_offset);
  }
  if (op == Opcode::Send || op == Opcode::WriteImm) RC_ASSERT(v.rsn() == f.rsn);
  if (op == Opcode::Write || op == Opcode::WriteImm || op == Opcode::ReadReq) {
    RC_ASSERT(v.remote_va() == f.remote_va);
    RC_ASSERT(v.rkey() == f.rkey);
  }
  if (op == Opcode::WriteImm) RC_ASSERT(v.immediate() == f.immediate);
  if (op == Opcode::Ack) {
    RC_ASSERT(v.cpsn() == f.cpsn);
    RC_ASSERT(v.ce_count() == f.ce_count);
    RC_ASSERT(v.ts_echo() == f.ts_echo);
    RC_ASSERT(v.rate_hint() == f.rate_hint);
    RC_ASSERT(std::memcmp(v.sack_bytes(), f.sack.data(), 32) == 0);
  }
  if (op == Opcode::Nak) {
    RC_ASSERT(v.nak_psn() == f.nak_psn);
    RC_ASSERT(v.nak_code() == f.nak_code);
    RC_ASSERT(v.nak_detail() == f.nak_detail);
  }
  if (op == Opcode::Connect || op == Opcode::Accept) {
    RC_ASSERT(v.scid() == f.scid);
    RC_ASSERT(v.isn() == f.isn);
    RC_ASSERT(v.path_count() == f.path_count);
    RC_ASSERT(v.stream_count() == f.stream_count);
    RC_ASSERT(v.max_payload() == f.max_payload);
    RC_ASSERT(v.window_cap() == f.window_cap);
  }
  if (op == Opcode::Reject || op == Opcode::Disconnect) RC_ASSERT(v.reason() == f.reason);
  // Payload: a view into the frame, right after the extension ([R-VAL-4]).
  RC_ASSERT(v.payload_len() == payload.size());
  RC_ASSERT(v.payload() == frame.data() + v.payload_offset());
  RC_ASSERT(v.payload_offset() == v.bth_offset() + kBthLen + opcode_info(f.opcode).ext_len);
  RC_ASSERT(std::equal(payload.begin(), payload.end(), v.payload()));
  RC_ASSERT(v.icrc() ==
            crc32c_scalar(frame.data() + v.bth_offset(), v.payload_offset() + v.payload_len() - v.bth_offset()));
}

void roundtrip(const FastPacket& p) {
  const Bytes b = build(p.f, p.payload);
  PacketView v;
  const Error e = decode(b.data(), uint32_t(b.size()), p.port, v);
  RC_ASSERT(e == Error::None);
  check_fields(p.f, p.payload, v, b);
  RC_ASSERT(v.frame_len() == b.size());
  RC_ASSERT(v.ip_packet_len() + kEthLen + p.f.raw.eth_padding == b.size());
}

}  // namespace

// build -> decode is the identity, for every opcode and every valid field value.
RC_GTEST_PROP(FastCodecProp, R_VAL_4_BuildDecodeIdentity, ()) { roundtrip(*testgen::gen_valid_packet()); }

TEST(FastCodecProp, R_VAL_4_BuildDecodeIdentityEachOpcode) {
  for (Opcode op : kAllOpcodes) {
    const auto res =
        rc::check(std::string("opcode ") + opcode_name(op), [op] { roundtrip(*testgen::gen_valid_packet_for(op)); });
    EXPECT_TRUE(res) << opcode_name(op);
  }
}

// decode -> rebuild reproduces the frame's bytes up to the end of the IP packet ([R-VAL-4]).
RC_GTEST_PROP(FastCodecProp, R_VAL_4_DecodeRebuildSameBytes, ()) {
  const FastPacket p = *testgen::gen_valid_packet();
  const Bytes b = build(p.f, p.payload);
  PacketView v;
  RC_ASSERT(decode(b.data(), uint32_t(b.size()), p.port, v) == Error::None);
  const Bytes rebuilt = build(fields_of(v), Bytes(v.payload(), v.payload() + v.payload_len()));
  const uint32_t end = ip_end(b);
  RC_ASSERT(rebuilt.size() == end);
  RC_ASSERT(std::equal(rebuilt.begin(), rebuilt.end(), b.begin()));
}

// Any truncation inside the IP packet is an error, the one the check order predicts, and decode
// never reads past the given length (ASan build: the prefix lives in an exact-size heap block).
RC_GTEST_PROP(FastCodecProp, R_VAL_2_TruncationIsErrorNoOverread, ()) {
  const FastPacket p = *testgen::gen_valid_packet();
  const Bytes b = build(p.f, p.payload);
  const uint32_t end = ip_end(b);
  std::vector<uint32_t> cuts;
  if (end <= 200) {
    for (uint32_t n = 0; n < end; ++n) cuts.push_back(n);
  } else {
    cuts = *rc::gen::container<std::vector<uint32_t>>(40, rc::gen::inRange<uint32_t>(0, end));
    cuts.push_back(end - 1);
  }
  const uint32_t ip_min = p.f.ipv6 ? 54 : 34;
  for (uint32_t n : cuts) {
    const Exact x(b.data(), n);
    PacketView v;
    const Error e = decode(x.p.get(), n, p.port, v);
    const Error want = n < ip_min ? Error::Truncated : Error::IpLength;
    RC_ASSERT(e == want);
  }
  // Cutting only Ethernet padding keeps the frame valid.
  for (uint32_t n = end; n <= b.size(); ++n) {
    const Exact x(b.data(), n);
    PacketView v;
    RC_ASSERT(decode(x.p.get(), n, p.port, v) == Error::None);
  }
}

namespace {
void decode_anything(const Bytes& bytes, uint16_t port) {
  const Exact x(bytes.data(), uint32_t(bytes.size()));
  PacketView v;
  const Error e = decode(x.p.get(), x.n, port, v);
  RC_ASSERT(unsigned(e) < kErrorCount);
  if (e == Error::None) {
    // Whatever was accepted is self-consistent and printable.
    RC_ASSERT(v.payload_offset() + v.payload_len() + kIcrcLen <= x.n);
    RC_ASSERT(!canonical(v).empty());
    const Fields f = fields_of(v);
    const Bytes again = build(f, Bytes(v.payload(), v.payload() + v.payload_len()));
    PacketView w;
    RC_ASSERT(decode(again.data(), uint32_t(again.size()), port, w) == Error::None);
    RC_ASSERT(canonical(w) == canonical(v));
  }
}
}  // namespace

// Arbitrary bytes never crash the decoder (nor read out of bounds).
RC_GTEST_PROP(FastCodecProp, R_VAL_2_ArbitraryBytesNeverCrash, (const std::vector<uint8_t>& bytes)) {
  decode_anything(bytes, kDefaultUdpPort);
}

// Valid frames with a few random byte mutations: deep into the checks, still no crash.
RC_GTEST_PROP(FastCodecProp, R_VAL_2_MutatedFramesNeverCrash, ()) {
  const FastPacket p = *testgen::gen_valid_packet();
  Bytes b = build(p.f, p.payload);
  const auto nmut = *rc::gen::inRange(1, 4);
  for (int i = 0; i < nmut; ++i) {
    const size_t at = *rc::gen::inRange<size_t>(0, b.size());
    b[at] ^= *rc::gen::inRange<uint8_t>(1, 255);
  }
  if (*rc::gen::arbitrary<bool>()) b.resize(*rc::gen::inRange<size_t>(0, b.size() + 1));
  decode_anything(b, p.port);
}

// ------------------------------------------------------------------------------------------------
// [R-VAL-1]: with one or two faults injected in a valid packet, the earliest failing check decides.

namespace {

enum Key : unsigned {
  kEt = 1 << 0,
  kIpVer = 1 << 1,
  kIhl = 1 << 2,
  kIpLen = 1 << 3,
  kIpCs = 1 << 4,
  kFrag = 1 << 5,
  kProto = 1 << 6,
  kUdpLen = 1 << 7,
  kPort = 1 << 8,
  kUdpCs = 1 << 9,
  kVer = 1 << 10,
  kOp = 1 << 11,
  kPay = 1 << 12,
  kIcrc = 1 << 13,
  kRsv = 1 << 14,
  kPl = 1 << 15,
  kMlen = 1 << 16,
  kExt = 1 << 17,
};

struct Fault {
  int check;
  Error error;
  unsigned keys;  // fields it touches: two faults on the same field are not combined
  std::function<bool(const FastPacket&)> applies;
  std::function<void(FastPacket&)> apply;
};

bool any(const FastPacket&) { return true; }
bool v4(const FastPacket& p) { return !p.f.ipv6; }
bool data(const FastPacket& p) { return opcode_info(p.f.opcode).data; }
bool is(const FastPacket& p, std::initializer_list<Opcode> ops) {
  return std::find(ops.begin(), ops.end(), Opcode(p.f.opcode)) != ops.end();
}
// Shrink the datagram to `upl` bytes of UDP payload (the frame keeps its bytes: they become padding).
void shrink(FastPacket& p, uint32_t upl) {
  p.f.raw.udp_length = uint16_t(8 + upl);
  p.f.raw.ip_length = uint16_t((p.f.ipv6 ? 0 : 20) + 8 + upl);
}

const std::vector<Fault>& faults() {
  static const std::vector<Fault> k = {
      {2, Error::EtherType, kEt, any, [](FastPacket& p) { p.f.raw.ether_type = 0x8100; }},
      {4, Error::IpVersion, kIpVer, any, [](FastPacket& p) { p.f.raw.ip_version = 5; }},
      {5, Error::Ipv4Options, kIhl, v4, [](FastPacket& p) { p.f.raw.ipv4_ihl = 6; }},
      {6, Error::IpLength, kIpLen, any, [](FastPacket& p) { p.f.raw.ip_length = p.f.ipv6 ? 7 : 27; }},
      {7, Error::Ipv4Checksum, kIpCs, v4, [](FastPacket& p) { p.f.raw.ipv4_checksum_xor = 1; }},
      {8, Error::Fragment, kFrag, v4, [](FastPacket& p) { p.f.raw.ipv4_frag = 0x2000; }},
      {9, Error::NotUdp, kProto, any, [](FastPacket& p) { p.f.raw.ip_proto = 6; }},
      {10, Error::UdpLength, kUdpLen, any, [](FastPacket& p) { p.f.raw.udp_length = 7; }},
      {11, Error::UdpPort, kPort, any, [](FastPacket& p) { p.f.udp_dport = uint16_t(p.port ^ 1); }},
      {12, Error::UdpChecksum, kUdpCs, any, [](FastPacket& p) { p.f.raw.udp_checksum_corrupt = true; }},
      {13, Error::TransportLength, kIpLen | kUdpLen, any, [](FastPacket& p) { shrink(p, 19); }},
      {14, Error::Version, kVer, any, [](FastPacket& p) { p.f.version = 2; }},
      // An unknown opcode is built as a bare BTH: pad the payload so the frame keeps its size.
      {15, Error::Opcode, kOp, any,
       [](FastPacket& p) {
         p.payload.insert(p.payload.begin(), opcode_info(p.f.opcode).ext_len, uint8_t(0));
         p.f.opcode = 0x06;
       }},
      {16, Error::TransportLength, kPay, [](const FastPacket& p) { return !data(p); },
       [](FastPacket& p) { p.payload.push_back(0); }},
      {16, Error::TransportLength, kIpLen | kUdpLen, data,
       [](FastPacket& p) { shrink(p, 16 + opcode_info(p.f.opcode).ext_len + 4 - 1); }},
      {17, Error::Icrc, kIcrc, any, [](FastPacket& p) { p.f.raw.icrc_xor = 0x80000000u; }},
      {18, Error::Reserved, kRsv, any, [](FastPacket& p) { p.f.bth_rsvd16 = 1; }},
      {19, Error::PayloadLength, kPl, data,
       [](FastPacket& p) { p.f.raw.payload_length = uint16_t(p.payload.size() + 1); }},
      {20, Error::Range, kMlen, data, [](FastPacket& p) { p.f.msg_length = 0x80000001u; }},
      {21, Error::SackBase, kExt, [](const FastPacket& p) { return is(p, {Opcode::Ack}); },
       [](FastPacket& p) { p.f.sack[0] |= 0x80; }},
      {22, Error::Reserved, kExt, [](const FastPacket& p) { return is(p, {Opcode::Nak}); },
       [](FastPacket& p) { p.f.nak_rsvd = 1; }},
      {23, Error::Range, kExt,
       [](const FastPacket& p) {
         return is(p, {Opcode::Connect, Opcode::Accept});
       },
       [](FastPacket& p) { p.f.window_cap = 0; }},
      {23, Error::Reserved, kExt,
       [](const FastPacket& p) {
         return is(p, {Opcode::Reject, Opcode::Disconnect});
       },
       [](FastPacket& p) { p.f.reason = 6; }},
  };
  return k;
}

}  // namespace

RC_GTEST_PROP(FastCodecProp, R_VAL_1_EarliestFailingCheckDecides, ()) {
  FastPacket p = *testgen::gen_valid_packet();
  std::vector<size_t> ok;
  for (size_t i = 0; i < faults().size(); ++i)
    if (faults()[i].applies(p)) ok.push_back(i);
  const size_t a = *rc::gen::elementOf(ok);
  const bool single = *rc::gen::inRange(0, 3) == 0;
  const size_t b = single ? a : *rc::gen::elementOf(ok);
  const Fault& fa = faults()[a];
  const Fault& fb = faults()[b];
  RC_PRE(a == b || (fa.keys & fb.keys) == 0);
  const Fault& first = fa.check <= fb.check ? fa : fb;
  const Fault& second = fa.check <= fb.check ? fb : fa;
  // The later check's fault goes in first so that it is sized on the unmodified layout (the
  // Opcode fault changes the extension length, for one).
  second.apply(p);
  if (b != a) first.apply(p);
  RC_CLASSIFY(a == b, "single fault");
  RC_TAG(first.check);
  const Bytes bytes = build(p.f, p.payload);
  const Exact x(bytes.data(), uint32_t(bytes.size()));
  PacketView v;
  RC_ASSERT(decode(x.p.get(), x.n, p.port, v) == first.error);
}
