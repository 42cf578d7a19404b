// The frame layout: where the IP, UDP and BTH headers of an Ethernet / IPv4|IPv6 / UDP frame sit,
// its UDP ports and BTH opcode, and the one-byte corruption an impairing network applies inside the
// IP packet. The one implementation, for the harness's network (harness/src/network.cpp), the
// impairment layer and the DPDK port tools; ECN / CE marking is in impair/ecn.hpp, the ECMP hash in
// impair/ecmp.hpp. Lenient: frames are not validated beyond their lengths, since an impairing
// network must handle any frame, well-formed or not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace mroce::impair {

inline constexpr size_t kEthLen = 14;
inline constexpr uint16_t kEtherIpv4 = 0x0800;
inline constexpr uint16_t kEtherIpv6 = 0x86DD;

struct FrameLayout {
  bool ipv6 = false;
  size_t ip = kEthLen, udp = 0, bth = 0;  // byte offsets in the frame
  uint16_t sport = 0, dport = 0;
  std::optional<uint8_t> opcode;  // BTH byte 1, when the frame is long enough
};

inline uint16_t load16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }
inline void store16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v >> 8);
  p[1] = uint8_t(v);
}

// IPv4 by EtherType and IHL, IPv6 with UDP right after the fixed header (no extension headers, as
// SPEC section 2 sends); nullopt when the frame is too short for the UDP header or of another
// EtherType.
inline std::optional<FrameLayout> frame_layout(std::span<const uint8_t> f) {
  if (f.size() < kEthLen) return std::nullopt;
  FrameLayout l;
  const uint16_t type = load16(&f[12]);
  if (type == kEtherIpv4) {
    if (f.size() < 34) return std::nullopt;
    l.udp = kEthLen + size_t(f[14] & 0x0f) * 4;
  } else if (type == kEtherIpv6) {
    l.ipv6 = true;
    l.udp = kEthLen + 40;
  } else {
    return std::nullopt;
  }
  l.bth = l.udp + 8;
  if (f.size() < l.bth) return std::nullopt;
  l.sport = load16(&f[l.udp]);
  l.dport = load16(&f[l.udp + 2]);
  if (f.size() >= l.bth + 2) l.opcode = f[l.bth + 1];
  return l;
}

// Connection-control opcodes (CONNECT..DISCONNECT_ACK, SPEC 3.2): the harness spares them from
// fates when protect_handshake is on.
inline bool is_control_opcode(uint8_t op) { return op >= 0x20 && op <= 0x24; }

// XORs one byte of the IP packet (never the Ethernet header: a real link's FCS would drop such a
// frame before anything else saw it). Returns the frame offset changed (0: frame too short).
inline size_t corrupt_offset_in_frame(size_t frame_len, uint16_t offset) {
  if (frame_len <= kEthLen) return 0;
  return kEthLen + size_t(offset) % (frame_len - kEthLen);
}
inline uint8_t corrupt_mask(uint8_t x) { return x == 0 ? uint8_t(1) : x; }
inline size_t corrupt_frame(std::span<uint8_t> f, uint16_t offset, uint8_t mask) {
  const size_t at = corrupt_offset_in_frame(f.size(), offset);
  if (at != 0) f[at] ^= corrupt_mask(mask);
  return at;
}

}  // namespace mroce::impair
