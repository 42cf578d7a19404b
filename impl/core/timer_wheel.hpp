// A hierarchical timer wheel holding one exact deadline per owner. Allocates only in init().
// Checked against a std::multimap of deadlines by properties/core/timer_wheel_test.cpp.
#pragma once

#include <bit>
#include <cstdint>
#include <memory>

#include "core/sentinel.hpp"

namespace mroce::core {

// One entry per owner (a connection slot), holding its exact next deadline. 11 levels of 64 slots at
// 1 µs resolution (the whole 64-bit range). An entry with deadline D sits at the level of the highest 6-bit digit
// where D differs from the wheel's time `cur_`, in the slot of that digit; all entries have D >= cur_.
// Insert, move and remove are O(1); expiring walks occupied slots only (one bitmap word per level).
// Time only moves forward: expire(t) and first_due(t) never move the wheel's time past t, and a
// deadline armed before the wheel's time (overdue) is kept as the wheel's time: it fires at the next
// expire().
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

}  // namespace mroce::core
