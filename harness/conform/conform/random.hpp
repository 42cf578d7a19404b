// Randomised conformance: the executable model plays a legal peer of the DUT with a random
// workload over a faulty network (loss, reordering across paths, duplicates, CE marks,
// corruption, link outages: the harness's generated scenarios), and the conformance monitor
// judges every frame the DUT sends. The harness's checks judge what the DUT completed (exactly
// once, the right bytes). A failing run is shrunk (ops and faults removed while it still fails)
// and written as a replayable trace; its seed reruns it.
//
// The DUT here is our engine in-process (virtual time): the harness drives endpoints as state
// machines, which a device behind a port is not.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "monitor/monitor.hpp"
#include "netsim/generate.hpp"

namespace mroce::conform {

struct RandomOptions {
    uint64_t seed = 1;
    uint32_t runs = 20;
    harness::SimKnobs knobs = harness::campaign_defaults();
    std::string canary;  // as InprocOptions::canary: a broken DUT the campaign must catch
    bool shrink = true;
    uint32_t shrink_budget = 400;  // reruns
    std::string out_dir;           // where a failing run's trace goes ("" : none)
};

struct RandomRun {
    uint64_t seed = 0;
    bool failed = false;
    std::vector<monitor::Violation> violations;  // the monitor's
    std::vector<std::string> harness_failures;   // the harness's checks (completions, memory)
    std::map<std::string, monitor::RuleTally> tally;
    uint64_t frames = 0;
    size_t ops = 0, fates = 0;  // of the (shrunk) scenario
    std::string trace;          // the shrunk failing scenario, if written
};

// Reruns a scenario written by a failing run (harness trace text, its input part) through the
// monitor: what `mroce conform --replay FILE` does. Throws harness::TraceError on a bad trace.
RandomRun replay_random(const std::string& trace_text, const std::string& canary);

// Runs one seed; `progress` is called after each run.
RandomRun run_random_one(uint64_t seed, const RandomOptions& options);
std::vector<RandomRun> run_random(const RandomOptions& options, const std::function<void(const RandomRun&)>& progress);

}  // namespace mroce::conform
