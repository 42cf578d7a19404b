// fi.MsgConnectAccept, fi.MsgReject, fi.MsgSendRecv, fi.MsgShutdown (DESIGN.md 6.3 M2): FI_EP_MSG
// endpoints on the memloop backend, a listener on memloop:0 and a client on memloop:1 of one process,
// through the public libfabric API only. FI_MROCE_PORT=ring runs them on the ring backend (by hand).
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <sys/uio.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fi_test_util.hpp"

namespace mroce::fi_test {
namespace {

constexpr size_t kMsgMax = 65536;  // max_msg_size of the MSG entries

// Domain `index` of the backend the environment selects (ctest: memloop; by hand also ring).
std::string domain_name(int index) {
  const char* port = std::getenv("FI_MROCE_PORT");
  return std::string(port != nullptr ? port : "memloop") + ":" + std::to_string(index);
}

InfoPtr msg_info(int domain_index) {
  InfoPtr hints = mroce_hints();
  hints->ep_attr->type = FI_EP_MSG;
  hints->caps = FI_MSG;
  hints->domain_attr->name = strdup(domain_name(domain_index).c_str());
  InfoPtr info;
  getinfo(FI_VERSION(1, 17), hints.get(), &info);
  return info;
}

// Reads one CM event within a second; the event number, or a negative fi errno (-FI_EAVAIL: an error
// entry waits).
int read_event(fid_eq* eq, std::vector<uint8_t>* entry) {
  entry->assign(sizeof(fi_eq_cm_entry) + 512, 0);
  uint32_t event = 0;
  const ssize_t n = fi_eq_sread(eq, &event, entry->data(), entry->size(), 1000, 0);
  if (n < 0) return static_cast<int>(n);
  entry->resize(static_cast<size_t>(n));
  return static_cast<int>(event);
}

const fi_eq_cm_entry& cm(const std::vector<uint8_t>& entry) {
  return *reinterpret_cast<const fi_eq_cm_entry*>(entry.data());
}

std::string cm_data(const std::vector<uint8_t>& entry) {
  return std::string(entry.begin() + sizeof(fi_eq_cm_entry), entry.end());
}

// Polls a CQ for up to a second: 1 with an entry, -FI_EAVAIL with an error entry waiting.
template <class Entry>
int read_cq(fid_cq* cq, Entry* entry) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (;;) {
    const ssize_t n = fi_cq_read(cq, entry, 1);
    if (n != -FI_EAGAIN || std::chrono::steady_clock::now() > deadline) return static_cast<int>(n);
  }
}

fi_cq_err_entry read_cq_error(fid_cq* cq) {
  fi_cq_err_entry e{};
  EXPECT_EQ(fi_cq_readerr(cq, &e, 0), 1);
  return e;
}

// One side: a domain, an EQ and a CQ of the given format.
struct Side {
  InfoPtr info;
  fid_domain* domain = nullptr;
  fid_eq* eq = nullptr;
  fid_cq* cq = nullptr;
  fid_ep* ep = nullptr;
};

// A fabric, the listener side (memloop:0, with a passive endpoint listening) and the client side
// (memloop:1, an endpoint bound and enabled); connect() and accept() are the tests' business.
struct Pair {
  fid_fabric* fabric = nullptr;
  fid_pep* pep = nullptr;
  fid_eq* pep_eq = nullptr;
  Side server, client;

  explicit Pair(fi_cq_format format = FI_CQ_FORMAT_DATA, uint64_t client_cq_bind_flags = 0)
      : client_cq_flags(client_cq_bind_flags) {
    open(format);
  }

  void open(fi_cq_format format) {
    server.info = msg_info(0);
    client.info = msg_info(1);
    if (!server.info || !client.info) return fail("fi_getinfo");
    if (int r = fi_fabric(server.info->fabric_attr, &fabric, nullptr)) return fail("fi_fabric", r);
    fi_eq_attr eq_attr{};
    fi_cq_attr cq_attr{};
    cq_attr.format = format;
    for (Side* s : {&server, &client}) {
      if (int r = fi_domain(fabric, s->info.get(), &s->domain, nullptr)) return fail("fi_domain", r);
      if (int r = fi_eq_open(fabric, &eq_attr, &s->eq, nullptr)) return fail("fi_eq_open", r);
      if (int r = fi_cq_open(s->domain, &cq_attr, &s->cq, nullptr)) return fail("fi_cq_open", r);
    }
    if (int r = fi_eq_open(fabric, &eq_attr, &pep_eq, nullptr)) return fail("fi_eq_open", r);
    if (int r = fi_passive_ep(fabric, server.info.get(), &pep, nullptr)) return fail("fi_passive_ep", r);
    if (int r = fi_pep_bind(pep, &pep_eq->fid, 0)) return fail("fi_pep_bind", r);
    if (int r = fi_listen(pep)) return fail("fi_listen", r);
    if (int r = fi_endpoint(client.domain, client.info.get(), &client.ep, nullptr)) return fail("fi_endpoint", r);
    if (int r = bind_and_enable(client)) return fail("bind/enable", r);
  }

