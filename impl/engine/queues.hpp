// The engine's output queues: the completion queue and the connection event queue (one ring type),
// and the test hook that records the order of everything the engine outputs (frames, completions,
// events) for the lockstep comparison.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>

namespace mroce::engine {

// A power-of-two ring filled by the engine and drained by the application; full = the entry is lost
// (the caller counts the overflow).
template <class T>
class Ring {
 public:
  void init(uint32_t min_size) {
    const uint32_t n = std::bit_ceil(std::max<uint32_t>(min_size, 2));
    items_.reset(new T[n]);
    mask_ = n - 1;
  }
  bool push(const T& x) noexcept {
    if (tail_ - head_ > mask_) return false;
    items_[tail_++ & mask_] = x;
    return true;
  }
  int pop(T* out, int max) noexcept {
    int n = 0;
    while (n < max && head_ != tail_) out[n++] = items_[head_++ & mask_];
    return n;
  }
  uint64_t bytes() const noexcept { return uint64_t(mask_ + 1) * sizeof(T); }

 private:
  std::unique_ptr<T[]> items_;
  uint32_t mask_ = 0, head_ = 0, tail_ = 0;
};

enum class Output : uint8_t { Frame = 0, Completion = 1, Event = 2 };

// testing::DeviceHooks::record_output_order: the kinds of outputs in the order they were produced.
class OutputLog {
 public:
  static constexpr uint32_t kCapacity = 1 << 16;
  void record(bool on) {
    if (on && !kinds_) kinds_.reset(new uint8_t[kCapacity]);
    on_ = on;
    n_ = 0;
  }
  size_t take(uint8_t* kinds, size_t max) noexcept {
    const size_t n = std::min<size_t>(n_, max);
    if (n) std::memcpy(kinds, kinds_.get(), n);
    n_ = 0;
    return n;
  }
  void log(Output kind) noexcept {
    if (on_ && n_ < kCapacity) kinds_[n_++] = uint8_t(kind);
  }

 private:
  bool on_ = false;
  std::unique_ptr<uint8_t[]> kinds_;
  uint32_t n_ = 0;
};

}  // namespace mroce::engine
