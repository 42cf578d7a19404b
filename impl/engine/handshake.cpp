// The handshake [R-CONN-3], [R-CONN-4]: connect() and the CONNECT retries, the responder's answer to
// a CONNECT (ACCEPT, the same ACCEPT again for a duplicate, or REJECT), the initiator's handling of
// ACCEPT and REJECT, and the per-connection state sized at setup. Connection slots come from the
// connection table (conn_table.hpp); the engine's side of allocation is here.
#include <algorithm>
#include <new>

#include "engine/engine.hpp"

namespace mroce::engine {

namespace {

Address source_address(const View& v) noexcept {
  Address a;
  a.mac = v.eth_src();
  a.ipv6 = v.ipv6();
  std::memcpy(a.ip.data(), v.ip_src(), v.ipv6() ? 16 : 4);
  return a;
}

constexpr size_t align8(size_t n) { return (n + 7) & ~size_t{7}; }

}  // namespace

// ---- connection slots -----------------------------------------------------------------------------

// Frees the slot of the oldest closed or failed connection, so that a new one can use it. The model
// never forgets a connection; the engine keeps them (to answer a late DISCONNECT or a duplicate
// CONNECT) only until their slot is needed.
bool Engine::recycle_dead() noexcept {
  const uint32_t s = conns_.pop_dead();
  if (s == kNone) return false;
  fair_.remove(conns_[s]);
  wheel_.disarm(s);
  conns_.free(s);
  return true;
}

uint32_t Engine::alloc_conn(const Address& peer, bool initiator) noexcept {
  uint32_t s = conns_.alloc_slot();
  if (s == kNone && recycle_dead()) s = conns_.alloc_slot();
  if (s == kNone || !conns_.open(s, peer, initiator, secrets_)) return kNone;
  Conn& c = conns_[s];
  c.local_isn = cfg_.isn ? *cfg_.isn : secrets_.next32(Secrets::Purpose::Isn);  // [R-CONN-2]
  c.alive.last_rx = now_;
  c.alive.last_keepalive = now_;
  c.rate.credit_time = now_;
  return s;
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
  c.send_streams = new (m) SendStream[S];
  m += align8(sizeof(SendStream) * S);
  c.recv_streams = new (m) RecvStream[S];
  m += align8(sizeof(RecvStream) * S);
  c.send.path_due = reinterpret_cast<uint64_t*>(m);
  m += 8 * size_t(P);
  uint64_t* w = reinterpret_cast<uint64_t*>(m);
  std::fill(w, w + 2 * pw + sw, 0);
  c.send.paths_with_room = BitSpan{w, P};
  c.send.paths_with_lost = BitSpan{w + pw, P};
  c.send.new_data_slots = BitSpan{w + 2 * pw, S + 1};
  for (uint16_t p = 0; p < P; ++p) {
    PathTx& t = c.tx[p];
    t.route = default_route(c.id, p, 0);  // [R-PATH-5], appendix B
    t.fresh_routes = 1;
    t.snxt = t.suna = c.local_isn;             // [R-PSN-2]
    t.cwnd = c.init_cwnd();                    // [R-CC-1]
    t.rto = t.rto_current = cfg_.rto_init_us;  // [R-RTO-3]
    t.last_ack = now_;
    c.rx[p].st = core::PathReceiveState::starting_at(c.peer_isn);  // [R-HDR-19] CPSN = ISN - 1
    c.send.path_due[p] = kNever;
    update_room(c, p);
  }
  c.send.path_due_min = kNever;
  c.send.path_due_min_valid = true;
  c.rate.credit = c.credit_max();
  c.rate.credit_time = now_;
  return true;
}

// ---- initiator ------------------------------------------------------------------------------------

Result Engine::connect(const Address& peer, uint32_t* conn, const ConnParams* offer, uint32_t pd) {
  const ConnParams o = offer ? *offer : cfg_.offer;
  if (!valid_offer(o) || pd >= pds_.size() || !pds_[pd]) return Result::InvalidArgument;
  return as_event([&] {
    const uint32_t s = alloc_conn(peer, true);
    if (s == kNone) return Result::NoResources;
    Conn& c = conns_[s];
    c.hs.offer = o;
    c.pd = pd;  // [R-MEM-5]
    // Until ACCEPT arrives, path 0 exists only to give CONNECT its route.
    c.hs.route0 = default_route(c.id, 0, 0);
    c.state = ConnState::Connecting;
    c.hs.next_try = now_;  // sent by the timer pass of end_event
    if (conn) *conn = c.id;
    touch(c);
    return Result::Ok;
  });
}

// [R-CONN-4] CONNECT, retransmitted every CONNECT_RETRY until CONNECT_TRIES have gone unanswered.
void Engine::connect_timer(Conn& c) noexcept {
  if (c.hs.next_try > now_) return;
  if (c.hs.tries >= cfg_.connect_tries) {  // [R-CONN-4]
    fail_connection(c, Status::ConnectionFailed);
    return;
  }
  uint8_t* bth;
  io::PacketBuf* b = frame_begin(c, false, c.hs.route0, &bth);
  fast::BthFields bf = this->bth(c, 0, 0);
  bf.dcid = 0;  // [R-HDR-4]
  fast::ConnFields cf;
  cf.scid = c.id;
  cf.isn = c.local_isn;
  cf.path_count = c.hs.offer.paths;
  cf.stream_count = c.hs.offer.streams;
  cf.max_payload = c.hs.offer.max_payload;
  cf.window_cap = c.hs.offer.window_cap;
  fast::put_connect(bth, bf, cf);
  frame_end(b, 0);
  ++c.hs.tries;
  c.hs.next_try = now_ + cfg_.connect_retry_us;
}

// A frame for a connection still connecting: ACCEPT sets it up, REJECT fails it.
void Engine::on_connect_reply(Conn& c, const View& v) noexcept {
  const fast::Opcode op = v.opcode();
  if (op == fast::Opcode::Accept) {
    const ConnParams& offer = c.hs.offer;
    if (v.path_count() > offer.paths || v.stream_count() > offer.streams || v.max_payload() > offer.max_payload ||
        v.window_cap() > offer.window_cap) {
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
    c.alive.last_rx = now_;
    emit_event(ConnEvent{ConnEvent::Kind::Up, c.id, conns_.peer(c.peer).addr, true, Status::Success});
  } else if (op == fast::Opcode::Reject) {
    c.alive.last_rx = now_;
    fail_connection(c, Status::ConnectionFailed);
  } else {
    ++counters_.unknown_dcid;
  }
}

// ---- responder ------------------------------------------------------------------------------------

void Engine::on_connect(const View& v) noexcept {
  const Address from = source_address(v);
  const uint32_t scid = v.scid();
  // [R-CONN-4] a duplicate CONNECT gets the same ACCEPT again, byte for byte.
  const uint32_t dup = conns_.find_responder(from, scid);
  if (dup != kNone) {
    send_accept(conns_[dup], conns_[dup].hs.accept_ts);
    return;
  }
  auto reject = [&](uint8_t reason) {
    // No connection: a one-off header for the sender, on the generator's route 0 of connection 0.
    uint8_t* bth;
    io::PacketBuf* b = frames_.begin(fast::FrameTemplate(path_config(cfg_, from)), false, default_route(0, 0, 0), &bth);
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
  if (conns_.unconfirmed_from(from) >= unconfirmed_limit_) {  // [R-SEC-12]: reason 2, the source's share
    ++counters_.rejects_unconfirmed;
    reject(2);
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
  c.pd = listen_pd_;  // [R-MEM-5]
  // [R-CONN-3] each negotiated value is the minimum of the two offers
  c.paths = std::min(v.path_count(), cfg_.offer.paths);
  c.streams = std::min(v.stream_count(), cfg_.offer.streams);
  c.max_payload = std::min(v.max_payload(), cfg_.offer.max_payload);
  c.window_cap = std::min(v.window_cap(), cfg_.offer.window_cap);
  if (!setup_paths(c)) {
    c.paths = c.streams = 0;
    conns_.undo_open(s);
    ++counters_.rejects_no_resources;
    reject(2);
    return;
  }
  c.hs.accept_ts = static_cast<uint32_t>(now_);
  send_accept(c, c.hs.accept_ts);
  conns_.map_responder(c);
  conns_.set_unconfirmed(c, true);  // until the initiator sends anything on it [R-SEC-12]
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

}  // namespace mroce::engine
