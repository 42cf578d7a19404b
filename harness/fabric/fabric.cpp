// Compiled as C++17 with ns-3's headers (see fabric.hpp).
#include "fabric/fabric.hpp"

#include <ns3/core-module.h>
#include <ns3/network-module.h>
#include <ns3/point-to-point-module.h>

#include <stdexcept>
#include <string>

#include "fabric/frame_head.hpp"
#include "fabric/switch.hpp"
#include "impair/prng.hpp"

namespace mroce::fabric {

using ns3::PointToPointNetDevice;
using ns3::Ptr;

const char* topology_name(Topology t) noexcept {
    switch (t) {
        case Topology::LeafSpine:
            return "leaf-spine";
        case Topology::FatTree:
            return "fat-tree";
    }
    return "?";
}

namespace {

struct LinkInfo {
    Ptr<PointToPointNetDevice> a, b;  // a: the lower tier (host side)
    uint32_t plane = 0;
    uint32_t tier = 0;  // 0: host to edge, 1: edge to aggregation (or leaf to spine), 2: aggregation to core
    Ptr<ns3::RateErrorModel> loss_a, loss_b;  // receive-side loss at each end (null: lossless)
};

// A host's NIC ports, one per plane. The NIC queue has no ECN and never drops (the transport's
// window bounds it); PFC pauses it.
struct HostNode {
    Ptr<ns3::Node> node;
    std::vector<Ptr<PointToPointNetDevice>> devices;
    std::vector<std::unique_ptr<EgressPort>> nics;
    std::vector<const EgressPort*> tor_ports;  // the switch port feeding this host, per plane
    Fabric::Receiver receiver;
    std::function<void(uint32_t)> nic_listener;
};

class PacketFrame final : public SimFrame {
public:
    explicit PacketFrame(const ns3::Packet& p) : p_(p) {}
    uint32_t size() const override { return p_.GetSize(); }
    uint32_t copy_to(uint8_t* out, uint32_t cap) const override { return p_.CopyData(out, cap); }

private:
    const ns3::Packet& p_;
};

constexpr uint32_t kNicQueueBytes = 1u << 30;

// The smallest even k whose k-ary fat tree (k^3 / 4 hosts) holds `hosts`.
uint32_t fat_tree_radix(uint32_t hosts) {
    uint32_t k = 2;
    while (uint64_t(k) * k * k / 4 < hosts) k += 2;
    return k;
}

void count_loss(uint64_t* losses, Ptr<const ns3::Packet>) { ++*losses; }
}  // namespace

struct Fabric::Impl {
    explicit Impl(const FabricConfig& c) : config(c) {}
    void build();
    void build_plane(uint32_t plane);
    uint32_t add_switch(uint32_t plane, uint32_t tier, uint32_t lo, uint32_t hi);
    void connect(uint32_t plane, uint32_t tier, Ptr<ns3::Node> lower, Ptr<ns3::Node> upper,
                 Ptr<PointToPointNetDevice>* lower_dev, Ptr<PointToPointNetDevice>* upper_dev);
    bool host_rx(uint32_t host, uint32_t plane, Ptr<ns3::NetDevice>, Ptr<const ns3::Packet> frame, uint16_t,
                 const ns3::Address&);
    Ptr<ns3::UniformRandomVariable> rng() {
        auto rv = ns3::CreateObject<ns3::UniformRandomVariable>();
        rv->SetStream(next_stream++);
        return rv;
    }

