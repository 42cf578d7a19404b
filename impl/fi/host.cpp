#include "fi/host.hpp"

#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <thread>

#include "codec/fast_codec.hpp"
#include "fi/provider.hpp"
#ifdef MROCE_FI_DPDK
#include "dpdk/engine_port.hpp"
#include "dpdk/io.hpp"
#endif

namespace mroce::fi {
namespace {

// A plain pointer, not a static with a destructor: at exit the .so's static destructors run before
// libfabric's destructor calls cleanup() (DESIGN.md 6.5 exit order), which must still find it.
std::mutex g_host_mutex;  // guards g_host (creation and shutdown)
DeviceHost* g_host = nullptr;

// Memloop device i: a locally administered MAC and an address of the benchmarking range (RFC 2544).
EndpointAddress memloop_address(uint8_t i) {
  EndpointAddress a;
  a.device.mac = {0x02, 0x00, 0x00, 0x00, 0x00, static_cast<uint8_t>(i + 1)};
  a.device.ip = {198, 18, 0, static_cast<uint8_t>(i + 1)};
  a.udp_port = DeviceConfig{}.udp_port;
  a.device_nonce = process_nonce();
  return a;
}

}  // namespace

std::vector<DomainChoice> domain_choices(const PortConfig& config) {
  switch (config.backend) {
    case Backend::MemLoop:
      return {{"memloop:0", memloop_address(0)}, {"memloop:1", memloop_address(1)}};
    case Backend::Ring:
      return {{"ring:0", memloop_address(0)}, {"ring:1", memloop_address(1)}};
    case Backend::Port:
      return {{config.spec, config.device}};
  }
  return {};
}

uint16_t max_payload_for_mtu(uint32_t mtu, bool ipv6) noexcept {
  // Everything of a frame the MTU counts besides the payload: IP, UDP, BTH, the longest extension
  // header, ICRC (the Ethernet header is outside the MTU).
  const uint32_t overhead =
      (ipv6 ? fast::kIpv6Len : fast::kIpv4Len) + fast::kUdpLen + fast::kBthLen + fast::kMaxExtLen + fast::kIcrcLen;
  if (mtu < overhead + 256) return 0;
  return static_cast<uint16_t>(std::min<uint32_t>(fast::kMaxPayload, (mtu - overhead) / 64 * 64));
}

int DeviceHost::open_memloop(std::vector<io::PacketIo*>* ios) {
  clock_ = std::make_unique<io::SteadyClock>();
  loop_ = std::make_unique<io::MemLoop>(io::MemLoop::Options{.buffers = 4096, .clock = clock_.get()});
  *ios = {&loop_->port(0), &loop_->port(1)};
  return 0;
}

#ifdef MROCE_FI_DPDK
namespace {

// EAL's --lcores value that keeps the calling thread on the CPUs it may use now: a plain "0" would
// re-pin the application's thread to CPU 0 (DESIGN.md 6.5, [ran]).
std::string lcores_keeping_affinity(const cpu_set_t& cpus) {
  std::string list;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &cpus)) continue;
    if (!list.empty()) list += ',';
    list += std::to_string(c);
  }
  return list.empty() ? "0" : "0@(" + list + ")";
}

}  // namespace
#endif

#ifdef MROCE_FI_DPDK
namespace {

// The interface's MTU (af_packet, af_xdp): the DPDK port reports 1500 whatever the interface has.
std::optional<uint32_t> interface_mtu(const std::string& iface) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  struct ifreq req {};
  std::strncpy(req.ifr_name, iface.c_str(), IFNAMSIZ - 1);
  const int rc = ioctl(fd, SIOCGIFMTU, &req);
  close(fd);
  if (rc != 0 || req.ifr_mtu <= 0) return std::nullopt;
  return static_cast<uint32_t>(req.ifr_mtu);
}

