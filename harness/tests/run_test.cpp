// The simulation loop against the executable model: clean runs pass every check, runs are
// deterministic and replay, and the checks do fail when the outcome is wrong.
#include <gtest/gtest.h>

#include "netsim/generate.hpp"
#include "netsim/trace.hpp"

#include <set>
#include <string>

using namespace mroce;
using namespace mroce::harness;

namespace {

Scenario lossy(uint64_t seed, uint32_t loss_ppm) {
    Scenario s = base_scenario();
    s.seed = seed;
    s.net.faults_until = 3000;
    FaultKnobs k;
    k.frames = 3000;
    k.loss_ppm = loss_ppm;
    k.dup_ppm = 10000;
    k.delay_ppm = 10000;
    k.ce_ppm = 20000;
    k.corrupt_ppm = 5000;
    s.schedule = generate_schedule(k, s.net.links, seed);
    WorkloadKnobs wk;
    wk.ops = 12;
    wk.max_len = 20000;
    wk.start = 20;
    s.workload = plan(generate_intents(wk, seed));
    return s;
}

}  // namespace

TEST(Run, CleanNetworkPassesEveryCheck) {
    Scenario s = lossy(1, 0);
    s.schedule = {};
    const auto r = run(s);
    const auto v = check_all(s, r);
    EXPECT_TRUE(v.empty()) << format_violations(v) << to_trace(s, CheckMode::Standard, r, v);
    EXPECT_TRUE(r.setup_ok);
    EXPECT_TRUE(r.quiescent_at);
    EXPECT_GT(r.completions.size(), 0u);
}

TEST(Run, LossyNetworkPassesEveryCheck) {
    for (uint64_t seed = 1; seed <= 5; ++seed) {
        const Scenario s = lossy(seed, 50000);
        const auto r = run(s);
        const auto v = check_all(s, r);
        EXPECT_TRUE(v.empty()) << "seed " << seed << "\n" << format_violations(v);
        EXPECT_GT(r.net.dropped, 0u);
    }
}

TEST(Run, DeterministicAndReplayable) {
    const Scenario s = lossy(7, 30000);
    const auto r1 = run(s);
    const auto r2 = run(s);
    EXPECT_EQ(r1.lines, r2.lines);
    const auto v = check_all(s, r1);
    const std::string trace = to_trace(s, CheckMode::Standard, r1, v);
    const auto rr = replay(trace);
    EXPECT_TRUE(rr.reproduced) << rr.first_diff << "\n" << rr.recorded_line << "\n" << rr.replayed_line;
    EXPECT_EQ(rr.violations.size(), v.size());
    // A tampered event line is noticed.
    std::string bad = trace;
    const auto pos = bad.find(" tx #3 ");
    ASSERT_NE(pos, std::string::npos);
    bad.replace(pos, 7, " tx #9 ");
    const auto rb = replay(bad);
    EXPECT_FALSE(rb.reproduced);
    EXPECT_NE(rb.recorded_line, rb.replayed_line);
}

// The checks are not tautologies: a wrong expectation is reported.
TEST(Run, ChecksReportWrongOutcomes) {
    Scenario s = lossy(3, 0);
    const auto r = run(s);
    ASSERT_TRUE(check_all(s, r).empty());
    auto e = expect(s);
    // Claim a successful op failed: both its completion and its placement now disagree.
    for (size_t i = 0; i < s.workload.ops.size(); ++i) {
        if (e.ops[i].placement && e.ops[i].placement->len > 0 && e.ops[i].completion &&
            e.ops[i].completion->status == model::Status::Success && s.workload.ops[i].kind != OpKind::Recv) {
            e.ops[i].completion->status = model::Status::RemoteAccess;
            e.ops[i].placement.reset();
            break;
        }
    }
    EXPECT_FALSE(check_exactly_once(s, e, r).empty());
    EXPECT_FALSE(check_memory(s, e, r).empty());
    // A duplicated completion breaks exactly-once; a swapped pair breaks stream order.
    RunResult r2 = r;
    r2.completions.push_back(r2.completions.front());
    EXPECT_FALSE(check_exactly_once(s, expect(s), r2).empty());
    RunResult r3 = r;
    bool swapped = false;
    for (size_t i = 0; i + 1 < r3.completions.size() && !swapped; ++i)
        for (size_t j = i + 1; j < r3.completions.size() && !swapped; ++j) {
            const auto& a = r3.completions[i];
            const auto& b = r3.completions[j];
            if (a.side == b.side && a.c.stream == b.c.stream &&
                (a.c.op == model::WorkOp::Recv) == (b.c.op == model::WorkOp::Recv)) {
                std::swap(r3.completions[i], r3.completions[j]);
                swapped = true;
            }
        }
    ASSERT_TRUE(swapped);
    EXPECT_FALSE(check_stream_order(s, r3).empty());
    // A byte changed outside every target is found.
    RunResult r4 = r;
    (*r4.data_mem[1])[s.workload.layout.region_size - 1] ^= 1;
    EXPECT_FALSE(check_memory(s, expect(s), r4).empty());
}

