// Differential tester (lockstep): one scenario (workload + network schedule, harness/netsim/run.hpp)
// drives, on each side, the executable model AND the fast engine with the same events at the same
// virtual times. After every step everything observable is compared; the model's actions are the
// ones that travel (they equal the engine's while no divergence was found). The first divergence is
// reported with its context (time, side, expected = model, got = engine).
//
// Compared after each step: every frame (canonical appendix C text of each header field, then the
// bytes), completions (order, status, byte_len, immediate, wr, stream, op), connection events,
// post refusals, memory keys, the next timer deadline, per connection the state, path count,
// outstanding work and every path_view field, the fair-share grants; memory of all registered
// regions on steps with a completion and at the end of the run.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "lockstep/engine_endpoint.hpp"
#include "netsim/generate.hpp"
#include "netsim/run.hpp"
#include "netsim/trace.hpp"

namespace mroce::lockstep {

struct Divergence {
    model::Time at = 0;
    char side = 'A';
    uint64_t step = 0;     // events handled by that side so far
    std::string what;      // e.g. "frame 0", "completion 1", "path 2 of conn 1"
    std::string expected;  // the model's
    std::string got;       // the engine's
    std::string event;     // the event of the step
    std::string text() const;
};

struct DiffOptions {
    Canary canary = Canary::None;
    bool stop_at_divergence = true;  // abort the run at the first divergence (fast); else run on (model only)
    bool trace = false;              // record harness event lines (for writing a trace)
    bool canonical_packets = false;
    // Wraps each side's lockstep endpoint (side 'A' / 'B'), e.g. to observe what it sends
    // (lockstep/scenarios.hpp); the wrapper must forward every call.
    std::function<std::unique_ptr<harness::SimEndpoint>(std::unique_ptr<harness::SimEndpoint>, char side)> wrap;
};

struct DiffStats {
    uint64_t steps = 0, frames = 0, completions = 0;
    std::set<std::string> requirements;  // requirement IDs the run exercised (packet / event kinds)
};

struct DiffResult {
    std::optional<Divergence> divergence;
    harness::RunResult run;  // complete only when the run was not aborted
    DiffStats stats;
};

// Fault / workload profiles of the differential campaigns (harness::generate knobs, config drawn per
// run: ISNs near wraparound, path / stream counts, MTU, window, ACK policy):
//   0 campaign defaults (i.i.d. loss, dup, delay, CE, corruption, one link outage, handshake faults)
//   1 bursty Gilbert-Elliott loss   2 heavy reordering + duplication   3 CE storm (ECN decrease)
//   4 link failures / recoveries    5 many ops and streams, large messages (thousands of packets)
//   6 misuse: RNR (late / missing receives), bad keys, bounds
inline constexpr int kProfiles = 7;
harness::SimKnobs diff_knobs(int profile);
harness::GeneratedScenario generate_diff_scenario(uint64_t seed, int profile);

DiffResult run_differential(const harness::Scenario& scenario, const DiffOptions& options = {});

// Lockstep endpoints for a driver other than harness::run() (the ns-3 fabric): each endpoint runs the
// model and the engine on the same events and compares them after every step, as above; the model's
// actions are the ones returned. After the first divergence (recorded here, once for the session) the
// endpoints go on with the model alone. Memory is compared once more when an endpoint is destroyed.
struct LockstepShared;
class LockstepSession {
public:
    explicit LockstepSession(const DiffOptions& options = {});
    ~LockstepSession();
    LockstepSession(const LockstepSession&) = delete;
    LockstepSession& operator=(const LockstepSession&) = delete;

    // `side` names the endpoint in a divergence report.
    std::unique_ptr<harness::SimEndpoint> endpoint(const model::Config& config, char side);
    const std::optional<Divergence>& divergence() const;
    const DiffStats& stats() const;

private:
    std::shared_ptr<LockstepShared> sh_;
};

// Greedy deterministic shrinking of a diverging scenario: drop ops, link events and fates, cut the
// fates list, while run_differential still diverges. `max_runs` bounds the work.
harness::Scenario shrink_divergence(harness::Scenario s, const DiffOptions& options, size_t max_runs = 400);

// A harness trace (check None) of the scenario, with the divergence as comment lines after the
// header, recorded by a full (non-aborted) run.
std::string divergence_trace(const harness::Scenario& s, const DiffOptions& options);

// Reruns a trace file in lockstep; returns the divergence if any. Throws harness::TraceError.
DiffResult replay_trace_text(const std::string& text, const DiffOptions& options = {});

}  // namespace mroce::lockstep
