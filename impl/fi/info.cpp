#include "fi/info.hpp"

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "fi/addr.hpp"
#include "fi/config.hpp"
#include "fi/host.hpp"
#include "fi/provider.hpp"

namespace mroce::fi {
namespace {

// Every order among sends and RMA holds on stream 0, where libfabric-ordered traffic goes
// (DESIGN.md 5.2 "streams"); FI_ORDER_DATA and FI_ORDER_STRICT are not offered.
constexpr uint64_t kMsgOrders = FI_ORDER_SAS | FI_ORDER_SAR | FI_ORDER_SAW | FI_ORDER_RAR | FI_ORDER_RAW |
                                FI_ORDER_RAS | FI_ORDER_WAR | FI_ORDER_WAW | FI_ORDER_WAS;
constexpr uint64_t kTxOpFlags = FI_COMPLETION | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE;
constexpr uint64_t kRxOpFlags = FI_COMPLETION;
constexpr uint64_t kDomainCaps = FI_LOCAL_COMM | FI_REMOTE_COMM;

// The MR mode bits an application supports, as the 1.5+ bit mask (fi_mr(3): FI_MR_BASIC stands for
// the four bits it used to imply, FI_MR_SCALABLE and FI_MR_UNSPEC for none).
uint64_t app_mr_bits(int mr_mode) {
  if (mr_mode == FI_MR_BASIC) return FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  if (mr_mode == FI_MR_SCALABLE) return 0;
  return static_cast<uint64_t>(mr_mode);
}

// What the hints decided, for building the entries.
struct Plan {
  uint64_t caps = kAllCaps;
  bool rma = true;
  int mr_mode = 0;
  uint64_t msg_order = FI_ORDER_SAS;
  uint64_t tx_op_flags = 0, rx_op_flags = 0;
  uint64_t mem_tag_format = kMemTagFormat;
  enum fi_threading threading = FI_THREAD_SAFE;
  enum fi_resource_mgmt resource_mgmt = FI_RM_ENABLED;
  enum fi_av_type av_type = FI_AV_UNSPEC;
  std::optional<EndpointAddress> src, dest;
};

// RMA needs provider keys (the engine's keys are unpredictable, DESIGN.md 5.2 fid_mr). Without them
// RMA is dropped from the entries, or the hints are refused when they ask FI_RMA (returns false).
// FI_MR_LOCAL is returned only when the application offers descriptors; FI_MR_VIRT_ADDR when it
// supports it (offset addressing works too); FI_MR_ALLOCATED is never needed.
bool choose_mr_mode(uint32_t version, const struct fi_info* h, Plan* plan) {
  const bool asked_rma = h != nullptr && (h->caps & FI_RMA) != 0;
  const fi_domain_attr* d = h != nullptr ? h->domain_attr : nullptr;
  if (version >= FI_VERSION(1, 5)) {
    const uint64_t app = d != nullptr ? app_mr_bits(d->mr_mode) : FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
    plan->rma = (app & FI_MR_PROV_KEY) != 0;
    uint64_t out = app & FI_MR_LOCAL;
    if (plan->rma) out |= FI_MR_PROV_KEY | (app & FI_MR_VIRT_ADDR);
    plan->mr_mode = static_cast<int>(out);
  } else {
    plan->rma = d == nullptr || d->mr_mode != FI_MR_SCALABLE;
    plan->mr_mode = FI_MR_BASIC;
  }
  if (asked_rma && !plan->rma) return false;
  if (!plan->rma) plan->caps &= ~kRmaCaps;
  return true;
}

std::string bits(uint64_t v, enum fi_type type) {
  char buf[1024];
  return fi_tostr_r(buf, sizeof buf, &v, type);
}

// Returns the reason the hints are refused, or an empty string and fills *plan.
std::string check_hints(uint32_t version, const char* node, const char* service, const struct fi_info* h, Plan* plan) {
  if (node != nullptr || service != nullptr)
    return "node/service addressing is not supported (addresses travel as fi_getname bytes, in dest_addr)";
  if (h == nullptr) {
    choose_mr_mode(version, h, plan);
    return {};
  }
  if (uint64_t extra = h->caps & ~kAllCaps) return "caps not supported: " + bits(extra, FI_TYPE_CAPS);
  if (h->addr_format != FI_FORMAT_UNSPEC) return "addr_format must be FI_FORMAT_UNSPEC (mroce's own format)";
  if (h->src_addr != nullptr || h->src_addrlen != 0) {
    plan->src = decode(h->src_addr, h->src_addrlen);
    if (!plan->src) return "src_addr is not an mroce address";
  }
  if (h->dest_addr != nullptr || h->dest_addrlen != 0) {
    plan->dest = decode(h->dest_addr, h->dest_addrlen);
    if (!plan->dest) return "dest_addr is not an mroce address";
  }
  if (h->caps != 0) plan->caps = h->caps | kSecondaryCaps;

  if (const fi_tx_attr* tx = h->tx_attr) {
    if (uint64_t extra = tx->caps & ~kAllCaps) return "tx caps not supported: " + bits(extra, FI_TYPE_CAPS);
    if (tx->op_flags & FI_DELIVERY_COMPLETE) return "FI_DELIVERY_COMPLETE is not supported";
    if (uint64_t extra = tx->op_flags & ~kTxOpFlags)
      return "tx op_flags not supported: " + bits(extra, FI_TYPE_OP_FLAGS);
    if (uint64_t extra = tx->msg_order & ~kMsgOrders)
      return "tx msg_order not supported: " + bits(extra, FI_TYPE_MSG_ORDER);
    if (tx->comp_order != FI_ORDER_NONE) return "tx comp_order: completions are not ordered";
    if (tx->inject_size > kInjectSize) return "tx inject_size above " + std::to_string(kInjectSize);
    if (tx->size > kQueueSize) return "tx size above " + std::to_string(kQueueSize);
    if (tx->iov_limit > 1 || tx->rma_iov_limit > 1) return "tx iov_limit/rma_iov_limit above 1 (one SGE per request)";
    plan->msg_order |= tx->msg_order;
    plan->tx_op_flags = tx->op_flags;
  }
  if (const fi_rx_attr* rx = h->rx_attr) {
    if (uint64_t extra = rx->caps & ~kAllCaps) return "rx caps not supported: " + bits(extra, FI_TYPE_CAPS);
    if (uint64_t extra = rx->op_flags & ~kRxOpFlags)
      return "rx op_flags not supported: " + bits(extra, FI_TYPE_OP_FLAGS);
    if (uint64_t extra = rx->msg_order & ~kMsgOrders)
      return "rx msg_order not supported: " + bits(extra, FI_TYPE_MSG_ORDER);
    if (rx->comp_order != FI_ORDER_NONE) return "rx comp_order: completions are not ordered";
    if (rx->total_buffered_recv > 0) return "rx total_buffered_recv is not offered";
    if (rx->size > kQueueSize) return "rx size above " + std::to_string(kQueueSize);
    if (rx->iov_limit > 1) return "rx iov_limit above 1 (one SGE per request)";
    plan->msg_order |= rx->msg_order;
    plan->rx_op_flags = rx->op_flags;
  }
  if (const fi_ep_attr* ep = h->ep_attr) {
    if (ep->type != FI_EP_UNSPEC && ep->type != FI_EP_MSG && ep->type != FI_EP_RDM)
      return std::string("endpoint type not supported: ") + fi_tostr(&ep->type, FI_TYPE_EP_TYPE);
    if (ep->protocol != FI_PROTO_UNSPEC) return "protocol must be FI_PROTO_UNSPEC";
    if (ep->max_msg_size > kMaxMsgSize) return "max_msg_size above 2^31";
    if (ep->tx_ctx_cnt > 1 || ep->rx_ctx_cnt > 1) return "scalable or shared contexts are not supported";
    if (ep->auth_key_size != 0 || ep->auth_key != nullptr) return "authorization keys are not supported";
    if (ep->mem_tag_format != 0) plan->mem_tag_format = ep->mem_tag_format;
  }
  if (const fi_domain_attr* d = h->domain_attr) {
    // Progress happens inside the application's calls only: no progress thread in this build.
    if (d->control_progress == FI_PROGRESS_AUTO || d->data_progress == FI_PROGRESS_AUTO)
      return "FI_PROGRESS_AUTO is not supported by this build (manual progress only)";
    if (d->cq_data_size > kCqDataSize) return "cq_data_size above 4";
    if (d->cq_cnt > kCqCount || d->ep_cnt > kEpCount || d->cntr_cnt > kCntrCount || d->mr_cnt > kMrCount)
      return "more CQs, endpoints, counters or MRs than a domain offers";
    if (d->tx_ctx_cnt > kEpCount || d->rx_ctx_cnt > kEpCount) return "more contexts than a domain offers";
    if (d->max_ep_tx_ctx > 1 || d->max_ep_rx_ctx > 1)
      return "max_ep_tx_ctx/max_ep_rx_ctx above 1 (no scalable endpoints)";
    if (d->max_ep_stx_ctx > 0 || d->max_ep_srx_ctx > 0) return "shared contexts are not supported";
    if (d->mr_iov_limit > 1) return "mr_iov_limit above 1";
    if (uint64_t extra = d->caps & ~kDomainCaps) return "domain caps not supported: " + bits(extra, FI_TYPE_CAPS);
    if (d->auth_key_size != 0 || d->auth_key != nullptr) return "authorization keys are not supported";
    if (d->av_type != FI_AV_UNSPEC && d->av_type != FI_AV_MAP && d->av_type != FI_AV_TABLE)
      return "av_type not supported";
    if (d->threading != FI_THREAD_UNSPEC) plan->threading = d->threading;
    if (d->resource_mgmt != FI_RM_UNSPEC) plan->resource_mgmt = d->resource_mgmt;
    plan->av_type = d->av_type;
  }
  if (const fi_fabric_attr* f = h->fabric_attr) {
    if (f->name != nullptr && std::strcmp(f->name, kFabricName) != 0) return "fabric name is not 'mroce'";
  }

  if (!choose_mr_mode(version, h, plan)) return "FI_RMA needs FI_MR_PROV_KEY (FI_MR_BASIC before API 1.5) in mr_mode";
  return {};
}

char* dup_string(const std::string& s) {
  char* p = strdup(s.c_str());
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

// One entry of the templates (DESIGN.md 7) for `ep_type` on `domain`.
struct fi_info* make_info(const Plan& plan, enum fi_ep_type ep_type, const DomainChoice& domain) {
  struct fi_info* fi = fi_allocinfo();
  if (fi == nullptr) throw std::bad_alloc();
  const uint64_t caps = ep_type == FI_EP_MSG ? plan.caps & kMsgEpCaps : plan.caps;
  fi->caps = caps;
  fi->mode = 0;
  fi->addr_format = FI_FORMAT_UNSPEC;
  const auto src = encode(plan.src ? *plan.src : domain.address);
  fi->src_addr = std::malloc(kAddrLen);
  if (fi->src_addr == nullptr) {
    fi_freeinfo(fi);
    throw std::bad_alloc();
  }
  std::memcpy(fi->src_addr, src.data(), kAddrLen);
  fi->src_addrlen = kAddrLen;
  if (plan.dest) {
    const auto dest = encode(*plan.dest);
    fi->dest_addr = std::malloc(kAddrLen);
    if (fi->dest_addr == nullptr) {
      fi_freeinfo(fi);
      throw std::bad_alloc();
    }
    std::memcpy(fi->dest_addr, dest.data(), kAddrLen);
    fi->dest_addrlen = kAddrLen;
  }

  fi_tx_attr* tx = fi->tx_attr;
  tx->caps = caps;
  tx->op_flags = plan.tx_op_flags;
  tx->msg_order = plan.msg_order;
  tx->comp_order = FI_ORDER_NONE;
  tx->inject_size = kInjectSize;
  tx->size = kQueueSize;
  tx->iov_limit = 1;
  tx->rma_iov_limit = 1;

  fi_rx_attr* rx = fi->rx_attr;
  rx->caps = caps;
  rx->op_flags = plan.rx_op_flags;
  rx->msg_order = plan.msg_order;
  rx->comp_order = FI_ORDER_NONE;
  rx->total_buffered_recv = 0;
  rx->size = kQueueSize;
  rx->iov_limit = 1;

  fi_ep_attr* ep = fi->ep_attr;
  ep->type = ep_type;
  ep->protocol = FI_PROTO_UNSPEC;
  ep->protocol_version = 1;
  ep->max_msg_size = ep_type == FI_EP_MSG ? kMsgMaxSize : kMaxMsgSize;
  ep->msg_prefix_size = 0;
  const bool rma_ordered = (plan.msg_order & ~FI_ORDER_SAS) != 0;
  ep->max_order_raw_size = ep->max_order_war_size = ep->max_order_waw_size = rma_ordered ? kMaxMsgSize : 0;
  ep->mem_tag_format = plan.mem_tag_format;
  ep->tx_ctx_cnt = 1;
  ep->rx_ctx_cnt = 1;

  fi_domain_attr* d = fi->domain_attr;
  d->name = dup_string(domain.name);
  d->threading = plan.threading;
  d->control_progress = FI_PROGRESS_MANUAL;
  d->data_progress = FI_PROGRESS_MANUAL;
  d->resource_mgmt = plan.resource_mgmt;
  d->av_type = plan.av_type;
  d->mr_mode = plan.mr_mode;
  // Offset mode: the key carries the region's iova window too (mr.cpp).
  const bool offsets = plan.rma && plan.mr_mode != FI_MR_BASIC && (plan.mr_mode & FI_MR_VIRT_ADDR) == 0;
  d->mr_key_size = offsets ? kOffsetMrKeySize : kMrKeySize;
  d->cq_data_size = kCqDataSize;
  d->cq_cnt = kCqCount;
  d->ep_cnt = kEpCount;
  d->tx_ctx_cnt = kEpCount;
  d->rx_ctx_cnt = kEpCount;
  d->max_ep_tx_ctx = 1;
  d->max_ep_rx_ctx = 1;
  d->max_ep_stx_ctx = 0;
  d->max_ep_srx_ctx = 0;
  d->cntr_cnt = kCntrCount;
  d->mr_iov_limit = 1;
  d->caps = kDomainCaps;
  d->mr_cnt = kMrCount;

  fi->fabric_attr->name = dup_string(kFabricName);
  fi->fabric_attr->prov_version = kProviderVersion;
  return fi;
}

bool same_device(const EndpointAddress& a, const EndpointAddress& b) {
  return a.device == b.device && a.udp_port == b.udp_port && a.device_nonce == b.device_nonce;
}

}  // namespace

int getinfo(uint32_t version, const char* node, const char* service, uint64_t flags, const struct fi_info* hints,
            struct fi_info** info) {
  return guarded(FI_LOG_CORE, "fi_getinfo", [&]() -> int {
    *info = nullptr;
    bool layering = false;
    if (int r = read_layering(&layering)) return r;
    if ((flags & kCoreProviderOnly) != 0 && !layering) {
      FI_INFO(&g_provider, FI_LOG_CORE, "not offered to utility providers (set FI_MROCE_LAYERING=1 to allow)\n");
      return -FI_ENODATA;
    }
    PortConfig config;
    if (int r = read_port_config(&config)) return r;
    Plan plan;
    if (std::string why = check_hints(version, node, service, hints, &plan); !why.empty()) {
      FI_INFO(&g_provider, FI_LOG_CORE, "hints refused: %s\n", why.c_str());
      return -FI_ENODATA;
    }
    std::vector<enum fi_ep_type> types;
    const enum fi_ep_type asked = hints && hints->ep_attr ? hints->ep_attr->type : FI_EP_UNSPEC;
    // MSG endpoints move messages only, up to kMsgMaxSize: no MSG entry for hints asking more.
    const uint64_t asked_caps =
        hints ? hints->caps | (hints->tx_attr ? hints->tx_attr->caps : 0) | (hints->rx_attr ? hints->rx_attr->caps : 0)
              : 0;
    const bool msg_fits =
        (asked_caps & ~kMsgEpCaps) == 0 && !(hints && hints->ep_attr && hints->ep_attr->max_msg_size > kMsgMaxSize);
    if ((asked == FI_EP_UNSPEC || asked == FI_EP_MSG) && msg_fits) types.push_back(FI_EP_MSG);
    if (asked == FI_EP_UNSPEC || asked == FI_EP_RDM) types.push_back(FI_EP_RDM);
    const char* want_domain = hints && hints->domain_attr ? hints->domain_attr->name : nullptr;

    struct fi_info* head = nullptr;
    struct fi_info** tail = &head;
    try {
      for (const DomainChoice& domain : domain_choices(config)) {
        if (want_domain != nullptr && domain.name != want_domain) continue;
        if (plan.src && !same_device(*plan.src, domain.address)) continue;
        for (enum fi_ep_type type : types) {
          *tail = make_info(plan, type, domain);
          tail = &(*tail)->next;
        }
      }
    } catch (...) {
      fi_freeinfo(head);
      throw;
    }
    if (head == nullptr) {
      FI_INFO(&g_provider, FI_LOG_CORE, "hints refused: no domain matches the domain name or src_addr\n");
      return -FI_ENODATA;
    }
    *info = head;
    return 0;
  });
}

}  // namespace mroce::fi
