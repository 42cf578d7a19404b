// The engine in the project's two-endpoint harness (harness/): generated workloads over networks that
// lose, duplicate, reorder, corrupt and CE-mark frames and take links down. Every harness check must
// pass with the engine, and the engine's run must be the model's run, trace line for trace line
// (every frame, completion and connection event, at the same virtual time).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "lockstep/engine_endpoint.hpp"
#include "netsim/checks.hpp"
#include "netsim/generate.hpp"
#include "netsim/trace.hpp"

namespace mroce::testing {
namespace {

using namespace mroce::harness;
using mroce::lockstep::engine_factory;

Scenario scenario(uint64_t seed, uint32_t loss_ppm, uint32_t links_down) {
  FaultKnobs k;
  k.frames = 4000;
  k.loss_ppm = loss_ppm;
  k.dup_ppm = 10000;
  k.delay_ppm = 10000;
  k.ce_ppm = 20000;
  k.corrupt_ppm = 5000;
  k.link_failures = links_down;
  k.faults_until = 5000;
  WorkloadKnobs w;
  w.ops = 20;
  w.max_len = 30000;
  w.start = 20;
  return generate_scenario(seed, k, w);
}

// More seeds for long runs: MROCE_HARNESS_SEEDS=1000.
uint64_t seeds() {
  const char* e = std::getenv("MROCE_HARNESS_SEEDS");
  return e ? std::strtoull(e, nullptr, 10) : 12;
}

// Keys compared by the registration they name (with_keys_numbered, [R-MEM-1]).
std::string first_difference(const RunResult& model_run, const RunResult& engine_run) {
  const std::vector<std::string> m = with_keys_numbered(model_run.lines), e = with_keys_numbered(engine_run.lines);
  const size_t n = std::min(m.size(), e.size());
  for (size_t i = 0; i < n; ++i)
    if (m[i] != e[i]) return "line " + std::to_string(i) + "\n  model:  " + m[i] + "\n  engine: " + e[i];
  if (m.size() != e.size()) return "length: model " + std::to_string(m.size()) + ", engine " + std::to_string(e.size());
  return "";
}

TEST(EngineHarness, R_ARCH_3_EveryCheckPassesUnderFaults) {
  for (uint64_t seed = 1; seed <= seeds(); ++seed) {
    const Scenario s = scenario(seed, seed % 3 == 0 ? 50000 : 10000, seed % 4 == 0 ? 2 : 0);
    const RunResult r = run(s, engine_factory());
    const auto v = check_all(s, r);
    EXPECT_TRUE(v.empty()) << "seed " << seed << "\n" << format_violations(v);
    EXPECT_TRUE(r.setup_ok) << "seed " << seed;
    EXPECT_GT(r.completions.size(), 0u) << "seed " << seed;
  }
}

TEST(EngineHarness, TraceEqualsTheModelsLineForLine) {
  for (uint64_t seed = 1; seed <= seeds(); ++seed) {
    const Scenario s = scenario(seed, seed % 3 == 0 ? 50000 : 10000, seed % 4 == 0 ? 2 : 0);
    const RunResult m = run(s, model_factory());
    const RunResult e = run(s, engine_factory());
    ASSERT_GT(m.lines.size(), 10u);
    EXPECT_EQ(first_difference(m, e), "") << "seed " << seed;
    EXPECT_EQ(m.data_mem, e.data_mem) << "seed " << seed;
    EXPECT_EQ(m.guard_mem, e.guard_mem) << "seed " << seed;
  }
}

// one of four planes dies for good mid-run; the engine must finish everything like the model.
TEST(EngineHarness, R_ACK_5_PlaneDiesForGoodEverythingCompletesLikeTheModel) {
  uint64_t lost_on_dead_plane = 0;
  for (uint64_t seed = 1; seed <= seeds(); ++seed) {
    Scenario s = scenario(seed, 10000, 0);
    s.net.dead_links = 1;
    s.net.dead_from = 10 + 11 * seed;
    const RunResult m = run(s, model_factory());
    const RunResult e = run(s, engine_factory());
    const auto v = check_all(s, e);
    EXPECT_TRUE(v.empty()) << "seed " << seed << "\n" << format_violations(v);
    lost_on_dead_plane += e.net.link_dropped;
    EXPECT_EQ(first_difference(m, e), "") << "seed " << seed;
  }
  EXPECT_GT(lost_on_dead_plane, 0u);
}

TEST(EngineHarness, R_CONN_8_DeadNetworkFailsEverythingLikeTheModel) {
  Scenario s = scenario(4, 0, 0);
  s.schedule = dead_network(100, s.net.links);
  s.net.faults_until = kNever;
  s.limits.until_conn_down = true;
  s.limits.time_limit = 1000000;
  const RunResult m = run(s, model_factory());
  const RunResult e = run(s, engine_factory());
  EXPECT_TRUE(check_scenario(s, e, CheckMode::DeadNetwork).empty());
  EXPECT_EQ(first_difference(m, e), "");
}

}  // namespace
}  // namespace mroce::testing
