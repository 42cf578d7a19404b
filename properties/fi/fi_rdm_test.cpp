// fi.RdmTagged, fi.RdmUnexpected, fi.RdmSelf, fi.RdmConnectOnFirstUse, fi.RdmFlowControl,
// fi.RdmRendezvous and fi.RdmOpenMpi (DESIGN.md 6.3 M4): FI_EP_RDM endpoints on memloop:0 and
// memloop:1 of one process (or ring:0/ring:1 with FI_MROCE_PORT=ring, fi.RdmOnRing), through the
// public libfabric API only. Every check reads bytes, order, counts, tags and sources back.
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <sys/uio.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fi_test_util.hpp"

namespace mroce::fi_test {
namespace {

std::string domain_name(int index) {
  const char* port = std::getenv("FI_MROCE_PORT");
  return std::string(port != nullptr ? port : "memloop") + ":" + std::to_string(index);
}

// Open MPI 4.1.4's mtl ofi hints, as captured (DESIGN.md 3.1), on one mroce domain.
InfoPtr open_mpi_info(int domain_index) {
  InfoPtr h = open_mpi_hints();
  h->fabric_attr->prov_name = strdup("mroce");
  h->domain_attr->name = strdup(domain_name(domain_index).c_str());
  InfoPtr info;
  getinfo(FI_VERSION(1, 5), h.get(), &info);
  return info;
}

// Messages and tags with directed receives, no RMA (fi_pingpong-like hints) on one domain.
InfoPtr plain_rdm_info(int domain_index, fi_av_type av_type = FI_AV_MAP) {
  InfoPtr h = mroce_hints();
  h->caps = FI_MSG | FI_TAGGED | FI_DIRECTED_RECV;
  h->ep_attr->type = FI_EP_RDM;
  h->domain_attr->av_type = av_type;
  h->domain_attr->name = strdup(domain_name(domain_index).c_str());
  InfoPtr info;
  getinfo(FI_VERSION(1, 17), h.get(), &info);
  return info;
}

// One rank: a domain, an AV, one TAGGED CQ for both directions, an RDM endpoint.
struct Rank {
  InfoPtr info;
  fid_domain* domain = nullptr;
  fid_av* av = nullptr;
  fid_cq* cq = nullptr;
  std::vector<fid_ep*> eps;
};

// A fabric and ranks on domains 0 and 1 (one endpoint each unless asked), every endpoint's name in
// every AV in the same order: fi_addr i names endpoint i of names().
struct World {
  fid_fabric* fabric = nullptr;
  Rank rank[2];
  std::vector<std::vector<uint8_t>> names;
  std::vector<std::vector<fi_addr_t>> addrs;  // per rank: fi_addr of every name
  std::string failed;
  uint64_t cq_bind_flags = FI_TRANSMIT | FI_RECV;

  World(bool open_mpi = false, int eps_on_rank1 = 1, fi_av_type av_type = FI_AV_MAP,
        uint64_t bind_flags = FI_TRANSMIT | FI_RECV)
      : cq_bind_flags(bind_flags) {
    open(open_mpi, eps_on_rank1, av_type);
  }

  void open(bool open_mpi, int eps_on_rank1, fi_av_type av_type) {
    for (int i = 0; i < 2; ++i) {
      rank[i].info = open_mpi ? open_mpi_info(i) : plain_rdm_info(i, av_type);
      if (!rank[i].info) return fail("fi_getinfo");
    }
    if (int r = fi_fabric(rank[0].info->fabric_attr, &fabric, nullptr)) return fail("fi_fabric", r);
    for (int i = 0; i < 2; ++i) {
      Rank& k = rank[i];
      if (int r = fi_domain(fabric, k.info.get(), &k.domain, nullptr)) return fail("fi_domain", r);
      fi_av_attr av_attr{};
      av_attr.type = av_type;
      av_attr.count = 4;
      if (int r = fi_av_open(k.domain, &av_attr, &k.av, nullptr)) return fail("fi_av_open", r);
      fi_cq_attr cq_attr{};
      cq_attr.format = FI_CQ_FORMAT_TAGGED;
      cq_attr.size = 100;  // Open MPI's size: more completions than that must not be lost
      if (int r = fi_cq_open(k.domain, &cq_attr, &k.cq, nullptr)) return fail("fi_cq_open", r);
      const int count = i == 0 ? 1 : eps_on_rank1;
      for (int e = 0; e < count; ++e) {
        fid_ep* ep = nullptr;
        if (int r = fi_endpoint(k.domain, k.info.get(), &ep, nullptr)) return fail("fi_endpoint", r);
        k.eps.push_back(ep);
        if (int r = fi_ep_bind(ep, &k.av->fid, 0)) return fail("fi_ep_bind(av)", r);
        if (int r = fi_ep_bind(ep, &k.cq->fid, cq_bind_flags)) return fail("fi_ep_bind(cq)", r);
        if (int r = fi_enable(ep)) return fail("fi_enable", r);
        std::vector<uint8_t> name(64);
        size_t len = name.size();
        if (int r = fi_getname(&ep->fid, name.data(), &len)) return fail("fi_getname", r);
        name.resize(len);
        names.push_back(name);
      }
    }
    for (int i = 0; i < 2; ++i) {
      std::vector<fi_addr_t> a(names.size(), FI_ADDR_NOTAVAIL);
      for (size_t n = 0; n < names.size(); ++n)
        if (fi_av_insert(rank[i].av, names[n].data(), 1, &a[n], 0, nullptr) != 1) return fail("fi_av_insert");
      addrs.push_back(a);
    }
  }

  void fail(const char* step, int r = 0) { failed = std::string(step) + ": " + fi_strerror(-r); }
  bool ready() const { return failed.empty(); }
  fid_ep* ep(int r, int e = 0) { return rank[r].eps[e]; }
  fid_cq* cq(int r) { return rank[r].cq; }
  // The fi_addr, in rank `r`'s AV, of rank 0's endpoint (0) or rank 1's endpoints (1, 2, ...).
  fi_addr_t addr(int r, size_t name_index) { return addrs[r][name_index]; }

