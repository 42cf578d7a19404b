#include "fi/config.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/if_packet.h>
#include <net/if.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "fi/provider.hpp"
#ifdef MROCE_FI_DPDK
#include "dpdk/port.hpp"
#endif

namespace mroce::fi {

namespace {
#ifdef MROCE_FI_DPDK
constexpr const char* kPortKinds =
    "'memloop', 'ring', 'memif:server:PATH', 'memif:client:PATH', 'af_packet:IF' or "
    "'af_xdp:IF'";
#else
constexpr const char* kPortKinds = "'memloop'";
#endif

// A parameter's value, or nullptr when unset or empty.
const char* param(const char* name) {
  char* value = nullptr;
  if (fi_param_get_str(&g_provider, name, &value) != FI_SUCCESS || value == nullptr || *value == '\0') return nullptr;
  return value;
}

std::optional<std::array<uint8_t, 6>> parse_mac(std::string_view text) {
  std::array<uint8_t, 6> mac{};
  if (text.size() != 17) return std::nullopt;
  for (size_t i = 0; i < 6; ++i) {
    if (i > 0 && text[3 * i - 1] != ':') return std::nullopt;
    unsigned byte = 0;
    for (size_t k = 0; k < 2; ++k) {
      const char c = text[3 * i + k];
      if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
      byte = byte * 16 + static_cast<unsigned>(std::isdigit(static_cast<unsigned char>(c))
                                                   ? c - '0'
                                                   : std::tolower(static_cast<unsigned char>(c)) - 'a' + 10);
    }
    mac[i] = static_cast<uint8_t>(byte);
  }
  return mac;
}

bool parse_ip(const char* text, Address* out) {
  out->ip = {};
  if (inet_pton(AF_INET, text, out->ip.data()) == 1) {
    out->ipv6 = false;
    return true;
  }
  if (inet_pton(AF_INET6, text, out->ip.data()) == 1) {
    out->ipv6 = true;
    return true;
  }
  return false;
}

// The MAC and first IPv4 address of `iface` in this process's network namespace.
struct InterfaceFacts {
  std::optional<std::array<uint8_t, 6>> mac;
  std::optional<std::array<uint8_t, 4>> ipv4;
};
InterfaceFacts interface_facts(const std::string& iface) {
  InterfaceFacts facts;
  struct ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return facts;
  for (struct ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_name == nullptr || iface != a->ifa_name) continue;
    if (a->ifa_addr->sa_family == AF_PACKET) {
      const auto* ll = reinterpret_cast<const struct sockaddr_ll*>(a->ifa_addr);
      if (ll->sll_halen == 6) {
        std::array<uint8_t, 6> mac{};
        std::memcpy(mac.data(), ll->sll_addr, 6);
        facts.mac = mac;
      }
    } else if (a->ifa_addr->sa_family == AF_INET && !facts.ipv4) {
      const auto* in = reinterpret_cast<const struct sockaddr_in*>(a->ifa_addr);
      std::array<uint8_t, 4> ip{};
      std::memcpy(ip.data(), &in->sin_addr, 4);
      facts.ipv4 = ip;
    }
  }
  freeifaddrs(list);
  return facts;
}

// The device address of a DPDK port: FI_MROCE_MAC / FI_MROCE_IP when set; otherwise the
// interface's MAC and IPv4 (af_packet, af_xdp: the DPDK port takes the interface's MAC), or for
// memif, which has no interface, fixed addresses by role (server ...:01 / 198.18.0.1, client ...:02 /
// 198.18.0.2) so that two processes started with nothing but the socket path differ.
int resolve_device(PortConfig* c) {
  EndpointAddress& a = c->device;
  a.udp_port = DeviceConfig{}.udp_port;
  a.device_nonce = process_nonce();
  const char* mac_text = param("mac");
  const char* ip_text = param("ip");
  if (mac_text != nullptr) {
    const auto mac = parse_mac(mac_text);
    if (!mac) {
      FI_WARN(&g_provider, FI_LOG_CORE, "FI_MROCE_MAC='%s' is not a MAC address (expected aa:bb:cc:dd:ee:ff)\n",
              mac_text);
      return -FI_EINVAL;
    }
    a.device.mac = *mac;
  }
  if (ip_text != nullptr && !parse_ip(ip_text, &a.device)) {
    FI_WARN(&g_provider, FI_LOG_CORE, "FI_MROCE_IP='%s' is not an IPv4 or IPv6 address\n", ip_text);
    return -FI_EINVAL;
  }
  if (c->kind == PortKind::Memif) {
    const uint8_t role = c->memif_server ? 1 : 2;
    if (mac_text == nullptr) a.device.mac = {0x02, 0x00, 0x00, 0x00, 0x00, role};
    if (ip_text == nullptr) a.device.ip = {198, 18, 0, role};
    return 0;
  }
  if (if_nametoindex(c->iface.c_str()) == 0) {
    FI_WARN(&g_provider, FI_LOG_CORE, "FI_MROCE_PORT='%s': no interface '%s' in this network namespace\n",
            c->spec.c_str(), c->iface.c_str());
    return -FI_ENODEV;
  }
  const InterfaceFacts facts = interface_facts(c->iface);
  if (mac_text == nullptr) {
    if (!facts.mac) {
      FI_WARN(&g_provider, FI_LOG_CORE, "FI_MROCE_PORT='%s': interface '%s' has no MAC address; set FI_MROCE_MAC\n",
              c->spec.c_str(), c->iface.c_str());
      return -FI_EADDRNOTAVAIL;
    }
    a.device.mac = *facts.mac;
  }
  if (ip_text == nullptr) {
    if (!facts.ipv4) {
      FI_WARN(&g_provider, FI_LOG_CORE,
              "FI_MROCE_PORT='%s': interface '%s' has no IPv4 address; give it one or set FI_MROCE_IP\n",
              c->spec.c_str(), c->iface.c_str());
      return -FI_EADDRNOTAVAIL;
    }
    a.device.ipv6 = false;
    a.device.ip = {};
    std::memcpy(a.device.ip.data(), facts.ipv4->data(), 4);
  }
  return 0;
}

#ifdef MROCE_FI_DPDK
// FI_MROCE_PORT as a DPDK port spec (impl/dpdk/port.hpp). Returns 1 when `spec` is not one of the
// port kinds at all (the caller says what is accepted), else 0 or an fi errno (one warning).
int read_dpdk_port(std::string_view spec, PortConfig* out) {
  bool dpdk_kind = false;
  for (std::string_view kind : {"memif:", "af_packet:", "af_xdp:", "null", "vdev:", "ring,"})
    dpdk_kind = dpdk_kind || spec.substr(0, kind.size()) == kind;
  if (!dpdk_kind) return 1;
  dpdk::PortSpec port;
  try {
    port = dpdk::parse_port_spec(spec);
  } catch (const std::exception& e) {
    FI_WARN(&g_provider, FI_LOG_CORE, "FI_MROCE_PORT='%s' is not a port spec: %s\n", out->spec.c_str(), e.what());
    return -FI_EINVAL;
  }
  out->backend = Backend::Port;
  out->iface = port.target;
  switch (port.backend) {
    case dpdk::Backend::Memif:
      out->kind = PortKind::Memif;
      out->memif_server = port.server;
      break;
    case dpdk::Backend::AfPacket:
      out->kind = PortKind::AfPacket;
      break;
    case dpdk::Backend::AfXdp:
      out->kind = PortKind::AfXdp;
      break;
    default:
      FI_WARN(&g_provider, FI_LOG_CORE, "FI_MROCE_PORT='%s': this port kind is not supported (only %s)\n",
              out->spec.c_str(), kPortKinds);
      return -FI_ENOSYS;
  }
  return resolve_device(out);
}
#endif

}  // namespace

