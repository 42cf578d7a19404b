// Unit tests of the reference codec, named after the requirement they check.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <type_traits>
#include <string>
#include <vector>

#include "codec/ref_codec.hpp"
#include "ref_test_util.hpp"

namespace mroce::ref {
namespace {

using test::all_known_opcodes;
using test::counting_payload;
using test::Frame;
using test::rd16;
using test::rd32;
using test::sample_frame;
using test::sample_packet;
using test::wr16;
using test::wr32;

// "OK" or the error kind's name: readable in assertion messages.
std::string outcome(const Frame& f, uint16_t port = kDefaultUdpPort) {
  // Decode from an exact-size copy so that ASan sees any read past the end.
  const Frame copy(f.begin(), f.end());
  const DecodeResult r = decode(copy, port);
  return r.ok() ? "OK" : std::string(error_name(*r.error));
}

std::string hex8(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

std::vector<uint8_t> bytes_of(const char* s) {
  std::vector<uint8_t> v;
  for (; *s; ++s) v.push_back(static_cast<uint8_t>(*s));
  return v;
}

// -------------------------------------------------------------------------------------------
// CRC-32C, names, tables
// -------------------------------------------------------------------------------------------

TEST(RefCodec, R_HDR_28_Crc32cCheckValue) { EXPECT_EQ(crc32c(bytes_of("123456789")), 0xE3069283u); }

TEST(RefCodec, R_HDR_28_Crc32cIscsiVectors) {
  // RFC 3720 appendix B.4 (the CRC bytes there are listed least significant first).
  EXPECT_EQ(crc32c(std::vector<uint8_t>{}), 0x00000000u);
  EXPECT_EQ(crc32c(std::vector<uint8_t>(32, 0x00)), 0x8A9136AAu);
  EXPECT_EQ(crc32c(std::vector<uint8_t>(32, 0xFF)), 0x62A8AB43u);
  std::vector<uint8_t> up(32), down(32);
  for (int i = 0; i < 32; ++i) {
    up[i] = static_cast<uint8_t>(i);
    down[i] = static_cast<uint8_t>(31 - i);
  }
  EXPECT_EQ(crc32c(up), 0x46DD794Eu);
  EXPECT_EQ(crc32c(down), 0x113FDB5Cu);
}

TEST(RefCodec, Section4_ErrorKindNamesInOrder) {
  const std::vector<std::string> names = {"Truncated",    "EtherType",       "IpVersion", "Ipv4Options", "IpLength",
                                          "Ipv4Checksum", "Fragment",        "NotUdp",    "UdpLength",   "UdpPort",
                                          "UdpChecksum",  "TransportLength", "Version",   "Opcode",      "Icrc",
                                          "Reserved",     "PayloadLength",   "Range",     "SackBase"};
  for (size_t i = 0; i < names.size(); ++i) { EXPECT_EQ(error_name(static_cast<ErrorKind>(i)), names[i]) << i; }
  EXPECT_EQ(error_name(static_cast<ErrorKind>(names.size())), "UNKNOWN");
}

TEST(RefCodec, Table_3_2_OpcodeValuesNamesAndSizes) {
  struct Row {
    uint8_t value;
    const char* name;
    uint32_t ext;
    bool data, control;
  };
  const std::vector<Row> table = {{0x01, "SEND", 24, true, false},         {0x02, "WRITE", 32, true, false},
                                  {0x03, "WRITE_IMM", 40, true, false},    {0x04, "READ_REQ", 32, true, false},
                                  {0x05, "READ_RESP", 20, true, false},    {0x10, "ACK", 48, false, false},
                                  {0x11, "NAK", 8, false, false},          {0x12, "PROBE", 0, false, false},
                                  {0x20, "CONNECT", 16, false, true},      {0x21, "ACCEPT", 16, false, true},
                                  {0x22, "REJECT", 4, false, true},        {0x23, "DISCONNECT", 4, false, true},
                                  {0x24, "DISCONNECT_ACK", 0, false, true}};
  int known = 0;
  for (int v = 0; v < 256; ++v) {
    const Opcode op = static_cast<Opcode>(v);
    const Row* row = nullptr;
    for (const Row& r : table) {
      if (r.value == v) row = &r;
    }
    EXPECT_EQ(is_known_opcode(op), row != nullptr) << v;
    if (row == nullptr) {
      EXPECT_EQ(opcode_name(op), "UNKNOWN");
      continue;
    }
    ++known;
    EXPECT_EQ(opcode_name(op), row->name);
    EXPECT_EQ(extension_length(op), row->ext) << row->name;
    EXPECT_EQ(is_data_opcode(op), row->data) << row->name;
    EXPECT_EQ(is_control_opcode(op), row->control) << row->name;
    // The encoded UDP payload is BTH + extension + payload + ICRC ([R-HDR-7]).
    const Frame f = sample_frame(op, false, 0);
    EXPECT_EQ(f.size(), 14u + 20 + 8 + 16 + row->ext + 4) << row->name;
  }
  EXPECT_EQ(known, 13);
}

TEST(RefCodec, Table_12_3_NakCodeNames) {
  EXPECT_EQ(nak_code_name(NakCode::Rnr), "RNR");
  EXPECT_EQ(nak_code_name(NakCode::RemoteAccess), "RemoteAccess");
  EXPECT_EQ(nak_code_name(NakCode::InvalidRequest), "InvalidRequest");
  EXPECT_EQ(nak_code_name(NakCode::Length), "Length");
  EXPECT_EQ(nak_code_name(static_cast<NakCode>(0)), "UNKNOWN");
}

// -------------------------------------------------------------------------------------------
// Golden frames, written byte by byte from the diagrams of sections 2 and 3. The ICRC values were
// computed with an independent CRC-32C (MSB-first formulation with polynomial 0x1EDC6F41, checked
// against 0xE3069283 and the RFC 3720 vectors); the IPv4 checksum was added up by hand.
// -------------------------------------------------------------------------------------------

const char* const kGoldenWriteIpv4 =
    // Ethernet: dst, src, EtherType IPv4 [R-ENC-2]
    "02 00 00 00 00 01  02 00 00 00 00 02  08 00"
    // IPv4: version 4 / IHL 5, DSCP 26 ECN 2 (0x68 | 0x02), total length 84, id 0x1234,
    // flags DF, TTL 64, protocol 17, checksum 0x13f9, 10.0.0.1 -> 10.0.0.2 [R-ENC-3]
    "45 6a 00 54  12 34 40 00  40 11 13 f9  0a 00 00 01  0a 00 00 02"
    // UDP: 49152 -> 4793, length 64, checksum 0 [R-ENC-5..7]
    "c0 00 12 b9  00 40 00 00"
    // BTH: version 1 / reserved, WRITE, flags AR|RETX, DCID 1, path 3, reserved, TS 1234 (3.1)
    "10 02 c0 00  00 00 00 01  00 03 00 00  00 00 04 d2"
    // DH: PSN 0xfffffffe, stream 2, payload length 4, MSN 7, length 10000, offset 4096 (3.3)
    "ff ff ff fe  00 02 00 04  00 00 00 07  00 00 27 10  00 00 10 00"
    // RETH: VA 0x1000, rkey 0x100 (3.4)
    "00 00 00 00 00 00 10 00  00 00 01 00"
    // payload
    "01 02 03 04"
    // ICRC (3.9)
    "f1 86 82 70";

Packet golden_write_packet() {
  Packet p{};
  p.eth_dst = {0x02, 0, 0, 0, 0, 0x01};
  p.eth_src = {0x02, 0, 0, 0, 0, 0x02};
  p.ipv6 = false;
  p.ip_src = {10, 0, 0, 1};
  p.ip_dst = {10, 0, 0, 2};
  p.dscp = 26;
  p.ecn = 2;
  p.ipv4_id = 0x1234;
  p.ipv4_df = true;
  p.ttl = 64;
  p.udp_sport = 49152;
  p.udp_dport = 4793;
  p.version = 1;
  p.opcode = Opcode::Write;
  p.flags = kFlagAr | kFlagRetx;
  p.dcid = 1;
  p.path_id = 3;
  p.timestamp = 1234;
  p.psn = 0xFFFFFFFE;
  p.stream_id = 2;
  p.payload_length = 4;
  p.msn = 7;
  p.msg_length = 10000;
  p.msg_offset = 4096;
  p.remote_va = 0x1000;
  p.rkey = 0x100;
  return p;
}

TEST(RefCodec, R_ENC_1_GoldenWriteFrameIpv4_Encode) {
  const Frame golden = test::hex_frame(kGoldenWriteIpv4);
  ASSERT_EQ(golden.size(), 98u);
  const std::vector<uint8_t> payload = {1, 2, 3, 4};
  EXPECT_EQ(encode(golden_write_packet(), payload), golden);
}

TEST(RefCodec, R_ENC_1_GoldenWriteFrameIpv4_Decode) {
  const Frame golden = test::hex_frame(kGoldenWriteIpv4);
  const DecodeResult r = decode(golden);
  ASSERT_TRUE(r.ok()) << error_name(*r.error);
  Packet expected = golden_write_packet();
  expected.payload_offset = 90;  // 14 + 20 + 8 + 16 + 32
  expected.payload_len = 4;
  expected.icrc = 0xF1868270;
  EXPECT_EQ(r.packet, expected);
  EXPECT_EQ(canonical(r, golden),
            "ETH dst=02:00:00:00:00:01 src=02:00:00:00:00:02 type=0x0800 | "
            "IPV4 src=10.0.0.1 dst=10.0.0.2 dscp=26 ecn=2 id=0x1234 df=1 ttl=64 | "
            "UDP sport=49152 dport=4793 len=64 csum=0x0000 | "
            "BTH ver=1 op=WRITE flags=AR,RETX dcid=0x00000001 path=3 ts=1234 | "
            "DH psn=0xfffffffe stream=2 plen=4 msn=7 mlen=10000 moff=4096 | "
            "RETH va=0x0000000000001000 rkey=0x00000100 | "
            "PAYLOAD off=90 len=4 | "
            "ICRC 0xf1868270");
}

const char* const kGoldenAckIpv6 =
    // Ethernet, EtherType IPv6
    "02 00 00 00 00 02  02 00 00 00 00 01  86 dd"
    // IPv6: version 6, traffic class 0xc0 (DSCP 48, ECN 0), flow label 0x0c001; payload length 76,
    // next header 17, hop limit 64; fd00::1 -> fd00::2 [R-ENC-4]
    "6c 00 c0 01  00 4c 11 40"
    "fd 00 00 00 00 00 00 00  00 00 00 00 00 00 00 01"
    "fd 00 00 00 00 00 00 00  00 00 00 00 00 00 00 02"
    // UDP: 49153 -> 4793, length 76, checksum 0
    "c0 01 12 b9  00 4c 00 00"
    // BTH: version 1, ACK, no flags, DCID 0xabcd, path 5, TS 100
    "10 10 00 00  00 00 ab cd  00 05 00 00  00 00 00 64"
    // AETH: CPSN 9, CE count 2, TSE 1234, hint 0 (3.5)
    "00 00 00 09  00 00 00 02  00 00 04 d2  00 00 00 00"
    // SACK: bit 1 (byte 0, mask 0x40) and bit 255 (byte 31, mask 0x01) [R-HDR-20]
    "40 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00"
    "00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 01"
    // ICRC
    "fe d9 65 fe";

Packet golden_ack_packet() {
  Packet p{};
  p.eth_dst = {0x02, 0, 0, 0, 0, 0x02};
  p.eth_src = {0x02, 0, 0, 0, 0, 0x01};
  p.ipv6 = true;
  p.ip_src = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  p.ip_dst = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
  p.dscp = 48;
  p.ecn = 0;
  p.ipv6_flow_label = 0x0C001;
  p.ttl = 64;
  p.udp_sport = 49153;
  p.udp_dport = 4793;
  p.version = 1;
  p.opcode = Opcode::Ack;
  p.dcid = 0xABCD;
  p.path_id = 5;
  p.timestamp = 100;
  p.cpsn = 9;
  p.ce_count = 2;
  p.ts_echo = 1234;
  p.rate_hint = 0;
  p.sack[0] = 0x40;
  p.sack[31] = 0x01;
  return p;
}

TEST(RefCodec, R_ENC_4_GoldenAckFrameIpv6_Encode) {
  const Frame golden = test::hex_frame(kGoldenAckIpv6);
  ASSERT_EQ(golden.size(), 130u);  // 14 + 40 + 8 + 16 + 48 + 4
  EXPECT_EQ(encode(golden_ack_packet(), {}), golden);
}

TEST(RefCodec, R_ENC_4_GoldenAckFrameIpv6_Decode) {
  const Frame golden = test::hex_frame(kGoldenAckIpv6);
  const DecodeResult r = decode(golden);
  ASSERT_TRUE(r.ok()) << error_name(*r.error);
  Packet expected = golden_ack_packet();
  expected.icrc = 0xFED965FE;
  EXPECT_EQ(r.packet, expected);
  EXPECT_EQ(canonical(r, golden),
            "ETH dst=02:00:00:00:00:02 src=02:00:00:00:00:01 type=0x86dd | "
            "IPV6 src=fd00:0:0:0:0:0:0:1 dst=fd00:0:0:0:0:0:0:2 dscp=48 ecn=0 flow=0x0c001 hlim=64 | "
            "UDP sport=49153 dport=4793 len=76 csum=0x0000 | "
            "BTH ver=1 op=ACK flags=- dcid=0x0000abcd path=5 ts=100 | "
            "AETH cpsn=0x00000009 ce=2 tse=1234 hint=0 "
            "sack=4000000000000000000000000000000000000000000000000000000000000001 | "
            "ICRC 0xfed965fe");
}

// The same two frames with the UDP checksum computed ([R-ENC-7]): the RFC 768 pseudo-header for
// IPv4 (addresses, zero, protocol, UDP length) and the RFC 8200 one for IPv6 (addresses, 32-bit
// length, three zero bytes, next header). Values from the independent implementation as above.
TEST(RefCodec, R_ENC_7_GoldenUdpChecksumIpv4) {
  Frame golden = test::hex_frame(kGoldenWriteIpv4);
  wr16(golden, 34 + 6, 0x83BF);
  const std::vector<uint8_t> payload = {1, 2, 3, 4};
  EXPECT_EQ(encode(golden_write_packet(), payload, true), golden);
  const DecodeResult r = decode(golden);
  ASSERT_TRUE(r.ok()) << error_name(*r.error);
  EXPECT_EQ(r.packet.udp_checksum, 0x83BF);
}

TEST(RefCodec, R_ENC_7_GoldenUdpChecksumIpv6) {
  Frame golden = test::hex_frame(kGoldenAckIpv6);
  wr16(golden, 54 + 6, 0xCC99);
  EXPECT_EQ(encode(golden_ack_packet(), {}, true), golden);
  const DecodeResult r = decode(golden);
  ASSERT_TRUE(r.ok()) << error_name(*r.error);
  EXPECT_EQ(r.packet.udp_checksum, 0xCC99);
  EXPECT_NE(canonical(r, golden).find("UDP sport=49153 dport=4793 len=76 csum=0xcc99 |"), std::string::npos);
  // One off is rejected.
  wr16(golden, 54 + 6, 0xCC98);
  EXPECT_EQ(outcome(golden), "UdpChecksum");
}

// -------------------------------------------------------------------------------------------
// Appendix C, every opcode
// -------------------------------------------------------------------------------------------

TEST(RefCodec, AppendixC_CanonicalEveryOpcode) {
  const std::string eth = "ETH dst=02:00:00:00:00:01 src=02:00:00:00:00:02 type=0x0800 | ";
  const std::string ip_data = "IPV4 src=10.0.0.1 dst=10.0.0.2 dscp=26 ecn=2 id=0x0102 df=1 ttl=64 | ";
  const std::string ip_ctl = "IPV4 src=10.0.0.1 dst=10.0.0.2 dscp=48 ecn=0 id=0x0102 df=1 ttl=64 | ";
  const std::string dh = "DH psn=0xfffffffe stream=2 plen=16 msn=7 mlen=10000 moff=4096 | ";
  const std::string reth = "RETH va=0x0000000000001000 rkey=0x00000100 | ";
  const std::string conn = "CONN scid=0x00000002 isn=0xfffffff0 paths=4 streams=8 maxpay=4096 wcap=256 | ";
  struct Case {
    Opcode op;
    std::string expected_without_icrc;
  };
  const std::vector<Case> cases = {
      {Opcode::Send, eth + ip_data + "UDP sport=49152 dport=4793 len=68 csum=0x0000 | " +
                         "BTH ver=1 op=SEND flags=- dcid=0x11223344 path=3 ts=1234 | " + dh +
                         "SEND rsn=3 | PAYLOAD off=82 len=16 | "},
      {Opcode::Write, eth + ip_data + "UDP sport=49152 dport=4793 len=76 csum=0x0000 | " +
                          "BTH ver=1 op=WRITE flags=- dcid=0x11223344 path=3 ts=1234 | " + dh + reth +
                          "PAYLOAD off=90 len=16 | "},
      {Opcode::WriteImm, eth + ip_data + "UDP sport=49152 dport=4793 len=84 csum=0x0000 | " +
                             "BTH ver=1 op=WRITE_IMM flags=- dcid=0x11223344 path=3 ts=1234 | " + dh + reth +
                             "IMM rsn=3 imm=0xdeadbeef | PAYLOAD off=98 len=16 | "},
      {Opcode::ReadReq, eth + ip_data + "UDP sport=49152 dport=4793 len=60 csum=0x0000 | " +
                            "BTH ver=1 op=READ_REQ flags=- dcid=0x11223344 path=3 ts=1234 | " +
                            "DH psn=0xfffffffe stream=2 plen=0 msn=7 mlen=10000 moff=0 | " + reth +
                            "PAYLOAD off=90 len=0 | "},
      {Opcode::ReadResp, eth + ip_data + "UDP sport=49152 dport=4793 len=64 csum=0x0000 | " +
                             "BTH ver=1 op=READ_RESP flags=- dcid=0x11223344 path=3 ts=1234 | " + dh +
                             "PAYLOAD off=78 len=16 | "},
      {Opcode::Ack, eth + ip_ctl + "UDP sport=49152 dport=4793 len=76 csum=0x0000 | " +
                        "BTH ver=1 op=ACK flags=- dcid=0x11223344 path=3 ts=1234 | " +
                        "AETH cpsn=0x00000009 ce=1 tse=1200 hint=50000 sack=40" + std::string(62, '0') + " | "},
      {Opcode::Nak, eth + ip_ctl + "UDP sport=49152 dport=4793 len=36 csum=0x0000 | " +
                        "BTH ver=1 op=NAK flags=- dcid=0x11223344 path=3 ts=1234 | " +
                        "NAK psn=0x00000009 code=RNR detail=10 | "},
      {Opcode::Probe, eth + ip_ctl + "UDP sport=49152 dport=4793 len=28 csum=0x0000 | " +
                          "BTH ver=1 op=PROBE flags=- dcid=0x11223344 path=3 ts=1234 | "},
      {Opcode::Connect, eth + ip_ctl + "UDP sport=49152 dport=4793 len=44 csum=0x0000 | " +
                            "BTH ver=1 op=CONNECT flags=- dcid=0x00000000 path=0 ts=1234 | " + conn},
      {Opcode::Accept, eth + ip_ctl + "UDP sport=49152 dport=4793 len=44 csum=0x0000 | " +
                           "BTH ver=1 op=ACCEPT flags=- dcid=0x11223344 path=0 ts=1234 | " + conn},
      {Opcode::Reject, eth + ip_ctl + "UDP sport=49152 dport=4793 len=32 csum=0x0000 | " +
                           "BTH ver=1 op=REJECT flags=- dcid=0x11223344 path=0 ts=1234 | " + "REJ reason=1 | "},
      {Opcode::Disconnect, eth + ip_ctl + "UDP sport=49152 dport=4793 len=32 csum=0x0000 | " +
                               "BTH ver=1 op=DISCONNECT flags=- dcid=0x11223344 path=0 ts=1234 | " + "REJ reason=1 | "},
      {Opcode::DisconnectAck, eth + ip_ctl + "UDP sport=49152 dport=4793 len=28 csum=0x0000 | " +
                                  "BTH ver=1 op=DISCONNECT_ACK flags=- dcid=0x11223344 path=0 ts=1234 | "},
  };
  for (const Case& c : cases) {
    const Frame f = sample_frame(c.op);
    const DecodeResult r = decode(f);
    ASSERT_TRUE(r.ok()) << opcode_name(c.op) << ": " << error_name(*r.error);
    // The ICRC is the last 4 bytes of the frame (no padding here).
    const std::string expected = c.expected_without_icrc + "ICRC " + hex8(rd32(f, f.size() - 4));
    EXPECT_EQ(canonical(r, f), expected);
  }
}

TEST(RefCodec, AppendixC_FlagsInTableOrderAndIpv6GroupsWithoutCompression) {
  Packet p = sample_packet(Opcode::ReadResp, true);
  p.flags = kFlagVoid | kFlagAr;  // printed in table order: AR before VOID
  p.msg_offset = 0;
  p.ip_src = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0x0a, 0xbc, 0x00, 0x0f, 0xf0, 0x00};
  p.ipv6_flow_label = 0xFFFFF;
  const Frame f = encode(p, {});
  const DecodeResult r = decode(f);
  ASSERT_TRUE(r.ok()) << error_name(*r.error);
  const std::string line = canonical(r, f);
  EXPECT_NE(line.find("IPV6 src=2001:db8:0:0:0:abc:f:f000 dst=fd00:0:0:0:0:0:0:2 dscp=26 ecn=2 "
                      "flow=0xfffff hlim=64 | "),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("BTH ver=1 op=READ_RESP flags=AR,VOID dcid=0x11223344"), std::string::npos) << line;
  EXPECT_NE(line.find("PAYLOAD off=98 len=0"), std::string::npos) << line;  // 14+40+8+16+20
}

TEST(RefCodec, AppendixC_ErrorLine) {
  const Frame f(10, 0);
  const DecodeResult r = decode(f);
  EXPECT_EQ(canonical(r, f), "ERROR Truncated");
  Frame g = sample_frame(Opcode::Probe);
  g.back() ^= 1;
  EXPECT_EQ(canonical(decode(g), g), "ERROR Icrc");
}

// -------------------------------------------------------------------------------------------
// [R-HDR-20] SACK bit order
// -------------------------------------------------------------------------------------------

TEST(RefCodec, R_HDR_20_SackBitOrder) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 256; ++i) {
    Packet p = sample_packet(Opcode::Ack);
    p.sack = {};
    p.sack[i / 8] = static_cast<uint8_t>(0x80 >> (i % 8));  // bit i, the spec's formula
    const Frame f = encode(p, {});
    // On the wire: byte i/8 of the bitmap, which starts 16 bytes into the AETH.
    for (int b = 0; b < 32; ++b) { EXPECT_EQ(f[test::ext_off(f) + 16 + b], b == i / 8 ? (0x80 >> (i % 8)) : 0) << i; }
    const DecodeResult r = decode(f);
    if (i == 0) {
      // Bit 0 stands for CPSN + 1, which cannot have been received.
      EXPECT_EQ(outcome(f), "SackBase");
      continue;
    }
    ASSERT_TRUE(r.ok()) << i << ": " << error_name(*r.error);
    EXPECT_EQ(r.packet.sack, p.sack);
    // The hex dump reads left to right in PSN order: hex digit i/4 holds bit i at 8 >> (i % 4).
    const std::string line = canonical(r, f);
    const std::string sack = line.substr(line.find("sack=") + 5, 64);
    for (int d = 0; d < 64; ++d) {
      EXPECT_EQ(sack[d], d == i / 4 ? kHex[8 >> (i % 4)] : '0') << "bit " << i << " digit " << d;
    }
  }
}

