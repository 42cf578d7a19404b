#include "dpdk/engine_port.hpp"

#include <algorithm>
#include <stdexcept>

#include "impair/ecmp.hpp"

namespace mroce::dpdk {

EnginePort::EnginePort(IoContext& ctx, std::vector<size_t> planes) : ctx_(ctx), planes_(std::move(planes)) {
  if (planes_.empty()) throw std::invalid_argument("EnginePort: no plane");
  for (size_t p : planes_)
    if (p >= ctx_.planes()) throw std::invalid_argument("EnginePort: plane " + std::to_string(p) + " out of range");
  if (rte_pktmbuf_priv_size(ctx_.pool()) < kEnginePriv)
    throw std::invalid_argument("EnginePort: open the IoContext with IoOptions::mbuf_priv >= kEnginePriv");
}

EnginePort::~EnginePort() { free_mbufs(stash_ + stash_head_, stash_n_); }

uint16_t EnginePort::rx_burst(io::PacketBuf** out, uint16_t n) noexcept {
  const uint64_t now = now_us();
  // Refill the stash from the planes in turn, starting after the last one served (fairness).
  for (size_t tries = 0; stash_n_ == 0 && tries < planes_.size(); ++tries) {
    Pump& pump = ctx_.pump(planes_[next_plane_]);
    next_plane_ = (next_plane_ + 1) % planes_.size();
    stash_head_ = 0;
    pump.poll(
        [this](rte_mbuf** pkts, uint16_t k) {
          for (uint16_t i = 0; i < k; ++i) stash_[stash_n_++] = pkts[i];
        },
        now);
  }
  uint16_t got = 0;
  while (got < n && stash_n_ > 0) {
    rte_mbuf* m = stash_[stash_head_++];
    --stash_n_;
    // The engine reads a frame as one byte range (true of every PMD here for frames that fit
    // the data room); a chained frame is linearised, or dropped if it cannot be.
    if (m->nb_segs > 1 && rte_pktmbuf_linearize(m) != 0) {
      rte_pktmbuf_free(m);
      ++dropped_chained_;
      continue;
    }
    io::PacketBuf* b = buf_of(m);
    b->data = rte_pktmbuf_mtod(m, uint8_t*);
    b->len = m->pkt_len;
    b->cap = uint32_t(m->data_len) + rte_pktmbuf_tailroom(m);
    b->index = 0;
    b->pool = 0;
    out[got++] = b;
  }
  return got;
}

void EnginePort::free_rx(io::PacketBuf* b) noexcept { rte_pktmbuf_free(mbuf_of(b)); }

io::PacketBuf* EnginePort::alloc_tx() noexcept {
  rte_mbuf* m = rte_pktmbuf_alloc(ctx_.pool());
  if (!m) return nullptr;
  io::PacketBuf* b = buf_of(m);
  b->data = rte_pktmbuf_mtod(m, uint8_t*);
  b->len = 0;
  b->cap = rte_pktmbuf_tailroom(m);
  b->index = 0;
  b->pool = 0;
  b->route = 0;
  return b;
}

void EnginePort::tx_burst(io::PacketBuf** pkts, uint16_t n) noexcept {
  const uint64_t now = now_us();
  const uint16_t planes = uint16_t(planes_.size());
  rte_mbuf* per_plane[kMaxBurst];
  uint16_t plane_of[kMaxBurst];
  for (uint16_t first = 0; first < n; first += kMaxBurst) {
    const uint16_t chunk = uint16_t(std::min<int>(n - first, kMaxBurst));
    for (uint16_t i = 0; i < chunk; ++i) {
      io::PacketBuf* b = pkts[first + i];
      rte_mbuf* m = mbuf_of(b);
      const uint32_t len = std::min<uint32_t>(b->len, uint32_t(m->data_len) + rte_pktmbuf_tailroom(m));
      m->data_len = uint16_t(len);
      m->pkt_len = len;
      plane_of[i] = impair::ecmp_link(b->route, planes);  // the builder's route: no re-parse
    }
    // Per plane, in the engine's order.
    for (uint16_t p = 0; p < planes; ++p) {
      uint16_t k = 0;
      for (uint16_t i = 0; i < chunk; ++i)
        if (plane_of[i] == p) per_plane[k++] = mbuf_of(pkts[first + i]);
      if (k) ctx_.pump(planes_[p]).send(per_plane, k, now);
    }
  }
}

void EnginePort::service() noexcept {
  const uint64_t now = now_us();
  for (size_t p : planes_) ctx_.pump(p).service(now);
}

}  // namespace mroce::dpdk
