// Differential tester: see lockstep/differential.hpp.
#include "lockstep/differential.hpp"

#include <memory>
#include <sstream>

#include "codec/ref_codec.hpp"
#include "netsim/wire.hpp"

namespace mroce::lockstep {

struct LockstepShared {
    DiffOptions opt;
    std::optional<Divergence> div;
    DiffStats stats;
};

namespace {

struct Stop {};  // thrown out of harness::run() at the first divergence (stop_at_divergence)

using Shared = LockstepShared;

std::string event_name(const model::Event& e) {
    static const char* names[] = {"RegisterMemory", "DeregisterMemory", "WriteMemory", "Connect",
                                  "PostSend",       "PostWrite",        "PostRead",    "PostRecv",
                                  "Close",          "Receive",          "AdvanceTime"};
    std::string n = e.index() < sizeof(names) / sizeof(names[0]) ? names[e.index()] : "event";
    if (auto* r = std::get_if<model::Receive>(&e)) n += " " + harness::canonical_line(r->frame, 4793);
    return n;
}

std::string pv_text(const std::optional<model::PathView>& v) {
    if (!v) return "(none)";
    std::ostringstream os;
    os << "state=" << int(v->state) << " route=" << v->route << " snxt=" << v->snxt << " suna=" << v->suna
       << " inflight=" << v->in_flight << " cwnd=" << v->cwnd << " srtt=" << v->srtt << " rto=" << v->rto
       << " retx=" << v->retransmissions << " repaths=" << v->repaths << " home_returns=" << v->home_returns
       << " sent=" << v->packets_sent;
    return os.str();
}

std::string cmp_text(const model::Completion& c) {
    std::ostringstream os;
    os << "conn=" << c.conn << " stream=" << c.stream << " wr=" << c.wr_id << " op=" << model::work_op_name(c.op)
       << " status=" << model::status_name(c.status) << " len=" << c.byte_len;
    if (c.immediate) os << " imm=" << *c.immediate;
    return os.str();
}

// Requirement IDs a frame exercises, for the campaign's coverage summary.
void note_requirements(const ref::Packet& p, std::set<std::string>& req) {
    if (ref::is_data_opcode(p.opcode)) {
        if (p.flags & ref::kFlagRetx) req.insert("R-REL-5");  // retransmission of a declared-lost PSN
        if (p.flags & ref::kFlagVoid) req.insert("R-REL-9");
        if (p.ecn == 3) req.insert("R-CC-4");
    }
    const std::string_view name = ref::opcode_name(p.opcode);
    if (name.find("NAK") != std::string_view::npos) req.insert("R-SEC-5");
    if (name == "ACK") {
        for (uint8_t b : p.sack)
            if (b) {
                req.insert("R-REL-4");  // a gap: SACK bits beyond CPSN
                break;
            }
        if (p.ce_count) req.insert("R-CC-4");
        if (p.rate_hint) req.insert("R-FS-4");
    }
}

class LockstepEndpoint final : public harness::SimEndpoint {
public:
    LockstepEndpoint(const model::Config& c, std::shared_ptr<Shared> sh, char side)
        : model_(c), engine_(c, sh->opt.canary), sh_(std::move(sh)), side_(side), port_(c.udp_port) {}

    std::vector<model::Action> handle(model::Time now, const model::Event& e) override {
        if (sh_->div) return model_.handle(now, e);  // diverged: the run goes on with the model alone
        last_ = now;
        ++steps_;
        ++sh_->stats.steps;
        std::vector<model::Action> m, g;
        if (auto* r = std::get_if<model::RegisterMemory>(&e)) {
            // [R-MEM-1] the keys are the engine's choice: the model registers with them.
            regions_.push_back({r->va, r->length});
            g = engine_.handle(now, e);
            m = model_.handle(now, with_keys_of(*r, g));
        } else {
            m = model_.handle(now, e);
            g = engine_.handle(now, e);
        }
        compare(now, e, m, g);
        if (sh_->div && sh_->opt.stop_at_divergence) {
            aborted_ = true;
            throw Stop{};
        }
        return m;
    }

    // Final memory comparison of every registered region: run() destroys the endpoints when it ends.
    ~LockstepEndpoint() override {
        if (!sh_->div && !aborted_) compare_memory(last_, model::AdvanceTime{});
    }

