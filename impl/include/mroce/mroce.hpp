// mroce: the public API of the MRoCE transport (multipath RDMA over lossy Ethernet, SPEC.md).
//
// The shape follows ibverbs / rdma_cm, so RDMA programmers will recognise it:
//
//   ibverbs / rdma_cm                     mroce
//   ----------------------------------    ------------------------------------------------------
//   ibv_open_device                       Device::open(config, io, clock)   (with PD 0, the default)
//   ibv_alloc_pd / ibv_dealloc_pd         Device::alloc_pd(&pd) / Device::dealloc_pd(pd)
//   ibv_reg_mr / ibv_reg_mr_iova          Device::reg_mr(addr, length, access, &mr, iova, pd)
//   ibv_dereg_mr                          Device::dereg_mr(lkey)
//   rdma_connect / rdma_listen            Device::connect(peer, &conn, offer, pd) / Device::listen(on, pd)
//   rdma_get_cm_event                     Device::poll_events(events, n)   (Up / Down)
//   ibv_post_send (SEND, RDMA_WRITE,      Device::post_send / post_write / post_write_imm /
//     RDMA_WRITE_WITH_IMM, RDMA_READ)       post_read
//   ibv_post_recv                         Device::post_recv
//   ibv_poll_cq                           Device::poll_cq(completions, n)
//   rdma_disconnect                       Device::close(conn, abort)
//
// Differences from ibverbs that matter:
//   * A connection carries S independent *streams* (ordered message sequences, completions in posting
//     order per stream) and P *paths* (sequence spaces sprayed over ECMP routes). Each post names its
//     stream. S and P are negotiated at connect time (the minimum of both ends' offers).
//   * There is one SGE per work request (addr, length, lkey). Addresses in posts and remote addresses
//     are in the region's iova space: a region registered without an iova uses the pointer value,
//     with an iova (as ibv_reg_mr_iova) the region's byte 0 is at `iova` locally and for the peer.
//   * Listening is automatic: a device with listening on accepts every CONNECT it can (the
//     negotiated values are the minimum of both offers) and reports ConnEvent Up; there is no
//     separate accept call. connect() returns the connection ID at once; Up (or Down) follows.
//   * The device does no I/O and reads no clock by itself: it is given a PacketIo (packet bursts) and a
//     Clock (microseconds). progress() is the poll loop body: the frames waiting (in bursts), the
//     timers that fell due, then transmissions.
//   * Every other call is an event at the clock's current time, with the executable model's exact
//     semantics: the timers due before it fire at their own times, then it acts, then timers due now,
//     then it sends what became sendable. A test harness can therefore drive the device in virtual
//     time, one event at a time, in lockstep with the model: set a ManualClock, call input(frame) /
//     advance() (mroce/testing.hpp's DeviceHooks: harness hooks, not for applications) / post_*(),
//     collect the frames handed to the PacketIo (io::CaptureIo) and the
//     completions from poll_cq, and ask next_deadline() when to come back. progress() has the same
//     semantics for frames that carry their arrival time (PacketBuf::rx_time, a NIC rx timestamp).
//     Frames without one arrived at an unknown time since the last poll: they go before the timers
//     that fell due meanwhile, which then fire once at the current time, so that a late host does
//     not mistake its own delay for a silent network. Once such frames have been seen, the other
//     calls (post_*, ...) fire no timer at all: frames may wait unread, and only progress() reads
//     them before it lets a timer decide (the timers fire, late, at the next progress()).
//
// Threading: a Device is single-threaded (run one per core). No call allocates memory, throws or takes
// a lock on the data path (posts, progress, input, poll); reg_mr and connection setup may allocate.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>

#include "io/packet_io.hpp"

