// EAL (DPDK's environment layer) set-up from a small options struct.
//
// EAL can be initialised once per process and never again after cleanup, so the process-wide
// instance is a guarded singleton: Eal::init() initialises it, later calls return the same instance
// (and throw if asked for different options), and rte_eal_cleanup() runs at exit. Tests that need
// DPDK therefore run one test per process (ctest + gtest_discover_tests does exactly that).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mroce::dpdk {

struct EalOptions {
  std::string lcores = "0";  // --lcores value: "0", "1", "0@1" ...
  bool no_huge = true;       // this machine has no hugepages
  unsigned memory_mb = 512;  // -m: heap size without hugepages
  std::string file_prefix;   // empty: "mroce-<pid>" (two DPDK processes need different ones)
  bool no_pci = true;
  bool no_telemetry = true;        // no telemetry socket (nothing reads it, and it races on prefix dirs)
  std::vector<std::string> vdevs;  // --vdev=... (ports can also be created later, see Port::open)
  std::string log_level = "*:warning";
  std::vector<std::string> extra;  // passed as is, before any "--"
  bool operator==(const EalOptions&) const = default;
};

// The argv EAL would receive (program name first).
std::vector<std::string> eal_args(const EalOptions& o);

class Eal {
 public:
  // Initialises EAL once per process; throws std::runtime_error on failure or when called again
  // with other options than the first time.
  static Eal& init(const EalOptions& o = {});
  static bool initialised();
  const EalOptions& options() const { return opts_; }

  Eal(const Eal&) = delete;
  Eal& operator=(const Eal&) = delete;

 private:
  explicit Eal(const EalOptions& o);
  ~Eal();
  EalOptions opts_;
};

// Microsecond clock from EAL start: the impairment stage's and the engine's time base. It is
// CLOCK_MONOTONIC (vDSO, ~30 ns here), not DPDK's TSC: rte_get_tsc_hz() is an estimate, off by
// 0.2% on a loaded VM, so the engine's BTH timestamps drifted from the pcap's capture times
// (gettimeofday, the same rate as CLOCK_MONOTONIC) and from the peer's clock by ~0.5 ms in 0.3 s,
// and `mroce check` judged the sender's build times wrong (issue 13, conform.CheckPerfCapture).
uint64_t now_us();

// Returns once DPDK's interrupt thread has finished the callback it was running when called: it
// runs the memif PMD's connection handling one callback at a time, so a callback of ours that has
// run means that a teardown already under way (the link reads down from its first line) is over.
// Our callback is an eventfd of our own, unregistered again before we return. (An EAL alarm in its
// place left DPDK 22.11's interrupt thread crashing inside rte_eal_cleanup at exit, nearly always.)
// False when it did not within timeout_s. Needs EAL.
bool drain_interrupt_thread(double timeout_s);

}  // namespace mroce::dpdk
