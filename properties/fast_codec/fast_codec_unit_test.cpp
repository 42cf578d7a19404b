// Unit tests of the fast codec (impl/codec): one or more crafted frames per error kind of
// [R-VAL-1], precedence between checks, CRC-32C, SACK bit order, a hand-derived golden frame,
// the in-place builder and the length/range predicates.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "codec/fast_codec.hpp"
#include "codec/predicates.hpp"

using namespace mroce::fast;

namespace {

using Bytes = std::vector<uint8_t>;

Error dec(const Bytes& b, uint16_t port = kDefaultUdpPort) {
  PacketView v;
  return decode(b.data(), uint32_t(b.size()), port, v);
}

// A valid WRITE with an 8-byte payload.
Fields write_fields(bool v6) {
  Fields f;
  f.eth_dst = {2, 0, 0, 0, 0, 1};
  f.eth_src = {2, 0, 0, 0, 0, 2};
  f.ipv6 = v6;
  f.ipv4_src = 0x0a000001;
  f.ipv4_dst = 0x0a000002;
  f.ipv6_src = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  f.ipv6_dst = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
  f.opcode = uint8_t(Opcode::Write);
  f.dcid = 7;
  f.path_id = 1;
  f.msg_length = 100;
  f.msg_offset = 8;
  return f;
}
const Bytes kPay8 = {1, 2, 3, 4, 5, 6, 7, 8};

Fields op_fields(Opcode op, bool v6 = false) {
  Fields f = write_fields(v6);
  f.opcode = uint8_t(op);
  f.dcid = op == Opcode::Connect ? 0 : 7;
  f.path_id = opcode_info(uint8_t(op)).control ? 0 : 1;
  f.msg_offset = op == Opcode::ReadReq ? 0 : f.msg_offset;
  return f;
}
Bytes op_payload(Opcode op) { return opcode_info(uint8_t(op)).data && op != Opcode::ReadReq ? kPay8 : Bytes{}; }

// Independent RFC 1071 sum over big-endian 16-bit words, for cross-checking.
uint16_t ref_sum(const uint8_t* p, size_t n, uint32_t s = 0) {
  for (size_t i = 0; i + 1 < n; i += 2) s += uint32_t(p[i]) << 8 | p[i + 1];
  if (n & 1) s += uint32_t(p[n - 1]) << 8;
  while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
  return uint16_t(s);
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// Names

TEST(FastCodec, R_VAL_1_ErrorNames) {
  const char* expect[] = {"None",     "Truncated",    "EtherType",       "IpVersion", "Ipv4Options",
                          "IpLength", "Ipv4Checksum", "Fragment",        "NotUdp",    "UdpLength",
                          "UdpPort",  "UdpChecksum",  "TransportLength", "Version",   "Opcode",
                          "Icrc",     "Reserved",     "PayloadLength",   "Range",     "SackBase"};
  for (unsigned i = 0; i < kErrorCount; ++i) EXPECT_STREQ(error_name(Error(i)), expect[i]) << i;
  EXPECT_EQ(canonical_error(Error::SackBase), "ERROR SackBase");
  EXPECT_EQ(uint8_t(Error::SackBase), 19);
}

// ------------------------------------------------------------------------------------------------
// Golden frame, derived by hand from the diagrams of sections 2 and 3.

TEST(FastCodec, R_HDR_GoldenWriteFrame) {
  // clang-format off
  const Bytes golden = {
    // Ethernet: dst 02:00:00:00:00:01, src 02:00:00:00:00:02, type 0x0800
    0x02, 0x00, 0x00, 0x00, 0x00, 0x01,  0x02, 0x00, 0x00, 0x00, 0x00, 0x02,  0x08, 0x00,
    // IPv4: ver 4 IHL 5 | TOS = DSCP 26 << 2 | ECN 2 = 0x6a | total 88 = 20 + 68
    0x45, 0x6a, 0x00, 0x58,
    // id 0 | flags DF, offset 0
    0x00, 0x00, 0x40, 0x00,
    // TTL 64 | proto 17 | checksum: ~(456a+0058+4000+4011+0a00+0001+0a00+0002) = ~d9d6 = 2629
    0x40, 0x11, 0x26, 0x29,
    // src 10.0.0.1, dst 10.0.0.2
    0x0a, 0x00, 0x00, 0x01,  0x0a, 0x00, 0x00, 0x02,
    // UDP: sport 49152, dport 4793, len 68 = 8 + 16 + 32 + 8 + 4, checksum 0
    0xc0, 0x00, 0x12, 0xb9,  0x00, 0x44, 0x00, 0x00,
    // BTH: ver 1 rsvd 0 | opcode 0x02 | flags AR|RETX = 0xc000
    0x10, 0x02, 0xc0, 0x00,
    // DCID 1
    0x00, 0x00, 0x00, 0x01,
    // path 3 | reserved
    0x00, 0x03, 0x00, 0x00,
    // TS 1234
    0x00, 0x00, 0x04, 0xd2,
    // DH: PSN 0xfffffffe | stream 2, plen 8 | MSN 7 | mlen 10000 | moff 4096
    0xff, 0xff, 0xff, 0xfe,  0x00, 0x02, 0x00, 0x08,  0x00, 0x00, 0x00, 0x07,
    0x00, 0x00, 0x27, 0x10,  0x00, 0x00, 0x10, 0x00,
    // RETH: VA 0x1000 | rkey 0x100
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00,  0x00, 0x00, 0x01, 0x00,
    // payload
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
    // ICRC: CRC-32C of the 60 bytes from BTH to payload end (computed offline, bit-serial)
    0xba, 0xba, 0x41, 0x64,
  };
  // clang-format on
  ASSERT_EQ(golden.size(), 102u);

  // Decode the literal bytes.
  PacketView v;
  ASSERT_EQ(decode(golden.data(), uint32_t(golden.size()), kDefaultUdpPort, v), Error::None);
  EXPECT_EQ(v.opcode(), Opcode::Write);
  EXPECT_EQ(v.flags(), kFlagAr | kFlagRetx);
  EXPECT_EQ(v.dcid(), 1u);
  EXPECT_EQ(v.path_id(), 3);
  EXPECT_EQ(v.timestamp(), 1234u);
  EXPECT_EQ(v.psn(), 0xfffffffeu);
  EXPECT_EQ(v.stream_id(), 2);
  EXPECT_EQ(v.payload_length(), 8);
  EXPECT_EQ(v.msn(), 7u);
  EXPECT_EQ(v.msg_length(), 10000u);
  EXPECT_EQ(v.msg_offset(), 4096u);
  EXPECT_EQ(v.remote_va(), 0x1000u);
  EXPECT_EQ(v.rkey(), 0x100u);
  EXPECT_EQ(v.payload_offset(), 90u);
  EXPECT_EQ(v.payload(), golden.data() + 90);  // zero-copy
  EXPECT_EQ(v.payload_len(), 8u);
  EXPECT_EQ(v.icrc(), 0xbaba4164u);
  EXPECT_EQ(v.dscp(), 26);
  EXPECT_EQ(v.ecn(), 2);
  EXPECT_EQ(v.ttl(), 64);
  EXPECT_EQ(canonical(v),
            "ETH dst=02:00:00:00:00:01 src=02:00:00:00:00:02 type=0x0800"
            " | IPV4 src=10.0.0.1 dst=10.0.0.2 dscp=26 ecn=2 id=0x0000 df=1 ttl=64"
            " | UDP sport=49152 dport=4793 len=68 csum=0x0000"
            " | BTH ver=1 op=WRITE flags=AR,RETX dcid=0x00000001 path=3 ts=1234"
            " | DH psn=0xfffffffe stream=2 plen=8 msn=7 mlen=10000 moff=4096"
            " | RETH va=0x0000000000001000 rkey=0x00000100"
            " | PAYLOAD off=90 len=8 | ICRC 0xbaba4164");

  // Build the same packet in place with the production builder.
  PathConfig pc;
  pc.eth_dst = {2, 0, 0, 0, 0, 1};
  pc.eth_src = {2, 0, 0, 0, 0, 2};
  pc.ipv4_src = 0x0a000001;
  pc.ipv4_dst = 0x0a000002;
  FrameTemplate tpl(pc);
  uint8_t buf[256];
  std::memset(buf, 0xEE, sizeof buf);
  uint8_t* pay = put_write(tpl.begin(buf, true), BthFields{kFlagAr | kFlagRetx, 1, 3, 1234},
                           DhFields{0xfffffffe, 2, 7, 10000, 4096}, 0x1000, 0x100);
  ASSERT_EQ(pay, buf + 90);
  std::memcpy(pay, kPay8.data(), 8);
  ASSERT_EQ(finalize(buf, 8), 102u);
  EXPECT_EQ(Bytes(buf, buf + 102), golden);

  // And through the test encoder, from decoded fields ([R-VAL-4]).
  EXPECT_EQ(build(fields_of(v), Bytes(v.payload(), v.payload() + v.payload_len())), golden);
}

TEST(FastCodec, R_ENC_CanonicalIpv6AndAck) {
  Fields f = op_fields(Opcode::Ack, true);
  f.dscp = 48;
  f.ecn = 0;
  f.flow_label = 0xc0001;
  f.cpsn = 9;
  f.ts_echo = 1234;
  sack_set(f.sack.data(), 1);
  sack_set(f.sack.data(), 255);
  const Bytes b = build(f, {});
  PacketView v;
  ASSERT_EQ(decode(b.data(), uint32_t(b.size()), kDefaultUdpPort, v), Error::None);
  const std::string s = canonical(v);
  EXPECT_NE(s.find("ETH dst=02:00:00:00:00:01 src=02:00:00:00:00:02 type=0x86dd | IPV6 "
                   "src=fd00:0:0:0:0:0:0:1 dst=fd00:0:0:0:0:0:0:2 dscp=48 ecn=0 flow=0xc0001 hlim=64 | "
                   "UDP sport=49152 dport=4793 len=76 csum=0x0000 | BTH ver=1 op=ACK flags=- dcid=0x00000007 "
                   "path=1 ts=0 | AETH cpsn=0x00000009 ce=0 tse=1234 hint=0 sack="
                   "4000000000000000000000000000000000000000000000000000000000000001 | ICRC 0x"),
            std::string::npos)
      << s;
  EXPECT_EQ(s.find("PAYLOAD"), std::string::npos);  // only data opcodes print PAYLOAD
}

// ------------------------------------------------------------------------------------------------
// CRC-32C

TEST(FastCodec, R_HDR_28_Crc32cCheckValue) {
  const uint8_t s[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
  EXPECT_EQ(crc32c_scalar(s, 9), 0xE3069283u);
  EXPECT_EQ(crc32c(s, 9), 0xE3069283u);
  EXPECT_EQ(crc32c(s, 0), 0u);
  EXPECT_EQ(crc32c_scalar(s, 0), 0u);
}

TEST(FastCodec, R_HDR_28_Crc32cHardwareMatchesScalarAllLengthsAlignments) {
  std::mt19937 rng(12345);
  std::vector<uint8_t> buf(300 + 64);
  for (int round = 0; round < 4; ++round) {
    for (auto& x : buf) x = uint8_t(rng());
    for (size_t len = 0; len <= 300; ++len)
      for (size_t align = 0; align < 16; ++align)
        ASSERT_EQ(crc32c(buf.data() + align, len), crc32c_scalar(buf.data() + align, len))
            << "len " << len << " align " << align;
  }
}

TEST(FastCodec, R_HDR_28_Crc32cLargeBuffersAndExtend) {
  // Lengths around the switch to ISA-L (256 bytes), its folding blocks, and full data frames.
  std::mt19937 rng(777);
  std::vector<uint8_t> buf(20000 + 8);  // room for the largest length at any alignment
  for (auto& x : buf) x = uint8_t(rng());
  for (size_t len : {255u, 256u, 257u, 767u, 768u, 769u, 1535u, 1536u, 1537u, 4096u, 4152u, 8192u, 8300u, 19999u}) {
    const size_t align = rng() % 8;
    ASSERT_EQ(crc32c(buf.data() + align, len), crc32c_scalar(buf.data() + align, len)) << len;
  }
  for (int i = 0; i < 200; ++i) {
    const size_t len = rng() % 12000, cut = len ? rng() % len : 0;
    ASSERT_EQ(crc32c_extend(crc32c(buf.data(), cut), buf.data() + cut, len - cut), crc32c_scalar(buf.data(), len));
  }
  EXPECT_TRUE(crc32c_hw_available());  // this project's CI machines have SSE4.2
}

TEST(FastCodec, R_ENC_OnesSumMatchesWordwiseReference) {
  std::mt19937 rng(4242);
  std::vector<uint8_t> buf(200);
  for (int round = 0; round < 50; ++round) {
    for (auto& x : buf) x = uint8_t(rng());
    for (size_t len = 0; len <= 80; ++len) {
      const uint32_t init = rng() & 0xFFFF;
      ASSERT_EQ(ones_sum(buf.data() + round % 4, len, init), ref_sum(buf.data() + round % 4, len, init)) << len;
    }
  }
  // All-ones input folds to all ones, not zero (end-around carry).
  std::vector<uint8_t> ff(20, 0xFF);
  EXPECT_EQ(ones_sum(ff.data(), ff.size()), 0xFFFF);
  EXPECT_EQ(ones_sum(ff.data(), 0), 0);
}

// ------------------------------------------------------------------------------------------------
// SACK bit order

TEST(FastCodec, R_HDR_20_SackBitOrder) {
  Fields f = op_fields(Opcode::Ack);
  f.cpsn = 100;
  sack_set(f.sack.data(), 1);    // PSN 102 -> byte 0, mask 0x40
  sack_set(f.sack.data(), 8);    // PSN 109 -> byte 1, mask 0x80
  sack_set(f.sack.data(), 15);   // byte 1, mask 0x01
  sack_set(f.sack.data(), 255);  // byte 31, mask 0x01
  EXPECT_EQ(f.sack[0], 0x40);
  EXPECT_EQ(f.sack[1], 0x81);
  EXPECT_EQ(f.sack[31], 0x01);
  const Bytes b = build(f, {});
  const size_t aeth = kHeaderLenV4 + kBthLen;
  EXPECT_EQ(b[aeth + 16], 0x40);
  EXPECT_EQ(b[aeth + 17], 0x81);
  EXPECT_EQ(b[aeth + 47], 0x01);
  PacketView v;
  ASSERT_EQ(decode(b.data(), uint32_t(b.size()), kDefaultUdpPort, v), Error::None);
  for (unsigned i = 0; i < 256; ++i) EXPECT_EQ(v.sack(i), i == 1 || i == 8 || i == 15 || i == 255) << i;
  // Bit 0 (CPSN + 1) is the top bit of byte 0 and must be clear.
  f.sack[0] |= 0x80;
  EXPECT_EQ(dec(build(f, {})), Error::SackBase);
}

// ------------------------------------------------------------------------------------------------
// [R-VAL-1], one test per check (IPv4 and IPv6 where both apply)

TEST(FastCodec, R_VAL_1_ValidBaseFrames) {
  for (bool v6 : {false, true})
    for (Opcode op : kAllOpcodes) EXPECT_EQ(dec(build(op_fields(op, v6), op_payload(op))), Error::None) << int(op);
}

TEST(FastCodec, R_VAL_1_Check1_Truncated) {
  const Bytes b = build(write_fields(false), kPay8);
  for (uint32_t n : {0u, 1u, 13u}) {
    PacketView v;
    EXPECT_EQ(decode(b.data(), n, kDefaultUdpPort, v), Error::Truncated) << n;
  }
  PacketView v;
  EXPECT_EQ(decode(nullptr, 0, kDefaultUdpPort, v), Error::Truncated);
}

TEST(FastCodec, R_VAL_1_Check2_EtherType) {
  for (uint16_t et : {0x8100, 0x0806, 0x0000, 0x86DC, 0x0801}) {
    Fields f = write_fields(false);
    f.raw.ether_type = et;
    EXPECT_EQ(dec(build(f, kPay8)), Error::EtherType) << et;
  }
  // 14 bytes are enough to decide this check.
  Bytes b = build(write_fields(false), kPay8);
  b[12] = 0x81;
  b.resize(14);
  EXPECT_EQ(dec(b), Error::EtherType);
}

TEST(FastCodec, R_VAL_1_Check3_Truncated) {
  const Bytes b4 = build(write_fields(false), kPay8);
  EXPECT_EQ(dec(Bytes(b4.begin(), b4.begin() + 14)), Error::Truncated);
  EXPECT_EQ(dec(Bytes(b4.begin(), b4.begin() + 33)), Error::Truncated);
  const Bytes b6 = build(write_fields(true), kPay8);
  EXPECT_EQ(dec(Bytes(b6.begin(), b6.begin() + 53)), Error::Truncated);
  // 34 / 54 bytes pass check 3 and fail later (check 6: the datagram is not there).
  EXPECT_EQ(dec(Bytes(b4.begin(), b4.begin() + 34)), Error::IpLength);
  EXPECT_EQ(dec(Bytes(b6.begin(), b6.begin() + 54)), Error::IpLength);
}

TEST(FastCodec, R_VAL_1_Check4_IpVersion) {
  for (bool v6 : {false, true})
    for (uint8_t ver : {uint8_t(0), uint8_t(5), uint8_t(15), uint8_t(v6 ? 4 : 6)}) {
      Fields f = write_fields(v6);
      const uint8_t plain = build(f, kPay8)[14];
      f.raw.ip_version = ver;
      const Bytes b = build(f, kPay8);
      EXPECT_EQ(dec(b), Error::IpVersion) << v6 << " " << int(ver);
      // The override is exactly the version nibble: the low nibble (IHL; IPv6's traffic class) stays.
      EXPECT_EQ(b[14], uint8_t((ver << 4) | (plain & 0x0F))) << v6 << " " << int(ver);
    }
}

TEST(FastCodec, R_VAL_1_Check5_Ipv4Options) {
  for (uint8_t ihl : {0, 4, 6, 15}) {
    Fields f = write_fields(false);
    f.raw.ipv4_ihl = ihl;
    EXPECT_EQ(dec(build(f, kPay8)), Error::Ipv4Options) << int(ihl);
  }
}

TEST(FastCodec, R_VAL_1_Check6_IpLength) {
  const uint16_t real4 = 20 + 8 + 16 + 32 + 8 + 4;
  for (uint16_t tl : {0, 19, 27, real4 + 1, 0xFFFF}) {
    Fields f = write_fields(false);
    f.raw.ip_length = tl;
    EXPECT_EQ(dec(build(f, kPay8)), Error::IpLength) << tl;
  }
  for (uint16_t pl : {0, 7, 8 + 16 + 32 + 8 + 4 + 1, 0xFFFF}) {
    Fields f = write_fields(true);
    f.raw.ip_length = pl;
    EXPECT_EQ(dec(build(f, kPay8)), Error::IpLength) << pl;
  }
  // Frame longer than the IP packet (Ethernet padding) is fine ([R-ENC-8]).
  Fields f = write_fields(false);
  f.raw.eth_padding = 17;
  const Bytes padded = build(f, kPay8);
  EXPECT_EQ(dec(padded), Error::None);
  ASSERT_EQ(padded.size(), build(write_fields(false), kPay8).size() + 17);
  for (size_t i = padded.size() - 17; i < padded.size(); ++i) EXPECT_EQ(padded[i], 0) << "padding is zeros";
  // Lower bound exactly: total length 28 passes check 6 (then UDP says TransportLength).
  f = write_fields(false);
  f.raw.ip_length = 28;
  f.raw.udp_length = 8;
  EXPECT_EQ(dec(build(f, kPay8)), Error::TransportLength);
  f = write_fields(true);
  f.raw.ip_length = 8;
  f.raw.udp_length = 8;
  EXPECT_EQ(dec(build(f, kPay8)), Error::TransportLength);
}

TEST(FastCodec, R_VAL_1_Check7_Ipv4Checksum) {
  for (uint16_t x : {0x0001, 0x8000, 0x00FF}) {
    Fields f = write_fields(false);
    f.raw.ipv4_checksum_xor = x;
    EXPECT_EQ(dec(build(f, kPay8)), Error::Ipv4Checksum) << x;
  }
  // The checksum is cross-checked against an independent word-wise sum.
  const Bytes b = build(write_fields(false), kPay8);
  EXPECT_EQ(ref_sum(b.data() + 14, 20), 0xFFFF);
}

TEST(FastCodec, R_VAL_1_Check8_Fragment) {
  for (uint16_t w : {0x2000, 0x6000, 0x0001, 0x4001, 0x1FFF, 0x8000, 0xC000}) {
    Fields f = write_fields(false);
    f.raw.ipv4_frag = w;
    EXPECT_EQ(dec(build(f, kPay8)), Error::Fragment) << std::hex << w;
  }
  for (uint16_t w : {0x0000, 0x4000}) {  // DF either way is fine
    Fields f = write_fields(false);
    f.raw.ipv4_frag = w;
    EXPECT_EQ(dec(build(f, kPay8)), Error::None) << std::hex << w;
  }
}

TEST(FastCodec, R_VAL_1_Check9_NotUdp) {
  for (bool v6 : {false, true})
    for (uint8_t proto : {0, 6, 16, 18, 44, 255}) {  // 0 = IPv6 hop-by-hop, 44 = fragment header
      Fields f = write_fields(v6);
      f.raw.ip_proto = proto;
      EXPECT_EQ(dec(build(f, kPay8)), Error::NotUdp) << v6 << " " << int(proto);
    }
}

TEST(FastCodec, R_VAL_1_Check10_UdpLength) {
  for (bool v6 : {false, true}) {
    const uint16_t real = 8 + 16 + 32 + 8 + 4;
    for (uint16_t ul : {0, 7, 8, real - 1, real + 1, 0xFFFF}) {
      Fields f = write_fields(v6);
      f.raw.udp_length = ul;
      EXPECT_EQ(dec(build(f, kPay8)), Error::UdpLength) << v6 << " " << ul;
    }
  }
}

TEST(FastCodec, R_VAL_1_Check11_UdpPort) {
  Fields f = write_fields(false);
  f.udp_dport = 4791;  // RoCEv2
  EXPECT_EQ(dec(build(f, kPay8)), Error::UdpPort);
  EXPECT_EQ(dec(build(f, kPay8), 4791), Error::None);  // configured port
  EXPECT_EQ(dec(build(write_fields(true), kPay8), 4794), Error::UdpPort);
}

TEST(FastCodec, R_VAL_1_Check12_UdpChecksum) {
  for (bool v6 : {false, true}) {
    Fields f = write_fields(v6);
    f.raw.udp_checksum_compute = true;  // a correct non-zero checksum is verified and accepted
    const Bytes good = build(f, kPay8);
    const uint32_t l4 = v6 ? 54 : 34;
    EXPECT_NE(good[l4 + 6] | good[l4 + 7], 0);
    EXPECT_EQ(dec(good), Error::None) << v6;
    // Independent verification: pseudo-header + datagram sums to all ones.
    const uint32_t ulen = uint32_t(good.size()) - l4;
    uint32_t pseudo = 17 + ulen;
    const uint8_t* ips = good.data() + (v6 ? 22 : 26);
    const uint16_t ps = ref_sum(ips, v6 ? 32 : 8, pseudo);
    EXPECT_EQ(ref_sum(good.data() + l4, ulen, ps), 0xFFFF);

    f.raw.udp_checksum_compute = false;
    f.raw.udp_checksum_corrupt = true;
    EXPECT_EQ(dec(build(f, kPay8)), Error::UdpChecksum) << v6;
    // Changing a covered byte (an IP address in the pseudo-header) breaks it too.
    Bytes bad = good;
    bad[v6 ? 53 : 33] ^= 1;
    if (!v6) {  // keep the IPv4 header checksum right so check 12 is the one that fails
      bad[24] = bad[25] = 0;
      const uint16_t c = uint16_t(~ref_sum(bad.data() + 14, 20));
      bad[24] = uint8_t(c >> 8);
      bad[25] = uint8_t(c);
    }
    EXPECT_EQ(dec(bad), Error::UdpChecksum) << v6;
  }
}

TEST(FastCodec, R_VAL_1_Check12_UdpChecksumAllOnesMeansZero) {
  // RFC 768: a computed checksum of zero is transmitted as 0xFFFF; find such a frame by varying
  // the timestamp, and check both it and the stored 0x0000 ("no checksum") are accepted.
  for (uint32_t ts = 0; ts < 200000; ++ts) {
    Fields f = write_fields(false);
    f.timestamp = ts;
    f.raw.udp_checksum_compute = true;
    Bytes b = build(f, kPay8);
    if (b[34 + 6] == 0xFF && b[34 + 7] == 0xFF) {
      EXPECT_EQ(dec(b), Error::None);
      return;
    }
  }
  FAIL() << "no frame with checksum 0xFFFF found";
}

TEST(FastCodec, R_VAL_1_Check13_TransportLength) {
  for (bool v6 : {false, true})
    for (uint16_t upl : {0, 1, 19}) {
      Fields f = write_fields(v6);
      f.raw.ip_length = uint16_t((v6 ? 0 : 20) + 8 + upl);
      f.raw.udp_length = uint16_t(8 + upl);
      EXPECT_EQ(dec(build(f, kPay8)), Error::TransportLength) << v6 << " " << upl;
    }
}

TEST(FastCodec, R_VAL_1_Check14_Version) {
  for (uint8_t ver : {0, 2, 15}) {
    Fields f = write_fields(false);
    f.version = ver;
    EXPECT_EQ(dec(build(f, kPay8)), Error::Version) << int(ver);
  }
}

TEST(FastCodec, R_VAL_1_Check15_Opcode) {
  for (unsigned op = 0; op < 256; ++op) {
    Fields f = write_fields(false);
    f.opcode = uint8_t(op);
    f.dcid = op == 0x20 ? 0 : 7;
    f.path_id = op >= 0x20 && op <= 0x24 ? 0 : 1;
    const bool known = opcode_info(uint8_t(op)).valid;
    const Error e = dec(build(f, known ? op_payload(Opcode(op)) : Bytes(40, 0)));
    if (known)
      EXPECT_NE(e, Error::Opcode) << op;
    else
      EXPECT_EQ(e, Error::Opcode) << op;
  }
}

TEST(FastCodec, R_VAL_1_Check16_TransportLength) {
  // Non-data: exactly 16 + extension + 4.
  for (Opcode op : kAllOpcodes) {
    if (opcode_info(uint8_t(op)).data) continue;
    EXPECT_EQ(dec(build(op_fields(op), Bytes{0})), Error::TransportLength) << int(op);
    EXPECT_EQ(dec(build(op_fields(op), Bytes(4, 0))), Error::TransportLength) << int(op);
  }
  // Data: at least 16 + extension + 4 (shrink the datagram by 1 byte below the headers).
  for (Opcode op : {Opcode::Send, Opcode::Write, Opcode::WriteImm, Opcode::ReadReq, Opcode::ReadResp}) {
    for (bool v6 : {false, true}) {
      Fields f = op_fields(op, v6);
      const uint16_t need = uint16_t(8 + 16 + opcode_info(uint8_t(op)).ext_len + 4);
      f.raw.ip_length = uint16_t((v6 ? 0 : 20) + need - 1);
      f.raw.udp_length = uint16_t(need - 1);
      EXPECT_EQ(dec(build(f, {})), Error::TransportLength) << int(op);
    }
  }
  // [R-HDR-8] data payload <= 8192.
  Fields f = write_fields(false);
  f.msg_length = 100000;
  f.msg_offset = 0;
  EXPECT_EQ(dec(build(f, Bytes(8193, 0))), Error::TransportLength);
  EXPECT_EQ(dec(build(f, Bytes(8192, 0))), Error::None);
  // An ACK with the AETH cut short.
  Fields a = op_fields(Opcode::Ack);
  a.raw.ip_length = 20 + 8 + 16 + 47 + 4;
  a.raw.udp_length = 8 + 16 + 47 + 4;
  EXPECT_EQ(dec(build(a, {})), Error::TransportLength);
}

TEST(FastCodec, R_VAL_1_Check17_Icrc) {
  for (Opcode op : kAllOpcodes) {
    Fields f = op_fields(op);
    f.raw.icrc_xor = 0x00000100;
    EXPECT_EQ(dec(build(f, op_payload(op))), Error::Icrc) << int(op);
  }
  // A payload bit flip is caught by the ICRC.
  Bytes b = build(write_fields(true), kPay8);
  b[b.size() - 6] ^= 0x10;
  EXPECT_EQ(dec(b), Error::Icrc);
}

TEST(FastCodec, R_VAL_1_Check18_Reserved) {
  auto expect_reserved = [](Fields f, const Bytes& pay, const char* what) {
    EXPECT_EQ(dec(build(f, pay)), Error::Reserved) << what;
  };
  Fields f = write_fields(false);
  f.bth_rsvd4 = 1;
  expect_reserved(f, kPay8, "BTH reserved nibble");
  f = write_fields(false);
  f.bth_rsvd16 = 0x8000;
  expect_reserved(f, kPay8, "BTH reserved 16 bits");
  for (uint16_t fl : {0x1000, 0x0001, 0x0100}) {
    f = write_fields(false);
    f.flags = fl;
    expect_reserved(f, kPay8, "reserved flag");
  }
  f = write_fields(false);
  f.dcid = 0;
  expect_reserved(f, kPay8, "zero DCID on WRITE");
  f = op_fields(Opcode::Connect);
  f.dcid = 1;
  expect_reserved(f, {}, "non-zero DCID on CONNECT");
  for (Opcode op : {Opcode::Connect, Opcode::Accept, Opcode::Reject, Opcode::Disconnect, Opcode::DisconnectAck}) {
    f = op_fields(op);
    f.path_id = 1;
    expect_reserved(f, {}, "path ID on control");
  }
  // Flags per opcode ([R-HDR-3]): AR only on data and PROBE, RETX/VOID only on data.
  for (Opcode op : kAllOpcodes) {
    for (uint16_t fl : {kFlagAr, kFlagRetx, kFlagVoid}) {
      f = op_fields(op);
      f.flags = fl;
      const bool data = opcode_info(uint8_t(op)).data;
      const bool allowed = data || (op == Opcode::Probe && fl == kFlagAr);
      Bytes pay = (fl == kFlagVoid) ? Bytes{} : op_payload(op);
      const Error e = dec(build(f, pay));
      EXPECT_EQ(e, allowed ? Error::None : Error::Reserved) << int(op) << " " << fl;
    }
  }
}

TEST(FastCodec, R_VAL_1_Check19_PayloadLength) {
  for (Opcode op : {Opcode::Send, Opcode::Write, Opcode::WriteImm, Opcode::ReadReq, Opcode::ReadResp})
    for (uint16_t pl : {0, 7, 9, 0xFFFF}) {
      Fields f = op_fields(op);
      const Bytes pay = op_payload(op);
      if (pl == pay.size()) continue;
      f.raw.payload_length = pl;
      EXPECT_EQ(dec(build(f, pay)), Error::PayloadLength) << int(op) << " " << pl;
    }
}

TEST(FastCodec, R_VAL_1_Check20_Range) {
  auto run = [](Opcode op, uint32_t mlen, uint32_t moff, uint16_t flags, const Bytes& pay) {
    Fields f = op_fields(op);
    f.msg_length = mlen;
    f.msg_offset = moff;
    f.flags = flags;
    return dec(build(f, pay));
  };
  EXPECT_EQ(run(Opcode::Write, 0x80000000u, 0, 0, kPay8), Error::None);
  EXPECT_EQ(run(Opcode::Write, 0x80000001u, 0, 0, kPay8), Error::Range);
  EXPECT_EQ(run(Opcode::Write, 0xFFFFFFFFu, 0, 0, {}), Error::Range);
  EXPECT_EQ(run(Opcode::Write, 100, 92, 0, kPay8), Error::None);  // ends exactly at mlen
  EXPECT_EQ(run(Opcode::Write, 100, 93, 0, kPay8), Error::Range);
  EXPECT_EQ(run(Opcode::Write, 0, 0, 0, {}), Error::None);
  // Offset + payload wraps 32 bits: must still be Range ([R-HDR-13] "without overflow").
  EXPECT_EQ(run(Opcode::Write, 4, 0xFFFFFFFCu, 0, kPay8), Error::Range);
  EXPECT_EQ(run(Opcode::Send, 0, 0xFFFFFFF8u, 0, kPay8), Error::Range);
  // READ_REQ: payload 0 and offset 0.
  EXPECT_EQ(run(Opcode::ReadReq, 100, 0, 0, {}), Error::None);
  EXPECT_EQ(run(Opcode::ReadReq, 100, 1, 0, {}), Error::Range);
  EXPECT_EQ(run(Opcode::ReadReq, 100, 0, 0, Bytes{1}), Error::Range);
  EXPECT_EQ(run(Opcode::ReadReq, 0x80000001u, 0, 0, {}), Error::Range);
  // VOID: payload 0.
  EXPECT_EQ(run(Opcode::Write, 100, 8, kFlagVoid, {}), Error::None);
  EXPECT_EQ(run(Opcode::Write, 100, 8, kFlagVoid, kPay8), Error::Range);
  EXPECT_EQ(run(Opcode::ReadResp, 100, 8, kFlagVoid | kFlagRetx, Bytes{1}), Error::Range);
}

TEST(FastCodec, R_VAL_1_Check21_SackBase) {
  Fields f = op_fields(Opcode::Ack, true);
  f.sack[0] = 0x80;
  EXPECT_EQ(dec(build(f, {})), Error::SackBase);
  f.sack[0] = 0x7F;
  f.sack[31] = 0xFF;
  EXPECT_EQ(dec(build(f, {})), Error::None);
}

TEST(FastCodec, R_VAL_1_Check22_NakReserved) {
  auto run = [](uint8_t code, uint8_t rsvd, uint16_t detail) {
    Fields f = op_fields(Opcode::Nak);
    f.nak_code = code;
    f.nak_rsvd = rsvd;
    f.nak_detail = detail;
    return dec(build(f, {}));
  };
  for (uint8_t c = 1; c <= 4; ++c) EXPECT_EQ(run(c, 0, 0), Error::None) << int(c);
  EXPECT_EQ(run(1, 0, 10), Error::None);  // RNR carries a retry time
  EXPECT_EQ(run(1, 0, 0xFFFF), Error::None);
  for (uint8_t c : {0, 5, 0x80, 0xFF}) EXPECT_EQ(run(c, 0, 0), Error::Reserved) << int(c);
  for (uint8_t c = 2; c <= 4; ++c) EXPECT_EQ(run(c, 0, 1), Error::Reserved) << int(c);
  EXPECT_EQ(run(1, 1, 0), Error::Reserved);
  EXPECT_EQ(run(3, 0x80, 0), Error::Reserved);
}

TEST(FastCodec, R_VAL_1_Check23_ConnRange) {
  for (Opcode op : {Opcode::Connect, Opcode::Accept}) {
    auto run = [op](auto mutate) {
      Fields f = op_fields(op);
      mutate(f);
      return dec(build(f, {}));
    };
    EXPECT_EQ(run([](Fields& f) { f.scid = 0; }), Error::Range);
    EXPECT_EQ(run([](Fields& f) { f.isn = 0xFFFFFFFF; }), Error::None);  // any ISN
    EXPECT_EQ(run([](Fields& f) { f.path_count = 0; }), Error::Range);
    EXPECT_EQ(run([](Fields& f) { f.path_count = 256; }), Error::None);
    EXPECT_EQ(run([](Fields& f) { f.path_count = 257; }), Error::Range);
    EXPECT_EQ(run([](Fields& f) { f.stream_count = 0; }), Error::Range);
    EXPECT_EQ(run([](Fields& f) { f.stream_count = 65535; }), Error::None);
    EXPECT_EQ(run([](Fields& f) { f.max_payload = 192; }), Error::Range);
    EXPECT_EQ(run([](Fields& f) { f.max_payload = 256; }), Error::None);
    EXPECT_EQ(run([](Fields& f) { f.max_payload = 8192; }), Error::None);
    EXPECT_EQ(run([](Fields& f) { f.max_payload = 8256; }), Error::Range);
    EXPECT_EQ(run([](Fields& f) { f.max_payload = 4100; }), Error::Range);  // not a multiple of 64
    EXPECT_EQ(run([](Fields& f) { f.max_payload = 0; }), Error::Range);
    EXPECT_EQ(run([](Fields& f) { f.window_cap = 0; }), Error::Range);
    EXPECT_EQ(run([](Fields& f) { f.window_cap = 1; }), Error::None);
    EXPECT_EQ(run([](Fields& f) { f.window_cap = 257; }), Error::Range);
  }
}

TEST(FastCodec, R_VAL_1_Check23_RejReserved) {
  for (Opcode op : {Opcode::Reject, Opcode::Disconnect}) {
    auto run = [op](uint8_t reason, uint32_t rsvd) {
      Fields f = op_fields(op);
      f.reason = reason;
      f.rej_rsvd = rsvd;
      return dec(build(f, {}));
    };
    for (uint8_t r = 0; r <= 5; ++r) EXPECT_EQ(run(r, 0), Error::None) << int(r);
    for (uint8_t r : {6, 7, 0xFF}) EXPECT_EQ(run(r, 0), Error::Reserved) << int(r);
    for (uint32_t rsvd : {1u, 0x100u, 0x800000u}) EXPECT_EQ(run(0, rsvd), Error::Reserved) << rsvd;
  }
}

// ------------------------------------------------------------------------------------------------
// Precedence: a frame failing two checks reports the earlier one.

TEST(FastCodec, R_VAL_1_EarlierCheckWins) {
  Fields f = write_fields(false);
  f.raw.icrc_xor = 1;        // 17
  f.flags = 0x0001;          // 18
  f.raw.payload_length = 3;  // 19
  EXPECT_EQ(dec(build(f, kPay8)), Error::Icrc);

  f = write_fields(false);
  f.version = 2;             // 14
  f.raw.icrc_xor = 1;        // 17
  f.raw.ipv4_frag = 0x2000;  // 8
  EXPECT_EQ(dec(build(f, kPay8)), Error::Fragment);

  f = write_fields(false);
  f.raw.ipv4_checksum_xor = 1;  // 7
  f.raw.ipv4_ihl = 6;           // 5
  EXPECT_EQ(dec(build(f, kPay8)), Error::Ipv4Options);

  f = write_fields(true);
  f.udp_dport = 1;                    // 11
  f.raw.udp_checksum_corrupt = true;  // 12
  f.raw.udp_length = 9;               // 10
  EXPECT_EQ(dec(build(f, kPay8)), Error::UdpLength);

  f = write_fields(false);
  f.opcode = 0x06;     // 15
  f.raw.icrc_xor = 1;  // 17
  f.version = 0;       // 14
  EXPECT_EQ(dec(build(f, kPay8)), Error::Version);

  // Check 16 before 17: an ACK one byte long with a bad ICRC.
  f = op_fields(Opcode::Ack);
  f.raw.icrc_xor = 1;
  EXPECT_EQ(dec(build(f, Bytes{0})), Error::TransportLength);

  // Check 17 before 21: bad ICRC and SACK bit 0.
  f = op_fields(Opcode::Ack);
  f.sack[0] = 0x80;
  f.raw.icrc_xor = 1;
  EXPECT_EQ(dec(build(f, {})), Error::Icrc);

  // Check 18 before 20.
  f = write_fields(false);
  f.dcid = 0;
  f.msg_length = 0x90000000u;
  EXPECT_EQ(dec(build(f, kPay8)), Error::Reserved);

  // Check 19 before 20.
  f = write_fields(false);
  f.msg_length = 0x90000000u;
  f.raw.payload_length = 1;
  EXPECT_EQ(dec(build(f, kPay8)), Error::PayloadLength);

  // Check 2 decides before 3 on a short frame.
  Bytes b = build(write_fields(true), kPay8);
  b[12] = 0x88;
  b.resize(20);
  EXPECT_EQ(dec(b), Error::EtherType);
}

// ------------------------------------------------------------------------------------------------
// In-place builder

TEST(FastCodec, Builder_PerClassMarkingAndRepath) {
  PathConfig pc;
  pc.ipv6 = true;
  pc.udp_sport = 50000;
  FrameTemplate tpl(pc);
  EXPECT_EQ(tpl.header_len(), kHeaderLenV6);
  uint8_t buf[kMaxFrameLen];
  // Data packet: DSCP 26, ECT(0); flow label = low 20 bits of the source port ([R-ENC-4]).
  uint8_t* pay = put_send(tpl.begin(buf, true), BthFields{kFlagAr, 5, 2, 99}, DhFields{10, 1, 2, 3, 0}, 4);
  std::memcpy(pay, "abc", 3);
  uint32_t n = finalize(buf, 3);
  PacketView v;
  ASSERT_EQ(decode(buf, n, kDefaultUdpPort, v), Error::None);
  EXPECT_EQ(v.dscp(), 26);
  EXPECT_EQ(v.ecn(), 2);
  EXPECT_EQ(v.flow_label(), 50000u);
  EXPECT_EQ(v.rsn(), 4u);
  EXPECT_EQ(v.payload_len(), 3u);
  EXPECT_EQ(std::memcmp(v.payload(), "abc", 3), 0);
  // ACK: DSCP 48, Not-ECT ([R-ENC-9], [R-ENC-10]); after a re-path.
  uint8_t sack[32] = {0x20};
  tpl.set_udp_sport(60001);
  put_ack(tpl.begin(buf, false), BthFields{0, 5, 2, 7}, AckFields{1, 2, 3, 4, sack});
  n = finalize(buf, 0);
  ASSERT_EQ(n, kHeaderLenV6 + kBthLen + 48 + kIcrcLen);
  ASSERT_EQ(decode(buf, n, kDefaultUdpPort, v), Error::None);
  EXPECT_EQ(v.dscp(), 48);
  EXPECT_EQ(v.ecn(), 0);
  EXPECT_EQ(v.udp_sport(), 60001);
  EXPECT_EQ(v.flow_label(), 60001u);
  EXPECT_TRUE(v.sack(2));
  EXPECT_EQ(v.cpsn(), 1u);
  EXPECT_EQ(v.rate_hint(), 4u);
}

TEST(FastCodec, Builder_EveryOpcodeInPlace) {
  for (bool v6 : {false, true}) {
    PathConfig pc;
    pc.ipv6 = v6;
    const FrameTemplate tpl(pc);
    const BthFields b{kFlagAr, 9, 0, 1};
    const BthFields nb{0, 9, 0, 1};
    const DhFields dh{1, 2, 3, 64, 0};
    const ConnFields cf{1, 2, 4, 8, 4096, 256};
    for (Opcode op : kAllOpcodes) {
      alignas(8) uint8_t buf[kMaxFrameLen];
      std::memset(buf, 0xA5, sizeof buf);  // garbage must not leak into the frame
      const bool data = opcode_info(uint8_t(op)).data;
      uint8_t* bth = tpl.begin(buf, data);
      uint8_t* end = nullptr;
      switch (op) {
        case Opcode::Send:
          end = put_send(bth, b, dh, 1);
          break;
        case Opcode::Write:
          end = put_write(bth, b, dh, 2, 3);
          break;
        case Opcode::WriteImm:
          end = put_write_imm(bth, b, dh, 2, 3, 4, 5);
          break;
        case Opcode::ReadReq:
          end = put_read_req(bth, b, dh, 2, 3);
          break;
        case Opcode::ReadResp:
          end = put_read_resp(bth, b, dh);
          break;
        case Opcode::Ack:
          end = put_ack(bth, nb, AckFields{});
          break;
        case Opcode::Nak:
          end = put_nak(bth, nb, 1, 1, 10);
          break;
        case Opcode::Probe:
          end = put_probe(bth, b);
          break;
        case Opcode::Connect:
          end = put_connect(bth, BthFields{}, cf);
          break;
        case Opcode::Accept:
          end = put_accept(bth, nb, cf);
          break;
        case Opcode::Reject:
          end = put_reject(bth, nb, 3);
          break;
        case Opcode::Disconnect:
          end = put_disconnect(bth, nb, 0);
          break;
        case Opcode::DisconnectAck:
          end = put_disconnect_ack(bth, nb);
          break;
      }
      ASSERT_EQ(end - buf, ptrdiff_t(tpl.header_len() + kBthLen + opcode_info(uint8_t(op)).ext_len)) << int(op);
      const uint32_t plen = data && op != Opcode::ReadReq ? 16 : 0;
      std::memset(end, 0x11, plen);
      const uint32_t n = finalize(buf, plen);
      ASSERT_EQ(n, tpl.header_len() + kBthLen + opcode_info(uint8_t(op)).ext_len + plen + kIcrcLen);
      PacketView v;
      ASSERT_EQ(decode(buf, n, kDefaultUdpPort, v), Error::None) << int(op) << " v6=" << v6;
      EXPECT_EQ(v.opcode(), op);
      EXPECT_EQ(v.payload_len(), plen);
      EXPECT_EQ(v.dscp(), data ? 26 : 48);
      EXPECT_EQ(v.ecn(), data ? 2 : 0);
      EXPECT_EQ(v.ttl(), 64);
      EXPECT_EQ(v.udp_checksum(), 0);
      if (!v6) { EXPECT_TRUE(v.ipv4_df()); }
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Predicates: compare the fast formulations with the spec's wording in exact (64-bit) arithmetic.

TEST(FastCodec, R_VAL_1_PredicatesMatchSpecWording) {
  using pred::NativeOps;
  std::mt19937_64 rng(99);
  const uint32_t edges[] = {0,     1,          7,           8,           13,          14,         19,   20,
                            27,    28,         53,          54,          55,          8191,       8192, 8193,
                            65535, 0x7FFFFFFF, 0x80000000u, 0x80000001u, 0xFFFFFFF0u, 0xFFFFFFFFu};
  auto pick = [&](int i) -> uint32_t { return i < 22 ? edges[i] : uint32_t(rng()) >> (rng() % 32); };
  for (int i = 0; i < 40; ++i)
    for (int j = 0; j < 40; ++j) {
      const uint64_t a = pick(i), b = pick(j);
      EXPECT_EQ(pred::ipv4_length_ok<NativeOps>(uint32_t(a), uint32_t(b)), 28 <= b && 14 + b <= a);
      EXPECT_EQ(pred::ipv6_length_ok<NativeOps>(uint32_t(a), uint32_t(b)), 8 <= b && 54 + b <= a);
      for (bool data : {false, true}) {
        const uint64_t need = 16 + b + 4;
        const bool spec = data ? (need <= a && a - need <= 8192) : a == need;
        EXPECT_EQ(pred::transport_length_ok<NativeOps>(uint32_t(a), uint32_t(b), data), spec) << a << " " << b;
      }
      for (int k = 0; k < 8; ++k) {
        const uint64_t p = pick(k * 5 % 40);
        for (int flags = 0; flags < 4; ++flags) {
          const bool rr = flags & 1, vd = flags & 2;
          const bool spec = a <= (1ull << 31) && b + p <= a && (!rr || (p == 0 && b == 0)) && (!vd || p == 0);
          EXPECT_EQ(pred::data_range_ok<NativeOps>(uint32_t(a), uint32_t(b), uint32_t(p), rr, vd), spec);
        }
      }
    }
}
