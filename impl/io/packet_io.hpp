// Packet I/O seen by the engine: bursts of frame buffers in and out, and a microsecond clock.
//
// The engine does no I/O itself. A PacketIo hands it received frames (rx_burst) and takes the frames
// it builds (tx_burst); buffers come from a pool so that the data path never allocates. PacketBuf is a
// plain struct today; a DPDK port would wrap an rte_mbuf behind the same four calls. The Clock is
// injected so that tests and the lockstep harness drive the engine in virtual time.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

namespace mroce::io {

// Room for the largest frame: IPv6 headers (62) + BTH (16) + largest extension (48) + 8192 + ICRC (4),
// rounded up to a multiple of 64.
inline constexpr uint32_t kBufSize = 8384;

struct PacketBuf {
  uint8_t* data = nullptr;  // first byte of the Ethernet frame
  uint32_t len = 0;         // frame length in bytes
  uint32_t cap = 0;         // bytes available at data
  uint32_t index = 0;       // position in its pool
  uint32_t pool = 0;        // owner tag (for pools shared by several ports)
  uint64_t rx_time = 0;     // arrival time (µs, the Clock's timescale) of a received frame, as a NIC
                            // rx timestamp; 0 = unknown
  uint16_t route = 0;       // a frame given to tx_burst: its UDP source port, the route of its path
                            // ([R-ENC-6]), set by whoever built it, so a port picks the frame's
                            // plane (ECMP) without parsing it again
};

// A fixed set of equally sized buffers allocated once; alloc/free are O(1) and never touch the heap.
// Not thread-safe (one pool per core, as with DPDK mempool caches).
class BufPool {
 public:
  explicit BufPool(uint32_t count, uint32_t buf_size = kBufSize);
  BufPool(const BufPool&) = delete;
  BufPool& operator=(const BufPool&) = delete;

  PacketBuf* alloc() noexcept {
    if (free_n_ == 0) return nullptr;
    PacketBuf* b = &bufs_[free_[--free_n_]];
    b->len = 0;
    b->route = 0;
    return b;
  }
  void free(PacketBuf* b) noexcept { free_[free_n_++] = b->index; }
  uint32_t available() const noexcept { return free_n_; }
  uint32_t capacity() const noexcept { return count_; }

 private:
  uint32_t count_;
  uint32_t free_n_;
  std::unique_ptr<uint8_t[]> storage_;
  std::unique_ptr<PacketBuf[]> bufs_;
  std::unique_ptr<uint32_t[]> free_;
};

// One port. rx_burst returns up to n received frames, which the caller gives back with free_rx once
// processed. alloc_tx gives an empty buffer for building a frame; tx_burst takes ownership of every
// frame it is given (a port that cannot send drops and frees them, as a NIC would). A frame given to
// tx_burst has `len` and `route` set.
class PacketIo {
 public:
  virtual ~PacketIo() = default;
  virtual uint16_t rx_burst(PacketBuf** out, uint16_t n) noexcept = 0;
  virtual void free_rx(PacketBuf* b) noexcept = 0;
  virtual PacketBuf* alloc_tx() noexcept = 0;
  virtual void tx_burst(PacketBuf** pkts, uint16_t n) noexcept = 0;
  // Frames the port can take now without queueing them behind the wire (its free transmit ring).
  // The engine holds new data back while it is 0 ([R-CC-11], A-30) and tries again at the next
  // progress(), so the caller polls again once the ring drains; retransmissions and control frames
  // are not held. Unlimited unless the port says otherwise.
  virtual uint32_t tx_room() const noexcept { return UINT32_MAX; }
};

// Microseconds since an arbitrary origin; never goes backwards.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual uint64_t now_us() const noexcept = 0;
};

// Virtual time, set by the test or the harness.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(uint64_t start = 0) : t_(start) {}
  uint64_t now_us() const noexcept override { return t_; }
  void set(uint64_t t) noexcept { t_ = t > t_ ? t : t_; }
  void advance(uint64_t dt) noexcept { t_ += dt; }

 private:
  uint64_t t_;
};

// Wall time (std::chrono::steady_clock), counted from construction.
class SteadyClock final : public Clock {
 public:
  SteadyClock() : origin_(std::chrono::steady_clock::now()) {}
  uint64_t now_us() const noexcept override {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - origin_).count());
  }

 private:
  std::chrono::steady_clock::time_point origin_;
};

}  // namespace mroce::io