TEST(Run, DeadNetworkFailsEverything) {
    Scenario s = lossy(4, 0);
    s.schedule = dead_network(100, s.net.links);
    s.net.faults_until = kNever;
    s.limits.until_conn_down = true;
    s.limits.time_limit = 1000000;
    const auto r = run(s);
    const auto v = check_scenario(s, r, CheckMode::DeadNetwork);
    EXPECT_TRUE(v.empty()) << format_violations(v);
    // The standard checks do not hold there.
    EXPECT_FALSE(check_all(s, r).empty());
}

TEST(Run, GeneratedScenarioFromKnobs) {
    FaultKnobs k;
    k.loss_ppm = 20000;
    k.ge_enter_bad_ppm = 5000;
    k.ge_leave_bad_ppm = 300000;
    k.ge_loss_bad_ppm = 500000;
    k.link_failures = 2;
    k.faults_until = 4000;
    WorkloadKnobs w;
    w.ops = 20;
    const Scenario s = generate_scenario(11, k, w);
    EXPECT_EQ(s.net.faults_until, 4000u);
    EXPECT_FALSE(s.workload.ops.empty());
    const auto r = run(s);
    const auto v = check_all(s, r);
    EXPECT_TRUE(v.empty()) << format_violations(v);
    // The same knobs and seed give the same scenario.
    EXPECT_EQ(scenario_text(generate_scenario(11, k, w), CheckMode::Standard), scenario_text(s, CheckMode::Standard));
}

// Several connections between the two endpoints: ops spread over them, each matched on its own
// connection; every check passes under faults.
TEST(Run, SeveralConnectionsPassEveryCheck_R_MATCH_1_R_FS_2) {
    for (uint64_t seed = 1; seed <= 4; ++seed) {
        Scenario s = lossy(seed, 30000);
        WorkloadKnobs wk;
        wk.ops = 16;
        wk.max_len = 20000;
        wk.start = 20;
        wk.connections = 3;
        s.connections = 3;
        s.workload = plan(generate_intents(wk, seed));
        const auto r = run(s);
        const auto v = check_all(s, r);
        EXPECT_TRUE(v.empty()) << "seed " << seed << "\n" << format_violations(v);
        std::set<uint32_t> ids;
        for (const auto& sl : r.slots[0]) {
            ASSERT_TRUE(sl.id.has_value());
            ids.insert(*sl.id);
        }
        EXPECT_EQ(ids.size(), 3u);
        std::set<uint32_t> used;
        for (const auto& c : r.completions)
            if (c.side == Side::A) used.insert(c.c.conn);
        EXPECT_GE(used.size(), 2u) << "seed " << seed;
    }
}

