#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "netsim/checks.hpp"
#include "netsim/generate.hpp"
#include "netsim/workload.hpp"

using namespace mroce;
using namespace mroce::harness;

namespace {

Scenario scenario_of(Workload w) {
    Scenario s = base_scenario();
    s.workload = std::move(w);
    return s;
}

}  // namespace

TEST(Workload, PatternIsDeterministicAndDistinct) {
    EXPECT_EQ(pattern(5, Side::A, false, 100, 64), pattern(5, Side::A, false, 100, 64));
    EXPECT_NE(pattern(5, Side::A, false, 100, 64), pattern(5, Side::B, false, 100, 64));
    EXPECT_NE(pattern(5, Side::A, false, 100, 64), pattern(5, Side::A, true, 100, 64));
    EXPECT_NE(pattern(5, Side::A, false, 100, 64), pattern(6, Side::A, false, 100, 64));
    EXPECT_NE(pattern(5, Side::A, false, 100, 64), pattern(5, Side::A, false, 101, 64));
    EXPECT_EQ(pattern(5, Side::A, false, 100, 64)[3], pattern_byte(5, Side::A, false, 103));
    // The word-at-a-time fill is pattern_byte() at every offset and length.
    for (uint64_t off = 0; off < 20; ++off)
        for (uint64_t len = 0; len < 30; ++len) {
            const auto v = pattern(9, Side::B, true, off, len);
            ASSERT_EQ(v.size(), len);
            for (uint64_t i = 0; i < len; ++i)
                ASSERT_EQ(v[i], pattern_byte(9, Side::B, true, off + i)) << off << " " << i;
        }
}

// Every receive-consuming message that is not refused at post time gets exactly one receive on the
// peer's connection and stream, receives of a stream are posted in RSN order, and no two buffers
// overlap.
TEST(Workload, PlanIsConsistent) {
    for (uint64_t seed = 1; seed <= 200; ++seed) {
        WorkloadKnobs k;
        k.ops = 24;
        k.bad_ppm = 300000;
        k.connections = uint16_t(1 + seed % 3);
        const Workload w = plan(generate_intents(k, seed));
        Scenario sc = scenario_of(w);
        sc.connections = k.connections;
        const auto e = expect(sc);
        EXPECT_TRUE(e.unsupported.empty()) << "seed " << seed << ": " << e.unsupported.front();
        std::map<std::tuple<int, uint16_t, uint16_t>, model::Time> last_recv;
        std::map<int, std::vector<std::pair<uint64_t, uint64_t>>> ranges;
        for (size_t i = 0; i < w.ops.size(); ++i) {
            const Op& op = w.ops[i];
            EXPECT_LT(op.conn, k.connections);
            if (i) { EXPECT_LE(w.ops[i - 1].at, op.at); }
            if (op.kind == OpKind::Recv) {
                auto& t = last_recv[{int(op.side), op.conn, op.stream}];
                EXPECT_LE(t, op.at);
                t = op.at;
            }
            if (!e.ops[i].post_rejected) ranges[int(op.side)].push_back({op.local_off, op.length});
            if ((op.kind == OpKind::Write || op.kind == OpKind::WriteImm || op.kind == OpKind::Read) &&
                op.key == KeyChoice::Valid && op.remote_off + op.length <= w.layout.region_size)
                ranges[int(other(op.side))].push_back({op.remote_off, op.length});
            if ((op.kind == OpKind::Send || op.kind == OpKind::WriteImm) && !e.ops[i].post_rejected) {
                if (e.ops[i].matched_with) {
                    const Op& r = w.ops[*e.ops[i].matched_with];
                    EXPECT_EQ(r.kind, OpKind::Recv);
                    EXPECT_EQ(r.side, other(op.side));
                    EXPECT_EQ(r.stream, op.stream);
                    EXPECT_EQ(r.conn, op.conn);
                } else {
                    const auto st = e.ops[i].completion->status;
                    EXPECT_TRUE(st == model::Status::RnrRetryExceeded || st == model::Status::RemoteAccess)
                        << model::status_name(st);
                }
            }
            if (e.ops[i].post_rejected) {
                EXPECT_FALSE(e.ops[i].completion.has_value());
                EXPECT_FALSE(e.ops[i].matched_with.has_value());  // [R-MEM-4]: no RSN taken
            }
        }
        for (auto& [side, rs] : ranges) {
            std::sort(rs.begin(), rs.end());
            for (size_t j = 1; j < rs.size(); ++j)
                EXPECT_LE(rs[j - 1].first + rs[j - 1].second, rs[j].first) << "seed " << seed << " side " << side;
            for (const auto& r : rs) EXPECT_LE(r.first + r.second, w.layout.region_size);
        }
    }
}

