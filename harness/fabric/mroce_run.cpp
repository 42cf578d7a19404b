// The engine over the fabric: each flow is one RDMA Write with immediate, so the receiver learns of
// the last byte by its own completion (the flow's finish time); a connection per (src, dst) pair,
// set up before the flows start, carries that pair's flows in index order; the receiver's bytes are
// compared with the source after the run (or checked by the scenario that owns them).
#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>

#include "fabric/runs.hpp"

namespace mroce::fabric {

namespace {

// A registered range of a host's memory (RunBook::host_memory): the source bytes, or a collective's
// buffers.
struct HostRange {
    const uint8_t* base = nullptr;
    uint64_t size = 0;
    MemoryRegion mr;
};

struct HostFlows {
    std::unique_ptr<MroceHost> host;
    std::vector<HostRange> memory;
    // The registered range holding [p, p + bytes), or nullptr.
    const HostRange* range_of(const uint8_t* p, uint64_t bytes) const {
        for (const HostRange& r : memory)
            if (p >= r.base && p + bytes <= r.base + r.size) return &r;
        return nullptr;
    }
};

// One connection per (src, dst) pair; its flows are posted as they start.
struct PairState {
    uint32_t src = 0, dst = 0;
    uint32_t conn = 0, responder_conn = 0;
    bool up = false, responder_up = false, resolved = false;
    std::vector<uint32_t> ready;  // started, not posted (the connection is not up at both ends yet)
};

struct FlowState {
    MemoryRegion sink_mr;  // its own sink (the RunBook's), or the receiver's range holding it
    uint32_t pair = 0;
};

class MroceRun {
public:
    MroceRun(const FabricConfig& fc, const MroceHostOptions& ho, const std::vector<FlowSpec>& flows,
             const RunOptions& ro)
        : fabric_(fc),
          book_(flows, fc.hosts, fc.seed, ro),
          state_(flows.size()),
          watch_host_(ro.watch_host),
          watch_flow_(ro.watch_flow),
          window_us_(ro.window_us),
          streams_(std::max<uint32_t>(1, ho.offer.streams)) {
        std::map<uint32_t, uint32_t> conns_per_host;
        std::map<uint64_t, uint32_t> pair_index;
        for (size_t f = 0; f < flows.size(); ++f) {
            const FlowSpec& s = flows[f];
            auto [it, fresh] = pair_index.emplace(uint64_t(s.src) << 32 | s.dst, uint32_t(pairs_.size()));
            if (fresh) {
                pairs_.emplace_back();
                pairs_.back().src = s.src;
                pairs_.back().dst = s.dst;
                ++conns_per_host[s.src], ++conns_per_host[s.dst];
            }
            state_[f].pair = it->second;
        }
        hosts_.resize(fc.hosts);
        for (auto [h, n] : conns_per_host) {
            MroceHostOptions o = ho;
            o.max_connections = n + 2;
            HostFlows& hf = hosts_[h];
            hf.host = std::make_unique<MroceHost>(fabric_, h, o);
            for (auto [base, size] : book_.host_memory(h)) {
                HostRange r{base, size, {}};
                if (hf.host->device().reg_mr(base, size, access::kLocalWrite | access::kRemoteWrite, &r.mr) !=
                    Result::Ok)
                    throw std::runtime_error("fabric: reg_mr of a host's memory failed");
                hf.memory.push_back(r);
            }
            hf.host->after_poll = [this](MroceHost& mh) { drain(mh); };
            // Every frame from src to this host counts for the flow src -> here being received (data and
            // retransmissions).
            hf.host->rx_tap = [this, h](uint32_t src, uint32_t bytes) {
                const int64_t f = book_.flow_of(src, h);
                if (f >= 0) book_.received_bytes(size_t(f), bytes);
            };
        }
        for (size_t f = 0; f < flows.size(); ++f) {
            const FlowSpec& s = flows[f];
            if (ro.data) {  // the sink lies in the receiver's registered memory
                const HostRange* r = hosts_[s.dst].range_of(book_.sink(f), s.bytes);
                if (!r) throw std::runtime_error("fabric: a flow's sink is outside its receiver's memory");
                state_[f].sink_mr = r->mr;
                state_[f].sink_mr.iova += uint64_t(book_.sink(f) - r->base);
                continue;
            }
            Device& rx = hosts_[s.dst].host->device();
            if (rx.reg_mr(book_.sink(f), std::max<uint64_t>(s.bytes, 1), access::kLocalWrite | access::kRemoteWrite,
                          &state_[f].sink_mr) != Result::Ok)
                throw std::runtime_error("fabric: reg_mr of a sink failed");
        }
        if (!conns_per_host.empty()) {
            const MemoryUsage mu = hosts_[conns_per_host.begin()->first].host->device().memory_usage();
            result_.bytes_per_host = mu.preallocated_bytes;
            result_.bytes_per_connection = MemoryUsage::connection_base_bytes() +
                                           MemoryUsage::per_path_bytes() * ho.offer.paths +
                                           MemoryUsage::per_stream_bytes() * ho.offer.streams;
        }
    }

