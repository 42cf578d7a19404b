// Fuzz target frame_fast: a whole Ethernet frame through the fast codec (impl/codec).
//
// Every input is decoded ([R-VAL-1], [R-VAL-2]: ASan catches any read outside the frame). On
// success the harness reads every accessor the opcode allows, checks each against the rule that
// let the frame through (independently recomputing the ICRC and the IPv4 checksum), checks the
// canonical line (appendix C), and re-encodes the fields both through build(fields_of(v)) and
// through the in-place builder (FrameTemplate + put_* + finalize): the bytes must equal the
// input's up to the end of the IP packet ([R-VAL-4]).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "codec/fast_codec.hpp"
#include "frame_fixup.hpp"
#include "fuzz_util.hpp"

namespace {

constexpr const char* kTargetName = "frame_fast";

using namespace mroce::fast;
namespace fz = mroce::fuzzing;

volatile uint64_t g_sink;  // keeps the accessor reads alive

std::string hexs(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

// [R-VAL-4] bytes equal up to the end of the IP packet. The one permitted difference: an IPv4
// header checksum of 0x0000 vs 0xFFFF, which both verify when the other words sum to 0xFFFF
// ([R-VAL-1] check 7); a builder always writes the computed form.
bool same_ip_packet(const uint8_t* a, const std::vector<uint8_t>& b, uint32_t ip_end, bool v6, std::string& why) {
  if (b.size() < ip_end) {
    why = "rebuilt frame is " + std::to_string(b.size()) + " bytes, IP packet ends at " + std::to_string(ip_end);
    return false;
  }
  for (uint32_t i = 0; i < ip_end; ++i) {
    if (a[i] == b[i]) continue;
    if (!v6 && (i == 24 || i == 25)) {
      const uint16_t x = fz::be16(a + 24), y = fz::be16(b.data() + 24);
      if ((x == 0xFFFF && y == 0x0000) || (x == 0x0000 && y == 0xFFFF)) continue;
    }
    why = "first difference at byte " + std::to_string(i) + ": input " + hexs(a[i]) + ", rebuilt " + hexs(b[i]);
    return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* input, size_t size) {
  if (size > kMaxFrameLen + 4096) return 0;  // nothing new past the largest frame plus padding
  const uint32_t len = static_cast<uint32_t>(size);
  // An exactly-sized heap copy: AFL++ hands over a larger shared buffer, and ASan must see any
  // read past the frame's end ([R-VAL-2]) whichever engine runs the target.
  const std::unique_ptr<uint8_t[]> copy(new uint8_t[size ? size : 1]);
  if (size) std::memcpy(copy.get(), input, size);
  const uint8_t* const data = copy.get();

  PacketView v;
  const Error e = decode(data, len, kDefaultUdpPort, v);
  if (e != Error::None) {
    FUZZ_CHECK(unsigned(e) < kErrorCount, "error out of range");
    FUZZ_CHECK(canonical_error(e) == std::string("ERROR ") + error_name(e), canonical_error(e));
    return 0;
  }

  // ---- frame, Ethernet, IP ([R-ENC-1..4]) ----
  FUZZ_CHECK(v.frame() == data && v.frame_len() == len, "view does not describe the input");
  const bool v6 = v.ipv6();
  FUZZ_CHECK(v.ether_type() == (v6 ? 0x86DD : 0x0800), "EtherType");
  FUZZ_CHECK(v.ip_version() == (v6 ? 6 : 4) && (data[14] >> 4) == v.ip_version(), "IP version");
  FUZZ_CHECK(v.dscp() < 64 && v.ecn() < 4, "DSCP/ECN out of range");
  const uint32_t ip_hdr = v6 ? kIpv6Len : kIpv4Len;
  const uint32_t ip_end = kEthLen + v.ip_packet_len();
  FUZZ_CHECK(ip_end <= len, "IP packet extends past the frame");
  const Mac dst = v.eth_dst(), src = v.eth_src();
  FUZZ_CHECK(std::memcmp(dst.data(), data, 6) == 0 && std::memcmp(src.data(), data + 6, 6) == 0, "MAC addresses");
  const uint8_t* ips = v.ip_src();
  const uint8_t* ipd = v.ip_dst();
  FUZZ_CHECK(ips >= data && ipd >= data && ipd + (v6 ? 16 : 4) <= data + ip_end, "IP address view");
  uint64_t acc = v.ttl() + v.dscp() + v.ecn() + ips[0] + ipd[0];
  if (v6) {
    const Ip6 s6 = v.ipv6_src(), d6 = v.ipv6_dst();
    FUZZ_CHECK(std::memcmp(s6.data(), ips, 16) == 0 && std::memcmp(d6.data(), ipd, 16) == 0, "IPv6 addresses");
    FUZZ_CHECK(v.flow_label() <= 0xFFFFF, "flow label");
    FUZZ_CHECK(fz::be16(data + 18) + kEthLen + kIpv6Len == ip_end, "IPv6 payload length");
    acc += v.flow_label();
  } else {
    FUZZ_CHECK(v.ipv4_src() == fz::be32(ips) && v.ipv4_dst() == fz::be32(ipd), "IPv4 addresses");
    FUZZ_CHECK(fz::ipv4_checksum_verifies(data), "[R-VAL-1] check 7 passed a bad IPv4 checksum");
    FUZZ_CHECK((fz::be16(data + 20) & 0xBFFF) == 0, "[R-VAL-1] check 8 passed a fragment");
    FUZZ_CHECK(v.ipv4_df() == ((data[20] & 0x40) != 0), "DF");
    FUZZ_CHECK(fz::be16(data + 16) + kEthLen == ip_end, "IPv4 total length");
    acc += v.ipv4_id() + v.ipv4_checksum();
  }

  // ---- UDP ([R-ENC-5..8]) ----
  FUZZ_CHECK(v.udp_dport() == kDefaultUdpPort, "[R-VAL-1] check 11 passed another port");
  FUZZ_CHECK(v.udp_length() == v.ip_packet_len() - ip_hdr, "[R-VAL-1] check 10: UDP length");
  acc += v.udp_sport() + v.udp_checksum();

  // ---- BTH ([R-HDR-1..6]) ----
  const uint32_t bth = v.bth_offset();
  FUZZ_CHECK(bth == kEthLen + ip_hdr + kUdpLen && v.ext_offset() == bth + kBthLen, "BTH offset");
  FUZZ_CHECK(v.version() == 1 && (data[bth] & 0x0F) == 0, "[R-HDR-1] version/reserved");
  const Opcode op = v.opcode();
  const OpcodeInfo info = opcode_info(uint8_t(op));
  FUZZ_CHECK(info.valid && data[bth + 1] == uint8_t(op), "[R-HDR-2] opcode");
  FUZZ_CHECK(info.ext_len == fz::ext_len(uint8_t(op)), "table 3.2 extension length");
  FUZZ_CHECK(info.data == v.is_data() && info.data == fz::is_data_op(uint8_t(op)), "opcode class");
  const uint16_t flags = v.flags();
  const uint16_t allowed = info.data ? 0xE000 : (op == Opcode::Probe ? 0x8000 : 0);
  FUZZ_CHECK((flags & ~allowed) == 0, "[R-HDR-3] flags " + hexs(flags));
  FUZZ_CHECK(v.ar() == ((flags & kFlagAr) != 0) && v.retx() == ((flags & kFlagRetx) != 0) &&
                 v.is_void() == ((flags & kFlagVoid) != 0),
             "flag accessors");
  FUZZ_CHECK((v.dcid() == 0) == (op == Opcode::Connect), "[R-HDR-4] DCID rule");
  FUZZ_CHECK(!info.control || v.path_id() == 0, "[R-HDR-5] control path ID");
  FUZZ_CHECK(fz::be16(data + bth + 10) == 0, "BTH reserved");
  acc += v.timestamp() + v.path_id() + v.dcid();

  // ---- payload and ICRC ([R-HDR-7], [R-HDR-8], [R-HDR-28]) ----
  FUZZ_CHECK(v.payload_offset() == v.ext_offset() + info.ext_len, "payload offset");
  FUZZ_CHECK(v.payload() == data + v.payload_offset(), "payload view");
  FUZZ_CHECK(v.payload_offset() + v.payload_len() + kIcrcLen == ip_end, "[R-HDR-7] payload length");
  FUZZ_CHECK(v.payload_len() <= kMaxPayload, "[R-HDR-8] payload > 8192");
  FUZZ_CHECK(info.data || v.payload_len() == 0, "[R-HDR-7] payload on a non-data opcode");
  const uint32_t covered = ip_end - kIcrcLen - bth;
  FUZZ_CHECK(v.icrc() == fz::be32(data + ip_end - kIcrcLen), "ICRC accessor");
  FUZZ_CHECK(fz::crc32c(data + bth, covered) == v.icrc(),
             "[R-HDR-29] check 17 passed an ICRC that our own CRC-32C rejects");
  FUZZ_CHECK(crc32c(data + bth, covered) == crc32c_scalar(data + bth, covered), "CRC-32C hw/sw");
  if (v.payload_len() > 0) acc += v.payload()[0] + v.payload()[v.payload_len() - 1];

  // ---- extensions ----
  if (info.data) {
    const uint64_t end = uint64_t{v.msg_offset()} + v.payload_length();
    FUZZ_CHECK(v.payload_length() == v.payload_len(), "[R-HDR-11]");
    FUZZ_CHECK(v.msg_length() <= 0x80000000u && end <= v.msg_length(), "[R-HDR-12/13]");
    FUZZ_CHECK(op != Opcode::ReadReq || (v.payload_len() == 0 && v.msg_offset() == 0), "[R-HDR-15]");
    FUZZ_CHECK(!v.is_void() || v.payload_len() == 0, "[R-HDR-16]");
    acc += v.psn() + v.stream_id() + v.msn();
  }
  if (op == Opcode::Send || op == Opcode::WriteImm) acc += v.rsn();
  if (op == Opcode::Write || op == Opcode::WriteImm || op == Opcode::ReadReq) { acc += v.remote_va() + v.rkey(); }
  if (op == Opcode::WriteImm) acc += v.immediate();
  if (op == Opcode::Ack) {
    FUZZ_CHECK(!v.sack(0), "[R-HDR-20] SACK bit 0 set on an accepted ACK");
    const uint8_t* sb = v.sack_bytes();
    FUZZ_CHECK(sb == data + v.ext_offset() + 16, "SACK view");
    for (unsigned i = 0; i < 256; ++i) {
      const bool bit = ((sb[i / 8] << (i % 8)) & 0x80) != 0;  // [R-HDR-20], written differently
      FUZZ_CHECK(v.sack(i) == bit && sack_bit(sb, i) == bit, "SACK bit " + std::to_string(i));
    }
    acc += v.cpsn() + v.ce_count() + v.ts_echo() + v.rate_hint();
  }
  if (op == Opcode::Nak) {
    FUZZ_CHECK(v.nak_code() >= 1 && v.nak_code() <= 4, "[R-HDR-24] NAK code");
    FUZZ_CHECK(v.nak_code() == 1 || v.nak_detail() == 0, "[R-HDR-24] NAK detail");
    acc += v.nak_psn();
  }
  if (op == Opcode::Connect || op == Opcode::Accept) {
    FUZZ_CHECK(v.scid() != 0 && v.path_count() >= 1 && v.path_count() <= 256 && v.stream_count() >= 1 &&
                   v.max_payload() >= 256 && v.max_payload() <= 8192 && v.max_payload() % 64 == 0 &&
                   v.window_cap() >= 1 && v.window_cap() <= 256,
               "[R-HDR-26] ranges");
    acc += v.isn();
  }
  if (op == Opcode::Reject || op == Opcode::Disconnect) { FUZZ_CHECK(v.reason() <= 5, "[R-HDR-27] reason"); }
  g_sink = acc;

  // ---- canonical text (appendix C) ----
  const std::string line = canonical(v);
  char icrc_text[32];
  std::snprintf(icrc_text, sizeof icrc_text, " | ICRC 0x%08x", v.icrc());
  FUZZ_CHECK(line.rfind("ETH dst=", 0) == 0, line);
  FUZZ_CHECK(line.find(v6 ? " | IPV6 src=" : " | IPV4 src=") != std::string::npos, line);
  FUZZ_CHECK(line.size() > std::strlen(icrc_text) &&
                 line.compare(line.size() - std::strlen(icrc_text), std::string::npos, icrc_text) == 0,
             line);
  FUZZ_CHECK(line.find(std::string(" op=") + opcode_name(op) + " ") != std::string::npos, line);
  FUZZ_CHECK((line.find(" | PAYLOAD off=") != std::string::npos) == info.data, line);

  // ---- rebuild from fields: build(fields_of(v)) ([R-VAL-4]) ----
  const std::vector<uint8_t> payload(v.payload(), v.payload() + v.payload_len());
  const Fields f = fields_of(v);
  const std::vector<uint8_t> rebuilt = build(f, payload);
  std::string why;
  FUZZ_CHECK(same_ip_packet(data, rebuilt, ip_end, v6, why), "build(fields_of(v)): " + why);
  PacketView v2;
  const Error e2 = decode(rebuilt.data(), uint32_t(rebuilt.size()), kDefaultUdpPort, v2);
  FUZZ_CHECK(e2 == Error::None, std::string("rebuilt frame rejected: ") + error_name(e2));
  FUZZ_CHECK(canonical(v2) == line, "canonical of rebuilt frame differs:\n  " + canonical(v2) + "\n  " + line);

  // ---- rebuild through the production in-place builder (UDP checksum is always 0 there) ----
  if (v.udp_checksum() == 0) {
    PathConfig pc;
    pc.eth_dst = dst;
    pc.eth_src = src;
    pc.ipv6 = v6;
    if (v6) {
      pc.ipv6_src = v.ipv6_src();
      pc.ipv6_dst = v.ipv6_dst();
      pc.flow_label = v.flow_label();
    } else {
      pc.ipv4_src = v.ipv4_src();
      pc.ipv4_dst = v.ipv4_dst();
      pc.ipv4_id = v.ipv4_id();
      pc.ipv4_df = v.ipv4_df();
    }
    pc.dscp_data = pc.dscp_ctrl = v.dscp();
    pc.ecn_data = pc.ecn_ctrl = v.ecn();
    pc.ttl = v.ttl();
    pc.udp_sport = v.udp_sport();
    pc.udp_dport = v.udp_dport();
    const FrameTemplate tpl(pc);
    std::vector<uint8_t> buf(kMaxFrameLen);
    uint8_t* b = tpl.begin(buf.data(), info.data);
    const BthFields bf{flags, v.dcid(), v.path_id(), v.timestamp()};
    DhFields dh;
    if (info.data) dh = DhFields{v.psn(), v.stream_id(), v.msn(), v.msg_length(), v.msg_offset()};
    uint8_t* p = nullptr;
    switch (op) {
      case Opcode::Send:
        p = put_send(b, bf, dh, v.rsn());
        break;
      case Opcode::Write:
        p = put_write(b, bf, dh, v.remote_va(), v.rkey());
        break;
      case Opcode::WriteImm:
        p = put_write_imm(b, bf, dh, v.remote_va(), v.rkey(), v.rsn(), v.immediate());
        break;
      case Opcode::ReadReq:
        p = put_read_req(b, bf, dh, v.remote_va(), v.rkey());
        break;
      case Opcode::ReadResp:
        p = put_read_resp(b, bf, dh);
        break;
      case Opcode::Ack:
        p = put_ack(b, bf, AckFields{v.cpsn(), v.ce_count(), v.ts_echo(), v.rate_hint(), v.sack_bytes()});
        break;
      case Opcode::Nak:
        p = put_nak(b, bf, v.nak_psn(), v.nak_code(), v.nak_detail());
        break;
      case Opcode::Probe:
        p = put_probe(b, bf);
        break;
      case Opcode::Connect:
      case Opcode::Accept: {
        const ConnFields c{v.scid(), v.isn(), v.path_count(), v.stream_count(), v.max_payload(), v.window_cap()};
        p = op == Opcode::Connect ? put_connect(b, bf, c) : put_accept(b, bf, c);
        break;
      }
      case Opcode::Reject:
        p = put_reject(b, bf, v.reason());
        break;
      case Opcode::Disconnect:
        p = put_disconnect(b, bf, v.reason());
        break;
      case Opcode::DisconnectAck:
        p = put_disconnect_ack(b, bf);
        break;
    }
    FUZZ_CHECK(p == buf.data() + v.payload_offset(), "put_* returned the wrong payload address");
    if (!payload.empty()) std::memcpy(p, payload.data(), payload.size());
    const uint32_t n = finalize(buf.data(), v.payload_len());
    FUZZ_CHECK(n == ip_end, "finalize() frame length " + std::to_string(n));
    buf.resize(n);
    FUZZ_CHECK(same_ip_packet(data, buf, ip_end, v6, why), "in-place builder: " + why);
  }
  return 0;
}
