// The region table [R-MEM-1..5]: registered memory regions, their keys and protection domains, and the
// lookups of local buffers (lkey, or the region resolved at post time) and of remote targets (rkey).
//
// The key scheme lives in two functions only: keys_of (slot, generation -> lkey, rkey) and slot_of
// (key -> slot). Nothing else in the engine computes with a key; to change the scheme, change those
// two. Keys are opaque and unpredictable [R-MEM-1]: a key is a keyed pseudo-random permutation
// (Secrets::permute32, one per key kind) of the word (generation << slot_bits | slot), so slot_of is
// the inverse permutation, O(1) and without a map. A deregistered slot is reused (oldest first) with
// the next generation: its old keys name the slot but no longer match its stored keys [R-MEM-2].
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <vector>

#include "core/sentinel.hpp"
#include "engine/secrets.hpp"
#include "mroce/mroce.hpp"

namespace mroce::engine {

struct Region {
  uint8_t* host = nullptr;
  uint64_t iova = 0;
  uint64_t length = 0;
  uint64_t order = 0;  // registration order: resolve() answers with the oldest region holding an address
  uint32_t access = 0;
  uint32_t lkey = 0, rkey = 0;
  uint32_t generation = 0;  // of its slot: bumped on every reuse
  uint32_t pd = 0;          // protection domain [R-MEM-5]
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
  // At most max_regions live regions at a time (at most 2^24); `secrets` outlives the table.
  void init(uint32_t max_regions, const Secrets& secrets);

  // [R-MEM-1] a new region in protection domain `pd`, and its keys: in a free slot (deregistered
  // slots are reused with a new generation, so churn is unbounded) [R-MEM-2].
  Result reg(void* addr, uint64_t length, uint32_t access, uint64_t iova, uint32_t pd, MemoryRegion* out);
  Result dereg(uint32_t lkey);  // [R-MEM-2]
  // Whether a valid region is in protection domain `pd`.
  bool pd_in_use(uint32_t pd) const noexcept;

  // The valid region a key names, or nullptr.
  const Region* by_lkey(uint32_t lkey) const noexcept { return named(slot_of(lkey, false), lkey, false); }
  // [R-MEM-3], [R-MEM-5] the valid region an rkey names, if it is in the connection's domain.
  const Region* by_rkey(uint32_t rkey, uint32_t pd) const noexcept {
    const Region* r = named(slot_of(rkey, true), rkey, true);
    return r && r->pd == pd ? r : nullptr;
  }
  // [R-MEM-4], [R-MEM-5] a local buffer of a work request on a connection of domain `pd`: a valid
  // region of that domain named by its lkey holding the whole buffer, with local write access if the
  // engine writes into it.
  const Region* local_buffer(const Sge& buf, bool need_write, uint32_t pd) const noexcept {
    const Region* r = by_lkey(buf.lkey);
    if (!r || r->pd != pd || !r->contains(buf.addr, buf.length) || (need_write && !(r->access & access::kLocalWrite)))
      return nullptr;
    return r;
  }
  // [R-MEM-6] The region a buffer's key named when it was checked (its slot and that slot's
  // generation), if it is still registered and holds [va, va + len): a buffer's bytes are read and
  // written there, never in a region found by address (regions may overlap: two registrations of the
  // same memory, or offset-mode regions at the same iova over different memory).
  const Region* held(uint32_t slot, uint32_t generation, uint64_t va, uint64_t len) const noexcept {
    if (slot >= regions_.size()) return nullptr;
    const Region& r = regions_[slot];
    return r.valid && r.generation == generation && r.contains(va, len) ? &r : nullptr;
  }
  // Host address of [iova, iova + len) in the oldest valid region holding it, or nullptr: the
  // application's view of its memory (Device::resolve), never the protocol's.
  uint8_t* resolve(uint64_t iova, uint64_t len) const noexcept {
    const Region* r = containing(iova, len);
    return r ? r->host + (iova - r->iova) : nullptr;
  }
  uint32_t slot(const Region& r) const noexcept { return uint32_t(&r - regions_.data()); }

 private:
  struct Keys {
    uint32_t lkey, rkey;
  };
  static constexpr uint32_t kMaxSlotBits = 24;  // leaves at least 8 bits of generation
  // The key scheme: the keys of a slot's generation, and the slot a key names (the caller checks
  // the slot's stored key, so a stale or forged key never matches) [R-MEM-1], [R-MEM-2].
  Keys keys_of(uint32_t slot, uint32_t generation) const noexcept {
    const uint32_t word = generation << slot_bits_ | slot;  // the generation's high bits wrap away
    return {secrets_->permute32(Secrets::Purpose::Lkey, word), secrets_->permute32(Secrets::Purpose::Rkey, word)};
  }
  uint32_t slot_of(uint32_t key, bool remote) const noexcept {
    // The permutation costs 4 SipHash calls (about 1,000 instructions), and keys are looked up per
    // post and per packet, so their inverses are cached (a key's slot never changes: the cache needs
    // no invalidation).
    const auto kind = remote ? Secrets::Purpose::Rkey : Secrets::Purpose::Lkey;
    auto& cache = remote ? rkey_cache_ : lkey_cache_;
    Inverse& hit = cache[key % cache.size()];
    if (!hit.known || hit.key != key) hit = {key, secrets_->unpermute32(kind, key) & slot_mask_, true};
    return hit.slot;
  }

  const Region* named(uint32_t i, uint32_t key, bool remote) const noexcept {
    if (i >= regions_.size()) return nullptr;
    const Region& r = regions_[i];
    return r.valid && (remote ? r.rkey : r.lkey) == key ? &r : nullptr;
  }
  // The oldest valid region containing [va, va + len), as the model's list of registrations.
  const Region* containing(uint64_t va, uint64_t len) const noexcept {
    const Region* first = nullptr;
    for (const Region& r : regions_)
      if (r.valid && r.contains(va, len) && (!first || r.order < first->order)) first = &r;
    return first;
  }

  struct Inverse {
    uint32_t key = 0, slot = 0;
    bool known = false;
  };
  const Secrets* secrets_ = nullptr;
  std::vector<Region> regions_;
  std::deque<uint32_t> free_slots_;  // deregistered, reused oldest first (a slot's keys repeat late)
  mutable std::array<Inverse, 64> rkey_cache_{}, lkey_cache_{};
  uint32_t max_regions_ = 0;
  uint32_t slot_bits_ = 0, slot_mask_ = 0;
  uint64_t registrations_ = 0;
};

}  // namespace mroce::engine
