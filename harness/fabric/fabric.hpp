// The datacenter in ns-3: P planes of a leaf-spine or 3-tier fat tree, switches with per-port
// output queues (tail drop, ECN marking, PFC), ECMP by a salted hash of the 5-tuple so that the UDP
// source port picks the path, links of one rate and delay with i.i.d. loss, and link or plane failure
// at a time. Hosts see one NIC port per plane: they hand whole Ethernet frames to host_send and get
// frames through their receiver. Transport endpoints (the engine, the RoCEv2 baselines) sit on top.
//
// Not modelled: Ethernet preamble and inter-frame gap (a frame on the wire is its bytes plus ns-3's
// 2-byte PPP header), switch processing latency, shared buffers (each port has its own limit), PFC
// priorities and pause quanta (XOFF pauses until XON), routing reconvergence after a failure.
//
// MPI-ready: all state lives in this object and in ns-3 nodes, devices and channels, and frames
// cross between nodes only over point-to-point links. A distributed run would put each plane (or
// each pod) in its own rank and replace the links that cross ranks with PointToPointRemoteChannel.
//
// This header does not include ns-3 (its 3.37 headers compile only as C++17); the implementation
// files that do are compiled as C++17.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "fabric/config.hpp"

namespace mroce::fabric {

// A frame handed to a host, readable without ns-3 types.
class SimFrame {
public:
    virtual ~SimFrame() = default;
    virtual uint32_t size() const = 0;
    virtual uint32_t copy_to(uint8_t* out, uint32_t cap) const = 0;  // bytes copied
};

struct PortStats {
    uint64_t enqueued = 0, dropped = 0, marked = 0, sent_frames = 0, sent_bytes = 0;
    uint64_t max_bytes = 0;
    double byte_us = 0;  // integral of the queued bytes over time (µs), for the time-weighted mean
    double paused_us = 0;
    uint64_t pauses_sent = 0;
    double first_drop_us = -1, last_drop_us = -1;  // simulated times of the first and last tail drop
};

struct PortView {
    uint32_t switch_index = 0, plane = 0, tier = 0;  // tier 0: edge/leaf, 1: aggregation/spine, 2: core
    uint32_t port = 0;
    bool up = false;  // an ECMP uplink
    PortStats stats;
};

struct FabricStats {
    uint64_t frames_sent_by_hosts = 0, frames_delivered_to_hosts = 0;
    uint64_t queue_drops = 0, link_losses = 0, ce_marks = 0, pause_frames = 0;
    uint64_t switch_bad_frames = 0;  // frames a switch could not route (not IPv4/UDP, unknown host)
    uint64_t max_queue_bytes = 0;    // over every switch port
    uint64_t queued_frames_now = 0;  // in any switch or NIC queue at the time of the call
    // With FabricConfig::plane_window_us: bytes delivered to hosts ([plane][window]) and bytes hosts
    // handed to their NIC port of each plane, by simulated time.
    std::vector<std::vector<uint64_t>> plane_rx_bytes, plane_tx_bytes;
};

class Fabric {
public:
    using Receiver = std::function<void(uint32_t plane, const SimFrame& frame)>;

    explicit Fabric(const FabricConfig& config);  // std::invalid_argument on a bad config
    ~Fabric();
    Fabric(const Fabric&) = delete;
    Fabric& operator=(const Fabric&) = delete;

    const FabricConfig& config() const noexcept { return config_; }
    uint32_t hosts() const noexcept { return config_.hosts; }
    uint32_t planes() const noexcept { return config_.planes; }

    // A frame from host `host` into its NIC port on `plane` (queued at the NIC, never dropped there).
    void host_send(uint32_t host, uint32_t plane, const uint8_t* frame, uint32_t len);
    void set_receiver(uint32_t host, Receiver receiver);
    // Called each time a frame of the host leaves its NIC queue for the wire (plane).
    void set_nic_listener(uint32_t host, std::function<void(uint32_t plane)> listener);

    // Links crossed by the farthest pair of hosts, and its round trip on idle links with a frame of
    // `bytes` out and `reply_bytes` back (store and forward at every hop).
    static uint32_t max_hops(const FabricConfig& config);
    static double max_rtt_us(const FabricConfig& config, uint32_t bytes, uint32_t reply_bytes = 64);

    FabricStats stats() const;
    std::vector<PortView> switch_ports() const;
    PortStats port_to_host(uint32_t host, uint32_t plane) const;  // the ToR port feeding the host
    PortStats host_nic(uint32_t host, uint32_t plane) const;
    uint32_t links() const;  // host links first, then edge-aggregation, then aggregation-core, per plane

private:
    struct Impl;
    FabricConfig config_;
    std::unique_ptr<Impl> impl_;
};

}  // namespace mroce::fabric
