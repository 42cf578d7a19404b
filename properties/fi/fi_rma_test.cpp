// fi.RmaWriteRead, fi.RmaBadKey and fi.WriteData (DESIGN.md 6.3 M3): fi_write / fi_read /
// fi_writedata on MSG and RDM endpoints between memloop:0 and memloop:1 of one process (or ring:0 and
// ring:1 with FI_MROCE_PORT=ring, fi.RmaOnRing), in virtual-address and offset mode, through the
// public libfabric API only. Every check reads the target's bytes back and counts completions.
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <sys/uio.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "fi_test_util.hpp"

namespace mroce::fi_test {
namespace {

enum class Kind { Msg, Rdm };

std::string domain_name(int index) {
  const char* port = std::getenv("FI_MROCE_PORT");
  return std::string(port != nullptr ? port : "memloop") + ":" + std::to_string(index);
}

InfoPtr rma_info(Kind kind, bool virt, int domain_index) {
  InfoPtr h = mroce_hints();
  h->ep_attr->type = kind == Kind::Msg ? FI_EP_MSG : FI_EP_RDM;
  h->caps = FI_MSG | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
  h->domain_attr->mr_mode = FI_MR_ALLOCATED | FI_MR_PROV_KEY | (virt ? FI_MR_VIRT_ADDR : 0);
  h->domain_attr->name = strdup(domain_name(domain_index).c_str());
  InfoPtr info;
  getinfo(FI_VERSION(1, 17), h.get(), &info);
  return info;
}

int read_event(fid_eq* eq) {
  std::vector<uint8_t> entry(sizeof(fi_eq_cm_entry) + 512);
  uint32_t event = 0;
  const ssize_t n = fi_eq_sread(eq, &event, entry.data(), entry.size(), 2000, 0);
  if (n < 0) return static_cast<int>(n);
  if (event == FI_CONNREQ) fi_freeinfo(reinterpret_cast<fi_eq_cm_entry*>(entry.data())->info);
  return static_cast<int>(event);
}

// Side 0 is the target (memloop:0), side 1 the initiator (memloop:1). MSG: connected endpoints; RDM:
// endpoints with each other's (and their own) names in their AVs.
struct Side {
  InfoPtr info;
  fid_domain* domain = nullptr;
  fid_eq* eq = nullptr;
  fid_av* av = nullptr;
  fid_cq* cq = nullptr;
  fid_ep* ep = nullptr;
  fi_addr_t peer = FI_ADDR_UNSPEC;  // RDM: the other side in this side's AV
  fi_addr_t self = FI_ADDR_UNSPEC;  // RDM: this side's own endpoint
};

struct Rig {
  Kind kind;
  bool virt;
  fid_fabric* fabric = nullptr;
  fid_pep* pep = nullptr;
  fid_eq* pep_eq = nullptr;
  Side side[2];
  std::string failed;
  std::vector<fid_mr*> mrs;

  Rig(Kind k, bool virtual_addresses, uint64_t initiator_cq_flags = 0) : kind(k), virt(virtual_addresses) {
    open(initiator_cq_flags);
  }

  void fail(const char* step, int r = 0) {
    if (failed.empty()) failed = std::string(step) + ": " + fi_strerror(-r);
  }
  bool ready() const { return failed.empty(); }