    const FabricConfig& config;
    ns3::PointToPointHelper p2p;
    std::vector<std::unique_ptr<HostNode>> hosts;
    std::vector<std::unique_ptr<Switch>> switches;
    std::vector<LinkInfo> links;
    uint32_t fat_tree_k = 0;
    int64_t next_stream = 1;
    uint64_t link_losses = 0, frames_sent = 0, frames_delivered = 0;
    std::vector<std::vector<uint64_t>> plane_rx, plane_tx;
    // Adds `bytes` to the window of the current time in series[plane] (with plane_window_us).
    void count_plane(std::vector<std::vector<uint64_t>>& series, uint32_t plane, uint64_t bytes) {
        if (config.plane_window_us <= 0) return;
        if (series.size() < config.planes) series.resize(config.planes);
        const size_t w = size_t(double(ns3::Simulator::Now().GetNanoSeconds()) / 1000.0 / config.plane_window_us);
        auto& s = series[plane];
        if (s.size() <= w) s.resize(w + 1, 0);
        s[w] += bytes;
    }
};

Fabric::Fabric(const FabricConfig& config) : config_(config), impl_(std::make_unique<Impl>(config_)) {
    if (config_.hosts < 2 || config_.hosts > 0xFFFFFF) throw std::invalid_argument("fabric: hosts must be 2..2^24-1");
    if (config_.planes < 1 || config_.planes > 16) throw std::invalid_argument("fabric: planes must be 1..16");
    if (!(config_.rate_gbps > 0) || !(config_.link_delay_us >= 0))
        throw std::invalid_argument("fabric: bad link rate or delay");
    if (config_.ecn.kmax_bytes < config_.ecn.kmin_bytes) throw std::invalid_argument("fabric: ECN kmax < kmin");
    if (config_.pfc && config_.pfc_xon_bytes > config_.pfc_xoff_bytes)
        throw std::invalid_argument("fabric: PFC xon > xoff");
    if (!(config_.loss >= 0 && config_.loss <= 1)) throw std::invalid_argument("fabric: loss must be in [0, 1]");
    if (config_.topology == Topology::LeafSpine && config_.hosts_per_leaf < 1)
        throw std::invalid_argument("fabric: hosts per leaf must be >= 1");
    impl_->build();
}

Fabric::~Fabric() = default;

void Fabric::Impl::build() {
    // ns-3's calendar queue instead of its default std::map: the 128-host permutation ran in 5.2 s
    // against 6.2 (map), 5.9 (heap) and 5.6 (priority queue), one run each, same results.
    ns3::ObjectFactory scheduler;
    scheduler.SetTypeId("ns3::CalendarScheduler");
    ns3::Simulator::SetScheduler(scheduler);
    ns3::RngSeedManager::SetSeed(uint32_t(config.seed % 0xFFFFFFFEull) + 1);
    ns3::RngSeedManager::SetRun(config.seed >> 32);
    p2p.SetDeviceAttribute("DataRate", ns3::DataRateValue(ns3::DataRate(uint64_t(config.rate_gbps * 1e9))));
    p2p.SetChannelAttribute("Delay", ns3::TimeValue(ns3::NanoSeconds(int64_t(config.link_delay_us * 1000.0))));
    if (config.topology == Topology::FatTree) { fat_tree_k = fat_tree_radix(config.hosts); }
    hosts.resize(config.hosts);
    for (uint32_t h = 0; h < config.hosts; ++h) {
        hosts[h] = std::make_unique<HostNode>();
        hosts[h]->node = ns3::CreateObject<ns3::Node>();
        hosts[h]->devices.resize(config.planes);
        hosts[h]->tor_ports.resize(config.planes);
    }
    for (uint32_t p = 0; p < config.planes; ++p) build_plane(p);
    if (config.pfc) {
        // What arrives after XOFF is sent: a round trip of the link at its rate, plus the frame on the
        // wire at each end (9 KB jumbo at most).
        const uint32_t headroom = uint32_t(2 * config.link_delay_us * config.rate_gbps * 1e3 / 8) + 2 * 9216;
        for (auto& sw : switches) sw->size_for_pfc(headroom);
    }
    for (uint32_t h = 0; h < config.hosts; ++h) {
        HostNode& host = *hosts[h];
        for (uint32_t p = 0; p < config.planes; ++p) {
            host.nics.push_back(std::make_unique<EgressPort>(host.devices[p], kNicQueueBytes, nullptr, nullptr));
            host.nics.back()->on_dequeue = [&host, p](int32_t, uint32_t) {
                if (host.nic_listener) host.nic_listener(p);
            };
            host.devices[p]->SetReceiveCallback(ns3::MakeCallback(&Impl::host_rx, this).Bind(h, p));
        }
    }
    // Failures: a dark link loses every frame from its time on, until it comes back.
    for (const Failure& f : config.failures) {
        for (size_t i = 0; i < links.size(); ++i) {
            const LinkInfo& l = links[i];
            if (!(int(l.plane) == f.plane || int(i) == f.link)) continue;
            const double loss = config.loss;
            for (auto em : {l.loss_a, l.loss_b}) {
                ns3::Simulator::Schedule(ns3::NanoSeconds(int64_t(f.at_us * 1000.0)), [em] { em->SetRate(1.0); });
                if (f.until_us >= f.at_us)
                    ns3::Simulator::Schedule(ns3::NanoSeconds(int64_t(f.until_us * 1000.0)),
                                             [em, loss] { em->SetRate(loss); });
            }
        }
    }
}

uint32_t Fabric::Impl::add_switch(uint32_t plane, uint32_t tier, uint32_t lo, uint32_t hi) {
    const uint32_t index = uint32_t(switches.size());
    switches.push_back(std::make_unique<Switch>(ns3::CreateObject<ns3::Node>(), config, plane, tier, lo, hi,
                                                uint32_t(impair::mix64(config.seed * 0x9E3779B97F4A7C15ull + index))));
    return index;
}

void Fabric::Impl::connect(uint32_t plane, uint32_t tier, Ptr<ns3::Node> lower, Ptr<ns3::Node> upper,
                           Ptr<PointToPointNetDevice>* lower_dev, Ptr<PointToPointNetDevice>* upper_dev) {
    ns3::NetDeviceContainer devs = p2p.Install(lower, upper);
    LinkInfo link;
    link.a = ns3::DynamicCast<PointToPointNetDevice>(devs.Get(0));
    link.b = ns3::DynamicCast<PointToPointNetDevice>(devs.Get(1));
    link.plane = plane;
    link.tier = tier;
    const uint32_t index = uint32_t(links.size());
    bool lossy = config.loss > 0;
    for (const Failure& f : config.failures) lossy = lossy || int(plane) == f.plane || int(index) == f.link;
    if (lossy) {
        for (auto* side : {&link.loss_a, &link.loss_b}) {
            auto em = ns3::CreateObject<ns3::RateErrorModel>();
            em->SetRandomVariable(rng());
            em->SetUnit(ns3::RateErrorModel::ERROR_UNIT_PACKET);
            em->SetRate(config.loss);
            *side = em;
        }
        link.a->SetReceiveErrorModel(link.loss_a);
        link.b->SetReceiveErrorModel(link.loss_b);
        for (auto dev : {link.a, link.b})
            dev->TraceConnectWithoutContext("PhyRxDrop", ns3::MakeBoundCallback(&count_loss, &link_losses));
    }
    *lower_dev = link.a;
    *upper_dev = link.b;
    links.push_back(link);
}

void Fabric::Impl::build_plane(uint32_t plane) {
    const uint32_t n = config.hosts;
    std::vector<uint32_t> edges, aggs, cores;
    uint32_t per_edge = 0;
    if (config.topology == Topology::FatTree) {
        const uint32_t k = fat_tree_k, half = k / 2;
        per_edge = half;
        for (uint32_t e = 0; e < k * half; ++e) edges.push_back(add_switch(plane, 0, e * half, (e + 1) * half));
        for (uint32_t a = 0; a < k * half; ++a) {
            const uint32_t pod = a / half;
            aggs.push_back(add_switch(plane, 1, pod * half * half, (pod + 1) * half * half));
        }
        for (uint32_t c = 0; c < half * half; ++c) cores.push_back(add_switch(plane, 2, 0, k * half * half));
    } else {
        per_edge = std::min(config.hosts_per_leaf, n);
        const uint32_t leaves = (n + per_edge - 1) / per_edge;
        for (uint32_t l = 0; l < leaves; ++l) edges.push_back(add_switch(plane, 0, l * per_edge, (l + 1) * per_edge));
        for (uint32_t s = 0; s < per_edge; ++s) aggs.push_back(add_switch(plane, 1, 0, leaves * per_edge));
    }
    // Hosts to edges (each edge's down ports first, in host order).
    for (uint32_t h = 0; h < n; ++h) {
        Switch& edge = *switches[edges[h / per_edge]];
        Ptr<PointToPointNetDevice> host_dev, sw_dev;
        connect(plane, 0, hosts[h]->node, edge.node(), &host_dev, &sw_dev);
        hosts[h]->devices[plane] = host_dev;
        edge.add_down_port(sw_dev, h, h + 1, rng());
        hosts[h]->tor_ports[plane] = &edge.port(edge.port_count() - 1);
    }
    if (config.topology == Topology::FatTree) {
        const uint32_t k = fat_tree_k, half = k / 2;
        // Edge e of pod p to every aggregation switch of pod p.
        for (uint32_t e = 0; e < k * half; ++e) {
            const uint32_t pod = e / half;
            for (uint32_t j = 0; j < half; ++j) {
                Switch& edge = *switches[edges[e]];
                Switch& agg = *switches[aggs[pod * half + j]];
                Ptr<PointToPointNetDevice> lo_dev, up_dev;
                connect(plane, 1, edge.node(), agg.node(), &lo_dev, &up_dev);
                edge.add_up_port(lo_dev, rng());
                agg.add_down_port(up_dev, e * half, (e + 1) * half, rng());
            }
        }
        // Aggregation switch j of pod p to cores j*half .. j*half+half-1.
        for (uint32_t a = 0; a < k * half; ++a) {
            const uint32_t pod = a / half, j = a % half;
            for (uint32_t c = 0; c < half; ++c) {
                Switch& agg = *switches[aggs[a]];
                Switch& core = *switches[cores[j * half + c]];
                Ptr<PointToPointNetDevice> lo_dev, up_dev;
                connect(plane, 2, agg.node(), core.node(), &lo_dev, &up_dev);
                agg.add_up_port(lo_dev, rng());
                core.add_down_port(up_dev, pod * half * half, (pod + 1) * half * half, rng());
            }
        }
    } else {
        for (uint32_t l = 0; l < edges.size(); ++l) {
            for (uint32_t s = 0; s < aggs.size(); ++s) {
                Switch& leaf = *switches[edges[l]];
                Switch& spine = *switches[aggs[s]];
                Ptr<PointToPointNetDevice> lo_dev, up_dev;
                connect(plane, 1, leaf.node(), spine.node(), &lo_dev, &up_dev);
                leaf.add_up_port(lo_dev, rng());
                spine.add_down_port(up_dev, l * per_edge, (l + 1) * per_edge, rng());
            }
        }
    }
}

void Fabric::host_send(uint32_t host, uint32_t plane, const uint8_t* frame, uint32_t len) {
    ++impl_->frames_sent;
    impl_->count_plane(impl_->plane_tx, plane, len);
    impl_->hosts.at(host)->nics.at(plane)->enqueue(ns3::Create<ns3::Packet>(frame, len), -1);
}

void Fabric::set_receiver(uint32_t host, Receiver receiver) { impl_->hosts.at(host)->receiver = std::move(receiver); }
void Fabric::set_nic_listener(uint32_t host, std::function<void(uint32_t)> listener) {
    impl_->hosts.at(host)->nic_listener = std::move(listener);
}

bool Fabric::Impl::host_rx(uint32_t host, uint32_t plane, Ptr<ns3::NetDevice>, Ptr<const ns3::Packet> frame, uint16_t,
                           const ns3::Address&) {
    HostNode& h = *hosts[host];
    bool pause = false;
    if (read_pause_frame(*frame, &pause)) {
        h.nics[plane]->set_paused(pause);
        return true;
    }
    ++frames_delivered;
    count_plane(plane_rx, plane, frame->GetSize());
    if (h.receiver) h.receiver(plane, PacketFrame(*frame));
    return true;
}

uint32_t Fabric::max_hops(const FabricConfig& c) {
    if (c.topology == Topology::FatTree) {
        const uint32_t k = fat_tree_radix(c.hosts);
        return c.hosts > (k / 2) * (k / 2) ? 6 : c.hosts > k / 2 ? 4 : 2;
    }
    return c.hosts > c.hosts_per_leaf ? 4 : 2;
}

double Fabric::max_rtt_us(const FabricConfig& c, uint32_t bytes, uint32_t reply_bytes) {
    const double hop_us = c.link_delay_us;
    const double ser = 8.0 / (c.rate_gbps * 1e3);
    return max_hops(c) * (2 * hop_us + (bytes + 2.0) * ser + (reply_bytes + 2.0) * ser);
}

PortStats Fabric::port_to_host(uint32_t host, uint32_t plane) const {
    return impl_->hosts.at(host)->tor_ports.at(plane)->stats();
}
PortStats Fabric::host_nic(uint32_t host, uint32_t plane) const {
    return impl_->hosts.at(host)->nics.at(plane)->stats();
}
uint32_t Fabric::links() const { return uint32_t(impl_->links.size()); }

std::vector<PortView> Fabric::switch_ports() const {
    std::vector<PortView> out;
    for (uint32_t s = 0; s < impl_->switches.size(); ++s) {
        const Switch& sw = *impl_->switches[s];
        for (uint32_t i = 0; i < sw.port_count(); ++i)
            out.push_back(PortView{s, sw.plane(), sw.tier(), i, sw.is_up_port(i), sw.port(i).stats()});
    }
    return out;
}

FabricStats Fabric::stats() const {
    FabricStats s;
    s.frames_sent_by_hosts = impl_->frames_sent;
    s.frames_delivered_to_hosts = impl_->frames_delivered;
    s.link_losses = impl_->link_losses;
    for (const auto& sw : impl_->switches) {
        s.switch_bad_frames += sw->bad_frames();
        for (uint32_t i = 0; i < sw->port_count(); ++i) {
            const PortStats& ps = sw->port(i).stats();
            s.queue_drops += ps.dropped;
            s.ce_marks += ps.marked;
            s.pause_frames += ps.pauses_sent;
            s.queued_frames_now += sw->port(i).queued_frames();
            if (ps.max_bytes > s.max_queue_bytes) s.max_queue_bytes = ps.max_bytes;
        }
    }
    for (const auto& h : impl_->hosts)
        for (const auto& nic : h->nics) s.queued_frames_now += nic->queued_frames();
    s.plane_rx_bytes = impl_->plane_rx;
    s.plane_tx_bytes = impl_->plane_tx;
    return s;
}

}  // namespace mroce::fabric
