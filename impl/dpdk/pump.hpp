// The seam between ports and the protocol engine:
//
//     port rx burst -> [rx impairment] -> [pcap] -> handler(pkts, n)      (Pump::poll)
//     engine frames -> [pcap] -> [tx impairment] -> port tx burst         (Pump::send)
//
// The handler takes ownership of the mbufs it is given (it frees them, or forwards them). Frames
// the engine sends are mbufs it built in place (alloc_mbuf + append); send() takes ownership of
// them (sent, held by the tx impairment, or freed). The pcap records what the endpoint sees: frames
// as received after rx impairment, frames as sent before tx impairment.
#pragma once

#include <rte_mbuf.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "dpdk/impair_stage.hpp"
#include "dpdk/pcap.hpp"
#include "dpdk/port.hpp"
#include "impair/ecn.hpp"

namespace mroce::dpdk {

inline constexpr uint16_t kMaxBurst = 64;

struct PumpCounters {
  uint64_t rx_frames = 0, rx_bytes = 0;  // handed to the handler
  uint64_t tx_frames = 0, tx_bytes = 0;  // taken by the PMD
  uint64_t tx_lost = 0;                  // freed because the tx queue and the hold stayed full
  uint64_t ce_marked = 0;                // ECN-capable frames marked CE by the backlog threshold
};

class Pump {
 public:
  explicit Pump(Port& port, uint16_t burst = 32) : port_(&port), burst_(std::min(burst, kMaxBurst)) {
    held_.reserve(kTxHoldMax);
  }
  ~Pump() {
    for (rte_mbuf* m : held_) rte_pktmbuf_free(m);
  }
  Pump(const Pump&) = delete;
  Pump& operator=(const Pump&) = delete;

  void set_rx_impairment(ImpairStage* s) { rx_imp_ = s; }
  void set_tx_impairment(ImpairStage* s) { tx_imp_ = s; }
  void set_pcap(PcapWriter* w) { pcap_ = w; }
  // A software port has no switch in front of it: the queue that builds is this port's receive
  // queue. With a threshold K (frames), an ECN-capable frame taken while K or more frames still
  // wait behind it is marked CE, as a DCTCP-style switch marks above K [R-CC-4]; 0: off. A PMD
  // that cannot tell its backlog (rx_backlog() < 0) is never marked.
  void set_ce_backlog(uint32_t k_frames) { ce_backlog_ = k_frames; }
  Port& port() { return *port_; }
  const PumpCounters& counters() const { return c_; }

  // One rx burst through the rx impairment; calls handler(rte_mbuf** pkts, uint16_t n) when
  // frames are ready (also frames released late by the impairment). Returns frames handed over.
  template <class Handler>
  uint16_t poll(Handler&& handler, uint64_t now_us) {
    rte_mbuf* raw[kMaxBurst];
    const uint16_t n = port_->rx(raw, burst_);
    if (ce_backlog_ && (n || full_bursts_)) mark_backlog(raw, n);
    if (rx_imp_ == nullptr) {
      deliver(raw, n, handler);
      return n;
    }
    if (n == 0 && rx_imp_->next_release_us() > now_us) return 0;
    rte_mbuf* ready[2 * kMaxBurst];
    const uint16_t m = rx_imp_->process(raw, n, now_us, ready, 2 * kMaxBurst);
    deliver(ready, m, handler);
    return m;
  }

  // Sends n frames (ownership passes to the pump). Returns frames the PMD took.
  uint16_t send(rte_mbuf** pkts, uint16_t n, uint64_t now_us) {
    if (pcap_) pcap_->write(pkts, n);
    uint16_t sent = 0;
    for (uint16_t off = 0; off < n; off += kMaxBurst) {
      const uint16_t chunk = std::min<uint16_t>(uint16_t(n - off), kMaxBurst);
      if (tx_imp_ == nullptr) {
        sent += transmit(pkts + off, chunk);
        continue;
      }
      rte_mbuf* ready[2 * kMaxBurst];
      sent += transmit(ready, tx_imp_->process(pkts + off, chunk, now_us, ready, 2 * kMaxBurst));
    }
    return sent;
  }

