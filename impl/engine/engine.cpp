// The engine: events and the step machinery, connection setup and teardown, memory registration,
// frame building and the public API glue. See engine.hpp for the processing model.
#include "engine/engine.hpp"
#include "mroce/testing.hpp"

#include <algorithm>
#include <cstring>
#include <new>

namespace mroce::engine {

namespace {

uint64_t address_key(const Address& a) noexcept {
  // FNV-1a over the address bytes, then a 64-bit mix.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint8_t b) {
    h ^= b;
    h *= 1099511628211ull;
  };
  for (uint8_t b : a.mac) mix(b);
  mix(a.ipv6 ? 1 : 0);
  for (uint8_t b : a.ip) mix(b);
  h ^= h >> 29;
  return h;
}

uint32_t be32(const uint8_t* p) noexcept { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }

// Begins a frame from `tpl` in `b` on `route`: the UDP source port [R-ENC-6], mirrored in the IPv6
// flow label [R-ENC-4], and recorded in the buffer so that the port picks the frame's plane (ECMP)
// without parsing it again. Returns the BTH.
uint8_t* begin_frame(const fast::FrameTemplate& tpl, io::PacketBuf* b, bool data, uint16_t route) noexcept {
  uint8_t* f = b->data;
  uint8_t* bth = tpl.begin(f, data);
  fast::detail::wr16(f + tpl.header_len() - fast::kUdpLen, route);
  if (tpl.config().ipv6) {
    f[15] &= 0xF0;
    f[16] = uint8_t(route >> 8);
    f[17] = uint8_t(route);
  }
  b->route = route;
  return bth;
}

fast::PathConfig path_config(const DeviceConfig& cfg, const Address& peer) noexcept {
  fast::PathConfig pc;
  pc.eth_dst = peer.mac;
  pc.eth_src = cfg.self.mac;
  pc.ipv6 = cfg.self.ipv6;
  pc.ipv4_src = be32(cfg.self.ip.data());
  pc.ipv4_dst = be32(peer.ip.data());
  pc.ipv6_src = cfg.self.ip;
  pc.ipv6_dst = peer.ip;
  pc.dscp_data = cfg.dscp_data;  // [R-ENC-10]
  pc.dscp_ctrl = cfg.dscp_control;
  pc.ecn_data = 2;  // [R-ENC-9] ECT(0) on data
  pc.ecn_ctrl = 0;  //           Not-ECT otherwise
  pc.ttl = 64;      // [R-ENC-11]
  pc.udp_dport = cfg.udp_port;  // [R-ENC-5]
  pc.ipv4_id = 0;
  pc.ipv4_df = true;  // [R-ENC-3]
  return pc;
}

Address source_address(const View& v) noexcept {
  Address a;
  a.mac = v.eth_src();
  a.ipv6 = v.ipv6();
  std::memcpy(a.ip.data(), v.ip_src(), v.ipv6() ? 16 : 4);
  return a;
}

constexpr size_t align8(size_t n) { return (n + 7) & ~size_t{7}; }

}  // namespace

// ---- construction ---------------------------------------------------------------------------------

Engine::Engine(const DeviceConfig& cfg, io::PacketIo& io, const io::Clock& clock)
    : cfg_(cfg), io_(io), clock_(clock), secrets_(cfg.random_seed) {
  const auto& o = cfg.offer;
  if (!secrets_.ok() || cfg.max_connections == 0 || cfg.burst == 0 || o.paths < 1 || o.paths > 256 || o.streams < 1 ||
      o.max_payload < 256 || o.max_payload > 8192 || o.max_payload % 64 || o.window_cap < 1 || o.window_cap > 256)
    return;
  regions_.reserve(cfg.max_regions);
  conns_.init(cfg.max_connections);
  msgs_.init(cfg.max_work_requests);
  recvs_.init(cfg.max_receives);
  blocks_.init(cfg.max_window_blocks);
  peers_.init(cfg.max_peers);
  id_map_.init(cfg.max_connections);
  resp_map_.init(cfg.max_connections);
  peer_map_.init(cfg.max_peers);
  wheel_.init(cfg.max_connections);
  dirty_.reset(new uint32_t[cfg.max_connections]);
  deferred_.reset(new uint32_t[cfg.max_connections]);
  expired_.reset(new uint32_t[cfg.max_connections]);
  scratch_.reset(new uint32_t[cfg.max_connections]);
  const uint32_t cqn = std::bit_ceil(std::max<uint32_t>(cfg.cq_size, 2));
  cq_.reset(new WorkCompletion[cqn]);
  cq_mask_ = cqn - 1;
  const uint32_t evn = std::bit_ceil(std::max<uint32_t>(cfg.event_queue_size, 2));
  ev_.reset(new ConnEvent[evn]);
  ev_mask_ = evn - 1;
  txq_.reset(new io::PacketBuf*[cfg.burst]);
  rxq_.reset(new io::PacketBuf*[cfg.burst]);
  scratch_storage_.reset(new uint8_t[io::kBufSize]);
  scratch_buf_.data = scratch_storage_.get();
  scratch_buf_.cap = io::kBufSize;
  next_conn_id_ = std::max<uint32_t>(1, cfg.first_conn_id.value_or(1));
  listening_ = cfg.listening;
  now_ = clock.now_us();
  last_pump_ = now_;
  prealloc_bytes_ = uint64_t(cfg.max_connections) * (sizeof(Conn) + 4 * sizeof(uint32_t) + 32) +
                    uint64_t(cfg.max_work_requests) * (sizeof(Msg) + 4) +
                    uint64_t(cfg.max_receives) * (sizeof(Recv) + 4) +
                    uint64_t(cfg.max_window_blocks) * (sizeof(Block) + 4) +
                    uint64_t(cfg.max_peers) * (sizeof(Peer) + 4) + id_map_.bytes() + resp_map_.bytes() +
                    peer_map_.bytes() + uint64_t(cqn) * sizeof(WorkCompletion) + uint64_t(evn) * sizeof(ConnEvent);
  ok_ = true;
}

Engine::~Engine() = default;

// ---- the step machinery ---------------------------------------------------------------------------
//
// The model's handle(now, event): timers due before `now` fire at their own times (each followed by a
// pump), then the event, then timers due at `now`, then a pump. begin_event / end_event bracket one
// event; every public call is one event at the clock's time.

uint64_t Engine::due_by(uint64_t t) noexcept {
  uint64_t d = wheel_.first_due(t);
  if (fs_next_ != 0 && fs_next_ <= t && fs_next_ < d) d = fs_next_;
  return d;
}

void Engine::run_due(uint64_t t) noexcept {
  for (;;) {
    const uint64_t d = due_by(t);
    if (d == kNever) break;
    if (d > now_) now_ = d;
    fire_due();
    pump_dirty();
  }
}