  void fail(const char* step, int r = 0) { failed = std::string(step) + ": " + fi_strerror(-r); }
  std::string failed;  // the set-up step that failed, if any
  bool ready() const { return failed.empty(); }

  uint64_t client_cq_flags = 0;  // extra fi_ep_bind flags of the client's CQ (FI_SELECTIVE_COMPLETION)

  int bind_and_enable(Side& s) {
    if (int r = fi_ep_bind(s.ep, &s.eq->fid, 0)) return r;
    const uint64_t extra = &s == &client ? client_cq_flags : 0;
    if (int r = fi_ep_bind(s.ep, &s.cq->fid, FI_TRANSMIT | FI_RECV | extra)) return r;
    return fi_enable(s.ep);
  }

  std::vector<uint8_t> pep_name() const {
    std::vector<uint8_t> name(64);
    size_t len = name.size();
    fi_getname(&pep->fid, name.data(), &len);
    name.resize(len);
    return name;
  }

  // fi_connect with `request_data`; the FI_CONNREQ entry seen by the listener (empty on failure).
  std::vector<uint8_t> connect(const std::string& request_data) {
    const std::vector<uint8_t> name = pep_name();
    if (int r = fi_connect(client.ep, name.data(), request_data.data(), request_data.size())) {
      fail("fi_connect", r);
      return {};
    }
    std::vector<uint8_t> entry;
    if (int r = read_event(pep_eq, &entry); r != FI_CONNREQ) {
      fail("FI_CONNREQ", r);
      return {};
    }
    return entry;
  }

  // Accepts the request of `connreq` with `reply_data`; true when both sides saw FI_CONNECTED.
  bool accept(const std::vector<uint8_t>& connreq, const std::string& reply_data) {
    fi_info* info = cm(connreq).info;
    const bool opened = fi_endpoint(server.domain, info, &server.ep, nullptr) == 0;
    fi_freeinfo(info);
    if (!opened || bind_and_enable(server) != 0) {
      fail("accepting endpoint");
      return false;
    }
    if (int r = fi_accept(server.ep, reply_data.data(), reply_data.size())) {
      fail("fi_accept", r);
      return false;
    }
    std::vector<uint8_t> entry;
    if (int r = read_event(server.eq, &entry); r != FI_CONNECTED || cm(entry).fid != &server.ep->fid) {
      fail("server FI_CONNECTED", r);
      return false;
    }
    if (int r = read_event(client.eq, &entry); r != FI_CONNECTED || cm(entry).fid != &client.ep->fid) {
      fail("client FI_CONNECTED", r);
      return false;
    }
    accepted_data = cm_data(entry);
    return true;
  }

  bool connected() {
    const std::vector<uint8_t> connreq = connect("");
    return !connreq.empty() && accept(connreq, "");
  }

  std::string accepted_data;  // the CM data the client's FI_CONNECTED carried