TEST(RefCodec, R_HDR_20_SackBitZeroWithOtherBits) {
  Packet p = sample_packet(Opcode::Ack);
  p.sack.fill(0x7F);
  EXPECT_EQ(outcome(encode(p, {})), "OK");
  p.sack[0] = 0xFF;
  EXPECT_EQ(outcome(encode(p, {})), "SackBase");
}

// -------------------------------------------------------------------------------------------
// [R-VAL-1]: one test per check, IPv4 and IPv6 where both apply.
// -------------------------------------------------------------------------------------------

class RefCodecIp : public ::testing::TestWithParam<bool> {
 protected:
  bool v6() const { return GetParam(); }
  Frame frame(Opcode op = Opcode::Write, size_t payload = 16) const { return sample_frame(op, v6(), payload); }
  Frame encoded(const Packet& p, size_t payload = 0) const { return encode(p, counting_payload(payload)); }
  Packet packet(Opcode op) const { return sample_packet(op, v6()); }
  size_t ip_header_len() const { return v6() ? 40 : 20; }
};

INSTANTIATE_TEST_SUITE_P(Ip, RefCodecIp, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "IPv6" : "IPv4"; });

TEST_P(RefCodecIp, R_VAL_1_Check01_Truncated_Ethernet) {
  const Frame f = frame();
  EXPECT_EQ(outcome(Frame{}), "Truncated");
  EXPECT_EQ(outcome(Frame(f.begin(), f.begin() + 13)), "Truncated");
}

