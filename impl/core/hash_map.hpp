// An open-addressing hash map u64 -> u32 (linear probing, backward-shift delete: no tombstones, so
// probe runs never degrade). Allocates only in init(). Checked against std::unordered_map by
// properties/core/hash_map_test.cpp.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>

#include "core/sentinel.hpp"

namespace mroce::core {

// Keys are unique: insert() requires the key to be absent, and at most max_entries keys are present
// at once (the table has at least twice as many slots, so probing always meets an empty one).
class HashMap {
 public:
  void init(uint32_t max_entries) {
    cap_ = std::bit_ceil(max_entries * 2u < 16u ? 16u : max_entries * 2u);
    keys_.reset(new uint64_t[cap_]);
    vals_.reset(new uint32_t[cap_]);
    for (uint32_t i = 0; i < cap_; ++i) vals_[i] = kNone;
  }
  uint32_t find(uint64_t key) const noexcept {
    for (uint32_t i = slot(key);; i = (i + 1) & (cap_ - 1)) {
      if (vals_[i] == kNone) return kNone;
      if (keys_[i] == key) return vals_[i];
    }
  }
  void insert(uint64_t key, uint32_t val) noexcept {  // key must be absent; the map never fills (2x)
    uint32_t i = slot(key);
    while (vals_[i] != kNone) i = (i + 1) & (cap_ - 1);
    keys_[i] = key;
    vals_[i] = val;
  }
  void erase(uint64_t key) noexcept {
    uint32_t i = slot(key);
    for (;; i = (i + 1) & (cap_ - 1)) {
      if (vals_[i] == kNone) return;
      if (keys_[i] == key) break;
    }
    // Backward shift: pull later members of the probe run into the hole.
    uint32_t j = i;
    for (;;) {
      j = (j + 1) & (cap_ - 1);
      if (vals_[j] == kNone) break;
      const uint32_t home = slot(keys_[j]);
      // Move j into i if its home is not in the cyclic range (i, j].
      const bool in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
      if (!in_range) {
        keys_[i] = keys_[j];
        vals_[i] = vals_[j];
        i = j;
      }
    }
    vals_[i] = kNone;
  }
  uint64_t bytes() const noexcept { return uint64_t(cap_) * 12; }
  uint32_t capacity() const noexcept { return cap_; }  // slots (a power of two, at least 2 x entries)
  // The home slot of a key (where its probe run starts); for tests that build collision chains.
  uint32_t home(uint64_t key) const noexcept { return slot(key); }
  // The most slots a find() visits for a present key (1: every key in its home slot). For tests;
  // O(capacity).
  uint32_t longest_probe() const noexcept {
    uint32_t longest = 0;
    for (uint32_t i = 0; i < cap_; ++i)
      if (vals_[i] != kNone) longest = std::max(longest, ((i - slot(keys_[i])) & (cap_ - 1)) + 1);
    return longest;
  }

 private:
  uint32_t slot(uint64_t k) const noexcept {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return uint32_t(k) & (cap_ - 1);
  }
  std::unique_ptr<uint64_t[]> keys_;
  std::unique_ptr<uint32_t[]> vals_;
  uint32_t cap_ = 0;
};

}  // namespace mroce::core
