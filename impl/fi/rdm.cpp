// FI_EP_RDM endpoints (DESIGN.md 5.2-5.4, milestone M4): reliable unconnected messaging, untagged
// and tagged, over channels (channel.hpp) made on first use.
//
// - Peers: an address of the endpoint's AV becomes a Peer at its first send. The Peer's channel is
//   started then (HELLO with this endpoint's name to the peer's ep id, answered by ACCEPT), and
//   messages wait in the Peer's queue until ACCEPT, and afterwards whenever the channel has no
//   credit or tx slot left (flow control, 5.3: the application never sees an engine RNR; more than
//   tx size queued gives -FI_EAGAIN). A HELLO from a peer binds the accepted channel to it. Each
//   side sends on exactly one channel per peer, its own or the first accepted one, whichever came
//   first, and receives on all: per-direction order holds under simultaneous opens (5.4 step 5).
// - Endpoints of the same device (the endpoint itself included, FI_LOCAL_COMM) are served in the
//   provider: the engine cannot connect a device to itself.
// - Receives match by kind, source (FI_DIRECTED_RECV) and tag/ignore (match.hpp); FI_PEEK,
//   FI_CLAIM (the claimed message kept by the peek's context), FI_DISCARD, fi_cancel.
// - Messages up to kMsgMaxSize go eagerly in a bounce slot; larger ones by rendezvous (5.3): RTS
//   names the sender's buffer (registered for remote read), the receiver reads it into the matched
//   receive's buffer and answers FIN, which completes the send.
// - RMA (M3, rma.hpp) waits in the Peer's queue like a message (connection on first use, order
//   kept); to endpoints of the same device it is done here through the provider's MR table.
//
// Everything here runs under the device host mutex.
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "codec/fast_codec.hpp"
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

struct RdmEndpoint;

// TxSlot::cookie of application messages: the tagged bit, and for an RTS the rendezvous id above.
constexpr uint64_t kCookieTagged = 1, kCookieRendezvous = 2;
constexpr int kCookieIdShift = 2;

// A message to a peer that waits for its channel (ACCEPT, a credit, a tx slot).
struct OutgoingMessage {
  WireHeader header;
  const uint8_t* buf = nullptr;  // the application's bytes: valid until the send completes (fi_msg(3))
  size_t len = 0;
  std::vector<uint8_t> copy;  // injected bytes and the provider's payloads (RTS, FIN): sent from here
  bool owns_bytes = false;
  RmaOp* rma = nullptr;  // an fi_write/fi_read posted in its turn instead of a message (rma.hpp)
  TxSlot slot;           // slot.application: counts towards the endpoint's tx size
};

struct Peer {
  RdmEndpoint* ep = nullptr;
  EndpointAddress address;
  fi_addr_t fi_addr = FI_ADDR_NOTAVAIL;  // where the endpoint's AV has it (looked up when needed)
  Channel* send_channel = nullptr;       // the one channel this side sends on
  bool send_ready = false;               // ACCEPT came (initiated) or was sent (accepted)
  std::vector<Channel*> channels;        // every channel with this peer: receives on all
  std::deque<OutgoingMessage> queued;
};

// An RTS sent: the buffer stays registered until the peer's FIN (or the channel fails).
struct RendezvousSend {
  Peer* peer = nullptr;
  MemoryRegion mr;
  void* context = nullptr;
  bool report = false;
  bool tagged = false;
};

// A matched RTS being read into a receive's buffer.
struct RendezvousRecv {
  PostedRecv recv;
  MessageInfo info;
  MemoryRegion mr;
  Peer* peer = nullptr;
  Channel* channel = nullptr;
  uint64_t sender_id = 0;
  size_t length = 0;  // what the receive takes
};

using PeerKey = std::array<uint8_t, kAddrLen>;

struct RdmEndpoint {
  struct fid_ep fid;  // first
  Domain* domain = nullptr;
  EndpointAddress address;  // with this endpoint's id
  uint64_t caps = 0;
  uint64_t tx_op_flags = 0, rx_op_flags = 0;
  AddressVector* av = nullptr;
  uint64_t av_generation_seen = 0;  // resolve_sources: the AV generation its last pass saw
  EventQueue* eq = nullptr;
  EndpointCqs cqs;
  bool enabled = false;
  std::map<PeerKey, std::unique_ptr<Peer>> peers;
  MatchQueues match;
  std::map<void*, Arrival> claimed;  // FI_PEEK|FI_CLAIM: by the context the peek was given
  std::map<uint64_t, RendezvousSend> rendezvous_sends;
  std::map<uint64_t, RendezvousRecv> rendezvous_recvs;
  uint64_t next_rendezvous_id = 1;
  size_t queued_sends = 0;  // the application's sends waiting in peer queues (tx size bound)
};

// Enabled RDM endpoints by (device, ep id): local delivery. Host mutex.
std::map<std::pair<Device*, uint32_t>, RdmEndpoint*> g_rdm_endpoints;

RdmEndpoint* ep_of(struct fid_ep* f) { return object_of<RdmEndpoint>(f); }

bool same_device(const EndpointAddress& a, const EndpointAddress& b) {
  return a.device == b.device && a.udp_port == b.udp_port && a.device_nonce == b.device_nonce;
}

std::optional<EndpointAddress> av_address(AddressVector* av, fi_addr_t addr) {
  std::lock_guard lock(av->mutex);
  if (addr >= av->table.size() || !av->table[addr]) return std::nullopt;
  return av->table[addr];
}

// The peer's fi_addr in the endpoint's AV, for FI_SOURCE and directed receives: cached, and looked
// up again when the AV changed (an entry removed, or the peer inserted after its first message).
fi_addr_t source_of(Peer* p) {
  AddressVector* av = p->ep->av;
  std::lock_guard lock(av->mutex);
  if (p->fi_addr < av->table.size() && av->table[p->fi_addr] == p->address) return p->fi_addr;
  p->fi_addr = FI_ADDR_NOTAVAIL;
  for (size_t i = 0; i < av->table.size(); ++i)
    if (av->table[i] == p->address) {
      p->fi_addr = i;
      break;
    }
  return p->fi_addr;
}

Peer* peer_of(RdmEndpoint* ep, const EndpointAddress& address) {
  std::unique_ptr<Peer>& slot = ep->peers[encode(address)];
  if (!slot) {
    slot = std::make_unique<Peer>();
    slot->ep = ep;
    slot->address = address;
  }
  return slot.get();
}

