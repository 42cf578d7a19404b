// fid_eq (DESIGN.md 5.2, 5.4): event queue of connection management. Entries are kept as the bytes
// written (fi_eq_entry, fi_eq_cm_entry, ...) with their event number; error entries wait in their
// own queue and make fi_eq_read return -FI_EAVAIL. fi_eq_sread waits on a condition variable (no
// wait objects are handed out).
#include <algorithm>
#include <chrono>
#include <cstring>

#include "fi/objects.hpp"
#include "fi/provider.hpp"

namespace mroce::fi {
namespace {

// Connection events come from the devices: reading moves the host of the bound endpoints forward.
void progress_bound_host(EventQueue* eq) {
  if (DeviceHost* host = eq->host.load()) {
    std::lock_guard host_lock(host->mutex());
    host->progress();
  }
}

// Takes (or, with FI_PEEK, copies) the first entry. Hold eq->mutex.
ssize_t take_entry(EventQueue* eq, uint32_t* event, void* buf, size_t len, uint64_t flags) {
  if (!eq->errors.empty()) return -FI_EAVAIL;
  if (eq->entries.empty()) return -FI_EAGAIN;
  const EqEntry& e = eq->entries.front();
  if (len < e.bytes.size()) return -FI_ETOOSMALL;
  if (!e.bytes.empty()) std::memcpy(buf, e.bytes.data(), e.bytes.size());
  if (event != nullptr) *event = e.event;
  const auto n = static_cast<ssize_t>(e.bytes.size());
  if ((flags & FI_PEEK) == 0) eq->entries.pop_front();
  return n;
}

ssize_t eq_read(struct fid_eq* fid, uint32_t* event, void* buf, size_t len, uint64_t flags) {
  return guarded(FI_LOG_EQ, "fi_eq_read", [&]() -> int {
    if (flags & ~FI_PEEK) return -FI_EBADFLAGS;
    if (buf == nullptr && len > 0) return -FI_EINVAL;
    auto* eq = object_of<EventQueue>(fid);
    progress_bound_host(eq);
    std::lock_guard lock(eq->mutex);
    return static_cast<int>(take_entry(eq, event, buf, len, flags));
  });
}

ssize_t eq_readerr(struct fid_eq* fid, struct fi_eq_err_entry* buf, uint64_t flags) {
  return guarded(FI_LOG_EQ, "fi_eq_readerr", [&]() -> int {
    if (flags & ~FI_PEEK) return -FI_EBADFLAGS;
    if (buf == nullptr) return -FI_EINVAL;
    auto* eq = object_of<EventQueue>(fid);
    std::lock_guard lock(eq->mutex);
    if (eq->errors.empty()) return -FI_EAGAIN;
    // fi_eq(3), API 1.5+: error data goes into the application's buffer when it gives one (cut to
    // its size), otherwise err_data points at the provider's copy until the next readerr.
    void* app_err_data = buf->err_data;
    const size_t app_err_size = buf->err_data_size;
    *buf = eq->errors.front();
    const std::vector<uint8_t>& data = eq->error_data.front();
    if (app_err_data != nullptr && app_err_size > 0) {
      buf->err_data = app_err_data;
      buf->err_data_size = std::min(app_err_size, data.size());
      if (buf->err_data_size > 0) std::memcpy(app_err_data, data.data(), buf->err_data_size);
    } else {
      eq->last_error_data = data;
      buf->err_data = eq->last_error_data.empty() ? nullptr : eq->last_error_data.data();
      buf->err_data_size = eq->last_error_data.size();
    }
    if ((flags & FI_PEEK) == 0) {
      eq->errors.pop_front();
      eq->error_data.pop_front();
    }
    return static_cast<int>(sizeof(*buf));
  });
}

ssize_t eq_write(struct fid_eq* fid, uint32_t event, const void* buf, size_t len, uint64_t flags) {
  return guarded(FI_LOG_EQ, "fi_eq_write", [&]() -> int {
    if (flags != 0) return -FI_EBADFLAGS;
    if (buf == nullptr && len > 0) return -FI_EINVAL;
    auto* eq = object_of<EventQueue>(fid);
    EqEntry entry{event,
                  std::vector<uint8_t>(static_cast<const uint8_t*>(buf), static_cast<const uint8_t*>(buf) + len)};
    {
      std::lock_guard lock(eq->mutex);
      eq->entries.push_back(std::move(entry));
    }
    eq->changed.notify_all();
    return static_cast<int>(len);
  });
}

ssize_t eq_sread(struct fid_eq* fid, uint32_t* event, void* buf, size_t len, int timeout_ms, uint64_t flags) {
  return guarded(FI_LOG_EQ, "fi_eq_sread", [&]() -> int {
    if (flags & ~FI_PEEK) return -FI_EBADFLAGS;
    if (buf == nullptr && len > 0) return -FI_EINVAL;
    auto* eq = object_of<EventQueue>(fid);
    // Events need progress (manual): wait in short slices, moving the bound host between them.
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      progress_bound_host(eq);
      std::unique_lock lock(eq->mutex);
      auto ready = [&] { return !eq->entries.empty() || !eq->errors.empty(); };
      eq->changed.wait_for(lock, std::chrono::milliseconds(1), ready);
      if (ready()) return static_cast<int>(take_entry(eq, event, buf, len, flags));
      if (timeout_ms >= 0 && std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(timeout_ms))
        return -FI_EAGAIN;
    }
  });
}

const char* eq_strerror(struct fid_eq*, int prov_errno, const void*, char* buf, size_t len) {
  return provider_strerror(prov_errno, buf, len);
}

int eq_close(struct fid* fid) {
  return guarded(FI_LOG_EQ, "fi_close(eq)", [&]() -> int {
    auto* eq = object_of<EventQueue>(fid);
    if (eq->bound_endpoints.load() != 0) return -FI_EBUSY;  // endpoints still report to it
    eq->fabric->dependents.fetch_sub(1);
    delete eq;
    return 0;
  });
}

struct fi_ops g_eq_fid_ops = {
    .size = sizeof(struct fi_ops),
    .close = eq_close,
    .bind = no_bind,
    .control = no_control,
    .ops_open = no_ops_open,
    .tostr = nullptr,
    .ops_set = nullptr,
};

struct fi_ops_eq g_eq_ops = {
    .size = sizeof(struct fi_ops_eq),
    .read = eq_read,
    .readerr = eq_readerr,
    .write = eq_write,
    .sread = eq_sread,
    .strerror = eq_strerror,
};

}  // namespace

