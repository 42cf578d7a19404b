#include "fabric/scenarios.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>

#include "fabric/endpoints.hpp"
#include "fabric/roce_host.hpp"
#include "fabric/runs.hpp"

namespace mroce::fabric {

const char* transport_name(Transport t) noexcept {
    switch (t) {
        case Transport::Mroce:
            return "mroce";
        case Transport::RoceGbn:
            return "rocev2-gbn";
        case Transport::RocePfc:
            return "rocev2-pfc";
        case Transport::RoceGbnNoCc:
            return "rocev2-gbn-nocc";
        case Transport::RocePfcNoCc:
            return "rocev2-pfc-nocc";
        case Transport::MroceModel:
            return "mroce-model";
        case Transport::MroceLockstep:
            return "mroce-lockstep";
    }
    return "?";
}

std::vector<FlowSpec> permutation_flows(uint32_t hosts, uint64_t bytes, double start_us, uint64_t seed) {
    std::vector<uint32_t> perm(hosts);
    std::iota(perm.begin(), perm.end(), 0u);
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x1234567;
    auto next = [&x] {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        return x;
    };
    // Sattolo's algorithm: a uniformly random single cycle, so no host sends to itself.
    for (uint32_t i = hosts - 1; i > 0; --i) std::swap(perm[i], perm[next() % i]);
    std::vector<FlowSpec> flows;
    for (uint32_t h = 0; h < hosts; ++h) flows.push_back({h, perm[h], bytes, start_us});
    return flows;
}

std::vector<FlowSpec> shifted_flows(uint32_t hosts, uint32_t per_host, uint64_t bytes, double start_us) {
    if (per_host >= hosts) throw std::invalid_argument("fabric: more flows per host than other hosts");
    std::vector<FlowSpec> flows;
    for (uint32_t h = 0; h < hosts; ++h)
        for (uint32_t k = 1; k <= per_host; ++k) flows.push_back({h, (h + k) % hosts, bytes, start_us});
    return flows;
}

std::vector<FlowSpec> incast_flows(uint32_t senders, uint64_t bytes, double start_us) {
    std::vector<FlowSpec> flows;
    for (uint32_t s = 1; s <= senders; ++s) flows.push_back({s, 0, bytes, start_us});
    return flows;
}

double jain_index(const std::vector<double>& rates) {
    double sum = 0, sq = 0;
    for (double r : rates) sum += r, sq += r * r;
    if (rates.size() <= 1 || sq == 0) return 1.0;
    return sum * sum / (double(rates.size()) * sq);
}

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const double idx = p * double(v.size() - 1);
    const size_t lo = size_t(std::floor(idx)), hi = size_t(std::ceil(idx));
    return v[lo] + (v[hi] - v[lo]) * (idx - double(lo));
}

void compute_fairness(TransportRun& run) {
    const RunResult& r = run.result;
    size_t windows = 0;
    for (const auto& b : r.bins) windows = std::max(windows, b.size());
    double start = 1e300;
    for (const FlowOutcome& fo : r.flows) start = std::min(start, fo.spec.start_us);
    run.jain.assign(windows, -1.0);
    run.fair_at_us = -1;
    for (size_t w = 0; w < windows; ++w) {
        const double w_start = double(w) * r.window_us, w_end = w_start + r.window_us;
        std::vector<double> rates;
        for (size_t f = 0; f < r.flows.size(); ++f) {
            const FlowOutcome& fo = r.flows[f];
            // Active for the whole window: started before it, not finished within it.
            // A flow the transport gave up on is out of the count altogether.
            if (fo.failed || fo.spec.start_us > w_start || (fo.done && fo.finish_us < w_end)) continue;
            rates.push_back(w < r.bins[f].size() ? double(r.bins[f][w]) : 0.0);
        }
        if (rates.size() >= 2) run.jain[w] = jain_index(rates);
    }
    // The end of the first window from which every later one is fair, counted from the start.
    for (size_t w = windows; w-- > 0;) {
        if (run.jain[w] < 0) continue;
        if (run.jain[w] < 0.95) break;
        run.fair_at_us = double(w + 1) * r.window_us - start;
    }
}

double mean_jain(const TransportRun& run) {
    double sum = 0;
    int n = 0;
    for (double j : run.jain)
        if (j >= 0) sum += j, ++n;
    return n ? sum / n : 0.0;
}