namespace mroce {

using Time = uint64_t;  // microseconds

// Completion status [R-CMP-4].
enum class Status : uint8_t {
  Success,
  LocalLength,       // the receive buffer was shorter than the Send
  RemoteAccess,      // the peer refused the key, the bounds or the access right
  RemoteInvalid,     // the peer refused the request as malformed for this connection
  RemoteLength,      // the peer's receive buffer was too short
  RnrRetryExceeded,  // the peer never posted the receive
  ConnectionFailed,  // a work request outstanding when the peer was found unreachable [R-CONN-8]
  Flushed,           // a receive discarded by a failed or closed connection, or a work request
                     // discarded by a close or abort
  Canceled,          // a receive whose matching message the sender abandoned [R-REL-9]
  LocalProtection,   // a local buffer's region was deregistered under its work request or receive
                     // [R-MEM-6]
};
const char* status_name(Status s) noexcept;

enum class WcOpcode : uint8_t { Send, Write, WriteImm, Read, Recv };
const char* wc_opcode_name(WcOpcode op) noexcept;

// Immediate error returns of calls (no completion follows a refused post) [R-MEM-4].
enum class Result : int8_t {
  Ok = 0,
  NotConnected = -1,     // unknown connection, not established, or closing
  InvalidStream = -2,    // stream >= the negotiated stream count
  MessageTooLong = -3,   // length > 2^31 [R-HDR-12]
  LocalProtection = -4,  // buffer not inside the lkey's region, or LocalWrite missing [R-MEM-4]
  NoResources = -5,      // a preallocated pool (work requests, receives, connections, ...) is empty
  InvalidArgument = -6,
  UnknownKey = -7,  // dereg_mr of a key that names no region
  Busy = -8,        // dealloc_pd of a protection domain that a region, connection or listen() still uses
};
const char* result_name(Result r) noexcept;

// Memory access rights [R-MEM-1].
namespace access {
inline constexpr uint32_t kLocalWrite = 1;
inline constexpr uint32_t kRemoteWrite = 2;
inline constexpr uint32_t kRemoteRead = 4;
}  // namespace access

struct Address {
  std::array<uint8_t, 6> mac{};
  bool ipv6 = false;
  std::array<uint8_t, 16> ip{};  // IPv4 in the first 4 bytes, the rest zero
  bool operator==(const Address&) const = default;
};

// What this end offers for a connection [R-HDR-26]; the negotiated value is the minimum of both
// ends' offers [R-CONN-3].
struct ConnParams {
  uint16_t paths = 4;           // 1..256
  uint16_t streams = 4;         // 1..65535
  uint16_t max_payload = 4096;  // 256..8192, multiple of 64
  uint16_t window_cap = 256;    // 1..256
};

struct DeviceConfig {
  Address self;
  uint16_t udp_port = 4793;  // [R-ENC-5]
  uint8_t dscp_data = 26;    // [R-ENC-10]
  uint8_t dscp_control = 48;
  uint32_t capacity_mbps = 100000;  // inbound capacity C [R-FS-1]
  bool listening = true;            // accept CONNECTs (REJECT reason 1 otherwise)
  // ISNs and connection IDs are unpredictable [R-CONN-2]: drawn from a per-device secret, itself from
  // the OS (random_seed 0) or derived from random_seed (reproducible runs). The two options below
  // are for tests and harnesses only: a fixed ISN for every connection, and counting IDs from a base.
  uint64_t random_seed = 0;
  std::optional<uint32_t> isn;            // test option: the ISN of every connection
  std::optional<uint32_t> first_conn_id;  // test option: IDs allocated upwards from here
  ConnParams offer;                       // offered to every peer (connect() may override)
  // Timers and limits, SPEC appendix A (µs unless noted).
  uint32_t ack_every = 4;  // coalescing choice [R-ACK-3]
  uint32_t ack_delay_us = 8;
  uint32_t rto_init_us = 1000;
  uint32_t rto_min_us = 100;
  uint32_t rto_max_us = 6250;  // [R-RTO-3]: at most peer_timeout_us / 8
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
  uint16_t rnr_detail = 0;  // Detail put in this end's RNR NAKs (10 µs units)
  // Capacities, preallocated at open(). Exhaustion gives Result::NoResources on posts and connects
  // (and REJECT reason 2 to a CONNECT), never a crash. One connection's share of the receives and
  // work requests, and one source's unused connections, are bounded too (the last fields below).
  uint32_t max_connections = 1024;
  uint32_t max_work_requests = 65536;  // posted sends/writes/reads not yet completed, + read responses
  uint32_t max_receives = 65536;       // posted receives not yet completed
  uint32_t max_window_blocks = 1024;   // paths with outstanding PSNs at one time (8 KiB each)
  uint32_t max_regions = 4096;         // memory regions registered at one time (at most 2^24)
  uint32_t max_peers = 1024;           // distinct peer addresses
  uint32_t cq_size = 65536;            // completions waiting for poll_cq
  uint32_t event_queue_size = 4096;    // connection events waiting for poll_events
  uint16_t burst = 32;                 // frames per rx/tx burst

