// Harness endpoints (the executable model, or the model and the engine in lockstep) in the fabric's
// hosts: the model as a cross-check of the engine on small runs (fabric/endpoint_host.hpp).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fabric/config.hpp"
#include "fabric/mroce_host.hpp"
#include "fabric/workload.hpp"
#include "netsim/sim_endpoint.hpp"

namespace mroce::fabric {

// Makes the endpoint of one host from its configuration.
using EndpointMaker = std::function<std::unique_ptr<harness::SimEndpoint>(const model::Config&, uint32_t host)>;

// The model configuration of a host: the same knobs as the engine's hosts (MroceHostOptions).
model::Config endpoint_config(const FabricConfig& fabric, const MroceHostOptions& options, uint32_t host);

// Runs `flows` with an endpoint from `make` in every host that sends or receives. RunResult::transport
// is `name`.
RunResult run_endpoints(const FabricConfig& fabric, const MroceHostOptions& host, const std::vector<FlowSpec>& flows,
                        const RunOptions& options, const EndpointMaker& make, const std::string& name);

}  // namespace mroce::fabric

namespace mroce::fabric {

// The model and the engine in lockstep in every host (lockstep/differential.hpp): the model's frames
// travel, the engine's must equal them after every event. RunResult::divergence reports the first
// difference, with the host; the run goes on with the model alone after it.
RunResult run_lockstep(const FabricConfig& fabric, const MroceHostOptions& host, const std::vector<FlowSpec>& flows,
                       const RunOptions& options);

}  // namespace mroce::fabric
