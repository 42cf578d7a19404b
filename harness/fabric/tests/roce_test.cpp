// The RoCEv2 baseline over the fabric: its frames, a clean permutation, go-back-N under loss, PFC and
// DCQCN.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "fabric/frame_head_plain.hpp"
#include "fabric/roce_host.hpp"
#include "fabric/runs.hpp"
#include "impair/ecn.hpp"

using namespace mroce::fabric;

namespace {

std::vector<FlowSpec> permutation(uint32_t hosts, uint64_t bytes) {
    std::vector<FlowSpec> flows;
    for (uint32_t h = 0; h < hosts; ++h) flows.push_back({h, (h + 5) % hosts, bytes, 50});
    return flows;
}

std::vector<FlowSpec> incast(uint32_t senders, uint32_t dst, uint64_t bytes) {
    std::vector<FlowSpec> flows;
    for (uint32_t i = 0; i < senders; ++i) flows.push_back({dst + 1 + i * 2, dst, bytes, 10});
    return flows;
}

void expect_all_verified(const RunResult& r) {
    for (const auto& f : r.flows)
        EXPECT_TRUE(f.done && f.verified) << f.spec.src << "->" << f.spec.dst << ": " << f.error;
}

void print(const char* what, const RunResult& r) {
    printf(
        "%s: sim %.1f us wall %.2f s events %lu max fct %.1f us goodput %.1f Gb/s data %lu retx %lu timeouts %lu "
        "ce %lu cuts %lu drops %lu losses %lu pauses %lu maxq %lu\n",
        what, r.sim_end_us, r.wall_s, (unsigned long)r.events, r.max_fct_us(), r.goodput_gbps(),
        (unsigned long)r.totals.data_packets, (unsigned long)r.totals.retransmissions, (unsigned long)r.totals.timeouts,
        (unsigned long)r.totals.ce_seen, (unsigned long)r.totals.rate_cuts, (unsigned long)r.fabric.queue_drops,
        (unsigned long)r.fabric.link_losses, (unsigned long)r.fabric.pause_frames,
        (unsigned long)r.fabric.max_queue_bytes);
}

}  // namespace

TEST(FabricRoce, FrameFormat) {
    std::vector<uint8_t> payload(1001);
    for (size_t i = 0; i < payload.size(); ++i) payload[i] = uint8_t(i * 7);
    roce::Packet p;
    p.src_host = 3;
    p.dst_host = 0x010203;
    p.sport = 0xC123;
    p.ecn = 2;
    p.opcode = roce::kWriteOnlyImm;
    p.ack_req = true;
    p.dest_qp = 0x123456;
    p.psn = 0xFFFFFE;
    p.va = 0x1122334455667788ull;
    p.rkey = 0xABCD;
    p.dma_len = 1001;
    p.imm = 0xCAFEBABE;
    p.payload = payload.data();
    p.payload_len = uint32_t(payload.size());
    std::vector<uint8_t> f(2048);
    const uint32_t len = roce::build(p, f.data());
    // Ethernet + IPv4 + UDP + BTH + RETH + ImmDt + payload padded to 4 + ICRC.
    EXPECT_EQ(len, 14u + 20 + 8 + 12 + 16 + 4 + 1004 + 4);
    EXPECT_TRUE(mroce::impair::ipv4_checksum_ok(std::span<const uint8_t>(f.data() + 14, 20)));
    EXPECT_EQ(f[15], 26 << 2 | 2);  // DSCP 26, ECT(0)
    EXPECT_EQ(f[23], 17);
    EXPECT_EQ(f[36] << 8 | f[37], roce::kUdpPort);
    EXPECT_EQ(uint32_t(f[30]) << 24 | uint32_t(f[31]) << 16 | uint32_t(f[32]) << 8 | f[33], host_ip(0x010203));
    roce::Packet q;
    ASSERT_EQ(roce::parse(f.data(), len, &q), roce::ParseError::None);
    EXPECT_EQ(q.opcode, roce::kWriteOnlyImm);
    EXPECT_EQ(q.psn, 0xFFFFFEu);
    EXPECT_EQ(q.dest_qp, 0x123456u);
    EXPECT_EQ(q.va, p.va);
    EXPECT_EQ(q.imm, p.imm);
    EXPECT_TRUE(q.ack_req);
    EXPECT_EQ(q.src_host, 3u);
    ASSERT_EQ(q.payload_len, 1001u);
    EXPECT_EQ(std::memcmp(q.payload, payload.data(), 1001), 0);
    // A switch's CE mark changes TOS and the IP checksum, which the ICRC leaves out.
    ASSERT_TRUE(mark_ce_head(f.data(), 34));
    ASSERT_EQ(roce::parse(f.data(), len, &q), roce::ParseError::None);
    EXPECT_EQ(q.ecn, 3);
    // A payload bit flip does not pass.
    f[200] ^= 0x10;
    EXPECT_EQ(roce::parse(f.data(), len, &q), roce::ParseError::Icrc);
    // ACK, NAK and CNP: small, Not-ECT.
    roce::Packet a;
    a.opcode = roce::kAck;
    a.syndrome = roce::kSyndromeNakSeq;
    a.psn = 77;
    EXPECT_EQ(roce::build(a, f.data()), 62u);
    ASSERT_EQ(roce::parse(f.data(), 62, &q), roce::ParseError::None);
    EXPECT_EQ(q.syndrome, roce::kSyndromeNakSeq);
    EXPECT_EQ(q.psn, 77u);
    EXPECT_FALSE(mark_ce_head(f.data(), 34));
    a.opcode = roce::kCnp;
    EXPECT_EQ(roce::build(a, f.data()), 74u);
}