    RunResult run() {
        // Connections at t = 0; the flows start at their start times counted from the moment the last
        // connection is up (as a collective starts on connections set up beforehand, and as the
        // published setups start every flow at once): a lost CONNECT waits CONNECT_RETRY (1 ms)
        // before it is sent again, which must not count as the flow's completion time.
        for (PairState& p : pairs_) {
            HostFlows& hf = hosts_[p.src];
            if (hf.host->device().connect(host_address(p.dst), &p.conn) != Result::Ok)
                throw std::runtime_error("fabric: connect failed");
            hf.host->kick();
        }
        if (watch_flow_ >= 0 && size_t(watch_flow_) < state_.size()) sample_watched();
        book_.run(result_);
        watch_timer_.cancel();
        result_.watch = std::move(watch_);
        result_.transport = "mroce";
        for (const HostFlows& hf : hosts_) {
            if (!hf.host) continue;
            const Counters& c = hf.host->device().counters();
            result_.totals.data_packets += c.data_sent;
            result_.totals.retransmissions += c.retransmissions;
            result_.totals.spurious += c.retx_by_cause.spurious;
            result_.totals.timeouts += c.retx_by_cause.rto;
            result_.totals.ce_seen += c.ce_marks_seen;
            result_.totals.rate_cuts += c.cwnd_decreases;
            result_.totals.host_rx_drops += hf.host->rx_ring_drops();
            result_.totals.repaths += c.repaths;
            result_.totals.home_returns += c.home_returns;
        }
        result_.fabric = fabric_.stats();
        result_.plane_window_us = fabric_.config().plane_window_us;
        result_.watched_port = fabric_.port_to_host(watch_host_, 0);
        return std::move(result_);
    }

private:
    // The watched flow's connection at both ends, now and every window until the flow is done.
    void sample_watched() {
        const PairState& p = pairs_[state_[size_t(watch_flow_)].pair];
        WatchSample w;
        w.at_us = double(sim::now_ns()) / 1000.0;
        if (p.up) {
            const Device& tx = hosts_[p.src].host->device();
            for (uint16_t path = 0, n = tx.path_count(p.conn); path < n; ++path) {
                const auto info = tx.path_info(p.conn, path);
                if (!info) break;
                w.ceiling_mbps = info->rate_ceiling_mbps;
                w.cwnd += info->cwnd;
                w.in_flight += info->in_flight;
                w.max_rto_us = std::max(w.max_rto_us, info->rto);
                w.paths_not_active += info->state != PathState::Active;
                w.retx_gap += info->retx_by_cause.gap;
                w.retx_probe += info->retx_by_cause.probe;
                w.retx_rto += info->retx_by_cause.rto;
            }
        }
        if (p.responder_up) {
            uint32_t conns[1024], shares[1024];
            const int n = hosts_[p.dst].host->device().rate_shares(conns, shares, 1024);
            w.receiver_active = uint32_t(std::max(n, 0));
            for (int i = 0; i < n; ++i)
                if (conns[i] == p.responder_conn) w.share_mbps = shares[i];
        }
        watch_.push_back(w);
        if (book_.outcome(size_t(watch_flow_)).done) return;
        watch_timer_.at_ns(sim::now_ns() + uint64_t(window_us_ * 1000), [this] { sample_watched(); });
    }

    // Pair p's connection came up (or failed); once all have, the flows are scheduled.
    void resolved(PairState& p) {
        if (p.resolved) return;
        p.resolved = true;
        if (++resolved_ < pairs_.size()) return;
        result_.setup_us = double(sim::now_ns()) / 1000.0;
        book_.start_after_setup(result_.setup_us, [this](size_t g) {
            PairState& p = pairs_[state_[g].pair];
            p.ready.push_back(uint32_t(g));
            pump(p);
        });
    }

