// `mroce diff`: the model-vs-engine differential campaign (harness/lockstep), and the lockstep replay
// of one trace that `mroce replay --engine lockstep` calls.
#pragma once

#include <string>

#include "command.hpp"

namespace mroce::cli {

Runner add_diff(CLI::App& app, const GlobalOptions& global);

// Reruns the trace at `path` through the model and the engine in lockstep; prints the first
// divergence (or "in step"). `canary`: with the test-only engine bug of `mroce diff --canary`
// planted. `json`: the last stdout line is one JSON object. Exit code: 0 in step, 1 diverged,
// 2 unreadable / malformed trace.
int replay_differential(const std::string& path, bool canary, bool json);

}  // namespace mroce::cli