// memif: the PMD unmaps the shared rings in DPDK's interrupt thread as soon as the peer disconnects,
// while a burst of ours may be running on them (impl/dpdk/tools/io_probe.cpp). No burst is made
// while the link is down, which leaves only a burst already running at that moment exposed; the
// exit linger (DeviceHost::linger) makes the peer's disconnect come after this side's last burst
// in the ordinary end of a run.
class LinkCheckedIo final : public io::PacketIo {
 public:
  LinkCheckedIo(dpdk::EnginePort& inner, uint16_t port_id) : inner_(inner), port_id_(port_id) {}
  uint16_t rx_burst(io::PacketBuf** out, uint16_t n) noexcept override {
    return link_up() ? inner_.rx_burst(out, n) : 0;
  }
  void free_rx(io::PacketBuf* b) noexcept override { inner_.free_rx(b); }
  io::PacketBuf* alloc_tx() noexcept override { return inner_.alloc_tx(); }
  void tx_burst(io::PacketBuf** pkts, uint16_t n) noexcept override {
    if (link_up()) return inner_.tx_burst(pkts, n);
    for (uint16_t i = 0; i < n; ++i) inner_.free_rx(pkts[i]);  // a frame sent on a cable not plugged in
  }

 private:
  bool link_up() const noexcept {
    struct rte_eth_link link {};
    return rte_eth_link_get_nowait(port_id_, &link) == 0 && link.link_status == RTE_ETH_LINK_UP;
  }
  dpdk::EnginePort& inner_;
  uint16_t port_id_;
};

}  // namespace
#endif

int DeviceHost::open_dpdk(std::vector<std::string> ports) {
#ifdef MROCE_FI_DPDK
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  const bool have_affinity = sched_getaffinity(0, sizeof cpus, &cpus) == 0;
  dpdk::IoOptions o;
  // One EAL per process: a per-process prefix, and --no-shconf so that nothing is left in
  // /var/run/dpdk and two processes never collide (DESIGN.md 6.5).
  o.eal.file_prefix = "mroce-fi-" + std::to_string(getpid());
  o.eal.extra = {"--no-shconf"};
  o.eal.memory_mb = 256;
  if (have_affinity) o.eal.lcores = lcores_keeping_affinity(cpus);
  o.ports = std::move(ports);
  o.mbufs = 8192;
  o.mbuf_priv = dpdk::kEnginePriv;
  try {
    dpdk_ = std::make_unique<dpdk::IoContext>(o);
    for (size_t plane = 0; plane < dpdk_->planes(); ++plane)
      engine_ports_.push_back(std::make_unique<dpdk::EnginePort>(*dpdk_, std::vector<size_t>{plane}));
  } catch (const std::exception& e) {
    FI_WARN(&g_provider, FI_LOG_DOMAIN, "FI_MROCE_PORT='%s': opening the DPDK port failed: %s\n", spec_.c_str(),
            e.what());
    engine_ports_.clear();
    dpdk_.reset();
    if (have_affinity) sched_setaffinity(0, sizeof cpus, &cpus);
    return -FI_ENODEV;
  }
  // At exit, atexit handlers run before libfabric's destructor calls cleanup(), and EAL is torn down
  // by one of them (dpdk/eal.cpp). Handlers run last-registered first, so this one, registered
  // after EAL's, closes the devices and ports while EAL still exists; cleanup() then finds nothing.
  static bool exit_handler = false;
  if (!exit_handler) std::atexit([] { DeviceHost::shutdown(); });
  exit_handler = true;
  // A belt to the --lcores braces: the application's thread keeps its CPUs whatever EAL did.
  if (have_affinity) sched_setaffinity(0, sizeof cpus, &cpus);
  clock_ = std::make_unique<dpdk::DpdkClock>();
  return 0;
#else
  (void)ports;
  return -FI_ENOSYS;
#endif
}

int DeviceHost::open_ring(std::vector<io::PacketIo*>* ios) {
  if (int r = open_dpdk({"ring"})) return r;  // both ends of one net_ring pair: planes 0 and 1
  *ios = {engine_ports_[0].get(), engine_ports_[1].get()};
  return 0;
}

