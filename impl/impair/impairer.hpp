// The online impairment decision for each frame entering an impaired link, independent of how
// frames are stored (DPDK mbufs in impl/dpdk/impair_stage.hpp, byte vectors in apply_bytes()).
//
// Per frame, in this order (the harness's Network::enter order, so a port run replays in memory):
//   1. k = frames seen so far; the fate of frame k is drawn (always: fate k belongs to frame k even
//      when it is not applied);
//   2. exempt frames are delivered untouched: once the faults are over (now >= knobs.faults_until,
//      as the harness's NetConfig::faults_until; kForever: never over), or connection-control
//      frames when protect_handshake is on;
//   3. blackholes: a frame whose UDP source port has an active blackhole is dropped (a dead path);
//   4. the fate is applied (drop / duplicate / delay / CE / corrupt);
//   5. the optional virtual bottleneck queue: a frame still delivered adds its bytes to a queue that
//      drains at `queue_rate_mbps`; above `queue_limit_bytes` it is dropped (tail drop), above
//      `ce_threshold_bytes` it is CE-marked if ECN-capable (step marking, as a DCTCP-style switch).
// Steps 1-4 depend only on (seed, knobs, k, frame bytes, now vs. faults_until and blackhole times);
// step 5 depends on arrival times, so it is reproducible only when the times are.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "impair/ecn.hpp"
#include "impair/fate.hpp"
#include "impair/frame.hpp"

namespace mroce::impair {

inline constexpr uint64_t kForever = UINT64_MAX;

// Drops every frame with UDP source `sport` while from_us <= now < until_us (a path that died).
struct Blackhole {
  uint16_t sport = 0;
  uint64_t from_us = 0;
  uint64_t until_us = kForever;
  bool operator==(const Blackhole&) const = default;
};

struct ImpairConfig {
  FaultKnobs knobs;
  uint64_t seed = 1;
  bool protect_handshake = true;      // as the harness's NetConfig::protect_handshake
  std::vector<Blackhole> blackholes;  // ports are compared in host order
  uint64_t ce_threshold_bytes = 0;    // 0: no queue-depth CE marking
  uint64_t queue_limit_bytes = 0;     // 0: no tail drop
  uint32_t queue_rate_mbps = 0;       // drain rate of the virtual queue (0: queue off)
  bool operator==(const ImpairConfig&) const = default;

  // Defaults for a run on ports: fates for every frame (frames = 2^32-1) and faults that never
  // stop (faults_until = kForever), instead of the harness's FaultKnobs defaults (2000 frames;
  // faults_until 0, which with the same semantics would mean no faults at all). Times are µs of
  // the clock the stage is given (dpdk::now_us(): since EAL start).
  static ImpairConfig for_ports() {
    ImpairConfig c;
    c.knobs.frames = UINT32_MAX;
    c.knobs.faults_until = kForever;
    return c;
  }
};

// Parses "seed=7 loss_ppm=10000 blackhole=49153@1000-5000 ce_threshold_bytes=65536 ..." on top of
// `base`: every FaultKnobs key, plus seed, protect_handshake (0/1), ce_threshold_bytes,
// queue_limit_bytes, queue_rate_mbps and repeated blackhole=SPORT[@FROM_US[-UNTIL_US]].
// Throws std::invalid_argument on unknown keys or bad values.
ImpairConfig impair_from_string(std::string_view text, ImpairConfig base = ImpairConfig::for_ports());
std::string impair_to_string(const ImpairConfig& c);

// What happened to one frame.
struct Decision {
  enum Reason : uint8_t { Fate, Exempt, Blackholed, TailDrop };
  uint64_t index = 0;  // k
  PacketFate fate;     // the fate applied (Deliver when exempt)
  Reason reason = Fate;
  bool queue_ce = false;         // CE by the virtual queue's threshold (ECN-capable frames only)
  bool ce_marked = false;        // the frame's ECN was actually changed to CE (by fate or queue)
  uint32_t corrupt_at = 0;       // Corrupt: the frame offset XORed (0: frame too short)
  bool corrupt_pending = false;  // corrupt_at lies beyond `head`: the caller must XOR it
  bool dropped() const { return reason == Blackholed || reason == TailDrop || fate.kind == PacketFate::Drop; }
  bool operator==(const Decision&) const = default;
};

struct ImpairStats {
  uint64_t frames_in = 0, frames_out = 0;
  uint64_t dropped = 0, blackholed = 0, tail_dropped = 0;
  uint64_t duplicated = 0, delayed = 0, ce_marked = 0, ce_not_ect = 0, corrupted = 0, exempt = 0;
  uint64_t hold_overflow = 0;  // frames released early because the holding queue was full
  uint64_t copy_failed = 0;    // duplicates not made (no buffer)
  bool operator==(const ImpairStats&) const = default;
};

class Impairer {
 public:
  explicit Impairer(ImpairConfig config) : cfg_(std::move(config)), gen_(cfg_.knobs, cfg_.seed) {}

