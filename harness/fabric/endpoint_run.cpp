// A flow list over the fabric with harness endpoints in the hosts (fabric/endpoint_host.hpp): the
// executable model alone, or the model and the engine in lockstep. The same flows as run_mroce (one
// RDMA Write with immediate per flow, its FCT ends at the receiver's completion, connections set up
// before the flows start), driven through the model's events instead of the Device API.
#include <map>
#include <memory>
#include <stdexcept>
#include <variant>

#include "fabric/endpoint_host.hpp"
#include "fabric/endpoints.hpp"

namespace mroce::fabric {

model::Config endpoint_config(const FabricConfig& fc, const MroceHostOptions& o, uint32_t host) {
    model::Config c;
    c.self = model_address(host);
    c.capacity_mbps = uint32_t(fc.rate_gbps * 1000.0 * fc.planes * o.capacity_fraction);
    c.path_count = o.offer.paths;
    c.stream_count = o.offer.streams;
    c.max_payload = o.offer.max_payload;
    c.window_cap = o.offer.window_cap;
    c.ack_every = o.ack_every;
    c.ack_delay_us = o.ack_delay_us;
    c.rto_init_us = o.rto_init_us;
    c.rto_min_us = o.rto_min_us;
    c.home_probe_us = o.home_probe_us;
    c.home_probe_max_us = o.home_probe_max_us;
    c.fs_interval_us = o.fs_interval_us;
    c.hint_ttl_us = o.hint_ttl_us;
    c.connect_tries = o.connect_tries;
    c.isn = uint32_t(fc.seed * 2654435761u + host * 40503u);
    c.first_conn_id = 1;
    return c;
}

namespace {

constexpr uint64_t kSourceVa = 0x10000000, kSinkVa = 0x40000000, kSinkStride = 0x10000000;

struct Flow {
    uint32_t conn = 0, rkey = 0, sink_lkey = 0;
    bool connected = false, started = false, posted = false, resolved = false;
};

class EndpointRun {
public:
    EndpointRun(const FabricConfig& fc, const MroceHostOptions& ho, const std::vector<FlowSpec>& flows,
                const RunOptions& ro, const EndpointMaker& make, std::string name)
        : fabric_(fc),
          book_(flows, fc.hosts, fc.seed, ro),
          flows_(flows.size()),
          watch_host_(ro.watch_host),
          name_(std::move(name)) {
        // One message per connection, posted at its start time: collectives (steps that wait, several
        // messages per pair, the scenario's own buffers) run on the engine (run_mroce) only.
        if (ro.data) throw std::invalid_argument(name_ + ": flows with scenario-owned bytes run on the engine only");
        for (size_t f = 0; f < flows.size(); ++f)
            if (!flows[f].after.empty() || flows[f].after_all_before ||
                book_.flows_of(flows[f].src, flows[f].dst).size() > 1)
                throw std::invalid_argument(name_ + ": one flow per (src, dst) pair and no waiting flows");
        std::map<uint32_t, bool> used;
        for (const FlowSpec& s : flows) used[s.src] = used[s.dst] = true;
        hosts_.resize(fc.hosts);
        for (auto [h, _] : used) {
            hosts_[h] = std::make_unique<EndpointHost>(fabric_, h, make(endpoint_config(fc, ho, h), h));
            EndpointHost& eh = *hosts_[h];
            eh.on_action = [this](EndpointHost& host, const model::Action& a) { on_action(host, a); };
            eh.rx_tap = [this, h](uint32_t src, uint32_t bytes) {
                const int64_t f = book_.flow_of(src, h);
                if (f >= 0) book_.received_bytes(size_t(f), bytes);
            };
            // The shared source bytes, registered and written into the endpoint's own memory.
            const uint64_t len = book_.source_size();
            for (const model::Action& a :
                 eh.handle(model::RegisterMemory{kSourceVa, len, model::access::kLocalWrite, 0}))
                if (auto* k = std::get_if<model::MemoryRegistered>(&a)) source_lkey_[h] = k->lkey;
            model::WriteMemory w{kSourceVa, std::vector<uint8_t>(book_.source_base(), book_.source_base() + len)};
            eh.handle(w);
        }
        for (size_t f = 0; f < flows.size(); ++f) {
            const FlowSpec& s = flows[f];
            const auto acts = hosts_[s.dst]->handle(
                model::RegisterMemory{sink_va(f), std::max<uint64_t>(s.bytes, 1),
                                      model::access::kLocalWrite | model::access::kRemoteWrite, 0});
            for (const model::Action& a : acts)
                if (auto* k = std::get_if<model::MemoryRegistered>(&a))
                    flows_[f].rkey = k->rkey, flows_[f].sink_lkey = k->lkey;
        }
    }