  // Fair shares of max_receives and max_work_requests [R-SEC-11], so that one peer cannot starve the
  // other connections. A connection's receives: its posted receives not yet completed, the RSNs its
  // peer canceled before they were posted (VOIDs, [R-REL-9]; at most half the share) and the receives
  // kept after failing LocalLength. Its work requests: its posted ones not yet completed and its Read
  // responses (PSN records may keep a completed one a little longer). At the limit a local post
  // returns NoResources for that connection only, and the peer's VOID of a receive not yet posted, or
  // its READ_REQ, gets NAK RNR. 0: an eighth of the pool (at least 16, at most the pool); otherwise
  // at most the pool (Device::open refuses more).
  uint32_t max_receives_per_conn = 0;
  uint32_t max_work_requests_per_conn = 0;
  // Responder connections one source address may hold before its initiator has sent anything on them
  // (a CONNECT beyond gets REJECT reason 2) [R-SEC-12]: a CONNECT flood from one host leaves room for
  // the others. 0: half of max_connections (at least 1); otherwise at most max_connections.
  uint32_t max_unconfirmed_per_source = 0;
};

// A registered memory region [R-MEM-1].
struct MemoryRegion {
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  uint64_t iova = 0;  // address of byte 0 in posts and RETHs
  uint64_t length = 0;
};

// One scatter/gather element: `length` bytes at iova `addr` of the region named by `lkey`.
struct Sge {
  uint64_t addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

struct WorkCompletion {
  uint64_t wr_id = 0;
  uint32_t conn = 0;
  uint16_t stream = 0;
  WcOpcode opcode = WcOpcode::Send;
  Status status = Status::Success;
  uint32_t byte_len = 0;  // bytes transferred (0 on error)
  bool has_imm = false;   // Recv completion of a Write-with-immediate
  uint32_t imm = 0;
};

struct ConnEvent {
  enum class Kind : uint8_t { Up, Down };
  Kind kind = Kind::Up;
  uint32_t conn = 0;
  Address peer;
  bool initiator = false;
  Status status = Status::Success;  // Down: Success for a clean close, ConnectionFailed otherwise
};

enum class PathState : uint8_t { Active, Suspect, Failed };  // [R-PATH-2]
enum class ConnState : uint8_t { Connecting, Established, Closing, Closed, Failed };
const char* path_state_name(PathState s) noexcept;
const char* conn_state_name(ConnState s) noexcept;

// Retransmissions by the rule that declared their PSN lost (engine only, for diagnosis; the first five
// sum to the retransmission count), and how many of them proved unnecessary.
struct RetransmissionCauses {
  uint64_t gap = 0;    // declared lost by an ACK: the gap rule L1 or the time rule L2 [R-REL-4]
  uint64_t probe = 0;  // declared lost by the ACK that answered a tail probe [R-REL-6]
  uint64_t rto = 0;    // declared lost by an RTO expiry [R-REL-7]
  uint64_t rnr = 0;    // retried once an RNR wait ended [R-PLC-9]
  uint64_t nak = 0;    // a VOID sent for a NAKed PSN [R-REL-9]
  // Judged after the fact (the Eifel idea): the first ACK to cover a retransmitted PSN echoes a
  // timestamp [R-ACK-7] older than the retransmission, so the earlier copy had arrived (a path's
  // packets arrive in order, A-13). A lower bound: when both copies arrive before the receiver
  // sends its ACK, or the first copy's ACKs are all lost, the echo names the retransmission.
  uint64_t spurious = 0;
  uint64_t total() const noexcept { return gap + probe + rto + rnr + nak; }
};

// The sending side of one path [R-REL-1], [R-CC-1].
struct PathInfo {
  PathState state = PathState::Active;
  uint16_t route = 0;  // UDP source port
  uint32_t snxt = 0, suna = 0, in_flight = 0, cwnd = 0;
  uint32_t srtt = 0, rto = 0;  // rto includes the backoff
  uint64_t retransmissions = 0, repaths = 0, packets_sent = 0;
  uint64_t home_returns = 0;  // times it went back to its home route [R-PATH-10]
  RetransmissionCauses retx_by_cause;
  // The connection's rate ceiling and credit, the same on every path of it: the ceiling in force
  // in Mb/s (0: unlimited) [R-CC-6], and the credit in bits at the last event [R-CC-7].
  uint32_t rate_ceiling_mbps = 0;
  int64_t credit_bits = 0;
};

// Drop, refusal and activity counters [R-VAL-3], [R-SEC-*]; the first block mirrors the model's.
struct Counters {
  std::array<uint64_t, 19> decode_errors{};  // by error kind, SPEC section 4 order (Truncated = 0)
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
  // Engine only: resource limits met on the data path.
  uint64_t tx_no_buffer = 0;        // frames not sent for lack of a tx buffer
  uint64_t window_block_waits = 0;  // a path could not start a window for lack of a block
  uint64_t cq_overflow = 0;         // completions lost because the CQ was full
  uint64_t event_overflow = 0;
  uint64_t rejects_no_resources = 0;
  uint64_t rnr_receive_limit = 0;    // VOIDs refused with RNR: no room to remember the cancellation [R-SEC-11]
  uint64_t rnr_response_limit = 0;   // READ_REQs refused with RNR: the connection's share is used [R-SEC-11]
  uint64_t rejects_unconfirmed = 0;  // CONNECTs refused (REJECT 2): the source's unconfirmed bound [R-SEC-12]
  uint64_t rx_frames = 0;
  uint64_t tx_frames = 0;
  RetransmissionCauses retx_by_cause;  // of `retransmissions`, every path of every connection
};

// Sizes of the engine's state, for capacity planning [R-CONN-5].
struct MemoryUsage {
  uint64_t preallocated_bytes = 0;                   // pools sized at open()
  uint64_t connection_bytes = 0;                     // per-connection state allocated at setup, all connections
  uint32_t connections = 0;                          // slots in use (any state)
  static uint64_t connection_base_bytes() noexcept;  // fixed part of one connection
  static uint64_t per_path_bytes() noexcept;         // added per negotiated path
  static uint64_t per_stream_bytes() noexcept;       // added per negotiated stream
};

namespace engine {
class Engine;
}
namespace testing {
struct DeviceHooks;  // mroce/testing.hpp
}

class Device {
 public:
  // Opens a device. `io` and `clock` must outlive it. Returns nullptr (and *err) on a bad config or
  // when the pools cannot be allocated.
  static std::unique_ptr<Device> open(const DeviceConfig& config, io::PacketIo& io, const io::Clock& clock,
                                      Result* err = nullptr);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // ---- memory [R-MEM-1..4] ----
  // Registers [addr, addr + length) in protection domain `pd` with the given access rights. Byte 0 has
  // iova `iova` (the pointer value when not given). The keys are opaque and unpredictable [R-MEM-1]
  // (never 0): derived from the device's secret (DeviceConfig::random_seed), no key says anything
  // about another. A peer learns an rkey only from the application (e.g. in a Send). At most
  // max_regions live at a time; deregistration frees the slot for another registration.
  Result reg_mr(void* addr, uint64_t length, uint32_t access, MemoryRegion* out,
                std::optional<uint64_t> iova = std::nullopt, uint32_t pd = 0);
  // The keys are not honoured afterwards, not even once the region's slot is reused [R-MEM-2].
  Result dereg_mr(uint32_t lkey);
  // Protection domains [R-MEM-5], as ibverbs PDs: a region is usable only by the connections of its
  // PD, locally (lkeys in posts) and remotely (rkeys in the peer's requests, refused with
  // RemoteAccess otherwise). PD 0 always exists and is the default of reg_mr, connect and listen.
  Result alloc_pd(uint32_t* pd);
  Result dealloc_pd(uint32_t pd);  // Busy while a region, a connection or listen() uses it

