// `mroce conform`: the conformance suite. Plays the peer of a device under test through every
// script of traces/conformance/ (or those given), the conformance monitor judging each frame the
// DUT sends, and reports per test and per requirement: a table, JUnit XML, a JSON matrix, and a
// pcap plus canonical trace per test.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "command.hpp"
#include "conform/agent_dut.hpp"
#include "conform/inproc_dut.hpp"
#include "conform/random.hpp"
#include "conform/report.hpp"
#include "conform/runner.hpp"
#include "conform/watchdog.hpp"

namespace mroce::cli {

namespace {

struct ConformOptions {
    std::string dut = "inproc";
    std::string port;
    std::string canary;
    std::vector<std::string> scripts;
    std::vector<std::string> only;
    bool strict = false, list = false, progress = true, assume_defaults = false;
    std::string junit, out_dir = "mroce-conform";
    double tolerance_us = -1;
    double late_us = -1, late_prop = -1;
    std::string tester_mac = "02:00:00:00:00:01", tester_ip = "10.0.0.1";
    std::string lcores = "0", file_prefix;
    uint32_t random = 0;
    uint64_t seed = 1;
    std::vector<std::string> knobs;
    bool no_shrink = false;
    std::string replay;
    double test_budget_s = 60;
};

// What a user reads when a test outlived its wall-clock budget (the watchdog ends the process).
std::string stuck_message(const std::string& what, std::chrono::milliseconds budget, const std::string& replay) {
    return what + ": not finished after " + std::to_string(budget.count() / 1000) +
           " s of wall clock: the DUT did not return from one call (a livelock inside the DUT?), so the run stops "
           "here; replay: " +
           replay;
}

// `--replay TRACE`: a scenario a failing randomised run wrote, through the monitor again.
int run_replay(const ConformOptions& o, const GlobalOptions& g) {
    std::ifstream in(o.replay);
    if (!in) {
        std::cerr << "mroce conform: " << o.replay << ": cannot read\n";
        return kExitMisuse;
    }
    std::stringstream text;
    text << in.rdbuf();
    conform::RandomRun r;
    try {
        r = conform::replay_random(text.str(), o.canary);
    } catch (const std::exception& e) {
        std::cerr << "mroce conform: " << o.replay << ": " << e.what() << "\n";
        return kExitMisuse;
    }
    for (const auto& v : r.violations)
        std::printf("[%s] frame %llu: %s\n  %s\n", v.rule.c_str(), (unsigned long long)v.frame, v.what.c_str(),
                    v.line.c_str());
    for (const auto& h : r.harness_failures) std::printf("harness %s\n", h.c_str());
    std::printf("%s: %s (%zu ops, %zu faults, %llu DUT frames judged)\n", o.replay.c_str(),
                r.failed ? "FAILS" : "passes", r.ops, r.fates, (unsigned long long)r.frames);
    if (g.json) {
        nlohmann::json vs = nlohmann::json::array();
        for (const auto& v : r.violations) vs.push_back(conform::violation_json(v));
        std::cout << nlohmann::json{{"trace", o.replay},
                                    {"failed", r.failed},
                                    {"violations", vs},
                                    {"harness", r.harness_failures}}
                         .dump()
                  << "\n";
    }
    return r.failed ? kExitFailed : kExitOk;
}

// `--random N`: the model plays a legal peer with random workloads and faults; the monitor
// judges the DUT (our engine in-process).
int run_random(const ConformOptions& o, const GlobalOptions& g) {
    if (o.dut != "inproc") {
        std::cerr << "mroce conform: --random drives the DUT as a state machine: only --dut inproc\n";
        return kExitMisuse;
    }
    conform::RandomOptions ro;
    ro.seed = o.seed;
    ro.runs = o.random;
    ro.canary = o.canary;
    ro.shrink = !o.no_shrink;
    ro.out_dir = o.out_dir;
    if (!ro.out_dir.empty() && !make_output_dir(ro.out_dir)) {
        std::cerr << "mroce conform: --out " << ro.out_dir << ": cannot use it as a folder\n";
        return kExitMisuse;
    }
    std::string knob_args;
    for (const auto& k : o.knobs) {
        const size_t eq = k.find('=');
        try {
            if (eq == std::string::npos) throw std::invalid_argument("expected NAME=VALUE");
            harness::set_knob(ro.knobs, k.substr(0, eq), k.substr(eq + 1));
        } catch (const std::exception& e) {
            std::cerr << "mroce conform: --knob " << k << ": " << e.what() << "\n";
            return kExitMisuse;
        }
        knob_args += " --knob " + k;
    }
    const std::string canary = o.canary.empty() ? "" : " --canary " + o.canary;
    uint32_t failed = 0, done = 0;
    uint64_t frames = 0;
    nlohmann::json runs = nlohmann::json::array();
    std::map<std::string, monitor::RuleTally> tally;
    auto report = [&](const conform::RandomRun& r) {
        ++done;
        frames += r.frames;
        for (const auto& [rule, t] : r.tally) {
            tally[rule].checked += t.checked;
            tally[rule].violated += t.violated;
            tally[rule].indeterminate += t.indeterminate;
        }
        if (o.progress && !g.json)
            std::fprintf(stderr, "[%u/%u] seed %llu: %s\n", done, o.random, (unsigned long long)r.seed,
                         r.failed ? "FAIL" : "ok");
        if (!r.failed) return;
        ++failed;
        std::printf("FAIL seed %llu (shrunk to %zu ops, %zu faults)\n", (unsigned long long)r.seed, r.ops, r.fates);
        for (const auto& v : r.violations)
            std::printf("  [%s] frame %llu: %s\n    %s\n", v.rule.c_str(), (unsigned long long)v.frame, v.what.c_str(),
                        v.line.c_str());
        for (const auto& h : r.harness_failures) std::printf("  harness %s\n", h.c_str());
        std::printf("  replay: %s conform --random 1 --seed %llu%s%s\n", g.program.c_str(), (unsigned long long)r.seed,
                    knob_args.c_str(), canary.c_str());
        if (!r.trace.empty())
            std::printf("  shrunk scenario: %s (%s conform --replay %s%s)\n", r.trace.c_str(), g.program.c_str(),
                        r.trace.c_str(), canary.c_str());
        nlohmann::json vs = nlohmann::json::array();
        for (const auto& v : r.violations) vs.push_back(conform::violation_json(v));
        runs.push_back({{"seed", r.seed}, {"violations", vs}, {"harness", r.harness_failures}, {"trace", r.trace}});
    };
    uint64_t current_seed = o.seed;
    conform::TestWatchdog watchdog(
        std::chrono::milliseconds(int64_t(o.test_budget_s * 1000)),
        [&](const std::string& label, std::chrono::milliseconds budget) {
            const std::string m = stuck_message(
                label, budget,
                g.program + " conform --random 1 --seed " + std::to_string(current_seed) + knob_args + canary);
            std::printf("FAIL %s\n", m.c_str());
            std::fprintf(stderr, "mroce conform: %s\n", m.c_str());
            if (g.json)
                std::cout << nlohmann::json{{"random", o.random},
                                            {"seed", o.seed},
                                            {"failed", failed + 1},
                                            {"failures", runs},
                                            {"stuck", {{"seed", current_seed}, {"what", m}}}}
                                 .dump()
                          << "\n";
        },
        kExitFailed);
    watchdog.arm("random run, seed " + std::to_string(current_seed));
    conform::run_random(ro, [&](const conform::RandomRun& r) {
        report(r);
        current_seed = r.seed + 1;
        watchdog.arm("random run, seed " + std::to_string(current_seed));
    });
    watchdog.disarm();
    uint64_t checked = 0;
    for (const auto& [rule, t] : tally) checked += t.checked;
    std::printf("%u random runs (seeds %llu..%llu): %u failed, %llu DUT frames judged, %llu checks (knobs: %s)\n",
                o.random, (unsigned long long)o.seed, (unsigned long long)(o.seed + o.random - 1), failed,
                (unsigned long long)frames, (unsigned long long)checked, harness::knobs_to_string(ro.knobs).c_str());
    if (g.json) {
        nlohmann::json rules = nlohmann::json::object();
        for (const auto& [rule, t] : tally)
            rules[rule] = {{"checked", t.checked}, {"violated", t.violated}, {"indeterminate", t.indeterminate}};
        std::cout << nlohmann::json{{"random", o.random},
                                    {"seed", o.seed},
                                    {"failed", failed},
                                    {"failures", runs},
                                    {"rules", rules}}
                         .dump()
                  << "\n";
    }
    return failed ? kExitFailed : kExitOk;
}

std::vector<std::string> script_files(const std::vector<std::string>& given) {
    std::vector<std::string> roots = given;
    if (roots.empty()) roots.push_back(std::string(MROCE_SOURCE_DIR) + "/traces/conformance");
    std::vector<std::string> out;
    for (const auto& r : roots) {
        std::error_code ec;
        if (std::filesystem::is_directory(r, ec)) {
            for (const auto& e : std::filesystem::directory_iterator(r))
                if (e.path().extension() == ".mcs") out.push_back(e.path().string());
        } else if (std::filesystem::exists(r, ec)) {
            out.push_back(r);
        } else {
            throw conform::ScriptError(r, 0, "no such file or directory");
        }
    }
    std::sort(out.begin(), out.end());
    return out;
}

bool parse_mac(const std::string& s, std::array<uint8_t, 6>& mac) {
    unsigned b[6];
    char tail;
    if (std::sscanf(s.c_str(), "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &tail) != 6)
        return false;
    for (int i = 0; i < 6; ++i) {
        if (b[i] > 255) return false;
        mac[i] = uint8_t(b[i]);
    }
    return true;
}

int run(const ConformOptions& o, const GlobalOptions& g) {
    if (!conform::known_canary(o.canary)) {
        std::cerr << "mroce conform: --canary " << o.canary << ": unknown (ack-lies, no-retx-flag, ecn, livelock)\n";
        return kExitMisuse;
    }
    if (!o.replay.empty()) return run_replay(o, g);
    if (o.random > 0) return run_random(o, g);
    std::vector<conform::Script> scripts;
    try {
        for (const auto& f : script_files(o.scripts)) scripts.push_back(conform::load_script(f));
    } catch (const conform::ScriptError& e) {
        std::cerr << "mroce conform: " << e.what() << "\n";
        return kExitMisuse;
    }
    std::vector<std::string> ids;
    for (const auto& s : scripts) {
        if (std::find(ids.begin(), ids.end(), s.id) != ids.end()) {
            std::cerr << "mroce conform: " << s.path << ":1: test ID '" << s.id << "' used twice\n";
            return kExitMisuse;
        }
        ids.push_back(s.id);
    }
    auto picked = [&](const conform::Script& s) {
        if (o.only.empty()) return true;
        conform::TestResult h;
        h.id = s.id;
        h.requires_ = s.requires_;
        for (const auto& g2 : o.only)
            if (conform::selected(h, g2)) return true;
        return false;
    };
    std::erase_if(scripts, [&](const conform::Script& s) { return !picked(s); });
    if (o.list) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& s : scripts) {
            std::string req;
            for (const auto& r : s.requires_) req += (req.empty() ? "" : ",") + r;
            std::printf("%-34s %-28s %s%s\n", s.id.c_str(), req.c_str(), s.title.c_str(), s.should ? " (SHOULD)" : "");
            list.push_back({{"id", s.id}, {"requires", s.requires_}, {"title", s.title}, {"script", s.path}});
        }
        if (g.json) std::cout << nlohmann::json{{"tests", list}}.dump() << "\n";
        return kExitOk;
    }

    conform::RunOptions ro;
    ro.strict = o.strict;
    ro.assume_defaults = o.assume_defaults;
    ro.tolerance_us = o.tolerance_us;
    ro.late_us = o.late_us;
    ro.late_prop = o.late_prop;
    ro.out_dir = o.out_dir;
    if (!ro.out_dir.empty() && !make_output_dir(ro.out_dir)) {
        std::cerr << "mroce conform: --out " << ro.out_dir << ": cannot use it as a folder\n";
        return kExitMisuse;
    }
    if (!parse_mac(o.tester_mac, ro.tester.mac)) {
        std::cerr << "mroce conform: --tester-mac " << o.tester_mac << ": not a MAC address\n";
        return kExitMisuse;
    }
    auto ip = monitor::parse_ip(o.tester_ip);
    if (!ip) {
        std::cerr << "mroce conform: --tester-ip " << o.tester_ip << ": not an IP address\n";
        return kExitMisuse;
    }
    ro.tester.ipv6 = ip->v6;
    ro.tester.ip = ip->b;

    // The DUT: a fresh in-process engine per test, or one agent reset between tests.
    std::unique_ptr<conform::Dut> agent;
    std::string dut_name;
    if (o.dut == "inproc") {
        conform::InprocOptions io;
        io.canary = o.canary;
        ro.tester = conform::inproc_tester_address();
        dut_name = conform::make_inproc_dut(io)->info().name;
    } else if (o.dut.starts_with("agent=")) {
        if (o.port.empty()) {
            std::cerr << "mroce conform: --dut agent=ADDR needs --port SPEC (the runner's wire to the DUT)\n";
            return kExitMisuse;
        }
        try {
            conform::AgentDutOptions ao;
            ao.agent = o.dut.substr(6);
            ao.wire = o.port;
            ao.lcores = o.lcores;
            ao.file_prefix = o.file_prefix;
            agent = std::make_unique<conform::AgentDut>(ao);
        } catch (const std::exception& e) {
            std::cerr << "mroce conform: " << e.what() << "\n";
            return kExitMisuse;
        }
        dut_name = agent->info().name;
    } else {
        std::cerr << "mroce conform: --dut " << o.dut << ": expected inproc or agent=ADDR\n";
        return kExitMisuse;
    }

    std::vector<conform::TestResult> results;
    auto finish = [&](const std::vector<conform::TestResult>& rs) {
        conform::print_table(std::cout, rs);
        std::map<std::string, int> n;
        for (const auto& r : rs) ++n[conform::outcome_name(r.outcome)];
        std::printf("%zu tests: %d pass, %d fail, %d timing, %d unsupported, %d error (DUT: %s)\n", rs.size(),
                    n["pass"], n["fail"], n["timing"], n["unsupported"], n["error"], dut_name.c_str());
        if (!o.out_dir.empty()) std::printf("pcap and canonical trace per test in %s/\n", o.out_dir.c_str());
        try {
            if (!o.junit.empty()) conform::write_junit(o.junit, rs, dut_name);
        } catch (const std::exception& e) {
            std::cerr << "mroce conform: " << e.what() << "\n";
            return kExitMisuse;
        }
        if (g.json) std::cout << conform::matrix(rs, dut_name).dump() << "\n";
        return n["fail"] + n["timing"] + n["error"] ? kExitFailed : kExitOk;
    };
    // A DUT stuck inside one call cannot be taken back: report the test failed, with everything
    // run before it, and end the process.
    const conform::Script* running = nullptr;
    conform::TestWatchdog watchdog(
        std::chrono::milliseconds(int64_t(o.test_budget_s * 1000)),
        [&](const std::string& id, std::chrono::milliseconds budget) {
            conform::TestResult r;
            r.id = id;
            r.title = running->title;
            r.path = running->path;
            r.requires_ = running->requires_;
            r.outcome = conform::Outcome::Fail;
            std::string replay = g.program + " conform --only " + id;
            if (!o.canary.empty()) replay += " --canary " + o.canary;
            if (agent) replay += " --dut " + o.dut + " --port " + o.port;
            r.messages.push_back(stuck_message(id, budget, replay));
            std::fprintf(stderr, "mroce conform: %s\n", r.messages.back().c_str());
            auto all = results;
            all.push_back(r);
            finish(all);
        },
        kExitFailed);
    size_t i = 0;
    for (const auto& s : scripts) {
        ++i;
        if (o.progress && !g.json) std::fprintf(stderr, "[%zu/%zu] %s\n", i, scripts.size(), s.id.c_str());
        running = &s;
        watchdog.arm(s.id);
        try {
            if (agent) {
                agent->reset();
                results.push_back(conform::run_script(s, *agent, ro));
            } else {
                conform::InprocOptions io;
                io.canary = o.canary;
                for (const auto& q : s.dut) io.ipv6 = io.ipv6 || (q.name == "ip" && q.value == "6");
                auto dut = conform::make_inproc_dut(io);
                conform::RunOptions rs = ro;
                rs.tester = conform::inproc_tester_address(io.ipv6);
                results.push_back(conform::run_script(s, *dut, rs));
            }
        } catch (const conform::DutError& e) {
            std::cerr << "mroce conform: DUT: " << e.what() << "\n";
            return kExitMisuse;
        }
        watchdog.disarm();
    }
    return finish(results);
}

}  // namespace

Runner add_conform(CLI::App& app, const GlobalOptions& global) {
    auto o = std::make_shared<ConformOptions>();
    auto* sub = app.add_subcommand("conform", "Run the conformance suite against a device under test");
    sub->add_option("--dut", o->dut, "inproc (our engine, in this process) or agent=ADDR (unix:/path or HOST:PORT)")
        ->capture_default_str();
    sub->add_option("--port", o->port,
                    "With an agent: the runner's DPDK port to the DUT (af_packet:IF, af_xdp:IF, memif:client:/s.sock)");
    sub->add_option("--canary", o->canary,
                    "inproc only: a deliberately broken DUT (ack-lies, no-retx-flag, ecn, livelock)");
    sub->add_option("scripts", o->scripts, "Script files or folders (default: traces/conformance)");
    sub->add_option("--only", o->only, "Only tests whose ID or requirement matches this glob (R-ACK-*, ...)");
    sub->add_flag("--strict", o->strict, "Also run the SHOULD-level tests and checks");
    sub->add_flag("--assume-defaults", o->assume_defaults,
                  "Fail (not unsupported) a test whose line assumes the spec's default for an implementation choice "
                  "(default=): for a DUT that makes the defaults, as our engine does");
    sub->add_flag("--list", o->list, "List the tests and the requirements they check; run nothing");
    sub->add_option("--junit", o->junit, "Write a JUnit XML report (testcase = test ID)");
    sub->add_option("--out", o->out_dir, "Folder for each test's pcap and canonical trace ('' for none)")
        ->capture_default_str();
    sub->add_option("--tolerance-us", o->tolerance_us,
                    "Slack of time bounds and allowed processing lag (default: 0 in virtual time, 5000 us otherwise)");
    sub->add_option("--late-us", o->late_us,
                    "How late (us, on top of the tolerance) an expected frame may come over a real port: timers may "
                    "fire late [R-CONF-2] (default: 0 in virtual time, 20000 otherwise)");
    sub->add_option("--late-prop", o->late_prop,
                    "The same as a proportion of the bound (default: 0 in virtual time, 0.5 otherwise)");
    sub->add_option("--tester-mac", o->tester_mac, "With an agent: the tester's MAC")->capture_default_str();
    sub->add_option("--tester-ip", o->tester_ip, "With an agent: the tester's IP")->capture_default_str();
    sub->add_option("--lcores", o->lcores, "With an agent: EAL --lcores of the runner's port")->capture_default_str();
    sub->add_option("--file-prefix", o->file_prefix, "With an agent: EAL --file-prefix of the runner's port");
    sub->add_flag("!--no-progress", o->progress, "No progress lines on stderr");
    sub->add_option("--random", o->random,
                    "Randomised mode: N runs of the model as a legal peer with random workloads and faults");
    sub->add_option("--seed", o->seed, "Randomised mode: the first seed (run i uses seed + i)")->capture_default_str();
    sub->add_option("--knob", o->knobs, "Randomised mode: a fault/workload knob NAME=VALUE (as mroce sim)");
    sub->add_flag("--no-shrink", o->no_shrink, "Randomised mode: report a failure without shrinking it");
    sub->add_option("--test-budget-s", o->test_budget_s,
                    "Wall-clock seconds a test (a randomised run, shrinking included) may take before the run stops, "
                    "reporting it failed: catches a DUT that never returns from one call (0: no limit)")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    sub->add_option("--replay", o->replay,
                    "Rerun a scenario a failing randomised run wrote (its .trace) through the monitor");
    return [o, &global] { return run(*o, global); };
}

}  // namespace mroce::cli