// ---- completions ----

// `err`: the fi errno of a failure when the engine status does not say it (0: from the status).
void complete_send(RdmEndpoint* ep, void* context, bool report, bool tagged, Status status, int err = 0) {
  report_send(ep->cqs.tx, context, (tagged ? FI_TAGGED : FI_MSG) | FI_SEND, report, status, err);
}

void fail_outgoing(RdmEndpoint* ep, OutgoingMessage& o, Status status, int err = 0) {
  if (!o.slot.application) return;  // the provider's own messages
  --ep->queued_sends;
  if (o.rma != nullptr) {
    fail_rma(o.rma, status, err);
    return;
  }
  if (o.slot.cookie & kCookieRendezvous) {
    auto it = ep->rendezvous_sends.find(o.slot.cookie >> kCookieIdShift);
    if (it == ep->rendezvous_sends.end()) return;
    ep->domain->device->dereg_mr(it->second.mr.lkey);
    ep->rendezvous_sends.erase(it);
  }
  complete_send(ep, o.slot.context, o.slot.report, (o.slot.cookie & kCookieTagged) != 0, status, err);
}

void fail_queue(Peer* p, Status status, int err = 0) {
  while (!p->queued.empty()) {
    fail_outgoing(p->ep, p->queued.front(), status, err);
    p->queued.pop_front();
  }
}

// ---- sending to a peer ----

extern const ChannelHandler kPeerHandler;

// Sends what the peer's channel takes now; starts the channel at first use.
void flush(Peer* p) {
  RdmEndpoint* ep = p->ep;
  if (p->queued.empty()) return;
  if (p->send_channel == nullptr) {
    Channel* c = nullptr;
    if (connect_channel(ep->domain->device, p->address.device, &kPeerHandler, p, &c) != 0) {
      FI_WARN(&g_provider, FI_LOG_EP_DATA, "no connection to %s\n", to_string(p->address).c_str());
      fail_queue(p, Status::ConnectionFailed);
      return;
    }
    p->send_channel = c;
    p->send_ready = false;
    p->channels.push_back(c);
    return;  // HELLO at Up, the queue at ACCEPT
  }
  if (!p->send_ready) return;
  while (!p->queued.empty()) {
    OutgoingMessage& o = p->queued.front();
    if (o.rma != nullptr) {  // the peer's turn for an RMA operation, in order with the messages
      const int r = post_rma(p->send_channel, o.rma);
      if (r == -FI_EAGAIN) return;  // again at the next completion (on_writable)
      if (r != 0) fail_rma(o.rma, Status::ConnectionFailed, -r);
      --ep->queued_sends;
      p->queued.pop_front();
      continue;
    }
    const int r = send_wire(p->send_channel, o.header, o.owns_bytes ? o.copy.data() : o.buf, o.len, o.slot);
    if (r == -FI_EAGAIN) return;  // again at the next credit or free slot (on_writable)
    if (r != 0) {
      fail_outgoing(ep, o, Status::ConnectionFailed);
    } else if (o.slot.application) {
      --ep->queued_sends;
    }
    p->queued.pop_front();
  }
}

void queue_provider_message(Peer* p, WireType type, const void* payload, size_t len) {
  OutgoingMessage o;
  o.header.type = type;
  o.copy.assign(static_cast<const uint8_t*>(payload), static_cast<const uint8_t*>(payload) + len);
  o.owns_bytes = true;
  o.len = len;
  p->queued.push_back(std::move(o));
  flush(p);
}

// The receiver is done with rendezvous `sender_id` (read, truncated, discarded or failed).
void queue_fin(Peer* p, uint64_t sender_id) {
  uint8_t id[8];
  fast::detail::wr64(id, sender_id);
  queue_provider_message(p, WireType::Fin, id, sizeof id);
}

// ---- receiving ----

// A matched message goes into the receive: copied (eager), or read from the sender (rendezvous).
void receive_into(RdmEndpoint* ep, const PostedRecv& r, Arrival& a, Peer* from) {
  if (!a.remote) {
    report_receive(ep->cqs.rx, r, a.info, copy_into(r, a.payload.data(), a.payload.size()));
    return;
  }
  const RemoteMessage& remote = *a.remote;
  if (remote.channel == nullptr || from == nullptr) {  // the sender's connection is gone
    report_receive_error(ep->cqs.rx, r, FI_ECONNABORTED, Status::ConnectionFailed, a.info);
    return;
  }
  const uint64_t sender_id = remote.request.id;
  const size_t length = std::min(r.len, a.info.length);
  RendezvousRecv rv{r, a.info, {}, from, remote.channel, sender_id, length};
  if (length == 0) {  // nothing to read: the receive (truncated or empty) and the FIN at once
    report_receive(ep->cqs.rx, r, a.info, 0);
    queue_fin(from, sender_id);
    return;
  }
  Device* device = ep->domain->device;
  int err = fi_errno_of(device->reg_mr(r.buf, length, access::kLocalWrite, &rv.mr));
  if (err == 0) {
    const uint64_t id = ep->next_rendezvous_id++;
    err = post_rendezvous_read(remote.channel, id, Sge{rv.mr.iova, static_cast<uint32_t>(length), rv.mr.lkey},
                               remote.request.iova, remote.request.rkey);
    if (err == 0) {
      ep->rendezvous_recvs[id] = rv;
      return;
    }
    device->dereg_mr(rv.mr.lkey);
  }
  FI_WARN(&g_provider, FI_LOG_EP_DATA, "rendezvous read of %zu bytes not started: %s\n", length, fi_strerror(-err));
  report_receive_error(ep->cqs.rx, r, -err, Status::LocalLength, a.info);
  queue_fin(from, sender_id);  // the sender may go on
}

// A message arrived (from a peer's channel, or locally): the oldest matching receive takes it,
// or it waits in the unexpected queue.
void deliver(RdmEndpoint* ep, Arrival a, Peer* from) {
  if (std::optional<PostedRecv> r = ep->match.take_receive(a.info)) {
    receive_into(ep, *r, a, from);
    return;
  }
  ep->match.add_arrival(std::move(a));
}

Peer* peer_of_arrival(RdmEndpoint* ep, const Arrival& a) {
  if (!a.remote || a.remote->channel == nullptr || a.remote->channel->owner == nullptr) return nullptr;
  Peer* p = static_cast<Peer*>(a.remote->channel->owner);
  return p->ep == ep ? p : nullptr;
}

