// Portable deterministic pseudo-random numbers for schedules, workloads and data patterns.
//
// Every run of the harness is a pure function of its inputs; the only randomness is derived from an
// explicit seed. The generators are the impairment layer's (impl/impair/prng.hpp: splitmix64 seeding
// xoshiro256**, Lemire bounded integers), so a fault sequence drawn in memory and one drawn on DPDK
// ports from the same seed are the same sequence; <random>'s distributions would differ between
// standard libraries.
#pragma once

#include "impair/prng.hpp"

namespace mroce::harness {

using impair::mix64;
using impair::Prng;
using impair::splitmix64;

}  // namespace mroce::harness
