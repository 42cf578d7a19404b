// Requirement scenarios run three ways: see lockstep/scenarios.hpp.
#include "lockstep/scenarios.hpp"

#include <cctype>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "codec/ref_codec.hpp"

namespace mroce::lockstep {
namespace {

using harness::PacketFate;
using harness::Side;

// Forwards everything to the wrapped endpoint and records what the scenario's checks observe.
class ObservingEndpoint final : public harness::WrappingEndpoint {
public:
    ObservingEndpoint(std::unique_ptr<harness::SimEndpoint> inner, std::shared_ptr<Observed> obs, Side side,
                      StepHook hook)
        : WrappingEndpoint(std::move(inner)), obs_(std::move(obs)), side_(side), hook_(std::move(hook)) {}

    ~ObservingEndpoint() override {
        // The harness destroys the endpoints when the run ends: the final state.
        auto& fin = obs_->final[size_t(side_)];
        for (uint32_t c : in_->connections()) {
            Observed::Conn& oc = fin[c];
            oc.state = in_->connection_state(c);
            oc.paths = in_->path_count(c);
            oc.outstanding = in_->outstanding_work(c);
            for (uint16_t p = 0; p < oc.paths; ++p) oc.views.push_back(in_->path_view(c, p));
        }
        obs_->final_shares[size_t(side_)] = in_->rate_shares();
    }

