// The engine's per-connection state and the work it carries: work requests and read responses (Msg),
// outstanding PSN records and their window blocks (send window), the receive state of a path, posted
// receives, per-stream state, peers (one frame template per peer address), and the connection (Conn).
#pragma once

#include <cstdint>
#include <memory>

#include "codec/fast_codec.hpp"
#include "core/bit_span.hpp"
#include "core/sack_bitmap.hpp"
#include "core/sentinel.hpp"
#include "core/serial.hpp"
#include "mroce/mroce.hpp"

namespace mroce::engine {

using core::BitSpan;
using core::kNever;
using core::kNone;
using core::SackBitmap256;

inline constexpr uint16_t kNil16 = 0xFFFF;

// ---- the sending side -----------------------------------------------------------------------------

enum MsgFlag : uint8_t {
  kHasImm = 1,
  kDelivered = 2,  // every segment acknowledged / every response byte placed [R-REL-10]
  kFailed = 4,
  kRetired = 8,    // completed and out of its stream's list; lives on while PSN records name it
  kResponse = 16,  // a Read being answered as responder [R-PLC-4]
};

// A work request (Send, Write, Write-imm, Read) or a read response job. Segment k of it is fully
// described by the message and k, so a PSN record only names (message, k) [R-REL-5].
struct Msg {
  uint64_t wr_id = 0;
  uint64_t local_va = 0;  // WR: local source / read sink (iova). Response: source = READ_REQ's address
  uint64_t remote_va = 0;
  uint64_t read_bytes = 0;
  uint32_t length = 0, rkey = 0, imm = 0, msn = 0, rsn = 0;
  uint32_t total_segments = 0, next_segment = 0, segments_acked = 0;
  uint32_t region = kNone;  // [R-MEM-6] region (slot) of the local buffer's lkey, or of a response's rkey
  uint32_t region_gen = 0;  // and that slot's generation then: a reused slot is another region
  uint32_t next = kNone;    // stream list, or the response queue
  uint32_t refs = 0;        // PSN records naming this message
  uint32_t conn = kNone;    // slot of its connection, whose share of the pool it counts in [R-SEC-11]
  uint16_t stream = 0;
  WcOpcode op = WcOpcode::Send;
  Status status = Status::Success;
  uint8_t flags = 0;
  bool done() const noexcept { return flags & (kDelivered | kFailed); }
};

// New: created, not yet sent (transient inside a transmission pass).
enum class RecState : uint8_t { New, InFlight, Lost, RnrWait, Acked };

// Why a PSN was declared lost, counted when it is retransmitted (RetransmissionCauses in mroce.hpp).
enum class LossCause : uint8_t { Gap, Probe, Rto, Rnr, Nak };

// One outstanding PSN [R-REL-1]: 32 bytes.
struct Rec {
  uint32_t msg = kNone;
  uint32_t seg = 0;
  uint64_t last_tx = 0;                   // time of the last transmission (its BTH Timestamp is the low 32 bits)
  uint64_t rnr_until = 0;                 // RnrWait: retransmit from then on [R-PLC-9]
  uint16_t prev = kNil16, next = kNil16;  // transmission-order list of in-flight records
  RecState state = RecState::New;
  uint8_t is_void : 1 = 0;     // its work request failed: resend as VOID [R-REL-9]
  uint8_t loss_cause : 3 = 0;  // a LossCause: why it last became Lost (bit fields keep the record 32 bytes)
  uint8_t tx_count = 0;        // saturating
  uint8_t rnr_count = 0;       // consecutive RNR NAKs, saturating
};
static_assert(sizeof(Rec) == 32);

// The window of one path while it has outstanding PSNs: records indexed by PSN mod 256 and state
// bitmaps relative to SUNA (bit j: PSN SUNA + j).
struct Block {
  Rec rec[256];
  SackBitmap256 acked, lost, inflight, retx, rnr;
  uint16_t tx_order_head = kNil16, tx_order_tail = kNil16;  // in-flight records, oldest transmission first
  uint16_t n_inflight = 0, n_lost = 0, n_rnr = 0;
};

struct PathTx {
  uint32_t snxt = 0, suna = 0;
  uint32_t n_out = 0;  // records [suna, suna + n_out) (fewer than snxt - suna only after a clear)
  uint32_t block = kNone;
  uint32_t cwnd = 0, ai_count = 0, decrease_end = 0, last_ce = 0;
  uint32_t srtt = 0, rttvar = 0, rto = 0, rto_current = 0;
  uint32_t fresh_routes = 0, consecutive_repaths = 0, probe_ts = 0;
  uint64_t last_ack = 0, last_tx = 0;
  uint64_t last_repath = 0;  // [R-PATH-5]: when this path's route last changed on an RTO
  uint64_t repaths = 0, packets_sent = 0;
  RetransmissionCauses retx_by_cause;  // their sum is the path's retransmission count
  uint16_t route = 0;
  PathState state = PathState::Active;
  bool in_decrease = false, have_sample = false;
  bool probe_sent_in_period = false, probe_outstanding = false;
  // [R-PATH-10]: the home route (the route before the first RTO re-path of a failure episode,
  // 0: none), probed every home_interval µs (doubling up to HOME_PROBE_MAX) until it answers.
  uint16_t home_route = 0;
  bool home_probe_outstanding = false;
  uint32_t home_probe_ts = 0, home_interval = 0;
  uint32_t home_returns = 0;  // statistics: times the path went back to its home route
  uint64_t home_next = 0;
};

// ---- the receiving side ---------------------------------------------------------------------------

struct PathRx {
  core::PathReceiveState st;  // CPSN and the 256-bit SACK state [R-HDR-19], [R-HDR-20]
  uint32_t ce_count = 0;      // [R-ACK-6]
  uint32_t ts_echo = 0;       // [R-ACK-7]
  uint32_t unacked = 0;       // accepted since the last ACK [R-ACK-3]
  uint64_t first_unacked = 0;
  uint16_t reply_route = 0;  // UDP source port of the latest data/PROBE packet [R-ACK-5]
};

struct Recv {
  uint64_t wr_id = 0, va = 0, bytes = 0;
  uint32_t length = 0, region = kNone, msg_length = 0, imm = 0, rsn = 0, next = kNone;
  uint32_t region_gen = 0;  // [R-MEM-6] the generation of `region` (the lkey's slot) at post time
  uint32_t prev = kNone;    // canceled RSNs only: their list is doubly linked (unlinked in O(1) when posted)
  Status status = Status::Success;
  bool seen = false, is_wimm = false, done = false;
};

struct SendStream {
  uint32_t head = kNone, tail = kNone;  // work requests in posting order, not yet completed
  uint32_t cursor = kNone;              // first one with unsent segments (not failed)
  uint32_t read_hint = kNone;           // last Read found by a READ_RESP
  uint32_t next_msn = 0, next_rsn = 0;
  bool touched = false;  // a work request of it became done during this ACK
};

struct RecvStream {
  uint32_t head = kNone, tail = kNone;  // posted receives, RSN order, not yet completed
  uint32_t length_failed = kNone;       // completed receives that failed with LocalLength
  uint32_t canceled = kNone;            // RSNs voided by the sender before their receive was posted (Engine::canceled_)
  uint32_t next_post_rsn = 0, next_complete_rsn = 0;
  uint32_t hint = kNone, hint_rsn = 0;  // last receive found by RSN
};

struct Peer {
  Address addr;
  fast::FrameTemplate tpl;
  uint32_t refs = 0;
  uint32_t unconfirmed = 0;  // its responder connections not yet confirmed [R-SEC-12]
  uint64_t key = 0;
};

// A connection. Its state is grouped by the unit that owns it; the arrays sized by the negotiated
// counts are allocated once at setup [R-CONN-5] (handshake.cpp, setup_paths).
struct Conn {
  // identity and negotiated parameters (connection table, handshake)
  uint32_t id = 0, peer_id = 0, peer = kNone;
  ConnState state = ConnState::Connecting;
  bool in_use = false, initiator = false, mapped_responder = false;
  uint16_t paths = 0, streams = 0, max_payload = 0, window_cap = 0;  // negotiated (offers while connecting)
  uint32_t local_isn = 0, peer_isn = 0;
  uint32_t pd = 0;             // protection domain: the regions its peer and its posts may use [R-MEM-5]
  uint32_t dead_next = kNone;  // FIFO of closed / failed connections (slots are recycled oldest first)

