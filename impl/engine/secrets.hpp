// The engine's unpredictable choices [R-CONN-2], [R-MEM-1], [R-SEC-8]: ISNs, connection IDs, memory
// keys and the scrambling of the canceled-RSN map ([R-SEC-11]) come from a keyed PRF over a per-device secret, so that no peer can derive one value from others
// it has seen. SipHash-2-4 (libsodium's crypto_shorthash) of a purpose tag and a counter for ISNs and
// IDs; for keys, a keyed permutation of 32-bit words (a Feistel network whose round function is that
// PRF), so that the key's owner can invert it (RegionTable::slot_of).
#pragma once

#include <cstdint>

namespace mroce::engine {

class Secrets {
 public:
  // seed 0: a fresh secret from the operating system (getrandom). Any other seed: a secret derived
  // from it, for tests and replays that must be reproducible.
  explicit Secrets(uint64_t seed) noexcept;
  bool ok() const noexcept { return ok_; }

  enum class Purpose : uint8_t { Isn = 1, ConnId = 2, Lkey = 3, Rkey = 4, CanceledRsnKey = 5 };
  // The next 32-bit value for `purpose`. Values of different purposes are independent.
  uint32_t next32(Purpose purpose) noexcept;

  // A pseudo-random permutation of 32-bit words under the secret, one per purpose, and its inverse:
  // unpermute32(p, permute32(p, x)) == x. Without the secret, the images of some words say nothing
  // about the image of another (4 Feistel rounds of SipHash, Luby-Rackoff).
  uint32_t permute32(Purpose purpose, uint32_t x) const noexcept;
  uint32_t unpermute32(Purpose purpose, uint32_t y) const noexcept;

 private:
  static constexpr int kRounds = 4;
  uint16_t round(Purpose purpose, int r, uint16_t half) const noexcept;

  unsigned char key_[16];
  uint64_t counter_ = 0;
  bool ok_ = false;
};

}  // namespace mroce::engine
