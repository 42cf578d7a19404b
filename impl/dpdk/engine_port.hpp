// The engine's packet-I/O interface (impl/io/packet_io.hpp: io::PacketIo, io::Clock) on DPDK ports.
//
// One EnginePort serves one endpoint over one or more planes (ports) of an IoContext. Buffers are
// mbufs: the io::PacketBuf the engine sees lives in the mbuf's private area (the IoContext must be
// opened with IoOptions::mbuf_priv >= kEnginePriv), its `data` is the mbuf's data, so frames the
// engine builds go out without a copy. Received frames come from every plane in turn (through each
// plane's rx impairment); a frame the engine sends goes to plane impair::ecmp_link(route, planes)
// (impl/impair/ecmp.hpp, the harness's ECMP hash, so a port run and an in-memory run put a route on
// the same link): a path's route (its UDP source port, [R-ENC-6], carried in io::PacketBuf::route)
// picks its plane, and re-pathing moves it. Not thread-safe: one EnginePort per lcore.
#pragma once

#include <rte_mbuf.h>

#include <cstdint>
#include <vector>

#include "dpdk/io.hpp"
#include "io/packet_io.hpp"

namespace mroce::dpdk {

inline constexpr uint16_t kEnginePriv = uint16_t(sizeof(io::PacketBuf));

class EnginePort final : public io::PacketIo {
 public:
  // Throws std::invalid_argument when a plane index is out of range or the pool has no room for
  // the PacketBuf.
  EnginePort(IoContext& ctx, std::vector<size_t> planes);
  ~EnginePort() override;

  uint16_t rx_burst(io::PacketBuf** out, uint16_t n) noexcept override;
  void free_rx(io::PacketBuf* b) noexcept override;
  io::PacketBuf* alloc_tx() noexcept override;
  void tx_burst(io::PacketBuf** pkts, uint16_t n) noexcept override;

  // Sends frames the tx impairments held back and that are due (call once per loop turn).
  void service() noexcept;

  uint64_t rx_dropped_chained() const { return dropped_chained_; }

  static rte_mbuf* mbuf_of(io::PacketBuf* b) { return reinterpret_cast<rte_mbuf*>(b) - 1; }
  static io::PacketBuf* buf_of(rte_mbuf* m) { return static_cast<io::PacketBuf*>(rte_mbuf_to_priv(m)); }

 private:
  IoContext& ctx_;
  std::vector<size_t> planes_;
  size_t next_plane_ = 0;
  rte_mbuf* stash_[2 * kMaxBurst];  // received, not yet handed to the engine
  uint16_t stash_head_ = 0, stash_n_ = 0;
  uint64_t dropped_chained_ = 0;
};

// The engine's clock on DPDK's TSC (dpdk::now_us()).
class DpdkClock final : public io::Clock {
 public:
  uint64_t now_us() const noexcept override { return dpdk::now_us(); }
};

}  // namespace mroce::dpdk