// With frames that carry no arrival time (real ports), an application call (post_*, reg_mr, ...)
// fires no timer: frames may be waiting unread in the rx queue, and only progress(), which reads
// them first, may decide that the network fell silent. A host busy between two polls (a long post
// burst, a page-faulting copy, the peer's turn in a one-thread loopback) otherwise took its own
// delay for loss: spurious RTOs and re-paths, then FAILED paths, on a loss-free run (issue 13). The
// timers fire at the next progress(), late, as any implementation's may ([R-CONF-2]).
bool Engine::timers_may_fire() const noexcept { return !unstamped_io_ || in_timer_call_; }

void Engine::begin_event() noexcept {
  uint64_t t = clock_.now_us();
  if (t < now_) t = now_;  // time never goes backwards
  if (timers_may_fire()) run_due(t);
  now_ = t;
}

void Engine::end_event() noexcept {
  // Deadlines as the event left them (before any pump), for the timers it made due now.
  for (uint32_t i = 0; i < n_dirty_; ++i) rearm(conns_[dirty_[i]]);
  while (timers_may_fire() && due_by(now_) != kNever) {
    fire_due();
    pump_dirty();
  }
  pump_dirty();
}

void Engine::fire_due() noexcept {
  if (fs_next_ != 0 && fs_next_ <= now_) fs_compute();  // [R-FS-1]
  const uint32_t n = wheel_.expire(now_, expired_.get());
  uint32_t* e = expired_.get();
  if (n > 1) std::sort(e, e + n, [&](uint32_t a, uint32_t b) { return conns_[a].id < conns_[b].id; });
  for (uint32_t i = 0; i < n; ++i) {
    Conn& c = conns_[e[i]];
    touch(c);
    fire_conn(c);
  }
}

void Engine::touch(Conn& c) noexcept {
  if (c.dirty) return;
  c.dirty = true;
  dirty_[n_dirty_++] = conn_slot(c);
}

// Pumps the touched connections in ID order (the model's pump_all order) and re-arms their timers.
// With defer_rearm (inside a receive burst, where the wheel is not consulted until the burst ends)
// the re-arming is left to rearm_deferred(), once per connection per burst.
void Engine::pump_dirty(bool defer_rearm) noexcept {
  uint32_t* d = dirty_.get();
  if (n_dirty_ > 1) std::sort(d, d + n_dirty_, [&](uint32_t a, uint32_t b) { return conns_[a].id < conns_[b].id; });
  for (uint32_t i = 0; i < n_dirty_; ++i) {
    Conn& c = conns_[d[i]];
    pump_conn(c);
    c.dirty = false;
    if (!defer_rearm) {
      rearm(c);
    } else if (!c.rearm_pending) {
      c.rearm_pending = true;
      deferred_[n_deferred_++] = d[i];
    }
  }
  n_dirty_ = 0;
  last_pump_ = now_;
}

void Engine::rearm_deferred() noexcept {
  for (uint32_t i = 0; i < n_deferred_; ++i) {
    Conn& c = conns_[deferred_[i]];
    c.rearm_pending = false;
    rearm(c);
  }
  n_deferred_ = 0;
}

// The model's pump_all body for one connection.
void Engine::pump_conn(Conn& c) noexcept {
  if (c.live()) {
    pump(c);
    // [R-CONN-7] a graceful close sends DISCONNECT once nothing is outstanding
    if (c.state == ConnState::Closing && !c.disconnect_sent && ((c.unacked_recs == 0 && c.open_wrs == 0) || c.abort)) {
      send_control(c, fast::Opcode::Disconnect, c.abort ? 5 : 0);
      c.disconnect_sent = true;
      c.next_disconnect = now_ + std::max<uint32_t>(c.tx[0].rto_current, 1);
    }
  }
  // [R-CONN-8] waiting for the peer: an unacknowledged PSN, an unanswered PROBE, or a DISCONNECT.
  const bool w = c.keepalive_outstanding || (c.state == ConnState::Closing && c.disconnect_sent) ||
                 c.probes_out > 0 || c.unacked_recs > 0;
  if (w && !c.waiting) c.waiting_since = now_;
  c.waiting = w;
}

void Engine::rearm(Conn& c) noexcept { wheel_.arm(conn_slot(c), conn_deadline(c)); }

// The model's next_deadline, for one connection.
uint64_t Engine::conn_deadline(const Conn& c) const noexcept {
  if (c.state == ConnState::Connecting) return c.next_connect;  // [R-CONN-4]
  if (!c.live()) return kNever;
  if (!c.pdl_min_valid) {
    uint64_t m = kNever;
    for (uint32_t p = 0; p < c.paths; ++p) m = std::min(m, c.pdl[p]);
    c.pdl_min = m;
    c.pdl_min_valid = true;
  }
  uint64_t d = std::min(c.pdl_min, credit_deadline(c));
  if (c.waiting)
    d = std::min<uint64_t>(d, std::max(c.last_rx, c.waiting_since) + cfg_.peer_timeout_us);  // [R-CONN-8]
  else
    d = std::min<uint64_t>(d, std::max(c.last_rx, c.last_keepalive) + cfg_.keepalive_us);  // [R-CONN-6]
  if (c.state == ConnState::Closing && c.disconnect_sent) d = std::min(d, c.next_disconnect);
  return d;
}

// The model's fire_due_timers, for one connection at now_.
void Engine::fire_conn(Conn& c) noexcept {
  if (c.state == ConnState::Connecting) {
    if (c.next_connect > now_) return;
    if (c.connect_tries >= cfg_.connect_tries) {  // [R-CONN-4]
      fail_connection(c, Status::ConnectionFailed);
      return;
    }
    uint8_t* bth;
    io::PacketBuf* b = frame_begin(c, false, c.route0, &bth);
    fast::BthFields bf = this->bth(c, 0, 0);
    bf.dcid = 0;  // [R-HDR-4]
    fast::ConnFields cf;
    cf.scid = c.id;
    cf.isn = c.local_isn;
    cf.path_count = c.offer.paths;
    cf.stream_count = c.offer.streams;
    cf.max_payload = c.offer.max_payload;
    cf.window_cap = c.offer.window_cap;
    fast::put_connect(bth, bf, cf);
    frame_end(b, 0);
    ++c.connect_tries;
    c.next_connect = now_ + cfg_.connect_retry_us;
    return;
  }
  if (!c.live()) return;
  for (uint16_t p = 0; p < c.paths; ++p) {
    if (c.pdl[p] > now_) continue;  // nothing of this path is due: path_timers and the ACK check are no-ops
    path_timers(c, p);
    PathRx& r = c.rx[p];
    if (r.unacked > 0 && r.first_unacked + cfg_.ack_delay_us <= now_) send_ack(c, p);  // [R-ACK-3]
    path_changed(c, p);
  }
  // [R-CONN-8] peer failure
  if (c.waiting && std::max(c.last_rx, c.waiting_since) + cfg_.peer_timeout_us <= now_) {
    if (c.state == ConnState::Closing && c.disconnect_sent)
      release_closed(c);  // the peer never confirmed the close; nothing is outstanding
    else
      fail_connection(c, Status::ConnectionFailed);
    return;
  }
  // [R-CONN-6] keep-alive on the lowest-numbered ACTIVE path (path 0 if none)
  if (!c.waiting && std::max(c.last_rx, c.last_keepalive) + cfg_.keepalive_us <= now_) {
    uint16_t path = 0;
    for (uint16_t p = 0; p < c.paths; ++p)
      if (c.tx[p].state == PathState::Active) {
        path = p;
        break;
      }
    uint8_t* bth;
    io::PacketBuf* b = frame_begin(c, false, c.tx[path].route, &bth);
    fast::put_probe(bth, this->bth(c, path, fast::kFlagAr));
    frame_end(b, 0);
    ++counters_.probes_sent;
    c.keepalive_outstanding = true;
    c.keepalive_ts = static_cast<uint32_t>(now_);
    c.last_keepalive = now_;
  }
  // [R-CONN-7] DISCONNECT retransmission
  if (c.state == ConnState::Closing && c.disconnect_sent && c.next_disconnect <= now_) {
    send_control(c, fast::Opcode::Disconnect, c.abort ? 5 : 0);
    c.next_disconnect = now_ + std::max<uint32_t>(c.tx[0].rto_current, 1);
  }
}