    std::optional<std::vector<uint8_t>> read_memory(uint64_t va, uint64_t len) const override {
        return model_.read_memory(va, len);
    }
    std::vector<uint32_t> connections() const override { return model_.connections(); }
    std::optional<model::ConnState> connection_state(uint32_t c) const override { return model_.connection_state(c); }
    std::optional<model::PathView> path_view(uint32_t c, uint16_t p) const override { return model_.path_view(c, p); }
    uint16_t path_count(uint32_t c) const override { return model_.path_count(c); }
    std::map<uint32_t, uint32_t> rate_shares() const override { return model_.rate_shares(); }
    uint32_t capacity_mbps() const override { return model_.capacity_mbps(); }
    size_t outstanding_work(uint32_t c) const override { return model_.outstanding_work(c); }
    std::optional<model::Time> next_deadline() const override { return model_.next_deadline(); }

private:
    static model::RegisterMemory with_keys_of(model::RegisterMemory r, const std::vector<model::Action>& engine) {
        for (const model::Action& a : engine)
            if (auto* k = std::get_if<model::MemoryRegistered>(&a)) {
                r.lkey = k->lkey;
                r.rkey = k->rkey;
            }
        return r;
    }

    void diverge(model::Time now, const model::Event& e, std::string what, std::string exp, std::string got) {
        if (sh_->div) return;
        Divergence d;
        d.at = now;
        d.side = side_;
        d.step = steps_;
        d.what = std::move(what);
        d.expected = std::move(exp);
        d.got = std::move(got);
        d.event = event_name(e);
        sh_->div = std::move(d);
    }

    template <class T>
    static std::vector<const T*> all(const std::vector<model::Action>& v) {
        std::vector<const T*> r;
        for (const auto& a : v)
            if (auto* x = std::get_if<T>(&a)) r.push_back(x);
        return r;
    }

    void compare_memory(model::Time now, const model::Event& e) {
        for (auto [va, len] : regions_) {
            auto a = model_.read_memory(va, len);
            auto b = engine_.read_memory(va, len);
            if (a.has_value() != b.has_value()) {
                std::ostringstream w;
                w << "memory region presence va=0x" << std::hex << va << " len=0x" << len
                  << " engine(va,1)=" << engine_.read_memory(va, 1).has_value()
                  << " model(va,1)=" << model_.read_memory(va, 1).has_value();
                diverge(now, e, w.str(), a ? "present" : "absent", b ? "present" : "absent");
                return;
            }
            if (!a) continue;
            for (size_t k = 0; k < a->size(); ++k)
                if ((*a)[k] != (*b)[k]) {
                    std::ostringstream x, y;
                    x << "va=0x" << std::hex << va + k << " byte=0x" << int((*a)[k]);
                    y << "va=0x" << std::hex << va + k << " byte=0x" << int((*b)[k]);
                    diverge(now, e, "memory", x.str(), y.str());
                    return;
                }
        }
    }