  // Decides the fate of the next frame arriving at `now_us`, and applies the byte changes (CE
  // mark, corruption) to `head`, the frame's first `head.size()` bytes (the IP/UDP headers must
  // be in it for CE and blackholes). `frame_len` is the whole frame's length (corruption picks a
  // byte within it; when that byte is beyond `head`, corrupt_pending tells the caller to do it).
  Decision decide(uint64_t now_us, std::span<uint8_t> head, uint32_t frame_len) {
    Decision d;
    d.index = gen_.index();
    const PacketFate fate = gen_.next();
    ++stats_.frames_in;
    const auto lay = frame_layout(head);
    const bool over = now_us >= cfg_.knobs.faults_until;
    if (over || (cfg_.protect_handshake && lay && lay->opcode && is_control_opcode(*lay->opcode))) {
      d.reason = Decision::Exempt;
      ++stats_.exempt;
      return d;
    }
    if (lay && blackholed(lay->sport, now_us)) {
      d.reason = Decision::Blackholed;
      ++stats_.blackholed;
      return d;
    }
    d.fate = fate;
    switch (fate.kind) {
      case PacketFate::Drop:
        ++stats_.dropped;
        return d;
      case PacketFate::Duplicate:
        ++stats_.duplicated;
        break;
      case PacketFate::Delay:
        ++stats_.delayed;
        break;
      case PacketFate::MarkCe:
        d.ce_marked = mark_ce(head);
        d.ce_marked ? ++stats_.ce_marked : ++stats_.ce_not_ect;
        break;
      case PacketFate::Corrupt:
        ++stats_.corrupted;
        d.corrupt_at = uint32_t(corrupt_offset_in_frame(frame_len, fate.corrupt_offset));
        if (d.corrupt_at != 0 && d.corrupt_at < head.size()) {
          head[d.corrupt_at] ^= corrupt_mask(fate.corrupt_xor);
        } else if (d.corrupt_at != 0) {
          d.corrupt_pending = true;
        }
        break;
      case PacketFate::Deliver:
        break;
    }
    if (cfg_.queue_rate_mbps > 0) {
      const uint32_t copies = fate.kind == PacketFate::Duplicate ? 2 : 1;
      drain(now_us);
      if (cfg_.queue_limit_bytes > 0 && depth_bytes_ + frame_len > cfg_.queue_limit_bytes) {
        d.reason = Decision::TailDrop;
        ++stats_.tail_dropped;
        return d;
      }
      depth_bytes_ += uint64_t(frame_len) * copies;
      if (cfg_.ce_threshold_bytes > 0 && depth_bytes_ > cfg_.ce_threshold_bytes && !d.ce_marked) {
        d.queue_ce = true;
        d.ce_marked = mark_ce(head);
        d.ce_marked ? ++stats_.ce_marked : ++stats_.ce_not_ect;
      }
    }
    return d;
  }

