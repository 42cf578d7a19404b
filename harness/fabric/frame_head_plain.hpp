// Frame-head helpers that need no ns-3 (shared by the C++17 ns-3 files and the C++20 engine side).
#pragma once

#include <cstdint>

namespace mroce::fabric {

// Host index <-> IPv4 address 10.a.b.c (the index in the low 24 bits).
inline uint32_t host_ip(uint32_t host) { return (10u << 24) | (host & 0xFFFFFF); }
inline uint32_t host_of_ip(uint32_t ip) { return ip & 0xFFFFFF; }

// CE mark on the first `len` bytes of a frame (Ethernet + IPv4 header), as a switch does it; only
// ECT frames are marked. True when marked.
bool mark_ce_head(uint8_t* head, uint32_t len);

}  // namespace mroce::fabric
