// The region table: registration and deregistration (see region_table.hpp).
#include "engine/region_table.hpp"

#include <algorithm>
#include <utility>

namespace mroce::engine {

Result RegionTable::reg(void* addr, uint64_t length, uint32_t access, uint64_t iova, MemoryRegion* out) {
  if (!out || (!addr && length)) return Result::InvalidArgument;
  if (regions_.size() >= max_regions_ || regions_.size() >= kMaxSlots) return Result::NoResources;
  const uint32_t i = static_cast<uint32_t>(regions_.size());
  const Keys k = keys_of(i);
  const Region r{.host = static_cast<uint8_t*>(addr),
                 .iova = iova,
                 .length = length,
                 .access = access,
                 .lkey = k.lkey,
                 .rkey = k.rkey,
                 .valid = true};
  for (const Region& o : regions_)
    if (o.valid && length && o.length && r.iova < o.iova + o.length && o.iova < r.iova + length) any_overlap_ = true;
  regions_.push_back(r);
  *out = MemoryRegion{r.lkey, r.rkey, r.iova, r.length};
  return Result::Ok;
}

Result RegionTable::dereg(uint32_t lkey) {
  const uint32_t i = slot_of(lkey, false);
  if (!named(i, lkey, false)) return Result::UnknownKey;
  regions_[i].valid = false;  // [R-MEM-2]
  recompute_overlap();
  return Result::Ok;
}

void RegionTable::recompute_overlap() {
  std::vector<std::pair<uint64_t, uint64_t>> iv;
  for (const Region& r : regions_)
    if (r.valid && r.length) iv.emplace_back(r.iova, r.iova + r.length);
  std::sort(iv.begin(), iv.end());
  any_overlap_ = false;
  for (size_t i = 1; i < iv.size(); ++i)
    if (iv[i].first < iv[i - 1].second) any_overlap_ = true;
}

}  // namespace mroce::engine
