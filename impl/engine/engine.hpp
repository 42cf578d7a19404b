// The MRoCE protocol engine (internal). SPEC.md is the authority; the executable model in spec_model/
// is the behavioural oracle this engine matches event for event (it is never included here: the two
// are compared from outside). Layout of the code, one job per file (README.md has the details):
//   engine.hpp/.cpp       the Engine: its state, construction, memory registration and the post
//                         checks, observation (path_info, memory usage, ...)
//   event_loop.cpp        events and the step machinery: timers, touched connections, progress()
//   conn_table.hpp/.cpp   ConnTable: connection slots, ID maps, peers, recycling of dead slots
//   handshake.cpp         CONNECT / ACCEPT / REJECT, connect retries, per-connection state at setup,
//                         slot allocation and recycling
//   liveness.cpp          keep-alive, peer failure, close / DISCONNECT, teardown
//   tx_frames.hpp/.cpp    TxFrames: building frames on a route and batching them for the port
//   region_table.hpp/.cpp RegionTable: registered memory, its keys, buffer lookups
//   send_window.cpp       posting, segmentation, spraying, ACK/NAK processing, loss detection,
//                         RTO/probes, re-pathing, congestion control, credit
//   receiver.cpp          receive window, content checks, placement, ACK/NAK generation, receives
//   read_responder.cpp    Read responses: accepted READ_REQs queued and sent as one more stream
//   fair_share.hpp/.cpp   FairShare: the receiver's rate hints
//   secrets.hpp/.cpp      Secrets: unpredictable ISNs and connection IDs from a per-device secret
//   queues.hpp            the completion and event rings, the output-order test log
//   conn.hpp              the per-connection state (Conn) and the work it carries
//   device.cpp            the public Device (mroce.hpp), forwarding to the Engine
//
// Processing model (the same as the model's, so that both emit the same packets in the same order):
// every event runs at a time `now`: first the timers due before it fire at their own times, each
// followed by a transmission pass over what became sendable; then the event; then timers due at
// `now`; then a transmission pass. A pass only visits connections touched since the last one (the
// model's pump_all visits every connection, but one untouched since its last pass has nothing to
// send; the one piece of state a pass changes even then, the credit counter, is path-independent and
// refreshed lazily, see refresh_credit).
//
// Data path: no heap allocation, no exceptions, no locks. Outstanding PSNs live in per-path window
// blocks of 256 records taken from a pool while the path has outstanding data; work requests, read
// responses and posted receives come from pools; each connection has one entry in a timer wheel that
// always holds its exact next deadline.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "codec/fast_codec.hpp"
#include "core/hash_map.hpp"
#include "core/pool.hpp"
#include "core/timer_wheel.hpp"
#include "engine/secrets.hpp"
#include "engine/conn.hpp"
#include "engine/conn_table.hpp"
#include "engine/fair_share.hpp"
#include "engine/queues.hpp"
#include "engine/region_table.hpp"
#include "engine/tx_frames.hpp"
#include "io/packet_io.hpp"
#include "mroce/mroce.hpp"

namespace mroce::engine {

using core::Pool;
using core::serial_le;
using core::serial_lt;
using core::TimerWheel;

inline constexpr uint32_t kMaxMessage = 0x80000000u;  // [R-HDR-12]
inline constexpr int kRxBudget = 1024;                // frames per progress() call before the timers run

// The view of one packet the engine acts on.
using View = fast::PacketView;

// [R-CONN-3] the bounds of a connection offer (the device's default and connect()'s).
inline bool valid_offer(const ConnParams& o) noexcept {
  return o.paths >= 1 && o.paths <= 256 && o.streams >= 1 && o.max_payload >= 256 && o.max_payload <= 8192 &&
         o.max_payload % 64 == 0 && o.window_cap >= 1 && o.window_cap <= 256;
}

class Engine {
 public:
  Engine(const DeviceConfig& cfg, io::PacketIo& io, const io::Clock& clock);
  ~Engine();
  bool ok() const noexcept { return ok_; }

