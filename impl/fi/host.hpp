// The device host (DESIGN.md 5.2, first row): what one process runs underneath every fabric and
// domain it opens. Created at the first fi_domain, kept until the provider's cleanup(). Backends:
// memloop (two devices back to back over io::MemLoop with a steady clock, no DPDK) and, in DPDK
// builds, ring (EAL, a net_ring pair, one EnginePort per device, the DPDK clock); either way one
// process can talk to itself through domains <backend>:0 and <backend>:1. Also in DPDK builds, a
// DPDK port between processes (memif, af_packet, af_xdp): one device, one domain named after the spec.
//
// The engine is single-threaded (DESIGN.md 5.8 G14): every use of a device holds mutex().
#pragma once

#include <memory>
#include <atomic>
#include <mutex>
#include <thread>
#include <string>
#include <vector>

#include "fi/addr.hpp"
#include "fi/config.hpp"
#include "io/mem_loop.hpp"
#include "mroce/mroce.hpp"

namespace mroce::dpdk {
class IoContext;
class EnginePort;
}  // namespace mroce::dpdk

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
  // The address of a domain's device (its endpoints add their ep id); nullptr when unknown.
  const EndpointAddress* address(const std::string& domain_name) const noexcept;
  // Moves every device forward (frames, timers) and hands their connection events and completions to
  // the endpoints' channels (channel.cpp). Hold mutex().
  void progress() noexcept;

  ~DeviceHost();

 private:
  struct Slot {
    DomainChoice choice;
    std::unique_ptr<Device> device;
  };
  explicit DeviceHost(std::string spec);  // out of line: the dpdk types are incomplete here
  // Opens the packet I/O of the backend: fills clock_ and one PacketIo per device. 0 or an fi errno.
  int open_memloop(std::vector<io::PacketIo*>* ios);
  int open_ring(std::vector<io::PacketIo*>* ios);
  // Backend::Port: the port of `config`; *max_payload from its MTU (DESIGN.md 5.8 G10).
  int open_port(const PortConfig& config, std::vector<io::PacketIo*>* ios, uint16_t* max_payload);
  // Starts EAL and opens `ports`; registers the exit handler. 0 or an fi errno (one warning).
  int open_dpdk(std::vector<std::string> ports);
  // At exit, on a port between processes: keeps progressing until the connections are closed, so
  // the last acknowledgements and the graceful close reach the peer (progress is manual).
  void linger() noexcept;
  // Ports between processes: waits for and runs the engine timers due within a few microseconds
  // (coalesced ACKs), so that nothing the peer waits for stays unsent when the application stops
  // calling. Hold mutex().
  void flush_due_timers() noexcept;
  // Ports between processes: a thread that progresses the devices whenever the application has not
  // for kIdleProgressUs (see host.cpp). Started by acquire(), stopped by shutdown().
  void start_idle_progress();
  void stop_idle_progress() noexcept;
  // At exit, a memif server waits for the client to close first (see host.cpp).
  void wait_for_memif_peer() noexcept;

  std::string spec_;
  std::mutex mutex_;
  std::unique_ptr<io::Clock> clock_;
  std::unique_ptr<io::MemLoop> loop_;                            // memloop
  std::unique_ptr<dpdk::IoContext> dpdk_;                        // ring
  std::vector<std::unique_ptr<dpdk::EnginePort>> engine_ports_;  // ring, one per device; port: one
  std::unique_ptr<io::PacketIo> guarded_io_;                     // memif: the port behind a link check
  bool between_processes_ = false;                               // Backend::Port
  bool memif_server_ = false;
  std::thread idle_progress_;
  std::atomic<bool> stop_idle_progress_{false};
  std::atomic<uint64_t> last_progress_us_{0};  // clock_ time of the last progress()
  std::vector<Slot> slots_;
};

// channel.cpp: the connection events and completions of `device` go to the channels' owners (MSG
// and RDM endpoints). Returns how many it handled. Hold the host mutex.
int dispatch_channel_events(Device& device) noexcept;

}  // namespace mroce::fi