TEST(FabricRoce, PermutationOf16HostsCompletesVerified) {
    const FabricConfig fc = dcqcn_marking(FabricConfig{});
    RunOptions ro;
    ro.deadline_us = 20000;
    const RunResult r = run_roce(fc, RoceOptions{}, permutation(16, 256 * 1024), ro);
    print("permutation", r);
    expect_all_verified(r);
    EXPECT_EQ(r.fabric.queue_drops, 0u);
    EXPECT_EQ(r.totals.retransmissions, 0u);
    // 16 flows of 256 KiB at 100 Gb/s: each needs >= 21 us, so at most 1600 Gb/s in all; ECMP
    // collisions (one path per QP) cost up to half, and DCQCN some more. Anything below 300 is broken.
    EXPECT_GT(r.goodput_gbps(), 300.0);
    EXPECT_LT(r.goodput_gbps(), 1600.0);
    for (const auto& f : r.flows) EXPECT_GT(f.fct_us(), 256 * 1024 * 8 / 100e3);
    // Bins hold every byte of each flow (headers included) and no more than twice that.
    for (size_t f = 0; f < r.flows.size(); ++f) {
        uint64_t sum = 0;
        for (uint64_t b : r.bins[f]) sum += b;
        EXPECT_GE(sum, 256u * 1024);
        EXPECT_LT(sum, 2u * 256 * 1024);
    }
}

