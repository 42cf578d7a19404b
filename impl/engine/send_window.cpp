// The send window: posting work requests, segmentation, spraying over paths, ACK and NAK processing,
// loss detection, retransmission, RTT and timers (RTO, tail probes, RNR waits), path states and
// re-pathing, the congestion controller and the connection's credit.
#include <algorithm>

#include "engine/engine.hpp"

namespace mroce::engine {

namespace {

fast::Opcode wire_opcode(const Msg& m) noexcept {
  if (m.flags & kResponse) return fast::Opcode::ReadResp;
  switch (m.op) {
    case WcOpcode::Send:
      return fast::Opcode::Send;
    case WcOpcode::Write:
      return fast::Opcode::Write;
    case WcOpcode::WriteImm:
      return fast::Opcode::WriteImm;
    case WcOpcode::Read:
      return fast::Opcode::ReadReq;
    case WcOpcode::Recv:
      break;
  }
  return fast::Opcode::Send;
}

// Payload length of segment `seg` of message m ([R-HDR-14]; a READ_REQ carries none, [R-HDR-15]).
uint32_t seg_len(const Msg& m, uint32_t seg, uint32_t max_payload) noexcept {
  if (!(m.flags & kResponse) && m.op == WcOpcode::Read) return 0;
  return segment_length(m.length, seg, max_payload);
}

// [R-RTO-2], in the model's exact 32-bit integer steps.
void rtt_sample(const DeviceConfig& cfg, PathTx& t, uint32_t r) noexcept {
  if (!t.have_sample) {
    t.srtt = r;
    t.rttvar = r / 2;
    t.have_sample = true;
  } else {
    const uint32_t diff = t.srtt > r ? t.srtt - r : r - t.srtt;
    t.rttvar = (3 * t.rttvar + diff) / 4;
    t.srtt = (7 * t.srtt + r) / 8;
  }
  const uint32_t raw = t.srtt + std::max<uint32_t>(1, 4 * t.rttvar);
  t.rto = std::clamp(raw, cfg.rto_min_us, cfg.rto_max_us);
}

uint64_t& count_of(RetransmissionCauses& k, LossCause why) noexcept {
  switch (why) {
    case LossCause::Gap:
      return k.gap;
    case LossCause::Probe:
      return k.probe;
    case LossCause::Rto:
      return k.rto;
    case LossCause::Rnr:
      return k.rnr;
    case LossCause::Nak:
      break;
  }
  return k.nak;
}

}  // namespace

// ---- record bookkeeping -----------------------------------------------------------------------------

void Engine::tx_order_remove(Block& b, uint16_t r) noexcept {
  Rec& o = b.rec[r];
  if (o.prev != kNil16)
    b.rec[o.prev].next = o.next;
  else
    b.tx_order_head = o.next;
  if (o.next != kNil16)
    b.rec[o.next].prev = o.prev;
  else
    b.tx_order_tail = o.prev;
  o.prev = o.next = kNil16;
}

void Engine::tx_order_append(Block& b, uint16_t r) noexcept {
  Rec& o = b.rec[r];
  o.prev = b.tx_order_tail;
  o.next = kNil16;
  if (b.tx_order_tail != kNil16)
    b.rec[b.tx_order_tail].next = r;
  else
    b.tx_order_head = r;
  b.tx_order_tail = r;
}

// Moves record j (PSN suna + j) to state s, keeping the bitmaps, counts and the transmission-order
// list of in-flight records consistent. Entering InFlight appends to that list: callers do it at
// transmission time, so the list stays ordered by last transmission.
void Engine::set_rec_state(Block& b, PathTx& t, uint32_t j, RecState s) noexcept {
  const uint16_t r = uint16_t((t.suna + j) & 255);
  Rec& o = b.rec[r];
  if (o.state == s) return;
  switch (o.state) {
    case RecState::InFlight:
      b.inflight.clear(j);
      --b.n_inflight;
      tx_order_remove(b, r);
      break;
    case RecState::Lost:
      b.lost.clear(j);
      --b.n_lost;
      break;
    case RecState::RnrWait:
      b.rnr.clear(j);
      --b.n_rnr;
      break;
    case RecState::Acked:
      b.acked.clear(j);
      break;
    case RecState::New:
      break;
  }
  switch (s) {
    case RecState::InFlight:
      b.inflight.set(j);
      ++b.n_inflight;
      tx_order_append(b, r);
      break;
    case RecState::Lost:
      b.lost.set(j);
      ++b.n_lost;
      break;
    case RecState::RnrWait:
      b.rnr.set(j);
      ++b.n_rnr;
      break;
    case RecState::Acked:
      b.acked.set(j);
      break;
    case RecState::New:
      break;
  }
  o.state = s;
}

// Declares record j lost, remembering why for the retransmission counts (diagnosis only: the cause
// never changes what is sent). A record already lost keeps its first cause.
void Engine::mark_lost(Block& b, PathTx& t, uint32_t j, LossCause why) noexcept {
  Rec& o = b.rec[(t.suna + j) & 255];
  if (o.state == RecState::Lost) return;
  set_rec_state(b, t, j, RecState::Lost);
  o.loss_cause = uint8_t(why);
}

// A work request or read response of connection c, within its share of the pool [R-SEC-11].
uint32_t Engine::alloc_msg(Conn& c) noexcept {
  if (c.send.msgs_held >= wr_limit_) return kNone;
  const uint32_t m = msgs_.alloc();
  if (m == kNone) return kNone;
  msgs_[m].conn = conns_.slot(c);
  ++c.send.msgs_held;
  return m;
}

// Teardown releases every message of a connection (clear_tx, flush_sends) before its slot is freed.
void Engine::release_msg(uint32_t m) noexcept {
  --conns_[msgs_[m].conn].send.msgs_held;
  msgs_.release(m);
}

void Engine::release_msg_ref(uint32_t m) noexcept {
  Msg& x = msgs_[m];
  if (--x.refs == 0 && (x.flags & kRetired)) release_msg(m);
}

void Engine::retire_msg(uint32_t m) noexcept {
  Msg& x = msgs_[m];
  x.flags |= kRetired;
  if (x.refs == 0) release_msg(m);
}

// Drops every PSN record and read response of the connection (abort, failure, close). SNXT and SUNA
// stay as they are, as in the model.
void Engine::clear_tx(Conn& c) noexcept {
  for (uint16_t p = 0; p < c.paths; ++p) {
    PathTx& t = c.tx[p];
    if (t.block != kNone) {
      Block& b = blocks_[t.block];
      for (uint32_t j = 0; j < t.n_out; ++j) release_msg_ref(b.rec[(t.suna + j) & 255].msg);
      blocks_.release(t.block);
      t.block = kNone;
    }
    t.n_out = 0;
    update_room(c, p);
    path_changed(c, p);
  }
  c.send.unacked_recs = 0;
  drop_responses(c);
}

// ---- room, deadlines, credit ----------------------------------------------------------------------

// [R-PATH-8]: an ACTIVE path with room (in flight < cwnd [R-CC-3], within the span [R-PSN-4]) and no
// lost PSN waiting ([R-REL-5]: no new data before the retransmissions of the path).
void Engine::update_room(Conn& c, uint16_t p) noexcept {
  const PathTx& t = c.tx[p];
  uint32_t inflight = 0, lost = 0;
  if (t.block != kNone) {
    inflight = blocks_[t.block].n_inflight;
    lost = blocks_[t.block].n_lost;
  }
  c.send.paths_with_room.put(
      p, t.state == PathState::Active && inflight < t.cwnd && serial_lt(t.snxt, t.suna + 256) && lost == 0);
  c.send.paths_with_lost.put(p, lost > 0);
}

// [R-REL-7] the RTO fires RTO after the later of the last ACK and the earliest in-flight transmission.
uint64_t Engine::rto_deadline(const PathTx& t, const Block& b) const noexcept {
  const uint64_t ref = std::max(t.last_ack, b.rec[b.tx_order_head].last_tx);
  return ref + t.rto_current + stall_discount(ref);  // a host stall is not silence
}

// [R-REL-6] the tail probe fires PTO after the later of the last transmission and the last ACK:
// PTO = max(PTO_MIN, 2 SRTT), or RTO_INIT / 2 before the first RTT sample.
uint64_t Engine::probe_deadline(const PathTx& t) const noexcept {
  const uint32_t pto = t.have_sample ? std::max(cfg_.pto_min_us, 2 * t.srtt) : cfg_.rto_init_us / 2;
  const uint64_t ref = std::max(t.last_tx, t.last_ack);
  return ref + pto + stall_discount(ref);  // a host stall is not silence
}

// The model's path_deadline, plus the path's coalesced-ACK deadline [R-ACK-3].
uint64_t Engine::path_deadline(const Conn& c, uint16_t p) const noexcept {
  const PathTx& t = c.tx[p];
  uint64_t d = kNever;
  if (t.block != kNone) {
    const Block& b = blocks_[t.block];
    if (b.n_rnr)
      for (unsigned j = b.rnr.next_set(0); j < 256; j = b.rnr.next_set(j + 1))
        d = std::min(d, b.rec[(t.suna + j) & 255].rnr_until);  // [R-PLC-9]
    if (b.n_inflight) {
      d = std::min(d, rto_deadline(t, b));                              // [R-REL-7]
      if (!t.probe_sent_in_period) d = std::min(d, probe_deadline(t));  // [R-REL-6]
    }
  }
  if (home_probe_allowed(t)) d = std::min(d, t.home_next);  // [R-PATH-10]
  const PathRx& r = c.rx[p];
  if (r.unacked > 0) d = std::min<uint64_t>(d, r.first_unacked + cfg_.ack_delay_us);
  return d;
}

// Keeps send.path_due[p] and the connection's minimum over its paths (recomputed lazily when the minimum grows).
void Engine::path_changed(Conn& c, uint16_t p) noexcept {
  const uint64_t old = c.send.path_due[p], d = path_deadline(c, p);
  if (d == old) return;
  c.send.path_due[p] = d;
  if (d < c.send.path_due_min)
    c.send.path_due_min = d;
  else if (old == c.send.path_due_min)
    c.send.path_due_min_valid = false;
}

bool Engine::has_pending_new_data(const Conn& c) const noexcept { return c.send.new_data_slots.any(); }

// [R-CC-6], [R-CC-7]. The model refreshes every connection's credit at every pump (its transmission
// pass); the engine only when it needs the value (at its own passes, and before an ACK changes the
// ceiling, at the time of the last pass). Refreshing is path-independent while the ceiling is unchanged:
//   min(min(c + r·d1, M) + r·d2, M) = min(c + r·(d1 + d2), M), and expiry gives M either way.
// [R-CC-6]: a ceiling is in force while the latest hint is non-zero and not older than HINT_TTL.
bool Engine::rate_limited(const Conn& c, uint64_t at) const noexcept {
  return c.rate.ceiling != 0 && at - c.rate.hint_time <= cfg_.hint_ttl_us;
}

// The credit the counter would hold if refreshed at `at` (no earlier than its last refresh).
int64_t Engine::credit_at(const Conn& c, uint64_t at) const noexcept {
  if (at < c.rate.credit_time) return c.rate.credit;
  if (!rate_limited(c, at)) return c.credit_max();  // [R-CC-7] held at CREDIT_MAX while unlimited
  const int64_t grown = c.rate.credit + int64_t(c.rate.ceiling) * int64_t(at - c.rate.credit_time);
  return std::min(grown, c.credit_max());
}

void Engine::refresh_credit(Conn& c, uint64_t at) noexcept {
  if (at < c.rate.credit_time) return;
  c.rate.credit = credit_at(c, at);
  c.rate.credit_time = at;
}

// When the credit allows the next new packet (the formula does not depend on when it was last
// refreshed: credit_time + ceil(-credit / ceiling) is invariant under refresh).
uint64_t Engine::credit_deadline(const Conn& c) const noexcept {
  if (c.rate.credit >= 0 || !rate_limited(c, now_) || !has_pending_new_data(c)) return kNever;
  if (!c.send.paths_with_room.any()) return kNever;  // the window holds it, not the credit
  const uint64_t wait = (uint64_t(-c.rate.credit) + c.rate.ceiling - 1) / c.rate.ceiling;
  const uint64_t expiry = c.rate.hint_time + cfg_.hint_ttl_us + 1;
  return std::min(c.rate.credit_time + wait, expiry);
}

// ---- transmission ---------------------------------------------------------------------------------

// (Re)transmits record j of path p: same PSN, same segment [R-REL-5]; the payload is copied once,
// straight from registered memory into the tx buffer, and read at send time [R-PLC-4].
void Engine::send_record(Conn& c, uint16_t p, uint32_t j, bool retransmission) noexcept {
  PathTx& t = c.tx[p];
  Block& b = blocks_[t.block];
  const uint32_t psn = t.suna + j;
  Rec& o = b.rec[psn & 255];
  const Msg& m = msgs_[o.msg];
  const fast::Opcode op = wire_opcode(m);
  const bool read_req = op == fast::Opcode::ReadReq;
  const uint32_t offset = read_req ? 0 : o.seg * c.max_payload;
  const uint32_t len = seg_len(m, o.seg, c.max_payload);
  uint16_t flags = retransmission ? fast::kFlagRetx : 0;  // [R-HDR-3]
  const uint8_t* src = nullptr;
  bool source_gone = false;
  if (o.is_void) {
    flags |= fast::kFlagVoid;  // [R-REL-9]: same PSN, payload 0
    ++counters_.voids_sent;
  } else if (!read_req && len > 0) {
    const Region* r = regions_.held(m.region, m.region_gen, m.local_va + offset, len);  // [R-MEM-6]
    if (r) {
      src = r->host + (m.local_va + offset - r->iova);
    } else {
      // [R-MEM-6] the source was deregistered under us: the data cannot be sent any more. The
      // segment goes VOID, and a work request fails (its other PSNs go VOID too) once it is out.
      flags |= fast::kFlagVoid;
      o.is_void = 1;
      ++counters_.voids_sent;
      source_gone = true;
    }
  }
  uint8_t* bth;
  io::PacketBuf* buf = frame_begin(c, true, t.route, &bth);
  const fast::BthFields bf = this->bth(c, p, flags);
  fast::DhFields dh;
  dh.psn = psn;
  dh.stream_id = m.stream;
  dh.msn = m.msn;
  dh.msg_length = m.length;
  dh.msg_offset = offset;
  uint8_t* pay;
  switch (op) {
    case fast::Opcode::Send:
      pay = fast::put_send(bth, bf, dh, m.rsn);
      break;
    case fast::Opcode::Write:
      pay = fast::put_write(bth, bf, dh, m.remote_va, m.rkey);
      break;
    case fast::Opcode::WriteImm:
      pay = fast::put_write_imm(bth, bf, dh, m.remote_va, m.rkey, m.rsn, (m.flags & kHasImm) ? m.imm : 0);
      break;
    case fast::Opcode::ReadReq:
      pay = fast::put_read_req(bth, bf, dh, m.remote_va, m.rkey);
      break;
    default:
      pay = fast::put_read_resp(bth, bf, dh);
      break;
  }
  const uint32_t plen = src ? len : 0;
  if (src) std::memcpy(pay, src, plen);
  frame_end(buf, plen);

  o.last_tx = now_;
  if (o.tx_count < 255) ++o.tx_count;
  if (o.tx_count >= 2) b.retx.set(j);
  set_rec_state(b, t, j, RecState::InFlight);
  t.last_tx = now_;
  ++t.packets_sent;
  if (retransmission) {
    ++counters_.retransmissions;
    const auto why = LossCause(o.loss_cause);
    ++count_of(t.retx_by_cause, why);
    ++count_of(counters_.retx_by_cause, why);
  } else {
    ++counters_.data_sent;
  }
  if (source_gone && !(m.flags & kResponse)) fail_work_request(c, o.msg, Status::LocalProtection);
}

void Engine::advance_cursor(Conn& c, uint16_t stream) noexcept {
  SendStream& s = c.send_streams[stream];
  uint32_t m = s.cursor;
  while (m != kNone && ((msgs_[m].flags & kFailed) || msgs_[m].next_segment >= msgs_[m].total_segments))
    m = msgs_[m].next;
  s.cursor = m;
  c.send.new_data_slots.put(stream, m != kNone);
}

// The connection's transmission pass (the model's pump of one connection).
void Engine::transmit(Conn& c) noexcept {
  // Nothing to (re)send, or no path with room: nothing would change but the credit, whose refresh is
  // path-independent and done when it is next needed.
  if (!c.send.paths_with_lost.any() && (!c.send.new_data_slots.any() || !c.send.paths_with_room.any())) return;
  // [R-PLC-9], [R-REL-5]: an RNR wait that ended during a long batch of frames (whose timers fire
  // after it, see progress()) makes its PSN lost before the path takes a new segment. With
  // timestamped frames the timers have fired by now and nothing is found (the model's order).
  if (!c.send.path_due_min_valid || c.send.path_due_min <= now_) {
    for (uint32_t p = c.send.paths_with_room.next(0); p != kNone; p = c.send.paths_with_room.next(p + 1)) {
      PathTx& t = c.tx[p];
      if (c.send.path_due[p] > now_ || t.block == kNone || blocks_[t.block].n_rnr == 0) continue;
      expire_rnr_waits(blocks_[t.block], t);
      update_room(c, uint16_t(p));
      path_changed(c, uint16_t(p));
    }
  }
  refresh_credit(c, now_);
  // 1. [R-REL-5] retransmissions (and VOIDs) first, per path in PSN order, held by the window only
  //    [R-CC-3], [R-CC-10]; they consume credit.
  for (uint32_t p = c.send.paths_with_lost.next(0); p != kNone; p = c.send.paths_with_lost.next(p + 1)) {
    PathTx& t = c.tx[p];
    Block& b = blocks_[t.block];
    for (unsigned j = b.lost.next_set(0); j < 256; j = b.lost.next_set(j + 1)) {
      if (b.n_inflight >= t.cwnd) break;
      send_record(c, uint16_t(p), j, true);
      const Rec& o = b.rec[(t.suna + j) & 255];
      if (rate_limited(c, now_))
        c.rate.credit -= int64_t(8) * (o.is_void ? 0 : seg_len(msgs_[o.msg], o.seg, c.max_payload));
    }
    update_room(c, uint16_t(p));
    path_changed(c, uint16_t(p));
  }
  // 2. New segments: streams in round robin [R-CC-9], paths in round robin [R-PATH-8], while the
  //    connection's credit allows [R-CC-7], [R-CC-8]; as long as any path has room [R-CC-11].
  if (c.state == ConnState::Closing && c.closing.abort) return;
  const uint32_t nslots = uint32_t(c.streams) + 1;
  const bool limited = rate_limited(c, now_);  // [R-CC-7]: unlimited, only the windows hold new data
  while (!limited || c.rate.credit >= 0) {
    const uint32_t slot = c.send.new_data_slots.next_cyclic(c.send.next_slot);
    if (slot == kNone) break;
    if (tx_quota_ == 0) {  // its turn at a short port is over
      tx_quota_used_ = true;
      break;
    }
    // [R-CC-11]: new data waits while the port's transmit ring is full, so that a window is
    // not dumped into a NIC queue faster than the wire drains it; the next progress() retries.
    if (frames_.pending() >= io_.tx_room()) {
      wait_for_tx_room(c);
      break;
    }
    const uint32_t start = c.send.any_new_segment ? (uint32_t(c.send.last_path) + 1) % c.paths : 0;
    const uint32_t p = c.send.paths_with_room.next_cyclic(start);
    if (p == kNone) break;
    PathTx& t = c.tx[p];
    if (t.block == kNone) {
      home_requalified(t);  // [R-PATH-10]: outstanding PSNs again
      t.block = blocks_.alloc_raw();
      if (t.block == kNone) {
        ++counters_.window_block_waits;
        break;
      }
      Block& nb = blocks_[t.block];
      nb.acked.reset();
      nb.lost.reset();
      nb.inflight.reset();
      nb.retx.reset();
      nb.rnr.reset();
      nb.tx_order_head = nb.tx_order_tail = kNil16;
      nb.n_inflight = nb.n_lost = nb.n_rnr = 0;
    }
    // Take the slot's next segment.
    const bool response = slot == c.streams;  // Read responses, as one more stream [R-CC-9]
    const uint32_t mi = response ? next_response(c) : c.send_streams[slot].cursor;
    Msg& m = msgs_[mi];
    const uint32_t seg = m.next_segment++;
    ++m.refs;  // the new record's reference, taken before the message can be retired
    if (response)
      response_segment_taken(c, mi);
    else if (m.next_segment >= m.total_segments)
      advance_cursor(c, uint16_t(slot));
    c.send.next_slot = (slot + 1) % nslots;
    c.send.last_path = uint16_t(p);
    c.send.any_new_segment = true;
    // A new record at SNXT [R-PSN-2].
    Block& b = blocks_[t.block];
    const uint32_t j = t.n_out;
    Rec& o = b.rec[t.snxt & 255];
    o.msg = mi;
    o.seg = seg;
    o.state = RecState::New;
    o.is_void = 0;
    o.tx_count = 0;
    o.rnr_count = 0;
    o.prev = o.next = kNil16;
    b.retx.clear(j);
    ++t.n_out;
    ++t.snxt;
    ++c.send.unacked_recs;
    send_record(c, uint16_t(p), j, false);
    if (tx_quota_ != UINT32_MAX) --tx_quota_;
    if (limited) c.rate.credit -= int64_t(8) * seg_len(msgs_[mi], seg, c.max_payload);
    update_room(c, uint16_t(p));
    path_changed(c, uint16_t(p));
  }
}

void Engine::wait_for_tx_room(Conn& c) noexcept {
  if (!tx_turned_away_) {  // the next turns begin here
    tx_turned_away_ = true;
    tx_next_id_ = c.id;
  }
  if (c.tx_waiting) return;
  if (n_tx_waiting_ == cfg_.max_connections) {
    // Full only with entries of slots freed (and perhaps reused) since the last progress(): keep one
    // entry per connection still waiting.
    uint32_t kept = 0;
    for (uint32_t i = 0; i < n_tx_waiting_; ++i) {
      Conn& w = conns_[tx_waiting_[i]];
      if (!w.in_use || !w.tx_waiting) continue;
      w.tx_waiting = false;  // marks it kept, so a second entry of the slot is dropped
      tx_waiting_[kept++] = tx_waiting_[i];
    }
    for (uint32_t i = 0; i < kept; ++i) conns_[tx_waiting_[i]].tx_waiting = true;
    n_tx_waiting_ = kept;
  }
  c.tx_waiting = true;
  tx_waiting_[n_tx_waiting_++] = conns_.slot(c);
}

// ---- posting [R-HDR-10], [R-HDR-14], [R-HDR-17] -------------------------------------------------------

Result Engine::post(WcOpcode op, uint32_t conn, uint16_t stream, uint64_t wr_id, const Sge& local, uint64_t remote_va,
                    uint32_t rkey, bool has_imm, uint32_t imm) {
  return as_event([&] {
    Conn* cp = conns_.find(conn);
    const Region* lr = nullptr;
    const Result refused = check_post(cp, stream, local, op == WcOpcode::Read, &lr);
    if (refused != Result::Ok) return refused;
    Conn& c = *cp;
    const uint32_t mi = alloc_msg(c);
    if (mi == kNone) return Result::NoResources;  // [R-SEC-11]: this connection's share, or the pool
    Msg& m = msgs_[mi];
    SendStream& st = c.send_streams[stream];
    m.op = op;
    m.wr_id = wr_id;
    m.stream = stream;
    m.local_va = local.addr;
    m.length = local.length;
    m.remote_va = remote_va;
    m.rkey = rkey;
    m.imm = imm;
    m.region = regions_.slot(*lr);
    m.region_gen = lr->generation;
    if (has_imm) m.flags |= kHasImm;
    m.msn = st.next_msn++;                                                        // [R-HDR-10]
    if (op == WcOpcode::Send || op == WcOpcode::WriteImm) m.rsn = st.next_rsn++;  // [R-HDR-17]
    // [R-HDR-14] segments; a Read is one READ_REQ
    m.total_segments = op == WcOpcode::Read ? 1 : segment_count(m.length, c.max_payload);
    append_msg(st.head, st.tail, mi);
    if (st.cursor == kNone) {
      st.cursor = mi;
      c.send.new_data_slots.put(stream, true);
    }
    ++c.send.open_wrs;
    touch(c);
    return Result::Ok;
  });
}

// ---- completions at the sender [R-CMP-1] ----------------------------------------------------------

void Engine::complete_sends(Conn& c, uint16_t stream) noexcept {
  SendStream& s = c.send_streams[stream];
  while (s.head != kNone && msgs_[s.head].done()) {
    const uint32_t mi = s.head;
    const Msg& m = msgs_[mi];
    WorkCompletion wc;
    wc.wr_id = m.wr_id;
    wc.conn = c.id;
    wc.stream = stream;
    wc.opcode = m.op;
    wc.status = (m.flags & kFailed) ? m.status : Status::Success;
    wc.byte_len = (m.flags & kFailed) ? 0 : m.length;
    complete(wc);
    s.head = m.next;
    if (s.head == kNone) s.tail = kNone;
    if (s.read_hint == mi) s.read_hint = kNone;
    --c.send.open_wrs;
    retire_msg(mi);
  }
}

// [R-REL-9]: the work request completes once with the error and sends nothing new; its outstanding,
// unacknowledged PSNs are voided instead of retransmitted.
void Engine::fail_work_request(Conn& c, uint32_t mi, Status status) noexcept {
  Msg& m = msgs_[mi];
  if ((m.flags & kRetired) || m.done()) return;
  m.flags |= kFailed;
  m.status = status;
  for (uint16_t p = 0; p < c.paths; ++p) {
    const PathTx& t = c.tx[p];
    if (t.block == kNone) continue;
    Block& b = blocks_[t.block];
    for (uint32_t j = 0; j < t.n_out; ++j) {
      Rec& o = b.rec[(t.suna + j) & 255];
      if (o.msg == mi && o.state != RecState::Acked) o.is_void = 1;
    }
  }
  if (c.send_streams[m.stream].cursor == mi) advance_cursor(c, m.stream);
  complete_sends(c, m.stream);
}

// ---- ACK processing -------------------------------------------------------------------------------

void Engine::on_ack(Conn& c, uint16_t p, const View& v) noexcept {
  PathTx& t = c.tx[p];
  const uint32_t cpsn = v.cpsn(), ts_echo = v.ts_echo();
  if (!serial_lt(cpsn, t.snxt)) {  // [R-ACK-10]: a CPSN never sent; the ACK acts on nothing
    ++counters_.invalid_acks;
    return;
  }
  SackBitmap256 sack = SackBitmap256::from_wire(v.sack_bytes());  // [R-HDR-20]
  int hs = sack.highest_set();
  // [R-ACK-10]: bits for unsent PSNs. An empty bitmap (hs = -1) names CPSN, which was sent; bit 0
  // alone never gets here: it MUST be zero and the decoder refuses it [R-HDR-20].
  if (!serial_lt(cpsn + 1 + uint32_t(hs), t.snxt)) {
    sack = sack & SackBitmap256::prefix(t.snxt - cpsn - 1);  // bit i names cpsn + 1 + i
    hs = sack.highest_set();
    ++counters_.sack_beyond_snxt;
  }
  const uint32_t highest = hs > 0 ? cpsn + 1 + uint32_t(hs) : cpsn;  // for the gap rule
  refresh_credit(c, last_transmit_);  // the model refreshed it at its last pass, before this ceiling
  c.rate.ceiling = v.rate_hint();     // [R-CC-6]
  c.rate.hint_time = now_;
  if (c.alive.keepalive_outstanding && ts_echo == c.alive.keepalive_ts) c.alive.keepalive_outstanding = false;

  // [R-REL-3] which outstanding PSNs this ACK acknowledges (bit j: PSN suna + j). [R-ACK-9]: an older
  // ACK never moves state backwards: PSNs are only ever marked acknowledged, never unmarked, so its
  // set bits still count.
  uint32_t newly = 0;
  n_stream_touched_ = 0;
  if (t.block != kNone && t.n_out > 0) {
    Block& b = blocks_[t.block];
    SackBitmap256 ackm;
    const uint32_t k = cpsn + 1 - t.suna;  // PSN cpsn + 1 + i is bit k + i
    if (k <= 256) {
      SackBitmap256 s = sack;
      s.retreat(k);
      ackm = SackBitmap256::prefix(std::min(k, t.n_out)) | s;
    } else {  // an old or odd ACK: the model's per-PSN rule
      for (uint32_t j = 0; j < t.n_out; ++j) {
        const uint32_t psn = t.suna + j;
        const uint32_t i = psn - cpsn - 1;
        if (serial_le(psn, cpsn) || (i < 256 && sack.test(i))) ackm.set(j);
      }
    }
    ackm = ackm & SackBitmap256::prefix(t.n_out) & ~b.acked;
    for (unsigned j = ackm.next_set(0); j < 256; j = ackm.next_set(j + 1)) {
      Rec& o = b.rec[(t.suna + j) & 255];
      // Spurious: the ACK first covering a retransmitted PSN answers a packet sent before that
      // retransmission [R-ACK-7]; in-order arrival on the path means the earlier copy arrived.
      if (o.tx_count >= 2 && serial_lt(ts_echo, static_cast<uint32_t>(o.last_tx))) {
        ++t.retx_by_cause.spurious;
        ++counters_.retx_by_cause.spurious;
      }
      set_rec_state(b, t, j, RecState::Acked);
      o.rnr_count = 0;
      ++newly;
      --c.send.unacked_recs;
      if (o.is_void) continue;
      Msg& m = msgs_[o.msg];
      if ((m.flags & (kResponse | kRetired | kFailed)) || m.op == WcOpcode::Read) continue;
      if (++m.segments_acked == m.total_segments) {
        m.flags |= kDelivered;  // [R-REL-10]
        SendStream& st = c.send_streams[m.stream];
        if (!st.touched) {
          st.touched = true;
          stream_touched_[n_stream_touched_++] = m.stream;
        }
      }
    }
  }
  const bool answered_probe = t.probe_outstanding && ts_echo == t.probe_ts;
  if (answered_probe) {
    t.probe_outstanding = false;
    --c.send.probes_out;
  }
  // [R-PATH-10]: the home probe's answer echoes its timestamp and came back on the home route
  // (the receiver's reply route was the probe's port [R-ACK-5]); data of the current route sent in the
  // same microsecond echo the same timestamp but come back on the current route.
  const bool answered_home =
      t.home_route != 0 && t.home_probe_outstanding && ts_echo == t.home_probe_ts && v.udp_sport() == t.home_route;
  // [R-RTO-1] an RTT sample from the timestamp echo
  if (newly > 0 || answered_probe || answered_home) {
    rtt_sample(cfg_, t, static_cast<uint32_t>(now_) - ts_echo);
    t.rto_current = t.rto;  // [R-REL-7] backoff cleared
    t.probe_sent_in_period = false;
  }
  t.last_ack = now_;
  // Advance SUNA over the acknowledged prefix.
  if (t.block != kNone) {
    Block& b = blocks_[t.block];
    const uint32_t run = std::min<uint32_t>(b.acked.leading_ones(), t.n_out);
    if (run) {
      for (uint32_t j = 0; j < run; ++j) release_msg_ref(b.rec[(t.suna + j) & 255].msg);
      // Empty sets stay empty: only shift what holds bits.
      for (SackBitmap256* x : {&b.acked, &b.lost, &b.inflight, &b.retx, &b.rnr})
        if (!x->empty()) x->advance(run);
      t.suna += run;
      t.n_out -= run;
      if (t.n_out == 0) {
        blocks_.release(t.block);
        t.block = kNone;
      }
    }
  }
  // [R-CC-2] order: [R-CC-4], then the end of the decrease period, then additive increase.
  const uint32_t ce = v.ce_count();
  if (serial_lt(t.last_ce, ce)) {
    t.last_ce = ce;
    if (!t.in_decrease) {  // [R-CC-4]
      t.cwnd = std::max<uint32_t>(1, t.cwnd / 2);
      t.ai_count = 0;
      t.in_decrease = true;
      t.decrease_end = t.snxt;
      ++counters_.cwnd_decreases;
    }
    ++counters_.ce_marks_seen;
  }
  if (t.in_decrease && serial_le(t.decrease_end, t.suna)) t.in_decrease = false;
  if (!t.in_decrease) {  // [R-CC-2]
    t.ai_count += newly;
    const uint32_t cmax = c.cwnd_max();
    while (t.ai_count >= t.cwnd) {
      t.ai_count -= t.cwnd;
      t.cwnd = std::min(cmax, t.cwnd + 1);
      if (t.cwnd == cmax) {
        t.ai_count = std::min(t.ai_count, t.cwnd - 1);
        break;
      }
    }
  }
  // [R-REL-4] loss detection: L2 (time) and L1 (gap). The ACK a tail probe drew counts its finds
  // under the probe [R-REL-6].
  if (t.block != kNone) {
    Block& b = blocks_[t.block];
    const LossCause found_by = answered_probe ? LossCause::Probe : LossCause::Gap;
    if (b.n_inflight) {
      // L2: the in-flight records sent before the echoed transmission, oldest first. Not for the
      // home probe's answer [R-PATH-10]: it took another route, and says nothing of this one's packets.
      uint16_t r = answered_home ? kNil16 : b.tx_order_head;
      while (r != kNil16) {
        const Rec& o = b.rec[r];
        if (!serial_lt(static_cast<uint32_t>(o.last_tx), ts_echo)) break;
        const uint16_t nx = o.next;
        mark_lost(b, t, (r - t.suna) & 255, found_by);
        r = nx;
      }
      // L1: sent once, and some PSN after it acknowledged.
      const uint32_t h = highest - t.suna;
      SackBitmap256 gm;
      if (h <= 256) {
        gm = SackBitmap256::prefix(h);
      } else if (h < 0x80000000u) {
        gm = SackBitmap256::prefix(256);
      } else {
        for (uint32_t j = 0; j < t.n_out; ++j)
          if (serial_lt(t.suna + j, highest)) gm.set(j);
      }
      gm = gm & b.inflight & ~b.retx;
      for (unsigned j = gm.next_set(0); j < 256; j = gm.next_set(j + 1)) mark_lost(b, t, j, found_by);
    }
  }
  // [R-PATH-6] back to ACTIVE
  if ((newly > 0 || answered_probe) && t.state != PathState::Active) {
    home_requalified(t);  // [R-PATH-10]: ACTIVE again
    t.state = PathState::Active;
    t.cwnd = c.init_cwnd();
    t.ai_count = 0;
    t.in_decrease = false;
    t.consecutive_repaths = 0;
  }
  // [R-PATH-10] the home route works both ways: the path goes back to it, ACTIVE, at INIT_CWND as
  // after any re-path ([R-PATH-6], [R-PATH-9]).
  if (answered_home) {
    t.route = t.home_route;
    t.home_route = 0;
    t.home_probe_outstanding = false;
    t.state = PathState::Active;
    t.cwnd = c.init_cwnd();
    t.ai_count = 0;
    t.in_decrease = false;
    t.consecutive_repaths = 0;
    ++t.home_returns;
    ++counters_.home_returns;
  }
  // Completions, streams in ascending order (the model walks every stream; only these can complete).
  if (n_stream_touched_ > 1) std::sort(stream_touched_, stream_touched_ + n_stream_touched_);
  for (uint32_t i = 0; i < n_stream_touched_; ++i) {
    c.send_streams[stream_touched_[i]].touched = false;
    complete_sends(c, stream_touched_[i]);
  }
  update_room(c, p);
  path_changed(c, p);
}

// ---- NAK processing [R-PLC-9], [R-REL-9] ----------------------------------------------------------

void Engine::on_nak(Conn& c, uint16_t p, const View& v) noexcept {
  PathTx& t = c.tx[p];
  const uint32_t psn = v.nak_psn();
  if (!serial_lt(psn, t.snxt)) {  // [R-ACK-10]: a PSN never sent
    ++counters_.invalid_acks;
    return;
  }
  ++counters_.naks_received;
  const uint32_t j = psn - t.suna;
  if (!serial_le(t.suna, psn) || !serial_lt(psn, t.snxt) || j >= t.n_out || t.block == kNone) return;
  Block& b = blocks_[t.block];
  Rec& o = b.rec[psn & 255];
  if (o.state == RecState::Acked) return;
  const bool response = msgs_[o.msg].flags & kResponse;
  const auto code = static_cast<fast::NakCode>(v.nak_code());
  const uint64_t rnr_until = now_ + (v.nak_detail() ? uint64_t(v.nak_detail()) * 10 : cfg_.rnr_default_us);
  if (o.is_void && code == fast::NakCode::Rnr) {
    // The receiver has no room to remember the cancellation yet [R-SEC-11]: nothing is left to fail,
    // so the VOID waits like any RNR and goes out again after the wait [R-PLC-9].
    set_rec_state(b, t, j, RecState::RnrWait);
    o.rnr_until = rnr_until;
  } else if (o.is_void) {  // already voided: make sure the VOID goes out
    mark_lost(b, t, j, LossCause::Nak);
  } else if (code == fast::NakCode::Rnr) {
    if (o.rnr_count < 255) ++o.rnr_count;
    if (o.rnr_count >= cfg_.rnr_retry_max && !response) {
      fail_work_request(c, o.msg, Status::RnrRetryExceeded);
      o.is_void = 1;
      mark_lost(b, t, j, LossCause::Nak);
    } else {
      set_rec_state(b, t, j, RecState::RnrWait);
      o.rnr_until = rnr_until;
    }
  } else {
    Status status = Status::RemoteInvalid;
    if (code == fast::NakCode::RemoteAccess) status = Status::RemoteAccess;
    if (code == fast::NakCode::Length) status = Status::RemoteLength;
    o.is_void = 1;
    mark_lost(b, t, j, LossCause::Nak);  // the VOID goes out through the retransmission queue
    if (!response) fail_work_request(c, o.msg, status);
  }
  update_room(c, p);
  path_changed(c, p);
}

// ---- timers of a path: RNR waits, tail probe, RTO -------------------------------------------------

void Engine::send_probe(Conn& c, uint16_t p) noexcept {
  PathTx& t = c.tx[p];
  uint8_t* bth;
  io::PacketBuf* b = frame_begin(c, false, t.route, &bth);
  fast::put_probe(bth, this->bth(c, p, fast::kFlagAr));  // [R-REL-6]
  frame_end(b, 0);
  ++counters_.probes_sent;
  if (!t.probe_outstanding) ++c.send.probes_out;
  t.probe_outstanding = true;
  t.probe_ts = static_cast<uint32_t>(now_);
}

// [R-PATH-10] a home probe: PROBE with AR on the path's home route, not its current one. Not the tail
// probe of [R-REL-6] (no probe_outstanding, no PTO or RTO period, not waited for by [R-CONN-8]) and no
// transmission on the path (last_tx): a lost home probe changes nothing.
void Engine::send_home_probe(Conn& c, uint16_t p) noexcept {
  PathTx& t = c.tx[p];
  uint8_t* bth;
  io::PacketBuf* b = frame_begin(c, false, t.home_route, &bth);
  fast::put_probe(bth, this->bth(c, p, fast::kFlagAr));
  frame_end(b, 0);
  ++counters_.probes_sent;
  t.home_probe_outstanding = true;
  t.home_probe_ts = static_cast<uint32_t>(now_);
  t.home_next = now_ + t.home_interval;
  t.home_interval = std::min(cfg_.home_probe_max_us, 2 * t.home_interval);
}

void Engine::repath(Conn& c, uint16_t p) noexcept {
  PathTx& t = c.tx[p];
  ++t.repaths;
  ++counters_.repaths;
  // [R-PATH-10] the first RTO re-path of an ACTIVE path with no home route: the route it leaves
  // becomes its home route, probed from HOME_PROBE on.
  if (t.state == PathState::Active && t.home_route == 0) {
    t.home_route = t.route;
    t.home_interval = cfg_.home_probe_us;
    t.home_next = now_ + cfg_.home_probe_us;
    t.home_probe_outstanding = false;
  }
  choose_route(c, p);
  if (t.route == t.home_route) t.home_route = 0;  // [R-PATH-10]: back home by itself
}

// [R-PATH-4], [R-PATH-5]: the path's state after an RTO expiry, and its new route.
void Engine::choose_route(Conn& c, uint16_t p) noexcept {
  PathTx& t = c.tx[p];
  if (t.state == PathState::Active) {  // [R-PATH-4]
    t.state = PathState::Suspect;
    t.consecutive_repaths = 0;
  }
  ++t.consecutive_repaths;
  if (t.state == PathState::Suspect && t.consecutive_repaths >= 3) t.state = PathState::Failed;
  const uint64_t previous_repath = t.last_repath;
  t.last_repath = now_;
  if (t.state == PathState::Failed) {
    // [R-PATH-5]: the route of the lowest-numbered ACTIVE path acknowledged since this path's
    // previous re-path: a route known to work now (an idle donor may have died unseen, A-26).
    for (uint16_t q = 0; q < c.paths; ++q) {
      if (q != p && c.tx[q].state == PathState::Active && c.tx[q].last_ack > previous_repath) {
        t.route = c.tx[q].route;
        return;
      }
    }
  }
  t.route = default_route(c.id, p, t.fresh_routes++);
}

// [R-PLC-9]: a PSN whose RNR wait is over is lost: retransmitted before new data [R-REL-5].
void Engine::expire_rnr_waits(Block& b, PathTx& t) noexcept {
  for (unsigned j = b.rnr.next_set(0); j < 256; j = b.rnr.next_set(j + 1))
    if (b.rec[(t.suna + j) & 255].rnr_until <= now_) mark_lost(b, t, j, LossCause::Rnr);
}

void Engine::path_timers(Conn& c, uint16_t p) noexcept {
  PathTx& t = c.tx[p];
  if (t.block == kNone) return;
  Block& b = blocks_[t.block];
  if (b.n_rnr) expire_rnr_waits(b, t);
  if (b.n_inflight == 0) {
    if (home_probe_allowed(t) && t.home_next <= now_) send_home_probe(c, p);  // [R-PATH-10]
    update_room(c, p);
    return;
  }
  if (rto_deadline(t, b) <= now_) {  // [R-REL-7]
    for (unsigned j = b.inflight.next_set(0); j < 256; j = b.inflight.next_set(j + 1))
      mark_lost(b, t, j, LossCause::Rto);
    t.rto_current = std::min(cfg_.rto_max_us, t.rto_current * 2);
    t.probe_sent_in_period = false;
    if (t.probe_outstanding) {
      t.probe_outstanding = false;
      --c.send.probes_out;
    }
    repath(c, p);
  } else if (!t.probe_sent_in_period && probe_deadline(t) <= now_) {  // [R-REL-6]
    send_probe(c, p);
    t.probe_sent_in_period = true;
  }
  if (home_probe_allowed(t) && t.home_next <= now_) send_home_probe(c, p);  // [R-PATH-10]
  update_room(c, p);
}

}  // namespace mroce::engine
