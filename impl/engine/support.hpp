// Data-path building blocks of the engine: variable-length bitmaps, fixed pools, an open-addressing hash
// map and a hierarchical timer wheel. None allocates after construction.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>

namespace mroce::engine {

inline constexpr uint32_t kNone = 0xFFFFFFFFu;
inline constexpr uint64_t kNever = UINT64_MAX;

// ---- variable-length bitmap over caller storage (per-connection path and stream sets) -------------

struct BitSpan {
  uint64_t* w = nullptr;
  uint32_t bits = 0;
  uint32_t count = 0;  // set bits, kept by put()

  uint32_t words() const noexcept { return (bits + 63) / 64; }
  bool test(uint32_t j) const noexcept { return (w[j >> 6] >> (j & 63)) & 1u; }
  void put(uint32_t j, bool v) noexcept {
    const uint64_t m = uint64_t{1} << (j & 63);
    uint64_t& x = w[j >> 6];
    if (((x & m) != 0) == v) return;
    x ^= m;
    if (v)
      ++count;
    else
      --count;
  }
  bool any() const noexcept { return count != 0; }
  // Lowest set bit at or after j, or kNone.
  uint32_t next(uint32_t j) const noexcept {
    const uint32_t n = words();
    while (j < bits) {
      const uint64_t m = w[j >> 6] & (~uint64_t{0} << (j & 63));
      if (m) {
        const uint32_t r = (j & ~63u) + uint32_t(std::countr_zero(m));
        return r < bits ? r : kNone;
      }
      j = (j & ~63u) + 64;
      if ((j >> 6) >= n) break;
    }
    return kNone;
  }
  // First set bit at or after `start`, wrapping around (round robin); kNone when empty.
  uint32_t next_cyclic(uint32_t start) const noexcept {
    const uint32_t a = next(start);
    if (a != kNone) return a;
    return start ? next(0) : kNone;
  }
};

// ---- fixed pool of T, addressed by 32-bit index -----------------------------------------------------

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

// ---- open-addressing hash map u64 -> u32 (linear probing, backward-shift delete) -------------------

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

// ---- hierarchical timer wheel ------------------------------------------------------------------------
//
// One entry per owner (a connection slot), holding its exact next deadline. 11 levels of 64 slots at
// 1 µs resolution (the whole 64-bit range). An entry with deadline D sits at the level of the highest 6-bit digit
// where D differs from the wheel's time `cur_`, in the slot of that digit; all entries have D >= cur_.
// Insert, move and remove are O(1); expiring walks occupied slots only (one bitmap word per level).
class TimerWheel {
 public:
  static constexpr int kLevels = 11;  // 66 bits: every 64-bit deadline has a level

  void init(uint32_t owners) {
    node_.reset(new Node[owners]);
    for (uint32_t i = 0; i < owners; ++i) node_[i] = Node{};
    for (auto& l : head_)
      for (auto& h : l) h = kNone;
  }

  bool armed(uint32_t id) const noexcept { return node_[id].armed; }
  uint64_t deadline(uint32_t id) const noexcept { return node_[id].armed ? node_[id].deadline : kNever; }

  // Sets (or moves) the owner's deadline; kNever disarms.
  void arm(uint32_t id, uint64_t d) noexcept {
    Node& n = node_[id];
    if (d == kNever) return disarm(id);
    if (n.armed) {
      if (n.deadline == d) return;
      if (n.deadline == min_cache_) min_cache_valid_ = false;
      unlink(id);
    }
    n.deadline = d;
    place(id);
    if (min_cache_valid_ && n.deadline < min_cache_) min_cache_ = n.deadline;
    if (n.deadline < lb_) lb_ = n.deadline;
  }
  void disarm(uint32_t id) noexcept {
    Node& n = node_[id];
    if (!n.armed) return;
    unlink(id);
    if (n.deadline == min_cache_) min_cache_valid_ = false;
  }

  // The earliest deadline (exact), kNever when empty.
  uint64_t min() const noexcept {
    if (min_cache_valid_) return min_cache_;
    uint64_t best = kNever;
    for (int l = 0; l < kLevels; ++l) {
      if (!occ_[l]) continue;
      // Slots of a level are ordered; the lowest occupied one holds the level's earliest entries, and a
      // lower level always precedes a higher one.
      const uint32_t s = uint32_t(std::countr_zero(occ_[l]));
      if (l == 0) {
        best = (cur_ & ~uint64_t{63}) | s;
        break;
      }
      for (uint32_t i = head_[l][s]; i != kNone; i = node_[i].next)
        if (node_[i].deadline < best) best = node_[i].deadline;
      break;
    }
    min_cache_ = best;
    min_cache_valid_ = true;
    return best;
  }

