// Behavioural parity, randomised: random configurations (paths, streams, payload size, window cap,
// ISNs near the wrap, ACK coalescing, capacity), random workloads in both directions (Send, Write,
// Write-with-immediate, Read, receives, sometimes a close), and random loss, duplication, CE marks and
// reordering. The engine and the model must stay in lockstep on every event.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "lockstep.hpp"

namespace mroce::testing {
namespace {

constexpr uint64_t kBase = 0x10000;
constexpr uint64_t kRegion = 1 << 20;

model::Config base_config(int side) {
  model::Config c;
  c.self.mac = {0x02, 0, 0, 0, 0, uint8_t(side + 1)};
  c.self.ip = {10, 0, 0, uint8_t(side + 1)};
  c.first_conn_id = side == 0 ? 0x100 : 0x200;
  return c;
}

struct Op {
  int side = 0;
  int kind = 0;  // 0 send, 1 write, 2 write-imm, 3 read, 4 recv, 5 wait
  uint16_t stream = 0;
  uint32_t length = 0;
  uint32_t src = 0, dst = 0;
  uint32_t gap = 0;
};

RC_GTEST_PROP(EngineLockstepProp, RandomWorkloadsStayInStep, ()) {
  model::Config a = base_config(0), b = base_config(1);
  // Mostly a few paths and streams; sometimes wide sets (several bitmap words).
  a.path_count = *rc::gen::oneOf(rc::gen::inRange<uint16_t>(1, 9), rc::gen::element<uint16_t>(65, 129, 256));
  b.path_count = *rc::gen::oneOf(rc::gen::inRange<uint16_t>(1, 9), rc::gen::element<uint16_t>(64, 200, 256));
  a.stream_count = *rc::gen::oneOf(rc::gen::inRange<uint16_t>(1, 5), rc::gen::element<uint16_t>(70, 300));
  b.stream_count = *rc::gen::oneOf(rc::gen::inRange<uint16_t>(1, 5), rc::gen::element<uint16_t>(66, 1000));
  a.max_payload = *rc::gen::element<uint16_t>(256, 1024, 4096, 8192);
  b.max_payload = *rc::gen::element<uint16_t>(256, 1024, 4096, 8192);
  a.window_cap = *rc::gen::element<uint16_t>(1, 4, 16, 64, 256);
  b.window_cap = *rc::gen::element<uint16_t>(2, 16, 256);
  a.isn = 0xFFFFFFFFu - *rc::gen::inRange<uint32_t>(0, 600);
  b.isn = *rc::gen::arbitrary<uint32_t>();
  a.ack_every = *rc::gen::inRange<uint32_t>(1, 8);
  b.ack_every = *rc::gen::inRange<uint32_t>(1, 8);
  a.capacity_mbps = *rc::gen::element<uint32_t>(100, 2000, 100000);
  b.capacity_mbps = *rc::gen::element<uint32_t>(100, 2000, 100000);
  b.rnr_detail = *rc::gen::element<uint16_t>(0, 0, 3);
  if (*rc::gen::element(false, false, true)) {  // IPv6 [R-ENC-4]
    a.self.ipv6 = b.self.ipv6 = true;
    a.self.ip = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    b.self.ip = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
  }
  Lockstep net(a, b);
  net.chaos.drop_pct = *rc::gen::element<uint32_t>(0, 1, 5, 20);
  net.chaos.dup_pct = *rc::gen::element<uint32_t>(0, 0, 3);
  net.chaos.ce_pct = *rc::gen::element<uint32_t>(0, 0, 10);
  net.chaos.jitter = *rc::gen::element<uint32_t>(0, 0, 3, 40);
  net.chaos.seed = *rc::gen::inRange<uint64_t>(1, 1u << 30);
  net.setup(kRegion);
  RC_ASSERT(!net.diverged());
  RC_PRE(net.conn[0] != 0 && net.conn[1] != 0);
  const uint16_t streams = std::min(a.stream_count, b.stream_count);
  net.fill(0, kBase, kRegion, 1);
  net.fill(1, kBase, kRegion, 2);
  // A second region on A, used only as a source, deregistered at a random point [R-MEM-2].
  constexpr uint64_t kSrc2 = 0x400000;
  net.handle(0, model::RegisterMemory{kSrc2, 1 << 18, model::access::kLocalWrite});
  net.fill(0, kSrc2, 1 << 18, 3);
  // Sometimes a second connection A -> B shares the endpoints (fair share, timers, pump order).
  uint32_t conn2[2] = {0, 0};
  if (*rc::gen::element(false, true)) {
    const uint32_t c0 = net.conn[0], c1 = net.conn[1];
    net.conn[0] = net.conn[1] = 0;
    net.handle(0, model::Connect{net.model(1).config().self});
    net.run(net.now() + 1000, [&] { return net.conn[0] != 0 && net.conn[1] != 0; });
    conn2[0] = net.conn[0];
    conn2[1] = net.conn[1];
    net.conn[0] = c0;
    net.conn[1] = c1;
  }
  const size_t dereg_at = *rc::gen::inRange<size_t>(0, 60);
  const auto ops = *rc::gen::container<std::vector<Op>>(
      rc::gen::build<Op>(rc::gen::set(&Op::side, rc::gen::inRange(0, 2)), rc::gen::set(&Op::kind, rc::gen::inRange(0, 6)),
                         rc::gen::set(&Op::stream, rc::gen::inRange<uint16_t>(0, 400)),
                         rc::gen::set(&Op::length, rc::gen::oneOf(rc::gen::inRange<uint32_t>(0, 300),
                                                                  rc::gen::inRange<uint32_t>(0, 70000))),
                         rc::gen::set(&Op::src, rc::gen::inRange<uint32_t>(0, 400000)),
                         rc::gen::set(&Op::dst, rc::gen::inRange<uint32_t>(0, 400000)),
                         rc::gen::set(&Op::gap, rc::gen::element<uint32_t>(0, 0, 3, 20, 300))));
  uint64_t wr = 1;
  size_t k = 0;
  for (const Op& op : ops) {
    if (net.diverged()) break;
    if (k++ == dereg_at) net.handle(0, model::DeregisterMemory{net.keys[0][1].lkey});
    const int s = op.side;
    const bool second = conn2[0] != 0 && (op.src & 1);
    const uint32_t c = second ? conn2[s] : net.conn[s];
    const bool src2 = s == 0 && (op.src % 5) == 0 && op.kind <= 2;
    const uint16_t st = uint16_t(op.stream % streams);
    const uint32_t lkey = src2 ? net.keys[0][1].lkey : net.keys[s][0].lkey, rkey = net.keys[1 - s][0].rkey;
    const uint64_t src = src2 ? kSrc2 + op.src % 100000 : kBase + op.src;
    switch (op.kind) {
      case 0: net.handle(s, model::PostSend{c, st, wr++, src, op.length, lkey}); break;
      case 1:
        net.handle(s, model::PostWrite{c, st, wr++, src, op.length, lkey, kBase + op.dst, rkey, std::nullopt});
        break;
      case 2:
        net.handle(s, model::PostWrite{c, st, wr++, src, op.length, lkey, kBase + op.dst, rkey, uint32_t(wr * 7)});
        break;
      case 3: net.handle(s, model::PostRead{c, st, wr++, kBase + op.src, op.length, lkey, kBase + op.dst, rkey}); break;
      case 4:
        net.handle(1 - s, model::PostRecv{second ? conn2[1 - s] : net.conn[1 - s], st, wr++, kBase + op.dst,
                                          op.length + 100, net.keys[1 - s][0].lkey});
        break;
      default: break;
    }
    net.run(net.now() + op.gap);
  }
  // Graceful close only: after an abort the model indexes a cleared outstanding-PSN list when a NAK
  // arrives (PathTx::find on an emptied deque, a use-after-free in the model, reported).
  const bool close = *rc::gen::element(false, false, true);
  if (close && !net.diverged()) net.handle(0, model::Close{net.conn[0], false});
  net.run(net.now() + 300000, [&] {
    return net.model(0).outstanding_work(net.conn[0]) == 0 && net.model(1).outstanding_work(net.conn[1]) == 0;
  });
  RC_LOG() << net.divergence;
  RC_ASSERT(!net.diverged());
  RC_ASSERT(net.same_memory(0, kBase, kRegion));
  RC_ASSERT(net.same_memory(1, kBase, kRegion));
}

}  // namespace
}  // namespace mroce::testing
