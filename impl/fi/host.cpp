#include "fi/host.hpp"

#include "fi/provider.hpp"

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
  }
  return {};
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
  host->loop_ = std::make_unique<io::MemLoop>(io::MemLoop::Options{.buffers = 4096, .clock = &host->clock_});
  std::vector<DomainChoice> choices = domain_choices(config);
  for (size_t i = 0; i < choices.size(); ++i) {
    DeviceConfig dc;
    dc.self = choices[i].address.device;
    dc.udp_port = choices[i].address.udp_port;
    // Keys and ISNs from the OS through the device secret (random_seed 0): unpredictable [R-MEM-1].
    dc.random_seed = 0;
    Result err = Result::Ok;
    std::unique_ptr<Device> device = Device::open(dc, host->loop_->port(static_cast<int>(i)), host->clock_, &err);
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

DeviceHost::~DeviceHost() {
  slots_.clear();  // devices before the loop they send into
  loop_.reset();
}

Device* DeviceHost::device(const std::string& domain_name) noexcept {
  for (Slot& s : slots_)
    if (s.choice.name == domain_name) return s.device.get();
  return nullptr;
}

void DeviceHost::progress() noexcept {
  // Bounded: a device returns the frames it read; a few rounds settle a back-to-back exchange.
  for (int round = 0; round < 8; ++round) {
    int frames = 0;
    for (Slot& s : slots_) frames += s.device->progress();
    if (frames == 0) break;
  }
}

}  // namespace mroce::fi