TEST_P(RefCodecIp, R_VAL_1_Check02_EtherType) {
  Frame f = frame();
  wr16(f, 12, 0x8100);  // a VLAN tag is not handled
  EXPECT_EQ(outcome(f), "EtherType");
  wr16(f, 12, 0x0806);
  EXPECT_EQ(outcome(f), "EtherType");
  // Check 2 comes before check 3: a bare Ethernet header with a bad type is EtherType.
  EXPECT_EQ(outcome(Frame(f.begin(), f.begin() + 14)), "EtherType");
}

TEST_P(RefCodecIp, R_VAL_1_Check03_Truncated_IpHeader) {
  const Frame f = frame();
  const size_t need = 14 + ip_header_len();
  EXPECT_EQ(outcome(Frame(f.begin(), f.begin() + 14)), "Truncated");
  EXPECT_EQ(outcome(Frame(f.begin(), f.begin() + static_cast<long>(need) - 1)), "Truncated");
  // With the whole fixed header present, the IP length check is next.
  EXPECT_EQ(outcome(Frame(f.begin(), f.begin() + static_cast<long>(need))), "IpLength");
}

TEST_P(RefCodecIp, R_VAL_1_Check04_IpVersion) {
  Frame f = frame();
  f[14] = static_cast<uint8_t>((v6() ? 0x40 : 0x60) | (f[14] & 0x0F));  // the other version
  EXPECT_EQ(outcome(f), "IpVersion");
  f[14] = static_cast<uint8_t>(0x50 | (f[14] & 0x0F));
  EXPECT_EQ(outcome(f), "IpVersion");
}

