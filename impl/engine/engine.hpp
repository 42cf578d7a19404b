// The MRoCE protocol engine (internal). SPEC.md is the authority; the executable model in spec_model/
// is the behavioural oracle this engine matches event for event (it is never included here: the two
// are compared from outside). Layout of the code:
//   engine.cpp    events and the step machinery (timers, pump, tx batching), connections, memory, API
//   sender.cpp    segmentation, spraying, ACK/NAK processing, loss detection, RTO/probes, paths, CC
//   receiver.cpp  receive window, content checks, placement, ACK generation, receive completions
//   fair_share.cpp  the receiver's rate hints
//
// Processing model (the same as the model's, so that both emit the same packets in the same order):
// every event runs at a time `now`: first the timers due before it fire at their own times, each
// followed by a pump of what became sendable; then the event; then timers due at `now`; then a pump.
// "Pump" only visits connections touched since the last pump (the model pumps every connection, but
// one untouched since its last pump has nothing to send; the one piece of state a pump changes even
// then, the credit counter, is path-independent and refreshed lazily, see refresh_credit).
//
// Data path: no heap allocation, no exceptions, no locks. Outstanding PSNs live in per-path window
// blocks of 256 records taken from a pool while the path has outstanding data; work requests, read
// responses and posted receives come from pools; each connection has one entry in a timer wheel that
// always holds its exact next deadline.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "codec/fast_codec.hpp"
#include "core/bit_span.hpp"
#include "core/hash_map.hpp"
#include "core/pool.hpp"
#include "core/sack_bitmap.hpp"
#include "core/sentinel.hpp"
#include "core/serial.hpp"
#include "core/timer_wheel.hpp"
#include "engine/secrets.hpp"
#include "io/packet_io.hpp"
#include "mroce/mroce.hpp"