// ---- the peers' channels ----

void peer_on_up(void* owner, Channel& c) {
  auto* p = static_cast<Peer*>(owner);
  const auto self = encode(p->ep->address);
  WireHeader h;
  h.type = WireType::Hello;
  h.dst_ep_id = p->address.ep_id;
  if (int r = send_wire(&c, h, self.data(), self.size(), TxSlot{})) {
    FI_WARN(&g_provider, FI_LOG_EP_CTRL, "HELLO not sent: %s\n", fi_strerror(-r));
    c.device->close(c.conn, true);  // the queue fails at Down
  }
}

void peer_on_message(void* owner, Channel& c, const WireHeader& h, const uint8_t* payload, size_t len) {
  auto* p = static_cast<Peer*>(owner);
  RdmEndpoint* ep = p->ep;
  switch (h.type) {
    case WireType::Accept:
      if (&c == p->send_channel) {
        p->send_ready = true;
        flush(p);
      }
      return;
    case WireType::Reject:  // no such endpoint there: what waits for it fails, the channel closes
      if (&c == p->send_channel) {
        fail_queue(p, Status::RemoteInvalid, FI_ECONNREFUSED);
        p->send_channel = nullptr;
        p->send_ready = false;
      }
      c.device->close(c.conn);
      return;
    case WireType::Data:
    case WireType::Rts: {
      Arrival a;
      a.info.tagged = (h.flags & kTagged) != 0;
      a.info.tag = h.tag;
      a.info.has_data = (h.flags & kHasData) != 0;
      a.info.data = h.data;
      a.info.source = source_of(p);
      a.sender = p;
      if (h.type == WireType::Data) {
        a.info.length = len;
        a.payload.assign(payload, payload + len);
      } else {
        if (len < kRendezvousLen) return;
        const RendezvousRequest rq = decode_rendezvous(payload);
        a.info.length = rq.length;
        a.remote = RemoteMessage{&c, rq};
      }
      deliver(ep, std::move(a), p);
      return;
    }
    case WireType::Fin: {
      if (len < 8) return;
      const uint64_t id = fast::detail::rd64(payload);
      auto it = ep->rendezvous_sends.find(id);
      if (it == ep->rendezvous_sends.end()) return;
      const RendezvousSend s = it->second;
      ep->rendezvous_sends.erase(it);
      ep->domain->device->dereg_mr(s.mr.lkey);
      complete_send(ep, s.context, s.report, s.tagged, Status::Success);
      return;
    }
    default:
      FI_WARN(&g_provider, FI_LOG_EP_DATA, "message type %d is not for RDM endpoints\n", static_cast<int>(h.type));
      return;
  }
}

void peer_on_sent(void* owner, Channel&, const TxSlot& slot, Status status) {
  auto* p = static_cast<Peer*>(owner);
  RdmEndpoint* ep = p->ep;
  if (!slot.application) return;  // HELLO, ACCEPT, FIN, credits: the provider's
  if (slot.cookie & kCookieRendezvous) {
    if (status == Status::Success) return;  // completes at FIN
    auto it = ep->rendezvous_sends.find(slot.cookie >> kCookieIdShift);
    if (it == ep->rendezvous_sends.end()) return;
    ep->domain->device->dereg_mr(it->second.mr.lkey);
    ep->rendezvous_sends.erase(it);
  }
  complete_send(ep, slot.context, slot.report, (slot.cookie & kCookieTagged) != 0, status);
}

void peer_on_read(void* owner, Channel&, uint64_t id, Status status) {
  auto* p = static_cast<Peer*>(owner);
  RdmEndpoint* ep = p->ep;
  auto it = ep->rendezvous_recvs.find(id);
  if (it == ep->rendezvous_recvs.end()) return;
  const RendezvousRecv rv = it->second;
  ep->rendezvous_recvs.erase(it);
  ep->domain->device->dereg_mr(rv.mr.lkey);
  if (status == Status::Success)
    report_receive(ep->cqs.rx, rv.recv, rv.info, rv.length);
  else
    report_receive_error(ep->cqs.rx, rv.recv, fi_errno_of(status), status, rv.info);
  queue_fin(rv.peer, rv.sender_id);
}

void peer_on_writable(void* owner, Channel& c) {
  auto* p = static_cast<Peer*>(owner);
  if (&c == p->send_channel) flush(p);
}

void peer_on_down(void* owner, Channel& c, Status status) {
  auto* p = static_cast<Peer*>(owner);
  RdmEndpoint* ep = p->ep;
  std::erase(p->channels, &c);
  if (&c == p->send_channel) {
    p->send_channel = nullptr;
    p->send_ready = false;
    fail_queue(p, status == Status::Success ? Status::Flushed : Status::ConnectionFailed);
    for (auto it = ep->rendezvous_sends.begin(); it != ep->rendezvous_sends.end();) {
      if (it->second.peer != p) {
        ++it;
        continue;
      }
      ep->domain->device->dereg_mr(it->second.mr.lkey);
      complete_send(ep, it->second.context, it->second.report, it->second.tagged, Status::ConnectionFailed);
      it = ep->rendezvous_sends.erase(it);
    }
  }
  // Rendezvous messages of this channel can no longer be read.
  for (Arrival& a : ep->match.unexpected())
    if (a.remote && a.remote->channel == &c) a.remote->channel = nullptr;
  for (auto& [context, a] : ep->claimed)
    if (a.remote && a.remote->channel == &c) a.remote->channel = nullptr;
  for (auto it = ep->rendezvous_recvs.begin(); it != ep->rendezvous_recvs.end();) {
    if (it->second.channel != &c) {
      ++it;
      continue;
    }
    ep->domain->device->dereg_mr(it->second.mr.lkey);
    report_receive_error(ep->cqs.rx, it->second.recv, FI_ECONNABORTED, Status::ConnectionFailed, it->second.info);
    it = ep->rendezvous_recvs.erase(it);
  }
  remove_channel(&c);
}

// fi_writedata of the peer: its bytes are placed.
void peer_on_remote_write(void* owner, Channel&, uint32_t data) {
  auto* p = static_cast<Peer*>(owner);
  report_remote_write(p->ep->cqs.rx, data, source_of(p));
}

const ChannelHandler kPeerHandler = {
    .on_up = peer_on_up,
    .on_message = peer_on_message,
    .on_sent = peer_on_sent,
    .on_read = peer_on_read,
    .on_writable = peer_on_writable,
    .on_down = peer_on_down,
    .on_remote_write = peer_on_remote_write,
};

