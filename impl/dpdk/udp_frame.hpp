// Builds raw Ethernet / IPv4|IPv6 / UDP frames in place (no protocol above UDP): for tests, the
// packet pump and the namespace smoke test. The engine builds its own frames with its codec; this
// only fills in what SPEC section 2 asks of the outer headers, so captures of raw test traffic look
// like transport traffic to a dissector.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>

#include "dpdk/addr.hpp"
#include "impair/ecn.hpp"

namespace mroce::dpdk {

struct UdpFrameSpec {
  MacAddr src_mac, dst_mac;
  IpAddr src_ip, dst_ip;  // both IPv4 or both IPv6
  uint16_t sport = 49152, dport = kDefaultUdpPort;
  uint8_t dscp = kDscpData;
  impair::Ecn ecn = impair::Ecn::Ect0;  // [R-ENC-9] data is sent ECT(0)
  uint8_t ttl = 64;                     // [R-ENC-11]
};

inline size_t udp_header_bytes(bool v6) { return 14 + (v6 ? 40 : 20) + 8; }

// Writes the headers of a frame of `frame_len` bytes into `out` (which must hold frame_len bytes);
// the UDP payload (frame_len - headers) is left to the caller. Returns the payload offset, or 0
// when frame_len is too small or too large for the IP length fields.
inline size_t build_udp_headers(std::span<uint8_t> out, size_t frame_len, const UdpFrameSpec& s) {
  const bool v6 = s.src_ip.v6;
  const size_t hdr = udp_header_bytes(v6);
  if (frame_len < hdr || out.size() < frame_len || frame_len - 14 > 65535) return 0;
  uint8_t* p = out.data();
  std::memcpy(p, s.dst_mac.b.data(), 6);
  std::memcpy(p + 6, s.src_mac.b.data(), 6);
  impair::store16(p + 12, v6 ? impair::kEtherIpv6 : impair::kEtherIpv4);
  uint8_t* ip = p + 14;
  const uint8_t tos = uint8_t((s.dscp & 0x3f) << 2 | uint8_t(s.ecn));
  const size_t udp_len = frame_len - 14 - (v6 ? 40 : 20);
  uint8_t* udp;
  if (v6) {
    // Version 6, traffic class, flow label = low 20 bits of the source port ([R-ENC-4]).
    const uint32_t w0 = 6u << 28 | uint32_t(tos) << 20 | (uint32_t(s.sport) & 0xfffff);
    ip[0] = uint8_t(w0 >> 24);
    ip[1] = uint8_t(w0 >> 16);
    ip[2] = uint8_t(w0 >> 8);
    ip[3] = uint8_t(w0);
    impair::store16(ip + 4, uint16_t(udp_len));
    ip[6] = 17;
    ip[7] = s.ttl;
    std::memcpy(ip + 8, s.src_ip.b.data(), 16);
    std::memcpy(ip + 24, s.dst_ip.b.data(), 16);
    udp = ip + 40;
  } else {
    ip[0] = 0x45;  // version 4, IHL 5 ([R-ENC-3])
    ip[1] = tos;
    impair::store16(ip + 2, uint16_t(frame_len - 14));
    impair::store16(ip + 4, 0);
    impair::store16(ip + 6, 0x4000);  // DF, no fragments
    ip[8] = s.ttl;
    ip[9] = 17;
    std::memcpy(ip + 12, s.src_ip.b.data(), 4);
    std::memcpy(ip + 16, s.dst_ip.b.data(), 4);
    impair::store16(ip + 10, impair::ipv4_checksum({ip, 20}));
    udp = ip + 20;
  }
  impair::store16(udp, s.sport);
  impair::store16(udp + 2, s.dport);
  impair::store16(udp + 4, uint16_t(udp_len));
  impair::store16(udp + 6, 0);  // [R-ENC-7] zero UDP checksum
  return hdr;
}

}  // namespace mroce::dpdk
