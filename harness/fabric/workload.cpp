#include "fabric/workload.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <fstream>
#include <string>

#include "fabric/sim.hpp"
#include "impair/prng.hpp"

namespace mroce::fabric {

uint32_t RunResult::done() const {
    return uint32_t(std::count_if(flows.begin(), flows.end(), [](const FlowOutcome& f) { return f.done; }));
}

bool RunResult::all_verified() const {
    return std::all_of(flows.begin(), flows.end(), [](const FlowOutcome& f) { return f.done && f.verified; });
}

double RunResult::max_fct_us() const {
    double m = 0;
    for (const FlowOutcome& f : flows)
        if (f.done) m = std::max(m, f.fct_us());
    return m;
}

double RunResult::goodput_gbps() const {
    double first = 1e300, last = 0, bytes = 0;
    for (const FlowOutcome& f : flows) {
        if (!f.done) continue;
        first = std::min(first, f.spec.start_us);
        last = std::max(last, f.finish_us);
        bytes += double(f.spec.bytes);
    }
    return last > first ? bytes * 8.0 / ((last - first) * 1e3) : 0.0;
}

uint64_t peak_rss_bytes() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
    return 0;
}

}  // namespace mroce::fabric

namespace mroce::fabric {

RunBook::RunBook(const std::vector<FlowSpec>& flows, uint32_t hosts, uint64_t seed, const RunOptions& options)
    : options_(options),
      outcomes_(flows.size()),
      settled_(flows.size(), false),
      sinks_(flows.size()),
      bins_(flows.size()),
      dependents_(flows.size()),
      waiting_(flows.size(), 0) {
    uint64_t max_bytes = 0;
    for (size_t f = 0; f < flows.size(); ++f) {
        const FlowSpec& s = flows[f];
        if (s.src >= hosts || s.dst >= hosts || s.src == s.dst)
            throw std::invalid_argument("fabric: flow " + std::to_string(f) + " has a bad host");
        for (uint32_t g : s.after) {
            if (g >= f) throw std::invalid_argument("fabric: flow " + std::to_string(f) + " waits for a later flow");
            dependents_[g].push_back(uint32_t(f));
        }
        waiting_[f] = uint32_t(s.after.size());
        if (s.after_all_before) {
            if (s.after_all_before > f)
                throw std::invalid_argument("fabric: flow " + std::to_string(f) + " waits for a later flow");
            barriers_[s.after_all_before].waiters.push_back(uint32_t(f));
            ++waiting_[f];
        }
        by_pair_[uint64_t(s.src) << 32 | s.dst].flows.push_back(uint32_t(f));
        outcomes_[f].spec = s;
        max_bytes = std::max(max_bytes, s.bytes);
        if (!options_.data) sinks_[f].reset(new uint8_t[std::max<uint64_t>(s.bytes, 1)]);
    }
    if (options_.data) return;  // the scenario owns the bytes
    source_size_ = max_bytes + 64 * 1024;
    source_.reset(new uint8_t[source_size_]);
    impair::Prng prng(seed);
    for (uint64_t i = 0; i < source_size_; i += 8) {
        const uint64_t x = prng.next();
        std::memcpy(&source_[i], &x, std::min<uint64_t>(8, source_size_ - i));
    }
}

std::vector<std::pair<uint8_t*, uint64_t>> RunBook::host_memory(uint32_t host) {
    if (options_.data) return options_.data->host_memory(host);
    return {{source_.get(), source_size_}};
}

const std::vector<uint32_t>& RunBook::flows_of(uint32_t src, uint32_t dst) const {
    static const std::vector<uint32_t> none;
    auto it = by_pair_.find(uint64_t(src) << 32 | dst);
    return it == by_pair_.end() ? none : it->second.flows;
}

int64_t RunBook::flow_of(uint32_t src, uint32_t dst) const {
    auto it = by_pair_.find(uint64_t(src) << 32 | dst);
    if (it == by_pair_.end()) return -1;
    PairFlows& p = it->second;
    while (p.open < p.flows.size() && outcomes_[p.flows[p.open]].done) ++p.open;
    return p.open < p.flows.size() ? int64_t(p.flows[p.open]) : -1;
}

void RunBook::received_bytes(size_t f, uint32_t bytes) {
    const size_t w = size_t(double(sim::now_ns()) / 1000.0 / options_.window_us);
    auto& b = bins_[f];
    if (b.size() <= w) b.resize(w + 1, 0);
    b[w] += bytes;
}

void RunBook::start_after_setup(double setup_us, const std::function<void(size_t)>& start) {
    start_ = start;
    for (size_t f = 0; f < outcomes_.size(); ++f)
        if (waiting_[f] == 0) schedule(f, setup_us);
}

// from_us is now (set-up, or the last awaited flow's finish); start_us becomes absolute.
void RunBook::schedule(size_t f, double from_us) {
    const double offset = outcomes_[f].spec.start_us;
    outcomes_[f].spec.start_us += from_us;
    sim::after_ns(uint64_t(offset * 1000), [this, f] { start_(f); });
}

void RunBook::done(size_t f) {
    FlowOutcome& fo = outcomes_[f];
    if (fo.done) return;
    fo.done = true;
    fo.finish_us = double(sim::now_ns()) / 1000.0;
    ++done_;
    if (options_.data) options_.data->delivered(f);
    for (uint32_t g : dependents_[f])
        if (--waiting_[g] == 0 && !settled_[g]) schedule(g, fo.finish_us);
    for (auto it = barriers_.upper_bound(uint32_t(f)); it != barriers_.end(); ++it)
        if (++it->second.done_below == it->first)
            for (uint32_t g : it->second.waiters)
                if (--waiting_[g] == 0 && !settled_[g]) schedule(g, fo.finish_us);
    settle(f);
}

void RunBook::failed(size_t f, const std::string& why) {
    if (outcomes_[f].done || outcomes_[f].failed) return;
    if (outcomes_[f].error.empty()) outcomes_[f].error = why;
    outcomes_[f].failed = true;
    settle(f);
    for (uint32_t g : dependents_[f]) failed(g, "waits for flow " + std::to_string(f) + ", which failed");
    for (auto it = barriers_.upper_bound(uint32_t(f)); it != barriers_.end(); ++it)
        for (uint32_t g : it->second.waiters)
            failed(g, "waits for every flow before " + std::to_string(it->first) + ", and flow " + std::to_string(f) +
                          " failed");
}

void RunBook::settle(size_t f) {
    if (settled_[f]) return;
    settled_[f] = true;
    if (++settled_count_ == outcomes_.size()) sim::stop();
}

void RunBook::tick() {
    const auto now = std::chrono::steady_clock::now();
    if (options_.progress && now - last_progress_ >= std::chrono::seconds(1)) {
        last_progress_ = now;
        options_.progress(double(sim::now_ns()) / 1000.0, done_, uint32_t(outcomes_.size()));
    }
    sim::after_ns(10000, [this] { tick(); });
}

void RunBook::run(RunResult& r) {
    const auto wall0 = std::chrono::steady_clock::now();
    last_progress_ = wall0;
    sim::after_ns(10000, [this] { tick(); });
    if (outcomes_.empty()) sim::stop();
    sim::run(uint64_t(options_.deadline_us * 1000));
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    r.sim_end_us = double(sim::now_ns()) / 1000.0;
    r.events = sim::events_executed();
    r.window_us = options_.window_us;
    for (size_t f = 0; f < outcomes_.size(); ++f) {
        FlowOutcome& fo = outcomes_[f];
        if (fo.done)
            fo.verified = options_.data ? options_.data->verified(f)
                                        : std::memcmp(sinks_[f].get(), source(f), fo.spec.bytes) == 0;
        else if (fo.error.empty())
            fo.error = "not finished at the deadline";
    }
    r.flows = outcomes_;
    r.bins = bins_;
    r.peak_rss_bytes = peak_rss_bytes();
}

}  // namespace mroce::fabric
