// Frame surgery for the fuzzers' mutators and the agreement properties: recompute IP/UDP lengths,
// the DH Payload Length, the ICRC, the UDP checksum and the IPv4 header checksum of a (possibly
// mutated) frame, so that mutations get past checks 6..17 of [R-VAL-1] and reach the deeper fields.
//
// Own CRC-32C and ones'-complement code, sharing nothing with either codec: a fix-up that agrees
// with a codec's verification is then independent evidence that the codec computes the right thing.
// Header-only, standard library only, no allocation.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace mroce::fuzzing {

// ---- byte access (big-endian, [R-CONV-3]) ----
inline uint16_t be16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }
inline uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}
inline void put_be16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
inline void put_be32(uint8_t* p, uint32_t v) {
  put_be16(p, static_cast<uint16_t>(v >> 16));
  put_be16(p + 2, static_cast<uint16_t>(v));
}

// ---- [R-HDR-28] CRC-32C: reflected 0x82F63B78, init and final XOR 0xFFFFFFFF; byte table ----
inline const std::array<uint32_t, 256>& crc32c_table() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : (c >> 1);
      t[i] = c;
    }
    return t;
  }();
  return table;
}
inline uint32_t crc32c(const uint8_t* p, size_t n) {
  const auto& t = crc32c_table();
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = (c >> 8) ^ t[(c ^ p[i]) & 0xFFu];
  return c ^ 0xFFFFFFFFu;
}

// ---- RFC 1071 ones'-complement sum of big-endian 16-bit words; an odd last byte is padded ----
inline uint32_t ones_add(uint32_t sum, const uint8_t* p, size_t n) {
  for (size_t i = 0; i + 1 < n; i += 2) sum += be16(p + i);
  if (n & 1) sum += uint32_t{p[n - 1]} << 8;
  while (sum >> 16) sum = (sum & 0xFFFFu) + (sum >> 16);
  return sum;
}
inline uint16_t ones_fold(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xFFFFu) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

// ---- layout constants (SPEC section 2, table 3.2) ----
inline constexpr size_t kEth = 14;
inline constexpr size_t kIpv4 = 20;
inline constexpr size_t kIpv6 = 40;
inline constexpr size_t kUdp = 8;
inline constexpr size_t kBth = 16;
inline constexpr size_t kIcrc = 4;
inline constexpr uint16_t kPort = 4793;  // [R-ENC-5] default

// Extension length of a table 3.2 opcode, or -1 for an opcode outside the table.
inline int ext_len(uint8_t op) {
  switch (op) {
    case 0x01:
      return 24;
    case 0x02:
      return 32;
    case 0x03:
      return 40;
    case 0x04:
      return 32;
    case 0x05:
      return 20;
    case 0x10:
      return 48;
    case 0x11:
      return 8;
    case 0x12:
      return 0;
    case 0x20:
      return 16;
    case 0x21:
      return 16;
    case 0x22:
      return 4;
    case 0x23:
      return 4;
    case 0x24:
      return 0;
    default:
      return -1;
  }
}
inline bool is_data_op(uint8_t op) { return op >= 0x01 && op <= 0x05; }
inline constexpr std::array<uint8_t, 13> kOpcodes = {0x01, 0x02, 0x03, 0x04, 0x05, 0x10, 0x11,
                                                     0x12, 0x20, 0x21, 0x22, 0x23, 0x24};

// Where the headers of a frame sit, read from its EtherType only (the rest may be garbage).
struct Layout {
  bool ok = false;  // an IPv4/IPv6 EtherType and room for the IP + UDP headers
  bool v6 = false;
  size_t l4 = 0;  // UDP header offset
};
inline Layout layout_of(const uint8_t* f, size_t n) {
  Layout l;
  if (n < kEth) return l;
  const uint16_t et = be16(f + 12);
  if (et != 0x0800 && et != 0x86DD) return l;
  l.v6 = et == 0x86DD;
  l.l4 = kEth + (l.v6 ? kIpv6 : kIpv4);
  l.ok = n >= l.l4 + kUdp;
  return l;
}

enum class UdpCsum : uint8_t { Keep, Zero, Compute };

struct FixOptions {
  bool lengths = true;         // IP length and UDP length := the whole frame (no padding)
  bool payload_length = true;  // DH Payload Length := derived payload length (data opcodes)
  bool icrc = true;            // recompute the ICRC at the end of the IP packet
  UdpCsum udp = UdpCsum::Zero;
  bool ipv4_checksum = true;  // recompute the IPv4 header checksum (done last)
};

