// RMA of MSG and RDM endpoints (DESIGN.md 5.3 "fi_write / fi_read", M3): fi_write/fi_read become
// the engine's RDMA Write and Read; fi_writedata its Write-with-immediate on the ordered stream,
// which consumes one of the target's bounce receives (one credit) and raises its receive completion
// once the write's bytes are placed. The application's buffers are registered for the operation
// (injected ones are copied first) and deregistered at its completion. Everything under the host
// mutex.
#pragma once

#include <rdma/fabric.h>

#include <cstddef>
#include <cstdint>

#include "fi/objects.hpp"
#include "mroce/mroce.hpp"

namespace mroce::fi {

struct Channel;

// One fi_write/fi_read as an endpoint hands it over (already checked against its caps).
struct RmaRequest {
  bool write = false;
  const void* buf = nullptr;  // local source (write) or sink (read)
  size_t len = 0;
  uint64_t addr = 0;  // a virtual address (FI_MR_VIRT_ADDR) or an offset into the region
  uint64_t key = 0;
  bool offsets = false;   // the domain's mr_mode has no FI_MR_VIRT_ADDR (mr.cpp)
  bool has_data = false;  // fi_writedata: 32-bit remote CQ data
  uint64_t data = 0;
  void* context = nullptr;
  bool report = false;
  bool inject = false;  // the bytes are copied before the call returns; no completion
};

// The checks every RMA call makes before touching the endpoint: 0 or a negative fi errno.
int check_rma(const RmaRequest& q);

struct RmaOp;

// Prepares an operation for `owner`'s transmit CQ `cq`: registers (or copies) the local buffer.
// 0 or a negative fi errno (-FI_EAGAIN when the device has no region left).
int make_rma(Device* device, const void* owner, CompletionQueue* cq, const RmaRequest& q, RmaOp** out);
// Posts it on the channel: 0 (posted, or a key no engine has: completed with FI_EACCES), or a
// negative fi errno and the op is still the caller's (-FI_EAGAIN: the engine is full, or a
// writedata waits for a credit): post again, drop_rma or fail_rma.
int post_rma(Channel* c, RmaOp* op);
// Forgets an operation that was refused at the call (no completion).
void drop_rma(RmaOp* op);
// Completes a prepared operation that will not be posted (its channel failed) with an error entry.
void fail_rma(RmaOp* op, Status status, int err = 0);
// The ops of a closed endpoint complete without CQ entries (their buffers are still deregistered).
void forget_rma(const void* owner);
// Channel dispatch: an engine completion of an RMA wr_id. False when `wr_id` is not one.
bool complete_rma(Device* device, uint64_t wr_id, Status status);

// RMA to an endpoint of the same device (RDM FI_LOCAL_COMM): the provider's MR table checks the
// key, the bounds and the right as the engine would (FI_EACCES), then the bytes are copied.
Status local_rma(Device* device, const RmaRequest& q);

// An RMA completion of the initiator (FI_RMA | FI_WRITE or FI_READ): an error entry whenever it
// failed, else an entry when `report`.
void report_rma(CompletionQueue* cq, void* context, bool write, bool report, Status status, int err = 0);
// The target side of fi_writedata: FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA with the data.
void report_remote_write(CompletionQueue* rx, uint64_t data, fi_addr_t source);

}  // namespace mroce::fi
