// Requirement scenarios, each written once (a harness::Scenario, a frame filter compiled into its
// fate schedule, and its checks) and run three ways (harness/lockstep/lockstep/scenarios.hpp):
//   Scenarios/Requirement.Model/<name>     the executable model on the harness network
//   Scenarios/Requirement.Engine/<name>    the engine on the same network
//   Scenarios/Requirement.Lockstep/<name>  both in lockstep: every frame, completion, event,
//                                          deadline, path view and memory byte equal after each step
// Every way is judged by the harness checks of the scenario's mode and by the scenario's own checks.
// A failure writes a replayable trace (a divergence is shrunk first) and prints the command that
// replays it. Named by the requirements each scenario exercises.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "codec/ref_codec.hpp"
#include "lockstep/scenarios.hpp"

#ifndef MROCE_FAILED_TRACE_DIR
#define MROCE_FAILED_TRACE_DIR "."
#endif
#ifndef MROCE_CLI
#define MROCE_CLI "mroce"
#endif

namespace mroce::lockstep {
namespace {

using harness::KeyChoice;
using harness::Op;
using harness::OpKind;
using harness::PacketFate;
using harness::Side;
using model::Status;
constexpr Side A = Side::A;
constexpr Side B = Side::B;

constexpr uint64_t kDst = 0x80000;  // the second half of each side's DATA region

// A (ISN near the wrap) and B, 4 paths and 4 streams each, no faults.
harness::Scenario base() { return harness::base_scenario(0xFFFFFFF0u, 0x7FFFFFF8u); }
RequirementScenario named(std::string name) {
  RequirementScenario r;
  r.name = std::move(name);
  r.scenario = base();
  return r;
}

Op op(Side side, OpKind kind, uint16_t stream, uint32_t length, uint64_t local, uint64_t remote = 0,
      model::Time at = 0) {
  Op o;
  o.side = side;
  o.kind = kind;
  o.stream = stream;
  o.length = length;
  o.local_off = local;
  o.remote_off = remote;
  o.at = at;
  return o;
}
Op write(uint32_t length, uint16_t stream = 0, uint64_t off = 0, model::Time at = 0) {
  return op(A, OpKind::Write, stream, length, off, kDst + off, at);
}

// The fates of frames by index (frame k entering the network), for loss patterns fixed in advance.
std::vector<PacketFate> every_nth_dropped(size_t n, size_t frames) {
  std::vector<PacketFate> f(frames);
  for (size_t k = n - 1; k < frames; k += n) f[k] = drop();
  return f;
}

bool is_data(const ref::Packet& p) { return ref::is_data_opcode(p.opcode); }

std::vector<ref::Packet> sent(const Observed& o, Side s, bool (*pred)(const ref::Packet&)) {
  std::vector<ref::Packet> v;
  for (const auto& f : o.sent[size_t(s)])
    if (pred(f.packet)) v.push_back(f.packet);
  return v;
}
std::vector<ref::Packet> data_of(const Observed& o, Side s) { return sent(o, s, is_data); }
std::vector<ref::Packet> acks_of(const Observed& o, Side s) {
  return sent(o, s, [](const ref::Packet& p) { return p.opcode == ref::Opcode::Ack; });
}
int count(const Observed& o, Side s, ref::Opcode code) {
  int n = 0;
  for (const auto& f : o.sent[size_t(s)]) n += f.packet.opcode == code;
  return n;
}

// The completions of one side must be exactly these statuses, in order.
void expect_statuses(const Observed& o, Side s, std::vector<Status> want) {
  const auto c = o.completions(s);
  ASSERT_EQ(c.size(), want.size()) << "completions of side " << harness::side_char(s);
  for (size_t i = 0; i < c.size(); ++i)
    EXPECT_EQ(model::status_name(c[i].status), model::status_name(want[i])) << "completion " << i;
}

// ---- the scenarios ----

RequirementScenario R_CONN_1_HandshakeNegotiatesMinimum_R_HDR_4() {
  RequirementScenario r = named("R_CONN_1_HandshakeNegotiatesMinimum_R_HDR_4");
  r.scenario.config[0].path_count = 8;
  r.scenario.config[0].stream_count = 2;
  r.scenario.config[1].path_count = 3;
  r.scenario.config[1].max_payload = 1024;
  r.scenario.workload.ops = {write(5000, 1)};
  r.check = [](const Observed& o) {
    ASSERT_NE(o.conn(A), nullptr);
    ASSERT_NE(o.conn(B), nullptr);
    EXPECT_EQ(o.conn(A)->paths, 3);  // [R-CONN-3] the minimum of both
    EXPECT_EQ(o.conn(B)->paths, 3);
    const auto& first = o.sent[0].front().packet;
    EXPECT_EQ(first.opcode, ref::Opcode::Connect);
    EXPECT_EQ(first.dcid, 0u);  // [R-HDR-4]
    const auto accept = sent(o, B, [](const ref::Packet& p) { return p.opcode == ref::Opcode::Accept; });
    ASSERT_EQ(accept.size(), 1u);
    EXPECT_EQ(accept[0].path_count, 3);
    EXPECT_EQ(accept[0].stream_count, 2);
    EXPECT_EQ(accept[0].max_payload, 1024);
    for (const auto& p : data_of(o, A)) {
      EXPECT_LT(p.path_id, 3);
      EXPECT_LE(p.payload_length, 1024);
    }
    expect_statuses(o, A, {Status::Success});
  };
  return r;
}

RequirementScenario R_PLC_2_WriteLandsByteExactOverAllPaths_R_PATH_8_R_CMP_3() {
  RequirementScenario r = named("R_PLC_2_WriteLandsByteExactOverAllPaths_R_PATH_8_R_CMP_3");
  r.scenario.workload.ops = {write(40000)};  // 10 segments of 4096; memory: the harness checks
  r.check = [](const Observed& o) {
    expect_statuses(o, A, {Status::Success});
    std::set<uint16_t> paths;
    for (const auto& p : data_of(o, A)) paths.insert(p.path_id);
    EXPECT_EQ(paths.size(), 4u);            // [R-PATH-8] sprayed over every path
    EXPECT_TRUE(o.completions(B).empty());  // [R-CMP-3] no completion for a plain Write
  };
  return r;
}

RequirementScenario R_REL_5_R_REL_4_LostPacketRetransmittedSamePathSamePsn() {
  RequirementScenario r = named("R_REL_5_R_REL_4_LostPacketRetransmittedSamePathSamePsn");
  r.scenario.workload.ops = {write(5 * 4096)};
  r.filter = [] {
    return [dropped = false](const FrameInfo& f) mutable {
      if (f.from == A && f.data() && f.packet.msg_offset == 4096 && !dropped) return dropped = true, drop();
      return deliver();
    };
  };
  r.check = [](const Observed& o) {
    expect_statuses(o, A, {Status::Success});
    std::optional<ref::Packet> lost;
    int retx = 0;
    for (const auto& p : data_of(o, A)) {
      if (!lost && p.msg_offset == 4096) lost = p;
      if (!(p.flags & ref::kFlagRetx)) continue;
      ++retx;
      ASSERT_TRUE(lost);
      EXPECT_EQ(p.path_id, lost->path_id);
      EXPECT_EQ(p.psn, lost->psn);
      EXPECT_EQ(p.msg_offset, lost->msg_offset);
    }
    EXPECT_EQ(retx, 1);  // precise: exactly the missing packet
  };
  return r;
}

RequirementScenario R_MATCH_1_R_ARCH_1_R_PLC_1_SendsMatchReceivesByRsnOutOfOrder_R_CMP_1_R_CMP_2() {
  RequirementScenario r = named("R_MATCH_1_R_ARCH_1_R_PLC_1_SendsMatchReceivesByRsnOutOfOrder_R_CMP_1_R_CMP_2");
  // wr 1, 2: B's receives on stream 1; wr 3, 4: A's Sends. The first Send's only packet is lost
  // once, so the second arrives first.
  r.scenario.workload.ops = {op(B, OpKind::Recv, 1, 1000, kDst), op(B, OpKind::Recv, 1, 1000, kDst + 1000),
                             op(A, OpKind::Send, 1, 100, 0), op(A, OpKind::Send, 1, 200, 100)};
  r.filter = [] {
    return [dropped = false](const FrameInfo& f) mutable {
      if (f.from == A && f.packet.opcode == ref::Opcode::Send && f.packet.rsn == 0 && !dropped)
        return dropped = true, drop();
      return deliver();
    };
  };
  r.check = [](const Observed& o) {
    const auto b = o.completions(B);
    ASSERT_EQ(b.size(), 2u);
    EXPECT_EQ(b[0].wr_id, 1u);  // [R-CMP-2] RSN order
    EXPECT_EQ(b[0].byte_len, 100u);
    EXPECT_EQ(b[1].wr_id, 2u);
    EXPECT_EQ(b[1].byte_len, 200u);
    const auto a = o.completions(A);
    ASSERT_EQ(a.size(), 2u);
    EXPECT_EQ(a[0].wr_id, 3u);  // [R-CMP-1] posting order
    EXPECT_EQ(a[1].wr_id, 4u);
  };
  return r;
}

RequirementScenario R_PLC_4_ReadReturnsRemoteBytes() {
  RequirementScenario r = named("R_PLC_4_ReadReturnsRemoteBytes");
  r.scenario.workload.ops = {op(A, OpKind::Read, 2, 9000, 0, kDst)};
  r.check = [](const Observed& o) {
    expect_statuses(o, A, {Status::Success});
    EXPECT_EQ(o.completions(A)[0].op, model::WorkOp::Read);
  };
  return r;
}

RequirementScenario R_MEM_3_WrongKeyRefusedAndVoided_R_SEC_6_R_REL_9() {
  RequirementScenario r = named("R_MEM_3_WrongKeyRefusedAndVoided_R_SEC_6_R_REL_9");
  Op bad = write(5000);
  bad.key = KeyChoice::Invalid;
  // A later Write on the same stream still works: the connection goes on.
  r.scenario.workload.ops = {bad, op(A, OpKind::Write, 0, 100, 0, kDst + 8192)};
  r.check = [](const Observed& o) {
    expect_statuses(o, A, {Status::RemoteAccess, Status::Success});  // table 12.3
    int voids = 0;
    for (const auto& p : data_of(o, A)) voids += (p.flags & ref::kFlagVoid) != 0;
    EXPECT_EQ(voids, 2);  // [R-REL-9] both refused PSNs voided
    // The receiver's windows are not stuck: every path's CPSN caught up with the sender.
    for (uint16_t p = 0; p < 4; ++p) {
      const auto v = o.path(A, p);
      ASSERT_TRUE(v);
      EXPECT_EQ(v->snxt, v->suna) << "path " << p;
    }
  };
  return r;
}

RequirementScenario R_MATCH_2_SendLongerThanReceive() {
  RequirementScenario r = named("R_MATCH_2_SendLongerThanReceive");
  r.scenario.workload.ops = {op(B, OpKind::Recv, 0, 10, kDst), op(A, OpKind::Send, 0, 11, 0)};
  r.check = [](const Observed& o) {
    expect_statuses(o, A, {Status::RemoteLength});
    expect_statuses(o, B, {Status::LocalLength});
  };
  return r;
}

RequirementScenario R_PLC_7_ReceiverNotReadyThenReady() {
  RequirementScenario r = named("R_PLC_7_ReceiverNotReadyThenReady");
  r.scenario.workload.ops = {op(A, OpKind::Send, 3, 64, 0), op(B, OpKind::Recv, 3, 64, kDst, 0, 160)};
  r.check = [](const Observed& o) {
    int rnr = 0;
    for (const auto& p : o.sent[1]) rnr += p.packet.opcode == ref::Opcode::Nak && p.packet.nak_code == 1;
    EXPECT_GE(rnr, 1);
    expect_statuses(o, A, {Status::Success});
    expect_statuses(o, B, {Status::Success});
  };
  return r;
}

RequirementScenario R_PLC_9_RnrRetryExceeded_R_REL_10() {
  RequirementScenario r = named("R_PLC_9_RnrRetryExceeded_R_REL_10");
  r.scenario.workload.ops = {op(A, OpKind::Send, 0, 10, 0)};
  r.check = [](const Observed& o) {
    expect_statuses(o, A, {Status::RnrRetryExceeded});
    EXPECT_EQ(count(o, B, ref::Opcode::Nak), 7);  // one RNR NAK per try, RNR_RETRY_MAX (7) of them
  };
  return r;
}

// [R-PLC-9], [R-SEC-11]: a Send of three segments on three paths, no receive. The first
// segment's 7th RNR fails the request and voids all three; the RNR NAKs of the other two, already on
// their way, are waited out like any RNR before their VOIDs go out (not sent again at once).
RequirementScenario R_PLC_9_RnrForAnAlreadyVoidedPsnIsWaitedOut_R_SEC_11() {
  RequirementScenario r = named("R_PLC_9_RnrForAnAlreadyVoidedPsnIsWaitedOut_R_SEC_11");
  r.scenario.config[0].max_payload = 1024;
  r.scenario.workload.ops = {op(A, OpKind::Send, 0, 3000, 0)};
  r.check = [](const Observed& o) {
    expect_statuses(o, A, {Status::RnrRetryExceeded});
    int at_once = 0, waited = 0;
    for (const auto& f : o.sent[0]) {
      if (!is_data(f.packet) || !(f.packet.flags & ref::kFlagVoid)) continue;
      model::Time nak_at = 0;  // the last NAK of this (path, PSN) before its VOID
      for (const auto& n : o.sent[1])
        if (n.packet.opcode == ref::Opcode::Nak && n.packet.path_id == f.packet.path_id &&
            n.packet.nak_psn == f.packet.psn && n.at <= f.at)
          nak_at = n.at;
      (f.at - nak_at < 100 ? at_once : waited) += 1;
    }
    EXPECT_EQ(at_once, 1) << "only the PSN whose RNR failed the request is voided at once";
    EXPECT_EQ(waited, 2) << "the others wait RNR_DEFAULT (100 µs) after their RNR";
  };
  return r;
}

// [R-PLC-9], [R-HDR-24]: an RNR NAK's Detail (10 µs units) sets the sender's wait.
RequirementScenario R_PLC_9_RnrWaitFollowsTheNakDetail_R_HDR_24() {
  RequirementScenario r = named("R_PLC_9_RnrWaitFollowsTheNakDetail_R_HDR_24");
  r.scenario.config[1].rnr_detail = 7;  // 70 µs
  r.scenario.workload.ops = {op(A, OpKind::Send, 0, 64, 0), op(B, OpKind::Recv, 0, 64, kDst, 0, 300)};
  r.check = [](const Observed& o) {
    std::vector<model::Time> at;
    for (const auto& f : o.sent[0])
      if (is_data(f.packet)) at.push_back(f.at);
    ASSERT_GE(at.size(), 2u);
    EXPECT_GE(at[1] - at[0], 70u);   // NAK after one RTT, then the 70 µs wait
    EXPECT_LT(at[1] - at[0], 100u);  // not the default wait, not 700 µs
    expect_statuses(o, A, {Status::Success});
  };
  return r;
}

RequirementScenario R_CONN_8_DeadPeerFailsEverything_R_CONN_6() {
  RequirementScenario r = named("R_CONN_8_DeadPeerFailsEverything_R_CONN_6");
  r.mode = harness::CheckMode::DeadNetwork;
  // Every frame after the (protected) handshake is lost, for good.
  r.scenario.net.faults_until = harness::kNever;
  r.scenario.schedule.fates.assign(2000, drop());
  r.scenario.workload.ops = {op(B, OpKind::Recv, 1, 64, kDst), write(5000), op(A, OpKind::Send, 1, 10, 0)};
  r.check = [](const Observed& o) {
    expect_statuses(o, A, {Status::ConnectionFailed, Status::ConnectionFailed});
    expect_statuses(o, B, {Status::Flushed});  // the waiting receiver finds out too [R-CONN-6]
    ASSERT_TRUE(o.conn(A) && o.conn(B));
    EXPECT_EQ(o.conn(A)->state, model::ConnState::Failed);
    EXPECT_EQ(o.conn(B)->state, model::ConnState::Failed);
  };
  return r;
}

RequirementScenario R_PATH_4_DeadRouteIsRepathed() {
  RequirementScenario r = named("R_PATH_4_DeadRouteIsRepathed");
  r.scenario.workload.ops = {write(64 * 4096)};
  r.filter = [] {
    return [dead = std::optional<uint16_t>()](const FrameInfo& f) mutable {
      if (!dead && f.data()) dead = f.route(A, 2);  // path 2's first route is dead from A
      return f.from == A && dead && f.packet.udp_sport == *dead ? drop() : deliver();
    };
  };
  r.check = [](const Observed& o) {
    expect_statuses(o, A, {Status::Success});
    uint16_t first = 0;
    for (const auto& p : data_of(o, A))
      if (p.path_id == 2) {
        first = p.udp_sport;
        break;
      }
    const auto v = o.path(A, 2);
    ASSERT_TRUE(v);
    EXPECT_NE(v->route, first);
    EXPECT_GE(v->repaths, 1u);
    EXPECT_EQ(v->state, model::PathState::Active);
  };
  return r;
}

RequirementScenario R_CC_4_CeHalvesTheWindowOncePerWindow_R_CC_2() {
  RequirementScenario r = named("R_CC_4_CeHalvesTheWindowOncePerWindow_R_CC_2");
  r.scenario.workload.ops = {write(8 * 4096)};
  r.filter = [] {
    return [marked = 0](const FrameInfo& f) mutable {
      if (f.from == A && f.data() && f.packet.path_id == 0 && marked < 3) return ++marked, mark_ce();
      return deliver();
    };
  };
  r.check = [](const Observed& o) {
    int on_path0 = 0;
    for (const auto& p : data_of(o, A)) on_path0 += p.path_id == 0;
    EXPECT_EQ(on_path0, 2);  // 8 segments over 4 paths: two on path 0, both marked
    const auto v = o.path(A, 0);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->cwnd, 8u);  // INIT_CWND 16 halved once, not twice
  };
  return r;
}

RequirementScenario R_CONN_6_KeepaliveOnIdleConnection() {
  RequirementScenario r = named("R_CONN_6_KeepaliveOnIdleConnection");
  r.scenario.limits.linger_us = 350000;  // nothing to do: 3.5 keepalive intervals
  r.check = [](const Observed& o) {
    EXPECT_GE(count(o, A, ref::Opcode::Probe), 1);
    ASSERT_NE(o.conn(A), nullptr);
    EXPECT_EQ(o.conn(A)->state, model::ConnState::Established);
  };
  return r;
}

RequirementScenario R_CONN_4_RejectWhenNotListening() {
  RequirementScenario r = named("R_CONN_4_RejectWhenNotListening");
  r.mode = harness::CheckMode::MayFail;
  r.scenario.config[1].listening = false;
  r.check = [](const Observed& o) {
    EXPECT_EQ(count(o, B, ref::Opcode::Reject), 1);
    ASSERT_NE(o.conn(A), nullptr);
    EXPECT_EQ(o.conn(A)->state, model::ConnState::Failed);
  };
  return r;
}

RequirementScenario R_CONN_4_ConnectRetriedThenFails() {
  RequirementScenario r = named("R_CONN_4_ConnectRetriedThenFails");
  r.mode = harness::CheckMode::MayFail;
  r.scenario.net.protect_handshake = false;
  r.scenario.net.faults_until = harness::kNever;
  r.scenario.schedule.fates.assign(100, drop());
  r.check = [](const Observed& o) {
    EXPECT_EQ(count(o, A, ref::Opcode::Connect), 8);
    ASSERT_NE(o.conn(A), nullptr);
    EXPECT_EQ(o.conn(A)->state, model::ConnState::Failed);
  };
  return r;
}

RequirementScenario R_ENC_9_R_ENC_10_EcnAndDscpByPacketClass_R_ENC_5_R_ENC_6() {
  RequirementScenario r = named("R_ENC_9_R_ENC_10_EcnAndDscpByPacketClass_R_ENC_5_R_ENC_6");
  r.scenario.workload.ops = {write(10000)};
  r.check = [](const Observed& o) {
    const auto data = data_of(o, A);
    EXPECT_GT(data.size(), 0u);
    for (const auto& p : data) {
      EXPECT_EQ(p.ecn, 2);            // ECT(0)
      EXPECT_EQ(p.dscp, 26);          // default data DSCP
      EXPECT_GE(p.udp_sport, 49152);  // [R-ENC-6]
      EXPECT_EQ(p.udp_dport, 4793);   // [R-ENC-5]
    }
    const auto acks = acks_of(o, B);
    EXPECT_GT(acks.size(), 0u);
    for (const auto& p : acks) {
      EXPECT_EQ(p.ecn, 0);    // Not-ECT
      EXPECT_EQ(p.dscp, 48);  // control DSCP
    }
  };
  return r;
}

RequirementScenario R_ACK_2_R_ACK_4_GapDrawsImmediateAckWithSackBits_R_HDR_20() {
  RequirementScenario r = named("R_ACK_2_R_ACK_4_GapDrawsImmediateAckWithSackBits_R_HDR_20");
  r.scenario.workload.ops = {write(12 * 4096)};  // three segments per path
  r.filter = [] {
    return [dropped = false](const FrameInfo& f) mutable {
      if (f.from == A && f.data() && f.packet.path_id == 1 && !dropped) return dropped = true, drop();
      return deliver();
    };
  };
  r.check = [](const Observed& o) {
    std::optional<uint32_t> lost;
    for (const auto& p : data_of(o, A))
      if (p.path_id == 1) {
        lost = p.psn;
        break;
      }
    ASSERT_TRUE(lost);
    // The first ACK of path 1 after the drop: CPSN just below the hole, bit 0 clear, bit 1 set
    // (the next PSN arrived), sent at once although fewer than ACK_EVERY packets arrived.
    bool found = false;
    for (const auto& a : acks_of(o, B)) {
      if (a.path_id != 1 || a.cpsn != *lost - 1) continue;
      EXPECT_EQ(a.sack[0] & 0x80, 0);  // bit 0 always clear
      EXPECT_NE(a.sack[0] & 0x40, 0);  // bit 1: lost + 1 received
      found = true;
      break;
    }
    EXPECT_TRUE(found);
    expect_statuses(o, A, {Status::Success});
  };
  return r;
}

RequirementScenario R_ACK_3_CoalescesUpToAckEvery() {
  RequirementScenario r = named("R_ACK_3_CoalescesUpToAckEvery");
  r.scenario.workload.ops = {write(32 * 4096)};  // 8 in-order packets per path
  r.check = [](const Observed& o) {
    EXPECT_EQ(acks_of(o, B).size(), 8u);  // 4 paths x (8 packets / ACK_EVERY 4)
  };
  return r;
}

// [R-ACK-3]: whatever the coalescing choice, an ACK no later than 16 accepted packets of a path.
RequirementScenario R_ACK_3_AckNoLaterThanSixteenPackets() {
  RequirementScenario r = named("R_ACK_3_AckNoLaterThanSixteenPackets");
  r.scenario.config[0].path_count = r.scenario.config[1].path_count = 1;
  r.scenario.config[1].ack_every = 64;     // a choice above the cap: the cap decides
  r.scenario.config[1].ack_delay_us = 16;  // the latest the delay rule allows
  r.scenario.workload.ops = {write(64 * 4096)};
  r.check = [](const Observed& o) {
    // Without loss, each ACK's CPSN advance is the number of packets it acknowledges.
    std::optional<uint32_t> last;
    uint32_t longest = 0;
    for (const auto& a : acks_of(o, B)) {
      if (last) longest = std::max(longest, a.cpsn - *last);
      last = a.cpsn;
    }
    EXPECT_EQ(longest, 16u);  // never more than 16 packets per ACK, and 16 when the window allows
    expect_statuses(o, A, {Status::Success});
  };
  return r;
}

// [R-PSN-4]: with one PSN held lost while later ones are acknowledged, a path sends until
// SNXT = SUNA + 256, and not one PSN further.
RequirementScenario R_PSN_4_SpanStopsAtSunaPlus256WhileAHoleIsHeld() {
  RequirementScenario r = named("R_PSN_4_SpanStopsAtSunaPlus256WhileAHoleIsHeld");
  r.scenario.config[0].path_count = r.scenario.config[1].path_count = 1;
  r.scenario.config[0].max_payload = r.scenario.config[1].max_payload = 1024;
  r.scenario.workload.ops = {write(400 * 1024)};
  r.filter = [] {
    // The first data PSN is lost until a PSN 255 beyond it has been sent (the span is full).
    return [hole = std::optional<uint32_t>(), full = false](const FrameInfo& f) mutable {
      if (f.from != A || !f.data()) return deliver();
      if (!hole) hole = f.packet.psn;
      full = full || f.packet.psn - *hole >= 255;
      return !full && f.packet.psn == *hole ? drop() : deliver();
    };
  };
  r.on_step = [] {
    return [](Observed& o, Side s, model::Time, const harness::SimEndpoint& ep) {
      if (s != A || ep.connections().empty()) return;
      if (auto v = ep.path_view(ep.connections().front(), 0))
        o.notes["widest"] = std::max<int64_t>(o.notes["widest"], v->snxt - v->suna);
    };
  };
  r.check = [](const Observed& o) {
    EXPECT_EQ(o.notes.at("widest"), 256);
    expect_statuses(o, A, {Status::Success});
  };
  return r;
}

RequirementScenario R_REL_8_DuplicateDataFrameNotPlacedTwice_R_PSN_3() {
  RequirementScenario r = named("R_REL_8_DuplicateDataFrameNotPlacedTwice_R_PSN_3");
  // The Write's only packet arrives twice, the copy after the ACK: a duplicate, ACKed again, not
  // placed again (the harness checks memory and exactly-once).
  r.scenario.workload.ops = {write(100)};
  r.filter = [] {
    return [done = false](const FrameInfo& f) mutable {
      if (f.from == A && f.data() && !done) return done = true, duplicate(40);
      return deliver();
    };
  };
  r.check = [](const Observed& o) {
    expect_statuses(o, A, {Status::Success});
    EXPECT_GE(acks_of(o, B).size(), 2u);  // the duplicate is acknowledged too
  };
  return r;
}

RequirementScenario R_REL_6_TailLossRecoveredByProbe() {
  RequirementScenario r = named("R_REL_6_TailLossRecoveredByProbe");
  r.scenario.workload.ops = {write(100)};
  r.filter = [] {
    return [dropped = false](const FrameInfo& f) mutable {
      if (f.from == A && f.data() && !dropped) return dropped = true, drop();  // the only packet
      return deliver();
    };
  };
  r.check = [](const Observed& o) {
    expect_statuses(o, A, {Status::Success});
    EXPECT_GE(count(o, A, ref::Opcode::Probe), 1);
    // Recovered by the probe (PTO = RTO_INIT / 2 before any sample), well before the RTO.
    for (uint16_t p = 0; p < 4; ++p) EXPECT_EQ(o.path(A, p)->repaths, 0u);
  };
  return r;
}

RequirementScenario R_REL_7_RtoBacksOffAndRepaths_R_PATH_2() {
  RequirementScenario r = named("R_REL_7_RtoBacksOffAndRepaths_R_PATH_2");
  r.scenario.workload.ops = {write(100)};  // one segment: path 0
  r.filter = [] {
    // Path 0's first route is dead from A (data, probes).
    return [dead = std::optional<uint16_t>()](const FrameInfo& f) mutable {
      if (!dead && f.data()) dead = f.route(A, 0);
      return f.from == A && dead && f.packet.udp_sport == *dead ? drop() : deliver();
    };
  };
  r.check = [](const Observed& o) {
    expect_statuses(o, A, {Status::Success});
    const auto data = data_of(o, A);
    ASSERT_FALSE(data.empty());
    const auto v = o.path(A, 0);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->state, model::PathState::Active);  // recovered on its new route
    EXPECT_NE(v->route, data.front().udp_sport);
    EXPECT_EQ(v->repaths, 1u);
  };
  return r;
}

