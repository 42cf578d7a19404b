// `mroce replay FILE`: reruns a harness trace (harness/README.md "Trace format") and reports
// whether the rerun reproduces the recorded events and passes the trace's checks. The
// implementation that runs it is chosen by name (engines.hpp): the executable model, the engine, or
// both in lockstep (which compares them with each other instead of with the recorded events).
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cmd_diff.hpp"
#include "command.hpp"
#include "engines.hpp"
#include "netsim/trace.hpp"

namespace mroce::cli {
namespace {

struct ReplayOptions {
    std::string file;
    std::string engine = "model";
    std::string save;     // write the rerun's whole trace here
    bool canary = false;  // lockstep only: plant the test-only engine bug of `mroce diff --canary`
};

int run_replay(const ReplayOptions& o, const GlobalOptions& global) {
    std::stringstream buf;
    if (o.file == "-") {
        buf << std::cin.rdbuf();
    } else {
        std::ifstream in(o.file);
        if (!in) {
            std::cerr << "mroce replay: cannot read " << o.file << "\n";
            return kExitMisuse;
        }
        buf << in.rdbuf();
    }
    const auto factory = engine_factory(o.engine);
    if (!factory) {  // the option's own check names the choices; kept for direct callers
        std::cerr << "mroce replay: unknown engine " << o.engine << "\n";
        return kExitMisuse;
    }
    const std::string text = buf.str();
    harness::ParsedTrace parsed;
    harness::ReplayResult rr;
    try {
        parsed = harness::parse_trace(text);
        rr = harness::replay(text, *factory);
    } catch (const harness::TraceError& e) {
        std::cerr << "mroce replay: " << o.file << ": " << e.what() << "\n";
        return kExitMisuse;
    }
    if (!o.save.empty()) {
        std::ofstream out(o.save);
        out << harness::to_trace(parsed.scenario, parsed.mode, rr.result, rr.violations, parsed.canonical_packets);
        if (!out) {
            std::cerr << "mroce replay: cannot write " << o.save << "\n";
            return kExitMisuse;
        }
    }
    const bool recorded = !parsed.lines.empty();
    std::cout << "replay " << o.file << " (engine " << o.engine << ", check " << harness::check_mode_name(parsed.mode)
              << ")\n";
    if (!recorded)
        std::cout << "reproduced: - (no recorded events: the scenario was run and judged)\n";
    else if (rr.reproduced)
        std::cout << "reproduced: yes (" << parsed.lines.size() << " events)\n";
    else
        std::cout << "reproduced: NO, first difference at event " << rr.first_diff
                  << "\n  recorded: " << rr.recorded_line << "\n  replayed: " << rr.replayed_line << "\n";
    if (rr.violations.empty()) {
        std::cout << "verdict: pass\n";
    } else {
        std::cout << "verdict: fail (" << rr.violations.size() << " violation" << (rr.violations.size() == 1 ? "" : "s")
                  << ")\n"
                  << "first violation: " << rr.violations.front().check << " t=" << rr.violations.front().at << " "
                  << rr.violations.front().detail << "\n";
    }
    const bool pass = rr.reproduced && rr.violations.empty();
    if (global.json) {
        nlohmann::json j{{"command", "replay"},
                         {"file", o.file},
                         {"engine", o.engine},
                         {"check", std::string(harness::check_mode_name(parsed.mode))},
                         {"events", rr.result.lines.size()},
                         {"reproduced", recorded ? nlohmann::json(rr.reproduced) : nullptr},
                         {"violations", rr.violations.size()},
                         {"pass", pass}};
        j["first_difference"] = rr.reproduced ? nlohmann::json(nullptr)
                                              : nlohmann::json{{"index", rr.first_diff},
                                                               {"recorded", rr.recorded_line},
                                                               {"replayed", rr.replayed_line}};
        j["first_violation"] = rr.violations.empty()
                                   ? nlohmann::json(nullptr)
                                   : nlohmann::json(rr.violations.front().check + ": " + rr.violations.front().detail);
        std::cout << j.dump() << "\n";
    }
    return pass ? kExitOk : kExitFailed;
}

}  // namespace

Runner add_replay(CLI::App& app, const GlobalOptions& global) {
    auto* sub = app.add_subcommand("replay", "Rerun a harness trace: does it reproduce, and does it pass its checks?");
    auto o = std::make_shared<ReplayOptions>();
    sub->add_option("file", o->file, "Trace file ('-' reads standard input)")->required();
    sub->add_option("--engine", o->engine, "Implementation that reruns the trace")
        ->capture_default_str()
        ->check(CLI::IsMember(engine_names()));
    sub->add_option("--save", o->save, "Write the rerun's whole trace (events, verdict) to FILE");
    sub->add_flag("--canary", o->canary,
                  "With --engine lockstep: plant the test-only engine bug of `mroce diff --canary` (drop "
                  "the first retransmission), to reproduce a divergence that campaign found");
    sub->footer(
        "Exit status: 0 when the rerun reproduces the recorded events (if any) and passes the "
        "trace's checks (lockstep: when model and engine agree), 1 otherwise, 2 for an unreadable "
        "or malformed trace.");
    return [o, &global]() {
        if (o->engine == "lockstep") {
            if (!o->save.empty()) {
                std::cerr << "mroce replay: --save needs --engine model or engine\n";
                return kExitMisuse;
            }
            return replay_differential(o->file, o->canary, global.json);
        }
        if (o->canary) {
            std::cerr << "mroce replay: --canary needs --engine lockstep\n";
            return kExitMisuse;
        }
        return run_replay(*o, global);
    };
}

}  // namespace mroce::cli