  // ---- the API (see mroce.hpp; device.cpp forwards here) ----
  Result reg_mr(void* addr, uint64_t length, uint32_t access, MemoryRegion* out, std::optional<uint64_t> iova,
                uint32_t pd);
  Result dereg_mr(uint32_t lkey);
  Result alloc_pd(uint32_t* pd);
  Result dealloc_pd(uint32_t pd);
  Result connect(const Address& peer, uint32_t* conn, const ConnParams* offer, uint32_t pd);  // handshake.cpp
  Result listen(bool on, uint32_t pd);
  Result close(uint32_t conn, bool abort);  // liveness.cpp
  Result post(WcOpcode op, uint32_t conn, uint16_t stream, uint64_t wr_id, const Sge& local, uint64_t remote_va,
              uint32_t rkey, bool has_imm, uint32_t imm);                            // send_window.cpp
  Result post_recv(uint32_t conn, uint16_t stream, uint64_t wr_id, const Sge& buf);  // receiver.cpp
  int poll_cq(WorkCompletion* out, int max) noexcept { return cq_.pop(out, max); }
  int poll_events(ConnEvent* out, int max) noexcept { return events_.pop(out, max); }
  int progress() noexcept;  // event_loop.cpp
  void advance() noexcept;
  void input(const uint8_t* frame, uint32_t len) noexcept;
  std::optional<Time> next_deadline() const noexcept;
  void record_output_order(bool on) noexcept { output_log_.record(on); }
  uint32_t canceled_longest_probe() const noexcept { return canceled_.longest_probe(); }  // tests
  size_t take_output_order(uint8_t* kinds, size_t max) noexcept { return output_log_.take(kinds, max); }

  // observation (engine.cpp)
  std::optional<ConnState> connection_state(uint32_t conn) const noexcept;
  std::optional<PathInfo> path_info(uint32_t conn, uint16_t path) const noexcept;
  uint16_t path_count(uint32_t conn) const noexcept;
  uint16_t stream_count(uint32_t conn) const noexcept;
  uint16_t max_payload(uint32_t conn) const noexcept;
  int rate_shares(uint32_t* conns, uint32_t* shares, int max) const noexcept;
  size_t outstanding_work(uint32_t conn) const noexcept;
  size_t connections(uint32_t* out, size_t max) const noexcept;
  uint8_t* resolve(uint64_t iova, uint64_t len) const noexcept { return regions_.resolve(iova, len); }
  const Counters& counters() const noexcept { return counters_; }
  MemoryUsage memory_usage() const noexcept;
  const DeviceConfig& config() const noexcept { return cfg_; }

 private:
  // ---- event loop (event_loop.cpp) ----
  // One application call as one event at the clock's time: the timers due before it, the call, the
  // timers due now, a transmission pass, and the frames built handed to the port.
  template <class F>
  auto as_event(F&& call) {
    begin_event();
    auto res = call();
    end_event();
    frames_.flush();
    return res;
  }
  bool timers_may_fire() const noexcept;
  void begin_event() noexcept;
  void end_event() noexcept;
  void run_due(uint64_t t) noexcept;
  uint64_t due_by(uint64_t t) noexcept;
  void fire_due() noexcept;
  void transmit_touched(bool defer_rearm = false) noexcept;
  void rearm_deferred() noexcept;
  void touch(Conn& c) noexcept;
  void rearm(Conn& c) noexcept;
  uint64_t conn_deadline(const Conn& c) const noexcept;
  void on_frame(const uint8_t* frame, uint32_t len) noexcept;
  void fire_conn(Conn& c) noexcept;
  void transmit_conn(Conn& c) noexcept;
  void share_port(uint32_t* slots, uint32_t n) noexcept;

  Result check_post(const Conn* cp, uint16_t stream, const Sge& buf, bool need_write,
                    const Region** region) const noexcept;  // engine.cpp

  // ---- connections (conn_table.hpp; the engine's side in handshake.cpp) ----
  uint32_t alloc_conn(const Address& peer, bool initiator) noexcept;
  bool recycle_dead() noexcept;

  // ---- handshake (handshake.cpp) ----
  bool setup_paths(Conn& c) noexcept;
  void on_connect(const View& v) noexcept;
  void on_connect_reply(Conn& c, const View& v) noexcept;
  void connect_timer(Conn& c) noexcept;
  void send_accept(Conn& c, uint32_t ts) noexcept;

