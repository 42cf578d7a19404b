// fi.ObjectsLifecycle and fi.MrKeys (DESIGN.md 6.3 M1): fabric, domain, EQ, CQ, AV and MR objects on
// the memloop device host through the public libfabric API; close order enforced; memory keys
// unpredictable [R-MEM-1]; what is not implemented yet answers -FI_ENOSYS.
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_errno.h>
#include <sched.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <bit>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "fi_test_util.hpp"

namespace mroce::fi_test {
namespace {

// A fabric and one domain on memloop:0 (or the given domain), closed in order at the end.
struct Opened {
  InfoPtr info;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;

  explicit Opened(const char* domain_name = "memloop:0") : info(rdm_info(domain_name)) {
    if (!info) return;
    if (fi_fabric(info->fabric_attr, &fabric, nullptr) != 0) return;
    if (fi_domain(fabric, info.get(), &domain, nullptr) != 0) domain = nullptr;
  }
  ~Opened() {
    if (domain != nullptr) fi_close(&domain->fid);
    if (fabric != nullptr) fi_close(&fabric->fid);
  }
};

TEST(ObjectsLifecycle, OpenAndCloseInOrder) {
  InfoPtr info = rdm_info();
  ASSERT_TRUE(info);
  fid_fabric* fabric = nullptr;
  ASSERT_EQ(fi_fabric(info->fabric_attr, &fabric, nullptr), 0);
  fi_eq_attr eq_attr{};
  eq_attr.wait_obj = FI_WAIT_UNSPEC;
  fid_eq* eq = nullptr;
  ASSERT_EQ(fi_eq_open(fabric, &eq_attr, &eq, nullptr), 0);
  fid_domain* domain = nullptr;
  ASSERT_EQ(fi_domain(fabric, info.get(), &domain, nullptr), 0);
  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_TAGGED;
  fid_cq* cq = nullptr;
  ASSERT_EQ(fi_cq_open(domain, &cq_attr, &cq, nullptr), 0);
  fi_av_attr av_attr{};
  av_attr.type = FI_AV_MAP;
  fid_av* av = nullptr;
  ASSERT_EQ(fi_av_open(domain, &av_attr, &av, nullptr), 0);
  std::vector<char> buf(4096);
  fid_mr* mr = nullptr;
  ASSERT_EQ(fi_mr_reg(domain, buf.data(), buf.size(), FI_SEND | FI_RECV, 0, 0, 0, &mr, nullptr), 0);

  // Parents refuse to close while children are open.
  EXPECT_EQ(fi_close(&fabric->fid), -FI_EBUSY);
  EXPECT_EQ(fi_close(&domain->fid), -FI_EBUSY);
  EXPECT_EQ(fi_close(&mr->fid), 0);
  EXPECT_EQ(fi_close(&domain->fid), -FI_EBUSY);  // CQ and AV still open
  EXPECT_EQ(fi_close(&cq->fid), 0);
  EXPECT_EQ(fi_close(&av->fid), 0);
  EXPECT_EQ(fi_close(&fabric->fid), -FI_EBUSY);  // domain and EQ still open
  EXPECT_EQ(fi_close(&domain->fid), 0);
  EXPECT_EQ(fi_close(&fabric->fid), -FI_EBUSY);  // EQ still open
  EXPECT_EQ(fi_close(&eq->fid), 0);
  EXPECT_EQ(fi_close(&fabric->fid), 0);
}

TEST(ObjectsLifecycle, BothMemloopDomainsInOneProcess) {
  InfoPtr info0 = rdm_info("memloop:0"), info1 = rdm_info("memloop:1");
  ASSERT_TRUE(info0);
  ASSERT_TRUE(info1);
  EXPECT_STREQ(info1->domain_attr->name, "memloop:1");
  fid_fabric* fabric = nullptr;
  ASSERT_EQ(fi_fabric(info0->fabric_attr, &fabric, nullptr), 0);
  fid_domain *d0 = nullptr, *d1 = nullptr;
  ASSERT_EQ(fi_domain(fabric, info0.get(), &d0, nullptr), 0);
  ASSERT_EQ(fi_domain(fabric, info1.get(), &d1, nullptr), 0);
  // A domain name that is not on this port: refused, nothing opened.
  InfoPtr bad(fi_dupinfo(info0.get()));
  free(bad->domain_attr->name);
  bad->domain_attr->name = strdup("memloop:7");
  fid_domain* d7 = nullptr;
  EXPECT_EQ(fi_domain(fabric, bad.get(), &d7, nullptr), -FI_ENODEV);
  EXPECT_EQ(fi_close(&d1->fid), 0);
  EXPECT_EQ(fi_close(&d0->fid), 0);
  EXPECT_EQ(fi_close(&fabric->fid), 0);
}

TEST(ObjectsLifecycle, NotImplementedYetSaysSo) {
  Opened o;
  ASSERT_NE(o.domain, nullptr);
  fid_ep* ep = nullptr;
  // RDM endpoints exist (M4); they need an AV, and RMA (M3) an enabled endpoint.
  ASSERT_EQ(fi_endpoint(o.domain, o.info.get(), &ep, nullptr), 0);
  EXPECT_EQ(fi_enable(ep), -FI_ENOAV);
  char buf[8] = {};
  EXPECT_EQ(fi_write(ep, buf, sizeof buf, nullptr, 0, 0, 0, nullptr), -FI_EOPBADSTATE);
  EXPECT_EQ(fi_close(&ep->fid), 0);
  fid_ep* sep = nullptr;
  EXPECT_EQ(fi_scalable_ep(o.domain, o.info.get(), &sep, nullptr), -FI_ENOSYS);
  fid_pep* pep = nullptr;
  EXPECT_EQ(fi_passive_ep(o.fabric, o.info.get(), &pep, nullptr), -FI_EINVAL);  // passive endpoints are MSG
  fi_cntr_attr cntr_attr{};
  fid_cntr* cntr = nullptr;
  EXPECT_EQ(fi_cntr_open(o.domain, &cntr_attr, &cntr, nullptr), -FI_ENOSYS);
  fi_cq_attr cq_attr{};
  cq_attr.wait_obj = FI_WAIT_FD;  // no wait objects: waiting is by polling
  fid_cq* cq = nullptr;
  EXPECT_EQ(fi_cq_open(o.domain, &cq_attr, &cq, nullptr), -FI_ENOSYS);
}

TEST(ObjectsLifecycle, CqEmptyReadsAndTimedWait) {
  Opened o;
  ASSERT_NE(o.domain, nullptr);
  fi_cq_attr attr{};
  attr.format = FI_CQ_FORMAT_DATA;
  attr.wait_obj = FI_WAIT_UNSPEC;
  fid_cq* cq = nullptr;
  ASSERT_EQ(fi_cq_open(o.domain, &attr, &cq, nullptr), 0);
  fi_cq_data_entry entry{};
  EXPECT_EQ(fi_cq_read(cq, &entry, 1), -FI_EAGAIN);
  fi_cq_err_entry err{};
  EXPECT_EQ(fi_cq_readerr(cq, &err, 0), -FI_EAGAIN);
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(fi_cq_sread(cq, &entry, 1, nullptr, 30), -FI_EAGAIN);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(30));
  // fi_cq_signal wakes a waiter that would otherwise wait forever.
  std::thread waker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    fi_cq_signal(cq);
  });
  EXPECT_EQ(fi_cq_sread(cq, &entry, 1, nullptr, -1), -FI_EAGAIN);
  waker.join();
  EXPECT_EQ(fi_close(&cq->fid), 0);
}

