// FI_EP_MSG endpoints and passive endpoints (DESIGN.md 5.2-5.4, milestone M2).
//
// One MSG endpoint = one channel (channel.hpp: an engine connection with its bounce slots) carrying
// the provider's messages: HELLO (initiator -> listener: target ep id, the initiator's address, CM
// data), ACCEPT / REJECT (CM data) and DATA. The engine accepts connections by itself, so the
// libfabric CM (FI_CONNREQ, fi_accept, fi_reject) runs over HELLO/ACCEPT/REJECT (5.4).
//
// RMA (rma.hpp) goes on the endpoint's connection once it is connected; fi_writedata of the peer
// is reported on the receive CQ.
//
// A message is at most kMsgMaxSize bytes (one bounce slot; max_msg_size of MSG entries). An arrival
// is copied into the oldest posted receive, or kept in the unexpected queue until one is posted
// (match.hpp); the bounce is reposted at once.
//
// Everything here runs under the device host mutex.
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "fi/channel.hpp"
#include "fi/endpoint.hpp"
#include "fi/info.hpp"
#include "fi/match.hpp"
#include "fi/objects.hpp"
#include "fi/provider.hpp"
#include "fi/rma.hpp"
#include "fi/rma_calls.hpp"

namespace mroce::fi {
namespace {

constexpr size_t kCmDataSize = 256;  // FI_OPT_CM_DATA_SIZE

struct ConnRequest;

enum class EpState { Idle, Connecting, Connected, Refused, ShutDown };

struct MsgEndpoint {
  struct fid_ep fid;  // first
  Domain* domain = nullptr;
  uint32_t ep_id = 0;
  EventQueue* eq = nullptr;
  EndpointCqs cqs;
  bool enabled = false;
  EpState state = EpState::Idle;
  Channel* channel = nullptr;
  ConnRequest* request = nullptr;  // fi_endpoint with info->handle: the connection fi_accept takes
  MatchQueues match;               // untagged receives from anyone: posting order
  std::vector<uint8_t> peer_name;  // fi_getpeer
  // Initiator: the HELLO (target ep id; this endpoint's name and the CM data), sent once it is up.
  uint32_t hello_dst = 0;
  std::vector<uint8_t> hello_payload;
};

struct PassiveEndpoint {
  struct fid_pep fid;  // first
  Fabric* fabric = nullptr;
  DeviceHost* host = nullptr;
  Device* device = nullptr;
  EndpointAddress address;
  struct fi_info* info = nullptr;  // template of the FI_CONNREQ entries' info
  EventQueue* eq = nullptr;
  bool listening = false;
};

struct ConnRequest {
  struct fid fid;  // first: FI_CLASS_CONNREQ, the info->handle of FI_CONNREQ
  Channel* channel = nullptr;
  DeviceHost* host = nullptr;
  std::vector<uint8_t> peer_name;
  MsgEndpoint* holder = nullptr;  // the endpoint opened with it (one at most)
};

std::vector<uint8_t> cm_entry(fid_t fid, struct fi_info* info, const uint8_t* data, size_t len) {
  std::vector<uint8_t> bytes(sizeof(struct fi_eq_cm_entry) + len);
  struct fi_eq_cm_entry e {};
  e.fid = fid;
  e.info = info;
  std::memcpy(bytes.data(), &e, sizeof e);
  if (len > 0) std::memcpy(bytes.data() + sizeof e, data, len);
  return bytes;
}

void report_eq_error(MsgEndpoint* ep, int err, std::vector<uint8_t> err_data) {
  if (ep->eq == nullptr) return;
  struct fi_eq_err_entry e {};
  e.fid = &ep->fid.fid;
  e.context = ep->fid.fid.context;
  e.err = err;
  push_event_error(ep->eq, e, std::move(err_data));
}

// Posted receives complete with FI_ECANCELED when the connection is gone (nothing will arrive).
void flush_receives(MsgEndpoint* ep) {
  for (const PostedRecv& r : ep->match.take_all_receives())
    report_receive_error(ep->cqs.rx, r, FI_ECANCELED, Status::Flushed);
}

// ---- the endpoint's channel ----

void endpoint_on_up(void* owner, Channel& c) {
  auto* ep = static_cast<MsgEndpoint*>(owner);
  WireHeader h;
  h.type = WireType::Hello;
  h.dst_ep_id = ep->hello_dst;
  if (int r = send_wire(&c, h, ep->hello_payload.data(), ep->hello_payload.size(), TxSlot{})) {
    // Cannot happen with free slots on a new connection; say so rather than hang the connect.
    ep->state = EpState::Refused;
    report_eq_error(ep, -r, {});
  }
  ep->hello_payload.clear();
}

void on_data(MsgEndpoint* ep, const WireHeader& h, const uint8_t* payload, size_t len) {
  if (ep->state != EpState::Connected) {
    FI_WARN(&g_provider, FI_LOG_EP_DATA, "a message for no connected endpoint dropped\n");
    return;
  }
  MessageInfo m;
  m.length = len;
  m.has_data = (h.flags & kHasData) != 0;
  m.data = h.data;
  if (std::optional<PostedRecv> r = ep->match.take_receive(m)) {
    report_receive(ep->cqs.rx, *r, m, copy_into(*r, payload, len));
    return;
  }
  ep->match.add_arrival(Arrival{m, std::vector<uint8_t>(payload, payload + len), std::nullopt});
}

void endpoint_on_message(void* owner, Channel& c, const WireHeader& h, const uint8_t* payload, size_t len) {
  auto* ep = static_cast<MsgEndpoint*>(owner);
  switch (h.type) {
    case WireType::Accept:
      if (ep->state == EpState::Connecting) {
        ep->state = EpState::Connected;
        push_event(ep->eq, FI_CONNECTED, cm_entry(&ep->fid.fid, nullptr, payload, len));
      }
      break;
    case WireType::Reject:
      if (ep->state == EpState::Connecting) {
        ep->state = EpState::Refused;
        report_eq_error(ep, FI_ECONNREFUSED, std::vector<uint8_t>(payload, payload + len));
      }
      c.device->close(c.conn);
      break;
    case WireType::Data:
      on_data(ep, h, payload, len);
      break;
    default:
      FI_WARN(&g_provider, FI_LOG_EP_DATA, "message type %d is not for MSG endpoints\n", static_cast<int>(h.type));
      break;
  }
}

void endpoint_on_sent(void* owner, Channel&, const TxSlot& slot, Status status) {
  auto* ep = static_cast<MsgEndpoint*>(owner);
  // The provider's own CM messages are not the application's business: a failure only logs. (A
  // peer's graceful close may flush an ACCEPT it had received but not yet acknowledged.)
  if (slot.application) report_send(ep->cqs.tx, slot.context, FI_MSG | FI_SEND, slot.report, status);
}

void endpoint_on_down(void* owner, Channel&, Status status) {
  auto* ep = static_cast<MsgEndpoint*>(owner);
  if (ep->state == EpState::Connecting) {
    ep->state = EpState::Refused;  // never reached a listener (no peer, no answer)
    report_eq_error(ep, status == Status::Success ? FI_ECONNREFUSED : FI_EHOSTUNREACH, {});
  } else if (ep->state == EpState::Connected) {
    ep->state = EpState::ShutDown;
    if (ep->eq != nullptr) push_event(ep->eq, FI_SHUTDOWN, cm_entry(&ep->fid.fid, nullptr, nullptr, 0));
  }
  flush_receives(ep);  // the endpoint's close removes the channel
}

void endpoint_on_remote_write(void* owner, Channel&, uint32_t data) {
  auto* ep = static_cast<MsgEndpoint*>(owner);
  if (ep->state == EpState::Connected) report_remote_write(ep->cqs.rx, data, FI_ADDR_NOTAVAIL);
}

void ignore_read(void*, Channel&, uint64_t, Status) {}  // MSG endpoints post no rendezvous reads
void ignore_writable(void*, Channel&) {}                // the application retries its -FI_EAGAIN

const ChannelHandler kEndpointHandler = {
    .on_up = endpoint_on_up,
    .on_message = endpoint_on_message,
    .on_sent = endpoint_on_sent,
    .on_read = ignore_read,
    .on_writable = ignore_writable,
    .on_down = endpoint_on_down,
    .on_remote_write = endpoint_on_remote_write,
};

// ---- a connection request's channel: accepted by the engine, not yet by the application ----

void request_on_up(void*, Channel&) {}
void request_on_message(void*, Channel& c, const WireHeader&, const uint8_t*, size_t) {
  FI_WARN(&g_provider, FI_LOG_EP_DATA, "a message before fi_accept dropped (conn %u)\n", c.conn);
}
void request_on_sent(void*, Channel&, const TxSlot&, Status) {}
void request_on_down(void*, Channel&, Status) {}  // kept for the request: fi_accept / fi_reject / close

const ChannelHandler kRequestHandler = {
    .on_up = request_on_up,
    .on_message = request_on_message,
    .on_sent = request_on_sent,
    .on_read = ignore_read,
    .on_writable = ignore_writable,
    .on_down = request_on_down,
};

// A HELLO for a listening passive endpoint: FI_CONNREQ with the initiator's name and CM data.
void pep_on_hello(void* owner, Channel& c, const uint8_t* payload, size_t len) {
  auto* pep = static_cast<PassiveEndpoint*>(owner);
  struct fi_info* info = fi_dupinfo(pep->info);
  if (info == nullptr) {
    c.device->close(c.conn);  // no memory for the request: the initiator sees the connection fail
    return;
  }
  auto* req = new ConnRequest;
  req->fid.fclass = FI_CLASS_CONNREQ;
  req->channel = &c;
  req->host = pep->host;
  req->peer_name.assign(payload, payload + kAddrLen);
  c.handler = &kRequestHandler;
  c.owner = req;
  info->handle = &req->fid;
  std::free(info->dest_addr);
  info->dest_addr = std::malloc(kAddrLen);
  if (info->dest_addr != nullptr) {
    std::memcpy(info->dest_addr, payload, kAddrLen);
    info->dest_addrlen = kAddrLen;
  } else {
    info->dest_addrlen = 0;
  }
  push_event(pep->eq, FI_CONNREQ, cm_entry(&pep->fid.fid, info, payload + kAddrLen, len - kAddrLen));
}

// ---- calls of the application ----

MsgEndpoint* ep_of(struct fid_ep* f) { return object_of<MsgEndpoint>(f); }

std::vector<uint8_t> name_of(DeviceHost* host, const Domain* d, uint32_t ep_id) {
  EndpointAddress a = *host->address(d->name);
  a.ep_id = ep_id;
  const auto bytes = encode(a);
  return {bytes.begin(), bytes.end()};
}

int ep_getname(fid_t fid, void* addr, size_t* addrlen) {
  return guarded(FI_LOG_EP_CTRL, "fi_getname", [&]() -> int {
    if (fid->fclass == FI_CLASS_PEP) {
      auto* pep = object_of<PassiveEndpoint>(fid);
      const auto bytes = encode(pep->address);
      return copy_name(bytes.data(), bytes.size(), addr, addrlen);
    }
    auto* ep = object_of<MsgEndpoint>(fid);
    const std::vector<uint8_t> name = name_of(ep->domain->host, ep->domain, ep->ep_id);
    return copy_name(name.data(), name.size(), addr, addrlen);
  });
}

int ep_getpeer(struct fid_ep* fid, void* addr, size_t* addrlen) {
  return guarded(FI_LOG_EP_CTRL, "fi_getpeer", [&]() -> int {
    MsgEndpoint* ep = ep_of(fid);
    std::lock_guard lock(ep->domain->host->mutex());
    if (ep->peer_name.empty()) return -FI_ENOTCONN;
    return copy_name(ep->peer_name.data(), ep->peer_name.size(), addr, addrlen);
  });
}

int ep_connect(struct fid_ep* fid, const void* addr, const void* param, size_t paramlen) {
  return guarded(FI_LOG_EP_CTRL, "fi_connect", [&]() -> int {
    MsgEndpoint* ep = ep_of(fid);
    if (paramlen > kCmDataSize || (param == nullptr && paramlen > 0)) return -FI_EINVAL;
    const std::optional<EndpointAddress> peer = decode(addr, kAddrLen);
    if (!peer) return -FI_EINVAL;
    std::lock_guard lock(ep->domain->host->mutex());
    if (!ep->enabled || ep->eq == nullptr) return -FI_EOPBADSTATE;
    if (ep->state != EpState::Idle || ep->request != nullptr) return -FI_EISCONN;
    Channel* c = nullptr;
    if (int r = connect_channel(ep->domain->device, peer->device, &kEndpointHandler, ep, &c)) return r;
    // HELLO: the listener's ep id, this endpoint's name, the CM data; sent once the engine is up.
    ep->hello_dst = peer->ep_id;
    ep->hello_payload = name_of(ep->domain->host, ep->domain, ep->ep_id);
    if (paramlen > 0)
      ep->hello_payload.insert(ep->hello_payload.end(), static_cast<const uint8_t*>(param),
                               static_cast<const uint8_t*>(param) + paramlen);
    ep->channel = c;
    ep->state = EpState::Connecting;
    const auto peer_bytes = encode(*peer);
    ep->peer_name.assign(peer_bytes.begin(), peer_bytes.end());
    return 0;
  });
}

int ep_accept(struct fid_ep* fid, const void* param, size_t paramlen) {
  return guarded(FI_LOG_EP_CTRL, "fi_accept", [&]() -> int {
    MsgEndpoint* ep = ep_of(fid);
    if (paramlen > kCmDataSize || (param == nullptr && paramlen > 0)) return -FI_EINVAL;
    std::lock_guard lock(ep->domain->host->mutex());
    if (!ep->enabled || ep->eq == nullptr) return -FI_EOPBADSTATE;
    ConnRequest* req = ep->request;
    if (req == nullptr || ep->state != EpState::Idle) return -FI_EOPBADSTATE;
    Channel* c = req->channel;
    if (c == nullptr || c->down) return -FI_ECONNABORTED;
    if (c->device != ep->domain->device) return -FI_EINVAL;  // the request came to another domain
    WireHeader h;
    h.type = WireType::Accept;
    if (int r = send_wire(c, h, param, paramlen, TxSlot{})) return r;
    c->handler = &kEndpointHandler;
    c->owner = ep;
    ep->channel = c;
    ep->peer_name = req->peer_name;
    ep->request = nullptr;
    delete req;
    ep->state = EpState::Connected;
    push_event(ep->eq, FI_CONNECTED, cm_entry(&ep->fid.fid, nullptr, nullptr, 0));
    return 0;
  });
}

int pep_reject(struct fid_pep* fid, fid_t handle, const void* param, size_t paramlen) {
  return guarded(FI_LOG_EP_CTRL, "fi_reject", [&]() -> int {
    auto* pep = object_of<PassiveEndpoint>(fid);
    if (handle == nullptr || handle->fclass != FI_CLASS_CONNREQ) return -FI_EINVAL;
    if (paramlen > kCmDataSize || (param == nullptr && paramlen > 0)) return -FI_EINVAL;
    auto* req = object_of<ConnRequest>(handle);
    std::lock_guard lock(pep->host->mutex());
    if (req->holder != nullptr) req->holder->request = nullptr;  // that endpoint can no longer accept
    Channel* c = req->channel;
    if (c != nullptr) {
      if (!c->down) {
        WireHeader h;
        h.type = WireType::Reject;
        if (int r = send_wire(c, h, param, paramlen, TxSlot{})) return r;
        c->handler = nullptr;  // nobody holds it: removed at Down
        c->owner = nullptr;
        c->device->close(c->conn);  // graceful: the REJECT goes first
      } else {
        remove_channel(c);
      }
    }
    delete req;
    return 0;
  });
}

int ep_shutdown(struct fid_ep* fid, uint64_t flags) {
  return guarded(FI_LOG_EP_CTRL, "fi_shutdown", [&]() -> int {
    if (flags != 0) return -FI_EBADFLAGS;
    MsgEndpoint* ep = ep_of(fid);
    std::lock_guard lock(ep->domain->host->mutex());
    if (ep->state != EpState::Connected) return -FI_ENOTCONN;
    ep->state = EpState::ShutDown;  // the local side gets no FI_SHUTDOWN; the peer does
    ep->domain->device->close(ep->channel->conn);
    flush_receives(ep);
    return 0;
  });
}

int pep_listen(struct fid_pep* fid) {
  return guarded(FI_LOG_EP_CTRL, "fi_listen", [&]() -> int {
    auto* pep = object_of<PassiveEndpoint>(fid);
    if (pep->eq == nullptr) return -FI_ENOEQ;
    std::lock_guard lock(pep->host->mutex());
    if (pep->listening) return 0;
    if (int r = fi_errno_of(pep->device->listen(true))) return r;
    add_listener(pep->device, pep->address.ep_id, Listener{pep_on_hello, pep});
    pep->listening = true;
    return 0;
  });
}

int ep_getopt(fid_t, int level, int optname, void* optval, size_t* optlen) {
  if (level != FI_OPT_ENDPOINT) return -FI_ENOPROTOOPT;
  if (optname != FI_OPT_CM_DATA_SIZE) return -FI_ENOPROTOOPT;
  if (optval == nullptr || optlen == nullptr || *optlen < sizeof(size_t)) return -FI_ETOOSMALL;
  *static_cast<size_t*>(optval) = kCmDataSize;
  *optlen = sizeof(size_t);
  return 0;
}

int ep_setopt(fid_t, int, int, const void*, size_t) { return -FI_ENOPROTOOPT; }

// ---- data transfer ----

ssize_t post_receive(MsgEndpoint* ep, void* buf, size_t len, void* context, bool report) {
  std::lock_guard lock(ep->domain->host->mutex());
  if (!ep->enabled) return -FI_EOPBADSTATE;
  if (ep->cqs.rx == nullptr) return -FI_ENOCQ;
  if (buf == nullptr && len > 0) return -FI_EINVAL;
  if (ep->match.posted() >= kQueueSize) return -FI_EAGAIN;
  PostedRecv r;
  r.buf = static_cast<uint8_t*>(buf);
  r.len = len;
  r.context = context;
  r.report = report;
  if (std::optional<Arrival> a = ep->match.take_arrival(r)) {  // a message waits already: it is this receive's
    report_receive(ep->cqs.rx, r, a->info, copy_into(r, a->payload.data(), a->payload.size()));
    return 0;
  }
  ep->match.post(r);
  return 0;
}

// Every send: checks, then one DATA message. `report`: a CQ entry at success.
ssize_t post_data(MsgEndpoint* ep, const void* buf, size_t len, bool has_data, uint64_t data, void* context,
                  bool report) {
  if (buf == nullptr && len > 0) return -FI_EINVAL;
  if (len > kMsgMaxSize) return -FI_EMSGSIZE;
  std::lock_guard lock(ep->domain->host->mutex());
  if (ep->state != EpState::Connected) return -FI_ENOTCONN;
  if (ep->cqs.tx == nullptr) return -FI_ENOCQ;
  WireHeader h;
  h.type = WireType::Data;
  h.flags = has_data ? kHasData : 0;
  h.data = data;
  TxSlot slot;
  slot.report = report;
  slot.application = true;
  slot.context = context;
  const int r = send_wire(ep->channel, h, buf, len, slot);
  if (r == -FI_EAGAIN) ep->domain->host->progress();  // let completions free slots for the retry
  return r;
}

ssize_t msg_recv(struct fid_ep* fid, void* buf, size_t len, void*, fi_addr_t, void* context) {
  return guarded(FI_LOG_EP_DATA, "fi_recv", [&] {
    MsgEndpoint* ep = ep_of(fid);
    return static_cast<int>(post_receive(ep, buf, len, context, !ep->cqs.rx_selective));
  });
}

ssize_t msg_recvv(struct fid_ep* fid, const struct iovec* iov, void** desc, size_t count, fi_addr_t src,
                  void* context) {
  if (count > 1) return -FI_EINVAL;  // iov_limit 1
  if (count == 1 && iov == nullptr) return -FI_EINVAL;
  return msg_recv(fid, count ? iov[0].iov_base : nullptr, count ? iov[0].iov_len : 0, desc ? desc[0] : nullptr, src,
                  context);
}

ssize_t msg_recvmsg(struct fid_ep* fid, const struct fi_msg* msg, uint64_t flags) {
  return guarded(FI_LOG_EP_DATA, "fi_recvmsg", [&]() -> int {
    if (msg == nullptr || msg->iov_count > 1 || (msg->iov_count == 1 && msg->msg_iov == nullptr)) return -FI_EINVAL;
    if (flags & ~(FI_COMPLETION | FI_MSG | FI_RECV)) return -FI_EBADFLAGS;
    MsgEndpoint* ep = ep_of(fid);
    const bool report = !ep->cqs.rx_selective || (flags & FI_COMPLETION) != 0;
    void* buf = msg->iov_count ? msg->msg_iov[0].iov_base : nullptr;
    const size_t len = msg->iov_count ? msg->msg_iov[0].iov_len : 0;
    return static_cast<int>(post_receive(ep, buf, len, msg->context, report));
  });
}

ssize_t msg_send(struct fid_ep* fid, const void* buf, size_t len, void*, fi_addr_t, void* context) {
  return guarded(FI_LOG_EP_DATA, "fi_send", [&] {
    MsgEndpoint* ep = ep_of(fid);
    return static_cast<int>(post_data(ep, buf, len, false, 0, context, !ep->cqs.tx_selective));
  });
}

ssize_t msg_sendv(struct fid_ep* fid, const struct iovec* iov, void** desc, size_t count, fi_addr_t dest,
                  void* context) {
  if (count > 1) return -FI_EINVAL;
  if (count == 1 && iov == nullptr) return -FI_EINVAL;
  return msg_send(fid, count ? iov[0].iov_base : nullptr, count ? iov[0].iov_len : 0, desc ? desc[0] : nullptr, dest,
                  context);
}

ssize_t msg_senddata(struct fid_ep* fid, const void* buf, size_t len, void*, uint64_t data, fi_addr_t, void* context) {
  return guarded(FI_LOG_EP_DATA, "fi_senddata", [&]() -> int {
    MsgEndpoint* ep = ep_of(fid);
    if (data >> (8 * kCqDataSize)) return -FI_EINVAL;  // cq_data_size 4
    return static_cast<int>(post_data(ep, buf, len, true, data, context, !ep->cqs.tx_selective));
  });
}

ssize_t msg_sendmsg(struct fid_ep* fid, const struct fi_msg* msg, uint64_t flags) {
  return guarded(FI_LOG_EP_DATA, "fi_sendmsg", [&]() -> int {
    if (msg == nullptr || msg->iov_count > 1 || (msg->iov_count == 1 && msg->msg_iov == nullptr)) return -FI_EINVAL;
    if (flags &
        ~(FI_COMPLETION | FI_INJECT | FI_REMOTE_CQ_DATA | FI_MSG | FI_SEND | FI_TRANSMIT_COMPLETE | FI_INJECT_COMPLETE))
      return -FI_EBADFLAGS;
    MsgEndpoint* ep = ep_of(fid);
    const size_t len = msg->iov_count ? msg->msg_iov[0].iov_len : 0;
    if ((flags & FI_INJECT) && len > kInjectSize) return -FI_EMSGSIZE;
    const bool has_data = (flags & FI_REMOTE_CQ_DATA) != 0;
    if (has_data && (msg->data >> (8 * kCqDataSize))) return -FI_EINVAL;
    const bool report = !ep->cqs.tx_selective || (flags & FI_COMPLETION) != 0;
    return static_cast<int>(post_data(ep, msg->iov_count ? msg->msg_iov[0].iov_base : nullptr, len, has_data,
                                      has_data ? msg->data : 0, msg->context, report));
  });
}

// fi_write / fi_read and the rest of fi_ops_rma (rma_calls.hpp): on the connection, at once.
ssize_t post_rma_request(struct fid_ep* fid, const RmaRequest& request, fi_addr_t) {
  return guarded(FI_LOG_EP_DATA, request.write ? "fi_write" : "fi_read", [&]() -> int {
    if (int r = check_rma(request)) return r;
    MsgEndpoint* ep = ep_of(fid);
    RmaRequest q = request;
    q.offsets = (ep->domain->mr_mode & FI_MR_VIRT_ADDR) == 0;
    DeviceHost* host = ep->domain->host;
    std::lock_guard lock(host->mutex());
    if (ep->state != EpState::Connected) return -FI_ENOTCONN;
    if (ep->cqs.tx == nullptr) return -FI_ENOCQ;
    RmaOp* op = nullptr;
    int r = make_rma(ep->domain->device, ep, ep->cqs.tx, q, &op);
    if (r == 0) {
      r = post_rma(ep->channel, op);
      if (r != 0) drop_rma(op);  // refused at the call: no completion
    }
    if (r == -FI_EAGAIN) host->progress();  // completions free room for the retry
    return r;
  });
}

bool rma_report(struct fid_ep* fid) { return !ep_of(fid)->cqs.tx_selective; }
bool rma_selective(struct fid_ep* fid) { return ep_of(fid)->cqs.tx_selective; }
using MsgRma = RmaCalls<post_rma_request, rma_report, rma_selective>;

// fi_inject: the buffer is copied before the call returns, and no completion is written.
ssize_t msg_inject(struct fid_ep* fid, const void* buf, size_t len, fi_addr_t) {
  return guarded(FI_LOG_EP_DATA, "fi_inject", [&]() -> int {
    if (len > kInjectSize) return -FI_EMSGSIZE;
    return static_cast<int>(post_data(ep_of(fid), buf, len, false, 0, nullptr, false));
  });
}

ssize_t msg_injectdata(struct fid_ep* fid, const void* buf, size_t len, uint64_t data, fi_addr_t) {
  return guarded(FI_LOG_EP_DATA, "fi_injectdata", [&]() -> int {
    if (len > kInjectSize) return -FI_EMSGSIZE;
    if (data >> (8 * kCqDataSize)) return -FI_EINVAL;
    return static_cast<int>(post_data(ep_of(fid), buf, len, true, data, nullptr, false));
  });
}

// ---- endpoint object ----

int ep_bind(struct fid* fid, struct fid* bfid, uint64_t flags) {
  return guarded(FI_LOG_EP_CTRL, "fi_ep_bind", [&]() -> int {
    MsgEndpoint* ep = object_of<MsgEndpoint>(fid);
    if (bfid == nullptr) return -FI_EINVAL;
    std::lock_guard lock(ep->domain->host->mutex());
    if (ep->enabled) return -FI_EOPBADSTATE;
    switch (bfid->fclass) {
      case FI_CLASS_EQ:
        return bind_eq(&ep->eq, ep->domain->host, bfid);
      case FI_CLASS_CQ:
        return bind_cq(&ep->cqs, ep->domain, bfid, flags);
      default:
        return -FI_ENOSYS;  // counters, AVs (an MSG endpoint has none), ...
    }
  });
}

int ep_control(struct fid* fid, int command, void*) {
  return guarded(FI_LOG_EP_CTRL, "fi_control(ep)", [&]() -> int {
    MsgEndpoint* ep = object_of<MsgEndpoint>(fid);
    if (command != FI_ENABLE) return -FI_ENOSYS;
    std::lock_guard lock(ep->domain->host->mutex());
    if (ep->eq == nullptr) return -FI_ENOEQ;  // MSG endpoints report their connection on an EQ
    if (ep->cqs.tx == nullptr || ep->cqs.rx == nullptr) return -FI_ENOCQ;
    ep->enabled = true;
    return 0;
  });
}

int ep_close(struct fid* fid) {
  return guarded(FI_LOG_EP_CTRL, "fi_close(ep)", [&]() -> int {
    MsgEndpoint* ep = object_of<MsgEndpoint>(fid);
    DeviceHost* host = ep->domain->host;
    std::lock_guard lock(host->mutex());
    forget_rma(ep);
    if (Channel* c = ep->channel) release_channel(c);  // outstanding work is discarded with the endpoint
    if (ConnRequest* req = ep->request) {              // never accepted: refuse it for the application
      if (Channel* c = req->channel) release_channel(c);
      delete req;
    }
    unbind(ep->cqs, ep->eq);
    ep->domain->dependents.fetch_sub(1);
    delete ep;
    return 0;
  });
}

ssize_t ep_cancel(fid_t, void*) { return -FI_ENOSYS; }  // M4 (DESIGN.md 5.8 G8)

ssize_t ep_rx_size_left(struct fid_ep* fid) {
  MsgEndpoint* ep = ep_of(fid);
  std::lock_guard lock(ep->domain->host->mutex());
  return static_cast<ssize_t>(kQueueSize - ep->match.posted());
}

ssize_t ep_tx_size_left(struct fid_ep* fid) {
  MsgEndpoint* ep = ep_of(fid);
  std::lock_guard lock(ep->domain->host->mutex());
  if (ep->channel == nullptr) return static_cast<ssize_t>(kTxSlots);
  return static_cast<ssize_t>(sendable(ep->channel));
}

struct fi_ops g_ep_fid_ops = {
    .size = sizeof(struct fi_ops),
    .close = ep_close,
    .bind = ep_bind,
    .control = ep_control,
    .ops_open = no_ops_open,
    .tostr = nullptr,
    .ops_set = nullptr,
};

struct fi_ops_ep g_ep_ops = {
    .size = sizeof(struct fi_ops_ep),
    .cancel = ep_cancel,
    .getopt = ep_getopt,
    .setopt = ep_setopt,
    .tx_ctx = not_supported<int>,
    .rx_ctx = not_supported<int>,
    .rx_size_left = ep_rx_size_left,
    .tx_size_left = ep_tx_size_left,
};

struct fi_ops_cm g_ep_cm_ops = {
    .size = sizeof(struct fi_ops_cm),
    .setname = not_supported<int>,
    .getname = ep_getname,
    .getpeer = ep_getpeer,
    .connect = ep_connect,
    .listen = not_supported<int>,
    .accept = ep_accept,
    .reject = not_supported<int>,
    .shutdown = ep_shutdown,
    .join = not_supported<int>,
};

struct fi_ops_msg g_msg_ops = {
    .size = sizeof(struct fi_ops_msg),
    .recv = msg_recv,
    .recvv = msg_recvv,
    .recvmsg = msg_recvmsg,
    .send = msg_send,
    .sendv = msg_sendv,
    .sendmsg = msg_sendmsg,
    .inject = msg_inject,
    .senddata = msg_senddata,
    .injectdata = msg_injectdata,
};

// MSG endpoints move messages only (fi_getinfo offers no FI_TAGGED/FI_RMA on them): the other
// tables refuse with -FI_ENOSYS instead of leaving null pointers for libfabric's inline calls.
struct fi_ops_tagged g_no_tagged_ops = {
    .size = sizeof(struct fi_ops_tagged),
    .recv = not_supported<ssize_t>,
    .recvv = not_supported<ssize_t>,
    .recvmsg = not_supported<ssize_t>,
    .send = not_supported<ssize_t>,
    .sendv = not_supported<ssize_t>,
    .sendmsg = not_supported<ssize_t>,
    .inject = not_supported<ssize_t>,
    .senddata = not_supported<ssize_t>,
    .injectdata = not_supported<ssize_t>,
};

// ---- passive endpoint object ----

int pep_bind(struct fid* fid, struct fid* bfid, uint64_t flags) {
  return guarded(FI_LOG_EP_CTRL, "fi_pep_bind", [&]() -> int {
    auto* pep = object_of<PassiveEndpoint>(fid);
    if (bfid == nullptr || bfid->fclass != FI_CLASS_EQ) return -FI_EINVAL;
    if (flags != 0) return -FI_EBADFLAGS;
    if (pep->eq != nullptr) return -FI_EINVAL;
    auto* eq = object_of<EventQueue>(bfid);
    eq->host.store(pep->host);
    eq->bound_endpoints.fetch_add(1);
    pep->eq = eq;
    return 0;
  });
}

int pep_close(struct fid* fid) {
  return guarded(FI_LOG_EP_CTRL, "fi_close(pep)", [&]() -> int {
    auto* pep = object_of<PassiveEndpoint>(fid);
    {
      std::lock_guard lock(pep->host->mutex());
      remove_listener(pep->device, pep->address.ep_id);
    }
    if (pep->eq) pep->eq->bound_endpoints.fetch_sub(1);
    pep->fabric->dependents.fetch_sub(1);
    fi_freeinfo(pep->info);
    delete pep;
    return 0;
  });
}

struct fi_ops g_pep_fid_ops = {
    .size = sizeof(struct fi_ops),
    .close = pep_close,
    .bind = pep_bind,
    .control = no_control,
    .ops_open = no_ops_open,
    .tostr = nullptr,
    .ops_set = nullptr,
};

struct fi_ops_ep g_pep_ops = {
    .size = sizeof(struct fi_ops_ep),
    .cancel = not_supported<ssize_t>,
    .getopt = ep_getopt,
    .setopt = ep_setopt,
    .tx_ctx = not_supported<int>,
    .rx_ctx = not_supported<int>,
    .rx_size_left = not_supported<ssize_t>,
    .tx_size_left = not_supported<ssize_t>,
};

struct fi_ops_cm g_pep_cm_ops = {
    .size = sizeof(struct fi_ops_cm),
    .setname = not_supported<int>,
    .getname = ep_getname,
    .getpeer = not_supported<int>,
    .connect = not_supported<int>,
    .listen = pep_listen,
    .accept = not_supported<int>,
    .reject = pep_reject,
    .shutdown = not_supported<int>,
    .join = not_supported<int>,
};

}  // namespace

int open_endpoint(struct fid_domain* domain_fid, struct fi_info* info, struct fid_ep** out, void* context) {
  return guarded(FI_LOG_EP_CTRL, "fi_endpoint", [&]() -> int {
    if (!is_our_domain(domain_fid) || info == nullptr || out == nullptr || info->ep_attr == nullptr) return -FI_EINVAL;
    if (info->ep_attr->type == FI_EP_RDM) return open_rdm_endpoint(domain_fid, info, out, context);
    if (info->ep_attr->type != FI_EP_MSG) return -FI_EINVAL;  // getinfo offers MSG and RDM only
    if (info->caps & ~kMsgEpCaps) return -FI_ENOSYS;          // not offered by getinfo
    Domain* domain = object_of<Domain>(domain_fid);
    ConnRequest* req = nullptr;
    if (info->handle != nullptr) {
      if (info->handle->fclass != FI_CLASS_CONNREQ) return -FI_EINVAL;
      req = object_of<ConnRequest>(info->handle);
      std::lock_guard lock(domain->host->mutex());
      if (req->host != domain->host || req->holder != nullptr) return -FI_EINVAL;  // one endpoint per request
    }
    auto* ep = new MsgEndpoint;
    ep->domain = domain;
    ep->ep_id = new_endpoint_id();
    ep->request = req;
    if (req != nullptr) {
      std::lock_guard lock(domain->host->mutex());
      req->holder = ep;
    }
    ep->fid.fid.fclass = FI_CLASS_EP;
    ep->fid.fid.context = context;
    ep->fid.fid.ops = &g_ep_fid_ops;
    ep->fid.ops = &g_ep_ops;
    ep->fid.cm = &g_ep_cm_ops;
    ep->fid.msg = &g_msg_ops;
    ep->fid.rma = &MsgRma::ops;
    ep->fid.tagged = &g_no_tagged_ops;
    ep->fid.atomic = nullptr;  // no FI_ATOMIC anywhere (DESIGN.md 5.8 G7)
    ep->fid.collective = nullptr;
    domain->dependents.fetch_add(1);
    *out = &ep->fid;
    return 0;
  });
}

int open_passive_ep(struct fid_fabric* fabric_fid, struct fi_info* info, struct fid_pep** out, void* context) {
  return guarded(FI_LOG_EP_CTRL, "fi_passive_ep", [&]() -> int {
    if (!is_our_fabric(fabric_fid) || info == nullptr || out == nullptr) return -FI_EINVAL;
    if (info->ep_attr != nullptr && info->ep_attr->type != FI_EP_MSG) return -FI_EINVAL;
    if (info->domain_attr == nullptr || info->domain_attr->name == nullptr) return -FI_EINVAL;
    PortConfig config;
    if (int r = read_port_config(&config)) return r;
    DeviceHost* host = nullptr;
    if (int r = DeviceHost::acquire(config, &host)) return r;
    std::lock_guard lock(host->mutex());
    Device* device = host->device(info->domain_attr->name);
    const EndpointAddress* address = host->address(info->domain_attr->name);
    if (device == nullptr || address == nullptr) return -FI_ENODEV;
    struct fi_info* copy = fi_dupinfo(info);
    if (copy == nullptr) return -FI_ENOMEM;
    auto* pep = new PassiveEndpoint;
    pep->fabric = object_of<Fabric>(fabric_fid);
    pep->host = host;
    pep->device = device;
    pep->address = *address;
    pep->address.ep_id = new_endpoint_id();
    pep->info = copy;
    pep->fid.fid.fclass = FI_CLASS_PEP;
    pep->fid.fid.context = context;
    pep->fid.fid.ops = &g_pep_fid_ops;
    pep->fid.ops = &g_pep_ops;
    pep->fid.cm = &g_pep_cm_ops;
    pep->fabric->dependents.fetch_add(1);
    *out = &pep->fid;
    return 0;
  });
}

}  // namespace mroce::fi
