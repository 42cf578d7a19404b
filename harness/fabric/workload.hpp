// Flows over the fabric and what became of them, for every transport the fabric runs (the engine,
// the RoCEv2 baselines): the same flow list in, the same result out, so scenarios compare them
// side by side.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <unordered_map>
#include <functional>
#include <utility>
#include <string>
#include <vector>

#include "fabric/fabric.hpp"
#include "fabric/sim.hpp"

namespace mroce::fabric {

// One message of `bytes` from host src to host dst, posted at start_us (simulated; a transport that
// sets up connections first counts it from the moment they are all up, and FlowOutcome::spec holds
// the absolute time). A flow with `after` starts start_us after the last of those flows is done (a
// collective's step waits for the data it forwards). Flows of one (src, dst) pair are carried in
// index order (mroce: messages of one connection; RoCE: a QP each).
struct FlowSpec {
    uint32_t src = 0, dst = 0;
    uint64_t bytes = 0;
    double start_us = 0;
    std::vector<uint32_t> after{};
    // Also waits for every flow before this index (a barrier: nccl-tests times its iterations after
    // the warm-up ones are done on every rank). 0: none.
    uint32_t after_all_before = 0;
    // A collective's channel (-1: none). RoCE puts the flow's QP on plane channel mod planes (NCCL binds
    // each channel to one NIC; otherwise the ECMP hash of its source port picks); mroce, which sprays
    // every connection over all planes, carries it on stream channel mod streams, so that channels do
    // not wait for each other's completions.
    int32_t channel = -1;
};

// The bytes of a scenario that owns them (a collective: each host's buffers, reduced as steps arrive),
// in place of the RunBook's seeded source and per-flow sinks. Pointers stay valid for the whole run.
class FlowData {
public:
    virtual ~FlowData() = default;
    // The memory of host h that its flows send from and receive into (each range registered once).
    virtual std::vector<std::pair<uint8_t*, uint64_t>> host_memory(uint32_t host) = 0;
    virtual const uint8_t* source(size_t f) = 0;
    virtual uint8_t* sink(size_t f) = 0;
    virtual void delivered(size_t f) = 0;  // flow f's receiver holds every byte: reduce or keep them
    virtual bool verified(size_t f) = 0;   // after the run: what flow f's receiver ended with is right
};

struct FlowOutcome {
    FlowSpec spec;
    bool done = false;      // the receiver holds every byte (its completion arrived)
    bool verified = false;  // ... and they are the bytes sent
    bool failed = false;    // the transport gave up on it (an error completion, a connection down)
    double finish_us = 0;   // simulated time of the receiver's completion
    std::string error;      // why not done (an error completion, or still running at the deadline)
    double fct_us() const { return finish_us - spec.start_us; }
};

struct RunOptions {
    double deadline_us = 1e6;  // stop here even if flows remain
    double window_us = 100;    // bins of received bytes per flow (Jain's index over time)
    uint32_t watch_host = 0;   // RunResult::watched_port is the ToR port (plane 0) feeding this host
    std::function<void(double sim_us, uint32_t done, uint32_t flows)> progress;  // about once a wall second
    FlowData* data = nullptr;  // the scenario's bytes (nullptr: the RunBook's)
    // mroce: sample this flow's connection every window_us (RunResult::watch; -1: none).
    int64_t watch_flow = -1;
};

// One sample of a watched flow's connection (mroce): what limits it at both ends.
struct WatchSample {
    double at_us = 0;
    uint32_t ceiling_mbps = 0;     // the sender's rate ceiling [R-CC-6] (0: unlimited)
    uint32_t cwnd = 0;             // sum over its paths [R-CC-1]
    uint32_t in_flight = 0;        // sum over its paths
    uint32_t share_mbps = 0;       // the receiver's share for it [R-FS-4] (0: not active there)
    uint32_t receiver_active = 0;  // connections active at the receiver [R-FS-2]
    // Loss recovery of the sender's paths: the largest RTO (backoff included) [R-REL-7], how many
    // paths are SUSPECT or FAILED [R-PATH-2], and the connection's retransmissions so far by the
    // rule that declared them lost (gap or time rule, tail probe, RTO) [R-REL-4], [R-REL-6].
    uint32_t max_rto_us = 0;
    uint32_t paths_not_active = 0;
    uint64_t retx_gap = 0, retx_probe = 0, retx_rto = 0;
};

struct TransportTotals {
    uint64_t data_packets = 0, retransmissions = 0, spurious = 0, timeouts = 0;
    uint64_t ce_seen = 0, rate_cuts = 0;  // CE marks seen by receivers; window or rate decreases
    uint64_t host_rx_drops = 0;           // frames a host's receive ring could not hold
    // mroce only: paths moved to another route on an RTO [R-PATH-4], and back to their home route
    // once a home probe was answered on it [R-PATH-10].
    uint64_t repaths = 0, home_returns = 0;
};

struct RunResult {
    std::string transport;
    std::vector<FlowOutcome> flows;
    // bins[f][w]: bytes of flow f's frames (data and retransmissions, headers included) that reached
    // its receiver in window w.
    std::vector<std::vector<uint64_t>> bins;
    double window_us = 100;
    std::vector<WatchSample> watch;  // RunOptions::watch_flow, every window_us
    FabricStats fabric;
    double plane_window_us = 0;  // FabricConfig::plane_window_us of the run (fabric.plane_rx_bytes ...)
    PortStats watched_port;
    TransportTotals totals;
    double sim_end_us = 0, wall_s = 0;
    double setup_us = 0;  // when the last connection was up (flows' start times count from here)
    uint64_t events = 0;
    uint64_t bytes_per_host = 0;        // transport state per host (preallocated)
    uint64_t bytes_per_connection = 0;  // transport state per connection
    uint64_t peak_rss_bytes = 0;
    // A lockstep run (fabric/endpoints.hpp): the first divergence of engine from model ("" if none)
    // and the steps compared.
    std::string divergence;
    uint64_t lockstep_steps = 0;

