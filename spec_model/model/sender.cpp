// The sending side of the model: segmentation, spraying over paths, ACK and NAK processing, loss
// detection, retransmission, RTT and timers, path states, and the congestion controller.
#include <algorithm>

#include "model/state.hpp"

namespace mroce::model {

namespace {

ref::Opcode opcode_of(WorkOp op) {
    switch (op) {
        case WorkOp::Send:
            return ref::Opcode::Send;
        case WorkOp::Write:
            return ref::Opcode::Write;
        case WorkOp::WriteImm:
            return ref::Opcode::WriteImm;
        case WorkOp::Read:
            return ref::Opcode::ReadReq;
        case WorkOp::Recv:
            break;
    }
    return ref::Opcode::Send;
}

// [R-HDR-14] segment k of a message of length L.
uint32_t segment_length(uint32_t msg_length, uint32_t k, uint32_t max_payload) {
    const uint64_t offset = uint64_t(k) * max_payload;
    if (offset >= msg_length) return 0;
    return static_cast<uint32_t>(std::min<uint64_t>(max_payload, msg_length - offset));
}

}  // namespace

bool EndpointState::has_outstanding_psns(const Connection& c) const {
    for (const auto& t : c.tx)
        for (const auto& o : t.out)
            if (o.state != PsnState::Acked) return true;
    return false;
}

// ---- building and sending data packets --------------------------------------------------------

static void send_segment(EndpointState& s, Connection& c, uint16_t path, OutstandingPsn& o, uint32_t psn,
                         bool retransmission) {
    PathTx& t = c.tx[path];
    const Segment& seg = o.seg;
    ref::Packet p = s.base_packet(c, seg.op, path, t.route, true);
    p.psn = psn;
    p.stream_id = seg.stream;
    p.msn = seg.msn;
    p.msg_length = seg.msg_length;
    p.msg_offset = seg.offset;
    p.rsn = seg.rsn;
    p.remote_va = seg.remote_va;
    p.rkey = seg.rkey;
    p.immediate = seg.immediate;
    if (retransmission) p.flags |= ref::kFlagRetx;  // [R-HDR-3], [R-REL-5]
    std::vector<uint8_t> payload;
    bool source_gone = false;
    if (o.void_mode) {
        p.flags |= ref::kFlagVoid;  // [R-REL-9]: same PSN, payload 0
        ++s.counters.voids_sent;
    } else if (seg.op != ref::Opcode::ReadReq && seg.length > 0) {
        // The payload is read from memory at (re)send time: one copy, no staging buffer.
        // [R-MEM-6] from the region the key named, not the first region holding the address
        const Region* r = s.memory.keyed(seg.source_key, seg.is_response, seg.source_va + seg.offset, seg.length);
        if (r) {
            const auto first = r->bytes.begin() + static_cast<std::ptrdiff_t>(seg.source_va + seg.offset - r->va);
            payload.assign(first, first + seg.length);
        } else {
            // [R-MEM-6] the source was deregistered under us: the data cannot be sent any more. The
            // segment goes VOID, and a work request fails (its other PSNs go VOID too) once it is out.
            p.flags |= ref::kFlagVoid;
            o.void_mode = true;
            ++s.counters.voids_sent;
            source_gone = true;
        }
    }
    o.state = PsnState::InFlight;
    ++o.tx_count;
    o.last_tx = s.now;
    o.last_tx_ts = p.timestamp;
    t.last_tx = s.now;
    ++t.packets_sent;
    if (retransmission) {
        ++t.retransmissions;
        ++s.counters.retransmissions;
    } else {
        ++s.counters.data_sent;
    }
    s.transmit(c, p, payload);
    if (source_gone && !seg.is_response) {
        const uint16_t stream = seg.stream;
        const uint32_t msn = seg.msn;
        s.fail_work_request(c, stream, msn, Status::LocalProtection);
    }
}

std::vector<uint16_t> EndpointState::path_candidates(const Connection& c) const {
    // [R-PATH-8]: ACTIVE paths with room (in flight < cwnd [R-CC-3], within the span [R-PSN-4]),
    // in round-robin order starting after the path of the previous new segment.
    std::vector<uint16_t> out;
    if (c.paths == 0) return out;
    const uint16_t start = c.any_new_segment ? static_cast<uint16_t>((c.last_path + 1) % c.paths) : 0;
    for (uint16_t i = 0; i < c.paths; ++i) {
        const uint16_t p = static_cast<uint16_t>((start + i) % c.paths);
        const PathTx& t = c.tx[p];
        if (t.state != PathState::Active) continue;
        if (t.in_flight() >= t.cwnd) continue;
        if (!serial_lt(t.snxt, t.suna + 256)) continue;
        bool lost_waiting = false;  // [R-REL-5] no new data while a lost PSN of the path waits
        for (const auto& o : t.out) lost_waiting = lost_waiting || o.state == PsnState::Lost;
        if (lost_waiting) continue;
        out.push_back(p);
    }
    return out;
}

bool EndpointState::has_pending_new_data(const Connection& c) const {
    for (const auto& st : c.sstreams)
        for (const auto& wr : st.wrs)
            if (!wr.failed && wr.next_segment < wr.total_segments) return true;
    return !c.responses.empty();
}

// [R-CC-6]: a ceiling is in force when the latest hint is non-zero and not older than HINT_TTL.
bool EndpointState::rate_limited(const Connection& c) const {
    return c.ceiling_mbps != 0 && now - c.hint_time <= cfg.hint_ttl_us;
}

// [R-CC-7]
void EndpointState::refresh_credit(Connection& c) {
    if (!rate_limited(c)) {
        c.credit_bits = c.credit_max();
    } else {
        const int64_t grown = c.credit_bits + int64_t(c.ceiling_mbps) * int64_t(now - c.credit_time);
        c.credit_bits = std::min(grown, c.credit_max());
    }
    c.credit_time = now;
}

std::optional<Time> EndpointState::credit_deadline(const Connection& c) const {
    if (c.credit_bits >= 0 || !rate_limited(c) || !has_pending_new_data(c)) return std::nullopt;
    if (path_candidates(c).empty()) return std::nullopt;  // the window holds it, not the credit
    const uint64_t wait = (uint64_t(-c.credit_bits) + c.ceiling_mbps - 1) / c.ceiling_mbps;
    const Time expiry = c.hint_time + cfg.hint_ttl_us + 1;
    return std::min<Time>(c.credit_time + wait, expiry);
}

// Takes the next new segment from the stream slot's first work request with unsent segments.
static bool next_segment_of_slot(Connection& c, uint32_t slot, Segment& seg) {
    if (slot == c.streams) {  // Read responses, as one more stream [R-CC-9]
        if (c.responses.empty()) return false;
        ResponseJob& job = c.responses.front();
        seg = Segment{};
        seg.op = ref::Opcode::ReadResp;
        seg.stream = job.stream;
        seg.msn = job.msn;
        seg.msg_length = job.length;
        seg.offset = job.next_segment * c.max_payload;
        seg.length = segment_length(job.length, job.next_segment, c.max_payload);
        seg.source_va = job.source_va;
        seg.source_key = job.rkey;
        seg.is_response = true;
        if (++job.next_segment >= job.total_segments) c.responses.pop_front();
        return true;
    }
    for (auto& wr : c.sstreams[slot].wrs) {
        if (wr.failed || wr.next_segment >= wr.total_segments) continue;
        seg = Segment{};
        seg.op = opcode_of(wr.op);
        seg.stream = wr.stream;
        seg.msn = wr.msn;
        seg.rsn = wr.rsn;
        seg.msg_length = wr.length;
        seg.source_va = wr.local_va;
        seg.source_key = wr.lkey;
        seg.remote_va = wr.remote_va;
        seg.rkey = wr.rkey;
        seg.immediate = wr.immediate.value_or(0);
        if (wr.op == WorkOp::Read) {  // [R-HDR-15]: one READ_REQ, payload 0, offset 0
            seg.offset = 0;
            seg.length = 0;
        } else {
            seg.offset = wr.next_segment * c.max_payload;
            seg.length = segment_length(wr.length, wr.next_segment, c.max_payload);
        }
        ++wr.next_segment;
        return true;
    }
    return false;
}

static bool slot_has_work(const Connection& c, uint32_t slot) {
    if (slot == c.streams) return !c.responses.empty();
    for (const auto& wr : c.sstreams[slot].wrs)
        if (!wr.failed && wr.next_segment < wr.total_segments) return true;
    return false;
}

void EndpointState::pump(Connection& c) {
    refresh_credit(c);
    // 1. [R-REL-5] retransmissions (and VOIDs) first, per path in PSN order, held by the window
    //    only [R-CC-3], [R-CC-10].
    for (uint16_t p = 0; p < c.paths; ++p) {
        PathTx& t = c.tx[p];
        for (uint32_t i = 0; i < t.out.size(); ++i) {
            OutstandingPsn& o = t.out[i];
            if (o.state != PsnState::Lost) continue;
            if (t.in_flight() >= t.cwnd) break;
            send_segment(*this, c, p, o, t.suna + i, true);
            if (rate_limited(c)) c.credit_bits -= int64_t(8) * (o.void_mode ? 0 : o.seg.length);
        }
    }
    // 2. New segments: streams in round robin [R-CC-9], paths by the choice policy [R-PATH-8],
    //    while the connection's credit allows [R-CC-7], [R-CC-8]; as long as any path has room, the
    //    default of [R-CC-11] (work conservation: nothing pending is held back).
    if (c.state == ConnState::Closing && c.abort) return;
    const uint32_t slots = uint32_t(c.streams) + 1;
    // [R-CC-7]: with no ceiling the credit is held at CREDIT_MAX, so only the windows limit.
    const bool limited = rate_limited(c);
    while (!limited || c.credit_bits >= 0) {
        uint32_t slot = slots;
        for (uint32_t i = 0; i < slots; ++i) {
            const uint32_t cand = (c.rr_slot + i) % slots;
            if (slot_has_work(c, cand)) {
                slot = cand;
                break;
            }
        }
        if (slot == slots) break;
        const std::vector<uint16_t> candidates = path_candidates(c);
        if (candidates.empty()) break;
        size_t pick = choices->pick_path(c.id, candidates);
        if (pick >= candidates.size()) pick = 0;
        const uint16_t path = candidates[pick];
        Segment seg;
        next_segment_of_slot(c, slot, seg);
        c.rr_slot = (slot + 1) % slots;
        c.last_path = path;
        c.any_new_segment = true;
        PathTx& t = c.tx[path];
        if (t.out.empty()) home_requalified(t);  // [R-PATH-10]: outstanding PSNs again
        OutstandingPsn o;
        o.seg = seg;
        t.out.push_back(o);
        const uint32_t psn = t.snxt++;  // [R-PSN-2]
        send_segment(*this, c, path, t.out.back(), psn, false);
        if (limited) c.credit_bits -= int64_t(8) * seg.length;
    }
}

// ---- completions at the sender [R-CMP-1] -------------------------------------------------------

void EndpointState::complete_sends(Connection& c, uint16_t stream) {
    auto& wrs = c.sstreams[stream].wrs;
    while (!wrs.empty() && wrs.front().done()) {
        const WorkRequest& wr = wrs.front();
        Completion comp;
        comp.conn = c.id;
        comp.stream = stream;
        comp.wr_id = wr.wr_id;
        comp.op = wr.op;
        comp.status = wr.failed ? wr.status : Status::Success;
        comp.byte_len = wr.failed ? 0 : wr.length;
        emit(comp);
        wrs.pop_front();
    }
}

static WorkRequest* find_wr(Connection& c, uint16_t stream, uint32_t msn) {
    if (stream >= c.sstreams.size()) return nullptr;
    for (auto& wr : c.sstreams[stream].wrs)
        if (wr.msn == msn) return &wr;
    return nullptr;
}

void EndpointState::fail_work_request(Connection& c, uint16_t stream, uint32_t msn, Status status) {
    WorkRequest* wr = find_wr(c, stream, msn);
    if (!wr || wr->done()) return;
    wr->failed = true;  // [R-REL-9]: completes once with the error, sends nothing new
    wr->status = status;
    // Its outstanding, unacknowledged PSNs are voided instead of retransmitted.
    for (auto& t : c.tx)
        for (auto& o : t.out)
            if (!o.seg.is_response && o.seg.stream == stream && o.seg.msn == msn && o.state != PsnState::Acked)
                o.void_mode = true;
    complete_sends(c, stream);
}

// ---- ACK processing ----------------------------------------------------------------------------

// [R-RTO-2]
static void rtt_sample(const Config& cfg, PathTx& t, uint32_t r) {
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

static bool sack_bit(const ref::Packet& ack, uint32_t i) {
    return (ack.sack[i / 8] & (0x80u >> (i % 8))) != 0;  // [R-HDR-20]
}

void EndpointState::on_ack(Connection& c, uint16_t path, const ref::Packet& ack) {
    PathTx& t = c.tx[path];
    // [R-ACK-10]: an ACK whose CPSN was never sent acts on nothing; SACK bits for PSNs never sent
    // are ignored. Bit i names CPSN + 1 + i; bit 0 is always zero ([R-HDR-20]).
    if (!serial_lt(ack.cpsn, t.snxt)) {
        ++counters.invalid_acks;
        return;
    }
    auto sent = [&](uint32_t i) { return serial_lt(ack.cpsn + 1 + i, t.snxt); };
    bool unsent_bits = false;
    for (uint32_t i = 1; i < 256; ++i) unsent_bits |= sack_bit(ack, i) && !sent(i);
    if (unsent_bits) ++counters.sack_beyond_snxt;
    c.ceiling_mbps = ack.rate_hint;  // [R-CC-6]
    c.hint_time = now;
    if (c.keepalive_outstanding && ack.ts_echo == c.keepalive_ts) c.keepalive_outstanding = false;

    // Which PSNs this ACK acknowledges [R-REL-3]; the highest of them for the gap rule. [R-ACK-9]: an
    // older ACK never moves state backwards: PSNs are only ever marked acknowledged, never unmarked,
    // so its set bits still count.
    auto acknowledged = [&](uint32_t psn) {
        if (serial_le(psn, ack.cpsn)) return true;
        const uint32_t i = psn - ack.cpsn - 1;
        return i < 256 && sack_bit(ack, i) && sent(i);
    };
    uint32_t highest = ack.cpsn;
    for (uint32_t i = 255; i > 0; --i) {
        if (sack_bit(ack, i) && sent(i)) {
            highest = ack.cpsn + 1 + i;
            break;
        }
    }
    uint32_t newly = 0;
    for (uint32_t i = 0; i < t.out.size(); ++i) {
        OutstandingPsn& o = t.out[i];
        const uint32_t psn = t.suna + i;
        if (o.state == PsnState::Acked || !acknowledged(psn)) continue;
        o.state = PsnState::Acked;
        o.rnr_count = 0;
        ++newly;
        if (o.void_mode || o.seg.is_response) continue;
        if (WorkRequest* wr = find_wr(c, o.seg.stream, o.seg.msn)) {
            if (wr->op != WorkOp::Read && !wr->failed && ++wr->segments_acked == wr->total_segments) {
                wr->delivered = true;  // [R-REL-10]
            }
        }
    }
    const bool answered_probe = t.probe_outstanding && ack.ts_echo == t.probe_ts;
    if (answered_probe) t.probe_outstanding = false;
    // [R-PATH-10]: the answer to the home probe echoes its timestamp and came back on the
    // home route (the receiver's reply route was the probe's port [R-ACK-5]); data of the current
    // route sent in the same microsecond echo the same timestamp but come back on the current route.
    const bool answered_home = t.home_route != 0 && t.home_probe_outstanding && ack.ts_echo == t.home_probe_ts &&
                               ack.udp_sport == t.home_route;
    // [R-RTO-1] an RTT sample from the timestamp echo
    if (newly > 0 || answered_probe || answered_home) {
        rtt_sample(cfg, t, static_cast<uint32_t>(now) - ack.ts_echo);
        t.rto_current = t.rto;  // [R-REL-7] backoff cleared
        t.probe_sent_in_period = false;
    }
    t.last_ack = now;
    // Advance SUNA over the acknowledged prefix.
    while (!t.out.empty() && t.out.front().state == PsnState::Acked) {
        t.out.pop_front();
        ++t.suna;
    }
    // [R-CC-2] order: [R-CC-4], then the end of the decrease period, then additive increase.
    if (serial_lt(t.last_ce, ack.ce_count)) {
        t.last_ce = ack.ce_count;
        if (!t.in_decrease) {  // [R-CC-4]
            t.cwnd = std::max<uint32_t>(1, t.cwnd / 2);
            t.ai_count = 0;
            t.in_decrease = true;
            t.decrease_end = t.snxt;
            ++counters.cwnd_decreases;
        }
        ++counters.ce_marks_seen;
    }
    if (t.in_decrease && serial_le(t.decrease_end, t.suna)) t.in_decrease = false;
    if (!t.in_decrease) {  // [R-CC-2]
        t.ai_count += newly;
        while (t.ai_count >= t.cwnd) {
            t.ai_count -= t.cwnd;
            t.cwnd = std::min(c.cwnd_max(), t.cwnd + 1);
            if (t.cwnd == c.cwnd_max()) {
                t.ai_count = std::min(t.ai_count, t.cwnd - 1);
                break;
            }
        }
    }
    // [R-REL-4] loss detection: L1 (gap) and L2 (time).
    for (uint32_t i = 0; i < t.out.size(); ++i) {
        OutstandingPsn& o = t.out[i];
        if (o.state != PsnState::InFlight) continue;
        const uint32_t psn = t.suna + i;
        const bool gap = o.tx_count == 1 && serial_lt(psn, highest);
        // [R-PATH-10]: the home probe took another route; it says nothing of the current route's packets.
        const bool time = !answered_home && serial_lt(o.last_tx_ts, ack.ts_echo);
        if (!gap && !time) continue;
        if (cfg.canary_skip_one_retransmission && !canary_used) {
            // The deliberately broken model: pretend the first lost PSN was acknowledged.
            canary_used = true;
            o.state = PsnState::Acked;
            if (WorkRequest* wr = find_wr(c, o.seg.stream, o.seg.msn))
                if (wr->op != WorkOp::Read && ++wr->segments_acked == wr->total_segments) wr->delivered = true;
            continue;
        }
        o.state = PsnState::Lost;  // [R-CC-5]: loss never touches cwnd
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
    // [R-PATH-10] the home route works both ways: the path goes back to it, ACTIVE, at INIT_CWND
    // as after any re-path ([R-PATH-6], [R-PATH-9]).
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
        ++counters.home_returns;
    }
    for (uint16_t st = 0; st < c.sstreams.size(); ++st) complete_sends(c, st);
}

// ---- NAK processing [R-PLC-9], [R-REL-9] ---------------------------------------------------------

void EndpointState::on_nak(Connection& c, uint16_t path, const ref::Packet& nak) {
    PathTx& t = c.tx[path];
    if (!serial_lt(nak.nak_psn, t.snxt)) {  // [R-ACK-10]: a PSN never sent
        ++counters.invalid_acks;
        return;
    }
    ++counters.naks_received;
    OutstandingPsn* o = t.find(nak.nak_psn);
    if (!o || o->state == PsnState::Acked) return;
    const auto code = static_cast<ref::NakCode>(nak.nak_code);
    const Time rnr_until = now + (nak.nak_detail ? uint64_t(nak.nak_detail) * 10 : cfg.rnr_default_us);
    if (o->void_mode && code == ref::NakCode::Rnr) {
        // [R-PLC-9], [R-SEC-11]: the receiver cannot remember the cancellation yet; nothing is left
        // to fail, so the VOID waits like any RNR and goes out again after the wait.
        o->state = PsnState::RnrWait;
        o->rnr_until = rnr_until;
        return;
    }
    if (o->void_mode) {  // already voided: make sure the VOID goes out
        o->state = PsnState::Lost;
        return;
    }
    if (code == ref::NakCode::Rnr) {
        ++o->rnr_count;
        if (o->rnr_count >= cfg.rnr_retry_max && !o->seg.is_response) {
            fail_work_request(c, o->seg.stream, o->seg.msn, Status::RnrRetryExceeded);
            o->void_mode = true;
            o->state = PsnState::Lost;
            return;
        }
        o->state = PsnState::RnrWait;
        o->rnr_until = rnr_until;
        return;
    }
    Status status = Status::RemoteInvalid;
    if (code == ref::NakCode::RemoteAccess) status = Status::RemoteAccess;
    if (code == ref::NakCode::Length) status = Status::RemoteLength;
    o->void_mode = true;
    o->state = PsnState::Lost;  // the VOID goes out through the retransmission queue
    if (!o->seg.is_response) fail_work_request(c, o->seg.stream, o->seg.msn, status);
}

// ---- timers of a path: RNR waits, tail probe, RTO -------------------------------------------------

std::optional<Time> EndpointState::path_deadline(const Connection& c, uint16_t path) const {
    const PathTx& t = c.tx[path];
    std::optional<Time> best;
    auto consider = [&](Time x) {
        if (!best || x < *best) best = x;
    };
    bool any_in_flight = false;
    Time earliest_tx = 0;
    for (const auto& o : t.out) {
        if (o.state == PsnState::RnrWait) consider(o.rnr_until);
        if (o.state == PsnState::InFlight) {
            earliest_tx = any_in_flight ? std::min(earliest_tx, o.last_tx) : o.last_tx;
            any_in_flight = true;
        }
    }
    if (home_probe_allowed(t)) consider(t.home_next);  // [R-PATH-10]
    if (any_in_flight) {
        consider(std::max(t.last_ack, earliest_tx) + t.rto_current);  // [R-REL-7]
        if (!t.probe_sent_in_period) {                                // [R-REL-6]
            const uint32_t pto = t.have_sample ? std::max(cfg.pto_min_us, 2 * t.srtt) : cfg.rto_init_us / 2;
            consider(std::max(t.last_tx, t.last_ack) + pto);
        }
    }
    return best;
}

void EndpointState::send_probe(Connection& c, uint16_t path) {
    PathTx& t = c.tx[path];
    ref::Packet p = base_packet(c, ref::Opcode::Probe, path, t.route, false);
    p.flags = ref::kFlagAr;  // [R-REL-6]
    transmit(c, p);
    ++counters.probes_sent;
    t.probe_outstanding = true;
    t.probe_ts = p.timestamp;
}

// [R-PATH-10] a home probe: PROBE with AR on the path's home route, not its current one. It is not
// the tail probe of [R-REL-6] (no probe_outstanding, no PTO or RTO period) and no transmission on
// the path (last_tx): a lost home probe changes nothing.
void EndpointState::send_home_probe(Connection& c, uint16_t path) {
    PathTx& t = c.tx[path];
    ref::Packet p = base_packet(c, ref::Opcode::Probe, path, t.home_route, false);
    p.flags = ref::kFlagAr;
    transmit(c, p);
    ++counters.probes_sent;
    t.home_probe_outstanding = true;
    t.home_probe_ts = p.timestamp;
    t.home_next = now + t.home_interval;
    t.home_interval = std::min(cfg.home_probe_max_us, 2 * t.home_interval);
}

// [R-PATH-4], [R-PATH-5]: the path's state after an RTO expiry, and its new route.
static void choose_route(EndpointState& s, Connection& c, uint16_t path) {
    PathTx& t = c.tx[path];
    if (t.state == PathState::Active) {  // [R-PATH-4]
        t.state = PathState::Suspect;
        t.consecutive_repaths = 0;
    }
    ++t.consecutive_repaths;
    if (t.state == PathState::Suspect && t.consecutive_repaths >= 3) t.state = PathState::Failed;
    const Time previous_repath = t.last_repath;
    t.last_repath = s.now;
    if (t.state == PathState::Failed) {
        // [R-PATH-5]: the route of the lowest-numbered ACTIVE path acknowledged since this path's
        // previous re-path: a route known to work now (an idle donor may have died unseen, A-26).
        for (uint16_t q = 0; q < c.paths; ++q) {
            if (q != path && c.tx[q].state == PathState::Active && c.tx[q].last_ack > previous_repath) {
                t.route = c.tx[q].route;
                return;
            }
        }
    }
    t.route = s.choices->fresh_route(c.id, path, t.fresh_routes++);
}

static void repath(EndpointState& s, Connection& c, uint16_t path) {
    PathTx& t = c.tx[path];
    ++t.repaths;
    ++s.counters.repaths;
    // [R-PATH-10] the first RTO re-path of an ACTIVE path with no home route: the route it leaves
    // becomes its home route, probed from HOME_PROBE on.
    if (t.state == PathState::Active && t.home_route == 0) {
        t.home_route = t.route;
        t.home_interval = s.cfg.home_probe_us;
        t.home_next = s.now + s.cfg.home_probe_us;
        t.home_probe_outstanding = false;
    }
    choose_route(s, c, path);
    if (t.route == t.home_route) t.home_route = 0;  // [R-PATH-10]: back home by itself
}

void EndpointState::path_timers(Connection& c, uint16_t path) {
    PathTx& t = c.tx[path];
    for (auto& o : t.out)  // [R-PLC-9]: the RNR wait is over, retransmit
        if (o.state == PsnState::RnrWait && o.rnr_until <= now) o.state = PsnState::Lost;
    bool any_in_flight = false;
    Time earliest_tx = 0;
    for (const auto& o : t.out) {
        if (o.state != PsnState::InFlight) continue;
        earliest_tx = any_in_flight ? std::min(earliest_tx, o.last_tx) : o.last_tx;
        any_in_flight = true;
    }
    if (any_in_flight) rto_and_tail_probe(c, path, earliest_tx);
    if (home_probe_allowed(t) && t.home_next <= now) send_home_probe(c, path);  // [R-PATH-10]
}

void EndpointState::rto_and_tail_probe(Connection& c, uint16_t path, Time earliest_tx) {
    PathTx& t = c.tx[path];
    if (std::max(t.last_ack, earliest_tx) + t.rto_current <= now) {  // [R-REL-7]
        for (auto& o : t.out)
            if (o.state == PsnState::InFlight) o.state = PsnState::Lost;
        t.rto_current = std::min(cfg.rto_max_us, t.rto_current * 2);
        t.probe_sent_in_period = false;
        t.probe_outstanding = false;
        repath(*this, c, path);
        return;
    }
    if (!t.probe_sent_in_period) {  // [R-REL-6]
        const uint32_t pto = t.have_sample ? std::max(cfg.pto_min_us, 2 * t.srtt) : cfg.rto_init_us / 2;
        if (std::max(t.last_tx, t.last_ack) + pto <= now) {
            send_probe(c, path);
            t.probe_sent_in_period = true;
        }
    }
}

// [R-PATH-10]: an ACTIVE path away from its home route, with outstanding PSNs, probes the home route.
bool EndpointState::home_probe_allowed(const PathTx& t) const {
    return t.home_route != 0 && t.route != t.home_route && t.state == PathState::Active && !t.out.empty();
}

// [R-PATH-10]: a home probe that fell due while the path did not qualify goes 1 µs after it qualifies
// again (becomes ACTIVE, or gets outstanding PSNs): never a deadline in the past.
void EndpointState::home_requalified(PathTx& t) const {
    if (t.home_route != 0 && t.home_next <= now) t.home_next = now + 1;
}

}  // namespace mroce::model
