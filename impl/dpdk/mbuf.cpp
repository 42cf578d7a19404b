#include "dpdk/mbuf.hpp"

#include <rte_errno.h>

#include <stdexcept>

namespace mroce::dpdk {

MbufPool::MbufPool(const std::string& name, unsigned n_mbufs, uint16_t data_room, unsigned cache, uint16_t priv_size) {
    const uint16_t priv = uint16_t(RTE_ALIGN_CEIL(priv_size, RTE_MBUF_PRIV_ALIGN));
    pool_ = rte_pktmbuf_pool_create(name.c_str(), n_mbufs, cache, priv, data_room, int(rte_socket_id()));
    if (!pool_)
        throw std::runtime_error("rte_pktmbuf_pool_create(" + name + ") failed: " + rte_strerror(rte_errno));
}

MbufPool::~MbufPool() { rte_mempool_free(pool_); }

}  // namespace mroce::dpdk
