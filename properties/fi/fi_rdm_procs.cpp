// Two processes with RDM endpoints over memif (rdm_procs.sh), in two roles pairs:
// - fi.RdmCreditsMemif, sender / receiver: the sender posts 1000 messages (1 B to 9000 B eager, every
//   100th 100 KiB by rendezvous) before the receiver posts any receive; the receiver waits until all
//   are posted, then takes them: each exactly once, in order, byte-exact, nothing after the last.
//   Between processes the receiver's engine has only its 16 bounces per connection; without the
//   provider's credits the burst would overrun them (RNR, retries, lost or failed sends). The
//   in-process memloop tests cannot show this.
// - fi.RdmDeadPeerMemif, survivor / victim: once the victim has taken one message, the script kills
//   it (SIGKILL: no goodbye). Every send the survivor posts to it afterwards (eager, tagged,
//   rendezvous, and one more after those failed: a new connection attempt) completes once with an
//   error entry (fi_cq_readerr, FI_ECONNABORTED), none succeeds, none is refused at post time, and none
//   hangs: issue #18, "a peer that dies gives error completions, not a hang".
//   fi_rdm_procs sender|receiver|survivor|victim DIR      (DIR: the memif socket, the exchanged
//   addresses and the scripts' marks)
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kMessages = 1000;
constexpr size_t kLarge = 100 * 1024;

[[noreturn]] void die(const char* what, long v) {
  std::fprintf(stderr, "fi_rdm_procs: %s (%ld)\n", what, v);
  std::exit(1);
}

size_t message_size(int i) { return i % 100 == 99 ? kLarge : 1 + (static_cast<size_t>(i) * 7919) % 9000; }

uint8_t pattern(int i, size_t at) { return static_cast<uint8_t>((at * 131 + static_cast<size_t>(i) * 17 + 5) & 0xff); }

void fill(std::vector<uint8_t>& b, int i) {
  for (size_t at = 0; at < b.size(); ++at) b[at] = pattern(i, at);
}

bool exists(const std::string& p) { return std::ifstream(p).good(); }

void wait_for(const std::string& p) {
  for (int t = 0; t < 3000 && !exists(p); ++t) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (!exists(p)) die(("no " + p).c_str(), 0);
}

// Written under a temporary name first so the peer never reads half a file.
void put_file(const std::string& p, const void* data, size_t len) {
  std::string tmp = p + ".tmp";
  std::ofstream(tmp, std::ios::binary).write(static_cast<const char*>(data), static_cast<std::streamsize>(len));
  std::rename(tmp.c_str(), p.c_str());
}

struct Fab {
  fi_info* info = nullptr;
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_cq* cq = nullptr;
  fid_av* av = nullptr;
  fid_ep* ep = nullptr;
  fi_addr_t peer = FI_ADDR_UNSPEC;
};

void check(int rc, const char* what) {
  if (rc != 0) die(what, rc);
}

Fab open_fabric() {
  Fab f;
  fi_info* hints = fi_allocinfo();
  hints->caps = FI_MSG | FI_TAGGED;
  hints->ep_attr->type = FI_EP_RDM;
  hints->mode = FI_CONTEXT;
  hints->domain_attr->mr_mode = 0;  // buffers go with desc NULL, as Open MPI's
  hints->fabric_attr->prov_name = strdup("mroce");
  check(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &f.info), "fi_getinfo");
  fi_freeinfo(hints);
  check(fi_fabric(f.info->fabric_attr, &f.fabric, nullptr), "fi_fabric");
  check(fi_domain(f.fabric, f.info, &f.domain, nullptr), "fi_domain");
  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_MSG;
  cq_attr.size = 128;  // smaller than the burst: the provider must keep the rest
  check(fi_cq_open(f.domain, &cq_attr, &f.cq, nullptr), "fi_cq_open");
  fi_av_attr av_attr{};
  av_attr.type = FI_AV_MAP;
  check(fi_av_open(f.domain, &av_attr, &f.av, nullptr), "fi_av_open");
  check(fi_endpoint(f.domain, f.info, &f.ep, nullptr), "fi_endpoint");
  check(fi_ep_bind(f.ep, &f.av->fid, 0), "bind av");
  check(fi_ep_bind(f.ep, &f.cq->fid, FI_TRANSMIT | FI_RECV), "bind cq");
  check(fi_enable(f.ep), "fi_enable");
  return f;
}

void close_fabric(Fab& f) {
  check(fi_close(&f.ep->fid), "close ep");
  check(fi_close(&f.av->fid), "close av");
  check(fi_close(&f.cq->fid), "close cq");
  check(fi_close(&f.domain->fid), "close domain");
  check(fi_close(&f.fabric->fid), "close fabric");
  fi_freeinfo(f.info);
}

