// In-memory loop between two ports (see mem_loop.hpp).
#include "io/mem_loop.hpp"

#include <bit>
#include <cstring>

#include "impair/ecn.hpp"

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

class MemLoop::Port final : public PacketIo {
 public:
  Port(MemLoop& loop, int id) : loop_(loop), id_(id) {}
  uint16_t rx_burst(PacketBuf** out, uint16_t n) noexcept override { return loop_.receive(id_, out, n); }
  void free_rx(PacketBuf* b) noexcept override { loop_.pool_.free(b); }
  PacketBuf* alloc_tx() noexcept override { return loop_.pool_.alloc(); }
  void tx_burst(PacketBuf** pkts, uint16_t n) noexcept override { loop_.send(id_, pkts, n); }
  uint32_t tx_room() const noexcept override { return loop_.tx_room_[id_]; }

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
  const uint64_t at = opt_.clock ? opt_.clock->now_us() + opt_.delay_us : 0;
  for (uint16_t i = 0; i < n; ++i) {
    PacketBuf* b = pkts[i];
    ++stats_.sent[from];
    PacketBuf* copy = nullptr;
    switch (filter ? filter(from, b->data, b->len) : Fate::Deliver) {
      case Fate::Deliver:
        break;
      case Fate::Drop:
        ++stats_.dropped[from];
        pool_.free(b);
        continue;
      case Fate::MarkCe:
        if (impair::mark_ce({b->data, b->len})) ++stats_.ce_marked[from];
        break;
      case Fate::Corrupt:
        if (b->len >= 10) {
          b->data[b->len - 10] ^= 0x01;
          ++stats_.corrupted[from];
        }
        break;
      case Fate::Duplicate:
        if ((copy = pool_.alloc()) != nullptr && b->len <= copy->cap) {
          std::memcpy(copy->data, b->data, b->len);
          copy->len = b->len;
          copy->route = b->route;
          ++stats_.duplicated[from];
        } else if (copy) {
          pool_.free(copy);
          copy = nullptr;
        }
        break;
      case Fate::Delay:
        ++stats_.undelayed[from];
        break;
    }
    enqueue(from, b, at);
    if (copy) enqueue(from, copy, at);
  }
}

void MemLoop::enqueue(int from, PacketBuf* b, uint64_t at) noexcept {
  Ring& r = ring_[1 - from];
  if (r.tail - r.head > r.mask) {
    ++stats_.ring_full[from];
    pool_.free(b);
    return;
  }
  r.buf[r.tail & r.mask] = b;
  r.at[r.tail & r.mask] = at;
  ++r.tail;
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