  // ---- liveness and teardown (liveness.cpp) ----
  uint64_t liveness_deadline(const Conn& c) const noexcept;
  uint64_t peer_failure_at(const Conn& c) const noexcept;
  void liveness_timers(Conn& c) noexcept;
  void liveness_after_transmit(Conn& c) noexcept;
  void on_disconnect(Conn& c, fast::Opcode op) noexcept;
  uint64_t disconnect_retry_at(const Conn& c) const noexcept;
  void flush_sends(Conn& c, Status wr_status) noexcept;
  void fail_connection(Conn& c, Status wr_status) noexcept;
  void release_closed(Conn& c) noexcept;
  void teardown(Conn& c, Status wr_status) noexcept;
  void send_control(Conn& c, fast::Opcode op, uint8_t reason) noexcept;

  // ---- tx frames (tx_frames.hpp) ----
  io::PacketBuf* frame_begin(const Conn& c, bool data, uint16_t route, uint8_t** bth) noexcept {
    return frames_.begin(conns_.peer(c.peer).tpl, data, route, bth);
  }
  void frame_end(io::PacketBuf* b, uint32_t payload_len) noexcept { frames_.end(b, payload_len); }
  fast::BthFields bth(const Conn& c, uint16_t path, uint16_t flags) const noexcept {
    fast::BthFields b;
    b.flags = flags;
    b.dcid = c.peer_id;
    b.path_id = path;
    b.timestamp = static_cast<uint32_t>(now_);  // [R-HDR-6], [R-CONV-5]
    return b;
  }

  // ---- completions and events ----
  void complete(const WorkCompletion& wc) noexcept {
    if (!cq_.push(wc)) {
      ++counters_.cq_overflow;
      return;
    }
    output_log_.log(Output::Completion);
  }
  void emit_event(const ConnEvent& e) noexcept {
    if (!events_.push(e)) {
      ++counters_.event_overflow;
      return;
    }
    output_log_.log(Output::Event);
  }

  // ---- send window (send_window.cpp) ----
  void transmit(Conn& c) noexcept;
  void wait_for_tx_room(Conn& c) noexcept;
  void refresh_credit(Conn& c, uint64_t at) noexcept;
  bool rate_limited(const Conn& c, uint64_t at) const noexcept;
  uint64_t credit_deadline(const Conn& c) const noexcept;
  uint64_t rto_deadline(const PathTx& t, const Block& b) const noexcept;
  uint64_t probe_deadline(const PathTx& t) const noexcept;
  uint64_t path_deadline(const Conn& c, uint16_t p) const noexcept;
  void path_changed(Conn& c, uint16_t p) noexcept;
  void update_room(Conn& c, uint16_t p) noexcept;
  void on_ack(Conn& c, uint16_t p, const View& v) noexcept;
  void on_nak(Conn& c, uint16_t p, const View& v) noexcept;
  void path_timers(Conn& c, uint16_t p) noexcept;
  void expire_rnr_waits(Block& b, PathTx& t) noexcept;
  void send_probe(Conn& c, uint16_t p) noexcept;
  void send_home_probe(Conn& c, uint16_t p) noexcept;
  static bool home_probe_allowed(const PathTx& t) noexcept {  // [R-PATH-10]
    return t.home_route != 0 && t.route != t.home_route && t.state == PathState::Active && t.block != kNone;
  }
  // [R-PATH-10]: a home probe that fell due while the path did not qualify goes 1 µs after it qualifies
  // again (becomes ACTIVE, or gets outstanding PSNs): never a deadline in the past.
  void home_requalified(PathTx& t) const noexcept {
    if (t.home_route != 0 && t.home_next <= now_) t.home_next = now_ + 1;
  }
  void repath(Conn& c, uint16_t p) noexcept;
  void choose_route(Conn& c, uint16_t p) noexcept;
  void send_record(Conn& c, uint16_t p, uint32_t j, bool retransmission) noexcept;
  void complete_sends(Conn& c, uint16_t stream) noexcept;
  void fail_work_request(Conn& c, uint32_t msg, Status status) noexcept;
  void clear_tx(Conn& c) noexcept;
  void append_msg(uint32_t& head, uint32_t& tail, uint32_t m) noexcept {  // to a list of messages
    msgs_[m].next = kNone;
    if (tail == kNone)
      head = m;
    else
      msgs_[tail].next = m;
    tail = m;
  }
  uint32_t alloc_msg(Conn& c) noexcept;  // kNone at the connection's share or an empty pool [R-SEC-11]
  void release_msg(uint32_t m) noexcept;
  void release_msg_ref(uint32_t m) noexcept;
  void retire_msg(uint32_t m) noexcept;
  void advance_cursor(Conn& c, uint16_t stream) noexcept;
  void set_rec_state(Block& b, PathTx& t, uint32_t j, RecState s) noexcept;
  void mark_lost(Block& b, PathTx& t, uint32_t j, LossCause why) noexcept;
  int64_t credit_at(const Conn& c, uint64_t at) const noexcept;
  void tx_order_remove(Block& b, uint16_t r) noexcept;
  void tx_order_append(Block& b, uint16_t r) noexcept;
  bool has_pending_new_data(const Conn& c) const noexcept;

