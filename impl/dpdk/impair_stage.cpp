#include "dpdk/impair_stage.hpp"

#include "dpdk/mbuf.hpp"

namespace mroce::dpdk {

using impair::PacketFate;

ImpairStage::ImpairStage(impair::ImpairConfig config, rte_mempool* copy_pool, size_t hold_capacity)
    : imp_(std::move(config)), copy_pool_(copy_pool), hold_(hold_capacity) {}

ImpairStage::~ImpairStage() { discard(); }

void ImpairStage::discard() {
  rte_mbuf* m;
  while (hold_.pop_due(impair::kForever, m)) rte_pktmbuf_free(m);
}

uint16_t ImpairStage::release(uint64_t now_us, rte_mbuf** out, uint16_t cap) {
  uint16_t k = 0;
  while (k < cap && hold_.pop_due(now_us, out[k])) ++k;
  imp_.stats().frames_out += k;
  return k;
}

uint16_t ImpairStage::flush(rte_mbuf** out, uint16_t cap) { return release(impair::kForever, out, cap); }

// Out if there is room, else held until the next call (order kept: ties leave in insertion order).
void ImpairStage::emit(rte_mbuf* m, uint64_t now_us, rte_mbuf** out, uint16_t cap, uint16_t& k) {
  if (k < cap) {
    out[k++] = m;
    ++imp_.stats().frames_out;
    return;
  }
  hold(m, now_us, out, cap, k);
}

void ImpairStage::hold(rte_mbuf* m, uint64_t release_us, rte_mbuf** out, uint16_t cap, uint16_t& k) {
  if (hold_.push(release_us, m)) return;
  ++imp_.stats().hold_overflow;
  if (k < cap) {
    out[k++] = m;
    ++imp_.stats().frames_out;
  } else {
    // Nowhere to put it: lost, as from an overflowing switch buffer.
    rte_pktmbuf_free(m);
    ++imp_.stats().tail_dropped;
  }
}

uint16_t ImpairStage::process(rte_mbuf* const* in, uint16_t n, uint64_t now_us, rte_mbuf** out, uint16_t cap) {
  uint16_t k = release(now_us, out, cap);
  for (uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = in[i];
    const impair::Decision d = imp_.decide(now_us, head(m), m->pkt_len);
    if (d.corrupt_pending) {
      if (uint8_t* b = byte_at(m, d.corrupt_at)) *b ^= impair::corrupt_mask(d.fate.corrupt_xor);
    }
    if (log_) log_->push_back(d);
    if (d.dropped()) {
      rte_pktmbuf_free(m);
      continue;
    }
    switch (d.fate.kind) {
      case PacketFate::Duplicate: {
        // The copy is taken before the original leaves (the receiver may change it).
        rte_mbuf* c = rte_pktmbuf_copy(m, copy_pool_, 0, UINT32_MAX);
        emit(m, now_us, out, cap, k);
        if (c)
          hold(c, now_us + (d.fate.extra_delay_us == 0 ? 1 : d.fate.extra_delay_us), out, cap, k);
        else
          ++imp_.stats().copy_failed;
        break;
      }
      case PacketFate::Delay:
        hold(m, now_us + d.fate.extra_delay_us, out, cap, k);
        break;
      default:
        emit(m, now_us, out, cap, k);
        break;
    }
  }
  return k;
}

}  // namespace mroce::dpdk
