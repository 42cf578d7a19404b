// In-place building: path header templates, BTH + extensions at fixed offsets, finalize().
#include "codec/fast_codec.hpp"
#include "codec/internal.hpp"

namespace mroce::fast {

using detail::wr16;
using detail::wr32;
using detail::wr64;

uint16_t ones_sum(const uint8_t* p, size_t n, uint32_t initial) noexcept {
  return detail::fold_net(detail::sum_native(p, n) + detail::net16(initial & 0xFFFF) + detail::net16(initial >> 16));
}

FrameTemplate::FrameTemplate(const PathConfig& cfg) noexcept : cfg_(cfg) { render(); }

void FrameTemplate::set_udp_sport(uint16_t sport) noexcept {
  cfg_.udp_sport = sport;
  render();
}

void FrameTemplate::render() noexcept {
  hlen_ = cfg_.ipv6 ? kHeaderLenV6 : kHeaderLenV4;
  for (int k = 0; k < 2; ++k) {
    uint8_t* h = k == 0 ? img_data_ : img_ctrl_;
    const uint8_t tc = k == 0 ? uint8_t((cfg_.dscp_data << 2) | (cfg_.ecn_data & 3))
                              : uint8_t((cfg_.dscp_ctrl << 2) | (cfg_.ecn_ctrl & 3));
    std::memset(h, 0, kHeaderLenV6);
    std::memcpy(h, cfg_.eth_dst.data(), 6);
    std::memcpy(h + 6, cfg_.eth_src.data(), 6);
    uint32_t l4;
    if (cfg_.ipv6) {
      wr16(h + 12, 0x86DD);
      const uint32_t flow = cfg_.flow_label ? *cfg_.flow_label : cfg_.udp_sport;  // [R-ENC-4]
      wr32(h + 14, (6u << 28) | (uint32_t(tc) << 20) | (flow & 0xFFFFF));
      // payload length (h+18) by finalize
      h[20] = 17;  // next header UDP
      h[21] = cfg_.ttl;
      std::memcpy(h + 22, cfg_.ipv6_src.data(), 16);
      std::memcpy(h + 38, cfg_.ipv6_dst.data(), 16);
      l4 = kEthLen + kIpv6Len;
    } else {
      wr16(h + 12, 0x0800);
      h[14] = 0x45;
      h[15] = tc;
      // total length (h+16) and checksum (h+24) by finalize
      wr16(h + 18, cfg_.ipv4_id);
      wr16(h + 20, cfg_.ipv4_df ? 0x4000 : 0);  // [R-ENC-3]: never MF / offset
      h[22] = cfg_.ttl;
      h[23] = 17;
      wr32(h + 26, cfg_.ipv4_src);
      wr32(h + 30, cfg_.ipv4_dst);
      l4 = kEthLen + kIpv4Len;
    }
    wr16(h + l4, cfg_.udp_sport);
    wr16(h + l4 + 2, cfg_.udp_dport);
    // UDP length by finalize; checksum stays 0 ([R-ENC-7])
  }
}

uint8_t* put_bth(uint8_t* bth, Opcode op, const BthFields& b) noexcept {
  bth[0] = 0x10;  // [R-HDR-1] version 1, reserved 0
  bth[1] = uint8_t(op);
  wr16(bth + 2, b.flags);
  wr32(bth + 4, b.dcid);
  wr16(bth + 8, b.path_id);
  wr16(bth + 10, 0);
  wr32(bth + 12, b.timestamp);
  return bth + kBthLen;
}

namespace {
// DH without Payload Length (finalize writes it).
inline uint8_t* put_dh(uint8_t* p, const DhFields& d) noexcept {
  wr32(p, d.psn);
  wr16(p + 4, d.stream_id);
  wr16(p + 6, 0);
  wr32(p + 8, d.msn);
  wr32(p + 12, d.msg_length);
  wr32(p + 16, d.msg_offset);
  return p + kDhLen;
}
inline uint8_t* put_reth(uint8_t* p, uint64_t va, uint32_t rkey) noexcept {
  wr64(p, va);
  wr32(p + 8, rkey);
  return p + 12;
}
inline uint8_t* put_conn(uint8_t* p, const ConnFields& c) noexcept {
  wr32(p, c.scid);
  wr32(p + 4, c.isn);
  wr16(p + 8, c.path_count);
  wr16(p + 10, c.stream_count);
  wr16(p + 12, c.max_payload);
  wr16(p + 14, c.window_cap);
  return p + 16;
}
inline uint8_t* put_rej(uint8_t* p, uint8_t reason) noexcept {
  wr32(p, uint32_t(reason) << 24);  // reason + 24 reserved zero bits
  return p + 4;
}
}  // namespace

uint8_t* put_send(uint8_t* bth, const BthFields& b, const DhFields& dh, uint32_t rsn) noexcept {
  uint8_t* p = put_dh(put_bth(bth, Opcode::Send, b), dh);
  wr32(p, rsn);
  return p + 4;
}
uint8_t* put_write(uint8_t* bth, const BthFields& b, const DhFields& dh, uint64_t va, uint32_t rkey) noexcept {
  return put_reth(put_dh(put_bth(bth, Opcode::Write, b), dh), va, rkey);
}
uint8_t* put_write_imm(uint8_t* bth, const BthFields& b, const DhFields& dh, uint64_t va, uint32_t rkey, uint32_t rsn,
                       uint32_t imm) noexcept {
  uint8_t* p = put_reth(put_dh(put_bth(bth, Opcode::WriteImm, b), dh), va, rkey);
  wr32(p, rsn);
  wr32(p + 4, imm);
  return p + 8;
}
uint8_t* put_read_req(uint8_t* bth, const BthFields& b, const DhFields& dh, uint64_t va, uint32_t rkey) noexcept {
  return put_reth(put_dh(put_bth(bth, Opcode::ReadReq, b), dh), va, rkey);
}
uint8_t* put_read_resp(uint8_t* bth, const BthFields& b, const DhFields& dh) noexcept {
  return put_dh(put_bth(bth, Opcode::ReadResp, b), dh);
}
uint8_t* put_ack(uint8_t* bth, const BthFields& b, const AckFields& a) noexcept {
  uint8_t* p = put_bth(bth, Opcode::Ack, b);
  wr32(p, a.cpsn);
  wr32(p + 4, a.ce_count);
  wr32(p + 8, a.ts_echo);
  wr32(p + 12, a.rate_hint);
  if (a.sack)
    std::memcpy(p + 16, a.sack, kSackBytes);
  else
    std::memset(p + 16, 0, kSackBytes);
  return p + 48;
}
uint8_t* put_nak(uint8_t* bth, const BthFields& b, uint32_t nak_psn, uint8_t code, uint16_t detail_) noexcept {
  uint8_t* p = put_bth(bth, Opcode::Nak, b);
  wr32(p, nak_psn);
  p[4] = code;
  p[5] = 0;
  wr16(p + 6, detail_);
  return p + 8;
}
uint8_t* put_probe(uint8_t* bth, const BthFields& b) noexcept { return put_bth(bth, Opcode::Probe, b); }
uint8_t* put_connect(uint8_t* bth, const BthFields& b, const ConnFields& c) noexcept {
  return put_conn(put_bth(bth, Opcode::Connect, b), c);
}
uint8_t* put_accept(uint8_t* bth, const BthFields& b, const ConnFields& c) noexcept {
  return put_conn(put_bth(bth, Opcode::Accept, b), c);
}
uint8_t* put_reject(uint8_t* bth, const BthFields& b, uint8_t reason) noexcept {
  return put_rej(put_bth(bth, Opcode::Reject, b), reason);
}
uint8_t* put_disconnect(uint8_t* bth, const BthFields& b, uint8_t reason) noexcept {
  return put_rej(put_bth(bth, Opcode::Disconnect, b), reason);
}
uint8_t* put_disconnect_ack(uint8_t* bth, const BthFields& b) noexcept {
  return put_bth(bth, Opcode::DisconnectAck, b);
}

uint32_t finalize(uint8_t* f, uint32_t payload_len) noexcept {
  const bool v6 = f[12] == 0x86 && f[13] == 0xDD;
  const uint32_t l4 = v6 ? kEthLen + kIpv6Len : kEthLen + kIpv4Len;
  uint8_t* bth = f + l4 + kUdpLen;
  const detail::OpRow row = detail::kOpTable[bth[1]];
  const uint32_t covered = kBthLen + row.ext_len + payload_len;  // ICRC coverage
  const uint32_t udp_len = kUdpLen + covered + kIcrcLen;         // [R-HDR-7]
  if (v6) {
    wr16(f + 18, uint16_t(udp_len));
  } else {
    wr16(f + 16, uint16_t(kIpv4Len + udp_len));
    wr16(f + 24, 0);
    // 20 bytes = 5 word loads; cheaper than an incremental update and needs no saved state.
    wr16(f + 24, uint16_t(~detail::fold_net(detail::sum_native(f + 14, kIpv4Len))));
  }
  wr16(f + l4 + 4, uint16_t(udp_len));                           // [R-ENC-8]
  wr16(f + l4 + 6, 0);                                           // [R-ENC-7]
  if (row.data) wr16(bth + kBthLen + 6, uint16_t(payload_len));  // [R-HDR-11]
  wr32(bth + covered, crc32c(bth, covered));                     // [R-HDR-28]
  return l4 + udp_len;
}

}  // namespace mroce::fast