  // ---- read responder (read_responder.cpp) ----
  uint32_t reserve_response(Conn& c) noexcept;
  void queue_response(Conn& c, uint32_t job, const View& v, const Region& region) noexcept;
  uint32_t outstanding_read(Conn& c, uint16_t stream, uint32_t msn, uint32_t length) noexcept;
  void read_delivered(Msg& rd) noexcept;
  uint32_t next_response(Conn& c) noexcept;
  void response_segment_taken(Conn& c, uint32_t job) noexcept;
  void drop_responses(Conn& c) noexcept;

  // ---- receiver (receiver.cpp) ----
  void on_data(Conn& c, uint16_t p, const View& v) noexcept;
  void on_probe(Conn& c, uint16_t p, const View& v) noexcept;
  void send_ack(Conn& c, uint16_t p) noexcept;
  void send_nak(Conn& c, uint16_t p, uint32_t psn, fast::NakCode code) noexcept;
  void complete_recvs(Conn& c, uint16_t stream) noexcept;
  void flush_recvs(Conn& c) noexcept;
  void free_recvs(Conn& c) noexcept;
  bool cancel_rsn(Conn& c, uint16_t stream, uint32_t rsn) noexcept;  // false: no room to remember it
  uint32_t alloc_recv(Conn& c) noexcept;  // kNone at the connection's share or an empty pool [R-SEC-11]
  void release_recv(Conn& c, uint32_t ri) noexcept {
    recvs_.release(ri);
    --c.recvs_held;
  }
  uint64_t canceled_key(const Conn& c, uint16_t stream, uint32_t rsn) const noexcept;
  void unlink_canceled(Conn& c, uint16_t stream, uint32_t ri) noexcept;
  Recv* find_recv(Conn& c, uint16_t stream, uint32_t rsn, bool* completed_ok) noexcept;

  // ---- state ----
  DeviceConfig cfg_;
  io::PacketIo& io_;
  const io::Clock& clock_;
  bool ok_ = false;
  bool listening_ = true;
  uint32_t listen_pd_ = 0;  // the protection domain of accepted connections [R-MEM-5]
  uint64_t now_ = 0;
  uint64_t last_transmit_ = 0;  // time of the last transmission pass (the model refreshes every credit then)
  Counters counters_;

  Secrets secrets_;  // unpredictable ISNs and connection IDs [R-CONN-2]
  RegionTable regions_;
  std::vector<bool> pds_;  // allocated protection domains by ID; 0, the default, always [R-MEM-5]
  ConnTable conns_;
  Pool<Msg> msgs_;
  Pool<Recv> recvs_;
  // Canceled RSNs of every connection (canceled_key -> their entry in recvs_): a VOID or a post finds
  // one in O(1) whatever a peer sent. A hash map rather than a bitmap window over RSNs per stream:
  // the RSNs are the peer's choice and sparse, and a window would cost its bits on every stream of
  // every connection although almost none ever sees a VOID; the map costs one slot per receive.
  core::HashMap canceled_;
  uint64_t canceled_mask_ = 0, canceled_mult_ = 1;  // per-device secret scrambling of its keys (canceled_key)
  // Effective per-connection shares [R-SEC-11], [R-SEC-12] (DeviceConfig, 0 resolved).
  uint32_t recv_limit_ = 0, canceled_limit_ = 0, wr_limit_ = 0, unconfirmed_limit_ = 0;
  Pool<Block> blocks_;
  TimerWheel wheel_;