// ---- frames ---------------------------------------------------------------------------------------

io::PacketBuf* Engine::frame_begin(const Conn& c, bool data, uint16_t route, uint8_t** bth) noexcept {
  io::PacketBuf* b = io_.alloc_tx();
  if (!b) {
    ++counters_.tx_no_buffer;  // built into a scratch buffer and dropped, like a lost packet
    b = &scratch_buf_;
  }
  *bth = begin_frame(peers_[c.peer].tpl, b, data, route);
  return b;
}

void Engine::frame_end(io::PacketBuf* b, uint32_t payload_len) noexcept {
  b->len = fast::finalize(b->data, payload_len);
  if (b == &scratch_buf_) return;
  ++counters_.tx_frames;
  log_output(0);
  txq_[n_txq_++] = b;
  if (n_txq_ == cfg_.burst) flush_tx();
}

void Engine::flush_tx() noexcept {
  if (n_txq_ == 0) return;
  io_.tx_burst(txq_.get(), n_txq_);
  n_txq_ = 0;
}

void Engine::send_control(Conn& c, fast::Opcode op, uint8_t reason) noexcept {
  const uint16_t route = c.tx ? c.tx[0].route : c.route0;
  uint8_t* bth;
  io::PacketBuf* b = frame_begin(c, false, route, &bth);
  const fast::BthFields bf = this->bth(c, 0, 0);
  if (op == fast::Opcode::Disconnect)
    fast::put_disconnect(bth, bf, reason);
  else
    fast::put_disconnect_ack(bth, bf);
  frame_end(b, 0);
}

// ---- incoming frames ------------------------------------------------------------------------------

// [R-SEC-10]: the IP version and source address a connection's packets must carry. Not the MAC: in a
// routed fabric it is the last hop's.
static bool from_peer(const Address& peer, const View& v) noexcept {
  if (v.ipv6() != peer.ipv6) return false;
  return std::memcmp(v.ip_src(), peer.ip.data(), peer.ipv6 ? 16 : 4) == 0;
}

void Engine::on_frame(const uint8_t* frame, uint32_t len) noexcept {
  ++counters_.rx_frames;
  View v;
  const fast::Error err = fast::decode(frame, len, cfg_.udp_port, v);
  if (err != fast::Error::None) {  // [R-VAL-3], [R-SEC-1]
    ++counters_.decode_errors[size_t(err) - 1];
    return;
  }
  const fast::Opcode op = v.opcode();
  if (op == fast::Opcode::Connect) {
    on_connect(v);
    return;
  }
  Conn* cp = find_conn(v.dcid());
  if (!cp) {  // [R-CONN-9], [R-SEC-2]
    ++counters_.unknown_dcid;
    return;
  }
  Conn& c = *cp;
  if (!from_peer(peers_[c.peer].addr, v)) {  // [R-SEC-10]
    ++counters_.foreign_source;
    return;
  }
  touch(c);
  if (c.state == ConnState::Closed) {
    if (op == fast::Opcode::Disconnect)  // the peer missed our DISCONNECT_ACK
      send_control(c, fast::Opcode::DisconnectAck, 0);
    else
      ++counters_.unknown_dcid;
    return;
  }
  if (c.state == ConnState::Failed) {
    ++counters_.unknown_dcid;
    return;
  }
  if (c.state == ConnState::Connecting) {
    if (op == fast::Opcode::Accept) {
      if (v.path_count() > c.offer.paths || v.stream_count() > c.offer.streams ||
          v.max_payload() > c.offer.max_payload || v.window_cap() > c.offer.window_cap) {
        ++counters_.bad_accepts;  // [R-CONN-3]: above our offer; keep waiting for a valid one
        return;
      }
      c.peer_id = v.scid();
      c.peer_isn = v.isn();
      c.paths = v.path_count();
      c.streams = v.stream_count();
      c.max_payload = v.max_payload();
      c.window_cap = v.window_cap();
      if (!setup_paths(c)) {
        c.paths = c.streams = 0;
        ++counters_.rejects_no_resources;
        fail_connection(c, Status::ConnectionFailed);
        return;
      }
      c.state = ConnState::Established;
      c.last_rx = now_;
      emit_event(ConnEvent{ConnEvent::Kind::Up, c.id, peers_[c.peer].addr, true, Status::Success});
    } else if (op == fast::Opcode::Reject) {
      c.last_rx = now_;
      fail_connection(c, Status::ConnectionFailed);
    } else {
      ++counters_.unknown_dcid;
    }
    return;
  }
  c.last_rx = now_;
  switch (op) {
    case fast::Opcode::Accept:  // duplicate ACCEPT after setup
    case fast::Opcode::Reject:
      return;
    case fast::Opcode::Disconnect:  // [R-CONN-7]
      send_control(c, fast::Opcode::DisconnectAck, 0);
      release_closed(c);
      return;
    case fast::Opcode::DisconnectAck:
      if (c.state == ConnState::Closing && c.disconnect_sent) release_closed(c);
      return;
    default:
      break;
  }
  const uint16_t path = v.path_id();
  if (path >= c.paths) {  // [R-PATH-1], [R-SEC-3]
    ++counters_.bad_path;
    return;
  }
  // [R-ACK-5]: every data or PROBE packet of the path sets its reply route, before it is processed.
  if (op != fast::Opcode::Ack && op != fast::Opcode::Nak) c.rx[path].reply_route = v.udp_sport();
  switch (op) {
    case fast::Opcode::Ack:
      on_ack(c, path, v);
      return;
    case fast::Opcode::Nak:
      on_nak(c, path, v);
      return;
    case fast::Opcode::Probe:
      on_probe(c, path, v);
      return;
    default:
      on_data(c, path, v);
      return;
  }
}

// ---- connections ----------------------------------------------------------------------------------

Conn* Engine::find_conn(uint32_t id) noexcept {
  const uint32_t s = id_map_.find(id);
  return s == kNone ? nullptr : &conns_[s];
}
const Conn* Engine::find_conn(uint32_t id) const noexcept {
  const uint32_t s = id_map_.find(id);
  return s == kNone ? nullptr : &conns_[s];
}