  // ---- connections [R-CONN-*] ----
  // Starts a connection to `peer` and returns its local ID at once; ConnEvent Up (or Down) follows.
  // The connection is in protection domain `pd` [R-MEM-5].
  Result connect(const Address& peer, uint32_t* conn, const ConnParams* offer = nullptr, uint32_t pd = 0);
  // Accepts CONNECTs (on) or refuses them; the connections accepted from now are in `pd` [R-MEM-5].
  Result listen(bool on, uint32_t pd = 0);
  // Graceful close: refuses new posts, waits for outstanding ones, then DISCONNECT. abort: flushes now.
  Result close(uint32_t conn, bool abort = false);

  // ---- work requests ----
  // Each returns Ok, or an error with no completion to follow.
  Result post_send(uint32_t conn, uint16_t stream, uint64_t wr_id, const Sge& local);
  Result post_write(uint32_t conn, uint16_t stream, uint64_t wr_id, const Sge& local, uint64_t remote_addr,
                    uint32_t rkey);
  Result post_write_imm(uint32_t conn, uint16_t stream, uint64_t wr_id, const Sge& local, uint64_t remote_addr,
                        uint32_t rkey, uint32_t imm);
  Result post_read(uint32_t conn, uint16_t stream, uint64_t wr_id, const Sge& local_sink, uint64_t remote_addr,
                   uint32_t rkey);
  Result post_recv(uint32_t conn, uint16_t stream, uint64_t wr_id, const Sge& buffer);

