// Replayable traces: the inputs of a run (configurations, network, schedule, workload) followed by
// what happened, one event per line. Format: harness/README.md.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "netsim/checks.hpp"
#include "netsim/run.hpp"

namespace mroce::harness {

// Which checks a scenario is judged by (recorded in the trace so that replay judges alike).
enum class CheckMode : uint8_t {
    Standard,     // check_all: faults stop, everything completes correctly
    DeadNetwork,  // check_dead_network + exactly-once / memory with Tolerance{true}
    None,
    // Handshake faults: when every connection came up and stayed up, Standard; otherwise the ops
    // of the failed connections are judged with tolerance, the others exactly, plus
    // check_clean_failure (nothing hangs, failures reported cleanly). [R-CONN-4]
    MayFail,
};
std::string_view check_mode_name(CheckMode m);

std::vector<Violation> check_scenario(const Scenario& s, const RunResult& r, CheckMode mode);

// The input part only (parseable on its own).
std::string scenario_text(const Scenario& s, CheckMode mode);

// A whole trace: inputs, event lines, and the verdict lines.
// `canonical_packets`: the event lines were recorded with RunOptions::canonical_packets (noted in
// the trace so that replay records alike).
std::string to_trace(const Scenario& s, CheckMode mode, const RunResult& r, const std::vector<Violation>& violations,
                     bool canonical_packets = false);

struct TraceError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct ParsedTrace {
    Scenario scenario;
    CheckMode mode = CheckMode::Standard;
    bool canonical_packets = false;
    std::vector<std::string> lines;       // the recorded event lines (may be empty)
    std::vector<std::string> violations;  // the recorded verdict lines
};
// Throws TraceError naming the line number on malformed input.
ParsedTrace parse_trace(std::string_view text);

struct ReplayResult {
    bool reproduced = true;  // the rerun's event lines equal the recorded ones (when recorded)
    size_t first_diff = 0;   // index into the event lines of the first difference
    std::string recorded_line, replayed_line;
    RunResult result;
    std::vector<Violation> violations;  // the checks of the trace's mode on the rerun
};
ReplayResult replay(std::string_view trace_text, const EndpointFactory& factory = model_factory(),
                    const RunOptions& options = {});

// Memory keys are each implementation's choice ([R-MEM-1], A-32: the engine's are unpredictable,
// the model's are not), so event lines are compared with every key a register line issued replaced
// by the number of its registration ("key#3"), wherever it appears (register lines, RETHs).
std::vector<std::string> with_keys_numbered(const std::vector<std::string>& lines);

}  // namespace mroce::harness
