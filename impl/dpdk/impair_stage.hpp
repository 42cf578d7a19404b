// The impairment layer on mbuf bursts: applies impair::Impairer's per-frame decisions to real
// frames. Drop frees the mbuf; Duplicate sends the frame and a deep copy (rte_pktmbuf_copy, so the
// receiver may modify either) after the fate's gap; Delay holds the frame in a time-ordered queue;
// MarkCe rewrites the ECN bits (IPv4 checksum fixed incrementally); Corrupt XORs one byte of the IP
// packet; blackholes drop by UDP source port. Put it between rx and the handler, or between the
// handler and tx, or both (two stages with different seeds).
#pragma once

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <cstdint>
#include <vector>

#include "impair/impairer.hpp"

namespace mroce::dpdk {

class ImpairStage {
 public:
  // `copy_pool` supplies duplicates; `hold_capacity` bounds the frames held back (delayed frames
  // and duplicates); when it is full a frame to hold is passed on at once (stats.hold_overflow).
  ImpairStage(impair::ImpairConfig config, rte_mempool* copy_pool, size_t hold_capacity = 8192);
  ~ImpairStage();
  ImpairStage(const ImpairStage&) = delete;
  ImpairStage& operator=(const ImpairStage&) = delete;

  // Takes ownership of in[0..n), arriving at now_us, and writes to out the frames that leave the
  // stage now: first held frames that are due, then the new frames in order. Frames that do not
  // fit in `cap` wait in the holding queue for the next call (give cap >= 2 * n to avoid that).
  // Returns the number written to out.
  uint16_t process(rte_mbuf* const* in, uint16_t n, uint64_t now_us, rte_mbuf** out, uint16_t cap);
  // Only the held frames due at now_us (call it on every poll, also without new frames).
  uint16_t release(uint64_t now_us, rte_mbuf** out, uint16_t cap);
  // Every held frame regardless of its time, in release order (end of a run).
  uint16_t flush(rte_mbuf** out, uint16_t cap);
  // Frees every held frame.
  void discard();

  size_t held() const { return hold_.size(); }
  uint64_t next_release_us() const { return hold_.next_release(); }
  impair::Impairer& impairer() { return imp_; }
  const impair::ImpairStats& stats() const { return imp_.stats(); }

  // When set, every decision is appended (for replaying a port run in memory). Reserve enough
  // capacity in advance to keep allocation off the data path.
  void record(std::vector<impair::Decision>* log) { log_ = log; }

 private:
  void emit(rte_mbuf* m, uint64_t now_us, rte_mbuf** out, uint16_t cap, uint16_t& k);
  void hold(rte_mbuf* m, uint64_t release_us, rte_mbuf** out, uint16_t cap, uint16_t& k);

  impair::Impairer imp_;
  rte_mempool* copy_pool_;
  impair::DelayLine<rte_mbuf*> hold_;
  std::vector<impair::Decision>* log_ = nullptr;
};

}  // namespace mroce::dpdk
