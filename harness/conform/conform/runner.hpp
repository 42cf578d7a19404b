// The conformance runner: plays the peer of a device under test through one script, with the
// conformance monitor judging every frame the DUT sends. See traces/conformance/README.md.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "conform/dut.hpp"
#include "conform/script.hpp"
#include "monitor/monitor.hpp"

namespace mroce::conform {

struct RunOptions {
    // Slack of every time bound and the DUT's allowed processing lag: absolute (µs) plus a
    // proportion of the bound. Negative: 0 for a virtual-time DUT, 5000 µs otherwise (software
    // ports on a shared host stall for milliseconds).
    double tolerance_us = -1;
    double tolerance_prop = 0.1;
    // How late an expected frame or completion may come over a real port, on top of the tolerance:
    // absolute (µs) plus a proportion of the bound. A late timer is the implementation's choice
    // ([R-CONF-2]: the spec bounds RTO, PTO and RNR waits from below only), and a DUT's timers
    // behind a software port on a shared host fire milliseconds late; a script's upper bound is
    // then a liveness bound. Negative: 0 for a virtual-time DUT (exact), 20000 µs + 50% otherwise.
    // Lower bounds are not widened by it.
    double late_us = -1;
    double late_prop = -1;
    // The runner asks a real-time DUT for completions and events at least this often (µs) while
    // it waits for one, so that it reacts to them in time (a `? wc` would otherwise be seen only
    // with the DUT's next frame).
    uint64_t control_poll_us = 200;
    // Watchdog: a DUT whose clock stops while it keeps transmitting (a virtual-time DUT with a
    // timer refiring at one instant forever) fails the test after this many DUT steps at one
    // instant, instead of hanging the runner.
    uint64_t max_steps_at_one_instant = 20000;
    uint64_t timeout_us = 50000;  // a test's default time limit (its `# timeout:` overrides)
    uint64_t linger_us = 300;     // the DUT runs on this long after the last line
    bool strict = false;          // run SHOULD-level tests and checks
    // Judge the lines that assume the spec's default choice (`default=`) as requirements: for a
    // DUT that makes the defaults (our engine, like the model). Otherwise such a line, unmet, makes
    // the test unsupported.
    bool assume_defaults = false;
    std::string out_dir;    // per-test pcap and canonical trace ("" to keep none)
    model::Address tester;  // the tester's MAC and IP
    uint32_t tester_isn = 0xffffffe0;
};

enum class Outcome : uint8_t { Pass, Fail, Timing, Unsupported, Error };
const char* outcome_name(Outcome o);

struct TestResult {
    std::string id, title, path;
    std::vector<std::string> requires_;
    Outcome outcome = Outcome::Pass;
    std::vector<std::string> messages;  // why it failed / was unsupported
    std::vector<monitor::Violation> violations;
    std::vector<std::string> choices;  // implementation choices the monitor saw [R-CONF-2]
    std::map<std::string, monitor::RuleTally> tally;
    uint64_t frames = 0;
    uint64_t duration_us = 0;  // on the DUT's clock
    std::string pcap, trace;   // files kept
};

// Whether the DUT meets the script's `# dut:` qualifiers; the reason when it does not.
std::string unmet_qualifier(const Script& script, const DutInfo& info);

TestResult run_script(const Script& script, Dut& dut, const RunOptions& options);

}  // namespace mroce::conform
