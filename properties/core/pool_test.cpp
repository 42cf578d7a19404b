// Pool<T> (impl/core/pool.hpp) against a std::set of live handles: a handle is never given out twice
// while live, exhaustion is reported as kNone exactly when every item is live (never a crash), a
// released handle can be allocated again, alloc() hands out a value-initialised item, and the counts
// agree. Each live item carries a stamp: two live handles sharing storage would overwrite it.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "core/pool.hpp"

namespace mc = mroce::core;
using mc::kNone;
using mc::Pool;

namespace {
struct Item {
  std::uint64_t stamp = 0;
  std::uint32_t extra = 7;
  friend bool operator==(const Item&, const Item&) = default;
};
}  // namespace

RC_GTEST_PROP(CorePool, MatchesSetOfLiveHandles, ()) {
  const auto cap = *rc::gen::inRange<std::uint32_t>(0, 40);
  Pool<Item> p;
  p.init(cap);
  std::map<std::uint32_t, std::uint64_t> live;  // handle -> stamp
  std::set<std::uint32_t> released;             // handles given back at least once
  std::uint64_t next_stamp = 1;
  const auto ops = *rc::gen::container<std::vector<std::pair<std::uint8_t, std::uint32_t>>>(
      rc::gen::pair(rc::gen::inRange<std::uint8_t>(0, 10), rc::gen::arbitrary<std::uint32_t>()));
  for (const auto& [kind, pick] : ops) {
    if (kind < 5) {  // alloc() or alloc_raw()
      const bool raw = kind == 4;
      const std::uint32_t h = raw ? p.alloc_raw() : p.alloc();
      if (live.size() == cap) {
        RC_ASSERT(h == kNone);  // exhaustion is reported
        continue;
      }
      RC_ASSERT(h != kNone);
      RC_ASSERT(h < cap);
      RC_ASSERT(live.count(h) == 0u);  // never handed out twice
      if (!raw) RC_ASSERT(p[h] == Item{});
      p[h].stamp = next_stamp;
      p[h].extra = 0;
      live[h] = next_stamp++;
    } else if (!live.empty()) {  // release a live handle
      auto it = live.begin();
      std::advance(it, pick % live.size());
      p.release(it->first);
      released.insert(it->first);
      live.erase(it);
    }
    RC_ASSERT(p.capacity() == cap);
    RC_ASSERT(p.in_use() == live.size());
    RC_ASSERT(p.available() == cap - live.size());
    for (const auto& [h, stamp] : live) RC_ASSERT(p[h].stamp == stamp);
  }
  // Everything released can be had again: allocate the pool full, then one more fails.
  while (live.size() < cap) {
    const std::uint32_t h = p.alloc();
    RC_ASSERT(h != kNone && h < cap && live.count(h) == 0u);
    live[h] = 0;
  }
  RC_ASSERT(p.alloc() == kNone);
  RC_ASSERT(p.alloc_raw() == kNone);
  RC_ASSERT(p.available() == 0u);
}

TEST(CorePool, ReleasedHandleIsReusedAndReset) {
  Pool<Item> p;
  p.init(1);
  const std::uint32_t a = p.alloc();
  ASSERT_EQ(a, 0u);
  p[a].stamp = 42;
  EXPECT_EQ(p.alloc(), kNone);
  p.release(a);
  const std::uint32_t b = p.alloc();
  EXPECT_EQ(b, a);
  EXPECT_EQ(p[b], Item{});
}