void push_event(EventQueue* eq, uint32_t event, std::vector<uint8_t> bytes) {
  {
    std::lock_guard lock(eq->mutex);
    eq->entries.push_back(EqEntry{event, std::move(bytes)});
  }
  eq->changed.notify_all();
}

void push_event_error(EventQueue* eq, const struct fi_eq_err_entry& error, std::vector<uint8_t> err_data) {
  {
    std::lock_guard lock(eq->mutex);
    eq->errors.push_back(error);
    eq->error_data.push_back(std::move(err_data));
  }
  eq->changed.notify_all();
}

int open_eq(struct fid_fabric* fabric_fid, struct fi_eq_attr* attr, struct fid_eq** out, void* context) {
  return guarded(FI_LOG_EQ, "fi_eq_open", [&]() -> int {
    if (!is_our_fabric(fabric_fid) || attr == nullptr || out == nullptr) return -FI_EINVAL;
    if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC) return -FI_ENOSYS;
    if (attr->flags & ~FI_WRITE) return -FI_EBADFLAGS;  // FI_WRITE: fi_eq_write allowed (always is)
    auto* eq = new EventQueue;
    eq->fabric = object_of<Fabric>(fabric_fid);
    eq->fid.fid.fclass = FI_CLASS_EQ;
    eq->fid.fid.context = context;
    eq->fid.fid.ops = &g_eq_fid_ops;
    eq->fid.ops = &g_eq_ops;
    eq->fabric->dependents.fetch_add(1);
    *out = &eq->fid;
    return 0;
  });
}

}  // namespace mroce::fi
