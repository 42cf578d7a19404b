// Flows over the fabric and what became of them, for every transport the fabric runs (the engine,
// the RoCEv2 baselines): the same flow list in, the same result out, so scenarios compare them
// side by side.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fabric/fabric.hpp"

namespace mroce::fabric {

// One message of `bytes` from host src to host dst, posted at start_us (simulated; a transport that
// sets up connections first counts it from the moment they are all up, and FlowOutcome::spec holds
// the absolute time). At most one flow per (src, dst) pair.
struct FlowSpec {
    uint32_t src = 0, dst = 0;
    uint64_t bytes = 0;
    double start_us = 0;
};

struct FlowOutcome {
    FlowSpec spec;
    bool done = false;      // the receiver holds every byte (its completion arrived)
    bool verified = false;  // ... and they are the bytes sent
    double finish_us = 0;   // simulated time of the receiver's completion
    std::string error;      // why not done (an error completion, or still running at the deadline)
    double fct_us() const { return finish_us - spec.start_us; }
};

struct RunOptions {
    double deadline_us = 1e6;  // stop here even if flows remain
    double window_us = 100;    // bins of received bytes per flow (Jain's index over time)
    uint32_t watch_host = 0;   // RunResult::watched_port is the ToR port (plane 0) feeding this host
    std::function<void(double sim_us, uint32_t done, uint32_t flows)> progress;  // about once a wall second
};

struct TransportTotals {
    uint64_t data_packets = 0, retransmissions = 0, spurious = 0, timeouts = 0;
    uint64_t ce_seen = 0, rate_cuts = 0;  // CE marks seen by receivers; window or rate decreases
    uint64_t host_rx_drops = 0;           // frames a host's receive ring could not hold
};

struct RunResult {
    std::string transport;
    std::vector<FlowOutcome> flows;
    // bins[f][w]: bytes of flow f's frames (data and retransmissions, headers included) that reached
    // its receiver in window w.
    std::vector<std::vector<uint64_t>> bins;
    double window_us = 100;
    FabricStats fabric;
    PortStats watched_port;
    TransportTotals totals;
    double sim_end_us = 0, wall_s = 0;
    double setup_us = 0;  // when the last connection was up (flows' start times count from here)
    uint64_t events = 0;
    uint64_t bytes_per_host = 0;        // transport state per host (preallocated)
    uint64_t bytes_per_connection = 0;  // transport state per connection
    uint64_t peak_rss_bytes = 0;

    uint32_t done() const;
    bool all_verified() const;
    double max_fct_us() const;
    double goodput_gbps() const;  // sum of bytes of done flows over (last finish - first start)
};

// Peak resident memory of this process (bytes), from /proc/self/status.
uint64_t peak_rss_bytes();

}  // namespace mroce::fabric
