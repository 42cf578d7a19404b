// Requirement scenarios written once, run three ways: through the executable model, through the
// engine (lockstep::EngineEndpoint) and through both in lockstep (run_differential), on the harness
// network. A scenario is a harness::Scenario (so every run of it is a replayable trace), plus an
// optional frame filter ("drop the first data frame of path 1", "mark CE the first 3 of path 0"),
// which compile_filter() turns into the scenario's fate schedule, and the observations its test
// asserts on (every frame each side sent, the final path views, notes taken after each step).
//
// A failing run is written as a trace in the format `mroce replay` reads, with the command that
// replays it: a lockstep divergence is shrunk first (shrink_divergence) and replays with
// `mroce replay --engine lockstep FILE`; a failed check of the model or the engine replays with
// `mroce replay --engine model|engine FILE`.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/differential.hpp"

namespace mroce::lockstep {

// One frame entering the network, as a filter sees it: who sent it, its fields and bytes, the time,
// and both endpoints (the model's) as they are when it is sent.
struct FrameInfo {
    harness::Side from = harness::Side::A;
    const ref::Packet& packet;
    const std::vector<uint8_t>& frame;
    model::Time now = 0;
    std::array<const harness::SimEndpoint*, 2> ep{};
    bool data() const;                     // a data opcode
    uint32_t conn(harness::Side s) const;  // that side's first connection (0 if none)
    // A path's current route (UDP source port) on one side's first connection.
    uint16_t route(harness::Side s, uint16_t path) const;
};
// The fate of one frame as it enters the network (the filter may remember what it saw: it is called
// exactly once per frame, in network order, like a live filter).
using FrameFilter = std::function<harness::PacketFate(const FrameInfo&)>;

// The scenario with the filter's decisions as its fate list (everything the filter does not touch is
// delivered). The model decides which frames exist (model and engine send the same ones, or they
// diverge); a run is restarted from scratch after each frame whose fate is not Deliver, so each
// decision sees the traffic that the earlier ones caused. faults_until is moved to kNever when it
// would cut the filter's decisions short. Throws std::runtime_error beyond `max_faults` faults.
harness::Scenario compile_filter(harness::Scenario s, const FrameFilter& filter, size_t max_faults = 5000);

// Shorthands for filters.
harness::PacketFate drop();
harness::PacketFate deliver();
harness::PacketFate mark_ce();
harness::PacketFate duplicate(uint32_t gap_us);
harness::PacketFate corrupt_ip_byte(uint16_t ip_offset, uint8_t mask = 0x01);

struct SentFrame {
    model::Time at = 0;
    ref::Packet packet;  // the header fields (payload_length set)
    uint32_t frame_len = 0;
};

// What a scenario's checks look at, the same whichever way it ran.
struct Observed {
    harness::RunResult run;
    std::array<std::vector<SentFrame>, 2> sent;  // every frame each side transmitted, in order
    struct Conn {
        std::optional<model::ConnState> state;
        uint16_t paths = 0;
        std::vector<std::optional<model::PathView>> views;  // by path
        size_t outstanding = 0;
    };
    std::array<std::map<uint32_t, Conn>, 2> final;  // by local connection ID, when the run ended
    std::array<std::map<uint32_t, uint32_t>, 2> final_shares;
    std::map<std::string, int64_t> notes;  // taken by the scenario's step hook

    // Completions of one side, in order.
    std::vector<model::Completion> completions(harness::Side side) const;
    // Connection `index`'s final state on `side` (nullptr when it never had an ID).
    const Conn* conn(harness::Side side, size_t index = 0) const;
    std::optional<model::PathView> path(harness::Side side, uint16_t path, size_t index = 0) const;
};

// Called after every step of either side: may record into Observed::notes.
using StepHook = std::function<void(Observed&, harness::Side, model::Time, const harness::SimEndpoint&)>;

struct RequirementScenario {
    std::string name;  // the test's name: requirement IDs first (R_ACK_5_...)
    harness::Scenario scenario;
    harness::CheckMode mode = harness::CheckMode::Standard;  // the harness checks every way runs
    std::function<FrameFilter()> filter;                     // a fresh filter per compilation; may be empty
    std::function<StepHook()> on_step;                       // a fresh hook per run; may be empty
    std::function<void(const Observed&)> check;              // the scenario's own assertions
};

enum class Way { Model, Engine, Lockstep };
std::string_view way_name(Way w);

struct WayOptions {
    std::string trace_dir = ".";  // where a failing run's trace is written
    std::string mroce = "mroce";  // the CLI, as the printed replay command names it
    size_t shrink_runs = 300;     // shrink_divergence budget
};

struct WayResult {
    Observed observed;
    std::vector<harness::Violation> violations;  // the harness checks of the scenario's mode
    std::optional<Divergence> divergence;        // Lockstep only (before shrinking)
    harness::Scenario compiled;                  // the scenario that ran (filter compiled)
    bool failed() const { return divergence.has_value() || !violations.empty(); }
    std::string report() const;  // violations / divergence, one per line
};

// The scenario with its filter compiled (once per call).
harness::Scenario compiled_scenario(const RequirementScenario& r);

// Runs the compiled scenario one way and judges it by the harness checks of its mode (and, in
// lockstep, by the absence of a divergence). Does not run `check` (the caller does, in its test).
WayResult run_way(Way way, const RequirementScenario& r, const harness::Scenario& compiled);

// Writes the failing run as a replayable trace (a divergence is shrunk first) into
// options.trace_dir/<name>.<way>.trace; returns a message naming the file and the exact replay
// command.
std::string write_failure(Way way, const RequirementScenario& r, const WayResult& result, const WayOptions& options);

}  // namespace mroce::lockstep
