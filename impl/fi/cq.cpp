// fid_cq (DESIGN.md 5.2, 5.6): completions stored in one shape and converted to the CQ's format on
// read. Reading moves the device host forward first (manual progress). Growable, so that with
// FI_RM_ENABLED no completion is lost (DESIGN.md 3.2). Waiting (fi_cq_sread) is progress plus a short
// sleep; there are no wait objects (FI_WAIT_FD, sets, ...).
#include <algorithm>
#include <cstddef>
#include <chrono>
#include <cstring>
#include <thread>

#include "fi/objects.hpp"
#include "fi/provider.hpp"

namespace mroce::fi {
namespace {

size_t entry_size(enum fi_cq_format format) {
  switch (format) {
    case FI_CQ_FORMAT_CONTEXT:
      return sizeof(struct fi_cq_entry);
    case FI_CQ_FORMAT_MSG:
      return sizeof(struct fi_cq_msg_entry);
    case FI_CQ_FORMAT_DATA:
      return sizeof(struct fi_cq_data_entry);
    case FI_CQ_FORMAT_TAGGED:
      return sizeof(struct fi_cq_tagged_entry);
    default:
      return 0;
  }
}

// The smaller formats are prefixes of fi_cq_tagged_entry (fi_cq(3)), so a read copies a prefix.
static_assert(offsetof(struct fi_cq_tagged_entry, len) == offsetof(struct fi_cq_msg_entry, len));
static_assert(offsetof(struct fi_cq_tagged_entry, data) == offsetof(struct fi_cq_data_entry, data));

ssize_t read_entries(struct fid_cq* fid, void* buf, size_t count, fi_addr_t* src_addr) {
  auto* cq = object_of<CompletionQueue>(fid);
  if (buf == nullptr && count > 0) return -FI_EINVAL;
  {
    std::lock_guard host_lock(cq->domain->host->mutex());
    cq->domain->host->progress();
  }
  std::lock_guard lock(cq->mutex);
  if (!cq->errors.empty()) return -FI_EAVAIL;
  if (cq->entries.empty()) return -FI_EAGAIN;
  const size_t size = entry_size(cq->format);
  const size_t n = std::min(count, cq->entries.size());
  for (size_t i = 0; i < n; ++i) {
    std::memcpy(static_cast<uint8_t*>(buf) + i * size, &cq->entries.front().entry, size);
    if (src_addr != nullptr) src_addr[i] = cq->entries.front().source;
    cq->entries.pop_front();
  }
  return static_cast<ssize_t>(n);
}

ssize_t cq_read(struct fid_cq* fid, void* buf, size_t count) {
  return guarded(FI_LOG_CQ, "fi_cq_read", [&] { return static_cast<int>(read_entries(fid, buf, count, nullptr)); });
}

ssize_t cq_readfrom(struct fid_cq* fid, void* buf, size_t count, fi_addr_t* src_addr) {
  return guarded(FI_LOG_CQ, "fi_cq_readfrom",
                 [&] { return static_cast<int>(read_entries(fid, buf, count, src_addr)); });
}

ssize_t cq_readerr(struct fid_cq* fid, struct fi_cq_err_entry* buf, uint64_t /*flags*/) {
  return guarded(FI_LOG_CQ, "fi_cq_readerr", [&]() -> int {
    auto* cq = object_of<CompletionQueue>(fid);
    if (buf == nullptr) return -FI_EINVAL;
    std::lock_guard lock(cq->mutex);
    if (cq->errors.empty()) return -FI_EAGAIN;
    // The provider attaches no error data: the application's err_data buffer stays untouched.
    void* app_err_data = buf->err_data;
    *buf = cq->errors.front();
    buf->err_data = app_err_data;
    buf->err_data_size = 0;
    cq->errors.pop_front();
    return 1;
  });
}

ssize_t wait_entries(struct fid_cq* fid, void* buf, size_t count, fi_addr_t* src_addr, const void* cond,
                     int timeout_ms) {
  return guarded(FI_LOG_CQ, "fi_cq_sread", [&]() -> int {
    auto* cq = object_of<CompletionQueue>(fid);
    if (cond != nullptr) return -FI_EINVAL;  // wait_cond FI_CQ_COND_NONE only
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      const ssize_t r = read_entries(fid, buf, count, src_addr);
      if (r != -FI_EAGAIN) return static_cast<int>(r);
      if (cq->signaled.exchange(false)) return -FI_EAGAIN;
      if (timeout_ms >= 0 && std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(timeout_ms))
        return -FI_EAGAIN;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
}

ssize_t cq_sread(struct fid_cq* fid, void* buf, size_t count, const void* cond, int timeout) {
  return wait_entries(fid, buf, count, nullptr, cond, timeout);
}

ssize_t cq_sreadfrom(struct fid_cq* fid, void* buf, size_t count, fi_addr_t* src_addr, const void* cond, int timeout) {
  return wait_entries(fid, buf, count, src_addr, cond, timeout);
}

int cq_signal(struct fid_cq* fid) {
  object_of<CompletionQueue>(fid)->signaled.store(true);
  return 0;
}

const char* cq_strerror(struct fid_cq*, int prov_errno, const void*, char* buf, size_t len) {
  return provider_strerror(prov_errno, buf, len);
}

int cq_close(struct fid* fid) {
  return guarded(FI_LOG_CQ, "fi_close(cq)", [&]() -> int {
    auto* cq = object_of<CompletionQueue>(fid);
    if (cq->bound_endpoints.load() != 0) return -FI_EBUSY;  // endpoints still complete into it
    cq->domain->dependents.fetch_sub(1);
    delete cq;
    return 0;
  });
}

struct fi_ops g_cq_fid_ops = {
    .size = sizeof(struct fi_ops),
    .close = cq_close,
    .bind = no_bind,
    .control = no_control,
    .ops_open = no_ops_open,
    .tostr = nullptr,
    .ops_set = nullptr,
};

struct fi_ops_cq g_cq_ops = {
    .size = sizeof(struct fi_ops_cq),
    .read = cq_read,
    .readfrom = cq_readfrom,
    .readerr = cq_readerr,
    .sread = cq_sread,
    .sreadfrom = cq_sreadfrom,
    .signal = cq_signal,
    .strerror = cq_strerror,
};

}  // namespace

void push_completion(CompletionQueue* cq, const CqEntry& entry) {
  std::lock_guard lock(cq->mutex);
  cq->entries.push_back(entry);
}

void push_completion_error(CompletionQueue* cq, const struct fi_cq_err_entry& error) {
  std::lock_guard lock(cq->mutex);
  cq->errors.push_back(error);
}

int open_cq(struct fid_domain* domain_fid, struct fi_cq_attr* attr, struct fid_cq** out, void* context) {
  return guarded(FI_LOG_CQ, "fi_cq_open", [&]() -> int {
    if (!is_our_domain(domain_fid) || attr == nullptr || out == nullptr) return -FI_EINVAL;
    enum fi_cq_format format = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT : attr->format;
    if (entry_size(format) == 0) return -FI_ENOSYS;
    // Waiting is done by polling: no wait object can be handed out (fi_control FI_GETWAIT).
    if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC && attr->wait_obj != FI_WAIT_YIELD)
      return -FI_ENOSYS;
    if (attr->wait_cond != FI_CQ_COND_NONE) return -FI_ENOSYS;
    if (attr->flags != 0) return -FI_EBADFLAGS;  // FI_AFFINITY: no signaling vectors
    auto* cq = new CompletionQueue;
    cq->domain = object_of<Domain>(domain_fid);
    cq->format = format;
    cq->fid.fid.fclass = FI_CLASS_CQ;
    cq->fid.fid.context = context;
    cq->fid.fid.ops = &g_cq_fid_ops;
    cq->fid.ops = &g_cq_ops;
    cq->domain->dependents.fetch_add(1);
    *out = &cq->fid;
    return 0;
  });
}

}  // namespace mroce::fi
