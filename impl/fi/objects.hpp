// The provider's libfabric objects (DESIGN.md 5.2): each starts with its libfabric descriptor, so a
// fid pointer from the application leads back to it (object_of). An object that others depend on
// counts them and refuses fi_close with -FI_EBUSY while any is open (fabric <- domain, EQ; domain <-
// MR, CQ, AV), so the application's close order is checked rather than trusted.
#pragma once

#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "fi/addr.hpp"
#include "fi/host.hpp"
#include "mroce/mroce.hpp"

namespace mroce::fi {

struct Fabric {
  struct fid_fabric fid;  // first: libfabric's handle
  std::atomic<int> dependents{0};
};

struct Domain {
  struct fid_domain fid;  // first
  Fabric* fabric = nullptr;
  DeviceHost* host = nullptr;
  Device* device = nullptr;
  std::string name;
  uint64_t mr_mode = 0;  // as the fi_info given to fi_domain said (1.5+ bits)
  std::atomic<int> dependents{0};
};

struct MemoryRegistration {
  struct fid_mr fid;  // first; fid.key = the engine's rkey, fid.mem_desc = this object
  Domain* domain = nullptr;
  MemoryRegion region;
  uint8_t* base = nullptr;  // the application's buffer
  uint32_t rights = 0;      // engine access bits
};

// Offset mode (no FI_MR_VIRT_ADDR): each region has an iova window of this size (mr.cpp).
inline constexpr uint64_t kOffsetWindow = uint64_t{1} << 32;

// RMA within a device (rma.cpp): the host pointer of [addr, addr + len) in the application's region
// with rkey `key`, when it lies inside and the region grants `right`; else nullptr. Host mutex.
uint8_t* find_region(Device* device, uint32_t key, uint64_t addr, uint64_t len, uint32_t right) noexcept;

// Completions as the provider stores them, whatever the CQ's format (converted on read).
struct CqEntry {
  struct fi_cq_tagged_entry entry;
  fi_addr_t source = FI_ADDR_NOTAVAIL;
};

struct CompletionQueue {
  struct fid_cq fid;  // first
  Domain* domain = nullptr;
  enum fi_cq_format format = FI_CQ_FORMAT_CONTEXT;
  std::mutex mutex;             // guards the queues (writers are the provider's progress, under the host mutex)
  std::deque<CqEntry> entries;  // growable: with FI_RM_ENABLED no completion may be lost (DESIGN.md 3.2)
  std::deque<struct fi_cq_err_entry> errors;
  std::atomic<bool> signaled{false};
  std::atomic<int> bound_endpoints{0};  // fi_close refuses (-FI_EBUSY) while an endpoint uses it
};

struct EqEntry {
  uint32_t event = 0;
  std::vector<uint8_t> bytes;  // the event's entry as written (fi_eq_entry, fi_eq_cm_entry, ...)
};

struct EventQueue {
  struct fid_eq fid;  // first
  Fabric* fabric = nullptr;
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<EqEntry> entries;
  std::deque<struct fi_eq_err_entry> errors;
  std::deque<std::vector<uint8_t>> error_data;  // err_data of each error entry (a reject's CM data)
  std::vector<uint8_t> last_error_data;         // what the last readerr pointed err_data at
  bool signaled = false;
  // The device host of the endpoints bound to it: reading the EQ moves it forward (manual progress).
  std::atomic<DeviceHost*> host{nullptr};
  std::atomic<int> bound_endpoints{0};
};

// Appends an event (bytes as the application reads them) or an error entry and wakes sread.
void push_event(EventQueue* eq, uint32_t event, std::vector<uint8_t> bytes);
void push_event_error(EventQueue* eq, const struct fi_eq_err_entry& error, std::vector<uint8_t> err_data);
// Appends a completion or an error completion.
void push_completion(CompletionQueue* cq, const CqEntry& entry);
void push_completion_error(CompletionQueue* cq, const struct fi_cq_err_entry& error);

struct AddressVector {
  struct fid_av fid;  // first
  Domain* domain = nullptr;
  enum fi_av_type type = FI_AV_MAP;
  std::mutex mutex;
  std::vector<std::optional<EndpointAddress>> table;  // fi_addr_t = index, for MAP and TABLE alike
  uint64_t generation = 0;              // bumped by every insert and remove: sources found missing may be there now
  std::atomic<int> bound_endpoints{0};  // fi_close refuses (-FI_EBUSY) while an endpoint uses it
};

// Object constructors (the fi_ops tables point at them).
int open_fabric(struct fi_fabric_attr* attr, struct fid_fabric** fabric, void* context);
int open_domain(struct fid_fabric* fabric, struct fi_info* info, struct fid_domain** domain, void* context);
int open_eq(struct fid_fabric* fabric, struct fi_eq_attr* attr, struct fid_eq** eq, void* context);
int open_cq(struct fid_domain* domain, struct fi_cq_attr* attr, struct fid_cq** cq, void* context);
int open_av(struct fid_domain* domain, struct fi_av_attr* attr, struct fid_av** av, void* context);
int open_endpoint(struct fid_domain* domain, struct fi_info* info, struct fid_ep** ep, void* context);
// rdm.cpp: fi_endpoint with an FI_EP_RDM entry (open_endpoint hands it over).
int open_rdm_endpoint(struct fid_domain* domain, struct fi_info* info, struct fid_ep** ep, void* context);
int open_passive_ep(struct fid_fabric* fabric, struct fi_info* info, struct fid_pep** pep, void* context);
extern struct fi_ops_mr g_mr_ops;  // the domain's fi_mr_reg / regv / regattr

// True when `f` is one of this provider's fabrics or domains (an application may mix providers).
bool is_our_fabric(const struct fid_fabric* f) noexcept;
bool is_our_domain(const struct fid_domain* d) noexcept;

}  // namespace mroce::fi
