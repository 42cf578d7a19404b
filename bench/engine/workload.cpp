// A fixed, deterministic workload for callgrind: two engines over the in-memory loop in virtual time,
// `packets` data packets of `pkt` bytes (Writes of `msg` bytes) from A to B, no loss. The send path is
// Device::progress/post on A, the receive path Device::progress on B (see callgrind.sh).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "io/mem_loop.hpp"
#include "mroce/mroce.hpp"

using namespace mroce;

// Kept out of line so callgrind can attribute their inclusive cost.
__attribute__((noinline)) int send_side(Device& d) { return d.progress(); }
__attribute__((noinline)) int recv_side(Device& d) { return d.progress(); }
__attribute__((noinline)) Result post(Device& d, uint32_t conn, uint64_t wr, const Sge& s, uint64_t ra, uint32_t rk) {
  return d.post_write(conn, uint16_t(wr % 4), wr, s, ra, rk);
}

int main(int argc, char** argv) {
  const uint64_t packets = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 20000;
  const uint32_t msg = argc > 2 ? uint32_t(std::strtoul(argv[2], nullptr, 10)) : 65536;
  const uint16_t pkt = argc > 3 ? uint16_t(std::strtoul(argv[3], nullptr, 10)) : 4096;
  constexpr size_t kMem = 16 << 20;
  io::ManualClock clock;
  io::MemLoop loop(io::MemLoop::Options{4096, 4096, 0, nullptr});
  DeviceConfig ca, cb;
  ca.self.mac = {2, 0, 0, 0, 0, 1};
  ca.self.ip = {10, 0, 0, 1};
  cb.self.mac = {2, 0, 0, 0, 0, 2};
  cb.self.ip = {10, 0, 0, 2};
  cb.first_conn_id = 1000;
  ca.offer.max_payload = cb.offer.max_payload = pkt;
  auto a = Device::open(ca, loop.port(0), clock);
  auto b = Device::open(cb, loop.port(1), clock);
  auto ma = std::make_unique<uint8_t[]>(kMem), mb = std::make_unique<uint8_t[]>(kMem);
  std::memset(ma.get(), 0x11, kMem);
  std::memset(mb.get(), 0, kMem);
  MemoryRegion ra, rb;
  const uint32_t acc = access::kLocalWrite | access::kRemoteWrite | access::kRemoteRead;
  a->reg_mr(ma.get(), kMem, acc, &ra);
  b->reg_mr(mb.get(), kMem, acc, &rb);
  uint32_t conn = 0;
  a->connect(b->config().self, &conn);
  ConnEvent ev;
  while (a->poll_events(&ev, 1) == 0) {
    a->progress();
    b->progress();
  }
  const uint32_t slots = uint32_t(kMem / 2 / msg);
  uint64_t posted = 0, completed = 0;
  WorkCompletion wc[64];
  const uint64_t start = a->counters().data_sent;
  while (a->counters().data_sent - start < packets) {
    while (posted - completed < 64) {
      const uint64_t off = (posted % slots) * msg;
      if (post(*a, conn, posted, Sge{ra.iova + off, msg, ra.lkey}, rb.iova + off, rb.rkey) != Result::Ok) break;
      ++posted;
    }
    clock.advance(1);
    while (send_side(*a) + recv_side(*b) > 0) {}
    for (int n; (n = a->poll_cq(wc, 64)) > 0;) completed += uint64_t(n);
  }
  std::printf("retx %llu probes %llu repaths %llu naks %llu dups %llu\n",
              (unsigned long long)a->counters().retransmissions, (unsigned long long)a->counters().probes_sent,
              (unsigned long long)a->counters().repaths, (unsigned long long)b->counters().naks_sent,
              (unsigned long long)b->counters().duplicates);
  std::printf("data packets %llu, acks %llu, work requests completed %llu\n",
              (unsigned long long)(a->counters().data_sent - start), (unsigned long long)b->counters().acks_sent,
              (unsigned long long)completed);
  return 0;
}