TransportRun run_transport(Transport t, const ScenarioOptions& o, const std::vector<FlowSpec>& flows, double loss) {
    TransportRun run;
    run.transport = t;
    run.loss = loss;
    FabricConfig fc = o.fabric;
    fc.loss = loss;
    RunOptions ro;
    ro.deadline_us = o.deadline_us;
    ro.data = o.data;
    ro.window_us = o.window_us;
    ro.watch_flow = o.watch_flow;
    if (o.progress) {
        char pct[32];
        std::snprintf(pct, sizeof pct, "%g", loss * 100);
        const std::string what = std::string(transport_name(t)) + " at " + pct + "% loss";
        ro.progress = [&o, what](double sim_us, uint32_t done, uint32_t n) { o.progress(what, sim_us, done, n); };
    }
    switch (t) {
        case Transport::Mroce:
            run.result = run_mroce(fc, o.mroce, flows, ro);
            break;
        case Transport::MroceModel:
            run.result = run_endpoints(
                fc, o.mroce, flows, ro,
                [](const model::Config& c, uint32_t) { return std::make_unique<harness::ModelEndpoint>(c); },
                transport_name(t));
            break;
        case Transport::MroceLockstep:
            run.result = run_lockstep(fc, o.mroce, flows, ro);
            break;
        case Transport::RoceGbn:
        case Transport::RocePfc:
        case Transport::RoceGbnNoCc:
        case Transport::RocePfcNoCc: {
            fc = dcqcn_marking(fc);
            fc.pfc = t == Transport::RocePfc || t == Transport::RocePfcNoCc;
            RoceOptions roce;
            roce.dcqcn = t == Transport::RoceGbn || t == Transport::RocePfc;
            run.result = run_roce(fc, roce, flows, ro);
            break;
        }
    }
    run.hosts = fc.hosts;
    run.planes = fc.planes;
    return run;
}

}  // namespace mroce::fabric