void exchange(Fab& f, const std::string& dir, const char* me, const char* other) {
  char name[256];
  size_t len = sizeof name;
  check(fi_getname(&f.ep->fid, name, &len), "fi_getname");
  put_file(dir + "/" + me + ".addr", name, len);
  wait_for(dir + "/" + other + ".addr");
  std::ifstream in(dir + "/" + other + ".addr", std::ios::binary);
  std::vector<char> peer((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (fi_av_insert(f.av, peer.data(), 1, &f.peer, 0, nullptr) != 1) die("fi_av_insert", 0);
}

// One completion, or nothing (-FI_EAGAIN); an error completion ends the test.
int read_one(Fab& f, fi_cq_msg_entry& e) {
  ssize_t n = fi_cq_read(f.cq, &e, 1);
  if (n == -FI_EAVAIL) {
    fi_cq_err_entry err{};
    fi_cq_readerr(f.cq, &err, 0);
    die(fi_strerror(err.err), static_cast<long>(reinterpret_cast<intptr_t>(err.op_context)));
  }
  if (n == -FI_EAGAIN) return 0;
  if (n != 1) die("fi_cq_read", n);
  return 1;
}

int sender(const std::string& dir) {
  Fab f = open_fabric();
  exchange(f, dir, "sender", "receiver");
  std::vector<std::vector<uint8_t>> bufs(kMessages);
  std::vector<int> done(kMessages + 1, 0);
  uint8_t fin = 0;
  // The receiver's "all taken" message, posted first: the sender stays until the receiver is done.
  check(static_cast<int>(fi_recv(f.ep, &fin, 1, nullptr, f.peer, &done[kMessages])), "fi_recv fin");
  int completed = 0;
  bool fin_seen = false;
  auto reap = [&] {
    fi_cq_msg_entry e{};
    while (read_one(f, e)) {
      auto* c = static_cast<int*>(e.op_context);
      if (c < done.data() || c > &done[kMessages]) die("foreign context", 0);
      if (++*c != 1) die("completed twice", c - done.data());
      if (c == &done[kMessages]) {
        fin_seen = true;
      } else {
        if (!(e.flags & FI_SEND)) die("send completion flags", static_cast<long>(e.flags));
        ++completed;
      }
    }
  };
  for (int i = 0; i < kMessages; ++i) {
    bufs[i].resize(message_size(i));
    fill(bufs[i], i);
    for (;;) {
      ssize_t rc = fi_send(f.ep, bufs[i].data(), bufs[i].size(), nullptr, f.peer, &done[i]);
      if (rc == 0) break;
      if (rc != -FI_EAGAIN) die("fi_send", rc);
      reap();
    }
  }
  put_file(dir + "/posted", "1", 1);
  std::printf("sender: %d sends posted, %d completed before the receiver posted\n", kMessages, completed);
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       (completed < kMessages || !fin_seen) && std::chrono::steady_clock::now() < until;)
    reap();
  if (completed != kMessages || !fin_seen) die("sends not all completed", completed);
  if (fin != 0xF1) die("fin byte", fin);
  std::printf("sender: %d send completions, each once\n", completed);
  close_fabric(f);
  return 0;
}

int receiver(const std::string& dir) {
  Fab f = open_fabric();
  exchange(f, dir, "receiver", "sender");
  wait_for(dir + "/posted");
  // Give the sender's burst time to arrive (the idle-progress thread moves this device meanwhile).
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::vector<uint8_t> buf(kLarge + 1);
  int ctx = 0;
  for (int i = 0; i < kMessages; ++i) {
    std::memset(buf.data(), 0xEE, buf.size());
    check(static_cast<int>(fi_recv(f.ep, buf.data(), buf.size(), nullptr, f.peer, &ctx)), "fi_recv");
    fi_cq_msg_entry e{};
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!read_one(f, e))
      if (std::chrono::steady_clock::now() > until) die("message missing", i);
    if (e.op_context != &ctx || !(e.flags & FI_RECV)) die("receive completion", i);
    if (e.len != message_size(i)) die("length (out of order or lost?)", i);
    for (size_t at = 0; at < e.len; ++at)
      if (buf[at] != pattern(i, at)) die("payload byte", i);
    if (buf[e.len] != 0xEE) die("written past the message", i);
  }
  // Nothing more may arrive: one more receive stays empty, then is canceled.
  check(static_cast<int>(fi_recv(f.ep, buf.data(), buf.size(), nullptr, f.peer, &ctx)), "fi_recv extra");
  fi_cq_msg_entry e{};
  for (auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
       std::chrono::steady_clock::now() < until;)
    if (read_one(f, e)) die("a message after the last", static_cast<long>(e.len));
  check(static_cast<int>(fi_cancel(&f.ep->fid, &ctx)), "fi_cancel");
  fi_cq_err_entry err{};
  for (;;) {
    ssize_t n = fi_cq_read(f.cq, &e, 1);
    if (n == -FI_EAVAIL) break;
    if (n != -FI_EAGAIN) die("canceled receive completed", n);
  }
  fi_cq_readerr(f.cq, &err, 0);
  if (err.err != FI_ECANCELED) die("cancel error", err.err);
  uint8_t fin = 0xF1;
  int fin_ctx = 0;
  for (;;) {
    ssize_t rc = fi_send(f.ep, &fin, 1, nullptr, f.peer, &fin_ctx);
    if (rc == 0) break;
    if (rc != -FI_EAGAIN) die("fi_send fin", rc);
    read_one(f, e);
  }
  while (!read_one(f, e)) {}
  if (e.op_context != &fin_ctx) die("fin completion", 0);
  std::printf("receiver: %d messages in order, byte-exact, once; nothing after\n", kMessages);
  close_fabric(f);
  return 0;
}