TEST(FabricRoce, GoBackNCollapsesUnderOnePercentLoss) {
    FabricConfig fc = dcqcn_marking(FabricConfig{});
    RunOptions ro;
    ro.deadline_us = 500000;
    const auto flows = permutation(16, 256 * 1024);
    const RunResult clean = run_roce(fc, RoceOptions{}, flows, ro);
    fc.loss = 0.01;
    const RunResult lossy = run_roce(fc, RoceOptions{}, flows, ro);
    print("loss 0", clean);
    print("loss 1%", lossy);
    expect_all_verified(clean);
    expect_all_verified(lossy);
    EXPECT_GT(lossy.fabric.link_losses, 0u);
    EXPECT_GT(lossy.totals.retransmissions, 0u);
    const double ratio = lossy.goodput_gbps() / clean.goodput_gbps();
    printf("goodput ratio (1%% loss / none): %.3f\n", ratio);
    EXPECT_LT(ratio, 0.5);

    // One big flow across the core (6 links each way, ~6% of its packets lost): each loss resends a
    // window, and a lost NAK or a lost resend of the NAKed PSN leaves only the 1 ms timer, after which
    // the whole tail is resent (the rate, not a window, bounds what is in flight). Clean, it runs near
    // line rate.
    const std::vector<FlowSpec> one{{0, 15, 8u << 20, 10}};
    fc.loss = 0;
    const RunResult clean1 = run_roce(fc, RoceOptions{}, one, ro);
    fc.loss = 0.01;
    const RunResult lossy1 = run_roce(fc, RoceOptions{}, one, ro);
    print("one flow, loss 0", clean1);
    print("one flow, loss 1%", lossy1);
    expect_all_verified(clean1);
    expect_all_verified(lossy1);
    EXPECT_GT(clean1.goodput_gbps(), 90.0);  // 4096 of 4156 wire bytes at 100 Gb/s: 98.5 at most
    const double ratio1 = lossy1.goodput_gbps() / clean1.goodput_gbps();
    printf("one flow goodput ratio (1%% loss / none): %.3f\n", ratio1);
    EXPECT_LT(ratio1, 0.5);
}

TEST(FabricRoce, PfcIncastNeverDrops) {
    FabricConfig fc = dcqcn_marking(FabricConfig{});
    // Per-port queues of 256 KB; an ingress pauses its sender above 32 KB, leaving room for the
    // frames in flight during the pause (a 1 us link at 100 Gb/s: ~25 KB and two frames) from each
    // of the (at most three) other ingress ports of a 4-port switch.
    fc.queue_bytes = 256 * 1024;
    fc.pfc_xoff_bytes = 32 * 1024;
    fc.pfc_xon_bytes = 16 * 1024;
    fc.pfc = true;
    RunOptions ro;
    ro.deadline_us = 100000;
    const auto flows = incast(8, 0, 512 * 1024);
    const RunResult r = run_roce(fc, RoceOptions{}, flows, ro);
    print("pfc incast", r);
    expect_all_verified(r);
    EXPECT_EQ(r.fabric.queue_drops, 0u);
    EXPECT_GT(r.fabric.pause_frames, 0u);
    EXPECT_EQ(r.totals.retransmissions, 0u);
    EXPECT_EQ(r.totals.timeouts, 0u);

    // The canary: the same incast without PFC overflows those queues.
    fc.pfc = false;
    const RunResult lossy = run_roce(fc, RoceOptions{}, flows, ro);
    print("no-pfc incast", lossy);
    expect_all_verified(lossy);
    EXPECT_GT(lossy.fabric.queue_drops, 0u);
    EXPECT_EQ(lossy.fabric.pause_frames, 0u);
    EXPECT_GT(lossy.totals.retransmissions, 0u);
}

TEST(FabricRoce, DcqcnCutsRatesInIncast) {
    const FabricConfig fc = dcqcn_marking(FabricConfig{});
    RunOptions ro;
    ro.deadline_us = 100000;
    const auto flows = incast(4, 0, 1024 * 1024);
    const RunResult r = run_roce(fc, RoceOptions{}, flows, ro);
    print("dcqcn incast", r);
    expect_all_verified(r);
    EXPECT_GT(r.fabric.ce_marks, 0u);
    EXPECT_GT(r.totals.ce_seen, 0u);
    EXPECT_GT(r.totals.rate_cuts, 0u);

    // The canary: without DCQCN the same marks draw no CNPs and no cuts.
    RoceOptions off;
    off.dcqcn = false;
    const RunResult u = run_roce(fc, off, flows, ro);
    print("no-dcqcn incast", u);
    expect_all_verified(u);
    EXPECT_GT(u.totals.ce_seen, 0u);
    EXPECT_EQ(u.totals.rate_cuts, 0u);
}
