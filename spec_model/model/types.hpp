// Events, actions and configuration of the executable model (SPEC.md is the authority).
//
// The model is a pure state machine: `Endpoint::handle(now, event) -> actions`. Time is an input
// (virtual microseconds); there is no wall clock and no hidden randomness. Packets leave the model
// as frames encoded by the reference codec, and enter it as frames.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "codec/ref_codec.hpp"

namespace mroce::model {

using Time = uint64_t;  // virtual microseconds since the start of a run [R-CONV-5]

// [R-CMP-4]
enum class Status : uint8_t {
    Success,
    LocalLength,
    RemoteAccess,
    RemoteInvalid,
    RemoteLength,
    RnrRetryExceeded,
    ConnectionFailed,
    Flushed,
    Canceled,
    LocalProtection,  // a local buffer's region was deregistered under its work request [R-MEM-6]
};
std::string_view status_name(Status s);

enum class WorkOp : uint8_t { Send, Write, WriteImm, Read, Recv };
std::string_view work_op_name(WorkOp op);

// [R-MEM-1] access rights
namespace access {
inline constexpr uint32_t kLocalWrite = 1;
inline constexpr uint32_t kRemoteWrite = 2;
inline constexpr uint32_t kRemoteRead = 4;
}  // namespace access

struct Address {
    std::array<uint8_t, 6> mac{};
    bool ipv6 = false;
    std::array<uint8_t, 16> ip{};  // IPv4 in the first 4 bytes
    bool operator==(const Address&) const = default;
};

// One endpoint's configuration. Defaults are SPEC appendix A.
struct Config {
    Address self;
    uint16_t udp_port = ref::kDefaultUdpPort;  // [R-ENC-5]
    uint8_t dscp_data = 26;                    // [R-ENC-10]
    uint8_t dscp_control = 48;
    uint32_t capacity_mbps = 100000;  // [R-FS-1]
    bool listening = true;            // accept CONNECTs (REJECT reason 1 otherwise)
    uint32_t listen_pd = 0;           // protection domain of accepted connections [R-MEM-5]
    uint32_t first_conn_id = 1;       // SCIDs are allocated upwards from here (deterministic)
    uint32_t isn = 0;                 // ISN of every connection of this endpoint [R-CONN-2]
    // Offers [R-HDR-26], negotiated by minimum [R-CONN-3].
    uint16_t path_count = 4;
    uint16_t stream_count = 4;
    uint16_t max_payload = 4096;
    uint16_t window_cap = 256;
    // Timers and limits (µs unless noted), appendix A.
    uint32_t ack_every = 4;  // default coalescing choice [R-ACK-3]
    uint32_t ack_delay_us = 8;
    uint32_t rto_init_us = 1000;
    uint32_t rto_min_us = 100;
    uint32_t rto_max_us = 6250;  // [R-RTO-3]: at most PEER_TIMEOUT / 8
    uint32_t pto_min_us = 20;
    uint32_t home_probe_us = 200;      // HOME_PROBE: first home-route probe after a re-path [R-PATH-10]
    uint32_t home_probe_max_us = 400;  // HOME_PROBE_MAX: the doubling interval's cap [R-PATH-10]
    uint32_t fs_interval_us = 50;
    uint32_t hint_ttl_us = 1000;
    uint32_t peer_timeout_us = 50000;
    uint32_t keepalive_us = 100000;
    uint32_t connect_retry_us = 1000;
    uint32_t connect_tries = 8;
    uint32_t rnr_default_us = 100;
    uint32_t rnr_retry_max = 7;
    uint16_t rnr_detail = 0;   // Detail this endpoint puts in its RNR NAKs (10 µs units)
    uint32_t recv_max = 1024;  // receives a stream may have posted ahead [R-PLC-7]