RequirementScenario R_PATH_5_FailedPathAdoptsRouteOfActivePath() {
  RequirementScenario r = named("R_PATH_5_FailedPathAdoptsRouteOfActivePath");
  // Path 3 loses everything whatever its route, until it takes the route of an ACTIVE path. A
  // Write on stream 1 every 500 µs keeps paths 0..2 busy, so that they are acknowledged after path
  // 3's re-paths: donors known to work now.
  r.scenario.workload.ops = {write(16 * 4096)};
  for (model::Time t = 0; t < 40000; t += 500) r.scenario.workload.ops.push_back(write(3 * 4096, 1, 0x20000, t));
  r.filter = [] {
    return [good = std::set<uint16_t>()](const FrameInfo& f) mutable {
      if (good.empty() && f.data())
        for (uint16_t p = 0; p < 3; ++p) good.insert(f.route(A, p));
      return f.from == A && f.packet.path_id == 3 && !good.count(f.packet.udp_sport) ? drop() : deliver();
    };
  };
  r.check = [](const Observed& o) {
    std::set<uint16_t> good;
    for (const auto& p : data_of(o, A))
      if (p.path_id < 3 && good.size() < 3) good.insert(p.udp_sport);
    const auto v = o.path(A, 3);
    ASSERT_TRUE(v);
    EXPECT_TRUE(good.count(v->route));
    EXPECT_EQ(v->repaths, 3u);  // SUSPECT twice on fresh routes, then FAILED adopts a working one
  };
  return r;
}

