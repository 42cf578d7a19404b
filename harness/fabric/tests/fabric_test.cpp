// The fabric's physics (raw frames through Fabric, no transport) and the engine over it.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <span>
#include <vector>

#include "fabric/endpoints.hpp"
#include "fabric/fabric.hpp"
#include "fabric/frame_head_plain.hpp"
#include "fabric/runs.hpp"
#include "fabric/scenarios.hpp"
#include "fabric/sim.hpp"
#include "impair/ecn.hpp"
#include "lockstep/differential.hpp"

namespace mroce::fabric {
namespace {

// An Ethernet / IPv4 / UDP frame of `len` bytes from host src to host dst.
std::vector<uint8_t> udp_frame(uint32_t src, uint32_t dst, uint16_t sport, uint32_t len, impair::Ecn ecn) {
    std::vector<uint8_t> f(len, 0);
    f[12] = 0x08, f[13] = 0x00;
    uint8_t* ip = &f[14];
    ip[0] = 0x45;
    ip[1] = uint8_t(26 << 2 | uint8_t(ecn));
    impair::store16(ip + 2, uint16_t(len - 14));
    ip[8] = 64;
    ip[9] = 17;
    for (int i = 0; i < 4; ++i)
        ip[12 + i] = uint8_t(host_ip(src) >> (24 - 8 * i)), ip[16 + i] = uint8_t(host_ip(dst) >> (24 - 8 * i));
    impair::store16(ip + 10, impair::ipv4_checksum(std::span<const uint8_t>(ip, 20)));
    impair::store16(&f[34], sport);
    impair::store16(&f[36], 4793);
    return f;
}

struct Received {
    uint64_t frames = 0, ce = 0, bad_checksum = 0;
};

void count_into(Fabric& fab, uint32_t host, Received* r) {
    fab.set_receiver(host, [r](uint32_t, const SimFrame& frame) {
        std::vector<uint8_t> b(frame.size());
        frame.copy_to(b.data(), uint32_t(b.size()));
        ++r->frames;
        if (impair::read_ecn(b) == impair::Ecn::Ce) ++r->ce;
        if (!impair::ipv4_checksum_ok(std::span<const uint8_t>(&b[14], 20))) ++r->bad_checksum;
    });
}

TEST(FabricPhysics, FramesAreConservedUnderLossAndDrops) {
    FabricConfig c;
    c.hosts = 16;
    c.loss = 0.02;
    c.queue_bytes = 64 * 1024;  // small: an 8:1 burst overflows it
    c.seed = 7;
    Received r;
    uint64_t sent = 0;
    {
        Fabric fab(c);
        count_into(fab, 0, &r);
        for (uint32_t s = 1; s <= 8; ++s)
            for (uint32_t i = 0; i < 200; ++i, ++sent) {
                auto f = udp_frame(s, 0, uint16_t(1000 + i), 4000, impair::Ecn::Ect0);
                fab.host_send(s, 0, f.data(), uint32_t(f.size()));
            }
        sim::run(1000000000);
        const FabricStats st = fab.stats();
        EXPECT_EQ(st.frames_sent_by_hosts, sent);
        EXPECT_EQ(st.queued_frames_now, 0u);
        EXPECT_GT(st.queue_drops, 0u);
        EXPECT_GT(st.link_losses, 0u);
        EXPECT_EQ(st.frames_delivered_to_hosts, r.frames);
        EXPECT_EQ(sent, r.frames + st.queue_drops + st.link_losses)
            << "delivered " << r.frames << " dropped " << st.queue_drops << " lost " << st.link_losses;
        EXPECT_EQ(r.bad_checksum, 0u);
    }
    sim::reset();
}

// Two senders at line rate into one receiver: the receiver's ToR port gains a frame per frame time.
// Frames are marked only once more than K bytes wait, and Not-ECT frames are never marked.
TEST(FabricPhysics, CeMarksOnlyAboveTheThresholdAndOnlyEct) {
    constexpr uint32_t kFrame = 4000, kPerSender = 100;
    for (uint32_t k_frames : {10u, 1000u}) {
        for (impair::Ecn ecn : {impair::Ecn::Ect0, impair::Ecn::NotEct}) {
            FabricConfig c;
            c.hosts = 4;
            c.topology = Topology::LeafSpine;
            c.hosts_per_leaf = 4;
            c.queue_bytes = 4 << 20;
            c.ecn.kmin_bytes = c.ecn.kmax_bytes = k_frames * kFrame;
            Received r;
            {
                Fabric fab(c);
                count_into(fab, 0, &r);
                for (uint32_t i = 0; i < kPerSender; ++i)
                    for (uint32_t s : {1u, 2u}) {
                        auto f = udp_frame(s, 0, uint16_t(2000 + i), kFrame, ecn);
                        fab.host_send(s, 0, f.data(), kFrame);
                    }
                sim::run(1000000000);
                const PortStats p = fab.port_to_host(0, 0);
                EXPECT_EQ(r.frames, 2 * kPerSender);
                EXPECT_EQ(r.bad_checksum, 0u);
                if (ecn == impair::Ecn::NotEct || k_frames == 1000) {
                    EXPECT_EQ(r.ce, 0u) << "K " << k_frames;
                } else {
                    // The queue passes K after about 2K arrivals (it grows by one frame per two arrivals);
                    // every later ECT arrival finds it above K until the senders stop.
                    EXPECT_GT(r.ce, 0u);
                    RecordProperty("ce_marks", int(r.ce));
                    std::printf("K %u frames: %lu of %u frames marked, queue max %lu bytes\n", k_frames,
                                (unsigned long)r.ce, 2 * kPerSender, (unsigned long)p.max_bytes);
                    EXPECT_LE(r.ce, 2 * kPerSender - 2 * k_frames);
                    EXPECT_GE(r.ce, 2 * kPerSender - 2 * k_frames - 4);
                    EXPECT_GT(p.max_bytes, uint64_t(k_frames) * kFrame);
                }
                EXPECT_EQ(p.marked, r.ce);
            }
            sim::reset();
        }
    }
}

TEST(FabricPhysics, EcmpSpreadsSourcePortsOverTheUplinks) {
    FabricConfig c;
    c.hosts = 128;  // k = 8: 4 uplinks per edge, 4 per aggregation switch
    c.queue_bytes = 64 << 20;
    Received r;
    {
        Fabric fab(c);
        count_into(fab, 127, &r);
        constexpr uint32_t kPorts = 4000;
        for (uint32_t i = 0; i < kPorts; ++i) {
            auto f = udp_frame(0, 127, uint16_t(10000 + i), 200, impair::Ecn::Ect0);
            fab.host_send(0, 0, f.data(), uint32_t(f.size()));
        }
        sim::run(1000000000);
        EXPECT_EQ(r.frames, kPorts);
        std::vector<uint64_t> edge_up, agg_up;
        for (const PortView& v : fab.switch_ports()) {
            if (!v.up || v.stats.sent_frames == 0) continue;
            (v.tier == 0 ? edge_up : agg_up).push_back(v.stats.sent_frames);
        }
        ASSERT_EQ(edge_up.size(), 4u);  // host 0's edge switch uses all 4 uplinks
        for (uint64_t n : edge_up) EXPECT_NEAR(double(n), kPorts / 4.0, kPorts / 4.0 * 0.15);
        // Every aggregation switch of pod 0 then spreads its share over its 4 core uplinks.
        ASSERT_EQ(agg_up.size(), 16u);
        for (uint64_t n : agg_up) EXPECT_NEAR(double(n), kPorts / 16.0, kPorts / 16.0 * 0.35);
    }
    sim::reset();
}

TEST(FabricMroce, PermutationOf16HostsCompletesVerified) {
    FabricConfig fc;
    fc.hosts = 16;
    std::vector<FlowSpec> flows;
    for (uint32_t h = 0; h < 16; ++h) flows.push_back({h, (h + 5) % 16, 256 * 1024, 50});
    RunOptions ro;
    ro.deadline_us = 20000;
    const RunResult r = run_mroce(fc, MroceHostOptions{}, flows, ro);
    for (const auto& f : r.flows)
        EXPECT_TRUE(f.done && f.verified) << f.spec.src << "->" << f.spec.dst << ": " << f.error;
    EXPECT_EQ(r.totals.host_rx_drops, 0u);
}

TEST(FabricMroce, LeafSpinePermutationWithTwoPlanesCompletesVerified) {
    FabricConfig fc;
    fc.topology = Topology::LeafSpine;
    fc.hosts = 16;
    fc.hosts_per_leaf = 4;
    fc.planes = 2;
    std::vector<FlowSpec> flows;
    for (uint32_t h = 0; h < 16; ++h) flows.push_back({h, (h + 7) % 16, 256 * 1024, 50});
    RunOptions ro;
    ro.deadline_us = 20000;
    const RunResult r = run_mroce(fc, MroceHostOptions{}, flows, ro);
    for (const auto& f : r.flows)
        EXPECT_TRUE(f.done && f.verified) << f.spec.src << "->" << f.spec.dst << ": " << f.error;
}

// Goodput here: the mean of the flows' own rates (bytes over FCT), so that one flow's tail does not
// stand for all; the CLI reports the aggregate (to the last finish) beside it.
double mean_flow_gbps(const RunResult& r) {
    double sum = 0;
    for (const auto& f : r.flows) sum += double(f.spec.bytes) * 8 / (f.fct_us() * 1e3);
    return sum / double(r.flows.size());
}

// Loss is not congestion: at 1 % loss on every link (about 4 % of the packets of a path across the
// core), a permutation of long flows keeps most of its goodput, every byte verified.
TEST(FabricMroce, PermutationKeepsItsGoodputAtOnePercentLossOnEveryLink) {
    FabricConfig fc;
    fc.hosts = 16;
    std::vector<FlowSpec> flows;
    for (uint32_t h = 0; h < 16; ++h) flows.push_back({h, (h + 9) % 16, 8000000, 50});
    RunOptions ro;
    ro.deadline_us = 100000;
    const RunResult clean = run_mroce(fc, MroceHostOptions{}, flows, ro);
    fc.loss = 0.01;
    const RunResult lossy = run_mroce(fc, MroceHostOptions{}, flows, ro);
    for (const auto& f : lossy.flows)
        ASSERT_TRUE(f.done && f.verified) << f.spec.src << "->" << f.spec.dst << ": " << f.error;
    EXPECT_GT(lossy.fabric.link_losses, 1000u);
    const double kept = mean_flow_gbps(lossy) / mean_flow_gbps(clean);
    std::printf(
        "1%% loss: %.1f of %.1f Gb/s per flow kept (%.3f); max FCT %.0f vs %.0f us; %lu frames lost, %lu resent\n",
        mean_flow_gbps(lossy), mean_flow_gbps(clean), kept, lossy.max_fct_us(), clean.max_fct_us(),
        (unsigned long)lossy.fabric.link_losses, (unsigned long)lossy.totals.retransmissions);
    EXPECT_GT(kept, 0.8);
}

// A 4:1 incast: the receiver's hints share its link. Every flow finishes near the ideal (all
// bytes over one link) and, once the shares are in force, the senders get nearly equal rates.
TEST(FabricMroce, FourToOneIncastSharesTheLink) {
    FabricConfig fc;
    fc.hosts = 16;
    std::vector<FlowSpec> flows;
    for (uint32_t s : {1u, 5u, 9u, 13u}) flows.push_back({s, 0, 2000000, 50});
    RunOptions ro;
    ro.deadline_us = 100000;
    ro.window_us = 50;
    const RunResult r = run_mroce(fc, MroceHostOptions{}, flows, ro);
    for (const auto& f : r.flows) ASSERT_TRUE(f.done && f.verified) << f.spec.src << ": " << f.error;
    const double ideal = 4 * 2000000 * 8 / (fc.rate_gbps * 1e3);
    double first_finish = 1e300;
    for (const auto& f : r.flows) first_finish = std::min(first_finish, f.finish_us);
    EXPECT_LT(r.max_fct_us(), ideal * 1.05);
    // Full windows from 100 us after the start until the first flow ends.
    const double start = r.flows[0].spec.start_us;
    int windows = 0, fair = 0;
    for (size_t w = size_t((start + 100) / ro.window_us) + 1; (double(w) + 1) * ro.window_us <= first_finish; ++w) {
        double sum = 0, sq = 0;
        for (const auto& b : r.bins) {
            const double x = w < b.size() ? double(b[w]) : 0;
            sum += x, sq += x * x;
        }
        const double jain = sum * sum / (4 * sq);
        ++windows;
        fair += jain >= 0.95;
        EXPECT_GE(jain, 0.8) << "window " << w;
    }
    ASSERT_GT(windows, 5);
    EXPECT_GE(fair, windows * 3 / 4) << fair << " of " << windows << " windows with Jain >= 0.95";
}

// A plane goes dark under a permutation at 60 % of the receivers' line rate and comes back: no flow
// fails, the other planes carry the load within a few hundred microseconds, and once every path on
// it has timed out and been moved ([R-PATH-4], [R-PATH-5]) no host hands the dead plane another byte.
TEST(FabricMroce, PlaneFailureMovesTheTrafficAwayAndBackWhenThePlaneReturns) {
    FabricConfig fc;
    fc.topology = Topology::LeafSpine;
    fc.hosts = 16;
    fc.hosts_per_leaf = 4;
    fc.planes = 4;
    fc.plane_window_us = 20;
    const double fail = 300, back = 2300;
    fc.failures = {Failure{fail, back, 1, -1}};
    MroceHostOptions ho;
    ho.capacity_fraction = 0.6;
    const auto flows = permutation_flows(fc.hosts, 120000000, 50, 5);
    RunOptions ro;
    ro.deadline_us = 50000;
    const RunResult r = run_mroce(fc, ho, flows, ro);
    for (const auto& f : r.flows)
        ASSERT_TRUE(f.done && f.verified) << f.spec.src << "->" << f.spec.dst << ": " << f.error;
    const PlaneFailureFigures f = plane_failure_figures(r, 1, fail, back);
    ASSERT_GT(f.end_us, back + 1000) << "the flows must outlast the failure";
    std::printf(
        "before %.0f Gb/s, during %.0f, moved after %.0f us, dead plane's last data %.0f us after the failure "
        "(then %.2f Gb/s of home probes); plane before %.0f Gb/s, after %.0f, returned %.0f us after it came back\n",
        f.before_gbps, f.during_gbps, f.moved_us, f.dead_tx_us, f.dead_probe_gbps, f.plane_before_gbps,
        f.plane_after_gbps, f.returned_us);
    EXPECT_GE(f.moved_us, 0);
    EXPECT_LT(f.moved_us, 500);
    EXPECT_GT(f.during_gbps, 0.95 * f.before_gbps);
    // RTO, and at most REPATH_MAX re-paths with backoff (RTO_MIN 100 us doubled), then a working route.
    EXPECT_GT(f.dead_tx_us, 0);
    EXPECT_LT(f.dead_tx_us, 1500);
    // Meanwhile the dead plane only sees home probes [R-PATH-10]: a frame per re-pathed path every
    // HOME_PROBE_MAX at most.
    const size_t quiet_from = size_t((fail + 1500) / f.window_us), quiet_to = size_t(back / f.window_us);
    for (size_t w = quiet_from; w < quiet_to && w < f.tx_gbps[1].size(); ++w)
        EXPECT_LT(f.tx_gbps[1][w], 0.01 * f.plane_before_gbps) << w;
    EXPECT_GT(f.dead_probe_gbps, 0);
    // The plane back: a home probe answered on it within HOME_PROBE_MAX (400 us) plus a round trip brings
    // each re-pathed path home, and the plane carries its share again.
    EXPECT_GE(f.returned_us, 0);
    EXPECT_LT(f.returned_us, 700);
    EXPECT_GT(f.plane_after_gbps, 0.6 * f.plane_before_gbps);
    // The hosts' counters tell the same [R-PATH-10]: paths left the dead plane on RTOs and went home,
    // one return per path; the re-paths without one are second re-paths of paths whose fresh route
    // hashed to the dead plane too (a quarter of them). Seed 5: 175 re-paths, 140 returns.
    std::printf("re-paths %llu, home returns %llu\n", (unsigned long long)r.totals.repaths,
                (unsigned long long)r.totals.home_returns);
    EXPECT_GT(r.totals.home_returns, r.totals.repaths / 2);
    EXPECT_LE(r.totals.home_returns, r.totals.repaths);
}

// The model as the engine's cross-check in the fabric: every host runs both on the same events and
// compares everything observable after every step (lockstep/differential.hpp). A 6:1 incast into a
// small buffer with 1 % loss on every link, so that queues mark CE, tail drops and losses happen and
// paths reorder against each other: the conditions the generated differential campaigns imitate.
struct LockstepSetup {
    FabricConfig fabric;
    MroceHostOptions host;
    std::vector<FlowSpec> flows;
    RunOptions run;
};

LockstepSetup small_lossy_incast() {
    LockstepSetup s;
    s.fabric.hosts = 16;
    s.fabric.loss = 0.01;
    s.fabric.queue_bytes = 96 * 1024;
    s.fabric.ecn = {24 * 1024, 24 * 1024, 1.0};
    s.fabric.seed = 3;
    s.host.offer.paths = 4;
    for (uint32_t src : {1u, 4u, 6u, 9u, 12u, 15u}) s.flows.push_back({src, 0, 640 * 1024, 20});
    s.flows.push_back({0, 7, 256 * 1024, 20});  // and one the other way
    s.run.deadline_us = 200000;
    return s;
}

TEST(FabricLockstep, ModelAndEngineAgreeOnEveryStepOfALossyIncast) {
    const LockstepSetup s = small_lossy_incast();
    const RunResult r = run_lockstep(s.fabric, s.host, s.flows, s.run);
    EXPECT_EQ(r.divergence, "") << "replay: this test (seed " << s.fabric.seed << ")";
    for (const auto& f : r.flows)
        EXPECT_TRUE(f.done && f.verified) << f.spec.src << "->" << f.spec.dst << ": " << f.error;
    // Not a vacuous agreement: the run had the faults it is meant to cover.
    EXPECT_GT(r.lockstep_steps, 2000u);
    EXPECT_GT(r.fabric.link_losses, 10u);
    EXPECT_GT(r.fabric.queue_drops + r.fabric.ce_marks, 10u);
    std::printf("lockstep: %lu steps, %lu losses, %lu drops, %lu CE marks, max FCT %.0f us\n",
                (unsigned long)r.lockstep_steps, (unsigned long)r.fabric.link_losses,
                (unsigned long)r.fabric.queue_drops, (unsigned long)r.fabric.ce_marks, r.max_fct_us());
}

// The model alone (`--transports mroce-model`) runs the same run as the lockstep pair, whose
// frames are the model's: only the memory keys differ (the model's own instead of the engine's,
// A-32), so the timing, the fabric's counters and every completion are the same.
TEST(FabricLockstep, TheModelAloneRunsTheSameRunAsTheLockstepPair) {
    const LockstepSetup s = small_lossy_incast();
    const RunResult both = run_lockstep(s.fabric, s.host, s.flows, s.run);
    const RunResult model = run_endpoints(
        s.fabric, s.host, s.flows, s.run,
        [](const model::Config& c, uint32_t) { return std::make_unique<harness::ModelEndpoint>(c); }, "mroce-model");
    ASSERT_EQ(model.flows.size(), both.flows.size());
    for (size_t f = 0; f < model.flows.size(); ++f) {
        EXPECT_TRUE(model.flows[f].done && model.flows[f].verified) << f;
        EXPECT_EQ(model.flows[f].finish_us, both.flows[f].finish_us) << f;
    }
    EXPECT_EQ(model.fabric.frames_sent_by_hosts, both.fabric.frames_sent_by_hosts);
    EXPECT_EQ(model.fabric.queue_drops, both.fabric.queue_drops);
    EXPECT_EQ(model.fabric.ce_marks, both.fabric.ce_marks);
}

// Canary: the harness can fail. An engine that loses its first retransmission diverges from the model.
TEST(FabricLockstep, CanaryAPlantedEngineBugIsCaught) {
    const LockstepSetup s = small_lossy_incast();
    lockstep::DiffOptions o;
    o.canary = lockstep::Canary::DropFirstRetx;
    lockstep::LockstepSession session(o);
    const RunResult r = run_endpoints(
        s.fabric, s.host, s.flows, s.run,
        [&session](const model::Config& c, uint32_t) { return session.endpoint(c, 'H'); }, "canary");
    ASSERT_TRUE(session.divergence().has_value());
    EXPECT_NE(session.divergence()->what.find("frame"), std::string::npos) << session.divergence()->text();
    (void)r;
}

}  // namespace
}  // namespace mroce::fabric