  ~World() {
    for (Rank& k : rank) {
      for (fid_ep* ep : k.eps) EXPECT_EQ(fi_close(&ep->fid), 0);
      if (k.cq) { EXPECT_EQ(fi_close(&k.cq->fid), 0); }
      if (k.av) { EXPECT_EQ(fi_close(&k.av->fid), 0); }
      if (k.domain) { EXPECT_EQ(fi_close(&k.domain->fid), 0); }
    }
    if (fabric) { EXPECT_EQ(fi_close(&fabric->fid), 0); }
  }
};

// Polls a CQ for up to `seconds`: 1 with an entry (its source in *src), -FI_EAVAIL with an error.
int read_cq(fid_cq* cq, fi_cq_tagged_entry* e, fi_addr_t* src = nullptr, int seconds = 5) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  fi_addr_t ignored = FI_ADDR_NOTAVAIL;
  for (;;) {
    const ssize_t n = fi_cq_readfrom(cq, e, 1, src != nullptr ? src : &ignored);
    if (n != -FI_EAGAIN || std::chrono::steady_clock::now() > deadline) return static_cast<int>(n);
  }
}

fi_cq_err_entry read_error(fid_cq* cq) {
  fi_cq_err_entry e{};
  EXPECT_EQ(fi_cq_readerr(cq, &e, 0), 1);
  return e;
}

// Nothing more within a short while.
void expect_empty(fid_cq* cq) {
  fi_cq_tagged_entry e{};
  EXPECT_EQ(read_cq(cq, &e, nullptr, 0), -FI_EAGAIN) << "unexpected completion, context " << e.op_context;
  for (int i = 0; i < 200; ++i) {
    const ssize_t n = fi_cq_read(cq, &e, 1);
    ASSERT_EQ(n, -FI_EAGAIN) << "unexpected completion or error";
  }
}

// ---- fi.RdmTagged ----

TEST(RdmTagged, SendRecvBothWaysWithTagDataAndSource) {
  World w;
  ASSERT_TRUE(w.ready()) << w.failed;
  for (int from = 0; from < 2; ++from) {
    const int to = 1 - from;
    char rbuf[32] = {};
    int rctx = 0, sctx = 0;
    ASSERT_EQ(fi_trecv(w.ep(to), rbuf, sizeof rbuf, nullptr, FI_ADDR_UNSPEC, 0x1234, 0, &rctx), 0);
    const std::string msg = "tagged from " + std::to_string(from);
    ASSERT_EQ(
        fi_tsenddata(w.ep(from), msg.data(), msg.size(), nullptr, 0xfeed0000u + from, w.addr(from, to), 0x1234, &sctx),
        0);
    fi_cq_tagged_entry e{};
    fi_addr_t src = FI_ADDR_UNSPEC;
    ASSERT_EQ(read_cq(w.cq(to), &e, &src), 1);
    EXPECT_EQ(e.op_context, &rctx);
    EXPECT_EQ(e.flags, FI_TAGGED | FI_RECV | FI_REMOTE_CQ_DATA);
    EXPECT_EQ(e.len, msg.size());
    EXPECT_EQ(e.buf, rbuf);
    EXPECT_EQ(e.tag, 0x1234u);
    EXPECT_EQ(e.data, 0xfeed0000u + from);
    EXPECT_EQ(src, w.addr(to, from));  // FI_SOURCE: the sender as the receiver's AV names it
    EXPECT_EQ(std::string(rbuf, e.len), msg);
    ASSERT_EQ(read_cq(w.cq(from), &e), 1);
    EXPECT_EQ(e.op_context, &sctx);
    EXPECT_EQ(e.flags, FI_TAGGED | FI_SEND);
  }
  expect_empty(w.cq(0));
  expect_empty(w.cq(1));
}

TEST(RdmTagged, TagsAndIgnoreBitsSelectTheReceive) {
  World w;
  ASSERT_TRUE(w.ready()) << w.failed;
  char r[3][16] = {};
  // Receive 0 takes tag 0x10 exactly, 1 takes any tag 0x2?, 2 takes anything.
  ASSERT_EQ(fi_trecv(w.ep(1), r[0], 16, nullptr, FI_ADDR_UNSPEC, 0x10, 0, r[0]), 0);
  ASSERT_EQ(fi_trecv(w.ep(1), r[1], 16, nullptr, FI_ADDR_UNSPEC, 0x20, 0xf, r[1]), 0);
  ASSERT_EQ(fi_trecv(w.ep(1), r[2], 16, nullptr, FI_ADDR_UNSPEC, 0, ~0ULL, r[2]), 0);
  // Sent in the other order: 0x99 (only receive 2), 0x27 (receive 1), 0x10 (receive 0).
  ASSERT_EQ(fi_tsend(w.ep(0), "any", 3, nullptr, w.addr(0, 1), 0x99, nullptr), 0);
  ASSERT_EQ(fi_tsend(w.ep(0), "twenty", 6, nullptr, w.addr(0, 1), 0x27, nullptr), 0);
  ASSERT_EQ(fi_tsend(w.ep(0), "ten", 3, nullptr, w.addr(0, 1), 0x10, nullptr), 0);
  struct Want {
    char* buf;
    uint64_t tag;
    std::string text;
  } want[3] = {{r[2], 0x99, "any"}, {r[1], 0x27, "twenty"}, {r[0], 0x10, "ten"}};
  for (const Want& x : want) {
    fi_cq_tagged_entry e{};
    ASSERT_EQ(read_cq(w.cq(1), &e), 1);
    EXPECT_EQ(e.op_context, x.buf);
    EXPECT_EQ(e.tag, x.tag);
    EXPECT_EQ(std::string(static_cast<char*>(e.buf), e.len), x.text);
  }
  // Untagged messages never match tagged receives and the reverse.
  char t[8] = {}, m[8] = {};
  ASSERT_EQ(fi_trecv(w.ep(1), t, 8, nullptr, FI_ADDR_UNSPEC, 0, ~0ULL, t), 0);
  ASSERT_EQ(fi_send(w.ep(0), "msg", 3, nullptr, w.addr(0, 1), nullptr), 0);
  ASSERT_EQ(fi_recv(w.ep(1), m, 8, nullptr, FI_ADDR_UNSPEC, m), 0);
  fi_cq_tagged_entry e{};
  ASSERT_EQ(read_cq(w.cq(1), &e), 1);
  EXPECT_EQ(e.op_context, m);
  EXPECT_EQ(e.flags, FI_MSG | FI_RECV);
  EXPECT_EQ(std::string(m, e.len), "msg");
  ASSERT_EQ(fi_cancel(&w.ep(1)->fid, t), 0);
  ASSERT_EQ(read_cq(w.cq(1), &e), -FI_EAVAIL);
  EXPECT_EQ(read_error(w.cq(1)).err, FI_ECANCELED);
}

TEST(RdmTagged, DirectedReceivesTakeOnlyTheirSource) {
  World w(false, 2);  // rank 1 has two endpoints: names 1 and 2
  ASSERT_TRUE(w.ready()) << w.failed;
  char from2[16] = {}, from1[16] = {};
  // Directed at endpoint 2 first, then at endpoint 1; endpoint 1 sends first.
  ASSERT_EQ(fi_trecv(w.ep(0), from2, 16, nullptr, w.addr(0, 2), 7, 0, from2), 0);
  ASSERT_EQ(fi_trecv(w.ep(0), from1, 16, nullptr, w.addr(0, 1), 7, 0, from1), 0);
  ASSERT_EQ(fi_tsend(w.ep(1, 0), "one", 3, nullptr, w.addr(1, 0), 7, nullptr), 0);
  fi_cq_tagged_entry e{};
  fi_addr_t src = FI_ADDR_UNSPEC;
  ASSERT_EQ(read_cq(w.cq(0), &e, &src), 1);
  EXPECT_EQ(e.op_context, from1);
  EXPECT_EQ(src, w.addr(0, 1));
  EXPECT_EQ(std::string(from1, e.len), "one");
  ASSERT_EQ(fi_tsend(w.ep(1, 1), "two", 3, nullptr, w.addr(1, 0), 7, nullptr), 0);
  ASSERT_EQ(read_cq(w.cq(0), &e, &src), 1);
  EXPECT_EQ(e.op_context, from2);
  EXPECT_EQ(src, w.addr(0, 2));
  EXPECT_EQ(std::string(from2, e.len), "two");
}

// Open MPI inserts a peer into the AV at its first use, so a peer's message can arrive before its
// sender is in the receiver's AV: it waits with source FI_ADDR_NOTAVAIL, and a receive directed at
// the sender, posted once the sender is inserted, must still take it (with 4 ranks, MPI_Allreduce
// hung or failed MPI_ERR_TRUNCATE before). Endpoint 1 is removed from rank 0's AV, sends, and is
// inserted again under a new fi_addr.
TEST(RdmTagged, AMessageFromASenderNotYetInTheAvWaitsForItsDirectedReceive) {
  World w;
  ASSERT_TRUE(w.ready()) << w.failed;
  fi_addr_t old_addr = w.addr(0, 1);
  ASSERT_EQ(fi_av_remove(w.rank[0].av, &old_addr, 1, 0), 0);
  ASSERT_EQ(fi_tsend(w.ep(1), "early", 5, nullptr, w.addr(1, 0), 9, nullptr), 0);
  fi_cq_tagged_entry e{};
  ASSERT_EQ(read_cq(w.cq(1), &e), 1);  // delivered: it waits at rank 0, unexpected
  char any[16] = {};
  ASSERT_EQ(fi_trecv(w.ep(0), any, sizeof any, nullptr, FI_ADDR_UNSPEC, 10, 0, any), 0);  // another tag
  fi_addr_t again = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert(w.rank[0].av, w.names[1].data(), 1, &again, 0, nullptr), 1);
  ASSERT_NE(again, old_addr);
  char buf[16] = {};
  ASSERT_EQ(fi_trecv(w.ep(0), buf, sizeof buf, nullptr, again, 9, 0, buf), 0);
  fi_addr_t src = FI_ADDR_UNSPEC;
  ASSERT_EQ(read_cq(w.cq(0), &e, &src), 1);
  EXPECT_EQ(e.op_context, buf);
  EXPECT_EQ(src, again);
  EXPECT_EQ(std::string(buf, e.len), "early");
  expect_empty(w.cq(0));
}