  ~Pair() {
    for (Side* s : {&server, &client})
      if (s->ep) { EXPECT_EQ(fi_close(&s->ep->fid), 0); }
    if (pep) { EXPECT_EQ(fi_close(&pep->fid), 0); }
    if (pep_eq) { EXPECT_EQ(fi_close(&pep_eq->fid), 0); }
    for (Side* s : {&server, &client}) {
      if (s->cq) { EXPECT_EQ(fi_close(&s->cq->fid), 0); }
      if (s->eq) { EXPECT_EQ(fi_close(&s->eq->fid), 0); }
      if (s->domain) { EXPECT_EQ(fi_close(&s->domain->fid), 0); }
    }
    if (fabric) { EXPECT_EQ(fi_close(&fabric->fid), 0); }
  }
};

// ---- fi.MsgConnectAccept ----

TEST(MsgConnectAccept, CmDataBothWaysAndNames) {
  Pair p;
  ASSERT_TRUE(p.ready()) << p.failed;
  const std::vector<uint8_t> connreq = p.connect("hello from the client");
  ASSERT_FALSE(connreq.empty()) << p.failed;
  EXPECT_EQ(cm(connreq).fid, &p.pep->fid);
  EXPECT_EQ(cm_data(connreq), "hello from the client");
  const fi_info* info = cm(connreq).info;
  ASSERT_NE(info, nullptr);
  ASSERT_NE(info->handle, nullptr);
  EXPECT_EQ(info->handle->fclass, FI_CLASS_CONNREQ);
  // dest_addr of the request is the client endpoint's name.
  std::vector<uint8_t> client_name(64);
  size_t len = client_name.size();
  ASSERT_EQ(fi_getname(&p.client.ep->fid, client_name.data(), &len), 0);
  client_name.resize(len);
  ASSERT_EQ(info->dest_addrlen, client_name.size());
  EXPECT_EQ(std::memcmp(info->dest_addr, client_name.data(), len), 0);

  ASSERT_TRUE(p.accept(connreq, "welcome")) << p.failed;
  EXPECT_EQ(p.accepted_data, "welcome");
  // fi_getpeer: each side names the other.
  std::vector<uint8_t> peer(64);
  len = peer.size();
  ASSERT_EQ(fi_getpeer(p.server.ep, peer.data(), &len), 0);
  peer.resize(len);
  EXPECT_EQ(peer, client_name);
  size_t cm_size = 0, opt_len = sizeof cm_size;
  ASSERT_EQ(fi_getopt(&p.client.ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &cm_size, &opt_len), 0);
  EXPECT_EQ(cm_size, 256u);
}

TEST(MsgConnectAccept, BadCallsGetTypedErrors) {
  Pair p;
  ASSERT_TRUE(p.ready()) << p.failed;
  const std::vector<uint8_t> name = p.pep_name();
  std::string too_much(257, 'x');
  EXPECT_EQ(fi_connect(p.client.ep, name.data(), too_much.data(), too_much.size()), -FI_EINVAL);
  std::vector<uint8_t> garbage(36, 0xff);
  EXPECT_EQ(fi_connect(p.client.ep, garbage.data(), nullptr, 0), -FI_EINVAL);
  char buf[8] = {};
  EXPECT_EQ(fi_send(p.client.ep, buf, sizeof buf, nullptr, 0, nullptr), -FI_ENOTCONN);  // not connected yet
  EXPECT_EQ(fi_shutdown(p.client.ep, 0), -FI_ENOTCONN);
  EXPECT_EQ(fi_accept(p.client.ep, nullptr, 0), -FI_EOPBADSTATE);  // no connection request behind it
  // An endpoint not enabled cannot connect, nor move data by RMA; MSG endpoints have no tagged calls.
  fid_ep* raw = nullptr;
  ASSERT_EQ(fi_endpoint(p.client.domain, p.client.info.get(), &raw, nullptr), 0);
  EXPECT_EQ(fi_connect(raw, name.data(), nullptr, 0), -FI_EOPBADSTATE);
  EXPECT_EQ(fi_enable(raw), -FI_ENOEQ);
  EXPECT_EQ(fi_tsend(raw, buf, sizeof buf, nullptr, 0, 1, nullptr), -FI_ENOSYS);
  EXPECT_EQ(fi_write(raw, buf, sizeof buf, nullptr, 0, 0, 0, nullptr), -FI_ENOTCONN);
  EXPECT_EQ(fi_close(&raw->fid), 0);
  // Queues refuse to close while an endpoint uses them.
  EXPECT_EQ(fi_close(&p.client.cq->fid), -FI_EBUSY);
  EXPECT_EQ(fi_close(&p.client.eq->fid), -FI_EBUSY);
}

TEST(MsgConnectAccept, GetinfoOffersMessagesOnly) {
  InfoPtr info = msg_info(0);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->caps & (FI_TAGGED | FI_RMA | FI_READ | FI_WRITE), 0u);
  EXPECT_EQ(info->ep_attr->max_msg_size, kMsgMax);
  InfoPtr hints = mroce_hints();
  hints->ep_attr->type = FI_EP_MSG;
  hints->caps = FI_TAGGED;  // not implemented on MSG endpoints: no entry
  InfoPtr none;
  EXPECT_EQ(getinfo(FI_VERSION(1, 17), hints.get(), &none), -FI_ENODATA);
  hints->caps = FI_MSG;
  hints->ep_attr->max_msg_size = kMsgMax + 1;
  EXPECT_EQ(getinfo(FI_VERSION(1, 17), hints.get(), &none), -FI_ENODATA);
}

// ---- fi.MsgReject ----

