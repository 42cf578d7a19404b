#include "engine/secrets.hpp"

#include <sodium.h>

#include <cstring>

namespace mroce::engine {

Secrets::Secrets(uint64_t seed) noexcept {
  // sodium_init() is idempotent and thread-safe; it fails only without an entropy source. Then the
  // device does not open (Engine::ok()), rather than run on predictable values.
  ok_ = sodium_init() >= 0;
  if (!ok_) return;
  if (seed == 0) {
    randombytes_buf(key_, sizeof key_);
    return;
  }
  unsigned char s[randombytes_SEEDBYTES] = {};
  std::memcpy(s, &seed, sizeof seed);
  randombytes_buf_deterministic(key_, sizeof key_, s);
}

uint32_t Secrets::next32(Purpose purpose) noexcept {
  unsigned char in[9];
  const uint64_t n = counter_++;
  in[0] = static_cast<unsigned char>(purpose);
  std::memcpy(in + 1, &n, sizeof n);
  unsigned char out[crypto_shorthash_BYTES];
  crypto_shorthash(out, in, sizeof in, key_);
  uint32_t v;
  std::memcpy(&v, out, sizeof v);
  return v;
}

// The Feistel round function: 16 bits of SipHash of (purpose, round, half). Its own input layout
// (4 bytes) keeps it apart from next32's (9 bytes).
uint16_t Secrets::round(Purpose purpose, int r, uint16_t half) const noexcept {
  const unsigned char in[4] = {static_cast<unsigned char>(purpose), static_cast<unsigned char>(r),
                               static_cast<unsigned char>(half), static_cast<unsigned char>(half >> 8)};
  unsigned char out[crypto_shorthash_BYTES];
  crypto_shorthash(out, in, sizeof in, key_);
  return static_cast<uint16_t>(out[0] | (out[1] << 8));
}

uint32_t Secrets::permute32(Purpose purpose, uint32_t x) const noexcept {
  uint16_t left = static_cast<uint16_t>(x >> 16), right = static_cast<uint16_t>(x);
  for (int r = 0; r < kRounds; ++r) {
    const uint16_t next = static_cast<uint16_t>(left ^ round(purpose, r, right));
    left = right;
    right = next;
  }
  return uint32_t(left) << 16 | right;
}

uint32_t Secrets::unpermute32(Purpose purpose, uint32_t y) const noexcept {
  uint16_t left = static_cast<uint16_t>(y >> 16), right = static_cast<uint16_t>(y);
  for (int r = kRounds - 1; r >= 0; --r) {
    const uint16_t prev = static_cast<uint16_t>(right ^ round(purpose, r, left));
    right = left;
    left = prev;
  }
  return uint32_t(left) << 16 | right;
}

}  // namespace mroce::engine