  // event loop: touched since the last transmission pass; re-arming deferred to the end of a burst
  bool touched = false, rearm_pending = false;
  // new data held back because the port had no room (PacketIo::tx_room, A-30); retried at progress()
  bool tx_waiting = false;

  // per-path and per-stream state
  std::unique_ptr<uint64_t[]> mem;
  uint64_t mem_bytes = 0;
  PathTx* tx = nullptr;
  PathRx* rx = nullptr;
  SendStream* send_streams = nullptr;
  RecvStream* recv_streams = nullptr;
  uint32_t open_recvs = 0;  // posted receives not completed (receiver)
  // Receive entries held: posted, canceled before posting, kept after LocalLength [R-SEC-11]
  uint32_t recvs_held = 0, canceled_held = 0;

  // handshake [R-CONN-3], [R-CONN-4] (handshake.cpp)
  struct Handshake {
    ConnParams offer;          // what this end offered (initiator)
    uint16_t route0 = 0;       // path 0's route before setup (CONNECT)
    uint32_t tries = 0;        // CONNECTs sent
    uint64_t next_try = 0;     // when the next CONNECT goes out
    uint32_t accept_ts = 0;    // the ACCEPT is rebuilt byte for byte for a duplicate CONNECT
    bool unconfirmed = false;  // responder: nothing received from the initiator since ACCEPT [R-SEC-12]
  } hs;

