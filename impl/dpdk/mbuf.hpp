// Mbuf pool and the small helpers through which the engine builds frames directly in mbufs
// (zero copy on our side: alloc, append the frame in place, hand the mbuf to tx, the PMD frees it).
#pragma once

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <string>

namespace mroce::dpdk {

// Data room that holds a 9000-byte-MTU frame (9018 with Ethernet header and FCS room) in one
// segment, after the default headroom.
inline constexpr uint16_t kJumboDataRoom = RTE_PKTMBUF_HEADROOM + 9216;

class MbufPool {
 public:
  // Throws std::runtime_error when the pool cannot be created (name taken, out of memory).
  // `priv_size`: bytes of application data right after each rte_mbuf (rounded up to
  // RTE_MBUF_PRIV_ALIGN), e.g. the engine's buffer descriptor (see engine_port.hpp).
  MbufPool(const std::string& name, unsigned n_mbufs, uint16_t data_room = kJumboDataRoom, unsigned cache = 256,
           uint16_t priv_size = 0);
  ~MbufPool();
  MbufPool(const MbufPool&) = delete;
  MbufPool& operator=(const MbufPool&) = delete;
  rte_mempool* get() const { return pool_; }
  // Touches every page of the pool (see mbuf.cpp). IoContext calls it once its ports are open,
  // so that a memif server's socket is not delayed by it.
  void prefault();
  operator rte_mempool*() const { return pool_; }
  unsigned available() const { return rte_mempool_avail_count(pool_); }
  uint16_t data_room() const { return rte_pktmbuf_data_room_size(pool_); }

 private:
  rte_mempool* pool_ = nullptr;
};

// A fresh empty mbuf (nullptr when the pool is empty).
inline rte_mbuf* alloc_mbuf(rte_mempool* pool) { return rte_pktmbuf_alloc(pool); }

// Bulk allocation: all `n` or none (false).
inline bool alloc_mbufs(rte_mempool* pool, rte_mbuf** out, unsigned n) {
  return rte_pktmbuf_alloc_bulk(pool, out, n) == 0;
}

// Grows the frame by `len` bytes at the end and returns where to write them, or nullptr when the
// last segment has no room (the engine builds a frame in one segment: use a pool whose data room
// fits the largest frame).
inline uint8_t* append(rte_mbuf* m, uint16_t len) { return reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, len)); }

// The first segment's bytes (the whole frame when it is not chained).
inline std::span<uint8_t> head(rte_mbuf* m) { return {rte_pktmbuf_mtod(m, uint8_t*), m->data_len}; }
inline std::span<const uint8_t> head(const rte_mbuf* m) { return {rte_pktmbuf_mtod(m, const uint8_t*), m->data_len}; }
inline bool contiguous(const rte_mbuf* m) { return m->nb_segs == 1; }

// Byte `off` of a possibly chained frame (nullptr beyond its end).
inline uint8_t* byte_at(rte_mbuf* m, uint32_t off) {
  for (; m != nullptr; m = m->next) {
    if (off < m->data_len) return rte_pktmbuf_mtod_offset(m, uint8_t*, off);
    off -= m->data_len;
  }
  return nullptr;
}

// Copies the whole frame into `dst` (which must hold pkt_len bytes); returns pkt_len.
inline uint32_t copy_out(const rte_mbuf* m, uint8_t* dst) {
  const uint32_t len = m->pkt_len;
  const void* p = rte_pktmbuf_read(m, 0, len, dst);
  if (p != dst) std::memcpy(dst, p, len);
  return len;
}

inline void free_mbufs(rte_mbuf* const* pkts, unsigned n) {
  for (unsigned i = 0; i < n; ++i) rte_pktmbuf_free(pkts[i]);
}

}  // namespace mroce::dpdk