TEST(Workload, ExpectationsOfMisbehaviours) {
    std::vector<Intent> in;
    const auto add = [&](OpKind k, uint32_t len, Misbehaviour bad, uint16_t stream = 0) {
        Intent i;
        i.kind = k;
        i.length = len;
        i.bad = bad;
        i.stream = stream;
        i.slack = 3;
        i.late_us = 100;
        i.imm = 0xabcd;
        in.push_back(i);
    };
    add(OpKind::Write, 100, Misbehaviour::WrongKey);     // 0
    add(OpKind::Read, 100, Misbehaviour::NoRight);       // 1
    add(OpKind::Write, 100, Misbehaviour::OutOfBounds);  // 2 (slack odd: wraps around 2^64)
    add(OpKind::Read, 100, Misbehaviour::BadLocal);      // 3
    add(OpKind::Send, 100, Misbehaviour::RecvTooSmall);  // 4 + its receive
    add(OpKind::WriteImm, 50, Misbehaviour::RecvLate);   // 5 + its receive
    add(OpKind::Send, 10, Misbehaviour::NoRecv, 1);      // last of stream 1: no receive
    add(OpKind::Write, 0, Misbehaviour::None);
    add(OpKind::WriteImm, 60, Misbehaviour::WrongKey, 2);   // refused: its receive is Canceled
    add(OpKind::Send, 20, Misbehaviour::RecvAfterFail, 3);  // RNR exhausted, receive Canceled
    add(OpKind::Send, 30, Misbehaviour::BadRecv);           // a refused receive, then the real one
    add(OpKind::Send, 0, Misbehaviour::BadLocal, 1);        // refused: no RSN, no receive
    add(OpKind::WriteImm, 0, Misbehaviour::BadLocal, 2);    // refused, even empty [R-MEM-4]
    const Workload w = plan(in);
    const auto e = expect(scenario_of(w));
    EXPECT_TRUE(e.unsupported.empty());
    std::map<std::string, int> statuses;
    for (size_t i = 0; i < w.ops.size(); ++i) {
        const auto& x = e.ops[i];
        if (x.post_rejected) {
            ++statuses["rejected"];
            continue;
        }
        ++statuses[std::string(op_kind_name(w.ops[i].kind)) + ":" +
                   std::string(model::status_name(x.completion->status))];
    }
    const std::map<std::string, int> want{
        {"Write:RemoteAccess", 2}, {"Read:RemoteAccess", 1},     {"rejected", 4},      {"Send:RemoteLength", 1},
        {"Recv:LocalLength", 1},   {"WriteImm:Success", 1},      {"Recv:Success", 2},  {"Send:RnrRetryExceeded", 2},
        {"Write:Success", 1},      {"WriteImm:RemoteAccess", 1}, {"Recv:Canceled", 2}, {"Send:Success", 1}};
    EXPECT_EQ(statuses, want);
    // [R-CMP-4]: byte counts are the message length on success, 0 on error; Canceled receives 0.
    for (size_t i = 0; i < w.ops.size(); ++i) {
        const auto& c = e.ops[i].completion;
        if (!c) continue;
        if (c->status != model::Status::Success) {
            EXPECT_EQ(c->byte_len, 0u) << i;
        } else if (w.ops[i].kind != OpKind::Recv) {
            EXPECT_EQ(c->byte_len, w.ops[i].length) << i;
        }
    }
    // Only the receive of the RNR-exhausted Send waits for its VOID.
    size_t after_void = 0;
    for (const auto& op : w.ops) after_void += op.after_void;
    EXPECT_EQ(after_void, 1u);
    // The wrapping out-of-bounds Write names an address whose end overflows 2^64.
    bool wraps = false;
    for (const auto& op : w.ops)
        if (op.kind == OpKind::Write && op.length == 100 && op.key == KeyChoice::Valid) {
            const uint64_t va = w.layout.base[1] + op.remote_off;
            wraps = va + op.length < va;
        }
    EXPECT_TRUE(wraps);
    // The late receive comes late.
    for (const auto& op : w.ops)
        if (op.kind == OpKind::Recv && op.length == 53) { EXPECT_EQ(op.at, 100u); }
}

TEST(Generate, ScheduleFollowsKnobsAndSeed) {
    FaultKnobs k;
    k.frames = 20000;
    k.loss_ppm = 100000;
    k.ce_ppm = 100000;
    k.link_failures = 5;
    k.faults_until = 10000;
    const auto a = generate_schedule(k, 4, 1), b = generate_schedule(k, 4, 1), c = generate_schedule(k, 4, 2);
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
    size_t drops = 0, ce = 0;
    for (const auto& f : a.fates) {
        drops += f.kind == PacketFate::Drop;
        ce += f.kind == PacketFate::MarkCe;
    }
    EXPECT_NEAR(double(drops), 2000, 200);
    EXPECT_NEAR(double(ce), 1800, 200);  // CE only applies to frames not dropped
    EXPECT_GE(a.link_events.size(), 5u);
    for (size_t i = 1; i < a.link_events.size(); ++i) EXPECT_LE(a.link_events[i - 1].at, a.link_events[i].at);
    for (const auto& le : a.link_events) EXPECT_LT(le.at, 10000u);
}

TEST(Generate, GilbertElliottIsBursty) {
    FaultKnobs k;
    k.frames = 100000;
    k.ge_enter_bad_ppm = 10000;
    k.ge_leave_bad_ppm = 200000;
    k.ge_loss_bad_ppm = 800000;
    const auto s = generate_schedule(k, 4, 3);
    size_t drops = 0, pairs = 0;
    for (size_t i = 0; i < s.fates.size(); ++i) {
        const bool d = s.fates[i].kind == PacketFate::Drop;
        drops += d;
        if (d && i + 1 < s.fates.size() && s.fates[i + 1].kind == PacketFate::Drop) ++pairs;
    }
    // Loss rate about 0.8 * 1/21; a loss is followed by another far more often than that rate.
    EXPECT_GT(drops, 2500u);
    EXPECT_LT(drops, 5000u);
    EXPECT_GT(double(pairs) / double(drops), 0.5);
}

TEST(Generate, KnobsRoundTrip) {
    FaultKnobs k;
    k.loss_ppm = 123;
    k.faults_until = 99999;
    k.link_failures = 2;
    EXPECT_EQ(knobs_from_string(knobs_to_string(k)), k);
    EXPECT_EQ(knobs_from_string("loss_ppm=5 ce_ppm=7").ce_ppm, 7u);
    EXPECT_THROW(knobs_from_string("nonsense=1"), std::invalid_argument);
    EXPECT_THROW(knobs_from_string("loss_ppm=x"), std::invalid_argument);
}