  std::unique_ptr<uint32_t[]> touched_;  // connection slots touched since the last pass
  uint32_t n_touched_ = 0;
  std::unique_ptr<uint32_t[]> tx_waiting_;  // connections that stopped for lack of port room
  uint32_t n_tx_waiting_ = 0;
  // connections share a port that cannot take all they have in turns of tx_quota_ new segments,
  // starting with the one the port turned away first last time (tx_next_id_).
  std::unique_ptr<uint32_t[]> tx_more_;  // connections that used their whole turn
  uint32_t tx_quota_ = UINT32_MAX;       // new segments the transmitting connection may still take
  bool tx_quota_used_ = false;           // ... and it stopped there with more to send
  uint32_t tx_next_id_ = 0;
  bool tx_turned_away_ = false;           // a connection met a full port since the pass began
  std::unique_ptr<uint32_t[]> deferred_;  // passed inside a receive burst, timers not yet re-armed
  uint32_t n_deferred_ = 0;
  std::unique_ptr<uint32_t[]> expired_;
  std::unique_ptr<uint32_t[]> scratch_;  // fair-share sort and listing, connection listing

  FairShare fair_;

  Ring<WorkCompletion> cq_;
  Ring<ConnEvent> events_;
  OutputLog output_log_;
  TxFrames frames_;

  std::unique_ptr<io::PacketBuf*[]> rxq_;
  uint16_t stream_touched_[256];
  uint32_t n_stream_touched_ = 0;
  uint64_t prealloc_bytes_ = 0;
  bool unstamped_io_ = false;  // frames without arrival times seen: coalesce overdue timers
  // Host stalls seen by progress() on unstamped ports: gaps between two polls longer than
  // kStallMinUs. The RTO and the tail probe do not count them (but are postponed by at most a
  // quarter of PEER_TIMEOUT in all, so an application that polls rarely still recovers); the peer
  // timer counts each up to a quarter of PEER_TIMEOUT.
  struct Stall {
    uint64_t at = 0;   // the poll that ended it
    uint64_t gap = 0;  // µs since the poll before
  };
  static constexpr uint64_t kStallMinUs = 1000;
  static constexpr uint32_t kStallLog = 16;
  Stall stalls_[kStallLog] = {};
  uint32_t n_stalls_ = 0;   // stalls logged so far (the ring keeps the last kStallLog)
  uint64_t last_poll_ = 0;  // the time read by the previous progress() (when polled_)
  bool polled_ = false;
  void note_poll(uint64_t t) noexcept;
  uint64_t stalled_since(uint64_t ref, uint64_t allowance) const noexcept;
  uint64_t stall_discount(uint64_t ref) const noexcept {
    return std::min<uint64_t>(stalled_since(ref, 0), cfg_.peer_timeout_us / 4);
  }
  bool in_timer_call_ = false;  // inside progress() or advance(): the calls that fire timers
};

// [R-HDR-14] payload length of segment k of a message of length L.
inline uint32_t segment_length(uint32_t msg_length, uint32_t k, uint32_t max_payload) noexcept {
  const uint64_t off = uint64_t(k) * max_payload;
  if (off >= msg_length) return 0;
  const uint64_t rest = msg_length - off;
  return static_cast<uint32_t>(rest < max_payload ? rest : max_payload);
}

// [R-HDR-14] the number of segments of a message (at least one).
inline uint32_t segment_count(uint32_t msg_length, uint32_t max_payload) noexcept {
  return msg_length == 0 ? 1 : (msg_length + max_payload - 1) / max_payload;
}

// Appendix B: the default route generator.
inline uint16_t default_route(uint32_t conn_id, uint16_t path, uint32_t k) noexcept {
  const uint32_t mix = conn_id * 2654435761u + uint32_t(path) * 40503u + k * 9973u;
  return static_cast<uint16_t>(49152u + mix % 16384u);
}

}  // namespace mroce::engine
