// The engine over the fabric: each flow is one RDMA Write with immediate, so the receiver learns of
// the last byte by its own completion (the flow's finish time); a connection per (src, dst) pair,
// set up before the flows start; the receiver's bytes are compared with the source after the run.
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <unordered_map>

#include "fabric/runs.hpp"

namespace mroce::fabric {

namespace {

struct HostFlows {
    std::unique_ptr<MroceHost> host;
    MemoryRegion source;                                  // the shared source bytes, registered in this host's device
    std::unordered_map<uint32_t, uint32_t> conn_of_peer;  // initiator: peer host -> connection
    std::vector<uint32_t> sending;                        // flow indices sent from here
    std::vector<uint32_t> receiving;                      // flow indices received here
};

struct FlowState {
    std::unique_ptr<uint8_t[]> sink;
    MemoryRegion sink_mr;
    uint64_t source_offset = 0;
    uint32_t conn = 0;
    bool connected = false, posted = false, receive_posted = false;
    bool resolved = false;  // its connection came up or failed
};

class MroceRun {
public:
    MroceRun(const FabricConfig& fc, const MroceHostOptions& ho, const std::vector<FlowSpec>& flows,
             const RunOptions& ro)
        : fabric_(fc), options_(ro), flows_(flows.size()), state_(flows.size()) {
        uint64_t max_bytes = 0;
        for (size_t f = 0; f < flows.size(); ++f) {
            const FlowSpec& s = flows[f];
            if (s.src >= fc.hosts || s.dst >= fc.hosts || s.src == s.dst)
                throw std::invalid_argument("fabric: flow " + std::to_string(f) + " has a bad host");
            flows_[f].spec = s;
            max_bytes = std::max(max_bytes, s.bytes);
        }
        // The source bytes: one seeded buffer every sender registers; flow f sends a slice at its own
        // offset, so a flow placed at another flow's receiver would not compare equal.
        source_size_ = max_bytes + 64 * 1024;
        source_.reset(new uint8_t[source_size_]);
        uint64_t x = fc.seed * 0x9E3779B97F4A7C15ull + 1;
        for (uint64_t i = 0; i < source_size_; i += 8) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            std::memcpy(&source_[i], &x, std::min<uint64_t>(8, source_size_ - i));
        }
        std::map<uint32_t, uint32_t> conns_per_host;
        for (const FlowSpec& s : flows) ++conns_per_host[s.src], ++conns_per_host[s.dst];
        hosts_.resize(fc.hosts);
        for (auto [h, n] : conns_per_host) {
            MroceHostOptions o = ho;
            o.max_connections = n + 2;
            HostFlows& hf = hosts_[h];
            hf.host = std::make_unique<MroceHost>(fabric_, h, o);
            if (hf.host->device().reg_mr(source_.get(), source_size_, access::kLocalWrite, &hf.source) != Result::Ok)
                throw std::runtime_error("fabric: reg_mr of the source failed");
            hf.host->after_poll = [this](MroceHost& mh) { drain(mh); };
            hf.host->rx_tap = [this, h](uint32_t src, uint32_t bytes) { tap(h, src, bytes); };
        }
        result_.bins.resize(flows.size());
        for (size_t f = 0; f < flows.size(); ++f) {
            const FlowSpec& s = flows[f];
            FlowState& st = state_[f];
            st.source_offset = (f * 4160) % (64 * 1024);
            st.sink.reset(new uint8_t[std::max<uint64_t>(s.bytes, 1)]);
            Device& rx = hosts_[s.dst].host->device();
            if (rx.reg_mr(st.sink.get(), std::max<uint64_t>(s.bytes, 1), access::kLocalWrite | access::kRemoteWrite,
                          &st.sink_mr) != Result::Ok)
                throw std::runtime_error("fabric: reg_mr of a sink failed");
            hosts_[s.src].sending.push_back(uint32_t(f));
            hosts_[s.dst].receiving.push_back(uint32_t(f));
            flow_of_pair_[pair_key(s.src, s.dst)] = uint32_t(f);
        }
        if (!hosts_.empty()) {
            const auto& any =
                *std::find_if(hosts_.begin(), hosts_.end(), [](const HostFlows& h) { return bool(h.host); });
            const MemoryUsage mu = any.host->device().memory_usage();
            result_.bytes_per_host = mu.preallocated_bytes;
            result_.bytes_per_connection = MemoryUsage::connection_base_bytes() +
                                           MemoryUsage::per_path_bytes() * ho.offer.paths +
                                           MemoryUsage::per_stream_bytes() * ho.offer.streams;
        }
    }