namespace mroce::engine {

using core::BitSpan;
using core::HashMap;
using core::kNever;
using core::kNone;
using core::Pool;
using core::SackBitmap256;
using core::TimerWheel;
using core::serial_le;
using core::serial_lt;

inline constexpr uint32_t kMaxMessage = 0x80000000u;  // [R-HDR-12]
inline constexpr uint16_t kNil16 = 0xFFFF;
inline constexpr int kRxBudget = 1024;  // frames per progress() call before the timers run

// ---- memory [R-MEM-1..4] --------------------------------------------------------------------------

struct Region {
  uint8_t* host = nullptr;
  uint64_t iova = 0;
  uint64_t length = 0;
  uint32_t access = 0;
  uint32_t lkey = 0, rkey = 0;
  bool valid = false;
  // [start, start + len) inside the region, without overflow.
  bool contains(uint64_t start, uint64_t len) const noexcept {
    if (start < iova) return false;
    const uint64_t off = start - iova;
    return off <= length && len <= length - off;
  }
};

// ---- the sending side -----------------------------------------------------------------------------

enum MsgFlag : uint8_t {
  kHasImm = 1,
  kDelivered = 2,   // every segment acknowledged / every response byte placed [R-REL-10]
  kFailed = 4,
  kRetired = 8,     // completed and out of its stream's list; lives on while PSN records name it
  kResponse = 16,   // a Read being answered as responder [R-PLC-4]
};

// A work request (Send, Write, Write-imm, Read) or a read response job. Segment k of it is fully
// described by the message and k, so a PSN record only names (message, k) [R-REL-5].
struct Msg {
  uint64_t wr_id = 0;
  uint64_t local_va = 0;   // WR: local source / read sink (iova). Response: source = READ_REQ's address
  uint64_t remote_va = 0;
  uint64_t read_bytes = 0;
  uint32_t length = 0, rkey = 0, imm = 0, msn = 0, rsn = 0;
  uint32_t total_segments = 0, next_segment = 0, segments_acked = 0;
  uint32_t region = kNone;  // region of the local buffer, resolved at post time
  uint32_t next = kNone;    // stream list, or the response queue
  uint32_t refs = 0;        // PSN records naming this message
  uint16_t stream = 0;
  WcOpcode op = WcOpcode::Send;
  Status status = Status::Success;
  uint8_t flags = 0;
  bool done() const noexcept { return flags & (kDelivered | kFailed); }
};

// New: created, not yet sent (transient inside the pump).
enum class RecState : uint8_t { New, InFlight, Lost, RnrWait, Acked };

// Why a PSN was declared lost, counted when it is retransmitted (RetransmissionCauses in mroce.hpp).
enum class LossCause : uint8_t { Gap, Probe, Rto, Rnr, Nak };

// One outstanding PSN [R-REL-1]: 32 bytes.
struct Rec {
  uint32_t msg = kNone;
  uint32_t seg = 0;
  uint64_t last_tx = 0;     // time of the last transmission (its BTH Timestamp is the low 32 bits)
  uint64_t rnr_until = 0;   // RnrWait: retransmit from then on [R-PLC-9]
  uint16_t prev = kNil16, next = kNil16;  // transmission-order list of in-flight records
  RecState state = RecState::New;
  uint8_t is_void : 1 = 0;     // its work request failed: resend as VOID [R-REL-9]
  uint8_t loss_cause : 3 = 0;  // a LossCause: why it last became Lost (bit fields keep the record 32 bytes)
  uint8_t tx_count = 0;     // saturating
  uint8_t rnr_count = 0;    // consecutive RNR NAKs, saturating
};
static_assert(sizeof(Rec) == 32);

// The window of one path while it has outstanding PSNs: records indexed by PSN mod 256 and state
// bitmaps relative to SUNA (bit j: PSN SUNA + j).
struct Block {
  Rec rec[256];
  SackBitmap256 acked, lost, inflight, retx, rnr;
  uint16_t txo_head = kNil16, txo_tail = kNil16;
  uint16_t n_inflight = 0, n_lost = 0, n_rnr = 0;
};

struct PathTx {
  uint32_t snxt = 0, suna = 0;
  uint32_t n_out = 0;       // records [suna, suna + n_out) (fewer than snxt - suna only after a clear)
  uint32_t block = kNone;
  uint32_t cwnd = 0, ai_count = 0, decrease_end = 0, last_ce = 0, highest_cpsn = 0;
  uint32_t srtt = 0, rttvar = 0, rto = 0, rto_current = 0;
  uint32_t fresh_routes = 0, consecutive_repaths = 0, probe_ts = 0;
  uint64_t last_ack = 0, last_tx = 0;
  uint64_t last_repath = 0;  // [R-PATH-5]: when this path's route last changed on an RTO
  uint64_t repaths = 0, packets_sent = 0;
  RetransmissionCauses retx_by_cause;  // their sum is the path's retransmission count
  uint16_t route = 0;
  PathState state = PathState::Active;
  bool in_decrease = false, have_cpsn = false, have_sample = false;
  bool probe_sent_in_period = false, probe_outstanding = false;
};

// ---- the receiving side ---------------------------------------------------------------------------

struct PathRx {
  core::PathReceiveState st;  // CPSN and the 256-bit SACK state [R-HDR-19], [R-HDR-20]
  uint32_t ce_count = 0;      // [R-ACK-6]
  uint32_t ts_echo = 0;       // [R-ACK-7]
  uint32_t unacked = 0;       // accepted since the last ACK [R-ACK-3]
  uint64_t first_unacked = 0;
  uint16_t reply_route = 0;   // UDP source port of the latest data/PROBE packet [R-ACK-5]
};

struct Recv {
  uint64_t wr_id = 0, va = 0, bytes = 0;
  uint32_t length = 0, region = kNone, msg_length = 0, imm = 0, rsn = 0, next = kNone;
  Status status = Status::Success;
  bool seen = false, is_wimm = false, done = false;
};

struct SendStream {
  uint32_t head = kNone, tail = kNone;  // work requests in posting order, not yet completed
  uint32_t cursor = kNone;              // first one with unsent segments (not failed)
  uint32_t read_hint = kNone;           // last Read found by a READ_RESP
  uint32_t next_msn = 0, next_rsn = 0;
  bool touched = false;                 // a work request of it became done during this ACK
};

struct RecvStream {
  uint32_t head = kNone, tail = kNone;  // posted receives, RSN order, not yet completed
  uint32_t grave = kNone;               // completed receives that failed with LocalLength
  uint32_t canceled = kNone;            // RSNs voided by the sender before their receive was posted
  uint32_t next_post_rsn = 0, next_complete_rsn = 0;
  uint32_t hint = kNone, hint_rsn = 0;  // last receive found by RSN
};

struct Peer {
  Address addr;
  fast::FrameTemplate tpl;
  uint32_t refs = 0;
  uint64_t key = 0;
};

struct Conn {
  uint32_t id = 0, peer_id = 0, peer = kNone;
  ConnState state = ConnState::Connecting;
  bool in_use = false, initiator = false, close_requested = false, abort = false, disconnect_sent = false;
  bool keepalive_outstanding = false, waiting = false, fs_active = false, any_new_segment = false;
  bool dirty = false, mapped_responder = false, rearm_pending = false;
  uint16_t paths = 0, streams = 0, max_payload = 0, window_cap = 0;  // negotiated (offers while connecting)
  uint32_t local_isn = 0, peer_isn = 0;
  ConnParams offer;  // what this end offered (initiator)

