// The engine over the fabric: each flow is one RDMA Write with immediate, so the receiver learns of
// the last byte by its own completion (the flow's finish time); a connection per (src, dst) pair,
// set up before the flows start; the receiver's bytes are compared with the source after the run.
#include <map>
#include <memory>
#include <stdexcept>

#include "fabric/runs.hpp"

namespace mroce::fabric {

namespace {

struct HostFlows {
    std::unique_ptr<MroceHost> host;
    MemoryRegion source;              // the shared source bytes, registered in this host's device
    std::vector<uint32_t> sending;    // flow indices sent from here
    std::vector<uint32_t> receiving;  // flow indices received here
};

struct FlowState {
    MemoryRegion sink_mr;
    uint32_t conn = 0;
    bool connected = false, posted = false, started = false;
    bool resolved = false;  // its connection came up or failed
};

class MroceRun {
public:
    MroceRun(const FabricConfig& fc, const MroceHostOptions& ho, const std::vector<FlowSpec>& flows,
             const RunOptions& ro)
        : fabric_(fc), book_(flows, fc.hosts, fc.seed, ro), state_(flows.size()), watch_host_(ro.watch_host) {
        std::map<uint32_t, uint32_t> conns_per_host;
        for (const FlowSpec& s : flows) ++conns_per_host[s.src], ++conns_per_host[s.dst];
        hosts_.resize(fc.hosts);
        for (auto [h, n] : conns_per_host) {
            MroceHostOptions o = ho;
            o.max_connections = n + 2;
            HostFlows& hf = hosts_[h];
            hf.host = std::make_unique<MroceHost>(fabric_, h, o);
            if (hf.host->device().reg_mr(const_cast<uint8_t*>(book_.source_base()), book_.source_size(),
                                         access::kLocalWrite, &hf.source) != Result::Ok)
                throw std::runtime_error("fabric: reg_mr of the source failed");
            hf.host->after_poll = [this](MroceHost& mh) { drain(mh); };
            // Every frame from src to this host counts for the flow src -> here (data and retransmissions).
            hf.host->rx_tap = [this, h](uint32_t src, uint32_t bytes) {
                const int64_t f = book_.flow_of(src, h);
                if (f >= 0) book_.received_bytes(size_t(f), bytes);
            };
        }
        for (size_t f = 0; f < flows.size(); ++f) {
            const FlowSpec& s = flows[f];
            Device& rx = hosts_[s.dst].host->device();
            if (rx.reg_mr(book_.sink(f), std::max<uint64_t>(s.bytes, 1), access::kLocalWrite | access::kRemoteWrite,
                          &state_[f].sink_mr) != Result::Ok)
                throw std::runtime_error("fabric: reg_mr of a sink failed");
            hosts_[s.src].sending.push_back(uint32_t(f));
            hosts_[s.dst].receiving.push_back(uint32_t(f));
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
        for (size_t f = 0; f < book_.size(); ++f) {
            const FlowSpec& s = book_.spec(f);
            HostFlows& hf = hosts_[s.src];
            if (hf.host->device().connect(host_address(s.dst), &state_[f].conn) != Result::Ok)
                throw std::runtime_error("fabric: connect failed");
            hf.host->kick();
        }
        book_.run(result_);
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
        }
        result_.fabric = fabric_.stats();
        result_.plane_window_us = fabric_.config().plane_window_us;
        result_.watched_port = fabric_.port_to_host(watch_host_, 0);
        return std::move(result_);
    }

private:
    // The connection of flow f came up (or failed); once all have, the flows are scheduled.
    void resolved(uint32_t f) {
        if (state_[f].resolved) return;
        state_[f].resolved = true;
        if (++resolved_ < book_.size()) return;
        result_.setup_us = double(sim::now_ns()) / 1000.0;
        book_.start_after_setup(result_.setup_us, [this](size_t g) {
            state_[g].started = true;
            try_post(uint32_t(g));
        });
    }

    void try_post(uint32_t f) {
        FlowState& st = state_[f];
        const FlowSpec& s = book_.spec(f);
        if (st.posted || !st.connected || !st.started) return;
        HostFlows& hf = hosts_[s.src];
        const Sge local{hf.source.iova + RunBook::offset(f), uint32_t(s.bytes), hf.source.lkey};
        const Result r = hf.host->device().post_write_imm(st.conn, 0, f, local, st.sink_mr.iova, st.sink_mr.rkey, f);
        if (r != Result::Ok) {
            book_.failed(f, std::string("post refused: ") + result_name(r));
            return;
        }
        st.posted = true;
        hf.host->kick();
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
        const int64_t f = e.initiator ? book_.flow_of(mh.host(), peer) : book_.flow_of(peer, mh.host());
        if (f < 0) return;
        if (e.kind == ConnEvent::Kind::Down) {
            book_.failed(size_t(f), std::string("connection down: ") + status_name(e.status));
            if (e.initiator) resolved(uint32_t(f));  // a connection that never came up holds no start
            return;
        }
        if (e.initiator) {
            state_[f].connected = true;
            resolved(uint32_t(f));
            try_post(uint32_t(f));
            return;
        }
        // Responder: the receive that the Write's immediate completes.
        const Sge none{state_[f].sink_mr.iova, 0, state_[f].sink_mr.lkey};
        if (mh.device().post_recv(e.conn, 0, uint64_t(f), none) != Result::Ok)
            book_.failed(size_t(f), "post_recv refused");
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
    std::vector<HostFlows> hosts_;
    size_t resolved_ = 0;
    RunResult result_;
};

}  // namespace

RunResult run_mroce(const FabricConfig& fabric, const MroceHostOptions& host, const std::vector<FlowSpec>& flows,
                    const RunOptions& options) {
    return run_once<MroceRun>(fabric, host, flows, options);
}

}  // namespace mroce::fabric
