// A minimal two-endpoint driver for requirement-level unit tests of the model: frames are
// delivered after a fixed delay unless a test's filter drops or edits them. Tests that need
// generated workloads and fault schedules use the harness library instead; this driver exists so
// that a unit test can say "drop exactly the data packet with PSN X" in one line.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "model/endpoint.hpp"

namespace mroce::model::testing {

struct InFlight {
  Time at;
  uint64_t seq;
  int to;  // 0 = A, 1 = B
  std::vector<uint8_t> frame;
  bool operator<(const InFlight& o) const { return at != o.at ? at < o.at : seq < o.seq; }
};

class Pair {
 public:
  // Return false to drop the frame; may edit it (set CE, corrupt).
  using Filter = std::function<bool(int from, const ref::Packet&, std::vector<uint8_t>& frame)>;

  explicit Pair(Config a = config_for(0), Config b = config_for(1)) {
    ep_[0] = std::make_unique<Endpoint>(std::move(a));
    ep_[1] = std::make_unique<Endpoint>(std::move(b));
  }

  static Config config_for(int side) {
    Config c;
    c.self.mac = {0x02, 0, 0, 0, 0, uint8_t(side + 1)};
    c.self.ip = {10, 0, 0, uint8_t(side + 1)};
    c.first_conn_id = side == 0 ? 0x100 : 0x200;
    c.isn = side == 0 ? 0xFFFFFFF0u : 0x7FFFFFF8u;  // wraparound on A's paths
    return c;
  }

  Endpoint& a() { return *ep_[0]; }
  Endpoint& b() { return *ep_[1]; }
  Endpoint& ep(int i) { return *ep_[i]; }
  Time now() const { return now_; }
  Filter filter;
  Time delay = 5;
  std::vector<Completion> completions[2];
  std::vector<ref::Packet> sent[2];  // every packet each side transmitted, in order
  std::vector<std::string> rejected[2];
  uint32_t conn[2] = {0, 0};
  std::vector<MemoryRegistered> keys[2];

  void apply(int side, const std::vector<Action>& actions) {
    for (const auto& a : actions) {
      if (auto* t = std::get_if<Transmit>(&a)) {
        sent[side].push_back(t->packet);
        std::vector<uint8_t> frame = t->frame;
        if (filter && !filter(side, t->packet, frame)) continue;
        queue_.insert(InFlight{now_ + delay, seq_++, 1 - side, std::move(frame)});
      } else if (auto* c = std::get_if<Completion>(&a)) {
        completions[side].push_back(*c);
      } else if (auto* u = std::get_if<ConnectionUp>(&a)) {
        conn[side] = u->conn;
      } else if (auto* m = std::get_if<MemoryRegistered>(&a)) {
        keys[side].push_back(*m);
      } else if (auto* r = std::get_if<PostRejected>(&a)) {
        rejected[side].push_back(r->reason);
      } else if (auto* w = std::get_if<Wakeup>(&a)) {
        wake_[side] = w->at;
      }
    }
  }

  void handle(int side, const Event& e) { apply(side, ep_[side]->handle(now_, e)); }

  // Runs until `until`, or until nothing is in flight and `done` (if given) holds.
  void run(Time until, std::function<bool()> done = nullptr) {
    while (now_ <= until) {
      if (done && queue_.empty() && done()) return;
      Time next = until + 1;
      if (!queue_.empty()) next = std::min(next, queue_.begin()->at);
      for (int i = 0; i < 2; ++i)
        if (wake_[i]) next = std::min(next, *wake_[i]);
      if (next > until) {
        now_ = until;
        return;
      }
      now_ = next;
      if (!queue_.empty() && queue_.begin()->at == now_) {
        InFlight f = *queue_.begin();
        queue_.erase(queue_.begin());
        apply(f.to, ep_[f.to]->handle(now_, Receive{std::move(f.frame)}));
        continue;
      }
      for (int i = 0; i < 2; ++i) {
        if (wake_[i] && *wake_[i] == now_) {
          wake_[i].reset();
          apply(i, ep_[i]->handle(now_, AdvanceTime{}));
        }
      }
    }
  }

  // Connects A to B and registers one region of `bytes` on each side at va 0x10000 with all rights.
  void setup(uint64_t bytes = 1 << 20) {
    for (int i = 0; i < 2; ++i)
      handle(i, RegisterMemory{0x10000, bytes, access::kLocalWrite | access::kRemoteWrite | access::kRemoteRead});
    handle(0, Connect{b().config().self});
    run(now_ + 1000, [&] { return conn[0] != 0 && conn[1] != 0; });
  }

  void fill(int side, uint64_t va, size_t n, uint8_t seed) {
    std::vector<uint8_t> bytes(n);
    for (size_t i = 0; i < n; ++i) bytes[i] = uint8_t(seed + i * 7 + (i >> 8));
    handle(side, WriteMemory{va, bytes});
  }

  // The bytes of [va, va + n) of a registered region; a range outside every region is a test bug
  // (two failed reads would otherwise compare equal).
  std::vector<uint8_t> mem(int side, uint64_t va, size_t n) {
    auto bytes = ep_[side]->read_memory(va, n);
    if (!bytes) ADD_FAILURE() << "side " << side << ": [" << va << ", +" << n << ") is in no registered region";
    return bytes.value_or(std::vector<uint8_t>{});
  }

 private:
  std::unique_ptr<Endpoint> ep_[2];
  std::multiset<InFlight> queue_;
  uint64_t seq_ = 0;
  Time now_ = 0;
  std::optional<Time> wake_[2];
};

}  // namespace mroce::model::testing