    void compare(model::Time now, const model::Event& e, const std::vector<model::Action>& m,
                 const std::vector<model::Action>& g) {
        // Frames: every header field via the appendix C canonical text, then the bytes.
        auto mf = all<model::Transmit>(m), gf = all<model::Transmit>(g);
        for (size_t k = 0; k < std::max(mf.size(), gf.size()); ++k) {
            const std::string a = k < mf.size() ? harness::canonical_line(mf[k]->frame, port_) : "(none)";
            const std::string b = k < gf.size() ? harness::canonical_line(gf[k]->frame, port_) : "(none)";
            if (a != b)
                return diverge(now, e,
                               "frame " + std::to_string(k) + " (model sent " + std::to_string(mf.size()) +
                                   ", engine " + std::to_string(gf.size()) + ")",
                               a, b);
            if (mf[k]->frame != gf[k]->frame) return diverge(now, e, "frame " + std::to_string(k) + " bytes", a, b);
            ++sh_->stats.frames;
            note_requirements(mf[k]->packet, sh_->stats.requirements);
        }
        // Completions [R-CMP-1]: order, status, byte_len, immediate.
        auto mc = all<model::Completion>(m), gc = all<model::Completion>(g);
        for (size_t k = 0; k < std::max(mc.size(), gc.size()); ++k) {
            const std::string a = k < mc.size() ? cmp_text(*mc[k]) : "(none)";
            const std::string b = k < gc.size() ? cmp_text(*gc[k]) : "(none)";
            if (a != b) return diverge(now, e, "completion " + std::to_string(k), a, b);
            ++sh_->stats.completions;
            if (mc[k]->status == model::Status::RnrRetryExceeded) sh_->stats.requirements.insert("R-REL-10");
        }
        // Connection events.
        auto conn_text = [](const std::vector<model::Action>& v) {
            std::ostringstream os;
            for (const auto& a : v) {
                if (auto* u = std::get_if<model::ConnectionUp>(&a))
                    os << "up(" << u->conn << "," << u->initiator << ") ";
                if (auto* d = std::get_if<model::ConnectionDown>(&a))
                    os << "down(" << d->conn << "," << model::status_name(d->status) << ") ";
            }
            return os.str();
        };
        if (conn_text(m) != conn_text(g)) return diverge(now, e, "connection events", conn_text(m), conn_text(g));
        // Post refusals (presence; the reason words are the adapter's translation) and memory keys.
        if (all<model::PostRejected>(m).size() != all<model::PostRejected>(g).size())
            return diverge(now, e, "post refusals", std::to_string(all<model::PostRejected>(m).size()),
                           std::to_string(all<model::PostRejected>(g).size()));
        auto mk = all<model::MemoryRegistered>(m), gk = all<model::MemoryRegistered>(g);
        if (mk.size() != gk.size() || (mk.size() && (mk[0]->lkey != gk[0]->lkey || mk[0]->rkey != gk[0]->rkey)))
            return diverge(now, e, "memory keys", std::to_string(mk.size()), std::to_string(gk.size()));
        // Next deadline.
        auto dl = [](const std::optional<model::Time>& t) { return t ? std::to_string(*t) : std::string("none"); };
        if (model_.next_deadline() != engine_.next_deadline())
            return diverge(now, e, "next deadline", dl(model_.next_deadline()), dl(engine_.next_deadline()));
        // Connection state and every path view.
        auto mcs = model_.connections();
        for (uint32_t c : mcs) {
            auto sa = model_.connection_state(c), sb = engine_.connection_state(c);
            if (sa.has_value() != sb.has_value() || (sa && *sa != *sb))
                return diverge(now, e, "state of conn " + std::to_string(c), sa ? std::to_string(int(*sa)) : "none",
                               sb ? std::to_string(int(*sb)) : "none");
            if (model_.path_count(c) != engine_.path_count(c))
                return diverge(now, e, "path count of conn " + std::to_string(c), std::to_string(model_.path_count(c)),
                               std::to_string(engine_.path_count(c)));
            if (model_.outstanding_work(c) != engine_.outstanding_work(c))
                return diverge(now, e, "outstanding work of conn " + std::to_string(c),
                               std::to_string(model_.outstanding_work(c)), std::to_string(engine_.outstanding_work(c)));
            for (uint16_t p = 0; p < model_.path_count(c); ++p) {
                const std::string a = pv_text(model_.path_view(c, p)), b = pv_text(engine_.path_view(c, p));
                if (a != b) return diverge(now, e, "path " + std::to_string(p) + " of conn " + std::to_string(c), a, b);
                if (auto v = model_.path_view(c, p)) {
                    if (v->repaths) sh_->stats.requirements.insert("R-PATH-4");
                    if (v->retransmissions) sh_->stats.requirements.insert("R-RTO-1");
                }
            }
        }
        if (model_.rate_shares() != engine_.rate_shares()) return diverge(now, e, "rate shares", "", "");
        if (!mc.empty() || std::holds_alternative<model::RegisterMemory>(e) ||
            std::holds_alternative<model::WriteMemory>(e))
            compare_memory(now, e);
    }