TEST(MsgReject, RefusedWithCmData) {
  Pair p;
  ASSERT_TRUE(p.ready()) << p.failed;
  const std::vector<uint8_t> connreq = p.connect("may I?");
  ASSERT_FALSE(connreq.empty()) << p.failed;
  fi_info* info = cm(connreq).info;
  ASSERT_EQ(fi_reject(p.pep, info->handle, "no, busy", 8), 0);
  fi_freeinfo(info);
  std::vector<uint8_t> entry;
  ASSERT_EQ(read_event(p.client.eq, &entry), -FI_EAVAIL);
  // Peeked without a buffer: err_data points at the provider's copy.
  fi_eq_err_entry err{};
  ASSERT_EQ(fi_eq_readerr(p.client.eq, &err, FI_PEEK), static_cast<ssize_t>(sizeof err));
  EXPECT_EQ(err.err, FI_ECONNREFUSED);
  EXPECT_EQ(err.fid, &p.client.ep->fid);
  ASSERT_EQ(err.err_data_size, 8u);
  EXPECT_EQ(std::string(static_cast<const char*>(err.err_data), 8), "no, busy");
  // Read into the application's buffer (fi_eq(3), API 1.5+), cut to its size.
  char app_data[4] = {};
  fi_eq_err_entry taken{};
  taken.err_data = app_data;
  taken.err_data_size = sizeof app_data;
  ASSERT_EQ(fi_eq_readerr(p.client.eq, &taken, 0), static_cast<ssize_t>(sizeof taken));
  EXPECT_EQ(taken.err, FI_ECONNREFUSED);
  EXPECT_EQ(taken.err_data, app_data);
  ASSERT_EQ(taken.err_data_size, 4u);
  EXPECT_EQ(std::string(app_data, 4), "no, ");
  EXPECT_EQ(fi_eq_readerr(p.client.eq, &taken, 0), -FI_EAGAIN);  // reported once
  char buf[4] = {};
  EXPECT_EQ(fi_send(p.client.ep, buf, sizeof buf, nullptr, 0, nullptr), -FI_ENOTCONN);
}

// A request belongs to one endpoint; rejecting it after fi_endpoint leaves that endpoint unable to
// accept, and closing it afterwards is safe.
TEST(MsgReject, RequestHeldByOneEndpoint) {
  Pair p;
  ASSERT_TRUE(p.ready()) << p.failed;
  const std::vector<uint8_t> connreq = p.connect("");
  ASSERT_FALSE(connreq.empty()) << p.failed;
  fi_info* info = cm(connreq).info;
  fid_ep* first = nullptr;
  fid_ep* second = nullptr;
  ASSERT_EQ(fi_endpoint(p.server.domain, info, &first, nullptr), 0);
  EXPECT_EQ(fi_endpoint(p.server.domain, info, &second, nullptr), -FI_EINVAL);
  ASSERT_EQ(fi_reject(p.pep, info->handle, nullptr, 0), 0);
  fi_freeinfo(info);
  ASSERT_EQ(fi_ep_bind(first, &p.server.eq->fid, 0), 0);
  ASSERT_EQ(fi_ep_bind(first, &p.server.cq->fid, FI_TRANSMIT | FI_RECV), 0);
  ASSERT_EQ(fi_enable(first), 0);
  EXPECT_EQ(fi_accept(first, nullptr, 0), -FI_EOPBADSTATE);
  EXPECT_EQ(fi_close(&first->fid), 0);
  std::vector<uint8_t> entry;
  ASSERT_EQ(read_event(p.client.eq, &entry), -FI_EAVAIL);
  fi_eq_err_entry err{};
  ASSERT_EQ(fi_eq_readerr(p.client.eq, &err, 0), static_cast<ssize_t>(sizeof err));
  EXPECT_EQ(err.err, FI_ECONNREFUSED);
}

TEST(MsgReject, NobodyListeningIsRefused) {
  Pair p;
  ASSERT_TRUE(p.ready()) << p.failed;
  std::vector<uint8_t> name = p.pep_name();
  name[7] ^= 0x55;  // another endpoint id on the same device (bytes 4..7)
  ASSERT_EQ(fi_connect(p.client.ep, name.data(), nullptr, 0), 0);
  std::vector<uint8_t> entry;
  ASSERT_EQ(read_event(p.client.eq, &entry), -FI_EAVAIL);
  fi_eq_err_entry err{};
  ASSERT_EQ(fi_eq_readerr(p.client.eq, &err, 0), static_cast<ssize_t>(sizeof err));
  EXPECT_EQ(err.err, FI_ECONNREFUSED);
  EXPECT_EQ(read_event(p.pep_eq, &entry), -FI_EAGAIN);  // the listener saw nothing
}

// ---- fi.MsgSendRecv ----

