// fid_av (DESIGN.md 5.2): a table of decoded peer addresses; fi_addr_t is the index for FI_AV_MAP and
// FI_AV_TABLE alike (opaque for MAP). Removed entries stay empty (indexes are never reused, so a
// stale fi_addr_t never names another peer). Addresses are mroce's own 36-byte format (addr.hpp).
#include <cstring>

#include "fi/objects.hpp"
#include "fi/provider.hpp"

namespace mroce::fi {
namespace {

int av_insert(struct fid_av* fid, const void* addr, size_t count, fi_addr_t* fi_addr, uint64_t flags,
              void* /*context*/) {
  return guarded(FI_LOG_AV, "fi_av_insert", [&]() -> int {
    auto* av = object_of<AddressVector>(fid);
    if (flags & ~FI_MORE) return -FI_EBADFLAGS;
    if (addr == nullptr && count > 0) return -FI_EINVAL;
    if (fi_addr == nullptr && av->type == FI_AV_MAP) return -FI_EINVAL;  // fi_av(3): MAP returns addresses
    std::lock_guard lock(av->mutex);
    int inserted = 0;
    for (size_t i = 0; i < count; ++i) {
      std::optional<EndpointAddress> a = decode(static_cast<const uint8_t*>(addr) + i * kAddrLen, kAddrLen);
      if (!a) {
        if (fi_addr != nullptr) fi_addr[i] = FI_ADDR_NOTAVAIL;
        FI_WARN(&g_provider, FI_LOG_AV, "fi_av_insert: entry %zu is not an mroce address\n", i);
        continue;
      }
      if (fi_addr != nullptr) fi_addr[i] = av->table.size();
      av->table.push_back(*a);
      ++inserted;
    }
    ++av->generation;
    return inserted;
  });
}

int av_insertsvc(struct fid_av*, const char*, const char*, fi_addr_t*, uint64_t, void*) { return -FI_ENOSYS; }
int av_insertsym(struct fid_av*, const char*, size_t, const char*, size_t, fi_addr_t*, uint64_t, void*) {
  return -FI_ENOSYS;
}

int av_remove(struct fid_av* fid, fi_addr_t* fi_addr, size_t count, uint64_t flags) {
  return guarded(FI_LOG_AV, "fi_av_remove", [&]() -> int {
    auto* av = object_of<AddressVector>(fid);
    if (flags != 0) return -FI_EBADFLAGS;
    if (fi_addr == nullptr && count > 0) return -FI_EINVAL;
    std::lock_guard lock(av->mutex);
    for (size_t i = 0; i < count; ++i)
      if (fi_addr[i] >= av->table.size() || !av->table[fi_addr[i]]) return -FI_EINVAL;
    for (size_t i = 0; i < count; ++i) av->table[fi_addr[i]].reset();
    ++av->generation;
    return 0;
  });
}

int av_lookup(struct fid_av* fid, fi_addr_t fi_addr, void* addr, size_t* addrlen) {
  return guarded(FI_LOG_AV, "fi_av_lookup", [&]() -> int {
    auto* av = object_of<AddressVector>(fid);
    if (addrlen == nullptr || (addr == nullptr && *addrlen > 0)) return -FI_EINVAL;
    std::lock_guard lock(av->mutex);
    if (fi_addr >= av->table.size() || !av->table[fi_addr]) return -FI_EINVAL;
    const auto bytes = encode(*av->table[fi_addr]);
    std::memcpy(addr, bytes.data(), std::min(*addrlen, kAddrLen));  // truncated when short (fi_av(3))
    *addrlen = kAddrLen;
    return 0;
  });
}

const char* av_straddr(struct fid_av*, const void* addr, char* buf, size_t* len) {
  if (buf == nullptr || len == nullptr) return nullptr;
  std::string text;
  try {
    const std::optional<EndpointAddress> a = decode(addr, kAddrLen);
    text = a ? to_string(*a) : "fi_mroce://invalid";
  } catch (...) { return nullptr; }
  if (*len > 0) {
    const size_t n = std::min(*len - 1, text.size());
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
  }
  *len = text.size() + 1;
  return buf;
}

int av_close(struct fid* fid) {
  return guarded(FI_LOG_AV, "fi_close(av)", [&]() -> int {
    auto* av = object_of<AddressVector>(fid);
    if (av->bound_endpoints.load() != 0) return -FI_EBUSY;  // an endpoint still sends through it
    av->domain->dependents.fetch_sub(1);
    delete av;
    return 0;
  });
}

struct fi_ops g_av_fid_ops = {
    .size = sizeof(struct fi_ops),
    .close = av_close,
    .bind = no_bind,
    .control = no_control,
    .ops_open = no_ops_open,
    .tostr = nullptr,
    .ops_set = nullptr,
};

struct fi_ops_av g_av_ops = {
    .size = sizeof(struct fi_ops_av),
    .insert = av_insert,
    .insertsvc = av_insertsvc,
    .insertsym = av_insertsym,
    .remove = av_remove,
    .lookup = av_lookup,
    .straddr = av_straddr,
    .av_set = nullptr,
};

}  // namespace

int open_av(struct fid_domain* domain_fid, struct fi_av_attr* attr, struct fid_av** out, void* context) {
  return guarded(FI_LOG_AV, "fi_av_open", [&]() -> int {
    if (!is_our_domain(domain_fid) || attr == nullptr || out == nullptr) return -FI_EINVAL;
    enum fi_av_type type = attr->type == FI_AV_UNSPEC ? FI_AV_MAP : attr->type;
    if (type != FI_AV_MAP && type != FI_AV_TABLE) return -FI_EINVAL;
    if (attr->rx_ctx_bits != 0) return -FI_ENOSYS;       // no scalable endpoints
    if (attr->name != nullptr) return -FI_ENOSYS;        // no shared AVs
    if (attr->flags & ~FI_SYMMETRIC) return -FI_ENOSYS;  // FI_EVENT (asynchronous inserts), FI_READ
    auto* av = new AddressVector;
    av->domain = object_of<Domain>(domain_fid);
    av->type = type;
    av->table.reserve(attr->count);
    av->fid.fid.fclass = FI_CLASS_AV;
    av->fid.fid.context = context;
    av->fid.fid.ops = &g_av_fid_ops;
    av->fid.ops = &g_av_ops;
    av->domain->dependents.fetch_add(1);
    *out = &av->fid;
    return 0;
  });
}

}  // namespace mroce::fi