    harness::ModelEndpoint model_;
    EngineEndpoint engine_;
    std::shared_ptr<Shared> sh_;
    char side_;
    uint16_t port_;
    uint64_t steps_ = 0;
    model::Time last_ = 0;
    bool aborted_ = false;
    std::vector<std::pair<uint64_t, uint64_t>> regions_;
};

}  // namespace

std::string Divergence::text() const {
    std::ostringstream os;
    os << "divergence at t=" << at << " side " << side << " step " << step << ": " << what << "\n  event:    " << event
       << "\n  expected: " << expected << "  (model)\n  got:      " << got << "  (engine)";
    return os.str();
}

LockstepSession::LockstepSession(const DiffOptions& options) : sh_(std::make_shared<Shared>()) {
    sh_->opt = options;
    sh_->opt.stop_at_divergence = false;  // no harness::run() to catch the stop: the run goes on, model only
}

LockstepSession::~LockstepSession() = default;

std::unique_ptr<harness::SimEndpoint> LockstepSession::endpoint(const model::Config& config, char side) {
    return std::make_unique<LockstepEndpoint>(config, sh_, side);
}

const std::optional<Divergence>& LockstepSession::divergence() const { return sh_->div; }
const DiffStats& LockstepSession::stats() const { return sh_->stats; }

DiffResult run_differential(const harness::Scenario& scenario, const DiffOptions& options) {
    auto sh = std::make_shared<Shared>();
    sh->opt = options;
    int made = 0;
    harness::EndpointFactory f = [&](const model::Config& c) {
        const char side = made++ % 2 == 0 ? 'A' : 'B';
        std::unique_ptr<harness::SimEndpoint> ep = std::make_unique<LockstepEndpoint>(c, sh, side);
        return options.wrap ? options.wrap(std::move(ep), side) : std::move(ep);
    };
    harness::RunOptions ro;
    ro.trace = options.trace;
    ro.canonical_packets = options.canonical_packets;
    ro.step_checks = false;
    DiffResult r;
    try {
        r.run = harness::run(scenario, f, ro);
    } catch (const Stop&) {}
    if (scenario.schedule.fates.size()) {
        for (const auto& fate : scenario.schedule.fates) {
            if (fate.kind == harness::PacketFate::Kind::MarkCe) sh->stats.requirements.insert("R-CC-4");
            if (fate.kind == harness::PacketFate::Kind::Corrupt) sh->stats.requirements.insert("R-VAL-1");
        }
    }
    if (!scenario.schedule.link_events.empty()) sh->stats.requirements.insert("R-PATH-4");
    r.divergence = sh->div;
    r.stats = sh->stats;
    return r;
}

harness::SimKnobs diff_knobs(int profile) {
    harness::SimKnobs k = harness::campaign_defaults();
    auto& f = k.faults;
    switch (profile) {
        case 1:
            f.loss_ppm = 0;
            f.ge_enter_bad_ppm = 20000, f.ge_leave_bad_ppm = 200000, f.ge_loss_good_ppm = 1000,
            f.ge_loss_bad_ppm = 600000;
            break;
        case 2:
            f.dup_ppm = 60000, f.delay_ppm = 150000, f.delay_max_us = 200;
            break;
        case 3:
            f.ce_ppm = 300000;
            break;
        case 4:
            f.link_failures = 4, f.down_min_us = 50, f.down_max_us = 3000, f.faults_until = 8000;
            break;
        case 5:
            k.workload.ops = 60, k.workload.max_len = 65536, k.workload.streams = 8, k.workload.spread_us = 2000;
            f.frames = 6000;
            break;
        case 6:
            k.workload.bad_ppm = 500000;
            break;
        default:
            break;
    }
    return k;
}

harness::GeneratedScenario generate_diff_scenario(uint64_t seed, int profile) {
    return harness::generate(seed, diff_knobs(profile));
}

harness::Scenario shrink_divergence(harness::Scenario s, const DiffOptions& options, size_t max_runs) {
    size_t runs = 0;
    auto fails = [&](const harness::Scenario& c) {
        ++runs;
        return run_differential(c, options).divergence.has_value();
    };
    bool progress = true;
    while (progress && runs < max_runs) {
        progress = false;
        // Cut the fates list in halves first (cheap big steps), then single items.
        while (s.schedule.fates.size() > 1 && runs < max_runs) {
            auto c = s;
            c.schedule.fates.resize(c.schedule.fates.size() / 2);
            if (!fails(c)) break;
            s = std::move(c);
            progress = true;
        }
        for (size_t i = s.workload.ops.size(); i-- > 0 && runs < max_runs;) {
            auto c = s;
            c.workload.ops.erase(c.workload.ops.begin() + long(i));
            if (fails(c)) s = std::move(c), progress = true;
        }
        for (size_t i = s.schedule.link_events.size(); i-- > 0 && runs < max_runs;) {
            auto c = s;
            c.schedule.link_events.erase(c.schedule.link_events.begin() + long(i));
            if (fails(c)) s = std::move(c), progress = true;
        }
        for (size_t i = s.schedule.fates.size(); i-- > 0 && runs < max_runs;) {
            if (s.schedule.fates[i].kind == harness::PacketFate::Kind::Deliver) continue;
            auto c = s;
            c.schedule.fates[i] = harness::PacketFate{};
            if (fails(c)) s = std::move(c), progress = true;
        }
        while (!s.schedule.fates.empty() && s.schedule.fates.back().kind == harness::PacketFate::Kind::Deliver)
            s.schedule.fates.pop_back();
    }
    return s;
}

std::string divergence_trace(const harness::Scenario& s, const DiffOptions& options) {
    DiffOptions o = options;
    o.stop_at_divergence = false;
    o.trace = true;
    const DiffResult r = run_differential(s, o);
    std::string t = harness::to_trace(s, harness::CheckMode::None, r.run, {}, o.canonical_packets);
    std::string comment;
    if (r.divergence) {
        std::istringstream in(r.divergence->text());
        for (std::string line; std::getline(in, line);) comment += "# " + line + "\n";
    } else {
        comment = "# no divergence\n";
    }
    const size_t nl = t.find('\n');
    t.insert(nl == std::string::npos ? t.size() : nl + 1, comment);
    return t;
}

DiffResult replay_trace_text(const std::string& text, const DiffOptions& options) {
    const harness::ParsedTrace p = harness::parse_trace(text);
    return run_differential(p.scenario, options);
}

}  // namespace mroce::lockstep