TEST(ObjectsLifecycle, EqWriteReadPeekAndWait) {
  Opened o;
  ASSERT_NE(o.fabric, nullptr);
  fi_eq_attr attr{};
  attr.wait_obj = FI_WAIT_UNSPEC;
  fid_eq* eq = nullptr;
  ASSERT_EQ(fi_eq_open(o.fabric, &attr, &eq, nullptr), 0);
  uint32_t event = 0;
  fi_eq_entry entry{};
  EXPECT_EQ(fi_eq_read(eq, &event, &entry, sizeof entry, 0), -FI_EAGAIN);
  EXPECT_EQ(fi_eq_sread(eq, &event, &entry, sizeof entry, 20, 0), -FI_EAGAIN);

  int marker = 0;
  fi_eq_entry written{};
  written.fid = &eq->fid;
  written.context = &marker;
  written.data = 0x1234;
  EXPECT_EQ(fi_eq_write(eq, FI_NOTIFY, &written, sizeof written, 0), static_cast<ssize_t>(sizeof written));
  EXPECT_EQ(fi_eq_read(eq, &event, &entry, sizeof entry - 1, 0), -FI_ETOOSMALL);
  EXPECT_EQ(fi_eq_read(eq, &event, &entry, sizeof entry, FI_PEEK), static_cast<ssize_t>(sizeof entry));
  EXPECT_EQ(fi_eq_read(eq, &event, &entry, sizeof entry, 0), static_cast<ssize_t>(sizeof entry));  // still there
  EXPECT_EQ(event, static_cast<uint32_t>(FI_NOTIFY));
  EXPECT_EQ(entry.context, &marker);
  EXPECT_EQ(entry.data, 0x1234u);
  EXPECT_EQ(fi_eq_read(eq, &event, &entry, sizeof entry, 0), -FI_EAGAIN);  // consumed

  // A waiter with no timeout wakes on a write from another thread.
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    fi_eq_write(eq, FI_NOTIFY, &written, sizeof written, 0);
  });
  EXPECT_EQ(fi_eq_sread(eq, &event, &entry, sizeof entry, -1, 0), static_cast<ssize_t>(sizeof entry));
  writer.join();
  fi_eq_err_entry err{};
  EXPECT_EQ(fi_eq_readerr(eq, &err, 0), -FI_EAGAIN);
  EXPECT_EQ(fi_close(&eq->fid), 0);
}

