// One output port of a switch or a host NIC: a FIFO in front of an ns-3 PointToPointNetDevice, which
// serialises one frame at a time at the link rate and carries it over the channel's delay. The queue
// is ours, not the device's, because a switch port needs three things ns-3's device queue lacks: ECN
// marking on the bytes waiting, accounting of each frame's ingress port (for PFC), and a pause.
#pragma once

#include <ns3/network-module.h>
#include <ns3/point-to-point-module.h>
#include <ns3/random-variable-stream.h>

#include <cstdint>
#include <deque>
#include <functional>

#include "fabric/config.hpp"
#include "fabric/fabric.hpp"

namespace mroce::fabric {

class EgressPort {
public:
    // `marking`: null for a port that never marks (a host NIC). `limit_bytes`: tail drop beyond.
    EgressPort(ns3::Ptr<ns3::PointToPointNetDevice> device, uint32_t limit_bytes, const EcnMarking* marking,
               ns3::Ptr<ns3::UniformRandomVariable> rng);
    EgressPort(const EgressPort&) = delete;
    EgressPort& operator=(const EgressPort&) = delete;

    // Queues a frame that came in on `ingress` (-1: made here). False when tail-dropped.
    bool enqueue(ns3::Ptr<ns3::Packet> frame, int32_t ingress);
    // A frame ahead of every queued one and not subject to pause or the limit (PFC frames).
    void send_control(ns3::Ptr<ns3::Packet> frame);
    // PFC: a paused port finishes the frame on the wire and sends nothing more until resumed.
    void set_paused(bool paused);
    bool paused() const noexcept { return paused_; }
    void set_limit(uint32_t limit_bytes) noexcept { limit_ = limit_bytes; }

    // Called for each frame that leaves the queue for the wire: (its ingress, its size).
    std::function<void(int32_t, uint32_t)> on_dequeue;

    uint64_t queued_frames() const noexcept { return queue_.size() + control_.size() + (busy_ ? 1 : 0); }
    const PortStats& stats() const;  // brings the time integrals up to now
    ns3::Ptr<ns3::PointToPointNetDevice> device() const noexcept { return device_; }

private:
    struct Waiting {
        ns3::Ptr<ns3::Packet> frame;
        int32_t ingress;
    };
    void tx_end(ns3::Ptr<const ns3::Packet>);
    void try_send();
    void account() const;  // time integrals up to now

    ns3::Ptr<ns3::PointToPointNetDevice> device_;
    uint32_t limit_;
    const EcnMarking* marking_;
    ns3::Ptr<ns3::UniformRandomVariable> rng_;
    std::deque<Waiting> queue_;
    std::deque<ns3::Ptr<ns3::Packet>> control_;
    uint64_t bytes_ = 0;
    bool busy_ = false;  // the device is serialising a frame we gave it
    bool paused_ = false;
    mutable PortStats stats_;
    mutable int64_t accounted_ns_ = 0;
};

}  // namespace mroce::fabric
