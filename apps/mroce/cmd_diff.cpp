// `mroce diff [--minutes N | --runs N] [--seed S] [--trace-dir D] [--canary]`: generated scenarios
// (all fault profiles of lockstep::diff_knobs, run i uses seed + i and profile i mod kProfiles) run
// through the model and the engine in lockstep. A progress line on stderr; a summary with the
// requirement IDs the campaign exercised; exit 1 on the first divergence, after shrinking it,
// writing its trace and printing the `mroce replay` command that reproduces it.
#include "cmd_diff.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "lockstep/differential.hpp"

namespace mroce::cli {
namespace {

struct DiffCliOptions {
    uint64_t seed = 1;
    uint64_t runs = 100;
    double minutes = 0;
    std::string trace_dir = ".";
    bool canary = false;
};

int run_diff(const DiffCliOptions& o, const GlobalOptions& g) {
    if (!make_output_dir(o.trace_dir)) {
        std::cerr << "mroce diff: cannot use trace directory " << o.trace_dir << "\n";
        return kExitMisuse;
    }
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    const auto deadline =
        start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(o.minutes * 60));
    lockstep::DiffOptions opt;
    if (o.canary) opt.canary = lockstep::Canary::DropFirstRetx;
    uint64_t schedules = 0, frames = 0, completions = 0;
    std::set<std::string> reqs;
    std::optional<lockstep::Divergence> div;
    std::string trace_path;
    auto last_progress = start;
    for (uint64_t i = 0;; ++i) {
        if (o.minutes > 0 ? clock::now() >= deadline : i >= o.runs) break;
        const uint64_t seed = o.seed + i;
        const auto gen = lockstep::generate_diff_scenario(seed, int(i % lockstep::kProfiles));
        const auto r = lockstep::run_differential(gen.scenario, opt);
        ++schedules;
        frames += r.stats.frames;
        completions += r.stats.completions;
        reqs.insert(r.stats.requirements.begin(), r.stats.requirements.end());
        if (r.divergence) {
            const auto shrunk = lockstep::shrink_divergence(gen.scenario, opt);
            const auto again = lockstep::run_differential(shrunk, opt);
            div = again.divergence ? again.divergence : r.divergence;
            trace_path =
                (std::filesystem::path(o.trace_dir) / ("diff_seed" + std::to_string(seed) + ".trace")).string();
            std::ofstream out(trace_path);
            out << lockstep::divergence_trace(shrunk, opt);
            if (!out) {
                std::cerr << "mroce diff: cannot write " << trace_path << "\n";
                return kExitMisuse;
            }
            break;
        }
        if (clock::now() - last_progress > std::chrono::seconds(1)) {
            last_progress = clock::now();
            std::cerr << "\rdiff: " << schedules << " schedules, " << frames << " packets, 0 divergences" << std::flush;
        }
    }
    const double secs = std::chrono::duration<double>(clock::now() - start).count();
    std::cerr << "\rdiff: " << schedules << " schedules, " << frames << " packets, " << (div ? 1 : 0)
              << " divergences\n";
    std::cout << "diff: " << schedules << " schedules, " << frames << " packets compared, " << completions
              << " completions, " << secs << " s\n";
    std::string ids;
    for (const auto& r : reqs) ids += (ids.empty() ? "" : " ") + r;
    std::cout << "requirements exercised: " << ids << "\n";
    std::string replay_cmd;
    if (div) {
        // The divergence is between model and engine, so only the lockstep replay reproduces it; a
        // planted canary bug has to be planted again.
        replay_cmd = shell_word(g.program) + " replay --engine lockstep " + (o.canary ? "--canary " : "") +
                     shell_word(trace_path);
        std::cout << div->text() << "\ntrace: " << trace_path << "\nreplay: " << replay_cmd << "\n";
    } else {
        std::cout << "no divergence\n";
    }
    if (g.json) {
        nlohmann::json j{{"command", "diff"},
                         {"schedules", schedules},
                         {"packets", frames},
                         {"completions", completions},
                         {"divergences", div ? 1 : 0},
                         {"seconds", secs},
                         {"requirements", std::vector<std::string>(reqs.begin(), reqs.end())}};
        if (div) {
            j["trace"] = trace_path;
            j["replay"] = replay_cmd;
            j["divergence"] = div->text();
        }
        std::cout << j.dump() << "\n";
    }
    return div ? kExitFailed : kExitOk;
}

}  // namespace

int replay_differential(const std::string& path, bool canary, bool json) {
    std::ifstream in(path);
    std::stringstream buf;
    buf << in.rdbuf();
    if (!in) {
        std::cerr << "mroce replay: cannot read " << path << "\n";
        return kExitMisuse;
    }
    lockstep::DiffOptions opt;
    if (canary) opt.canary = lockstep::Canary::DropFirstRetx;
    lockstep::DiffResult r;
    try {
        r = lockstep::replay_trace_text(buf.str(), opt);
    } catch (const std::exception& e) {
        std::cerr << "mroce replay: " << path << ": " << e.what() << "\n";
        return kExitMisuse;
    }
    std::cout << "replay " << path << " (model and engine in lockstep" << (canary ? ", canary planted" : "") << ")\n"
              << (r.divergence ? r.divergence->text() : std::string("in step")) << "\n"
              << r.stats.frames << " frames compared\n";
    if (json) {
        nlohmann::json j{{"command", "replay"},
                         {"engine", "lockstep"},
                         {"canary", canary},
                         {"diverged", r.divergence.has_value()},
                         {"frames", r.stats.frames}};
        if (r.divergence) j["divergence"] = r.divergence->text();
        std::cout << j.dump() << "\n";
    }
    return r.divergence ? kExitFailed : kExitOk;
}

Runner add_diff(CLI::App& app, const GlobalOptions& global) {
    auto* sub = app.add_subcommand("diff", "Run generated scenarios through the model and the engine in lockstep");
    auto o = std::make_shared<DiffCliOptions>();
    sub->add_option("--seed", o->seed, "Seed of the first run (run i uses seed + i)")->capture_default_str();
    auto* runs = sub->add_option("--runs", o->runs, "Number of runs")->capture_default_str();
    auto* minutes = sub->add_option("--minutes", o->minutes, "Run for this many minutes instead of --runs");
    runs->excludes(minutes);
    sub->add_option("--trace-dir", o->trace_dir, "Where the trace of a divergence is written")->capture_default_str();
    sub->add_flag("--canary", o->canary, "Plant the test-only engine bug (drop the first retransmission)");
    return [o, &global]() { return run_diff(*o, global); };
}

}  // namespace mroce::cli