TEST(RdmTagged, MessageCallsAndTruncation) {
  World w;
  ASSERT_TRUE(w.ready()) << w.failed;
  char r[6][64] = {};
  iovec riov{r[1], sizeof r[1]};
  ASSERT_EQ(fi_recv(w.ep(1), r[0], 64, nullptr, FI_ADDR_UNSPEC, r[0]), 0);
  ASSERT_EQ(fi_recvv(w.ep(1), &riov, nullptr, 1, w.addr(1, 0), r[1]), 0);
  fi_msg rmsg{};
  iovec riov2{r[2], sizeof r[2]};
  rmsg.msg_iov = &riov2;
  rmsg.iov_count = 1;
  rmsg.addr = FI_ADDR_UNSPEC;
  rmsg.context = r[2];
  ASSERT_EQ(fi_recvmsg(w.ep(1), &rmsg, FI_COMPLETION), 0);
  ASSERT_EQ(fi_recv(w.ep(1), r[3], 64, nullptr, FI_ADDR_UNSPEC, r[3]), 0);
  ASSERT_EQ(fi_recv(w.ep(1), r[4], 4, nullptr, FI_ADDR_UNSPEC, r[4]), 0);  // short: truncates
  const fi_addr_t to = w.addr(0, 1);
  int c_send = 0, c_sendv = 0, c_sendmsg = 0, c_senddata = 0;
  ASSERT_EQ(fi_send(w.ep(0), "send", 4, nullptr, to, &c_send), 0);
  iovec siov{const_cast<char*>("sendv"), 5};
  ASSERT_EQ(fi_sendv(w.ep(0), &siov, nullptr, 1, to, &c_sendv), 0);
  iovec smiov{const_cast<char*>("sendmsg"), 7};
  fi_msg smsg{};
  smsg.msg_iov = &smiov;
  smsg.iov_count = 1;
  smsg.addr = to;
  smsg.context = &c_sendmsg;
  smsg.data = 77;
  ASSERT_EQ(fi_sendmsg(w.ep(0), &smsg, FI_REMOTE_CQ_DATA | FI_COMPLETION), 0);
  ASSERT_EQ(fi_inject(w.ep(0), "inject", 6, to), 0);
  ASSERT_EQ(fi_senddata(w.ep(0), "truncated!", 10, nullptr, 5, to, &c_senddata), 0);
  ASSERT_EQ(fi_injectdata(w.ep(0), "unexpected", 10, 9, to), 0);  // no receive left: waits
  // The CQ hands out its error entry first (-FI_EAVAIL), then the four others in order.
  fi_cq_tagged_entry e{};
  ASSERT_EQ(read_cq(w.cq(1), &e), -FI_EAVAIL);
  const fi_cq_err_entry err = read_error(w.cq(1));
  const std::string texts[4] = {"send", "sendv", "sendmsg", "inject"};
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(read_cq(w.cq(1), &e), 1) << i;
    EXPECT_EQ(e.op_context, r[i]);
    EXPECT_EQ(std::string(r[i], e.len), texts[i]);
    EXPECT_EQ(e.flags, FI_MSG | FI_RECV | (i == 2 ? FI_REMOTE_CQ_DATA : 0));
    if (i == 2) { EXPECT_EQ(e.data, 77u); }
  }
  EXPECT_EQ(err.err, FI_ETRUNC);
  EXPECT_EQ(err.op_context, r[4]);
  EXPECT_EQ(err.len, 4u);
  EXPECT_EQ(err.olen, 6u);
  EXPECT_EQ(err.data, 5u);
  EXPECT_EQ(std::string(r[4], 4), "trun");
  ASSERT_EQ(fi_recv(w.ep(1), r[5], 64, nullptr, FI_ADDR_UNSPEC, r[5]), 0);
  ASSERT_EQ(read_cq(w.cq(1), &e), 1);
  EXPECT_EQ(e.op_context, r[5]);
  EXPECT_EQ(e.data, 9u);
  EXPECT_EQ(std::string(r[5], e.len), "unexpected");
  // The sender: one completion per send with a context, none for the injects.
  std::vector<void*> done;
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(read_cq(w.cq(0), &e), 1);
    done.push_back(e.op_context);
  }
  EXPECT_EQ(done, (std::vector<void*>{&c_send, &c_sendv, &c_sendmsg, &c_senddata}));
  expect_empty(w.cq(0));
  // Bad calls get typed errors.
  char big[300] = {};
  EXPECT_EQ(fi_inject(w.ep(0), big, sizeof big, to), -FI_EMSGSIZE);
  EXPECT_EQ(fi_tsend(w.ep(0), big, 1, nullptr, 99, 0, nullptr), -FI_EINVAL);              // not in the AV
  EXPECT_EQ(fi_senddata(w.ep(0), big, 1, nullptr, 1ULL << 32, to, nullptr), -FI_EINVAL);  // cq_data_size 4
  EXPECT_EQ(fi_tsend(w.ep(0), nullptr, 4, nullptr, to, 0, nullptr), -FI_EINVAL);
  EXPECT_EQ(fi_cancel(&w.ep(0)->fid, big), -FI_ENOENT);
  EXPECT_EQ(fi_write(w.ep(0), big, 1, nullptr, to, 0, 0, nullptr), -FI_EOPNOTSUPP);  // FI_RMA not asked
  EXPECT_EQ(fi_close(&w.rank[0].av->fid), -FI_EBUSY);                                // bound to an endpoint
}

