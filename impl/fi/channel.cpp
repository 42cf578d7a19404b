#include "fi/channel.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <utility>

#include "codec/fast_codec.hpp"
#include "fi/addr.hpp"
#include "fi/host.hpp"
#include "fi/provider.hpp"
#include "fi/rma.hpp"

namespace mroce::fi {
namespace {

// wr_id: bit 63 set for a bounce receive, bit 62 for a rendezvous read, the slot index or id below.
constexpr uint64_t kRxBit = uint64_t{1} << 63;
constexpr uint64_t kReadBit = uint64_t{1} << 62;
// A Credit message goes out once this many reposted bounces wait to be announced and no other
// message carried them: half the slots, so the peer never runs dry while a credit is in flight.
constexpr uint32_t kCreditThreshold = kRxSlots / 2;

// Channels by (device, engine connection) and listeners by (device, ep id). Host mutex.
std::map<std::pair<Device*, uint32_t>, std::unique_ptr<Channel>> g_channels;
std::map<std::pair<Device*, uint32_t>, Listener> g_listeners;
std::atomic<uint32_t> g_next_ep_id{1};

uint8_t* rx_slot(Channel* c, size_t i) { return c->rx.data() + i * kSlotSize; }
uint8_t* tx_slot(Channel* c, size_t i) { return c->tx.data() + i * kSlotSize; }

Channel* find_channel(Device* device, uint32_t conn) {
  auto it = g_channels.find({device, conn});
  return it == g_channels.end() ? nullptr : it->second.get();
}

Result post_bounce(Channel* c, size_t slot) {
  Sge sge{c->rx_mr.iova + slot * kSlotSize, static_cast<uint32_t>(kSlotSize), c->rx_mr.lkey};
  return c->device->post_recv(c->conn, kOrderedStream, kRxBit | slot, sge);
}

// Gives reposted bounces back to the peer when no other message did (see kCreditThreshold).
void return_credits(Channel* c) {
  if (c->down || !c->up || c->credits_to_return < kCreditThreshold) return;
  WireHeader h;
  h.type = WireType::Credit;
  send_wire(c, h, nullptr, 0, TxSlot{});  // -FI_EAGAIN: retried at the next completion
}

void reject(Channel* c) {
  WireHeader h;
  h.type = WireType::Reject;
  send_wire(c, h, nullptr, 0, TxSlot{});
  c->device->close(c->conn);  // graceful: the REJECT goes first
}

void on_hello(Channel* c, const uint8_t* payload, size_t len, uint32_t dst_ep_id) {
  auto it = g_listeners.find({c->device, dst_ep_id});
  if (it == g_listeners.end() || len < kAddrLen || c->handler != nullptr) {
    // Nobody listens there: refuse, so the initiator learns it at once (FI_ECONNREFUSED).
    reject(c);
    return;
  }
  it->second.on_hello(it->second.owner, *c, payload, len);
}

void on_receive(Channel* c, const WorkCompletion& wc) {
  const size_t slot = wc.wr_id & ~kRxBit;
  if (wc.status != Status::Success) {
    if (wc.status != Status::Flushed)
      FI_WARN(&g_provider, FI_LOG_EP_DATA, "a receive on connection %u failed: %s\n", c->conn, status_name(wc.status));
    // Canceled: the sender gave its message up, having paid a credit for it: give that back too.
    if (wc.status == Status::Canceled && !c->down && post_bounce(c, slot) == Result::Ok) ++c->credits_to_return;
    return;  // Flushed: the connection is gone
  }
  bool credited = false;
  if (wc.has_imm) {  // a Write-with-immediate (fi_writedata): the bounce holds nothing
    if (c->handler != nullptr && c->handler->on_remote_write != nullptr)
      c->handler->on_remote_write(c->owner, *c, wc.imm);
  } else if (wc.byte_len >= kWireHeaderLen) {
    const uint8_t* p = rx_slot(c, slot);
    const WireHeader h = decode_header(p);
    const uint8_t* payload = p + kWireHeaderLen;
    const size_t len = wc.byte_len - kWireHeaderLen;
    c->send_credits += h.credits;
    credited = h.credits > 0;
    if (h.type == WireType::Hello)
      on_hello(c, payload, len, h.dst_ep_id);
    else if (h.type != WireType::Credit && c->handler != nullptr)
      c->handler->on_message(c->owner, *c, h, payload, len);
  }
  // The handlers copy what they keep (unexpected messages too), so the bounce goes back at once.
  if (!c->down && post_bounce(c, slot) == Result::Ok) ++c->credits_to_return;
  return_credits(c);
  if (credited && c->handler != nullptr) c->handler->on_writable(c->owner, *c);
}

void on_send(Channel* c, const WorkCompletion& wc) {
  if (wc.wr_id >= kTxSlots) return;
  const TxSlot slot = c->tx_slots[wc.wr_id];
  c->tx_slots[wc.wr_id] = TxSlot{};
  if (wc.status != Status::Success)
    FI_WARN(&g_provider, FI_LOG_EP_DATA, "a send on connection %u failed: %s\n", c->conn, status_name(wc.status));
  if (c->handler != nullptr) c->handler->on_sent(c->owner, *c, slot, wc.status);
  return_credits(c);
  if (c->handler != nullptr && !c->down) c->handler->on_writable(c->owner, *c);
}

void on_event(Device& device, const ConnEvent& ev) {
  Channel* c = find_channel(&device, ev.conn);
  FI_DBG(&g_provider, FI_LOG_EP_CTRL, "connection %u %s (initiator %d, %s)\n", ev.conn,
         ev.kind == ConnEvent::Kind::Up ? "up" : "down", ev.initiator, status_name(ev.status));
  if (ev.kind == ConnEvent::Kind::Up) {
    if (c == nullptr && !ev.initiator) c = add_channel(&device, ev.conn, false);  // auto-accepted (5.4 step 2)
    if (c == nullptr) {
      device.close(ev.conn, true);  // an endpoint closed meanwhile, or no room for buffers
      return;
    }
    if (ev.initiator && c->handler == nullptr) {
      device.close(ev.conn, true);  // its endpoint was closed while connecting; the channel goes at Down
      return;
    }
    c->up = true;
    for (size_t i = 0; i < kRxSlots; ++i) post_bounce(c, i);
    if (c->handler != nullptr) c->handler->on_up(c->owner, *c);
    return;
  }
  if (c == nullptr) return;
  c->down = true;
  if (c->handler != nullptr)
    c->handler->on_down(c->owner, *c, ev.status);
  else
    remove_channel(c);  // nobody holds it any more
}

}  // namespace

Channel* add_channel(Device* device, uint32_t conn, bool initiator) {
  auto c = std::make_unique<Channel>();
  c->device = device;
  c->conn = conn;
  c->initiator = initiator;
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

int connect_channel(Device* device, const Address& peer, const ChannelHandler* handler, void* owner, Channel** out) {
  uint32_t conn = 0;
  if (int r = fi_errno_of(device->connect(peer, &conn))) return r;
  Channel* c = add_channel(device, conn, true);
  if (c == nullptr) {
    device->close(conn, true);
    return -FI_ENOMEM;
  }
  c->handler = handler;
  c->owner = owner;
  *out = c;
  return 0;
}

void release_channel(Channel* c) {
  c->handler = nullptr;
  c->owner = nullptr;
  if (c->down)
    remove_channel(c);
  else
    c->device->close(c->conn, true);  // outstanding work is discarded with the owner; removed at Down
}

uint32_t new_endpoint_id() noexcept { return g_next_ep_id.fetch_add(1); }

void add_listener(Device* device, uint32_t ep_id, const Listener& listener) { g_listeners[{device, ep_id}] = listener; }

void remove_listener(Device* device, uint32_t ep_id) { g_listeners.erase({device, ep_id}); }

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
    case Status::LocalProtection:
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

int send_wire(Channel* c, WireHeader h, const void* payload, size_t len, const TxSlot& slot) {
  if (len > kMsgMaxSize) return -FI_EMSGSIZE;
  const uint32_t needed = h.type == WireType::Credit ? 1 : 2;
  if (c->send_credits < needed) return -FI_EAGAIN;
  size_t index = kTxSlots;
  for (size_t i = 0; i < kTxSlots; ++i)
    if (!c->tx_slots[i].busy) {
      index = i;
      break;
    }
  if (index == kTxSlots) return -FI_EAGAIN;
  h.credits = static_cast<uint16_t>(c->credits_to_return);
  uint8_t* p = tx_slot(c, index);
  encode_header(h, p);
  if (len > 0) std::memcpy(p + kWireHeaderLen, payload, len);
  Sge sge{c->tx_mr.iova + index * kSlotSize, static_cast<uint32_t>(kWireHeaderLen + len), c->tx_mr.lkey};
  const Result r = c->device->post_send(c->conn, kOrderedStream, index, sge);
  if (r != Result::Ok) return fi_errno_of(r);
  c->credits_to_return = 0;
  --c->send_credits;
  c->tx_slots[index] = slot;
  c->tx_slots[index].busy = true;
  return 0;
}

size_t sendable(const Channel* c) {
  size_t free_slots = 0;
  for (const TxSlot& s : c->tx_slots) free_slots += s.busy ? 0 : 1;
  const size_t credits = c->send_credits >= 2 ? c->send_credits - 1 : 0;
  return std::min(free_slots, credits);
}

int post_rendezvous_read(Channel* c, uint64_t id, const Sge& sink, uint64_t iova, uint32_t rkey) {
  if (id >= kReadBit) return -FI_EINVAL;
  // Bulk data off the ordered stream, so a large read never holds small messages back (5.2).
  const uint16_t stream = c->device->stream_count(c->conn) > 1 ? 1 : kOrderedStream;
  return fi_errno_of(c->device->post_read(c->conn, stream, kReadBit | id, sink, iova, rkey));
}

int dispatch_channel_events(Device& device) noexcept {
  // Completions before events: a message that arrived before its connection went down must reach
  // its receive before the Down flushes the receives still posted. (Up cannot be overtaken: a
  // channel's receives are posted only at its Up.)
  int handled = 0;
  WorkCompletion wcs[64];
  for (int n; (n = device.poll_cq(wcs, 64)) > 0;) {
    for (int i = 0; i < n; ++i) {
      Channel* c = find_channel(&device, wcs[i].conn);
      // RMA first: an operation completes (and its buffer is deregistered) even without channel.
      if ((wcs[i].wr_id & (kRxBit | kReadBit)) == 0 && complete_rma(&device, wcs[i].wr_id, wcs[i].status)) {
        if (c != nullptr && c->handler != nullptr && !c->down) c->handler->on_writable(c->owner, *c);
        continue;
      }
      if (c == nullptr) continue;  // its endpoint is closed
      if (wcs[i].wr_id & kRxBit) {
        on_receive(c, wcs[i]);
      } else if (wcs[i].wr_id & kReadBit) {
        if (c->handler != nullptr) c->handler->on_read(c->owner, *c, wcs[i].wr_id & ~kReadBit, wcs[i].status);
      } else {
        on_send(c, wcs[i]);
      }
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

// ---- the wire format ----

void encode_header(const WireHeader& h, uint8_t* out) noexcept {
  out[0] = static_cast<uint8_t>(h.type);
  out[1] = h.flags;
  fast::detail::wr16(out + 2, h.credits);
  fast::detail::wr32(out + 4, h.dst_ep_id);
  fast::detail::wr64(out + 8, h.data);
  fast::detail::wr64(out + 16, h.tag);
}

WireHeader decode_header(const uint8_t* in) noexcept {
  WireHeader h;
  h.type = static_cast<WireType>(in[0]);
  h.flags = in[1];
  h.credits = fast::detail::rd16(in + 2);
  h.dst_ep_id = fast::detail::rd32(in + 4);
  h.data = fast::detail::rd64(in + 8);
  h.tag = fast::detail::rd64(in + 16);
  return h;
}

void encode_rendezvous(const RendezvousRequest& r, uint8_t* out) noexcept {
  fast::detail::wr64(out, r.id);
  fast::detail::wr64(out + 8, r.length);
  fast::detail::wr64(out + 16, r.iova);
  fast::detail::wr32(out + 24, r.rkey);
  fast::detail::wr32(out + 28, r.reserved);
}

RendezvousRequest decode_rendezvous(const uint8_t* in) noexcept {
  return RendezvousRequest{fast::detail::rd64(in), fast::detail::rd64(in + 8), fast::detail::rd64(in + 16),
                           fast::detail::rd32(in + 24), fast::detail::rd32(in + 28)};
}

}  // namespace mroce::fi
