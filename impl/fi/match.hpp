// Receive matching (DESIGN.md 5.3 "Receives"), shared by MSG and RDM endpoints: the application's
// posted receives and the messages that arrived before a receive wanted them (unexpected), each
// queue in order. A message matches the oldest receive of its kind (tagged or not) whose source is
// FI_ADDR_UNSPEC or the message's, and, tagged, whose tag agrees outside the ignore bits. MSG
// endpoints post untagged receives from FI_ADDR_UNSPEC, which makes this plain posting order.
// Also the CQ entries of receives: copied, truncated (FI_ETRUNC), canceled or flushed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "fi/channel.hpp"
#include "fi/objects.hpp"

namespace mroce::fi {

// What a receive completion says about the message it took.
struct MessageInfo {
  size_t length = 0;  // the whole message, however much the receive takes
  bool tagged = false;
  uint64_t tag = 0;
  bool has_data = false;
  uint64_t data = 0;
  fi_addr_t source = FI_ADDR_UNSPEC;  // the sender in the endpoint's AV (RDM), FI_ADDR_NOTAVAIL if absent
};

struct PostedRecv {
  uint8_t* buf = nullptr;
  size_t len = 0;
  void* context = nullptr;
  bool report = true;  // a CQ entry at success (selective completion); errors always report
  bool tagged = false;
  uint64_t tag = 0, ignore = 0;
  fi_addr_t source = FI_ADDR_UNSPEC;  // FI_DIRECTED_RECV: only this sender's messages
};

// A message the sender left behind (rendezvous, DESIGN.md 5.3): read it from the channel.
struct RemoteMessage {
  Channel* channel = nullptr;  // nullptr once the connection is gone: the receive fails
  RendezvousRequest request;
};

struct Arrival {
  MessageInfo info;
  std::vector<uint8_t> payload;         // eager messages: all the bytes
  std::optional<RemoteMessage> remote;  // rendezvous: where the bytes are
  // RDM: the Peer it came from. A message can arrive before the application inserts its sender
  // into the AV (Open MPI inserts peers at their first use): its source is FI_ADDR_NOTAVAIL then and
  // is looked up again once the AV changed, so a directed receive posted afterwards still takes it.
  const void* sender = nullptr;
};

bool matches(const PostedRecv& r, const MessageInfo& m) noexcept;

class MatchQueues {
 public:
  // The oldest posted receive `m` matches, taken out of the queue.
  std::optional<PostedRecv> take_receive(const MessageInfo& m);
  // The oldest unexpected message `r` matches: looked at (FI_PEEK) or taken.
  Arrival* find_arrival(const PostedRecv& r);
  std::optional<Arrival> take_arrival(const PostedRecv& r);
  void post(const PostedRecv& r) { posted_.push_back(r); }
  void add_arrival(Arrival a) { unexpected_.push_back(std::move(a)); }
  // fi_cancel: the posted receive with this context, taken out of the queue.
  std::optional<PostedRecv> cancel(void* context);
  // Every posted receive, oldest first, the queue left empty (the connection is gone).
  std::deque<PostedRecv> take_all_receives();
  size_t posted() const noexcept { return posted_.size(); }
  std::deque<Arrival>& unexpected() noexcept { return unexpected_; }

 private:
  std::deque<PostedRecv> posted_;
  std::deque<Arrival> unexpected_;
};

// Copies what fits of `bytes` into the receive; returns how many bytes it copied.
size_t copy_into(const PostedRecv& r, const uint8_t* bytes, size_t len);
// The receive's completion once `copied` bytes of `m` are in its buffer: a CQ entry, or FI_ETRUNC
// with the rest in olen (reported even under selective completion).
void report_receive(CompletionQueue* cq, const PostedRecv& r, const MessageInfo& m, size_t copied);
// An error completion of a receive (FI_ECANCELED, FI_ENOMSG, ...); `m` as far as known.
void report_receive_error(CompletionQueue* cq, const PostedRecv& r, int err, Status prov, const MessageInfo& m = {});

}  // namespace mroce::fi