void define_parameters() noexcept {
  fi_param_define(&g_provider, "port", FI_PARAM_STRING,
                  "Where the device comes from. 'memloop': two devices back to back in this process "
                  "(domains memloop:0 and memloop:1), no DPDK. 'ring': two devices joined by a DPDK "
                  "net_ring pair in this process (domains ring:0 and ring:1). Between processes, one "
                  "device on a DPDK port, the domain named after the spec: 'memif:server:PATH' / "
                  "'memif:client:PATH' (a unix socket, no root), 'af_packet:IF', 'af_xdp:IF' (an interface "
                  "of this network namespace). DPDK kinds only in DPDK builds.");
  fi_param_define(&g_provider, "ip", FI_PARAM_STRING,
                  "The device's IPv4 or IPv6 address on a DPDK port (default: the interface's first IPv4 "
                  "address; memif: 198.18.0.1 for the server, 198.18.0.2 for the client).");
  fi_param_define(&g_provider, "mac", FI_PARAM_STRING,
                  "The device's MAC address aa:bb:cc:dd:ee:ff on a DPDK port (default: the interface's; "
                  "memif: 02:00:00:00:00:01 for the server, 02:00:00:00:00:02 for the client).");
  fi_param_define(&g_provider, "layering", FI_PARAM_BOOL,
                  "Let utility providers (ofi_rxm, ofi_rxd) layer over mroce (default: no, so that "
                  "'mroce' selects the native endpoints).");
}

int read_port_config(PortConfig* out) {
  const char* value = param("port");
  if (value == nullptr) {
    FI_WARN(&g_provider, FI_LOG_CORE, "FI_MROCE_PORT is not set: set it to %s\n", kPortKinds);
    return -FI_ENODATA;
  }
  std::string_view spec(value);
  out->spec = spec;
  if (spec == "memloop") {
    out->backend = Backend::MemLoop;
    return 0;
  }
#ifdef MROCE_FI_DPDK
  if (spec == "ring") {
    out->backend = Backend::Ring;
    return 0;
  }
  if (int r = read_dpdk_port(spec, out); r <= 0) return r;
#else
  for (std::string_view dpdk : {"af_packet:", "af_xdp:", "memif:", "ring", "null", "vdev:"}) {
    if (spec.substr(0, dpdk.size()) == dpdk) {
      FI_WARN(&g_provider, FI_LOG_CORE, "FI_MROCE_PORT='%s': this build has no DPDK ports (only %s)\n", value,
              kPortKinds);
      return -FI_ENOSYS;
    }
  }
#endif
  FI_WARN(&g_provider, FI_LOG_CORE, "FI_MROCE_PORT='%s' is not a port spec: expected %s\n", value, kPortKinds);
  return -FI_EINVAL;
}

int read_layering(bool* out) {
  *out = false;
  // Parsed here rather than by fi_param_get_bool, so that a bad value gives exactly one line; the
  // accepted words are libfabric's own for boolean parameters.
  const char* raw = std::getenv("FI_MROCE_LAYERING");
  if (raw == nullptr) return 0;
  std::string word(raw);
  for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (word == "1" || word == "on" || word == "true" || word == "yes") {
    *out = true;
    return 0;
  }
  if (word == "0" || word == "off" || word == "false" || word == "no") return 0;
  FI_WARN(&g_provider, FI_LOG_CORE, "FI_MROCE_LAYERING='%s' is not a boolean (0/1, on/off, true/false, yes/no)\n", raw);
  return -FI_EINVAL;
}

}  // namespace mroce::fi