  // Per-connection state sized by the negotiated counts, allocated once at setup [R-CONN-5].
  std::unique_ptr<uint64_t[]> mem;
  uint64_t mem_bytes = 0;
  PathTx* tx = nullptr;
  PathRx* rx = nullptr;
  SendStream* ss = nullptr;
  RecvStream* rs = nullptr;
  uint64_t* pdl = nullptr;  // per path: earliest deadline of its timers (tx and ACK delay)
  mutable uint64_t pdl_min = kNever;  // min over pdl[] (valid when pdl_min_valid)
  mutable bool pdl_min_valid = true;
  BitSpan room;             // paths that may take a new segment [R-PATH-8]
  BitSpan lostp;            // paths with lost PSNs waiting for retransmission
  BitSpan slots;            // round-robin slots with new segments to send (streams, then responses)

  uint32_t resp_head = kNone, resp_tail = kNone;  // read responses to send, in acceptance order
  uint32_t rr_slot = 0;
  uint16_t last_path = 0;
  uint16_t route0 = 0;       // path 0's route before setup (CONNECT)
  uint32_t unacked_recs = 0; // outstanding, unacknowledged PSN records (all paths)
  uint32_t open_wrs = 0;     // work requests in stream lists
  uint32_t open_recvs = 0;   // posted receives not completed
  uint32_t probes_out = 0;   // paths with an unanswered tail probe

  // rate ceiling [R-CC-6], [R-CC-7]
  uint32_t ceiling = 0;
  uint64_t hint_time = 0;
  int64_t credit = 0;
  uint64_t credit_time = 0;

  // liveness [R-CONN-4], [R-CONN-6], [R-CONN-8]
  uint64_t last_rx = 0, waiting_since = 0, last_keepalive = 0;
  uint32_t keepalive_ts = 0;
  uint32_t connect_tries = 0;
  uint64_t next_connect = 0;
  uint32_t accept_ts = 0;  // the ACCEPT is rebuilt byte for byte for a duplicate CONNECT
  uint64_t next_disconnect = 0;

  // the receiver's fair share of this connection [R-FS-*]
  uint64_t bits_in_interval = 0, last_data = 0;
  uint32_t demand = 0, share = 0;
  uint32_t fs_prev = kNone, fs_next = kNone;

  uint32_t dead_next = kNone;  // FIFO of closed / failed connections (slots are recycled oldest first)