// a donor idle since the failing path's previous re-path is not known to work (its route may
// have died unseen): the FAILED path takes a fresh route instead of the idle path's.
RequirementScenario R_PATH_5_IdleActivePathIsNoDonor() {
  RequirementScenario r = named("R_PATH_5_IdleActivePathIsNoDonor");
  r.mode = harness::CheckMode::None;  // path 3 never delivers: the Write cannot complete
  r.scenario.limits.time_limit = 20000;
  r.scenario.workload.ops = {write(16 * 4096)};
  r.filter = [] {
    return [](const FrameInfo& f) { return f.from == A && f.packet.path_id == 3 ? drop() : deliver(); };
  };
  r.check = [](const Observed& o) {
    std::set<uint16_t> others;
    for (const auto& p : data_of(o, A))
      if (p.path_id < 3) others.insert(p.udp_sport);
    const auto v = o.path(A, 3);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->state, model::PathState::Failed);
    EXPECT_GE(v->repaths, 4u);
    EXPECT_FALSE(others.count(v->route));
  };
  return r;
}

RequirementScenario R_SEC_9_CheckOrderInvalidBeforeAccess() {
  RequirementScenario r = named("R_SEC_9_CheckOrderInvalidBeforeAccess");
  // A Write-with-immediate with a bad key and no posted receive: RemoteAccess (2) before RNR (3).
  Op o = op(A, OpKind::WriteImm, 1, 10, 0, kDst);
  o.key = KeyChoice::Invalid;
  o.imm = 42;
  r.scenario.workload.ops = {o};
  r.mode = harness::CheckMode::None;
  r.check = [](const Observed& obs) { expect_statuses(obs, A, {Status::RemoteAccess}); };
  return r;
}