// [R-REL-9] (A-22): a refused Write-with-immediate whose receive is posted, and a Send that runs
// out of RNR retries whose receive is posted only once its VOID arrived, both leave a Canceled
// receive (byte count 0), and the receive after them on the same stream completes normally.
TEST(Run, OrphanReceivesCompleteCanceled_R_REL_9_R_CMP_4) {
    std::vector<Intent> in;
    const auto add = [&](model::Time at, OpKind k, uint32_t len, Misbehaviour bad, uint16_t stream) {
        Intent i;
        i.at = at;
        i.kind = k;
        i.length = len;
        i.bad = bad;
        i.stream = stream;
        i.imm = 0x1234;
        in.push_back(i);
    };
    add(20, OpKind::WriteImm, 3000, Misbehaviour::NoRight, 0);    // refused: receive Canceled
    add(30, OpKind::Send, 500, Misbehaviour::None, 0);            // the next receive: Success
    add(20, OpKind::Send, 2000, Misbehaviour::RecvAfterFail, 1);  // RNR exhausted
    for (uint32_t loss : {0u, 60000u}) {
        Scenario s = lossy(5, loss);
        s.workload = plan(in);
        const auto r = run(s);
        const auto v = check_all(s, r);
        EXPECT_TRUE(v.empty()) << "loss " << loss << "\n" << format_violations(v);
        size_t canceled = 0;
        for (const auto& c : r.completions)
            if (c.c.status == model::Status::Canceled) {
                ++canceled;
                EXPECT_EQ(c.c.byte_len, 0u);
                EXPECT_EQ(c.side, Side::B);
            }
        EXPECT_EQ(canceled, 2u);
        // The late receive was posted after a VOID of stream 1 reached B.
        model::Time void_at = kNever, post_at = 0;
        for (const auto& l : r.lines) {
            if (void_at == kNever && l.find(" B rx #") != std::string::npos && l.find("fl=") != std::string::npos &&
                l.find("VOID") != std::string::npos && l.find(" st=1 ") != std::string::npos)
                void_at = std::stoull(l);
            if (l.find(" B post ") != std::string::npos && l.find("Recv stream=1") != std::string::npos)
                post_at = std::stoull(l);
        }
        EXPECT_NE(void_at, kNever);
        EXPECT_GE(post_at, void_at);
    }
}

namespace {

Scenario handshake(uint16_t conns) {
    Scenario s = base_scenario();
    s.connections = conns;
    s.net.protect_handshake = false;
    s.net.faults_until = 20000;
    WorkloadKnobs wk;
    wk.ops = 10;
    wk.bad_ppm = 0;
    wk.start = 20;
    wk.connections = conns;
    s.workload = plan(generate_intents(wk, 3));
    s.schedule.fates.assign(64, PacketFate{});
    for (auto& c : s.config) {
        c.keepalive_us = 3000;
        c.peer_timeout_us = 2000;
    }
    s.limits.time_limit = 400000;
    return s;
}

}  // namespace

// [R-CONN-4]: a lost CONNECT is retransmitted after CONNECT_RETRY; a duplicated, delayed ACCEPT
// changes nothing; everything then completes exactly.
TEST(Run, HandshakeFaultsAreRepaired_R_CONN_4) {
    Scenario s = handshake(2);
    s.schedule.fates[0].kind = PacketFate::Drop;       // CONNECT of connection 0
    s.schedule.fates[3].kind = PacketFate::Duplicate;  // an ACCEPT, twice
    s.schedule.fates[3].extra_delay_us = 40;
    const auto r = run(s);
    const auto v = check_scenario(s, r, CheckMode::MayFail);
    EXPECT_TRUE(v.empty()) << format_violations(v);
    EXPECT_TRUE(check_connections(s, r).empty());
    ASSERT_TRUE(r.slots[0][0].up_at.has_value());
    EXPECT_GE(*r.slots[0][0].up_at, s.config[0].connect_retry_us);  // the retry brought it up
    EXPECT_LT(*r.slots[0][1].up_at, 100u);
    EXPECT_TRUE(check_all(s, r).empty());
}

// [R-CONN-4]: the initiator gives up after its last CONNECT; that connection fails cleanly (its
// posts are refused, the peer's never happen), the other connection is untouched.
TEST(Run, HandshakeGivenUpFailsCleanly_R_CONN_4_R_CONN_8) {
    for (bool accept_lost : {false, true}) {
        Scenario s = handshake(2);
        s.config[0].connect_tries = 1;
        // Frame 0 is connection 0's CONNECT; frame 2 is the first ACCEPT (B answers in order).
        s.schedule.fates[accept_lost ? 2 : 0].kind = PacketFate::Drop;
        const auto r = run(s);
        const auto v = check_scenario(s, r, CheckMode::MayFail);
        EXPECT_TRUE(v.empty()) << "accept_lost " << accept_lost << "\n" << format_violations(v);
        EXPECT_FALSE(r.slots[0][0].up());
        EXPECT_TRUE(r.slots[0][0].down_at.has_value());
        EXPECT_EQ(r.slots[0][0].down_status, model::Status::ConnectionFailed);
        EXPECT_TRUE(r.slots[0][1].up());
        EXPECT_FALSE(r.slots[0][1].down_at.has_value());
        // When the ACCEPT was lost, B had the connection: it fails it by itself [R-CONN-8].
        EXPECT_EQ(r.slots[1][0].up(), accept_lost);
        if (accept_lost) { EXPECT_TRUE(r.slots[1][0].down_at.has_value()); }
        bool refused = false, unposted = false;
        for (size_t i = 0; i < s.workload.ops.size(); ++i) {
            if (!r.posts[i] || s.workload.ops[i].conn != 0) continue;
            refused |= r.posts[i]->rejected && !r.posts[i]->no_connection;
            unposted |= r.posts[i]->no_connection;
        }
        EXPECT_TRUE(refused);
        EXPECT_EQ(unposted, !accept_lost);
        // The strict checks do not hold, and the tolerant ones are not blind: a completion of
        // the healthy connection with a wrong status is still reported.
        EXPECT_FALSE(check_all(s, r).empty());
        RunResult bad = r;
        for (auto& c : bad.completions)
            if (c.c.conn == *r.slots[size_t(c.side)][1].id && c.c.status == model::Status::Success) {
                c.c.status = model::Status::Flushed;
                break;
            }
        EXPECT_FALSE(check_scenario(s, bad, CheckMode::MayFail).empty());
    }
}

