// What MSG and RDM endpoints share as libfabric objects: their CQ and EQ bindings, the CQ entries of
// their sends, fi_getname's copy, and the refusal of ops they lack (DESIGN.md 4: -FI_ENOSYS rather
// than null pointers for libfabric's inline wrappers).
#pragma once

#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>

#include <cstddef>
#include <cstdint>

#include "fi/objects.hpp"

namespace mroce::fi {

// An endpoint's completion queues (fi_ep_bind with FI_TRANSMIT / FI_RECV).
struct EndpointCqs {
  CompletionQueue* tx = nullptr;
  CompletionQueue* rx = nullptr;
  bool tx_selective = false, rx_selective = false;  // FI_SELECTIVE_COMPLETION
};

// fi_ep_bind of a CQ of `domain` with `flags`: checks and records it. 0 or a negative fi errno.
int bind_cq(EndpointCqs* cqs, const Domain* domain, struct fid* cq, uint64_t flags);
// fi_ep_bind of an EQ: the endpoint's host moves forward when it is read. 0 or a negative fi errno.
int bind_eq(EventQueue** slot, DeviceHost* host, struct fid* eq);
// fi_close: the queues no longer count the endpoint.
void unbind(const EndpointCqs& cqs, EventQueue* eq);

// A send's completion (`flags`: FI_MSG or FI_TAGGED, with FI_SEND; or FI_RMA with FI_WRITE or
// FI_READ): an error entry whenever it
// failed (`err`, or the status's errno when 0), else an entry when `report`.
void report_send(CompletionQueue* cq, void* context, uint64_t flags, bool report, Status status, int err = 0);

// fi_getname / fi_getpeer: copies `len` bytes of `name`, or says how many are needed (-FI_ETOOSMALL).
int copy_name(const void* name, size_t len, void* addr, size_t* addrlen);

template <class R, class... Args>
R not_supported(Args...) {
  return static_cast<R>(-FI_ENOSYS);
}

}  // namespace mroce::fi
