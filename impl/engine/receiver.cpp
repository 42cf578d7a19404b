// The receiver: posting receives, the per-path receive window, content checks and NAKs, direct
// placement, message accounting, ACK generation, and receive completions. A READ_REQ accepted here is
// handed to the read responder (read_responder.cpp).
#include <algorithm>

#include "engine/engine.hpp"
#include "engine/place_bytes.hpp"

namespace mroce::engine {

// ---- posting receives [R-MATCH-1] ------------------------------------------------------------------

Result Engine::post_recv(uint32_t conn, uint16_t stream, uint64_t wr_id, const Sge& buf) {
  return as_event([&] {
    Conn* cp = conns_.find(conn);
    const Region* lr = nullptr;
    const Result refused = check_post(cp, stream, buf, true, &lr);
    if (refused != Result::Ok) return refused;
    Conn& c = *cp;
    RecvStream& rs = c.recv_streams[stream];
    // [R-REL-9] its message was already abandoned by the sender: it completes at once, in the
    // entry that remembered the cancellation (so a connection at its share can still post it).
    uint32_t ri = c.canceled_held ? canceled_.find(canceled_key(c, stream, rs.next_post_rsn)) : kNone;
    const bool canceled = ri != kNone;
    if (canceled) {
      unlink_canceled(c, stream, ri);
      recvs_[ri] = Recv{};
    } else if ((ri = alloc_recv(c)) == kNone) {
      return Result::NoResources;  // [R-SEC-11]: this connection's share, or the pool, is used up
    }
    Recv& r = recvs_[ri];
    r.wr_id = wr_id;
    r.va = buf.addr;
    r.length = buf.length;
    r.region = regions_.slot(*lr);
    r.region_gen = lr->generation;
    r.rsn = rs.next_post_rsn++;  // [R-MATCH-1]
    r.next = kNone;
    if (canceled) {
      r.done = true;
      r.status = Status::Canceled;
    }
    if (rs.tail == kNone)
      rs.head = ri;
    else
      recvs_[rs.tail].next = ri;
    rs.tail = ri;
    ++c.open_recvs;
    complete_recvs(c, stream);
    touch(c);
    return Result::Ok;
  });
}

// ---- ACKs and NAKs ---------------------------------------------------------------------------------

void Engine::send_ack(Conn& c, uint16_t p) noexcept {
  PathRx& r = c.rx[p];
  uint8_t* bth;
  // [R-ACK-5]: on the path's reply route (the source port of its latest data or probe packet).
  io::PacketBuf* b = frame_begin(c, false, r.reply_route, &bth);
  fast::AckFields a;
  a.cpsn = r.st.cpsn;
  a.ce_count = r.ce_count;
  a.ts_echo = r.ts_echo;
  a.rate_hint = c.fair.active ? c.fair.share : 0;  // [R-HDR-23], [R-FS-2]
  a.sack = nullptr;
  fast::put_ack(bth, this->bth(c, p, 0), a);
  r.st.bits.to_wire(bth + fast::kBthLen + 16);  // [R-HDR-20]: bit i is PSN CPSN + 1 + i
  frame_end(b, 0);
  ++counters_.acks_sent;
  r.unacked = 0;
  path_changed(c, p);
}

void Engine::send_nak(Conn& c, uint16_t p, uint32_t psn, fast::NakCode code) noexcept {
  uint8_t* bth;
  // [R-ACK-8], [R-ACK-5]: on the path of the refused packet, its reply route.
  io::PacketBuf* b = frame_begin(c, false, c.rx[p].reply_route, &bth);
  fast::put_nak(bth, this->bth(c, p, 0), psn, uint8_t(code),
                code == fast::NakCode::Rnr ? cfg_.rnr_detail : 0);  // [R-HDR-24]
  frame_end(b, 0);
  ++counters_.naks_sent;
}

void Engine::on_probe(Conn& c, uint16_t p, const View& v) noexcept {
  c.rx[p].ts_echo = v.timestamp();  // [R-ACK-7]
  send_ack(c, p);                   // [R-ACK-2] (b)
}

// [R-CMP-2]: in RSN order; a stream never waits for another.
void Engine::complete_recvs(Conn& c, uint16_t stream) noexcept {
  RecvStream& rs = c.recv_streams[stream];
  while (rs.head != kNone && recvs_[rs.head].done) {
    const uint32_t ri = rs.head;
    Recv& r = recvs_[ri];
    WorkCompletion wc;
    wc.wr_id = r.wr_id;
    wc.conn = c.id;
    wc.stream = stream;
    wc.opcode = WcOpcode::Recv;
    wc.status = r.status;
    wc.byte_len = r.status == Status::Success ? r.msg_length : 0;
    if (r.status == Status::Success && r.is_wimm) {
      wc.has_imm = true;
      wc.imm = r.imm;
    }
    complete(wc);
    rs.head = r.next;
    if (rs.head == kNone) rs.tail = kNone;
    if (rs.hint == ri) rs.hint = kNone;
    ++rs.next_complete_rsn;
    --c.open_recvs;
    if (r.status == Status::LocalLength) {
      // Kept: later packets of the refused Send must keep drawing NAK Length ([R-SEC-7]).
      r.next = rs.length_failed;
      rs.length_failed = ri;
    } else {
      release_recv(c, ri);
    }
  }
}

void Engine::flush_recvs(Conn& c) noexcept {
  for (uint16_t st = 0; st < c.streams; ++st) {
    for (uint32_t ri = c.recv_streams[st].head; ri != kNone; ri = recvs_[ri].next) {
      Recv& r = recvs_[ri];
      if (!r.done) {
        r.done = true;
        r.status = Status::Flushed;
      }
    }
    complete_recvs(c, st);
  }
}

void Engine::free_recvs(Conn& c) noexcept {
  for (uint16_t st = 0; st < c.streams; ++st) {
    RecvStream& rs = c.recv_streams[st];
    while (rs.length_failed != kNone) {
      const uint32_t ri = rs.length_failed;
      rs.length_failed = recvs_[ri].next;
      release_recv(c, ri);
    }
    while (rs.canceled != kNone) {
      const uint32_t ri = rs.canceled;
      unlink_canceled(c, st, ri);
      release_recv(c, ri);
    }
  }
}

// A receive entry for connection c, within its share of the pool [R-SEC-11].
uint32_t Engine::alloc_recv(Conn& c) noexcept {
  if (c.recvs_held >= recv_limit_) return kNone;
  const uint32_t ri = recvs_.alloc();
  if (ri != kNone) ++c.recvs_held;
  return ri;
}

// The RSNs a stream has canceled lie in [next_post_rsn, next_post_rsn + kCanceledRsnSpan) (cancel_rsn
// refuses the others and post_recv consumes them in order), so their low 24 bits tell them apart and
// the key (connection slot: 24 bits, checked at open; stream: 16; RSN: 24) is unique. It is then
// scrambled by a secret bijection, so that a peer cannot pick RSNs whose keys crowd one probe run.
constexpr uint32_t kCanceledRsnSpan = 1u << 24;

uint64_t Engine::canceled_key(const Conn& c, uint16_t stream, uint32_t rsn) const noexcept {
  const uint64_t key = uint64_t(conns_.slot(c)) << 40 | uint64_t(stream) << 24 | (rsn & (kCanceledRsnSpan - 1));
  return (key ^ canceled_mask_) * canceled_mult_;
}

// Takes canceled entry ri out of its stream's list and out of the map (the entry stays allocated).
void Engine::unlink_canceled(Conn& c, uint16_t stream, uint32_t ri) noexcept {
  RecvStream& rs = c.recv_streams[stream];
  Recv& r = recvs_[ri];
  if (r.prev == kNone)
    rs.canceled = r.next;
  else
    recvs_[r.prev].next = r.next;
  if (r.next != kNone) recvs_[r.next].prev = r.prev;
  canceled_.erase(canceled_key(c, stream, r.rsn));
  --c.canceled_held;
}

// [R-REL-9]: an accepted VOID of a SEND or WRITE_IMM cancels its RSN. A posted receive that is
// not done completes with Canceled; an RSN not posted yet is remembered and cancels its receive when
// it is posted. Remembering takes an entry of the connection's share [R-SEC-11]: without one (or for
// an RSN kCanceledRsnSpan or more ahead of the posted ones) the VOID is refused (false; RNR).
bool Engine::cancel_rsn(Conn& c, uint16_t stream, uint32_t rsn) noexcept {
  RecvStream& rs = c.recv_streams[stream];
  if (rsn >= rs.next_post_rsn) {  // not posted (the model's lookup by RSN finds nothing)
    if (serial_lt(rsn, rs.next_post_rsn)) return true;
    if (rsn - rs.next_post_rsn >= kCanceledRsnSpan) return false;
    const uint64_t key = canceled_key(c, stream, rsn);
    if (canceled_.find(key) != kNone) return true;
    const uint32_t ri = c.canceled_held < canceled_limit_ ? alloc_recv(c) : kNone;
    if (ri == kNone) return false;
    Recv& r = recvs_[ri];
    r.rsn = rsn;
    r.next = rs.canceled;
    if (r.next != kNone) recvs_[r.next].prev = ri;
    rs.canceled = ri;
    canceled_.insert(key, ri);
    ++c.canceled_held;
    return true;
  }
  if (rsn < rs.next_complete_rsn) return true;  // completed: done already
  bool completed_ok = false;
  Recv* r = find_recv(c, stream, rsn, &completed_ok);
  if (!r || r->done) return true;
  r->done = true;
  r->status = Status::Canceled;
  complete_recvs(c, stream);
  return true;
}

// The receive with RSN `rsn` of the stream [R-MATCH-1]. *completed_ok is set when that receive has
// already completed successfully (the model keeps it; the engine only remembers that it did).
Recv* Engine::find_recv(Conn& c, uint16_t stream, uint32_t rsn, bool* completed_ok) noexcept {
  RecvStream& rs = c.recv_streams[stream];
  *completed_ok = false;
  if (rsn >= rs.next_post_rsn) return nullptr;  // not posted (yet)
  if (rsn < rs.next_complete_rsn) {
    for (uint32_t g = rs.length_failed; g != kNone; g = recvs_[g].next)
      if (recvs_[g].rsn == rsn) return &recvs_[g];
    *completed_ok = true;
    return nullptr;
  }
  uint32_t i = rs.head, at = rs.next_complete_rsn;
  if (rs.hint != kNone && rs.hint_rsn <= rsn) {
    i = rs.hint;
    at = rs.hint_rsn;
  }
  while (at != rsn) {
    i = recvs_[i].next;
    ++at;
  }
  rs.hint = i;
  rs.hint_rsn = rsn;
  return &recvs_[i];
}

namespace {

// Result of the content checks of [R-SEC-9].
struct Verdict {
  uint8_t nak = 0;                 // fast::NakCode, 0 = accepted
  const Region* region = nullptr;  // WRITE / WRITE_IMM / READ_REQ target
  Recv* recv = nullptr;            // SEND / WRITE_IMM
  uint32_t read = kNone;           // READ_RESP
};

}  // namespace

// [R-PLC-5] the outstanding Read of (stream, msn) if it has this length, or kNone.
uint32_t Engine::outstanding_read(Conn& c, uint16_t stream, uint32_t msn, uint32_t length) noexcept {
  SendStream& ss = c.send_streams[stream];
  auto is_it = [&](uint32_t mi) {
    const Msg& m = msgs_[mi];
    return m.msn == msn && m.op == WcOpcode::Read && !m.done();
  };
  uint32_t found = kNone;
  if (ss.read_hint != kNone && is_it(ss.read_hint)) {
    found = ss.read_hint;
  } else {
    for (uint32_t mi = ss.head; mi != kNone; mi = msgs_[mi].next)
      if (is_it(mi)) {
        found = mi;
        break;
      }
  }
  if (found == kNone || msgs_[found].length != length) return kNone;
  ss.read_hint = found;
  return found;
}

// [R-REL-10] every byte of a Read's response is accounted for: it completes, with the error one of
// them met (LocalProtection, RemoteAccess, [R-MEM-6]) if any.
void Engine::read_delivered(Msg& rd) noexcept {
  rd.flags |= kDelivered;
  if (rd.status != Status::Success) rd.flags |= kFailed;
}

void Engine::on_data(Conn& c, uint16_t p, const View& v) noexcept {
  PathRx& r = c.rx[p];
  const uint32_t psn = v.psn();
  // [R-PSN-3] receive window: CPSN < psn <= CPSN + 256
  const core::Arrival arrival = r.st.classify(psn);
  if (arrival == core::Arrival::OutOfWindow) {
    ++counters_.out_of_window;  // [R-SEC-4]
    return;
  }
  if (arrival == core::Arrival::Duplicate) {
    // [R-REL-8] never placed or counted again; ACKed at once [R-ACK-2] (e)
    ++counters_.duplicates;
    r.ts_echo = v.timestamp();  // [R-ACK-7]
    send_ack(c, p);
    return;
  }
  const bool is_void = v.is_void();
  const bool ce = v.ecn() == 3;
  const fast::Opcode op = v.opcode();
  const uint16_t stream = v.stream_id();
  const uint32_t plen = v.payload_len();
  if (is_void && (op == fast::Opcode::Send || op == fast::Opcode::WriteImm) && stream < c.streams &&
      !cancel_rsn(c, stream, v.rsn())) {  // [R-REL-9]
    // [R-SEC-11]: no room to remember the cancellation: not received, retried after the RNR wait
    ++counters_.rnr_receive_limit;
    send_nak(c, p, psn, fast::NakCode::Rnr);
    path_changed(c, p);
    return;
  }
  if (is_void && op == fast::Opcode::ReadResp && stream < c.streams) {
    // [R-MEM-6] the responder's region was deregistered: the segment counts toward its Read, which
    // fails with RemoteAccess once every segment is accounted for (nothing lands in it after that).
    const uint32_t length = v.msg_length(), offset = v.msg_offset();
    const uint32_t mi = outstanding_read(c, stream, v.msn(), length);
    if (mi != kNone && offset < std::max<uint32_t>(length, 1) && offset % c.max_payload == 0) {
      Msg& rd = msgs_[mi];
      if (rd.status == Status::Success) rd.status = Status::RemoteAccess;
      rd.read_bytes += std::min<uint32_t>(c.max_payload, length - offset);
      if (rd.read_bytes == rd.length) read_delivered(rd);
    }
  }
  if (!is_void) {
    // ---- content checks, in the order of [R-SEC-9]; the first failing one decides ----
    Verdict vd;
    const bool consumes_recv = op == fast::Opcode::Send || op == fast::Opcode::WriteImm;
    // (1) InvalidRequest, table 12.3
    if (stream >= c.streams || plen > c.max_payload) {
      vd.nak = uint8_t(fast::NakCode::InvalidRequest);
    } else if (op == fast::Opcode::ReadResp) {  // [R-PLC-5]: names an outstanding Read of this length
      const uint32_t found = outstanding_read(c, stream, v.msn(), v.msg_length());
      if (found == kNone)
        vd.nak = uint8_t(fast::NakCode::InvalidRequest);
      else
        vd.read = found;
    } else {
      if (consumes_recv) {
        bool completed_ok = false;
        Recv* rv = find_recv(c, stream, v.rsn(), &completed_ok);
        if (completed_ok) {
          vd.nak = uint8_t(fast::NakCode::InvalidRequest);  // its message is already complete
        } else if (rv) {
          const bool wimm = op == fast::Opcode::WriteImm;
          const bool inconsistent = rv->seen && (rv->msg_length != v.msg_length() || rv->is_wimm != wimm ||
                                                 (rv->is_wimm && rv->imm != v.immediate()));
          // [R-SEC-9] (1): its message already completed (placed, or not placed [R-MEM-6]), or was
          // abandoned and canceled
          const bool finished = rv->done && (rv->status == Status::Success || rv->status == Status::Canceled ||
                                             rv->status == Status::LocalProtection);
          if (finished || inconsistent)
            vd.nak = uint8_t(fast::NakCode::InvalidRequest);
          else
            vd.recv = rv;
        }
      }
      // (2) RemoteAccess [R-MEM-3]: the whole message inside a region with the right
      if (!vd.nak && (op == fast::Opcode::Write || op == fast::Opcode::WriteImm || op == fast::Opcode::ReadReq)) {
        const uint32_t need = op == fast::Opcode::ReadReq ? access::kRemoteRead : access::kRemoteWrite;
        const Region* reg = regions_.by_rkey(v.rkey(), c.pd);  // [R-MEM-5]: a region of the connection's PD
        if (!reg || !(reg->access & need) || !reg->contains(v.remote_va(), v.msg_length())) {
          vd.nak = uint8_t(fast::NakCode::RemoteAccess);
          ++counters_.remote_access_naks;
        } else {
          vd.region = reg;
        }
      }
      // (3) RNR [R-PLC-7]; a READ_REQ beyond the connection's share of work requests [R-SEC-11]
      if (!vd.nak && consumes_recv && !vd.recv) vd.nak = uint8_t(fast::NakCode::Rnr);
      if (!vd.nak && op == fast::Opcode::ReadReq && c.send.msgs_held >= wr_limit_) {
        ++counters_.rnr_response_limit;
        vd.nak = uint8_t(fast::NakCode::Rnr);
      }
      // (4) Length [R-MATCH-2]
      if (!vd.nak && op == fast::Opcode::Send && v.msg_length() > vd.recv->length)
        vd.nak = uint8_t(fast::NakCode::Length);
    }
    if (vd.nak) {
      // [R-SEC-5], [R-PLC-8]: refused, not placed, the PSN stays a hole; NAK at once [R-ACK-8]
      if (vd.nak == uint8_t(fast::NakCode::Length) && vd.recv && !vd.recv->done) {
        vd.recv->done = true;  // [R-MATCH-2]: the receive fails once, with LocalLength
        vd.recv->status = Status::LocalLength;
        vd.recv->seen = true;
        vd.recv->msg_length = v.msg_length();
        complete_recvs(c, stream);
      }
      send_nak(c, p, psn, static_cast<fast::NakCode>(vd.nak));
      path_changed(c, p);
      return;
    }
    // A READ_REQ needs a response job; without one it is left unreceived (the requester resends it).
    uint32_t job = kNone;
    if (op == fast::Opcode::ReadReq && (job = reserve_response(c)) == kNone) return;
    // [R-PLC-1] place at once (the one copy, frame to registered memory), then mark received. A
    // local buffer whose region was deregistered since its post takes nothing, and its work request
    // fails with LocalProtection [R-MEM-6].
    Status target_ok = Status::Success;  // a remote target was checked just now [R-MEM-3]
    auto place = [&](const Region* reg, uint64_t va, Status& status) {
      if (reg && plen)
        place_bytes(reg->host + (va - reg->iova), v.payload(), plen);
      else if (plen && status == Status::Success)
        status = Status::LocalProtection;
      counters_.placed_bytes += plen;
    };
    switch (op) {
      case fast::Opcode::Write:  // [R-PLC-2]
        place(vd.region, v.remote_va() + v.msg_offset(), target_ok);
        break;
      case fast::Opcode::WriteImm:
      case fast::Opcode::Send: {
        Recv& rv = *vd.recv;
        if (op == fast::Opcode::WriteImm)
          place(vd.region, v.remote_va() + v.msg_offset(), target_ok);  // [R-PLC-2]
        else
          place(plen ? regions_.held(rv.region, rv.region_gen, rv.va, rv.length) : nullptr, rv.va + v.msg_offset(),
                rv.status);  // [R-PLC-3], [R-MEM-6]
        rv.seen = true;
        rv.msg_length = v.msg_length();
        rv.is_wimm = op == fast::Opcode::WriteImm;
        rv.imm = op == fast::Opcode::WriteImm ? v.immediate() : 0;
        rv.bytes += plen;                                           // [R-PLC-6]: each segment counted once
        if (rv.bytes == rv.msg_length && !rv.done) rv.done = true;  // Success, or LocalProtection
        break;
      }
      case fast::Opcode::ReadReq:  // [R-PLC-4]
        queue_response(c, job, v, *vd.region);
        break;
      case fast::Opcode::ReadResp: {  // [R-PLC-5]
        Msg& rd = msgs_[vd.read];
        place(plen ? regions_.held(rd.region, rd.region_gen, rd.local_va, rd.length) : nullptr,
              rd.local_va + v.msg_offset(), rd.status);  // [R-MEM-6]
        rd.read_bytes += plen;
        if (rd.read_bytes == rd.length) read_delivered(rd);  // [R-REL-10]
        break;
      }
      default:
        break;
    }
  }
  core::AcceptDetail det;
  r.st.accept(psn, det);
  r.ts_echo = v.timestamp();                   // [R-ACK-7]
  if (ce) ++r.ce_count;                        // [R-ACK-6]
  fair_.on_data(c, is_void ? 0 : plen, now_);  // [R-FS-2], [R-FS-3]
  if (is_void && op == fast::Opcode::ReadResp && stream < c.streams) complete_sends(c, stream);
  if (!is_void && op != fast::Opcode::Write && op != fast::Opcode::ReadReq) {
    if (op == fast::Opcode::ReadResp)
      complete_sends(c, stream);
    else
      complete_recvs(c, stream);
  }
  // [R-ACK-2]: immediate ACK triggers
  const bool ar = v.ar();
  if (ar || det.opened_gap || det.filled_gap || ce || is_void) {
    send_ack(c, p);
    return;
  }
  // [R-ACK-3] coalescing within the bounds (default choice: every ACK_EVERY, or after ACK_DELAY)
  if (r.unacked == 0) r.first_unacked = now_;
  ++r.unacked;
  if (r.unacked >= 16 || r.unacked >= cfg_.ack_every || now_ - r.first_unacked >= cfg_.ack_delay_us) {
    send_ack(c, p);
    return;
  }
  path_changed(c, p);
}

}  // namespace mroce::engine
