// Tx frames: building a frame in a tx buffer from a peer's template on a route, finalizing it, and
// batching the frames of an event for the port (flushed when a burst is full and after every call).
#pragma once

#include <cstdint>
#include <memory>

#include "codec/fast_codec.hpp"
#include "engine/queues.hpp"
#include "io/packet_io.hpp"
#include "mroce/mroce.hpp"

namespace mroce::engine {

class TxFrames {
 public:
  void init(io::PacketIo& io, uint16_t burst, Counters& counters, OutputLog& log);

  // Begins a frame from `tpl` on `route`: the UDP source port [R-ENC-6], mirrored in the IPv6 flow
  // label [R-ENC-4], and recorded in the buffer so that the port picks the frame's plane (ECMP)
  // without parsing it again. Sets *bth to the BTH. Without a tx buffer the frame is built in a
  // scratch buffer that end() drops, like a lost packet.
  io::PacketBuf* begin(const fast::FrameTemplate& tpl, bool data, uint16_t route, uint8_t** bth) noexcept {
    io::PacketBuf* b = io_->alloc_tx();
    if (!b) {
      ++counters_->tx_no_buffer;
      b = &scratch_;
    }
    uint8_t* f = b->data;
    *bth = tpl.begin(f, data);
    fast::detail::wr16(f + tpl.header_len() - fast::kUdpLen, route);
    if (tpl.config().ipv6) {
      f[15] &= 0xF0;
      f[16] = uint8_t(route >> 8);
      f[17] = uint8_t(route);
    }
    b->route = route;
    return b;
  }
  // Finalizes the frame (lengths, checksums, ICRC) and queues it.
  void end(io::PacketBuf* b, uint32_t payload_len) noexcept {
    b->len = fast::finalize(b->data, payload_len);
    if (b == &scratch_) return;
    ++counters_->tx_frames;
    log_->log(Output::Frame);
    q_[n_++] = b;
    if (n_ == burst_) flush();
  }
  uint16_t pending() const noexcept { return n_; }  // built, not yet given to the port
  void flush() noexcept {
    if (n_ == 0) return;
    io_->tx_burst(q_.get(), n_);
    n_ = 0;
  }

 private:
  io::PacketIo* io_ = nullptr;
  Counters* counters_ = nullptr;
  OutputLog* log_ = nullptr;
  std::unique_ptr<io::PacketBuf*[]> q_;
  uint16_t n_ = 0, burst_ = 0;
  std::unique_ptr<uint8_t[]> scratch_storage_;
  io::PacketBuf scratch_;
};

}  // namespace mroce::engine
