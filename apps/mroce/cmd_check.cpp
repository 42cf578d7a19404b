// `mroce check CAPTURE`: the passive checker. Rebuilds from a pcap / pcapng of both directions
// what each endpoint's wire behaviour implies and checks every [R-CONF-1] rule with the
// conformance monitor; prints each violation (requirement, frame number, canonical line, the
// frames that established the state) or "conformant", and a capture-quality figure.
#include <iostream>

#include "command.hpp"
#include "conform/capture.hpp"
#include "conform/report.hpp"
#include "monitor/monitor.hpp"

namespace mroce::cli {

namespace {

struct CheckOptions {
    std::string capture;
    std::vector<std::string> at;
    uint16_t udp_port = 4793;
    double tolerance_us = 500, tolerance_prop = 0.1;
    bool strict = false;
    uint32_t rto_min_us = 100, rto_init_us = 1000, rto_max_us = 6250, rnr_default_us = 100;
};

monitor::Monitor judge(const conform::Capture& cap, const CheckOptions& o, const std::vector<monitor::Ip>& full, bool judge_only,
                       bool told) {
    monitor::Config c;
    c.udp_port = o.udp_port;
    c.fully_observed = full;
    c.judge_only = judge_only;
    c.tolerance = monitor::Nanos(o.tolerance_us * 1000);
    c.tolerance_prop = o.tolerance_prop;
    c.strict = o.strict;
    c.exact_capture = false;
    c.judge_ack_deadlines = told;
    c.rto_min_us = o.rto_min_us;
    c.rto_init_us = o.rto_init_us;
    c.rto_max_us = o.rto_max_us;
    c.rnr_default_us = o.rnr_default_us;
    monitor::Monitor m(c);
    monitor::Nanos last = 0;
    for (const auto& f : cap.frames) {
        last = std::max<monitor::Nanos>(last, monitor::Nanos(f.time_ns));
        m.frame(f.number, last, f.bytes);
    }
    m.finish(last);
    return m;
}

int run(const CheckOptions& o, const GlobalOptions& g) {
    conform::Capture cap;
    try {
        cap = conform::read_capture(o.capture);
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
    std::string how = "told (--at)";
    if (full.empty()) {
        // Which endpoint's port was the tap at? The one for which no frame is provably missing:
        // every frame it received and sent is in the capture.
        how = "inferred (no frame missing for it)";
        const monitor::Monitor all = judge(cap, o, {}, false, false);
        for (const auto& e : all.endpoints()) {
            auto ip = monitor::parse_ip(e);
            if (!ip) continue;
            const monitor::Monitor one = judge(cap, o, {*ip}, true, false);
            if (one.quality().tap_loss == 0) full.push_back(*ip);
        }
    }
    const monitor::Monitor m = judge(cap, o, full, false, !o.at.empty());
    if (m.quality().frames == 0) {
        std::cerr << "mroce check: " << o.capture << ": no MRoCE frames (UDP port " << o.udp_port << ")\n";
        return kExitMisuse;
    }
    const auto q = m.quality();
    std::printf("%s: %zu frames, %llu MRoCE, %llu other, %llu connections\n", o.capture.c_str(), cap.frames.size(),
                (unsigned long long)q.frames, (unsigned long long)q.other_frames, (unsigned long long)q.connections);
    std::string judged;
    for (const auto& e : m.fully_judged()) judged += (judged.empty() ? "" : ", ") + e;
    std::printf("fully judged endpoints (%s): %s\n", how.c_str(), judged.empty() ? "none (stateless rules only)" : judged.c_str());
    if (o.at.empty() && !judged.empty())
        std::printf("ACK deadlines ([R-ACK-2], [R-ACK-3]) indeterminate: name the tap's endpoint with --at to judge them\n");
    std::printf("capture quality %.4f (frames of unknown connections %llu, provably missing %llu)\n", q.figure(),
                (unsigned long long)q.unknown_connection, (unsigned long long)q.tap_loss);
    for (const auto& v : m.violations()) {
        std::printf("[%s] frame %llu (%s): %s\n  %s\n", v.rule.c_str(), (unsigned long long)v.frame, v.endpoint.c_str(), v.what.c_str(), v.line.c_str());
        if (!v.because.empty()) {
            std::printf("  state from frames");
            for (auto f : v.because) std::printf(" %llu", (unsigned long long)f);
            std::printf("\n");
        }
    }
    uint64_t checked = 0, indeterminate = 0;
    for (const auto& [rule, t] : m.tally()) {
        checked += t.checked;
        indeterminate += t.indeterminate;
    }
    if (m.violations().empty()) std::printf("conformant: %llu checks passed, %llu indeterminate\n", (unsigned long long)checked, (unsigned long long)indeterminate);
    else std::printf("NOT conformant: %zu violations in %llu checks\n", m.violations().size(), (unsigned long long)checked);
    if (g.json) {
        nlohmann::json rules = nlohmann::json::object(), vs = nlohmann::json::array();
        for (const auto& [rule, t] : m.tally()) rules[rule] = {{"checked", t.checked}, {"violated", t.violated}, {"indeterminate", t.indeterminate}};
        for (const auto& v : m.violations()) vs.push_back(conform::violation_json(v));
        std::cout << nlohmann::json{{"capture", o.capture}, {"conformant", m.violations().empty()}, {"frames", cap.frames.size()},
                                    {"mroce_frames", q.frames}, {"quality", q.figure()}, {"tap_loss", q.tap_loss},
                                    {"fully_judged", m.fully_judged()}, {"rules", rules}, {"violations", vs},
                                    {"choices", m.choices()}}.dump()
                  << "\n";
    }
    return m.violations().empty() ? kExitOk : kExitFailed;
}

}  // namespace

Runner add_check(CLI::App& app, const GlobalOptions& global) {
    auto o = std::make_shared<CheckOptions>();
    auto* sub = app.add_subcommand("check", "Check a capture (pcap or pcapng) against the spec's wire rules");
    sub->add_option("capture", o->capture, "The capture file")->required();
    sub->add_option("--at", o->at, "IP of an endpoint whose port the capture was taken at (default: inferred)");
    sub->add_option("--udp-port", o->udp_port, "MRoCE UDP destination port")->capture_default_str();
    sub->add_option("--tolerance-us", o->tolerance_us, "Allowed processing lag and slack of time bounds")->capture_default_str();
    sub->add_option("--rto-min-us", o->rto_min_us, "The endpoints' configured RTO_MIN")->capture_default_str();
    sub->add_option("--rto-init-us", o->rto_init_us, "The endpoints' configured RTO_INIT")->capture_default_str();
    sub->add_option("--rto-max-us", o->rto_max_us, "The endpoints' configured RTO_MAX")->capture_default_str();
    sub->add_option("--rnr-default-us", o->rnr_default_us, "The endpoints' RNR_DEFAULT")->capture_default_str();
    sub->add_flag("--strict", o->strict, "Also check the SHOULDs");
    return [o, &global] { return run(*o, global); };
}

}  // namespace mroce::cli
