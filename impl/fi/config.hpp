// Provider configuration from FI_MROCE_* parameters (fi_param_define/fi_param_get, so `fi_info -e`
// documents them; DESIGN.md 7). Only the parameters this build reads are defined.
#pragma once

#include <string>

namespace mroce::fi {

// Registers every FI_MROCE_* parameter; called from fi_prov_ini.
void define_parameters() noexcept;

// Where the device host's devices come from (FI_MROCE_PORT).
enum class Backend {
  MemLoop,  // "memloop": two devices back to back over io::MemLoop, in this process, no DPDK
  Ring,     // "ring": two devices joined by a DPDK net_ring pair, in this process (DPDK builds only)
};

struct PortConfig {
  Backend backend = Backend::MemLoop;
  std::string spec;  // the FI_MROCE_PORT text, for messages
};

// Reads FI_MROCE_PORT. Returns 0, or -FI_ENODATA when it is unset, -FI_EINVAL when it is malformed,
// -FI_ENOSYS for a port kind this build does not open yet (af_packet, af_xdp, memif; ring without
// DPDK); each failure logs one FI_WARN.
int read_port_config(PortConfig* out);

// FI_MROCE_LAYERING: let utility providers (ofi_rxm, ofi_rxd) layer over mroce (DESIGN.md 1.5).
// Returns 0 and *out, or -FI_EINVAL (one FI_WARN) on a malformed value.
int read_layering(bool* out);

}  // namespace mroce::fi
