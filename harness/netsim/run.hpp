// The simulation: two endpoints, one network, one virtual clock, one workload.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/types.hpp"
#include "netsim/network.hpp"
#include "netsim/sim_endpoint.hpp"
#include "netsim/workload.hpp"

namespace mroce::harness {

struct Violation {
    std::string check;  // name of the check, e.g. "exactly_once"
    model::Time at = 0;
    std::string detail;
};

struct Limits {
    model::Time time_limit = 2000000;  // absolute; the run stops here whatever happens
    uint64_t max_events = 3000000;     // guards against livelock (e.g. a timer that never advances)
    model::Time linger_us = 2000;      // keep running this long after quiescence (late duplicates)
    bool until_conn_down = false;      // quiescence also requires both connections to be down
    bool operator==(const Limits&) const = default;
};

// Everything a run depends on; the input part of a trace.
struct Scenario {
    uint64_t seed = 1;                    // data patterns
    std::array<model::Config, 2> config;  // A, B
    // A opens this many connections to B at setup (Connect i at t = 0, in index order); each op
    // names its connection by index (Op::conn). B's fair share then has up to this many active
    // connections [R-FS-2].
    uint16_t connections = 1;
    NetConfig net;
    Schedule schedule;
    Workload workload;
    Limits limits;
};

// A scenario with addresses, connection IDs and ISNs filled in (A 10.0.0.1, B 10.0.0.2), no faults
// and no operations.
Scenario base_scenario(uint32_t isn_a = 0xFFFFFF00u, uint32_t isn_b = 0xFFFFFF80u);

// The key a KeyChoice::Invalid op names: derived from the peer's data rkey, never 0 nor one of the
// peer's keys (with_keys_numbered names it after the keys it comes from).
inline uint32_t invalid_rkey(uint32_t data_rkey, uint32_t guard_rkey) {
    uint32_t v = data_rkey ^ 0x5A5A5A5Au;
    while (v == 0 || v == data_rkey || v == guard_rkey) ++v;
    return v;
}

struct RunOptions {
    bool trace = true;               // record event lines
    bool canonical_packets = false;  // packet summaries in the appendix C form instead of compact
    bool step_checks = true;         // window / span / rate share / acked-PSN monitors
    bool record_shares = false;      // RunResult::shares / hints (for the incast check)
};

struct PostRecord {
    model::Time at = 0;
    uint64_t seq = 0;  // posting order over the whole run
    bool rejected = false;
    std::string reason;
    bool no_connection = false;  // not handed to the endpoint: its connection never came up
};
struct CompletionRecord {
    model::Time at = 0;
    Side side = Side::A;
    model::Completion c;
};
struct ConnRecord {
    model::Time at = 0;
    Side side = Side::A;
    uint32_t conn = 0;
    bool up = false;
    model::Status status = model::Status::Success;  // ConnectionDown status
};

// One connection of one side, by index (Scenario::connections).
struct ConnSlot {
    std::optional<uint32_t> id;  // local connection ID (A: from its first CONNECT; B: once up)
    std::optional<model::Time> up_at, down_at;
    model::Status down_status = model::Status::Success;
    uint32_t downs = 0;  // ConnectionDown reports (exactly one expected when it fails)
    std::optional<model::ConnState> final_state;
    bool up() const { return up_at.has_value(); }
};

// A change of one side's fair-share grants (RunOptions::record_shares) [R-FS-4].
struct ShareRecord {
    model::Time at = 0;
    Side side = Side::A;
    std::map<uint32_t, uint32_t> shares;  // local connection ID -> Mb/s
};
// An ACK delivered to a data sender, with the rate hint it carries (RunOptions::record_shares).
struct HintRecord {
    model::Time at = 0;
    Side to = Side::A;
    uint32_t conn = 0;  // the receiver's local connection ID (the ACK's DCID)
    uint32_t hint = 0;
};

struct NetStats {
    uint64_t entered = 0, delivered = 0, dropped = 0, link_dropped = 0, duplicated = 0, delayed = 0, ce_marked = 0,
             corrupted = 0;
    // What the endpoints sent, for coverage reports.
    uint64_t retransmissions = 0;  // data frames with RETX
    uint64_t voids = 0, naks = 0, probes = 0;
    uint64_t wrapped = 0;  // data frames whose PSN is numerically below the sender's ISN (wrapped)
};

struct RunResult {
    bool setup_ok = false;                        // A saw ConnectionUp on every connection
    std::array<std::optional<uint32_t>, 2> conn;  // connection 0's local IDs, once up
    std::array<std::optional<model::Time>, 2> up_at;
    std::array<std::vector<ConnSlot>, 2> slots;  // every connection, by index
    // Per op; nullopt = never posted. An op of a connection that never came up on its side (and
    // whose initiator gave up) is not posted: PostRecord::no_connection.
    std::vector<std::optional<PostRecord>> posts;
    std::vector<CompletionRecord> completions;
    std::vector<ConnRecord> conn_events;
    std::vector<Violation> violations;  // found while running (monitors, limits)
    std::optional<model::Time> quiescent_at;
    model::Time end_time = 0;
    bool hit_time_limit = false;
    bool hit_event_limit = false;
    uint64_t events = 0;
    NetStats net;
    // Final observations.
    std::array<std::optional<std::vector<uint8_t>>, 2> data_mem, guard_mem;
    std::array<std::optional<model::ConnState>, 2> final_state;
    std::array<size_t, 2> final_outstanding{};
    // First delivered (uncorrupted) data frame per (receiving side, its local connection ID).
    std::map<std::pair<int, uint32_t>, model::Time> first_data;
    std::vector<ShareRecord> shares;  // RunOptions::record_shares
    std::vector<HintRecord> hints;    // RunOptions::record_shares
    std::vector<std::string> lines;   // trace event lines (RunOptions::trace)
};

RunResult run(const Scenario& scenario, const EndpointFactory& factory = model_factory(),
              const RunOptions& options = {});

}  // namespace mroce::harness
