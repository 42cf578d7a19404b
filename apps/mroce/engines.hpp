// The transport implementations the CLI can drive through the harness, by name: the executable
// model and the fast engine (through its harness adapter, lockstep::engine_factory).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/engine_endpoint.hpp"
#include "netsim/sim_endpoint.hpp"

namespace mroce::cli {

// "lockstep" is not an endpoint: `mroce replay --engine lockstep` reruns the trace through the model
// and the engine side by side and reports the first divergence (cmd_diff.cpp).
inline std::vector<std::string> engine_names() { return {"model", "engine", "lockstep"}; }

inline std::optional<harness::EndpointFactory> engine_factory(std::string_view name) {
    if (name == "model") return harness::model_factory();
    if (name == "engine") return lockstep::engine_factory();
    return std::nullopt;
}

}  // namespace mroce::cli
