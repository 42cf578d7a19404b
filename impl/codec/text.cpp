// Names, the canonical text form (SPEC appendix C) and the test-only Fields encoder. Off the data
// path: these may allocate.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

#include "codec/fast_codec.hpp"
#include "codec/internal.hpp"

namespace mroce::fast {

using detail::rd16;
using detail::wr16;
using detail::wr32;

const char* error_name(Error e) noexcept {
  static constexpr const char* kNames[kErrorCount] = {
      "None",     "Truncated", "EtherType", "IpVersion",     "Ipv4Options", "IpLength",        "Ipv4Checksum",
      "Fragment", "NotUdp",    "UdpLength", "UdpPort",       "UdpChecksum", "TransportLength", "Version",
      "Opcode",   "Icrc",      "Reserved",  "PayloadLength", "Range",       "SackBase"};
  const unsigned i = unsigned(e);
  return i < kErrorCount ? kNames[i] : "?";
}

const char* opcode_name(Opcode op) noexcept {
  switch (op) {
    case Opcode::Send:
      return "SEND";
    case Opcode::Write:
      return "WRITE";
    case Opcode::WriteImm:
      return "WRITE_IMM";
    case Opcode::ReadReq:
      return "READ_REQ";
    case Opcode::ReadResp:
      return "READ_RESP";
    case Opcode::Ack:
      return "ACK";
    case Opcode::Nak:
      return "NAK";
    case Opcode::Probe:
      return "PROBE";
    case Opcode::Connect:
      return "CONNECT";
    case Opcode::Accept:
      return "ACCEPT";
    case Opcode::Reject:
      return "REJECT";
    case Opcode::Disconnect:
      return "DISCONNECT";
    case Opcode::DisconnectAck:
      return "DISCONNECT_ACK";
  }
  return "?";
}

namespace {

const char* nak_code_name(uint8_t c) {
  switch (c) {
    case 1:
      return "RNR";
    case 2:
      return "RemoteAccess";
    case 3:
      return "InvalidRequest";
    case 4:
      return "Length";
    default:
      return "?";
  }
}

// snprintf into a std::string (canonical lines are short).
template <class... A>
void add(std::string& s, const char* fmt, A... a) {
  char b[256];
  const int n = std::snprintf(b, sizeof b, fmt, a...);
  s.append(b, n < 0 ? 0 : size_t(n) < sizeof b ? size_t(n) : sizeof b - 1);
}

void add_mac(std::string& s, const Mac& m) {
  add(s, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}
void add_ip4(std::string& s, const uint8_t* a) { add(s, "%u.%u.%u.%u", a[0], a[1], a[2], a[3]); }
void add_ip6(std::string& s, const uint8_t* a) {
  for (int g = 0; g < 8; ++g) add(s, g ? ":%x" : "%x", unsigned(rd16(a + 2 * g)));
}

}  // namespace

std::string canonical_error(Error e) { return std::string("ERROR ") + error_name(e); }

std::string canonical(const PacketView& v) {
  std::string s;
  s.reserve(400);
  s += "ETH dst=";
  add_mac(s, v.eth_dst());
  s += " src=";
  add_mac(s, v.eth_src());
  add(s, " type=0x%04x", unsigned(v.ether_type()));
  if (!v.ipv6()) {
    s += " | IPV4 src=";
    add_ip4(s, v.ip_src());
    s += " dst=";
    add_ip4(s, v.ip_dst());
    add(s, " dscp=%u ecn=%u id=0x%04x df=%u ttl=%u", v.dscp(), v.ecn(), unsigned(v.ipv4_id()), unsigned(v.ipv4_df()),
        v.ttl());
  } else {
    s += " | IPV6 src=";
    add_ip6(s, v.ip_src());
    s += " dst=";
    add_ip6(s, v.ip_dst());
    add(s, " dscp=%u ecn=%u flow=0x%05x hlim=%u", v.dscp(), v.ecn(), unsigned(v.flow_label()), v.ttl());
  }
  add(s, " | UDP sport=%u dport=%u len=%u csum=0x%04x", unsigned(v.udp_sport()), unsigned(v.udp_dport()),
      unsigned(v.udp_length()), unsigned(v.udp_checksum()));

  const uint16_t fl = v.flags();
  char flags[16] = "";  // names in table order ([R-HDR-3]), "-" when none
  const char* sep = "";
  for (auto [mask, name] : {std::pair{kFlagAr, "AR"}, std::pair{kFlagRetx, "RETX"}, std::pair{kFlagVoid, "VOID"}})
    if (fl & mask) {
      std::strcat(flags, sep);
      std::strcat(flags, name);
      sep = ",";
    }
  add(s, " | BTH ver=%u op=%s flags=%s dcid=0x%08x path=%u ts=%u", v.version(), opcode_name(v.opcode()),
      flags[0] ? flags : "-", v.dcid(), unsigned(v.path_id()), v.timestamp());

  const Opcode op = v.opcode();
  if (v.is_data())
    add(s, " | DH psn=0x%08x stream=%u plen=%u msn=%u mlen=%u moff=%u", v.psn(), unsigned(v.stream_id()),
        unsigned(v.payload_length()), v.msn(), v.msg_length(), v.msg_offset());
  if (op == Opcode::Send) add(s, " | SEND rsn=%u", v.rsn());
  if (op == Opcode::Write || op == Opcode::WriteImm || op == Opcode::ReadReq)
    add(s, " | RETH va=0x%016llx rkey=0x%08x", static_cast<unsigned long long>(v.remote_va()), v.rkey());
  if (op == Opcode::WriteImm) add(s, " | IMM rsn=%u imm=0x%08x", v.rsn(), v.immediate());
  if (op == Opcode::Ack) {
    add(s, " | AETH cpsn=0x%08x ce=%u tse=%u hint=%u sack=", v.cpsn(), v.ce_count(), v.ts_echo(), v.rate_hint());
    for (unsigned i = 0; i < kSackBytes; ++i) add(s, "%02x", v.sack_bytes()[i]);
  }
  if (op == Opcode::Nak)
    add(s, " | NAK psn=0x%08x code=%s detail=%u", v.nak_psn(), nak_code_name(v.nak_code()), unsigned(v.nak_detail()));
  if (op == Opcode::Connect || op == Opcode::Accept)
    add(s, " | CONN scid=0x%08x isn=0x%08x paths=%u streams=%u maxpay=%u wcap=%u", v.scid(), v.isn(),
        unsigned(v.path_count()), unsigned(v.stream_count()), unsigned(v.max_payload()), unsigned(v.window_cap()));
  if (op == Opcode::Reject || op == Opcode::Disconnect) add(s, " | REJ reason=%u", v.reason());
  if (v.is_data()) add(s, " | PAYLOAD off=%u len=%u", v.payload_offset(), v.payload_len());
  add(s, " | ICRC 0x%08x", v.icrc());
  return s;
}

// ------------------------------------------------------------------------------------------------
// Test-only encoder

std::vector<uint8_t> build(const Fields& f, const std::vector<uint8_t>& payload) {
  PathConfig cfg;
  cfg.eth_dst = f.eth_dst;
  cfg.eth_src = f.eth_src;
  cfg.ipv6 = f.ipv6;
  cfg.ipv4_src = f.ipv4_src;
  cfg.ipv4_dst = f.ipv4_dst;
  cfg.ipv6_src = f.ipv6_src;
  cfg.ipv6_dst = f.ipv6_dst;
  cfg.dscp_data = cfg.dscp_ctrl = f.dscp & 0x3F;
  cfg.ecn_data = cfg.ecn_ctrl = f.ecn & 3;
  cfg.ttl = f.ttl;
  cfg.udp_sport = f.udp_sport;
  cfg.udp_dport = f.udp_dport;
  cfg.ipv4_id = f.ipv4_id;
  cfg.ipv4_df = f.ipv4_df;
  cfg.flow_label = f.flow_label & 0xFFFFF;
  const FrameTemplate tpl(cfg);

  std::vector<uint8_t> buf(kMaxHeaderLen + payload.size() + kIcrcLen);
  uint8_t* bth = tpl.begin(buf.data(), true);
  const BthFields b{f.flags, f.dcid, f.path_id, f.timestamp};
  const DhFields dh{f.psn, f.stream_id, f.msn, f.msg_length, f.msg_offset};
  uint8_t* end = nullptr;
  switch (f.opcode) {
    case uint8_t(Opcode::Send):
      end = put_send(bth, b, dh, f.rsn);
      break;
    case uint8_t(Opcode::Write):
      end = put_write(bth, b, dh, f.remote_va, f.rkey);
      break;
    case uint8_t(Opcode::WriteImm):
      end = put_write_imm(bth, b, dh, f.remote_va, f.rkey, f.rsn, f.immediate);
      break;
    case uint8_t(Opcode::ReadReq):
      end = put_read_req(bth, b, dh, f.remote_va, f.rkey);
      break;
    case uint8_t(Opcode::ReadResp):
      end = put_read_resp(bth, b, dh);
      break;
    case uint8_t(Opcode::Ack):
      end = put_ack(bth, b, AckFields{f.cpsn, f.ce_count, f.ts_echo, f.rate_hint, f.sack.data()});
      break;
    case uint8_t(Opcode::Nak):
      end = put_nak(bth, b, f.nak_psn, f.nak_code, f.nak_detail);
      bth[kBthLen + 5] = f.nak_rsvd;
      break;
    case uint8_t(Opcode::Probe):
      end = put_probe(bth, b);
      break;
    case uint8_t(Opcode::Connect):
    case uint8_t(Opcode::Accept): {
      const ConnFields c{f.scid, f.isn, f.path_count, f.stream_count, f.max_payload, f.window_cap};
      end = f.opcode == uint8_t(Opcode::Connect) ? put_connect(bth, b, c) : put_accept(bth, b, c);
      break;
    }
    case uint8_t(Opcode::Reject):
    case uint8_t(Opcode::Disconnect):
      end = f.opcode == uint8_t(Opcode::Reject) ? put_reject(bth, b, f.reason) : put_disconnect(bth, b, f.reason);
      wr32(bth + kBthLen, (uint32_t(f.reason) << 24) | (f.rej_rsvd & 0xFFFFFF));
      break;
    case uint8_t(Opcode::DisconnectAck):
      end = put_disconnect_ack(bth, b);
      break;
    default:  // not in table 3.2: a bare BTH, payload right after it
      end = put_bth(bth, Opcode::Send, b);
      bth[1] = f.opcode;
      break;
  }
  // Raw BTH bits the put_* functions always write correctly.
  bth[0] = uint8_t((f.version << 4) | (f.bth_rsvd4 & 0x0F));
  wr16(bth + 10, f.bth_rsvd16);
  if (!payload.empty()) std::memcpy(end, payload.data(), payload.size());
  uint32_t len = finalize(buf.data(), uint32_t(payload.size()));
  buf.resize(len);

  // Overrides, in dependency order: transport fields -> ICRC -> IP/UDP headers -> UDP checksum ->
  // IPv4 header checksum.
  const Fields::Raw& r = f.raw;
  const uint32_t l4 = f.ipv6 ? kEthLen + kIpv6Len : kEthLen + kIpv4Len;
  const uint32_t covered = len - l4 - kUdpLen - kIcrcLen;
  const bool is_data = opcode_info(f.opcode).data;
  if (r.payload_length && is_data) wr16(bth + kBthLen + 6, *r.payload_length);
  wr32(bth + covered, r.icrc ? *r.icrc : crc32c(bth, covered) ^ r.icrc_xor);

  uint8_t* p = buf.data();
  if (r.ether_type) wr16(p + 12, *r.ether_type);
  if (r.ip_version) p[14] = uint8_t((*r.ip_version << 4) | (p[14] & 0x0F));
  if (r.ipv4_ihl && !f.ipv6) p[14] = uint8_t((p[14] & 0xF0) | (*r.ipv4_ihl & 0x0F));
  if (r.ip_length) wr16(p + (f.ipv6 ? 18 : 16), *r.ip_length);
  if (r.ipv4_frag && !f.ipv6) wr16(p + 20, *r.ipv4_frag);
  if (r.ip_proto) p[f.ipv6 ? 20 : 23] = *r.ip_proto;
  if (r.udp_length) wr16(p + l4 + 4, *r.udp_length);
  if (r.udp_checksum) {
    wr16(p + l4 + 6, *r.udp_checksum);
  } else if (r.udp_checksum_compute || r.udp_checksum_corrupt) {
    // Over the datagram as the (possibly overridden) UDP length field describes it, clipped to
    // the bytes built, so the decoder sums the same bytes.
    wr16(p + l4 + 6, 0);
    const uint32_t ulen = std::min<uint32_t>(rd16(p + l4 + 4), len - l4);
    uint16_t c = uint16_t(~detail::udp_sum(p, f.ipv6, l4, ulen));
    if (c == 0) c = 0xFFFF;  // RFC 768: a computed zero is sent as all ones
    // +1 changes the value modulo 0xFFFF (so it cannot verify) and never yields 0 ("no checksum").
    if (r.udp_checksum_corrupt) c = c == 0xFFFF ? 0xFFFE : uint16_t(c + 1);
    wr16(p + l4 + 6, c);
  }
  if (!f.ipv6) {
    wr16(p + 24, 0);
    wr16(p + 24, r.ipv4_checksum
                     ? *r.ipv4_checksum
                     : uint16_t(~detail::fold_net(detail::sum_native(p + 14, kIpv4Len)) ^ r.ipv4_checksum_xor));
  }
  buf.resize(len + r.eth_padding, 0);
  return buf;
}

Fields fields_of(const PacketView& v) {
  Fields f;
  f.eth_dst = v.eth_dst();
  f.eth_src = v.eth_src();
  f.ipv6 = v.ipv6();
  f.dscp = v.dscp();
  f.ecn = v.ecn();
  f.ttl = v.ttl();
  if (f.ipv6) {
    f.ipv6_src = v.ipv6_src();
    f.ipv6_dst = v.ipv6_dst();
    f.flow_label = v.flow_label();
  } else {
    f.ipv4_src = v.ipv4_src();
    f.ipv4_dst = v.ipv4_dst();
    f.ipv4_id = v.ipv4_id();
    f.ipv4_df = v.ipv4_df();
  }
  f.udp_sport = v.udp_sport();
  f.udp_dport = v.udp_dport();
  if (v.udp_checksum() != 0) f.raw.udp_checksum = v.udp_checksum();
  f.version = v.version();
  f.bth_rsvd4 = 0;  // a decoded frame passed [R-VAL-1] check 18
  f.opcode = uint8_t(v.opcode());
  f.flags = v.flags();
  f.dcid = v.dcid();
  f.path_id = v.path_id();
  f.timestamp = v.timestamp();
  const Opcode op = v.opcode();
  if (v.is_data()) {
    f.psn = v.psn();
    f.stream_id = v.stream_id();
    f.msn = v.msn();
    f.msg_length = v.msg_length();
    f.msg_offset = v.msg_offset();
  }
  if (op == Opcode::Send || op == Opcode::WriteImm) f.rsn = v.rsn();
  if (op == Opcode::Write || op == Opcode::WriteImm || op == Opcode::ReadReq) {
    f.remote_va = v.remote_va();
    f.rkey = v.rkey();
  }
  if (op == Opcode::WriteImm) f.immediate = v.immediate();
  if (op == Opcode::Ack) {
    f.cpsn = v.cpsn();
    f.ce_count = v.ce_count();
    f.ts_echo = v.ts_echo();
    f.rate_hint = v.rate_hint();
    std::memcpy(f.sack.data(), v.sack_bytes(), kSackBytes);
  }
  if (op == Opcode::Nak) {
    f.nak_psn = v.nak_psn();
    f.nak_code = v.nak_code();
    f.nak_detail = v.nak_detail();
  }
  if (op == Opcode::Connect || op == Opcode::Accept) {
    f.scid = v.scid();
    f.isn = v.isn();
    f.path_count = v.path_count();
    f.stream_count = v.stream_count();
    f.max_payload = v.max_payload();
    f.window_cap = v.window_cap();
  }
  if (op == Opcode::Reject || op == Opcode::Disconnect) f.reason = v.reason();
  return f;
}

}  // namespace mroce::fast
