// The engine's unpredictable choices [R-CONN-2], [R-SEC-8]: ISNs and connection IDs come from a
// keyed PRF over a per-device secret, so that no peer can derive one value from others it has seen. SipHash-2-4 (libsodium's crypto_shorthash) of a
// purpose tag and a counter: cheap enough for connection setup, never on the per-packet path.
#pragma once

#include <cstdint>

namespace mroce::engine {

class Secrets {
 public:
  // seed 0: a fresh secret from the operating system (getrandom). Any other seed: a secret derived
  // from it, for tests and replays that must be reproducible.
  explicit Secrets(uint64_t seed) noexcept;
  bool ok() const noexcept { return ok_; }

  enum class Purpose : uint8_t { Isn = 1, ConnId = 2 };
  // The next 32-bit value for `purpose`. Values of different purposes are independent.
  uint32_t next32(Purpose purpose) noexcept;

 private:
  unsigned char key_[16];
  uint64_t counter_ = 0;
  bool ok_ = false;
};

}  // namespace mroce::engine
