// Everything an endpoint process needs for packet I/O, from command-line options: EAL, one mbuf
// pool, one port per plane (each with its Pump), per-plane impairment stages, a pcap writer and
// the addressing. The engine plugs in through EnginePort (engine_port.hpp), which drives the pumps;
// a raw tool drives them itself, per plane p:
//
//     io.pump(p).poll([&](rte_mbuf** pkts, uint16_t n) { /* owns the mbufs */ }, now);
//     io.pump(p).send(frames, n, now);   // frames built in place: alloc_mbuf(io.pool()) + append
//     io.pump(p).service(now);           // releases frames the tx impairment held back
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dpdk/addr.hpp"
#include "dpdk/eal.hpp"
#include "dpdk/impair_stage.hpp"
#include "dpdk/mbuf.hpp"
#include "dpdk/pcap.hpp"
#include "dpdk/port.hpp"
#include "dpdk/pump.hpp"

namespace CLI {
class App;
}

namespace mroce::dpdk {

struct IoOptions {
  EalOptions eal;
  std::vector<std::string> ports;  // port specs, one per plane ("ring" opens two: both ends)
  // One per plane, or one for all planes. Defaults: mac = the port's own, peer_mac = broadcast,
  // IPs 0.0.0.0 (the raw tools do not need them; the engine does).
  std::vector<std::string> mac, peer_mac, ip, peer_ip;
  uint16_t udp_port = kDefaultUdpPort;  // [R-ENC-5]
  std::string pcap;                     // file; empty: no capture
  std::string impair_rx, impair_tx;     // impair_from_string() texts; empty: none
  unsigned mbufs = 16384;
  uint16_t data_room = kJumboDataRoom;
  uint16_t mbuf_priv = 0;  // per-mbuf application area (EnginePort needs sizeof(io::PacketBuf))
  uint16_t burst = 32;
  // CE marking by receive backlog (Pump::set_ce_backlog), frames; kCeBacklogAuto: on at
  // kCeBacklogSoftware for ring and memif ports (no switch in front of them), off for the others.
  static constexpr uint32_t kCeBacklogAuto = UINT32_MAX, kCeBacklogSoftware = 64;
  uint32_t ce_backlog = kCeBacklogAuto;
  PortConfig port;
};

// Registers --port, --mac, --peer-mac, --ip, --peer-ip, --udp-port, --pcap, --impair,
// --impair-tx, --ce-backlog, --lcores, --mem-mb, --file-prefix, --huge, --vdev, --eal-arg, --mbufs,
// --burst.
void add_io_options(CLI::App& app, IoOptions& o);

class IoContext {
 public:
  // Initialises EAL (once per process) and opens everything; throws std::runtime_error or
  // std::invalid_argument with the reason.
  explicit IoContext(const IoOptions& o);
  ~IoContext();

  size_t planes() const { return ports_.size(); }
  Port& port(size_t p) { return ports_[p]; }
  Pump& pump(size_t p) { return *pumps_[p]; }
  const PlaneAddr& addr(size_t p) const { return addrs_[p]; }
  ImpairStage* rx_impairment(size_t p) { return rx_imp_.empty() ? nullptr : rx_imp_[p].get(); }
  ImpairStage* tx_impairment(size_t p) { return tx_imp_.empty() ? nullptr : tx_imp_[p].get(); }
  PcapWriter* pcap() { return pcap_.get(); }
  rte_mempool* pool() { return pool_->get(); }
  uint16_t udp_port() const { return udp_port_; }

 private:
  std::unique_ptr<MbufPool> pool_, xdp_pool_;
  std::unique_ptr<PcapWriter> pcap_;
  std::vector<Port> ports_;
  std::vector<std::unique_ptr<ImpairStage>> rx_imp_, tx_imp_;
  std::vector<std::unique_ptr<Pump>> pumps_;
  std::vector<PlaneAddr> addrs_;
  uint16_t udp_port_;
};

// Per-plane impairment seed: plane 0 uses the configured seed itself (so a one-plane run replays
// in the harness with the same seed), plane p the seed + p.
inline uint64_t plane_seed(uint64_t seed, size_t plane) { return seed + plane; }

}  // namespace mroce::dpdk
