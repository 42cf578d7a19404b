// A PacketIo that records every transmitted frame, for drivers that deliver frames themselves (the
// lockstep and harness adapters: they call Device::input() with each received frame).
#pragma once

#include <cstdint>
#include <vector>

#include "io/packet_io.hpp"

namespace mroce::io {

class CaptureIo final : public PacketIo {
 public:
  explicit CaptureIo(uint32_t buffers = 512) : pool_(buffers) {}
  uint16_t rx_burst(PacketBuf**, uint16_t) noexcept override { return 0; }
  void free_rx(PacketBuf* b) noexcept override { pool_.free(b); }
  PacketBuf* alloc_tx() noexcept override { return fail_alloc_ ? nullptr : pool_.alloc(); }
  void tx_burst(PacketBuf** p, uint16_t n) noexcept override {
    for (uint16_t i = 0; i < n; ++i) {
      frames.emplace_back(p[i]->data, p[i]->data + p[i]->len);
      pool_.free(p[i]);
    }
  }
  std::vector<std::vector<uint8_t>> take() {
    std::vector<std::vector<uint8_t>> out;
    out.swap(frames);
    return out;
  }
  void set_fail_alloc(bool f) { fail_alloc_ = f; }

  std::vector<std::vector<uint8_t>> frames;

 private:
  BufPool pool_;
  bool fail_alloc_ = false;
};

}  // namespace mroce::io