TEST(RdmTagged, PeekClaimDiscardAndFailedPeek) {
  World w;
  ASSERT_TRUE(w.ready()) << w.failed;
  fi_context2 ctx[6] = {};
  auto trecvmsg = [&](void* buf, size_t len, uint64_t tag, fi_context2* c, uint64_t flags) {
    iovec iov{buf, len};
    fi_msg_tagged m{};
    m.msg_iov = len ? &iov : nullptr;
    m.iov_count = len ? 1 : 0;
    m.addr = FI_ADDR_UNSPEC;
    m.tag = tag;
    m.context = c;
    return fi_trecvmsg(w.ep(1), &m, flags | FI_COMPLETION);
  };
  fi_cq_tagged_entry e{};
  // A peek before anything arrived: FI_ENOMSG error completion.
  ASSERT_EQ(trecvmsg(nullptr, 0, 5, &ctx[0], FI_PEEK), 0);
  ASSERT_EQ(read_cq(w.cq(1), &e), -FI_EAVAIL);
  fi_cq_err_entry err = read_error(w.cq(1));
  EXPECT_EQ(err.err, FI_ENOMSG);
  EXPECT_EQ(err.op_context, &ctx[0]);
  ASSERT_EQ(fi_tsenddata(w.ep(0), "five", 4, nullptr, 55, w.addr(0, 1), 5, nullptr), 0);
  ASSERT_EQ(fi_tsend(w.ep(0), "six!!", 5, nullptr, w.addr(0, 1), 6, nullptr), 0);
  ASSERT_EQ(fi_tsend(w.ep(0), "seven", 5, nullptr, w.addr(0, 1), 7, nullptr), 0);
  for (int i = 0; i < 3; ++i) { ASSERT_EQ(read_cq(w.cq(0), &e), 1); }  // all delivered (unexpected)
  // Peek: length, tag, data and source, the message stays.
  fi_addr_t src = FI_ADDR_UNSPEC;
  ASSERT_EQ(trecvmsg(nullptr, 0, 5, &ctx[1], FI_PEEK), 0);
  ASSERT_EQ(read_cq(w.cq(1), &e, &src), 1);
  EXPECT_EQ(e.op_context, &ctx[1]);
  EXPECT_EQ(e.len, 4u);
  EXPECT_EQ(e.tag, 5u);
  EXPECT_EQ(e.data, 55u);
  EXPECT_EQ(src, w.addr(1, 0));
  // Peek and claim, then receive the claimed message with the same context (MPI_Mprobe/Mrecv).
  ASSERT_EQ(trecvmsg(nullptr, 0, 5, &ctx[2], FI_PEEK | FI_CLAIM), 0);
  ASSERT_EQ(read_cq(w.cq(1), &e), 1);
  EXPECT_EQ(e.len, 4u);
  ASSERT_EQ(trecvmsg(nullptr, 0, 5, &ctx[3], FI_PEEK), 0);  // claimed: no longer found
  ASSERT_EQ(read_cq(w.cq(1), &e), -FI_EAVAIL);
  EXPECT_EQ(read_error(w.cq(1)).err, FI_ENOMSG);
  char buf[16] = {};
  ASSERT_EQ(trecvmsg(buf, sizeof buf, 0, &ctx[2], FI_CLAIM), 0);
  ASSERT_EQ(read_cq(w.cq(1), &e), 1);
  EXPECT_EQ(e.op_context, &ctx[2]);
  EXPECT_EQ(std::string(buf, e.len), "five");
  EXPECT_EQ(trecvmsg(buf, sizeof buf, 0, &ctx[2], FI_CLAIM), -FI_EINVAL);  // claimed once only
  // Peek + discard drops tag 6; claim + discard drops tag 7.
  ASSERT_EQ(trecvmsg(nullptr, 0, 6, &ctx[4], FI_PEEK | FI_DISCARD), 0);
  ASSERT_EQ(read_cq(w.cq(1), &e), 1);
  EXPECT_EQ(e.tag, 6u);
  ASSERT_EQ(trecvmsg(nullptr, 0, 7, &ctx[5], FI_PEEK | FI_CLAIM), 0);
  ASSERT_EQ(read_cq(w.cq(1), &e), 1);
  ASSERT_EQ(trecvmsg(nullptr, 0, 7, &ctx[5], FI_CLAIM | FI_DISCARD), 0);
  ASSERT_EQ(read_cq(w.cq(1), &e), 1);
  EXPECT_EQ(e.op_context, &ctx[5]);
  EXPECT_EQ(e.len, 0u);
  // Both are gone: a receive for any tag stays posted, and is canceled.
  ASSERT_EQ(fi_trecv(w.ep(1), buf, sizeof buf, nullptr, FI_ADDR_UNSPEC, 0, ~0ULL, buf), 0);
  expect_empty(w.cq(1));
  ASSERT_EQ(fi_cancel(&w.ep(1)->fid, buf), 0);
  ASSERT_EQ(read_cq(w.cq(1), &e), -FI_EAVAIL);
  err = read_error(w.cq(1));
  EXPECT_EQ(err.err, FI_ECANCELED);
  EXPECT_EQ(err.op_context, buf);
  EXPECT_EQ(fi_cancel(&w.ep(1)->fid, buf), -FI_ENOENT);  // completes once
  expect_empty(w.cq(1));
}

