// The receiver's fair-share rate hints [R-FS-1..5]: max-min fair shares of the endpoint's inbound
// capacity over its active connections, by water-filling over estimated demands.
#include <algorithm>

#include "engine/engine.hpp"

namespace mroce::engine {

// [R-FS-4]: ascending demand (ties by ascending connection ID); each gets min(demand, R / n), at least 1.
void Engine::fs_waterfill() noexcept {
  uint32_t* a = scratch_.get();
  uint32_t n = 0;
  for (uint32_t s = fs_head_; s != kNone; s = conns_[s].fs_next) a[n++] = s;
  std::sort(a, a + n, [&](uint32_t x, uint32_t y) {
    const Conn& cx = conns_[x];
    const Conn& cy = conns_[y];
    return cx.demand != cy.demand ? cx.demand < cy.demand : cx.id < cy.id;
  });
  uint64_t remaining = cfg_.capacity_mbps;
  uint64_t left = n;
  for (uint32_t i = 0; i < n; ++i) {
    Conn& c = conns_[a[i]];
    uint64_t share = std::min<uint64_t>(c.demand, remaining / left);
    if (share == 0 && remaining > 0) share = 1;  // every share at least 1 Mb/s
    c.share = static_cast<uint32_t>(share);
    remaining -= share;
    --left;
  }
}

void Engine::fs_remove(Conn& c) noexcept {
  if (!c.fs_active) return;
  const uint32_t s = conns_.slot(c);
  if (c.fs_prev != kNone)
    conns_[c.fs_prev].fs_next = c.fs_next;
  else
    fs_head_ = c.fs_next;
  if (c.fs_next != kNone) conns_[c.fs_next].fs_prev = c.fs_prev;
  c.fs_prev = c.fs_next = kNone;
  c.fs_active = false;
  c.share = 0;
  c.bits_in_interval = 0;
  --fs_count_;
  (void)s;
}

// [R-FS-1]: every FS_INTERVAL.
void Engine::fs_compute() noexcept {
  const uint64_t interval = cfg_.fs_interval_us;
  const uint64_t window = 4 * interval;  // ACTIVE_WINDOW [R-FS-2]
  bool any = false;
  for (uint32_t s = fs_head_; s != kNone;) {
    Conn& c = conns_[s];
    s = c.fs_next;
    if (now_ - c.last_data >= window || !c.live()) {
      fs_remove(c);  // not active: hint 0
      continue;
    }
    // [R-FS-3]: r = bits / µs = Mb/s; demand = max(C / 1000, 2 r)
    const uint64_t rate = c.bits_in_interval / interval;
    c.demand = static_cast<uint32_t>(
        std::min<uint64_t>(std::max<uint64_t>(cfg_.capacity_mbps / 1000, 2 * rate), 0xFFFFFFFFu));
    c.bits_in_interval = 0;
    any = true;
  }
  fs_waterfill();
  fs_next_ = any ? (now_ / interval + 1) * interval : 0;
}

// [R-FS-2]: a data packet on a connection that was not active makes it active at once, with the
// provisional demand C / (N + 1), and the shares are recomputed at once.
void Engine::fs_on_data(Conn& c, uint32_t payload_len) noexcept {
  c.bits_in_interval += uint64_t(8) * payload_len;
  c.last_data = now_;
  if (c.fs_active) return;
  const uint32_t others = fs_count_;
  c.fs_active = true;
  const uint32_t s = conns_.slot(c);
  c.fs_prev = kNone;
  c.fs_next = fs_head_;
  if (fs_head_ != kNone) conns_[fs_head_].fs_prev = s;
  fs_head_ = s;
  ++fs_count_;
  c.demand = cfg_.capacity_mbps / (others + 1);
  fs_waterfill();
  if (fs_next_ == 0) fs_next_ = (now_ / cfg_.fs_interval_us + 1) * cfg_.fs_interval_us;
}

}  // namespace mroce::engine