TEST(ObjectsLifecycle, AvInsertLookupRemove) {
  Opened o;
  ASSERT_NE(o.domain, nullptr);
  InfoPtr peer = rdm_info("memloop:1");
  ASSERT_TRUE(peer);
  for (auto type : {FI_AV_MAP, FI_AV_TABLE}) {
    fi_av_attr attr{};
    attr.type = type;
    fid_av* av = nullptr;
    ASSERT_EQ(fi_av_open(o.domain, &attr, &av, nullptr), 0);
    // Two good addresses (this device's and the peer's) and one that is not an mroce address.
    std::vector<uint8_t> addrs(3 * 36);
    std::memcpy(&addrs[0], o.info->src_addr, 36);
    std::memcpy(&addrs[36], peer->src_addr, 36);
    std::memset(&addrs[72], 0xee, 36);
    fi_addr_t fi_addr[3];
    EXPECT_EQ(fi_av_insert(av, addrs.data(), 3, fi_addr, 0, nullptr), 2);
    EXPECT_NE(fi_addr[0], FI_ADDR_NOTAVAIL);
    EXPECT_NE(fi_addr[1], FI_ADDR_NOTAVAIL);
    EXPECT_NE(fi_addr[0], fi_addr[1]);
    EXPECT_EQ(fi_addr[2], FI_ADDR_NOTAVAIL);

    uint8_t back[64];
    size_t len = sizeof back;
    ASSERT_EQ(fi_av_lookup(av, fi_addr[1], back, &len), 0);
    EXPECT_EQ(len, 36u);
    EXPECT_EQ(std::memcmp(back, peer->src_addr, 36), 0);
    len = 8;  // short buffer: truncated copy, full length reported
    ASSERT_EQ(fi_av_lookup(av, fi_addr[1], back, &len), 0);
    EXPECT_EQ(len, 36u);

    char text[128];
    size_t text_len = sizeof text;
    ASSERT_NE(fi_av_straddr(av, peer->src_addr, text, &text_len), nullptr);
    EXPECT_STREQ(text, "fi_mroce://02:00:00:00:00:02/198.18.0.2:4793/ep0");

    EXPECT_EQ(fi_av_remove(av, &fi_addr[1], 1, 0), 0);
    len = sizeof back;
    EXPECT_EQ(fi_av_lookup(av, fi_addr[1], back, &len), -FI_EINVAL);
    EXPECT_EQ(fi_av_remove(av, &fi_addr[1], 1, 0), -FI_EINVAL);  // already gone
    fi_addr_t again = FI_ADDR_NOTAVAIL;
    EXPECT_EQ(fi_av_insert(av, peer->src_addr, 1, &again, 0, nullptr), 1);
    EXPECT_NE(again, fi_addr[1]);  // a stale fi_addr_t never names another entry
    EXPECT_EQ(fi_close(&av->fid), 0);
  }
}