RequirementScenario R_CMP_2_WriteImmConsumesReceiveWithImmediate() {
  RequirementScenario r = named("R_CMP_2_WriteImmConsumesReceiveWithImmediate");
  Op w = op(A, OpKind::WriteImm, 2, 5000, 0, kDst + 100);
  w.imm = 0xABCD;
  r.scenario.workload.ops = {op(B, OpKind::Recv, 2, 0, kDst), w};
  r.check = [](const Observed& o) {
    const auto b = o.completions(B);
    ASSERT_EQ(b.size(), 1u);
    EXPECT_EQ(b[0].wr_id, 1u);
    EXPECT_EQ(b[0].byte_len, 5000u);
    ASSERT_TRUE(b[0].immediate);
    EXPECT_EQ(*b[0].immediate, 0xABCDu);
  };
  return r;
}

RequirementScenario R_MEM_4_LocalBuffersMustBeRegistered() {
  RequirementScenario r = named("R_MEM_4_LocalBuffersMustBeRegistered");
  r.mode = harness::CheckMode::None;
  // A Send and a receive from outside every region, a Read on a stream that does not exist.
  r.scenario.workload.ops = {op(A, OpKind::Send, 0, 10, 0x4000000), op(A, OpKind::Recv, 0, 10, 0x4000000),
                             op(A, OpKind::Read, 9, 10, 0, kDst)};
  r.check = [](const Observed& o) {
    ASSERT_EQ(o.run.posts.size(), 3u);
    for (const auto& p : o.run.posts) {
      ASSERT_TRUE(p);
      EXPECT_TRUE(p->rejected);
    }
    EXPECT_TRUE(o.run.completions.empty());  // refused at post time: no completion follows
  };
  return r;
}