    RunResult run() {
        const auto wall0 = std::chrono::steady_clock::now();
        // Connections at t = 0; the flows start at their start times counted from the moment the last
        // connection is up (as a collective starts on connections set up beforehand, and as the
        // published setups start every flow at once): a lost CONNECT waits CONNECT_RETRY (1 ms)
        // before it is sent again, which must not count as the flow's completion time.
        for (size_t f = 0; f < flows_.size(); ++f) {
            const FlowSpec& s = flows_[f].spec;
            HostFlows& hf = hosts_[s.src];
            uint32_t conn = 0;
            if (hf.host->device().connect(host_address(s.dst), &conn) != Result::Ok)
                throw std::runtime_error("fabric: connect failed");
            state_[f].conn = conn;
            hf.conn_of_peer[s.dst] = conn;
            hf.host->kick();
        }
        last_progress_ = wall0;
        sim::after_ns(10000, [this] { tick(); });
        sim::run(uint64_t(options_.deadline_us * 1000));
        result_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
        result_.sim_end_us = double(sim::now_ns()) / 1000.0;
        result_.events = sim::events_executed();
        finish();
        return std::move(result_);
    }

private:
    static uint64_t pair_key(uint32_t a, uint32_t b) { return uint64_t(a) << 32 | b; }

    void tap(uint32_t dst, uint32_t src, uint32_t bytes) {
        auto it = flow_of_pair_.find(pair_key(src, dst));
        if (it == flow_of_pair_.end()) return;  // ACKs of a flow in the other direction
        const size_t w = size_t(double(sim::now_ns()) / 1000.0 / options_.window_us);
        auto& b = result_.bins[it->second];
        if (b.size() <= w) b.resize(w + 1, 0);
        b[w] += bytes;
    }

    void all_connected() {
        result_.setup_us = double(sim::now_ns()) / 1000.0;
        for (size_t f = 0; f < flows_.size(); ++f) {
            flows_[f].spec.start_us += result_.setup_us;
            sim::after_ns(uint64_t((flows_[f].spec.start_us - result_.setup_us) * 1000),
                          [this, f] { start(uint32_t(f)); });
        }
    }

    void start(uint32_t f) {
        started_[f] = true;
        try_post(f);
    }

