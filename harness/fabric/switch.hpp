// A switch: output-queued ports (fabric/egress_port.hpp), routing by destination host range, ECMP by
// a salted hash of the 5-tuple over the up ports, ECN marking at enqueue, and PFC by ingress port.
// Every switch of the fabric is a tree node: it reaches the hosts [lo, hi) through its down ports
// (each covering an equal share of that range) and every other host through any of its up ports.
#pragma once

#include <ns3/network-module.h>
#include <ns3/point-to-point-module.h>

#include <memory>
#include <vector>

#include "fabric/config.hpp"
#include "fabric/egress_port.hpp"

namespace mroce::fabric {

class Switch {
public:
    Switch(ns3::Ptr<ns3::Node> node, const FabricConfig& config, uint32_t plane, uint32_t tier, uint32_t lo,
           uint32_t hi, uint32_t salt);
    Switch(const Switch&) = delete;
    Switch& operator=(const Switch&) = delete;

    // Ports are added in the order of the node's devices; down ports in host order.
    void add_down_port(ns3::Ptr<ns3::PointToPointNetDevice> device, uint32_t lo, uint32_t hi,
                       ns3::Ptr<ns3::UniformRandomVariable> rng);
    void add_up_port(ns3::Ptr<ns3::PointToPointNetDevice> device, ns3::Ptr<ns3::UniformRandomVariable> rng);

    // The output port for a frame to `dst_host` with this flow hash input.
    uint32_t route(uint32_t dst_host, uint32_t flow_hash) const;
    // The salted ECMP hash of a flow key at this switch.
    uint32_t flow_hash(uint32_t src_ip, uint32_t dst_ip, uint16_t sport, uint16_t dport) const;

    ns3::Ptr<ns3::Node> node() const noexcept { return node_; }
    uint32_t plane() const noexcept { return plane_; }
    uint32_t tier() const noexcept { return tier_; }
    uint32_t port_count() const noexcept { return uint32_t(ports_.size()); }
    // Lossless mode: every egress port holds what all ingress ports may send before their pause takes
    // effect (XOFF plus the headroom each), as a shared buffer with PFC headroom does; then PFC, not
    // the limit, bounds the queues.
    void size_for_pfc(uint32_t headroom_bytes);
    const EgressPort& port(uint32_t i) const { return *ports_[i].out; }
    bool is_up_port(uint32_t i) const { return ports_[i].up; }
    uint64_t bad_frames() const noexcept { return bad_frames_; }
    bool covers(uint32_t host) const noexcept { return host >= lo_ && host < hi_; }

private:
    struct Port {
        std::unique_ptr<EgressPort> out;
        bool up = false;
        uint32_t lo = 0, hi = 0;     // a down port's hosts
        uint64_t ingress_bytes = 0;  // bytes queued here that came in on this port (PFC)
        bool pausing = false;        // we sent XOFF upstream on this port
    };
    uint32_t add_port(ns3::Ptr<ns3::PointToPointNetDevice> device, ns3::Ptr<ns3::UniformRandomVariable> rng);
    bool receive(ns3::Ptr<ns3::NetDevice> device, ns3::Ptr<const ns3::Packet> frame, uint16_t protocol,
                 const ns3::Address& from);
    void dequeued(int32_t ingress, uint32_t bytes);
    void send_pause(uint32_t port, bool pause);

    ns3::Ptr<ns3::Node> node_;
    const FabricConfig& config_;
    uint32_t plane_, tier_, lo_, hi_, salt_;
    std::vector<Port> ports_;
    std::vector<uint32_t> up_ports_;
    uint32_t down_span_ = 0;  // hosts per down port
    uint64_t bad_frames_ = 0;
};

// A PFC frame (MAC control 0x8808): pause (XOFF) or resume (XON) the sender at the other end.
ns3::Ptr<ns3::Packet> make_pause_frame(bool pause);
// True for a PFC frame; *pause says which.
bool read_pause_frame(const ns3::Packet& frame, bool* pause);

}  // namespace mroce::fabric
