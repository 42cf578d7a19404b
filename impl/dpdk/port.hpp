// Ports: one rx and one tx queue on an ethdev, hiding which virtual device is underneath.
//
//   "ring"                         two ports of this process joined back to back by two rte_rings
//                                  (what A sends, B receives, and the other way); true zero copy
//   "memif:server:/path.sock"      net_memif over a unix socket: two processes, one per role
//   "memif:client:/path.sock"      (add "@" before the path for an abstract socket)
//   "af_xdp:IFACE"                 net_af_xdp on a (veth) interface of this network namespace
//   "af_packet:IFACE"              net_af_packet, the fallback when AF_XDP is not available
//   "null"                         net_null: a sink / source, for measuring our own costs
//   "vdev:DRIVER,k=v,..."          any other virtual device, arguments passed through
// Any of them may end with ",key=value..." PMD arguments (e.g. "memif:client:/s.sock,bsize=4096").
#pragma once

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dpdk/addr.hpp"

struct rte_ring;

namespace mroce::dpdk {

enum class Backend : uint8_t { RingPair, Memif, AfXdp, AfPacket, Null, Vdev };
std::string_view backend_name(Backend b);

struct PortSpec {
  Backend backend = Backend::RingPair;
  bool server = false;   // memif role
  std::string target;    // memif socket path, interface name, or vdev driver name
  std::string pmd_args;  // extra "k=v,k=v" arguments
  bool operator==(const PortSpec&) const = default;
};
// Throws std::invalid_argument on a malformed spec.
PortSpec parse_port_spec(std::string_view s);
// The "driver_name,args" string rte_vdev_init receives for this spec (RingPair: empty).
std::string vdev_args(const PortSpec& s);

struct PortConfig {
  uint16_t rx_desc = 1024;
  uint16_t tx_desc = 1024;
  uint32_t ring_size = 4096;  // RingPair: entries per ring (power of two)
  uint16_t mtu = 0;           // 0: leave the PMD's default (af_* ports take the interface's)
  bool promiscuous = true;
};

struct PortCounters {
  uint64_t rx_frames = 0, rx_bytes = 0, tx_frames = 0, tx_bytes = 0;
  uint64_t rx_missed = 0, rx_errors = 0, tx_errors = 0, rx_nombuf = 0;
  uint64_t tx_full = 0;  // frames tx_all() had to free because the tx queue stayed full (ours)
};

class Port {
 public:
  // Opens, configures and starts the port(s) of `spec`: two for RingPair (A then B), one
  // otherwise. Received frames come from `rx_pool`. Throws std::runtime_error with the PMD's
  // reason on failure.
  static std::vector<Port> open(const PortSpec& spec, rte_mempool* rx_pool, const PortConfig& cfg = {});
  static std::vector<Port> open(std::string_view spec, rte_mempool* rx_pool, const PortConfig& cfg = {}) {
    return open(parse_port_spec(spec), rx_pool, cfg);
  }

  Port(Port&& o) noexcept;
  Port& operator=(Port&& o) noexcept;
  Port(const Port&) = delete;
  Port& operator=(const Port&) = delete;
  ~Port();

  uint16_t id() const { return id_; }
  const std::string& name() const { return name_; }
  Backend backend() const { return backend_; }

  // Burst receive: up to n frames into pkts (the caller owns them). Never blocks.
  uint16_t rx(rte_mbuf** pkts, uint16_t n) { return rte_eth_rx_burst(id_, 0, pkts, n); }
  // Burst transmit: returns how many the PMD took (it frees them once sent); the rest stay the
  // caller's.
  uint16_t tx(rte_mbuf** pkts, uint16_t n) { return rte_eth_tx_burst(id_, 0, pkts, n); }
  // Transmits all n, retrying up to `spins` times while the queue is full, then frees what is
  // left (counted in tx_full: a full queue is a loss, as on a real switch port). Returns sent.
  uint16_t tx_all(rte_mbuf** pkts, uint16_t n, unsigned spins = 64);

  // Frames waiting in the receive queue (after the last rx burst), or -1 when the PMD cannot
  // tell. A ring port reads its ring; other PMDs answer rte_eth_rx_queue_count().
  int rx_backlog() const;

  MacAddr mac() const;
  bool link_up() const;
  PortCounters counters() const;
  void reset_counters();
  // Frames this port has sent that its peer has not received yet: the queue a sender's packets
  // wait in. Known for ring ports (the ring between the two ends); nullopt for the other backends,
  // whose PMDs report no such depth.
  std::optional<uint32_t> tx_queue_depth() const;

 private:
  Port() = default;
  void close();

  uint16_t id_ = UINT16_MAX;
  std::string name_;  // ethdev name (for vdevs also the rte_vdev_uninit name)
  Backend backend_ = Backend::RingPair;
  bool is_vdev_ = false;
  std::shared_ptr<void> rings_;  // RingPair: both rings, freed when both ports are gone
  rte_ring* rx_ring_ = nullptr;  // RingPair: the ring this side receives on
  rte_ring* tx_ring_ = nullptr;  // RingPair: the one this port sends on (in rings_)
  uint64_t tx_full_ = 0;
};

}  // namespace mroce::dpdk