TEST(MsgSendRecv, PostedReceivesMatchInOrder) {
  Pair p;
  ASSERT_TRUE(p.ready()) << p.failed;
  ASSERT_TRUE(p.connected()) << p.failed;
  char rbuf[3][32] = {};
  int ctx[3] = {};
  for (int i = 0; i < 3; ++i) ASSERT_EQ(fi_recv(p.server.ep, rbuf[i], sizeof rbuf[i], nullptr, 0, &ctx[i]), 0);
  const std::string msgs[3] = {"first", "second message", "third"};
  int sctx[3] = {};
  for (int i = 0; i < 3; ++i) ASSERT_EQ(fi_send(p.client.ep, msgs[i].data(), msgs[i].size(), nullptr, 0, &sctx[i]), 0);
  for (int i = 0; i < 3; ++i) {
    fi_cq_data_entry e{};
    ASSERT_EQ(read_cq(p.server.cq, &e), 1) << i;
    EXPECT_EQ(e.op_context, &ctx[i]);
    EXPECT_EQ(e.flags, FI_MSG | FI_RECV);
    EXPECT_EQ(e.len, msgs[i].size());
    EXPECT_EQ(e.buf, rbuf[i]);
    EXPECT_EQ(std::string(rbuf[i], e.len), msgs[i]);
  }
  for (int i = 0; i < 3; ++i) {
    fi_cq_data_entry e{};
    ASSERT_EQ(read_cq(p.client.cq, &e), 1);
    EXPECT_EQ(e.op_context, &sctx[i]);
    EXPECT_EQ(e.flags, FI_MSG | FI_SEND);
  }
  fi_cq_data_entry extra{};
  EXPECT_EQ(fi_cq_read(p.client.cq, &extra, 1), -FI_EAGAIN);  // each exactly once
  EXPECT_EQ(fi_cq_read(p.server.cq, &extra, 1), -FI_EAGAIN);
}

TEST(MsgSendRecv, UnexpectedMessagesWaitForTheirReceive) {
  Pair p;
  ASSERT_TRUE(p.ready()) << p.failed;
  ASSERT_TRUE(p.connected()) << p.failed;
  ASSERT_EQ(fi_send(p.client.ep, "early-1", 7, nullptr, 0, nullptr), 0);
  ASSERT_EQ(fi_send(p.client.ep, "early-2", 7, nullptr, 0, nullptr), 0);
  fi_cq_data_entry e{};
  ASSERT_EQ(read_cq(p.client.cq, &e), 1);  // delivered (acknowledged) before any receive
  ASSERT_EQ(read_cq(p.client.cq, &e), 1);
  char a[16] = {}, b[16] = {};
  ASSERT_EQ(fi_recv(p.server.ep, a, sizeof a, nullptr, 0, a), 0);
  ASSERT_EQ(fi_recv(p.server.ep, b, sizeof b, nullptr, 0, b), 0);
  ASSERT_EQ(read_cq(p.server.cq, &e), 1);
  EXPECT_EQ(e.op_context, a);
  EXPECT_EQ(std::string(a, e.len), "early-1");
  ASSERT_EQ(read_cq(p.server.cq, &e), 1);
  EXPECT_EQ(e.op_context, b);
  EXPECT_EQ(std::string(b, e.len), "early-2");
}

TEST(MsgSendRecv, InjectSenddataSendmsgRecvmsg) {
  Pair p;
  ASSERT_TRUE(p.ready()) << p.failed;
  ASSERT_TRUE(p.connected()) << p.failed;
  char r[4][64] = {};
  for (auto& buf : r) ASSERT_EQ(fi_recv(p.server.ep, buf, sizeof buf, nullptr, 0, buf), 0);
  // fi_inject: no completion at the sender.
  ASSERT_EQ(fi_inject(p.client.ep, "injected", 8, 0), 0);
  // fi_senddata: the data arrives with FI_REMOTE_CQ_DATA.
  int sd_ctx = 0;
  ASSERT_EQ(fi_senddata(p.client.ep, "with data", 9, nullptr, 0xabcd1234u, 0, &sd_ctx), 0);
  // fi_sendmsg with FI_REMOTE_CQ_DATA, and with FI_INJECT.
  const char* text = "sendmsg";
  iovec iov{const_cast<char*>(text), 7};
  int sm_ctx = 0;
  fi_msg msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.context = &sm_ctx;
  msg.data = 77;
  ASSERT_EQ(fi_sendmsg(p.client.ep, &msg, FI_REMOTE_CQ_DATA), 0);
  ASSERT_EQ(fi_sendmsg(p.client.ep, &msg, FI_INJECT), 0);
  struct Expect {
    const char* text;
    uint64_t flags;
    uint64_t data;
  } expect[4] = {{"injected", FI_MSG | FI_RECV, 0},
                 {"with data", FI_MSG | FI_RECV | FI_REMOTE_CQ_DATA, 0xabcd1234u},
                 {"sendmsg", FI_MSG | FI_RECV | FI_REMOTE_CQ_DATA, 77},
                 {"sendmsg", FI_MSG | FI_RECV, 0}};
  for (int i = 0; i < 4; ++i) {
    fi_cq_data_entry e{};
    ASSERT_EQ(read_cq(p.server.cq, &e), 1) << i;
    EXPECT_EQ(e.op_context, r[i]);
    EXPECT_EQ(e.flags, expect[i].flags) << i;
    EXPECT_EQ(std::string(r[i], e.len), expect[i].text);
    if (e.flags & FI_REMOTE_CQ_DATA) { EXPECT_EQ(e.data, expect[i].data) << i; }
  }
  // Sender: fi_inject writes no completion; senddata and both sendmsg do (FI_INJECT on sendmsg only
  // frees the buffer at return, fi_msg(3)).
  fi_cq_data_entry e{};
  for (void* context : {static_cast<void*>(&sd_ctx), static_cast<void*>(&sm_ctx), static_cast<void*>(&sm_ctx)}) {
    ASSERT_EQ(read_cq(p.client.cq, &e), 1);
    EXPECT_EQ(e.op_context, context);
  }
  EXPECT_EQ(read_cq(p.client.cq, &e), -FI_EAGAIN);

  // fi_recvmsg takes the next message.
  char rm[16] = {};
  iovec riov{rm, sizeof rm};
  fi_msg rmsg{};
  rmsg.msg_iov = &riov;
  rmsg.iov_count = 1;
  rmsg.context = rm;
  ASSERT_EQ(fi_recvmsg(p.server.ep, &rmsg, 0), 0);
  ASSERT_EQ(fi_send(p.client.ep, "via recvmsg", 11, nullptr, 0, nullptr), 0);
  ASSERT_EQ(read_cq(p.server.cq, &e), 1);
  EXPECT_EQ(e.op_context, rm);
  EXPECT_EQ(std::string(rm, e.len), "via recvmsg");
}

