#include <gtest/gtest.h>

#include <regex>

#include "netsim/generate.hpp"
#include "netsim/trace.hpp"

using namespace mroce;
using namespace mroce::harness;

namespace {

Scenario sample() {
    Scenario s = base_scenario(0xFFFFFFF0u, 7);
    s.seed = 99;
    s.config[0].path_count = 3;
    s.config[1].max_payload = 1024;
    s.config[1].self.ipv6 = true;
    s.net.links = 3;
    s.net.faults_until = 5000;
    FaultKnobs k;
    k.frames = 300;
    k.loss_ppm = 50000;
    k.dup_ppm = 50000;
    k.delay_ppm = 50000;
    k.corrupt_ppm = 50000;
    k.link_failures = 2;
    k.faults_until = 5000;
    s.schedule = generate_schedule(k, 3, 5);
    WorkloadKnobs wk;
    wk.ops = 10;
    wk.bad_ppm = 500000;
    s.workload = plan(generate_intents(wk, 8));
    s.limits.until_conn_down = true;
    s.limits.time_limit = kNever;
    return s;
}

// The trace as a recorder that does not know the home probe intervals writes it.
std::string without_home_probe_fields(const std::string& trace) {
    return std::regex_replace(trace, std::regex(" home_probe(_max)?_us=[0-9]+"), "");
}

// [R-PATH-10]: writes from A every 100 us for 3 ms over 4 links, the last two of which die at 300 us
// for good (A's path 1 is on one): the paths on them re-path on an RTO and probe their home route,
// on a dead link, from `home_probe_us` after the re-path on (every probe is lost).
Scenario probing_a_dead_home_route(uint32_t home_probe_us, uint32_t home_probe_max_us) {
    Scenario s = base_scenario();
    s.seed = 5;
    s.net.links = 4;
    s.net.dead_links = 2;
    s.net.dead_from = 300;
    std::vector<Intent> writes;
    for (model::Time t = 0; t < 3000; t += 100)
        writes.push_back(Intent{.at = t, .side = Side::A, .kind = OpKind::Write, .stream = 0, .length = 16384});
    s.workload = plan(writes);
    for (auto& c : s.config) {
        c.home_probe_us = home_probe_us;
        c.home_probe_max_us = home_probe_max_us;
    }
    return s;
}

}  // namespace

// The input part of a trace is a fixed point of print -> parse -> print, with every field.
TEST(Trace, ScenarioRoundTrips) {
    const Scenario s = sample();
    const std::string text = scenario_text(s, CheckMode::DeadNetwork);
    const auto p = parse_trace(text);
    EXPECT_EQ(p.mode, CheckMode::DeadNetwork);
    EXPECT_EQ(scenario_text(p.scenario, p.mode), text);
    EXPECT_EQ(p.scenario.schedule, s.schedule);
    EXPECT_EQ(p.scenario.workload, s.workload);
    EXPECT_EQ(p.scenario.net, s.net);
    EXPECT_EQ(p.scenario.limits, s.limits);
    EXPECT_EQ(p.scenario.config[1].self, s.config[1].self);
    EXPECT_EQ(p.scenario.config[0].isn, 0xFFFFFFF0u);
    EXPECT_EQ(p.scenario.config[1].max_payload, 1024);
    EXPECT_TRUE(p.lines.empty());
}

// Several connections, connection indices, receives that wait for a VOID, and the MayFail mode.
TEST(Trace, ConnectionsAndOrphanReceivesRoundTrip) {
    Scenario s = sample();
    s.connections = 3;
    s.net.protect_handshake = false;
    s.workload.ops[0].conn = 2;
    s.workload.ops[1].after_void = true;
    const std::string text = scenario_text(s, CheckMode::MayFail);
    EXPECT_NE(text.find("connections count=3"), std::string::npos);
    EXPECT_NE(text.find(" conn=2"), std::string::npos);
    EXPECT_NE(text.find(" after=void"), std::string::npos);
    const auto p = parse_trace(text);
    EXPECT_EQ(p.mode, CheckMode::MayFail);
    EXPECT_EQ(p.scenario.connections, 3);
    EXPECT_EQ(p.scenario.workload, s.workload);
    EXPECT_EQ(scenario_text(p.scenario, p.mode), text);
    // One connection keeps the historical text (no "connections" line, no conn=0).
    EXPECT_EQ(scenario_text(sample(), CheckMode::Standard).find("connections"), std::string::npos);
    EXPECT_THROW(parse_trace(text + "connections count=0\n"), TraceError);
    EXPECT_THROW(parse_trace(text + "op at=1 side=A kind=Recv stream=0 len=1 local=0 remote=0 key=Valid "
                                    "imm=0 after=soon\n"),
                 TraceError);
}

