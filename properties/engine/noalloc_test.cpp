// No heap allocation on the data path: this binary replaces the global operator new/delete with
// counting versions, runs a steady-state transfer between two engines (Writes, Sends and receives,
// Reads, Write-imms, on several streams, with random loss so that retransmissions, probes and NAK-free
// recovery run too), and requires zero allocations while it runs.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "io/mem_loop.hpp"
#include "mroce/mroce.hpp"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<uint64_t> g_allocs{0};
}  // namespace

void* operator new(std::size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocs.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  if (g_counting.load(std::memory_order_relaxed)) g_allocs.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace mroce::testing {
namespace {

TEST(EngineNoAlloc, SteadyStateTransferAllocatesNothing) {
  io::ManualClock clock;
  io::MemLoop loop(io::MemLoop::Options{8192, 8192, 3, &clock});
  uint64_t x = 88172645463325252ull;
  loop.filter = [&x](int, const uint8_t*, uint32_t) {  // 1% loss, xorshift (no allocation)
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x % 100 == 0 ? io::Fate::Drop : io::Fate::Deliver;
  };
  DeviceConfig ca, cb;
  ca.self.mac = {2, 0, 0, 0, 0, 1};
  ca.self.ip = {10, 0, 0, 1};
  cb.self.mac = {2, 0, 0, 0, 0, 2};
  cb.self.ip = {10, 0, 0, 2};
  cb.first_conn_id = 1000;
  auto a = Device::open(ca, loop.port(0), clock);
  auto b = Device::open(cb, loop.port(1), clock);
  ASSERT_TRUE(a && b);
  constexpr size_t kMem = 8 << 20;
  auto ma = std::make_unique<uint8_t[]>(kMem), mb = std::make_unique<uint8_t[]>(kMem);
  MemoryRegion ra, rb;
  const uint32_t acc = access::kLocalWrite | access::kRemoteWrite | access::kRemoteRead;
  ASSERT_EQ(a->reg_mr(ma.get(), kMem, acc, &ra), Result::Ok);
  ASSERT_EQ(b->reg_mr(mb.get(), kMem, acc, &rb), Result::Ok);
  uint32_t conn = 0, bconn = 0;
  ASSERT_EQ(a->connect(b->config().self, &conn), Result::Ok);
  ConnEvent ev;
  for (int k = 0; k < 100 && !bconn; ++k) {
    clock.advance(1);
    a->progress();
    b->progress();
    if (b->poll_events(&ev, 1) == 1) bconn = ev.conn;
  }
  ASSERT_NE(bconn, 0u);

  // The workload: keep up to 32 work requests in flight on 4 streams; every fourth one is a Send
  // (with a receive posted at B), a Read, or a Write-with-immediate (also consuming a receive).
  uint64_t posted = 0, completed = 0, bcompleted = 0, failures = 0;
  auto run = [&](uint64_t n_wr) {
    const uint64_t target = posted + n_wr;
    WorkCompletion wc[64];
    while (completed < target) {
      while (posted < target && posted - completed < 32) {
        const uint16_t st = uint16_t(posted % 4);
        const uint64_t off = (posted % 16) * 65536;
        Result r;
        switch (posted % 4) {
          case 0:
            b->post_recv(bconn, st, posted, Sge{rb.iova + 4 * 1048576 + off, 65536, rb.lkey});
            r = a->post_send(conn, st, posted, Sge{ra.iova + off, 65536, ra.lkey});
            break;
          case 1:
            r = a->post_read(conn, st, posted, Sge{ra.iova + 4 * 1048576 + off, 32768, ra.lkey}, rb.iova + off,
                             rb.rkey);
            break;
          case 2:
            b->post_recv(bconn, st, posted, Sge{rb.iova + 4 * 1048576 + off, 1, rb.lkey});
            r = a->post_write_imm(conn, st, posted, Sge{ra.iova + off, 65536, ra.lkey}, rb.iova + off, rb.rkey, 7);
            break;
          default:
            r = a->post_write(conn, st, posted, Sge{ra.iova + off, 65536, ra.lkey}, rb.iova + off, rb.rkey);
            break;
        }
        if (r != Result::Ok) break;
        ++posted;
      }
      clock.advance(1);
      a->progress();
      b->progress();
      for (int n; (n = a->poll_cq(wc, 64)) > 0;) {
        completed += uint64_t(n);
        for (int i = 0; i < n; ++i) failures += wc[i].status != Status::Success;
      }
      for (int n; (n = b->poll_cq(wc, 64)) > 0;) bcompleted += uint64_t(n);
    }
  };
  run(400);  // warm up: pools, caches, the timer wheel's levels
  g_allocs = 0;
  g_counting = true;
  run(4000);
  g_counting = false;
  const uint64_t allocs = g_allocs;
  EXPECT_EQ(allocs, 0u);
  EXPECT_EQ(failures, 0u);
  EXPECT_GT(a->counters().retransmissions, 0u);
  EXPECT_GT(loop.stats().dropped[0], 0u);
  std::printf("allocations during %llu work requests (%llu data packets, %llu retransmissions): %llu\n",
              (unsigned long long)4000, (unsigned long long)a->counters().data_sent,
              (unsigned long long)a->counters().retransmissions, (unsigned long long)allocs);
}

// The hook itself works: opening a device (which sizes its pools) is seen allocating.
TEST(EngineNoAlloc, CounterSeesAllocations) {
  io::ManualClock clock;
  io::MemLoop loop(io::MemLoop::Options{16, 16, 0, nullptr});
  g_allocs = 0;
  g_counting = true;
  auto d = Device::open(DeviceConfig{}, loop.port(0), clock);
  g_counting = false;
  EXPECT_TRUE(d);
  EXPECT_GT(g_allocs.load(), 0u);
}

}  // namespace
}  // namespace mroce::testing
