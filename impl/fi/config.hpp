// Provider configuration from FI_MROCE_* parameters (fi_param_define/fi_param_get, so `fi_info -e`
// documents them; DESIGN.md 7). Only the parameters this build reads are defined.
#pragma once

#include <cstdint>
#include <string>

#include "fi/addr.hpp"

namespace mroce::fi {

// Registers every FI_MROCE_* parameter; called from fi_prov_ini.
void define_parameters() noexcept;

// Where the device host's devices come from (FI_MROCE_PORT).
enum class Backend {
  MemLoop,  // "memloop": two devices back to back over io::MemLoop, in this process, no DPDK
  Ring,     // "ring": two devices joined by a DPDK net_ring pair, in this process (DPDK builds only)
  Port,     // memif:server|client:PATH, af_packet:IF, af_xdp:IF: one device on a DPDK port between processes
};

enum class PortKind { Memif, AfPacket, AfXdp };

struct PortConfig {
  Backend backend = Backend::MemLoop;
  std::string spec;  // the FI_MROCE_PORT text: the domain name of Backend::Port, and for messages
  // Backend::Port only:
  PortKind kind = PortKind::Memif;
  bool memif_server = false;
  std::string iface;       // af_packet / af_xdp interface
  EndpointAddress device;  // MAC, IP, UDP port and nonce of the device (ep id 0)
};

// Reads FI_MROCE_PORT and, for a DPDK port, the device's address (FI_MROCE_MAC / FI_MROCE_IP, else
// the interface's; memif defaults by role). Returns 0, or -FI_ENODATA when FI_MROCE_PORT is unset,
// -FI_EINVAL when a value is malformed, -FI_ENODEV when the interface does not exist,
// -FI_EADDRNOTAVAIL when it has no IPv4 address, -FI_ENOSYS for a port kind this build does not
// open (ring and ports without DPDK; null, vdev); each failure logs exactly one FI_WARN.
int read_port_config(PortConfig* out);

// FI_MROCE_LAYERING: let utility providers (ofi_rxm, ofi_rxd) layer over mroce (DESIGN.md 1.5).
// Returns 0 and *out, or -FI_EINVAL (one FI_WARN) on a malformed value.
int read_layering(bool* out);

}  // namespace mroce::fi