// A HELLO for this endpoint: the accepted channel is the peer's, and its ACCEPT goes back at once.
void rdm_on_hello(void* owner, Channel& c, const uint8_t* payload, size_t) {
  auto* ep = static_cast<RdmEndpoint*>(owner);
  const std::optional<EndpointAddress> from = decode(payload, kAddrLen);
  WireHeader h;
  h.type = from ? WireType::Accept : WireType::Reject;
  if (int r = send_wire(&c, h, nullptr, 0, TxSlot{}); r != 0 || !from) {
    if (r != 0) FI_WARN(&g_provider, FI_LOG_EP_CTRL, "ACCEPT not sent: %s\n", fi_strerror(-r));
    c.device->close(c.conn);
    return;
  }
  Peer* p = peer_of(ep, *from);
  c.handler = &kPeerHandler;
  c.owner = p;
  p->channels.push_back(&c);
  if (p->send_channel == nullptr) {  // it needed nothing yet: this one carries both directions
    p->send_channel = &c;
    p->send_ready = true;
    flush(p);
  }
}

// ---- calls of the application ----

struct SendRequest {
  const void* buf = nullptr;
  size_t len = 0;
  fi_addr_t dest = FI_ADDR_UNSPEC;
  bool tagged = false;
  uint64_t tag = 0;
  bool has_data = false;
  uint64_t data = 0;
  void* context = nullptr;
  bool report = false;
  bool inject = false;  // the bytes are copied before the call returns
};

ssize_t post_send(RdmEndpoint* ep, const SendRequest& s) {
  if (s.buf == nullptr && s.len > 0) return -FI_EINVAL;
  if (s.len > kMaxMsgSize || (s.inject && s.len > kInjectSize)) return -FI_EMSGSIZE;
  if (s.has_data && (s.data >> (8 * kCqDataSize))) return -FI_EINVAL;  // cq_data_size 4
  if (s.tagged && (ep->caps & FI_TAGGED) == 0) return -FI_EOPNOTSUPP;
  if (!s.tagged && (ep->caps & FI_MSG) == 0) return -FI_EOPNOTSUPP;
  DeviceHost* host = ep->domain->host;
  std::lock_guard lock(host->mutex());
  if (!ep->enabled) return -FI_EOPBADSTATE;
  if (ep->cqs.tx == nullptr) return -FI_ENOCQ;
  const std::optional<EndpointAddress> dest = av_address(ep->av, s.dest);
  if (!dest) return -FI_EINVAL;
  MessageInfo m;
  m.length = s.len;
  m.tagged = s.tagged;
  m.tag = s.tag;
  m.has_data = s.has_data;
  m.data = s.has_data ? s.data : 0;
  const auto* bytes = static_cast<const uint8_t*>(s.buf);

  if (same_device(*dest, ep->address)) {  // FI_LOCAL_COMM: delivered here, complete at once
    auto it = g_rdm_endpoints.find({ep->domain->device, dest->ep_id});
    if (it == g_rdm_endpoints.end()) {
      complete_send(ep, s.context, s.report, s.tagged, Status::RemoteInvalid, FI_ECONNREFUSED);
      return 0;
    }
    RdmEndpoint* target = it->second;
    Peer* from = peer_of(target, ep->address);
    m.source = source_of(from);
    deliver(target, Arrival{m, std::vector<uint8_t>(bytes, bytes + s.len), std::nullopt, from}, from);
    complete_send(ep, s.context, s.report, s.tagged, Status::Success);
    return 0;
  }

  if (ep->queued_sends >= kQueueSize) {
    host->progress();  // completions free room for the retry
    return -FI_EAGAIN;
  }
  Peer* p = peer_of(ep, *dest);
  OutgoingMessage o;
  o.header.flags = static_cast<uint8_t>((s.tagged ? kTagged : 0) | (s.has_data ? kHasData : 0));
  o.header.tag = s.tag;
  o.header.data = m.data;
  o.slot.application = true;
  o.slot.report = s.report;
  o.slot.context = s.context;
  o.slot.cookie = s.tagged ? kCookieTagged : 0;
  if (s.len <= kMsgMaxSize) {
    o.header.type = WireType::Data;
    o.len = s.len;
    if (s.inject) {
      o.copy.assign(bytes, bytes + s.len);
      o.owns_bytes = true;
    } else {
      o.buf = bytes;
    }
  } else {
    RendezvousSend rs{p, {}, s.context, s.report, s.tagged};
    // The engine only reads it (kRemoteRead); registration takes a mutable pointer.
    if (int r =
            fi_errno_of(ep->domain->device->reg_mr(const_cast<uint8_t*>(bytes), s.len, access::kRemoteRead, &rs.mr)))
      return r;
    const uint64_t id = ep->next_rendezvous_id++;
    ep->rendezvous_sends[id] = rs;
    RendezvousRequest rq{id, s.len, rs.mr.iova, rs.mr.rkey, 0};
    o.header.type = WireType::Rts;
    o.copy.resize(kRendezvousLen);
    encode_rendezvous(rq, o.copy.data());
    o.owns_bytes = true;
    o.len = kRendezvousLen;
    o.slot.cookie |= kCookieRendezvous | (id << kCookieIdShift);
  }
  ++ep->queued_sends;
  p->queued.push_back(std::move(o));
  flush(p);
  return 0;
}

struct RecvRequest {
  void* buf = nullptr;
  size_t len = 0;
  fi_addr_t source = FI_ADDR_UNSPEC;
  bool tagged = false;
  uint64_t tag = 0, ignore = 0;
  void* context = nullptr;
  bool report = true;
  uint64_t flags = 0;  // FI_PEEK, FI_CLAIM, FI_DISCARD (tagged only)
};

// The completion of a peek or of a discard: the message's length, tag and data, no bytes.
void report_found(RdmEndpoint* ep, const PostedRecv& r, const MessageInfo& m, size_t len) {
  if (ep->cqs.rx == nullptr) return;
  CqEntry c{};
  c.entry.op_context = r.context;
  c.entry.flags = (m.tagged ? FI_TAGGED : FI_MSG) | FI_RECV | (m.has_data ? FI_REMOTE_CQ_DATA : 0);
  c.entry.len = len;
  c.entry.data = m.data;
  c.entry.tag = m.tag;
  c.source = m.source == FI_ADDR_UNSPEC ? FI_ADDR_NOTAVAIL : m.source;
  push_completion(ep->cqs.rx, c);
}

