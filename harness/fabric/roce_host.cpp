#include "fabric/roce_host.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "fabric/frame_head_plain.hpp"
#include "impair/ecmp.hpp"
#include "impair/ecn.hpp"

namespace mroce::fabric {

FabricConfig dcqcn_marking(FabricConfig config) {
    config.ecn.kmin_bytes = 5 * 1000;
    config.ecn.kmax_bytes = 200 * 1000;
    config.ecn.pmax = 0.01;
    return config;
}

namespace roce {

namespace {

constexpr uint32_t kEth = 14, kIp = 14, kUdp = 34, kBth = 42, kExt = 54;
constexpr uint32_t kBase = kExt + 4;  // headers + ICRC, no extension headers

// CRC-32 (IEEE 802.3, reflected 0xEDB88320), slicing by 8.
struct CrcTables {
    uint32_t t[8][256];
    CrcTables() {
        for (uint32_t i = 0; i < 256; ++i) {
            uint32_t c = i;
            for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            t[0][i] = c;
        }
        for (uint32_t i = 0; i < 256; ++i)
            for (int k = 1; k < 8; ++k) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFF];
    }
};
const CrcTables kCrc;

uint32_t crc_update(uint32_t crc, const uint8_t* p, size_t n) {
    const auto& t = kCrc.t;
    while (n >= 8) {
        uint32_t a, b;
        std::memcpy(&a, p, 4);
        std::memcpy(&b, p + 4, 4);
        a ^= crc;
        crc = t[7][a & 0xFF] ^ t[6][(a >> 8) & 0xFF] ^ t[5][(a >> 16) & 0xFF] ^ t[4][a >> 24] ^ t[3][b & 0xFF] ^
              t[2][(b >> 8) & 0xFF] ^ t[1][(b >> 16) & 0xFF] ^ t[0][b >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) crc = t[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc;
}

void put16(uint8_t* p, uint32_t v) {
    p[0] = uint8_t(v >> 8);
    p[1] = uint8_t(v);
}
void put24(uint8_t* p, uint32_t v) {
    p[0] = uint8_t(v >> 16);
    p[1] = uint8_t(v >> 8);
    p[2] = uint8_t(v);
}
void put32(uint8_t* p, uint32_t v) {
    put16(p, v >> 16);
    put16(p + 2, v);
}
uint32_t get16(const uint8_t* p) { return uint32_t(p[0]) << 8 | p[1]; }
uint32_t get24(const uint8_t* p) { return uint32_t(p[0]) << 16 | uint32_t(p[1]) << 8 | p[2]; }
uint32_t get32(const uint8_t* p) { return get16(p) << 16 | get16(p + 2); }

bool has_reth(uint8_t op) { return op == kWriteFirst || op == kWriteOnly || op == kWriteOnlyImm; }
bool has_imm(uint8_t op) { return op == kWriteLastImm || op == kWriteOnlyImm; }
bool is_data(uint8_t op) { return op >= kWriteFirst && op <= kWriteOnlyImm; }

void put_mac(uint8_t* p, uint32_t host) {
    const uint8_t mac[6] = {0x02, 0x00, uint8_t(host >> 24), uint8_t(host >> 16), uint8_t(host >> 8), uint8_t(host)};
    std::memcpy(p, mac, 6);
}

}  // namespace

uint32_t overhead(uint8_t op) {
    uint32_t n = kBase;
    if (has_reth(op)) n += 16;
    if (has_imm(op)) n += 4;
    if (op == kAck) n += 4;
    if (op == kCnp) n += 16;
    return n;
}

uint32_t icrc(const uint8_t* f, uint32_t len) {
    // IBA annex A17: 64 bits of ones for the absent LRH, then the IP, UDP and BTH headers with the
    // fields a network may change (TOS, TTL, IP checksum, UDP checksum, BTH resv8a) as ones.
    uint8_t head[8 + kExt - kIp];
    std::memset(head, 0xFF, 8);
    std::memcpy(head + 8, f + kIp, kExt - kIp);
    uint8_t* ip = head + 8;
    ip[1] = 0xFF;                    // TOS
    ip[8] = 0xFF;                    // TTL
    ip[10] = ip[11] = 0xFF;          // header checksum
    ip[20 + 6] = ip[20 + 7] = 0xFF;  // UDP checksum
    ip[28 + 4] = 0xFF;               // BTH resv8a
    uint32_t crc = crc_update(0xFFFFFFFFu, head, sizeof head);
    crc = crc_update(crc, f + kExt, len - kExt);
    return ~crc;
}

uint32_t build(const Packet& p, uint8_t* f) {
    const uint32_t pad = (4 - p.payload_len % 4) % 4;
    const uint32_t len = overhead(p.opcode) + p.payload_len + pad;
    // Ethernet.
    put_mac(f, p.dst_host);
    put_mac(f + 6, p.src_host);
    put16(f + 12, 0x0800);
    // IPv4.
    uint8_t* ip = f + kIp;
    ip[0] = 0x45;
    ip[1] = uint8_t(p.dscp << 2 | (p.ecn & 3));
    put16(ip + 2, len - kEth);
    put16(ip + 4, 0);
    put16(ip + 6, 0x4000);  // DF
    ip[8] = 64;
    ip[9] = 17;
    put16(ip + 10, 0);
    put32(ip + 12, host_ip(p.src_host));
    put32(ip + 16, host_ip(p.dst_host));
    put16(ip + 10, impair::ipv4_checksum(std::span<const uint8_t>(ip, 20)));
    // UDP (checksum 0: RoCEv2 relies on the ICRC).
    uint8_t* udp = f + kUdp;
    put16(udp, p.sport);
    put16(udp + 2, kUdpPort);
    put16(udp + 4, len - kUdp);
    put16(udp + 6, 0);
    // BTH.
    uint8_t* bth = f + kBth;
    bth[0] = p.opcode;
    bth[1] = uint8_t(pad << 4);  // SE 0, MigReq 0, PadCnt, TVer 0
    put16(bth + 2, 0xFFFF);      // default P_Key
    bth[4] = 0;
    put24(bth + 5, p.dest_qp);
    bth[8] = p.ack_req ? 0x80 : 0;
    put24(bth + 9, p.psn & 0xFFFFFF);
    uint8_t* x = f + kExt;
    if (has_reth(p.opcode)) {
        put32(x, uint32_t(p.va >> 32));
        put32(x + 4, uint32_t(p.va));
        put32(x + 8, p.rkey);
        put32(x + 12, p.dma_len);
        x += 16;
    }
    if (has_imm(p.opcode)) {
        put32(x, p.imm);
        x += 4;
    }
    if (p.opcode == kAck) {
        x[0] = p.syndrome;
        put24(x + 1, p.msn);
        x += 4;
    }
    if (p.opcode == kCnp) {
        std::memset(x, 0, 16);
        x += 16;
    }
    if (p.payload_len) std::memcpy(x, p.payload, p.payload_len);
    x += p.payload_len;
    std::memset(x, 0, pad);
    x += pad;
    const uint32_t crc = icrc(f, len - 4);
    std::memcpy(x, &crc, 4);  // little-endian on the wire, as the Ethernet FCS
    return len;
}

ParseError parse(const uint8_t* f, uint32_t len, Packet* p) {
    if (len < kBase || get16(f + 12) != 0x0800) return ParseError::NotRoce;
    const uint8_t* ip = f + kIp;
    if (ip[0] != 0x45 || ip[9] != 17 || get16(f + kUdp + 2) != kUdpPort) return ParseError::NotRoce;
    if (!impair::ipv4_checksum_ok(std::span<const uint8_t>(ip, 20)) || get16(ip + 2) != len - kEth ||
        get16(f + kUdp + 4) != len - kUdp)
        return ParseError::Malformed;
    const uint8_t* bth = f + kBth;
    const uint8_t op = bth[0];
    if (!is_data(op) && op != kAck && op != kCnp) return ParseError::Malformed;
    const uint32_t head = overhead(op), pad = (bth[1] >> 4) & 3;
    if (len < head + pad) return ParseError::Malformed;
    uint32_t crc;
    std::memcpy(&crc, f + len - 4, 4);
    if (crc != icrc(f, len - 4)) return ParseError::Icrc;
    p->dst_host = host_of_ip(get32(ip + 16));
    p->src_host = host_of_ip(get32(ip + 12));
    p->dscp = ip[1] >> 2;
    p->ecn = ip[1] & 3;
    p->sport = uint16_t(get16(f + kUdp));
    p->opcode = op;
    p->dest_qp = get24(bth + 5);
    p->ack_req = (bth[8] & 0x80) != 0;
    p->psn = get24(bth + 9);
    const uint8_t* x = f + kExt;
    if (has_reth(op)) {
        p->va = uint64_t(get32(x)) << 32 | get32(x + 4);
        p->rkey = get32(x + 8);
        p->dma_len = get32(x + 12);
        x += 16;
    }
    if (has_imm(op)) {
        p->imm = get32(x);
        x += 4;
    }
    if (op == kAck) {
        p->syndrome = x[0];
        p->msn = get24(x + 1);
        x += 4;
    }
    if (op == kCnp) x += 16;
    p->payload = x;
    p->payload_len = len - head - pad;
    return ParseError::None;
}

}  // namespace roce

namespace {

constexpr uint32_t kQpnBase = 0x100;
constexpr uint32_t kPsnMask = 0xFFFFFF;

// a - b in PSN space (24 bits), as a signed distance.
int32_t psn_diff(uint32_t a, uint32_t b) {
    int32_t d = int32_t((a - b) & kPsnMask);
    if (d >= 0x800000) d -= 0x1000000;
    return d;
}

}  // namespace

// What both ends of a QP know: the pair, the route, the PSN space and the message.
struct RoceHost::QpEnd {
    uint32_t qpn = 0, peer = 0, peer_qpn = 0, plane = 0, ipsn = 0, tag = 0;
    uint16_t sport = 0;
    uint64_t bytes = 0, npkts = 0;
    uint32_t psn(uint64_t idx) const { return (ipsn + uint32_t(idx)) & kPsnMask; }
};

struct RoceHost::Requester : QpEnd {
    const uint8_t* data = nullptr;
    bool posted = false, done = false, failed = false;
    uint64_t una = 0, nxt = 0, max_sent = 0;  // packet indices
    uint32_t consecutive_timeouts = 0;
    double next_send_ns = 0;
    sim::Timer rto;
    // DCQCN reaction point.
    double rc = 0, rt = 0, alpha = 1;
    uint32_t t_count = 0, bc_count = 0;
    uint64_t byte_acc = 0;
    bool cnp_in_period = false;
    sim::Timer alpha_timer, rate_timer;
};

struct RoceHost::Responder : QpEnd {
    uint8_t* sink = nullptr;
    uint64_t epsn = 0;  // packet index expected next
    bool nak_sent = false, done = false;
    uint32_t unacked = 0;
    bool cnp_sent = false;
    uint64_t last_cnp_ns = 0;
};

RoceHost::RoceHost(Fabric& fabric, uint32_t host, const RoceOptions& options)
    : fabric_(fabric), host_(host), o_(options), line_gbps_(fabric.config().rate_gbps) {
    if (o_.mtu < 256 || o_.mtu > 9000 || o_.mtu % 4)
        throw std::invalid_argument("roce: mtu must be 256..9000, 4-aligned");
    if (o_.ack_every < 1) throw std::invalid_argument("roce: ack_every must be >= 1");
    if (o_.window_bytes && o_.window_bytes < uint64_t(o_.ack_every) * o_.mtu)
        throw std::invalid_argument("roce: window below ack_every packets would stall");
    if (!(o_.rto_us > 0) || !(o_.rate_min_gbps > 0)) throw std::invalid_argument("roce: bad rto or minimum rate");
    rx_buf_.resize(o_.mtu + 256);
    tx_buf_.resize(o_.mtu + 256);
    fabric_.set_receiver(host, [this](uint32_t plane, const SimFrame& f) { receive(plane, f); });
    // A frame left a NIC queue for the wire: the port may take the next one.
    fabric_.set_nic_listener(host, [this](uint32_t) { kick(); });
}

RoceHost::~RoceHost() {
    fabric_.set_receiver(host_, nullptr);
    fabric_.set_nic_listener(host_, nullptr);
}

uint64_t RoceHost::bytes_per_connection() { return sizeof(Requester) + sizeof(Responder); }

uint32_t RoceHost::alloc_qpn() {
    qps_.emplace_back();
    return kQpnBase + uint32_t(qps_.size() - 1);
}

RoceHost::Requester* RoceHost::requester(uint32_t qpn) {
    if (qpn < kQpnBase || qpn - kQpnBase >= qps_.size()) return nullptr;
    return qps_[qpn - kQpnBase].req.get();
}

RoceHost::Responder* RoceHost::responder(uint32_t qpn) {
    if (qpn < kQpnBase || qpn - kQpnBase >= qps_.size()) return nullptr;
    return qps_[qpn - kQpnBase].resp.get();
}

void RoceHost::init_end(QpEnd& e, uint32_t qpn, uint32_t peer, uint32_t peer_qpn, uint16_t sport, uint32_t ipsn,
                        uint64_t bytes, uint32_t tag) const {
    if (qpn < kQpnBase || qpn - kQpnBase >= qps_.size()) throw std::invalid_argument("roce: unknown qpn");
    e.qpn = qpn;
    e.peer = peer;
    e.peer_qpn = peer_qpn;
    e.sport = sport;
    e.plane = impair::ecmp_link(sport, uint16_t(fabric_.planes()));
    e.ipsn = ipsn & kPsnMask;
    e.tag = tag;
    e.bytes = bytes;
    e.npkts = std::max<uint64_t>(1, (bytes + o_.mtu - 1) / o_.mtu);
}

void RoceHost::add_requester(uint32_t qpn, uint32_t peer, uint32_t peer_qpn, uint16_t sport, uint32_t ipsn,
                             const uint8_t* data, uint64_t bytes, uint32_t tag) {
    auto q = std::make_unique<Requester>();
    init_end(*q, qpn, peer, peer_qpn, sport, ipsn, bytes, tag);
    q->data = data;
    q->rc = q->rt = line_gbps_;
    q->alpha = o_.initial_alpha;
    qps_[qpn - kQpnBase].req = std::move(q);
}

void RoceHost::add_responder(uint32_t qpn, uint32_t peer, uint32_t peer_qpn, uint16_t sport, uint32_t ipsn,
                             uint8_t* sink, uint64_t bytes, uint32_t tag) {
    auto r = std::make_unique<Responder>();
    init_end(*r, qpn, peer, peer_qpn, sport, ipsn, bytes, tag);
    r->sink = sink;
    qps_[qpn - kQpnBase].resp = std::move(r);
}

void RoceHost::post(uint32_t qpn) {
    Requester* q = requester(qpn);
    if (!q || q->posted) return;
    q->posted = true;
    senders_.push_back(q);  // the scheduler's round robin holds the posted QPs, in posting order
    q->next_send_ns = double(sim::now_ns());
    if (o_.dcqcn)
        q->alpha_timer.at_ns(sim::now_ns() + uint64_t(o_.alpha_timer_us * 1000), [this, q] { alpha_tick(*q); });
    kick();
}

// ---- Transmit: the NIC's QP scheduler ----

bool RoceHost::has_work(const Requester& q) const {
    if (!q.posted || q.done || q.failed || q.nxt >= q.npkts) return false;
    return o_.window_bytes == 0 || (q.nxt - q.una) * o_.mtu < o_.window_bytes;
}

bool RoceHost::nic_free(uint32_t plane) const {
    const PortStats s = fabric_.host_nic(host_, plane);
    return s.enqueued == s.sent_frames + s.dropped;  // nothing waiting behind the frame on the wire
}

void RoceHost::kick() {
    const uint64_t now = sim::now_ns();
    if (tx_timer_.pending() && tx_timer_.when_ns() <= now) return;
    tx_timer_.at_ns(now, [this] { tx(); });
}

void RoceHost::tx() {
    const double now = double(sim::now_ns());
    drop_finished_senders();
    const size_t n = senders_.size();
    for (;;) {
        bool sent = false;
        for (size_t k = 0; k < n && !sent; ++k) {
            Requester& q = *senders_[(rr_ + k) % n];
            if (!has_work(q) || q.next_send_ns > now || !nic_free(q.plane)) continue;
            send_data(q);
            rr_ = (rr_ + k + 1) % n;
            sent = true;
        }
        if (!sent) break;
    }
    // Next: the earliest paced send. A QP held by a busy (or paused) NIC port is sent when a frame
    // leaves that port (the NIC listener kicks).
    double wake = std::numeric_limits<double>::infinity();
    for (Requester* q : senders_) {
        if (!has_work(*q) || q->next_send_ns <= now) continue;
        wake = std::min(wake, q->next_send_ns);
    }
    if (wake < std::numeric_limits<double>::infinity()) tx_timer_.at_ns(uint64_t(std::ceil(wake)), [this] { tx(); });
}

// Finished QPs leave the round robin (a collective's host posts thousands in a run); rr_ keeps
// pointing at the same live QP, so the order in which live QPs are served does not change.
void RoceHost::drop_finished_senders() {
    if (!finished_) return;
    finished_ = false;
    size_t out = 0, rr = 0;
    for (size_t i = 0; i < senders_.size(); ++i) {
        if (i == rr_) rr = out;
        if (senders_[i]->done || senders_[i]->failed) continue;
        senders_[out++] = senders_[i];
    }
    senders_.resize(out);
    rr_ = out ? rr % out : 0;
}

void RoceHost::send_data(Requester& q) {
    const uint64_t idx = q.nxt;
    const uint64_t off = idx * o_.mtu;
    roce::Packet p;
    p.src_host = host_;
    p.dst_host = q.peer;
    p.sport = q.sport;
    p.dscp = o_.dscp_data;
    p.ecn = 2;  // ECT(0)
    const bool first = idx == 0, last = idx + 1 == q.npkts;
    p.opcode = first && last ? roce::kWriteOnlyImm
               : first       ? roce::kWriteFirst
               : last        ? roce::kWriteLastImm
                             : roce::kWriteMiddle;
    p.ack_req = last;
    p.dest_qp = q.peer_qpn;
    p.psn = q.psn(idx);
    p.va = 0x10000000ull;
    p.rkey = q.peer_qpn;
    p.dma_len = uint32_t(std::min<uint64_t>(q.bytes, 0xFFFFFFFFu));
    p.imm = q.tag;
    p.payload = q.data + off;
    p.payload_len = uint32_t(std::min<uint64_t>(o_.mtu, q.bytes > off ? q.bytes - off : 0));
    const uint32_t len = roce::build(p, tx_buf_.data());
    fabric_.host_send(host_, q.plane, tx_buf_.data(), len);
    ++counters_.data_packets;
    if (idx < q.max_sent) {
        ++counters_.retransmissions;
    } else {
        q.max_sent = idx + 1;
    }
    q.nxt = idx + 1;
    // Paced at the current rate; a QP that the NIC held back may catch up by one packet.
    const double rate = o_.dcqcn ? q.rc : line_gbps_;
    q.next_send_ns = std::max(q.next_send_ns, double(sim::now_ns()) - wire_ns(len, rate)) + wire_ns(len, rate);
    if (o_.dcqcn && (q.rc < line_gbps_ || q.rt < line_gbps_)) {
        q.byte_acc += len;
        while (q.byte_acc >= o_.byte_counter) {
            q.byte_acc -= o_.byte_counter;
            ++q.bc_count;
            rate_increase(q);
        }
    }
    arm_rto(q, false);
}

// ---- Requester: ACK/NAK, timeout ----

void RoceHost::arm_rto(Requester& q, bool restart) {
    if (!restart && q.rto.pending()) return;
    q.rto.at_ns(sim::now_ns() + uint64_t(o_.rto_us * 1000), [this, qp = &q] { on_rto(*qp); });
}

void RoceHost::on_rto(Requester& q) {
    if (q.done || q.failed) return;
    ++counters_.timeouts;
    if (o_.retry_cnt && ++q.consecutive_timeouts > o_.retry_cnt) {
        fail(q, "transport retry counter exceeded");
        return;
    }
    q.nxt = q.una;
    arm_rto(q, true);
    kick();
}

void RoceHost::fail(Requester& q, const std::string& why) {
    q.failed = true;
    finished_ = true;
    q.rto.cancel();
    q.alpha_timer.cancel();
    q.rate_timer.cancel();
    if (on_error) on_error(q.tag, why);
}

void RoceHost::on_ack(Requester& q, const roce::Packet& p) {
    if (!q.posted || q.done || q.failed) return;
    if (p.syndrome == roce::kSyndromeNakSeq) {
        // The responder's ePSN: everything before it is acknowledged; resend from it.
        const int64_t e = int64_t(q.una) + psn_diff(p.psn, q.psn(q.una));
        if (e < int64_t(q.una) || e > int64_t(q.max_sent)) return;  // stale
        ++counters_.naks_received;
        if (uint64_t(e) > q.una) q.consecutive_timeouts = 0;
        q.una = uint64_t(e);
        q.nxt = q.una;
        arm_rto(q, true);
        kick();
        return;
    }
    if ((p.syndrome & 0xE0) != 0) return;  // RNR NAK and other NAKs: not produced here
    const int64_t a = int64_t(q.una) - 1 + psn_diff(p.psn, q.psn(q.una - 1));  // the last PSN acknowledged
    if (a < int64_t(q.una) || a >= int64_t(q.max_sent)) return;                // old, or never sent
    q.una = uint64_t(a) + 1;
    q.consecutive_timeouts = 0;
    if (q.nxt < q.una) q.nxt = q.una;
    if (q.una == q.npkts) {
        q.done = true;
        finished_ = true;
        q.rto.cancel();
        q.alpha_timer.cancel();
        q.rate_timer.cancel();
        if (on_send_complete) on_send_complete(q.tag);
        return;
    }
    arm_rto(q, true);
    if (o_.window_bytes) kick();
}

// ---- DCQCN reaction point ----

void RoceHost::on_cnp(Requester& q) {
    if (!o_.dcqcn || !q.posted || q.done || q.failed) return;
    ++counters_.cnps_received;
    ++counters_.rate_cuts;
    q.rt = q.rc;
    q.rc = std::max(o_.rate_min_gbps, q.rc * (1 - q.alpha / 2));
    q.alpha = (1 - o_.g) * q.alpha + o_.g;
    q.cnp_in_period = true;
    q.t_count = q.bc_count = 0;
    q.byte_acc = 0;
    q.rate_timer.at_ns(sim::now_ns() + uint64_t(o_.rate_timer_us * 1000), [this, qp = &q] { rate_tick(*qp); });
}

void RoceHost::alpha_tick(Requester& q) {
    if (q.done || q.failed) return;
    if (!q.cnp_in_period) q.alpha *= 1 - o_.g;
    q.cnp_in_period = false;
    q.alpha_timer.at_ns(sim::now_ns() + uint64_t(o_.alpha_timer_us * 1000), [this, qp = &q] { alpha_tick(*qp); });
}

void RoceHost::rate_tick(Requester& q) {
    if (q.done || q.failed) return;
    ++q.t_count;
    rate_increase(q);
    if (q.rc < line_gbps_ || q.rt < line_gbps_)
        q.rate_timer.at_ns(sim::now_ns() + uint64_t(o_.rate_timer_us * 1000), [this, qp = &q] { rate_tick(*qp); });
}

void RoceHost::rate_increase(Requester& q) {
    const uint32_t f = o_.fast_recovery_steps;
    if (std::max(q.t_count, q.bc_count) <= f) {
        // Fast recovery: toward the rate before the cut, Rt unchanged.
    } else if (std::min(q.t_count, q.bc_count) > f) {
        q.rt += double(std::min(q.t_count, q.bc_count) - f) * o_.rate_hai_gbps;  // hyper increase
    } else {
        q.rt += o_.rate_ai_gbps;  // additive increase
    }
    q.rt = std::min(q.rt, line_gbps_);
    q.rc = std::min(line_gbps_, (q.rt + q.rc) / 2);
}

// ---- Receive ----

void RoceHost::receive(uint32_t, const SimFrame& frame) {
    if (frame.size() > rx_buf_.size()) {
        ++counters_.bad_frames;
        return;
    }
    const uint32_t len = frame.copy_to(rx_buf_.data(), uint32_t(rx_buf_.size()));
    roce::Packet p;
    const roce::ParseError e = roce::parse(rx_buf_.data(), len, &p);
    if (e != roce::ParseError::None || p.dst_host != host_) {
        if (e == roce::ParseError::Icrc) ++counters_.icrc_errors;
        ++counters_.bad_frames;
        return;
    }
    if (p.opcode == roce::kAck || p.opcode == roce::kCnp) {
        Requester* q = requester(p.dest_qp);
        if (!q || q->peer != p.src_host) {
            ++counters_.bad_frames;
            return;
        }
        if (p.opcode == roce::kAck) {
            on_ack(*q, p);
        } else {
            on_cnp(*q);
        }
        return;
    }
    Responder* r = responder(p.dest_qp);
    if (!r || r->peer != p.src_host) {
        ++counters_.bad_frames;
        return;
    }
    on_data(*r, p, len);
}

void RoceHost::on_data(Responder& r, const roce::Packet& p, uint32_t frame_len) {
    if (rx_tap) rx_tap(r.tag, frame_len);
    const uint64_t now = sim::now_ns();
    if (p.ecn == 3) {
        ++counters_.ce_seen;
        // DCQCN notification point: at most one CNP per QP per interval.
        if (o_.dcqcn && (!r.cnp_sent || now - r.last_cnp_ns >= uint64_t(o_.cnp_interval_us * 1000))) {
            r.cnp_sent = true;
            r.last_cnp_ns = now;
            send_cnp(r);
        }
    }
    const int64_t idx = int64_t(r.epsn) + psn_diff(p.psn, r.psn(r.epsn));
    if (idx == int64_t(r.epsn) && r.epsn < r.npkts) {
        const uint64_t off = r.epsn * o_.mtu;
        const uint32_t want = uint32_t(std::min<uint64_t>(o_.mtu, r.bytes > off ? r.bytes - off : 0));
        const bool first = r.epsn == 0, last = r.epsn + 1 == r.npkts;
        const uint8_t op = first && last ? roce::kWriteOnlyImm
                           : first       ? roce::kWriteFirst
                           : last        ? roce::kWriteLastImm
                                         : roce::kWriteMiddle;
        if (p.opcode != op || p.payload_len != want) {
            ++counters_.bad_frames;  // would be a NAK (invalid request) in a NIC; never produced here
            return;
        }
        if (want) std::memcpy(r.sink + off, p.payload, want);
        ++r.epsn;
        r.nak_sent = false;
        ++r.unacked;
        if (last) {
            r.done = true;
            send_ack(r, roce::kSyndromeAck, r.psn(r.epsn - 1));
            if (on_receive_complete) on_receive_complete(r.tag);
        } else if (r.unacked >= o_.ack_every || p.ack_req) {
            send_ack(r, roce::kSyndromeAck, r.psn(r.epsn - 1));
        }
    } else if (idx < int64_t(r.epsn)) {
        // A duplicate (a resend after a lost ACK, or go-back-N's resends): acknowledge what we hold.
        ++counters_.duplicates;
        if (r.epsn > 0) send_ack(r, roce::kSyndromeAck, r.psn(r.epsn - 1));
    } else {
        // Beyond ePSN: one NAK per ePSN, then silence until ePSN arrives.
        ++counters_.out_of_order_dropped;
        if (!r.nak_sent) {
            r.nak_sent = true;
            ++counters_.naks_sent;
            send_ack(r, roce::kSyndromeNakSeq, r.psn(r.epsn));
        }
    }
}

void RoceHost::send_ack(Responder& r, uint8_t syndrome, uint32_t psn) {
    roce::Packet p;
    p.src_host = host_;
    p.dst_host = r.peer;
    p.sport = r.sport;
    p.dscp = o_.dscp_data;
    p.ecn = 0;
    p.opcode = roce::kAck;
    p.dest_qp = r.peer_qpn;
    p.psn = psn;
    p.syndrome = syndrome;
    p.msn = r.done ? 1 : 0;
    if (syndrome == roce::kSyndromeAck) {
        r.unacked = 0;
        ++counters_.acks_sent;
    }
    send_control(r.plane, p);
}

void RoceHost::send_cnp(Responder& r) {
    roce::Packet p;
    p.src_host = host_;
    p.dst_host = r.peer;
    p.sport = r.sport;
    p.dscp = o_.dscp_cnp;
    p.ecn = 0;
    p.opcode = roce::kCnp;
    p.dest_qp = r.peer_qpn;
    ++counters_.cnps_sent;
    send_control(r.plane, p);
}

void RoceHost::send_control(uint32_t plane, const roce::Packet& p) {
    uint8_t buf[128];
    const uint32_t len = roce::build(p, buf);
    fabric_.host_send(host_, plane, buf, len);
}

}  // namespace mroce::fabric
