// Private helpers shared by the codec's translation units.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

#include "codec/fast_codec.hpp"

namespace mroce::fast::detail {

// Table 3.2 plus the flags each opcode allows ([R-HDR-3]).
struct OpRow {
  uint8_t ext_len;
  bool valid;
  bool data;
  bool control;
  uint16_t allowed_flags;
};

constexpr std::array<OpRow, 256> make_op_table() {
  std::array<OpRow, 256> t{};
  constexpr uint16_t kDataFlags = kFlagAr | kFlagRetx | kFlagVoid;
  t[0x01] = {24, true, true, false, kDataFlags};  // SEND: DH + SEND ext
  t[0x02] = {32, true, true, false, kDataFlags};  // WRITE: DH + RETH
  t[0x03] = {40, true, true, false, kDataFlags};  // WRITE_IMM: DH + RETH + IMM
  t[0x04] = {32, true, true, false, kDataFlags};  // READ_REQ: DH + RETH
  t[0x05] = {20, true, true, false, kDataFlags};  // READ_RESP: DH
  t[0x10] = {48, true, false, false, 0};          // ACK: AETH
  t[0x11] = {8, true, false, false, 0};           // NAK: NAKH
  t[0x12] = {0, true, false, false, kFlagAr};     // PROBE ([R-HDR-25] AR allowed)
  t[0x20] = {16, true, false, true, 0};           // CONNECT: CONN
  t[0x21] = {16, true, false, true, 0};           // ACCEPT: CONN
  t[0x22] = {4, true, false, true, 0};            // REJECT: REJ
  t[0x23] = {4, true, false, true, 0};            // DISCONNECT: REJ
  t[0x24] = {0, true, false, true, 0};            // DISCONNECT_ACK
  return t;
}
inline constexpr std::array<OpRow, 256> kOpTable = make_op_table();

static_assert(std::endian::native == std::endian::little, "native-order ones-complement sums assume LE");

// Ones-complement sum of n bytes as native little-endian 32-bit words, unfolded (RFC 1071: the byte
// order of the sum only needs one swap at the end). n < 2^32 bytes cannot overflow 64 bits.
inline uint64_t sum_native(const uint8_t* p, size_t n) noexcept {
  uint64_t s = 0;
  while (n >= 8) {
    uint32_t a, b;
    std::memcpy(&a, p, 4);
    std::memcpy(&b, p + 4, 4);
    s += uint64_t(a) + b;
    p += 8;
    n -= 8;
  }
  if (n >= 4) {
    uint32_t a;
    std::memcpy(&a, p, 4);
    s += a;
    p += 4;
    n -= 4;
  }
  if (n) {  // 1..3 trailing bytes, zero-padded as RFC 768 asks
    uint8_t t[4] = {0, 0, 0, 0};
    std::memcpy(t, p, n);
    uint32_t a;
    std::memcpy(&a, t, 4);
    s += a;
  }
  return s;
}

// Fold a native-order sum to 16 bits; result is in network (big-endian) value order.
// x + rotate(x, half) puts hi + lo + (carry out of lo + hi) in the high half: exactly one
// end-around-carry fold step, so 64 -> 32 -> 16 bits takes two rotate-adds.
inline uint16_t fold_net(uint64_t s) noexcept {
  const uint32_t x = uint32_t((s + ((s >> 32) | (s << 32))) >> 32);
  const uint32_t y = (x + ((x >> 16) | (x << 16))) >> 16;
  return __builtin_bswap16(uint16_t(y));
}

// A network-order 16-bit value as a native-order summand.
inline uint64_t net16(uint32_t v) noexcept { return __builtin_bswap16(uint16_t(v)); }

// UDP pseudo-header + datagram sum (RFC 768 / RFC 8200 8.1), folded, network order.
// `l4` is the UDP header offset (34 / 54); `udp_len` the datagram length.
inline uint16_t udp_sum(const uint8_t* f, bool v6, uint32_t l4, uint32_t udp_len) noexcept {
  uint64_t s;
  if (v6) {
    // src + dst (32 bytes), 32-bit upper-layer length, 3 zero bytes + next header 17
    s = sum_native(f + 14 + 8, 32) + net16(udp_len >> 16) + net16(udp_len & 0xFFFF) + net16(17);
  } else {
    // src + dst (8 bytes), zero + protocol 17, UDP length
    s = sum_native(f + 14 + 12, 8) + net16(17) + net16(udp_len);
  }
  s += sum_native(f + l4, udp_len);
  return fold_net(s);
}

}  // namespace mroce::fast::detail