TEST(RefCodec, R_VAL_1_Check05_Ipv4Options) {
  Frame f = sample_frame(Opcode::Write);
  f[14] = 0x46;  // IHL 6
  test::fix_ipv4_checksum(f);
  EXPECT_EQ(outcome(f), "Ipv4Options");
  f[14] = 0x44;  // IHL 4, and a checksum that no longer verifies: check 5 comes first
  EXPECT_EQ(outcome(f), "Ipv4Options");
}

TEST_P(RefCodecIp, R_VAL_1_Check06_IpLength) {
  Frame f = frame();
  const size_t len_at = v6() ? 18 : 16;
  const uint16_t good = rd16(f, len_at);
  const uint16_t min_len = v6() ? 8 : 28;  // room for the UDP header
  auto with_len = [&](uint16_t v) {
    Frame g = f;
    wr16(g, len_at, v);
    test::fix_ipv4_checksum(g);
    return g;
  };
  EXPECT_EQ(outcome(with_len(static_cast<uint16_t>(min_len - 1))), "IpLength");
  EXPECT_EQ(outcome(with_len(0)), "IpLength");
  EXPECT_EQ(outcome(with_len(static_cast<uint16_t>(good + 1))), "IpLength");  // past the frame
  EXPECT_EQ(outcome(with_len(0xFFFF)), "IpLength");
  // The minimum passes check 6 and fails later, at the UDP length (10).
  EXPECT_EQ(outcome(with_len(min_len)), "UdpLength");
  // A shorter IP packet inside the frame is fine for check 6: the rest is padding, and the UDP
  // length no longer matches.
  EXPECT_EQ(outcome(with_len(static_cast<uint16_t>(good - 1))), "UdpLength");
}

TEST(RefCodec, R_VAL_1_Check07_Ipv4Checksum) {
  Frame f = sample_frame(Opcode::Write);
  f[22] ^= 0x01;  // TTL changed, checksum not repaired
  EXPECT_EQ(outcome(f), "Ipv4Checksum");
  Frame g = sample_frame(Opcode::Write);
  wr16(g, 24, static_cast<uint16_t>(rd16(g, 24) + 1));
  EXPECT_EQ(outcome(g), "Ipv4Checksum");
}