// ---- fi.RdmUnexpected ----

TEST(RdmUnexpected, MessagesWaitInOrderForTheirReceives) {
  World w;
  ASSERT_TRUE(w.ready()) << w.failed;
  // Tags alternate 1, 2: receives for tag 2 first must take the 2s in their order. (The buffers
  // belong to the provider until their sends complete.)
  std::vector<std::vector<uint8_t>> sent;
  for (uint32_t i = 0; i < 20; ++i) sent.push_back(pattern(100 + i, i));
  for (uint32_t i = 0; i < 20; ++i)
    ASSERT_EQ(fi_tsenddata(w.ep(0), sent[i].data(), sent[i].size(), nullptr, i, w.addr(0, 1), 1 + i % 2, nullptr), 0);
  fi_cq_tagged_entry e{};
  for (int i = 0; i < 20; ++i) { ASSERT_EQ(read_cq(w.cq(0), &e), 1) << i; }
  std::vector<std::vector<uint8_t>> bufs(20, std::vector<uint8_t>(200));
  for (uint32_t k = 0; k < 20; ++k) {
    const uint64_t tag = k < 10 ? 2 : 1;
    ASSERT_EQ(fi_trecv(w.ep(1), bufs[k].data(), bufs[k].size(), nullptr, FI_ADDR_UNSPEC, tag, 0, &bufs[k]), 0);
    ASSERT_EQ(read_cq(w.cq(1), &e), 1);
    const uint32_t i = k < 10 ? 2 * k + 1 : 2 * (k - 10);  // the k-th message of its tag
    EXPECT_EQ(e.op_context, &bufs[k]);
    EXPECT_EQ(e.data, i);
    EXPECT_EQ(e.tag, tag);
    ASSERT_EQ(e.len, 100 + i);
    EXPECT_EQ(std::vector<uint8_t>(bufs[k].begin(), bufs[k].begin() + e.len), pattern(100 + i, i));
  }
  expect_empty(w.cq(1));
}

// ---- fi.RdmSelf ----

TEST(RdmSelf, SendsToTheOwnAddressAndToAnotherLocalEndpoint) {
  World w(false, 2);
  ASSERT_TRUE(w.ready()) << w.failed;
  // Rank 0 to itself: receive posted first, then unexpected, then a large one (no size limit).
  char r1[16] = {};
  ASSERT_EQ(fi_trecv(w.ep(0), r1, 16, nullptr, w.addr(0, 0), 3, 0, r1), 0);
  ASSERT_EQ(fi_tsend(w.ep(0), "myself", 6, nullptr, w.addr(0, 0), 3, r1 + 1), 0);
  const std::vector<uint8_t> big = pattern(3 << 20, 42);
  ASSERT_EQ(fi_tsend(w.ep(0), big.data(), big.size(), nullptr, w.addr(0, 0), 4, r1 + 2), 0);
  fi_cq_tagged_entry e{};
  fi_addr_t src = FI_ADDR_UNSPEC;
  std::vector<void*> contexts;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(read_cq(w.cq(0), &e, &src), 1);
    contexts.push_back(e.op_context);
    if (e.op_context == r1) {
      EXPECT_EQ(std::string(r1, e.len), "myself");
      EXPECT_EQ(src, w.addr(0, 0));
    }
  }
  EXPECT_EQ(contexts, (std::vector<void*>{r1, r1 + 1, r1 + 2}));
  std::vector<uint8_t> got(big.size());
  ASSERT_EQ(fi_trecv(w.ep(0), got.data(), got.size(), nullptr, FI_ADDR_UNSPEC, 4, 0, &got), 0);
  ASSERT_EQ(read_cq(w.cq(0), &e), 1);
  EXPECT_EQ(e.len, big.size());
  EXPECT_TRUE(got == big);
  // Rank 1's endpoint 0 to its endpoint 1 (same device): delivered in the provider too.
  char r2[16] = {};
  ASSERT_EQ(fi_trecv(w.ep(1, 1), r2, 16, nullptr, FI_ADDR_UNSPEC, 9, 0, r2), 0);
  ASSERT_EQ(fi_tsend(w.ep(1, 0), "neighbour", 9, nullptr, w.addr(1, 2), 9, nullptr), 0);
  int completions = 0;
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(read_cq(w.cq(1), &e, &src), 1);
    if (e.op_context == r2) {
      ++completions;
      EXPECT_EQ(std::string(r2, e.len), "neighbour");
      EXPECT_EQ(src, w.addr(1, 1));
    }
  }
  EXPECT_EQ(completions, 1);
  expect_empty(w.cq(0));
  expect_empty(w.cq(1));
}

// ---- fi.RdmConnectOnFirstUse ----