// [R-FS-5]: the incast check passes on the model and fails on grants below C / N.
TEST(Run, IncastCheckCatchesAShortGrant_R_FS_5) {
    Scenario s = base_scenario();
    s.connections = 4;
    for (auto& c : s.config) c.max_payload = 1024;
    s.config[1].capacity_mbps = 4 * (64 * 1024 / 50);
    std::vector<Intent> in;
    for (uint16_t j = 0; j < 4; ++j) {
        Intent w;
        w.at = 40;
        w.kind = OpKind::Write;
        w.conn = j;
        w.length = 300 * 1024;
        in.push_back(w);
    }
    s.workload = plan(in);
    s.limits.time_limit = 700;
    RunOptions o;
    o.record_shares = true;
    const auto r = run(s, model_factory(), o);
    const auto v = check_incast(s, r);
    EXPECT_TRUE(v.empty()) << format_violations(v);
    RunResult low = r;
    for (auto& rec : low.shares)
        if (rec.side == Side::B && !rec.shares.empty()) rec.shares.begin()->second = 1;
    EXPECT_FALSE(check_incast(s, low).empty());
    RunResult deaf = r;
    deaf.hints.clear();
    EXPECT_FALSE(check_incast(s, deaf).empty());
    RunResult none = r;
    none.shares.clear();
    EXPECT_FALSE(check_incast(s, none).empty());
}

// `mroce sim`'s generator: a pure function of seed and knobs; handshake-fault scenarios are judged
// with MayFail.
TEST(Run, CampaignScenariosAreDeterministic) {
    SimKnobs k;
    k.faults.loss_ppm = 20000;
    k.faults.frames = 2000;
    k.faults.faults_until = 3000;
    k.workload.ops = 12;
    k.workload.start = 20;
    k.workload.connections = 3;
    k.handshake_fault_ppm = 500000;
    k.vary_config = true;
    size_t may_fail = 0, several = 0;
    for (uint64_t seed = 1; seed <= 12; ++seed) {
        const auto g = generate(seed, k);
        EXPECT_EQ(scenario_text(g.scenario, g.mode), scenario_text(generate(seed, k).scenario, generate(seed, k).mode));
        may_fail += g.mode == CheckMode::MayFail;
        several += g.scenario.connections > 1;
        EXPECT_EQ(g.scenario.net.protect_handshake, g.mode == CheckMode::Standard);
        const auto r = run(g.scenario);
        const auto v = check_scenario(g.scenario, r, g.mode);
        EXPECT_TRUE(v.empty()) << "seed " << seed << "\n" << format_violations(v);
    }
    EXPECT_GT(may_fail, 0u);
    EXPECT_GT(several, 0u);
    SimKnobs k2;
    set_knob(k2, "loss_ppm", "7");
    set_knob(k2, "connections", "4");
    set_knob(k2, "vary_config", "1");
    EXPECT_EQ(k2.faults.loss_ppm, 7u);
    EXPECT_EQ(k2.workload.connections, 4u);
    EXPECT_TRUE(k2.vary_config);
    EXPECT_THROW(set_knob(k2, "nonsense", "1"), std::invalid_argument);
    EXPECT_THROW(set_knob(k2, "ops", "-1"), std::invalid_argument);
    EXPECT_NE(knobs_to_string(k2).find("connections=4"), std::string::npos);
}