  // Transmits frames the tx impairment held back and that are due now, and frames a full tx
  // queue held back (call on every loop turn).
  uint16_t service(uint64_t now_us) {
    uint16_t sent = held_.empty() ? 0 : transmit(nullptr, 0);
    if (tx_imp_ == nullptr || tx_imp_->next_release_us() > now_us) return sent;
    rte_mbuf* ready[kMaxBurst];
    return uint16_t(sent + transmit(ready, tx_imp_->release(now_us, ready, kMaxBurst)));
  }
  size_t tx_held() const { return held_.size(); }

 private:
  void mark_backlog(rte_mbuf** pkts, uint16_t n) {
    int waiting = port_->rx_backlog();
    if (waiting < 0) {
      // The PMD cannot tell (memif): full bursts in a row are frames that were waiting.
      full_bursts_ = n == burst_ ? full_bursts_ + 1 : 0;
      waiting = int(full_bursts_ > 1 ? (full_bursts_ - 1) * burst_ : 0);
    }
    if (uint32_t(waiting) < ce_backlog_) return;
    for (uint16_t i = 0; i < n; ++i)
      if (impair::mark_ce({rte_pktmbuf_mtod(pkts[i], uint8_t*), pkts[i]->data_len})) ++c_.ce_marked;
  }

  template <class Handler>
  void deliver(rte_mbuf** pkts, uint16_t n, Handler& handler) {
    if (n == 0) return;
    c_.rx_frames += n;
    for (uint16_t i = 0; i < n; ++i) c_.rx_bytes += pkts[i]->pkt_len;
    if (pcap_) pcap_->write(pkts, n);
    handler(pkts, n);
  }

  // Hands frames to the PMD, after the ones a full queue held back earlier (order kept). A full
  // queue is this port's switch queue overflowing: what the PMD does not take waits here (up to
  // kTxHoldMax frames, then the newest are dropped and counted lost), and the ECN-capable frames
  // among them are marked CE [R-CC-4], so that the senders slow down instead of losing frames to
  // their own host (memif: 1% of the frames at 0% loss were freed by a full ring). Returns frames
  // the PMD took.
  uint16_t transmit(rte_mbuf** pkts, uint16_t n) {
    uint16_t sent = 0;
    if (!held_.empty()) {
      size_t off = 0;
      while (off < held_.size()) {
        const uint16_t chunk = uint16_t(std::min<size_t>(held_.size() - off, kMaxBurst));
        const uint16_t took = take(held_.data() + off, chunk);
        off += took;
        if (took < chunk) break;
      }
      held_.erase(held_.begin(), held_.begin() + ptrdiff_t(off));
      sent = uint16_t(off);
      if (!held_.empty()) {
        hold(pkts, n);
        return sent;
      }
    }
    if (n == 0) return sent;
    const uint16_t took = take(pkts, n);
    hold(pkts + took, uint16_t(n - took));
    return uint16_t(sent + took);
  }
  // One try at the PMD (tx_burst until it stops taking); returns how many of pkts it took.
  uint16_t take(rte_mbuf** pkts, uint16_t n) {
    uint16_t sent = 0;
    for (uint16_t t; sent < n && (t = port_->tx(pkts + sent, uint16_t(n - sent))) > 0;) {
      for (uint16_t i = 0; i < t; ++i) c_.tx_bytes += pkts[sent + i]->pkt_len;
      sent = uint16_t(sent + t);
    }
    c_.tx_frames += sent;
    return sent;
  }
  void hold(rte_mbuf** pkts, uint16_t n) {
    for (uint16_t i = 0; i < n; ++i) {
      if (held_.size() >= kTxHoldMax) {
        rte_pktmbuf_free(pkts[i]);
        ++c_.tx_lost;
        continue;
      }
      if (impair::mark_ce({rte_pktmbuf_mtod(pkts[i], uint8_t*), pkts[i]->data_len})) ++c_.ce_marked;
      held_.push_back(pkts[i]);
    }
  }

  Port* port_;
  uint16_t burst_;
  ImpairStage* rx_imp_ = nullptr;
  ImpairStage* tx_imp_ = nullptr;
  PcapWriter* pcap_ = nullptr;
  uint32_t ce_backlog_ = 0;
  uint32_t full_bursts_ = 0;  // consecutive full rx bursts (the backlog estimate without a count)
  static constexpr size_t kTxHoldMax = 4096;
  std::vector<rte_mbuf*> held_;  // frames a full tx queue did not take yet, in order
  PumpCounters c_;
};

}  // namespace mroce::dpdk