TEST(MsgSendRecv, LargestMessageArrivesWhole) {
  Pair p;
  ASSERT_TRUE(p.ready()) << p.failed;
  ASSERT_TRUE(p.connected()) << p.failed;
  std::vector<uint8_t> out(kMsgMax), in(kMsgMax, 0);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(i * 131 + (i >> 8));
  ASSERT_EQ(fi_recv(p.server.ep, in.data(), in.size(), nullptr, 0, nullptr), 0);
  ASSERT_EQ(fi_send(p.client.ep, out.data(), out.size(), nullptr, 0, nullptr), 0);
  fi_cq_data_entry e{};
  ASSERT_EQ(read_cq(p.server.cq, &e), 1);
  EXPECT_EQ(e.len, kMsgMax);
  EXPECT_EQ(in, out);
  // Beyond max_msg_size and inject_size: typed refusals, nothing posted.
  std::vector<uint8_t> big(kMsgMax + 1);
  EXPECT_EQ(fi_send(p.client.ep, big.data(), big.size(), nullptr, 0, nullptr), -FI_EMSGSIZE);
  EXPECT_EQ(fi_inject(p.client.ep, big.data(), 257, 0), -FI_EMSGSIZE);
  EXPECT_EQ(fi_senddata(p.client.ep, big.data(), 4, nullptr, uint64_t{1} << 32, 0, nullptr), -FI_EINVAL);
  ASSERT_EQ(read_cq(p.client.cq, &e), 1);
  EXPECT_EQ(read_cq(p.client.cq, &e), -FI_EAGAIN);
}

TEST(MsgSendRecv, TruncationIsAnErrorCompletion) {
  Pair p;
  ASSERT_TRUE(p.ready()) << p.failed;
  ASSERT_TRUE(p.connected()) << p.failed;
  char small[4] = {};
  char next[16] = {};
  ASSERT_EQ(fi_recv(p.server.ep, small, sizeof small, nullptr, 0, small), 0);
  ASSERT_EQ(fi_recv(p.server.ep, next, sizeof next, nullptr, 0, next), 0);
  ASSERT_EQ(fi_send(p.client.ep, "0123456789", 10, nullptr, 0, nullptr), 0);
  ASSERT_EQ(fi_send(p.client.ep, "after", 5, nullptr, 0, nullptr), 0);
  fi_cq_data_entry e{};
  ASSERT_EQ(read_cq(p.server.cq, &e), -FI_EAVAIL);
  const fi_cq_err_entry err = read_cq_error(p.server.cq);
  EXPECT_EQ(err.err, FI_ETRUNC);
  EXPECT_EQ(err.op_context, small);
  EXPECT_EQ(err.len, 4u);
  EXPECT_EQ(err.olen, 6u);
  EXPECT_EQ(std::string(small, 4), "0123");
  ASSERT_EQ(read_cq(p.server.cq, &e), 1);  // the next receive is not disturbed
  EXPECT_EQ(e.op_context, next);
  EXPECT_EQ(std::string(next, e.len), "after");
}

TEST(MsgSendRecv, CqFormatsContextAndMsg) {
  for (fi_cq_format format : {FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG, FI_CQ_FORMAT_TAGGED}) {
    Pair p(format);
    ASSERT_TRUE(p.ready()) << fi_tostr(&format, FI_TYPE_CQ_FORMAT) << p.failed;
    ASSERT_TRUE(p.connected()) << p.failed;
    char buf[16] = {};
    ASSERT_EQ(fi_recv(p.server.ep, buf, sizeof buf, nullptr, 0, buf), 0);
    ASSERT_EQ(fi_send(p.client.ep, "fmt", 3, nullptr, 0, nullptr), 0);
    fi_cq_tagged_entry e{};
    ASSERT_EQ(read_cq(p.server.cq, &e), 1);
    EXPECT_EQ(e.op_context, buf);
    if (format == FI_CQ_FORMAT_CONTEXT) {
      EXPECT_EQ(e.flags, 0u);  // only op_context is written
    } else {
      EXPECT_EQ(e.flags, FI_MSG | FI_RECV);
      EXPECT_EQ(e.len, 3u);
    }
  }
}

