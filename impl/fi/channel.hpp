// A channel: one engine connection as the provider's endpoints use it (DESIGN.md 5.3-5.4), shared by
// MSG and RDM endpoints. It owns the registered bounce slots (application buffers are never engine
// buffers), the provider's wire header on stream 0, the credits that keep the peer from ever seeing
// an engine RNR, and the dispatch of the device's completions and connection events to whoever
// the channel serves (its owner, through a ChannelHandler).
//
// Everything here runs under the device host mutex. Headers and provider payloads (rendezvous
// requests, FIN ids) travel big-endian: the two ends may be different processes and machines.
#pragma once

#include <rdma/fi_errno.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fi/info.hpp"
#include "mroce/mroce.hpp"

namespace mroce::fi {

constexpr size_t kRxSlots = 16, kTxSlots = 16;  // bounce slots per channel
// wr_id bit of RMA operations (rma.cpp); channel.cpp uses bits 63 and 62.
constexpr uint64_t kRmaWrBit = uint64_t{1} << 61;
constexpr uint16_t kOrderedStream = 0;  // everything libfabric orders (DESIGN.md 5.2 streams)

// The provider's messages: CM (5.4), data, flow control (5.3) and the rendezvous of RDM endpoints.
enum class WireType : uint8_t { Hello = 1, Accept = 2, Reject = 3, Data = 4, Credit = 5, Rts = 6, Fin = 7 };
constexpr uint8_t kHasData = 1;  // Data/Rts: `data` is remote CQ data
constexpr uint8_t kTagged = 2;   // Data/Rts: a tagged message, `tag` matters

struct WireHeader {
  WireType type = WireType::Data;
  uint8_t flags = 0;
  uint16_t credits = 0;    // bounce receives the sender reposted since its last header (5.3 credits)
  uint32_t dst_ep_id = 0;  // Hello: the endpoint asked for
  uint64_t data = 0;       // remote CQ data
  uint64_t tag = 0;
};
// On the wire, big-endian (the two ends may be different processes and machines): [0] type [1] flags
// [2..3] credits [4..7] dst_ep_id [8..15] data [16..23] tag.
constexpr size_t kWireHeaderLen = 24;
constexpr size_t kSlotSize = kWireHeaderLen + kMsgMaxSize;
void encode_header(const WireHeader& h, uint8_t* out) noexcept;
WireHeader decode_header(const uint8_t* in) noexcept;

// Rendezvous (RDM messages above kMsgMaxSize, DESIGN.md 5.3): the sender's buffer, readable by the
// peer with `rkey`; the receiver reads it and answers Fin with the same id.
struct RendezvousRequest {
  uint64_t id = 0;
  uint64_t length = 0;
  uint64_t iova = 0;
  uint32_t rkey = 0;
  uint32_t reserved = 0;
};
// On the wire (an Rts payload), big-endian: id, length, iova, rkey, reserved.
constexpr size_t kRendezvousLen = 32;
void encode_rendezvous(const RendezvousRequest& r, uint8_t* out) noexcept;
RendezvousRequest decode_rendezvous(const uint8_t* in) noexcept;

struct TxSlot {
  bool busy = false;
  bool report = false;       // a CQ entry is due (not inject, not CM, not suppressed)
  bool application = false;  // the application's message (Data, Rts), not the provider's own
  void* context = nullptr;
  uint64_t cookie = 0;  // the owner's own bookkeeping (RDM: the tagged bit, ...)
};

struct Channel;

// What a channel's owner is told. Every callback runs under the host mutex, from dispatch; only
// on_down may remove the channel (the others run while dispatch still uses it).
struct ChannelHandler {
  void (*on_up)(void* owner, Channel& c);  // bounces posted: the owner may send its first message
  // Every message but Hello (which goes to listeners) and Credit (handled here).
  void (*on_message)(void* owner, Channel& c, const WireHeader& h, const uint8_t* payload, size_t len);
  void (*on_sent)(void* owner, Channel& c, const TxSlot& slot, Status status);
  void (*on_read)(void* owner, Channel& c, uint64_t id, Status status);  // a post_rendezvous_read ended
  void (*on_writable)(void* owner, Channel& c);                          // credits came back or a tx slot freed
  void (*on_down)(void* owner, Channel& c, Status status);               // the owner decides when to remove it
  // fi_writedata of the peer: its bytes are placed, `data` is its immediate (nullptr: ignored).
  void (*on_remote_write)(void* owner, Channel& c, uint32_t data) = nullptr;
};

// One engine connection with its bounce buffers.
struct Channel {
  Device* device = nullptr;
  uint32_t conn = 0;
  bool initiator = false;
  std::vector<uint8_t> rx, tx;  // kRxSlots / kTxSlots slots of kSlotSize
  MemoryRegion rx_mr, tx_mr;
  TxSlot tx_slots[kTxSlots];
  bool up = false, down = false;
  // Credits (DESIGN.md 5.3): messages the peer has bounces for, and bounces reposted here that the
  // peer has not been told about. One credit is kept back for a Credit message, so that two
  // sides out of credits can always give them back to each other.
  uint32_t send_credits = kRxSlots;
  uint32_t credits_to_return = 0;
  const ChannelHandler* handler = nullptr;  // nullptr: nobody holds the channel (removed at Down)
  void* owner = nullptr;
};

// Who answers a Hello for an endpoint id of a device: a passive MSG endpoint or an RDM endpoint.
struct Listener {
  // `payload` is the initiator's address (kAddrLen bytes) and the CM data after it.
  void (*on_hello)(void* owner, Channel& c, const uint8_t* payload, size_t len);
  void* owner = nullptr;
};

// Registers the bounce buffers and records the channel. nullptr when the device has no room.
Channel* add_channel(Device* device, uint32_t conn, bool initiator);
// Deregisters and forgets it (the engine connection must be closed or gone).
void remove_channel(Channel* c);
// Starts an engine connection to `peer` and its channel, held by (handler, owner). 0 or an fi errno.
int connect_channel(Device* device, const Address& peer, const ChannelHandler* handler, void* owner, Channel** out);
// Releases the owner's hold: closes the connection (abort) or removes the channel when it is down.
void release_channel(Channel* c);

// A fresh endpoint id (process-wide, never 0): the address part that names an endpoint of a device.
uint32_t new_endpoint_id() noexcept;
void add_listener(Device* device, uint32_t ep_id, const Listener& listener);
void remove_listener(Device* device, uint32_t ep_id);

// Sends header + payload (at most kMsgMaxSize) from a free tx slot, with the credits due to the
// peer. -FI_EAGAIN when every slot is in flight or the peer has no bounce for it (a message other
// than Credit needs two credits, see Channel).
int send_wire(Channel* c, WireHeader h, const void* payload, size_t len, const TxSlot& slot);
// Free tx slots, counting the credits: how many sends would be taken now.
size_t sendable(const Channel* c);
// Reads `length` bytes at the peer's `iova` (rkey) into the local region `sink` on a bulk stream;
// the owner's on_read gets `id` back. 0 or an fi errno.
int post_rendezvous_read(Channel* c, uint64_t id, const Sge& sink, uint64_t iova, uint32_t rkey);

// Engine results and statuses as fi errnos: negative for calls, positive for CQ error entries.
int fi_errno_of(Result r);
int fi_errno_of(Status s);

}  // namespace mroce::fi