TEST(RefCodec, R_VAL_1_Check07_Ipv4ChecksumAcceptsNegativeZero) {
  // RFC 1071 verification sums the header including its checksum field; when the other words sum
  // to 0xFFFF the field may hold either representation of zero. Build such a header by choosing
  // the identification field.
  Packet p = sample_packet(Opcode::Probe);
  p.ipv4_id = 0;
  Frame f = encode(p, {});
  wr16(f, 24, 0);
  uint32_t sum = 0;
  for (size_t i = 14; i < 34; i += 2) sum += rd16(f, i);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  // Pick id so that the header (checksum 0) sums to 0xFFFF.
  wr16(f, 18, static_cast<uint16_t>(0xFFFF - sum));
  wr16(f, 24, 0x0000);
  EXPECT_EQ(outcome(f), "OK");
  wr16(f, 24, 0xFFFF);
  EXPECT_EQ(outcome(f), "OK");
  wr16(f, 24, 0x0001);
  EXPECT_EQ(outcome(f), "Ipv4Checksum");
}

TEST(RefCodec, R_VAL_1_Check08_Fragment) {
  for (const uint16_t flags_and_offset : {0x2000, 0x6000, 0x0001, 0x4001, 0x1FFF, 0x8000, 0xC000}) {
    Frame f = sample_frame(Opcode::Write);
    wr16(f, 20, flags_and_offset);
    test::fix_ipv4_checksum(f);
    EXPECT_EQ(outcome(f), "Fragment") << std::hex << flags_and_offset;
  }
  // DF alone, or nothing, is not a fragment.
  for (const uint16_t ok : {0x0000, 0x4000}) {
    Frame f = sample_frame(Opcode::Write);
    wr16(f, 20, ok);
    test::fix_ipv4_checksum(f);
    EXPECT_EQ(outcome(f), "OK");
    EXPECT_EQ(decode(f).packet.ipv4_df, ok == 0x4000);
  }
  // MF set but the checksum not repaired: check 7 comes first.
  Frame f = sample_frame(Opcode::Write);
  wr16(f, 20, 0x2000);
  EXPECT_EQ(outcome(f), "Ipv4Checksum");
}

TEST_P(RefCodecIp, R_VAL_1_Check09_NotUdp) {
  for (const uint8_t proto : {0, 6, 43, 44, 60, 16, 18}) {
    Frame f = frame();
    f[v6() ? 20 : 23] = proto;  // IPv6 next header / IPv4 protocol
    test::fix_ipv4_checksum(f);
    EXPECT_EQ(outcome(f), "NotUdp") << int{proto};
  }
}

TEST_P(RefCodecIp, R_VAL_1_Check10_UdpLength) {
  for (const int delta : {-1, 1, -8}) {
    Frame f = frame();
    const size_t at = test::udp_off(f) + 4;
    wr16(f, at, static_cast<uint16_t>(rd16(f, at) + delta));
    EXPECT_EQ(outcome(f), "UdpLength") << delta;
  }
}

TEST_P(RefCodecIp, R_VAL_1_Check11_UdpPort) {
  Frame f = frame();
  wr16(f, test::udp_off(f) + 2, 4791);  // RoCEv2's port
  EXPECT_EQ(outcome(f), "UdpPort");
  // The port is configurable ([R-ENC-5]).
  EXPECT_EQ(outcome(f, 4791), "OK");
  EXPECT_EQ(outcome(frame(), 4791), "UdpPort");
}

TEST_P(RefCodecIp, R_VAL_1_Check12_UdpChecksum) {
  Packet p = packet(Opcode::Write);
  const Frame good = encode(p, counting_payload(33), true);  // odd length: a padded last word
  ASSERT_NE(rd16(good, test::udp_off(good) + 6), 0);
  EXPECT_EQ(outcome(good), "OK");
  // Zero is always accepted ([R-ENC-7]), on IPv6 too.
  Frame zero = good;
  wr16(zero, test::udp_off(zero) + 6, 0);
  EXPECT_EQ(outcome(zero), "OK");
  // A wrong non-zero checksum.
  Frame wrong = good;
  wr16(wrong, test::udp_off(wrong) + 6, static_cast<uint16_t>(rd16(good, test::udp_off(good) + 6) ^ 0x0100));
  EXPECT_EQ(outcome(wrong), "UdpChecksum");
  // A corrupted payload byte with a computed checksum: check 12 precedes the ICRC (17).
  Frame corrupt = good;
  corrupt[corrupt.size() - 10] ^= 0x5A;
  EXPECT_EQ(outcome(corrupt), "UdpChecksum");
  // The pseudo-header covers the addresses: a changed source address fails (IPv4 header repaired).
  Frame moved = good;
  moved[v6() ? 22 : 26] ^= 0x01;
  test::fix_ipv4_checksum(moved);
  EXPECT_EQ(outcome(moved), "UdpChecksum");
}

TEST(RefCodec, R_ENC_7_UdpChecksumOfZeroIsSentAsAllOnes) {
  // Find a packet whose checksum computes to 0 (sent as 0xFFFF, RFC 768) by varying the timestamp.
  Packet p = sample_packet(Opcode::Probe);
  for (uint32_t ts = 0; ts < 0x20000; ++ts) {
    p.timestamp = ts;
    const Frame f = encode(p, {}, true);
    const uint16_t csum = rd16(f, test::udp_off(f) + 6);
    ASSERT_NE(csum, 0);
    if (csum == 0xFFFF) {
      EXPECT_EQ(outcome(f), "OK");
      return;
    }
  }
  FAIL() << "no timestamp gave a checksum of 0xFFFF";
}

TEST_P(RefCodecIp, R_VAL_1_Check13_TransportLength_NoRoomForBthAndIcrc) {
  for (const size_t len : {0, 1, 16, 19}) {
    Frame f = frame();
    test::resize_transport(f, len);
    EXPECT_EQ(outcome(f), "TransportLength") << len;
  }
  // 20 bytes is enough for check 13; a WRITE needs more (check 16).
  Frame f = frame();
  test::resize_transport(f, 20);
  EXPECT_EQ(outcome(f), "TransportLength");
  // PROBE: exactly BTH + ICRC.
  EXPECT_EQ(outcome(frame(Opcode::Probe)), "OK");
  // Check 13 comes before the version (14): 19 bytes with a bad version byte.
  Frame g = frame();
  g[test::bth_off(g)] = 0x20;
  test::resize_transport(g, 19);
  EXPECT_EQ(outcome(g), "TransportLength");
}

TEST_P(RefCodecIp, R_VAL_1_Check14_Version) {
  for (const uint8_t version : {0, 2, 15}) {
    Packet p = packet(Opcode::Write);
    p.version = version;
    EXPECT_EQ(outcome(encoded(p, 8)), "Version") << int{version};
  }
  // Before the ICRC: a bad version and a bad ICRC give Version.
  Packet p = packet(Opcode::Write);
  p.version = 2;
  Frame f = encoded(p, 8);
  f.back() ^= 0xFF;
  EXPECT_EQ(outcome(f), "Version");
}

TEST_P(RefCodecIp, R_VAL_1_Check15_Opcode) {
  for (const int v : {0x00, 0x06, 0x0F, 0x13, 0x1F, 0x25, 0x80, 0xFF}) {
    Frame f = frame(Opcode::Probe);
    f[test::bth_off(f) + 1] = static_cast<uint8_t>(v);
    EXPECT_EQ(outcome(f), "Opcode") << v;  // the ICRC no longer matches either: Opcode first
    test::fix_icrc(f);
    EXPECT_EQ(outcome(f), "Opcode") << v;
  }
}

