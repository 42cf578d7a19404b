#include "fabric/mroce_host.hpp"

#include <cstring>
#include <stdexcept>

#include "fabric/frame_head_plain.hpp"
#include "impair/ecmp.hpp"

namespace mroce::fabric {

Address host_address(uint32_t host) {
    Address a;
    a.mac = {0x02, 0x00, uint8_t(host >> 24), uint8_t(host >> 16), uint8_t(host >> 8), uint8_t(host)};
    const uint32_t ip = host_ip(host);
    a.ip = {uint8_t(ip >> 24), uint8_t(ip >> 16), uint8_t(ip >> 8), uint8_t(ip)};
    return a;
}

MroceHost::MroceHost(Fabric& fabric, uint32_t host, const MroceHostOptions& o)
    : fabric_(fabric),
      host_(host),
      // Room for the largest frame of the offered payload; the ring plus one burst out.
      pool_(o.rx_ring + 2048, (uint32_t(o.offer.max_payload) + 256 + 63) / 64 * 64),
      rx_ring_(o.rx_ring),
      tx_ring_(o.tx_ring * fabric.planes()),
      per_plane_(o.tx_ring_per_plane),
      in_plane_(fabric.planes(), 0) {
    DeviceConfig c;
    c.self = host_address(host);
    c.capacity_mbps = uint32_t(fabric.config().rate_gbps * 1000.0 * fabric.planes() * o.capacity_fraction);
    c.random_seed = fabric.config().seed * 1000003ull + host + 1;
    c.offer = o.offer;
    c.ack_every = o.ack_every;
    c.ack_delay_us = o.ack_delay_us;
    c.connect_tries = o.connect_tries;
    c.rto_min_us = o.rto_min_us;
    c.home_probe_us = o.home_probe_us;
    c.home_probe_max_us = o.home_probe_max_us;
    c.rto_init_us = o.rto_init_us;
    c.fs_interval_us = o.fs_interval_us;
    c.hint_ttl_us = o.hint_ttl_us;
    c.max_connections = o.max_connections;
    c.max_peers = o.max_connections;
    c.max_work_requests = 64 * o.max_connections;
    c.max_receives = 64 * o.max_connections;
    // A host of the fabric runs one trusted workload: a connection may use the whole pool (a
    // collective keeps several steps of every channel outstanding on one connection under loss).
    c.max_work_requests_per_conn = c.max_work_requests;
    c.max_receives_per_conn = c.max_receives;
    c.max_window_blocks = uint32_t(o.offer.paths) * o.max_connections;
    c.max_regions = 4 * o.max_connections + 8;
    c.cq_size = 128 * o.max_connections;
    c.event_queue_size = 4 * o.max_connections + 8;
    Result err = Result::Ok;
    device_ = Device::open(c, *this, *this, &err);
    if (!device_) throw std::runtime_error(std::string("fabric: host device open failed: ") + result_name(err));
    fabric_.set_receiver(host, [this](uint32_t plane, const SimFrame& f) { receive(plane, f); });
    fabric_.set_nic_listener(host, [this](uint32_t plane) {
        --in_nic_;
        --in_plane_[plane];
        // Half the ring (or half a plane's) drained: poll, so that new data that waited for room goes out.
        const uint32_t ring = per_plane_ ? tx_ring_ / uint32_t(in_plane_.size()) : tx_ring_;
        if (ring && (per_plane_ ? in_plane_[plane] : in_nic_) == ring / 2) kick();
    });
}

uint32_t MroceHost::tx_room() const noexcept {
    if (tx_ring_ == 0) return UINT32_MAX;
    if (!per_plane_) return in_nic_ >= tx_ring_ ? 0 : tx_ring_ - in_nic_;
    const uint32_t ring = tx_ring_ / uint32_t(in_plane_.size());
    uint32_t room = 0;
    for (uint32_t n : in_plane_) room += n >= ring ? 0 : ring - n;
    return room;
}

MroceHost::~MroceHost() {
    fabric_.set_receiver(host_, nullptr);
    fabric_.set_nic_listener(host_, nullptr);
}

uint64_t MroceHost::now_us() const noexcept { return sim::now_us(); }

void MroceHost::receive(uint32_t, const SimFrame& frame) {
    io::PacketBuf* b = rx_.size() < rx_ring_ ? pool_.alloc() : nullptr;
    if (!b || frame.size() > b->cap) {
        if (b) pool_.free(b);
        ++rx_drops_;
        return;
    }
    b->len = frame.copy_to(b->data, b->cap);
    b->rx_time = now_us();
    // IPv4 source address at bytes 26..29 (the fabric carries IPv4 frames only).
    if (rx_tap && b->len >= 34 && b->data[12] == 0x08 && b->data[13] == 0x00) {
        const uint32_t src =
            uint32_t(b->data[26]) << 24 | uint32_t(b->data[27]) << 16 | uint32_t(b->data[28]) << 8 | b->data[29];
        rx_tap(host_of_ip(src), b->len);
    }
    rx_.push_back(b);
    kick();
}

uint16_t MroceHost::rx_burst(io::PacketBuf** out, uint16_t n) noexcept {
    uint16_t k = 0;
    while (k < n && !rx_.empty()) {
        out[k++] = rx_.front();
        rx_.pop_front();
    }
    return k;
}

void MroceHost::tx_burst(io::PacketBuf** pkts, uint16_t n) noexcept {
    const uint16_t planes = uint16_t(fabric_.planes());
    for (uint16_t i = 0; i < n; ++i) {
        io::PacketBuf* b = pkts[i];
        ++in_nic_;
        const uint32_t plane = impair::ecmp_link(b->route, planes);
        ++in_plane_[plane];
        fabric_.host_send(host_, plane, b->data, b->len);
        pool_.free(b);
    }
}

void MroceHost::kick() {
    if (poll_event_.pending()) return;
    poll_event_.at_ns(sim::now_ns(), [this] { poll(); });
}

void MroceHost::poll() {
    while (device_->progress() > 0) {}
    if (after_poll) after_poll(*this);
    arm_timer();
}

void MroceHost::arm_timer() {
    const auto deadline = device_->next_deadline();
    if (!deadline) {
        timer_event_.cancel();
        return;
    }
    // A deadline not after now fires at the next microsecond: the clock reads whole microseconds.
    const uint64_t at_ns = std::max<uint64_t>(*deadline, now_us() + 1) * 1000;
    if (timer_event_.pending() && timer_event_.when_ns() == at_ns) return;
    timer_event_.at_ns(at_ns, [this] { poll(); });
}

}  // namespace mroce::fabric
