// Randomised conformance: harness scenarios with the model as A (the legal peer) and the DUT as
// B, the DUT's frames tapped into the conformance monitor.
#include "conform/random.hpp"

#include <filesystem>
#include <fstream>

#include "codec/ref_codec.hpp"
#include "conform/inproc_dut.hpp"
#include "lockstep/engine_endpoint.hpp"
#include "netsim/checks.hpp"
#include "netsim/run.hpp"
#include "netsim/trace.hpp"

namespace mroce::conform {

namespace {

// The DUT endpoint with a tap: every frame it receives and every frame it sends, in order, to the
// monitor (frames are acted on one at a time: virtual time).
class Tapped final : public harness::WrappingEndpoint {
public:
    Tapped(std::unique_ptr<harness::SimEndpoint> inner, monitor::Monitor& m, uint64_t& frames, std::string canary)
        : WrappingEndpoint(std::move(inner)), m_(m), n_(frames), canary_(std::move(canary)) {}

    std::vector<model::Action> handle(model::Time now, const model::Event& event) override {
        if (const auto* r = std::get_if<model::Receive>(&event)) m_.frame(++n_, monitor::Nanos(now) * 1000, r->frame);
        canary_step(canary_, sent_data_);
        auto actions = in_->handle(now, event);
        for (auto& a : actions)
            if (auto* t = std::get_if<model::Transmit>(&a)) {
                if (canary_ == "livelock" && !sent_data_) {
                    auto r = ref::decode(t->frame);
                    sent_data_ = r.ok() && ref::is_data_opcode(r.packet.opcode);
                }
                tamper(t->frame);
                m_.frame(++n_, monitor::Nanos(now) * 1000, t->frame);
            }
        return actions;
    }

private:
    void tamper(std::vector<uint8_t>& f) const { f = apply_canary(canary_, std::move(f)); }
    monitor::Monitor& m_;
    uint64_t& n_;
    std::string canary_;
    bool sent_data_ = false;
};

struct Outcome {
    bool failed = false;
    std::vector<monitor::Violation> violations;
    std::vector<std::string> harness_failures;
    std::map<std::string, monitor::RuleTally> tally;
    uint64_t frames = 0;
    harness::RunResult result;
};

Outcome judge(const harness::Scenario& sc, harness::CheckMode mode, const std::string& canary) {
    const model::Address dut = sc.config[1].self;
    monitor::Config mc;
    mc.fully_observed = {monitor::Ip{dut.ipv6, dut.ip}};
    mc.judge_only = true;
    mc.virtual_time = true;
    mc.udp_port = sc.config[1].udp_port;
    mc.rto_min_us = sc.config[1].rto_min_us;
    mc.rto_init_us = sc.config[1].rto_init_us;
    mc.rto_max_us = sc.config[1].rto_max_us;
    mc.rnr_default_us = sc.config[1].rnr_default_us;
    mc.home_probe_us = sc.config[1].home_probe_us;
    mc.home_probe_max_us = sc.config[1].home_probe_max_us;
    mc.peer_timeout_us = sc.config[1].peer_timeout_us;
    mc.hint_ttl_us = sc.config[1].hint_ttl_us;
    monitor::Monitor m(mc);
    uint64_t frames = 0;
    const auto engine = lockstep::engine_factory();
    harness::EndpointFactory factory = [&](const model::Config& c) -> std::unique_ptr<harness::SimEndpoint> {
        if (c.self == dut) return std::make_unique<Tapped>(engine(c), m, frames, canary);
        return std::make_unique<harness::ModelEndpoint>(c);
    };
    harness::RunOptions ro;
    ro.trace = false;
    ro.step_checks = false;
    Outcome o;
    o.result = harness::run(sc, factory, ro);
    m.finish(monitor::Nanos(o.result.end_time) * 1000);
    o.violations = m.violations();
    o.tally = m.tally();
    o.frames = frames;
    for (const auto& v : harness::check_scenario(sc, o.result, mode))
        o.harness_failures.push_back(v.check + ": " + v.detail);
    o.failed = !o.violations.empty() || !o.harness_failures.empty();
    return o;
}

// The first rule that failed, so that shrinking keeps the same failure.
std::string signature(const Outcome& o) {
    if (!o.violations.empty()) return o.violations.front().rule;
    if (!o.harness_failures.empty()) return o.harness_failures.front().substr(0, o.harness_failures.front().find(':'));
    return "";
}

// Greedy shrinking: drop ops, then turn faults into deliveries, while the same failure persists.
harness::Scenario shrink(harness::Scenario sc, harness::CheckMode mode, const std::string& canary,
                         const std::string& sig, uint32_t budget) {
    auto still = [&](const harness::Scenario& s) {
        if (budget == 0) return false;
        --budget;
        const Outcome o = judge(s, mode, canary);
        return o.failed && signature(o) == sig;
    };
    for (size_t chunk = std::max<size_t>(1, sc.workload.ops.size() / 2); chunk >= 1 && budget; chunk /= 2) {
        for (size_t i = 0; i + chunk <= sc.workload.ops.size() && budget;) {
            harness::Scenario t = sc;
            t.workload.ops.erase(t.workload.ops.begin() + long(i), t.workload.ops.begin() + long(i + chunk));
            if (still(t))
                sc = std::move(t);
            else
                i += chunk;
        }
        if (chunk == 1) break;
    }
    for (size_t chunk = std::max<size_t>(1, sc.schedule.fates.size() / 2); chunk >= 1 && budget; chunk /= 2) {
        for (size_t i = 0; i < sc.schedule.fates.size() && budget; i += chunk) {
            harness::Scenario t = sc;
            bool any = false;
            for (size_t j = i; j < std::min(i + chunk, t.schedule.fates.size()); ++j) {
                any = any || t.schedule.fates[j].kind != harness::PacketFate::Deliver;
                t.schedule.fates[j] = harness::PacketFate{};
            }
            if (any && still(t)) sc = std::move(t);
        }
        if (chunk == 1) break;
    }
    if (!sc.schedule.link_events.empty()) {
        harness::Scenario t = sc;
        t.schedule.link_events.clear();
        if (still(t)) sc = std::move(t);
    }
    return sc;
}

}  // namespace

RandomRun run_random_one(uint64_t seed, const RandomOptions& opt) {
    harness::GeneratedScenario g = harness::generate(seed, opt.knobs);
    Outcome o = judge(g.scenario, g.mode, opt.canary);
    RandomRun r;
    r.seed = seed;
    r.failed = o.failed;
    r.frames = o.frames;
    r.tally = o.tally;
    harness::Scenario sc = g.scenario;
    if (o.failed && opt.shrink) {
        sc = shrink(sc, g.mode, opt.canary, signature(o), opt.shrink_budget);
        o = judge(sc, g.mode, opt.canary);
    }
    r.violations = o.violations;
    r.harness_failures = o.harness_failures;
    r.ops = sc.workload.ops.size();
    r.fates = 0;
    for (const auto& f : sc.schedule.fates) r.fates += f.kind != harness::PacketFate::Deliver;
    if (o.failed && !opt.out_dir.empty()) {
        std::filesystem::create_directories(opt.out_dir);
        r.trace = opt.out_dir + "/random-" + std::to_string(seed) + ".trace";
        std::ofstream(r.trace) << harness::scenario_text(sc, g.mode);
    }
    return r;
}

RandomRun replay_random(const std::string& text, const std::string& canary) {
    const harness::ParsedTrace t = harness::parse_trace(text);
    const Outcome o = judge(t.scenario, t.mode, canary);
    RandomRun r;
    r.failed = o.failed;
    r.violations = o.violations;
    r.harness_failures = o.harness_failures;
    r.tally = o.tally;
    r.frames = o.frames;
    r.ops = t.scenario.workload.ops.size();
    for (const auto& f : t.scenario.schedule.fates) r.fates += f.kind != harness::PacketFate::Deliver;
    return r;
}

std::vector<RandomRun> run_random(const RandomOptions& opt, const std::function<void(const RandomRun&)>& progress) {
    std::vector<RandomRun> out;
    for (uint32_t i = 0; i < opt.runs; ++i) {
        out.push_back(run_random_one(opt.seed + i, opt));
        if (progress) progress(out.back());
    }
    return out;
}

}  // namespace mroce::conform