RequirementScenario R_FS_4_SharesSplitCapacityAndNeverExceedIt() {
  RequirementScenario r = named("R_FS_4_SharesSplitCapacityAndNeverExceedIt");
  r.scenario.config[1].capacity_mbps = 1000;
  r.scenario.connections = 2;
  Op w1 = write(200000), w2 = write(200000);
  w2.conn = 1;
  r.scenario.workload.ops = {w1, w2};
  r.on_step = [] {
    return [](Observed& o, Side s, model::Time, const harness::SimEndpoint& ep) {
      if (s != B) return;
      int64_t sum = 0;
      const auto shares = ep.rate_shares();
      for (auto [id, share] : shares) sum += share;
      o.notes["max_sum"] = std::max(o.notes["max_sum"], sum);
      if (shares.size() == 2) {  // the best grant both had at once
        const int64_t low = std::min(shares.begin()->second, std::next(shares.begin())->second);
        o.notes["both_at_least"] = std::max(o.notes["both_at_least"], low);
      }
    };
  };
  r.check = [](const Observed& o) {
    EXPECT_LE(o.notes.at("max_sum"), 1000);         // [R-FS-4]
    ASSERT_EQ(o.notes.count("both_at_least"), 1u);  // both connections were granted at once
    EXPECT_EQ(o.notes.at("both_at_least"), 500);    // C / 2 each
    expect_statuses(o, A, {Status::Success, Status::Success});
  };
  return r;
}

