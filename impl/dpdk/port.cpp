#include "dpdk/port.hpp"

#include <rte_bus_vdev.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ring.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <utility>

#if defined(__SANITIZE_ADDRESS__)
#define MROCE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MROCE_ASAN 1
#endif
#endif
#ifdef MROCE_ASAN
#include <sanitizer/lsan_interface.h>

#include <optional>
#endif

namespace mroce::dpdk {
namespace {

std::atomic<unsigned> g_next_dev{0};  // vdev and ring names must be unique in the process

std::runtime_error fail(const std::string& what, int err) {
  return std::runtime_error(what + ": " + rte_strerror(err < 0 ? -err : err));
}

std::string join_args(std::string a, const std::string& b) {
  if (b.empty()) return a;
  return a.empty() ? b : a + "," + b;
}

// Configures one rx and one tx queue and starts the port.
void setup(uint16_t id, rte_mempool* pool, const PortConfig& cfg, Backend backend) {
  rte_eth_dev_info info{};
  int rc = rte_eth_dev_info_get(id, &info);
  if (rc != 0) throw fail("rte_eth_dev_info_get", rc);
  rte_eth_conf conf{};
  // Multi-segment tx where offered: frames larger than one mbuf (memif chains them on rx).
  if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
  if (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER) conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_SCATTER;
  if (cfg.mtu) conf.rxmode.mtu = cfg.mtu;
  rc = rte_eth_dev_configure(id, 1, 1, &conf);
  if (rc != 0) throw fail("rte_eth_dev_configure", rc);
  uint16_t nrx = cfg.rx_desc, ntx = cfg.tx_desc;
  rc = rte_eth_dev_adjust_nb_rx_tx_desc(id, &nrx, &ntx);
  if (rc != 0) throw fail("rte_eth_dev_adjust_nb_rx_tx_desc", rc);
  const int socket = rte_eth_dev_socket_id(id);
  {
#ifdef MROCE_ASAN
    // DPDK 22.11's af_xdp PMD never frees the umem struct that libxdp's xsk_umem__create
    // allocates here (80 bytes per port): not ours to fix, so LeakSanitizer looks away.
    std::optional<__lsan::ScopedDisabler> not_our_leak;
    if (backend == Backend::AfXdp) not_our_leak.emplace();
#else
    (void)backend;
#endif
    rc = rte_eth_rx_queue_setup(id, 0, nrx, socket < 0 ? SOCKET_ID_ANY : unsigned(socket), nullptr, pool);
  }
  if (rc != 0) throw fail("rte_eth_rx_queue_setup", rc);
  rte_eth_txconf txc = info.default_txconf;
  txc.offloads = conf.txmode.offloads;
  rc = rte_eth_tx_queue_setup(id, 0, ntx, socket < 0 ? SOCKET_ID_ANY : unsigned(socket), &txc);
  if (rc != 0) throw fail("rte_eth_tx_queue_setup", rc);
  rc = rte_eth_dev_start(id);
  if (rc != 0) throw fail("rte_eth_dev_start", rc);
  // Not every PMD has a promiscuous switch (ring, memif): the frames reach us anyway.
  if (cfg.promiscuous) (void)rte_eth_promiscuous_enable(id);
}

}  // namespace

std::string_view backend_name(Backend b) {
  switch (b) {
    case Backend::RingPair:
      return "ring";
    case Backend::Memif:
      return "memif";
    case Backend::AfXdp:
      return "af_xdp";
    case Backend::AfPacket:
      return "af_packet";
    case Backend::Null:
      return "null";
    case Backend::Vdev:
      return "vdev";
  }
  return "?";
}

PortSpec parse_port_spec(std::string_view s) {
  PortSpec p;
  std::string_view head = s;
  if (const auto comma = s.find(','); comma != std::string_view::npos) {
    head = s.substr(0, comma);
    p.pmd_args = std::string(s.substr(comma + 1));
  }
  const auto colon = head.find(':');
  const std::string_view kind = head.substr(0, colon);
  const std::string_view rest = colon == std::string_view::npos ? std::string_view{} : head.substr(colon + 1);
  auto bad = [&](const char* why) { return std::invalid_argument("port '" + std::string(s) + "': " + why); };
  if (kind == "ring") {
    if (!rest.empty()) throw bad("ring takes no argument");
    p.backend = Backend::RingPair;
  } else if (kind == "memif") {
    p.backend = Backend::Memif;
    const auto c2 = rest.find(':');
    const auto role = rest.substr(0, c2);
    if (role != "server" && role != "client") throw bad("memif role must be server or client");
    p.server = role == "server";
    if (c2 == std::string_view::npos || c2 + 1 >= rest.size()) throw bad("memif needs a socket path");
    p.target = std::string(rest.substr(c2 + 1));
  } else if (kind == "af_xdp" || kind == "af_packet") {
    p.backend = kind == "af_xdp" ? Backend::AfXdp : Backend::AfPacket;
    if (rest.empty()) throw bad("needs an interface name");
    p.target = std::string(rest);
  } else if (kind == "null") {
    p.backend = Backend::Null;
  } else if (kind == "vdev") {
    p.backend = Backend::Vdev;
    if (rest.empty()) throw bad("needs a driver name");
    p.target = std::string(rest);
  } else {
    throw bad("unknown kind (ring, memif, af_xdp, af_packet, null, vdev)");
  }
  return p;
}

std::string vdev_args(const PortSpec& s) {
  switch (s.backend) {
    case Backend::RingPair:
      return "";
    case Backend::Memif: {
      const bool abstract = !s.target.empty() && s.target[0] == '@';
      const std::string path = abstract ? s.target.substr(1) : s.target;
      return join_args(std::string("role=") + (s.server ? "server" : "client") + ",id=0,socket=" + path +
                           ",socket-abstract=" + (abstract ? "yes" : "no"),
                       s.pmd_args);
    }
    case Backend::AfXdp:
      return join_args("iface=" + s.target + ",start_queue=0,queue_count=1", s.pmd_args);
    case Backend::AfPacket:
      // qdisc_bypass=0 so that a netdev egress hook (the nftables loss of ci/netns) sees
      // what we send. Frame sizes are added by Port::open, which knows the mbuf size.
      return join_args("iface=" + s.target + ",qpairs=1,qdisc_bypass=0", s.pmd_args);
    case Backend::Null:
      return join_args("size=64", s.pmd_args);
    case Backend::Vdev:
      return s.pmd_args;
  }
  return "";
}

std::vector<Port> Port::open(const PortSpec& spec, rte_mempool* rx_pool, const PortConfig& cfg) {
  std::vector<Port> out;
  const unsigned n = g_next_dev.fetch_add(1);
  if (spec.backend == Backend::RingPair) {
    rte_ring* r[2];
    for (int i = 0; i < 2; ++i) {
      const std::string rn = "mroce_r" + std::to_string(n) + (i ? "b" : "a");
      r[i] = rte_ring_create(rn.c_str(), cfg.ring_size, int(rte_socket_id()), RING_F_SP_ENQ | RING_F_SC_DEQ);
      if (!r[i]) {
        if (i) rte_ring_free(r[0]);
        throw fail("rte_ring_create", rte_errno);
      }
    }
    auto rings = std::shared_ptr<void>(
        new rte_ring* [2] { r[0], r[1] },
        [](void* p) {
          auto** rr = static_cast<rte_ring**>(p);
          rte_ring_free(rr[0]);
          rte_ring_free(rr[1]);
          delete[] rr;
        });
    for (int side = 0; side < 2; ++side) {
      Port p;
      p.name_ = "net_mroce_ring" + std::to_string(n) + (side ? "b" : "a");
      p.backend_ = Backend::RingPair;
      p.rings_ = rings;
      p.rx_ring_ = r[side];
      // A receives on ring 0 and sends on ring 1; B the other way round.
      rte_ring *rx = r[side], *tx = r[1 - side];
      p.tx_ring_ = tx;
      const int id = rte_eth_from_rings(p.name_.c_str(), &rx, 1, &tx, 1, rte_socket_id());
      if (id < 0) throw fail("rte_eth_from_rings", rte_errno);
      p.id_ = uint16_t(id);
      out.push_back(std::move(p));
      setup(out.back().id_, rx_pool, cfg, spec.backend);
    }
    return out;
  }
  Port p;
  p.backend_ = spec.backend;
  std::string driver;
  switch (spec.backend) {
    case Backend::Memif:
      driver = "net_memif";
      break;
    case Backend::AfXdp:
      driver = "net_af_xdp";
      break;
    case Backend::AfPacket:
      driver = "net_af_packet";
      break;
    case Backend::Null:
      driver = "net_null";
      break;
    default:
      driver = spec.target;
      break;
  }
  p.name_ = driver + "_mroce" + std::to_string(n);
  std::string args = vdev_args(spec);
  if (spec.backend == Backend::AfPacket && spec.pmd_args.find("framesz") == std::string::npos) {
    // The PMD wants a ring frame (packet + 32 bytes of tpacket header) to fit in one mbuf:
    // size ring frames to the pool, so that a jumbo pool takes 9000-byte-MTU frames.
    const unsigned room = rte_pktmbuf_data_room_size(rx_pool) - RTE_PKTMBUF_HEADROOM;
    const unsigned frame = std::min(65536u, (room + 32) & ~15u);
    // The PMD walks the ring at a fixed frame stride, so blocks must hold whole frames with no
    // gap: block = lcm(frame, page).
    const unsigned per_block = 4096u / std::gcd(frame, 4096u);
    const unsigned block = frame * per_block;
    const unsigned count = (512 + per_block - 1) / per_block * per_block;
    args += ",framesz=" + std::to_string(frame) + ",blocksz=" + std::to_string(block) +
            ",framecnt=" + std::to_string(count);
  }
  int rc = rte_vdev_init(p.name_.c_str(), args.c_str());
  if (rc != 0) throw fail("rte_vdev_init(" + p.name_ + "," + args + ")", rc);
  p.is_vdev_ = true;
  uint16_t id = 0;
  rc = rte_eth_dev_get_port_by_name(p.name_.c_str(), &id);
  if (rc != 0) {
    rte_vdev_uninit(p.name_.c_str());
    throw fail("rte_eth_dev_get_port_by_name(" + p.name_ + ")", rc);
  }
  p.id_ = id;
  out.push_back(std::move(p));
  setup(out.back().id_, rx_pool, cfg, spec.backend);
  return out;
}

Port::Port(Port&& o) noexcept { *this = std::move(o); }

Port& Port::operator=(Port&& o) noexcept {
  if (this != &o) {
    close();
    id_ = std::exchange(o.id_, UINT16_MAX);
    name_ = std::move(o.name_);
    backend_ = o.backend_;
    is_vdev_ = std::exchange(o.is_vdev_, false);
    rings_ = std::move(o.rings_);
    rx_ring_ = std::exchange(o.rx_ring_, nullptr);
    tx_ring_ = std::exchange(o.tx_ring_, nullptr);
    tx_full_ = o.tx_full_;
  }
  return *this;
}

Port::~Port() { close(); }

void Port::close() {
  if (id_ == UINT16_MAX) return;
  (void)rte_eth_dev_stop(id_);
  (void)rte_eth_dev_close(id_);
  if (is_vdev_) (void)rte_vdev_uninit(name_.c_str());
  id_ = UINT16_MAX;
  tx_ring_ = nullptr;
  rings_.reset();
  rx_ring_ = nullptr;
}

uint16_t Port::tx_all(rte_mbuf** pkts, uint16_t n, unsigned spins) {
  uint16_t sent = 0;
  for (unsigned i = 0; sent < n && i <= spins; ++i) sent += rte_eth_tx_burst(id_, 0, pkts + sent, uint16_t(n - sent));
  if (sent < n) {
    tx_full_ += n - sent;
    for (uint16_t i = sent; i < n; ++i) rte_pktmbuf_free(pkts[i]);
  }
  return sent;
}

int Port::rx_backlog() const {
  if (rx_ring_) return int(rte_ring_count(rx_ring_));
  const int n = rte_eth_rx_queue_count(id_, 0);
  return n < 0 ? -1 : n;
}

MacAddr Port::mac() const {
  rte_ether_addr a{};
  (void)rte_eth_macaddr_get(id_, &a);
  MacAddr m;
  std::memcpy(m.b.data(), a.addr_bytes, 6);
  return m;
}

bool Port::link_up() const {
  rte_eth_link l{};
  if (rte_eth_link_get_nowait(id_, &l) != 0) return false;
  return l.link_status == RTE_ETH_LINK_UP;
}

PortCounters Port::counters() const {
  rte_eth_stats s{};
  PortCounters c;
  if (rte_eth_stats_get(id_, &s) == 0) {
    c.rx_frames = s.ipackets;
    c.rx_bytes = s.ibytes;
    c.tx_frames = s.opackets;
    c.tx_bytes = s.obytes;
    c.rx_missed = s.imissed;
    c.rx_errors = s.ierrors;
    c.tx_errors = s.oerrors;
    c.rx_nombuf = s.rx_nombuf;
  }
  c.tx_full = tx_full_;
  return c;
}

std::optional<uint32_t> Port::tx_queue_depth() const {
  if (!tx_ring_) return std::nullopt;
  return rte_ring_count(tx_ring_);
}

void Port::reset_counters() {
  (void)rte_eth_stats_reset(id_);
  tx_full_ = 0;
}

}  // namespace mroce::dpdk