    uint32_t done() const;
    bool all_verified() const;
    double max_fct_us() const;
    double goodput_gbps() const;  // sum of bytes of done flows over (last finish - first start)
};

// Peak resident memory of this process (bytes), from /proc/self/status.
uint64_t peak_rss_bytes();

}  // namespace mroce::fabric

namespace mroce::fabric {

// What every transport's run does the same way: it checks the flow list, holds the source bytes (one
// seeded buffer; flow f sends a slice at its own offset, so a flow placed at another flow's receiver
// would not compare equal) and one sink per flow, bins the bytes each flow's receiver gets, settles
// flows (done, or failed) and stops the simulation when all are, reports progress, and at the end
// compares every done flow's sink with its source.
class RunBook {
public:
    RunBook(const std::vector<FlowSpec>& flows, uint32_t hosts, uint64_t seed, const RunOptions& options);

    size_t size() const noexcept { return outcomes_.size(); }
    const FlowSpec& spec(size_t f) const { return outcomes_[f].spec; }
    FlowSpec& spec(size_t f) { return outcomes_[f].spec; }
    const FlowOutcome& outcome(size_t f) const { return outcomes_[f]; }
    const uint8_t* source(size_t f) const {
        return options_.data ? options_.data->source(f) : source_.get() + offset(f);
    }
    uint8_t* sink(size_t f) { return options_.data ? options_.data->sink(f) : sinks_[f].get(); }
    const uint8_t* source_base() const { return source_.get(); }
    uint64_t source_size() const noexcept { return source_size_; }
    // The memory a host registers once: its flows' sources and sinks lie inside.
    std::vector<std::pair<uint8_t*, uint64_t>> host_memory(uint32_t host);
    static uint64_t offset(size_t f) { return (f * 4160) % (64 * 1024); }
    // The flows of (src, dst) in index order (empty if none), and the first of them not done (-1 if none;
    // a channel's later step may finish first, and its bytes then count for the earlier one).
    const std::vector<uint32_t>& flows_of(uint32_t src, uint32_t dst) const;
    int64_t flow_of(uint32_t src, uint32_t dst) const;

    void received_bytes(size_t f, uint32_t bytes);  // into the bin of the current simulated time
    // Flows start at their start times counted from `setup_us`, when the last connection came up (as
    // a collective starts on connections set up beforehand; a lost CONNECT's retry must not count as
    // completion time), or, with `after`, from the moment the last of those is done: sets every start
    // time to the absolute one and calls start(f) at it.
    void start_after_setup(double setup_us, const std::function<void(size_t)>& start);
    void done(size_t f);                            // the receiver holds every byte, now
    void failed(size_t f, const std::string& why);  // keeps the first reason; fails the flows after it
    uint32_t done_count() const noexcept { return done_; }

    // Runs the simulation until every flow settled or the deadline; fills r's timing, flows, bins.
    void run(RunResult& r);

private:
    void settle(size_t f);
    void tick();
    void schedule(size_t f, double from_us);

    RunOptions options_;
    std::vector<FlowOutcome> outcomes_;
    std::vector<bool> settled_;
    std::vector<std::unique_ptr<uint8_t[]>> sinks_;
    std::vector<std::vector<uint64_t>> bins_;
    std::unique_ptr<uint8_t[]> source_;
    uint64_t source_size_ = 0;
    uint32_t done_ = 0, settled_count_ = 0;
    struct PairFlows {
        std::vector<uint32_t> flows;
        size_t open = 0;  // flows[..open) are done (a cursor: flow_of runs for every received frame)
    };
    mutable std::unordered_map<uint64_t, PairFlows> by_pair_;
    std::vector<std::vector<uint32_t>> dependents_;  // [f]: flows with f in their `after`
    std::vector<uint32_t> waiting_;                  // [f]: flows of its `after` not done yet (+1 for its barrier)
    // FlowSpec::after_all_before: per barrier index B, the flows below B done so far and its waiters.
    struct Barrier {
        uint32_t done_below = 0;
        std::vector<uint32_t> waiters;
    };
    std::map<uint32_t, Barrier> barriers_;
    std::function<void(size_t)> start_;
    std::chrono::steady_clock::time_point last_progress_;
};

// Builds a Run (a class with RunResult run()), runs it, destroys it, and clears the simulator for
// the next run (the simulator is global: one run at a time per process).
template <class Run, class... Args>
RunResult run_once(Args&&... args) {
    RunResult r;
    {
        Run run(std::forward<Args>(args)...);
        r = run.run();
    }
    sim::reset();
    return r;
}

}  // namespace mroce::fabric