// Repairs a frame as asked. Bytes beyond the IP packet (padding) are left alone. Returns false,
// changing nothing, when the frame has no IPv4/IPv6 EtherType or no room for IP + UDP headers.
inline bool fix_frame(uint8_t* f, size_t n, const FixOptions& o) {
  const Layout l = layout_of(f, n);
  if (!l.ok) return false;
  // End of the IP packet: the whole frame (clamped to what 16-bit lengths can say), or what the
  // header claims when that lies inside the frame.
  size_t ip_end = n;
  if (o.lengths) {
    const size_t max_end = l.v6 ? kEth + kIpv6 + 0xFFFF : kEth + 0xFFFF;
    if (ip_end > max_end) ip_end = max_end;
    if (l.v6) {
      put_be16(f + 18, static_cast<uint16_t>(ip_end - kEth - kIpv6));
    } else {
      put_be16(f + 16, static_cast<uint16_t>(ip_end - kEth));
    }
    put_be16(f + l.l4 + 4, static_cast<uint16_t>(ip_end - l.l4));
  } else {
    const size_t claimed = l.v6 ? kEth + kIpv6 + be16(f + 18) : kEth + size_t{be16(f + 16)};
    if (claimed >= l.l4 + kUdp && claimed <= n) ip_end = claimed;
  }
  uint8_t* bth = f + l.l4 + kUdp;
  const size_t transport = ip_end - (l.l4 + kUdp);
  if (transport >= kBth + kIcrc) {
    const int ext = ext_len(bth[1]);
    if (o.payload_length && ext >= 0 && is_data_op(bth[1]) && transport >= kBth + static_cast<size_t>(ext) + kIcrc) {
      put_be16(bth + kBth + 6, static_cast<uint16_t>(transport - kBth - ext - kIcrc));
    }
    if (o.icrc) put_be32(bth + transport - kIcrc, crc32c(bth, transport - kIcrc));
  }
  if (o.udp == UdpCsum::Zero) {
    put_be16(f + l.l4 + 6, 0);
  } else if (o.udp == UdpCsum::Compute) {
    // RFC 768 / RFC 8200 8.1 pseudo-header, then the UDP segment with its checksum field as zero.
    const size_t udp_len = ip_end - l.l4;
    uint32_t sum = 0;
    if (l.v6) {
      sum = ones_add(sum, f + 22, 32);  // source and destination addresses
      uint8_t tail[8] = {0, 0, static_cast<uint8_t>(udp_len >> 8), static_cast<uint8_t>(udp_len), 0, 0, 0, 17};
      sum = ones_add(sum, tail, 8);
    } else {
      sum = ones_add(sum, f + 26, 8);
      uint8_t tail[4] = {0, 17, static_cast<uint8_t>(udp_len >> 8), static_cast<uint8_t>(udp_len)};
      sum = ones_add(sum, tail, 4);
    }
    put_be16(f + l.l4 + 6, 0);
    sum = ones_add(sum, f + l.l4, udp_len);
    uint16_t c = static_cast<uint16_t>(~ones_fold(sum));
    if (c == 0) c = 0xFFFF;  // RFC 768: a computed zero is sent as all ones
    put_be16(f + l.l4 + 6, c);
  }
  if (!l.v6 && o.ipv4_checksum) {
    put_be16(f + 24, 0);
    put_be16(f + 24, static_cast<uint16_t>(~ones_fold(ones_add(0, f + kEth, kIpv4))));
  }
  return true;
}

// The frame length that makes the transport exactly fit opcode `op` with `payload` payload bytes
// ([R-HDR-7]); 0 when the frame has no usable layout or the opcode is outside table 3.2.
inline size_t fitted_length(const uint8_t* f, size_t n, uint8_t op, size_t payload) {
  const Layout l = layout_of(f, n);
  const int ext = ext_len(op);
  if (!l.ok || ext < 0) return 0;
  return l.l4 + kUdp + kBth + static_cast<size_t>(ext) + (is_data_op(op) ? payload : 0) + kIcrc;
}

// Is the frame's IPv4 header checksum valid by [R-VAL-1] check 7 (own code)?
inline bool ipv4_checksum_verifies(const uint8_t* f) { return ones_fold(ones_add(0, f + kEth, kIpv4)) == 0xFFFF; }

}  // namespace mroce::fuzzing
