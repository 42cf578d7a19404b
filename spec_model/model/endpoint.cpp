// The model endpoint: event dispatch, application calls, connection setup and teardown, timers.
// The sending side is in sender.cpp, the receiving side in receiver.cpp, the receiver's fair-share
// computation in fair_share.cpp.
#include "model/endpoint.hpp"

#include <algorithm>

#include "model/state.hpp"

namespace mroce::model {

namespace {
template <class... Ts>
struct Overloaded : Ts... {
    using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

constexpr uint32_t kMaxMessage = 0x80000000u;  // [R-HDR-12]
}  // namespace

// ---- memory [R-MEM-1..4] ---------------------------------------------------------------------

Region* Memory::by_rkey(uint32_t rkey) {
    for (auto& r : regions)
        if (r.valid && r.rkey == rkey) return &r;
    return nullptr;
}
Region* Memory::by_lkey(uint32_t lkey) {
    for (auto& r : regions)
        if (r.valid && r.lkey == lkey) return &r;
    return nullptr;
}
Region* Memory::keyed(uint32_t key, bool remote, uint64_t va, uint64_t len) {
    Region* r = remote ? by_rkey(key) : by_lkey(key);
    return r && r->contains(va, len) ? r : nullptr;
}
const Region* Memory::containing(uint64_t va, uint64_t len) const {
    for (const auto& r : regions)
        if (r.valid && r.contains(va, len)) return &r;
    return nullptr;
}
Region* Memory::containing(uint64_t va, uint64_t len) {
    for (auto& r : regions)
        if (r.valid && r.contains(va, len)) return &r;
    return nullptr;
}

// ---- packets ---------------------------------------------------------------------------------

ref::Packet EndpointState::base_packet(const Connection& c, ref::Opcode op, uint16_t path, uint16_t route,
                                       bool data) const {
    ref::Packet p{};
    p.eth_dst = c.peer.mac;
    p.eth_src = cfg.self.mac;
    p.ipv6 = cfg.self.ipv6;
    p.ip_src = cfg.self.ip;
    p.ip_dst = c.peer.ip;
    p.dscp = data ? cfg.dscp_data : cfg.dscp_control;  // [R-ENC-10]
    p.ecn = data ? 2 : 0;                              // [R-ENC-9] ECT(0) on data, Not-ECT otherwise
    p.ipv4_df = true;                                  // [R-ENC-3]
    p.ttl = 64;                                        // [R-ENC-11]
    p.ipv6_flow_label = route & 0xFFFFFu;              // [R-ENC-4]
    p.udp_sport = route;                               // [R-ENC-6]
    p.udp_dport = cfg.udp_port;                        // [R-ENC-5]
    p.version = 1;                                     // [R-HDR-1]
    p.opcode = op;
    p.dcid = op == ref::Opcode::Connect ? 0 : c.peer_id;  // [R-HDR-4]
    p.path_id = path;
    p.timestamp = static_cast<uint32_t>(now);  // [R-HDR-6], [R-CONV-5]
    return p;
}

void EndpointState::transmit(const Connection& c, const ref::Packet& p, std::span<const uint8_t> payload) {
    Transmit t;
    t.frame = ref::encode(p, payload);
    t.packet = p;
    t.packet.payload_length = static_cast<uint16_t>(payload.size());
    t.to = c.peer;
    emit(std::move(t));
}

// ---- timers ----------------------------------------------------------------------------------

std::optional<Time> EndpointState::next_deadline() const {
    std::optional<Time> best;
    auto consider = [&](Time t) {
        if (!best || t < *best) best = t;
    };
    if (fs_next != 0) consider(fs_next);
    for (const auto& [id, c] : conns) {
        if (c.state == ConnState::Connecting) {
            consider(c.next_connect);  // [R-CONN-4]
            continue;
        }
        if (c.state != ConnState::Established && c.state != ConnState::Closing) continue;
        for (uint16_t p = 0; p < c.paths; ++p) {
            if (auto d = path_deadline(c, p)) consider(*d);
            const PathRx& r = c.rx[p];
            if (r.unacked > 0) consider(r.first_unacked + cfg.ack_delay_us);  // [R-ACK-3]
        }
        if (auto d = credit_deadline(c)) consider(*d);
        if (c.waiting)
            consider(std::max(c.last_rx, c.waiting_since) + cfg.peer_timeout_us);
        else
            consider(std::max(c.last_rx, c.last_keepalive) + cfg.keepalive_us);  // [R-CONN-6]
        if (c.state == ConnState::Closing && c.disconnect_sent) consider(c.next_disconnect);
    }
    return best;
}

void EndpointState::fire_due_timers() {
    if (fs_next != 0 && fs_next <= now) fs_compute();  // [R-FS-1]
    for (auto& [id, c] : conns) {
        if (c.state == ConnState::Connecting) {
            if (c.next_connect > now) continue;
            if (c.connect_tries >= cfg.connect_tries) {  // [R-CONN-4]
                fail_connection(c, Status::ConnectionFailed);
                continue;
            }
            ref::Packet p = base_packet(c, ref::Opcode::Connect, 0, c.tx[0].route, false);
            p.scid = c.id;
            p.isn = c.local_isn;
            p.path_count = cfg.path_count;
            p.stream_count = cfg.stream_count;
            p.max_payload = cfg.max_payload;
            p.window_cap = cfg.window_cap;
            transmit(c, p);
            ++c.connect_tries;
            c.next_connect = now + cfg.connect_retry_us;
            continue;
        }
        if (c.state != ConnState::Established && c.state != ConnState::Closing) continue;
        for (uint16_t p = 0; p < c.paths; ++p) {
            path_timers(c, p);
            PathRx& r = c.rx[p];
            if (r.unacked > 0 && r.first_unacked + cfg.ack_delay_us <= now) send_ack(c, p);
        }
        // [R-CONN-8] peer failure
        if (c.waiting && std::max(c.last_rx, c.waiting_since) + cfg.peer_timeout_us <= now) {
            if (c.state == ConnState::Closing && c.disconnect_sent) {
                release_closed(c);  // the peer never confirmed the close; nothing is outstanding
            } else {
                fail_connection(c, Status::ConnectionFailed);
            }
            continue;
        }
        // [R-CONN-6] keep-alive
        if (!c.waiting && std::max(c.last_rx, c.last_keepalive) + cfg.keepalive_us <= now) {
            uint16_t path = 0;
            for (uint16_t p = 0; p < c.paths; ++p) {
                if (c.tx[p].state == PathState::Active) {
                    path = p;
                    break;
                }
            }
            ref::Packet probe = base_packet(c, ref::Opcode::Probe, path, c.tx[path].route, false);
            probe.flags = ref::kFlagAr;
            transmit(c, probe);
            ++counters.probes_sent;
            c.keepalive_outstanding = true;
            c.keepalive_ts = probe.timestamp;
            c.last_keepalive = now;
        }
        // [R-CONN-7] DISCONNECT retransmission
        if (c.state == ConnState::Closing && c.disconnect_sent && c.next_disconnect <= now) {
            ref::Packet d = base_packet(c, ref::Opcode::Disconnect, 0, c.tx[0].route, false);
            d.reason = c.abort ? 5 : 0;
            transmit(c, d);
            c.next_disconnect = now + std::max<uint32_t>(c.tx[0].rto_current, 1);
        }
    }
}

// Whether the connection waits for something from the peer [R-CONN-8]: an unacknowledged PSN,
// an unanswered PROBE, or a DISCONNECT.
static bool is_waiting(const EndpointState& s, const Connection& c) {
    if (c.keepalive_outstanding || (c.state == ConnState::Closing && c.disconnect_sent)) return true;
    for (const auto& t : c.tx)
        if (t.probe_outstanding) return true;
    return s.has_outstanding_psns(c);
}

void EndpointState::pump_all() {
    for (auto& [id, c] : conns) {
        if (c.state == ConnState::Established || c.state == ConnState::Closing) {
            pump(c);
            // [R-CONN-7] a graceful close sends DISCONNECT once nothing is outstanding
            if (c.state == ConnState::Closing && !c.disconnect_sent) {
                bool idle = !has_outstanding_psns(c);
                for (const auto& st : c.sstreams) idle = idle && st.wrs.empty();
                if (idle || c.abort) {
                    ref::Packet d = base_packet(c, ref::Opcode::Disconnect, 0, c.tx[0].route, false);
                    d.reason = c.abort ? 5 : 0;
                    transmit(c, d);
                    c.disconnect_sent = true;
                    c.next_disconnect = now + std::max<uint32_t>(c.tx[0].rto_current, 1);
                }
            }
        }
        const bool w = is_waiting(*this, c);
        if (w && !c.waiting) c.waiting_since = now;
        c.waiting = w;
    }
}

// ---- connection failure and close ------------------------------------------------------------

void EndpointState::fail_connection(Connection& c, Status wr_status) {
    // [R-CONN-8]: every outstanding work request fails, in stream order; receives are flushed.
    for (uint16_t st = 0; st < c.sstreams.size(); ++st) {
        for (auto& wr : c.sstreams[st].wrs) {
            if (!wr.done()) {
                wr.failed = true;
                wr.status = wr_status;
            }
        }
        complete_sends(c, st);
    }
    flush_recvs(c);
    for (auto& t : c.tx) t.out.clear();
    c.responses.clear();
    c.state = ConnState::Failed;
    c.waiting = false;
    emit(ConnectionDown{c.id, Status::ConnectionFailed});
}

void EndpointState::release_closed(Connection& c) {
    for (uint16_t st = 0; st < c.sstreams.size(); ++st) {
        for (auto& wr : c.sstreams[st].wrs) {
            if (!wr.done()) {
                wr.failed = true;
                wr.status = Status::Flushed;
            }
        }
        complete_sends(c, st);
    }
    flush_recvs(c);
    for (auto& t : c.tx) t.out.clear();
    c.responses.clear();
    c.state = ConnState::Closed;
    c.waiting = false;
    emit(ConnectionDown{c.id, Status::Success});
}

// ---- Endpoint --------------------------------------------------------------------------------

Endpoint::Endpoint(Config config, std::shared_ptr<Choices> choices) : s_(std::make_unique<EndpointState>()) {
    s_->cfg = std::move(config);
    s_->choices = choices ? std::move(choices) : std::make_shared<Choices>();
    s_->next_conn_id = std::max<uint32_t>(1, s_->cfg.first_conn_id);
}
Endpoint::~Endpoint() = default;
Endpoint::Endpoint(Endpoint&&) noexcept = default;
Endpoint& Endpoint::operator=(Endpoint&&) noexcept = default;

const Config& Endpoint::config() const { return s_->cfg; }
Time Endpoint::now() const { return s_->now; }
std::optional<Time> Endpoint::next_deadline() const { return s_->next_deadline(); }
const Counters& Endpoint::counters() const { return s_->counters; }

static Connection& new_connection(EndpointState& s, const Address& peer, bool initiator) {
    const uint32_t id = s.next_conn_id++;
    Connection& c = s.conns[id];
    c.id = id;
    c.peer = peer;
    c.initiator = initiator;
    c.local_isn = s.cfg.isn;
    c.last_rx = s.now;
    c.last_keepalive = s.now;
    c.credit_time = s.now;
    return c;
}

// Sizes the per-path and per-stream state once the parameters are negotiated [R-CONN-3].
static void setup_paths(EndpointState& s, Connection& c) {
    c.tx.assign(c.paths, PathTx{});
    c.rx.assign(c.paths, PathRx{});
    for (uint16_t p = 0; p < c.paths; ++p) {
        PathTx& t = c.tx[p];
        t.route = s.choices->fresh_route(c.id, p, 0);  // [R-PATH-5], appendix B
        t.fresh_routes = 1;
        t.snxt = t.suna = c.local_isn;              // [R-PSN-2]
        t.cwnd = c.init_cwnd();                     // [R-CC-1]
        t.rto = t.rto_current = s.cfg.rto_init_us;  // [R-RTO-3]
        t.last_ack = s.now;
        c.rx[p].cpsn = c.peer_isn - 1;  // [R-HDR-19]
    }
    c.sstreams.assign(c.streams, SendStream{});
    c.rstreams.assign(c.streams, RecvStream{});
    c.credit_bits = c.credit_max();
    c.credit_time = s.now;
}

static void on_connect(EndpointState& s, const ref::Packet& p) {
    Address from;
    from.mac = p.eth_src;
    from.ipv6 = p.ipv6;
    from.ip = p.ip_src;
    // [R-CONN-4] a duplicate CONNECT gets the same ACCEPT again
    for (auto& [id, c] : s.conns) {
        if (!c.initiator && c.peer == from && c.peer_id == p.scid && !c.accept_frame.empty()) {
            Transmit t;
            t.frame = c.accept_frame;
            t.packet = ref::decode(c.accept_frame, s.cfg.udp_port).packet;
            t.to = c.peer;
            s.emit(std::move(t));
            return;
        }
    }
    if (!s.cfg.listening) {  // [R-HDR-27] reason 1: not listening
        Connection tmp;
        tmp.peer = from;
        tmp.peer_id = p.scid;
        ref::Packet r = s.base_packet(tmp, ref::Opcode::Reject, 0, Choices::default_route(0, 0, 0), false);
        r.reason = 1;
        s.transmit(tmp, r);
        return;
    }
    Connection& c = new_connection(s, from, false);
    c.peer_id = p.scid;
    c.peer_isn = p.isn;
    c.pd = s.cfg.listen_pd;  // [R-MEM-5]
    // [R-CONN-3] each negotiated value is the minimum of the two offers
    c.paths = std::min(p.path_count, s.cfg.path_count);
    c.streams = std::min(p.stream_count, s.cfg.stream_count);
    c.max_payload = std::min(p.max_payload, s.cfg.max_payload);
    c.window_cap = std::min(p.window_cap, s.cfg.window_cap);
    setup_paths(s, c);
    ref::Packet a = s.base_packet(c, ref::Opcode::Accept, 0, c.tx[0].route, false);
    a.scid = c.id;
    a.isn = c.local_isn;
    a.path_count = c.paths;
    a.stream_count = c.streams;
    a.max_payload = c.max_payload;
    a.window_cap = c.window_cap;
    c.accept_frame = ref::encode(a, {});
    s.transmit(c, a);
    c.state = ConnState::Established;
    s.emit(ConnectionUp{c.id, c.peer, false});
}

static void on_frame(EndpointState& s, const std::vector<uint8_t>& frame) {
    const ref::DecodeResult r = ref::decode(frame, s.cfg.udp_port);
    if (!r.ok()) {  // [R-VAL-3], [R-SEC-1]: dropped and counted per error kind
        ++s.counters.decode_errors[static_cast<size_t>(*r.error)];
        return;
    }
    const ref::Packet& p = r.packet;
    if (p.opcode == ref::Opcode::Connect) {
        on_connect(s, p);
        return;
    }
    auto it = s.conns.find(p.dcid);
    if (it == s.conns.end()) {  // [R-CONN-9], [R-SEC-2]
        ++s.counters.unknown_dcid;
        return;
    }
    Connection& c = it->second;
    if (p.ipv6 != c.peer.ipv6 || p.ip_src != c.peer.ip) {  // [R-SEC-10]
        ++s.counters.foreign_source;
        return;
    }
    if (c.state == ConnState::Closed) {
        if (p.opcode == ref::Opcode::Disconnect) {  // the peer missed our DISCONNECT_ACK
            s.transmit(c, s.base_packet(c, ref::Opcode::DisconnectAck, 0, c.tx[0].route, false));
        } else {
            ++s.counters.unknown_dcid;
        }
        return;
    }
    if (c.state == ConnState::Failed) {
        ++s.counters.unknown_dcid;
        return;
    }
    if (c.state == ConnState::Connecting) {
        if (p.opcode == ref::Opcode::Accept) {
            if (p.path_count > s.cfg.path_count || p.stream_count > s.cfg.stream_count ||
                p.max_payload > s.cfg.max_payload || p.window_cap > s.cfg.window_cap) {
                ++s.counters.bad_accepts;  // [R-CONN-3]: above our offer; keep waiting
                return;
            }
            c.peer_id = p.scid;
            c.peer_isn = p.isn;
            c.paths = p.path_count;
            c.streams = p.stream_count;
            c.max_payload = p.max_payload;
            c.window_cap = p.window_cap;
            setup_paths(s, c);
            c.state = ConnState::Established;
            c.last_rx = s.now;
            s.emit(ConnectionUp{c.id, c.peer, true});
        } else if (p.opcode == ref::Opcode::Reject) {
            c.last_rx = s.now;
            s.fail_connection(c, Status::ConnectionFailed);
        } else {
            ++s.counters.unknown_dcid;
        }
        return;
    }
    c.last_rx = s.now;
    switch (p.opcode) {
        case ref::Opcode::Accept:  // duplicate ACCEPT after setup: nothing to do
        case ref::Opcode::Reject:
            return;
        case ref::Opcode::Disconnect:  // [R-CONN-7]
            s.transmit(c, s.base_packet(c, ref::Opcode::DisconnectAck, 0, c.tx[0].route, false));
            s.release_closed(c);
            return;
        case ref::Opcode::DisconnectAck:
            if (c.state == ConnState::Closing && c.disconnect_sent) s.release_closed(c);
            return;
        default:
            break;
    }
    if (p.path_id >= c.paths) {  // [R-PATH-1], [R-SEC-3]
        ++s.counters.bad_path;
        return;
    }
    const std::span<const uint8_t> payload(frame.data() + p.payload_offset, p.payload_len);
    // [R-ACK-5]: every data or PROBE packet of the path sets its reply route, before it is processed.
    if (p.opcode != ref::Opcode::Ack && p.opcode != ref::Opcode::Nak) c.rx[p.path_id].reply_route = p.udp_sport;
    switch (p.opcode) {
        case ref::Opcode::Ack:
            s.on_ack(c, p.path_id, p);
            return;
        case ref::Opcode::Nak:
            s.on_nak(c, p.path_id, p);
            return;
        case ref::Opcode::Probe:
            s.on_probe(c, p.path_id, p);
            return;
        default:
            s.on_data(c, p.path_id, p, payload);
            return;
    }
}

// [R-MEM-4], [R-MEM-5]: local buffers must lie in registered regions of the connection's protection
// domain with the right access.
static bool local_ok(EndpointState& s, const Connection& c, uint32_t lkey, uint64_t va, uint64_t len, bool need_write) {
    Region* r = s.memory.by_lkey(lkey);
    if (!r || r->pd != c.pd || !r->contains(va, len)) return false;
    return !need_write || (r->access & access::kLocalWrite);
}

static Connection* postable(EndpointState& s, uint32_t conn, uint16_t stream, uint64_t wr_id, uint64_t length) {
    auto it = s.conns.find(conn);
    if (it == s.conns.end() || it->second.state != ConnState::Established || it->second.close_requested) {
        s.emit(PostRejected{wr_id, "connection not established"});
        return nullptr;
    }
    if (stream >= it->second.streams) {
        s.emit(PostRejected{wr_id, "stream out of range"});
        return nullptr;
    }
    if (length > kMaxMessage) {
        s.emit(PostRejected{wr_id, "message longer than 2^31 bytes"});
        return nullptr;
    }
    return &it->second;
}

static void post_work(Connection& c, WorkRequest wr) {
    SendStream& st = c.sstreams[wr.stream];
    wr.msn = st.next_msn++;                                                          // [R-HDR-10]
    if (wr.op == WorkOp::Send || wr.op == WorkOp::WriteImm) wr.rsn = st.next_rsn++;  // [R-HDR-17]
    if (wr.op == WorkOp::Read) {
        wr.total_segments = 1;  // one READ_REQ
    } else {
        // [R-HDR-14]
        wr.total_segments = wr.length == 0 ? 1 : (wr.length + c.max_payload - 1) / c.max_payload;
    }
    st.wrs.push_back(std::move(wr));
}

// [R-ARCH-3]: no rule here depends on the network being lossless, in order or uncorrupted; the
// model properties (P1, P7) check that every message completes exactly once under all of these.
std::vector<Action> Endpoint::handle(Time now, const Event& event) {
    EndpointState& s = *s_;
    s.out.clear();
    if (now < s.now) now = s.now;  // time never goes backwards
    // Timers due before `now` fire at their own times, in order.
    while (auto d = s.next_deadline()) {
        if (*d > now) break;
        s.now = std::max(s.now, *d);
        s.fire_due_timers();
        s.pump_all();
    }
    s.now = now;

    std::visit(Overloaded{
                   [&](const RegisterMemory& e) {
                       Region r;
                       const uint32_t i = static_cast<uint32_t>(s.memory.regions.size());
                       r.va = e.va;
                       r.length = e.length;
                       r.access = e.access;
                       r.pd = e.pd;
                       // [R-MEM-1] the implementation's keys when given; else the model's own,
                       // distinct from every earlier one (the model is an oracle, it has no secret).
                       r.lkey = e.lkey ? *e.lkey : 0x1000u + i;
                       r.rkey = e.rkey ? *e.rkey : ((i + 1u) << 8) | ((i * 97u + 13u) & 0xFFu);
                       // Keys name one valid region each, and 0 names none.
                       if (r.lkey == 0 || r.rkey == 0 || s.memory.by_lkey(r.lkey) || s.memory.by_rkey(r.rkey)) {
                           s.emit(PostRejected{0, "memory key zero or in use"});
                           return;
                       }
                       r.bytes.assign(e.length, 0);
                       s.memory.regions.push_back(std::move(r));
                       s.emit(MemoryRegistered{s.memory.regions.back().lkey, s.memory.regions.back().rkey});
                   },
                   [&](const DeregisterMemory& e) {
                       if (Region* r = s.memory.by_lkey(e.lkey)) r->valid = false;  // [R-MEM-2]
                   },
                   [&](const WriteMemory& e) {
                       Region* r = s.memory.containing(e.va, e.bytes.size());
                       if (!r) {
                           s.emit(PostRejected{0, "write_memory outside registered memory"});
                           return;
                       }
                       std::copy(e.bytes.begin(), e.bytes.end(), r->bytes.begin() + (e.va - r->va));
                   },
                   [&](const Connect& e) {
                       Connection& c = new_connection(s, e.peer, true);
                       c.pd = e.pd;  // [R-MEM-5]
                       // Until ACCEPT arrives, path 0 exists only to give CONNECT its route.
                       c.tx.assign(1, PathTx{});
                       c.tx[0].route = s.choices->fresh_route(c.id, 0, 0);
                       c.tx[0].rto_current = s.cfg.rto_init_us;
                       c.state = ConnState::Connecting;
                       c.next_connect = s.now;  // sent by the timer pass below
                   },
                   [&](const PostSend& e) {
                       Connection* c = postable(s, e.conn, e.stream, e.wr_id, e.length);
                       if (!c) return;
                       if (!local_ok(s, *c, e.lkey, e.va, e.length, false)) {
                           s.emit(PostRejected{e.wr_id, "send buffer not in the region of lkey"});
                           return;
                       }
                       WorkRequest wr;
                       wr.op = WorkOp::Send;
                       wr.wr_id = e.wr_id;
                       wr.stream = e.stream;
                       wr.local_va = e.va;
                       wr.lkey = e.lkey;
                       wr.length = e.length;
                       post_work(*c, std::move(wr));
                   },
                   [&](const PostWrite& e) {
                       Connection* c = postable(s, e.conn, e.stream, e.wr_id, e.length);
                       if (!c) return;
                       if (!local_ok(s, *c, e.lkey, e.va, e.length, false)) {
                           s.emit(PostRejected{e.wr_id, "write source not in the region of lkey"});
                           return;
                       }
                       WorkRequest wr;
                       wr.op = e.immediate ? WorkOp::WriteImm : WorkOp::Write;
                       wr.wr_id = e.wr_id;
                       wr.stream = e.stream;
                       wr.local_va = e.va;
                       wr.lkey = e.lkey;
                       wr.length = e.length;
                       wr.remote_va = e.remote_va;
                       wr.rkey = e.rkey;
                       wr.immediate = e.immediate;
                       post_work(*c, std::move(wr));
                   },
                   [&](const PostRead& e) {
                       Connection* c = postable(s, e.conn, e.stream, e.wr_id, e.length);
                       if (!c) return;
                       if (!local_ok(s, *c, e.lkey, e.va, e.length, true)) {
                           s.emit(PostRejected{e.wr_id, "read sink not writable in the region of lkey"});
                           return;
                       }
                       WorkRequest wr;
                       wr.op = WorkOp::Read;
                       wr.wr_id = e.wr_id;
                       wr.stream = e.stream;
                       wr.local_va = e.va;
                       wr.lkey = e.lkey;
                       wr.length = e.length;
                       wr.remote_va = e.remote_va;
                       wr.rkey = e.rkey;
                       post_work(*c, std::move(wr));
                   },
                   [&](const PostRecv& e) {
                       Connection* c = postable(s, e.conn, e.stream, e.wr_id, e.length);
                       if (!c) return;
                       if (!local_ok(s, *c, e.lkey, e.va, e.length, true)) {
                           s.emit(PostRejected{e.wr_id, "receive buffer not writable in the region of lkey"});
                           return;
                       }
                       RecvStream& rs = c->rstreams[e.stream];
                       PostedRecv r;
                       r.wr_id = e.wr_id;
                       r.va = e.va;
                       r.lkey = e.lkey;
                       r.length = e.length;
                       const uint32_t rsn = rs.next_post_rsn++;
                       if (rs.canceled.erase(rsn)) {  // [R-REL-9]: its message was already abandoned
                           r.done = true;
                           r.status = Status::Canceled;
                       }
                       rs.recvs[rsn] = r;  // [R-MATCH-1]
                       s.complete_recvs(*c, e.stream);
                   },
                   [&](const Close& e) {
                       auto it = s.conns.find(e.conn);
                       if (it == s.conns.end() || it->second.state != ConnState::Established) return;
                       Connection& c = it->second;
                       c.close_requested = true;
                       c.abort = e.abort;
                       c.state = ConnState::Closing;
                       if (e.abort) {  // [R-CONN-7] an abort flushes without waiting
                           for (uint16_t st = 0; st < c.sstreams.size(); ++st) {
                               for (auto& wr : c.sstreams[st].wrs) {
                                   if (!wr.done()) {
                                       wr.failed = true;
                                       wr.status = Status::Flushed;
                                   }
                               }
                               s.complete_sends(c, st);
                           }
                           for (auto& t : c.tx) t.out.clear();
                           c.responses.clear();
                       }
                   },
                   [&](const Receive& e) { on_frame(s, e.frame); },
                   [&](const AdvanceTime&) {},
               },
               event);

    // Timers that the event made due now (a CONNECT to send, say), then everything sendable.
    while (auto d = s.next_deadline()) {
        if (*d > s.now) break;
        s.fire_due_timers();
        s.pump_all();
    }
    s.pump_all();
    if (auto d = s.next_deadline()) s.emit(Wakeup{*d});
    return std::move(s.out);
}

// ---- observation -----------------------------------------------------------------------------

std::optional<std::vector<uint8_t>> Endpoint::read_memory(uint64_t va, uint64_t length) const {
    const Region* r = s_->memory.containing(va, length);
    if (!r) return std::nullopt;
    const auto first = r->bytes.begin() + static_cast<std::ptrdiff_t>(va - r->va);
    return std::vector<uint8_t>(first, first + static_cast<std::ptrdiff_t>(length));
}

std::vector<uint32_t> Endpoint::connections() const {
    std::vector<uint32_t> ids;
    for (const auto& [id, c] : s_->conns) ids.push_back(id);
    return ids;
}

std::optional<ConnState> Endpoint::connection_state(uint32_t conn) const {
    auto it = s_->conns.find(conn);
    if (it == s_->conns.end()) return std::nullopt;
    return it->second.state;
}

std::optional<PathView> Endpoint::path_view(uint32_t conn, uint16_t path) const {
    auto it = s_->conns.find(conn);
    if (it == s_->conns.end() || path >= it->second.tx.size() || it->second.state == ConnState::Connecting)
        return std::nullopt;
    const PathTx& t = it->second.tx[path];
    PathView v;
    v.state = t.state;
    v.route = t.route;
    v.snxt = t.snxt;
    v.suna = t.suna;
    v.in_flight = t.in_flight();
    v.cwnd = t.cwnd;
    v.srtt = t.srtt;
    v.rto = t.rto_current;
    v.retransmissions = t.retransmissions;
    v.repaths = t.repaths;
    v.packets_sent = t.packets_sent;
    v.home_returns = t.home_returns;
    return v;
}

uint16_t Endpoint::path_count(uint32_t conn) const {
    auto it = s_->conns.find(conn);
    return it == s_->conns.end() ? 0 : it->second.paths;
}
uint16_t Endpoint::stream_count(uint32_t conn) const {
    auto it = s_->conns.find(conn);
    return it == s_->conns.end() ? 0 : it->second.streams;
}
uint16_t Endpoint::max_payload(uint32_t conn) const {
    auto it = s_->conns.find(conn);
    return it == s_->conns.end() ? 0 : it->second.max_payload;
}

std::map<uint32_t, uint32_t> Endpoint::rate_shares() const {
    std::map<uint32_t, uint32_t> shares;
    for (const auto& [id, c] : s_->conns)
        if (c.fs_active) shares[id] = c.share;
    return shares;
}

size_t Endpoint::outstanding_work(uint32_t conn) const {
    auto it = s_->conns.find(conn);
    if (it == s_->conns.end()) return 0;
    size_t n = 0;
    for (const auto& st : it->second.sstreams) n += st.wrs.size();
    for (const auto& rs : it->second.rstreams)
        for (const auto& [rsn, r] : rs.recvs) n += !r.completed;
    return n;
}

std::vector<uint16_t> Endpoint::new_segment_path_candidates(uint32_t conn) const {
    auto it = s_->conns.find(conn);
    if (it == s_->conns.end()) return {};
    return s_->path_candidates(it->second);
}

bool Endpoint::route_allowed(uint16_t sport) { return sport >= 49152; }  // [R-ENC-6]

bool Endpoint::ack_deferral_allowed(uint32_t conn, uint16_t path) const {
    auto it = s_->conns.find(conn);
    if (it == s_->conns.end() || path >= it->second.rx.size()) return false;
    const PathRx& r = it->second.rx[path];
    // [R-ACK-3]: at most ACK_COALESCE_MAX (16) packets and ACK_DELAY_MAX (16 µs)
    return r.unacked < 16 && (r.unacked == 0 || s_->now - r.first_unacked < 16);
}

}  // namespace mroce::model