// Unexpected messages whose sender was not in the AV when they arrived: their source again, once per
// change of the AV (a directed receive for a peer inserted since must find them).
void resolve_sources(RdmEndpoint* ep) {
  uint64_t generation;
  {
    std::lock_guard lock(ep->av->mutex);
    generation = ep->av->generation;
  }
  if (generation == ep->av_generation_seen) return;
  ep->av_generation_seen = generation;
  for (Arrival& a : ep->match.unexpected())
    if (a.info.source == FI_ADDR_NOTAVAIL && a.sender != nullptr)
      a.info.source = source_of(static_cast<Peer*>(const_cast<void*>(a.sender)));
}

ssize_t post_recv(RdmEndpoint* ep, const RecvRequest& q) {
  if (q.buf == nullptr && q.len > 0) return -FI_EINVAL;
  if (q.tagged && (ep->caps & FI_TAGGED) == 0) return -FI_EOPNOTSUPP;
  if (!q.tagged && (ep->caps & FI_MSG) == 0) return -FI_EOPNOTSUPP;
  std::lock_guard lock(ep->domain->host->mutex());
  if (!ep->enabled) return -FI_EOPBADSTATE;
  if (ep->cqs.rx == nullptr) return -FI_ENOCQ;
  PostedRecv r;
  r.buf = static_cast<uint8_t*>(q.buf);
  r.len = q.len;
  r.context = q.context;
  r.report = q.report;
  r.tagged = q.tagged;
  r.tag = q.tag;
  r.ignore = q.ignore;
  // Without FI_DIRECTED_RECV the source is ignored (fi_msg(3)).
  if ((ep->caps & FI_DIRECTED_RECV) && q.source != FI_ADDR_UNSPEC) {
    if (!av_address(ep->av, q.source)) return -FI_EINVAL;
    r.source = q.source;
  }
  const bool peek = (q.flags & FI_PEEK) != 0, claim = (q.flags & FI_CLAIM) != 0;
  const bool discard = (q.flags & FI_DISCARD) != 0;
  resolve_sources(ep);
  if (peek) {
    Arrival* a = ep->match.find_arrival(r);
    if (a == nullptr) {  // nothing (yet): an FI_ENOMSG error completion (fi_tagged(3))
      report_receive_error(ep->cqs.rx, r, FI_ENOMSG, Status::Success);
      return 0;
    }
    const MessageInfo m = a->info;
    if (claim || discard) {
      std::optional<Arrival> taken = ep->match.take_arrival(r);
      if (claim && !discard) ep->claimed[q.context] = std::move(*taken);
      // A discarded rendezvous message still owes its sender a FIN.
      if (discard && taken->remote) {
        if (Peer* from = peer_of_arrival(ep, *taken)) queue_fin(from, taken->remote->request.id);
      }
    }
    report_found(ep, r, m, m.length);
    return 0;
  }
  if (claim) {  // the message an FI_PEEK|FI_CLAIM with this context set aside
    auto it = ep->claimed.find(q.context);
    if (it == ep->claimed.end()) return -FI_EINVAL;
    Arrival a = std::move(it->second);
    ep->claimed.erase(it);
    if (discard) {
      if (a.remote)
        if (Peer* from = peer_of_arrival(ep, a)) queue_fin(from, a.remote->request.id);
      report_found(ep, r, a.info, 0);
      return 0;
    }
    receive_into(ep, r, a, peer_of_arrival(ep, a));
    return 0;
  }
  if (std::optional<Arrival> a = ep->match.take_arrival(r)) {  // a message waits already
    receive_into(ep, r, *a, peer_of_arrival(ep, *a));
    return 0;
  }
  if (ep->match.posted() >= kQueueSize) return -FI_EAGAIN;
  ep->match.post(r);
  return 0;
}

// One iov at most (iov_limit 1): its buffer ({nullptr, 0} for none), or nullopt for more.
std::optional<struct iovec> single_iov(const struct iovec* iov, size_t count) {
  if (count > 1 || (count == 1 && iov == nullptr)) return std::nullopt;
  return count ? iov[0] : iovec{nullptr, 0};
}

// Calls without flags take the endpoint's op_flags: Open MPI binds its CQ with
// FI_SELECTIVE_COMPLETION and asks FI_COMPLETION in tx/rx op_flags (DESIGN.md 3.1).
bool tx_report(const RdmEndpoint* ep) { return !ep->cqs.tx_selective || (ep->tx_op_flags & FI_COMPLETION); }
bool rx_report(const RdmEndpoint* ep) { return !ep->cqs.rx_selective || (ep->rx_op_flags & FI_COMPLETION); }

constexpr uint64_t kSendMsgFlags = FI_COMPLETION | FI_INJECT | FI_REMOTE_CQ_DATA | FI_MSG | FI_TAGGED | FI_SEND |
                                   FI_TRANSMIT_COMPLETE | FI_INJECT_COMPLETE;

ssize_t send_common(struct fid_ep* fid, const char* what, SendRequest s) {
  return guarded(FI_LOG_EP_DATA, what, [&] { return static_cast<int>(post_send(ep_of(fid), s)); });
}

ssize_t recv_common(struct fid_ep* fid, const char* what, RecvRequest q) {
  return guarded(FI_LOG_EP_DATA, what, [&] { return static_cast<int>(post_recv(ep_of(fid), q)); });
}