TEST(RdmConnectOnFirstUse, SendsQueueUntilTheConnectionIsAccepted) {
  for (fi_av_type type : {FI_AV_MAP, FI_AV_TABLE}) {
    World w(false, 1, type);
    ASSERT_TRUE(w.ready()) << w.failed;
    // Posted at once, before the engine connection exists: delivered in order once it does.
    std::vector<uint32_t> values(40);
    for (uint32_t i = 0; i < 40; ++i) {
      values[i] = i;
      ASSERT_EQ(fi_tsenddata(w.ep(0), &values[i], sizeof i, nullptr, i, w.addr(0, 1), 8, nullptr), 0);
    }
    for (uint32_t i = 0; i < 40; ++i) {
      uint32_t v = ~0u;
      ASSERT_EQ(fi_trecv(w.ep(1), &v, sizeof v, nullptr, FI_ADDR_UNSPEC, 8, 0, nullptr), 0);
      fi_cq_tagged_entry e{};
      ASSERT_EQ(read_cq(w.cq(1), &e), 1) << i;
      EXPECT_EQ(v, i);
      EXPECT_EQ(e.data, i);
    }
    for (int i = 0; i < 40; ++i) {
      fi_cq_tagged_entry e{};
      ASSERT_EQ(read_cq(w.cq(0), &e), 1);
    }
    expect_empty(w.cq(0));
  }
}

TEST(RdmConnectOnFirstUse, SimultaneousOpensKeepOrderBothWays) {
  World w;
  ASSERT_TRUE(w.ready()) << w.failed;
  constexpr uint32_t kCount = 100;
  // Both sides send before either has progressed: two engine connections are opened at once.
  for (uint32_t i = 0; i < kCount; ++i)
    for (int from = 0; from < 2; ++from) {
      const uint32_t v = from * 1000 + i;
      ASSERT_EQ(fi_tinject(w.ep(from), &v, sizeof v, w.addr(from, 1 - from), 1), 0);
    }
  for (int to = 0; to < 2; ++to)
    for (uint32_t i = 0; i < kCount; ++i) {
      uint32_t v = ~0u;
      ASSERT_EQ(fi_trecv(w.ep(to), &v, sizeof v, nullptr, FI_ADDR_UNSPEC, 1, 0, nullptr), 0);
      fi_cq_tagged_entry e{};
      ASSERT_EQ(read_cq(w.cq(to), &e), 1) << to << " " << i;
      EXPECT_EQ(v, (1 - to) * 1000 + i);  // in order, once
    }
  expect_empty(w.cq(0));
  expect_empty(w.cq(1));
}

TEST(RdmConnectOnFirstUse, NoSuchEndpointFailsTheSends) {
  World w;
  ASSERT_TRUE(w.ready()) << w.failed;
  std::vector<uint8_t> ghost = w.names[1];
  ghost[7] ^= 0x55;  // another endpoint id on rank 1's device (bytes 4..7)
  fi_addr_t ghost_addr = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert(w.rank[0].av, ghost.data(), 1, &ghost_addr, 0, nullptr), 1);
  int ctx[3] = {};
  for (int& c : ctx) ASSERT_EQ(fi_tsend(w.ep(0), "lost", 4, nullptr, ghost_addr, 0, &c), 0);
  fi_cq_tagged_entry e{};
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(read_cq(w.cq(0), &e), -FI_EAVAIL) << i;
    const fi_cq_err_entry err = read_error(w.cq(0));
    EXPECT_EQ(err.op_context, &ctx[i]);
    EXPECT_EQ(err.err, FI_ECONNREFUSED);  // nobody has that endpoint id there
  }
  // The same on this rank's own device (served in the provider).
  std::vector<uint8_t> local_ghost = w.names[0];
  local_ghost[7] ^= 0x55;
  ASSERT_EQ(fi_av_insert(w.rank[0].av, local_ghost.data(), 1, &ghost_addr, 0, nullptr), 1);
  ASSERT_EQ(fi_tsend(w.ep(0), "lost", 4, nullptr, ghost_addr, 0, &ctx[0]), 0);
  ASSERT_EQ(read_cq(w.cq(0), &e), -FI_EAVAIL);
  EXPECT_EQ(read_error(w.cq(0)).err, FI_ECONNREFUSED);
  // A failed inject has no context and asked for no completion: it is logged, and no entry (an
  // error entry with a null op_context crashes Open MPI's mtl ofi) reaches the CQ.
  ASSERT_EQ(fi_tinject(w.ep(0), "lost", 4, ghost_addr, 0), 0);
  ASSERT_EQ(fi_tsend(w.ep(0), "after", 5, nullptr, ghost_addr, 0, &ctx[1]), 0);
  ASSERT_EQ(read_cq(w.cq(0), &e), -FI_EAVAIL);
  EXPECT_EQ(read_error(w.cq(0)).op_context, &ctx[1]) << "the inject's failure reached the CQ";
  // The real endpoint is still reachable.
  char r[8] = {};
  ASSERT_EQ(fi_trecv(w.ep(1), r, 8, nullptr, FI_ADDR_UNSPEC, 0, 0, r), 0);
  ASSERT_EQ(fi_tsend(w.ep(0), "real", 4, nullptr, w.addr(0, 1), 0, nullptr), 0);
  ASSERT_EQ(read_cq(w.cq(1), &e), 1);
  EXPECT_EQ(std::string(r, e.len), "real");
}

// ---- fi.RdmFlowControl ----

TEST(RdmFlowControl, ThousandMessagesBeforeAnyReceive) {
  World w;
  ASSERT_TRUE(w.ready()) << w.failed;
  constexpr uint32_t kCount = 1000;
  std::vector<std::vector<uint8_t>> sent;
  for (uint32_t i = 0; i < kCount; ++i) sent.push_back(pattern(1 + (i * 977) % 9000, i));
  for (uint32_t i = 0; i < kCount; ++i)
    ASSERT_EQ(fi_tsenddata(w.ep(0), sent[i].data(), sent[i].size(), nullptr, i, w.addr(0, 1), 0x77, &sent[i]), 0) << i;
  // Every send completes, exactly once, without an error (no RNR reaches the application).
  std::vector<int> send_done(kCount, 0);
  fi_cq_tagged_entry e{};
  for (uint32_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(read_cq(w.cq(0), &e), 1) << i;
    const auto index = static_cast<size_t>(static_cast<std::vector<uint8_t>*>(e.op_context) - sent.data());
    ASSERT_LT(index, kCount);
    ++send_done[index];
  }
  EXPECT_EQ(std::count(send_done.begin(), send_done.end(), 1), static_cast<long>(kCount));
  std::vector<uint8_t> buf(9000);
  for (uint32_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(fi_trecv(w.ep(1), buf.data(), buf.size(), nullptr, w.addr(1, 0), 0x77, 0, nullptr), 0);
    ASSERT_EQ(read_cq(w.cq(1), &e), 1) << i;
    ASSERT_EQ(e.data, i);
    ASSERT_EQ(e.len, sent[i].size());
    ASSERT_TRUE(std::equal(sent[i].begin(), sent[i].end(), buf.begin())) << i;
  }
  expect_empty(w.cq(0));
  expect_empty(w.cq(1));
}

