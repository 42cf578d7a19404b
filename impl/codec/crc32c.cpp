// CRC-32C ([R-HDR-28]): a byte-wise table reference and an SSE4.2 version chosen at run time.
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

#include "codec/fast_codec.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>
#define MROCE_CRC_X86 1
#endif

namespace mroce::fast {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // reflected Castagnoli

constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ ((c & 1u) ? kPoly : 0u);
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kTable = make_table();

// Raw register update (no init / final xor).
constexpr uint32_t scalar_update(uint32_t s, const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) s = (s >> 8) ^ kTable[(s ^ p[i]) & 0xFFu];
  return s;
}

#ifdef MROCE_CRC_X86
// The 3-lane hardware loop: three independent crc32 chains hide the instruction's 3-cycle latency.
// Lanes B and C start from 0; they are merged with the operator "feed K zero bytes", which is linear
// over GF(2), so it is applied as 4 byte-indexed tables (built at compile time).
constexpr size_t kLane = 256;

constexpr uint32_t zeros_shift_bit(uint32_t s, size_t nbytes) {
  for (size_t i = 0; i < nbytes; ++i) s = (s >> 8) ^ kTable[s & 0xFFu];
  return s;
}

struct ShiftTable {
  uint32_t t[4][256];
};

constexpr ShiftTable make_shift(size_t nbytes) {
  uint32_t basis[32]{};
  for (int b = 0; b < 32; ++b) basis[b] = zeros_shift_bit(1u << b, nbytes);
  ShiftTable st{};
  for (int j = 0; j < 4; ++j)
    for (uint32_t v = 0; v < 256; ++v) {
      uint32_t r = 0;
      for (int k = 0; k < 8; ++k)
        if (v & (1u << k)) r ^= basis[8 * j + k];
      st.t[j][v] = r;
    }
  return st;
}
constexpr ShiftTable kShift1 = make_shift(kLane);
constexpr ShiftTable kShift2 = make_shift(2 * kLane);

inline uint32_t apply(const ShiftTable& st, uint32_t s) {
  return st.t[0][s & 0xFF] ^ st.t[1][(s >> 8) & 0xFF] ^ st.t[2][(s >> 16) & 0xFF] ^ st.t[3][s >> 24];
}

__attribute__((target("sse4.2"))) uint32_t hw_update(uint32_t s, const uint8_t* p, size_t n) {
  while (n >= 3 * kLane) {
    uint64_t a = s, b = 0, c = 0;
    for (size_t i = 0; i < kLane; i += 8) {
      uint64_t x, y, z;
      std::memcpy(&x, p + i, 8);
      std::memcpy(&y, p + kLane + i, 8);
      std::memcpy(&z, p + 2 * kLane + i, 8);
      a = _mm_crc32_u64(a, x);
      b = _mm_crc32_u64(b, y);
      c = _mm_crc32_u64(c, z);
    }
    s = apply(kShift2, uint32_t(a)) ^ apply(kShift1, uint32_t(b)) ^ uint32_t(c);
    p += 3 * kLane;
    n -= 3 * kLane;
  }
  uint64_t a = s;
  while (n >= 32) {  // headers (48-64 bytes) mostly: one chain, less loop overhead
    uint64_t w0, w1, w2, w3;
    std::memcpy(&w0, p, 8);
    std::memcpy(&w1, p + 8, 8);
    std::memcpy(&w2, p + 16, 8);
    std::memcpy(&w3, p + 24, 8);
    a = _mm_crc32_u64(a, w0);
    a = _mm_crc32_u64(a, w1);
    a = _mm_crc32_u64(a, w2);
    a = _mm_crc32_u64(a, w3);
    p += 32;
    n -= 32;
  }
  while (n >= 8) {
    uint64_t x;
    std::memcpy(&x, p, 8);
    a = _mm_crc32_u64(a, x);
    p += 8;
    n -= 8;
  }
  s = uint32_t(a);
  if (n >= 4) {
    uint32_t x;
    std::memcpy(&x, p, 4);
    s = _mm_crc32_u32(s, x);
    p += 4;
    n -= 4;
  }
  while (n--) s = _mm_crc32_u8(s, *p++);
  return s;
}

bool detect_hw() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2");
}
// A plain global rather than a function-local static: no guard on the per-packet path. It is
// zero (false) until dynamic initialisation runs, so a call from another static initialiser simply
// takes the scalar path, which gives the same result.
const bool g_hw = detect_hw();
#endif

static_assert(std::endian::native == std::endian::little, "the SSE4.2 path loads little-endian words");

}  // namespace

uint32_t crc32c_scalar(const uint8_t* p, size_t n) noexcept { return ~scalar_update(0xFFFFFFFFu, p, n); }

bool crc32c_hw_available() noexcept {
#ifdef MROCE_CRC_X86
  return g_hw;
#else
  return false;
#endif
}

uint32_t crc32c_extend(uint32_t crc, const uint8_t* p, size_t n) noexcept {
#ifdef MROCE_CRC_X86
  if (__builtin_expect(g_hw, 1)) return ~hw_update(~crc, p, n);
#endif
  return ~scalar_update(~crc, p, n);
}

uint32_t crc32c(const uint8_t* p, size_t n) noexcept {
#ifdef MROCE_CRC_X86
  if (__builtin_expect(g_hw, 1)) return ~hw_update(0xFFFFFFFFu, p, n);
#endif
  return ~scalar_update(0xFFFFFFFFu, p, n);
}

}  // namespace mroce::fast
