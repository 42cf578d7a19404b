// HashMap (impl/core/hash_map.hpp: linear probing, backward-shift delete) against std::unordered_map
// over random sequences of insert / erase / find. Keys are drawn mostly from a few home slots, two of
// them at the end of the table, so that probe runs are long, interleave and wrap around the end:
// backward-shift delete must leave every remaining key reachable and every erased key absent.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <set>
#include <unordered_map>
#include <vector>

#include "core/hash_map.hpp"

namespace mc = mroce::core;
using mc::HashMap;
using mc::kNone;

namespace {

// `n` distinct keys whose home slots are in `homes` (found by scanning from `seed`).
std::vector<std::uint64_t> keys_with_homes(const HashMap& m, const std::set<std::uint32_t>& homes, std::size_t n,
                                           std::uint64_t seed) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t k = seed; out.size() < n; ++k)
    if (homes.count(m.home(k))) out.push_back(k);
  return out;
}

// Every key of the pool answers as the reference says.
void expect_agrees(const HashMap& m, const std::vector<std::uint64_t>& pool,
                   const std::unordered_map<std::uint64_t, std::uint32_t>& ref) {
  for (const std::uint64_t k : pool) {
    const auto it = ref.find(k);
    RC_ASSERT(m.find(k) == (it == ref.end() ? kNone : it->second));
  }
}

}  // namespace

RC_GTEST_PROP(CoreHashMap, MatchesUnorderedMapOverCollidingAndWrappingProbeRuns, ()) {
  const auto max_entries = *rc::gen::inRange<std::uint32_t>(1, 48);
  HashMap m;
  m.init(max_entries);
  const std::uint32_t cap = m.capacity();
  RC_ASSERT(cap >= 2 * max_entries);
  // Homes: the last two slots and slot 0 (runs wrap past the end), and one random slot.
  const std::set<std::uint32_t> homes{cap - 2, cap - 1, 0, *rc::gen::inRange<std::uint32_t>(0, cap)};
  const auto seed = *rc::gen::arbitrary<std::uint64_t>();
  std::vector<std::uint64_t> pool = keys_with_homes(m, homes, 2 * max_entries + 4, seed);
  for (int i = 0; i < 4; ++i) pool.push_back(*rc::gen::arbitrary<std::uint64_t>());  // anywhere

  std::unordered_map<std::uint64_t, std::uint32_t> ref;
  const auto ops = *rc::gen::container<std::vector<std::tuple<std::uint8_t, std::size_t, std::uint32_t>>>(
      rc::gen::tuple(rc::gen::inRange<std::uint8_t>(0, 10), rc::gen::inRange<std::size_t>(0, pool.size()),
                     rc::gen::inRange<std::uint32_t>(0, kNone)));
  for (const auto& [kind, ki, val] : ops) {
    const std::uint64_t k = pool[ki];
    if (kind < 5) {  // insert, when the key is absent and there is room (the map's precondition)
      if (ref.count(k) || ref.size() >= max_entries) continue;
      m.insert(k, val);
      ref[k] = val;
    } else if (kind < 9) {  // erase, present or not
      m.erase(k);
      ref.erase(k);
    } else {
      const auto it = ref.find(k);
      RC_ASSERT(m.find(k) == (it == ref.end() ? kNone : it->second));
    }
    expect_agrees(m, pool, ref);
  }
  // Emptied again, the table answers kNone everywhere and takes a full load once more.
  for (const auto& [k, v] : ref) m.erase(k);
  ref.clear();
  expect_agrees(m, pool, ref);
  for (std::uint32_t i = 0; i < max_entries && i < pool.size(); ++i) {
    if (ref.count(pool[i])) continue;
    m.insert(pool[i], i);
    ref[pool[i]] = i;
  }
  expect_agrees(m, pool, ref);
}

// One probe run of keys all homed at the last slot, wrapping to the front; every member in turn is
// erased from the full run, then the others must still be found.
TEST(CoreHashMap, BackwardShiftDeleteFromEveryPositionOfAWrappingRun) {
  for (std::size_t run = 1; run <= 7; ++run) {
    for (std::size_t victim = 0; victim < run; ++victim) {
      HashMap m;
      m.init(8);  // 16 slots
      const auto keys = keys_with_homes(m, {m.capacity() - 1}, run, 1000);
      const auto other = keys_with_homes(m, {0}, 2, 5000);  // homed where the run wraps to
      for (std::size_t i = 0; i < run; ++i) m.insert(keys[i], std::uint32_t(i));
      m.insert(other[0], 100);
      m.insert(other[1], 101);
      m.erase(keys[victim]);
      SCOPED_TRACE(testing::Message() << "run " << run << " victim " << victim);
      for (std::size_t i = 0; i < run; ++i) EXPECT_EQ(m.find(keys[i]), i == victim ? kNone : std::uint32_t(i));
      EXPECT_EQ(m.find(other[0]), 100u);
      EXPECT_EQ(m.find(other[1]), 101u);
    }
  }
}

// longest_probe() is what the engine's flood test bounds (CanceledRsnLookupCostStaysFlat): it must be
// the number of slots the longest find() walks, for runs in the middle of the table and wrapping.
TEST(CoreHashMap, LongestProbeIsTheLongestWalkOfAFind) {
  for (std::uint32_t home : {3u, 15u})
    for (std::size_t run = 1; run <= 6; ++run) {
      HashMap m;
      m.init(8);  // 16 slots
      EXPECT_EQ(m.longest_probe(), 0u);
      const auto keys = keys_with_homes(m, {home}, run, 7000);
      for (std::size_t i = 0; i < run; ++i) m.insert(keys[i], std::uint32_t(i));
      EXPECT_EQ(m.longest_probe(), run) << "home " << home << " run " << run;
    }
}
