// Checks of a run against the expected outcome and the spec's invariants. Each returns a list of
// violations (empty = pass) rather than asserting, so that property tests, the CLI and regression
// replays can all use them and report every problem at once.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <vector>

#include "netsim/run.hpp"
#include "netsim/wire.hpp"

namespace mroce::harness {

// ---- Expected outcome of a workload ------------------------------------------------------------

struct ExpectedCompletion {
    Side side = Side::A;
    uint16_t stream = 0;
    OpKind kind = OpKind::Send;
    model::Status status = model::Status::Success;
    // The message length on success, 0 on error [R-CMP-4] (a receive: its message's length).
    std::optional<uint32_t> byte_len;
    std::optional<uint32_t> immediate;  // checked for receive completions
};

// Bytes that a successful operation places: `len` bytes at offset `dst_off` of side `dst`'s DATA
// region come from offset `src_off` of side `src`'s DATA region (initial pattern).
struct Placement {
    Side dst = Side::A;
    uint64_t dst_off = 0;
    Side src = Side::A;
    uint64_t src_off = 0;
    uint64_t len = 0;
};

struct OpExpectation {
    bool post_rejected = false;                    // [R-MEM-4]: refused at post time, no completion
    std::optional<ExpectedCompletion> completion;  // nullopt: no completion (rejected post)
    std::optional<Placement> placement;            // bytes that land when the op succeeds
    std::optional<size_t> matched_with;            // Send/WriteImm <-> its receive (op index)
};

struct Expectation {
    std::vector<OpExpectation> ops;
    std::vector<std::string> unsupported;  // workload features expect() cannot predict
};

// The outcome a correct transport must produce for `scenario` on a network that eventually
// delivers (loss stops), with every connection up. Receives match messages per (connection,
// stream) [R-MATCH-1]; a refused post consumes no RSN [R-MEM-4]; the receive of a message that
// fails at the sender completes Canceled [R-REL-9].
Expectation expect(const Scenario& scenario);

// ---- After-run checks --------------------------------------------------------------------------

// How much a check tolerates because of a network that died for good (property 8).
struct Tolerance {
    // Every completion may instead be ConnectionFailed or Flushed; a post may be refused once the
    // side's connection is down (or never came up); placements of operations that did not succeed
    // may be partial (each byte old or new).
    bool connection_may_fail = false;
    // The same, for the ops of some connections only (by index).
    std::vector<bool> conn_may_fail;
    bool may_fail(uint16_t conn) const {
        return connection_may_fail || (conn < conn_may_fail.size() && conn_may_fail[conn]);
    }
};

// The connections that went down or never came up (on either side) may fail.
Tolerance tolerance_for_failed_connections(const Scenario& s, const RunResult& r);

// Every op posted (or refused) as expected; every posted WR completes exactly once with the
// expected status, byte count and immediate; no completion names an unknown WR. [R-CMP-1],
// [R-CMP-2]
std::vector<Violation> check_exactly_once(const Scenario& s, const Expectation& e, const RunResult& r,
                                          Tolerance t = {});

// Final memory of both sides, byte for byte: targets of successful ops hold the source bytes,
// everything else (rest of DATA, all of GUARD) holds the initial pattern. [R-SEC-6], [R-PLC-*]
std::vector<Violation> check_memory(const Scenario& s, const Expectation& e, const RunResult& r, Tolerance t = {});

// Per side, connection and stream: sender completions in posting order, receive completions in
// posting (RSN) order. [R-CMP-1], [R-CMP-2]
std::vector<Violation> check_stream_order(const Scenario& s, const RunResult& r);

// Quiescence was reached (not the time limit) and the last completion came no later than `bound`
// µs after max(faults_until, last post). [R-ARCH-3] "every message completes"
std::vector<Violation> check_settles(const Scenario& s, const RunResult& r, model::Time bound);

// A bound for check_settles derived from the configurations: enough for a path to re-path through
// a full RTO backoff and for RNR retries, with margin.
model::Time settle_bound(const Scenario& s);

// Network dead for good: nothing hangs; every outstanding request failed; both connections report
// failure (ConnectionDown with ConnectionFailed, state Failed or released). [R-CONN-8]
std::vector<Violation> check_dead_network(const Scenario& s, const RunResult& r);

// Every connection came up on both sides and none went down. [R-CONN-1], [R-CONN-4]
std::vector<Violation> check_connections(const Scenario& s, const RunResult& r);

// Handshake faults: a connection either came up or failed cleanly. Quiescence was reached (every
// posted WR and receive completed, none hangs); every connection that went down reported
// ConnectionFailed exactly once and ended Failed; the end came within failure_bound().
// [R-CONN-4], [R-CONN-8]
std::vector<Violation> check_clean_failure(const Scenario& s, const RunResult& r);
model::Time failure_bound(const Scenario& s);

// [R-FS-5] incast: the `s.connections` connections of `receiver`, whose senders start together and
// keep sending, are each granted C / N (at least floor(C / N); the sum is checked by check_step)
// within one FS_INTERVAL plus one RTT of the last of their first packets: in the receiver's shares
// (RunOptions::record_shares) and in a hint delivered to each sender within one more RTT.
std::vector<Violation> check_incast(const Scenario& s, const RunResult& r, Side receiver = Side::B);

// The standard set for a run whose faults stop: connections, exactly-once, memory, order,
// settles, plus the violations found while running.
std::vector<Violation> check_all(const Scenario& s, const RunResult& r);

// ---- Monitors, used while running (also usable on captures) ------------------------------------

// [R-REL-3]: once a sender has seen an ACK acknowledging PSN q of a path (CPSN at or after q, or a
// SACK bit), it never sends q again (retransmission or VOID).
class AckedPsnMonitor {
public:
    // An ACK delivered to `to` (the data sender). `ack` must be a parsed, uncorrupted ACK frame.
    void on_ack_delivered(model::Time now, Side to, const WireInfo& ack);
    // A data frame transmitted by `from`.
    void on_data_sent(model::Time now, Side from, const WireInfo& data);
    // Pair of connection IDs (sender's local ID, peer's ID) learnt from CONNECT / ACCEPT.
    void on_control(Side from, const WireInfo& ctl);
    std::vector<Violation> take();
    void take_into(std::vector<Violation>& out);

private:
    struct PathAcks {
        std::optional<uint32_t> cpsn;  // highest cumulative PSN seen (serial order)
        std::set<uint32_t> sacked;     // SACKed PSNs above cpsn
    };
    // Key: (data sender side, DCID of its data frames = peer's connection ID, path).
    std::map<std::tuple<int, uint32_t, uint16_t>, PathAcks> acks_;
    std::map<std::pair<int, uint32_t>, uint32_t> peer_of_;     // (side, local conn) -> peer conn
    std::map<std::pair<int, uint32_t>, uint32_t> local_scid_;  // (side, scid) seen in CONNECT
    std::vector<Violation> out_;
};

// [R-CC-3], [R-PSN-4] / [R-REL-2], [R-FS-4]: checked after every step of one endpoint.
// `data_paths` are the (DCID, path) pairs on which the step transmitted data packets (new, RETX or
// VOID): only there can in-flight have grown. `local_of_dcid` maps a DCID (the peer's connection
// ID) to the endpoint's own connection ID; unknown DCIDs are skipped.
std::vector<Violation> check_step(model::Time now, Side side, const SimEndpoint& ep,
                                  const std::set<std::pair<uint32_t, uint16_t>>& data_paths,
                                  const std::map<uint32_t, uint32_t>& local_of_dcid);
// One connection: every DCID is taken to name `conn` (if up).
std::vector<Violation> check_step(model::Time now, Side side, const SimEndpoint& ep,
                                  const std::set<std::pair<uint32_t, uint16_t>>& data_paths,
                                  std::optional<uint32_t> conn);

// Serial-number arithmetic [R-PSN-1].
inline bool serial_lt(uint32_t a, uint32_t b) { return a != b && uint32_t(b - a) < 0x80000000u; }
inline bool serial_le(uint32_t a, uint32_t b) { return a == b || serial_lt(a, b); }

std::string format_violations(const std::vector<Violation>& v, size_t max = 50);

}  // namespace mroce::harness