// More messages than the send slots and bounce receives of a connection (16 each): sends meet
// -FI_EAGAIN and are retried; every message arrives once, in order, byte-exact, and every send
// completes once.
// Credits (DESIGN.md 5.3): a channel sends at most one message less than the peer's 16 bounce
// receives before the peer gives credits back (the last credit is kept for a credit message), so
// the peer's engine never has to refuse a message for want of a receive (RNR). No call below
// progresses before the first -FI_EAGAIN, so the count is exact.
TEST(MsgSendRecv, CreditsBoundTheMessagesInFlight) {
  Pair p;
  ASSERT_TRUE(p.ready()) << p.failed;
  ASSERT_TRUE(p.connected()) << p.failed;
  std::vector<uint32_t> values(64);
  for (uint32_t i = 0; i < 64; ++i) values[i] = i;
  int accepted = 0;
  for (const uint32_t& v : values) {
    const ssize_t r = fi_send(p.client.ep, &v, sizeof v, nullptr, 0, nullptr);
    if (r == -FI_EAGAIN) break;
    ASSERT_EQ(r, 0);
    ++accepted;
  }
  EXPECT_EQ(accepted, 15);
  // Credits come back as the server reposts its bounces (no receive posted: all unexpected).
  int done = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (accepted < 64 && std::chrono::steady_clock::now() < deadline) {
    fi_cq_data_entry e{};
    if (fi_cq_read(p.client.cq, &e, 1) == 1) ++done;
    const ssize_t r = fi_send(p.client.ep, &values[accepted], sizeof(uint32_t), nullptr, 0, nullptr);
    if (r == 0) ++accepted;
  }
  ASSERT_EQ(accepted, 64);
  for (uint32_t i = 0; i < 64; ++i) {
    uint32_t got = ~0u;
    ASSERT_EQ(fi_recv(p.server.ep, &got, sizeof got, nullptr, 0, nullptr), 0);
    fi_cq_data_entry e{};
    ASSERT_EQ(read_cq(p.server.cq, &e), 1);
    EXPECT_EQ(got, i);
  }
  for (; done < 64; ++done) {
    fi_cq_data_entry e{};
    ASSERT_EQ(read_cq(p.client.cq, &e), 1) << done;
  }
}

TEST(MsgSendRecv, ManyMessagesInOrderWithBackPressure) {
  Pair p;
  ASSERT_TRUE(p.ready()) << p.failed;
  ASSERT_TRUE(p.connected()) << p.failed;
  constexpr int kCount = 200;
  auto size_of = [](int i) { return static_cast<size_t>((i * 7919) % kMsgMax) + 1; };
  auto byte_of = [](int i, size_t j) { return static_cast<uint8_t>(i * 31 + j * 7); };
  std::vector<std::vector<uint8_t>> in(kCount, std::vector<uint8_t>(kMsgMax));
  for (int i = 0; i < kCount; ++i) ASSERT_EQ(fi_recv(p.server.ep, in[i].data(), kMsgMax, nullptr, 0, &in[i]), 0);
  int sent = 0, send_done = 0, received = 0, again = 0;
  std::vector<uint8_t> out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while ((send_done < kCount || received < kCount) && std::chrono::steady_clock::now() < deadline) {
    while (sent < kCount) {  // a burst until the send slots run out
      out.resize(size_of(sent));
      for (size_t j = 0; j < out.size(); ++j) out[j] = byte_of(sent, j);
      const ssize_t r = fi_send(p.client.ep, out.data(), out.size(), nullptr, 0, nullptr);
      if (r != 0) {
        ASSERT_EQ(r, -FI_EAGAIN);
        ++again;
        break;
      }
      ++sent;
    }
    fi_cq_data_entry e{};
    if (fi_cq_read(p.client.cq, &e, 1) == 1) ++send_done;
    const ssize_t n = fi_cq_read(p.server.cq, &e, 1);
    ASSERT_NE(n, -FI_EAVAIL) << "error completion at message " << received;
    if (n == 1) {
      ASSERT_EQ(e.op_context, &in[received]) << received;
      ASSERT_EQ(e.len, size_of(received)) << received;
      for (size_t j = 0; j < e.len; ++j) ASSERT_EQ(in[received][j], byte_of(received, j)) << received << " " << j;
      ++received;
    }
  }
  EXPECT_EQ(send_done, kCount);
  EXPECT_EQ(received, kCount);
  EXPECT_GT(again, 0);  // the back-pressure path was taken
  fi_cq_data_entry e{};
  EXPECT_EQ(fi_cq_read(p.client.cq, &e, 1), -FI_EAGAIN);
  EXPECT_EQ(fi_cq_read(p.server.cq, &e, 1), -FI_EAGAIN);
}

