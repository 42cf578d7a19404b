// The RoCEv2 baseline over the fabric, in the shape of run_mroce (mroce_run.cpp): each flow is one
// RDMA Write with immediate on its own RC QP pair (created at time 0, posted at the flow's start),
// so the receiver learns of the last byte by its own completion (the flow's finish time); the
// receiver's bytes are compared with the source after the run.
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>

#include "fabric/roce_host.hpp"
#include "fabric/runs.hpp"

namespace mroce::fabric {

namespace {

uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

struct FlowState {
  std::unique_ptr<uint8_t[]> sink;
  uint64_t source_offset = 0;
  uint32_t send_qpn = 0, recv_qpn = 0;
  bool send_done = false, settled = false;
};

class RoceRun {
 public:
  RoceRun(const FabricConfig& fc, const RoceOptions& ho, const std::vector<FlowSpec>& flows, const RunOptions& ro)
      : fabric_(fc), options_(ro), flows_(flows.size()), state_(flows.size()) {
    uint64_t max_bytes = 0;
    std::map<uint64_t, uint32_t> pairs;
    for (size_t f = 0; f < flows.size(); ++f) {
      const FlowSpec& s = flows[f];
      if (s.src >= fc.hosts || s.dst >= fc.hosts || s.src == s.dst)
        throw std::invalid_argument("fabric: flow " + std::to_string(f) + " has a bad host");
      if (!pairs.emplace(uint64_t(s.src) << 32 | s.dst, uint32_t(f)).second)
        throw std::invalid_argument("fabric: two flows on one (src, dst) pair");
      flows_[f].spec = s;
      max_bytes = std::max(max_bytes, s.bytes);
    }
    // The source bytes, as in run_mroce: one seeded buffer, each flow a slice at its own offset.
    source_size_ = max_bytes + 64 * 1024;
    source_.reset(new uint8_t[source_size_]);
    uint64_t x = fc.seed * 0x9E3779B97F4A7C15ull + 1;
    for (uint64_t i = 0; i < source_size_; i += 8) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      std::memcpy(&source_[i], &x, std::min<uint64_t>(8, source_size_ - i));
    }
    hosts_.resize(fc.hosts);
    auto host = [&](uint32_t h) -> RoceHost& {
      if (!hosts_[h]) {
        hosts_[h] = std::make_unique<RoceHost>(fabric_, h, ho);
        hosts_[h]->on_receive_complete = [this](uint32_t f) { received(f); };
        hosts_[h]->on_send_complete = [this](uint32_t f) { state_[f].send_done = true; };
        hosts_[h]->on_error = [this](uint32_t f, const std::string& why) {
          if (flows_[f].error.empty()) flows_[f].error = why;
          settle(f);
        };
        hosts_[h]->rx_tap = [this](uint32_t f, uint32_t bytes) { tap(f, bytes); };
      }
      return *hosts_[h];
    };
    result_.bins.resize(flows.size());
    for (size_t f = 0; f < flows.size(); ++f) {
      const FlowSpec& s = flows[f];
      FlowState& st = state_[f];
      st.source_offset = (f * 4160) % (64 * 1024);
      st.sink.reset(new uint8_t[std::max<uint64_t>(s.bytes, 1)]());
      RoceHost& tx = host(s.src);
      RoceHost& rx = host(s.dst);
      st.send_qpn = tx.alloc_qpn();
      st.recv_qpn = rx.alloc_qpn();
      // One UDP source port per QP (the ECMP path), in the ephemeral range; an initial PSN per QP.
      const uint64_t h = mix64(fc.seed * 0x9E3779B97F4A7C15ull ^ (uint64_t(s.src) << 32 | s.dst));
      const uint16_t sport = uint16_t(0xC000 | (h & 0x3FFF));
      const uint32_t ipsn = uint32_t(h >> 24) & 0xFFFFFF;
      tx.add_requester(st.send_qpn, s.dst, st.recv_qpn, sport, ipsn, source_.get() + st.source_offset, s.bytes,
                       uint32_t(f));
      rx.add_responder(st.recv_qpn, s.src, st.send_qpn, sport, ipsn, st.sink.get(), s.bytes, uint32_t(f));
    }
    result_.bytes_per_host = sizeof(RoceHost) + 2 * (ho.mtu + 256);
    result_.bytes_per_connection = RoceHost::bytes_per_connection();
  }

