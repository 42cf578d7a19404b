#include "dpdk/io.hpp"

#include <CLI/CLI.hpp>

#include <stdexcept>

namespace mroce::dpdk {

void add_io_options(CLI::App& app, IoOptions& o) {
  app.add_option("--port", o.ports,
                 "Port per plane: ring | memif:server|client:PATH | af_xdp:IF | af_packet:IF | null | vdev:DRV,ARGS");
  app.add_option("--mac", o.mac, "Local MAC per plane (default: the port's)");
  app.add_option("--peer-mac", o.peer_mac, "Peer MAC per plane (default: broadcast)");
  app.add_option("--ip", o.ip, "Local IPv4/IPv6 address per plane");
  app.add_option("--peer-ip", o.peer_ip, "Peer IPv4/IPv6 address per plane");
  app.add_option("--udp-port", o.udp_port, "UDP destination port")->capture_default_str();
  app.add_option("--pcap", o.pcap, "Record both directions into this pcap file");
  app.add_option("--impair", o.impair_rx, "Impair received frames: \"seed=1 loss_ppm=10000 ...\"");
  app.add_option("--impair-tx", o.impair_tx, "Impair sent frames (same syntax)");
  app.add_option("--ce-backlog", o.ce_backlog,
                 "Mark CE on ECN-capable frames received while this many wait in the port's rx queue, as a "
                 "switch would (0: off; default: 64 on ring and memif ports, off on others)")
      ->default_str("auto");
  app.add_option("--lcores", o.eal.lcores, "EAL --lcores")->capture_default_str();
  app.add_option("--mem-mb", o.eal.memory_mb, "EAL memory without hugepages (MB)")->capture_default_str();
  app.add_option("--file-prefix", o.eal.file_prefix, "EAL --file-prefix (distinct per DPDK process)");
  app.add_flag("--huge,!--no-huge", o.eal.no_huge, "Use hugepages")->default_str("false");
  app.add_option("--vdev", o.eal.vdevs, "Extra EAL --vdev");
  app.add_option("--eal-arg", o.eal.extra, "Extra EAL argument");
  app.add_option("--mbufs", o.mbufs, "Mbufs in the pool")->capture_default_str();
  app.add_option("--burst", o.burst, "Rx/tx burst size")->capture_default_str();
  app.add_option("--data-room", o.data_room, "Mbuf data room (bytes, with headroom)")->capture_default_str();
}

namespace {

template <class T, class F>
T pick(const std::vector<std::string>& v, size_t p, const char* what, F parse, T dflt) {
  if (v.empty()) return dflt;
  if (v.size() != 1 && p >= v.size())
    throw std::invalid_argument(std::string("give one ") + what + " per plane, or one for all");
  const auto& s = v.size() == 1 ? v[0] : v[p];
  auto r = parse(s);
  if (!r) throw std::invalid_argument(std::string("bad ") + what + ": '" + s + "'");
  return *r;
}

}  // namespace

IoContext::IoContext(const IoOptions& o) : udp_port_(o.udp_port) {
  if (o.ports.empty()) throw std::invalid_argument("no --port given");
  Eal::init(o.eal);
  pool_ = std::make_unique<MbufPool>("mroce_io_pool", o.mbufs, o.data_room, 256, o.mbuf_priv);
  for (const auto& text : o.ports) {
    const PortSpec spec = parse_port_spec(text);
    rte_mempool* rx_pool = pool_->get();
    if (spec.backend == Backend::AfXdp && o.data_room > RTE_MBUF_DEFAULT_BUF_SIZE) {
      // AF_XDP receives into its umem, whose chunks cannot exceed a 4 KiB page: af_xdp ports
      // receive into a pool of standard 2 KiB mbufs (frames sent may come from any pool).
      if (!xdp_pool_)
        xdp_pool_ = std::make_unique<MbufPool>("mroce_xdp_pool", o.mbufs, RTE_MBUF_DEFAULT_BUF_SIZE, 256, o.mbuf_priv);
      rx_pool = xdp_pool_->get();
    }
    for (auto& p : Port::open(spec, rx_pool, o.port)) ports_.push_back(std::move(p));
  }
  if (!o.pcap.empty()) pcap_ = std::make_unique<PcapWriter>(o.pcap);
  MacAddr bcast;
  bcast.b.fill(0xff);
  for (size_t p = 0; p < ports_.size(); ++p) {
    PlaneAddr a;
    a.mac = pick<MacAddr>(o.mac, p, "--mac", parse_mac, ports_[p].mac());
    a.peer_mac = pick<MacAddr>(o.peer_mac, p, "--peer-mac", parse_mac, bcast);
    a.ip = pick<IpAddr>(o.ip, p, "--ip", parse_ip, IpAddr{});
    a.peer_ip = pick<IpAddr>(o.peer_ip, p, "--peer-ip", parse_ip, a.ip);
    if (a.ip.v6 != a.peer_ip.v6) throw std::invalid_argument("--ip and --peer-ip of different families");
    addrs_.push_back(a);
    pumps_.push_back(std::make_unique<Pump>(ports_[p], o.burst));
    const bool software = ports_[p].backend() == Backend::RingPair || ports_[p].backend() == Backend::Memif;
    if (o.ce_backlog != IoOptions::kCeBacklogAuto)
      pumps_.back()->set_ce_backlog(o.ce_backlog);
    else if (software)
      pumps_.back()->set_ce_backlog(IoOptions::kCeBacklogSoftware);
    if (!o.impair_rx.empty()) {
      auto c = impair::impair_from_string(o.impair_rx);
      c.seed = plane_seed(c.seed, p);
      rx_imp_.push_back(std::make_unique<ImpairStage>(c, pool_->get()));
      pumps_.back()->set_rx_impairment(rx_imp_.back().get());
    }
    if (!o.impair_tx.empty()) {
      auto c = impair::impair_from_string(o.impair_tx);
      c.seed = plane_seed(c.seed, p);
      tx_imp_.push_back(std::make_unique<ImpairStage>(c, pool_->get()));
      pumps_.back()->set_tx_impairment(tx_imp_.back().get());
    }
    pumps_.back()->set_pcap(pcap_.get());
  }
  pool_->prefault();
  if (xdp_pool_) xdp_pool_->prefault();
}

IoContext::~IoContext() {
  // Held frames go back to the pool before the ports (and then the pool) go away.
  rx_imp_.clear();
  tx_imp_.clear();
  pumps_.clear();
  ports_.clear();
  pcap_.reset();
  pool_.reset();
  xdp_pool_.reset();
}

}  // namespace mroce::dpdk
