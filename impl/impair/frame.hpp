// Byte-level operations on Ethernet / IPv4|IPv6 / UDP frames that an impairing network (or a
// receiver) performs: find the UDP source port and BTH opcode, read and set ECN/DSCP (fixing the
// IPv4 header checksum incrementally), corrupt one byte. Lenient: frames are not validated beyond
// their lengths, since impairment must work on any frame, well-formed or not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace mroce::impair {

inline constexpr size_t kEthLen = 14;
inline constexpr uint16_t kEtherIpv4 = 0x0800;
inline constexpr uint16_t kEtherIpv6 = 0x86DD;

// RFC 3168 codepoints.
enum class Ecn : uint8_t { NotEct = 0, Ect1 = 1, Ect0 = 2, Ce = 3 };

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

// Same leniency as the harness's frame_layout: IPv4 by EtherType and IHL, IPv6 with UDP right after
// the fixed header; nullopt when the frame is too short or of another EtherType.
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
// This is the harness's mark_ce, except that the checksum is updated instead of recomputed (the two
// give the same field for every header whose checksum was valid; checked by a property test).
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
