// `mroce agent`: the reference conformance agent. Serves the control protocol
// (harness/conform/AGENT_PROTOCOL.md) on a TCP or Unix socket for our engine on one DPDK port, so
// that `mroce conform` can test the engine as it tests any other DUT behind a real port.
#pragma once

#include "command.hpp"

namespace mroce::cli {

Runner add_agent(CLI::App& app, const GlobalOptions& global);

}  // namespace mroce::cli
