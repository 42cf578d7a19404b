// rte_intr_instance_* are experimental in DPDK 22.11.
#define ALLOW_EXPERIMENTAL_API 1
#include "dpdk/eal.hpp"

#include <rte_eal.h>
#include <rte_interrupts.h>
#include <sys/eventfd.h>
#include <rte_errno.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace mroce::dpdk {
namespace {

Eal* g_eal = nullptr;
bool g_clock_started = false;
uint64_t g_start_ns = 0;

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

}  // namespace

std::vector<std::string> eal_args(const EalOptions& o) {
  std::vector<std::string> a{"mroce"};
  a.push_back("--lcores=" + o.lcores);
  if (o.no_huge) a.push_back("--no-huge");
  if (o.memory_mb) a.push_back("-m" + std::to_string(o.memory_mb));
  a.push_back("--file-prefix=" + (o.file_prefix.empty() ? "mroce-" + std::to_string(getpid()) : o.file_prefix));
  if (o.no_pci) a.push_back("--no-pci");
  if (o.no_telemetry) a.push_back("--no-telemetry");
  for (const auto& v : o.vdevs) a.push_back("--vdev=" + v);
  if (!o.log_level.empty()) a.push_back("--log-level=" + o.log_level);
  for (const auto& e : o.extra) a.push_back(e);
  return a;
}

Eal& Eal::init(const EalOptions& o) {
  static std::mutex m;
  std::lock_guard lock(m);
  if (g_eal) {
    if (!(g_eal->opts_ == o)) throw std::runtime_error("EAL already initialised with other options");
    return *g_eal;
  }
  // Leaked on purpose: destroyed by the atexit hook below, after static objects that may hold
  // ports, and never re-created (EAL cannot be initialised twice).
  g_eal = new Eal(o);
  std::atexit([] { delete g_eal; });
  return *g_eal;
}

bool Eal::initialised() { return g_eal != nullptr; }

Eal::Eal(const EalOptions& o) : opts_(o) {
  auto args = eal_args(o);
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  if (rte_eal_init(int(args.size()), argv.data()) < 0)
    throw std::runtime_error(std::string("rte_eal_init failed: ") + rte_strerror(rte_errno));
  g_start_ns = monotonic_ns();
  g_clock_started = true;
}

Eal::~Eal() {
  // EAL leaves its runtime directory (/var/run/dpdk/<file-prefix>) behind; a prefix belongs to
  // one process here (no secondary processes), so it goes with us.
  const std::string dir = rte_eal_get_runtime_dir();
  rte_eal_cleanup();
  std::error_code ec;
  if (!dir.empty()) std::filesystem::remove_all(dir, ec);
}

uint64_t now_us() {
  if (!g_clock_started) return 0;
  return (monotonic_ns() - g_start_ns) / 1000;
}

bool drain_interrupt_thread(double timeout_s) {
  const int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) return false;
  rte_intr_handle* h = rte_intr_instance_alloc(RTE_INTR_INSTANCE_F_PRIVATE);
  struct Mark {
    int fd;
    std::atomic<bool> ran{false};
  } mark{fd};
  const rte_intr_callback_fn cb = [](void* arg) {
    auto* m = static_cast<Mark*>(arg);
    uint64_t v;
    (void)!read(m->fd, &v, sizeof v);
    m->ran.store(true);
  };
  bool ok = h && rte_intr_type_set(h, RTE_INTR_HANDLE_EXT) == 0 && rte_intr_fd_set(h, fd) == 0 &&
            rte_intr_callback_register(h, cb, &mark) == 0;
  if (ok) {
    const uint64_t one = 1;
    ok = write(fd, &one, sizeof one) == sizeof one;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (ok && !mark.ran.load()) {
      if (std::chrono::steady_clock::now() >= deadline) ok = false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    while (rte_intr_callback_unregister(h, cb, &mark) == -EAGAIN) std::this_thread::yield();
  }
  rte_intr_instance_free(h);
  close(fd);
  return ok;
}

}  // namespace mroce::dpdk