  void open(uint64_t initiator_cq_flags) {
    for (int i = 0; i < 2; ++i) {
      side[i].info = rma_info(kind, virt, i);
      if (!side[i].info) return fail("fi_getinfo");
      // The entry says which addressing the provider took: as asked.
      if (((side[i].info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0) != virt) return fail("mr_mode");
    }
    if (int r = fi_fabric(side[0].info->fabric_attr, &fabric, nullptr)) return fail("fi_fabric", r);
    for (int i = 0; i < 2; ++i) {
      Side& s = side[i];
      if (int r = fi_domain(fabric, s.info.get(), &s.domain, nullptr)) return fail("fi_domain", r);
      fi_cq_attr cq_attr{};
      cq_attr.format = FI_CQ_FORMAT_DATA;
      if (int r = fi_cq_open(s.domain, &cq_attr, &s.cq, nullptr)) return fail("fi_cq_open", r);
    }
    if (kind == Kind::Rdm)
      open_rdm(initiator_cq_flags);
    else
      open_msg(initiator_cq_flags);
  }

  int bind(Side& s, uint64_t cq_flags) {
    if (s.eq) {
      if (int r = fi_ep_bind(s.ep, &s.eq->fid, 0)) return r;
    }
    if (s.av) {
      if (int r = fi_ep_bind(s.ep, &s.av->fid, 0)) return r;
    }
    if (int r = fi_ep_bind(s.ep, &s.cq->fid, FI_TRANSMIT | FI_RECV | cq_flags)) return r;
    return fi_enable(s.ep);
  }

  void open_rdm(uint64_t initiator_cq_flags) {
    std::vector<uint8_t> names[2];
    for (int i = 0; i < 2; ++i) {
      Side& s = side[i];
      fi_av_attr av_attr{};
      av_attr.type = FI_AV_MAP;
      if (int r = fi_av_open(s.domain, &av_attr, &s.av, nullptr)) return fail("fi_av_open", r);
      if (int r = fi_endpoint(s.domain, s.info.get(), &s.ep, nullptr)) return fail("fi_endpoint", r);
      if (int r = bind(s, i == 1 ? initiator_cq_flags : 0)) return fail("bind/enable", r);
      names[i].resize(64);
      size_t len = 64;
      if (int r = fi_getname(&s.ep->fid, names[i].data(), &len)) return fail("fi_getname", r);
      names[i].resize(len);
    }
    for (int i = 0; i < 2; ++i) {
      if (fi_av_insert(side[i].av, names[1 - i].data(), 1, &side[i].peer, 0, nullptr) != 1) return fail("av");
      if (fi_av_insert(side[i].av, names[i].data(), 1, &side[i].self, 0, nullptr) != 1) return fail("av");
    }
  }

  void open_msg(uint64_t initiator_cq_flags) {
    fi_eq_attr eq_attr{};
    for (Side& s : side)
      if (int r = fi_eq_open(fabric, &eq_attr, &s.eq, nullptr)) return fail("fi_eq_open", r);
    if (int r = fi_eq_open(fabric, &eq_attr, &pep_eq, nullptr)) return fail("fi_eq_open", r);
    if (int r = fi_passive_ep(fabric, side[0].info.get(), &pep, nullptr)) return fail("fi_passive_ep", r);
    if (int r = fi_pep_bind(pep, &pep_eq->fid, 0)) return fail("fi_pep_bind", r);
    if (int r = fi_listen(pep)) return fail("fi_listen", r);
    Side& c = side[1];
    if (int r = fi_endpoint(c.domain, c.info.get(), &c.ep, nullptr)) return fail("fi_endpoint", r);
    if (int r = bind(c, initiator_cq_flags)) return fail("bind/enable", r);
    std::vector<uint8_t> name(64);
    size_t len = name.size();
    fi_getname(&pep->fid, name.data(), &len);
    if (int r = fi_connect(c.ep, name.data(), nullptr, 0)) return fail("fi_connect", r);
    std::vector<uint8_t> entry(sizeof(fi_eq_cm_entry) + 512);
    uint32_t event = 0;
    if (fi_eq_sread(pep_eq, &event, entry.data(), entry.size(), 2000, 0) < 0 || event != FI_CONNREQ)
      return fail("FI_CONNREQ");
    fi_info* req = reinterpret_cast<fi_eq_cm_entry*>(entry.data())->info;
    Side& t = side[0];
    const int opened = fi_endpoint(t.domain, req, &t.ep, nullptr);
    fi_freeinfo(req);
    if (opened != 0) return fail("fi_endpoint(accept)", opened);
    if (int r = bind(t, 0)) return fail("bind/enable", r);
    if (int r = fi_accept(t.ep, nullptr, 0)) return fail("fi_accept", r);
    if (read_event(t.eq) != FI_CONNECTED || read_event(c.eq) != FI_CONNECTED) return fail("FI_CONNECTED");
  }

  // Registers `len` bytes at `buf` on side `i`; its key, and the remote address of byte 0.
  fid_mr* reg(int i, void* buf, size_t len, uint64_t access, uint64_t* key, uint64_t* base) {
    fid_mr* mr = nullptr;
    if (int r = fi_mr_reg(side[i].domain, buf, len, access, 0, 0, 0, &mr, nullptr)) {
      fail("fi_mr_reg", r);
      return nullptr;
    }
    mrs.push_back(mr);
    *key = fi_mr_key(mr);
    *base = virt ? reinterpret_cast<uint64_t>(buf) : 0;
    return mr;
  }

  fid_ep* ep(int i) { return side[i].ep; }
  fid_cq* cq(int i) { return side[i].cq; }
  fi_addr_t peer(int i) { return side[i].peer; }

  ~Rig() {
    for (Side& s : side)
      if (s.ep) { EXPECT_EQ(fi_close(&s.ep->fid), 0); }
    for (fid_mr* mr : mrs) EXPECT_EQ(fi_close(&mr->fid), 0);
    if (pep) { EXPECT_EQ(fi_close(&pep->fid), 0); }
    if (pep_eq) { EXPECT_EQ(fi_close(&pep_eq->fid), 0); }
    for (Side& s : side) {
      if (s.cq) { EXPECT_EQ(fi_close(&s.cq->fid), 0); }
      if (s.av) { EXPECT_EQ(fi_close(&s.av->fid), 0); }
      if (s.eq) { EXPECT_EQ(fi_close(&s.eq->fid), 0); }
      if (s.domain) { EXPECT_EQ(fi_close(&s.domain->fid), 0); }
    }
    if (fabric) { EXPECT_EQ(fi_close(&fabric->fid), 0); }
  }
};

// Polls both sides (manual progress: the target must move too) until `cq` has an entry: 1, or
// -FI_EAVAIL (an error entry), or -FI_EAGAIN after `seconds`.
int wait_cq(Rig& rig, fid_cq* cq, fi_cq_data_entry* e, fi_addr_t* src = nullptr, int seconds = 10) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  fi_addr_t ignored = FI_ADDR_NOTAVAIL;
  for (;;) {
    const ssize_t n = fi_cq_readfrom(cq, e, 1, src != nullptr ? src : &ignored);
    if (n != -FI_EAGAIN || std::chrono::steady_clock::now() > deadline) return static_cast<int>(n);
    fi_cq_data_entry other{};
    fid_cq* peer_cq = cq == rig.cq(0) ? rig.cq(1) : rig.cq(0);
    (void)fi_cq_read(peer_cq, &other, 0);  // progress only: reading 0 entries takes none
  }
}

fi_cq_err_entry read_error(fid_cq* cq) {
  fi_cq_err_entry e{};
  EXPECT_EQ(fi_cq_readerr(cq, &e, 0), 1);
  return e;
}

void expect_empty(Rig& rig, fid_cq* cq) {
  fi_cq_data_entry e{};
  EXPECT_EQ(wait_cq(rig, cq, &e, nullptr, 0), -FI_EAGAIN) << "unexpected completion, flags " << e.flags;
}

// One local iov and one remote one.
fi_msg_rma rma_msg(const iovec* iov, const fi_rma_iov* rma, fi_addr_t peer, void* context) {
  fi_msg_rma msg{};
  msg.msg_iov = iov;
  msg.iov_count = 1;
  msg.addr = peer;
  msg.rma_iov = rma;
  msg.rma_iov_count = 1;
  msg.context = context;
  return msg;
}

// Posts until the call is taken (-FI_EAGAIN: progress both sides and retry).
template <class Post>
ssize_t retry(Rig& rig, Post post) {
  for (int i = 0; i < 100000; ++i) {
    const ssize_t r = post();
    if (r != -FI_EAGAIN) return r;
    fi_cq_data_entry e{};
    (void)fi_cq_read(rig.cq(0), &e, 0);
  }
  return -FI_EAGAIN;
}

constexpr size_t kRegion = (16u << 20) + 64;  // the largest transfer, with room for an offset

// Writes then reads back every size from 1 B to 16 MiB at odd offsets of the target's region; the
// bytes around each transfer stay untouched.
void write_read_sizes(Kind kind, bool virt) {
  Rig rig(kind, virt);
  ASSERT_TRUE(rig.ready()) << rig.failed;
  std::vector<uint8_t> target(kRegion, 0xEE);
  uint64_t key = 0, base = 0;
  ASSERT_NE(rig.reg(0, target.data(), target.size(), FI_REMOTE_READ | FI_REMOTE_WRITE, &key, &base), nullptr);
  uint32_t seed = 1;
  for (size_t len : {size_t{1}, size_t{7}, size_t{256}, size_t{4096}, size_t{65536}, size_t{65537}, size_t{1} << 20,
                     size_t{16} << 20}) {
    SCOPED_TRACE("length " + std::to_string(len));
    const size_t offset = len < (16u << 20) ? 13 : 32;
    const std::vector<uint8_t> data = pattern(len, seed++);
    int ctx_w = 0, ctx_r = 0;
    ASSERT_EQ(fi_write(rig.ep(1), data.data(), len, nullptr, rig.peer(1), base + offset, key, &ctx_w), 0);
    fi_cq_data_entry e{};
    ASSERT_EQ(wait_cq(rig, rig.cq(1), &e), 1);
    EXPECT_EQ(e.op_context, &ctx_w);
    EXPECT_EQ(e.flags, FI_RMA | FI_WRITE);
    EXPECT_TRUE(std::memcmp(target.data() + offset, data.data(), len) == 0);
    EXPECT_EQ(target[offset - 1], 0xEE);
    EXPECT_EQ(target[offset + len], 0xEE);
    std::vector<uint8_t> back(len + 1, 0x11);
    ASSERT_EQ(fi_read(rig.ep(1), back.data(), len, nullptr, rig.peer(1), base + offset, key, &ctx_r), 0);
    ASSERT_EQ(wait_cq(rig, rig.cq(1), &e), 1);
    EXPECT_EQ(e.op_context, &ctx_r);
    EXPECT_EQ(e.flags, FI_RMA | FI_READ);
    EXPECT_TRUE(std::memcmp(back.data(), data.data(), len) == 0);
    EXPECT_EQ(back[len], 0x11);  // nothing beyond the length
    std::fill(target.begin() + offset, target.begin() + offset + len, 0xEE);
  }
  expect_empty(rig, rig.cq(0));  // plain writes and reads raise nothing at the target
  expect_empty(rig, rig.cq(1));
}

// 200 writes of 4 KiB (each its own slot) in flight at once, then 200 reads: every operation
// completes exactly once, every byte lands.
void many_in_flight(Kind kind, bool virt) {
  Rig rig(kind, virt);
  ASSERT_TRUE(rig.ready()) << rig.failed;
  constexpr size_t kOps = 200, kLen = 4096;
  std::vector<uint8_t> target(kOps * kLen, 0);
  uint64_t key = 0, base = 0;
  ASSERT_NE(rig.reg(0, target.data(), target.size(), FI_REMOTE_READ | FI_REMOTE_WRITE, &key, &base), nullptr);
  const std::vector<uint8_t> data = pattern(kOps * kLen, 77);
  std::vector<uint8_t> back(kOps * kLen, 0);
  for (bool write : {true, false}) {
    std::vector<int> contexts(kOps, 0);
    for (size_t i = 0; i < kOps; ++i) {
      const ssize_t r = retry(rig, [&] {
        return write ? fi_write(rig.ep(1), data.data() + i * kLen, kLen, nullptr, rig.peer(1), base + i * kLen, key,
                                &contexts[i])
                     : fi_read(rig.ep(1), back.data() + i * kLen, kLen, nullptr, rig.peer(1), base + i * kLen, key,
                               &contexts[i]);
      });
      ASSERT_EQ(r, 0) << "operation " << i;
    }
    for (size_t n = 0; n < kOps; ++n) {
      fi_cq_data_entry e{};
      ASSERT_EQ(wait_cq(rig, rig.cq(1), &e), 1) << n << " completions";
      EXPECT_EQ(e.flags, FI_RMA | (write ? FI_WRITE : FI_READ));
      ++*static_cast<int*>(e.op_context);
    }
    for (size_t i = 0; i < kOps; ++i) EXPECT_EQ(contexts[i], 1) << "operation " << i;
  }
  EXPECT_TRUE(target == data);
  EXPECT_TRUE(back == data);
  expect_empty(rig, rig.cq(1));
}

// ---- fi.RmaWriteRead ----

TEST(RmaWriteRead, MsgVirtualAddressesOneByteTo16MiB) { write_read_sizes(Kind::Msg, true); }
TEST(RmaWriteRead, MsgOffsetsOneByteTo16MiB) { write_read_sizes(Kind::Msg, false); }
TEST(RmaWriteRead, RdmVirtualAddressesOneByteTo16MiB) { write_read_sizes(Kind::Rdm, true); }
TEST(RmaWriteRead, RdmOffsetsOneByteTo16MiB) { write_read_sizes(Kind::Rdm, false); }
TEST(RmaWriteRead, MsgManyInFlight) { many_in_flight(Kind::Msg, true); }
TEST(RmaWriteRead, RdmManyInFlightFromFirstUse) { many_in_flight(Kind::Rdm, false); }

TEST(RmaWriteRead, VectorMsgAndInjectCalls) {
  for (Kind kind : {Kind::Msg, Kind::Rdm}) {
    SCOPED_TRACE(kind == Kind::Msg ? "msg" : "rdm");
    Rig rig(kind, true);
    ASSERT_TRUE(rig.ready()) << rig.failed;
    std::vector<uint8_t> target(1024, 0);
    uint64_t key = 0, base = 0;
    ASSERT_NE(rig.reg(0, target.data(), target.size(), FI_REMOTE_READ | FI_REMOTE_WRITE, &key, &base), nullptr);
    fi_cq_data_entry e{};
    // writev
    std::vector<uint8_t> a = pattern(100, 1);
    iovec iov{a.data(), a.size()};
    int c1 = 0;
    ASSERT_EQ(fi_writev(rig.ep(1), &iov, nullptr, 1, rig.peer(1), base, key, &c1), 0);
    ASSERT_EQ(wait_cq(rig, rig.cq(1), &e), 1);
    EXPECT_EQ(e.op_context, &c1);
    EXPECT_TRUE(std::memcmp(target.data(), a.data(), a.size()) == 0);
    // fi_inject_write: the buffer may change at once; no completion
    std::vector<uint8_t> b = pattern(200, 2);
    std::vector<uint8_t> b_copy = b;
    ASSERT_EQ(fi_inject_write(rig.ep(1), b.data(), b.size(), rig.peer(1), base + 200, key), 0);
    std::fill(b.begin(), b.end(), 0);
    EXPECT_EQ(fi_inject_write(rig.ep(1), b.data(), 257, rig.peer(1), base, key), -FI_EMSGSIZE);  // inject_size 256
    // writemsg + readmsg, whose read follows the inject on the same ordered path
    std::vector<uint8_t> c = pattern(300, 3);
    iovec wiov{c.data(), c.size()};
    fi_rma_iov rma{base + 500, c.size(), key};
    int c2 = 0, c3 = 0;
    fi_msg_rma msg = rma_msg(&wiov, &rma, rig.peer(1), &c2);
    ASSERT_EQ(fi_writemsg(rig.ep(1), &msg, FI_COMPLETION), 0);
    ASSERT_EQ(wait_cq(rig, rig.cq(1), &e), 1);
    EXPECT_EQ(e.op_context, &c2);
    std::vector<uint8_t> back(800, 0);
    iovec riov{back.data(), back.size()};
    fi_rma_iov whole{base, back.size(), key};
    msg.msg_iov = &riov;
    msg.rma_iov = &whole;
    msg.context = &c3;
    ASSERT_EQ(fi_readmsg(rig.ep(1), &msg, 0), 0);
    ASSERT_EQ(wait_cq(rig, rig.cq(1), &e), 1);
    EXPECT_EQ(e.op_context, &c3);
    EXPECT_EQ(e.flags, FI_RMA | FI_READ);
    EXPECT_TRUE(std::memcmp(back.data(), a.data(), a.size()) == 0);
    EXPECT_TRUE(std::memcmp(back.data() + 200, b_copy.data(), b_copy.size()) == 0);
    EXPECT_TRUE(std::memcmp(back.data() + 500, c.data(), c.size()) == 0);
    // readv into two iovs: refused (rma_iov_limit 1); lengths that disagree: refused
    iovec two[2] = {{back.data(), 10}, {back.data() + 10, 10}};
    EXPECT_EQ(fi_readv(rig.ep(1), two, nullptr, 2, rig.peer(1), base, key, nullptr), -FI_EINVAL);
    fi_rma_iov shorter{base, 10, key};
    msg.rma_iov = &shorter;
    EXPECT_EQ(fi_readmsg(rig.ep(1), &msg, 0), -FI_EINVAL);
    EXPECT_EQ(fi_writemsg(rig.ep(1), &msg, FI_ATOMIC), -FI_EBADFLAGS);
    expect_empty(rig, rig.cq(1));
    expect_empty(rig, rig.cq(0));
  }
}

TEST(RmaWriteRead, SelectiveCompletion) {
  for (Kind kind : {Kind::Msg, Kind::Rdm}) {
    SCOPED_TRACE(kind == Kind::Msg ? "msg" : "rdm");
    Rig rig(kind, true, FI_SELECTIVE_COMPLETION);
    ASSERT_TRUE(rig.ready()) << rig.failed;
    std::vector<uint8_t> target(64, 0);
    uint64_t key = 0, base = 0;
    ASSERT_NE(rig.reg(0, target.data(), target.size(), FI_REMOTE_READ | FI_REMOTE_WRITE, &key, &base), nullptr);
    const char text[] = "selective";
    ASSERT_EQ(fi_write(rig.ep(1), text, sizeof text, nullptr, rig.peer(1), base, key, nullptr), 0);  // silent
    char back[sizeof text] = {};
    iovec riov{back, sizeof back};
    fi_rma_iov rma{base, sizeof back, key};
    fi_msg_rma msg = rma_msg(&riov, &rma, rig.peer(1), back);
    ASSERT_EQ(fi_readmsg(rig.ep(1), &msg, FI_COMPLETION), 0);
    fi_cq_data_entry e{};
    ASSERT_EQ(wait_cq(rig, rig.cq(1), &e), 1);
    EXPECT_EQ(e.op_context, back);  // the only entry: the write before it reported nothing
    EXPECT_STREQ(back, text);
    // A failure reports even when not asked to.
    ASSERT_EQ(fi_write(rig.ep(1), text, sizeof text, nullptr, rig.peer(1), base, key ^ 0x5a5a5a5a, nullptr), 0);
    ASSERT_EQ(wait_cq(rig, rig.cq(1), &e), -FI_EAVAIL);
    EXPECT_EQ(read_error(rig.cq(1)).err, FI_EACCES);
    expect_empty(rig, rig.cq(1));
  }
}

// Zero bytes are an operation too: each completes once.
TEST(RmaWriteRead, ZeroLength) {
  for (Kind kind : {Kind::Msg, Kind::Rdm}) {
    SCOPED_TRACE(kind == Kind::Msg ? "msg" : "rdm");
    Rig rig(kind, kind == Kind::Msg);
    ASSERT_TRUE(rig.ready()) << rig.failed;
    std::vector<uint8_t> target(16, 0x5);
    uint64_t key = 0, base = 0;
    ASSERT_NE(rig.reg(0, target.data(), target.size(), FI_REMOTE_READ | FI_REMOTE_WRITE, &key, &base), nullptr);
    int cw = 0, cr = 0;
    ASSERT_EQ(fi_write(rig.ep(1), nullptr, 0, nullptr, rig.peer(1), base + 4, key, &cw), 0);
    ASSERT_EQ(fi_read(rig.ep(1), nullptr, 0, nullptr, rig.peer(1), base + 4, key, &cr), 0);
    fi_cq_data_entry e{};
    ASSERT_EQ(wait_cq(rig, rig.cq(1), &e), 1);
    EXPECT_EQ(e.op_context, &cw);
    ASSERT_EQ(wait_cq(rig, rig.cq(1), &e), 1);
    EXPECT_EQ(e.op_context, &cr);
    EXPECT_TRUE(std::all_of(target.begin(), target.end(), [](uint8_t b) { return b == 0x5; }));
    expect_empty(rig, rig.cq(1));
  }
}

// RDM: RMA queued for a connection that is refused (no such endpoint id) fails with an error entry.
TEST(RmaWriteRead, RdmNoSuchEndpointFailsTheOperations) {
  Rig rig(Kind::Rdm, true);
  ASSERT_TRUE(rig.ready()) << rig.failed;
  std::vector<uint8_t> name(64);
  size_t len = name.size();
  ASSERT_EQ(fi_getname(&rig.ep(0)->fid, name.data(), &len), 0);
  name[7] ^= 0x40;  // the endpoint id (bytes 4..7, big-endian): one nobody has
  fi_addr_t nobody = FI_ADDR_UNSPEC;
  ASSERT_EQ(fi_av_insert(rig.side[1].av, name.data(), 1, &nobody, 0, nullptr), 1);
  char buf[8] = {};
  int c1 = 0, c2 = 0;
  ASSERT_EQ(fi_write(rig.ep(1), buf, sizeof buf, nullptr, nobody, 0, 1, &c1), 0);
  ASSERT_EQ(fi_read(rig.ep(1), buf, sizeof buf, nullptr, nobody, 0, 1, &c2), 0);
  for (int* c : {&c1, &c2}) {
    fi_cq_data_entry e{};
    ASSERT_EQ(wait_cq(rig, rig.cq(1), &e), -FI_EAVAIL);
    const fi_cq_err_entry err = read_error(rig.cq(1));
    EXPECT_EQ(err.err, FI_ECONNREFUSED);
    EXPECT_EQ(err.op_context, c);
  }
  expect_empty(rig, rig.cq(1));
}

// RDM: RMA to the endpoint's own address goes through the provider's MR table.
TEST(RmaWriteRead, RdmSelf) {
  Rig rig(Kind::Rdm, true);
  ASSERT_TRUE(rig.ready()) << rig.failed;
  std::vector<uint8_t> target(1 << 20, 0);
  uint64_t key = 0, base = 0;
  ASSERT_NE(rig.reg(1, target.data(), target.size(), FI_REMOTE_READ | FI_REMOTE_WRITE, &key, &base), nullptr);
  const std::vector<uint8_t> data = pattern(target.size() - 8, 5);
  const fi_addr_t self = rig.side[1].self;
  ASSERT_EQ(fi_write(rig.ep(1), data.data(), data.size(), nullptr, self, base + 8, key, nullptr), 0);
  fi_cq_data_entry e{};
  ASSERT_EQ(wait_cq(rig, rig.cq(1), &e), 1);
  EXPECT_EQ(e.flags, FI_RMA | FI_WRITE);
  EXPECT_TRUE(std::memcmp(target.data() + 8, data.data(), data.size()) == 0);
  std::vector<uint8_t> back(data.size());
  ASSERT_EQ(fi_read(rig.ep(1), back.data(), back.size(), nullptr, self, base + 8, key, nullptr), 0);
  ASSERT_EQ(wait_cq(rig, rig.cq(1), &e), 1);
  EXPECT_EQ(e.flags, FI_RMA | FI_READ);
  EXPECT_TRUE(back == data);
  // Checked as the engine checks: one byte past the end, a wrong key.
  ASSERT_EQ(fi_read(rig.ep(1), back.data(), 9, nullptr, self, base + target.size() - 8, key, nullptr), 0);
  ASSERT_EQ(wait_cq(rig, rig.cq(1), &e), -FI_EAVAIL);
  EXPECT_EQ(read_error(rig.cq(1)).err, FI_EACCES);
  ASSERT_EQ(fi_write(rig.ep(1), data.data(), 8, nullptr, self, base, key + 1, nullptr), 0);
  ASSERT_EQ(wait_cq(rig, rig.cq(1), &e), -FI_EAVAIL);
  EXPECT_EQ(read_error(rig.cq(1)).err, FI_EACCES);
  expect_empty(rig, rig.cq(1));
}

// ---- fi.RmaBadKey ----

// A wrong key, a range past the region's end (and before its start), and a missing right each give
// an FI_EACCES error entry with the engine's status; the connection still works afterwards.
void bad_accesses(Kind kind, bool virt) {
  Rig rig(kind, virt);
  ASSERT_TRUE(rig.ready()) << rig.failed;
  std::vector<uint8_t> rw(4096, 0), ro(4096, 0x33), wo(4096, 0);
  uint64_t key = 0, base = 0, ro_key = 0, ro_base = 0, wo_key = 0, wo_base = 0;
  ASSERT_NE(rig.reg(0, rw.data(), rw.size(), FI_REMOTE_READ | FI_REMOTE_WRITE, &key, &base), nullptr);
  ASSERT_NE(rig.reg(0, ro.data(), ro.size(), FI_REMOTE_READ, &ro_key, &ro_base), nullptr);
  ASSERT_NE(rig.reg(0, wo.data(), wo.size(), FI_REMOTE_WRITE, &wo_key, &wo_base), nullptr);
  std::vector<uint8_t> buf = pattern(64, 9);
  struct Case {
    const char* what;
    bool write;
    uint64_t addr, key;
    size_t len;
  };
  const Case cases[] = {
      {"wrong key", true, base, key ^ 0x5a5a5a5a, 16},
      {"key wider than 32 bits", false, base, key | (uint64_t{1} << 40), 16},
      {"past the end", true, base + 4096 - 8, key, 16},
      {"past the end (read)", false, base + 4090, key, 16},
      {"before the start", false, base - 1, key, 4},
      {"write to a read-only region", true, ro_base, ro_key, 16},
      {"read from a write-only region", false, wo_base, wo_key, 16},
  };
  int contexts[std::size(cases)] = {};
  for (size_t i = 0; i < std::size(cases); ++i) {
    const Case& c = cases[i];
    SCOPED_TRACE(c.what);
    const ssize_t r = c.write
                          ? fi_write(rig.ep(1), buf.data(), c.len, nullptr, rig.peer(1), c.addr, c.key, &contexts[i])
                          : fi_read(rig.ep(1), buf.data(), c.len, nullptr, rig.peer(1), c.addr, c.key, &contexts[i]);
    ASSERT_EQ(r, 0);
    fi_cq_data_entry e{};
    ASSERT_EQ(wait_cq(rig, rig.cq(1), &e), -FI_EAVAIL);
    fi_cq_err_entry err{};
    ASSERT_EQ(fi_cq_readerr(rig.cq(1), &err, 0), 1);
    EXPECT_EQ(err.err, FI_EACCES);
    EXPECT_EQ(err.op_context, &contexts[i]);
    EXPECT_EQ(err.flags, FI_RMA | (c.write ? FI_WRITE : FI_READ));
    EXPECT_NE(err.prov_errno, 0);
    const char* text = fi_cq_strerror(rig.cq(1), err.prov_errno, err.err_data, nullptr, 0);
    ASSERT_NE(text, nullptr);
    EXPECT_STRNE(text, "");
  }
  EXPECT_TRUE(std::all_of(ro.begin(), ro.end(), [](uint8_t b) { return b == 0x33; }));
  EXPECT_TRUE(std::all_of(rw.begin(), rw.end(), [](uint8_t b) { return b == 0; }));
  // Still usable: a good write and read through the same endpoints.
  ASSERT_EQ(fi_write(rig.ep(1), buf.data(), 64, nullptr, rig.peer(1), base, key, nullptr), 0);
  fi_cq_data_entry e{};
  ASSERT_EQ(wait_cq(rig, rig.cq(1), &e), 1);
  EXPECT_TRUE(std::memcmp(rw.data(), buf.data(), 64) == 0);
  std::vector<uint8_t> back(64);
  ASSERT_EQ(fi_read(rig.ep(1), back.data(), 64, nullptr, rig.peer(1), ro_base, ro_key, nullptr), 0);
  ASSERT_EQ(wait_cq(rig, rig.cq(1), &e), 1);
  EXPECT_TRUE(std::all_of(back.begin(), back.end(), [](uint8_t b) { return b == 0x33; }));
  expect_empty(rig, rig.cq(1));
  expect_empty(rig, rig.cq(0));
}

TEST(RmaBadKey, MsgVirtualAddresses) { bad_accesses(Kind::Msg, true); }
TEST(RmaBadKey, MsgOffsets) { bad_accesses(Kind::Msg, false); }
TEST(RmaBadKey, RdmVirtualAddresses) { bad_accesses(Kind::Rdm, true); }
TEST(RmaBadKey, RdmOffsets) { bad_accesses(Kind::Rdm, false); }

TEST(RmaBadKey, ClosedRegionKeyRefused) {
  Rig rig(Kind::Msg, true);
  ASSERT_TRUE(rig.ready()) << rig.failed;
  std::vector<uint8_t> target(256, 0);
  fid_mr* mr = nullptr;
  ASSERT_EQ(fi_mr_reg(rig.side[0].domain, target.data(), target.size(), FI_REMOTE_WRITE, 0, 0, 0, &mr, nullptr), 0);
  const uint64_t key = fi_mr_key(mr);
  ASSERT_EQ(fi_close(&mr->fid), 0);
  ASSERT_EQ(fi_write(rig.ep(1), "x", 1, nullptr, 0, reinterpret_cast<uint64_t>(target.data()), key, nullptr), 0);
  fi_cq_data_entry e{};
  ASSERT_EQ(wait_cq(rig, rig.cq(1), &e), -FI_EAVAIL);
  EXPECT_EQ(read_error(rig.cq(1)).err, FI_EACCES);
  EXPECT_EQ(target[0], 0);
}

// ---- fi.WriteData ----

// fi_writedata, fi_inject_writedata and fi_writemsg(FI_REMOTE_CQ_DATA): the target's receive CQ
// reports FI_RMA|FI_REMOTE_WRITE|FI_REMOTE_CQ_DATA with the 32-bit data once the bytes are there,
// without taking a posted receive; its order with messages on the ordered stream holds.
void write_data(Kind kind, bool virt) {
  Rig rig(kind, virt);
  ASSERT_TRUE(rig.ready()) << rig.failed;
  std::vector<uint8_t> target(1 << 20, 0);
  uint64_t key = 0, base = 0;
  ASSERT_NE(rig.reg(0, target.data(), target.size(), FI_REMOTE_WRITE, &key, &base), nullptr);
  char posted[32] = {};
  ASSERT_EQ(fi_recv(rig.ep(0), posted, sizeof posted, nullptr, FI_ADDR_UNSPEC, posted), 0);
  const std::vector<uint8_t> big = pattern(target.size(), 11);
  int c1 = 0;
  ASSERT_EQ(fi_writedata(rig.ep(1), big.data(), big.size(), nullptr, 0xdeadbeef, rig.peer(1), base, key, &c1), 0);
  fi_cq_data_entry e{};
  fi_addr_t src = FI_ADDR_UNSPEC;
  ASSERT_EQ(wait_cq(rig, rig.cq(0), &e, &src), 1);
  EXPECT_EQ(e.flags, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA);
  EXPECT_EQ(e.data, 0xdeadbeefu);
  EXPECT_TRUE(target == big);  // placed before the target heard of it
  if (kind == Kind::Rdm) { EXPECT_EQ(src, rig.peer(0)); }
  ASSERT_EQ(wait_cq(rig, rig.cq(1), &e), 1);
  EXPECT_EQ(e.op_context, &c1);
  EXPECT_EQ(e.flags, FI_RMA | FI_WRITE);
  // Inject with data, then a message: the message arrives after the data's entry, into the receive
  // posted at the start (not consumed by the writes).
  const char small[] = "injected";
  ASSERT_EQ(fi_inject_writedata(rig.ep(1), small, sizeof small, 7, rig.peer(1), base + 100, key), 0);
  ASSERT_EQ(fi_send(rig.ep(1), "after", 5, nullptr, rig.peer(1), nullptr), 0);
  ASSERT_EQ(wait_cq(rig, rig.cq(0), &e), 1);
  EXPECT_EQ(e.flags, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA);
  EXPECT_EQ(e.data, 7u);
  EXPECT_STREQ(reinterpret_cast<const char*>(target.data() + 100), small);
  ASSERT_EQ(wait_cq(rig, rig.cq(0), &e), 1);
  EXPECT_EQ(e.op_context, posted);
  EXPECT_EQ(std::string(posted, e.len), "after");
  ASSERT_EQ(wait_cq(rig, rig.cq(1), &e), 1);  // the send's completion (the inject has none)
  EXPECT_EQ(e.flags, FI_MSG | FI_SEND);
  // writemsg with FI_REMOTE_CQ_DATA; data wider than cq_data_size 4 is refused.
  std::vector<uint8_t> c = pattern(5000, 12);
  iovec iov{c.data(), c.size()};
  fi_rma_iov rma{base + 4096, c.size(), key};
  fi_msg_rma msg = rma_msg(&iov, &rma, rig.peer(1), nullptr);
  msg.data = 0x12345678;
  ASSERT_EQ(fi_writemsg(rig.ep(1), &msg, FI_REMOTE_CQ_DATA | FI_COMPLETION), 0);
  ASSERT_EQ(wait_cq(rig, rig.cq(0), &e), 1);
  EXPECT_EQ(e.data, 0x12345678u);
  EXPECT_TRUE(std::memcmp(target.data() + 4096, c.data(), c.size()) == 0);
  ASSERT_EQ(wait_cq(rig, rig.cq(1), &e), 1);
  EXPECT_EQ(e.flags, FI_RMA | FI_WRITE);
  EXPECT_EQ(fi_writedata(rig.ep(1), c.data(), 8, nullptr, uint64_t{1} << 32, rig.peer(1), base, key, nullptr),
            -FI_EINVAL);
  // A refused writedata raises nothing at the target.
  ASSERT_EQ(fi_writedata(rig.ep(1), c.data(), 8, nullptr, 5, rig.peer(1), base, key ^ 0x5a5a5a5a, nullptr), 0);
  ASSERT_EQ(wait_cq(rig, rig.cq(1), &e), -FI_EAVAIL);
  EXPECT_EQ(read_error(rig.cq(1)).err, FI_EACCES);
  expect_empty(rig, rig.cq(0));
  expect_empty(rig, rig.cq(1));
}

TEST(WriteData, MsgVirtualAddresses) { write_data(Kind::Msg, true); }
TEST(WriteData, MsgOffsets) { write_data(Kind::Msg, false); }
TEST(WriteData, RdmVirtualAddresses) { write_data(Kind::Rdm, true); }
TEST(WriteData, RdmOffsets) { write_data(Kind::Rdm, false); }

// More writedata than the target has bounce receives (16), none read in between: the credits hold
// the rest back until the target's progress returns them; every one is reported once, in order.
TEST(WriteData, ManyBeyondTheCredits) {
  for (Kind kind : {Kind::Msg, Kind::Rdm}) {
    SCOPED_TRACE(kind == Kind::Msg ? "msg" : "rdm");
    Rig rig(kind, true);
    ASSERT_TRUE(rig.ready()) << rig.failed;
    std::vector<uint32_t> target(100, 0);
    uint64_t key = 0, base = 0;
    ASSERT_NE(rig.reg(0, target.data(), target.size() * 4, FI_REMOTE_WRITE, &key, &base), nullptr);
    for (uint32_t i = 0; i < 100; ++i) {
      const ssize_t r =
          retry(rig, [&] { return fi_inject_writedata(rig.ep(1), &i, 4, 1000 + i, rig.peer(1), base + 4 * i, key); });
      ASSERT_EQ(r, 0) << i;
    }
    for (uint32_t i = 0; i < 100; ++i) {
      fi_cq_data_entry e{};
      ASSERT_EQ(wait_cq(rig, rig.cq(0), &e), 1) << i;
      EXPECT_EQ(e.data, 1000u + i);
      EXPECT_EQ(target[i], i);
    }
    expect_empty(rig, rig.cq(0));
  }
}

// RDM to the own address: the data's entry at the endpoint's own receive CQ.
TEST(WriteData, RdmSelf) {
  Rig rig(Kind::Rdm, false);
  ASSERT_TRUE(rig.ready()) << rig.failed;
  std::vector<uint8_t> target(64, 0);
  uint64_t key = 0, base = 0;
  ASSERT_NE(rig.reg(1, target.data(), target.size(), FI_REMOTE_WRITE, &key, &base), nullptr);
  int ctx = 0;
  ASSERT_EQ(fi_writedata(rig.ep(1), "self", 4, nullptr, 42, rig.side[1].self, base + 1, key, &ctx), 0);
  std::map<uint64_t, int> seen;
  for (int i = 0; i < 2; ++i) {
    fi_cq_data_entry e{};
    fi_addr_t src = FI_ADDR_UNSPEC;
    ASSERT_EQ(wait_cq(rig, rig.cq(1), &e, &src), 1);
    ++seen[e.flags];
    if (e.flags & FI_REMOTE_WRITE) {
      EXPECT_EQ(e.data, 42u);
      EXPECT_EQ(src, rig.side[1].self);
    } else {
      EXPECT_EQ(e.op_context, &ctx);
    }
  }
  EXPECT_EQ(seen[FI_RMA | FI_WRITE], 1);
  EXPECT_EQ(seen[FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA], 1);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(target.data()) + 1, 4), "self");
}

}  // namespace
}  // namespace mroce::fi_test