// [R-PATH-10] HOME_PROBE and HOME_PROBE_MAX are configuration like every timer: a trace keeps a
// non-default pair, and a trace recorded before they were written has the spec's 200 / 400 us.
TEST(Trace, HomeProbeIntervalsRoundTripAndOlderTracesHaveTheSpecValues) {
    Scenario s = sample();
    s.config[0].home_probe_us = 120;
    s.config[0].home_probe_max_us = 360;
    const std::string text = scenario_text(s, CheckMode::Standard);
    EXPECT_NE(text.find(" home_probe_us=120 home_probe_max_us=360 "), std::string::npos) << text;
    const auto p = parse_trace(text);
    EXPECT_EQ(p.scenario.config[0].home_probe_us, 120u);
    EXPECT_EQ(p.scenario.config[0].home_probe_max_us, 360u);
    EXPECT_EQ(p.scenario.config[1].home_probe_us, 200u);
    EXPECT_EQ(scenario_text(p.scenario, p.mode), text);
    const std::string older = without_home_probe_fields(text);
    ASSERT_EQ(older.find("home_probe"), std::string::npos);
    const auto q = parse_trace(older);
    for (const auto& c : q.scenario.config) {
        EXPECT_EQ(c.home_probe_us, 200u);
        EXPECT_EQ(c.home_probe_max_us, 400u);
    }
    // The older fields stay required.
    EXPECT_THROW(parse_trace(std::regex_replace(text, std::regex(" rto_min_us=[0-9]+"), "")), TraceError);
}

// A run whose home probes follow a non-default HOME_PROBE replays from its trace event for event;
// read with the spec's intervals instead (the trace of a recorder that drops them) it does not: the
// recorded events depend on the value.
TEST(Trace, ANonDefaultHomeProbeReplaysAsRecorded) {
    const Scenario s = probing_a_dead_home_route(120, 240);
    const RunResult r = run(s);
    const auto v = check_all(s, r);
    EXPECT_TRUE(v.empty()) << format_violations(v);
    EXPECT_GT(r.net.link_dropped, 0u);
    EXPECT_NE(r.lines, run(probing_a_dead_home_route(200, 400)).lines) << "no home probe in the run";
    const std::string trace = to_trace(s, CheckMode::Standard, r, v);
    const auto rr = replay(trace);
    EXPECT_TRUE(rr.reproduced) << rr.first_diff << "\n" << rr.recorded_line << "\n" << rr.replayed_line;
    EXPECT_TRUE(rr.violations.empty()) << format_violations(rr.violations);
    EXPECT_FALSE(replay(without_home_probe_fields(trace)).reproduced);
}

TEST(Trace, EventsAndVerdictAreKept) {
    const std::string text = scenario_text(sample(), CheckMode::Standard) +
                             "events\n0 A connect\n5 B rx #0 CONNECT\nend\nverdict fail 1\nviolation x t=3 y\n";
    const auto p = parse_trace(text);
    ASSERT_EQ(p.lines.size(), 2u);
    EXPECT_EQ(p.lines[1], "5 B rx #0 CONNECT");
    ASSERT_EQ(p.violations.size(), 2u);
}

TEST(Trace, MalformedInputNamesTheLine) {
    const std::string good = scenario_text(sample(), CheckMode::Standard);
    EXPECT_THROW(parse_trace("hello\n"), TraceError);
    EXPECT_THROW(parse_trace(good + "bogus line\n"), TraceError);
    EXPECT_THROW(parse_trace(good + "op at=1 side=C kind=Send stream=0 len=1 local=0 remote=0 key=Valid imm=0\n"),
                 TraceError);
    EXPECT_THROW(parse_trace(good + "fate 999999 Drop\n"), TraceError);
    EXPECT_THROW(parse_trace(good + "events\n1 A x\n"), TraceError);  // no 'end'
    try {
        parse_trace(good + "net links=x\n");
        FAIL();
    } catch (const TraceError& e) { EXPECT_NE(std::string(e.what()).find("trace line"), std::string::npos); }
}
