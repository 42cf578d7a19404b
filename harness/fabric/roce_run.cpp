// The RoCEv2 baseline over the fabric, in the shape of run_mroce (mroce_run.cpp): each flow is one
// RDMA Write with immediate on its own RC QP pair (created at time 0, posted at the flow's start; a
// collective's steps of one pair are QPs of their own, each starting at line rate),
// so the receiver learns of the last byte by its own completion (the flow's finish time); the
// receiver's bytes are compared with the source after the run (RunBook).
#include <memory>
#include <unordered_map>
#include <stdexcept>

#include "fabric/roce_host.hpp"
#include "fabric/runs.hpp"
#include "impair/ecmp.hpp"
#include "impair/prng.hpp"

namespace mroce::fabric {

namespace {

class RoceRun {
public:
    RoceRun(const FabricConfig& fc, const RoceOptions& ho, const std::vector<FlowSpec>& flows, const RunOptions& ro)
        : fabric_(fc), book_(flows, fc.hosts, fc.seed, ro), send_qpn_(flows.size()), watch_host_(ro.watch_host) {
        hosts_.resize(fc.hosts);
        auto host = [&](uint32_t h) -> RoceHost& {
            if (!hosts_[h]) {
                hosts_[h] = std::make_unique<RoceHost>(fabric_, h, ho);
                hosts_[h]->on_receive_complete = [this](uint32_t f) { book_.done(f); };
                hosts_[h]->on_error = [this](uint32_t f, const std::string& why) { book_.failed(f, why); };
                hosts_[h]->rx_tap = [this](uint32_t f, uint32_t bytes) { book_.received_bytes(f, bytes); };
            }
            return *hosts_[h];
        };
        std::unordered_map<uint64_t, uint32_t> rank;  // flows of the pair before this one
        for (size_t f = 0; f < flows.size(); ++f) {
            const FlowSpec& s = flows[f];
            RoceHost& tx = host(s.src);
            RoceHost& rx = host(s.dst);
            send_qpn_[f] = tx.alloc_qpn();
            const uint32_t recv_qpn = rx.alloc_qpn();
            // One UDP source port per QP (the ECMP path), in the ephemeral range; an initial PSN per QP.
            // Flows of one pair after the first take their own port (their own QPs); a flow of a channel
            // takes the first port from there that the NIC's ECMP hash puts on the channel's plane.
            const uint64_t h = impair::mix64(fc.seed * 0x9E3779B97F4A7C15ull ^ (uint64_t(s.src) << 32 | s.dst)) +
                               uint64_t(rank[uint64_t(s.src) << 32 | s.dst]++) * 0x9E3779B9ull;
            uint16_t sport = uint16_t(0xC000 | (h & 0x3FFF));
            for (uint32_t i = 0; s.channel >= 0 && i < 0x4000 &&
                                 impair::ecmp_link(sport, uint16_t(fc.planes)) != uint32_t(s.channel) % fc.planes;
                 ++i)
                sport = uint16_t(0xC000 | ((sport + 1) & 0x3FFF));
            const uint32_t ipsn = uint32_t(h >> 24) & 0xFFFFFF;
            tx.add_requester(send_qpn_[f], s.dst, recv_qpn, sport, ipsn, book_.source(f), s.bytes, uint32_t(f));
            rx.add_responder(recv_qpn, s.src, send_qpn_[f], sport, ipsn, book_.sink(f), s.bytes, uint32_t(f));
        }
        result_.bytes_per_host = sizeof(RoceHost) + 2 * (ho.mtu + 256);
        result_.bytes_per_connection = RoceHost::bytes_per_connection();
    }

    RunResult run() {
        // No connection set-up (QPs are configured directly): start times count from 0.
        book_.start_after_setup(0, [this](size_t f) { hosts_[book_.spec(f).src]->post(send_qpn_[f]); });
        book_.run(result_);
        result_.transport = "roce";
        for (const auto& h : hosts_) {
            if (!h) continue;
            const RoceCounters& c = h->counters();
            result_.totals.data_packets += c.data_packets;
            result_.totals.retransmissions += c.retransmissions;
            result_.totals.spurious += c.duplicates;  // resent packets the responder already held
            result_.totals.timeouts += c.timeouts;
            result_.totals.ce_seen += c.ce_seen;
            result_.totals.rate_cuts += c.rate_cuts;
        }
        result_.fabric = fabric_.stats();
        result_.plane_window_us = fabric_.config().plane_window_us;
        result_.watched_port = fabric_.port_to_host(watch_host_, 0);
        return std::move(result_);
    }

private:
    Fabric fabric_;
    RunBook book_;
    std::vector<uint32_t> send_qpn_;
    uint32_t watch_host_;
    std::vector<std::unique_ptr<RoceHost>> hosts_;
    RunResult result_;
};

}  // namespace

RunResult run_roce(const FabricConfig& fabric, const RoceOptions& host, const std::vector<FlowSpec>& flows,
                   const RunOptions& options) {
    return run_once<RoceRun>(fabric, host, flows, options);
}

}  // namespace mroce::fabric