// when a connection's rate falls (here: its Write is done), its share shrinks by a quarter at
// each computation while it stays active, instead of falling to 2 x its measured rate (C / 1000 here)
// at once. Shares are read after every step: every change between two nonzero shares keeps at least
// three quarters, and after the Write some changes are exactly that (the floor binding, not 2 r).
RequirementScenario R_FS_3_ShareShrinksByAtMostAQuarterPerComputation() {
  RequirementScenario r = named("R_FS_3_ShareShrinksByAtMostAQuarterPerComputation");
  r.scenario.config[1].capacity_mbps = 1000;
  r.scenario.workload.ops = {write(100000)};
  r.on_step = [] {
    return [](Observed& o, Side s, model::Time, const harness::SimEndpoint& ep) {
      if (s != B) return;
      const auto shares = ep.rate_shares();
      const int64_t now = shares.empty() ? 0 : shares.begin()->second;
      const int64_t before = o.notes["share"];
      if (before > 0 && now > 0 && now != before) {
        ++o.notes["changes"];
        if (now < before * 3 / 4) ++o.notes["cut_too_deep"];
        if (now == before * 3 / 4) ++o.notes["quarter_cuts"];
      }
      o.notes["share"] = now;
    };
  };
  r.check = [](const Observed& o) {
    expect_statuses(o, A, {Status::Success});
    ASSERT_EQ(o.notes.count("changes"), 1u) << "the share never changed";
    EXPECT_EQ(o.notes.count("cut_too_deep"), 0u);  // [R-FS-3]: a quarter at most
    ASSERT_EQ(o.notes.count("quarter_cuts"), 1u);
    EXPECT_GE(o.notes.at("quarter_cuts"), 2);  // 1000 -> 750 -> 562 ...
  };
  return r;
}

RequirementScenario R_PLC_4_ReadsWritesSendsMixedOnManyStreams_R_ARCH_3() {
  RequirementScenario r = named("R_PLC_4_ReadsWritesSendsMixedOnManyStreams_R_ARCH_3");
  auto& c = r.scenario.config;
  c[0].stream_count = c[1].stream_count = 8;
  r.scenario.net.faults_until = 100000;
  r.scenario.schedule.fates = every_nth_dropped(17, 4000);
  auto& ops = r.scenario.workload.ops;
  for (uint16_t st = 0; st < 8; ++st) {
    ops.push_back(op(B, OpKind::Recv, st, 5000, 0x40000 + st * 5000));
    ops.push_back(op(A, OpKind::Send, st, 3000 + st * 100, st * 3000));
    if (st % 2) {
      ops.push_back(op(B, OpKind::Recv, st, 0, 0));
      Op w = op(A, OpKind::WriteImm, st, 7000, st * 7000, st * 7000);
      w.imm = st;
      ops.push_back(w);
    } else {
      ops.push_back(op(A, OpKind::Write, st, 7000, st * 7000, st * 7000));
    }
    ops.push_back(op(A, OpKind::Read, st, 6000, 0x80000 + st * 6000, 0xC0000 + st * 10));
  }
  r.check = [](const Observed& o) {
    const auto a = o.completions(A);
    EXPECT_EQ(a.size(), 24u);
    for (const auto& x : a) EXPECT_EQ(x.status, Status::Success);
    EXPECT_EQ(o.completions(B).size(), 12u);
    EXPECT_GT(o.run.net.dropped, 0u);
  };
  return r;
}

RequirementScenario R_HDR_29_R_VAL_3_CorruptFrameDroppedUnanswered() {
  RequirementScenario r = named("R_HDR_29_R_VAL_3_CorruptFrameDroppedUnanswered");
  r.scenario.workload.ops = {write(100)};
  r.filter = [] {
    return [done = false](const FrameInfo& f) mutable {
      if (f.from == A && f.data() && !done)  // a payload byte (10 from the end): only the ICRC can tell
        return done = true, corrupt_ip_byte(uint16_t(f.frame.size() - 10 - 14));
      return deliver();
    };
  };
  r.check = [](const Observed& o) {
    model::Time first = 0;
    for (const auto& f : o.sent[0])
      if (is_data(f.packet)) {
        first = f.at;
        break;
      }
    for (const auto& f : o.sent[1]) EXPECT_NE(f.at, first + 5) << "B answered the corrupted frame";
    expect_statuses(o, A, {Status::Success});  // recovered by loss recovery
    EXPECT_EQ(o.run.net.corrupted, 1u);
  };
  return r;
}

RequirementScenario R_CC_5_LossDoesNotShrinkTheWindow_R_CC_3_InFlightBoundedByCwnd() {
  RequirementScenario r = named("R_CC_5_LossDoesNotShrinkTheWindow_R_CC_3_InFlightBoundedByCwnd");
  r.scenario.workload.ops = {write(400 * 1024)};
  r.filter = [] {
    return [n = 0](const FrameInfo& f) mutable { return f.from == A && f.data() && ++n % 7 == 0 ? drop() : deliver(); };
  };
  r.on_step = [] {
    return [](Observed& o, Side s, model::Time, const harness::SimEndpoint& ep) {
      if (s != A || ep.connections().empty()) return;
      const uint32_t c = ep.connections().front();
      for (uint16_t p = 0; p < ep.path_count(c); ++p) {
        const auto v = ep.path_view(c, p);
        if (!v) continue;
        if (v->in_flight > v->cwnd) ++o.notes["over_cwnd"];   // [R-CC-3]
        if (v->snxt - v->suna > 256) ++o.notes["over_span"];  // [R-PSN-4]
        o.notes["min_cwnd"] = o.notes.count("min_cwnd") ? std::min<int64_t>(o.notes["min_cwnd"], v->cwnd) : v->cwnd;
      }
    };
  };
  r.check = [](const Observed& o) {
    expect_statuses(o, A, {Status::Success});
    EXPECT_EQ(o.notes.count("over_cwnd"), 0u);
    EXPECT_EQ(o.notes.count("over_span"), 0u);
    EXPECT_GE(o.notes.at("min_cwnd"), 16);  // never below INIT_CWND: loss is not congestion
    int retx = 0;
    for (const auto& p : data_of(o, A)) retx += (p.flags & ref::kFlagRetx) != 0;
    EXPECT_GT(retx, 0);
  };
  return r;
}

RequirementScenario R_ACK_9_OlderAckMovesNothingBack() {
  RequirementScenario r = named("R_ACK_9_OlderAckMovesNothingBack");
  r.scenario.workload.ops = {write(64 * 4096)};
  // The first ACK of path 0 arrives again long after the Write completed: a stale ACK.
  r.filter = [] {
    return [done = false](const FrameInfo& f) mutable {
      if (f.from == B && f.packet.opcode == ref::Opcode::Ack && f.packet.path_id == 0 && !done)
        return done = true, duplicate(1500);
      return deliver();
    };
  };
  r.on_step = [] {
    return [last = std::map<uint16_t, uint32_t>()](Observed& o, Side s, model::Time,
                                                   const harness::SimEndpoint& ep) mutable {
      if (s != A || ep.connections().empty()) return;
      const uint32_t c = ep.connections().front();
      for (uint16_t p = 0; p < ep.path_count(c); ++p) {
        const auto v = ep.path_view(c, p);
        if (!v) continue;
        if (last.count(p) && int32_t(v->suna - last[p]) < 0) ++o.notes["suna_back"];
        last[p] = v->suna;
      }
    };
  };
  r.check = [](const Observed& o) {
    expect_statuses(o, A, {Status::Success});
    EXPECT_EQ(o.run.net.duplicated, 1u);
    EXPECT_EQ(o.notes.count("suna_back"), 0u);
    const auto v = o.path(A, 0);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->suna, v->snxt);
    EXPECT_EQ(v->in_flight, 0u);
  };
  return r;
}