    void try_post(uint32_t f) {
        FlowState& st = state_[f];
        const FlowSpec& s = flows_[f].spec;
        if (st.posted || !st.connected || !started_.count(f)) return;
        HostFlows& hf = hosts_[s.src];
        const Sge local{hf.source.iova + st.source_offset, uint32_t(s.bytes), hf.source.lkey};
        const Result r = hf.host->device().post_write_imm(st.conn, 0, f, local, st.sink_mr.iova, st.sink_mr.rkey, f);
        if (r != Result::Ok) {
            flows_[f].error = std::string("post refused: ") + result_name(r);
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
            for (int i = 0; i < n; ++i) on_completion(mh, wcs[i]);
    }

    void on_event(MroceHost& mh, const ConnEvent& e) {
        const uint32_t peer = (uint32_t(e.peer.ip[1]) << 16) | (uint32_t(e.peer.ip[2]) << 8) | e.peer.ip[3];
        if (e.kind == ConnEvent::Kind::Down) {
            // A connection that never came up no longer holds the others' start.
            if (e.initiator) {
                auto it = flow_of_pair_.find(pair_key(mh.host(), peer));
                if (it != flow_of_pair_.end() && !state_[it->second].connected && !state_[it->second].resolved) {
                    state_[it->second].resolved = true;
                    if (++connected_ == flows_.size()) all_connected();
                }
            }
            for (uint32_t f : e.initiator ? hosts_[mh.host()].sending : hosts_[mh.host()].receiving) {
                const FlowSpec& s = flows_[f].spec;
                if ((e.initiator ? s.dst : s.src) == peer && !flows_[f].done && flows_[f].error.empty())
                    flows_[f].error = std::string("connection down: ") + status_name(e.status);
            }
            return;
        }
        if (e.initiator) {
            auto it = flow_of_pair_.find(pair_key(mh.host(), peer));
            if (it == flow_of_pair_.end()) return;
            if (!state_[it->second].resolved) {
                state_[it->second].resolved = true;
                if (++connected_ == flows_.size()) all_connected();
            }
            state_[it->second].connected = true;
            try_post(it->second);
            return;
        }
        // Responder: the receive that the Write's immediate completes.
        auto it = flow_of_pair_.find(pair_key(peer, mh.host()));
        if (it == flow_of_pair_.end()) return;
        FlowState& st = state_[it->second];
        const Sge none{st.sink_mr.iova, 0, st.sink_mr.lkey};
        if (mh.device().post_recv(e.conn, 0, it->second, none) == Result::Ok) st.receive_posted = true;
    }

    void on_completion(MroceHost&, const WorkCompletion& wc) {
        if (wc.wr_id >= flows_.size()) return;
        FlowOutcome& fo = flows_[wc.wr_id];
        if (wc.status != Status::Success) {
            if (fo.error.empty()) fo.error = std::string(wc_opcode_name(wc.opcode)) + " " + status_name(wc.status);
            return;
        }
        if (wc.opcode != WcOpcode::Recv) return;  // the sender's own completion
        fo.done = true;
        fo.finish_us = double(sim::now_ns()) / 1000.0;
        if (++done_ == flows_.size()) sim::stop();
    }

    void tick() {
        const auto now = std::chrono::steady_clock::now();
        if (options_.progress && now - last_progress_ >= std::chrono::seconds(1)) {
            last_progress_ = now;
            options_.progress(double(sim::now_ns()) / 1000.0, done_, uint32_t(flows_.size()));
        }
        sim::after_ns(10000, [this] { tick(); });
    }

    void finish() {
        result_.transport = "mroce";
        result_.window_us = options_.window_us;
        for (size_t f = 0; f < flows_.size(); ++f) {
            FlowOutcome& fo = flows_[f];
            if (fo.done) {
                fo.verified =
                    std::memcmp(state_[f].sink.get(), source_.get() + state_[f].source_offset, fo.spec.bytes) == 0;
            } else if (fo.error.empty()) {
                fo.error = "not finished at the deadline";
            }
        }
        result_.flows = flows_;
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
        result_.watched_port = fabric_.port_to_host(options_.watch_host, 0);
        result_.peak_rss_bytes = peak_rss_bytes();
    }

    Fabric fabric_;
    RunOptions options_;
    std::vector<FlowOutcome> flows_;
    std::vector<FlowState> state_;
    std::vector<HostFlows> hosts_;
    std::unordered_map<uint64_t, uint32_t> flow_of_pair_;
    std::unordered_map<uint32_t, bool> started_;
    std::unique_ptr<uint8_t[]> source_;
    uint64_t source_size_ = 0;
    uint32_t done_ = 0;
    size_t connected_ = 0;
    RunResult result_;
    std::chrono::steady_clock::time_point last_progress_;
};

}  // namespace

RunResult run_mroce(const FabricConfig& fabric, const MroceHostOptions& host, const std::vector<FlowSpec>& flows,
                    const RunOptions& options) {
    RunResult r;
    {
        MroceRun run(fabric, host, flows, options);
        r = run.run();
    }
    sim::reset();
    return r;
}

}  // namespace mroce::fabric