    // Test-only canary: a deliberately broken model that never retransmits the first PSN it declares
    // lost (it pretends that PSN was acknowledged). The properties must catch it.
    bool canary_skip_one_retransmission = false;
};

// ---- Events ----------------------------------------------------------------------------------

struct RegisterMemory {  // -> MemoryRegistered
    uint64_t va = 0;
    uint64_t length = 0;
    uint32_t access = 0;
    uint32_t pd = 0;  // protection domain [R-MEM-5]
    // The keys are the implementation's choice [R-MEM-1]: a driver in step with an
    // implementation passes the keys it issued. Without them the model makes its own.
    std::optional<uint32_t> lkey{}, rkey{};
};
struct DeregisterMemory {
    uint32_t lkey = 0;
};
struct WriteMemory {  // the application writes its own (registered) memory
    uint64_t va = 0;
    std::vector<uint8_t> bytes;
};
struct Connect {  // -> ConnectionUp or ConnectionDown
    Address peer;
    uint32_t pd = 0;  // protection domain of the connection [R-MEM-5]
};
struct PostSend {
    uint32_t conn = 0;
    uint16_t stream = 0;
    uint64_t wr_id = 0;
    uint64_t va = 0;
    uint32_t length = 0;
    uint32_t lkey = 0;
};
struct PostWrite {
    uint32_t conn = 0;
    uint16_t stream = 0;
    uint64_t wr_id = 0;
    uint64_t va = 0;
    uint32_t length = 0;
    uint32_t lkey = 0;
    uint64_t remote_va = 0;
    uint32_t rkey = 0;
    std::optional<uint32_t> immediate;  // Write-with-immediate when set
};
struct PostRead {
    uint32_t conn = 0;
    uint16_t stream = 0;
    uint64_t wr_id = 0;
    uint64_t va = 0;  // local sink
    uint32_t length = 0;
    uint32_t lkey = 0;
    uint64_t remote_va = 0;
    uint32_t rkey = 0;
};
struct PostRecv {
    uint32_t conn = 0;
    uint16_t stream = 0;
    uint64_t wr_id = 0;
    uint64_t va = 0;
    uint32_t length = 0;
    uint32_t lkey = 0;
};
struct Close {
    uint32_t conn = 0;
    bool abort = false;  // reason 5 instead of a graceful close [R-CONN-7]
};
struct Receive {  // a frame arrives from the network
    std::vector<uint8_t> frame;
};
struct AdvanceTime {};  // only moves the clock: timers due at `now` fire

using Event = std::variant<RegisterMemory, DeregisterMemory, WriteMemory, Connect, PostSend, PostWrite, PostRead,
                           PostRecv, Close, Receive, AdvanceTime>;

// ---- Actions ---------------------------------------------------------------------------------

struct Transmit {
    std::vector<uint8_t> frame;  // encoded by the reference codec
    ref::Packet packet;          // the fields the frame was built from (payload not included)
    Address to;
};
struct Completion {
    uint32_t conn = 0;
    uint16_t stream = 0;
    uint64_t wr_id = 0;
    WorkOp op = WorkOp::Send;
    Status status = Status::Success;
    uint32_t byte_len = 0;
    std::optional<uint32_t> immediate;
    bool operator==(const Completion&) const = default;
};
struct MemoryRegistered {
    uint32_t lkey = 0;
    uint32_t rkey = 0;
};
struct PostRejected {  // [R-MEM-4]: refused at post time, no completion follows
    uint64_t wr_id = 0;
    std::string reason;
};
struct ConnectionUp {
    uint32_t conn = 0;  // local connection ID (the handle for posts)
    Address peer;
    bool initiator = false;
};
struct ConnectionDown {
    uint32_t conn = 0;
    Status status = Status::Success;  // Success for a clean close, ConnectionFailed otherwise
};
struct Wakeup {  // call handle(AdvanceTime) at this time (the model's earliest timer)
    Time at = 0;
};

using Action = std::variant<Transmit, Completion, MemoryRegistered, PostRejected, ConnectionUp, ConnectionDown, Wakeup>;

// ---- Observable state ------------------------------------------------------------------------

enum class PathState : uint8_t { Active, Suspect, Failed };  // [R-PATH-2]
std::string_view path_state_name(PathState s);

enum class ConnState : uint8_t { Connecting, Established, Closing, Closed, Failed };
std::string_view conn_state_name(ConnState s);

struct PathView {  // what the spec makes observable about one path of the sending side
    PathState state = PathState::Active;
    uint16_t route = 0;  // UDP source port
    uint32_t snxt = 0, suna = 0, in_flight = 0, cwnd = 0;
    uint32_t srtt = 0, rto = 0;
    uint64_t retransmissions = 0, repaths = 0;
    uint64_t packets_sent = 0;
    uint64_t home_returns = 0;  // returns to the home route [R-PATH-10]
};

// Drop and refusal counters [R-VAL-3], [R-SEC-*].
struct Counters {
    std::array<uint64_t, 19> decode_errors{};  // indexed by ref::ErrorKind
    uint64_t unknown_dcid = 0;
    uint64_t bad_path = 0;
    uint64_t out_of_window = 0;
    uint64_t duplicates = 0;
    uint64_t naks_sent = 0;
    uint64_t naks_received = 0;
    uint64_t acks_sent = 0;
    uint64_t data_sent = 0;
    uint64_t retransmissions = 0;
    uint64_t voids_sent = 0;
    uint64_t probes_sent = 0;
    uint64_t home_returns = 0;  // paths moved back to their home route [R-PATH-10]
    uint64_t repaths = 0;
    uint64_t placed_bytes = 0;
    uint64_t ce_marks_seen = 0;
    uint64_t cwnd_decreases = 0;
    uint64_t invalid_acks = 0;        // ACKs/NAKs whose CPSN/PSN was never sent [R-ACK-10]
    uint64_t sack_beyond_snxt = 0;    // ACKs with SACK bits for unsent PSNs, ignored [R-ACK-10]
    uint64_t foreign_source = 0;      // packets of a connection from another address [R-SEC-10]
    uint64_t bad_accepts = 0;         // ACCEPTs above this end's offer [R-CONN-3]
    uint64_t remote_access_naks = 0;  // requests refused with RemoteAccess: key, PD, bounds, right [R-MEM-3]
};

}  // namespace mroce::model