  // ---- completions and events ----
  int poll_cq(WorkCompletion* out, int max) noexcept;
  int poll_events(ConnEvent* out, int max) noexcept;

  // ---- progress ----
  // Poll-loop body, at clock.now() read once: the frames waiting (rx bursts of config.burst, up to
  // 1024 frames, each one event at its rx_time, or at now when it has none; the timers due by a
  // stamped arrival fire first), then the timers due by now, then transmissions. Returns the number
  // of frames received (call again while it is non-zero).
  int progress() noexcept;
  // The earliest pending timer (exact), if any.
  std::optional<Time> next_deadline() const noexcept;

  // ---- observation ----
  std::optional<ConnState> connection_state(uint32_t conn) const noexcept;
  std::optional<PathInfo> path_info(uint32_t conn, uint16_t path) const noexcept;
  uint16_t path_count(uint32_t conn) const noexcept;  // negotiated; 0 if unknown / not yet
  uint16_t stream_count(uint32_t conn) const noexcept;
  uint16_t max_payload(uint32_t conn) const noexcept;
  // Fair-share grants of this device as a receiver [R-FS-4]: writes up to `max` (conn, share) pairs.
  int rate_shares(uint32_t* conns, uint32_t* shares, int max) const noexcept;
  size_t outstanding_work(uint32_t conn) const noexcept;  // posted, not completed (sends + receives)
  // Local connection IDs (any state), ascending; writes up to max, returns how many exist.
  size_t connections(uint32_t* out, size_t max) const noexcept;
  // Host pointer of [iova, iova + len) in the first valid region containing it, or nullptr.
  uint8_t* resolve(uint64_t iova, uint64_t len) const noexcept;
  const Counters& counters() const noexcept;
  MemoryUsage memory_usage() const noexcept;
  const DeviceConfig& config() const noexcept;

 private:
  friend struct testing::DeviceHooks;
  explicit Device(std::unique_ptr<engine::Engine> e);
  std::unique_ptr<engine::Engine> e_;
};

}  // namespace mroce
