// Schedules and workloads from a few knobs and a seed, with the harness's own PRNG. The same knobs
// are meant to drive the DPDK impairment layer, so they are plain numbers (ppm, µs).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "impair/fate.hpp"
#include "netsim/network.hpp"
#include "netsim/run.hpp"
#include "netsim/trace.hpp"
#include "netsim/workload.hpp"

namespace mroce::harness {

// The fault knobs are the impairment layer's (impl/impair/fate.hpp): same names, defaults and
// "key=value ..." text on ports and in memory. i.i.d. loss, Gilbert-Elliott bursty loss,
// duplication, delay (reordering), CE marking, corruption; and, drawn only here (after the whole
// fates list), `link_failures` outages of one random link in one random direction (or both),
// starting uniformly in [link_from, faults_until), lasting [down_min_us, down_max_us].
// faults_until is also copied into NetConfig::faults_until by the caller.
using impair::FaultKnobs;
using impair::knobs_from_string;
using impair::knobs_to_string;

// The fates are impair::FateGenerator(knobs, seed)'s first `frames` draws; the link events are drawn
// after them from the same generator.
Schedule generate_schedule(const FaultKnobs& knobs, uint16_t links, uint64_t seed);

// Every link of both directions goes down at `at` and never comes back (use faults_until = kNever).
Schedule dead_network(model::Time at, uint16_t links);

struct WorkloadKnobs {
    uint32_t ops = 16;
    uint16_t streams = 4;       // streams used (must not exceed the negotiated count)
    uint32_t max_len = 16384;   // message lengths in [0, max_len]
    uint32_t bad_ppm = 100000;  // fraction of intents that misbehave on purpose
    bool both_sides = true;     // B posts too
    uint64_t start = 0;         // first post time
    uint32_t spread_us = 300;   // posts spread over [start, start + spread_us]
    uint16_t connections = 1;   // ops spread over this many connections (Scenario::connections)
    bool operator==(const WorkloadKnobs&) const = default;
};
std::vector<Intent> generate_intents(const WorkloadKnobs& knobs, uint64_t seed);

// A whole scenario from knobs and one seed: base_scenario() endpoints, `links` links,
// `workload.connections` connections, faults from generate_schedule() stopping at
// faults.faults_until, a workload planned from generate_intents(), and a time limit of
// faults_until + last post + settle_bound() + 10 ms.
Scenario generate_scenario(uint64_t seed, const FaultKnobs& faults, const WorkloadKnobs& workload, uint16_t links = 4);

// ---- Campaigns (`mroce sim`) -------------------------------------------------------------------

struct SimKnobs {
    FaultKnobs faults;
    WorkloadKnobs workload;  // workload.connections: each scenario draws its count in [1, this]
    uint16_t links = 4;
    // Share of scenarios whose handshake is not protected: CONNECT / ACCEPT may be lost,
    // duplicated, delayed or corrupted [R-CONN-4]; they are judged with CheckMode::MayFail.
    uint32_t handshake_fault_ppm = 0;
    // Share of those whose initiator gives up quickly (CONNECT_TRIES 1-3, CONNECT_RETRY
    // 100-1000 µs), so that a connection can fail for good.
    uint32_t connect_fail_ppm = 0;
    bool vary_config = false;  // draw ISNs, path / stream counts, MTU, window, ACK policy, C
    bool canary = false;       // A runs the deliberately broken model (see model::Config)
    bool operator==(const SimKnobs&) const = default;
};
// The defaults of `mroce sim`: 1% loss and a little of every other fault until 5 ms, one link
// outage, 16 ops over up to 3 connections, handshake faults in 20% of the runs (a quarter of them
// with an initiator that gives up quickly), endpoint configurations drawn per run.
SimKnobs campaign_defaults();

// One knob by name (fault knobs, workload knobs, links, handshake_fault_ppm, connect_fail_ppm,
// vary_config, canary); std::invalid_argument on an unknown name or a bad value.
void set_knob(SimKnobs& k, std::string_view key, std::string_view value);
std::string knobs_to_string(const SimKnobs& k);

struct GeneratedScenario {
    Scenario scenario;
    CheckMode mode = CheckMode::Standard;
};
// The scenario of one campaign run: a pure function of (seed, knobs).
GeneratedScenario generate(uint64_t seed, const SimKnobs& knobs);

}  // namespace mroce::harness