int DeviceHost::open_port(const PortConfig& config, std::vector<io::PacketIo*>* ios, uint16_t* max_payload) {
#ifdef MROCE_FI_DPDK
  if (int r = open_dpdk({config.spec})) return r;
  between_processes_ = true;
  memif_server_ = config.kind == PortKind::Memif && config.memif_server;
  const uint16_t port_id = dpdk_->port(0).id();
  std::optional<uint32_t> mtu;
  if (config.kind == PortKind::Memif) {
    uint16_t dpdk_mtu = 0;
    if (rte_eth_dev_get_mtu(port_id, &dpdk_mtu) == 0) mtu = dpdk_mtu;
  } else {
    mtu = interface_mtu(config.iface);
  }
  *max_payload = mtu ? max_payload_for_mtu(*mtu, config.device.device.ipv6) : 0;
  if (*max_payload == 0) {
    FI_WARN(&g_provider, FI_LOG_DOMAIN, "FI_MROCE_PORT='%s': MTU %s too small for mroce (%u bytes at least)\n",
            spec_.c_str(), mtu ? std::to_string(*mtu).c_str() : "unknown",
            unsigned{fast::kIpv6Len + fast::kUdpLen + fast::kBthLen + fast::kMaxExtLen + fast::kIcrcLen + 256});
    return -FI_EINVAL;
  }
  if (config.kind == PortKind::Memif) {
    guarded_io_ = std::make_unique<LinkCheckedIo>(*engine_ports_[0], port_id);
    *ios = {guarded_io_.get()};
  } else {
    *ios = {engine_ports_[0].get()};
  }
  return 0;
#else
  (void)config;
  (void)ios;
  (void)max_payload;
  return -FI_ENOSYS;
#endif
}

int DeviceHost::acquire(const PortConfig& config, DeviceHost** out) {
  std::lock_guard lock(g_host_mutex);
  if (g_host) {
    if (g_host->spec_ != config.spec) {
      FI_WARN(&g_provider, FI_LOG_DOMAIN, "the device host runs on '%s'; FI_MROCE_PORT='%s' needs another one\n",
              g_host->spec_.c_str(), config.spec.c_str());
      return -FI_EBUSY;
    }
    *out = g_host;
    return 0;
  }
  std::unique_ptr<DeviceHost> host(new DeviceHost(config.spec));
  std::vector<io::PacketIo*> ios;
  uint16_t max_payload = 0;  // 0: the engine's default (memloop, ring: no MTU)
  int opened = 0;
  switch (config.backend) {
    case Backend::MemLoop:
      opened = host->open_memloop(&ios);
      break;
    case Backend::Ring:
      opened = host->open_ring(&ios);
      break;
    case Backend::Port:
      opened = host->open_port(config, &ios, &max_payload);
      break;
  }
  if (opened != 0) return opened;
  std::vector<DomainChoice> choices = domain_choices(config);
  for (size_t i = 0; i < choices.size(); ++i) {
    DeviceConfig dc;
    dc.self = choices[i].address.device;
    dc.udp_port = choices[i].address.udp_port;
    // Keys and ISNs from the OS through the device secret (random_seed 0): unpredictable [R-MEM-1].
    dc.random_seed = 0;
    // Manual progress (DESIGN.md 5.4 step 6, 5.7): the engine's timers run on the real clock while
    // the application may be descheduled or busy between its calls (a loaded 2-core host took
    // more than the 8 x 1 ms CONNECT retries and the 50 ms PEER_TIMEOUT). Longer bounds: 300 x 10 ms
    // of CONNECT retries, KEEPALIVE 1 s, PEER_TIMEOUT 2 s, RTO_MAX = PEER_TIMEOUT / 8.
    dc.connect_retry_us = 10'000;
    dc.connect_tries = 300;
    dc.keepalive_us = 1'000'000;
    dc.peer_timeout_us = 2'000'000;
    dc.rto_max_us = dc.peer_timeout_us / 8;
    if (config.backend == Backend::Port) {
      // Frames must fit the port's MTU (G10). Timer minima as `mroce perf` on software ports (5.1,
      // 5.7): the kernel's veth and bridge work shares the cores, and a peer stalls for 5-10 ms at
      // times, so RTO min 10 ms through the kernel (af_*), 2 ms on memif; PTO min 0.5 ms.
      dc.offer.max_payload = max_payload;
      dc.rto_min_us = config.kind == PortKind::Memif ? 2'000 : 10'000;
      dc.rto_init_us = std::max(dc.rto_init_us, dc.rto_min_us);
      dc.pto_min_us = 500;
    }
    Result err = Result::Ok;
    std::unique_ptr<Device> device = Device::open(dc, *ios[i], *host->clock_, &err);
    if (!device) {
      FI_WARN(&g_provider, FI_LOG_DOMAIN, "opening the device of %s failed: %s\n", choices[i].name.c_str(),
              result_name(err));
      return -FI_ENODEV;
    }
    host->slots_.push_back(Slot{std::move(choices[i]), std::move(device)});
  }
  if (host->between_processes_) host->start_idle_progress();
  g_host = host.release();
  *out = g_host;
  return 0;
}