RequirementScenario R_REL_9_VoidedSendCancelsItsReceiveLater_R_CMP_2() {
  RequirementScenario r = named("R_REL_9_VoidedSendCancelsItsReceiveLater_R_CMP_2");
  // The receive for RSN 0 is posted after the Send gave up (once its VOIDs arrived): it is
  // canceled at once, and the next Send / receive pair of the stream is not blocked behind it.
  Op late = op(B, OpKind::Recv, 0, 64, kDst);
  late.after_void = true;
  r.scenario.workload.ops = {op(A, OpKind::Send, 0, 10, 0), late, op(B, OpKind::Recv, 0, 64, kDst + 0x100),
                             op(A, OpKind::Send, 0, 20, 0, 0, 5000)};
  r.check = [](const Observed& o) {
    const auto a = o.completions(A);
    ASSERT_GE(a.size(), 1u);
    EXPECT_EQ(a[0].status, Status::RnrRetryExceeded);
    const auto b = o.completions(B);
    ASSERT_EQ(b.size(), 2u);
    EXPECT_EQ(b[0].wr_id, 2u);
    EXPECT_EQ(b[0].status, Status::Canceled);
    EXPECT_EQ(b[1].wr_id, 3u);
    EXPECT_EQ(b[1].status, Status::Success);
    EXPECT_EQ(b[1].byte_len, 20u);
  };
  return r;
}

RequirementScenario R_REL_9_RefusedWriteImmCancelsPostedReceive() {
  RequirementScenario r = named("R_REL_9_RefusedWriteImmCancelsPostedReceive");
  Op w = op(A, OpKind::WriteImm, 1, 100, 0, kDst);
  w.key = KeyChoice::Invalid;
  w.imm = 7;
  r.scenario.workload.ops = {op(B, OpKind::Recv, 1, 0, kDst), w};
  r.check = [](const Observed& o) {
    expect_statuses(o, A, {Status::RemoteAccess});
    expect_statuses(o, B, {Status::Canceled});
  };
  return r;
}

// Large configurations: multi-word path and stream sets.
RequirementScenario R_PATH_1_TwoHundredFiftySixPathsAndManyStreamsUnderLoss() {
  RequirementScenario r = named("R_PATH_1_TwoHundredFiftySixPathsAndManyStreamsUnderLoss");
  auto& c = r.scenario.config;
  c[0].path_count = c[1].path_count = 256;  // [R-PATH-1] an implementation MUST support P = 256
  c[0].stream_count = c[1].stream_count = 300;
  c[0].max_payload = c[1].max_payload = 1024;
  r.scenario.workload.layout.region_size = 4 << 20;
  r.scenario.net.faults_until = 200000;
  r.scenario.schedule.fates = every_nth_dropped(13, 6000);
  auto& ops = r.scenario.workload.ops;
  for (uint16_t st = 0; st < 300; st += 7) {
    ops.push_back(op(A, OpKind::Write, st, 6000, st * 6000ull, st * 6000ull));
    ops.push_back(op(B, OpKind::Recv, st, 3000, (2 << 20) + st * 3000ull));
    ops.push_back(op(A, OpKind::Send, st, 2500, st * 6000ull));
  }
  r.check = [](const Observed& o) {
    EXPECT_EQ(o.completions(A).size(), 2u * 43);
    EXPECT_EQ(o.completions(B).size(), 43u);
    std::set<uint16_t> used;
    for (const auto& p : data_of(o, A)) used.insert(p.path_id);
    EXPECT_GT(used.size(), 64u);  // spraying reached paths beyond the first bitmap word
  };
  return r;
}

RequirementScenario R_CC_1_WindowCapOneAndTinyPayloads() {
  RequirementScenario r = named("R_CC_1_WindowCapOneAndTinyPayloads");
  auto& c = r.scenario.config;
  c[0].window_cap = 1;
  c[0].max_payload = c[1].max_payload = 256;
  c[0].path_count = 2;
  r.scenario.workload.ops = {write(20000), op(A, OpKind::Read, 1, 5000, 0x40000, 0xC0000)};
  r.filter = [] {
    return [dropped = false](const FrameInfo& f) mutable {
      if (f.from == A && f.data() && !dropped) return dropped = true, drop();
      return deliver();
    };
  };
  r.check = [](const Observed& o) {
    expect_statuses(o, A, {Status::Success, Status::Success});
    for (const auto& p : data_of(o, A)) EXPECT_LE(p.payload_length, 256);
  };
  return r;
}

// [R-CC-1]: a connection's first window is about INIT_WINDOW = 64 packets whatever its number of
// paths: with 32 paths, INIT_CWND = 2 per path, so 64 packets leave before the first ACK, not 512.
RequirementScenario R_CC_1_ManyPathsShareTheInitialWindow() {
  RequirementScenario r = named("R_CC_1_ManyPathsShareTheInitialWindow");
  auto& c = r.scenario.config;
  c[0].path_count = c[1].path_count = 32;
  c[0].max_payload = c[1].max_payload = 1024;
  r.scenario.workload.ops = {write(300 * 1024)};  // 300 packets: more than the first window
  r.on_step = [] {
    return [](Observed& o, Side s, model::Time, const harness::SimEndpoint& ep) {
      if (s != A || ep.connections().empty()) return;
      const uint32_t conn = ep.connections().front();
      int64_t in_flight = 0, acked = 0;
      for (uint16_t p = 0; p < ep.path_count(conn); ++p) {
        const auto v = ep.path_view(conn, p);
        if (!v) continue;
        in_flight += v->in_flight;
        acked += v->packets_sent - (v->snxt - v->suna);  // PSNs acknowledged (no loss here)
        if (acked == 0) o.notes["start_cwnd_max"] = std::max<int64_t>(o.notes["start_cwnd_max"], v->cwnd);
      }
      if (acked == 0) o.notes["first_window"] = std::max<int64_t>(o.notes["first_window"], in_flight);
    };
  };
  r.check = [](const Observed& o) {
    expect_statuses(o, A, {Status::Success});
    EXPECT_EQ(o.notes.at("start_cwnd_max"), 2);
    EXPECT_EQ(o.notes.at("first_window"), 64);
  };
  return r;
}

