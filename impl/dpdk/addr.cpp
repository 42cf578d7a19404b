#include "dpdk/addr.hpp"

#include <arpa/inet.h>

#include <cstdio>

namespace mroce::dpdk {

std::optional<MacAddr> parse_mac(std::string_view s) {
  MacAddr m;
  if (s.size() != 17) return std::nullopt;
  for (size_t i = 0; i < 6; ++i) {
    if (i > 0 && s[3 * i - 1] != ':' && s[3 * i - 1] != '-') return std::nullopt;
    unsigned v = 0;
    for (size_t j = 0; j < 2; ++j) {
      const char c = s[3 * i + j];
      unsigned d;
      if (c >= '0' && c <= '9')
        d = unsigned(c - '0');
      else if (c >= 'a' && c <= 'f')
        d = unsigned(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        d = unsigned(c - 'A' + 10);
      else
        return std::nullopt;
      v = v * 16 + d;
    }
    m.b[i] = uint8_t(v);
  }
  return m;
}

std::string to_string(const MacAddr& m) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", m.b[0], m.b[1], m.b[2], m.b[3], m.b[4], m.b[5]);
  return buf;
}

std::optional<IpAddr> parse_ip(std::string_view s) {
  const std::string str(s);
  IpAddr a;
  if (inet_pton(AF_INET, str.c_str(), a.b.data()) == 1) return a;
  a.v6 = true;
  if (inet_pton(AF_INET6, str.c_str(), a.b.data()) == 1) return a;
  return std::nullopt;
}

std::string to_string(const IpAddr& a) {
  char buf[INET6_ADDRSTRLEN];
  inet_ntop(a.v6 ? AF_INET6 : AF_INET, a.b.data(), buf, sizeof buf);
  return buf;
}

}  // namespace mroce::dpdk
