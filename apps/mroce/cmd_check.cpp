// `mroce check CAPTURE...`: the passive checker. Rebuilds from pcap / pcapng captures what each
// endpoint's wire behaviour implies and checks every [R-CONF-1] rule with the conformance monitor;
// prints each violation (requirement, frame number, canonical line, the frames that established
// the state) or "conformant", and a capture-quality figure.
//
// A tap is one capture file, or one interface of a pcapng file (two taps of one conversation, one
// at each endpoint, go in as two files or two interfaces): each is judged on its own, since a frame
// seen by both would otherwise count twice.
#include <algorithm>
#include <iostream>
#include <map>

#include "command.hpp"
#include "conform/capture.hpp"
#include "conform/report.hpp"
#include "monitor/monitor.hpp"

namespace mroce::cli {

namespace {

struct CheckOptions {
    std::vector<std::string> captures;
    std::vector<std::string> at;
    std::string paths;
    uint16_t udp_port = 4793;
    double tolerance_us = 500, tolerance_prop = 0.1;
    bool strict = false;
    uint32_t rto_min_us = 100, rto_init_us = 1000, rto_max_us = 6250, rnr_default_us = 100;
    uint32_t home_probe_us = 200, home_probe_max_us = 400;  // [R-PATH-10]
    uint64_t max_frames = 0;                                // 0: every frame
};

struct Tap {
    std::string label;
    std::vector<const conform::CapturedFrame*> frames;
};

monitor::Monitor judge(const Tap& tap, const CheckOptions& o, const std::vector<monitor::Ip>& full, bool judge_only,
                       bool told, const std::vector<uint16_t>& paths) {
    monitor::Config c;
    c.udp_port = o.udp_port;
    c.fully_observed = full;
    c.judge_only = judge_only;
    c.tolerance = monitor::Nanos(o.tolerance_us * 1000);
    c.tolerance_prop = o.tolerance_prop;
    c.strict = o.strict;
    c.exact_capture = false;
    c.judge_ack_deadlines = told;
    c.paths = paths;
    c.rto_min_us = o.rto_min_us;
    c.rto_init_us = o.rto_init_us;
    c.rto_max_us = o.rto_max_us;
    c.rnr_default_us = o.rnr_default_us;
    c.home_probe_us = o.home_probe_us;
    c.home_probe_max_us = o.home_probe_max_us;
    monitor::Monitor m(c);
    monitor::Nanos last = 0;
    for (const auto* f : tap.frames) {
        last = std::max<monitor::Nanos>(last, monitor::Nanos(f->time_ns));
        m.frame(f->number, last, f->bytes);
    }
    m.finish(last);
    return m;
}

int run(const CheckOptions& o, const GlobalOptions& g) {
    std::vector<conform::Capture> caps;
    try {
        for (const auto& path : o.captures) caps.push_back(conform::read_capture(path));
    } catch (const conform::CaptureError& e) {
        std::cerr << "mroce check: " << e.what() << "\n";
        return kExitMisuse;
    }
    std::vector<monitor::Ip> full;
    for (const auto& a : o.at) {
        auto ip = monitor::parse_ip(a);
        if (!ip) {
            std::cerr << "mroce check: --at " << a << ": not an IP address\n";
            return kExitMisuse;
        }
        full.push_back(*ip);
    }
    std::vector<uint16_t> paths;
    for (size_t i = 0; !o.paths.empty() && i <= o.paths.size();) {
        size_t j = o.paths.find(',', i);
        if (j == std::string::npos) j = o.paths.size();
        const std::string one = o.paths.substr(i, j - i);
        char* end = nullptr;
        const unsigned long v = std::strtoul(one.c_str(), &end, 10);
        if (one.empty() || *end || v > 255) {
            std::cerr << "mroce check: --paths " << o.paths << ": expected path IDs 0..255, comma-separated\n";
            return kExitMisuse;
        }
        paths.push_back(uint16_t(v));
        i = j + 1;
    }
    std::vector<Tap> taps;
    for (const auto& cap : caps) {
        std::map<uint32_t, Tap> by_if;
        for (const auto& f : cap.frames) {
            // --max-frames: the capture's first N frames, as if the tap had stopped there (what
            // was still open is indeterminate).
            if (o.max_frames && f.number > o.max_frames) break;
            Tap& t = by_if[f.interface];
            if (t.label.empty())
                t.label =
                    cap.format == "pcapng" ? cap.path + " (interface " + std::to_string(f.interface) + ")" : cap.path;
            t.frames.push_back(&f);
        }
        if (by_if.empty()) taps.push_back({cap.path, {}});
        for (auto& [id, t] : by_if) taps.push_back(std::move(t));
    }

    bool all_ok = true;
    uint64_t mroce_frames = 0;
    nlohmann::json jtaps = nlohmann::json::array(), rules = nlohmann::json::object(), vs = nlohmann::json::array();
    std::vector<std::string> judged_all, choices_all;
    double quality_min = 1.0;
    uint64_t tap_loss = 0;
    for (const auto& tap : taps) {
        std::vector<monitor::Ip> tap_full = full;
        std::string how = "told (--at)";
        if (tap_full.empty()) {
            // Which endpoint's port was the tap at? The one for which no frame is provably missing.
            how = "inferred (no frame missing for it)";
            const monitor::Monitor all = judge(tap, o, {}, false, false, paths);
            std::vector<std::pair<double, monitor::Ip>> candidates;
            for (const auto& e : all.endpoints()) {
                auto ip = monitor::parse_ip(e);
                if (ip && judge(tap, o, {*ip}, true, false, paths).quality().tap_loss == 0)
                    candidates.push_back({0.0, *ip});
            }
            // A tap at one port sees one endpoint whole. When nothing is provably missing for
            // several (no loss), the capture does not say which: judge none of them fully (the
            // unspecified address stands for "nobody"), and say so.
            if (candidates.size() > 1) {
                how = "ambiguous: no frame is provably missing for " + std::to_string(candidates.size()) +
                      " endpoints; name the tap's endpoint with --at";
                candidates.clear();
                tap_full.push_back(monitor::Ip{});
            }
            for (const auto& c : candidates) tap_full.push_back(c.second);
        }
        const monitor::Monitor m = judge(tap, o, tap_full, false, !o.at.empty(), paths);
        const auto q = m.quality();
        mroce_frames += q.frames;
        std::printf("%s: %zu frames, %llu MRoCE, %llu other, %llu connections\n", tap.label.c_str(), tap.frames.size(),
                    (unsigned long long)q.frames, (unsigned long long)q.other_frames,
                    (unsigned long long)q.connections);
        std::string judged;
        for (const auto& e : m.fully_judged()) judged += (judged.empty() ? "" : ", ") + e;
        std::printf("fully judged endpoints (%s): %s\n", how.c_str(),
                    judged.empty() ? "none (stateless rules only)" : judged.c_str());
        if (o.at.empty() && !judged.empty())
            std::printf(
                "ACK deadlines ([R-ACK-2], [R-ACK-3]) indeterminate: name the tap's endpoint with --at to judge "
                "them\n");
        if (!paths.empty())
            std::printf("paths judged: %s (%llu frames of other paths skipped; rules across paths indeterminate)\n",
                        o.paths.c_str(), (unsigned long long)q.other_path_frames);
        std::printf("capture quality %.4f (frames of unknown connections %llu, provably missing %llu)\n", q.figure(),
                    (unsigned long long)q.unknown_connection, (unsigned long long)q.tap_loss);
        for (const auto& v : m.violations()) {
            std::printf("[%s] frame %llu (%s): %s\n  %s\n", v.rule.c_str(), (unsigned long long)v.frame,
                        v.endpoint.c_str(), v.what.c_str(), v.line.c_str());
            if (!v.because.empty()) {
                std::printf("  state from frames");
                for (auto f : v.because) std::printf(" %llu", (unsigned long long)f);
                std::printf("\n");
            }
            vs.push_back(conform::violation_json(v));
        }
        uint64_t checked = 0, indeterminate = 0, violated = 0;
        nlohmann::json tap_rules = nlohmann::json::object();
        for (const auto& [rule, t] : m.tally()) {
            checked += t.checked;
            indeterminate += t.indeterminate;
            violated += t.violated;
            tap_rules[rule] = {{"checked", t.checked}, {"violated", t.violated}, {"indeterminate", t.indeterminate}};
            auto& r = rules[rule];
            if (r.is_null()) r = {{"checked", 0}, {"violated", 0}, {"indeterminate", 0}};
            r["checked"] = r["checked"].get<uint64_t>() + t.checked;
            r["violated"] = r["violated"].get<uint64_t>() + t.violated;
            r["indeterminate"] = r["indeterminate"].get<uint64_t>() + t.indeterminate;
        }
        if (violated == 0)
            std::printf("conformant: %llu checks passed, %llu indeterminate\n", (unsigned long long)checked,
                        (unsigned long long)indeterminate);
        else
            std::printf("NOT conformant: %llu violations in %llu checks\n", (unsigned long long)violated,
                        (unsigned long long)checked);
        all_ok = all_ok && violated == 0;
        quality_min = std::min(quality_min, q.figure());
        tap_loss += q.tap_loss;
        for (const auto& e : m.fully_judged()) judged_all.push_back(e);
        for (const auto& c : m.choices()) choices_all.push_back(c);
        jtaps.push_back({{"tap", tap.label},
                         {"conformant", violated == 0},
                         {"frames", tap.frames.size()},
                         {"mroce_frames", q.frames},
                         {"quality", q.figure()},
                         {"tap_loss", q.tap_loss},
                         {"fully_judged", m.fully_judged()},
                         {"rules", tap_rules}});
    }
    if (mroce_frames == 0) {
        std::cerr << "mroce check: " << o.captures.front() << ": no MRoCE frames (UDP port " << o.udp_port << ")\n";
        return kExitMisuse;
    }
    if (g.json) {
        std::cout << nlohmann::json{{"captures", o.captures}, {"conformant", all_ok}, {"mroce_frames", mroce_frames},
                                    {"quality", quality_min}, {"tap_loss", tap_loss}, {"fully_judged", judged_all},
                                    {"rules", rules},         {"violations", vs},     {"choices", choices_all},
                                    {"taps", jtaps}}
                         .dump()
                  << "\n";
    }
    return all_ok ? kExitOk : kExitFailed;
}

}  // namespace

Runner add_check(CLI::App& app, const GlobalOptions& global) {
    auto o = std::make_shared<CheckOptions>();
    auto* sub = app.add_subcommand("check", "Check captures (pcap or pcapng) against the spec's wire rules");
    sub->add_option("captures", o->captures, "Capture files; each file, or each interface of a pcapng file, is one tap")
        ->required();
    sub->add_option("--at", o->at, "IP of an endpoint at whose port the taps were taken (default: inferred)");
    sub->add_option("--paths", o->paths, "Path IDs the taps saw, comma-separated (default: all)");
    sub->add_option("--udp-port", o->udp_port, "MRoCE UDP destination port")->capture_default_str();
    sub->add_option("--tolerance-us", o->tolerance_us, "Allowed processing lag and slack of time bounds")
        ->capture_default_str();
    sub->add_option("--rto-min-us", o->rto_min_us, "The endpoints' configured RTO_MIN")->capture_default_str();
    sub->add_option("--rto-init-us", o->rto_init_us, "The endpoints' configured RTO_INIT")->capture_default_str();
    sub->add_option("--rto-max-us", o->rto_max_us, "The endpoints' configured RTO_MAX")->capture_default_str();
    sub->add_option("--rnr-default-us", o->rnr_default_us, "The endpoints' RNR_DEFAULT")->capture_default_str();
    sub->add_option("--home-probe-us", o->home_probe_us, "The endpoints' HOME_PROBE")->capture_default_str();
    sub->add_option("--home-probe-max-us", o->home_probe_max_us, "The endpoints' HOME_PROBE_MAX")
        ->capture_default_str();
    sub->add_flag("--strict", o->strict, "Also check the SHOULDs");
    sub->add_option("--max-frames", o->max_frames,
                    "Judge only each capture's first N frames (a capture cut short there)");
    return [o, &global] { return run(*o, global); };
}

}  // namespace mroce::cli
