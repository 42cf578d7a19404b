// The region table: registration and deregistration (see region_table.hpp).
#include "engine/region_table.hpp"

#include <algorithm>
#include <bit>

namespace mroce::engine {

void RegionTable::init(uint32_t max_regions, const Secrets& secrets) {
  secrets_ = &secrets;
  max_regions_ = std::min(max_regions, 1u << kMaxSlotBits);
  slot_bits_ = max_regions_ > 1 ? uint32_t(std::bit_width(max_regions_ - 1)) : 0;
  slot_mask_ = (1u << slot_bits_) - 1;
  regions_.reserve(max_regions_);
}

Result RegionTable::reg(void* addr, uint64_t length, uint32_t access, uint64_t iova, uint32_t pd, MemoryRegion* out) {
  if (!out || (!addr && length)) return Result::InvalidArgument;
  uint32_t i;
  uint32_t generation = 0;
  if (!free_slots_.empty()) {
    i = free_slots_.front();
    free_slots_.pop_front();
    generation = regions_[i].generation + 1;
  } else {
    if (regions_.size() >= max_regions_) return Result::NoResources;
    i = static_cast<uint32_t>(regions_.size());
    regions_.emplace_back();
  }
  // Key 0 is never issued (a zeroed MemoryRegion or Sge names no region): the one generation of a
  // slot whose word maps to 0 is skipped.
  Keys k = keys_of(i, generation);
  while (k.lkey == 0 || k.rkey == 0) k = keys_of(i, ++generation);
  const Region r{.host = static_cast<uint8_t*>(addr),
                 .iova = iova,
                 .length = length,
                 .order = registrations_++,
                 .access = access,
                 .lkey = k.lkey,
                 .rkey = k.rkey,
                 .generation = generation,
                 .pd = pd,
                 .valid = true};
  regions_[i] = r;
  *out = MemoryRegion{r.lkey, r.rkey, r.iova, r.length};
  return Result::Ok;
}

Result RegionTable::dereg(uint32_t lkey) {
  const uint32_t i = slot_of(lkey, false);
  if (!named(i, lkey, false)) return Result::UnknownKey;
  regions_[i].valid = false;  // [R-MEM-2]; its keys no longer match once the slot is reused
  free_slots_.push_back(i);
  return Result::Ok;
}

bool RegionTable::pd_in_use(uint32_t pd) const noexcept {
  for (const Region& r : regions_)
    if (r.valid && r.pd == pd) return true;
  return false;
}

}  // namespace mroce::engine
