// Portable deterministic pseudo-random numbers for schedules, workloads and data patterns.
//
// Every run of the harness is a pure function of its inputs; the only randomness is derived from an
// explicit seed through these functions. They are fixed here (splitmix64 for seeding, xoshiro256**
// for the stream, Lemire's multiply-shift with rejection for bounded integers) rather than taken
// from <random>, whose distributions differ between standard libraries: a trace written on one
// machine must replay bit for bit on another.
#pragma once

#include <cstdint>

namespace mroce::harness {

// splitmix64 step: advances `state` and returns the next output (Steele, Lea, Flood 2014).
inline uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// A stateless 64-bit mix of one value (one splitmix64 step from `x`): for per-byte data patterns.
inline uint64_t mix64(uint64_t x) {
    uint64_t s = x;
    return splitmix64(s);
}

// xoshiro256** 1.0 (Blackman, Vigna), seeded through splitmix64 so that any seed, 0 included,
// works.
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

    // Uniform in [0, n); 0 when n == 0. Lemire's nearly-divisionless method with rejection, so the
    // result is exactly uniform and identical on every platform.
    uint64_t below(uint64_t n) {
        if (n == 0) return 0;
        for (;;) {
            const uint64_t x = next();
            const unsigned __int128 m = static_cast<unsigned __int128>(x) * n;
            const uint64_t low = static_cast<uint64_t>(m);
            if (low >= n || low >= (0 - n) % n) return static_cast<uint64_t>(m >> 64);
        }
    }

    // Uniform in [lo, hi] (inclusive); lo when hi < lo.
    uint64_t range(uint64_t lo, uint64_t hi) {
        if (hi <= lo) return lo;
        const uint64_t span = hi - lo;
        if (span == UINT64_MAX) return next();
        return lo + below(span + 1);
    }

    // True with probability ppm / 1 000 000.
    bool chance_ppm(uint32_t ppm) { return ppm > 0 && below(1000000) < ppm; }

  private:
    static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    uint64_t s_[4];
};

}  // namespace mroce::harness
