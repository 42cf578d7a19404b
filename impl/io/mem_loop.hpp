// An in-memory "wire" connecting two PacketIo ports (0 and 1), for tests and benchmarks.
//
// A frame transmitted on one port is received on the other after `delay_us` of the loop's clock
// (0: at once), in transmission order. With a clock, received frames carry their delivery time as
// PacketBuf::rx_time (a NIC rx timestamp); without one, rx_time is 0 (unknown). Buffers move between the ports without copying: the sender's tx
// buffer becomes the receiver's rx buffer and returns to the shared pool when the receiver frees it.
// An optional filter decides each frame's fate (deliver, drop, mark CE as a switch would, ...), so
// tests can impose loss and congestion marks.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "impair/fate.hpp"
#include "io/packet_io.hpp"

namespace mroce::io {

// A frame's fate on the wire: the kinds of the harness's network and the impairment layer
// (impair::PacketFate::Kind; one fate enum for every network). The loop applies Deliver, Drop,
// MarkCe (impair::mark_ce: only ECT(0)/ECT(1) frames, IPv4 checksum fixed, as a switch), Corrupt
// (flips the low bit of the frame's 10th byte from the end, inside the ICRC coverage) and Duplicate
// (a copy right behind the frame, if the pool has a buffer). A FIFO wire cannot reorder: Delay
// delivers the frame in order (counted as `undelayed`).
using Fate = impair::PacketFate::Kind;

class MemLoop {
 public:
  struct Options {
    uint32_t buffers = 8192;       // shared buffer pool
    uint32_t ring = 4096;          // frames in flight per direction; a full ring drops (counted)
    uint64_t delay_us = 0;         // one-way delay
    const Clock* clock = nullptr;  // needed when delay_us > 0
    uint32_t buf_size = kBufSize;  // bytes per buffer (a multiple of 64; smaller saves memory when
                                   // only small frames travel)
  };
  // from: the sending port (0 or 1).
  using Filter = std::function<Fate(int from, const uint8_t* frame, uint32_t len)>;

  explicit MemLoop(const Options& options);
  ~MemLoop();
  MemLoop(const MemLoop&) = delete;
  MemLoop& operator=(const MemLoop&) = delete;

  PacketIo& port(int i);
  Filter filter;
  // What port i reports as its free transmit ring (PacketIo::tx_room); unlimited by default.
  void set_tx_room(int i, uint32_t room) noexcept { tx_room_[i] = room; }

  // Earliest time a frame in flight becomes receivable (UINT64_MAX when none): lets a virtual-time
  // driver know when to move the clock.
  uint64_t next_delivery() const noexcept;
  uint32_t in_flight() const noexcept;

  struct Stats {
    uint64_t sent[2] = {0, 0};
    uint64_t delivered[2] = {0, 0};
    uint64_t dropped[2] = {0, 0};
    uint64_t ce_marked[2] = {0, 0};
    uint64_t corrupted[2] = {0, 0};
    uint64_t duplicated[2] = {0, 0};  // copies made (delivered on top of the frames sent)
    uint64_t undelayed[2] = {0, 0};   // Delay fates delivered in order
    uint64_t ring_full[2] = {0, 0};
  };
  const Stats& stats() const noexcept { return stats_; }
  BufPool& pool() noexcept { return pool_; }

 private:
  class Port;
  struct Ring {
    std::unique_ptr<PacketBuf*[]> buf;
    std::unique_ptr<uint64_t[]> at;
    uint32_t mask = 0, head = 0, tail = 0;
  };
  void send(int from, PacketBuf** pkts, uint16_t n) noexcept;
  void enqueue(int from, PacketBuf* b, uint64_t at) noexcept;
  uint16_t receive(int to, PacketBuf** out, uint16_t n) noexcept;

  Options opt_;
  BufPool pool_;
  Ring ring_[2];  // ring_[i]: frames travelling towards port i
  std::unique_ptr<Port> ports_[2];
  Stats stats_;
  uint32_t tx_room_[2] = {UINT32_MAX, UINT32_MAX};
};

}  // namespace mroce::io
