#include "fabric/switch.hpp"

#include <algorithm>
#include <array>

#include "fabric/frame_head.hpp"
#include "impair/ecmp.hpp"

namespace mroce::fabric {

using ns3::Packet;
using ns3::Ptr;

Ptr<Packet> make_pause_frame(bool pause) {
    std::array<uint8_t, 64> f{};
    const uint8_t dst[6] = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01};
    std::copy(dst, dst + 6, f.begin());
    f[12] = kEtherPause >> 8;
    f[13] = kEtherPause & 0xFF;
    f[14] = 0x01;  // opcode 0x0101: priority-based flow control
    f[15] = 0x01;
    f[16] = pause ? 1 : 0;
    return ns3::Create<Packet>(f.data(), uint32_t(f.size()));
}

bool read_pause_frame(const Packet& frame, bool* pause) {
    uint8_t b[17];
    if (frame.CopyData(b, 17) < 17) return false;
    if ((uint16_t(b[12] << 8 | b[13])) != kEtherPause) return false;
    *pause = b[16] != 0;
    return true;
}

Switch::Switch(Ptr<ns3::Node> node, const FabricConfig& config, uint32_t plane, uint32_t tier, uint32_t lo, uint32_t hi,
               uint32_t salt)
    : node_(node), config_(config), plane_(plane), tier_(tier), lo_(lo), hi_(hi), salt_(salt) {}

uint32_t Switch::add_port(Ptr<ns3::PointToPointNetDevice> device, Ptr<ns3::UniformRandomVariable> rng) {
    const uint32_t index = uint32_t(ports_.size());
    Port p;
    p.out = std::make_unique<EgressPort>(device, config_.queue_bytes, &config_.ecn, rng);
    p.out->on_dequeue = [this](int32_t ingress, uint32_t bytes) { dequeued(ingress, bytes); };
    ports_.push_back(std::move(p));
    device->SetReceiveCallback(ns3::MakeCallback(&Switch::receive, this));
    return index;
}

void Switch::add_down_port(Ptr<ns3::PointToPointNetDevice> device, uint32_t lo, uint32_t hi,
                           Ptr<ns3::UniformRandomVariable> rng) {
    const uint32_t i = add_port(device, rng);
    ports_[i].lo = lo;
    ports_[i].hi = hi;
    down_span_ = hi - lo;
}

void Switch::add_up_port(Ptr<ns3::PointToPointNetDevice> device, Ptr<ns3::UniformRandomVariable> rng) {
    const uint32_t i = add_port(device, rng);
    ports_[i].up = true;
    up_ports_.push_back(i);
}

uint32_t Switch::flow_hash(uint32_t src_ip, uint32_t dst_ip, uint16_t sport, uint16_t dport) const {
    // Salted per switch, so that the switches of one tier do not all pick the same uplink index for a
    // flow (ECMP polarisation).
    uint32_t h = salt_;
    for (uint32_t w : {src_ip, dst_ip, uint32_t(sport) << 16 | dport, 17u}) h = impair::fmix32(h ^ w) + 0x9E3779B9u;
    return impair::fmix32(h);
}

void Switch::size_for_pfc(uint32_t headroom_bytes) {
    const uint64_t limit = uint64_t(ports_.size()) * (config_.pfc_xoff_bytes + headroom_bytes);
    for (Port& p : ports_)
        p.out->set_limit(uint32_t(std::min<uint64_t>(std::max<uint64_t>(limit, config_.queue_bytes), UINT32_MAX)));
}

uint32_t Switch::route(uint32_t dst_host, uint32_t flow_hash) const {
    if (dst_host >= lo_ && dst_host < hi_) {
        // Down ports come first, in host order, each covering down_span_ hosts.
        return (dst_host - lo_) / down_span_;
    }
    return up_ports_[flow_hash % up_ports_.size()];
}

bool Switch::receive(Ptr<ns3::NetDevice> device, Ptr<const Packet> frame, uint16_t, const ns3::Address&) {
    const uint32_t in = device->GetIfIndex();
    bool pause = false;
    if (read_pause_frame(*frame, &pause)) {
        ports_[in].out->set_paused(pause);
        return true;
    }
    FlowKey key;
    if (!read_flow_key(*frame, &key)) {
        ++bad_frames_;
        return true;
    }
    const uint32_t dst = host_of_ip(key.dst_ip);
    if (dst >= config_.hosts || (up_ports_.empty() && !covers(dst))) {
        ++bad_frames_;
        return true;
    }
    const uint32_t out = route(dst, flow_hash(key.src_ip, key.dst_ip, key.sport, key.dport));
    Ptr<Packet> copy = frame->Copy();
    const uint32_t size = copy->GetSize();
    // Counted before the enqueue: an idle port sends the frame (and calls dequeued()) inside it.
    Port& ingress = ports_[in];
    if (config_.pfc) ingress.ingress_bytes += size;
    if (!ports_[out].out->enqueue(copy, int32_t(in))) {  // tail drop, counted by the port
        if (config_.pfc) ingress.ingress_bytes -= size;
        return true;
    }
    if (config_.pfc && !ingress.pausing && ingress.ingress_bytes > config_.pfc_xoff_bytes) send_pause(in, true);
    return true;
}

void Switch::dequeued(int32_t ingress, uint32_t bytes) {
    if (!config_.pfc || ingress < 0) return;
    Port& p = ports_[uint32_t(ingress)];
    p.ingress_bytes -= bytes;
    if (p.pausing && p.ingress_bytes < config_.pfc_xon_bytes) send_pause(uint32_t(ingress), false);
}

void Switch::send_pause(uint32_t port, bool pause) {
    ports_[port].pausing = pause;
    ports_[port].out->send_control(make_pause_frame(pause));
}

}  // namespace mroce::fabric
