// Helpers for the reference codec tests: fixed sample packets and byte-level frame surgery.
//
// The surgery helpers locate headers from the frame's own bytes and recompute the IPv4 header
// checksum with their own code, so that a test can break exactly one rule of [R-VAL-1] and repair
// everything that an earlier check would otherwise trip over.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "codec/ref_codec.hpp"

namespace mroce::ref::test {

using Frame = std::vector<uint8_t>;

inline uint16_t rd16(const Frame& f, size_t off) { return static_cast<uint16_t>((f.at(off) << 8) | f.at(off + 1)); }

inline uint32_t rd32(const Frame& f, size_t off) { return (uint32_t{rd16(f, off)} << 16) | rd16(f, off + 2); }

inline void wr16(Frame& f, size_t off, uint16_t v) {
  f.at(off) = static_cast<uint8_t>(v >> 8);
  f.at(off + 1) = static_cast<uint8_t>(v);
}

inline void wr32(Frame& f, size_t off, uint32_t v) {
  wr16(f, off, static_cast<uint16_t>(v >> 16));
  wr16(f, off + 2, static_cast<uint16_t>(v));
}

inline bool is_ipv6_frame(const Frame& f) { return rd16(f, 12) == 0x86DD; }

// Offsets of the headers of a well-formed frame.
inline size_t ip_off() { return 14; }
inline size_t udp_off(const Frame& f) { return 14 + (is_ipv6_frame(f) ? 40 : 20); }
inline size_t bth_off(const Frame& f) { return udp_off(f) + 8; }
inline size_t ext_off(const Frame& f) { return bth_off(f) + 16; }
// One past the last byte of the IP packet, from the IP length field.
inline size_t ip_end(const Frame& f) { return is_ipv6_frame(f) ? 54 + size_t{rd16(f, 18)} : 14 + size_t{rd16(f, 16)}; }

// RFC 1071 checksum of the IPv4 header (bytes 14..33) with the checksum field taken as zero.
inline void fix_ipv4_checksum(Frame& f) {
  if (is_ipv6_frame(f)) return;
  wr16(f, 24, 0);
  uint32_t sum = 0;
  for (size_t i = 14; i < 34; i += 2) sum += rd16(f, i);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  wr16(f, 24, static_cast<uint16_t>(~sum));
}

// Recomputes the ICRC over the UDP payload before it ([R-HDR-28]).
inline void fix_icrc(Frame& f) {
  const size_t start = bth_off(f);
  const size_t icrc_at = ip_end(f) - 4;
  wr32(f, icrc_at, crc32c(std::span<const uint8_t>(f).subspan(start, icrc_at - start)));
}

// Changes the UDP payload to `transport_len` bytes (cutting or appending zeros at the end of the IP
// packet), and updates the IP and UDP lengths and the IPv4 header checksum. No ICRC repair.
inline void resize_transport(Frame& f, size_t transport_len) {
  const size_t udp_len = 8 + transport_len;
  f.resize(udp_off(f) + udp_len);
  if (is_ipv6_frame(f)) {
    wr16(f, 18, static_cast<uint16_t>(udp_len));
  } else {
    wr16(f, 16, static_cast<uint16_t>(20 + udp_len));
    fix_ipv4_checksum(f);
  }
  wr16(f, udp_off(f) + 4, static_cast<uint16_t>(udp_len));
}

inline Frame hex_frame(const std::string& text) {
  Frame f;
  int pending = -1;
  for (const char c : text) {
    int v = -1;
    if (c >= '0' && c <= '9') v = c - '0';
    if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
    if (v < 0) continue;  // spaces, newlines
    if (pending < 0) {
      pending = v;
    } else {
      f.push_back(static_cast<uint8_t>(pending * 16 + v));
      pending = -1;
    }
  }
  if (pending >= 0) throw std::invalid_argument("odd number of hex digits");
  return f;
}

// Every opcode of table 3.2, in table order.
inline const std::vector<Opcode>& all_known_opcodes() {
  static const std::vector<Opcode> ops = {Opcode::Send,         Opcode::Write,  Opcode::WriteImm, Opcode::ReadReq,
                                          Opcode::ReadResp,     Opcode::Ack,    Opcode::Nak,      Opcode::Probe,
                                          Opcode::Connect,      Opcode::Accept, Opcode::Reject,   Opcode::Disconnect,
                                          Opcode::DisconnectAck};
  return ops;
}

// A fixed valid packet of opcode `op` (every field that opcode carries set to a valid, non-zero
// value where allowed).
inline Packet sample_packet(Opcode op, bool ipv6 = false) {
  Packet p{};
  p.eth_dst = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
  p.eth_src = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
  p.ipv6 = ipv6;
  if (ipv6) {
    p.ip_src = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    p.ip_dst = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
    p.ipv6_flow_label = 0x0C000;
  } else {
    p.ip_src = {10, 0, 0, 1};
    p.ip_dst = {10, 0, 0, 2};
    p.ipv4_id = 0x0102;
    p.ipv4_df = true;
  }
  const bool data = op == Opcode::Send || op == Opcode::Write || op == Opcode::WriteImm || op == Opcode::ReadReq ||
                    op == Opcode::ReadResp;
  p.dscp = data ? 26 : 48;
  p.ecn = data ? 2 : 0;
  p.ttl = 64;
  p.udp_sport = 49152;
  p.udp_dport = kDefaultUdpPort;
  p.version = 1;
  p.opcode = op;
  p.dcid = (op == Opcode::Connect) ? 0 : 0x11223344;
  const bool control = op == Opcode::Connect || op == Opcode::Accept || op == Opcode::Reject ||
                       op == Opcode::Disconnect || op == Opcode::DisconnectAck;
  p.path_id = control ? 0 : 3;
  p.timestamp = 1234;
  if (data) {
    p.psn = 0xFFFFFFFE;
    p.stream_id = 2;
    p.msn = 7;
    p.msg_length = 10000;
    p.msg_offset = op == Opcode::ReadReq ? 0 : 4096;
  }
  if (op == Opcode::Send || op == Opcode::WriteImm) p.rsn = 3;
  if (op == Opcode::Write || op == Opcode::WriteImm || op == Opcode::ReadReq) {
    p.remote_va = 0x1000;
    p.rkey = 0x100;
  }
  if (op == Opcode::WriteImm) p.immediate = 0xDEADBEEF;
  if (op == Opcode::Ack) {
    p.cpsn = 9;
    p.ce_count = 1;
    p.ts_echo = 1200;
    p.rate_hint = 50000;
    p.sack[0] = 0x40;
  }
  if (op == Opcode::Nak) {
    p.nak_psn = 9;
    p.nak_code = 1;
    p.nak_detail = 10;
  }
  if (op == Opcode::Connect || op == Opcode::Accept) {
    p.scid = 2;
    p.isn = 0xFFFFFFF0;
    p.path_count = 4;
    p.stream_count = 8;
    p.max_payload = 4096;
    p.window_cap = 256;
  }
  if (op == Opcode::Reject || op == Opcode::Disconnect) p.reason = 1;
  return p;
}

// Payload bytes 0, 1, 2, ... of length n.
inline std::vector<uint8_t> counting_payload(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i);
  return v;
}

// A valid frame of `op`: data opcodes other than READ_REQ carry `payload_len` bytes.
inline Frame sample_frame(Opcode op, bool ipv6 = false, size_t payload_len = 16) {
  const Packet p = sample_packet(op, ipv6);
  const bool carries_payload =
      op == Opcode::Send || op == Opcode::Write || op == Opcode::WriteImm || op == Opcode::ReadResp;
  return encode(p, counting_payload(carries_payload ? payload_len : 0));
}

}  // namespace mroce::ref::test