void DeviceHost::shutdown() noexcept {
  std::lock_guard lock(g_host_mutex);
  if (g_host != nullptr) {
    g_host->stop_idle_progress();
    std::lock_guard device_lock(g_host->mutex_);
    g_host->linger();
    g_host->wait_for_memif_peer();
  }
  delete g_host;
  g_host = nullptr;
}

DeviceHost::DeviceHost(std::string spec) : spec_(std::move(spec)) {}

DeviceHost::~DeviceHost() {
  stop_idle_progress();
  slots_.clear();  // devices before the packet I/O they send into
  engine_ports_.clear();
  dpdk_.reset();
  loop_.reset();
}

void DeviceHost::linger() noexcept {
  if (!between_processes_) return;
  for (Slot& s : slots_) {
    const Counters& k = s.device->counters();
    FI_INFO(&g_provider, FI_LOG_DOMAIN,
            "%s at exit: %lu data, %lu ACKs, %lu retransmitted (%lu spurious), %lu probes\n", s.choice.name.c_str(),
            static_cast<unsigned long>(k.data_sent), static_cast<unsigned long>(k.acks_sent),
            static_cast<unsigned long>(k.retransmissions), static_cast<unsigned long>(k.retx_by_cause.spurious),
            static_cast<unsigned long>(k.probes_sent));
  }
  // Bounded by PEER_TIMEOUT / 2: a peer that is gone is not waited for to the end.
  using std::chrono::steady_clock;
  const auto deadline = steady_clock::now() + std::chrono::milliseconds(1000);
  uint32_t conns[64];
  for (Slot& s : slots_) {
    const size_t n = std::min<size_t>(64, s.device->connections(conns, 64));
    for (size_t i = 0; i < n; ++i) s.device->close(conns[i]);  // graceful; a closing one stays so
  }
  while (steady_clock::now() < deadline) {
    progress();
    size_t open = 0;
    for (Slot& s : slots_) {
      const size_t n = std::min<size_t>(64, s.device->connections(conns, 64));
      for (size_t i = 0; i < n; ++i) {
        const std::optional<ConnState> state = s.device->connection_state(conns[i]);
        if (state && *state != ConnState::Closed && *state != ConnState::Failed) ++open;
      }
    }
    if (open == 0) return;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

void DeviceHost::start_idle_progress() {
  // Progress is manual, but an application may stop calling right after a completion: fi_pingpong
  // waits on its TCP socket once a message has arrived. If the ACK of that message was lost, the
  // peer retransmits and, unanswered, fails the connection after PEER_TIMEOUT while waiting for
  // its send completion (seen at 1 % loss). So this thread moves the devices forward whenever no
  // application call has done so for a while; it never competes with one (try_lock).
  constexpr uint64_t kIdleProgressUs = 1000;
  idle_progress_ = std::thread([this] {
    while (!stop_idle_progress_.load()) {
      std::this_thread::sleep_for(std::chrono::microseconds(kIdleProgressUs / 4));
      if (clock_->now_us() - last_progress_us_.load(std::memory_order_relaxed) < kIdleProgressUs) continue;
      std::unique_lock lock(mutex_, std::try_to_lock);
      if (lock.owns_lock()) progress();
    }
  });
}

void DeviceHost::stop_idle_progress() noexcept {
  stop_idle_progress_.store(true);
  if (idle_progress_.joinable()) idle_progress_.join();
}

void DeviceHost::wait_for_memif_peer() noexcept {
#ifdef MROCE_FI_DPDK
  if (!memif_server_ || !dpdk_) return;
  // The memif PMD tears a connection down in DPDK's interrupt thread when the peer closes, and a
  // close of ours racing that teardown frees the shared regions twice (a crash at exit, seen with
  // fi_pingpong). So the server closes last: it waits, no longer polling, until the client has
  // closed (link down, bounded), then until the interrupt thread has finished the teardown.
  const uint16_t port_id = dpdk_->port(0).id();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < deadline) {
    struct rte_eth_link link {};
    if (rte_eth_link_get_nowait(port_id, &link) != 0 || link.link_status != RTE_ETH_LINK_UP) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  dpdk::drain_interrupt_thread(2.0);
#endif
}

Device* DeviceHost::device(const std::string& domain_name) noexcept {
  for (Slot& s : slots_)
    if (s.choice.name == domain_name) return s.device.get();
  return nullptr;
}

const EndpointAddress* DeviceHost::address(const std::string& domain_name) const noexcept {
  for (const Slot& s : slots_)
    if (s.choice.name == domain_name) return &s.choice.address;
  return nullptr;
}

void DeviceHost::progress() noexcept {
  if (between_processes_) last_progress_us_.store(clock_->now_us(), std::memory_order_relaxed);
  // Bounded: a device returns the frames it read; a few rounds settle a back-to-back exchange. The
  // events and completions handed out may post (reposted receives, CM answers), so they count too.
  for (int round = 0; round < 8; ++round) {
    int work = 0;
    for (Slot& s : slots_) work += s.device->progress();
#ifdef MROCE_FI_DPDK
    for (auto& port : engine_ports_) port->service();  // frames the tx impairment held back
#endif
    for (Slot& s : slots_) work += dispatch_channel_events(*s.device);
    if (work == 0) break;
  }
  if (between_processes_) flush_due_timers();
}

void DeviceHost::flush_due_timers() noexcept {
  // The engine coalesces ACKs for up to ACK_DELAY (8 us). With manual progress the application may
  // not call again for long after a receive completes (fi_pingpong then waits on its TCP socket),
  // and the peer would wait for its send completion until PEER_TIMEOUT fails the connection. So
  // timers due within kFlushWindowUs are waited for here. (Acknowledging every packet at once,
  // ACK_EVERY 1, made messages below 48 bytes take 5-6 ms each over memif instead.)
  constexpr Time kFlushWindowUs = 50;
  for (int round = 0; round < 8; ++round) {
    std::optional<Time> due;
    for (Slot& s : slots_)
      if (auto d = s.device->next_deadline(); d && (!due || *d < *due)) due = d;
    if (!due || *due > clock_->now_us() + kFlushWindowUs) return;
    while (clock_->now_us() < *due) {}
    for (Slot& s : slots_) s.device->progress();
#ifdef MROCE_FI_DPDK
    for (auto& port : engine_ports_) port->service();
#endif
    for (Slot& s : slots_) dispatch_channel_events(*s.device);
  }
}

}  // namespace mroce::fi