    RunResult run() {
        for (size_t f = 0; f < book_.size(); ++f) {
            const FlowSpec& s = book_.spec(f);
            hosts_[s.src]->handle(model::Connect{model_address(s.dst), 0});
        }
        book_.run(result_);
        result_.transport = name_;
        result_.fabric = fabric_.stats();
        result_.plane_window_us = fabric_.config().plane_window_us;
        result_.watched_port = fabric_.port_to_host(watch_host_, 0);
        // The endpoints' last memory comparison (lockstep) happens as they are destroyed: before return.
        for (auto& h : hosts_) h.reset();
        return std::move(result_);
    }

private:
    static uint64_t sink_va(size_t f) { return kSinkVa + uint64_t(f) * kSinkStride; }

    void on_action(EndpointHost& host, const model::Action& a) {
        const uint32_t h = host.host();
        if (auto* up = std::get_if<model::ConnectionUp>(&a)) {
            const uint32_t peer =
                (uint32_t(up->peer.ip[1]) << 16) | (uint32_t(up->peer.ip[2]) << 8) | uint32_t(up->peer.ip[3]);
            const int64_t f = up->initiator ? book_.flow_of(h, peer) : book_.flow_of(peer, h);
            if (f < 0) return;
            if (up->initiator) {
                flows_[f].conn = up->conn;
                flows_[f].connected = true;
                resolved(uint32_t(f));
                try_post(uint32_t(f));
            } else {
                // The receive that the Write's immediate completes.
                host.handle(model::PostRecv{up->conn, 0, uint64_t(f), sink_va(size_t(f)), 0, flows_[f].sink_lkey});
            }
            return;
        }
        if (auto* down = std::get_if<model::ConnectionDown>(&a)) {
            // The sender's side decides: its connection failed, or never came up (one flow per pair).
            for (size_t f = 0; f < flows_.size(); ++f) {
                const Flow& st = flows_[f];
                if (book_.spec(f).src != h) continue;
                if ((st.connected && st.conn == down->conn) || (!st.connected && !st.resolved)) {
                    book_.failed(f, std::string("connection down: ") + std::string(model::status_name(down->status)));
                    resolved(uint32_t(f));
                }
            }
            return;
        }
        if (auto* c = std::get_if<model::Completion>(&a)) {
            if (c->wr_id >= book_.size()) return;
            if (c->status != model::Status::Success) {
                book_.failed(c->wr_id, std::string(model::work_op_name(c->op)) + " " +
                                           std::string(model::status_name(c->status)));
                return;
            }
            if (c->op != model::WorkOp::Recv) return;  // not the sender's own completion
            const size_t f = c->wr_id;
            if (auto bytes = host.endpoint().read_memory(sink_va(f), book_.spec(f).bytes))
                std::copy(bytes->begin(), bytes->end(), book_.sink(f));
            book_.done(f);
            return;
        }
        if (auto* r = std::get_if<model::PostRejected>(&a)) {
            if (r->wr_id < book_.size()) book_.failed(r->wr_id, "post refused: " + r->reason);
        }
    }

    void resolved(uint32_t f) {
        if (flows_[f].resolved) return;
        flows_[f].resolved = true;
        if (++resolved_ < book_.size()) return;
        result_.setup_us = double(sim::now_ns()) / 1000.0;
        book_.start_after_setup(result_.setup_us, [this](size_t g) {
            flows_[g].started = true;
            try_post(uint32_t(g));
        });
    }

    void try_post(uint32_t f) {
        Flow& st = flows_[f];
        const FlowSpec& s = book_.spec(f);
        if (st.posted || !st.connected || !st.started) return;
        st.posted = true;
        hosts_[s.src]->handle(model::PostWrite{st.conn, 0, f, kSourceVa + RunBook::offset(f), uint32_t(s.bytes),
                                               source_lkey_[s.src], sink_va(f), st.rkey, f});
    }

    Fabric fabric_;
    RunBook book_;
    std::vector<Flow> flows_;
    std::vector<std::unique_ptr<EndpointHost>> hosts_;
    std::map<uint32_t, uint32_t> source_lkey_;
    size_t resolved_ = 0;
    uint32_t watch_host_;
    std::string name_;
    RunResult result_;
};

}  // namespace

RunResult run_endpoints(const FabricConfig& fabric, const MroceHostOptions& host, const std::vector<FlowSpec>& flows,
                        const RunOptions& options, const EndpointMaker& make, const std::string& name) {
    return run_once<EndpointRun>(fabric, host, flows, options, make, name);
}

}  // namespace mroce::fabric