  bool blackholed(uint16_t sport, uint64_t now_us) const {
    for (const auto& b : cfg_.blackholes)
      if (b.sport == sport && now_us >= b.from_us && now_us < b.until_us) return true;
    return false;
  }

  // Turns a blackhole on (until turned off) or off for `sport` at run time (e.g. from a test or a
  // control socket). Entries from the configuration stay as they are.
  void set_blackhole(uint16_t sport, bool on, uint64_t now_us) {
    if (on) {
      if (!blackholed(sport, now_us)) cfg_.blackholes.push_back({sport, now_us, kForever});
      return;
    }
    for (auto& b : cfg_.blackholes)
      if (b.sport == sport && b.until_us > now_us) b.until_us = std::max(b.from_us, now_us);
  }

  uint64_t queue_depth_bytes() const { return depth_bytes_; }
  const ImpairConfig& config() const { return cfg_; }
  ImpairStats& stats() { return stats_; }
  const ImpairStats& stats() const { return stats_; }

 private:
  void drain(uint64_t now_us) {
    if (now_us > last_us_) {
      // Mb/s = bits per µs; bytes drained = µs * rate / 8.
      const uint64_t drained = (now_us - last_us_) * cfg_.queue_rate_mbps / 8;
      depth_bytes_ = depth_bytes_ > drained ? depth_bytes_ - drained : 0;
      last_us_ = now_us;
    }
  }

  ImpairConfig cfg_;
  FateGenerator gen_;
  ImpairStats stats_;
  uint64_t depth_bytes_ = 0;
  uint64_t last_us_ = 0;
};

// Byte-vector version of the impaired link, for tests and in-memory runs: the copies of `frame`
// that leave the link, each with its release time (like the harness's Network::enter with a zero
// base delay). A duplicate's copy follows after max(gap, 1) µs; a delayed frame after its delay.
struct TimedFrame {
  uint64_t release_us = 0;
  std::vector<uint8_t> frame;
  bool operator==(const TimedFrame&) const = default;
};
Decision apply_bytes(Impairer& imp, uint64_t now_us, std::vector<uint8_t> frame, std::vector<TimedFrame>& out);

// A time-ordered holding queue with fixed capacity (no allocation after construction): items
// leave in order of release time, ties in order of insertion.
template <class T>
class DelayLine {
 public:
  explicit DelayLine(size_t capacity) { heap_.reserve(capacity); }
  size_t size() const { return heap_.size(); }
  bool empty() const { return heap_.empty(); }
  bool full() const { return heap_.size() == heap_.capacity(); }
  size_t capacity() const { return heap_.capacity(); }

  // False when full (the caller decides what to do with the item).
  bool push(uint64_t release_us, T item) {
    if (full()) return false;
    heap_.push_back({release_us, seq_++, std::move(item)});
    std::push_heap(heap_.begin(), heap_.end(), later);
    return true;
  }
  // Release time of the earliest item (kForever when empty).
  uint64_t next_release() const { return heap_.empty() ? kForever : heap_.front().release_us; }
  // Pops the earliest item if it is due at `now_us`.
  bool pop_due(uint64_t now_us, T& out) {
    if (heap_.empty() || heap_.front().release_us > now_us) return false;
    std::pop_heap(heap_.begin(), heap_.end(), later);
    out = std::move(heap_.back().item);
    heap_.pop_back();
    return true;
  }

 private:
  struct Entry {
    uint64_t release_us;
    uint64_t seq;
    T item;
  };
  // Max-heap comparator inverted: the top is the earliest (release, seq).
  static bool later(const Entry& a, const Entry& b) {
    return a.release_us != b.release_us ? a.release_us > b.release_us : a.seq > b.seq;
  }
  std::vector<Entry> heap_;
  uint64_t seq_ = 0;
};

}  // namespace mroce::impair