  uint32_t cwnd_max() const noexcept { return window_cap < 256 ? window_cap : 256; }
  uint32_t init_cwnd() const noexcept { return window_cap < 16 ? window_cap : 16; }
  int64_t credit_max() const noexcept { return int64_t(8) * 16 * max_payload; }
  bool live() const noexcept { return state == ConnState::Established || state == ConnState::Closing; }
};

// The view of one packet the engine acts on.
using View = fast::PacketView;

class Engine {
 public:
  Engine(const DeviceConfig& cfg, io::PacketIo& io, const io::Clock& clock);
  ~Engine();
  bool ok() const noexcept { return ok_; }

  // API (see mroce.hpp)
  Result reg_mr(void* addr, uint64_t length, uint32_t access, MemoryRegion* out, std::optional<uint64_t> iova);
  Result dereg_mr(uint32_t lkey);
  Result connect(const Address& peer, uint32_t* conn, const ConnParams* offer);
  void listen(bool on);
  Result close(uint32_t conn, bool abort);
  Result post(WcOpcode op, uint32_t conn, uint16_t stream, uint64_t wr_id, const Sge& local, uint64_t remote_va,
              uint32_t rkey, bool has_imm, uint32_t imm);
  Result post_recv(uint32_t conn, uint16_t stream, uint64_t wr_id, const Sge& buf);
  int poll_cq(WorkCompletion* out, int max) noexcept;
  int poll_events(ConnEvent* out, int max) noexcept;
  int progress() noexcept;
  void advance() noexcept;
  void input(const uint8_t* frame, uint32_t len) noexcept;
  std::optional<Time> next_deadline() const noexcept;
  void record_output_order(bool on) noexcept;
  size_t take_output_order(uint8_t* kinds, size_t max) noexcept;
  void log_output(uint8_t kind) noexcept {
    if (log_order_ && n_order_ < kOrderLog) order_[n_order_++] = kind;
  }
  static constexpr uint32_t kOrderLog = 1 << 16;

  std::optional<ConnState> connection_state(uint32_t conn) const noexcept;
  std::optional<PathInfo> path_info(uint32_t conn, uint16_t path) const noexcept;
  uint16_t path_count(uint32_t conn) const noexcept;
  uint16_t stream_count(uint32_t conn) const noexcept;
  uint16_t max_payload(uint32_t conn) const noexcept;
  int rate_shares(uint32_t* conns, uint32_t* shares, int max) const noexcept;
  size_t outstanding_work(uint32_t conn) const noexcept;
  size_t connections(uint32_t* out, size_t max) const noexcept;
  uint8_t* resolve(uint64_t iova, uint64_t len) const noexcept;
  const Counters& counters() const noexcept { return counters_; }
  MemoryUsage memory_usage() const noexcept;
  const DeviceConfig& config() const noexcept { return cfg_; }

  // ---- internals shared by the translation units ----

  // step machinery (engine.cpp)
  bool timers_may_fire() const noexcept;
  void begin_event() noexcept;
  void end_event() noexcept;
  void run_due(uint64_t t) noexcept;
  uint64_t due_by(uint64_t t) noexcept;
  void fire_due() noexcept;
  void pump_dirty(bool defer_rearm = false) noexcept;
  void rearm_deferred() noexcept;
  void touch(Conn& c) noexcept;
  void rearm(Conn& c) noexcept;
  uint64_t conn_deadline(const Conn& c) const noexcept;
  void on_frame(const uint8_t* frame, uint32_t len) noexcept;
  void fire_conn(Conn& c) noexcept;
  void pump_conn(Conn& c) noexcept;

  // connections (engine.cpp)
  Conn* find_conn(uint32_t id) noexcept;
  const Conn* find_conn(uint32_t id) const noexcept;
  uint32_t conn_slot(const Conn& c) const noexcept { return uint32_t(&c - &conns_[0]); }
  uint32_t alloc_conn(const Address& peer, bool initiator) noexcept;
  uint32_t new_conn_id() noexcept;
  bool setup_paths(Conn& c) noexcept;
  void on_connect(const View& v) noexcept;
  void fail_connection(Conn& c, Status wr_status) noexcept;
  void release_closed(Conn& c) noexcept;
  void teardown(Conn& c, Status wr_status) noexcept;
  void send_control(Conn& c, fast::Opcode op, uint8_t reason) noexcept;
  void emit_event(const ConnEvent& e) noexcept;
  uint32_t peer_for(const Address& a) noexcept;
  uint32_t find_peer(const Address& a) const noexcept;
  void release_peer(uint32_t i) noexcept;
  bool recycle_dead() noexcept;
  void send_accept(Conn& c, uint32_t ts) noexcept;