TEST_P(RefCodecIp, R_VAL_1_Check16_TransportLength_Opcode) {
  // Non-data opcodes: exactly 16 + extension + 4 ([R-HDR-7]).
  for (const Opcode op : {Opcode::Ack, Opcode::Nak, Opcode::Probe, Opcode::Connect, Opcode::Accept, Opcode::Reject,
                          Opcode::Disconnect, Opcode::DisconnectAck}) {
    const Packet p = packet(op);
    EXPECT_EQ(outcome(encode(p, counting_payload(1))), "TransportLength") << opcode_name(op);
    Frame shorter = encode(p, {});
    test::resize_transport(shorter, 16 + extension_length(op) + 4 - 1);
    test::fix_icrc(shorter);
    // (For PROBE and DISCONNECT_ACK, 19 bytes already fail check 13, with the same error.)
    EXPECT_EQ(outcome(shorter), "TransportLength") << opcode_name(op);
  }
  // Data opcodes: at least 16 + extension + 4.
  for (const Opcode op : {Opcode::Send, Opcode::Write, Opcode::WriteImm, Opcode::ReadReq, Opcode::ReadResp}) {
    Frame f = encode(packet(op), {});
    test::resize_transport(f, 16 + extension_length(op) + 4 - 1);
    test::fix_icrc(f);
    EXPECT_EQ(outcome(f), "TransportLength") << opcode_name(op);
  }
  // Before the ICRC (17): an ACK one byte too long with a bad ICRC.
  Frame g = encode(packet(Opcode::Ack), counting_payload(1));
  g.back() ^= 1;
  EXPECT_EQ(outcome(g), "TransportLength");
}

TEST_P(RefCodecIp, R_HDR_8_DataPayloadAtMost8192) {
  Packet p = packet(Opcode::Write);
  p.msg_offset = 0;
  p.msg_length = 20000;
  EXPECT_EQ(outcome(encode(p, counting_payload(8192))), "OK");
  EXPECT_EQ(outcome(encode(p, counting_payload(8193))), "TransportLength");
  // READ_REQ carries no payload, but an oversized one is still a length error first.
  Packet r = packet(Opcode::ReadReq);
  EXPECT_EQ(outcome(encode(r, counting_payload(8193))), "TransportLength");
}

TEST_P(RefCodecIp, R_VAL_1_Check17_Icrc) {
  for (const Opcode op : all_known_opcodes()) {
    Frame f = frame(op);
    f.back() ^= 0x01;  // the ICRC itself
    EXPECT_EQ(outcome(f), "Icrc") << opcode_name(op);
    Frame g = frame(op);
    g[test::bth_off(g) + 4] ^= 0x80;  // a DCID bit
    EXPECT_EQ(outcome(g), "Icrc") << opcode_name(op);
  }
  // ICRC before Reserved (18): a bad flag and a bad ICRC.
  Packet p = packet(Opcode::Ack);
  p.flags = kFlagAr;
  Frame h = encode(p, {});
  EXPECT_EQ(outcome(h), "Reserved");
  h.back() ^= 0x01;
  EXPECT_EQ(outcome(h), "Icrc");
}

// [R-CONV-4]: a non-zero reserved field is rejected.
TEST_P(RefCodecIp, R_VAL_1_Check18_Reserved_BthReservedBits) {
  for (const uint8_t nibble : {1, 8, 15}) {
    Frame f = frame(Opcode::Probe);
    f[test::bth_off(f)] = static_cast<uint8_t>(0x10 | nibble);
    test::fix_icrc(f);
    EXPECT_EQ(outcome(f), "Reserved") << int{nibble};
  }
  for (const uint16_t v : {0x0001, 0x8000}) {
    Frame f = frame(Opcode::Write);
    wr16(f, test::bth_off(f) + 10, v);
    test::fix_icrc(f);
    EXPECT_EQ(outcome(f), "Reserved") << v;
  }
}

TEST_P(RefCodecIp, R_VAL_1_Check18_Reserved_Flags) {
  for (const Opcode op : all_known_opcodes()) {
    const bool data = is_data_opcode(op);
    for (int bit = 0; bit < 16; ++bit) {
      const uint16_t flag = static_cast<uint16_t>(1u << bit);
      const bool allowed = (data && (flag == kFlagAr || flag == kFlagRetx || flag == kFlagVoid)) ||
                           (op == Opcode::Probe && flag == kFlagAr);
      Packet p = packet(op);
      p.flags = flag;
      // VOID requires an empty payload ([R-HDR-16]).
      const Frame f = encode(p, counting_payload(flag == kFlagVoid || op == Opcode::ReadReq || !data ? 0 : 8));
      EXPECT_EQ(outcome(f), allowed ? "OK" : "Reserved") << opcode_name(op) << " flag " << flag;
    }
  }
}

TEST_P(RefCodecIp, R_VAL_1_Check18_Reserved_Dcid) {
  Packet c = packet(Opcode::Connect);
  EXPECT_EQ(outcome(encoded(c)), "OK");
  c.dcid = 1;
  EXPECT_EQ(outcome(encoded(c)), "Reserved");
  for (const Opcode op : all_known_opcodes()) {
    if (op == Opcode::Connect) continue;
    Packet p = packet(op);
    p.dcid = 0;
    EXPECT_EQ(outcome(encoded(p)), "Reserved") << opcode_name(op);
  }
}

TEST_P(RefCodecIp, R_VAL_1_Check18_Reserved_ControlPathId) {
  for (const Opcode op : all_known_opcodes()) {
    Packet p = packet(op);
    p.path_id = 1;
    EXPECT_EQ(outcome(encoded(p)), is_control_opcode(op) ? "Reserved" : "OK") << opcode_name(op);
  }
}

TEST_P(RefCodecIp, R_VAL_1_Check19_PayloadLength) {
  for (const Opcode op : {Opcode::Send, Opcode::Write, Opcode::WriteImm, Opcode::ReadResp, Opcode::ReadReq}) {
    for (const int delta : {-1, 1, 100}) {
      Frame f = encode(packet(op), counting_payload(op == Opcode::ReadReq ? 0 : 16));
      const size_t at = test::ext_off(f) + 6;
      wr16(f, at, static_cast<uint16_t>(rd16(f, at) + delta));
      test::fix_icrc(f);
      EXPECT_EQ(outcome(f), "PayloadLength") << opcode_name(op) << " " << delta;
    }
  }
  // Reserved (18) before PayloadLength (19).
  Frame f = frame(Opcode::Write);
  wr16(f, test::ext_off(f) + 6, 0);
  f[test::bth_off(f) + 2] |= 0x01;  // a reserved flag
  test::fix_icrc(f);
  EXPECT_EQ(outcome(f), "Reserved");
}

TEST_P(RefCodecIp, R_VAL_1_Check20_Range) {
  // [R-HDR-12] Message Length at most 2^31.
  Packet p = packet(Opcode::Write);
  p.msg_offset = 0;
  p.msg_length = 0x80000000;
  EXPECT_EQ(outcome(encoded(p, 16)), "OK");
  p.msg_length = 0x80000001;
  EXPECT_EQ(outcome(encoded(p, 16)), "Range");
  p.msg_length = 0xFFFFFFFF;
  EXPECT_EQ(outcome(encoded(p, 0)), "Range");
  // [R-HDR-13] Offset + Payload Length <= Message Length.
  p = packet(Opcode::Write);
  p.msg_length = 1000;
  p.msg_offset = 984;
  EXPECT_EQ(outcome(encoded(p, 16)), "OK");  // ends exactly at the message length
  p.msg_offset = 985;
  EXPECT_EQ(outcome(encoded(p, 16)), "Range");
  p.msg_offset = 1000;
  EXPECT_EQ(outcome(encoded(p, 0)), "OK");  // empty segment at the end
  p.msg_offset = 1001;
  EXPECT_EQ(outcome(encoded(p, 0)), "Range");
  // ... computed without overflow: 0xFFFFFFF8 + 16 wraps to 8 in 32 bits.
  p.msg_length = 0x80000000;
  p.msg_offset = 0xFFFFFFF8;
  EXPECT_EQ(outcome(encoded(p, 16)), "Range");
  // The largest message: the last byte.
  p.msg_offset = 0x7FFFFFFF;
  EXPECT_EQ(outcome(encoded(p, 1)), "OK");
  p.msg_offset = 0x80000000;
  EXPECT_EQ(outcome(encoded(p, 1)), "Range");
  // Zero-length message, one empty segment ([R-HDR-14]).
  p.msg_length = 0;
  p.msg_offset = 0;
  EXPECT_EQ(outcome(encoded(p, 0)), "OK");
  EXPECT_EQ(outcome(encoded(p, 1)), "Range");
}