uint32_t Engine::find_peer(const Address& a) const noexcept {
  const uint64_t key = address_key(a);
  const uint32_t i = peer_map_.find(key);
  if (i != kNone && peers_[i].addr == a) return i;
  if (i == kNone) return kNone;
  // A 64-bit key collision: fall back to a scan (never seen in practice).
  for (uint32_t k = 0; k < peers_.capacity(); ++k)
    if (peers_[k].refs && peers_[k].addr == a) return k;
  return kNone;
}

uint32_t Engine::peer_for(const Address& a) noexcept {
  const uint32_t found = find_peer(a);
  if (found != kNone) return found;
  const uint32_t i = peers_.alloc();
  if (i == kNone) return kNone;
  Peer& p = peers_[i];
  p.addr = a;
  p.tpl = fast::FrameTemplate(path_config(cfg_, a));
  p.key = address_key(a);
  p.refs = 0;
  if (peer_map_.find(p.key) == kNone) peer_map_.insert(p.key, i);
  return i;
}

void Engine::release_peer(uint32_t i) noexcept {
  Peer& p = peers_[i];
  if (--p.refs) return;
  if (peer_map_.find(p.key) == i) peer_map_.erase(p.key);
  peers_.release(i);
}

// Frees the slot of the oldest closed or failed connection, so that a new one can use it. The model
// never forgets a connection; the engine keeps them (to answer a late DISCONNECT or a duplicate
// CONNECT) only until their slot is needed.
bool Engine::recycle_dead() noexcept {
  if (dead_head_ == kNone) return false;
  const uint32_t s = dead_head_;
  Conn& c = conns_[s];
  dead_head_ = c.dead_next;
  if (dead_head_ == kNone) dead_tail_ = kNone;
  id_map_.erase(c.id);
  if (c.mapped_responder) resp_map_.erase(uint64_t(c.peer) << 32 | c.peer_id);
  fs_remove(c);
  wheel_.disarm(s);
  release_peer(c.peer);
  c.mem.reset();
  c.in_use = false;
  conns_.release(s);
  return true;
}

uint32_t Engine::alloc_conn(const Address& peer, bool initiator) noexcept {
  uint32_t s = conns_.alloc();
  if (s == kNone && recycle_dead()) s = conns_.alloc();
  if (s == kNone) return kNone;
  const uint32_t pi = peer_for(peer);
  if (pi == kNone) {
    conns_.release(s);
    return kNone;
  }
  ++peers_[pi].refs;
  Conn& c = conns_[s];
  c.in_use = true;
  c.id = new_conn_id();
  c.peer = pi;
  c.initiator = initiator;
  c.local_isn = cfg_.isn ? *cfg_.isn : secrets_.next32(Secrets::Purpose::Isn);  // [R-CONN-2]
  c.last_rx = now_;
  c.last_keepalive = now_;
  c.credit_time = now_;
  id_map_.insert(c.id, s);
  return s;
}

// A fresh SCID [R-CONN-2]: unpredictable, non-zero [R-HDR-26], and naming no connection of this end
// (closed ones included, until their slot is recycled).
uint32_t Engine::new_conn_id() noexcept {
  if (cfg_.first_conn_id) return next_conn_id_++;
  for (;;) {
    const uint32_t id = secrets_.next32(Secrets::Purpose::ConnId);
    if (id != 0 && id_map_.find(id) == kNone) return id;
  }
}

// Sizes the per-path and per-stream state once the parameters are negotiated [R-CONN-3], [R-CONN-5]:
// one allocation per connection, at setup.
bool Engine::setup_paths(Conn& c) noexcept {
  const uint32_t P = c.paths, S = c.streams;
  const uint32_t pw = (P + 63) / 64, sw = (S + 1 + 63) / 64;
  const size_t bytes = align8(sizeof(PathTx) * P) + align8(sizeof(PathRx) * P) + align8(sizeof(SendStream) * S) +
                       align8(sizeof(RecvStream) * S) + 8 * size_t(P) + 8 * size_t(2 * pw + sw);
  c.mem.reset(new (std::nothrow) uint64_t[bytes / 8]);
  if (!c.mem) return false;
  c.mem_bytes = bytes;
  uint8_t* m = reinterpret_cast<uint8_t*>(c.mem.get());
  c.tx = new (m) PathTx[P];
  m += align8(sizeof(PathTx) * P);
  c.rx = new (m) PathRx[P];
  m += align8(sizeof(PathRx) * P);
  c.ss = new (m) SendStream[S];
  m += align8(sizeof(SendStream) * S);
  c.rs = new (m) RecvStream[S];
  m += align8(sizeof(RecvStream) * S);
  c.pdl = reinterpret_cast<uint64_t*>(m);
  m += 8 * size_t(P);
  uint64_t* w = reinterpret_cast<uint64_t*>(m);
  std::fill(w, w + 2 * pw + sw, 0);
  c.room = BitSpan{w, P};
  c.lostp = BitSpan{w + pw, P};
  c.slots = BitSpan{w + 2 * pw, S + 1};
  for (uint16_t p = 0; p < P; ++p) {
    PathTx& t = c.tx[p];
    t.route = default_route(c.id, p, 0);  // [R-PATH-5], appendix B
    t.fresh_routes = 1;
    t.snxt = t.suna = c.local_isn;  // [R-PSN-2]
    t.cwnd = c.init_cwnd();         // [R-CC-1]
    t.rto = t.rto_current = cfg_.rto_init_us;  // [R-RTO-3]
    t.last_ack = now_;
    c.rx[p].st = core::PathReceiveState::starting_at(c.peer_isn);  // [R-HDR-19] CPSN = ISN - 1
    c.pdl[p] = kNever;
    update_room(c, p);
  }
  c.pdl_min = kNever;
  c.pdl_min_valid = true;
  c.credit = c.credit_max();
  c.credit_time = now_;
  return true;
}

