// The fabric's scenarios (`mroce fabric SCENARIO`): the flow lists, the transports run side by side,
// and the figures each one reports. The CLI prints and plots them; tests run small versions.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fabric/config.hpp"
#include "fabric/mroce_host.hpp"
#include "fabric/workload.hpp"

namespace mroce::fabric {

// RoCEv2 with DCQCN, lossy (go-back-N repairs) or lossless (PFC); the -nocc variants send at line
// rate without congestion control (as plain RoCE in the published simulations).
// mroce-model runs the executable model in every host; mroce-lockstep runs the model and the engine
// side by side in every host, compared after every step (small runs: the model is slow).
enum class Transport : uint8_t { Mroce, RoceGbn, RocePfc, RoceGbnNoCc, RocePfcNoCc, MroceModel, MroceLockstep };
// Transports whose hosts run our protocol (engine, model or both): their bytes are verified.
inline bool is_mroce(Transport t) noexcept {
    return t == Transport::Mroce || t == Transport::MroceModel || t == Transport::MroceLockstep;
}
const char* transport_name(Transport t) noexcept;

struct ScenarioOptions {
    FabricConfig fabric;       // topology, hosts, planes, rate, delay, queues, ECN, seed
    uint64_t bytes = 2000000;  // per flow (the anchors' "2 MB")
    double start_us = 100;     // flows start this long after set-up (mroce: all connections up)
    double deadline_us = 1e6;  // simulated
    MroceHostOptions mroce;
    std::vector<Transport> transports{Transport::Mroce, Transport::RoceGbn, Transport::RocePfc};
    std::function<void(const std::string& what, double sim_us, uint32_t done, uint32_t flows)> progress;
    FlowData* data = nullptr;  // the bytes, when the scenario owns them (a collective)
    double window_us = 100;    // RunResult::bins' window (fairness, flow timelines)
    int64_t watch_flow = -1;   // RunOptions::watch_flow
};

// One flow list run by one transport, with the figures of every scenario.
struct TransportRun {
    Transport transport;
    double loss = 0;
    RunResult result;
    uint32_t hosts = 0;
    uint32_t planes = 1;
    double base_rtt_us = 0;  // of the scenario's typical path
    double ideal_fct_us = 0;
    // Incast: the receiver's ToR port, and fairness over time.
    std::vector<double> jain;  // per window, over the flows active in it
    double fair_at_us = -1;    // first window end from which Jain stays >= 0.95 (-1: never)
};

// A random permutation (a derangement, seeded): host i sends to perm[i].
std::vector<FlowSpec> permutation_flows(uint32_t hosts, uint64_t bytes, double start_us, uint64_t seed);
// Every host sends to the next `per_host` hosts (i -> i+1 .. i+per_host, mod hosts): hosts x per_host
// connections, each host sending and receiving per_host flows.
std::vector<FlowSpec> shifted_flows(uint32_t hosts, uint32_t per_host, uint64_t bytes, double start_us);
// senders hosts 1..n send to host 0.
std::vector<FlowSpec> incast_flows(uint32_t senders, uint64_t bytes, double start_us);

// Runs `flows` with one transport. For RoCE, the fabric takes DCQCN's switch ECN setting; RocePfc
// also turns PFC on.
TransportRun run_transport(Transport t, const ScenarioOptions& options, const std::vector<FlowSpec>& flows,
                           double loss);

// Jain's fairness index of positive rates (1 for one or none).
double jain_index(const std::vector<double>& rates);
// Fairness per window over the flows that have started and not finished by the window's end.
void compute_fairness(TransportRun& run);
// Jain's index averaged over the windows with at least two active flows.
double mean_jain(const TransportRun& run);

double percentile(std::vector<double> values, double p);

// Plane failure: what each plane carried around a plane's failure and return (FabricConfig::failures,
// plane_window_us). Times are simulated µs; durations are counted from the failure (moved, dead_tx)
// or from the return (returned); -1 when it never happened in the run. Only the windows before the
// first flow finished count, so that the flows' ends are not taken for the failure's effects.
struct PlaneFailureFigures {
    double window_us = 0;
    std::vector<std::vector<double>> rx_gbps, tx_gbps;          // [plane][window]: delivered to hosts, handed to NICs
    double start_us = 0, fail_us = 0, back_us = 0, end_us = 0;  // flows' start, failure, return, first finish
    double before_gbps = 0;      // aggregate delivered, mean over the windows from start + 50 us to the failure
    double during_gbps = 0;      // the same from the failure to the return
    double moved_us = -1;        // first window end from which the aggregate stays >= 0.95 x before, until the return
    double dead_tx_us = -1;      // last window end (before the return) in which hosts handed the dead plane data
                                 // (more than 1 % of its share before the failure: home probes are far below)
    double dead_probe_gbps = 0;  // handed to the dead plane after that, until the return: home probes [R-PATH-10]
    double returned_us = -1;     // first window end at which the dead plane carries half its share before the failure
    double plane_before_gbps = 0, plane_after_gbps = 0;  // the dead plane before the failure, after its return
};
PlaneFailureFigures plane_failure_figures(const RunResult& r, uint32_t plane, double fail_us, double back_us);

// What the fabric delivered over time, from RunResult::bins (frames with headers, retransmissions
// included), and where the last flows spent their time: the tail that sets an aggregate measured to
// the last finish.
struct FlowTimeline {
    double window_us = 0;
    std::vector<double> rx_gbps;           // [window]: all flows
    std::vector<uint32_t> active;          // [window]: flows started before its end and not done before its start
    std::vector<double> slowest_gbps;      // [window]: the flow that finished last (or never)
    size_t slowest = 0;                    // its index
    double first_start_us = 0;             // of all flows
    double done_us[4] = {-1, -1, -1, -1};  // when 50, 90, 99 and 100 % of the flows were done (-1: never)
    double peak_gbps = 0;                  // the best window
    double tail_gbps = 0;                  // mean delivered from 90 % done to the last finish
    // Sustained: the mean over the windows after the one where 10 % of all bytes had arrived, up to
    // the one where 90 % had (the run without its ramp and its tail).
    double sustained_gbps = 0;
};
FlowTimeline flow_timeline(const RunResult& r);

}  // namespace mroce::fabric
