// The receiver's fair-share rate hints [R-FS-1..5]: max-min fair shares of the endpoint's inbound
// capacity over its active connections, by water-filling over estimated demands.
#include <algorithm>

#include "engine/engine.hpp"

namespace mroce::engine {

// [R-FS-4]: ascending demand (ties by ascending connection ID); each gets min(demand, R / n), at least 1.
void Engine::fair_share_waterfill() noexcept {
  uint32_t* a = scratch_.get();
  uint32_t n = 0;
  for (uint32_t s = fair_head_; s != kNone; s = conns_[s].fair.next) a[n++] = s;
  std::sort(a, a + n, [&](uint32_t x, uint32_t y) {
    const Conn& cx = conns_[x];
    const Conn& cy = conns_[y];
    return cx.fair.demand != cy.fair.demand ? cx.fair.demand < cy.fair.demand : cx.id < cy.id;
  });
  uint64_t remaining = cfg_.capacity_mbps;
  uint64_t left = n;
  for (uint32_t i = 0; i < n; ++i) {
    Conn& c = conns_[a[i]];
    uint64_t share = std::min<uint64_t>(c.fair.demand, remaining / left);
    if (share == 0 && remaining > 0) share = 1;  // every share at least 1 Mb/s
    c.fair.share = static_cast<uint32_t>(share);
    remaining -= share;
    --left;
  }
}

void Engine::fair_share_remove(Conn& c) noexcept {
  if (!c.fair.active) return;
  if (c.fair.prev != kNone)
    conns_[c.fair.prev].fair.next = c.fair.next;
  else
    fair_head_ = c.fair.next;
  if (c.fair.next != kNone) conns_[c.fair.next].fair.prev = c.fair.prev;
  c.fair.prev = c.fair.next = kNone;
  c.fair.active = false;
  c.fair.share = 0;
  c.fair.bits_in_interval = 0;
  --fair_count_;
}

// [R-FS-1]: every FS_INTERVAL.
void Engine::fair_share_update() noexcept {
  const uint64_t interval = cfg_.fs_interval_us;
  const uint64_t window = 4 * interval;  // ACTIVE_WINDOW [R-FS-2]
  bool any = false;
  for (uint32_t s = fair_head_; s != kNone;) {
    Conn& c = conns_[s];
    s = c.fair.next;
    if (now_ - c.fair.last_data >= window || !c.live()) {
      fair_share_remove(c);  // not active: hint 0
      continue;
    }
    // [R-FS-3]: r = bits / µs = Mb/s; demand = max(C / 1000, 2 r)
    const uint64_t rate = c.fair.bits_in_interval / interval;
    c.fair.demand = static_cast<uint32_t>(
        std::min<uint64_t>(std::max<uint64_t>(cfg_.capacity_mbps / 1000, 2 * rate), 0xFFFFFFFFu));
    c.fair.bits_in_interval = 0;
    any = true;
  }
  fair_share_waterfill();
  fair_next_update_ = any ? (now_ / interval + 1) * interval : 0;
}

// [R-FS-2]: a data packet on a connection that was not active makes it active at once, with the
// provisional demand C / (N + 1), and the shares are recomputed at once.
void Engine::fair_share_on_data(Conn& c, uint32_t payload_len) noexcept {
  c.fair.bits_in_interval += uint64_t(8) * payload_len;
  c.fair.last_data = now_;
  if (c.fair.active) return;
  const uint32_t others = fair_count_;
  c.fair.active = true;
  const uint32_t s = conns_.slot(c);
  c.fair.prev = kNone;
  c.fair.next = fair_head_;
  if (fair_head_ != kNone) conns_[fair_head_].fair.prev = s;
  fair_head_ = s;
  ++fair_count_;
  c.fair.demand = cfg_.capacity_mbps / (others + 1);
  fair_share_waterfill();
  if (fair_next_update_ == 0) fair_next_update_ = (now_ / cfg_.fs_interval_us + 1) * cfg_.fs_interval_us;
}

}  // namespace mroce::engine
