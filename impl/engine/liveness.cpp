// Liveness and teardown: keep-alive [R-CONN-6], peer failure [R-CONN-8], close and the DISCONNECT
// exchange [R-CONN-7], and the teardown that completes everything outstanding when a connection ends.
#include <algorithm>

#include "engine/engine.hpp"

namespace mroce::engine {

// A poll of unstamped ports after a gap longer than kStallMinUs: the host (or the application) was
// not listening, and the peer's frames of that time may not exist yet (a peer on the same host, or
// in the same thread, stalled too) or sit unread. Logged so that the timers that judge the peer by
// its silence do not count the whole gap.
void Engine::note_poll(uint64_t t) noexcept {
  if (polled_ && t > last_poll_ + kStallMinUs) {
    stalls_[n_stalls_ % kStallLog] = {t, t - last_poll_};
    ++n_stalls_;
  }
  last_poll_ = t;
  polled_ = true;
}

// What the stalls that ended after `ref` took beyond `allowance` each (0 in the common case: no
// stall since): the time a timer started at `ref` must not count as the peer's silence.
uint64_t Engine::stalled_since(uint64_t ref, uint64_t allowance) const noexcept {
  if (n_stalls_ == 0 || stalls_[(n_stalls_ - 1) % kStallLog].at <= ref) return 0;
  uint64_t e = 0;
  const uint32_t kept = std::min(n_stalls_, kStallLog);
  for (uint32_t i = 0; i < kept; ++i) {
    const Stall& s = stalls_[(n_stalls_ - 1 - i) % kStallLog];
    if (s.at <= ref) break;
    if (s.gap > allowance) e += s.gap - allowance;
  }
  return e;
}

// [R-CONN-8] a peer silent for PEER_TIMEOUT while we wait for it has failed; silent while we
// listened: a host stall counts up to a quarter of PEER_TIMEOUT.
uint64_t Engine::peer_failure_at(const Conn& c) const noexcept {
  const uint64_t ref = std::max(c.alive.last_rx, c.alive.waiting_since);
  return ref + cfg_.peer_timeout_us + stalled_since(ref, cfg_.peer_timeout_us / 4);
}

namespace {

// [R-CONN-6] a connection silent for KEEPALIVE while we wait for nothing probes its peer.
uint64_t keepalive_at(const Conn& c, const DeviceConfig& cfg) noexcept {
  return std::max(c.alive.last_rx, c.alive.last_keepalive) + cfg.keepalive_us;
}

}  // namespace

// The liveness part of the connection's next deadline.
uint64_t Engine::liveness_deadline(const Conn& c) const noexcept {
  uint64_t d = c.alive.waiting ? peer_failure_at(c) : keepalive_at(c, cfg_);
  if (c.state == ConnState::Closing && c.closing.disconnect_sent) d = std::min(d, c.closing.next_disconnect);
  return d;
}

// [R-CONN-7] the DISCONNECT is retransmitted every RTO of path 0 (at least 1 µs).
uint64_t Engine::disconnect_retry_at(const Conn& c) const noexcept {
  return now_ + std::max<uint32_t>(c.tx[0].rto_current, 1);
}

// The liveness timers of a live connection, after its path timers (the model's order).
void Engine::liveness_timers(Conn& c) noexcept {
  // [R-CONN-8] peer failure
  if (c.alive.waiting && peer_failure_at(c) <= now_) {
    if (c.state == ConnState::Closing && c.closing.disconnect_sent)
      release_closed(c);  // the peer never confirmed the close; nothing is outstanding
    else
      fail_connection(c, Status::ConnectionFailed);
    return;
  }
  // [R-CONN-6] keep-alive on the lowest-numbered ACTIVE path (path 0 if none)
  if (!c.alive.waiting && keepalive_at(c, cfg_) <= now_) {
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
    c.alive.keepalive_outstanding = true;
    c.alive.keepalive_ts = static_cast<uint32_t>(now_);
    c.alive.last_keepalive = now_;
  }
  // [R-CONN-7] DISCONNECT retransmission
  if (c.state == ConnState::Closing && c.closing.disconnect_sent && c.closing.next_disconnect <= now_) {
    send_control(c, fast::Opcode::Disconnect, c.closing.abort ? 5 : 0);
    c.closing.next_disconnect = disconnect_retry_at(c);
  }
}

// After the connection's transmission pass (the rest of the model's pump_all body).
void Engine::liveness_after_transmit(Conn& c) noexcept {
  // [R-CONN-7] a graceful close sends DISCONNECT once nothing is outstanding
  const bool nothing_outstanding = c.send.unacked_recs == 0 && c.send.open_wrs == 0;
  if (c.state == ConnState::Closing && !c.closing.disconnect_sent && (nothing_outstanding || c.closing.abort)) {
    send_control(c, fast::Opcode::Disconnect, c.closing.abort ? 5 : 0);
    c.closing.disconnect_sent = true;
    c.closing.next_disconnect = disconnect_retry_at(c);
  }
  // [R-CONN-8] waiting for the peer: an unacknowledged PSN, an unanswered PROBE, or a DISCONNECT.
  const bool w = c.alive.keepalive_outstanding || (c.state == ConnState::Closing && c.closing.disconnect_sent) ||
                 c.send.probes_out > 0 || c.send.unacked_recs > 0;
  if (w && !c.alive.waiting) c.alive.waiting_since = now_;
  c.alive.waiting = w;
}

// [R-CONN-7] a DISCONNECT or DISCONNECT_ACK on a live connection.
void Engine::on_disconnect(Conn& c, fast::Opcode op) noexcept {
  if (op == fast::Opcode::Disconnect) {
    send_control(c, fast::Opcode::DisconnectAck, 0);
    release_closed(c);
  } else if (c.state == ConnState::Closing && c.closing.disconnect_sent) {
    release_closed(c);
  }
}

void Engine::send_control(Conn& c, fast::Opcode op, uint8_t reason) noexcept {
  const uint16_t route = c.tx ? c.tx[0].route : c.hs.route0;
  uint8_t* bth;
  io::PacketBuf* b = frame_begin(c, false, route, &bth);
  const fast::BthFields bf = this->bth(c, 0, 0);
  if (op == fast::Opcode::Disconnect)
    fast::put_disconnect(bth, bf, reason);
  else
    fast::put_disconnect_ack(bth, bf);
  frame_end(b, 0);
}

Result Engine::close(uint32_t conn, bool abort) {
  return as_event([&] {
    Conn* cp = conns_.find(conn);
    if (!cp || cp->state != ConnState::Established) return Result::NotConnected;
    Conn& c = *cp;
    c.closing.requested = true;
    c.closing.abort = abort;
    c.state = ConnState::Closing;
    if (abort) {  // [R-CONN-7] an abort flushes without waiting
      flush_sends(c, Status::Flushed);
      clear_tx(c);
    }
    touch(c);
    return Result::Ok;
  });
}

// Every work request not done completes with `wr_status`, in stream order; nothing new is sent.
void Engine::flush_sends(Conn& c, Status wr_status) noexcept {
  for (uint16_t st = 0; st < c.streams; ++st) {
    for (uint32_t m = c.send_streams[st].head; m != kNone; m = msgs_[m].next) {
      Msg& w = msgs_[m];
      if (!w.done()) {
        w.flags |= kFailed;
        w.status = wr_status;
      }
    }
    c.send_streams[st].cursor = kNone;
    c.send.new_data_slots.put(st, false);
    complete_sends(c, st);
  }
}

// [R-CONN-8] / [R-CONN-7]: every outstanding work request completes with `wr_status`, in stream
// order; posted receives are flushed; nothing stays outstanding. The slot waits in the dead list.
void Engine::teardown(Conn& c, Status wr_status) noexcept {
  flush_sends(c, wr_status);
  flush_recvs(c);
  free_recvs(c);
  clear_tx(c);
  c.alive.waiting = false;
  conns_.set_unconfirmed(c, false);  // [R-SEC-12]: counts only while it holds its slot open
  wheel_.disarm(conns_.slot(c));
  conns_.queue_dead(c);
}

void Engine::fail_connection(Conn& c, Status wr_status) noexcept {
  teardown(c, wr_status);
  c.state = ConnState::Failed;
  emit_event(ConnEvent{ConnEvent::Kind::Down, c.id, conns_.peer(c.peer).addr, c.initiator, Status::ConnectionFailed});
}

void Engine::release_closed(Conn& c) noexcept {
  teardown(c, Status::Flushed);
  c.state = ConnState::Closed;
  emit_event(ConnEvent{ConnEvent::Kind::Down, c.id, conns_.peer(c.peer).addr, c.initiator, Status::Success});
}

}  // namespace mroce::engine
