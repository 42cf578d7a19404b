// Hooks for test harnesses that drive a Device one event at a time in virtual time (the lockstep
// with the model, the conformance runner's in-process DUT, engine unit tests). Applications use
// progress(): these bypass the PacketIo and the poll loop, so they stay out of mroce/mroce.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mroce/mroce.hpp"

namespace mroce::testing {

struct DeviceHooks {
  // Only the timers due by clock.now() (and what they make sendable).
  static void advance(Device& d) noexcept;
  // One received frame, processed at clock.now(). The frame is only read.
  static void input(Device& d, const uint8_t* frame, uint32_t len) noexcept;
  // For adapters that must report everything in the order it happened: while on, the device records
  // the kind of each output (0 a frame handed to the PacketIo, 1 a completion, 2 a connection event)
  // in a bounded log; take_output_order() moves it out. Off by default (one branch per output).
  static void record_output_order(Device& d, bool on) noexcept;
  static size_t take_output_order(Device& d, uint8_t* kinds, size_t max) noexcept;
  static constexpr size_t kMaxOrderLog = size_t(1) << 16;  // outputs kept per take
  // The most entries a lookup of a canceled RSN ([R-REL-9], A-22) can examine now, over every
  // connection: its cost, which must not grow with the number of canceled RSNs.
  static uint32_t canceled_rsn_longest_probe(const Device& d) noexcept;
};

}  // namespace mroce::testing
