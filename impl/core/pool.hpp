// A fixed pool of T addressed by 32-bit index: allocation from a free stack, exhaustion reported as
// kNone, never a crash. Allocates only in init(). Checked against a std::set of live handles by
// properties/core/pool_test.cpp.
#pragma once

#include <cstdint>
#include <memory>

#include "core/sentinel.hpp"

namespace mroce::core {

template <class T>
class Pool {
 public:
  Pool() = default;
  void init(uint32_t n) {
    items_.reset(new T[n]);
    free_.reset(new uint32_t[n]);
    cap_ = n;
    free_n_ = n;
    for (uint32_t i = 0; i < n; ++i) free_[i] = n - 1 - i;
  }
  uint32_t alloc() noexcept {
    if (free_n_ == 0) return kNone;
    const uint32_t i = free_[--free_n_];
    items_[i] = T{};
    return i;
  }
  // Without resetting the item (for large items the caller initialises itself).
  uint32_t alloc_raw() noexcept { return free_n_ == 0 ? kNone : free_[--free_n_]; }
  void release(uint32_t i) noexcept { free_[free_n_++] = i; }
  T& operator[](uint32_t i) noexcept { return items_[i]; }
  const T& operator[](uint32_t i) const noexcept { return items_[i]; }
  uint32_t capacity() const noexcept { return cap_; }
  uint32_t in_use() const noexcept { return cap_ - free_n_; }
  uint32_t available() const noexcept { return free_n_; }

 private:
  std::unique_ptr<T[]> items_;
  std::unique_ptr<uint32_t[]> free_;
  uint32_t cap_ = 0, free_n_ = 0;
};

}  // namespace mroce::core