  // liveness [R-CONN-6], [R-CONN-8] (liveness.cpp)
  struct Liveness {
    uint64_t last_rx = 0, waiting_since = 0, last_keepalive = 0;
    uint32_t keepalive_ts = 0;
    bool keepalive_outstanding = false;
    bool waiting = false;  // for the peer: an unacknowledged PSN, an unanswered PROBE, or a DISCONNECT
  } alive;

  // close and teardown [R-CONN-7] (liveness.cpp)
  struct Closing {
    bool requested = false, abort = false, disconnect_sent = false;
    uint64_t next_disconnect = 0;
  } closing;

  // send window (send_window.cpp, read_responder.cpp)
  struct Send {
    uint64_t* path_due = nullptr;            // per path: earliest deadline of its timers (tx and ACK delay)
    mutable uint64_t path_due_min = kNever;  // min over path_due[] (valid when path_due_min_valid)
    mutable bool path_due_min_valid = true;
    BitSpan paths_with_room;  // paths that may take a new segment [R-PATH-8]
    BitSpan paths_with_lost;  // paths with lost PSNs waiting for retransmission
    BitSpan new_data_slots;   // round-robin slots with new segments to send (streams, then responses)
    uint32_t responses_head = kNone, responses_tail = kNone;  // read responses to send, in acceptance order
    uint32_t next_slot = 0;                                   // round-robin position over the slots [R-CC-9]
    uint16_t last_path = 0;  // path of the latest new segment (paths in round robin [R-PATH-8])
    bool any_new_segment = false;
    uint32_t unacked_recs = 0;  // outstanding, unacknowledged PSN records (all paths)
    uint32_t open_wrs = 0;      // work requests in stream lists
    uint32_t probes_out = 0;    // paths with an unanswered tail probe
    uint32_t msgs_held = 0;     // work requests and read responses in the pool, its share [R-SEC-11]
  } send;

  // rate ceiling and credit [R-CC-6], [R-CC-7] (send_window.cpp)
  struct Rate {
    uint32_t ceiling = 0;
    uint64_t hint_time = 0;
    int64_t credit = 0;
    uint64_t credit_time = 0;
  } rate;

  // the receiver's fair share of this connection [R-FS-*] (fair_share.hpp, FairShare)
  struct Fair {
    bool active = false;
    uint64_t bits_in_interval = 0, last_data = 0;
    uint32_t demand = 0, share = 0;
    uint32_t prev = kNone, next = kNone;  // list of active connections
  } fair;

  uint32_t cwnd_max() const noexcept { return window_cap < 256 ? window_cap : 256; }
  // [R-CC-1]: about INIT_WINDOW = 64 packets per connection in all, at most 16 per path.
  uint32_t init_cwnd() const noexcept {
    uint32_t v = window_cap < 16 ? window_cap : 16;
    const uint32_t share = paths ? 64u / paths : 16u;
    if (share < v) v = share;
    return v ? v : 1;
  }
  int64_t credit_max() const noexcept { return int64_t(8) * 16 * max_payload; }
  bool live() const noexcept { return state == ConnState::Established || state == ConnState::Closing; }
};

}  // namespace mroce::engine
