// fid_mr (DESIGN.md 5.2): Device::reg_mr. fi_mr_key is the engine's rkey, which is unpredictable
// [R-MEM-1] (drawn from the device secret): the provider always chooses keys (FI_MR_PROV_KEY), and
// the application's requested_key is ignored. fi_mr_desc is the registration itself (it holds the
// lkey). With FI_MR_VIRT_ADDR remote addresses are virtual addresses (iova = the pointer).
// Offset mode: iova 0 for every region would make them all overlap in the engine's iova space. Each
// region gets its own 4 GiB iova window (kWindowBase below), and fi_mr_key is window | rkey
// (mr_key_size 8). Since A-42 ([R-MEM-6]) the engine reads and writes only the region a key names, so
// the windows are no longer what keeps regions apart; they keep every address one region's, which
// Device::resolve and the tests' memory checks rely on. The initiator turns (offset, key) into
// (iova, rkey) (rma.cpp remote_target).
#include <sys/uio.h>

#include <map>
#include <utility>

#include "fi/objects.hpp"
#include "fi/provider.hpp"

namespace mroce::fi {
namespace {

// The application's regions by (device, rkey): RMA between endpoints of one device. Host mutex.
std::map<std::pair<Device*, uint32_t>, MemoryRegistration*> g_regions;
uint64_t g_next_window = 1;  // offset mode: n of the next region's iova window. Host mutex.

// Offset-mode windows: 2^63 + (n << 32), n in [1, 2^30]: above every user-space pointer (the iova of
// the provider's own regions, registered at their addresses), so no window overlaps them.
constexpr uint64_t kWindowBase = uint64_t{1} << 63;
constexpr uint64_t kWindows = uint64_t{1} << 30;

constexpr uint64_t kAccessBits = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;

// libfabric access flags -> engine rights [R-MEM-1]. Buffers the provider writes into locally (a
// receive, the sink of a read) need LocalWrite; no flag at all means local send use only.
uint32_t engine_access(uint64_t access) {
  uint32_t rights = 0;
  if (access & (FI_RECV | FI_READ)) rights |= access::kLocalWrite;
  if (access & FI_REMOTE_WRITE) rights |= access::kRemoteWrite;
  if (access & FI_REMOTE_READ) rights |= access::kRemoteRead;
  return rights;
}

int mr_close(struct fid* fid) {
  return guarded(FI_LOG_MR, "fi_close(mr)", [&]() -> int {
    auto* mr = object_of<MemoryRegistration>(fid);
    Domain* domain = mr->domain;
    {
      std::lock_guard lock(domain->host->mutex());
      g_regions.erase({domain->device, mr->region.rkey});
      const Result r = domain->device->dereg_mr(mr->region.lkey);
      if (r != Result::Ok) {
        FI_WARN(&g_provider, FI_LOG_MR, "dereg_mr: %s\n", result_name(r));
        return -FI_EINVAL;
      }
    }
    domain->dependents.fetch_sub(1);
    delete mr;
    return 0;
  });
}

struct fi_ops g_mr_fid_ops = {
    .size = sizeof(struct fi_ops),
    .close = mr_close,
    .bind = no_bind,
    .control = no_control,
    .ops_open = no_ops_open,
    .tostr = nullptr,
    .ops_set = nullptr,
};

int register_region(struct fid* domain_fid, const void* buf, size_t len, uint64_t access, uint64_t offset,
                    uint64_t flags, struct fid_mr** out, void* context) {
  auto* domain_desc = reinterpret_cast<struct fid_domain*>(domain_fid);
  if (!is_our_domain(domain_desc) || out == nullptr) return -FI_EINVAL;
  if (flags != 0) return -FI_EBADFLAGS;  // FI_RMA_EVENT, FI_HMEM_* ...: not offered
  if (access & ~kAccessBits) return -FI_EINVAL;
  if (offset != 0) return -FI_EINVAL;  // reserved by fi_mr(3)
  Domain* domain = object_of<Domain>(domain_desc);
  const bool offsets = (domain->mr_mode & FI_MR_VIRT_ADDR) == 0;
  if (offsets && len > kOffsetWindow) return -FI_EINVAL;  // one window per region
  std::optional<uint64_t> iova;
  auto* mr = new MemoryRegistration;
  mr->base = static_cast<uint8_t*>(const_cast<void*>(buf));
  mr->rights = engine_access(access);
  Result r;
  {
    std::lock_guard lock(domain->host->mutex());
    if (offsets) {
      iova = kWindowBase | g_next_window << 32;
      g_next_window = g_next_window % kWindows + 1;  // wraps after 2^30 registrations
    }
    r = domain->device->reg_mr(const_cast<void*>(buf), len, engine_access(access), &mr->region, iova);
    if (r == Result::Ok) g_regions[{domain->device, mr->region.rkey}] = mr;
  }
  if (r != Result::Ok) {
    delete mr;
    FI_WARN(&g_provider, FI_LOG_MR, "reg_mr of %zu bytes: %s\n", len, result_name(r));
    return r == Result::NoResources ? -FI_ENOSPC : -FI_EINVAL;
  }
  mr->domain = domain;
  mr->fid.fid.fclass = FI_CLASS_MR;
  mr->fid.fid.context = context;
  mr->fid.fid.ops = &g_mr_fid_ops;
  mr->fid.mem_desc = mr;
  mr->fid.key = (offsets ? mr->region.iova : 0) | mr->region.rkey;
  domain->dependents.fetch_add(1);
  *out = &mr->fid;
  return 0;
}

int mr_reg(struct fid* fid, const void* buf, size_t len, uint64_t access, uint64_t offset, uint64_t /*requested_key*/,
           uint64_t flags, struct fid_mr** mr, void* context) {
  return guarded(FI_LOG_MR, "fi_mr_reg",
                 [&] { return register_region(fid, buf, len, access, offset, flags, mr, context); });
}

int mr_regv(struct fid* fid, const struct iovec* iov, size_t count, uint64_t access, uint64_t offset,
            uint64_t /*requested_key*/, uint64_t flags, struct fid_mr** mr, void* context) {
  return guarded(FI_LOG_MR, "fi_mr_regv", [&]() -> int {
    if (iov == nullptr || count != 1) return -FI_EINVAL;  // mr_iov_limit 1
    return register_region(fid, iov[0].iov_base, iov[0].iov_len, access, offset, flags, mr, context);
  });
}

int mr_regattr(struct fid* fid, const struct fi_mr_attr* attr, uint64_t flags, struct fid_mr** mr) {
  return guarded(FI_LOG_MR, "fi_mr_regattr", [&]() -> int {
    if (attr == nullptr || attr->mr_iov == nullptr || attr->iov_count != 1) return -FI_EINVAL;
    if (attr->iface != FI_HMEM_SYSTEM || attr->auth_key_size != 0) return -FI_EINVAL;
    return register_region(fid, attr->mr_iov[0].iov_base, attr->mr_iov[0].iov_len, attr->access, attr->offset, flags,
                           mr, attr->context);
  });
}

}  // namespace

uint8_t* find_region(Device* device, uint32_t key, uint64_t addr, uint64_t len, uint32_t right) noexcept {
  auto it = g_regions.find({device, key});
  if (it == g_regions.end()) return nullptr;
  const MemoryRegistration* mr = it->second;
  if ((mr->rights & right) != right) return nullptr;
  const MemoryRegion& r = mr->region;
  if (addr < r.iova || addr - r.iova > r.length || len > r.length - (addr - r.iova)) return nullptr;
  return mr->base + (addr - r.iova);
}

struct fi_ops_mr g_mr_ops = {
    .size = sizeof(struct fi_ops_mr),
    .reg = mr_reg,
    .regv = mr_regv,
    .regattr = mr_regattr,
};

}  // namespace mroce::fi
