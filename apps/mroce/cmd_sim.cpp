// `mroce sim`: a campaign of generated scenarios run through the executable model in the harness
// (harness/README.md), each judged by the harness checks. Every run is a pure function of its seed
// and the knobs; a failing run is written as a replayable trace and its replay command printed.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "command.hpp"
#include "netsim/generate.hpp"
#include "netsim/trace.hpp"

namespace mroce::cli {
namespace {

struct SimOptions {
    uint64_t seed = 1;
    uint64_t runs = 20;
    double minutes = 0;
    std::optional<uint32_t> loss_ppm, ce_ppm;
    std::string trace_dir = ".";
    std::vector<std::string> knobs;
    size_t max_traces = 10;
};

struct Totals {
    uint64_t runs = 0, frames = 0, completions = 0, violations = 0, failed = 0, may_fail = 0, multi = 0,
             conn_failed = 0, canceled = 0;
};

std::string knob_help() {
    const auto d = harness::campaign_defaults();
    return "Knobs (knob=value; defaults): " + harness::knobs_to_string(d) +
           ". Run i uses seed S+i; rerun one with --seed S+i --runs 1 and the same knobs.";
}

bool connection_failed(const harness::RunResult& r) {
    for (const auto& slots : r.slots)
        for (const auto& sl : slots)
            if (sl.down_at || !sl.up()) return true;
    return false;
}

int run_sim(const SimOptions& o, const GlobalOptions& global) {
    if (o.runs == 0 || o.minutes < 0) {
        std::cerr << "mroce sim: --runs and --minutes must be positive\n";
        return kExitMisuse;
    }
    harness::SimKnobs k = harness::campaign_defaults();
    try {
        for (const auto& kv : o.knobs) {
            const auto eq = kv.find('=');
            if (eq == std::string::npos || eq == 0)
                throw std::invalid_argument("expected knob=value, got '" + kv + "'");
            harness::set_knob(k, kv.substr(0, eq), kv.substr(eq + 1));
        }
    } catch (const std::invalid_argument& e) {
        std::cerr << "mroce sim: " << e.what() << " (see: mroce sim --help)\n";
        return kExitMisuse;
    }
    if (o.loss_ppm) k.faults.loss_ppm = *o.loss_ppm;
    if (o.ce_ppm) k.faults.ce_ppm = *o.ce_ppm;
    if (k.faults.loss_ppm > 1000000 || k.faults.ce_ppm > 1000000) {
        std::cerr << "mroce sim: a ppm value must be at most 1000000\n";
        return kExitMisuse;
    }
    if (!make_output_dir(o.trace_dir)) {
        std::cerr << "mroce sim: cannot use trace directory " << o.trace_dir << "\n";
        return kExitMisuse;
    }

    using Clock = std::chrono::steady_clock;  // progress and --minutes only, never results
    const auto start = Clock::now();
    auto last_progress = start;
    const auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
    std::cout << "mroce sim: seed " << o.seed << ", "
              << (o.minutes > 0 ? std::to_string(o.minutes) + " minute(s)" : std::to_string(o.runs) + " run(s)")
              << ", knobs: " << harness::knobs_to_string(k) << "\n";

    Totals t;
    nlohmann::json failed = nlohmann::json::array();
    for (uint64_t i = 0;; ++i) {
        if (o.minutes > 0 ? elapsed() >= o.minutes * 60 : i >= o.runs) break;
        const uint64_t seed = o.seed + i;
        const auto g = harness::generate(seed, k);
        harness::RunOptions ro;
        ro.trace = false;  // the trace of a failing run is recorded by rerunning it
        const auto r = harness::run(g.scenario, harness::model_factory(), ro);
        const auto v = harness::check_scenario(g.scenario, r, g.mode);
        ++t.runs;
        t.frames += r.net.entered;
        t.completions += r.completions.size();
        t.violations += v.size();
        t.may_fail += g.mode == harness::CheckMode::MayFail;
        t.multi += g.scenario.connections > 1;
        t.conn_failed += connection_failed(r);
        for (const auto& c : r.completions) t.canceled += c.c.status == model::Status::Canceled;
        std::cout << "run " << i << " seed=" << seed << " conns=" << g.scenario.connections
                  << " handshake=" << (g.scenario.net.protect_handshake ? "protected" : "faulty")
                  << " frames=" << r.net.entered << " completions=" << r.completions.size()
                  << " violations=" << v.size() << (v.empty() ? "" : " FAIL") << "\n";
        if (!v.empty()) {
            ++t.failed;
            for (size_t j = 0; j < v.size() && j < 3; ++j)
                std::cout << "  violation " << v[j].check << " t=" << v[j].at << " " << v[j].detail << "\n";
            nlohmann::json f{{"run", i},
                             {"seed", seed},
                             {"violations", v.size()},
                             {"first_violation", v.front().check + ": " + v.front().detail}};
            if (t.failed <= o.max_traces) {
                const auto traced = harness::run(g.scenario);  // same run, with event lines
                const auto tv = harness::check_scenario(g.scenario, traced, g.mode);
                const std::string file =
                    (std::filesystem::path(o.trace_dir) / ("mroce-sim-" + std::to_string(seed) + ".trace")).string();
                std::ofstream out(file);
                out << harness::to_trace(g.scenario, g.mode, traced, tv);
                if (!out) {
                    std::cerr << "mroce sim: cannot write " << file << "\n";
                } else {
                    const std::string cmd = shell_word(global.program) + " replay " + shell_word(file);
                    std::cout << "  trace: " << file << "\n  replay: " << cmd << "\n";
                    f["trace"] = file;
                    f["replay"] = cmd;
                }
            }
            failed.push_back(f);
        }
        if (std::chrono::duration<double>(Clock::now() - last_progress).count() >= 2.0) {
            last_progress = Clock::now();
            std::cerr << "mroce sim: " << t.runs << " runs, " << t.failed << " failed, "
                      << static_cast<uint64_t>(elapsed()) << " s\n";
        }
    }
    std::cout << "total runs=" << t.runs << " frames=" << t.frames << " completions=" << t.completions
              << " violations=" << t.violations << " failed_runs=" << t.failed << " (handshake faults: " << t.may_fail
              << ", several connections: " << t.multi << ", a connection failed: " << t.conn_failed
              << ", Canceled receives: " << t.canceled << ")\n";
    std::cout << (t.failed == 0 ? "PASS" : "FAIL") << "\n";
    if (global.json) {
        std::cout << nlohmann::json{{"command", "sim"},
                                    {"seed", o.seed},
                                    {"runs", t.runs},
                                    {"frames", t.frames},
                                    {"completions", t.completions},
                                    {"violations", t.violations},
                                    {"failed_runs", t.failed},
                                    {"handshake_fault_runs", t.may_fail},
                                    {"multi_connection_runs", t.multi},
                                    {"connection_failed_runs", t.conn_failed},
                                    {"canceled_receives", t.canceled},
                                    {"knobs", harness::knobs_to_string(k)},
                                    {"failed", failed},
                                    {"pass", t.failed == 0}}
                         .dump()
                  << "\n";
    }
    return t.failed == 0 ? kExitOk : kExitFailed;
}

}  // namespace

Runner add_sim(CLI::App& app, const GlobalOptions& global) {
    auto* sub = app.add_subcommand("sim", "Run generated scenarios through the model with the harness checks");
    auto o = std::make_shared<SimOptions>();
    sub->add_option("--seed", o->seed, "Seed of the first run (run i uses seed + i)")->capture_default_str();
    auto* runs = sub->add_option("--runs", o->runs, "Number of runs (at least 1)")->capture_default_str();
    auto* minutes = sub->add_option("--minutes", o->minutes, "Run for this many minutes instead of --runs");
    runs->excludes(minutes);
    sub->add_option("--loss-ppm", o->loss_ppm, "i.i.d. frame loss until faults stop (ppm)")
        ->check(CLI::Range(0u, 1000000u));
    sub->add_option("--ce-ppm", o->ce_ppm, "CE marking until faults stop (ppm)")->check(CLI::Range(0u, 1000000u));
    sub->add_option("--trace-dir", o->trace_dir, "Where traces of failing runs are written")->capture_default_str();
    sub->add_option("--max-traces", o->max_traces, "Write at most this many traces")->capture_default_str();
    sub->add_option("knobs", o->knobs, "knob=value settings (see below)");
    sub->footer(knob_help());
    return [o, &global]() { return run_sim(*o, global); };
}

}  // namespace mroce::cli
