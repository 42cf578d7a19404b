// In-memory loop between two ports (see mem_loop.hpp).
#include "io/mem_loop.hpp"

#include <bit>
#include <cstring>

namespace mroce::io {

BufPool::BufPool(uint32_t count, uint32_t buf_size)
    : count_(count),
      free_n_(count),
      storage_(new uint8_t[size_t(count) * buf_size + 64]),
      bufs_(new PacketBuf[count]),
      free_(new uint32_t[count]) {
  // Align the first buffer to a cache line; buf_size is a multiple of 64 so every buffer is aligned.
  uint8_t* base = storage_.get();
  base += (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64;
  for (uint32_t i = 0; i < count; ++i) {
    bufs_[i].data = base + size_t(i) * buf_size;
    bufs_[i].cap = buf_size;
    bufs_[i].index = i;
    free_[i] = count - 1 - i;  // hand out low indices first
  }
}

bool mark_ce(uint8_t* f, uint32_t len) noexcept {
  if (len < 34) return false;
  const uint16_t type = uint16_t(f[12] << 8 | f[13]);
  if (type == 0x0800) {
    const uint8_t ecn = f[15] & 3;
    if (ecn != 1 && ecn != 2) return false;
    f[15] |= 3;
    // Recompute the header checksum (RFC 1071) over the 20-byte header.
    f[24] = f[25] = 0;
    uint32_t s = 0;
    for (int i = 0; i < 20; i += 2) s += uint32_t(f[14 + i] << 8 | f[15 + i]);
    while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
    const uint16_t c = uint16_t(~s);
    f[24] = uint8_t(c >> 8);
    f[25] = uint8_t(c);
    return true;
  }
  if (type == 0x86DD && len >= 54) {
    const uint8_t tc = uint8_t((f[14] & 0x0F) << 4 | f[15] >> 4);
    const uint8_t ecn = tc & 3;
    if (ecn != 1 && ecn != 2) return false;
    f[15] |= 0x30;  // ECN bits are the low 2 bits of the traffic class: bits 4..5 of byte 15
    return true;
  }
  return false;
}

class MemLoop::Port final : public PacketIo {
 public:
  Port(MemLoop& loop, int id) : loop_(loop), id_(id) {}
  uint16_t rx_burst(PacketBuf** out, uint16_t n) noexcept override { return loop_.receive(id_, out, n); }
  void free_rx(PacketBuf* b) noexcept override { loop_.pool_.free(b); }
  PacketBuf* alloc_tx() noexcept override { return loop_.pool_.alloc(); }
  void tx_burst(PacketBuf** pkts, uint16_t n) noexcept override { loop_.send(id_, pkts, n); }

 private:
  MemLoop& loop_;
  int id_;
};

MemLoop::MemLoop(const Options& options) : opt_(options), pool_(options.buffers, options.buf_size) {
  const uint32_t size = std::bit_ceil(options.ring < 2 ? 2u : options.ring);
  for (auto& r : ring_) {
    r.buf.reset(new PacketBuf*[size]);
    r.at.reset(new uint64_t[size]);
    r.mask = size - 1;
  }
  ports_[0] = std::make_unique<Port>(*this, 0);
  ports_[1] = std::make_unique<Port>(*this, 1);
}

MemLoop::~MemLoop() = default;

PacketIo& MemLoop::port(int i) { return *ports_[i & 1]; }

void MemLoop::send(int from, PacketBuf** pkts, uint16_t n) noexcept {
  Ring& r = ring_[1 - from];
  const uint64_t at = opt_.clock ? opt_.clock->now_us() + opt_.delay_us : 0;
  for (uint16_t i = 0; i < n; ++i) {
    PacketBuf* b = pkts[i];
    ++stats_.sent[from];
    if (filter) {
      const Fate f = filter(from, b->data, b->len);
      if (f == Fate::Drop) {
        ++stats_.dropped[from];
        pool_.free(b);
        continue;
      }
      if (f == Fate::MarkCe && mark_ce(b->data, b->len)) ++stats_.ce_marked[from];
      if (f == Fate::Corrupt && b->len >= 10) {
        b->data[b->len - 10] ^= 0x01;
        ++stats_.corrupted[from];
      }
    }
    if (r.tail - r.head > r.mask) {
      ++stats_.ring_full[from];
      pool_.free(b);
      continue;
    }
    r.buf[r.tail & r.mask] = b;
    r.at[r.tail & r.mask] = at;
    ++r.tail;
  }
}

uint16_t MemLoop::receive(int to, PacketBuf** out, uint16_t n) noexcept {
  Ring& r = ring_[to];
  const uint64_t now = opt_.clock ? opt_.clock->now_us() : 0;
  uint16_t k = 0;
  while (k < n && r.head != r.tail && r.at[r.head & r.mask] <= now) {
    out[k] = r.buf[r.head & r.mask];
    out[k++]->rx_time = r.at[r.head & r.mask];
    ++r.head;
  }
  stats_.delivered[1 - to] += k;
  return k;
}

uint64_t MemLoop::next_delivery() const noexcept {
  uint64_t best = UINT64_MAX;
  for (const auto& r : ring_)
    if (r.head != r.tail && r.at[r.head & r.mask] < best) best = r.at[r.head & r.mask];
  return best;
}

uint32_t MemLoop::in_flight() const noexcept {
  return (ring_[0].tail - ring_[0].head) + (ring_[1].tail - ring_[1].head);
}

}  // namespace mroce::io