TEST(RdmFlowControl, ManyCompletionsWaitInASmallCq) {
  World w;  // CQ size 100: 600 completions must all be kept (FI_RM_ENABLED, growable)
  ASSERT_TRUE(w.ready()) << w.failed;
  std::vector<uint32_t> got(600, ~0u);
  for (uint32_t i = 0; i < 600; ++i)
    ASSERT_EQ(fi_trecv(w.ep(1), &got[i], sizeof got[i], nullptr, FI_ADDR_UNSPEC, 0, 0, &got[i]), 0);
  std::vector<uint32_t> values(600);
  for (uint32_t i = 0; i < 600; ++i) {
    values[i] = i;
    ASSERT_EQ(fi_tsend(w.ep(0), &values[i], sizeof i, nullptr, w.addr(0, 1), 0, nullptr), 0);
  }
  fi_cq_tagged_entry e{};
  for (uint32_t i = 0; i < 600; ++i) ASSERT_EQ(read_cq(w.cq(0), &e), 1) << i;
  for (uint32_t i = 0; i < 600; ++i) {
    ASSERT_EQ(read_cq(w.cq(1), &e), 1) << i;
    EXPECT_EQ(e.op_context, &got[i]);
    EXPECT_EQ(got[i], i);
  }
}

// ---- fi.RdmRendezvous ----

TEST(RdmRendezvous, LargeMessagesByteExact) {
  World w;
  ASSERT_TRUE(w.ready()) << w.failed;
  InfoPtr info = plain_rdm_info(0);
  ASSERT_TRUE(info);
  EXPECT_GE(info->ep_attr->max_msg_size, size_t{16} << 20);
  for (size_t size : {size_t{65537}, size_t{1} << 20, size_t{16} << 20}) {
    const std::vector<uint8_t> out = pattern(size, static_cast<uint32_t>(size));
    std::vector<uint8_t> in(size + 10, 0);
    // Posted receive first, then sent.
    ASSERT_EQ(fi_trecv(w.ep(1), in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, 1, 0, &in), 0);
    int sctx = 0;
    ASSERT_EQ(fi_tsenddata(w.ep(0), out.data(), out.size(), nullptr, 3, w.addr(0, 1), 1, &sctx), 0);
    fi_cq_tagged_entry e{};
    ASSERT_EQ(read_cq(w.cq(1), &e, nullptr, 30), 1) << size;
    EXPECT_EQ(e.op_context, &in);
    EXPECT_EQ(e.len, size);
    EXPECT_EQ(e.data, 3u);
    EXPECT_TRUE(std::equal(out.begin(), out.end(), in.begin())) << size;
    EXPECT_EQ(in[size], 0);  // nothing beyond the message
    ASSERT_EQ(read_cq(w.cq(0), &e, nullptr, 30), 1);
    EXPECT_EQ(e.op_context, &sctx);
    // Sent first (unexpected, a descriptor only), then received; then truncated.
    std::fill(in.begin(), in.end(), 0);
    ASSERT_EQ(fi_send(w.ep(0), out.data(), out.size(), nullptr, w.addr(0, 1), &sctx), 0);
    ASSERT_EQ(fi_send(w.ep(0), out.data(), out.size(), nullptr, w.addr(0, 1), &sctx), 0);
    ASSERT_EQ(fi_recv(w.ep(1), in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, &in), 0);
    ASSERT_EQ(read_cq(w.cq(1), &e, nullptr, 30), 1);
    EXPECT_EQ(e.len, size);
    EXPECT_TRUE(std::equal(out.begin(), out.end(), in.begin())) << size;
    std::vector<uint8_t> part(1000);
    ASSERT_EQ(fi_recv(w.ep(1), part.data(), part.size(), nullptr, FI_ADDR_UNSPEC, &part), 0);
    ASSERT_EQ(read_cq(w.cq(1), &e, nullptr, 30), -FI_EAVAIL);
    const fi_cq_err_entry err = read_error(w.cq(1));
    EXPECT_EQ(err.err, FI_ETRUNC);
    EXPECT_EQ(err.len, part.size());
    EXPECT_EQ(err.olen, size - part.size());
    EXPECT_TRUE(std::equal(part.begin(), part.end(), out.begin()));
    for (int i = 0; i < 2; ++i) { ASSERT_EQ(read_cq(w.cq(0), &e, nullptr, 30), 1); }
    expect_empty(w.cq(0));
    expect_empty(w.cq(1));
  }
}

// ---- fi.RdmOpenMpi: exactly what mtl ofi opens (DESIGN.md 3.2), two ranks in one process ----

