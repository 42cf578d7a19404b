// Reports of a conformance run: a table for people, JUnit XML for CI, a JSON matrix per
// requirement for tools.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "conform/runner.hpp"

namespace mroce::conform {

// One line per test: outcome, ID, requirements, and the first reason.
void print_table(std::ostream& out, const std::vector<TestResult>& results);
// testsuite "mroce-conformance", one testcase per test (name = test ID, classname = its first
// requirement), <failure> with every violation, <skipped> for unsupported tests.
void write_junit(const std::string& path, const std::vector<TestResult>& results, const std::string& dut);
// Per requirement: the tests that check it and their outcomes, and the monitor's tallies; per
// test: outcome, messages, violations, choices, files.
nlohmann::json matrix(const std::vector<TestResult>& results, const std::string& dut);
// The requirement IDs a glob (`R-ACK-*`, `ACK-*`, exact) selects a test by (its ID or requirements).
bool selected(const TestResult& test_header, const std::string& glob);
nlohmann::json violation_json(const monitor::Violation& v);

}  // namespace mroce::conform