TEST_P(RefCodecIp, R_HDR_15_ReadRequestRange) {
  Packet p = packet(Opcode::ReadReq);
  EXPECT_EQ(outcome(encoded(p)), "OK");
  EXPECT_EQ(outcome(encoded(p, 1)), "Range");  // READ_REQ carries no payload
  p.msg_offset = 1;
  EXPECT_EQ(outcome(encoded(p)), "Range");
  // The requested length may be 2^31 but not more.
  p.msg_offset = 0;
  p.msg_length = 0x80000000;
  EXPECT_EQ(outcome(encoded(p)), "OK");
  p.msg_length = 0x80000001;
  EXPECT_EQ(outcome(encoded(p)), "Range");
}

TEST_P(RefCodecIp, R_HDR_16_VoidCarriesNoPayload) {
  for (const Opcode op : {Opcode::Send, Opcode::Write, Opcode::WriteImm, Opcode::ReadResp}) {
    Packet p = packet(op);
    p.flags = kFlagVoid | kFlagRetx;
    EXPECT_EQ(outcome(encoded(p, 0)), "OK") << opcode_name(op);
    EXPECT_EQ(outcome(encoded(p, 1)), "Range") << opcode_name(op);
  }
  // PayloadLength (19) before Range (20): a VOID whose DH claims 1 byte while carrying 2.
  Packet p = packet(Opcode::Write);
  p.flags = kFlagVoid;
  Frame f = encoded(p, 2);
  wr16(f, test::ext_off(f) + 6, 1);
  test::fix_icrc(f);
  EXPECT_EQ(outcome(f), "PayloadLength");
}

TEST_P(RefCodecIp, R_VAL_1_Check21_SackBase) {
  Packet p = packet(Opcode::Ack);
  p.sack[0] = 0x80;
  EXPECT_EQ(outcome(encoded(p)), "SackBase");
  // Reserved (18) first: a flag on an ACK.
  p.flags = kFlagRetx;
  EXPECT_EQ(outcome(encoded(p)), "Reserved");
}

TEST_P(RefCodecIp, R_VAL_1_Check22_NakReserved) {
  auto nak = [&](uint8_t code, uint16_t detail) {
    Packet p = packet(Opcode::Nak);
    p.nak_code = code;
    p.nak_detail = detail;
    return outcome(encoded(p));
  };
  EXPECT_EQ(nak(1, 0), "OK");
  EXPECT_EQ(nak(1, 0xFFFF), "OK");  // RNR: retry delay
  for (uint8_t code = 2; code <= 4; ++code) {
    EXPECT_EQ(nak(code, 0), "OK") << int{code};
    EXPECT_EQ(nak(code, 1), "Reserved") << int{code};
  }
  for (const uint8_t code : {0, 5, 0x80, 0xFF}) EXPECT_EQ(nak(code, 0), "Reserved") << int{code};
  // The reserved byte between Code and Detail.
  Frame f = encoded(packet(Opcode::Nak));
  f[test::ext_off(f) + 5] = 0x01;
  test::fix_icrc(f);
  EXPECT_EQ(outcome(f), "Reserved");
}

TEST_P(RefCodecIp, R_VAL_1_Check23_ConnRanges) {
  for (const Opcode op : {Opcode::Connect, Opcode::Accept}) {
    auto with = [&](auto field, uint32_t v) {
      Packet p = packet(op);
      p.*field = static_cast<std::remove_reference_t<decltype(p.*field)>>(v);
      return outcome(encoded(p));
    };
    EXPECT_EQ(with(&Packet::scid, 0), "Range");
    EXPECT_EQ(with(&Packet::scid, 0xFFFFFFFF), "OK");
    EXPECT_EQ(with(&Packet::isn, 0), "OK");  // any ISN
    EXPECT_EQ(with(&Packet::path_count, 0), "Range");
    EXPECT_EQ(with(&Packet::path_count, 1), "OK");
    EXPECT_EQ(with(&Packet::path_count, 256), "OK");
    EXPECT_EQ(with(&Packet::path_count, 257), "Range");
    EXPECT_EQ(with(&Packet::stream_count, 0), "Range");
    EXPECT_EQ(with(&Packet::stream_count, 1), "OK");
    EXPECT_EQ(with(&Packet::stream_count, 65535), "OK");
    EXPECT_EQ(with(&Packet::max_payload, 192), "Range");
    EXPECT_EQ(with(&Packet::max_payload, 255), "Range");
    EXPECT_EQ(with(&Packet::max_payload, 256), "OK");
    EXPECT_EQ(with(&Packet::max_payload, 257), "Range");
    EXPECT_EQ(with(&Packet::max_payload, 1000), "Range");  // not a multiple of 64
    EXPECT_EQ(with(&Packet::max_payload, 288), "Range");   // a multiple of 32, not of 64
    EXPECT_EQ(with(&Packet::max_payload, 8160), "Range");
    EXPECT_EQ(with(&Packet::max_payload, 320), "OK");
    EXPECT_EQ(with(&Packet::max_payload, 8192), "OK");
    EXPECT_EQ(with(&Packet::max_payload, 8256), "Range");
    EXPECT_EQ(with(&Packet::window_cap, 0), "Range");
    EXPECT_EQ(with(&Packet::window_cap, 1), "OK");
    EXPECT_EQ(with(&Packet::window_cap, 256), "OK");
    EXPECT_EQ(with(&Packet::window_cap, 257), "Range");
  }
  // Reserved (18, DCID on CONNECT) before Range (23).
  Packet p = packet(Opcode::Connect);
  p.dcid = 5;
  p.scid = 0;
  EXPECT_EQ(outcome(encoded(p)), "Reserved");
}

TEST_P(RefCodecIp, R_VAL_1_Check23_RejReserved) {
  for (const Opcode op : {Opcode::Reject, Opcode::Disconnect}) {
    for (int reason = 0; reason < 256; ++reason) {
      Packet p = packet(op);
      p.reason = static_cast<uint8_t>(reason);
      EXPECT_EQ(outcome(encoded(p)), reason <= 5 ? "OK" : "Reserved") << reason;
    }
    for (size_t byte = 1; byte <= 3; ++byte) {
      Frame f = encoded(packet(op));
      f[test::ext_off(f) + byte] = 0x10;
      test::fix_icrc(f);
      EXPECT_EQ(outcome(f), "Reserved") << opcode_name(op) << " byte " << byte;
    }
  }
}

// -------------------------------------------------------------------------------------------
// [R-VAL-1]: the first failing check decides, step by step from the Ethernet header inwards.
// -------------------------------------------------------------------------------------------

