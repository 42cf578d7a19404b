// The provider's endpoint address (DESIGN.md 5.2, "fi address"): addr_format FI_FORMAT_UNSPEC, 36
// bytes in network order, so that fi_getname bytes can travel between processes as they are.
//
//   [0] version = 1   [1] flags (bit 0: IPv6)   [2..3] UDP port   [4..7] endpoint id
//   [8..13] MAC       [14..15] reserved (0)     [16..31] IP (IPv4 in the first 4 bytes)
//   [32..35] device nonce (tells a restarted peer process from the old one)
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "mroce/mroce.hpp"

namespace mroce::fi {

inline constexpr size_t kAddrLen = 36;
inline constexpr uint8_t kAddrVersion = 1;

struct EndpointAddress {
  Address device;  // MAC + IP of the device
  uint16_t udp_port = 0;
  uint32_t ep_id = 0;  // 0: the device itself, no endpoint yet (fi_getinfo's src_addr)
  uint32_t device_nonce = 0;
  bool operator==(const EndpointAddress&) const = default;
};

std::array<uint8_t, kAddrLen> encode(const EndpointAddress& a) noexcept;
// nullopt unless `len` is kAddrLen and the bytes are a well-formed version-1 address.
std::optional<EndpointAddress> decode(const void* bytes, size_t len) noexcept;
// "fi_mroce://02:00:00:00:00:01/198.18.0.1:4793/ep7" (fi_av_straddr).
std::string to_string(const EndpointAddress& a);

// A per-process random value put in every address this process hands out (DESIGN.md 5.2).
uint32_t process_nonce() noexcept;

}  // namespace mroce::fi
