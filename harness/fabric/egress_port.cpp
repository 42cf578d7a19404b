#include "fabric/egress_port.hpp"

#include <array>

#include "fabric/frame_head.hpp"

namespace mroce::fabric {

using ns3::Packet;
using ns3::Ptr;

EgressPort::EgressPort(Ptr<ns3::PointToPointNetDevice> device, uint32_t limit_bytes, const EcnMarking* marking,
                       Ptr<ns3::UniformRandomVariable> rng)
    : device_(device), limit_(limit_bytes), marking_(marking), rng_(rng) {
    device_->TraceConnectWithoutContext("PhyTxEnd", ns3::MakeCallback(&EgressPort::tx_end, this));
}

void EgressPort::account() const {
    const int64_t now = ns3::Simulator::Now().GetNanoSeconds();
    const double dt_us = double(now - accounted_ns_) / 1000.0;
    stats_.byte_us += double(bytes_) * dt_us;
    if (paused_) stats_.paused_us += dt_us;
    accounted_ns_ = now;
}

const PortStats& EgressPort::stats() const {
    account();
    return stats_;
}

bool EgressPort::enqueue(Ptr<Packet> frame, int32_t ingress) {
    const uint32_t size = frame->GetSize();
    if (bytes_ + size > limit_) {
        ++stats_.dropped;
        const double now_us = double(ns3::Simulator::Now().GetNanoSeconds()) / 1000.0;
        if (stats_.first_drop_us < 0) stats_.first_drop_us = now_us;
        stats_.last_drop_us = now_us;
        return false;
    }
    if (marking_ && bytes_ > marking_->kmin_bytes) {
        bool mark = bytes_ >= marking_->kmax_bytes;
        if (!mark) {
            const double p = marking_->pmax * double(bytes_ - marking_->kmin_bytes) /
                             double(marking_->kmax_bytes - marking_->kmin_bytes);
            mark = rng_->GetValue() < p;
        }
        // Only ECT frames take a mark (impair::mark_ce leaves the others alone), as a switch does.
        if (mark && rewrite_head(frame, mark_ce_head)) ++stats_.marked;
    }
    account();
    queue_.push_back({frame, ingress});
    bytes_ += size;
    ++stats_.enqueued;
    if (bytes_ > stats_.max_bytes) stats_.max_bytes = bytes_;
    try_send();
    return true;
}

void EgressPort::send_control(Ptr<Packet> frame) {
    control_.push_back(frame);
    ++stats_.pauses_sent;
    try_send();
}

void EgressPort::set_paused(bool paused) {
    if (paused == paused_) return;
    account();
    paused_ = paused;
    if (!paused_) try_send();
}

void EgressPort::try_send() {
    if (busy_) return;
    Ptr<Packet> frame;
    if (!control_.empty()) {
        frame = control_.front();
        control_.pop_front();
    } else {
        if (paused_ || queue_.empty()) return;
        account();
        Waiting w = std::move(queue_.front());
        queue_.pop_front();
        const uint32_t size = w.frame->GetSize();
        bytes_ -= size;
        ++stats_.sent_frames;
        stats_.sent_bytes += size;
        if (on_dequeue) on_dequeue(w.ingress, size);
        frame = w.frame;
    }
    busy_ = true;
    device_->Send(frame, device_->GetBroadcast(), kFrameProtocol);
}

void EgressPort::tx_end(Ptr<const Packet>) {
    busy_ = false;
    // Not from inside the device's TransmitComplete: it clears its current frame after this trace.
    ns3::Simulator::ScheduleNow(&EgressPort::try_send, this);
}

}  // namespace mroce::fabric
