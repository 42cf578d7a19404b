// `mroce perf`: perftest-style transfers (ib_write_bw / ib_send_bw / ib_read_bw spirit) over the
// engine on DPDK ports, every byte verified. `mroce demo` reuses the loopback run below.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "command.hpp"

namespace mroce::cli {

Runner add_perf(CLI::App& app, const GlobalOptions& global);

enum class PerfOp { Write, Send, Read, Mixed };  // Mixed: Writes and Sends alternating

// One loopback transfer: two devices in this process joined back to back by `planes` net_ring
// pairs, A sending to B. Runs until `total_bytes` have moved (or `duration_s` > 0 elapsed).
struct LoopbackParams {
    PerfOp op = PerfOp::Mixed;
    uint64_t total_bytes = uint64_t(1) << 30;
    double duration_s = 0;
    uint32_t msg_size = 65536;
    uint32_t depth = 64;  // messages outstanding at once
    uint16_t paths = 4, streams = 4, planes = 2;
    uint16_t max_payload = 4096;
    // Timer minima for a software host (0: the spec's 100 / 20 µs): the poll loop of one thread
    // running both ends stalls for far longer than the spec's minima (page faults, the peer's turn).
    uint32_t rto_min_us = 2000, pto_min_us = 500;
    uint32_t ce_backlog = UINT32_MAX;  // dpdk::IoOptions::ce_backlog (UINT32_MAX: auto, on for rings)
    std::string impair;                // impair_from_string() text, applied on every port's rx; empty: none
    std::string pcap;
    std::string file_prefix;  // EAL file prefix (empty: derived from the pid)
    std::string label;        // shown in the progress line
    bool progress = true;
};

// Runs in a forked child (EAL can start only once per process, and each run wants its own
// impairment), returns its figures: goodput_gbps, msgs_per_s, bytes, verified_bytes, verified
// (bool), errors, retransmissions, latency_us {p50,p99,p999}, paths[], planes[], ... or {"error":...}.
nlohmann::json run_loopback_forked(const LoopbackParams& p);

}  // namespace mroce::cli
