// The transport implementations the CLI can drive through the harness, by name. Only the executable
// model for now; the fast engine's harness adapter registers here too (for `mroce replay --engine`
// and a differential replay), without touching the subcommands.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "netsim/sim_endpoint.hpp"

namespace mroce::cli {

inline std::vector<std::string> engine_names() {
    return {"model"};
}

inline std::optional<harness::EndpointFactory> engine_factory(std::string_view name) {
    if (name == "model") return harness::model_factory();
    return std::nullopt;
}

}  // namespace mroce::cli