TEST(RdmOpenMpi, MtlOfiPattern) {
  World w(true, 1, FI_AV_MAP, FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION);
  ASSERT_TRUE(w.ready()) << w.failed;
  ASSERT_EQ(w.rank[0].info->ep_attr->type, FI_EP_RDM);
  const size_t inject = w.rank[0].info->tx_attr->inject_size;
  ASSERT_GE(inject, 8u);
  constexpr uint64_t kSync = 1ULL << 62;  // a sync-send bit in the tag, as the MTL's tag layout has
  fi_cq_tagged_entry e{};
  fi_addr_t src = FI_ADDR_UNSPEC;
  // Tagged both ways with the source rank in the CQ data (ofi_tag_full), fi_tsend and fi_tinject.
  for (int me = 0; me < 2; ++me) {
    const int peer = 1 - me;
    uint64_t got = 0;
    fi_context2 rctx{}, sctx{};
    ASSERT_EQ(fi_trecv(w.ep(peer), &got, sizeof got, nullptr, w.addr(peer, me), 100 + me, 0, &rctx), 0);
    const uint64_t value = 0x1111111111111111ULL * (me + 1);
    ASSERT_EQ(fi_tsenddata(w.ep(me), &value, sizeof value, nullptr, me, w.addr(me, peer), 100 + me, &sctx), 0);
    ASSERT_EQ(read_cq(w.cq(peer), &e, &src), 1);
    EXPECT_EQ(e.op_context, &rctx);
    EXPECT_EQ(e.data, static_cast<uint64_t>(me));
    EXPECT_EQ(src, w.addr(peer, me));
    EXPECT_EQ(got, value);
    ASSERT_EQ(read_cq(w.cq(me), &e), 1);  // op_flags FI_COMPLETION: fi_tsend reports
    EXPECT_EQ(e.op_context, &sctx);
    ASSERT_EQ(fi_tinjectdata(w.ep(me), &value, sizeof value, me, w.addr(me, peer), 200), 0);
    got = 0;
    ASSERT_EQ(fi_trecv(w.ep(peer), &got, sizeof got, nullptr, FI_ADDR_UNSPEC, 200, 0, &rctx), 0);
    ASSERT_EQ(read_cq(w.cq(peer), &e), 1);
    EXPECT_EQ(got, value);
  }
  // Self-send (a pairwise Alltoall's own step).
  uint32_t self_in = 0, self_out = 0xabcdef;
  fi_context2 a{}, b{};
  ASSERT_EQ(fi_trecv(w.ep(0), &self_in, sizeof self_in, nullptr, w.addr(0, 0), 300, 0, &a), 0);
  ASSERT_EQ(fi_tsend(w.ep(0), &self_out, sizeof self_out, nullptr, w.addr(0, 0), 300, &b), 0);
  std::vector<void*> ctxs;
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(read_cq(w.cq(0), &e), 1);
    ctxs.push_back(e.op_context);
  }
  EXPECT_EQ(ctxs.size(), 2u);
  EXPECT_EQ(self_in, self_out);
  // Sync send: rank 0 sends with the sync bit; rank 1 matches it and answers a zero-length ACK with
  // fi_tsendmsg and no flags (no completion under selective completion); rank 0 waits for the ACK.
  uint32_t payload = 7, sink = 0;
  fi_context2 ack_ctx{}, data_ctx{}, recv_ctx{};
  ASSERT_EQ(fi_trecv(w.ep(0), nullptr, 0, nullptr, w.addr(0, 1), kSync | 400, 0, &ack_ctx), 0);
  ASSERT_EQ(fi_tsend(w.ep(0), &payload, sizeof payload, nullptr, w.addr(0, 1), kSync | 400, &data_ctx), 0);
  ASSERT_EQ(fi_trecv(w.ep(1), &sink, sizeof sink, nullptr, FI_ADDR_UNSPEC, 400, kSync, &recv_ctx), 0);
  ASSERT_EQ(read_cq(w.cq(1), &e, &src), 1);
  EXPECT_EQ(e.op_context, &recv_ctx);
  EXPECT_NE(e.tag & kSync, 0u);
  EXPECT_EQ(sink, 7u);
  fi_msg_tagged ack{};
  ack.addr = src;
  ack.tag = kSync | 400;
  ASSERT_EQ(fi_tsendmsg(w.ep(1), &ack, 0), 0);
  std::vector<void*> rank0;
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(read_cq(w.cq(0), &e), 1);
    rank0.push_back(e.op_context);
    if (e.op_context == &ack_ctx) { EXPECT_EQ(e.len, 0u); }
  }
  EXPECT_NE(std::find(rank0.begin(), rank0.end(), &ack_ctx), rank0.end());
  EXPECT_NE(std::find(rank0.begin(), rank0.end(), &data_ctx), rank0.end());
  expect_empty(w.cq(1));  // the ACK's send reported nothing
  // MPI_Iprobe (peek fails, then finds), MPI_Improbe/Mrecv (peek+claim, claim).
  fi_context2 probe{}, claim{};
  auto peek = [&](fi_context2* c, uint64_t flags, void* buf, size_t len) {
    iovec iov{buf, len};
    fi_msg_tagged m{};
    m.msg_iov = len ? &iov : nullptr;
    m.iov_count = len ? 1 : 0;
    m.addr = w.addr(1, 0);
    m.tag = 500;
    m.context = c;
    return fi_trecvmsg(w.ep(1), &m, flags | FI_COMPLETION);
  };
  ASSERT_EQ(peek(&probe, FI_PEEK, nullptr, 0), 0);
  ASSERT_EQ(read_cq(w.cq(1), &e), -FI_EAVAIL);
  EXPECT_EQ(read_error(w.cq(1)).err, FI_ENOMSG);
  const uint64_t probed = 0x5050;
  ASSERT_EQ(fi_tsend(w.ep(0), &probed, sizeof probed, nullptr, w.addr(0, 1), 500, &data_ctx), 0);
  ASSERT_EQ(read_cq(w.cq(0), &e), 1);
  ASSERT_EQ(peek(&claim, FI_PEEK | FI_CLAIM, nullptr, 0), 0);
  ASSERT_EQ(read_cq(w.cq(1), &e, &src), 1);
  EXPECT_EQ(e.len, sizeof probed);
  EXPECT_EQ(src, w.addr(1, 0));
  uint64_t mrecv = 0;
  ASSERT_EQ(peek(&claim, FI_CLAIM, &mrecv, sizeof mrecv), 0);
  ASSERT_EQ(read_cq(w.cq(1), &e), 1);
  EXPECT_EQ(mrecv, probed);
  // MPI_Cancel of a receive.
  fi_context2 cancel_ctx{};
  ASSERT_EQ(fi_trecv(w.ep(1), &mrecv, sizeof mrecv, nullptr, w.addr(1, 0), 600, 0, &cancel_ctx), 0);
  ASSERT_EQ(fi_cancel(&w.ep(1)->fid, &cancel_ctx), 0);
  ASSERT_EQ(read_cq(w.cq(1), &e), -FI_EAVAIL);
  const fi_cq_err_entry err = read_error(w.cq(1));
  EXPECT_EQ(err.err, FI_ECANCELED);
  EXPECT_EQ(err.op_context, &cancel_ctx);
  EXPECT_EQ(err.flags & FI_TAGGED, FI_TAGGED);
  expect_empty(w.cq(0));
  expect_empty(w.cq(1));
}

}  // namespace
}  // namespace mroce::fi_test
