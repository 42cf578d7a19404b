// The receiving side of the model: the per-path receive window, content checks and NAKs, direct
// placement, message accounting, ACK generation, and receive completions.
#include <algorithm>

#include "model/state.hpp"

namespace mroce::model {

namespace {

// Marks `psn` received and advances CPSN over the contiguous run [R-HDR-19].
void mark_received(PathRx& r, uint32_t psn) {
    r.above.insert(psn);
    while (r.above.count(r.cpsn + 1)) {
        r.above.erase(r.cpsn + 1);
        ++r.cpsn;
    }
}

}  // namespace

// [R-ACK-4]: called synchronously, so the ACK reflects every packet processed before it.
void EndpointState::send_ack(Connection& c, uint16_t path) {
    PathRx& r = c.rx[path];
    // [R-ACK-5]: on the path's reply route (the source port of its latest data or probe packet).
    ref::Packet a = base_packet(c, ref::Opcode::Ack, path, r.reply_route, false);
    a.cpsn = r.cpsn;
    a.ce_count = r.ce_count;
    a.ts_echo = r.ts_echo;
    a.rate_hint = c.fs_active ? c.share : 0;  // [R-HDR-23], [R-FS-2]
    for (uint32_t i = 0; i < 256; ++i)        // [R-HDR-20]: bit i is PSN CPSN + 1 + i, MSB first
        if (r.above.count(r.cpsn + 1 + i)) a.sack[i / 8] |= static_cast<uint8_t>(0x80u >> (i % 8));
    transmit(c, a);
    ++counters.acks_sent;
    r.unacked = 0;
}

void EndpointState::on_probe(Connection& c, uint16_t path, const ref::Packet& p) {
    c.rx[path].ts_echo = p.timestamp;  // [R-ACK-7]
    send_ack(c, path);                 // [R-ACK-2] (b)
}

void EndpointState::complete_recvs(Connection& c, uint16_t stream) {
    // [R-CMP-2]: in RSN order; a stream never waits for another.
    RecvStream& rs = c.rstreams[stream];
    for (;;) {
        auto it = rs.recvs.find(rs.next_complete_rsn);
        if (it == rs.recvs.end() || !it->second.done) return;
        PostedRecv& r = it->second;
        Completion comp;
        comp.conn = c.id;
        comp.stream = stream;
        comp.wr_id = r.wr_id;
        comp.op = WorkOp::Recv;
        comp.status = r.status;
        comp.byte_len = r.status == Status::Success ? r.msg_length : 0;
        if (r.status == Status::Success && r.is_write_imm) comp.immediate = r.immediate;
        emit(comp);
        r.completed = true;
        ++rs.next_complete_rsn;
    }
}

void EndpointState::flush_recvs(Connection& c) {
    for (uint16_t st = 0; st < c.rstreams.size(); ++st) {
        for (auto& [rsn, r] : c.rstreams[st].recvs) {
            if (!r.done) {
                r.done = true;
                r.status = Status::Flushed;
            }
        }
        complete_recvs(c, st);
    }
}

namespace {

// Result of the content checks of [R-SEC-9].
struct Verdict {
    std::optional<ref::NakCode> nak;
    Region* region = nullptr;     // WRITE / WRITE_IMM / READ_REQ target
    PostedRecv* recv = nullptr;   // SEND / WRITE_IMM
    WorkRequest* read = nullptr;  // READ_RESP
};

// [R-REL-10] every byte of a Read's response is accounted for: it completes, with the error one of
// them met (LocalProtection, RemoteAccess, [R-MEM-6]) if any.
void read_delivered(WorkRequest& rd) {
    rd.delivered = true;
    if (rd.status != Status::Success) rd.failed = true;
}

WorkRequest* outstanding_read(Connection& c, uint16_t stream, uint32_t msn) {
    for (auto& wr : c.sstreams[stream].wrs)
        if (wr.msn == msn && wr.op == WorkOp::Read && !wr.done()) return &wr;
    return nullptr;
}

Verdict check_content(EndpointState& s, Connection& c, const ref::Packet& p) {
    Verdict v;
    const bool consumes_recv = p.opcode == ref::Opcode::Send || p.opcode == ref::Opcode::WriteImm;
    // (1) InvalidRequest [R-SEC-9], table 12.3
    if (p.stream_id >= c.streams || p.payload_len > c.max_payload) {
        v.nak = ref::NakCode::InvalidRequest;
        return v;
    }
    if (p.opcode == ref::Opcode::ReadResp) {  // [R-PLC-5]
        v.read = outstanding_read(c, p.stream_id, p.msn);
        if (!v.read || v.read->length != p.msg_length) v.nak = ref::NakCode::InvalidRequest;
        return v;
    }
    RecvStream& rs = c.rstreams[p.stream_id];
    if (consumes_recv) {
        auto it = rs.recvs.find(p.rsn);
        if (it != rs.recvs.end()) {
            PostedRecv& r = it->second;
            const bool inconsistent = r.message_seen && (r.msg_length != p.msg_length ||
                                                         r.is_write_imm != (p.opcode == ref::Opcode::WriteImm) ||
                                                         (r.is_write_imm && r.immediate != p.immediate));
            if (r.done &&
                (r.status == Status::Success || r.status == Status::Canceled || r.status == Status::LocalProtection)) {
                // its message is already complete (placed, or not placed [R-MEM-6]), or was abandoned
                // by the sender
                v.nak = ref::NakCode::InvalidRequest;
                return v;
            }
            if (inconsistent) {
                v.nak = ref::NakCode::InvalidRequest;
                return v;
            }
            v.recv = &r;
        }
    }
    // (2) RemoteAccess [R-MEM-3]
    if (p.opcode == ref::Opcode::Write || p.opcode == ref::Opcode::WriteImm || p.opcode == ref::Opcode::ReadReq) {
        const uint32_t need = p.opcode == ref::Opcode::ReadReq ? access::kRemoteRead : access::kRemoteWrite;
        Region* r = s.memory.by_rkey(p.rkey);
        // [R-MEM-5] a region of another protection domain is refused as if the key named none
        if (!r || r->pd != c.pd || !(r->access & need) || !r->contains(p.remote_va, p.msg_length)) {
            v.nak = ref::NakCode::RemoteAccess;
            ++s.counters.remote_access_naks;
            return v;
        }
        v.region = r;
    }
    // (3) RNR [R-PLC-7]
    if (consumes_recv && !v.recv) {
        v.nak = ref::NakCode::Rnr;
        return v;
    }
    // (4) Length [R-MATCH-2]
    if (p.opcode == ref::Opcode::Send && p.msg_length > v.recv->length) {
        v.nak = ref::NakCode::Length;
        return v;
    }
    return v;
}

}  // namespace

// [R-ARCH-1]: every data packet is placed on arrival from its own fields; nothing is buffered.
void EndpointState::on_data(Connection& c, uint16_t path, const ref::Packet& p, std::span<const uint8_t> payload) {
    PathRx& r = c.rx[path];
    const uint32_t psn = p.psn;
    // [R-PSN-3] receive window: CPSN < psn <= CPSN + 256
    const bool in_window = serial_lt(r.cpsn, psn) && serial_le(psn, r.cpsn + 256);
    if (!in_window && !serial_le(psn, r.cpsn)) {
        ++counters.out_of_window;  // [R-SEC-4]
        return;
    }
    if (!in_window || r.above.count(psn)) {
        // [R-REL-8] duplicate: never placed or counted again; ACKed at once [R-ACK-2] (e)
        ++counters.duplicates;
        r.ts_echo = p.timestamp;  // [R-ACK-7]
        send_ack(c, path);
        return;
    }
    const bool is_void = (p.flags & ref::kFlagVoid) != 0;
    const bool ce = p.ecn == 3;
    if (is_void && (p.opcode == ref::Opcode::Send || p.opcode == ref::Opcode::WriteImm) && p.stream_id < c.streams) {
        // [R-REL-9] the VOID of a receive-consuming message cancels its RSN.
        RecvStream& rs = c.rstreams[p.stream_id];
        auto it = rs.recvs.find(p.rsn);
        if (it == rs.recvs.end()) {
            if (!serial_lt(p.rsn, rs.next_post_rsn)) rs.canceled.insert(p.rsn);
        } else if (!it->second.done) {
            it->second.done = true;
            it->second.status = Status::Canceled;
            complete_recvs(c, p.stream_id);
        }
    }
    if (is_void && p.opcode == ref::Opcode::ReadResp && p.stream_id < c.streams) {
        // [R-MEM-6] the responder's region was deregistered: the segment counts toward its Read, which
        // fails with RemoteAccess once every segment is accounted for (nothing lands in it after that).
        WorkRequest* rd = outstanding_read(c, p.stream_id, p.msn);
        if (rd && rd->length == p.msg_length && p.msg_offset < std::max<uint32_t>(p.msg_length, 1) &&
            p.msg_offset % c.max_payload == 0) {
            if (rd->status == Status::Success) rd->status = Status::RemoteAccess;
            rd->read_bytes += std::min<uint32_t>(c.max_payload, p.msg_length - p.msg_offset);
            rd->read_response_seen = true;
            if (rd->read_bytes == rd->length) read_delivered(*rd);
        }
    }
    if (!is_void) {
        const Verdict v = check_content(*this, c, p);
        if (v.nak) {
            // [R-SEC-5], [R-PLC-8]: refused, not placed, the PSN stays a hole; NAK at once [R-ACK-8]
            if (*v.nak == ref::NakCode::Length && v.recv && !v.recv->done) {
                v.recv->done = true;  // [R-MATCH-2]: the receive fails once, with LocalLength
                v.recv->status = Status::LocalLength;
                v.recv->message_seen = true;
                v.recv->msg_length = p.msg_length;
                complete_recvs(c, p.stream_id);
            }
            // [R-ACK-8], [R-ACK-5]: on the path of the refused packet, its reply route.
            ref::Packet n = base_packet(c, ref::Opcode::Nak, path, r.reply_route, false);
            n.nak_psn = psn;
            n.nak_code = static_cast<uint8_t>(*v.nak);
            n.nak_detail = *v.nak == ref::NakCode::Rnr ? cfg.rnr_detail : 0;  // [R-HDR-24]
            transmit(c, n);
            ++counters.naks_sent;
            return;
        }
        // [R-PLC-1] place at once, then mark received. A local buffer whose region was deregistered
        // since its post takes nothing, and its work request fails with LocalProtection [R-MEM-6].
        auto place = [&](Region* region, uint64_t va, Status& status) {
            if (region)
                std::copy(payload.begin(), payload.end(),
                          region->bytes.begin() + static_cast<std::ptrdiff_t>(va - region->va));
            else if (!payload.empty() && status == Status::Success)
                status = Status::LocalProtection;
            counters.placed_bytes += payload.size();
        };
        Status target_ok = Status::Success;  // a remote target was checked just now [R-MEM-3]
        switch (p.opcode) {
            case ref::Opcode::Write:  // [R-PLC-2]
                place(v.region, p.remote_va + p.msg_offset, target_ok);
                break;
            case ref::Opcode::WriteImm:
            case ref::Opcode::Send: {
                PostedRecv& rv = *v.recv;
                if (p.opcode == ref::Opcode::WriteImm) {
                    place(v.region, p.remote_va + p.msg_offset, target_ok);  // [R-PLC-2]
                } else {
                    place(memory.keyed(rv.lkey, false, rv.va, rv.length), rv.va + p.msg_offset,
                          rv.status);  // [R-PLC-3], [R-MEM-6]
                }
                rv.message_seen = true;
                rv.msg_length = p.msg_length;
                rv.is_write_imm = p.opcode == ref::Opcode::WriteImm;
                rv.immediate = p.immediate;
                rv.bytes += payload.size();                                 // [R-PLC-6]: each segment counted once
                if (rv.bytes == rv.msg_length && !rv.done) rv.done = true;  // Success, or LocalProtection
                break;
            }
            case ref::Opcode::ReadReq: {  // [R-PLC-4]
                ResponseJob job;
                job.stream = p.stream_id;
                job.msn = p.msn;
                job.source_va = p.remote_va;
                job.rkey = p.rkey;  // [R-MEM-6]
                job.length = p.msg_length;
                job.total_segments = p.msg_length == 0 ? 1 : (p.msg_length + c.max_payload - 1) / c.max_payload;
                c.responses.push_back(job);
                break;
            }
            case ref::Opcode::ReadResp: {  // [R-PLC-5]
                WorkRequest& rd = *v.read;
                place(memory.keyed(rd.lkey, false, rd.local_va, rd.length), rd.local_va + p.msg_offset,
                      rd.status);  // [R-MEM-6]
                rd.read_bytes += payload.size();
                rd.read_response_seen = true;
                if (rd.read_bytes == rd.length) read_delivered(rd);  // [R-REL-10]
                break;
            }
            default:
                break;
        }
    }
    // H, the highest PSN received before this one, as its distance past CPSN (0: nothing SACKed).
    uint32_t highest = 0;
    for (uint32_t q : r.above) highest = std::max(highest, q - r.cpsn);
    const uint32_t distance = psn - r.cpsn;
    mark_received(r, psn);
    r.ts_echo = p.timestamp;  // [R-ACK-7]
    if (ce) {
        ++r.ce_count;  // [R-ACK-6]
    }
    fs_on_data(c, is_void ? 0 : p.payload_len);  // [R-FS-2], [R-FS-3]
    if (is_void && p.opcode == ref::Opcode::ReadResp && p.stream_id < c.streams) complete_sends(c, p.stream_id);
    if (!is_void && p.opcode != ref::Opcode::Write && p.opcode != ref::Opcode::ReadReq) {
        if (p.opcode == ref::Opcode::ReadResp) {
            complete_sends(c, p.stream_id);
        } else {
            complete_recvs(c, p.stream_id);
        }
    }
    // [R-ACK-2]: immediate ACK triggers
    const bool ar = (p.flags & ref::kFlagAr) != 0;
    const bool opened_gap = distance > highest + 1;  // (c): a PSN below it is missing
    const bool filled_gap = distance < highest;      // (d): a PSN after it was received already
    if (ar || opened_gap || filled_gap || ce || is_void) {
        send_ack(c, path);
        return;
    }
    // [R-ACK-3] coalescing within the bounds
    if (r.unacked == 0) r.first_unacked = now;
    ++r.unacked;
    if (r.unacked >= 16 || choices->ack_now(r.unacked, now - r.first_unacked, cfg.ack_every, cfg.ack_delay_us)) {
        send_ack(c, path);
    }
}

}  // namespace mroce::model