int victim(const std::string& dir) {
  Fab f = open_fabric();
  exchange(f, dir, "victim", "survivor");
  uint8_t hello[8] = {};
  int ctx = 0;
  check(static_cast<int>(fi_recv(f.ep, hello, sizeof hello, nullptr, f.peer, &ctx)), "fi_recv hello");
  fi_cq_msg_entry e{};
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30); !read_one(f, e);)
    if (std::chrono::steady_clock::now() > until) die("no hello", 0);
  put_file(dir + "/victim.ready", "1", 1);
  std::this_thread::sleep_for(std::chrono::seconds(120));  // the script kills it here
  die("not killed", 0);
}

int survivor(const std::string& dir) {
  Fab f = open_fabric();
  exchange(f, dir, "survivor", "victim");
  fi_cq_msg_entry e{};
  uint8_t hello[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  int hello_ctx = 0;
  for (ssize_t rc; (rc = fi_send(f.ep, hello, sizeof hello, nullptr, f.peer, &hello_ctx)) != 0;)
    if (rc != -FI_EAGAIN) die("fi_send hello", rc);
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30); !read_one(f, e);)
    if (std::chrono::steady_clock::now() > until) die("hello not completed", 0);
  wait_for(dir + "/victim.dead");
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<uint8_t> small(1024, 0x5a), large(200 * 1024, 0xa5);
  int ctx[7] = {};  // 0 posted, 2 ended (its error completion came)
  int ended = 0;
  // Takes one completion if there is one; every one must be an error entry, once per send.
  auto take_one = [&] {
    ssize_t n = fi_cq_read(f.cq, &e, 1);
    if (n == 1) die("a send to a dead peer completed without an error", static_cast<long>(e.len));
    if (n == -FI_EAGAIN) return;
    if (n != -FI_EAVAIL) die("fi_cq_read", n);
    fi_cq_err_entry err{};
    if (fi_cq_readerr(f.cq, &err, 0) != 1) die("fi_cq_readerr", 0);
    auto* c = static_cast<int*>(err.op_context);
    if (c < ctx || c >= ctx + 7) die("foreign context", 0);
    if (*c != 0) die("completed twice", c - ctx);
    // ConnectionFailed [R-CONN-8] maps to FI_ECONNABORTED (fi_errno_of).
    if (err.err != FI_ECONNABORTED) die(fi_strerror(err.err), c - ctx);
    *c = 2;
    ++ended;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("survivor: send %ld failed after %.2f s: %s\n", static_cast<long>(c - ctx), s, fi_strerror(err.err));
  };
  auto post = [&](int i) {
    for (;;) {
      ssize_t rc = i == 4   ? fi_send(f.ep, large.data(), large.size(), nullptr, f.peer, &ctx[i])
                   : i == 5 ? fi_tsend(f.ep, small.data(), small.size(), nullptr, f.peer, 0x77, &ctx[i])
                            : fi_send(f.ep, small.data(), small.size(), nullptr, f.peer, &ctx[i]);
      if (rc == 0) return;
      if (rc != -FI_EAGAIN) die("a send to a dead peer refused at post time", rc);
      take_one();
    }
  };
  auto reap_errors = [&](int want, int seconds) {
    for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
         ended < want && std::chrono::steady_clock::now() < until;)
      take_one();
    if (ended < want) die("sends to a dead peer never completed", ended);
  };
  for (int i = 0; i < 6; ++i) post(i);
  reap_errors(6, 30);
  post(6);  // after the connection failed: a new attempt, which must fail as well
  reap_errors(7, 30);
  std::printf("survivor: 7 sends to a dead peer, 7 error completions, none succeeded\n");
  close_fabric(f);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) die("usage: fi_rdm_procs sender|receiver|survivor|victim DIR", argc);
  std::string role = argv[1];
  if (role == "sender") return sender(argv[2]);
  if (role == "receiver") return receiver(argv[2]);
  if (role == "survivor") return survivor(argv[2]);
  if (role == "victim") return victim(argv[2]);
  die("role sender|receiver|survivor|victim", 0);
}