    // Posts the pair's started flows in the order they started, each as the receive that the Write's
    // immediate completes and then the Write, on the stream of its channel: a stream's k-th receive
    // meets its k-th message.
    void pump(PairState& p) {
        if (!p.up || !p.responder_up || p.ready.empty()) return;
        for (const uint32_t f : p.ready) {
            const FlowSpec& s = book_.spec(f);
            HostFlows& tx = hosts_[p.src];
            const FlowState& st = state_[f];
            const uint16_t stream = s.channel < 0 ? 0 : uint16_t(uint32_t(s.channel) % streams_);
            const Sge none{st.sink_mr.iova, 0, st.sink_mr.lkey};
            if (hosts_[p.dst].host->device().post_recv(p.responder_conn, stream, f, none) != Result::Ok) {
                book_.failed(f, "post_recv refused");
                continue;
            }
            hosts_[p.dst].host->kick();
            const HostRange* r = tx.range_of(book_.source(f), s.bytes);
            if (!r) throw std::runtime_error("fabric: a flow's source is outside its sender's memory");
            const Sge local{r->mr.iova + uint64_t(book_.source(f) - r->base), uint32_t(s.bytes), r->mr.lkey};
            const Result res =
                tx.host->device().post_write_imm(p.conn, stream, f, local, st.sink_mr.iova, st.sink_mr.rkey, f);
            if (res != Result::Ok) book_.failed(f, std::string("post refused: ") + result_name(res));
        }
        p.ready.clear();
        hosts_[p.src].host->kick();
    }

    void drain(MroceHost& mh) {
        Device& dev = mh.device();
        ConnEvent events[16];
        for (int n; (n = dev.poll_events(events, 16)) > 0;)
            for (int i = 0; i < n; ++i) on_event(mh, events[i]);
        WorkCompletion wcs[64];
        for (int n; (n = dev.poll_cq(wcs, 64)) > 0;)
            for (int i = 0; i < n; ++i) on_completion(wcs[i]);
    }

    void on_event(MroceHost& mh, const ConnEvent& e) {
        const uint32_t peer = (uint32_t(e.peer.ip[1]) << 16) | (uint32_t(e.peer.ip[2]) << 8) | e.peer.ip[3];
        const uint32_t src = e.initiator ? mh.host() : peer, dst = e.initiator ? peer : mh.host();
        const std::vector<uint32_t>& flows = book_.flows_of(src, dst);
        if (flows.empty()) return;
        PairState& p = pairs_[state_[flows.front()].pair];
        if (e.kind == ConnEvent::Kind::Down) {
            for (uint32_t f : flows) book_.failed(f, std::string("connection down: ") + status_name(e.status));
            if (e.initiator) resolved(p);  // a connection that never came up holds no start
            return;
        }
        if (e.initiator) {
            p.up = true;
            resolved(p);
        } else {
            p.responder_conn = e.conn;
            p.responder_up = true;
        }
        pump(p);
    }

    void on_completion(const WorkCompletion& wc) {
        if (wc.wr_id >= book_.size()) return;
        if (wc.status != Status::Success) {
            book_.failed(wc.wr_id, std::string(wc_opcode_name(wc.opcode)) + " " + status_name(wc.status));
            return;
        }
        if (wc.opcode == WcOpcode::Recv) book_.done(wc.wr_id);  // not the sender's own completion
    }

    Fabric fabric_;
    RunBook book_;
    std::vector<FlowState> state_;
    uint32_t watch_host_;
    int64_t watch_flow_;
    double window_us_;
    std::vector<WatchSample> watch_;
    sim::Timer watch_timer_;
    std::vector<HostFlows> hosts_;
    std::vector<PairState> pairs_;
    uint32_t streams_;  // negotiated per connection (both ends offer the same)
    size_t resolved_ = 0;
    RunResult result_;
};

}  // namespace

RunResult run_mroce(const FabricConfig& fabric, const MroceHostOptions& host, const std::vector<FlowSpec>& flows,
                    const RunOptions& options) {
    return run_once<MroceRun>(fabric, host, flows, options);
}

}  // namespace mroce::fabric
