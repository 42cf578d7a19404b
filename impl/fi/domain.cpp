// fid_domain (DESIGN.md 5.2): one device of the device host, chosen by domain_attr->name. Opens the
// host on first use. Endpoints, counters and the other factories are not implemented yet and say so.
#include <cstring>

#include "fi/config.hpp"
#include "fi/info.hpp"
#include "fi/objects.hpp"
#include "fi/provider.hpp"

namespace mroce::fi {
namespace {

int domain_close(struct fid* fid) {
  return guarded(FI_LOG_DOMAIN, "fi_close(domain)", [&]() -> int {
    Domain* domain = object_of<Domain>(fid);
    if (domain->dependents.load() != 0) return -FI_EBUSY;  // MRs, CQs or AVs still open
    domain->fabric->dependents.fetch_sub(1);
    delete domain;
    return 0;
  });
}

int no_endpoint(struct fid_domain*, struct fi_info*, struct fid_ep**, void*) {
  FI_WARN(&g_provider, FI_LOG_DOMAIN, "scalable endpoints are not implemented\n");
  return -FI_ENOSYS;
}
int no_cntr_open(struct fid_domain*, struct fi_cntr_attr*, struct fid_cntr**, void*) { return -FI_ENOSYS; }
int no_poll_open(struct fid_domain*, struct fi_poll_attr*, struct fid_poll**) { return -FI_ENOSYS; }
int no_stx_ctx(struct fid_domain*, struct fi_tx_attr*, struct fid_stx**, void*) { return -FI_ENOSYS; }
int no_srx_ctx(struct fid_domain*, struct fi_rx_attr*, struct fid_ep**, void*) { return -FI_ENOSYS; }
int no_query_atomic(struct fid_domain*, enum fi_datatype, enum fi_op, struct fi_atomic_attr*, uint64_t) {
  return -FI_ENOSYS;  // mroce has no atomics (DESIGN.md 5.8 G7)
}
int no_query_collective(struct fid_domain*, enum fi_collective_op, struct fi_collective_attr*, uint64_t) {
  return -FI_ENOSYS;
}

struct fi_ops g_domain_fid_ops = {
    .size = sizeof(struct fi_ops),
    .close = domain_close,
    .bind = no_bind,
    .control = no_control,
    .ops_open = no_ops_open,
    .tostr = nullptr,
    .ops_set = nullptr,
};

struct fi_ops_domain g_domain_ops = {
    .size = sizeof(struct fi_ops_domain),
    .av_open = open_av,
    .cq_open = open_cq,
    .endpoint = open_endpoint,
    .scalable_ep = no_endpoint,
    .cntr_open = no_cntr_open,
    .poll_open = no_poll_open,
    .stx_ctx = no_stx_ctx,
    .srx_ctx = no_srx_ctx,
    .query_atomic = no_query_atomic,
    .query_collective = no_query_collective,
    .endpoint2 = nullptr,
};

}  // namespace

bool is_our_domain(const struct fid_domain* d) noexcept {
  return d != nullptr && d->fid.fclass == FI_CLASS_DOMAIN && d->ops == &g_domain_ops;
}

int open_domain(struct fid_fabric* fabric_fid, struct fi_info* info, struct fid_domain** out, void* context) {
  return guarded(FI_LOG_DOMAIN, "fi_domain", [&]() -> int {
    if (!is_our_fabric(fabric_fid) || info == nullptr || out == nullptr) return -FI_EINVAL;
    if (info->domain_attr == nullptr || info->domain_attr->name == nullptr) {
      FI_WARN(&g_provider, FI_LOG_DOMAIN, "fi_domain needs an fi_info from fi_getinfo (domain name missing)\n");
      return -FI_EINVAL;
    }
    PortConfig config;
    if (int r = read_port_config(&config)) return r;
    DeviceHost* host = nullptr;
    if (int r = DeviceHost::acquire(config, &host)) return r;
    Device* device = nullptr;
    {
      std::lock_guard lock(host->mutex());
      device = host->device(info->domain_attr->name);
    }
    if (device == nullptr) {
      FI_WARN(&g_provider, FI_LOG_DOMAIN, "no domain '%s' on FI_MROCE_PORT='%s'\n", info->domain_attr->name,
              config.spec.c_str());
      return -FI_ENODEV;
    }
    auto* domain = new Domain;
    domain->fabric = object_of<Fabric>(fabric_fid);
    domain->host = host;
    domain->device = device;
    domain->name = info->domain_attr->name;
    domain->mr_mode = static_cast<uint64_t>(info->domain_attr->mr_mode);
    if (domain->mr_mode == FI_MR_BASIC) domain->mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
    domain->fid.fid.fclass = FI_CLASS_DOMAIN;
    domain->fid.fid.context = context;
    domain->fid.fid.ops = &g_domain_fid_ops;
    domain->fid.ops = &g_domain_ops;
    domain->fid.mr = &g_mr_ops;
    domain->fabric->dependents.fetch_add(1);
    *out = &domain->fid;
    return 0;
  });
}

}  // namespace mroce::fi