namespace mroce::fabric {

PlaneFailureFigures plane_failure_figures(const RunResult& r, uint32_t plane, double fail_us, double back_us) {
    PlaneFailureFigures f;
    f.window_us = r.plane_window_us;
    f.fail_us = fail_us;
    f.back_us = back_us;
    if (f.window_us <= 0) return f;
    const double to_gbps = 8.0 / (f.window_us * 1e3);
    auto series = [&](const std::vector<std::vector<uint64_t>>& bytes) {
        std::vector<std::vector<double>> out;
        for (const auto& p : bytes) {
            out.emplace_back();
            for (uint64_t b : p) out.back().push_back(double(b) * to_gbps);
        }
        return out;
    };
    f.rx_gbps = series(r.fabric.plane_rx_bytes);
    f.tx_gbps = series(r.fabric.plane_tx_bytes);
    f.start_us = 1e300;
    f.end_us = 1e300;
    for (const FlowOutcome& fo : r.flows) {
        f.start_us = std::min(f.start_us, fo.spec.start_us);
        if (fo.done) f.end_us = std::min(f.end_us, fo.finish_us);
    }
    if (f.end_us == 1e300) f.end_us = r.sim_end_us;
    size_t windows = 0;
    for (const auto& p : f.rx_gbps) windows = std::max(windows, p.size());
    auto at = [](const std::vector<std::vector<double>>& s, size_t p, size_t w) {
        return p < s.size() && w < s[p].size() ? s[p][w] : 0.0;
    };
    auto total = [&](size_t w) {
        double sum = 0;
        for (size_t p = 0; p < f.rx_gbps.size(); ++p) sum += at(f.rx_gbps, p, w);
        return sum;
    };
    // Mean of fn(w) over the whole windows inside [from, to).
    auto mean = [&](double from, double to, auto fn) {
        double sum = 0;
        int n = 0;
        for (size_t w = size_t(std::ceil(from / f.window_us)); (double(w) + 1) * f.window_us <= to && w < windows; ++w)
            sum += fn(w), ++n;
        return n ? sum / n : 0.0;
    };
    const double until = std::min(back_us, f.end_us);
    f.before_gbps = mean(f.start_us + 50, fail_us, total);
    f.during_gbps = mean(fail_us, until, total);
    f.plane_before_gbps = mean(f.start_us + 50, fail_us, [&](size_t w) { return at(f.rx_gbps, plane, w); });
    if (back_us < f.end_us)
        f.plane_after_gbps = mean(back_us, f.end_us, [&](size_t w) { return at(f.rx_gbps, plane, w); });
    // Moved: the last window (failure .. until) below 0.95 x before; the aggregate is back after it.
    const size_t w_fail = size_t(fail_us / f.window_us), w_until = size_t(until / f.window_us);
    double last_low = -1;
    for (size_t w = w_fail; w < w_until && w < windows; ++w)
        if (total(w) < 0.95 * f.before_gbps) last_low = double(w + 1) * f.window_us;
    if (w_until > w_fail) f.moved_us = last_low < 0 ? 0 : last_low - fail_us;
    // Data, not the home probes of re-pathed paths ([R-PATH-10]: a few hundred bytes per path and ms).
    const double data_floor = 0.01 * f.plane_before_gbps;
    for (size_t w = w_fail + 1; w < w_until && w < windows; ++w)
        if (at(f.tx_gbps, plane, w) > data_floor) f.dead_tx_us = double(w + 1) * f.window_us - fail_us;
    if (f.dead_tx_us >= 0)
        f.dead_probe_gbps = mean(fail_us + f.dead_tx_us, until, [&](size_t w) { return at(f.tx_gbps, plane, w); });
    if (back_us < f.end_us)
        for (size_t w = size_t(back_us / f.window_us); (double(w) + 1) * f.window_us <= f.end_us && w < windows; ++w)
            if (at(f.rx_gbps, plane, w) >= 0.5 * f.plane_before_gbps) {
                f.returned_us = double(w + 1) * f.window_us - back_us;
                break;
            }
    return f;
}

FlowTimeline flow_timeline(const RunResult& r) {
    FlowTimeline t;
    t.window_us = r.window_us;
    if (r.flows.empty() || r.window_us <= 0) return t;
    size_t windows = 0;
    for (const auto& b : r.bins) windows = std::max(windows, b.size());
    const double to_gbps = 8.0 / (r.window_us * 1e3);
    t.rx_gbps.assign(windows, 0);
    t.active.assign(windows, 0);
    std::vector<double> finishes;
    double last = -1;
    t.first_start_us = 1e300;
    for (size_t f = 0; f < r.flows.size(); ++f) {
        const auto& o = r.flows[f];
        t.first_start_us = std::min(t.first_start_us, o.spec.start_us);
        const double end = o.done ? o.finish_us : 1e300;
        if (end > last) last = end, t.slowest = f;
        if (o.done) finishes.push_back(o.finish_us);
        for (size_t w = 0; w < windows; ++w) {
            const double w_start = double(w) * r.window_us, w_end = w_start + r.window_us;
            if (o.spec.start_us < w_end && end > w_start) ++t.active[w];
        }
        if (f < r.bins.size())
            for (size_t w = 0; w < r.bins[f].size(); ++w) t.rx_gbps[w] += double(r.bins[f][w]) * to_gbps;
    }
    if (t.slowest < r.bins.size())
        for (uint64_t b : r.bins[t.slowest]) t.slowest_gbps.push_back(double(b) * to_gbps);
    t.slowest_gbps.resize(windows, 0);
    for (double g : t.rx_gbps) t.peak_gbps = std::max(t.peak_gbps, g);
    std::sort(finishes.begin(), finishes.end());
    const double fractions[4] = {0.5, 0.9, 0.99, 1.0};
    for (int i = 0; i < 4; ++i) {
        const size_t need = size_t(std::ceil(fractions[i] * double(r.flows.size())));
        if (need >= 1 && finishes.size() >= need) t.done_us[i] = finishes[need - 1];
    }
    // The tail: bytes delivered in the whole windows from 90 % done to the last finish.
    if (t.done_us[1] >= 0 && t.done_us[3] > t.done_us[1]) {
        double bytes_gbps = 0;
        size_t n = 0;
        for (size_t w = size_t(std::ceil(t.done_us[1] / r.window_us));
             w < windows && (double(w) + 1) * r.window_us <= t.done_us[3]; ++w)
            bytes_gbps += t.rx_gbps[w], ++n;
        t.tail_gbps = n ? bytes_gbps / double(n) : 0;
    }
    double total = 0, so_far = 0;
    for (double g : t.rx_gbps) total += g;
    size_t from = windows, to = windows;
    for (size_t w = 0; w < windows; ++w) {
        so_far += t.rx_gbps[w];
        if (from == windows && so_far >= 0.1 * total) from = w;
        if (to == windows && so_far >= 0.9 * total) to = w;
    }
    if (to < windows && to > from) {
        double sum = 0;
        for (size_t w = from + 1; w <= to; ++w) sum += t.rx_gbps[w];
        t.sustained_gbps = sum / double(to - from);
    }
    return t;
}

}  // namespace mroce::fabric
