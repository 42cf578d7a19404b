#include "fi/addr.hpp"

#include "codec/fast_codec.hpp"

#include <arpa/inet.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <random>

namespace mroce::fi {
namespace {

constexpr uint8_t kFlagIpv6 = 1;

}  // namespace

std::array<uint8_t, kAddrLen> encode(const EndpointAddress& a) noexcept {
  std::array<uint8_t, kAddrLen> b{};
  b[0] = kAddrVersion;
  b[1] = a.device.ipv6 ? kFlagIpv6 : 0;
  fast::detail::wr16(&b[2], a.udp_port);
  fast::detail::wr32(&b[4], a.ep_id);
  for (size_t i = 0; i < 6; ++i) b[8 + i] = a.device.mac[i];
  for (size_t i = 0; i < 16; ++i) b[16 + i] = a.device.ip[i];
  fast::detail::wr32(&b[32], a.device_nonce);
  return b;
}

std::optional<EndpointAddress> decode(const void* bytes, size_t len) noexcept {
  if (bytes == nullptr || len != kAddrLen) return std::nullopt;
  const auto* b = static_cast<const uint8_t*>(bytes);
  if (b[0] != kAddrVersion || (b[1] & ~kFlagIpv6) != 0 || b[14] != 0 || b[15] != 0) return std::nullopt;
  EndpointAddress a;
  a.device.ipv6 = (b[1] & kFlagIpv6) != 0;
  if (!a.device.ipv6) {
    for (size_t i = 4; i < 16; ++i)
      if (b[16 + i] != 0) return std::nullopt;  // IPv4 uses the first 4 bytes only
  }
  a.udp_port = fast::detail::rd16(&b[2]);
  a.ep_id = fast::detail::rd32(&b[4]);
  for (size_t i = 0; i < 6; ++i) a.device.mac[i] = b[8 + i];
  for (size_t i = 0; i < 16; ++i) a.device.ip[i] = b[16 + i];
  a.device_nonce = fast::detail::rd32(&b[32]);
  return a;
}

std::string to_string(const EndpointAddress& a) {
  char ip[INET6_ADDRSTRLEN] = {};
  inet_ntop(a.device.ipv6 ? AF_INET6 : AF_INET, a.device.ip.data(), ip, sizeof ip);
  const auto& m = a.device.mac;
  char out[128];
  std::snprintf(out, sizeof out, "fi_mroce://%02x:%02x:%02x:%02x:%02x:%02x/%s%s%s:%u/ep%u", m[0], m[1], m[2], m[3],
                m[4], m[5], a.device.ipv6 ? "[" : "", ip, a.device.ipv6 ? "]" : "", unsigned{a.udp_port},
                unsigned{a.ep_id});
  return out;
}

uint32_t process_nonce() noexcept {
  // Not a secret (keys come from the engine's secret): only tells two lives of a process apart.
  static const uint32_t nonce = [] {
    try {
      std::random_device rd;
      return static_cast<uint32_t>(rd());
    } catch (...) {
      // No entropy device: the clock and the process id still differ between two lives.
      auto t = std::chrono::steady_clock::now().time_since_epoch().count();
      return static_cast<uint32_t>(t) ^ static_cast<uint32_t>(getpid()) << 16;
    }
  }();
  return nonce;
}

}  // namespace mroce::fi
