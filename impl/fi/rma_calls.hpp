// The fi_ops_rma table of an endpoint kind: the nine libfabric calls unpacked into one RmaRequest
// each, handed to the kind's `Post` (MSG: its connection; RDM: the fi_addr's peer). `Report` says
// whether a call without flags reports its completion (selective completion and op_flags),
// `Selective` whether the transmit CQ was bound with FI_SELECTIVE_COMPLETION. One iov.
#pragma once

#include <rdma/fi_rma.h>

#include "fi/rma.hpp"

namespace mroce::fi {

template <ssize_t (*Post)(struct fid_ep*, const RmaRequest&, fi_addr_t), bool (*Report)(struct fid_ep*),
          bool (*Selective)(struct fid_ep*)>
struct RmaCalls {
  static constexpr uint64_t kMsgFlags = FI_COMPLETION | FI_INJECT | FI_REMOTE_CQ_DATA | FI_RMA | FI_READ | FI_WRITE |
                                        FI_TRANSMIT_COMPLETE | FI_INJECT_COMPLETE;

  static RmaRequest request(bool write, const void* buf, size_t len, uint64_t addr, uint64_t key) {
    RmaRequest q;
    q.write = write;
    q.buf = buf;
    q.len = len;
    q.addr = addr;
    q.key = key;
    return q;
  }
  // A call without flags: reports as the endpoint's op_flags say; inject calls never do.
  static ssize_t post(struct fid_ep* ep, RmaRequest q, fi_addr_t peer, void* context, bool inject) {
    q.context = context;
    q.inject = inject;
    q.report = !inject && Report(ep);
    return Post(ep, q, peer);
  }
  static ssize_t with_data(struct fid_ep* ep, RmaRequest q, uint64_t data, fi_addr_t peer, void* context, bool inject) {
    q.has_data = true;
    q.data = data;
    return post(ep, q, peer, context, inject);
  }

  static ssize_t read(struct fid_ep* ep, void* buf, size_t len, void*, fi_addr_t src, uint64_t addr, uint64_t key,
                      void* context) {
    return post(ep, request(false, buf, len, addr, key), src, context, false);
  }
  static ssize_t readv(struct fid_ep* ep, const struct iovec* iov, void**, size_t count, fi_addr_t src, uint64_t addr,
                       uint64_t key, void* context) {
    if (count > 1 || (count == 1 && iov == nullptr)) return -FI_EINVAL;  // rma_iov_limit 1
    return read(ep, count ? iov[0].iov_base : nullptr, count ? iov[0].iov_len : 0, nullptr, src, addr, key, context);
  }
  static ssize_t write(struct fid_ep* ep, const void* buf, size_t len, void*, fi_addr_t dest, uint64_t addr,
                       uint64_t key, void* context) {
    return post(ep, request(true, buf, len, addr, key), dest, context, false);
  }
  static ssize_t writev(struct fid_ep* ep, const struct iovec* iov, void**, size_t count, fi_addr_t dest, uint64_t addr,
                        uint64_t key, void* context) {
    if (count > 1 || (count == 1 && iov == nullptr)) return -FI_EINVAL;
    return write(ep, count ? iov[0].iov_base : nullptr, count ? iov[0].iov_len : 0, nullptr, dest, addr, key, context);
  }
  // Explicit flags replace the op_flags: under selective completion only FI_COMPLETION reports.
  static ssize_t msg(struct fid_ep* ep, bool write, const struct fi_msg_rma* m, uint64_t flags) {
    if (m == nullptr || m->iov_count > 1 || (m->iov_count == 1 && m->msg_iov == nullptr)) return -FI_EINVAL;
    if (m->rma_iov_count != 1 || m->rma_iov == nullptr) return -FI_EINVAL;
    if (flags & ~kMsgFlags) return -FI_EBADFLAGS;
    const size_t len = m->iov_count ? m->msg_iov[0].iov_len : 0;
    if (m->rma_iov[0].len != len) return -FI_EINVAL;  // the two sides' lengths must agree
    RmaRequest q =
        request(write, m->iov_count ? m->msg_iov[0].iov_base : nullptr, len, m->rma_iov[0].addr, m->rma_iov[0].key);
    q.context = m->context;
    q.inject = write && (flags & FI_INJECT) != 0;
    q.has_data = write && (flags & FI_REMOTE_CQ_DATA) != 0;
    q.data = q.has_data ? m->data : 0;
    q.report = !Selective(ep) || (flags & FI_COMPLETION) != 0;
    return Post(ep, q, m->addr);
  }
  static ssize_t readmsg(struct fid_ep* ep, const struct fi_msg_rma* m, uint64_t flags) {
    return msg(ep, false, m, flags);
  }
  static ssize_t writemsg(struct fid_ep* ep, const struct fi_msg_rma* m, uint64_t flags) {
    return msg(ep, true, m, flags);
  }
  static ssize_t inject(struct fid_ep* ep, const void* buf, size_t len, fi_addr_t dest, uint64_t addr, uint64_t key) {
    return post(ep, request(true, buf, len, addr, key), dest, nullptr, true);
  }
  static ssize_t writedata(struct fid_ep* ep, const void* buf, size_t len, void*, uint64_t data, fi_addr_t dest,
                           uint64_t addr, uint64_t key, void* context) {
    return with_data(ep, request(true, buf, len, addr, key), data, dest, context, false);
  }
  static ssize_t injectdata(struct fid_ep* ep, const void* buf, size_t len, uint64_t data, fi_addr_t dest,
                            uint64_t addr, uint64_t key) {
    return with_data(ep, request(true, buf, len, addr, key), data, dest, nullptr, true);
  }

  static inline struct fi_ops_rma ops = {
      .size = sizeof(struct fi_ops_rma),
      .read = read,
      .readv = readv,
      .readmsg = readmsg,
      .write = write,
      .writev = writev,
      .writemsg = writemsg,
      .inject = inject,
      .writedata = writedata,
      .injectdata = injectdata,
  };
};

}  // namespace mroce::fi