void Engine::on_connect(const View& v) noexcept {
  const Address from = source_address(v);
  const uint32_t scid = v.scid();
  // [R-CONN-4] a duplicate CONNECT gets the same ACCEPT again, byte for byte.
  const uint32_t pi = find_peer(from);
  if (pi != kNone) {
    const uint32_t s = resp_map_.find(uint64_t(pi) << 32 | scid);
    if (s != kNone) {
      send_accept(conns_[s], conns_[s].accept_ts);
      return;
    }
  }
  auto reject = [&](uint8_t reason) {
    // No connection: a one-off header for the sender, on the generator's route 0 of connection 0.
    io::PacketBuf* b = io_.alloc_tx();
    if (!b) {
      ++counters_.tx_no_buffer;
      return;
    }
    uint8_t* bth = begin_frame(fast::FrameTemplate(path_config(cfg_, from)), b, false, default_route(0, 0, 0));
    fast::BthFields bf;
    bf.dcid = scid;
    bf.timestamp = static_cast<uint32_t>(now_);
    fast::put_reject(bth, bf, reason);
    frame_end(b, 0);
  };
  if (!listening_) {  // [R-HDR-27] reason 1: not listening
    reject(1);
    return;
  }
  const uint32_t s = alloc_conn(from, false);
  if (s == kNone) {  // reason 2: resources exhausted
    ++counters_.rejects_no_resources;
    reject(2);
    return;
  }
  Conn& c = conns_[s];
  c.peer_id = scid;
  c.peer_isn = v.isn();
  // [R-CONN-3] each negotiated value is the minimum of the two offers
  c.paths = std::min(v.path_count(), cfg_.offer.paths);
  c.streams = std::min(v.stream_count(), cfg_.offer.streams);
  c.max_payload = std::min(v.max_payload(), cfg_.offer.max_payload);
  c.window_cap = std::min(v.window_cap(), cfg_.offer.window_cap);
  if (!setup_paths(c)) {
    c.paths = c.streams = 0;
    id_map_.erase(c.id);
    --next_conn_id_;
    release_peer(c.peer);
    c.in_use = false;
    conns_.release(s);
    ++counters_.rejects_no_resources;
    reject(2);
    return;
  }
  c.accept_ts = static_cast<uint32_t>(now_);
  send_accept(c, c.accept_ts);
  resp_map_.insert(uint64_t(c.peer) << 32 | scid, s);
  c.mapped_responder = true;
  c.state = ConnState::Established;
  touch(c);
  emit_event(ConnEvent{ConnEvent::Kind::Up, c.id, from, false, Status::Success});
}

void Engine::send_accept(Conn& c, uint32_t ts) noexcept {
  uint8_t* bth;
  io::PacketBuf* b = frame_begin(c, false, default_route(c.id, 0, 0), &bth);
  fast::BthFields bf = this->bth(c, 0, 0);
  bf.timestamp = ts;
  fast::ConnFields cf;
  cf.scid = c.id;
  cf.isn = c.local_isn;
  cf.path_count = c.paths;
  cf.stream_count = c.streams;
  cf.max_payload = c.max_payload;
  cf.window_cap = c.window_cap;
  fast::put_accept(bth, bf, cf);
  frame_end(b, 0);
}

void Engine::emit_event(const ConnEvent& e) noexcept {
  if (ev_tail_ - ev_head_ > ev_mask_) {
    ++counters_.event_overflow;
    return;
  }
  ev_[ev_tail_++ & ev_mask_] = e;
  log_output(2);
}

void Engine::complete(const WorkCompletion& wc) noexcept {
  if (cq_tail_ - cq_head_ > cq_mask_) {
    ++counters_.cq_overflow;
    return;
  }
  cq_[cq_tail_++ & cq_mask_] = wc;
  log_output(1);
}

// [R-CONN-8] / [R-CONN-7]: every outstanding work request completes with `wr_status`, in stream
// order; posted receives are flushed; nothing stays outstanding.
void Engine::teardown(Conn& c, Status wr_status) noexcept {
  for (uint16_t st = 0; st < c.streams; ++st) {
    for (uint32_t m = c.ss[st].head; m != kNone; m = msgs_[m].next) {
      Msg& w = msgs_[m];
      if (!w.done()) {
        w.flags |= kFailed;
        w.status = wr_status;
      }
    }
    c.ss[st].cursor = kNone;
    complete_sends(c, st);
  }
  flush_recvs(c);
  free_recvs(c);
  clear_tx(c);
  c.waiting = false;
  wheel_.disarm(conn_slot(c));
  // Queue the slot for recycling.
  c.dead_next = kNone;
  if (dead_tail_ == kNone)
    dead_head_ = conn_slot(c);
  else
    conns_[dead_tail_].dead_next = conn_slot(c);
  dead_tail_ = conn_slot(c);
}

void Engine::fail_connection(Conn& c, Status wr_status) noexcept {
  teardown(c, wr_status);
  c.state = ConnState::Failed;
  emit_event(ConnEvent{ConnEvent::Kind::Down, c.id, peers_[c.peer].addr, c.initiator, Status::ConnectionFailed});
}

void Engine::release_closed(Conn& c) noexcept {
  teardown(c, Status::Flushed);
  c.state = ConnState::Closed;
  emit_event(ConnEvent{ConnEvent::Kind::Down, c.id, peers_[c.peer].addr, c.initiator, Status::Success});
}

// ---- memory ---------------------------------------------------------------------------------------

const Region* Engine::region_by_rkey(uint32_t rkey) const noexcept {
  const uint32_t i = (rkey >> 8) - 1;
  if (i >= regions_.size()) return nullptr;
  const Region& r = regions_[i];
  return r.valid && r.rkey == rkey ? &r : nullptr;
}

// The model looks a local buffer up as "the first valid region containing it". While no two valid
// regions overlap, that is the region resolved at post time if it is still valid, found in O(1).
const Region* Engine::local_region(uint32_t hint, uint64_t va, uint64_t len) const noexcept {
  if (hint != kNone && !any_overlap_ && len > 0) {
    const Region& r = regions_[hint];
    if (r.valid && r.contains(va, len)) return &r;
  }
  return containing(va, len);
}

const Region* Engine::containing(uint64_t va, uint64_t len) const noexcept {
  for (const Region& r : regions_)
    if (r.valid && r.contains(va, len)) return &r;
  return nullptr;
}

void Engine::recompute_overlap() {
  std::vector<std::pair<uint64_t, uint64_t>> iv;
  for (const Region& r : regions_)
    if (r.valid && r.length) iv.emplace_back(r.iova, r.iova + r.length);
  std::sort(iv.begin(), iv.end());
  any_overlap_ = false;
  for (size_t i = 1; i < iv.size(); ++i)
    if (iv[i].first < iv[i - 1].second) any_overlap_ = true;
}

Result Engine::reg_mr(void* addr, uint64_t length, uint32_t access, MemoryRegion* out, std::optional<uint64_t> iova) {
  begin_event();
  Result res = Result::Ok;
  if (!out || (!addr && length)) {
    res = Result::InvalidArgument;
  } else if (regions_.size() >= cfg_.max_regions || regions_.size() >= 0xFFFFFEu) {
    res = Result::NoResources;
  } else {
    const uint32_t i = static_cast<uint32_t>(regions_.size());
    Region r;
    r.host = static_cast<uint8_t*>(addr);
    r.iova = iova ? *iova : reinterpret_cast<uint64_t>(addr);
    r.length = length;
    r.access = access;
    r.lkey = 0x1000u + i;
    r.rkey = ((i + 1u) << 8) | ((i * 97u + 13u) & 0xFFu);  // [R-MEM-1] generation mixed in
    r.valid = true;
    for (const Region& o : regions_)
      if (o.valid && length && o.length && r.iova < o.iova + o.length && o.iova < r.iova + length)
        any_overlap_ = true;
    regions_.push_back(r);
    *out = MemoryRegion{r.lkey, r.rkey, r.iova, r.length};
  }
  end_event();
  flush_tx();
  return res;
}

