#include <gtest/gtest.h>

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