  RunResult run() {
    const auto wall0 = std::chrono::steady_clock::now();
    for (size_t f = 0; f < flows_.size(); ++f) {
      const FlowSpec& s = flows_[f].spec;
      sim::after_ns(uint64_t(s.start_us * 1000), [this, f] { hosts_[flows_[f].spec.src]->post(state_[f].send_qpn); });
    }
    last_progress_ = wall0;
    sim::after_ns(10000, [this] { tick(); });
    if (flows_.empty()) sim::stop();
    sim::run(uint64_t(options_.deadline_us * 1000));
    result_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    result_.sim_end_us = double(sim::now_ns()) / 1000.0;
    result_.events = sim::events_executed();
    finish();
    return std::move(result_);
  }

 private:
  void tap(uint32_t f, uint32_t bytes) {
    const size_t w = size_t(double(sim::now_ns()) / 1000.0 / options_.window_us);
    auto& b = result_.bins[f];
    if (b.size() <= w) b.resize(w + 1, 0);
    b[w] += bytes;
  }

  void received(uint32_t f) {
    FlowOutcome& fo = flows_[f];
    if (fo.done) return;
    fo.done = true;
    fo.finish_us = double(sim::now_ns()) / 1000.0;
    ++done_;
    settle(f);
  }

  // A flow is settled when its receiver completes or its QP errors; the run ends when all are.
  void settle(uint32_t f) {
    if (state_[f].settled) return;
    state_[f].settled = true;
    if (++settled_ == flows_.size()) sim::stop();
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
    result_.transport = "roce";
    result_.window_us = options_.window_us;
    for (size_t f = 0; f < flows_.size(); ++f) {
      FlowOutcome& fo = flows_[f];
      if (fo.done) {
        fo.verified = std::memcmp(state_[f].sink.get(), source_.get() + state_[f].source_offset, fo.spec.bytes) == 0;
      } else if (fo.error.empty()) {
        fo.error = "not finished at the deadline";
      }
    }
    result_.flows = flows_;
    for (const auto& h : hosts_) {
      if (!h) continue;
      const RoceCounters& c = h->counters();
      result_.totals.data_packets += c.data_packets;
      result_.totals.retransmissions += c.retransmissions;
      result_.totals.spurious += c.duplicates;  // resent packets the responder already held
      result_.totals.timeouts += c.timeouts;
      result_.totals.ce_seen += c.ce_seen;
      result_.totals.rate_cuts += c.rate_cuts;
    }
    result_.fabric = fabric_.stats();
    result_.watched_port = fabric_.port_to_host(options_.watch_host, 0);
    result_.peak_rss_bytes = peak_rss_bytes();
  }

  Fabric fabric_;
  RunOptions options_;
  std::vector<FlowOutcome> flows_;
  std::vector<FlowState> state_;
  std::vector<std::unique_ptr<RoceHost>> hosts_;
  std::unique_ptr<uint8_t[]> source_;
  uint64_t source_size_ = 0;
  uint32_t done_ = 0, settled_ = 0;
  RunResult result_;
  std::chrono::steady_clock::time_point last_progress_;
};

}  // namespace

RunResult run_roce(const FabricConfig& fabric, const RoceOptions& host, const std::vector<FlowSpec>& flows,
                   const RunOptions& options) {
  RunResult r;
  {
    RoceRun run(fabric, host, flows, options);
    r = run.run();
  }
  sim::reset();
  return r;
}

}  // namespace mroce::fabric
