// Runs a flow list over a fresh fabric with one transport, to completion or the deadline. Each call
// builds the fabric, runs ns-3's simulator and tears both down (one run at a time per process).
#pragma once

#include <vector>

#include "fabric/config.hpp"
#include "fabric/mroce_host.hpp"
#include "fabric/workload.hpp"

namespace mroce::fabric {

// The engine in every host that sends or receives.
RunResult run_mroce(const FabricConfig& fabric, const MroceHostOptions& host, const std::vector<FlowSpec>& flows,
                    const RunOptions& options);

// The RoCEv2 baseline in every host that sends or receives (fabric/roce_host.hpp): one path per QP,
// go-back-N, DCQCN; lossless when the fabric config has pfc on.
struct RoceOptions;
RunResult run_roce(const FabricConfig& fabric, const RoceOptions& host, const std::vector<FlowSpec>& flows,
                   const RunOptions& options);

}  // namespace mroce::fabric
