// The receiver's fair-share rate hints (see fair_share.hpp).
#include "engine/fair_share.hpp"

#include <algorithm>

namespace mroce::engine {

// [R-FS-4]: ascending demand (ties by ascending connection ID); each gets min(demand, R / n), at least 1.
void FairShare::waterfill() noexcept {
  ConnTable& conns = *conns_;
  uint32_t* a = scratch_;
  uint32_t n = 0;
  for (uint32_t s = head_; s != kNone; s = conns[s].fair.next) a[n++] = s;
  std::sort(a, a + n, [&](uint32_t x, uint32_t y) {
    const Conn& cx = conns[x];
    const Conn& cy = conns[y];
    return cx.fair.demand != cy.fair.demand ? cx.fair.demand < cy.fair.demand : cx.id < cy.id;
  });
  uint64_t remaining = capacity_mbps_;
  uint64_t left = n;
  for (uint32_t i = 0; i < n; ++i) {
    Conn& c = conns[a[i]];
    uint64_t share = std::min<uint64_t>(c.fair.demand, remaining / left);
    if (share == 0 && remaining > 0) share = 1;  // every share at least 1 Mb/s
    c.fair.share = static_cast<uint32_t>(share);
    remaining -= share;
    --left;
  }
}

void FairShare::remove(Conn& c) noexcept {
  if (!c.fair.active) return;
  ConnTable& conns = *conns_;
  if (c.fair.prev != kNone)
    conns[c.fair.prev].fair.next = c.fair.next;
  else
    head_ = c.fair.next;
  if (c.fair.next != kNone) conns[c.fair.next].fair.prev = c.fair.prev;
  c.fair.prev = c.fair.next = kNone;
  c.fair.active = false;
  c.fair.share = 0;
  c.fair.bits_in_interval = 0;
  --count_;
}

// [R-FS-1]: every FS_INTERVAL.
void FairShare::update(uint64_t now) noexcept {
  const uint64_t interval = interval_us_;
  const uint64_t window = 4 * interval;  // ACTIVE_WINDOW [R-FS-2]
  bool any = false;
  for (uint32_t s = head_; s != kNone;) {
    Conn& c = (*conns_)[s];
    s = c.fair.next;
    if (now - c.fair.last_data >= window || !c.live()) {
      remove(c);  // not active: hint 0
      continue;
    }
    // [R-FS-3]: r = bits / µs = Mb/s; demand = max(C / 1000, 2 r, 3 share / 4):
    // a share shrinks by a quarter at most per computation
    const uint64_t rate = c.fair.bits_in_interval / interval;
    c.fair.demand = static_cast<uint32_t>(std::min<uint64_t>(
        std::max({uint64_t(capacity_mbps_ / 1000), 2 * rate, uint64_t(c.fair.share) * 3 / 4}), 0xFFFFFFFFu));
    c.fair.bits_in_interval = 0;
    any = true;
  }
  waterfill();
  next_update_ = any ? (now / interval + 1) * interval : 0;
}

// [R-FS-2]: a data packet on a connection that was not active makes it active at once, with the
// provisional demand C / (N + 1), and the shares are recomputed at once.
void FairShare::activate(Conn& c, uint64_t now) noexcept {
  ConnTable& conns = *conns_;
  const uint32_t others = count_;
  c.fair.active = true;
  const uint32_t s = conns.slot(c);
  c.fair.prev = kNone;
  c.fair.next = head_;
  if (head_ != kNone) conns[head_].fair.prev = s;
  head_ = s;
  ++count_;
  c.fair.demand = capacity_mbps_ / (others + 1);
  waterfill();
  if (next_update_ == 0) next_update_ = (now / interval_us_ + 1) * interval_us_;
}

int FairShare::shares(uint32_t* ids, uint32_t* shares, int max) const noexcept {
  const ConnTable& conns = *conns_;
  int n = 0;
  for (uint32_t s = head_; s != kNone && n < max; s = conns[s].fair.next) scratch_[n++] = s;
  std::sort(scratch_, scratch_ + n, [&](uint32_t a, uint32_t b) { return conns[a].id < conns[b].id; });
  for (int i = 0; i < n; ++i) {
    ids[i] = conns[scratch_[i]].id;
    shares[i] = conns[scratch_[i]].fair.share;
  }
  return n;
}

}  // namespace mroce::engine
