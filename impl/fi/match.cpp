#include "fi/match.hpp"

#include <algorithm>
#include <cstring>

namespace mroce::fi {

bool matches(const PostedRecv& r, const MessageInfo& m) noexcept {
  if (r.tagged != m.tagged) return false;
  if (r.source != FI_ADDR_UNSPEC && r.source != m.source) return false;
  return !r.tagged || ((r.tag ^ m.tag) & ~r.ignore) == 0;
}

std::optional<PostedRecv> MatchQueues::take_receive(const MessageInfo& m) {
  auto it = std::find_if(posted_.begin(), posted_.end(), [&](const PostedRecv& r) { return matches(r, m); });
  if (it == posted_.end()) return std::nullopt;
  PostedRecv r = *it;
  posted_.erase(it);
  return r;
}

Arrival* MatchQueues::find_arrival(const PostedRecv& r) {
  auto it = std::find_if(unexpected_.begin(), unexpected_.end(), [&](const Arrival& a) { return matches(r, a.info); });
  return it == unexpected_.end() ? nullptr : &*it;
}

std::optional<Arrival> MatchQueues::take_arrival(const PostedRecv& r) {
  auto it = std::find_if(unexpected_.begin(), unexpected_.end(), [&](const Arrival& a) { return matches(r, a.info); });
  if (it == unexpected_.end()) return std::nullopt;
  Arrival a = std::move(*it);
  unexpected_.erase(it);
  return a;
}

std::optional<PostedRecv> MatchQueues::cancel(void* context) {
  auto it = std::find_if(posted_.begin(), posted_.end(), [&](const PostedRecv& r) { return r.context == context; });
  if (it == posted_.end()) return std::nullopt;
  PostedRecv r = *it;
  posted_.erase(it);
  return r;
}

std::deque<PostedRecv> MatchQueues::take_all_receives() {
  std::deque<PostedRecv> all;
  all.swap(posted_);
  return all;
}

size_t copy_into(const PostedRecv& r, const uint8_t* bytes, size_t len) {
  const size_t copied = std::min(len, r.len);
  if (copied > 0) std::memcpy(r.buf, bytes, copied);
  return copied;
}

namespace {

uint64_t receive_flags(const MessageInfo& m) {
  return (m.tagged ? FI_TAGGED : FI_MSG) | FI_RECV | (m.has_data ? FI_REMOTE_CQ_DATA : 0);
}

}  // namespace

void report_receive(CompletionQueue* cq, const PostedRecv& r, const MessageInfo& m, size_t copied) {
  if (cq == nullptr) return;
  if (copied < m.length) {  // an error completion is always reported, selective or not
    struct fi_cq_err_entry e {};
    e.op_context = r.context;
    e.flags = receive_flags(m);
    e.len = copied;
    e.buf = r.buf;
    e.data = m.data;
    e.tag = m.tag;
    e.olen = m.length - copied;
    e.err = FI_ETRUNC;
    e.prov_errno = static_cast<int>(Status::LocalLength);
    push_completion_error(cq, e);
    return;
  }
  if (!r.report) return;
  CqEntry c{};
  c.entry.op_context = r.context;
  c.entry.flags = receive_flags(m);
  c.entry.len = copied;
  c.entry.buf = r.buf;
  c.entry.data = m.data;
  c.entry.tag = m.tag;
  c.source = m.source == FI_ADDR_UNSPEC ? FI_ADDR_NOTAVAIL : m.source;
  push_completion(cq, c);
}

void report_receive_error(CompletionQueue* cq, const PostedRecv& r, int err, Status prov, const MessageInfo& m) {
  if (cq == nullptr) return;
  struct fi_cq_err_entry e {};
  e.op_context = r.context;
  e.flags = (r.tagged ? FI_TAGGED : FI_MSG) | FI_RECV;
  e.buf = r.buf;
  e.len = 0;
  e.tag = m.tag;
  e.olen = m.length;
  e.err = err;
  e.prov_errno = static_cast<int>(prov);
  push_completion_error(cq, e);
}

}  // namespace mroce::fi