TEST(MsgSendRecv, SelectiveCompletion) {
  Pair p(FI_CQ_FORMAT_DATA, FI_SELECTIVE_COMPLETION);
  ASSERT_TRUE(p.ready()) << p.failed;
  ASSERT_TRUE(p.connected()) << p.failed;
  char in[3][8] = {};
  for (auto& buf : in) ASSERT_EQ(fi_recv(p.server.ep, buf, sizeof buf, nullptr, 0, buf), 0);
  // fi_send: no entry; fi_sendmsg with FI_COMPLETION: one; without: none.
  ASSERT_EQ(fi_send(p.client.ep, "quiet", 5, nullptr, 0, nullptr), 0);
  iovec iov{const_cast<char*>("asked"), 5};
  int asked = 0;
  fi_msg msg{};
  msg.msg_iov = &iov;
  msg.iov_count = 1;
  msg.context = &asked;
  ASSERT_EQ(fi_sendmsg(p.client.ep, &msg, FI_COMPLETION), 0);
  ASSERT_EQ(fi_sendmsg(p.client.ep, &msg, 0), 0);
  fi_cq_data_entry e{};
  for (int i = 0; i < 3; ++i) ASSERT_EQ(read_cq(p.server.cq, &e), 1) << i;  // all three arrived
  ASSERT_EQ(read_cq(p.client.cq, &e), 1);
  EXPECT_EQ(e.op_context, &asked);
  EXPECT_EQ(read_cq(p.client.cq, &e), -FI_EAGAIN);
  // A truncated receive is reported even on a selective CQ.
  char tiny[2] = {};
  ASSERT_EQ(fi_recv(p.client.ep, tiny, sizeof tiny, nullptr, 0, tiny), 0);
  ASSERT_EQ(fi_send(p.server.ep, "long", 4, nullptr, 0, nullptr), 0);
  ASSERT_EQ(read_cq(p.client.cq, &e), -FI_EAVAIL);
  EXPECT_EQ(read_cq_error(p.client.cq).err, FI_ETRUNC);
}

// ---- fi.MsgShutdown ----

TEST(MsgShutdown, PeerSeesShutdownAndReceivesAreFlushed) {
  Pair p;
  ASSERT_TRUE(p.ready()) << p.failed;
  ASSERT_TRUE(p.connected()) << p.failed;
  char first[16] = {}, pending[16] = {};
  ASSERT_EQ(fi_recv(p.server.ep, first, sizeof first, nullptr, 0, first), 0);
  ASSERT_EQ(fi_send(p.client.ep, "last words", 10, nullptr, 0, nullptr), 0);
  ASSERT_EQ(fi_shutdown(p.client.ep, 0), 0);
  ASSERT_EQ(fi_recv(p.server.ep, pending, sizeof pending, nullptr, 0, pending), 0);
  std::vector<uint8_t> entry;
  ASSERT_EQ(read_event(p.server.eq, &entry), FI_SHUTDOWN);
  EXPECT_EQ(cm(entry).fid, &p.server.ep->fid);
  // The message sent before the shutdown arrived; the receive still posted failed, once.
  fi_cq_data_entry e{};
  ASSERT_EQ(read_cq(p.server.cq, &e), -FI_EAVAIL);
  ASSERT_EQ(fi_cq_read(p.server.cq, &e, 1), -FI_EAVAIL);
  const fi_cq_err_entry err = read_cq_error(p.server.cq);
  EXPECT_EQ(err.err, FI_ECANCELED);
  EXPECT_EQ(err.op_context, pending);
  ASSERT_EQ(read_cq(p.server.cq, &e), 1);
  EXPECT_EQ(e.op_context, first);
  EXPECT_EQ(std::string(first, e.len), "last words");
  EXPECT_EQ(fi_cq_read(p.server.cq, &e, 1), -FI_EAGAIN);
  // Both ends refuse to send now; the client's send completed.
  EXPECT_EQ(fi_send(p.client.ep, "x", 1, nullptr, 0, nullptr), -FI_ENOTCONN);
  EXPECT_EQ(fi_send(p.server.ep, "x", 1, nullptr, 0, nullptr), -FI_ENOTCONN);
  ASSERT_EQ(read_cq(p.client.cq, &e), 1);
  EXPECT_EQ(read_event(p.client.eq, &entry), -FI_EAGAIN);  // no FI_SHUTDOWN for the side that shut down
}

}  // namespace
}  // namespace mroce::fi_test
