// fid_fabric (DESIGN.md 5.2): a handle; the device host is opened by the first fi_domain. Wait sets
// are not implemented and say so (-FI_ENOSYS).
#include <cstring>

#include "fi/objects.hpp"
#include "fi/provider.hpp"

namespace mroce::fi {
namespace {

int fabric_close(struct fid* fid) {
  return guarded(FI_LOG_FABRIC, "fi_close(fabric)", [&]() -> int {
    Fabric* fabric = object_of<Fabric>(fid);
    if (fabric->dependents.load() != 0) return -FI_EBUSY;  // domains or EQs still open
    delete fabric;
    return 0;
  });
}

int no_wait_open(struct fid_fabric*, struct fi_wait_attr*, struct fid_wait**) { return -FI_ENOSYS; }
int no_trywait(struct fid_fabric*, struct fid**, int) { return -FI_ENOSYS; }

struct fi_ops g_fabric_fid_ops = {
    .size = sizeof(struct fi_ops),
    .close = fabric_close,
    .bind = no_bind,
    .control = no_control,
    .ops_open = no_ops_open,
    .tostr = nullptr,
    .ops_set = nullptr,
};

struct fi_ops_fabric g_fabric_ops = {
    .size = sizeof(struct fi_ops_fabric),
    .domain = open_domain,
    .passive_ep = open_passive_ep,
    .eq_open = open_eq,
    .wait_open = no_wait_open,
    .trywait = no_trywait,
    .domain2 = nullptr,
};

}  // namespace

bool is_our_fabric(const struct fid_fabric* f) noexcept {
  return f != nullptr && f->fid.fclass == FI_CLASS_FABRIC && f->ops == &g_fabric_ops;
}

int open_fabric(struct fi_fabric_attr* attr, struct fid_fabric** out, void* context) {
  return guarded(FI_LOG_FABRIC, "fi_fabric", [&]() -> int {
    if (attr == nullptr || out == nullptr) return -FI_EINVAL;
    if (attr->name != nullptr && std::strcmp(attr->name, kFabricName) != 0) return -FI_ENODATA;
    auto* fabric = new Fabric;
    fabric->fid.fid.fclass = FI_CLASS_FABRIC;
    fabric->fid.fid.context = context;
    fabric->fid.fid.ops = &g_fabric_fid_ops;
    fabric->fid.ops = &g_fabric_ops;
    *out = &fabric->fid;
    return 0;
  });
}

}  // namespace mroce::fi