// fi_ops_rma (rma_calls.hpp): to the fi_addr's peer in its queue (connection on first use), or
// within the device through the provider's MR table.
ssize_t post_rma_request(RdmEndpoint* ep, const RmaRequest& request, fi_addr_t dest_addr) {
  if (int r = check_rma(request)) return r;
  RmaRequest q = request;
  q.offsets = (ep->domain->mr_mode & FI_MR_VIRT_ADDR) == 0;
  if ((ep->caps & FI_RMA) == 0) return -FI_EOPNOTSUPP;
  DeviceHost* host = ep->domain->host;
  Device* device = ep->domain->device;
  std::lock_guard lock(host->mutex());
  if (!ep->enabled) return -FI_EOPBADSTATE;
  if (ep->cqs.tx == nullptr) return -FI_ENOCQ;
  const std::optional<EndpointAddress> dest = av_address(ep->av, dest_addr);
  if (!dest) return -FI_EINVAL;
  if (same_device(*dest, ep->address)) {  // FI_LOCAL_COMM: done here, complete at once
    auto it = g_rdm_endpoints.find({device, dest->ep_id});
    if (it == g_rdm_endpoints.end()) {
      report_rma(ep->cqs.tx, q.context, q.write, q.report, Status::RemoteInvalid, FI_ECONNREFUSED);
      return 0;
    }
    const Status status = local_rma(device, q);
    report_rma(ep->cqs.tx, q.context, q.write, q.report, status);
    if (status == Status::Success && q.has_data)
      report_remote_write(it->second->cqs.rx, q.data, source_of(peer_of(it->second, ep->address)));
    return 0;
  }
  if (ep->queued_sends >= kQueueSize) {
    host->progress();
    return -FI_EAGAIN;
  }
  RmaOp* op = nullptr;
  if (int r = make_rma(device, ep, ep->cqs.tx, q, &op)) {
    if (r == -FI_EAGAIN) host->progress();
    return r;
  }
  Peer* p = peer_of(ep, *dest);
  OutgoingMessage o;
  o.rma = op;
  o.slot.application = true;
  ++ep->queued_sends;
  p->queued.push_back(std::move(o));
  flush(p);
  return 0;
}

ssize_t rdm_rma(struct fid_ep* fid, const RmaRequest& q, fi_addr_t dest) {
  return guarded(FI_LOG_EP_DATA, q.write ? "fi_write" : "fi_read",
                 [&] { return static_cast<int>(post_rma_request(ep_of(fid), q, dest)); });
}
bool rma_report(struct fid_ep* fid) { return tx_report(ep_of(fid)); }
bool rma_selective(struct fid_ep* fid) { return ep_of(fid)->cqs.tx_selective; }
using RdmRma = RmaCalls<rdm_rma, rma_report, rma_selective>;

// fi_ops_msg

ssize_t rdm_recv(struct fid_ep* fid, void* buf, size_t len, void*, fi_addr_t src, void* context) {
  return recv_common(fid, "fi_recv", RecvRequest{buf, len, src, false, 0, 0, context, rx_report(ep_of(fid)), 0});
}

ssize_t rdm_recvv(struct fid_ep* fid, const struct iovec* iov, void**, size_t count, fi_addr_t src, void* context) {
  const std::optional<struct iovec> one = single_iov(iov, count);
  if (!one) return -FI_EINVAL;
  return rdm_recv(fid, one->iov_base, one->iov_len, nullptr, src, context);
}

ssize_t rdm_recvmsg(struct fid_ep* fid, const struct fi_msg* msg, uint64_t flags) {
  const std::optional<struct iovec> one = msg ? single_iov(msg->msg_iov, msg->iov_count) : std::nullopt;
  if (!one) return -FI_EINVAL;
  void* buf = one->iov_base;
  const size_t len = one->iov_len;
  if (flags & ~(FI_COMPLETION | FI_MSG | FI_RECV)) return -FI_EBADFLAGS;
  // Explicit flags replace the op_flags: under selective completion only FI_COMPLETION reports.
  const bool report = !ep_of(fid)->cqs.rx_selective || (flags & FI_COMPLETION);
  return recv_common(fid, "fi_recvmsg", RecvRequest{buf, len, msg->addr, false, 0, 0, msg->context, report, 0});
}

ssize_t rdm_send(struct fid_ep* fid, const void* buf, size_t len, void*, fi_addr_t dest, void* context) {
  return send_common(fid, "fi_send",
                     SendRequest{buf, len, dest, false, 0, false, 0, context, tx_report(ep_of(fid)), false});
}

ssize_t rdm_sendv(struct fid_ep* fid, const struct iovec* iov, void**, size_t count, fi_addr_t dest, void* context) {
  const std::optional<struct iovec> one = single_iov(iov, count);
  if (!one) return -FI_EINVAL;
  return rdm_send(fid, one->iov_base, one->iov_len, nullptr, dest, context);
}

ssize_t rdm_sendmsg(struct fid_ep* fid, const struct fi_msg* msg, uint64_t flags) {
  const std::optional<struct iovec> one = msg ? single_iov(msg->msg_iov, msg->iov_count) : std::nullopt;
  if (!one) return -FI_EINVAL;
  void* buf = one->iov_base;
  const size_t len = one->iov_len;
  if (flags & ~kSendMsgFlags) return -FI_EBADFLAGS;
  const bool has_data = (flags & FI_REMOTE_CQ_DATA) != 0;
  // Explicit flags replace the op_flags: under selective completion only FI_COMPLETION reports.
  const bool report = !ep_of(fid)->cqs.tx_selective || (flags & FI_COMPLETION);
  return send_common(fid, "fi_sendmsg",
                     SendRequest{buf, len, msg->addr, false, 0, has_data, has_data ? msg->data : 0, msg->context,
                                 report, (flags & FI_INJECT) != 0});
}

ssize_t rdm_inject(struct fid_ep* fid, const void* buf, size_t len, fi_addr_t dest) {
  return send_common(fid, "fi_inject", SendRequest{buf, len, dest, false, 0, false, 0, nullptr, false, true});
}

ssize_t rdm_senddata(struct fid_ep* fid, const void* buf, size_t len, void*, uint64_t data, fi_addr_t dest,
                     void* context) {
  return send_common(fid, "fi_senddata",
                     SendRequest{buf, len, dest, false, 0, true, data, context, tx_report(ep_of(fid)), false});
}

ssize_t rdm_injectdata(struct fid_ep* fid, const void* buf, size_t len, uint64_t data, fi_addr_t dest) {
  return send_common(fid, "fi_injectdata", SendRequest{buf, len, dest, false, 0, true, data, nullptr, false, true});
}

// fi_ops_tagged

ssize_t rdm_trecv(struct fid_ep* fid, void* buf, size_t len, void*, fi_addr_t src, uint64_t tag, uint64_t ignore,
                  void* context) {
  return recv_common(fid, "fi_trecv", RecvRequest{buf, len, src, true, tag, ignore, context, rx_report(ep_of(fid)), 0});
}

ssize_t rdm_trecvv(struct fid_ep* fid, const struct iovec* iov, void**, size_t count, fi_addr_t src, uint64_t tag,
                   uint64_t ignore, void* context) {
  const std::optional<struct iovec> one = single_iov(iov, count);
  if (!one) return -FI_EINVAL;
  return rdm_trecv(fid, one->iov_base, one->iov_len, nullptr, src, tag, ignore, context);
}

