// TimerWheel (impl/core/timer_wheel.hpp) against a std::multimap of deadlines, driven the way the
// engine drives it (impl/engine/engine.cpp: run_due / fire_due): arm, move and cancel deadlines at or
// after the current time, expire everything due by t, and the engine's loop "first_due(t), expire at
// that time, re-arm some of what fired, repeat". Checked after every step: what fires is exactly what
// the model has due (never early, never missed), in deadline order; cancelled timers never fire;
// min(), deadline() and armed() agree. Times start anywhere in the 64-bit range and jump by amounts
// that cross slot, level and wheel boundaries, so every level's slots wrap around.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "core/timer_wheel.hpp"

namespace mc = mroce::core;
using mc::kNever;
using mc::TimerWheel;

namespace {

constexpr std::uint32_t kOwners = 24;

// Time steps: within a slot, a level, several levels, the top of the range, and up to a boundary of
// 64^k (so a slot index wraps from 63 to 0).
rc::Gen<std::uint64_t> step_gen(std::uint64_t now) {
  return rc::gen::weightedOneOf<std::uint64_t>({
      {4, rc::gen::inRange<std::uint64_t>(0, 70)},
      {3, rc::gen::inRange<std::uint64_t>(0, 5000)},
      {2, rc::gen::inRange<std::uint64_t>(0, std::uint64_t{1} << 24)},
      {1, rc::gen::map(rc::gen::inRange<unsigned>(0, 64),
                       [](unsigned s) { return s == 0 ? 0 : (~std::uint64_t{0} >> (64 - s)); })},
      {2, rc::gen::map(rc::gen::pair(rc::gen::inRange<unsigned>(1, 11), rc::gen::inRange<std::uint64_t>(0, 3)),
                       [now](std::pair<unsigned, std::uint64_t> p) {
                         const std::uint64_t unit = std::uint64_t{1} << (6 * p.first);
                         const std::uint64_t to_boundary = unit - (now % unit);  // reach the next multiple of 64^k
                         return to_boundary - 1 + p.second;
                       })},
  });
}

// now + step, kept below kNever (which means "disarm").
std::uint64_t later(std::uint64_t now, std::uint64_t step) {
  return step >= kNever - 1 - now ? kNever - 1 : now + step;
}

struct Model {
  std::multimap<std::uint64_t, std::uint32_t> by_deadline;  // key 0: armed overdue (fires at once)
  std::map<std::uint32_t, std::multimap<std::uint64_t, std::uint32_t>::iterator> of;

  void arm(std::uint32_t id, std::uint64_t key) {
    disarm(id);
    of[id] = by_deadline.emplace(key, id);
  }
  void disarm(std::uint32_t id) {
    const auto it = of.find(id);
    if (it == of.end()) return;
    by_deadline.erase(it->second);
    of.erase(it);
  }
};

void check_state(TimerWheel& w, const Model& m, std::uint64_t now) {
  for (std::uint32_t id = 0; id < kOwners; ++id) {
    const auto it = m.of.find(id);
    RC_ASSERT(w.armed(id) == (it != m.of.end()));
    if (it == m.of.end()) {
      RC_ASSERT(w.deadline(id) == kNever);
    } else if (it->second->first != 0) {
      RC_ASSERT(w.deadline(id) == it->second->first);
    } else {
      RC_ASSERT(w.deadline(id) <= now);  // overdue: kept at the wheel's time
    }
  }
  if (m.by_deadline.empty()) {
    RC_ASSERT(w.min() == kNever);
  } else if (m.by_deadline.begin()->first == 0) {
    RC_ASSERT(w.min() <= now);
  } else {
    RC_ASSERT(w.min() == m.by_deadline.begin()->first);
  }
}

// Expire everything due by t: must be exactly the model's entries with key <= t, in deadline order
// (the deadlines check_state has matched with the model; an overdue one is the wheel's time then).
void expire_and_check(TimerWheel& w, Model& m, std::uint64_t t, std::vector<std::uint32_t>& fired) {
  std::vector<std::uint64_t> deadline(kOwners);
  for (std::uint32_t id = 0; id < kOwners; ++id) deadline[id] = w.deadline(id);
  std::vector<std::uint32_t> out(kOwners);
  const std::uint32_t n = w.expire(t, out.data());
  out.resize(n);
  std::vector<std::uint32_t> want;
  std::uint64_t prev = 0;
  for (const std::uint32_t id : out) {
    const auto it = m.of.find(id);
    RC_ASSERT(it != m.of.end());        // a cancelled or already fired timer never fires
    RC_ASSERT(it->second->first <= t);  // never before its deadline
    RC_ASSERT(deadline[id] <= t);
    RC_ASSERT(deadline[id] >= prev);  // in deadline order
    prev = deadline[id];
  }
  for (auto it = m.by_deadline.begin(); it != m.by_deadline.end() && it->first <= t; ++it) want.push_back(it->second);
  std::vector<std::uint32_t> got = out;
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  RC_ASSERT(got == want);  // none missed
  for (const std::uint32_t id : out) m.disarm(id);
  fired = out;
}

}  // namespace