    std::vector<model::Action> handle(model::Time now, const model::Event& e) override {
        std::vector<model::Action> acts = in_->handle(now, e);
        for (const auto& a : acts)
            if (auto* t = std::get_if<model::Transmit>(&a))
                obs_->sent[size_t(side_)].push_back(SentFrame{now, t->packet, uint32_t(t->frame.size())});
        if (hook_) hook_(*obs_, side_, now, *in_);
        return acts;
    }

private:
    std::shared_ptr<Observed> obs_;
    Side side_;
    StepHook hook_;
};

// compile_filter's endpoint: numbers the frames as they enter the network (both sides share the
// counter: the harness enters each step's frames in action order) and asks the filter about each
// frame not yet decided.
struct Compile {
    const FrameFilter* filter = nullptr;
    std::array<const harness::SimEndpoint*, 2> ep{};
    std::vector<PacketFate> fates;          // decided, by frame index
    uint64_t next = 0;                      // frames seen in this run
    std::optional<model::Time> restart_at;  // a new fault's effect begins here: rerun from scratch
    model::Time delay = 5;
};
struct Restart {};

class CompilingEndpoint final : public harness::SimEndpoint {
public:
    CompilingEndpoint(const model::Config& c, std::shared_ptr<Compile> st, Side side)
        : m_(c), st_(std::move(st)), side_(side) {
        st_->ep[size_t(side)] = &m_;
    }
    std::vector<model::Action> handle(model::Time now, const model::Event& e) override {
        // A fault decided in this run changes what arrives from its arrival time on: up to then, this
        // run is the run with the fault, so deciding can go on (fewer reruns).
        if (st_->restart_at && now >= *st_->restart_at) throw Restart{};
        std::vector<model::Action> acts = m_.handle(now, e);
        for (const auto& a : acts) {
            auto* t = std::get_if<model::Transmit>(&a);
            if (!t) continue;
            const uint64_t k = st_->next++;
            if (k < st_->fates.size()) continue;
            const PacketFate f = (*st_->filter)(FrameInfo{side_, t->packet, t->frame, now, st_->ep});
            st_->fates.push_back(f);
            if (f.kind != PacketFate::Kind::Deliver && !st_->restart_at) st_->restart_at = now + st_->delay;
        }
        return acts;
    }
    std::optional<std::vector<uint8_t>> read_memory(uint64_t va, uint64_t len) const override {
        return m_.read_memory(va, len);
    }
    std::vector<uint32_t> connections() const override { return m_.connections(); }
    std::optional<model::ConnState> connection_state(uint32_t c) const override { return m_.connection_state(c); }
    std::optional<model::PathView> path_view(uint32_t c, uint16_t p) const override { return m_.path_view(c, p); }
    uint16_t path_count(uint32_t c) const override { return m_.path_count(c); }
    std::map<uint32_t, uint32_t> rate_shares() const override { return m_.rate_shares(); }
    uint32_t capacity_mbps() const override { return m_.capacity_mbps(); }
    size_t outstanding_work(uint32_t c) const override { return m_.outstanding_work(c); }
    std::optional<model::Time> next_deadline() const override { return m_.next_deadline(); }

private:
    harness::ModelEndpoint m_;
    std::shared_ptr<Compile> st_;
    Side side_;
};

PacketFate fate(PacketFate::Kind k) {
    PacketFate f;
    f.kind = k;
    return f;
}

std::string way_file(std::string_view way) {
    std::string w(way);
    for (char& c : w) c = char(std::tolower(static_cast<unsigned char>(c)));
    return w;
}

}  // namespace

bool FrameInfo::data() const { return ref::is_data_opcode(packet.opcode); }

uint32_t FrameInfo::conn(Side s) const {
    const harness::SimEndpoint* e = ep[size_t(s)];
    if (!e) return 0;
    const auto cs = e->connections();
    return cs.empty() ? 0 : cs.front();
}

uint16_t FrameInfo::route(Side s, uint16_t path) const {
    const harness::SimEndpoint* e = ep[size_t(s)];
    const uint32_t c = conn(s);
    if (!e || !c) return 0;
    const auto v = e->path_view(c, path);
    return v ? v->route : 0;
}

PacketFate drop() { return fate(PacketFate::Kind::Drop); }
PacketFate deliver() { return fate(PacketFate::Kind::Deliver); }
PacketFate mark_ce() { return fate(PacketFate::Kind::MarkCe); }
PacketFate duplicate(uint32_t gap_us) {
    PacketFate f = fate(PacketFate::Kind::Duplicate);
    f.extra_delay_us = gap_us;
    return f;
}
PacketFate corrupt_ip_byte(uint16_t ip_offset, uint8_t mask) {
    PacketFate f = fate(PacketFate::Kind::Corrupt);
    f.corrupt_offset = ip_offset;
    f.corrupt_xor = mask;
    return f;
}

harness::Scenario compile_filter(harness::Scenario s, const FrameFilter& filter, size_t max_faults) {
    auto st = std::make_shared<Compile>();
    st->filter = &filter;
    st->delay = s.net.base_delay_us;
    if (s.net.faults_until != harness::kNever && s.net.faults_until < s.limits.time_limit)
        s.net.faults_until = harness::kNever;
    harness::RunOptions ro;
    ro.trace = false;
    ro.step_checks = false;
    for (size_t faults = 0;; ++faults) {
        if (faults > max_faults) throw std::runtime_error("compile_filter: more than max_faults faults");
        s.schedule.fates = st->fates;
        st->next = 0;
        st->restart_at.reset();
        int made = 0;
        harness::EndpointFactory f = [&](const model::Config& c) {
            return std::make_unique<CompilingEndpoint>(c, st, made++ % 2 == 0 ? Side::A : Side::B);
        };
        try {
            harness::run(s, f, ro);
        } catch (const Restart&) { continue; }
        break;
    }
    // Trailing Delivers matter not.
    std::vector<PacketFate>& fates = st->fates;
    while (!fates.empty() && fates.back().kind == PacketFate::Kind::Deliver) fates.pop_back();
    s.schedule.fates = std::move(fates);
    return s;
}

std::vector<model::Completion> Observed::completions(Side side) const {
    std::vector<model::Completion> v;
    for (const auto& c : run.completions)
        if (c.side == side) v.push_back(c.c);
    return v;
}

const Observed::Conn* Observed::conn(Side side, size_t index) const {
    const auto& slots = run.slots[size_t(side)];
    if (index >= slots.size() || !slots[index].id) return nullptr;
    auto it = final[size_t(side)].find(*slots[index].id);
    return it == final[size_t(side)].end() ? nullptr : &it->second;
}

std::optional<model::PathView> Observed::path(Side side, uint16_t p, size_t index) const {
    const Conn* c = conn(side, index);
    if (!c || p >= c->views.size()) return std::nullopt;
    return c->views[p];
}

std::string_view way_name(Way w) {
    switch (w) {
        case Way::Model:
            return "Model";
        case Way::Engine:
            return "Engine";
        case Way::Lockstep:
            return "Lockstep";
    }
    return "?";
}

std::string WayResult::report() const {
    std::ostringstream os;
    if (divergence) os << divergence->text() << "\n";
    for (const auto& v : violations) os << "violation " << v.check << " t=" << v.at << " " << v.detail << "\n";
    return os.str();
}

harness::Scenario compiled_scenario(const RequirementScenario& r) {
    if (!r.filter) return r.scenario;
    const FrameFilter f = r.filter();
    return compile_filter(r.scenario, f);
}

WayResult run_way(Way way, const RequirementScenario& r, const harness::Scenario& s) {
    WayResult out;
    out.compiled = s;
    auto obs = std::make_shared<Observed>();
    auto wrap = [&](std::unique_ptr<harness::SimEndpoint> ep, Side side) {
        return std::make_unique<ObservingEndpoint>(std::move(ep), obs, side, r.on_step ? r.on_step() : StepHook{});
    };
    if (way == Way::Lockstep) {
        DiffOptions o;
        o.trace = true;
        o.wrap = [&](std::unique_ptr<harness::SimEndpoint> ep, char side) -> std::unique_ptr<harness::SimEndpoint> {
            return wrap(std::move(ep), side == 'A' ? Side::A : Side::B);
        };
        DiffResult d = run_differential(s, o);
        out.divergence = d.divergence;
        obs->run = std::move(d.run);
        if (!out.divergence) out.violations = harness::check_scenario(s, obs->run, r.mode);
    } else {
        const harness::EndpointFactory inner = way == Way::Model ? harness::model_factory() : engine_factory();
        int made = 0;
        harness::EndpointFactory f = [&](const model::Config& c) -> std::unique_ptr<harness::SimEndpoint> {
            return wrap(inner(c), made++ % 2 == 0 ? Side::A : Side::B);
        };
        obs->run = harness::run(s, f);
        out.violations = harness::check_scenario(s, obs->run, r.mode);
    }
    out.observed = std::move(*obs);
    return out;
}

std::string write_failure(Way way, const RequirementScenario& r, const WayResult& result, const WayOptions& options) {
    std::string text, note;
    if (way == Way::Lockstep) {
        harness::Scenario s = result.compiled;
        if (result.divergence) {
            auto faults = [](const harness::Scenario& x) {
                size_t n = x.schedule.link_events.size();
                for (const auto& f : x.schedule.fates) n += f.kind != PacketFate::Kind::Deliver;
                return n;
            };
            const size_t ops = s.workload.ops.size(), before = faults(s);
            s = shrink_divergence(s, {}, options.shrink_runs);
            note = "shrunk: ops " + std::to_string(ops) + " -> " + std::to_string(s.workload.ops.size()) + ", faults " +
                   std::to_string(before) + " -> " + std::to_string(faults(s));
        }
        text = divergence_trace(s, {});
    } else {
        harness::RunOptions ro;
        const harness::EndpointFactory f = way == Way::Model ? harness::model_factory() : engine_factory();
        const harness::RunResult run = harness::run(result.compiled, f, ro);
        text = harness::to_trace(result.compiled, r.mode, run, harness::check_scenario(result.compiled, run, r.mode));
    }
    const std::string path = options.trace_dir + "/" + r.name + "." + way_file(way_name(way)) + ".trace";
    std::ofstream(path) << text;
    std::ostringstream os;
    os << way_name(way) << " run of " << r.name << " failed";
    if (!note.empty()) os << " (" << note << ")";
    os << "; trace written to " << path << "\nreplay: " << options.mroce << " replay --engine "
       << way_file(way_name(way)) << " " << path;
    return os.str();
}

}  // namespace mroce::lockstep