  // frames (engine.cpp)
  io::PacketBuf* frame_begin(const Conn& c, bool data, uint16_t route, uint8_t** bth) noexcept;
  void frame_end(io::PacketBuf* b, uint32_t payload_len) noexcept;
  void flush_tx() noexcept;
  fast::BthFields bth(const Conn& c, uint16_t path, uint16_t flags) const noexcept {
    fast::BthFields b;
    b.flags = flags;
    b.dcid = c.peer_id;
    b.path_id = path;
    b.timestamp = static_cast<uint32_t>(now_);  // [R-HDR-6], [R-CONV-5]
    return b;
  }

  // memory (engine.cpp)
  const Region* region_by_rkey(uint32_t rkey) const noexcept;
  const Region* local_region(uint32_t hint, uint64_t va, uint64_t len) const noexcept;
  const Region* containing(uint64_t va, uint64_t len) const noexcept;
  void recompute_overlap();

  // completions
  void complete(const WorkCompletion& wc) noexcept;

  // sender (sender.cpp)
  void pump(Conn& c) noexcept;
  void refresh_credit(Conn& c, uint64_t at) noexcept;
  bool rate_limited(const Conn& c, uint64_t at) const noexcept;
  uint64_t credit_deadline(const Conn& c) const noexcept;
  uint64_t path_deadline(const Conn& c, uint16_t p) const noexcept;
  void path_changed(Conn& c, uint16_t p) noexcept;
  void update_room(Conn& c, uint16_t p) noexcept;
  void on_ack(Conn& c, uint16_t p, const View& v) noexcept;
  void on_nak(Conn& c, uint16_t p, const View& v) noexcept;
  void path_timers(Conn& c, uint16_t p) noexcept;
  void expire_rnr_waits(Block& b, PathTx& t) noexcept;
  void send_probe(Conn& c, uint16_t p) noexcept;
  void repath(Conn& c, uint16_t p) noexcept;
  void send_record(Conn& c, uint16_t p, uint32_t j, bool retransmission) noexcept;
  void complete_sends(Conn& c, uint16_t stream) noexcept;
  void fail_work_request(Conn& c, uint32_t msg, Status status) noexcept;
  void clear_tx(Conn& c) noexcept;
  void release_msg_ref(uint32_t m) noexcept;
  void retire_msg(uint32_t m) noexcept;
  void advance_cursor(Conn& c, uint16_t stream) noexcept;
  void set_rec_state(Block& b, PathTx& t, uint32_t j, RecState s) noexcept;
  void mark_lost(Block& b, PathTx& t, uint32_t j, LossCause why) noexcept;
  int64_t credit_at(const Conn& c, uint64_t at) const noexcept;
  void txo_remove(Block& b, uint16_t r) noexcept;
  void txo_append(Block& b, uint16_t r) noexcept;
  bool has_pending_new_data(const Conn& c) const noexcept;

  // receiver (receiver.cpp)
  void on_data(Conn& c, uint16_t p, const View& v) noexcept;
  void on_probe(Conn& c, uint16_t p, const View& v) noexcept;
  void send_ack(Conn& c, uint16_t p) noexcept;
  void send_nak(Conn& c, uint16_t p, uint32_t psn, fast::NakCode code) noexcept;
  void complete_recvs(Conn& c, uint16_t stream) noexcept;
  void flush_recvs(Conn& c) noexcept;
  void free_recvs(Conn& c) noexcept;
  void cancel_rsn(Conn& c, uint16_t stream, uint32_t rsn) noexcept;
  Recv* find_recv(Conn& c, uint16_t stream, uint32_t rsn, bool* completed_ok) noexcept;

