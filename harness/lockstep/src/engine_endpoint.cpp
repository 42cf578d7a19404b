// EngineEndpoint: see lockstep/engine_endpoint.hpp.
#include "lockstep/engine_endpoint.hpp"

#include <algorithm>

#include "mroce/testing.hpp"

namespace mroce::lockstep {

Address engine_address(const model::Address& a) {
    Address r;
    r.mac = a.mac;
    r.ipv6 = a.ipv6;
    r.ip = a.ip;
    return r;
}

namespace {

model::Address to_model(const Address& a) {
    model::Address r;
    r.mac = a.mac;
    r.ipv6 = a.ipv6;
    r.ip = a.ip;
    return r;
}

// The model's refusal reasons, so that harness traces match word for word.
std::string reason_of(Result r, model::WorkOp op) {
    switch (r) {
        case Result::NotConnected:
            return "connection not established";
        case Result::InvalidStream:
            return "stream out of range";
        case Result::MessageTooLong:
            return "message longer than 2^31 bytes";
        case Result::LocalProtection:
            switch (op) {
                case model::WorkOp::Send:
                    return "send buffer not in the region of lkey";
                case model::WorkOp::Write:
                case model::WorkOp::WriteImm:
                    return "write source not in the region of lkey";
                case model::WorkOp::Read:
                    return "read sink not writable in the region of lkey";
                case model::WorkOp::Recv:
                    return "receive buffer not writable in the region of lkey";
            }
            break;
        default:
            break;
    }
    return result_name(r);
}

}  // namespace

DeviceConfig engine_config_from(const model::Config& m) {
    DeviceConfig d;
    d.self = engine_address(m.self);
    d.udp_port = m.udp_port;
    d.dscp_data = m.dscp_data;
    d.dscp_control = m.dscp_control;
    d.capacity_mbps = m.capacity_mbps;
    d.listening = m.listening;
    d.first_conn_id = m.first_conn_id;
    d.isn = m.isn;
    // Memory keys come from the device secret [R-MEM-1]: a secret derived from the address keeps the
    // keys, and so every trace and every shrunk replay, the same from run to run.
    uint64_t seed = 0x6d726f6365ull;
    for (uint8_t b : m.self.ip) seed = seed * 131 + b;
    d.random_seed = seed;
    d.offer = ConnParams{m.path_count, m.stream_count, m.max_payload, m.window_cap};
    d.ack_every = m.ack_every;
    d.ack_delay_us = m.ack_delay_us;
    d.rto_init_us = m.rto_init_us;
    d.rto_min_us = m.rto_min_us;
    d.rto_max_us = m.rto_max_us;
    d.pto_min_us = m.pto_min_us;
    d.home_probe_us = m.home_probe_us;
    d.home_probe_max_us = m.home_probe_max_us;
    d.fs_interval_us = m.fs_interval_us;
    d.hint_ttl_us = m.hint_ttl_us;
    d.peer_timeout_us = m.peer_timeout_us;
    d.keepalive_us = m.keepalive_us;
    d.connect_retry_us = m.connect_retry_us;
    d.connect_tries = m.connect_tries;
    d.rnr_default_us = m.rnr_default_us;
    d.rnr_retry_max = m.rnr_retry_max;
    d.rnr_detail = m.rnr_detail;
    d.max_connections = 256;
    d.max_work_requests = 16384;
    d.max_receives = 16384;
    // The model has no pools: no per-connection share below a pool, no per-source limit.
    d.max_work_requests_per_conn = d.max_work_requests;
    d.max_receives_per_conn = d.max_receives;
    d.max_unconfirmed_per_source = d.max_connections;
    d.max_window_blocks = 1024;
    d.cq_size = 16384;
    return d;
}

EngineEndpoint::EngineEndpoint(const model::Config& config, Canary canary) : cfg_(config), io_(1024), canary_(canary) {
    dev_ = Device::open(engine_config_from(config), io_, clock_);
    mroce::testing::DeviceHooks::record_output_order(*dev_, true);
    ensure_pd(config.listen_pd);
    dev_->listen(config.listening, config.listen_pd);
}

void EngineEndpoint::ensure_pd(uint32_t pd) {
    for (uint32_t got = 0; pds_ < pd && dev_->alloc_pd(&got) == Result::Ok;) pds_ = got;
}

std::vector<model::Action> EngineEndpoint::handle(model::Time now, const model::Event& event) {
    std::vector<model::Action> out;
    clock_.set(now);
    std::visit(
        [&](const auto& e) {
            using T = std::decay_t<decltype(e)>;
            auto refused = [&](Result r, uint64_t wr_id, model::WorkOp op) {
                if (r != Result::Ok) out.push_back(model::PostRejected{wr_id, reason_of(r, op)});
            };
            if constexpr (std::is_same_v<T, model::RegisterMemory>) {
                auto buf = std::make_unique<uint8_t[]>(e.length ? e.length : 1);
                std::fill(buf.get(), buf.get() + e.length, 0);
                MemoryRegion mr;
                ensure_pd(e.pd);
                if (dev_->reg_mr(buf.get(), e.length, e.access, &mr, e.va, e.pd) == Result::Ok)
                    out.push_back(model::MemoryRegistered{mr.lkey, mr.rkey});
                buffers_.push_back(std::move(buf));
            } else if constexpr (std::is_same_v<T, model::DeregisterMemory>) {
                dev_->dereg_mr(e.lkey);
            } else if constexpr (std::is_same_v<T, model::WriteMemory>) {
                if (uint8_t* p = dev_->resolve(e.va, e.bytes.size()))
                    std::copy(e.bytes.begin(), e.bytes.end(), p);
                else
                    out.push_back(model::PostRejected{0, "write_memory outside registered memory"});
                mroce::testing::DeviceHooks::advance(*dev_);
            } else if constexpr (std::is_same_v<T, model::Connect>) {
                uint32_t id = 0;
                ensure_pd(e.pd);
                dev_->connect(engine_address(e.peer), &id, nullptr, e.pd);
            } else if constexpr (std::is_same_v<T, model::PostSend>) {
                refused(dev_->post_send(e.conn, e.stream, e.wr_id, Sge{e.va, e.length, e.lkey}), e.wr_id,
                        model::WorkOp::Send);
            } else if constexpr (std::is_same_v<T, model::PostWrite>) {
                const Sge s{e.va, e.length, e.lkey};
                if (e.immediate)
                    refused(dev_->post_write_imm(e.conn, e.stream, e.wr_id, s, e.remote_va, e.rkey, *e.immediate),
                            e.wr_id, model::WorkOp::WriteImm);
                else
                    refused(dev_->post_write(e.conn, e.stream, e.wr_id, s, e.remote_va, e.rkey), e.wr_id,
                            model::WorkOp::Write);
            } else if constexpr (std::is_same_v<T, model::PostRead>) {
                refused(dev_->post_read(e.conn, e.stream, e.wr_id, Sge{e.va, e.length, e.lkey}, e.remote_va, e.rkey),
                        e.wr_id, model::WorkOp::Read);
            } else if constexpr (std::is_same_v<T, model::PostRecv>) {
                refused(dev_->post_recv(e.conn, e.stream, e.wr_id, Sge{e.va, e.length, e.lkey}), e.wr_id,
                        model::WorkOp::Recv);
            } else if constexpr (std::is_same_v<T, model::Close>) {
                dev_->close(e.conn, e.abort);
            } else if constexpr (std::is_same_v<T, model::Receive>) {
                mroce::testing::DeviceHooks::input(*dev_, e.frame.data(), uint32_t(e.frame.size()));
            } else {
                mroce::testing::DeviceHooks::advance(*dev_);
            }
        },
        event);
    // What the device produced, in order.
    std::vector<std::vector<uint8_t>> frames = io_.take();
    std::vector<uint8_t> order(mroce::testing::DeviceHooks::kMaxOrderLog);
    order.resize(mroce::testing::DeviceHooks::take_output_order(*dev_, order.data(), order.size()));
    size_t f = 0;
    for (uint8_t kind : order) {
        if (kind == 0) {
            if (f >= frames.size()) continue;
            model::Transmit t;
            t.frame = std::move(frames[f++]);
            const ref::DecodeResult d = ref::decode(t.frame, cfg_.udp_port);
            t.packet = d.packet;
            t.packet.payload_length = d.ok() ? d.packet.payload_len : 0;
            t.to.mac = d.packet.eth_dst;
            t.to.ipv6 = d.packet.ipv6;
            t.to.ip = d.packet.ip_dst;
            if (canary_ == Canary::DropFirstRetx && !canary_fired_ && d.ok() && ref::is_data_opcode(d.packet.opcode) &&
                (d.packet.flags & ref::kFlagRetx)) {
                canary_fired_ = true;  // the planted bug: this retransmission is lost inside the "engine"
                continue;
            }
            out.push_back(std::move(t));
        } else if (kind == 1) {
            WorkCompletion wc;
            if (dev_->poll_cq(&wc, 1) != 1) continue;
            model::Completion c;
            c.conn = wc.conn;
            c.stream = wc.stream;
            c.wr_id = wc.wr_id;
            c.op = model::WorkOp(uint8_t(wc.opcode));
            c.status = model::Status(uint8_t(wc.status));
            c.byte_len = wc.byte_len;
            if (wc.has_imm) c.immediate = wc.imm;
            out.push_back(c);
        } else {
            ConnEvent ev;
            if (dev_->poll_events(&ev, 1) != 1) continue;
            if (ev.kind == ConnEvent::Kind::Up)
                out.push_back(model::ConnectionUp{ev.conn, to_model(ev.peer), ev.initiator});
            else
                out.push_back(model::ConnectionDown{ev.conn, model::Status(uint8_t(ev.status))});
        }
    }
    if (auto d = dev_->next_deadline()) out.push_back(model::Wakeup{*d});
    return out;
}

std::optional<std::vector<uint8_t>> EngineEndpoint::read_memory(uint64_t va, uint64_t len) const {
    const uint8_t* p = dev_->resolve(va, len);
    if (!p) return std::nullopt;
    return std::vector<uint8_t>(p, p + len);
}

std::vector<uint32_t> EngineEndpoint::connections() const {
    std::vector<uint32_t> ids(dev_->connections(nullptr, 0));
    dev_->connections(ids.data(), ids.size());
    return ids;
}

std::optional<model::ConnState> EngineEndpoint::connection_state(uint32_t conn) const {
    auto s = dev_->connection_state(conn);
    if (!s) return std::nullopt;
    return model::ConnState(uint8_t(*s));
}

std::optional<model::PathView> EngineEndpoint::path_view(uint32_t conn, uint16_t path) const {
    auto p = dev_->path_info(conn, path);
    if (!p) return std::nullopt;
    model::PathView v;
    v.state = model::PathState(uint8_t(p->state));
    v.route = p->route;
    v.snxt = p->snxt;
    v.suna = p->suna;
    v.in_flight = p->in_flight;
    v.cwnd = p->cwnd;
    v.srtt = p->srtt;
    v.rto = p->rto;
    v.retransmissions = p->retransmissions;
    v.repaths = p->repaths;
    v.packets_sent = p->packets_sent;
    v.home_returns = p->home_returns;
    return v;
}

uint16_t EngineEndpoint::path_count(uint32_t conn) const { return dev_->path_count(conn); }

std::map<uint32_t, uint32_t> EngineEndpoint::rate_shares() const {
    uint32_t ids[256], sh[256];
    const int n = dev_->rate_shares(ids, sh, 256);
    std::map<uint32_t, uint32_t> m;
    for (int i = 0; i < n; ++i) m[ids[i]] = sh[i];
    return m;
}

uint32_t EngineEndpoint::capacity_mbps() const { return cfg_.capacity_mbps; }
size_t EngineEndpoint::outstanding_work(uint32_t conn) const { return dev_->outstanding_work(conn); }
std::optional<model::Time> EngineEndpoint::next_deadline() const { return dev_->next_deadline(); }

harness::EndpointFactory engine_factory(Canary canary) {
    return [canary](const model::Config& c) { return std::make_unique<EngineEndpoint>(c, canary); };
}

}  // namespace mroce::lockstep
