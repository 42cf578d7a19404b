// The real engine (mroce::Device) in a simulated host: the host is the device's PacketIo and Clock.
// Frames from the fabric wait in a small receive ring, stamped with their arrival time, and a poll
// runs at that simulated instant (polls of one instant are coalesced); after each poll the host sets
// one ns-3 event at the device's next deadline. Frames the device sends go, by the ECMP hash of their
// route (impair::ecmp_link, the same choice as the DPDK ports), to the host's NIC port of that plane.
#pragma once

#include <deque>
#include <vector>
#include <functional>
#include <memory>

#include "fabric/fabric.hpp"
#include "fabric/sim.hpp"
#include "io/packet_io.hpp"
#include "mroce/mroce.hpp"

namespace mroce::fabric {

struct MroceHostOptions {
    // 32 paths of at most 8 packets each: 256 packets (1 MiB) per connection, about six times the
    // bandwidth-delay product of a 3-tier fabric at 100 Gb/s; the first window is 64 packets in all
    // (INIT_CWND 2 per path, [R-CC-1], A-38). The README's table shows what other choices trade.
    ConnParams offer{.paths = 32, .streams = 1, .max_payload = 4096, .window_cap = 8};
    uint32_t max_connections = 16;
    uint32_t rto_min_us = 100;
    uint32_t rto_init_us = 1000;       // before a path's first RTT sample
    uint32_t home_probe_us = 200;      // HOME_PROBE [R-PATH-10]
    uint32_t home_probe_max_us = 400;  // HOME_PROBE_MAX [R-PATH-10]
    // The inbound capacity C the receiver shares out [R-FS-1], as a fraction of the host's line rate
    // (all planes): below 1, the granted shares leave the last hop's queue room to drain.
    double capacity_fraction = 1.0;
    uint32_t ack_every = 4;
    uint32_t ack_delay_us = 8;
    // CONNECT tries before the connection fails [R-CONN-4]: more than the default 8, so that set-up
    // survives the loss sweep's 10 % per link (about 47 % per direction across a fat tree's core).
    uint32_t connect_tries = 64;
    uint32_t fs_interval_us = 50;
    uint32_t hint_ttl_us = 1000;  // HINT_TTL [R-CC-6] (a knob for experiments; the spec fixes it)
    uint32_t rx_ring = 512;       // frames the host holds between polls; beyond, the NIC drops (counted)
    // Frames of new data the NIC's transmit ring holds per plane (PacketIo::tx_room): the engine sends
    // at the pace the wire drains, as a NIC's transport scheduler does, instead of dumping its window
    // into the NIC queue. 0: unlimited.
    uint32_t tx_ring = 16;
    // How the ring is counted: true (the default), per plane, as a host with one NIC port per plane
    // has one ring per port, reporting the free slots of the planes that have room (a frame for a full
    // plane still goes: the engine does not know a route's plane); false, over all planes (16 x P
    // shared, so a backlog on one plane holds every plane's new data; the old default).
    bool tx_ring_per_plane = true;
};

class MroceHost final : public io::PacketIo, public io::Clock {
public:
    MroceHost(Fabric& fabric, uint32_t host, const MroceHostOptions& options);
    ~MroceHost() override;
    MroceHost(const MroceHost&) = delete;
    MroceHost& operator=(const MroceHost&) = delete;

    Device& device() { return *device_; }
    uint32_t host() const noexcept { return host_; }
    // Runs a poll at the current instant (after the caller's event), e.g. after posting.
    void kick();

    // Called after each poll with the device, to drain completions and events.
    std::function<void(MroceHost&)> after_poll;
    // Every frame that reaches this host, before the device sees it: (source host, frame bytes).
    std::function<void(uint32_t, uint32_t)> rx_tap;

    uint64_t rx_ring_drops() const noexcept { return rx_drops_; }

    // io::PacketIo
    uint16_t rx_burst(io::PacketBuf** out, uint16_t n) noexcept override;
    void free_rx(io::PacketBuf* b) noexcept override { pool_.free(b); }
    io::PacketBuf* alloc_tx() noexcept override { return pool_.alloc(); }
    void tx_burst(io::PacketBuf** pkts, uint16_t n) noexcept override;
    uint32_t tx_room() const noexcept override;
    // io::Clock: simulated microseconds.
    uint64_t now_us() const noexcept override;

private:
    void receive(uint32_t plane, const SimFrame& frame);
    void poll();
    void arm_timer();

    Fabric& fabric_;
    uint32_t host_;
    io::BufPool pool_;
    std::deque<io::PacketBuf*> rx_;
    uint32_t rx_ring_;
    uint32_t tx_ring_;                // all planes; 0 unlimited
    uint32_t in_nic_ = 0;             // frames handed to the NICs, not yet on the wire
    bool per_plane_;                  // MroceHostOptions::tx_ring_per_plane
    std::vector<uint32_t> in_plane_;  // in_nic_ by plane
    std::unique_ptr<Device> device_;
    sim::Timer poll_event_, timer_event_;
    uint64_t rx_drops_ = 0;
};

Address host_address(uint32_t host);

}  // namespace mroce::fabric
