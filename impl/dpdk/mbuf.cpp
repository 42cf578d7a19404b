#include "dpdk/mbuf.hpp"

#include <rte_errno.h>

#include <stdexcept>

namespace mroce::dpdk {

MbufPool::MbufPool(const std::string& name, unsigned n_mbufs, uint16_t data_room, unsigned cache, uint16_t priv_size) {
  const uint16_t priv = uint16_t(RTE_ALIGN_CEIL(priv_size, RTE_MBUF_PRIV_ALIGN));
  pool_ = rte_pktmbuf_pool_create(name.c_str(), n_mbufs, cache, priv, data_room, int(rte_socket_id()));
  if (!pool_) throw std::runtime_error("rte_pktmbuf_pool_create(" + name + ") failed: " + rte_strerror(rte_errno));
}

void MbufPool::prefault() {
  // Fault every page of the pool in now. Without hugepages the data rooms are untouched anonymous
  // memory, and each first write took a page fault (several µs on a nested VM): the first pass
  // through the pool stalled the poll loop for ms at a time, long enough for spurious RTOs in
  // short runs (issue 13: `perf loopback -n 1000` was 70% page faults).
  rte_mempool_mem_iter(
      pool_,
      [](rte_mempool*, void*, rte_mempool_memhdr* mh, unsigned) {
        auto* p = static_cast<volatile uint8_t*>(mh->addr);
        for (size_t off = 0; off < mh->len; off += 4096) p[off] = p[off];
      },
      nullptr);
}

MbufPool::~MbufPool() { rte_mempool_free(pool_); }

}  // namespace mroce::dpdk