// The ring backend (DPDK builds): EAL, a net_ring pair and two devices in this process; the
// application's thread keeps its CPU affinity (EAL's default --lcores=0 would pin it to CPU 0).
TEST(ObjectsLifecycle, RingBackendOpensAndCloses) {
#ifndef MROCE_FI_TEST_RING
  GTEST_SKIP() << "built without DPDK: no ring backend";
#else
  ASSERT_EQ(setenv("FI_MROCE_PORT", "ring", 1), 0);  // before libfabric's first call in this process
  cpu_set_t before, after;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  Opened o0("ring:0"), o1("ring:1");
  ASSERT_NE(o0.domain, nullptr);
  ASSERT_NE(o1.domain, nullptr);
  ASSERT_EQ(sched_getaffinity(0, sizeof after, &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&before, &after)) << "EAL changed the thread's CPU affinity";
  std::vector<char> buf(4096);
  fid_mr *mr0 = nullptr, *mr1 = nullptr;
  ASSERT_EQ(fi_mr_reg(o0.domain, buf.data(), 2048, FI_REMOTE_WRITE, 0, 0, 0, &mr0, nullptr), 0);
  ASSERT_EQ(fi_mr_reg(o1.domain, buf.data() + 2048, 2048, FI_REMOTE_WRITE, 0, 0, 0, &mr1, nullptr), 0);
  EXPECT_NE(fi_mr_key(mr0), fi_mr_key(mr1));
  fi_cq_attr attr{};
  fid_cq* cq = nullptr;
  ASSERT_EQ(fi_cq_open(o0.domain, &attr, &cq, nullptr), 0);
  fi_cq_entry entry{};
  EXPECT_EQ(fi_cq_read(cq, &entry, 1), -FI_EAGAIN);  // progress runs the DPDK devices
  EXPECT_EQ(fi_close(&cq->fid), 0);
  EXPECT_EQ(fi_close(&mr1->fid), 0);
  EXPECT_EQ(fi_close(&mr0->fid), 0);
  // A second port spec in the same process: the device host is already open on the first one.
  ASSERT_EQ(setenv("FI_MROCE_PORT", "memloop", 1), 0);
  InfoPtr other = rdm_info("memloop:0");
  ASSERT_TRUE(other);
  fid_domain* busy = nullptr;
  EXPECT_EQ(fi_domain(o0.fabric, other.get(), &busy, nullptr), -FI_EBUSY);
#endif
}

// ---- fi.MrKeys ----

std::vector<uint64_t> register_keys(fid_domain* domain, std::vector<char>& buf, size_t n, std::vector<fid_mr*>* mrs) {
  std::vector<uint64_t> keys;
  for (size_t i = 0; i < n; ++i) {
    fid_mr* mr = nullptr;
    // Requested keys are a plain sequence: a provider that honoured them would be predictable.
    if (fi_mr_reg(domain, buf.data() + i * 64, 64, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0xC0DE + i, 0, &mr, nullptr) !=
        0)
      return {};
    keys.push_back(fi_mr_key(mr));
    mrs->push_back(mr);
  }
  return keys;
}

TEST(MrKeys, KeysAreUnpredictable) {
  Opened o;
  ASSERT_NE(o.domain, nullptr);
  EXPECT_EQ(o.info->domain_attr->mr_key_size, 4u);
  EXPECT_NE(o.info->domain_attr->mr_mode & FI_MR_PROV_KEY, 0);
  constexpr size_t kRegions = 64;
  std::vector<char> buf(kRegions * 64);
  std::vector<fid_mr*> mrs;
  std::vector<uint64_t> keys = register_keys(o.domain, buf, kRegions, &mrs);
  ASSERT_EQ(keys.size(), kRegions);

  std::set<uint64_t> distinct(keys.begin(), keys.end());
  EXPECT_EQ(distinct.size(), kRegions) << "keys repeat";
  uint64_t varying = 0;  // bits that differ between keys
  std::set<uint64_t> steps;
  for (size_t i = 0; i < kRegions; ++i) {
    EXPECT_NE(keys[i], 0u);
    EXPECT_LE(keys[i], 0xFFFFFFFFu) << "mr_key_size is 4";
    EXPECT_NE(keys[i], 0xC0DE + i) << "the requested key was used";
    varying |= keys[i] ^ keys[0];
    if (i > 0) steps.insert(keys[i] - keys[i - 1]);
  }
  EXPECT_GT(steps.size(), 1u) << "keys form an arithmetic sequence";
  // 64 random 32-bit keys differ in (almost) every bit position; a counter or a slot index plus a
  // fixed base changes only the low bits.
  EXPECT_GE(std::popcount(varying), 28);
  for (fid_mr* mr : mrs) EXPECT_NE(fi_mr_desc(mr), nullptr);

  // Re-registering the same buffer after closing gives a new key (the old one is never honoured again).
  const uint64_t old_key = keys[0];
  ASSERT_EQ(fi_close(&mrs[0]->fid), 0);
  fid_mr* again = nullptr;
  ASSERT_EQ(fi_mr_reg(o.domain, buf.data(), 64, FI_REMOTE_READ, 0, 0, 0, &again, nullptr), 0);
  EXPECT_NE(fi_mr_key(again), old_key);
  EXPECT_EQ(fi_close(&again->fid), 0);
  for (size_t i = 1; i < mrs.size(); ++i) EXPECT_EQ(fi_close(&mrs[i]->fid), 0);
}