  // fair share (fair_share.cpp)
  void fs_compute() noexcept;
  void fs_on_data(Conn& c, uint32_t payload_len) noexcept;
  void fs_waterfill() noexcept;
  void fs_remove(Conn& c) noexcept;

  // ---- state ----
  DeviceConfig cfg_;
  io::PacketIo& io_;
  const io::Clock& clock_;
  bool ok_ = false;
  bool listening_ = true;
  uint64_t now_ = 0;
  uint64_t last_pump_ = 0;  // time of the last pump (the model refreshes every credit counter then)
  Counters counters_;

  std::vector<Region> regions_;
  bool any_overlap_ = false;  // two valid regions overlap: resolve local buffers by search

  Pool<Conn> conns_;
  Pool<Msg> msgs_;
  Pool<Recv> recvs_;
  Pool<Block> blocks_;
  Pool<Peer> peers_;
  HashMap id_map_;    // local connection ID -> slot
  HashMap resp_map_;  // (peer, peer's SCID) -> slot, responder connections [R-CONN-4]
  HashMap peer_map_;  // address hash -> peer
  TimerWheel wheel_;
  uint32_t next_conn_id_ = 1;  // with the counting-ID test option
  Secrets secrets_;
  uint32_t dead_head_ = kNone, dead_tail_ = kNone;

  std::unique_ptr<uint32_t[]> dirty_;  // connection slots touched since the last pump
  uint32_t n_dirty_ = 0;
  std::unique_ptr<uint32_t[]> deferred_;  // pumped inside a receive burst, timers not yet re-armed
  uint32_t n_deferred_ = 0;
  std::unique_ptr<uint32_t[]> expired_;
  std::unique_ptr<uint32_t[]> scratch_;  // fair-share sort, connection listing

  uint32_t fs_head_ = kNone;
  uint32_t fs_count_ = 0;
  uint64_t fs_next_ = 0;

  std::unique_ptr<WorkCompletion[]> cq_;
  uint32_t cq_mask_ = 0, cq_head_ = 0, cq_tail_ = 0;
  std::unique_ptr<ConnEvent[]> ev_;
  uint32_t ev_mask_ = 0, ev_head_ = 0, ev_tail_ = 0;

  std::unique_ptr<io::PacketBuf*[]> txq_;
  uint16_t n_txq_ = 0;
  std::unique_ptr<io::PacketBuf*[]> rxq_;
  std::unique_ptr<uint8_t[]> scratch_storage_;
  io::PacketBuf scratch_buf_;  // frames built when no tx buffer is left (then dropped)
  uint16_t stream_touched_[256];
  uint32_t n_stream_touched_ = 0;
  uint64_t prealloc_bytes_ = 0;
  bool unstamped_io_ = false;  // frames without arrival times seen: coalesce overdue timers
  bool in_timer_call_ = false;  // inside progress() or advance(): the calls that fire timers
  bool log_order_ = false;
  std::unique_ptr<uint8_t[]> order_;
  uint32_t n_order_ = 0;
};

// [R-HDR-14] payload length of segment k of a message of length L.
inline uint32_t segment_length(uint32_t msg_length, uint32_t k, uint32_t max_payload) noexcept {
  const uint64_t off = uint64_t(k) * max_payload;
  if (off >= msg_length) return 0;
  const uint64_t rest = msg_length - off;
  return static_cast<uint32_t>(rest < max_payload ? rest : max_payload);
}

// Appendix B: the default route generator.
inline uint16_t default_route(uint32_t conn_id, uint16_t path, uint32_t k) noexcept {
  const uint32_t mix = conn_id * 2654435761u + uint32_t(path) * 40503u + k * 9973u;
  return static_cast<uint16_t>(49152u + mix % 16384u);
}

}  // namespace mroce::engine
