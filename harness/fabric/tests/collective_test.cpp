// Collectives over the fabric: the plans are right (executed by hand, without a network, they give
// every host the expected result, and a wrong byte is caught), and small all-reduces and all-to-alls
// over a lossy fabric leave every host with the right result.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <vector>

#include "fabric/collective.hpp"
#include "fabric/scenarios.hpp"

namespace mroce::fabric {
namespace {

// Runs a plan without a network: a flow moves its bytes (source to sink) and is delivered once every
// flow it waits for is, in a seeded shuffled order among the flows that may go.
void execute_by_hand(Collective& c, uint64_t seed, size_t corrupt_flow = SIZE_MAX) {
    const auto& flows = c.flows();
    std::vector<uint32_t> waiting(flows.size());
    std::vector<std::vector<uint32_t>> dependents(flows.size());
    std::vector<uint32_t> ready;
    for (size_t f = 0; f < flows.size(); ++f) {
        waiting[f] = uint32_t(flows[f].after.size());
        for (uint32_t g : flows[f].after) dependents[g].push_back(uint32_t(f));
        if (waiting[f] == 0) ready.push_back(uint32_t(f));
    }
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    while (!ready.empty()) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        const size_t pick = x % ready.size();
        const uint32_t f = ready[pick];
        ready[pick] = ready.back();
        ready.pop_back();
        std::memcpy(c.sink(f), c.source(f), flows[f].bytes);
        if (f == corrupt_flow) c.sink(f)[flows[f].bytes / 2] ^= 0x40;
        c.delivered(f);
        for (uint32_t g : dependents[f])
            if (--waiting[g] == 0) ready.push_back(g);
    }
}

TEST(FabricCollective, EveryPlanGivesEveryHostTheExpectedResultAndCatchesAWrongByte) {
    for (CollectiveAlgo a :
         {CollectiveAlgo::RingAllReduce, CollectiveAlgo::HalvingDoublingAllReduce, CollectiveAlgo::AllToAll}) {
        SCOPED_TRACE(collective_name(a));
        for (uint64_t seed : {1, 2, 3}) {
            Collective good(a, 8, 8 * 1024, 2, seed, seed == 3 ? 2 : 1);  // and two iterations back to back
            execute_by_hand(good, seed);
            EXPECT_EQ(good.check(), 0u);
            // The oracle can fail: one flipped bit in one step reaches a host's result.
            Collective bad(a, 8, 8 * 1024, 2, seed);
            execute_by_hand(bad, seed, bad.flows().size() / 3);
            EXPECT_GE(bad.check(), 1u);
            // A step that never arrives leaves its receiver wrong.
            Collective missing(a, 8, 8 * 1024, 2, seed);
            EXPECT_EQ(missing.check(), 8u);
        }
    }
}

TEST(FabricCollective, PlansHaveTheTextbookShape) {
    // Ring: 2 (N - 1) steps of bytes / (channels N) per host and channel; every step but the first
    // waits for the host's previous send and receive.
    Collective ring(CollectiveAlgo::RingAllReduce, 8, 64 * 1024, 2, 1);
    EXPECT_EQ(ring.flows().size(), 2u * 7 * 8 * 2);
    for (const FlowSpec& s : ring.flows()) {
        EXPECT_EQ(s.dst, (s.src + 1) % 8);
        EXPECT_EQ(s.bytes, 64u * 1024 / 16);
    }
    EXPECT_DOUBLE_EQ(ring.bus_factor(), 2.0 * 7 / 8);
    // Halving-doubling: log2 N steps each way; a host sends bytes/2, /4, /8, then /8, /4, /2 per channel.
    Collective hd(CollectiveAlgo::HalvingDoublingAllReduce, 8, 64 * 1024, 1, 1);
    ASSERT_EQ(hd.flows().size(), 6u * 8);
    std::vector<uint64_t> host0;
    for (const FlowSpec& s : hd.flows())
        if (s.src == 0) host0.push_back(s.bytes);
    EXPECT_EQ(host0, (std::vector<uint64_t>{32768, 16384, 8192, 8192, 16384, 32768}));
    // All-to-all: every ordered pair once, bytes / N each, nobody waits.
    Collective a2a(CollectiveAlgo::AllToAll, 8, 64 * 1024, 1, 1);
    std::map<std::pair<uint32_t, uint32_t>, int> pairs;
    for (const FlowSpec& s : a2a.flows()) {
        ++pairs[{s.src, s.dst}];
        EXPECT_TRUE(s.after.empty());
        EXPECT_EQ(s.bytes, 8u * 1024);
    }
    EXPECT_EQ(pairs.size(), 56u);
    for (CollectiveAlgo a :
         {CollectiveAlgo::RingAllReduce, CollectiveAlgo::HalvingDoublingAllReduce, CollectiveAlgo::AllToAll})
        for (uint32_t iterations : {1u, 3u})
            EXPECT_EQ(Collective::step_count(a, 8, 2, iterations),
                      Collective(a, 8, 64 * 1024, 2, 1, iterations).flows().size())
                << collective_name(a) << " x" << iterations;
    EXPECT_THROW(Collective(CollectiveAlgo::HalvingDoublingAllReduce, 6, 6 * 1024, 1, 1), std::invalid_argument);
    EXPECT_THROW(Collective(CollectiveAlgo::RingAllReduce, 8, 1000, 1, 1), std::invalid_argument);
}

// A small collective on 8 hosts and 2 planes: the result is verified on every host.
TransportRun run_small(CollectiveAlgo a, Transport t, double loss, uint64_t seed, Collective** out = nullptr,
                       uint32_t iterations = 1) {
    static std::unique_ptr<Collective> keep;
    keep = std::make_unique<Collective>(a, 8, 256 * 1024, 2, seed, iterations);
    ScenarioOptions o;
    o.fabric.hosts = 8;
    o.fabric.planes = 2;
    o.fabric.seed = seed;
    o.deadline_us = 200000;
    o.mroce.offer.streams = 2;
    o.data = keep.get();
    if (out) *out = keep.get();
    return run_transport(t, o, keep->flows(), loss);
}

TEST(FabricCollective, AllReduceAndAllToAllOverALossyFabricAreRightOnEveryHost) {
    for (CollectiveAlgo a :
         {CollectiveAlgo::RingAllReduce, CollectiveAlgo::HalvingDoublingAllReduce, CollectiveAlgo::AllToAll}) {
        SCOPED_TRACE(collective_name(a));
        Collective* c = nullptr;
        const TransportRun r = run_small(a, Transport::Mroce, 0.01, 3, &c);
        EXPECT_EQ(r.result.done(), r.result.flows.size());
        EXPECT_TRUE(r.result.all_verified());
        EXPECT_EQ(c->check(), 0u);
        for (uint32_t h = 0; h < 8; ++h) EXPECT_TRUE(c->host_ok(h)) << "host " << h;
        EXPECT_GT(r.result.fabric.link_losses, 0u);  // the loss was there
    }
}

TEST(FabricCollective, TheRoceBaselineRunsTheSameCollective) {
    Collective* c = nullptr;
    const TransportRun r = run_small(CollectiveAlgo::RingAllReduce, Transport::RoceGbn, 0, 4, &c);
    EXPECT_TRUE(r.result.all_verified());
    EXPECT_EQ(c->check(), 0u);
}

TEST(FabricCollective, AStepWaitsForTheDataItForwards) {
    // Every ring step after the first starts no earlier than the steps it waits for are done.
    const TransportRun r = run_small(CollectiveAlgo::RingAllReduce, Transport::Mroce, 0, 5);
    const auto& flows = r.result.flows;
    size_t checked = 0;
    for (const FlowOutcome& fo : flows)
        for (uint32_t g : fo.spec.after) {
            ASSERT_TRUE(flows[g].done);
            EXPECT_GE(fo.spec.start_us, flows[g].finish_us);
            ++checked;
        }
    EXPECT_GT(checked, 100u);
}

TEST(FabricCollective, TheTimedIterationStartsWhenEveryHostIsDoneWithTheWarmUp) {
    // As nccl-tests times after a barrier: at 1 % loss the hosts end their warm-up at different
    // times, and no step of the timed iteration may start before the last of them.
    for (CollectiveAlgo a : {CollectiveAlgo::RingAllReduce, CollectiveAlgo::AllToAll}) {
        SCOPED_TRACE(collective_name(a));
        Collective* c = nullptr;
        const TransportRun r = run_small(a, Transport::Mroce, 0.01, 7, &c, 2);
        ASSERT_EQ(r.result.done(), r.result.flows.size());
        const size_t timed = c->first_timed_flow();
        ASSERT_GT(timed, 0u);
        double warm_up_end = 0, first_warm_up_end = 1e300, timed_start = 1e300;
        for (size_t f = 0; f < r.result.flows.size(); ++f) {
            const FlowOutcome& fo = r.result.flows[f];
            if (f < timed)
                warm_up_end = std::max(warm_up_end, fo.finish_us);
            else
                timed_start = std::min(timed_start, fo.spec.start_us);
            if (f < timed) first_warm_up_end = std::min(first_warm_up_end, fo.finish_us);
        }
        EXPECT_GE(timed_start, warm_up_end);
        EXPECT_LT(first_warm_up_end, warm_up_end);  // the hosts did end their warm-up apart
        EXPECT_EQ(c->check(), 0u);
    }
}

}  // namespace
}  // namespace mroce::fabric