// Each process (and each device) draws its own secret: the same registrations in two processes give
// different keys. A fixed seed would give both children the same key sequence.
TEST(MrKeys, DifferBetweenProcessesAndDevices) {
  auto first_keys = [](const char* domain_name, uint64_t out[4]) {
    Opened o(domain_name);
    if (o.domain == nullptr) return false;
    std::vector<char> buf(4 * 64);
    std::vector<fid_mr*> mrs;
    std::vector<uint64_t> keys = register_keys(o.domain, buf, 4, &mrs);
    for (fid_mr* mr : mrs) fi_close(&mr->fid);
    if (keys.size() != 4) return false;
    std::copy(keys.begin(), keys.end(), out);
    return true;
  };
  uint64_t from_child[2][4] = {};
  for (int c = 0; c < 2; ++c) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      uint64_t keys[4] = {};
      const bool ok = first_keys("memloop:0", keys);
      const bool written = ok && write(fds[1], keys, sizeof keys) == static_cast<ssize_t>(sizeof keys);
      _exit(written ? 0 : 1);
    }
    close(fds[1]);
    ASSERT_EQ(read(fds[0], from_child[c], sizeof from_child[c]), static_cast<ssize_t>(sizeof from_child[c]));
    close(fds[0]);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_NE(std::memcmp(from_child[0], from_child[1], sizeof from_child[0]), 0) << "two processes, same keys";

  uint64_t device0[4] = {}, device1[4] = {};
  ASSERT_TRUE(first_keys("memloop:0", device0));
  ASSERT_TRUE(first_keys("memloop:1", device1));
  EXPECT_NE(std::memcmp(device0, device1, sizeof device0), 0) << "two devices, same keys";
}

TEST(MrKeys, BadRegistrationsRefused) {
  Opened o;
  ASSERT_NE(o.domain, nullptr);
  std::vector<char> buf(256);
  fid_mr* mr = nullptr;
  EXPECT_EQ(fi_mr_reg(o.domain, buf.data(), buf.size(), FI_SEND | (1ULL << 40), 0, 0, 0, &mr, nullptr), -FI_EINVAL);
  EXPECT_EQ(fi_mr_reg(o.domain, buf.data(), buf.size(), FI_SEND, 0, 0, FI_RMA_EVENT, &mr, nullptr), -FI_EBADFLAGS);
  iovec two[2] = {{buf.data(), 128}, {buf.data() + 128, 128}};
  EXPECT_EQ(fi_mr_regv(o.domain, two, 2, FI_SEND, 0, 0, 0, &mr, nullptr), -FI_EINVAL);  // mr_iov_limit 1
  fi_mr_attr attr{};
  attr.mr_iov = two;
  attr.iov_count = 1;
  attr.access = FI_REMOTE_WRITE;
  attr.iface = FI_HMEM_SYSTEM;
  ASSERT_EQ(fi_mr_regattr(o.domain, &attr, 0, &mr), 0);
  EXPECT_NE(fi_mr_key(mr), 0u);
  EXPECT_EQ(fi_close(&mr->fid), 0);
}

}  // namespace
}  // namespace mroce::fi_test