ssize_t rdm_trecvmsg(struct fid_ep* fid, const struct fi_msg_tagged* msg, uint64_t flags) {
  const std::optional<struct iovec> one = msg ? single_iov(msg->msg_iov, msg->iov_count) : std::nullopt;
  if (!one) return -FI_EINVAL;
  void* buf = one->iov_base;
  const size_t len = one->iov_len;
  if (flags & ~(FI_COMPLETION | FI_TAGGED | FI_RECV | FI_PEEK | FI_CLAIM | FI_DISCARD)) return -FI_EBADFLAGS;
  if ((flags & FI_DISCARD) && !(flags & (FI_PEEK | FI_CLAIM))) return -FI_EINVAL;  // fi_tagged(3)
  // FI_CLAIM keeps the message by the context: one is needed (FI_CONTEXT mode).
  if ((flags & FI_CLAIM) && msg->context == nullptr) return -FI_EINVAL;
  const bool report = !ep_of(fid)->cqs.rx_selective || (flags & FI_COMPLETION);
  return recv_common(fid, "fi_trecvmsg",
                     RecvRequest{buf, len, msg->addr, true, msg->tag, msg->ignore, msg->context, report,
                                 flags & (FI_PEEK | FI_CLAIM | FI_DISCARD)});
}

ssize_t rdm_tsend(struct fid_ep* fid, const void* buf, size_t len, void*, fi_addr_t dest, uint64_t tag, void* context) {
  return send_common(fid, "fi_tsend",
                     SendRequest{buf, len, dest, true, tag, false, 0, context, tx_report(ep_of(fid)), false});
}

ssize_t rdm_tsendv(struct fid_ep* fid, const struct iovec* iov, void**, size_t count, fi_addr_t dest, uint64_t tag,
                   void* context) {
  const std::optional<struct iovec> one = single_iov(iov, count);
  if (!one) return -FI_EINVAL;
  return rdm_tsend(fid, one->iov_base, one->iov_len, nullptr, dest, tag, context);
}

ssize_t rdm_tsendmsg(struct fid_ep* fid, const struct fi_msg_tagged* msg, uint64_t flags) {
  const std::optional<struct iovec> one = msg ? single_iov(msg->msg_iov, msg->iov_count) : std::nullopt;
  if (!one) return -FI_EINVAL;
  void* buf = one->iov_base;
  const size_t len = one->iov_len;
  if (flags & ~kSendMsgFlags) return -FI_EBADFLAGS;
  const bool has_data = (flags & FI_REMOTE_CQ_DATA) != 0;
  const bool report = !ep_of(fid)->cqs.tx_selective || (flags & FI_COMPLETION);
  return send_common(fid, "fi_tsendmsg",
                     SendRequest{buf, len, msg->addr, true, msg->tag, has_data, has_data ? msg->data : 0, msg->context,
                                 report, (flags & FI_INJECT) != 0});
}

ssize_t rdm_tinject(struct fid_ep* fid, const void* buf, size_t len, fi_addr_t dest, uint64_t tag) {
  return send_common(fid, "fi_tinject", SendRequest{buf, len, dest, true, tag, false, 0, nullptr, false, true});
}

ssize_t rdm_tsenddata(struct fid_ep* fid, const void* buf, size_t len, void*, uint64_t data, fi_addr_t dest,
                      uint64_t tag, void* context) {
  return send_common(fid, "fi_tsenddata",
                     SendRequest{buf, len, dest, true, tag, true, data, context, tx_report(ep_of(fid)), false});
}

ssize_t rdm_tinjectdata(struct fid_ep* fid, const void* buf, size_t len, uint64_t data, fi_addr_t dest, uint64_t tag) {
  return send_common(fid, "fi_tinjectdata", SendRequest{buf, len, dest, true, tag, true, data, nullptr, false, true});
}

// ---- endpoint object ----

int rdm_getname(fid_t fid, void* addr, size_t* addrlen) {
  return guarded(FI_LOG_EP_CTRL, "fi_getname", [&]() -> int {
    const auto name = encode(object_of<RdmEndpoint>(fid)->address);
    return copy_name(name.data(), name.size(), addr, addrlen);
  });
}

int rdm_bind(struct fid* fid, struct fid* bfid, uint64_t flags) {
  return guarded(FI_LOG_EP_CTRL, "fi_ep_bind", [&]() -> int {
    auto* ep = object_of<RdmEndpoint>(fid);
    if (bfid == nullptr) return -FI_EINVAL;
    std::lock_guard lock(ep->domain->host->mutex());
    if (ep->enabled) return -FI_EOPBADSTATE;
    switch (bfid->fclass) {
      case FI_CLASS_AV: {
        auto* av = object_of<AddressVector>(bfid);
        if (av->domain != ep->domain || ep->av != nullptr) return -FI_EINVAL;
        if (flags != 0) return -FI_EBADFLAGS;
        av->bound_endpoints.fetch_add(1);
        ep->av = av;
        return 0;
      }
      case FI_CLASS_EQ:  // accepted for the applications that bind one; RDM reports no CM events
        return bind_eq(&ep->eq, ep->domain->host, bfid);
      case FI_CLASS_CQ:
        return bind_cq(&ep->cqs, ep->domain, bfid, flags);
      default:
        return -FI_ENOSYS;  // counters (M3)
    }
  });
}

int rdm_control(struct fid* fid, int command, void*) {
  return guarded(FI_LOG_EP_CTRL, "fi_control(ep)", [&]() -> int {
    auto* ep = object_of<RdmEndpoint>(fid);
    if (command != FI_ENABLE) return -FI_ENOSYS;
    std::lock_guard lock(ep->domain->host->mutex());
    if (ep->enabled) return 0;
    if (ep->av == nullptr) return -FI_ENOAV;  // RDM endpoints address peers through their AV
    if (ep->cqs.tx == nullptr && ep->cqs.rx == nullptr) return -FI_ENOCQ;
    Device* device = ep->domain->device;
    if (int r = fi_errno_of(device->listen(true))) return r;
    add_listener(device, ep->address.ep_id, Listener{rdm_on_hello, ep});
    g_rdm_endpoints[{device, ep->address.ep_id}] = ep;
    ep->enabled = true;
    return 0;
  });
}

