// Addresses from the command line: MAC, IPv4/IPv6, and the per-plane addressing of an endpoint.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mroce::dpdk {

struct MacAddr {
  std::array<uint8_t, 6> b{};
  bool operator==(const MacAddr&) const = default;
};
// "02:00:00:00:00:01" (':' or '-' separated hex); nullopt when malformed.
std::optional<MacAddr> parse_mac(std::string_view s);
std::string to_string(const MacAddr& m);

struct IpAddr {
  bool v6 = false;
  std::array<uint8_t, 16> b{};  // IPv4: first 4 bytes
  bool operator==(const IpAddr&) const = default;
};
// "198.18.0.1" or "fd00::1"; nullopt when malformed.
std::optional<IpAddr> parse_ip(std::string_view s);
std::string to_string(const IpAddr& a);

// One plane (one port) of an endpoint: where frames come from and go to.
struct PlaneAddr {
  MacAddr mac, peer_mac;
  IpAddr ip, peer_ip;
  bool operator==(const PlaneAddr&) const = default;
};

// [R-ENC-5] default UDP destination port.
inline constexpr uint16_t kDefaultUdpPort = 4793;
// [R-ENC-10] default DSCPs.
inline constexpr uint8_t kDscpData = 26, kDscpControl = 48;

}  // namespace mroce::dpdk
