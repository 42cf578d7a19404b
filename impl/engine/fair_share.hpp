// The receiver's fair-share rate hints [R-FS-1..5]: max-min fair shares of the endpoint's inbound
// capacity over its active connections, by water-filling over estimated demands. FairShare owns the
// list of active connections and the update schedule; each connection's share is in Conn::fair.
#pragma once

#include <cstdint>

#include "engine/conn_table.hpp"
#include "mroce/mroce.hpp"

namespace mroce::engine {

class FairShare {
 public:
  // `scratch`: room for one slot per connection (shared with the engine's other listings).
  void init(const DeviceConfig& cfg, ConnTable& conns, uint32_t* scratch) noexcept {
    capacity_mbps_ = cfg.capacity_mbps;
    interval_us_ = cfg.fs_interval_us;
    conns_ = &conns;
    scratch_ = scratch;
  }
  // When the next update is due [R-FS-1], or 0 while no connection is active.
  uint64_t next_update() const noexcept { return next_update_; }
  bool due(uint64_t t) const noexcept { return next_update_ != 0 && next_update_ <= t; }
  void update(uint64_t now) noexcept;  // [R-FS-1]
  // [R-FS-2], [R-FS-3]: a data packet (its payload) accepted on connection c.
  void on_data(Conn& c, uint32_t payload_len, uint64_t now) noexcept {
    c.fair.bits_in_interval += uint64_t(8) * payload_len;
    c.fair.last_data = now;
    if (!c.fair.active) activate(c, now);
  }
  void remove(Conn& c) noexcept;
  // The active connections' IDs and shares, by ascending ID (Device::rate_shares).
  int shares(uint32_t* ids, uint32_t* shares, int max) const noexcept;

 private:
  void activate(Conn& c, uint64_t now) noexcept;
  void waterfill() noexcept;

  uint32_t capacity_mbps_ = 0, interval_us_ = 1;
  ConnTable* conns_ = nullptr;
  uint32_t* scratch_ = nullptr;
  uint32_t head_ = kNone;  // list of active connections (Conn::fair.prev / next)
  uint32_t count_ = 0;
  uint64_t next_update_ = 0;
};

}  // namespace mroce::engine