Result Engine::dereg_mr(uint32_t lkey) {
  begin_event();
  Result res = Result::UnknownKey;
  const uint32_t i = lkey - 0x1000u;
  if (i < regions_.size() && regions_[i].valid && regions_[i].lkey == lkey) {
    regions_[i].valid = false;  // [R-MEM-2]
    recompute_overlap();
    res = Result::Ok;
  }
  end_event();
  flush_tx();
  return res;
}

uint8_t* Engine::resolve(uint64_t iova, uint64_t len) const noexcept {
  const Region* r = containing(iova, len);
  return r ? r->host + (iova - r->iova) : nullptr;
}

// ---- API ------------------------------------------------------------------------------------------

Result Engine::connect(const Address& peer, uint32_t* conn, const ConnParams* offer) {
  const ConnParams o = offer ? *offer : cfg_.offer;
  if (o.paths < 1 || o.paths > 256 || o.streams < 1 || o.max_payload < 256 || o.max_payload > 8192 ||
      o.max_payload % 64 || o.window_cap < 1 || o.window_cap > 256)
    return Result::InvalidArgument;
  begin_event();
  Result res = Result::Ok;
  const uint32_t s = alloc_conn(peer, true);
  if (s == kNone) {
    res = Result::NoResources;
  } else {
    Conn& c = conns_[s];
    c.offer = o;
    // Until ACCEPT arrives, path 0 exists only to give CONNECT its route.
    c.route0 = default_route(c.id, 0, 0);
    c.state = ConnState::Connecting;
    c.next_connect = now_;  // sent by the timer pass of end_event
    if (conn) *conn = c.id;
    touch(c);
  }
  end_event();
  flush_tx();
  return res;
}

void Engine::listen(bool on) { listening_ = on; }

Result Engine::close(uint32_t conn, bool abort) {
  begin_event();
  Result res = Result::Ok;
  Conn* cp = find_conn(conn);
  if (!cp || cp->state != ConnState::Established) {
    res = Result::NotConnected;
  } else {
    Conn& c = *cp;
    c.close_requested = true;
    c.abort = abort;
    c.state = ConnState::Closing;
    if (abort) {  // [R-CONN-7] an abort flushes without waiting
      for (uint16_t st = 0; st < c.streams; ++st) {
        for (uint32_t m = c.ss[st].head; m != kNone; m = msgs_[m].next) {
          Msg& w = msgs_[m];
          if (!w.done()) {
            w.flags |= kFailed;
            w.status = Status::Flushed;
          }
        }
        c.ss[st].cursor = kNone;
        c.slots.put(st, false);
        complete_sends(c, st);
      }
      clear_tx(c);
    }
    touch(c);
  }
  end_event();
  flush_tx();
  return res;
}

Result Engine::post(WcOpcode op, uint32_t conn, uint16_t stream, uint64_t wr_id, const Sge& local, uint64_t remote_va,
                    uint32_t rkey, bool has_imm, uint32_t imm) {
  begin_event();
  Result res = Result::Ok;
  Conn* cp = find_conn(conn);
  const uint32_t li = local.lkey - 0x1000u;
  const bool need_write = op == WcOpcode::Read;
  if (!cp || cp->state != ConnState::Established || cp->close_requested) {
    res = Result::NotConnected;
  } else if (stream >= cp->streams) {
    res = Result::InvalidStream;
  } else if (local.length > kMaxMessage) {
    res = Result::MessageTooLong;
  } else if (li >= regions_.size() || !regions_[li].valid || regions_[li].lkey != local.lkey ||
             !regions_[li].contains(local.addr, local.length) ||
             (need_write && !(regions_[li].access & access::kLocalWrite))) {
    res = Result::LocalProtection;  // [R-MEM-4]
  } else {
    const uint32_t mi = msgs_.alloc();
    if (mi == kNone) {
      res = Result::NoResources;
    } else {
      Conn& c = *cp;
      Msg& m = msgs_[mi];
      SendStream& st = c.ss[stream];
      m.op = op;
      m.wr_id = wr_id;
      m.stream = stream;
      m.local_va = local.addr;
      m.length = local.length;
      m.remote_va = remote_va;
      m.rkey = rkey;
      m.imm = imm;
      m.region = li;
      if (has_imm) m.flags |= kHasImm;
      m.msn = st.next_msn++;  // [R-HDR-10]
      if (op == WcOpcode::Send || op == WcOpcode::WriteImm) m.rsn = st.next_rsn++;  // [R-HDR-17]
      // [R-HDR-14] segments; a Read is one READ_REQ
      m.total_segments = op == WcOpcode::Read ? 1 : (m.length == 0 ? 1 : (m.length + c.max_payload - 1) / c.max_payload);
      m.next = kNone;
      if (st.tail == kNone)
        st.head = mi;
      else
        msgs_[st.tail].next = mi;
      st.tail = mi;
      if (st.cursor == kNone) {
        st.cursor = mi;
        c.slots.put(stream, true);
      }
      ++c.open_wrs;
      touch(c);
    }
  }
  end_event();
  flush_tx();
  return res;
}

Result Engine::post_recv(uint32_t conn, uint16_t stream, uint64_t wr_id, const Sge& buf) {
  begin_event();
  Result res = Result::Ok;
  Conn* cp = find_conn(conn);
  const uint32_t li = buf.lkey - 0x1000u;
  if (!cp || cp->state != ConnState::Established || cp->close_requested) {
    res = Result::NotConnected;
  } else if (stream >= cp->streams) {
    res = Result::InvalidStream;
  } else if (buf.length > kMaxMessage) {
    res = Result::MessageTooLong;
  } else if (li >= regions_.size() || !regions_[li].valid || regions_[li].lkey != buf.lkey ||
             !regions_[li].contains(buf.addr, buf.length) || !(regions_[li].access & access::kLocalWrite)) {
    res = Result::LocalProtection;  // [R-MEM-4]
  } else {
    const uint32_t ri = recvs_.alloc();
    if (ri == kNone) {
      res = Result::NoResources;
    } else {
      Conn& c = *cp;
      RecvStream& rs = c.rs[stream];
      Recv& r = recvs_[ri];
      r.wr_id = wr_id;
      r.va = buf.addr;
      r.length = buf.length;
      r.region = li;
      r.rsn = rs.next_post_rsn++;  // [R-MATCH-1]
      r.next = kNone;
      // [R-REL-9] its message was already abandoned by the sender: it completes at once.
      for (uint32_t* q = &rs.canceled; *q != kNone; q = &recvs_[*q].next) {
        if (recvs_[*q].rsn == r.rsn) {
          const uint32_t gone = *q;
          *q = recvs_[gone].next;
          recvs_.release(gone);
          r.done = true;
          r.status = Status::Canceled;
          break;
        }
      }
      if (rs.tail == kNone)
        rs.head = ri;
      else
        recvs_[rs.tail].next = ri;
      rs.tail = ri;
      ++c.open_recvs;
      complete_recvs(c, stream);
      touch(c);
    }
  }
  end_event();
  flush_tx();
  return res;
}

