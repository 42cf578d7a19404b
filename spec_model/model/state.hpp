// Internal state of the model endpoint. Plain structs with standard containers: meant to be read.
#pragma once

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "model/choices.hpp"
#include "model/types.hpp"

namespace mroce::model {

// ---- serial arithmetic [R-PSN-1] ----
inline bool serial_lt(uint32_t a, uint32_t b) { return a != b && uint32_t(b - a) < 0x80000000u; }
inline bool serial_le(uint32_t a, uint32_t b) { return a == b || serial_lt(a, b); }

// ---- memory [R-MEM-1..4] ----
struct Region {
    uint64_t va = 0;
    uint64_t length = 0;
    uint32_t access = 0;
    uint32_t lkey = 0;
    uint32_t rkey = 0;
    uint32_t pd = 0;  // protection domain [R-MEM-5]
    bool valid = true;
    std::vector<uint8_t> bytes;
    // [va, va + len) inside this region, computed without overflow.
    bool contains(uint64_t start, uint64_t len) const {
        if (start < va) return false;
        const uint64_t off = start - va;
        return off <= length && len <= length - off;
    }
};

struct Memory {
    std::vector<Region> regions;
    Region* by_rkey(uint32_t rkey);
    Region* by_lkey(uint32_t lkey);
    // [R-MEM-6] the valid region a key names (an lkey, or an rkey when `remote`) if it holds
    // [va, va + len): where a buffer's bytes are read and written, never a region found by address.
    Region* keyed(uint32_t key, bool remote, uint64_t va, uint64_t len);
    // The first valid region holding [va, va + len): the application's own view of its memory
    // (WriteMemory, read_memory), not the protocol's.
    const Region* containing(uint64_t va, uint64_t len) const;
    Region* containing(uint64_t va, uint64_t len);
};

// ---- the sending side ----

// Everything needed to (re)build one data packet: a segment never changes once it has a PSN
// [R-REL-5], so the packet can be rebuilt from this at any time.
struct Segment {
    ref::Opcode op = ref::Opcode::Send;
    uint16_t stream = 0;
    uint32_t msn = 0;
    uint32_t rsn = 0;
    uint32_t msg_length = 0;
    uint32_t offset = 0;
    uint32_t length = 0;      // payload bytes of this segment
    uint64_t source_va = 0;   // local address of byte 0 of the message's data (Send/Write/Read response)
    uint32_t source_key = 0;  // its region [R-MEM-6]: the WR's lkey, or the READ_REQ's rkey (is_response)
    uint64_t remote_va = 0;
    uint32_t rkey = 0;
    uint32_t immediate = 0;
    bool is_response = false;  // READ_RESP sent by this endpoint as responder
};

enum class PsnState : uint8_t {
    InFlight,  // sent, not yet known received or lost
    Lost,      // declared lost: waits for (re)transmission [R-REL-4]
    RnrWait,   // refused with RNR: waits until rnr_until [R-PLC-9]
    Acked,     // known received [R-REL-3]
};

struct OutstandingPsn {
    Segment seg;
    PsnState state = PsnState::InFlight;
    bool void_mode = false;  // its work request failed: resend as VOID [R-REL-9]
    uint32_t tx_count = 0;
    Time last_tx = 0;
    uint32_t last_tx_ts = 0;  // BTH Timestamp of the last transmission
    Time rnr_until = 0;
    uint32_t rnr_count = 0;  // consecutive RNR NAKs of this PSN
};

struct PathTx {
    PathState state = PathState::Active;
    uint16_t route = 0;         // UDP source port [R-ENC-6]
    uint32_t fresh_routes = 0;  // k of the route generator [R-PATH-5]
    uint32_t consecutive_repaths = 0;
    uint32_t snxt = 0;
    uint32_t suna = 0;
    std::deque<OutstandingPsn> out;  // out[i] holds PSN suna + i
    // congestion control [R-CC-1..5]
    uint32_t cwnd = 0;
    uint32_t ai_count = 0;
    bool in_decrease = false;
    uint32_t decrease_end = 0;
    uint32_t last_ce = 0;
    // RTT [R-RTO-1..3]
    bool have_sample = false;
    uint32_t srtt = 0, rttvar = 0, rto = 0;
    uint32_t rto_current = 0;  // with backoff
    Time last_ack = 0;
    Time last_tx = 0;
    Time last_repath = 0;  // [R-PATH-5]: when this path's route last changed on an RTO
    // tail probe [R-REL-6]
    bool probe_sent_in_period = false;
    bool probe_outstanding = false;
    uint32_t probe_ts = 0;
    // home route [R-PATH-10]: the route before the first RTO re-path of a failure episode,
    // probed every home_interval (doubling up to HOME_PROBE_MAX) until it answers; 0: none.
    uint16_t home_route = 0;
    Time home_next = 0;
    uint32_t home_interval = 0;
    bool home_probe_outstanding = false;
    uint32_t home_probe_ts = 0;
    // statistics
    uint64_t retransmissions = 0, repaths = 0, packets_sent = 0;
    uint64_t home_returns = 0;  // [R-PATH-10]: times the path went back to its home route

