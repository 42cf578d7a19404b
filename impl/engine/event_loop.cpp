// The event loop: events and the step machinery (timers, the transmission pass over touched
// connections, deferred re-arming), the dispatch of incoming frames, and the calls that drive time:
// progress() (the poll loop), advance() and input() (test hooks). See engine.hpp for the model.
#include <algorithm>
#include <cstring>

#include "engine/engine.hpp"

namespace mroce::engine {

// ---- the step machinery ---------------------------------------------------------------------------
//
// The model's handle(now, event): timers due before `now` fire at their own times (each followed by a
// transmission pass), then the event, then timers due at `now`, then a pass. begin_event / end_event
// bracket one event; every public call is one event at the clock's time (as_event).

uint64_t Engine::due_by(uint64_t t) noexcept {
  uint64_t d = wheel_.first_due(t);
  if (fair_.due(t) && fair_.next_update() < d) d = fair_.next_update();
  return d;
}

void Engine::run_due(uint64_t t) noexcept {
  for (;;) {
    const uint64_t d = due_by(t);
    if (d == kNever) break;
    if (d > now_) now_ = d;
    fire_due();
    transmit_touched();
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
  // Deadlines as the event left them (before any transmission pass), for the timers it made due now.
  for (uint32_t i = 0; i < n_touched_; ++i) rearm(conns_[touched_[i]]);
  while (timers_may_fire() && due_by(now_) != kNever) {
    fire_due();
    transmit_touched();
  }
  transmit_touched();
}

void Engine::fire_due() noexcept {
  if (fair_.due(now_)) fair_.update(now_);  // [R-FS-1]
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
  if (c.touched) return;
  c.touched = true;
  touched_[n_touched_++] = conns_.slot(c);
}

// Transmits what the touched connections have to send, in ID order (the model's pump_all order), and
// re-arms their timers.
// With defer_rearm (inside a receive burst, where the wheel is not consulted until the burst ends)
// the re-arming is left to rearm_deferred(), once per connection per burst.
void Engine::transmit_touched(bool defer_rearm) noexcept {
  uint32_t* d = touched_.get();
  if (n_touched_ > 1) std::sort(d, d + n_touched_, [&](uint32_t a, uint32_t b) { return conns_[a].id < conns_[b].id; });
  if (n_touched_ > 1 && io_.tx_room() != UINT32_MAX) {
    share_port(d, n_touched_);
  } else {
    for (uint32_t i = 0; i < n_touched_; ++i) transmit_conn(conns_[d[i]]);
  }
  for (uint32_t i = 0; i < n_touched_; ++i) {
    Conn& c = conns_[d[i]];
    c.touched = false;
    if (!defer_rearm) {
      rearm(c);
    } else if (!c.rearm_pending) {
      c.rearm_pending = true;
      deferred_[n_deferred_++] = d[i];
    }
  }
  n_touched_ = 0;
  last_transmit_ = now_;
}

// over a port with a bounded ring (PacketIo::tx_room), the touched connections (in ID order)
// take it in turns: the first turn begins with the connection the port turned away first last time,
// and gives each an equal part of the free ring in new segments (at least one); those that used their
// whole part go round again on what is left. In ID order with no turns, the lowest IDs took the ring
// whole whenever it was short, and a sender's other connections waited for them: their receivers
// measured them slow and shrank their shares [R-FS-3].
void Engine::share_port(uint32_t* d, uint32_t n) noexcept {
  uint32_t first = 0;
  while (first < n && conns_[d[first]].id < tx_next_id_) ++first;
  if (first < n) std::rotate(d, d + first, d + n);
  tx_turned_away_ = false;
  const auto free_room = [&] {
    const uint32_t room = io_.tx_room(), pending = frames_.pending();
    return room > pending ? room - pending : 0;
  };
  uint32_t* more = tx_more_.get();
  uint32_t n_more = 0;
  uint32_t quota = std::max<uint32_t>(1, free_room() / n);
  for (uint32_t i = 0; i < n; ++i) {
    Conn& c = conns_[d[i]];
    tx_quota_ = quota;
    tx_quota_used_ = false;
    transmit_conn(c);
    if (tx_quota_used_) more[n_more++] = d[i];
  }
  while (n_more > 0 && free_room() > 0) {
    quota = std::max<uint32_t>(1, free_room() / n_more);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < n_more; ++i) {
      Conn& c = conns_[more[i]];
      tx_quota_ = quota;
      tx_quota_used_ = false;
      if (c.live()) transmit(c);
      if (tx_quota_used_) more[kept++] = more[i];
    }
    n_more = kept;
  }
  tx_quota_ = UINT32_MAX;
  // The port filled before their turn came round again: they try at the next progress(), first.
  for (uint32_t i = 0; i < n_more; ++i) wait_for_tx_room(conns_[more[i]]);
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
void Engine::transmit_conn(Conn& c) noexcept {
  if (c.live()) transmit(c);
  liveness_after_transmit(c);
}

void Engine::rearm(Conn& c) noexcept { wheel_.arm(conns_.slot(c), conn_deadline(c)); }

// The model's next_deadline, for one connection.
uint64_t Engine::conn_deadline(const Conn& c) const noexcept {
  if (c.state == ConnState::Connecting) return c.hs.next_try;  // [R-CONN-4]
  if (!c.live()) return kNever;
  if (!c.send.path_due_min_valid) {
    uint64_t m = kNever;
    for (uint32_t p = 0; p < c.paths; ++p) m = std::min(m, c.send.path_due[p]);
    c.send.path_due_min = m;
    c.send.path_due_min_valid = true;
  }
  return std::min({c.send.path_due_min, credit_deadline(c), liveness_deadline(c)});
}

// The model's fire_due_timers, for one connection at now_.
void Engine::fire_conn(Conn& c) noexcept {
  if (c.state == ConnState::Connecting) {
    connect_timer(c);
    return;
  }
  if (!c.live()) return;
  for (uint16_t p = 0; p < c.paths; ++p) {
    if (c.send.path_due[p] > now_) continue;  // nothing of this path is due: path_timers and the ACK check are no-ops
    path_timers(c, p);
    PathRx& r = c.rx[p];
    if (r.unacked > 0 && r.first_unacked + cfg_.ack_delay_us <= now_) send_ack(c, p);  // [R-ACK-3]
    path_changed(c, p);
  }
  liveness_timers(c);
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
  Conn* cp = conns_.find(v.dcid());
  if (!cp) {  // [R-CONN-9], [R-SEC-2]
    ++counters_.unknown_dcid;
    return;
  }
  Conn& c = *cp;
  if (!from_peer(conns_.peer(c.peer).addr, v)) {  // [R-SEC-10]
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
    on_connect_reply(c, v);
    return;
  }
  c.alive.last_rx = now_;
  conns_.set_unconfirmed(c, false);  // [R-SEC-12]: its initiator is there
  switch (op) {
    case fast::Opcode::Accept:  // duplicate ACCEPT after setup
    case fast::Opcode::Reject:
      return;
    case fast::Opcode::Disconnect:
    case fast::Opcode::DisconnectAck:
      on_disconnect(c, op);
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

// ---- the calls that drive time --------------------------------------------------------------------

void Engine::advance() noexcept {
  in_timer_call_ = true;
  begin_event();
  end_event();
  in_timer_call_ = false;
  frames_.flush();
}

void Engine::input(const uint8_t* frame, uint32_t len) noexcept {
  as_event([&] {
    on_frame(frame, len);
    return 0;
  });
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
  if (unstamped_io_) note_poll(t);  // a long gap since the last poll is a host stall
  int total = 0;
  bool unstamped = false;
  while (total < kRxBudget) {
    if (total > 0) {
      // A long batch must not hold back what its first bursts built, nor stamp later frames with
      // the time the call began: their timestamps and transmission times [R-HDR-6] stay within a
      // burst of the truth (the timers still wait for the whole batch, as above).
      frames_.flush();
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
      transmit_touched(true);
    }
    total += n;
    if (n < cfg_.burst) break;
  }
  rearm_deferred();
  if (!unstamped && !(total == 0 && unstamped_io_)) run_due(t);  // timers at their own times
  now_ = t;
  // Connections whose new data waited for port room try again.
  for (uint32_t i = 0; i < n_tx_waiting_; ++i) {
    Conn& c = conns_[tx_waiting_[i]];
    if (!c.tx_waiting) continue;
    c.tx_waiting = false;
    if (c.in_use) touch(c);
  }
  n_tx_waiting_ = 0;
  end_event();  // timers due by t (any left: overdue ones, fired once at t)
  in_timer_call_ = false;
  frames_.flush();
  return total;
}

std::optional<Time> Engine::next_deadline() const noexcept {
  uint64_t d = wheel_.min();
  if (fair_.next_update() != 0 && fair_.next_update() < d) d = fair_.next_update();
  if (d == kNever) return std::nullopt;
  return d;
}

}  // namespace mroce::engine
