#include "fi/config.hpp"

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "fi/provider.hpp"

namespace mroce::fi {

namespace {
#ifdef MROCE_FI_DPDK
constexpr const char* kPortKinds = "'memloop' or 'ring'";
#else
constexpr const char* kPortKinds = "'memloop'";
#endif
}  // namespace

void define_parameters() noexcept {
  fi_param_define(&g_provider, "port", FI_PARAM_STRING,
                  "Where the device comes from. 'memloop': two devices back to back in this process "
                  "(domains memloop:0 and memloop:1), no DPDK. 'ring': two devices joined by a DPDK "
                  "net_ring pair in this process (domains ring:0 and ring:1; DPDK builds only). "
                  "af_packet:IF, af_xdp:IF and memif:... are not supported by this build yet.");
  fi_param_define(&g_provider, "layering", FI_PARAM_BOOL,
                  "Let utility providers (ofi_rxm, ofi_rxd) layer over mroce (default: no, so that "
                  "'mroce' selects the native endpoints).");
}

int read_port_config(PortConfig* out) {
  char* value = nullptr;
  if (fi_param_get_str(&g_provider, "port", &value) != FI_SUCCESS || value == nullptr || *value == '\0') {
    FI_WARN(&g_provider, FI_LOG_CORE, "FI_MROCE_PORT is not set: set it to 'memloop'\n");
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
#endif
  for (std::string_view dpdk : {"af_packet:", "af_xdp:", "memif:", "ring", "auto", "null"}) {
    if (spec.substr(0, dpdk.size()) == dpdk) {
      FI_WARN(&g_provider, FI_LOG_CORE,
              "FI_MROCE_PORT='%s': this port kind is not supported by this build yet (only %s)\n", value, kPortKinds);
      return -FI_ENOSYS;
    }
  }
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