    uint32_t in_flight() const {
        uint32_t n = 0;
        for (const auto& o : out) n += o.state == PsnState::InFlight;
        return n;
    }
    OutstandingPsn* find(uint32_t psn) {
        if (!serial_le(suna, psn) || !serial_lt(psn, snxt)) return nullptr;
        return &out[psn - suna];
    }
};

struct WorkRequest {
    WorkOp op = WorkOp::Send;
    uint64_t wr_id = 0;
    uint16_t stream = 0;
    uint32_t msn = 0;
    uint32_t rsn = 0;
    uint64_t local_va = 0;
    uint32_t lkey = 0;  // the region of the local buffer [R-MEM-6]
    uint32_t length = 0;
    uint64_t remote_va = 0;
    uint32_t rkey = 0;
    std::optional<uint32_t> immediate;
    uint32_t total_segments = 0;
    uint32_t next_segment = 0;
    uint32_t segments_acked = 0;
    uint64_t read_bytes = 0;
    bool read_response_seen = false;
    bool delivered = false;
    bool failed = false;
    Status status = Status::Success;
    bool done() const { return delivered || failed; }
};

struct SendStream {
    std::deque<WorkRequest> wrs;  // posting order; popped when completed [R-CMP-1]
    uint32_t next_msn = 0;
    uint32_t next_rsn = 0;
};

struct ResponseJob {  // a Read being answered [R-PLC-4]
    uint16_t stream = 0;
    uint32_t msn = 0;
    uint64_t source_va = 0;
    uint32_t rkey = 0;  // the region the READ_REQ named: the response's bytes come from it [R-MEM-6]
    uint32_t length = 0;
    uint32_t total_segments = 0;
    uint32_t next_segment = 0;
};

// ---- the receiving side ----

struct PathRx {
    uint32_t cpsn = 0;         // [R-HDR-19]
    std::set<uint32_t> above;  // received PSNs after cpsn (absolute values)
    uint32_t ce_count = 0;     // [R-ACK-6]
    uint32_t ts_echo = 0;      // [R-ACK-7]
    uint32_t unacked = 0;      // accepted since the last ACK [R-ACK-3]
    Time first_unacked = 0;
    uint16_t reply_route = 0;  // UDP source port of the latest data/PROBE packet [R-ACK-5]
};

struct PostedRecv {
    uint64_t wr_id = 0;
    uint64_t va = 0;
    uint32_t lkey = 0;  // the region of the buffer [R-MEM-6]
    uint32_t length = 0;
    bool message_seen = false;  // first packet of its message accepted
    uint32_t msg_length = 0;
    bool is_write_imm = false;
    uint32_t immediate = 0;
    uint64_t bytes = 0;
    bool done = false;       // fully placed, or failed
    bool completed = false;  // completion emitted [R-CMP-2]
    Status status = Status::Success;
};

struct RecvStream {
    std::map<uint32_t, PostedRecv> recvs;  // by RSN; kept after completion (the model never forgets)
    uint32_t next_post_rsn = 0;
    uint32_t next_complete_rsn = 0;
    std::set<uint32_t> canceled;  // RSNs voided by the sender before their receive was posted [R-REL-9]
};

struct Connection {
    uint32_t id = 0;       // local connection ID (SCID we chose)
    uint32_t peer_id = 0;  // the peer's connection ID (our DCID)
    Address peer;
    bool initiator = false;
    ConnState state = ConnState::Connecting;
    uint16_t paths = 0, streams = 0, max_payload = 0, window_cap = 0;
    uint32_t local_isn = 0, peer_isn = 0;
    uint32_t pd = 0;  // protection domain: the regions its posts and its peer may use [R-MEM-5]