  // The earliest deadline if it is <= t, else kNever. May cascade entries to lower levels, but never
  // moves the wheel's time past t (so later deadlines >= t can still be placed exactly).
  uint64_t first_due(uint64_t t) noexcept {
    if (t < cur_ || t < lb_) return kNever;
    for (;;) {
      int lvl = -1;
      for (int l = 0; l < kLevels; ++l)
        if (occ_[l]) {
          lvl = l;
          break;
        }
      if (lvl < 0) {
        lb_ = kNever;
        return kNever;
      }
      const uint32_t s = uint32_t(std::countr_zero(occ_[lvl]));
      if (lvl == 0) {
        const uint64_t d = (cur_ & ~uint64_t{63}) | s;
        if (d <= t) return d;
        lb_ = d;  // nothing is due before d
        return kNever;
      }
      // Earliest possible time of that slot; cascade its entries if it has begun.
      const unsigned shift = 6u * unsigned(lvl);
      const uint64_t keep = shift + 6 >= 64 ? 0 : ~((uint64_t{1} << (shift + 6)) - 1);
      const uint64_t start = (cur_ & keep) | (uint64_t(s) << shift);
      if (start > t) {
        lb_ = start;  // nothing is due before that slot begins
        return kNever;
      }
      cur_ = start;
      uint32_t i = head_[lvl][s];
      head_[lvl][s] = kNone;
      occ_[lvl] &= ~(uint64_t{1} << s);
      while (i != kNone) {
        const uint32_t nx = node_[i].next;
        node_[i].armed = false;
        place(i);
        i = nx;
      }
    }
  }

  // Removes every entry with deadline <= t, appending owner ids to out[]; returns the count. out must
  // have room for every armed owner.
  uint32_t expire(uint64_t t, uint32_t* out) noexcept {
    uint32_t n = 0;
    for (;;) {
      const uint64_t d = first_due(t);
      if (d == kNever) break;
      cur_ = d;
      const uint32_t s = uint32_t(d & 63);
      while (head_[0][s] != kNone) {
        const uint32_t id = head_[0][s];
        unlink(id);
        out[n++] = id;
      }
    }
    if (n) min_cache_valid_ = false;
    return n;
  }

 private:
  struct Node {
    uint64_t deadline = 0;
    uint32_t prev = kNone, next = kNone;
    uint8_t level = 0, slot = 0;
    bool armed = false;
  };
  void place(uint32_t id) noexcept {
    Node& n = node_[id];
    if (n.deadline < cur_) n.deadline = cur_;  // overdue: fires at the wheel's time
    const uint64_t x = n.deadline ^ cur_;
    const int lvl = x ? (63 - std::countl_zero(x)) / 6 : 0;
    const uint32_t s = uint32_t(n.deadline >> (6 * lvl)) & 63u;
    n.level = uint8_t(lvl);
    n.slot = uint8_t(s);
    n.prev = kNone;
    n.next = head_[lvl][s];
    if (n.next != kNone) node_[n.next].prev = id;
    head_[lvl][s] = id;
    occ_[lvl] |= uint64_t{1} << s;
    n.armed = true;
  }
  void unlink(uint32_t id) noexcept {
    Node& n = node_[id];
    if (n.prev != kNone)
      node_[n.prev].next = n.next;
    else
      head_[n.level][n.slot] = n.next;
    if (n.next != kNone) node_[n.next].prev = n.prev;
    if (head_[n.level][n.slot] == kNone) occ_[n.level] &= ~(uint64_t{1} << n.slot);
    n.armed = false;
  }

  std::unique_ptr<Node[]> node_;
  uint32_t head_[kLevels][64];
  uint64_t occ_[kLevels] = {};
  uint64_t cur_ = 0;
  uint64_t lb_ = 0;  // no entry is due before this (a lower bound kept by arm and first_due)
  mutable uint64_t min_cache_ = kNever;
  mutable bool min_cache_valid_ = true;
};

}  // namespace mroce::engine