int Engine::poll_cq(WorkCompletion* out, int max) noexcept {
  int n = 0;
  while (n < max && cq_head_ != cq_tail_) out[n++] = cq_[cq_head_++ & cq_mask_];
  return n;
}

int Engine::poll_events(ConnEvent* out, int max) noexcept {
  int n = 0;
  while (n < max && ev_head_ != ev_tail_) out[n++] = ev_[ev_head_++ & ev_mask_];
  return n;
}

void Engine::advance() noexcept {
  in_timer_call_ = true;
  begin_event();
  end_event();
  in_timer_call_ = false;
  flush_tx();
}

void Engine::input(const uint8_t* frame, uint32_t len) noexcept {
  begin_event();
  on_frame(frame, len);
  end_event();
  flush_tx();
}

// The poll loop. A frame that carries its arrival time (a NIC rx timestamp) is one event at that
// time, exactly as in the lockstep calls: the timers due by its arrival fire first, at their own
// times [R-CONV-7]. A frame without one arrived at some unknown time since the last poll; it is
// processed at the time read at the start of the call, before the timers that fell due meanwhile,
// and those then fire once at that time instead of being replayed at their past deadlines (the time
// is read again before each further burst of the call, so it is the arrival within a burst): a host
// that was busy or descheduled must not mistake its own delay for a silent network (a replay would
// run RTO after RTO with backoff before any waiting ACK could be read).
int Engine::progress() noexcept {
  in_timer_call_ = true;
  uint64_t t = clock_.now_us();
  if (t < now_) t = now_;
  int total = 0;
  bool unstamped = false;
  while (total < kRxBudget) {
    if (total > 0) {
      // A long batch must not hold back what its first bursts built, nor stamp later frames with
      // the time the call began: their timestamps and transmission times [R-HDR-6] stay within a
      // burst of the truth (the timers still wait for the whole batch, as above).
      flush_tx();
      const uint64_t c = clock_.now_us();
      if (c > t) t = c;
    }
    const uint16_t n = io_.rx_burst(rxq_.get(), cfg_.burst);
    for (uint16_t i = 0; i < n; ++i) {
      const uint64_t at = rxq_[i]->rx_time;
      if (at == 0) {
        unstamped = unstamped_io_ = true;
        now_ = t;
      } else if (at > now_) {
        rearm_deferred();  // the wheel must be exact before it is consulted
        run_due(std::min(at, t));
        now_ = std::min(at, t);
      }
      on_frame(rxq_[i]->data, rxq_[i]->len);
      io_.free_rx(rxq_[i]);
      pump_dirty(true);
    }
    total += n;
    if (n < cfg_.burst) break;
  }
  rearm_deferred();
  if (!unstamped && !(total == 0 && unstamped_io_)) run_due(t);  // timers at their own times
  now_ = t;
  end_event();  // timers due by t (any left: overdue ones, fired once at t)
  in_timer_call_ = false;
  flush_tx();
  return total;
}

void Engine::record_output_order(bool on) noexcept {
  if (on && !order_) order_.reset(new uint8_t[kOrderLog]);
  log_order_ = on;
  n_order_ = 0;
}

size_t Engine::take_output_order(uint8_t* kinds, size_t max) noexcept {
  const size_t n = std::min<size_t>(n_order_, max);
  if (n) std::memcpy(kinds, order_.get(), n);
  n_order_ = 0;
  return n;
}

std::optional<Time> Engine::next_deadline() const noexcept {
  uint64_t d = wheel_.min();
  if (fs_next_ != 0 && fs_next_ < d) d = fs_next_;
  if (d == kNever) return std::nullopt;
  return d;
}

// ---- observation ----------------------------------------------------------------------------------

std::optional<ConnState> Engine::connection_state(uint32_t conn) const noexcept {
  const Conn* c = find_conn(conn);
  if (!c) return std::nullopt;
  return c->state;
}

std::optional<PathInfo> Engine::path_info(uint32_t conn, uint16_t path) const noexcept {
  const Conn* c = find_conn(conn);
  if (!c || !c->tx || path >= c->paths || c->state == ConnState::Connecting) return std::nullopt;
  const PathTx& t = c->tx[path];
  PathInfo v;
  v.state = t.state;
  v.route = t.route;
  v.snxt = t.snxt;
  v.suna = t.suna;
  v.in_flight = t.block == kNone ? 0 : blocks_[t.block].n_inflight;
  v.cwnd = t.cwnd;
  v.srtt = t.srtt;
  v.rto = t.rto_current;
  v.retransmissions = t.retx_by_cause.total();
  v.retx_by_cause = t.retx_by_cause;
  v.repaths = t.repaths;
  v.packets_sent = t.packets_sent;
  v.rate_ceiling_mbps = rate_limited(*c, now_) ? c->ceiling : 0;
  v.credit_bits = credit_at(*c, now_);
  return v;
}

uint16_t Engine::path_count(uint32_t conn) const noexcept {
  const Conn* c = find_conn(conn);
  return c ? c->paths : 0;
}
uint16_t Engine::stream_count(uint32_t conn) const noexcept {
  const Conn* c = find_conn(conn);
  return c ? c->streams : 0;
}
uint16_t Engine::max_payload(uint32_t conn) const noexcept {
  const Conn* c = find_conn(conn);
  return c ? c->max_payload : 0;
}

int Engine::rate_shares(uint32_t* ids, uint32_t* shares, int max) const noexcept {
  int n = 0;
  for (uint32_t s = fs_head_; s != kNone && n < max; s = conns_[s].fs_next) scratch_[n++] = s;
  std::sort(scratch_.get(), scratch_.get() + n, [&](uint32_t a, uint32_t b) { return conns_[a].id < conns_[b].id; });
  for (int i = 0; i < n; ++i) {
    ids[i] = conns_[scratch_[i]].id;
    shares[i] = conns_[scratch_[i]].share;
  }
  return n;
}

size_t Engine::outstanding_work(uint32_t conn) const noexcept {
  const Conn* c = find_conn(conn);
  return c ? size_t(c->open_wrs) + c->open_recvs : 0;
}

size_t Engine::connections(uint32_t* out, size_t max) const noexcept {
  size_t n = 0;
  for (uint32_t s = 0; s < conns_.capacity(); ++s)
    if (conns_[s].in_use) scratch_[n++] = conns_[s].id;
  std::sort(scratch_.get(), scratch_.get() + n);
  for (size_t i = 0; i < n && i < max; ++i) out[i] = scratch_[i];
  return n;
}

MemoryUsage Engine::memory_usage() const noexcept {
  MemoryUsage u;
  u.preallocated_bytes = prealloc_bytes_;
  for (uint32_t s = 0; s < conns_.capacity(); ++s)
    if (conns_[s].in_use) {
      ++u.connections;
      u.connection_bytes += sizeof(Conn) + conns_[s].mem_bytes;
    }
  return u;
}

}  // namespace mroce::engine

// ---- the public Device ----------------------------------------------------------------------------

