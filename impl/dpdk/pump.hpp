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

#include "dpdk/impair_stage.hpp"
#include "dpdk/pcap.hpp"
#include "dpdk/port.hpp"

namespace mroce::dpdk {

inline constexpr uint16_t kMaxBurst = 64;

struct PumpCounters {
    uint64_t rx_frames = 0, rx_bytes = 0;  // handed to the handler
    uint64_t tx_frames = 0, tx_bytes = 0;  // taken by the PMD
    uint64_t tx_lost = 0;                  // freed because the tx queue stayed full
};

class Pump {
public:
    explicit Pump(Port& port, uint16_t burst = 32) : port_(&port), burst_(std::min(burst, kMaxBurst)) {}

    void set_rx_impairment(ImpairStage* s) { rx_imp_ = s; }
    void set_tx_impairment(ImpairStage* s) { tx_imp_ = s; }
    void set_pcap(PcapWriter* w) { pcap_ = w; }
    Port& port() { return *port_; }
    const PumpCounters& counters() const { return c_; }

    // One rx burst through the rx impairment; calls handler(rte_mbuf** pkts, uint16_t n) when
    // frames are ready (also frames released late by the impairment). Returns frames handed over.
    template <class Handler>
    uint16_t poll(Handler&& handler, uint64_t now_us) {
        rte_mbuf* raw[kMaxBurst];
        const uint16_t n = port_->rx(raw, burst_);
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

    // Transmits frames the tx impairment held back and that are due now (call on every loop turn).
    uint16_t service(uint64_t now_us) {
        if (tx_imp_ == nullptr || tx_imp_->next_release_us() > now_us) return 0;
        rte_mbuf* ready[kMaxBurst];
        return transmit(ready, tx_imp_->release(now_us, ready, kMaxBurst));
    }

private:
    template <class Handler>
    void deliver(rte_mbuf** pkts, uint16_t n, Handler& handler) {
        if (n == 0) return;
        c_.rx_frames += n;
        for (uint16_t i = 0; i < n; ++i) c_.rx_bytes += pkts[i]->pkt_len;
        if (pcap_) pcap_->write(pkts, n);
        handler(pkts, n);
    }

    // Returns the frames the PMD took (after retries); the others are freed and counted lost.
    uint16_t transmit(rte_mbuf** pkts, uint16_t n) {
        if (n == 0) return 0;
        uint32_t len[2 * kMaxBurst];
        for (uint16_t i = 0; i < n; ++i) len[i] = pkts[i]->pkt_len;
        // min(): sent <= n always; said so that GCC -O3 sees only initialised entries are read.
        const uint16_t sent = std::min(port_->tx_all(pkts, n), n);
        for (uint16_t i = 0; i < sent; ++i) c_.tx_bytes += len[i];
        c_.tx_frames += sent;
        c_.tx_lost += uint64_t(n - sent);
        return sent;
    }

    Port* port_;
    uint16_t burst_;
    ImpairStage* rx_imp_ = nullptr;
    ImpairStage* tx_imp_ = nullptr;
    PcapWriter* pcap_ = nullptr;
    PumpCounters c_;
};

}  // namespace mroce::dpdk
