// Differential properties: the engine must behave exactly like the executable model (the frames,
// completions, memory and path state the spec makes observable) on generated scenarios [R-CONF-1].
// A divergence is shrunk (rapidcheck over the generator, then harness-level shrinking of ops,
// link events and fates) and written to traces/regressions/<name>.trace, replayed by ctest.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <cstdlib>
#include <fstream>

#include "lockstep/differential.hpp"

#ifndef MROCE_LOCKSTEP_REPLAY
#define MROCE_LOCKSTEP_REPLAY "lockstep_replay"
#endif

using namespace mroce;

namespace {

std::string write_regression(const std::string& name, const std::string& text) {
  const std::string dir = std::getenv("MROCE_REGRESSION_DIR") ? std::getenv("MROCE_REGRESSION_DIR")
                                                              : std::string(MROCE_SOURCE_DIR) + "/traces/regressions";
  const std::string path = dir + "/" + name + ".trace";
  std::ofstream(path) << text;
  return path;
}

// The CI budget: rapidcheck's case count (RC_PARAMS max_success overrides it).
int budget() {
  const auto& p = rc::detail::configuration().testParams;
  return std::getenv("RC_PARAMS") ? p.maxSuccess : 300;
}

}  // namespace

TEST(Diff, R_CONF_1_EngineMatchesModelOnGeneratedScenarios) {
  std::optional<harness::Scenario> last_failing;
  const auto result = rc::detail::checkTestable(
      [&] {
        const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
        const int profile = *rc::gen::inRange(0, lockstep::kProfiles);
        const auto g = lockstep::generate_diff_scenario(seed, profile);
        const auto r = lockstep::run_differential(g.scenario);
        if (r.divergence) last_failing = g.scenario;
        RC_ASSERT_FALSE(r.divergence.has_value());
      },
      rc::detail::TestMetadata{"Diff.R_CONF_1", "model vs engine in lockstep"},
      [] {
        auto p = rc::detail::configuration().testParams;
        p.maxSuccess = budget();
        return p;
      }());
  if (!last_failing) {
    EXPECT_TRUE(result.template is<rc::detail::SuccessResult>());
    return;
  }
  rc::detail::printResultMessage(result, std::cerr);
  const auto shrunk = lockstep::shrink_divergence(*last_failing, {});
  const auto r = lockstep::run_differential(shrunk);
  const std::string path =
      write_regression("diff_" + std::to_string(shrunk.seed), lockstep::divergence_trace(shrunk, {}));
  ADD_FAILURE() << (r.divergence ? r.divergence->text() : "(shrunk scenario no longer diverges)") << "\nshrunk to "
                << shrunk.workload.ops.size() << " ops; trace written to " << path
                << "\nreplay: " << MROCE_LOCKSTEP_REPLAY << " " << path;
}

// The canary: a planted engine bug (the adapter drops the engine's first retransmission) must be
// caught, shrunk to a short trace, and that trace must reproduce it (and only with the bug).
TEST(Diff, Canary_DropFirstRetransmissionIsCaughtAndShrunk) {
  lockstep::DiffOptions canary;
  canary.canary = lockstep::Canary::DropFirstRetx;
  std::optional<harness::Scenario> found;
  for (uint64_t seed = 1; seed < 200 && !found; ++seed) {
    const auto g = lockstep::generate_diff_scenario(seed, 0);
    if (lockstep::run_differential(g.scenario, canary).divergence) found = g.scenario;
  }
  ASSERT_TRUE(found.has_value()) << "the planted bug was never caught";
  const auto shrunk = lockstep::shrink_divergence(*found, canary);
  const auto r = lockstep::run_differential(shrunk, canary);
  ASSERT_TRUE(r.divergence.has_value());
  EXPECT_NE(r.divergence->what.find("frame"), std::string::npos) << r.divergence->text();
  EXPECT_LE(shrunk.workload.ops.size(), 2u);
  size_t faults = 0;
  for (const auto& f : shrunk.schedule.fates) faults += f.kind != harness::PacketFate::Kind::Deliver;
  EXPECT_LE(faults, 2u);
  EXPECT_TRUE(shrunk.schedule.link_events.empty());
  // The written trace reproduces it through the replay path.
  const std::string text = lockstep::divergence_trace(shrunk, canary);
  EXPECT_TRUE(lockstep::replay_trace_text(text, canary).divergence.has_value());
  EXPECT_FALSE(lockstep::replay_trace_text(text, {}).divergence.has_value());
  if (std::getenv("MROCE_WRITE_CANARY")) write_regression("canary_drop_first_retx", text);
}

// Hand-picked scenarios: ISNs straddling 2^32, many streams, heavy faults, thousands of packets.
TEST(Diff, R_PSN_1_WraparoundAndScale) {
  for (int profile = 0; profile < lockstep::kProfiles; ++profile) {
    const auto g = lockstep::generate_diff_scenario(1000 + uint64_t(profile), profile);
    const auto r = lockstep::run_differential(g.scenario);
    EXPECT_FALSE(r.divergence.has_value()) << "profile " << profile << ": " << r.divergence->text();
    EXPECT_GT(r.stats.frames, 10u);
  }
}