namespace mroce {

using engine::Engine;

const char* status_name(Status s) noexcept {
  switch (s) {
    case Status::Success: return "Success";
    case Status::LocalLength: return "LocalLength";
    case Status::RemoteAccess: return "RemoteAccess";
    case Status::RemoteInvalid: return "RemoteInvalid";
    case Status::RemoteLength: return "RemoteLength";
    case Status::RnrRetryExceeded: return "RnrRetryExceeded";
    case Status::ConnectionFailed: return "ConnectionFailed";
    case Status::Flushed: return "Flushed";
    case Status::Canceled: return "Canceled";
  }
  return "UNKNOWN";
}

const char* wc_opcode_name(WcOpcode op) noexcept {
  switch (op) {
    case WcOpcode::Send: return "Send";
    case WcOpcode::Write: return "Write";
    case WcOpcode::WriteImm: return "WriteImm";
    case WcOpcode::Read: return "Read";
    case WcOpcode::Recv: return "Recv";
  }
  return "UNKNOWN";
}

const char* result_name(Result r) noexcept {
  switch (r) {
    case Result::Ok: return "Ok";
    case Result::NotConnected: return "NotConnected";
    case Result::InvalidStream: return "InvalidStream";
    case Result::MessageTooLong: return "MessageTooLong";
    case Result::LocalProtection: return "LocalProtection";
    case Result::NoResources: return "NoResources";
    case Result::InvalidArgument: return "InvalidArgument";
    case Result::UnknownKey: return "UnknownKey";
  }
  return "UNKNOWN";
}

const char* path_state_name(PathState s) noexcept {
  switch (s) {
    case PathState::Active: return "ACTIVE";
    case PathState::Suspect: return "SUSPECT";
    case PathState::Failed: return "FAILED";
  }
  return "UNKNOWN";
}

const char* conn_state_name(ConnState s) noexcept {
  switch (s) {
    case ConnState::Connecting: return "Connecting";
    case ConnState::Established: return "Established";
    case ConnState::Closing: return "Closing";
    case ConnState::Closed: return "Closed";
    case ConnState::Failed: return "Failed";
  }
  return "UNKNOWN";
}

uint64_t MemoryUsage::connection_base_bytes() noexcept { return sizeof(engine::Conn); }
uint64_t MemoryUsage::per_path_bytes() noexcept {
  return sizeof(engine::PathTx) + sizeof(engine::PathRx) + 8;  // + the path's deadline
}
uint64_t MemoryUsage::per_stream_bytes() noexcept { return sizeof(engine::SendStream) + sizeof(engine::RecvStream); }

std::unique_ptr<Device> Device::open(const DeviceConfig& config, io::PacketIo& io, const io::Clock& clock, Result* err) {
  auto e = std::make_unique<Engine>(config, io, clock);
  if (!e->ok()) {
    if (err) *err = Result::InvalidArgument;
    return nullptr;
  }
  if (err) *err = Result::Ok;
  return std::unique_ptr<Device>(new Device(std::move(e)));
}

Device::Device(std::unique_ptr<Engine> e) : e_(std::move(e)) {}
Device::~Device() = default;

Result Device::reg_mr(void* addr, uint64_t length, uint32_t access, MemoryRegion* out, std::optional<uint64_t> iova) {
  return e_->reg_mr(addr, length, access, out, iova);
}
Result Device::dereg_mr(uint32_t lkey) { return e_->dereg_mr(lkey); }
Result Device::connect(const Address& peer, uint32_t* conn, const ConnParams* offer) {
  return e_->connect(peer, conn, offer);
}
void Device::listen(bool on) { e_->listen(on); }
Result Device::close(uint32_t conn, bool abort) { return e_->close(conn, abort); }
Result Device::post_send(uint32_t conn, uint16_t stream, uint64_t wr_id, const Sge& local) {
  return e_->post(WcOpcode::Send, conn, stream, wr_id, local, 0, 0, false, 0);
}
Result Device::post_write(uint32_t conn, uint16_t stream, uint64_t wr_id, const Sge& local, uint64_t remote_addr,
                          uint32_t rkey) {
  return e_->post(WcOpcode::Write, conn, stream, wr_id, local, remote_addr, rkey, false, 0);
}
Result Device::post_write_imm(uint32_t conn, uint16_t stream, uint64_t wr_id, const Sge& local, uint64_t remote_addr,
                              uint32_t rkey, uint32_t imm) {
  return e_->post(WcOpcode::WriteImm, conn, stream, wr_id, local, remote_addr, rkey, true, imm);
}
Result Device::post_read(uint32_t conn, uint16_t stream, uint64_t wr_id, const Sge& local_sink, uint64_t remote_addr,
                         uint32_t rkey) {
  return e_->post(WcOpcode::Read, conn, stream, wr_id, local_sink, remote_addr, rkey, false, 0);
}
Result Device::post_recv(uint32_t conn, uint16_t stream, uint64_t wr_id, const Sge& buffer) {
  return e_->post_recv(conn, stream, wr_id, buffer);
}
int Device::poll_cq(WorkCompletion* out, int max) noexcept { return e_->poll_cq(out, max); }
int Device::poll_events(ConnEvent* out, int max) noexcept { return e_->poll_events(out, max); }
int Device::progress() noexcept { return e_->progress(); }
std::optional<Time> Device::next_deadline() const noexcept { return e_->next_deadline(); }
void testing::DeviceHooks::advance(Device& d) noexcept { d.e_->advance(); }
void testing::DeviceHooks::input(Device& d, const uint8_t* frame, uint32_t len) noexcept { d.e_->input(frame, len); }
void testing::DeviceHooks::record_output_order(Device& d, bool on) noexcept { d.e_->record_output_order(on); }
size_t testing::DeviceHooks::take_output_order(Device& d, uint8_t* kinds, size_t max) noexcept {
  return d.e_->take_output_order(kinds, max);
}
std::optional<ConnState> Device::connection_state(uint32_t conn) const noexcept { return e_->connection_state(conn); }
std::optional<PathInfo> Device::path_info(uint32_t conn, uint16_t path) const noexcept {
  return e_->path_info(conn, path);
}
uint16_t Device::path_count(uint32_t conn) const noexcept { return e_->path_count(conn); }
uint16_t Device::stream_count(uint32_t conn) const noexcept { return e_->stream_count(conn); }
uint16_t Device::max_payload(uint32_t conn) const noexcept { return e_->max_payload(conn); }
int Device::rate_shares(uint32_t* conns, uint32_t* shares, int max) const noexcept {
  return e_->rate_shares(conns, shares, max);
}
size_t Device::outstanding_work(uint32_t conn) const noexcept { return e_->outstanding_work(conn); }
size_t Device::connections(uint32_t* out, size_t max) const noexcept { return e_->connections(out, max); }
uint8_t* Device::resolve(uint64_t iova, uint64_t len) const noexcept { return e_->resolve(iova, len); }
const Counters& Device::counters() const noexcept { return e_->counters(); }
MemoryUsage Device::memory_usage() const noexcept { return e_->memory_usage(); }
const DeviceConfig& Device::config() const noexcept { return e_->config(); }

}  // namespace mroce
