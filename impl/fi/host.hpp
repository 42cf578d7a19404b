// The device host (DESIGN.md 5.2, first row): what one process runs underneath every fabric and
// domain it opens. Created at the first fi_domain, kept until the provider's cleanup(). This build
// has the memloop backend: two devices back to back over io::MemLoop with a steady clock, no DPDK,
// so one process can talk to itself through domains memloop:0 and memloop:1.
//
// The engine is single-threaded (DESIGN.md 5.8 G14): every use of a device holds mutex().
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fi/addr.hpp"
#include "fi/config.hpp"
#include "io/mem_loop.hpp"
#include "mroce/mroce.hpp"

namespace mroce::fi {

// A domain the backend offers: its name (domain_attr->name) and its device's address.
struct DomainChoice {
  std::string name;
  EndpointAddress address;
};

// What the backend of `config` offers, without opening anything (fi_getinfo).
std::vector<DomainChoice> domain_choices(const PortConfig& config);

class DeviceHost {
 public:
  // The process's host, opened for `config` at the first call. Later calls with another port spec
  // get -FI_EBUSY (one device host per process, DESIGN.md 6.5). Returns 0 or a negative fi errno.
  static int acquire(const PortConfig& config, DeviceHost** out);
  // Closes the host (provider cleanup()).
  static void shutdown() noexcept;

  std::mutex& mutex() noexcept { return mutex_; }
  // The device behind a domain name; nullptr when this host has no such domain. Hold mutex().
  Device* device(const std::string& domain_name) noexcept;
  // Moves every device forward (frames, timers). Hold mutex().
  void progress() noexcept;

  ~DeviceHost();

 private:
  struct Slot {
    DomainChoice choice;
    std::unique_ptr<Device> device;
  };
  explicit DeviceHost(std::string spec) : spec_(std::move(spec)) {}

  std::string spec_;
  std::mutex mutex_;
  io::SteadyClock clock_;
  std::unique_ptr<io::MemLoop> loop_;
  std::vector<Slot> slots_;
};

}  // namespace mroce::fi
