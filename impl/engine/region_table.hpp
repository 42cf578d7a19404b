// The region table [R-MEM-1..4]: registered memory regions, their keys, and the lookups of local
// buffers (lkey, or the region resolved at post time) and of remote targets (rkey).
//
// The key scheme lives in two functions only: keys_of (slot -> lkey, rkey) and slot_of (key -> slot).
// Nothing else in the engine computes with a key; to change the scheme, change those two (and
// kMaxSlots, the number of slots the scheme can name).
#pragma once

#include <cstdint>
#include <vector>

#include "core/sentinel.hpp"
#include "mroce/mroce.hpp"

namespace mroce::engine {

struct Region {
  uint8_t* host = nullptr;
  uint64_t iova = 0;
  uint64_t length = 0;
  uint32_t access = 0;
  uint32_t lkey = 0, rkey = 0;
  bool valid = false;
  // [start, start + len) inside the region, without overflow.
  bool contains(uint64_t start, uint64_t len) const noexcept {
    if (start < iova) return false;
    const uint64_t off = start - iova;
    return off <= length && len <= length - off;
  }
};

class RegionTable {
 public:
  void init(uint32_t max_regions) {
    max_regions_ = max_regions;
    regions_.reserve(max_regions);
  }

  // [R-MEM-1] a new region and its keys (never reused: deregistered slots stay invalid [R-MEM-2]).
  Result reg(void* addr, uint64_t length, uint32_t access, uint64_t iova, MemoryRegion* out);
  Result dereg(uint32_t lkey);  // [R-MEM-2]

  // The valid region a key names, or nullptr.
  const Region* by_lkey(uint32_t lkey) const noexcept { return named(slot_of(lkey, false), lkey, false); }
  const Region* by_rkey(uint32_t rkey) const noexcept { return named(slot_of(rkey, true), rkey, true); }
  // [R-MEM-4] a local buffer of a work request: a valid region named by its lkey holding the whole
  // buffer, with local write access if the engine writes into it.
  const Region* local_buffer(const Sge& buf, bool need_write) const noexcept {
    const Region* r = by_lkey(buf.lkey);
    if (!r || !r->contains(buf.addr, buf.length) || (need_write && !(r->access & access::kLocalWrite))) return nullptr;
    return r;
  }
  // The model looks a local buffer up as "the first valid region containing it". While no two valid
  // regions overlap, that is the region resolved at post time (`slot`) if it is still valid, in O(1).
  const Region* local(uint32_t slot, uint64_t va, uint64_t len) const noexcept {
    if (slot != core::kNone && !any_overlap_ && len > 0) {
      const Region& r = regions_[slot];
      if (r.valid && r.contains(va, len)) return &r;
    }
    return containing(va, len);
  }
  // Host address of [iova, iova + len) in some valid region, or nullptr.
  uint8_t* resolve(uint64_t iova, uint64_t len) const noexcept {
    const Region* r = containing(iova, len);
    return r ? r->host + (iova - r->iova) : nullptr;
  }
  uint32_t slot(const Region& r) const noexcept { return uint32_t(&r - regions_.data()); }

 private:
  struct Keys {
    uint32_t lkey, rkey;
  };
  static constexpr uint32_t kMaxSlots = 0xFFFFFEu;  // (slot + 1) << 8 must fit an rkey
  // The key scheme: the keys of slot i, and the slot a key names (kNone-or-out-of-range if none;
  // the caller checks the slot's stored key, so a stale or forged key never matches) [R-MEM-1].
  static Keys keys_of(uint32_t i) noexcept { return {0x1000u + i, ((i + 1u) << 8) | ((i * 97u + 13u) & 0xFFu)}; }
  static uint32_t slot_of(uint32_t key, bool remote) noexcept { return remote ? (key >> 8) - 1 : key - 0x1000u; }

  const Region* named(uint32_t i, uint32_t key, bool remote) const noexcept {
    if (i >= regions_.size()) return nullptr;
    const Region& r = regions_[i];
    return r.valid && (remote ? r.rkey : r.lkey) == key ? &r : nullptr;
  }
  const Region* containing(uint64_t va, uint64_t len) const noexcept {
    for (const Region& r : regions_)
      if (r.valid && r.contains(va, len)) return &r;
    return nullptr;
  }
  void recompute_overlap();

  std::vector<Region> regions_;
  uint32_t max_regions_ = 0;
  bool any_overlap_ = false;  // two valid regions overlap: resolve local buffers by search
};

}  // namespace mroce::engine
