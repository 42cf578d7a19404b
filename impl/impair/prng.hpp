// The impairment layer's pseudo-random numbers: the same generators as the in-memory harness
// (harness/netsim/prng.hpp), re-implemented here because impl/ must not include harness/. A fate
// sequence drawn on DPDK ports must equal the one the harness draws from the same seed, so every
// output of these functions is pinned by properties/dpdk/impair_prng_test.cpp and cross-checked
// against the harness by properties/dpdk/impair_vs_harness_test.cpp.
//
// splitmix64 seeds xoshiro256** 1.0; bounded integers use Lemire's multiply-shift with rejection
// (exactly uniform, identical on every platform, unlike <random>'s distributions).
#pragma once

#include <cstdint>

namespace mroce::impair {

// One splitmix64 step: advances `state`, returns the next output.
inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Stateless mix of one value (one splitmix64 step from x).
inline uint64_t mix64(uint64_t x) {
  uint64_t s = x;
  return splitmix64(s);
}

class Prng {
 public:
  explicit Prng(uint64_t seed) {
    uint64_t sm = seed;
    for (auto& w : s_) w = splitmix64(sm);
  }

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, n); 0 when n == 0 (draws nothing then).
  uint64_t below(uint64_t n) {
    if (n == 0) return 0;
    for (;;) {
      const uint64_t x = next();
      const unsigned __int128 m = static_cast<unsigned __int128>(x) * n;
      const uint64_t low = static_cast<uint64_t>(m);
      if (low >= n || low >= (0 - n) % n) return static_cast<uint64_t>(m >> 64);
    }
  }

  // Uniform in [lo, hi]; lo when hi <= lo (draws nothing then).
  uint64_t range(uint64_t lo, uint64_t hi) {
    if (hi <= lo) return lo;
    const uint64_t span = hi - lo;
    if (span == UINT64_MAX) return next();
    return lo + below(span + 1);
  }

  // True with probability ppm / 1e6. ppm == 0 draws nothing: the harness relies on that, so a
  // knob left at zero does not shift the stream of the other knobs.
  bool chance_ppm(uint32_t ppm) { return ppm > 0 && below(1000000) < ppm; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace mroce::impair