int rdm_close(struct fid* fid) {
  return guarded(FI_LOG_EP_CTRL, "fi_close(ep)", [&]() -> int {
    auto* ep = object_of<RdmEndpoint>(fid);
    {
      std::lock_guard lock(ep->domain->host->mutex());
      Device* device = ep->domain->device;
      // Outstanding work is discarded with the endpoint: its channels are aborted, the buffers it
      // lent to rendezvous are no longer the engine's.
      forget_rma(ep);  // also the operations still queued for a peer
      for (auto& [key, peer] : ep->peers)
        for (Channel* c : peer->channels) release_channel(c);
      for (auto& [id, s] : ep->rendezvous_sends) device->dereg_mr(s.mr.lkey);
      for (auto& [id, r] : ep->rendezvous_recvs) device->dereg_mr(r.mr.lkey);
      if (ep->enabled) {
        remove_listener(device, ep->address.ep_id);
        g_rdm_endpoints.erase({device, ep->address.ep_id});
      }
    }
    if (ep->av) ep->av->bound_endpoints.fetch_sub(1);
    unbind(ep->cqs, ep->eq);
    ep->domain->dependents.fetch_sub(1);
    delete ep;
    return 0;
  });
}

// fi_cancel: a posted receive not matched yet completes with FI_ECANCELED; sends cannot be taken
// back from the engine (DESIGN.md 5.8 G8).
ssize_t rdm_cancel(fid_t fid, void* context) {
  return guarded(FI_LOG_EP_DATA, "fi_cancel", [&]() -> int {
    auto* ep = object_of<RdmEndpoint>(fid);
    std::lock_guard lock(ep->domain->host->mutex());
    std::optional<PostedRecv> r = ep->match.cancel(context);
    if (!r) return -FI_ENOENT;
    report_receive_error(ep->cqs.rx, *r, FI_ECANCELED, Status::Flushed);
    return 0;
  });
}

ssize_t rdm_rx_size_left(struct fid_ep* fid) {
  RdmEndpoint* ep = ep_of(fid);
  std::lock_guard lock(ep->domain->host->mutex());
  return static_cast<ssize_t>(kQueueSize - ep->match.posted());
}

ssize_t rdm_tx_size_left(struct fid_ep* fid) {
  RdmEndpoint* ep = ep_of(fid);
  std::lock_guard lock(ep->domain->host->mutex());
  return static_cast<ssize_t>(kQueueSize - ep->queued_sends);
}

int rdm_getopt(fid_t, int, int, void*, size_t*) { return -FI_ENOPROTOOPT; }
int rdm_setopt(fid_t, int, int, const void*, size_t) { return -FI_ENOPROTOOPT; }

struct fi_ops g_rdm_fid_ops = {
    .size = sizeof(struct fi_ops),
    .close = rdm_close,
    .bind = rdm_bind,
    .control = rdm_control,
    .ops_open = no_ops_open,
    .tostr = nullptr,
    .ops_set = nullptr,
};

struct fi_ops_ep g_rdm_ep_ops = {
    .size = sizeof(struct fi_ops_ep),
    .cancel = rdm_cancel,
    .getopt = rdm_getopt,
    .setopt = rdm_setopt,
    .tx_ctx = not_supported<int>,
    .rx_ctx = not_supported<int>,
    .rx_size_left = rdm_rx_size_left,
    .tx_size_left = rdm_tx_size_left,
};

struct fi_ops_cm g_rdm_cm_ops = {
    .size = sizeof(struct fi_ops_cm),
    .setname = not_supported<int>,
    .getname = rdm_getname,
    .getpeer = not_supported<int>,
    .connect = not_supported<int>,
    .listen = not_supported<int>,
    .accept = not_supported<int>,
    .reject = not_supported<int>,
    .shutdown = not_supported<int>,
    .join = not_supported<int>,
};

struct fi_ops_msg g_rdm_msg_ops = {
    .size = sizeof(struct fi_ops_msg),
    .recv = rdm_recv,
    .recvv = rdm_recvv,
    .recvmsg = rdm_recvmsg,
    .send = rdm_send,
    .sendv = rdm_sendv,
    .sendmsg = rdm_sendmsg,
    .inject = rdm_inject,
    .senddata = rdm_senddata,
    .injectdata = rdm_injectdata,
};

struct fi_ops_tagged g_rdm_tagged_ops = {
    .size = sizeof(struct fi_ops_tagged),
    .recv = rdm_trecv,
    .recvv = rdm_trecvv,
    .recvmsg = rdm_trecvmsg,
    .send = rdm_tsend,
    .sendv = rdm_tsendv,
    .sendmsg = rdm_tsendmsg,
    .inject = rdm_tinject,
    .senddata = rdm_tsenddata,
    .injectdata = rdm_tinjectdata,
};

}  // namespace

int open_rdm_endpoint(struct fid_domain* domain_fid, struct fi_info* info, struct fid_ep** out, void* context) {
  return guarded(FI_LOG_EP_CTRL, "fi_endpoint", [&]() -> int {
    if (info->caps & ~kAllCaps) return -FI_EINVAL;
    if (info->handle != nullptr) return -FI_EINVAL;  // connection requests are MSG's
    Domain* domain = object_of<Domain>(domain_fid);
    const EndpointAddress* device_address = nullptr;
    {
      std::lock_guard lock(domain->host->mutex());
      device_address = domain->host->address(domain->name);
    }
    if (device_address == nullptr) return -FI_ENODEV;
    auto* ep = new RdmEndpoint;
    ep->domain = domain;
    ep->address = *device_address;
    ep->address.ep_id = new_endpoint_id();
    // No caps asked: everything an RDM entry offers.
    ep->caps = info->caps != 0 ? info->caps : kAllCaps;
    ep->tx_op_flags = info->tx_attr != nullptr ? info->tx_attr->op_flags : 0;
    ep->rx_op_flags = info->rx_attr != nullptr ? info->rx_attr->op_flags : 0;
    ep->fid.fid.fclass = FI_CLASS_EP;
    ep->fid.fid.context = context;
    ep->fid.fid.ops = &g_rdm_fid_ops;
    ep->fid.ops = &g_rdm_ep_ops;
    ep->fid.cm = &g_rdm_cm_ops;
    ep->fid.msg = &g_rdm_msg_ops;
    ep->fid.tagged = &g_rdm_tagged_ops;
    ep->fid.rma = &RdmRma::ops;
    ep->fid.atomic = nullptr;  // no FI_ATOMIC anywhere (DESIGN.md 5.8 G7)
    ep->fid.collective = nullptr;
    domain->dependents.fetch_add(1);
    *out = &ep->fid;
    return 0;
  });
}

}  // namespace mroce::fi
