// FI_EP_MSG endpoints and passive endpoints (DESIGN.md 5.2-5.4, milestone M2).
//
// One MSG endpoint = one engine connection ("channel") carrying the provider's own messages on stream
// 0, each a WireHeader and a payload: HELLO (initiator -> listener: target ep id, the initiator's
// address, CM data), ACCEPT / REJECT (CM data) and DATA. The engine accepts connections by itself,
// so the libfabric CM (FI_CONNREQ, fi_accept, fi_reject) runs over HELLO/ACCEPT/REJECT (5.4).
//
// Application buffers are never engine buffers (they are not registered): every channel has
// registered bounce slots, kRxSlots receives kept posted and kTxSlots sends, so a message is at most
// kMaxMsgPayload bytes (max_msg_size of MSG entries). An arrival is copied into the oldest posted
// receive, or kept in the unexpected queue until one is posted; the bounce is reposted at once.
//
// Everything here runs under the device host mutex. Headers travel in network byte order
// (encode_header / decode_header): the two ends may be different processes and machines.
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "fi/info.hpp"
#include "fi/objects.hpp"
#include "fi/provider.hpp"

namespace mroce::fi {
namespace {

constexpr size_t kCmDataSize = 256;             // FI_OPT_CM_DATA_SIZE
constexpr size_t kRxSlots = 16, kTxSlots = 16;  // per channel
constexpr uint16_t kStream = 0;                 // everything ordered: stream 0 (DESIGN.md 5.2 streams)

enum class WireType : uint8_t { Hello = 1, Accept = 2, Reject = 3, Data = 4 };
constexpr uint8_t kHasData = 1;  // Data: `data` is remote CQ data

struct WireHeader {
  WireType type;
  uint8_t flags;
  uint16_t reserved;
  uint32_t dst_ep_id;  // Hello: the passive endpoint asked for
  uint64_t data;       // remote CQ data (fi_senddata)
};
// On the wire: [0] type [1] flags [2..3] reserved [4..7] dst_ep_id [8..15] data, big-endian.
constexpr size_t kWireHeaderLen = 16;
constexpr size_t kSlotSize = kWireHeaderLen + kMsgMaxSize;

void encode_header(const WireHeader& h, uint8_t* out) noexcept {
  out[0] = static_cast<uint8_t>(h.type);
  out[1] = h.flags;
  out[2] = static_cast<uint8_t>(h.reserved >> 8);
  out[3] = static_cast<uint8_t>(h.reserved);
  for (int i = 0; i < 4; ++i) out[4 + i] = static_cast<uint8_t>(h.dst_ep_id >> (24 - 8 * i));
  for (int i = 0; i < 8; ++i) out[8 + i] = static_cast<uint8_t>(h.data >> (56 - 8 * i));
}

WireHeader decode_header(const uint8_t* in) noexcept {
  WireHeader h{static_cast<WireType>(in[0]), in[1], static_cast<uint16_t>(in[2] << 8 | in[3]), 0, 0};
  for (int i = 0; i < 4; ++i) h.dst_ep_id = h.dst_ep_id << 8 | in[4 + i];
  for (int i = 0; i < 8; ++i) h.data = h.data << 8 | in[8 + i];
  return h;
}

// wr_id: bit 63 set for a bounce receive, the slot index below.
constexpr uint64_t kRxBit = uint64_t{1} << 63;

struct MsgEndpoint;
struct PassiveEndpoint;
struct ConnRequest;

struct TxSlot {
  bool busy = false;
  bool report = false;       // a CQ entry is due (not inject, not CM, not suppressed)
  bool application = false;  // the application's message (DATA), not the provider's CM message
  void* context = nullptr;
};

// One engine connection with its bounce buffers.
struct Channel {
  Device* device = nullptr;
  uint32_t conn = 0;
  std::vector<uint8_t> rx, tx;  // kRxSlots / kTxSlots slots of kSlotSize
  MemoryRegion rx_mr, tx_mr;
  TxSlot tx_slots[kTxSlots];
  bool up = false, down = false;
  std::vector<uint8_t> hello;      // initiator: sent once the connection is up
  MsgEndpoint* ep = nullptr;       // the endpoint it serves (connecting, or accepted)
  ConnRequest* request = nullptr;  // responder: FI_CONNREQ handed out, not accepted or rejected yet
  bool reject_when_up = false;
};

struct PostedRecv {
  uint8_t* buf;
  size_t len;
  void* context;
  bool report;
};

struct Arrival {
  std::vector<uint8_t> payload;
  bool has_data;
  uint64_t data;
};

enum class EpState { Idle, Connecting, Connected, Refused, ShutDown };

struct MsgEndpoint {
  struct fid_ep fid;  // first
  Domain* domain = nullptr;
  uint32_t ep_id = 0;
  EventQueue* eq = nullptr;
  CompletionQueue* tx_cq = nullptr;
  CompletionQueue* rx_cq = nullptr;
  bool tx_selective = false, rx_selective = false;
  bool enabled = false;
  EpState state = EpState::Idle;
  Channel* channel = nullptr;
  ConnRequest* request = nullptr;  // fi_endpoint with info->handle: the connection fi_accept takes
  std::deque<PostedRecv> posted;   // matched in posting order
  std::deque<Arrival> unexpected;
  std::vector<uint8_t> peer_name;  // fi_getpeer
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

// Channels by (device, engine connection) and listeners by (device, ep id). Host mutex.
std::map<std::pair<Device*, uint32_t>, std::unique_ptr<Channel>> g_channels;
std::map<std::pair<Device*, uint32_t>, PassiveEndpoint*> g_listeners;
std::atomic<uint32_t> g_next_ep_id{1};

uint8_t* rx_slot(Channel* c, size_t i) { return c->rx.data() + i * kSlotSize; }
uint8_t* tx_slot(Channel* c, size_t i) { return c->tx.data() + i * kSlotSize; }

// Registers the bounce buffers and records the channel. nullptr when the device has no room.
Channel* add_channel(Device* device, uint32_t conn) {
  auto c = std::make_unique<Channel>();
  c->device = device;
  c->conn = conn;
  c->rx.resize(kRxSlots * kSlotSize);
  c->tx.resize(kTxSlots * kSlotSize);
  if (device->reg_mr(c->rx.data(), c->rx.size(), access::kLocalWrite, &c->rx_mr) != Result::Ok) return nullptr;
  if (device->reg_mr(c->tx.data(), c->tx.size(), 0, &c->tx_mr) != Result::Ok) {
    device->dereg_mr(c->rx_mr.lkey);
    return nullptr;
  }
  Channel* raw = c.get();
  g_channels[{device, conn}] = std::move(c);
  return raw;
}

void remove_channel(Channel* c) {
  c->device->dereg_mr(c->rx_mr.lkey);
  c->device->dereg_mr(c->tx_mr.lkey);
  g_channels.erase({c->device, c->conn});
}

Channel* find_channel(Device* device, uint32_t conn) {
  auto it = g_channels.find({device, conn});
  return it == g_channels.end() ? nullptr : it->second.get();
}

Result post_bounce(Channel* c, size_t slot) {
  Sge sge{c->rx_mr.iova + slot * kSlotSize, static_cast<uint32_t>(kSlotSize), c->rx_mr.lkey};
  return c->device->post_recv(c->conn, kStream, kRxBit | slot, sge);
}

int fi_errno_of(Result r) {
  switch (r) {
    case Result::Ok:
      return 0;
    case Result::NoResources:
      return -FI_EAGAIN;
    case Result::NotConnected:
      return -FI_ENOTCONN;
    case Result::MessageTooLong:
      return -FI_EMSGSIZE;
    default:
      return -FI_EINVAL;
  }
}

int fi_errno_of(Status s) {  // DESIGN.md 5.6, positive as in fi_cq_err_entry.err
  switch (s) {
    case Status::Success:
      return 0;
    case Status::LocalLength:
    case Status::RemoteLength:
      return FI_ETRUNC;
    case Status::RemoteAccess:
      return FI_EACCES;
    case Status::RnrRetryExceeded:
      return FI_ENORX;
    case Status::ConnectionFailed:
      return FI_ECONNABORTED;
    case Status::Flushed:
    case Status::Canceled:
      return FI_ECANCELED;
    default:
      return FI_EINVAL;
  }
}

// Sends header + payload from a free tx slot. -FI_EAGAIN when every slot is in flight.
int send_wire(Channel* c, const WireHeader& h, const void* payload, size_t len, bool report, void* context) {
  if (len > kMsgMaxSize) return -FI_EMSGSIZE;
  size_t slot = kTxSlots;
  for (size_t i = 0; i < kTxSlots; ++i)
    if (!c->tx_slots[i].busy) {
      slot = i;
      break;
    }
  if (slot == kTxSlots) return -FI_EAGAIN;
  uint8_t* p = tx_slot(c, slot);
  encode_header(h, p);
  if (len > 0) std::memcpy(p + kWireHeaderLen, payload, len);
  Sge sge{c->tx_mr.iova + slot * kSlotSize, static_cast<uint32_t>(kWireHeaderLen + len), c->tx_mr.lkey};
  const Result r = c->device->post_send(c->conn, kStream, slot, sge);
  if (r != Result::Ok) return fi_errno_of(r);
  c->tx_slots[slot] = TxSlot{true, report, h.type == WireType::Data, context};
  return 0;
}

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

// A receive completes: the copied bytes, or FI_ETRUNC with the excess in olen.
void complete_recv(MsgEndpoint* ep, const PostedRecv& r, const uint8_t* payload, size_t len, bool has_data,
                   uint64_t data) {
  const size_t copied = std::min(len, r.len);
  if (copied > 0) std::memcpy(r.buf, payload, copied);
  const uint64_t flags = FI_MSG | FI_RECV | (has_data ? FI_REMOTE_CQ_DATA : 0);
  if (ep->rx_cq == nullptr) return;
  if (copied < len) {  // an error completion is always reported, selective or not
    struct fi_cq_err_entry e {};
    e.op_context = r.context;
    e.flags = flags;
    e.len = copied;
    e.buf = r.buf;
    e.data = data;
    e.olen = len - copied;
    e.err = FI_ETRUNC;
    e.prov_errno = static_cast<int>(Status::LocalLength);
    push_completion_error(ep->rx_cq, e);
    return;
  }
  if (!r.report) return;
  CqEntry c{};
  c.entry.op_context = r.context;
  c.entry.flags = flags;
  c.entry.len = copied;
  c.entry.buf = r.buf;
  c.entry.data = data;
  push_completion(ep->rx_cq, c);
}

// Posted receives complete with FI_ECANCELED when the connection is gone (nothing will arrive).
void flush_receives(MsgEndpoint* ep) {
  while (!ep->posted.empty()) {
    const PostedRecv r = ep->posted.front();
    ep->posted.pop_front();
    if (ep->rx_cq == nullptr) continue;
    struct fi_cq_err_entry e {};
    e.op_context = r.context;
    e.flags = FI_MSG | FI_RECV;
    e.buf = r.buf;
    e.err = FI_ECANCELED;
    e.prov_errno = static_cast<int>(Status::Flushed);
    push_completion_error(ep->rx_cq, e);
  }
}

void on_hello(Channel* c, const uint8_t* payload, size_t len, uint32_t dst_ep_id) {
  auto it = g_listeners.find({c->device, dst_ep_id});
  if (it == g_listeners.end() || len < kAddrLen || c->request != nullptr || c->ep != nullptr) {
    // Nobody listens there: refuse, so the initiator learns it at once (FI_ECONNREFUSED).
    WireHeader h{WireType::Reject, 0, 0, 0, 0};
    send_wire(c, h, nullptr, 0, false, nullptr);
    c->device->close(c->conn);
    return;
  }
  PassiveEndpoint* pep = it->second;
  struct fi_info* info = fi_dupinfo(pep->info);
  if (info == nullptr) {
    c->device->close(c->conn);  // no memory for the request: the initiator sees the connection fail
    return;
  }
  auto* req = new ConnRequest;
  req->fid.fclass = FI_CLASS_CONNREQ;
  req->channel = c;
  req->host = pep->host;
  req->peer_name.assign(payload, payload + kAddrLen);
  c->request = req;
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

void on_data(Channel* c, const WireHeader& h, const uint8_t* payload, size_t len) {
  MsgEndpoint* ep = c->ep;
  if (ep == nullptr || ep->state != EpState::Connected) {
    FI_WARN(&g_provider, FI_LOG_EP_DATA, "a message for no connected endpoint dropped (conn %u)\n", c->conn);
    return;
  }
  const bool has_data = (h.flags & kHasData) != 0;
  if (!ep->posted.empty()) {
    const PostedRecv r = ep->posted.front();
    ep->posted.pop_front();
    complete_recv(ep, r, payload, len, has_data, h.data);
    return;
  }
  ep->unexpected.push_back(Arrival{std::vector<uint8_t>(payload, payload + len), has_data, h.data});
}

void on_receive(Channel* c, const WorkCompletion& wc) {
  const size_t slot = wc.wr_id & ~kRxBit;
  if (wc.status != Status::Success) {
    if (wc.status != Status::Flushed)
      FI_WARN(&g_provider, FI_LOG_EP_DATA, "a receive on connection %u failed: %s\n", c->conn, status_name(wc.status));
    if (wc.status == Status::Canceled && !c->down) post_bounce(c, slot);  // the sender gave it up
    return;                                                               // Flushed: the connection is gone
  }
  if (wc.byte_len >= kWireHeaderLen) {
    const uint8_t* p = rx_slot(c, slot);
    const WireHeader h = decode_header(p);
    const uint8_t* payload = p + kWireHeaderLen;
    const size_t len = wc.byte_len - kWireHeaderLen;
    MsgEndpoint* ep = c->ep;
    switch (h.type) {
      case WireType::Hello:
        on_hello(c, payload, len, h.dst_ep_id);
        break;
      case WireType::Accept:
        if (ep != nullptr && ep->state == EpState::Connecting) {
          ep->state = EpState::Connected;
          push_event(ep->eq, FI_CONNECTED, cm_entry(&ep->fid.fid, nullptr, payload, len));
        }
        break;
      case WireType::Reject:
        if (ep != nullptr && ep->state == EpState::Connecting) {
          ep->state = EpState::Refused;
          report_eq_error(ep, FI_ECONNREFUSED, std::vector<uint8_t>(payload, payload + len));
        }
        c->device->close(c->conn);
        break;
      case WireType::Data:
        on_data(c, h, payload, len);
        break;
    }
  }
  if (!c->down) post_bounce(c, slot);
}

void on_send(Channel* c, const WorkCompletion& wc) {
  if (wc.wr_id >= kTxSlots) return;
  TxSlot slot = c->tx_slots[wc.wr_id];
  c->tx_slots[wc.wr_id] = TxSlot{};
  if (wc.status != Status::Success)
    FI_WARN(&g_provider, FI_LOG_EP_DATA, "a send on connection %u failed: %s\n", c->conn, status_name(wc.status));
  MsgEndpoint* ep = c->ep;
  // The provider's own CM messages are not the application's business: a failure only logs. (A
  // peer's graceful close may flush an ACCEPT it had received but not yet acknowledged.)
  if (ep == nullptr || ep->tx_cq == nullptr || !slot.application) return;
  if (wc.status != Status::Success) {
    // Every failed application send is reported, even an inject's (then without a context).
    struct fi_cq_err_entry e {};
    e.op_context = slot.context;
    e.flags = FI_MSG | FI_SEND;
    e.err = fi_errno_of(wc.status);
    e.prov_errno = static_cast<int>(wc.status);
    push_completion_error(ep->tx_cq, e);
    return;
  }
  if (!slot.report) return;
  CqEntry entry{};
  entry.entry.op_context = slot.context;
  entry.entry.flags = FI_MSG | FI_SEND;
  push_completion(ep->tx_cq, entry);
}

void on_event(Device& device, const ConnEvent& ev) {
  Channel* c = find_channel(&device, ev.conn);
  FI_DBG(&g_provider, FI_LOG_EP_CTRL, "connection %u %s (initiator %d, %s)\n", ev.conn,
         ev.kind == ConnEvent::Kind::Up ? "up" : "down", ev.initiator, status_name(ev.status));
  if (ev.kind == ConnEvent::Kind::Up) {
    if (c == nullptr && !ev.initiator) c = add_channel(&device, ev.conn);  // auto-accepted (5.4 step 2)
    if (c == nullptr) {
      device.close(ev.conn, true);  // an endpoint closed meanwhile, or no room for buffers
      return;
    }
    if (ev.initiator && c->ep == nullptr) {
      device.close(ev.conn, true);  // its endpoint was closed while connecting; the channel goes at Down
      return;
    }
    c->up = true;
    for (size_t i = 0; i < kRxSlots; ++i) post_bounce(c, i);
    if (!c->hello.empty()) {
      const WireHeader h = decode_header(c->hello.data());
      if (int r = send_wire(c, h, c->hello.data() + kWireHeaderLen, c->hello.size() - kWireHeaderLen, false, nullptr)) {
        // Cannot happen with free slots on a new connection; say so rather than hang the connect.
        c->ep->state = EpState::Refused;
        report_eq_error(c->ep, -r, {});
      }
      c->hello.clear();
    }
    return;
  }
  if (c == nullptr) return;
  c->down = true;
  if (MsgEndpoint* ep = c->ep) {
    if (ep->state == EpState::Connecting) {
      ep->state = EpState::Refused;  // never reached a listener (no peer, no answer)
      report_eq_error(ep, ev.status == Status::Success ? FI_ECONNREFUSED : FI_EHOSTUNREACH, {});
    } else if (ep->state == EpState::Connected) {
      ep->state = EpState::ShutDown;
      if (ep->eq != nullptr) push_event(ep->eq, FI_SHUTDOWN, cm_entry(&ep->fid.fid, nullptr, nullptr, 0));
    }
    flush_receives(ep);
    return;  // the endpoint's close removes the channel
  }
  if (c->request == nullptr) remove_channel(c);  // nobody holds it any more
}

}  // namespace

int dispatch_msg_events(Device& device) noexcept {
  // Completions before events: a message that arrived before its connection went down must reach
  // its receive before the Down flushes the receives still posted. (Up cannot be overtaken: a
  // channel's receives are posted only at its Up.)
  int handled = 0;
  WorkCompletion wcs[64];
  for (int n; (n = device.poll_cq(wcs, 64)) > 0;) {
    for (int i = 0; i < n; ++i) {
      Channel* c = find_channel(&device, wcs[i].conn);
      if (c == nullptr) continue;  // its endpoint is closed
      if (wcs[i].wr_id & kRxBit)
        on_receive(c, wcs[i]);
      else
        on_send(c, wcs[i]);
    }
    handled += n;
  }
  ConnEvent events[16];
  for (int n; (n = device.poll_events(events, 16)) > 0;) {
    for (int i = 0; i < n; ++i) on_event(device, events[i]);
    handled += n;
  }
  return handled;
}

namespace {

// ---- calls of the application ----

template <class R, class... Args>
R not_supported(Args...) {
  return static_cast<R>(-FI_ENOSYS);
}

MsgEndpoint* ep_of(struct fid_ep* f) { return object_of<MsgEndpoint>(f); }

std::vector<uint8_t> name_of(DeviceHost* host, const Domain* d, uint32_t ep_id) {
  EndpointAddress a = *host->address(d->name);
  a.ep_id = ep_id;
  const auto bytes = encode(a);
  return {bytes.begin(), bytes.end()};
}

int copy_name(const std::vector<uint8_t>& name, void* addr, size_t* addrlen) {
  if (addrlen == nullptr) return -FI_EINVAL;
  const size_t room = *addrlen;
  *addrlen = name.size();
  if (addr == nullptr || room < name.size()) return -FI_ETOOSMALL;
  std::memcpy(addr, name.data(), name.size());
  return 0;
}

int ep_getname(fid_t fid, void* addr, size_t* addrlen) {
  return guarded(FI_LOG_EP_CTRL, "fi_getname", [&]() -> int {
    if (fid->fclass == FI_CLASS_PEP) {
      auto* pep = object_of<PassiveEndpoint>(fid);
      const auto bytes = encode(pep->address);
      return copy_name({bytes.begin(), bytes.end()}, addr, addrlen);
    }
    auto* ep = object_of<MsgEndpoint>(fid);
    return copy_name(name_of(ep->domain->host, ep->domain, ep->ep_id), addr, addrlen);
  });
}

int ep_getpeer(struct fid_ep* fid, void* addr, size_t* addrlen) {
  return guarded(FI_LOG_EP_CTRL, "fi_getpeer", [&]() -> int {
    MsgEndpoint* ep = ep_of(fid);
    std::lock_guard lock(ep->domain->host->mutex());
    if (ep->peer_name.empty()) return -FI_ENOTCONN;
    return copy_name(ep->peer_name, addr, addrlen);
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
    uint32_t conn = 0;
    if (int r = fi_errno_of(ep->domain->device->connect(peer->device, &conn))) return r;
    Channel* c = add_channel(ep->domain->device, conn);
    if (c == nullptr) {
      ep->domain->device->close(conn, true);
      return -FI_ENOMEM;
    }
    // HELLO: the listener's ep id, this endpoint's name, the CM data; sent once the engine is up.
    const std::vector<uint8_t> self = name_of(ep->domain->host, ep->domain, ep->ep_id);
    WireHeader h{WireType::Hello, 0, 0, peer->ep_id, 0};
    c->hello.resize(kWireHeaderLen);
    encode_header(h, c->hello.data());
    c->hello.insert(c->hello.end(), self.begin(), self.end());
    if (paramlen > 0)
      c->hello.insert(c->hello.end(), static_cast<const uint8_t*>(param),
                      static_cast<const uint8_t*>(param) + paramlen);
    c->ep = ep;
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
    WireHeader h{WireType::Accept, 0, 0, 0, 0};
    if (int r = send_wire(c, h, param, paramlen, false, nullptr)) return r;
    c->request = nullptr;
    c->ep = ep;
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
      c->request = nullptr;
      if (!c->down) {
        WireHeader h{WireType::Reject, 0, 0, 0, 0};
        if (int r = send_wire(c, h, param, paramlen, false, nullptr)) {
          c->request = req;
          return r;
        }
        c->device->close(c->conn);  // graceful: the REJECT goes first; the channel goes at Down
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
    g_listeners[{pep->device, pep->address.ep_id}] = pep;
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
  if (ep->rx_cq == nullptr) return -FI_ENOCQ;
  if (buf == nullptr && len > 0) return -FI_EINVAL;
  if (ep->posted.size() >= kQueueSize) return -FI_EAGAIN;
  PostedRecv r{static_cast<uint8_t*>(buf), len, context, report};
  if (!ep->unexpected.empty()) {  // a message waits already: it is this receive's
    Arrival a = std::move(ep->unexpected.front());
    ep->unexpected.pop_front();
    complete_recv(ep, r, a.payload.data(), a.payload.size(), a.has_data, a.data);
    return 0;
  }
  ep->posted.push_back(r);
  return 0;
}

// Every send: checks, then one DATA message. `report`: a CQ entry at success.
ssize_t post_data(MsgEndpoint* ep, const void* buf, size_t len, bool has_data, uint64_t data, void* context,
                  bool report) {
  if (buf == nullptr && len > 0) return -FI_EINVAL;
  if (len > kMsgMaxSize) return -FI_EMSGSIZE;
  std::lock_guard lock(ep->domain->host->mutex());
  if (ep->state != EpState::Connected) return -FI_ENOTCONN;
  if (ep->tx_cq == nullptr) return -FI_ENOCQ;
  WireHeader h{WireType::Data, static_cast<uint8_t>(has_data ? kHasData : 0), 0, 0, data};
  const int r = send_wire(ep->channel, h, buf, len, report, context);
  if (r == -FI_EAGAIN) ep->domain->host->progress();  // let completions free slots for the retry
  return r;
}

ssize_t msg_recv(struct fid_ep* fid, void* buf, size_t len, void*, fi_addr_t, void* context) {
  return guarded(FI_LOG_EP_DATA, "fi_recv", [&] {
    MsgEndpoint* ep = ep_of(fid);
    return static_cast<int>(post_receive(ep, buf, len, context, !ep->rx_selective));
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
    const bool report = !ep->rx_selective || (flags & FI_COMPLETION) != 0;
    void* buf = msg->iov_count ? msg->msg_iov[0].iov_base : nullptr;
    const size_t len = msg->iov_count ? msg->msg_iov[0].iov_len : 0;
    return static_cast<int>(post_receive(ep, buf, len, msg->context, report));
  });
}

ssize_t msg_send(struct fid_ep* fid, const void* buf, size_t len, void*, fi_addr_t, void* context) {
  return guarded(FI_LOG_EP_DATA, "fi_send", [&] {
    MsgEndpoint* ep = ep_of(fid);
    return static_cast<int>(post_data(ep, buf, len, false, 0, context, !ep->tx_selective));
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
    return static_cast<int>(post_data(ep, buf, len, true, data, context, !ep->tx_selective));
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
    const bool report = !ep->tx_selective || (flags & FI_COMPLETION) != 0;
    return static_cast<int>(post_data(ep, msg->iov_count ? msg->msg_iov[0].iov_base : nullptr, len, has_data,
                                      has_data ? msg->data : 0, msg->context, report));
  });
}

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
      case FI_CLASS_EQ: {
        if (ep->eq != nullptr) return -FI_EINVAL;
        auto* eq = object_of<EventQueue>(bfid);
        eq->host.store(ep->domain->host);
        eq->bound_endpoints.fetch_add(1);
        ep->eq = eq;
        return 0;
      }
      case FI_CLASS_CQ: {
        auto* cq = object_of<CompletionQueue>(bfid);
        if (cq->domain != ep->domain) return -FI_EINVAL;
        if (flags & ~(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION)) return -FI_EBADFLAGS;
        if ((flags & (FI_TRANSMIT | FI_RECV)) == 0) return -FI_EINVAL;
        if (((flags & FI_TRANSMIT) && ep->tx_cq) || ((flags & FI_RECV) && ep->rx_cq)) return -FI_EINVAL;
        const bool selective = (flags & FI_SELECTIVE_COMPLETION) != 0;
        if (flags & FI_TRANSMIT) {
          ep->tx_cq = cq;
          ep->tx_selective = selective;
          cq->bound_endpoints.fetch_add(1);
        }
        if (flags & FI_RECV) {
          ep->rx_cq = cq;
          ep->rx_selective = selective;
          cq->bound_endpoints.fetch_add(1);
        }
        return 0;
      }
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
    if (ep->tx_cq == nullptr || ep->rx_cq == nullptr) return -FI_ENOCQ;
    ep->enabled = true;
    return 0;
  });
}

int ep_close(struct fid* fid) {
  return guarded(FI_LOG_EP_CTRL, "fi_close(ep)", [&]() -> int {
    MsgEndpoint* ep = object_of<MsgEndpoint>(fid);
    DeviceHost* host = ep->domain->host;
    std::lock_guard lock(host->mutex());
    if (Channel* c = ep->channel) {
      c->ep = nullptr;
      if (c->down)
        remove_channel(c);
      else
        c->device->close(c->conn, true);  // outstanding work is discarded with the endpoint
    }
    if (ConnRequest* req = ep->request) {  // never accepted: refuse it for the application
      if (Channel* c = req->channel) {
        c->request = nullptr;
        if (c->down)
          remove_channel(c);
        else
          c->device->close(c->conn, true);
      }
      delete req;
    }
    if (ep->eq) ep->eq->bound_endpoints.fetch_sub(1);
    if (ep->tx_cq) ep->tx_cq->bound_endpoints.fetch_sub(1);
    if (ep->rx_cq) ep->rx_cq->bound_endpoints.fetch_sub(1);
    ep->domain->dependents.fetch_sub(1);
    delete ep;
    return 0;
  });
}

ssize_t ep_cancel(fid_t, void*) { return -FI_ENOSYS; }  // M4 (DESIGN.md 5.8 G8)

ssize_t ep_rx_size_left(struct fid_ep* fid) {
  MsgEndpoint* ep = ep_of(fid);
  std::lock_guard lock(ep->domain->host->mutex());
  return static_cast<ssize_t>(kQueueSize - ep->posted.size());
}

ssize_t ep_tx_size_left(struct fid_ep* fid) {
  MsgEndpoint* ep = ep_of(fid);
  std::lock_guard lock(ep->domain->host->mutex());
  if (ep->channel == nullptr) return static_cast<ssize_t>(kTxSlots);
  return std::count_if(std::begin(ep->channel->tx_slots), std::end(ep->channel->tx_slots),
                       [](const TxSlot& s) { return !s.busy; });
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
struct fi_ops_rma g_no_rma_ops = {
    .size = sizeof(struct fi_ops_rma),
    .read = not_supported<ssize_t>,
    .readv = not_supported<ssize_t>,
    .readmsg = not_supported<ssize_t>,
    .write = not_supported<ssize_t>,
    .writev = not_supported<ssize_t>,
    .writemsg = not_supported<ssize_t>,
    .inject = not_supported<ssize_t>,
    .writedata = not_supported<ssize_t>,
    .injectdata = not_supported<ssize_t>,
};

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
      g_listeners.erase({pep->device, pep->address.ep_id});
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
    if (info->ep_attr->type != FI_EP_MSG) {
      FI_WARN(&g_provider, FI_LOG_EP_CTRL, "only FI_EP_MSG endpoints are implemented by this build\n");
      return -FI_ENOSYS;
    }
    if (info->caps & ~(FI_MSG | FI_SEND | FI_RECV | kSecondaryCaps)) return -FI_ENOSYS;  // not offered by getinfo
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
    ep->ep_id = g_next_ep_id.fetch_add(1);
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
    ep->fid.rma = &g_no_rma_ops;
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
    pep->address.ep_id = g_next_ep_id.fetch_add(1);
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
