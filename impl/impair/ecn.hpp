// ECN, DSCP and the IP header checksum of an Ethernet / IPv4|IPv6 frame, and CE marking as a switch
// does it. The one implementation of CE marking: the harness's network (MarkCe fates), the in-memory
// loop (impl/io/mem_loop.cpp), the impairment layer and the DPDK stage all call mark_ce() below.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "impair/frame.hpp"

namespace mroce::impair {

// RFC 3168 codepoints.
enum class Ecn : uint8_t { NotEct = 0, Ect1 = 1, Ect0 = 2, Ce = 3 };

// One's-complement sum of 16-bit big-endian words (RFC 1071), folded; odd tail padded with zero.
inline uint32_t ones_sum(std::span<const uint8_t> b, uint32_t sum = 0) {
  size_t i = 0;
  for (; i + 1 < b.size(); i += 2) sum += load16(&b[i]);
  if (i < b.size()) sum += uint32_t(b[i]) << 8;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return sum;
}

// The IPv4 header checksum of the header at `ip` (its checksum field counted as zero).
inline uint16_t ipv4_checksum(std::span<const uint8_t> ip_header) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < ip_header.size(); i += 2)
    if (i != 10) sum += load16(&ip_header[i]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return uint16_t(~sum);
}

// True when the IPv4 header's stored checksum verifies.
inline bool ipv4_checksum_ok(std::span<const uint8_t> ip_header) {
  return ip_header.size() >= 20 && ones_sum(ip_header) == 0xffff;
}

// RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m') for one 16-bit word changing from m to m'.
inline uint16_t checksum_update(uint16_t hc, uint16_t old_word, uint16_t new_word) {
  uint32_t sum = uint32_t(uint16_t(~hc)) + uint16_t(~old_word) + new_word;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return uint16_t(~sum);
}

// ECN of an IPv4/IPv6 frame (nullopt for other frames).
inline std::optional<Ecn> read_ecn(std::span<const uint8_t> f) {
  if (f.size() < kEthLen + 2) return std::nullopt;
  const uint16_t type = load16(&f[12]);
  if (type == kEtherIpv4 && (f[14] >> 4) == 4) return Ecn(f[15] & 3);
  // IPv6 traffic class straddles bytes 14 and 15: its ECN bits are bits 5..4 of byte 15.
  if (type == kEtherIpv6 && (f[14] >> 4) == 6) return Ecn((f[15] >> 4) & 3);
  return std::nullopt;
}

// DSCP of an IPv4/IPv6 frame.
inline std::optional<uint8_t> read_dscp(std::span<const uint8_t> f) {
  if (f.size() < kEthLen + 2) return std::nullopt;
  const uint16_t type = load16(&f[12]);
  if (type == kEtherIpv4 && (f[14] >> 4) == 4) return uint8_t(f[15] >> 2);
  if (type == kEtherIpv6 && (f[14] >> 4) == 6) return uint8_t(((f[14] & 0x0f) << 2) | (f[15] >> 6));
  return std::nullopt;
}

// Writes the whole traffic class / TOS byte (DSCP << 2 | ECN); fixes the IPv4 header checksum
// incrementally. False for a frame that is not IPv4/IPv6.
inline bool set_tos(std::span<uint8_t> f, uint8_t dscp, Ecn ecn) {
  if (f.size() < kEthLen + 2) return false;
  const uint8_t tos = uint8_t((dscp & 0x3f) << 2 | uint8_t(ecn));
  const uint16_t type = load16(&f[12]);
  if (type == kEtherIpv4 && (f[14] >> 4) == 4) {
    const uint16_t old_word = load16(&f[14]);
    f[15] = tos;
    if (f.size() >= kEthLen + 12) store16(&f[24], checksum_update(load16(&f[24]), old_word, load16(&f[14])));
    return true;
  }
  if (type == kEtherIpv6 && (f[14] >> 4) == 6) {
    f[14] = uint8_t((f[14] & 0xf0) | (tos >> 4));
    f[15] = uint8_t((f[15] & 0x0f) | uint8_t(tos << 4));
    return true;
  }
  return false;
}

// Sets ECN to CE as a switch would: only on ECT(0)/ECT(1) frames (RFC 3168 6.1.1.1; Not-ECT and CE
// are left alone). Fixes the IPv4 header checksum incrementally. Returns whether it marked.
// Updating the checksum gives the same field as recomputing it for every header whose checksum was
// valid (a property test checks it); a header that arrives with a bad checksum keeps a bad one.
inline bool mark_ce(std::span<uint8_t> f) {
  const auto ecn = read_ecn(f);
  if (!ecn || (*ecn != Ecn::Ect0 && *ecn != Ecn::Ect1)) return false;
  if (load16(&f[12]) == kEtherIpv6) {
    f[15] |= 0x30;
    return true;
  }
  const uint16_t old_word = load16(&f[14]);
  f[15] |= 3;
  if (f.size() >= kEthLen + 12) store16(&f[24], checksum_update(load16(&f[24]), old_word, load16(&f[14])));
  return true;
}

}  // namespace mroce::impair
