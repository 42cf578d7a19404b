// Two engines back to back over the in-memory loop (impl/io/mem_loop.hpp), in virtual time: frames
// take `delay` µs, a filter may drop frames or mark them CE, and run() moves the clock from event to
// event (the next delivery or the next timer of either device).
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <vector>

#include "codec/fast_codec.hpp"
#include "io/mem_loop.hpp"
#include "mroce/mroce.hpp"

namespace mroce::testing {

inline DeviceConfig engine_config(int side) {
  DeviceConfig c;
  c.self.mac = {0x02, 0, 0, 0, 0, uint8_t(side + 1)};
  c.self.ip = {10, 0, 0, uint8_t(side + 1)};
  c.first_conn_id = side == 0 ? 0x100 : 0x200;
  c.isn = side == 0 ? 0xFFFFFFF0u : 0x7FFFFFF8u;  // wraparound on A's paths
  c.max_connections = 64;
  c.max_work_requests = 4096;
  c.max_receives = 4096;
  c.cq_size = 4096;
  return c;
}

class EnginePair {
 public:
  static constexpr uint64_t kBase = 0x10000;  // iova of each side's region
  using Filter = std::function<io::Fate(int from, const fast::PacketView& v)>;

  // nic_timestamps false: frames arrive without rx timestamps, as on real ports (delay must be 0).
  explicit EnginePair(DeviceConfig a = engine_config(0), DeviceConfig b = engine_config(1), uint64_t delay = 5,
                      uint32_t buffers = 16384, bool nic_timestamps = true)
      : loop_(io::MemLoop::Options{buffers, 16384, delay, nic_timestamps ? &clock_ : nullptr}) {
    dev_[0] = Device::open(a, loop_.port(0), clock_);
    dev_[1] = Device::open(b, loop_.port(1), clock_);
    loop_.filter = [this](int from, const uint8_t* f, uint32_t len) {
      ++frames_[from];
      if (!filter) return io::Fate::Deliver;
      fast::PacketView v;
      if (fast::decode(f, len, 4793, v) != fast::Error::None) return io::Fate::Deliver;
      return filter(from, v);
    };
  }

  Device& dev(int i) { return *dev_[i]; }
  io::MemLoop& loop() { return loop_; }
  io::ManualClock& clock() { return clock_; }
  Time now() const { return clock_.now_us(); }

  Filter filter;
  std::vector<WorkCompletion> completions[2];
  std::vector<ConnEvent> events[2];
  uint32_t conn[2] = {0, 0};
  MemoryRegion mr[2];
  std::unique_ptr<uint8_t[]> mem[2];
  uint64_t frames_[2] = {0, 0};

  void collect() {
    for (int i = 0; i < 2; ++i) {
      WorkCompletion wc[64];
      for (int n; (n = dev_[i]->poll_cq(wc, 64)) > 0;) completions[i].insert(completions[i].end(), wc, wc + n);
      ConnEvent ev[64];
      for (int n; (n = dev_[i]->poll_events(ev, 64)) > 0;)
        for (int k = 0; k < n; ++k) {
          events[i].push_back(ev[k]);
          if (ev[k].kind == ConnEvent::Kind::Up && conn[i] == 0) conn[i] = ev[k].conn;
        }
    }
  }

  // Processes everything due now on both sides (repeating until no frame is left to receive now).
  void step() {
    for (;;) {
      int n = dev_[0]->progress();
      n += dev_[1]->progress();
      collect();
      if (n == 0) break;
    }
  }

  // Runs until `until`, or until nothing is in flight and `done` holds.
  void run(Time until, const std::function<bool()>& done = nullptr) {
    step();
    while (now() <= until) {
      if (done && loop_.in_flight() == 0 && done()) return;
      Time next = until + 1;
      next = std::min<Time>(next, loop_.next_delivery());
      for (int i = 0; i < 2; ++i)
        if (auto d = dev_[i]->next_deadline()) next = std::min(next, *d);
      if (next > until) {
        clock_.set(until);
        step();
        return;
      }
      // Deadlines are exact and re-armed after firing, so time always moves on.
      clock_.set(std::max(next, now()));
      step();
    }
  }

  // Registers `bytes` at iova 0x10000 on each side with every right, and connects A to B.
  void setup(uint64_t bytes = 1 << 20) {
    register_regions(bytes);
    uint32_t id = 0;
    dev_[0]->connect(dev_[1]->config().self, &id);
    run(now() + 1000, [&] { return conn[0] != 0 && conn[1] != 0; });
  }

  // The registration half of setup(), for tests that connect on their own.
  void register_regions(uint64_t bytes = 1 << 20) {
    for (int i = 0; i < 2; ++i) {
      mem[i] = std::make_unique<uint8_t[]>(bytes);
      std::fill(mem[i].get(), mem[i].get() + bytes, 0);
      dev_[i]->reg_mr(mem[i].get(), bytes, access::kLocalWrite | access::kRemoteWrite | access::kRemoteRead, &mr[i],
                      kBase);
    }
  }

  uint8_t* at(int side, uint64_t iova) { return mem[side].get() + (iova - kBase); }
  void fill(int side, uint64_t iova, size_t n, uint8_t seed) {
    for (size_t i = 0; i < n; ++i) at(side, iova)[i] = uint8_t(seed + i * 7 + (i >> 8));
  }
  bool same(int a, uint64_t va, int b, uint64_t vb, size_t n) {
    return std::equal(at(a, va), at(a, va) + n, at(b, vb));
  }

 private:
  io::ManualClock clock_;
  io::MemLoop loop_;
  std::unique_ptr<Device> dev_[2];
};

}  // namespace mroce::testing
