// Structure-aware post-mutation step shared by the libFuzzer custom mutator (libfuzzer_mutator.cpp)
// and the AFL++ custom mutator library (afl_mutator.cpp).
//
// After the engine's own blind mutation, with some probability:
//   * nudge one structural field towards what the early checks of [R-VAL-1] want (EtherType, IP
//     version/IHL, UDP port, BTH version, a known opcode with the exact length it needs, flags the
//     opcode allows, the DCID rule, SACK bit 0), so that one mutation does not have to guess them;
//   * then repair lengths and checksums (frame_fixup.hpp), so that random changes to the BTH and the
//     extensions get past the IPv4 checksum, UDP length and ICRC checks and reach checks 18..23.
// Deterministic for a given seed, so engines can replay what they did.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "frame_fixup.hpp"

namespace mroce::fuzzing {

// splitmix64: small, fast, good enough to pick mutations.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint32_t below(uint32_t n) { return n == 0 ? 0 : static_cast<uint32_t>(next() % n); }
  bool one_in(uint32_t n) { return below(n) == 0; }
};

// Resize to `want` bytes (zero-filling growth), within max_size. Returns the new size.
inline size_t resize_to(uint8_t* data, size_t size, size_t max_size, size_t want) {
  if (want > max_size) want = max_size;
  if (want > size) std::memset(data + size, 0, want - size);
  return want;
}

// One structural nudge. Returns the new size.
inline size_t nudge_structure(uint8_t* d, size_t size, size_t max_size, Rng& rng) {
  switch (rng.below(9)) {
    case 0: {  // [R-ENC-2] EtherType and [R-ENC-3/4] IP version nibble (+ IHL 5 for IPv4)
      const bool v6 = rng.one_in(2);
      const size_t need = kEth + (v6 ? kIpv6 : kIpv4) + kUdp + kBth + kIcrc;
      if (size < need) size = resize_to(d, size, max_size, need);
      if (size < kEth + kIpv4) return size;
      put_be16(d + 12, v6 ? 0x86DD : 0x0800);
      if (v6 && size >= kEth + kIpv6) {
        d[14] = static_cast<uint8_t>(0x60 | (d[14] & 0x0F));
        d[20] = 17;  // next header UDP
      } else if (!v6) {
        d[14] = 0x45;
        d[23] = 17;
        put_be16(d + 20, static_cast<uint16_t>(be16(d + 20) & 0x4000));  // no fragment
      }
      return size;
    }
    case 1: {  // [R-ENC-5] destination port
      const Layout l = layout_of(d, size);
      if (l.ok) put_be16(d + l.l4 + 2, kPort);
      return size;
    }
    case 2:
    case 3: {  // a known opcode with exactly the length it needs ([R-HDR-7])
      const Layout l = layout_of(d, size);
      if (!l.ok) return size;
      const uint8_t op = kOpcodes[rng.below(kOpcodes.size())];
      const size_t payload = rng.one_in(8) ? rng.below(8193) : rng.below(65);
      const size_t want = fitted_length(d, size, op, payload);
      if (want == 0 || want > max_size) return size;
      size = resize_to(d, size, max_size, want);
      uint8_t* bth = d + l.l4 + kUdp;
      bth[0] = 0x10;  // [R-HDR-1] version 1, reserved 0
      bth[1] = op;
      return size;
    }
    case 4: {  // [R-HDR-1], [R-HDR-3]: version 1, reserved zero, flags the opcode allows
      const Layout l = layout_of(d, size);
      if (!l.ok || size < l.l4 + kUdp + kBth) return size;
      uint8_t* bth = d + l.l4 + kUdp;
      bth[0] = 0x10;
      const uint16_t allowed = is_data_op(bth[1]) ? 0xE000 : (bth[1] == 0x12 ? 0x8000 : 0);
      put_be16(bth + 2, static_cast<uint16_t>(be16(bth + 2) & allowed));
      put_be16(bth + 10, 0);
      return size;
    }
    case 5: {  // [R-HDR-4], [R-HDR-5]: DCID zero exactly on CONNECT, path 0 on control
      const Layout l = layout_of(d, size);
      if (!l.ok || size < l.l4 + kUdp + kBth) return size;
      uint8_t* bth = d + l.l4 + kUdp;
      put_be32(bth + 4, bth[1] == 0x20 ? 0 : (be32(bth + 4) | 1u));
      if (bth[1] >= 0x20) put_be16(bth + 8, 0);
      return size;
    }
    case 6: {  // [R-HDR-20]: SACK bit 0 clear; [R-HDR-12/13]: a consistent message range
      const Layout l = layout_of(d, size);
      if (!l.ok) return size;
      uint8_t* bth = d + l.l4 + kUdp;
      const int ext = size >= l.l4 + kUdp + kBth ? ext_len(bth[1]) : -1;
      if (ext < 0 || size < l.l4 + kUdp + kBth + static_cast<size_t>(ext)) return size;
      uint8_t* e = bth + kBth;
      if (bth[1] == 0x10) e[16] &= 0x7F;
      if (is_data_op(bth[1])) {
        const uint32_t plen = be16(e + 6);
        const uint32_t off = bth[1] == 0x04 ? 0 : rng.below(1u << 20);
        put_be32(e + 16, off);
        put_be32(e + 12, off + plen + rng.below(4096));
      }
      return size;
    }
    case 7: {  // truncate anywhere (the early Truncated / IpLength paths)
      return size == 0 ? 0 : rng.below(static_cast<uint32_t>(size) + 1);
    }
    default:  // Ethernet padding after the IP packet ([R-ENC-8]): lengths then stay as they are
      return resize_to(d, size, max_size, size + 1 + rng.below(24));
  }
}

// The post-mutation step. `size` bytes of `data` were just mutated by the engine; returns the new
// size (<= max_size).
inline size_t post_mutate(uint8_t* data, size_t size, size_t max_size, uint64_t seed) {
  Rng rng(seed);
  if (rng.one_in(4)) return size;  // keep some purely blind mutations
  bool padded = false;
  if (rng.one_in(3)) {
    const size_t before = size;
    size = nudge_structure(data, size, max_size, rng);
    padded = size > before && rng.one_in(2);
  }
  FixOptions o;
  o.lengths = !padded && !rng.one_in(8);
  o.payload_length = !rng.one_in(4);
  o.icrc = !rng.one_in(8);
  const uint32_t u = rng.below(8);
  o.udp = u == 0 ? UdpCsum::Keep : (u == 1 ? UdpCsum::Compute : UdpCsum::Zero);
  o.ipv4_checksum = !rng.one_in(8);
  fix_frame(data, size, o);
  return size;
}

}  // namespace mroce::fuzzing
