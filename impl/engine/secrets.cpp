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

}  // namespace mroce::engine