    std::vector<PathTx> tx;
    std::vector<PathRx> rx;
    std::vector<SendStream> sstreams;
    std::vector<RecvStream> rstreams;
    std::deque<ResponseJob> responses;
    uint32_t rr_slot = 0;    // next stream slot of the round robin (slot == streams: responses)
    uint16_t last_path = 0;  // path of the previous new segment [R-PATH-8]
    bool any_new_segment = false;

    // rate ceiling [R-CC-6], [R-CC-7]
    uint32_t ceiling_mbps = 0;
    Time hint_time = 0;
    int64_t credit_bits = 0;
    Time credit_time = 0;

    // liveness [R-CONN-4], [R-CONN-6], [R-CONN-8]
    Time last_rx = 0;
    bool waiting = false;
    Time waiting_since = 0;
    Time last_keepalive = 0;
    bool keepalive_outstanding = false;
    uint32_t keepalive_ts = 0;
    uint32_t connect_tries = 0;
    Time next_connect = 0;
    std::vector<uint8_t> accept_frame;  // resent on a duplicate CONNECT

    // closing [R-CONN-7]
    bool close_requested = false;
    bool abort = false;
    bool disconnect_sent = false;
    Time next_disconnect = 0;

    // receiver's fair share of this connection [R-FS-*]
    bool fs_active = false;
    uint64_t bits_in_interval = 0;
    Time last_data = 0;
    uint32_t demand = 0;
    uint32_t share = 0;

    uint32_t cwnd_max() const { return std::min<uint32_t>(256, window_cap); }
    // [R-CC-1]: about INIT_WINDOW = 64 packets per connection in all, at most 16 per path.
    uint32_t init_cwnd() const {
        return std::max<uint32_t>(1, std::min<uint32_t>({16, window_cap, paths ? 64u / paths : 16u}));
    }
    int64_t credit_max() const { return int64_t(8) * 16 * max_payload; }
};

struct EndpointState {
    Config cfg;
    std::shared_ptr<Choices> choices;
    Time now = 0;
    Counters counters;
    Memory memory;
    std::map<uint32_t, Connection> conns;
    uint32_t next_conn_id = 1;
    Time fs_next = 0;  // next fair-share computation (0: none armed)
    bool canary_used = false;
    std::vector<Action> out;

    // endpoint.cpp
    void emit(Action a) { out.push_back(std::move(a)); }
    ref::Packet base_packet(const Connection& c, ref::Opcode op, uint16_t path, uint16_t route, bool data) const;
    void transmit(const Connection& c, const ref::Packet& p, std::span<const uint8_t> payload = {});
    std::optional<Time> next_deadline() const;
    void fire_due_timers();
    void pump_all();
    void fail_connection(Connection& c, Status wr_status);
    void release_closed(Connection& c);

    // sender.cpp
    void pump(Connection& c);
    void on_ack(Connection& c, uint16_t path, const ref::Packet& ack);
    void on_nak(Connection& c, uint16_t path, const ref::Packet& nak);
    void path_timers(Connection& c, uint16_t path);
    void rto_and_tail_probe(Connection& c, uint16_t path, Time earliest_tx);
    bool home_probe_allowed(const PathTx& t) const;
    void home_requalified(PathTx& t) const;
    void send_home_probe(Connection& c, uint16_t path);
    std::optional<Time> path_deadline(const Connection& c, uint16_t path) const;
    std::vector<uint16_t> path_candidates(const Connection& c) const;
    void complete_sends(Connection& c, uint16_t stream);
    void fail_work_request(Connection& c, uint16_t stream, uint32_t msn, Status status);
    void send_probe(Connection& c, uint16_t path);
    void refresh_credit(Connection& c);
    bool rate_limited(const Connection& c) const;
    bool has_pending_new_data(const Connection& c) const;
    std::optional<Time> credit_deadline(const Connection& c) const;
    bool has_outstanding_psns(const Connection& c) const;

    // receiver.cpp
    void on_data(Connection& c, uint16_t path, const ref::Packet& p, std::span<const uint8_t> payload);
    void on_probe(Connection& c, uint16_t path, const ref::Packet& p);
    void send_ack(Connection& c, uint16_t path);
    void complete_recvs(Connection& c, uint16_t stream);
    void flush_recvs(Connection& c);

    // fair_share.cpp
    void fs_compute();
    void fs_on_data(Connection& c, uint32_t payload_len);
    void fs_waterfill();
};

}  // namespace mroce::model
