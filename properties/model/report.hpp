// Failure reporting for the model properties: when a property fails, rapidcheck prints its seed
// and the shrunk draws; this adds the shrunk run as a replayable trace (written to a file and
// printed, one event per line) and the one-line command that replays it.
#pragma once

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "netsim/trace.hpp"

#ifndef MROCE_HARNESS_REPLAY
#define MROCE_HARNESS_REPLAY "harness_replay"
#endif

namespace mroce::harness {
// What rapidcheck prints for a drawn scenario (the full trace follows the failure message).
inline void showValue(const Scenario& s, std::ostream& os) {
  size_t faults = 0;
  for (const auto& f : s.schedule.fates) faults += f.kind != PacketFate::Deliver;
  os << "scenario: " << s.workload.ops.size() << " ops, " << faults << " faulty fates of " << s.schedule.fates.size()
     << ", " << s.schedule.link_events.size() << " link events (trace below)";
}
}  // namespace mroce::harness

namespace mroce::props {

using namespace mroce::harness;

struct Failure {
  Scenario scenario;
  CheckMode mode = CheckMode::Standard;
};

// The scenario of the latest failing case. rapidcheck runs the minimal (shrunk) case last, so after
// rc::check returns false this holds the shrunk run.
inline std::optional<Failure>& last_failure() {
  static std::optional<Failure> f;
  return f;
}

// Judges one case: records it and fails the rapidcheck case when there are violations.
inline void judge(const Scenario& s, CheckMode mode, const std::vector<Violation>& v) {
  if (v.empty()) return;
  last_failure() = Failure{s, mode};
  RC_FAIL(format_violations(v, 8));
}

inline std::string trace_dir() {
  if (const char* d = std::getenv("MROCE_TRACE_DIR")) return d;
  if (const char* d = std::getenv("TMPDIR")) return d;
  return "/tmp";
}

// Writes the trace of `f` and prints it with the replay command. Returns the file name.
inline std::string report_failure(const std::string& name, const Failure& f, std::ostream& out = std::cout) {
  const auto r = run(f.scenario);
  const auto v = check_scenario(f.scenario, r, f.mode);
  const std::string text = to_trace(f.scenario, f.mode, r, v);
  const std::string file =
      trace_dir() + "/mroce-" + name + "-" + std::to_string(std::hash<std::string>{}(text) % 1000000007) + ".trace";
  std::ofstream(file) << text;
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  out << "---- shrunk run of " << name << " (" << lines.size() << " trace lines) ----\n";
  const size_t head = 1500, tail = 500;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines.size() > head + tail && i == head)
      out << "... " << (lines.size() - head - tail) << " lines omitted, see the file ...\n";
    if (lines.size() > head + tail && i >= head && i < lines.size() - tail) continue;
    out << lines[i] << "\n";
  }
  out << "---- trace written to " << file << "\n";
  out << "---- replay: " << MROCE_HARNESS_REPLAY << " " << file << "\n";
  return file;
}

// rc::check plus the trace of the shrunk failing run.
template <class Prop>
void check_property(const std::string& name, Prop&& prop) {
  last_failure().reset();
  const bool ok = rc::check(name, std::forward<Prop>(prop));
  if (!ok) {
    if (last_failure())
      report_failure(name, *last_failure());
    else
      std::cout << "---- " << name << " failed without a recorded scenario (an exception?)\n";
  }
  EXPECT_TRUE(ok) << name << " failed; see the seed, the trace and the replay command above";
}

}  // namespace mroce::props
