#include "fi/host.hpp"

#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <exception>
#include <string>

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
  }
  return {};
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

int DeviceHost::open_ring(std::vector<io::PacketIo*>* ios) {
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
  o.ports = {"ring"};  // both ends of one net_ring pair: planes 0 and 1
  o.mbufs = 8192;
  o.mbuf_priv = dpdk::kEnginePriv;
  try {
    dpdk_ = std::make_unique<dpdk::IoContext>(o);
    engine_ports_.push_back(std::make_unique<dpdk::EnginePort>(*dpdk_, std::vector<size_t>{0}));
    engine_ports_.push_back(std::make_unique<dpdk::EnginePort>(*dpdk_, std::vector<size_t>{1}));
  } catch (const std::exception& e) {
    FI_WARN(&g_provider, FI_LOG_DOMAIN, "FI_MROCE_PORT='%s': opening the DPDK port failed: %s\n", spec_.c_str(),
            e.what());
    return -FI_ENODEV;
  }
  // At exit, atexit handlers run before libfabric's destructor calls cleanup(), and EAL is torn down
  // by one of them (dpdk/eal.cpp). Handlers run last-registered first, so this one, registered
  // after EAL's, closes the devices and ports while EAL still exists; cleanup() then finds nothing.
  std::atexit([] { DeviceHost::shutdown(); });
  // A belt to the --lcores braces: the application's thread keeps its CPUs whatever EAL did.
  if (have_affinity) sched_setaffinity(0, sizeof cpus, &cpus);
  clock_ = std::make_unique<dpdk::DpdkClock>();
  *ios = {engine_ports_[0].get(), engine_ports_[1].get()};
  return 0;
#else
  (void)ios;
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
  const int opened = config.backend == Backend::Ring ? host->open_ring(&ios) : host->open_memloop(&ios);
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
    Result err = Result::Ok;
    std::unique_ptr<Device> device = Device::open(dc, *ios[i], *host->clock_, &err);
    if (!device) {
      FI_WARN(&g_provider, FI_LOG_DOMAIN, "opening the device of %s failed: %s\n", choices[i].name.c_str(),
              result_name(err));
      return -FI_ENODEV;
    }
    host->slots_.push_back(Slot{std::move(choices[i]), std::move(device)});
  }
  g_host = host.release();
  *out = g_host;
  return 0;
}

void DeviceHost::shutdown() noexcept {
  std::lock_guard lock(g_host_mutex);
  delete g_host;
  g_host = nullptr;
}

DeviceHost::DeviceHost(std::string spec) : spec_(std::move(spec)) {}

DeviceHost::~DeviceHost() {
  slots_.clear();  // devices before the packet I/O they send into
  engine_ports_.clear();
  dpdk_.reset();
  loop_.reset();
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
}

}  // namespace mroce::fi