TEST(RefCodec, R_VAL_1_EarlierCheckWinsChain) {
  // Start from a frame that fails many checks at once, then repair them one at a time in [R-VAL-1]
  // order: every step must report the next check.
  Packet p = sample_packet(Opcode::Connect);
  p.dcid = 7;     // 18 Reserved
  p.scid = 0;     // 23 Range
  p.version = 3;  // 14 Version
  Frame f = encode(p, {});
  f.back() ^= 1;                        // 17 Icrc
  wr16(f, test::udp_off(f) + 2, 1234);  // 11 UdpPort
  f[23] = 6;                            // 9 NotUdp
  wr16(f, 20, 0x2000);                  // 8 Fragment
  f[22] ^= 0xFF;                        // 7 Ipv4Checksum (not repaired)
  f[14] = 0x47;                         // 5 Ipv4Options
  EXPECT_EQ(outcome(f), "Ipv4Options");
  f[14] = 0x45;
  EXPECT_EQ(outcome(f), "Ipv4Checksum");
  test::fix_ipv4_checksum(f);
  EXPECT_EQ(outcome(f), "Fragment");
  wr16(f, 20, 0x4000);
  test::fix_ipv4_checksum(f);
  EXPECT_EQ(outcome(f), "NotUdp");
  f[23] = 17;
  test::fix_ipv4_checksum(f);
  EXPECT_EQ(outcome(f), "UdpPort");
  wr16(f, test::udp_off(f) + 2, kDefaultUdpPort);
  EXPECT_EQ(outcome(f), "Version");
  f[test::bth_off(f)] = 0x10;
  EXPECT_EQ(outcome(f), "Icrc");
  test::fix_icrc(f);
  EXPECT_EQ(outcome(f), "Reserved");
  wr32(f, test::bth_off(f) + 4, 0);
  test::fix_icrc(f);
  EXPECT_EQ(outcome(f), "Range");
  wr32(f, test::ext_off(f), 2);
  test::fix_icrc(f);
  EXPECT_EQ(outcome(f), "OK");
}

TEST(RefCodec, R_VAL_1_EarlierCheckWinsPairs) {
  // IpVersion (4) before IpLength (6).
  Frame a = sample_frame(Opcode::Write);
  a[14] = 0x65;
  wr16(a, 16, 0);
  EXPECT_EQ(outcome(a), "IpVersion");
  // UdpLength (10) before UdpPort (11).
  Frame b = sample_frame(Opcode::Write, true);
  wr16(b, test::udp_off(b) + 4, 9);
  wr16(b, test::udp_off(b) + 2, 1);
  EXPECT_EQ(outcome(b), "UdpLength");
  // UdpPort (11) before UdpChecksum (12).
  Frame c = encode(sample_packet(Opcode::Write, true), counting_payload(4), true);
  c.back() ^= 1;
  EXPECT_EQ(outcome(c), "UdpChecksum");
  wr16(c, test::udp_off(c) + 2, 1);
  EXPECT_EQ(outcome(c), "UdpPort");
  // Opcode (15) before Icrc (17): the ICRC no longer matches the changed opcode.
  Frame d = sample_frame(Opcode::Probe);
  d[test::bth_off(d) + 1] = 0x30;
  EXPECT_EQ(outcome(d), "Opcode");
  // PayloadLength (19) before Range (20).
  Packet p = sample_packet(Opcode::Write);
  p.msg_length = 0xFFFFFFFF;
  Frame e = encode(p, counting_payload(4));
  EXPECT_EQ(outcome(e), "Range");
  wr16(e, test::ext_off(e) + 6, 5);
  test::fix_icrc(e);
  EXPECT_EQ(outcome(e), "PayloadLength");
}

// -------------------------------------------------------------------------------------------
// [R-ENC-8] padding, [R-VAL-4] fields
// -------------------------------------------------------------------------------------------

TEST_P(RefCodecIp, R_ENC_8_PaddingAfterIpPacketIgnored) {
  for (const Opcode op : all_known_opcodes()) {
    const Frame f = frame(op);
    const DecodeResult plain = decode(f);
    ASSERT_TRUE(plain.ok()) << opcode_name(op);
    for (const size_t pad : {1, 2, 17, 60}) {
      for (const uint8_t fill : {0x00, 0xFF, 0xA5}) {
        Frame g = f;
        g.insert(g.end(), pad, fill);
        const DecodeResult r = decode(g);
        ASSERT_TRUE(r.ok()) << opcode_name(op) << " pad " << pad;
        EXPECT_EQ(r.packet, plain.packet);
        EXPECT_EQ(canonical(r, g), canonical(plain, f));
      }
    }
  }
}

TEST(RefCodec, R_ENC_8_MinimumEthernetFrame) {
  // A DISCONNECT_ACK over IPv4 is 62 bytes; a 60-byte minimum frame plus padding decodes the same.
  const Frame f = sample_frame(Opcode::DisconnectAck);
  ASSERT_EQ(f.size(), 62u);
  Frame g = f;
  g.resize(64, 0);
  EXPECT_EQ(outcome(g), "OK");
}

TEST_P(RefCodecIp, R_VAL_4_DecodedFieldsOfEveryOpcode) {
  for (const Opcode op : all_known_opcodes()) {
    const Packet p = packet(op);
    const bool carries = is_data_opcode(op) && op != Opcode::ReadReq;
    const std::vector<uint8_t> payload = counting_payload(carries ? 16 : 0);
    const Frame f = encode(p, payload);
    const DecodeResult r = decode(f);
    ASSERT_TRUE(r.ok()) << opcode_name(op) << ": " << error_name(*r.error);
    Packet expected = p;
    if (is_data_opcode(op)) {
      expected.payload_length = static_cast<uint16_t>(payload.size());
      expected.payload_offset = static_cast<uint32_t>(14 + ip_header_len() + 8 + 16 + extension_length(op));
      expected.payload_len = static_cast<uint32_t>(payload.size());
      EXPECT_TRUE(std::equal(payload.begin(), payload.end(), f.begin() + expected.payload_offset));
    }
    expected.icrc = rd32(f, f.size() - 4);
    EXPECT_EQ(r.packet, expected) << opcode_name(op);
  }
}

TEST(RefCodec, DecodeErrorLeavesPacketZero) {
  Frame f = sample_frame(Opcode::Write);
  f.back() ^= 1;
  const DecodeResult r = decode(f);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.packet, Packet{});
}

TEST(RefCodec, EncodeRejectsValuesThatDoNotFit) {
  Packet p = sample_packet(Opcode::Write);
  Packet q = p;
  q.dscp = 64;
  EXPECT_THROW(encode(q, {}), std::invalid_argument);
  q = p;
  q.ecn = 4;
  EXPECT_THROW(encode(q, {}), std::invalid_argument);
  q = sample_packet(Opcode::Write, true);
  q.ipv6_flow_label = 0x100000;
  EXPECT_THROW(encode(q, {}), std::invalid_argument);
  q = p;
  q.version = 16;
  EXPECT_THROW(encode(q, {}), std::invalid_argument);
  // IPv4 total length is 16 bits: 20 + 8 + 16 + 32 + payload + 4 <= 65535.
  EXPECT_NO_THROW(encode(p, std::vector<uint8_t>(65535 - 80)));
  EXPECT_THROW(encode(p, std::vector<uint8_t>(65535 - 79)), std::length_error);
}

}  // namespace
}  // namespace mroce::ref
