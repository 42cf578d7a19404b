// Helpers of the provider tests: hints that select mroce, and owners that free libfabric objects.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace mroce::fi_test {

struct InfoDeleter {
  void operator()(fi_info* info) const { fi_freeinfo(info); }
};
using InfoPtr = std::unique_ptr<fi_info, InfoDeleter>;

// Hints with the provider name set to mroce (what `-p mroce` and Open MPI's include list select).
inline InfoPtr mroce_hints() {
  InfoPtr hints(fi_allocinfo());
  hints->fabric_attr->prov_name = strdup("mroce");
  return hints;
}

// fi_getinfo; on success *out owns the list.
inline int getinfo(uint32_t version, const fi_info* hints, InfoPtr* out, uint64_t flags = 0) {
  fi_info* info = nullptr;
  const int r = fi_getinfo(version, nullptr, nullptr, flags, hints, &info);
  out->reset(r == 0 ? info : nullptr);
  return r;
}

// The first mroce RDM entry of `domain` with RMA (provider keys, virtual addresses).
inline InfoPtr rdm_info(const char* domain = "memloop:0") {
  InfoPtr hints = mroce_hints();
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_MSG | FI_TAGGED | FI_RMA;
  hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->domain_attr->name = strdup(domain);
  InfoPtr info;
  getinfo(FI_VERSION(1, 17), hints.get(), &info);
  return info;
}

// Reproducible pseudo-random bytes (xorshift), different per seed.
inline std::vector<uint8_t> pattern(size_t len, uint32_t seed) {
  std::vector<uint8_t> v(len);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<uint8_t>(x);
  }
  return v;
}

// Open MPI 4.1.4, mtl ofi (DESIGN.md 3.1), as captured.
inline InfoPtr open_mpi_hints() {
  InfoPtr h(fi_allocinfo());
  h->caps = FI_TAGGED | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_DIRECTED_RECV;
  h->mode = FI_CONTEXT | FI_CONTEXT2;
  h->tx_attr->op_flags = FI_COMPLETION;
  h->tx_attr->msg_order = FI_ORDER_SAS;
  h->rx_attr->op_flags = FI_COMPLETION;
  h->rx_attr->msg_order = FI_ORDER_SAS;
  h->ep_attr->type = FI_EP_RDM;
  h->domain_attr->threading = FI_THREAD_DOMAIN;
  h->domain_attr->control_progress = FI_PROGRESS_UNSPEC;
  h->domain_attr->data_progress = FI_PROGRESS_UNSPEC;
  h->domain_attr->resource_mgmt = FI_RM_ENABLED;
  h->domain_attr->av_type = FI_AV_MAP;
  h->domain_attr->cq_data_size = 4;
  h->domain_attr->mr_mode = 0;
  return h;
}

}  // namespace mroce::fi_test