// [R-PATH-10]: a route that dies and comes back. Path 0's first route drops everything in both
// directions from 300 to 1 000 µs; a Write every 100 µs gives every path 4 packets. Path 0 re-paths on
// its RTO (the route it leaves is its home route), works on the fresh route, probes the home route
// HOME_PROBE after the re-path (lost: still dead) and again after twice that, which is answered on
// the home route: the path goes back to it. Between Writes the path has nothing outstanding and sends
// no home probe: an overdue one goes with the next Write.
RequirementScenario R_PATH_10_PathReturnsToItsHomeRoute() {
  RequirementScenario r = named("R_PATH_10_PathReturnsToItsHomeRoute");
  for (model::Time t = 0; t < 2500; t += 100) r.scenario.workload.ops.push_back(write(16 * 1024, 1, 0x20000, t));
  r.scenario.config[0].max_payload = r.scenario.config[1].max_payload = 1024;
  r.scenario.limits.time_limit = 20000;
  r.filter = [] {
    return [home = std::optional<uint16_t>()](const FrameInfo& f) mutable {
      if (!home && f.data()) home = f.route(A, 0);
      const bool dead = f.now >= 300 && f.now < 1000 && home && f.packet.udp_sport == *home &&
                        (f.from == A || f.packet.opcode == ref::Opcode::Ack || f.packet.opcode == ref::Opcode::Nak);
      return dead ? drop() : deliver();
    };
  };
  r.check = [](const Observed& o) {
    std::vector<Status> all(25, Status::Success);
    expect_statuses(o, A, all);
    std::optional<uint16_t> home;
    bool away = false, probed_home = false, back = false;
    for (const auto& f : o.sent[size_t(A)]) {
      const ref::Packet& p = f.packet;
      if (p.path_id != 0) continue;
      if (!home && is_data(p)) home = p.udp_sport;
      if (!home) continue;
      if (is_data(p) && p.udp_sport != *home && f.at >= 300 && f.at < 1000) away = true;
      if (p.opcode == ref::Opcode::Probe && p.udp_sport == *home && away) probed_home = true;
      if (is_data(p) && p.udp_sport == *home && f.at >= 1000 && probed_home) back = true;
    }
    EXPECT_TRUE(away) << "path 0 re-paths while its route is dead";
    EXPECT_TRUE(probed_home) << "path 0 probes its home route [R-PATH-10]";
    EXPECT_TRUE(back) << "path 0 sends data on its home route again once it works";
    const auto v = o.path(A, 0);
    ASSERT_TRUE(v);
    EXPECT_EQ(v->state, model::PathState::Active);
    EXPECT_EQ(v->route, *home);
    EXPECT_EQ(v->repaths, 1u);
    EXPECT_EQ(v->home_returns, 1u);  // counted once, on path 0 only
    for (uint16_t p = 1; p < o.conn(A)->paths; ++p) EXPECT_EQ(o.path(A, p)->home_returns, 0u) << p;
  };
  return r;
}

// The table: every scenario, built (cheaply: filters compile when a test runs).
std::vector<RequirementScenario> table() {
  return {R_CONN_1_HandshakeNegotiatesMinimum_R_HDR_4(),
          R_PLC_2_WriteLandsByteExactOverAllPaths_R_PATH_8_R_CMP_3(),
          R_REL_5_R_REL_4_LostPacketRetransmittedSamePathSamePsn(),
          R_MATCH_1_R_ARCH_1_R_PLC_1_SendsMatchReceivesByRsnOutOfOrder_R_CMP_1_R_CMP_2(),
          R_PLC_4_ReadReturnsRemoteBytes(),
          R_MEM_3_WrongKeyRefusedAndVoided_R_SEC_6_R_REL_9(),
          R_MATCH_2_SendLongerThanReceive(),
          R_PLC_7_ReceiverNotReadyThenReady(),
          R_PLC_9_RnrRetryExceeded_R_REL_10(),
          R_PLC_9_RnrForAnAlreadyVoidedPsnIsWaitedOut_R_SEC_11(),
          R_PLC_9_RnrWaitFollowsTheNakDetail_R_HDR_24(),
          R_CONN_8_DeadPeerFailsEverything_R_CONN_6(),
          R_PATH_4_DeadRouteIsRepathed(),
          R_CC_4_CeHalvesTheWindowOncePerWindow_R_CC_2(),
          R_CONN_6_KeepaliveOnIdleConnection(),
          R_CONN_4_RejectWhenNotListening(),
          R_CONN_4_ConnectRetriedThenFails(),
          R_ENC_9_R_ENC_10_EcnAndDscpByPacketClass_R_ENC_5_R_ENC_6(),
          R_ACK_2_R_ACK_4_GapDrawsImmediateAckWithSackBits_R_HDR_20(),
          R_ACK_3_CoalescesUpToAckEvery(),
          R_ACK_3_AckNoLaterThanSixteenPackets(),
          R_PSN_4_SpanStopsAtSunaPlus256WhileAHoleIsHeld(),
          R_REL_8_DuplicateDataFrameNotPlacedTwice_R_PSN_3(),
          R_REL_6_TailLossRecoveredByProbe(),
          R_REL_7_RtoBacksOffAndRepaths_R_PATH_2(),
          R_PATH_5_FailedPathAdoptsRouteOfActivePath(),
          R_PATH_5_IdleActivePathIsNoDonor(),
          R_SEC_9_CheckOrderInvalidBeforeAccess(),
          R_CMP_2_WriteImmConsumesReceiveWithImmediate(),
          R_MEM_4_LocalBuffersMustBeRegistered(),
          R_FS_4_SharesSplitCapacityAndNeverExceedIt(),
          R_FS_3_ShareShrinksByAtMostAQuarterPerComputation(),
          R_PLC_4_ReadsWritesSendsMixedOnManyStreams_R_ARCH_3(),
          R_HDR_29_R_VAL_3_CorruptFrameDroppedUnanswered(),
          R_CC_5_LossDoesNotShrinkTheWindow_R_CC_3_InFlightBoundedByCwnd(),
          R_ACK_9_OlderAckMovesNothingBack(),
          R_REL_9_VoidedSendCancelsItsReceiveLater_R_CMP_2(),
          R_REL_9_RefusedWriteImmCancelsPostedReceive(),
          R_PATH_1_TwoHundredFiftySixPathsAndManyStreamsUnderLoss(),
          R_CC_1_WindowCapOneAndTinyPayloads(),
          R_CC_1_ManyPathsShareTheInitialWindow(),
          R_PATH_10_PathReturnsToItsHomeRoute()};
}

std::vector<std::string> names() {
  std::vector<std::string> v;
  for (const auto& r : table()) v.push_back(r.name);
  return v;
}

const RequirementScenario& scenario(const std::string& name) {
  static const std::vector<RequirementScenario> all = table();
  for (const auto& r : all)
    if (r.name == name) return r;
  throw std::runtime_error("no scenario " + name);
}

// Runs one scenario one way; on any failure writes its trace and prints the replay command.
void run_scenario(Way way, const std::string& name) {
  const RequirementScenario& r = scenario(name);
  const harness::Scenario s = compiled_scenario(r);
  const WayResult res = run_way(way, r, s);
  EXPECT_FALSE(res.failed()) << res.report();
  if (!res.divergence && r.check) r.check(res.observed);
  if (::testing::Test::HasFailure()) {
    WayOptions o;
    o.trace_dir = MROCE_FAILED_TRACE_DIR;
    o.mroce = MROCE_CLI;
    ADD_FAILURE() << write_failure(way, r, res, o);
  }
}

class Requirement : public ::testing::TestWithParam<std::string> {};

TEST_P(Requirement, Model) { run_scenario(Way::Model, GetParam()); }
TEST_P(Requirement, Engine) { run_scenario(Way::Engine, GetParam()); }
TEST_P(Requirement, Lockstep) { run_scenario(Way::Lockstep, GetParam()); }

INSTANTIATE_TEST_SUITE_P(Scenarios, Requirement, ::testing::ValuesIn(names()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace mroce::lockstep