RC_GTEST_PROP(CoreTimerWheel, MatchesMultimapOfDeadlinesAcrossSlotLevelAndRangeWraps, ()) {
  TimerWheel w;
  w.init(kOwners);
  Model m;
  // Start anywhere: at 0, just below a 64^k boundary, or high in the range.
  std::uint64_t now = *rc::gen::weightedOneOf<std::uint64_t>({
      {1, rc::gen::just<std::uint64_t>(0)},
      {2,
       rc::gen::map(rc::gen::inRange<unsigned>(1, 11), [](unsigned k) { return (std::uint64_t{1} << (6 * k)) - 3; })},
      {1, rc::gen::inRange<std::uint64_t>(kNever - (std::uint64_t{1} << 30), kNever - (std::uint64_t{1} << 20))},
      {2, rc::gen::arbitrary<std::uint64_t>()},
  });
  now = std::min(now, kNever - (std::uint64_t{1} << 20));
  std::vector<std::uint32_t> fired;
  expire_and_check(w, m, now, fired);
  const auto n_ops = *rc::gen::inRange<int>(1, 120);
  for (int op = 0; op < n_ops; ++op) {
    const auto kind = *rc::gen::inRange<int>(0, 10);
    const auto id = *rc::gen::inRange<std::uint32_t>(0, kOwners);
    if (kind < 4) {  // arm or move, at or after now
      const std::uint64_t d = later(now, *step_gen(now));
      w.arm(id, d);
      m.arm(id, d);
    } else if (kind == 4) {  // arm overdue (a deadline already past): fires at the next expire
      if (now == 0) continue;
      const std::uint64_t d = now - *rc::gen::inRange<std::uint64_t>(1, std::min<std::uint64_t>(now, 5000) + 1);
      w.arm(id, d);
      m.arm(id, 0);
    } else if (kind == 5) {  // cancel (disarm, or arm with kNever)
      if (*rc::gen::arbitrary<bool>())
        w.disarm(id);
      else
        w.arm(id, kNever);
      m.disarm(id);
    } else if (kind == 6) {  // expire everything due by a later time
      now = later(now, *step_gen(now));
      expire_and_check(w, m, now, fired);
    } else {  // the engine's loop: fire what is due by t at its own time, re-arming some of it
      const std::uint64_t t = later(now, *step_gen(now));
      for (int guard = 0;; ++guard) {
        RC_ASSERT(guard < 4 * int(kOwners) + 4);
        const std::uint64_t d = w.first_due(t);
        const bool any_due = !m.by_deadline.empty() && m.by_deadline.begin()->first <= t;
        RC_ASSERT((d != kNever) == any_due);
        if (d == kNever) break;
        const std::uint64_t first_key = m.by_deadline.begin()->first;
        if (first_key != 0) {
          RC_ASSERT(d == first_key);  // exactly the earliest deadline
        } else {
          RC_ASSERT(d <= now);
        }
        now = std::max(now, d);
        expire_and_check(w, m, now, fired);
        RC_ASSERT(!fired.empty());
        for (const std::uint32_t f : fired) {
          if (*rc::gen::inRange<int>(0, 3) != 0) continue;
          const std::uint64_t nd = later(now, *rc::gen::inRange<std::uint64_t>(0, 200));
          w.arm(f, nd);
          m.arm(f, nd);
        }
      }
      now = t;
    }
    check_state(w, m, now);
  }
}

TEST(CoreTimerWheel, SameDeadlineFiresTogetherAndCancelledNeverFires) {
  TimerWheel w;
  w.init(4);
  w.arm(0, 1000);
  w.arm(1, 1000);
  w.arm(2, 999);
  w.arm(3, 1000);
  w.disarm(3);
  std::uint32_t out[4];
  EXPECT_EQ(w.expire(998, out), 0u);
  ASSERT_EQ(w.expire(1000, out), 3u);
  EXPECT_EQ(out[0], 2u);
  EXPECT_TRUE((out[1] == 0 && out[2] == 1) || (out[1] == 1 && out[2] == 0));
  EXPECT_EQ(w.min(), kNever);
  EXPECT_FALSE(w.armed(3));
}
