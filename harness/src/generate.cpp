#include "netsim/generate.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <type_traits>

#include "netsim/checks.hpp"
#include "netsim/prng.hpp"

namespace mroce::harness {
Schedule generate_schedule(const FaultKnobs& k, uint16_t links, uint64_t seed) {
    impair::FateGenerator gen(k, seed);
    Schedule s;
    s.fates.resize(k.frames);
    for (auto& f : s.fates) f = gen.next();
    Prng& g = gen.prng();
    if (k.link_failures > 0 && k.faults_until > k.link_from && links > 0) {
        for (uint32_t i = 0; i < k.link_failures; ++i) {
            LinkEvent down;
            down.at = g.range(k.link_from, k.faults_until - 1);
            down.link = uint16_t(g.below(links));
            down.dir = LinkDir(g.below(3));
            down.up = false;
            LinkEvent up = down;
            up.at = down.at + g.range(k.down_min_us, std::max(k.down_min_us, k.down_max_us));
            up.up = true;
            s.link_events.push_back(down);
            if (up.at < k.faults_until) s.link_events.push_back(up);
        }
        std::stable_sort(s.link_events.begin(), s.link_events.end(),
                         [](const LinkEvent& a, const LinkEvent& b) { return a.at < b.at; });
    }
    return s;
}

Schedule dead_network(model::Time at, uint16_t links) {
    Schedule s;
    for (uint16_t l = 0; l < links; ++l) s.link_events.push_back({at, LinkDir::Both, l, false});
    return s;
}

std::vector<Intent> generate_intents(const WorkloadKnobs& k, uint64_t seed) {
    Prng g(seed);
    std::vector<Intent> out;
    for (uint32_t i = 0; i < k.ops; ++i) {
        Intent in;
        in.at = k.start + g.below(uint64_t(k.spread_us) + 1);
        in.side = k.both_sides && g.below(3) == 0 ? Side::B : Side::A;
        in.kind = std::array{OpKind::Send, OpKind::Write, OpKind::WriteImm, OpKind::Read}[g.below(4)];
        in.stream = uint16_t(g.below(std::max<uint16_t>(k.streams, 1)));
        switch (g.below(8)) {
            case 0:
                in.length = 0;
                break;
            case 1:
            case 2:
            case 3:
                in.length = uint32_t(g.range(1, std::min<uint32_t>(256, std::max(k.max_len, 1u))));
                break;
            default:
                in.length = uint32_t(g.range(0, k.max_len));
                break;
        }
        if (g.chance_ppm(k.bad_ppm)) in.bad = Misbehaviour(1 + g.below(kMisbehaviours));
        in.late_us = uint32_t(20 + g.below(250));
        in.slack = uint32_t(g.below(64));
        in.imm = uint32_t(g.next());
        if (k.connections > 1) in.conn = uint16_t(g.below(k.connections));
        out.push_back(in);
    }
    return out;
}

Scenario generate_scenario(uint64_t seed, const FaultKnobs& faults, const WorkloadKnobs& workload, uint16_t links) {
    Scenario s = base_scenario();
    s.seed = seed;
    s.connections = std::max<uint16_t>(workload.connections, 1);
    s.net.links = links;
    s.net.faults_until = faults.faults_until;
    // Independent streams for the three uses of the seed, so that changing one knob does not
    // reshuffle the others.
    s.schedule = generate_schedule(faults, links, mix64(seed ^ 0x5C4ED01Eull));
    s.workload = plan(generate_intents(workload, mix64(seed ^ 0x3047C10Dull)));
    model::Time last = faults.faults_until;
    for (const auto& op : s.workload.ops) last = std::max(last, op.at);
    s.limits.time_limit = last + settle_bound(s) + 10000;
    return s;
}

namespace {

template <class K, class F>
void for_each_workload_knob(K& k, F&& f) {
    f("ops", k.ops);
    f("streams", k.streams);
    f("max_len", k.max_len);
    f("bad_ppm", k.bad_ppm);
    f("both_sides", k.both_sides);
    f("start", k.start);
    f("spread_us", k.spread_us);
    f("connections", k.connections);
}

template <class K, class F>
void for_each_sim_knob(K& k, F&& f) {
    f("links", k.links);
    f("handshake_fault_ppm", k.handshake_fault_ppm);
    f("connect_fail_ppm", k.connect_fail_ppm);
    f("vary_config", k.vary_config);
    f("canary", k.canary);
}

template <class T>
void parse_value(std::string_view key, std::string_view val, T& field) {
    if constexpr (std::is_same_v<T, bool>) {
        if (val == "1" || val == "true")
            field = true;
        else if (val == "0" || val == "false")
            field = false;
        else
            throw std::invalid_argument("bad value for knob " + std::string(key) + ": " + std::string(val));
    } else {
        T x{};
        const auto r = std::from_chars(val.data(), val.data() + val.size(), x);
        if (r.ec != std::errc() || r.ptr != val.data() + val.size())
            throw std::invalid_argument("bad value for knob " + std::string(key) + ": " + std::string(val));
        field = x;
    }
}

}  // namespace

SimKnobs campaign_defaults() {
    SimKnobs k;
    k.faults.frames = 3000;
    k.faults.loss_ppm = 10000;
    k.faults.dup_ppm = 5000;
    k.faults.delay_ppm = 5000;
    k.faults.ce_ppm = 5000;
    k.faults.corrupt_ppm = 2000;
    k.faults.link_failures = 1;
    k.faults.faults_until = 5000;
    k.workload.ops = 16;
    k.workload.max_len = 20000;
    k.workload.start = 20;
    k.workload.connections = 3;
    k.links = 4;
    k.handshake_fault_ppm = 200000;
    k.connect_fail_ppm = 250000;
    k.vary_config = true;
    return k;
}

void set_knob(SimKnobs& k, std::string_view key, std::string_view value) {
    bool found = false;
    const auto visit = [&](const char* name, auto& field) {
        if (found || key != name) return;
        found = true;
        parse_value(key, value, field);
    };
    // Fault knobs: the impairment layer's names and grammar.
    const std::string fault_names = " " + knobs_to_string(FaultKnobs{});
    if (fault_names.find(" " + std::string(key) + "=") != std::string::npos) {
        k.faults = knobs_from_string(std::string(key) + "=" + std::string(value), k.faults);
        return;
    }
    for_each_workload_knob(k.workload, visit);
    for_each_sim_knob(k, visit);
    if (!found) throw std::invalid_argument("unknown knob: " + std::string(key));
}

std::string knobs_to_string(const SimKnobs& k) {
    std::string s = knobs_to_string(k.faults);
    const auto add = [&](const char* name, const auto& v) {
        s += ' ';
        s += name;
        s += '=';
        s += std::to_string(+v);
    };
    for_each_workload_knob(k.workload, add);
    for_each_sim_knob(k, add);
    return s;
}

GeneratedScenario generate(uint64_t seed, const SimKnobs& k) {
    // Draws for the scenario's shape come from their own stream, so the schedule and the workload
    // streams of generate_scenario() stay as they are.
    Prng g(mix64(seed ^ 0x51A7E5EEDull));
    WorkloadKnobs wk = k.workload;
    wk.connections = uint16_t(g.range(1, std::max<uint16_t>(k.workload.connections, 1)));
    GeneratedScenario out;
    Scenario& s = out.scenario;
    std::array<model::Config, 2> cfg = base_scenario().config;
    if (k.vary_config) {
        for (auto& c : cfg) {
            // ISNs near 2^32 in most runs, so that paths wrap [R-PSN-1].
            switch (g.below(3)) {
                case 0:
                    c.isn = uint32_t(0xFFFFFFF0u + g.below(16));
                    break;
                case 1:
                    c.isn = uint32_t(0xFFFFFF00u + g.below(256));
                    break;
                default:
                    c.isn = uint32_t(g.next());
                    break;
            }
            c.path_count = uint16_t(g.range(1, 8));
            c.stream_count = uint16_t(g.range(1, 6));
            c.max_payload = std::array<uint16_t, 4>{256, 512, 1024, 4096}[g.below(4)];
            c.window_cap = std::array<uint16_t, 6>{1, 2, 4, 16, 64, 256}[g.below(6)];
            c.ack_every = std::array<uint32_t, 4>{1, 2, 4, 16}[g.below(4)];
            c.ack_delay_us = uint32_t(g.range(1, 16));
            c.rto_max_us = std::array<uint32_t, 3>{10000, 30000, 100000}[g.below(3)];
            if (g.below(4) == 0) c.capacity_mbps = uint32_t(g.range(1000, 200000));
        }
        wk.streams = std::min(wk.streams, std::min(cfg[0].stream_count, cfg[1].stream_count));
    }
    const bool handshake_faults = g.chance_ppm(k.handshake_fault_ppm);
    if (handshake_faults && g.chance_ppm(k.connect_fail_ppm)) {
        cfg[0].connect_tries = uint32_t(g.range(1, 3));
        cfg[0].connect_retry_us = uint32_t(g.range(100, 1000));
    }
    cfg[0].canary_skip_one_retransmission = k.canary;
    s = generate_scenario(seed, k.faults, wk, k.links);
    s.config = cfg;
    s.net.protect_handshake = !handshake_faults;
    out.mode = handshake_faults ? CheckMode::MayFail : CheckMode::Standard;
    model::Time last = k.faults.faults_until;
    for (const auto& op : s.workload.ops) last = std::max(last, op.at);
    s.limits.time_limit = last + (handshake_faults ? failure_bound(s) : settle_bound(s)) + 10000;
    return out;
}

}  // namespace mroce::harness
