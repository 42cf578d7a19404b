// The ECMP hash: which of `links` parallel links (or planes) a frame takes, from its UDP source port
// alone (a path's route, [R-ENC-6]). One function for every network we run on: the harness's
// links (harness/src/network.cpp) and the DPDK planes of an endpoint (impl/dpdk/engine_port.cpp),
// so a route lands on the same link in memory and on ports, and re-pathing (a new source port)
// moves a path the same way in both.
#pragma once

#include <cstdint>

namespace mroce::impair {

// MurmurHash3's 32-bit finalizer.
constexpr uint32_t fmix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

// fmix32 of the source port: consecutive ports land on unrelated links. Fixed forever: traces
// record which link a frame took.
constexpr uint32_t ecmp_hash(uint16_t sport) { return fmix32(sport); }

// The link a frame with UDP source port `sport` takes among `links` (0 when links is 0 or 1).
constexpr uint16_t ecmp_link(uint16_t sport, uint16_t links) {
  return links == 0 ? 0 : uint16_t(ecmp_hash(sport) % links);
}

}  // namespace mroce::impair
