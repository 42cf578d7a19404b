// `mroce fabric SCENARIO`: the engine, and the RoCEv2 baselines beside it, in an ns-3 datacenter
// (harness/fabric/README.md). Scenarios: loss (a loss sweep under a permutation load), incast (N:1),
// permutation (all hosts at once), anchors (the published htsim setups, our figures beside theirs).
// Progress on stderr, a table on stdout, gnuplot PNGs in --out, and with --json one object last.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "command.hpp"
#include "fabric/collective.hpp"
#include "fabric/fabric.hpp"
#include "fabric/scenarios.hpp"

namespace mroce::cli {
namespace {

using fabric::Transport;
using fabric::TransportRun;
using nlohmann::json;

struct FabricCliOptions {
    std::string scenario;
    uint32_t hosts = 0;  // 0: the scenario's default
    uint32_t planes = 1;
    double rate_gbps = 100;
    double delay_us = 1;
    std::string topology = "fat-tree";
    uint32_t hosts_per_leaf = 16;
    std::vector<double> loss_pct;
    std::vector<uint32_t> senders;
    std::vector<uint32_t> plane_counts;  // planes: the plane counts compared (default 4, 8)
    uint32_t per_host = 32;              // planes: connections each host opens
    int64_t watch_flow = -1;             // planes: sample this flow's connection (mroce; -1: the slowest's
                                         // index is printed, run again with it)
    uint64_t bytes = 0;                  // 0: the scenario's default (loss 16 MB, others 2 MB)
    uint64_t seed = 1;
    uint32_t paths = 32;
    uint32_t window_cap = 8;
    uint32_t rto_min_us = 100;
    uint32_t home_probe_us = 200, home_probe_max_us = 400;  // [R-PATH-10]
    double load = 0.6;                    // plane-failure: each receiver grants this fraction of its line rate
    double fail_us = 400;                 // plane-failure: plane 0 goes dark at this simulated time
    double back_us = 1400;                // and comes back at this one (0: never)
    std::string op = "allreduce";         // collective: allreduce | alltoall
    std::vector<std::string> algos;       // collective, allreduce: ring, hd (default both)
    double min_mib = 1, max_mib = 256;    // collective: sizes, doubling
    uint32_t channels = 0;                // collective: 0 = planes
    uint32_t warmup = 1;                  // collective: untimed iterations first
    double grant = 1;                     // mroce receivers share out this fraction of their line rate [R-FS-1]
    uint32_t fs_interval_us = 50;         // mroce FS_INTERVAL [R-FS-3]
    std::string host_ring = "per-plane";  // mroce hosts' transmit ring: per-plane (one per NIC port) | shared
    uint32_t hint_ttl_us = 1000;          // mroce HINT_TTL [R-CC-6]
    uint32_t queue_kb = 1024;
    uint32_t ecn_kb = 100;
    std::vector<std::string> transports;
    std::string out_dir;
    double deadline_ms = 0;  // 0: the scenario's default
    bool plots = true;
};

// What each scenario reports per run, one row.
struct Row {
    std::string scenario;
    TransportRun run;
    uint32_t senders = 0;
    double goodput_gbps = 0, kept = -1;
    double base_rtt_us = 0;
    uint32_t wrong_hosts = 0;  // collective: hosts whose result is not the expected one
    json timeline = nullptr;   // planes: what the fabric delivered over time (fabric::FlowTimeline)
};

double goodput_by_deadline(const fabric::RunResult& r) {
    // Bytes of the flows done over the time to the last finish, or to the end when some never did.
    double first = 1e300, last = 0, bytes = 0;
    bool all = true;
    for (const auto& f : r.flows) {
        first = std::min(first, f.spec.start_us);
        if (f.done) {
            bytes += double(f.spec.bytes);
            last = std::max(last, f.finish_us);
        } else {
            all = false;
        }
    }
    if (!all) last = r.sim_end_us;
    return last > first ? bytes * 8.0 / ((last - first) * 1e3) : 0.0;
}

// The span the flows were running: the first start to the last finish (or the end of the run).
double flows_span_us(const fabric::RunResult& r) {
    double first = 1e300, last = 0;
    for (const auto& f : r.flows) {
        first = std::min(first, f.spec.start_us);
        last = std::max(last, f.done ? f.finish_us : r.sim_end_us);
    }
    return last > first ? last - first : 0.0;
}

// The samples of --watch-flow, times from `origin_us`: one row per sample under "columns".
json watch_json(const std::vector<fabric::WatchSample>& watch, double origin_us) {
    json samples = json::array();
    for (const auto& w : watch)
        samples.push_back({w.at_us - origin_us, w.ceiling_mbps, w.cwnd, w.in_flight, w.share_mbps, w.receiver_active,
                           w.max_rto_us, w.paths_not_active, w.retx_gap, w.retx_probe, w.retx_rto});
    return json{{"columns",
                 {"start_us", "ceiling_mbps", "cwnd", "in_flight", "share_mbps", "receiver_active", "max_rto_us",
                  "paths_not_active", "retx_gap", "retx_probe", "retx_rto"}},
                {"samples", samples}};
}

// Mean bytes in the watched port's queue while the flows ran (before them it is empty).
double queue_mean_kb(const fabric::RunResult& r) {
    const double span = flows_span_us(r);
    return span > 0 ? r.watched_port.byte_us / span / 1024 : 0.0;
}

// The FCTs of the flows that finished.
std::vector<double> done_fcts(const fabric::RunResult& r) {
    std::vector<double> fcts;
    for (const auto& f : r.flows)
        if (f.done) fcts.push_back(f.fct_us());
    return fcts;
}

json row_json(const Row& row) {
    const auto& r = row.run.result;
    std::vector<double> fcts = done_fcts(r);
    const double jain_mean = fabric::mean_jain(row.run);
    // Up to five flows that did not complete verified, those that did not complete first (a wrong
    // byte downstream of a lost step is the step's doing).
    json failures = json::array();
    for (bool done : {false, true})
        for (size_t i = 0; i < r.flows.size(); ++i) {
            const auto& f = r.flows[i];
            if (f.done != done || (f.done && f.verified) || failures.size() >= 5) continue;
            failures.push_back("flow " + std::to_string(i) + " " + std::to_string(f.spec.src) + "->" +
                               std::to_string(f.spec.dst) + ": " + (f.done ? std::string("bytes differ") : f.error));
        }
    const double wall = std::max(r.wall_s, 1e-9);
    // The engine's counters (the model's hosts, mroce-model and mroce-lockstep, report none).
    const bool engine = row.run.transport == Transport::Mroce;
    return json{{"scenario", row.scenario},
                {"transport", fabric::transport_name(row.run.transport)},
                {"loss_pct", row.run.loss * 100},
                {"hosts", row.run.hosts},
                {"planes", row.run.planes},  // the run's own (planes compares several)
                {"senders", row.senders},
                {"flows", r.flows.size()},
                {"flows_done", r.done()},
                {"all_verified", r.all_verified()},
                {"wrong_hosts", row.wrong_hosts},
                {"failures", failures},
                {"goodput_gbps", row.goodput_gbps},
                {"kept", row.kept < 0 ? json(nullptr) : json(row.kept)},
                {"fct_min_us", fabric::percentile(fcts, 0)},
                {"fct_p50_us", fabric::percentile(fcts, 0.5)},
                {"fct_max_us", fabric::percentile(fcts, 1)},
                {"ideal_fct_us", row.run.ideal_fct_us},
                {"base_rtt_us", row.base_rtt_us},
                {"lockstep_steps", r.lockstep_steps},
                {"divergence", r.divergence.empty() ? json(nullptr) : json(r.divergence)},
                {"jain_mean", jain_mean},
                {"jain", row.run.jain},
                {"fair_at_us", row.run.fair_at_us},
                {"queue_max_kb", double(r.watched_port.max_bytes) / 1024},
                {"queue_mean_kb", queue_mean_kb(r)},
                {"queue_drops", r.fabric.queue_drops},
                {"link_losses", r.fabric.link_losses},
                {"ce_marks", r.fabric.ce_marks},
                {"pause_frames", r.fabric.pause_frames},
                {"data_packets", r.totals.data_packets},
                {"retransmissions", r.totals.retransmissions},
                {"spurious", r.totals.spurious},
                {"timeouts", r.totals.timeouts},
                {"rate_cuts", r.totals.rate_cuts},
                // [R-PATH-4], [R-PATH-10]: mroce's route changes (RoCEv2 has one route per QP).
                {"repaths", engine ? json(r.totals.repaths) : json(nullptr)},
                {"home_returns", engine ? json(r.totals.home_returns) : json(nullptr)},
                {"sim_us", r.sim_end_us},
                {"wall_s", r.wall_s},
                {"events", r.events},
                {"events_per_s", double(r.events) / wall},
                {"sim_us_per_wall_s", r.sim_end_us / wall},
                {"bytes_per_host", r.bytes_per_host},
                {"bytes_per_connection", r.bytes_per_connection},
                {"peak_rss_mb", double(r.peak_rss_bytes) / 1e6},
                {"timeline", row.timeline}};
}

std::string fmt(double v, int prec = 1) {
    std::ostringstream s;
    s << std::fixed << std::setprecision(prec) << v;
    return s.str();
}

// Writes name.dat and name.gp into dir and runs gnuplot; returns the PNG path or "" (with a warning).
std::string plot(const std::string& dir, const std::string& name, const std::string& data, const std::string& script) {
    const std::string dat = dir + "/" + name + ".dat", gp = dir + "/" + name + ".gp", png = dir + "/" + name + ".png";
    std::ofstream(dat) << data;
    std::ofstream(gp) << "set terminal pngcairo size 900,540 noenhanced\nset output '" << png << "'\nset grid\n"
                      << script;
    const std::string cmd = "gnuplot " + shell_word(gp) + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[256];
    while (p && fgets(buf, sizeof buf, p)) out += buf;
    const int rc = p ? pclose(p) : -1;
    if (rc != 0) {
        std::cerr << "mroce fabric: gnuplot failed for " << gp << ": " << out.substr(0, 200) << "\n";
        return "";
    }
    return png;
}

class FabricCommand {
public:
    FabricCommand(const FabricCliOptions& o, const GlobalOptions& g) : o_(o), g_(g) {}

    int run() {
        if (!parse()) return kExitMisuse;
        const auto wall0 = std::chrono::steady_clock::now();
        try {
            if (o_.scenario == "loss")
                scenario_loss();
            else if (o_.scenario == "incast")
                scenario_incast(o_.senders.empty() ? std::vector<uint32_t>{16, 64, 256} : o_.senders);
            else if (o_.scenario == "permutation")
                scenario_permutation(o_.hosts ? o_.hosts : 128);
            else if (o_.scenario == "planes")
                scenario_planes();
            else if (o_.scenario == "plane-failure")
                scenario_plane_failure();
            else if (o_.scenario == "collective")
                scenario_collective();
            else
                scenario_anchors();
        } catch (const std::exception& e) {
            std::cerr << "mroce fabric: " << e.what() << "\n";
            return kExitMisuse;
        }
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
        bool pass = true;
        bool agreed = true;
        for (const Row& r : rows_) {
            if (fabric::is_mroce(r.run.transport) && !r.run.result.all_verified()) pass = false;
            if (fabric::is_mroce(r.run.transport) && r.wrong_hosts > 0) pass = false;
            if (!r.run.result.divergence.empty()) {
                agreed = false;
                std::cout << "FAIL: the engine diverged from the model (" << label_of(r) << "):\n"
                          << r.run.result.divergence << "\nreplay: " << replay_command() << "\n";
            }
        }
        std::cout << (pass ? "PASS" : "FAIL") << ": every mroce flow "
                  << (pass ? "completed with the right bytes" : "did not complete verified") << " (" << fmt(wall, 1)
                  << " s)\n";
        pass = pass && agreed;
        if (g_.json) {
            json runs = json::array();
            for (const Row& r : rows_) runs.push_back(row_json(r));
            json j{{"scenario", o_.scenario}, {"pass", pass},           {"wall_s", wall}, {"runs", runs},
                   {"plots", plots_},         {"config", config_json()}};
            if (!anchors_.is_null()) j["anchors"] = anchors_;
            if (!plane_ratios_.empty()) j["plane_ratio"] = plane_ratios_;
            if (!plane_ratios_sustained_.empty()) j["plane_ratio_sustained"] = plane_ratios_sustained_;
            if (!collective_.empty()) j["collective"] = collective_;
            if (!plane_figures_.empty()) {
                json pf = json::array();
                for (const auto& p : plane_figures_)
                    pf.push_back({{"transport", p.transport},
                                  {"fail_us", p.f.fail_us},
                                  {"back_us", p.f.back_us < 1e299 ? json(p.f.back_us) : json(nullptr)},
                                  {"flows_start_us", p.f.start_us},
                                  {"first_finish_us", p.f.end_us},
                                  {"base_rtt_us", p.base_rtt_us},
                                  {"before_gbps", p.f.before_gbps},
                                  {"during_gbps", p.f.during_gbps},
                                  {"moved_us", p.f.moved_us},
                                  {"dead_plane_tx_until_us", p.f.dead_tx_us},
                                  {"dead_plane_probe_gbps", p.f.dead_probe_gbps},
                                  {"plane_before_gbps", p.f.plane_before_gbps},
                                  {"plane_after_gbps", p.f.plane_after_gbps},
                                  {"returned_us", p.f.returned_us},
                                  {"window_us", p.f.window_us},
                                  {"plane_rx_gbps", p.f.rx_gbps}});
                j["plane_failure"] = pf;
            }
            std::cout << j.dump() << "\n";
        }
        return pass ? kExitOk : kExitFailed;
    }

private:
    static std::string label_of(const Row& r) {
        return r.scenario + ", " + fabric::transport_name(r.run.transport) + ", " + fmt(r.run.loss * 100, 1) + "% loss";
    }

    // The command line that reruns this invocation (every knob that shapes a run, with the seed).
    std::string replay_command() const {
        std::ostringstream c;
        c << "mroce fabric " << o_.scenario << " --seed " << o_.seed << " --planes " << o_.planes << " --rate "
          << o_.rate_gbps << " --delay-us " << o_.delay_us << " --topology " << o_.topology << " --paths " << o_.paths
          << " --window-cap " << o_.window_cap << " --rto-min-us " << o_.rto_min_us << " --home-probe-us "
          << o_.home_probe_us << " --home-probe-max-us " << o_.home_probe_max_us << " --queue-kb " << o_.queue_kb
          << " --ecn-kb " << o_.ecn_kb << " --grant " << o_.grant << " --fs-interval-us " << o_.fs_interval_us
          << " --hint-ttl-us " << o_.hint_ttl_us << " --host-ring " << o_.host_ring;
        if (o_.hosts) c << " --hosts " << o_.hosts;
        if (o_.topology == "leaf-spine") c << " --hosts-per-leaf " << o_.hosts_per_leaf;
        if (o_.bytes) c << " --bytes " << o_.bytes;
        if (o_.deadline_ms > 0) c << " --deadline-ms " << o_.deadline_ms;
        if (o_.scenario == "plane-failure")
            c << " --load " << o_.load << " --fail-us " << o_.fail_us << " --back-us " << o_.back_us;
        auto list = [&c](const char* flag, const auto& v) {
            if (v.empty()) return;
            c << " " << flag;
            for (const auto& x : v) c << " " << x;
        };
        list("--loss", o_.loss_pct);
        list("--senders", o_.senders);
        list("--plane-counts", o_.plane_counts);
        if (o_.scenario == "planes") c << " --per-host " << o_.per_host;
        if (o_.watch_flow >= 0) c << " --watch-flow " << o_.watch_flow;
        if (o_.scenario == "collective") {
            c << " --op " << o_.op << " --min-mib " << o_.min_mib << " --max-mib " << o_.max_mib;
            if (o_.channels) c << " --channels " << o_.channels;
            c << " --warmup " << o_.warmup;
            list("--algos", o_.algos);
        }
        list("--transports", o_.transports);
        return c.str();
    }

    bool parse() {
        const std::set<std::string> scenarios{"loss",   "incast",        "permutation", "anchors",
                                              "planes", "plane-failure", "collective"};
        if (!scenarios.count(o_.scenario)) {
            std::cerr << "mroce fabric: unknown scenario '" << o_.scenario
                      << "' (loss, incast, permutation, anchors, planes, plane-failure, collective)\n";
            return false;
        }
        if (o_.op != "allreduce" && o_.op != "alltoall") {
            std::cerr << "mroce fabric: --op must be allreduce or alltoall, not '" << o_.op << "'\n";
            return false;
        }
        for (const std::string& a : o_.algos)
            if (a != "ring" && a != "hd") {
                std::cerr << "mroce fabric: --algos takes ring and hd, not '" << a << "'\n";
                return false;
            }
        if (!(o_.min_mib > 0 && o_.min_mib <= o_.max_mib)) {
            std::cerr << "mroce fabric: --min-mib must be positive and at most --max-mib\n";
            return false;
        }
        if (!(o_.load > 0 && o_.load <= 1)) {
            std::cerr << "mroce fabric: --load must be in (0, 1], not " << o_.load << "\n";
            return false;
        }
        if (o_.back_us != 0 && o_.back_us <= o_.fail_us) {
            std::cerr << "mroce fabric: --back-us must be after --fail-us (or 0: never)\n";
            return false;
        }
        base_.fabric.planes = o_.planes;
        // Scenarios about planes take more by default (--planes overrides); the config JSON shows the run's.
        if (o_.planes == 1 && o_.scenario == "collective") base_.fabric.planes = 8;
        if (o_.planes == 1 && o_.scenario == "plane-failure") base_.fabric.planes = 4;
        base_.fabric.rate_gbps = o_.rate_gbps;
        base_.fabric.link_delay_us = o_.delay_us;
        base_.fabric.hosts_per_leaf = o_.hosts_per_leaf;
        base_.fabric.queue_bytes = o_.queue_kb * 1024;
        base_.fabric.ecn.kmin_bytes = base_.fabric.ecn.kmax_bytes = o_.ecn_kb * 1024;
        base_.fabric.seed = o_.seed;
        if (o_.topology == "fat-tree")
            base_.fabric.topology = fabric::Topology::FatTree;
        else if (o_.topology == "leaf-spine")
            base_.fabric.topology = fabric::Topology::LeafSpine;
        else {
            std::cerr << "mroce fabric: --topology must be fat-tree or leaf-spine, not '" << o_.topology << "'\n";
            return false;
        }
        base_.bytes = o_.bytes ? o_.bytes : o_.scenario == "loss" ? 16000000 : 2000000;
        base_.mroce.offer.paths = uint16_t(o_.paths);
        base_.mroce.offer.window_cap = uint16_t(o_.window_cap);
        base_.mroce.rto_min_us = o_.rto_min_us;
        base_.mroce.capacity_fraction = o_.grant;
        base_.mroce.fs_interval_us = o_.fs_interval_us;
        base_.mroce.tx_ring_per_plane = o_.host_ring == "per-plane";
        base_.mroce.hint_ttl_us = o_.hint_ttl_us;
        base_.mroce.home_probe_us = o_.home_probe_us;
        base_.mroce.home_probe_max_us = std::max(o_.home_probe_max_us, o_.home_probe_us);
        base_.transports.clear();
        const std::map<std::string, Transport> names{{"mroce", Transport::Mroce},
                                                     {"rocev2-gbn", Transport::RoceGbn},
                                                     {"rocev2-pfc", Transport::RocePfc},
                                                     {"rocev2-gbn-nocc", Transport::RoceGbnNoCc},
                                                     {"rocev2-pfc-nocc", Transport::RocePfcNoCc},
                                                     {"mroce-model", Transport::MroceModel},
                                                     {"mroce-lockstep", Transport::MroceLockstep}};
        for (const auto& t :
             o_.transports.empty() ? std::vector<std::string>{"mroce", "rocev2-gbn", "rocev2-pfc"} : o_.transports) {
            auto it = names.find(t);
            if (it == names.end()) {
                std::cerr << "mroce fabric: unknown transport '" << t
                          << "' (mroce, rocev2-gbn, rocev2-pfc, rocev2-gbn-nocc, rocev2-pfc-nocc, mroce-model, "
                             "mroce-lockstep)\n";
                return false;
            }
            base_.transports.push_back(it->second);
        }
        for (double l : o_.loss_pct)
            if (!(l >= 0 && l <= 100)) {
                std::cerr << "mroce fabric: --loss must be in 0..100, not " << l << "\n";
                return false;
            }
        if (o_.out_dir.empty()) o_.out_dir = "mroce-fabric-" + o_.scenario;
        if (o_.plots && !make_output_dir(o_.out_dir)) {
            std::cerr << "mroce fabric: --out " << o_.out_dir << " is not a usable folder\n";
            return false;
        }
        base_.progress = [](const std::string& what, double sim_us, uint32_t done, uint32_t n) {
            std::cerr << "  " << what << ": " << done << "/" << n << " flows done, simulated " << fmt(sim_us, 0)
                      << " us\n";
        };
        return true;
    }

    json config_json() const {
        const auto& f = base_.fabric;
        // planes compares plane counts: each run's own count is in its row.
        const json planes = o_.scenario == "planes" ? json(plane_counts()) : json(f.planes);
        return json{{"topology", fabric::topology_name(f.topology)},
                    {"planes", planes},
                    {"rate_gbps", f.rate_gbps},
                    {"link_delay_us", f.link_delay_us},
                    {"queue_bytes", f.queue_bytes},
                    {"ecn_k_bytes", f.ecn.kmin_bytes},
                    {"seed", f.seed},
                    {"bytes_per_flow", base_.bytes},
                    {"mroce_paths", base_.mroce.offer.paths},
                    {"mroce_window_cap", base_.mroce.offer.window_cap},
                    {"mroce_host_ring", o_.host_ring},
                    {"mroce_rto_min_us", base_.mroce.rto_min_us},
                    {"mroce_home_probe_us", base_.mroce.home_probe_us},
                    {"mroce_home_probe_max_us", base_.mroce.home_probe_max_us},
                    {"payload", base_.mroce.offer.max_payload}};
    }

    // The plane counts the planes scenario compares (--plane-counts, default 4 and 8).
    std::vector<uint32_t> plane_counts() const {
        return o_.plane_counts.empty() ? std::vector<uint32_t>{4, 8} : o_.plane_counts;
    }

    // The loss of the incast and permutation scenarios: the first --loss value, or none.
    double single_loss() const { return o_.loss_pct.empty() ? 0.0 : o_.loss_pct.front() / 100; }

    // PFC frames cross lossy links like any frame, and a lost XON would pause a port for good: the
    // lossless transports run at 0% loss only.
    static bool lossless(Transport t) { return t == Transport::RocePfc || t == Transport::RocePfcNoCc; }
    std::vector<Transport> transports_at(double loss) const {
        std::vector<Transport> out;
        for (Transport t : base_.transports)
            if (loss == 0 || !lossless(t))
                out.push_back(t);
            else
                std::cerr << "mroce fabric: " << fabric::transport_name(t) << " skipped: PFC runs at 0% loss only\n";
        return out;
    }

    TransportRun run_one(Transport t, fabric::ScenarioOptions o, const std::vector<fabric::FlowSpec>& flows,
                         double loss, const std::string& label) {
        std::cerr << "mroce fabric: " << label << ", " << fabric::transport_name(t) << ", " << fmt(loss * 100, 1)
                  << "% loss, " << o.fabric.hosts << " hosts, " << flows.size() << " flows\n";
        TransportRun r = fabric::run_transport(t, o, flows, loss);
        const auto& res = r.result;
        std::cerr << "  done " << res.done() << "/" << flows.size()
                  << (res.all_verified() ? " verified" : " NOT ALL VERIFIED") << ", max FCT " << fmt(res.max_fct_us())
                  << " us, " << fmt(res.wall_s, 2) << " s wall, "
                  << fmt(double(res.events) / std::max(res.wall_s, 1e-9) / 1e6, 2) << " M events/s\n";
        return r;
    }

    void print_table(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& cells) {
        std::vector<size_t> w(head.size());
        for (size_t i = 0; i < head.size(); ++i) w[i] = head[i].size();
        for (const auto& c : cells)
            for (size_t i = 0; i < c.size(); ++i) w[i] = std::max(w[i], c[i].size());
        auto line = [&](const std::vector<std::string>& c) {
            for (size_t i = 0; i < c.size(); ++i) std::cout << (i ? "  " : "") << std::setw(int(w[i])) << c[i];
            std::cout << "\n";
        };
        line(head);
        for (const auto& c : cells) line(c);
    }

    void scenario_loss() {
        fabric::ScenarioOptions o = base_;
        o.fabric.hosts = o_.hosts ? o_.hosts : 16;
        o.deadline_us = (o_.deadline_ms > 0 ? o_.deadline_ms : 100) * 1000;
        // Ascending, from 0: each transport's kept ratio is against its own run at 0%.
        std::vector<double> losses = o_.loss_pct.empty() ? std::vector<double>{0, 0.1, 0.5, 1, 2, 5, 10} : o_.loss_pct;
        losses.push_back(0);
        std::sort(losses.begin(), losses.end());
        losses.erase(std::unique(losses.begin(), losses.end()), losses.end());
        const auto flows = fabric::permutation_flows(o.fabric.hosts, o.bytes, o.start_us, o_.seed);
        const double base_rtt = fabric::Fabric::max_rtt_us(o.fabric, o.mroce.offer.max_payload + 100);
        std::map<Transport, double> at_zero;
        std::vector<std::vector<std::string>> cells;
        for (Transport t : base_.transports) {
            for (double l : losses) {
                if (lossless(t) && l > 0) continue;  // PFC does not repair loss; it is deployed at 0%
                Row row{"loss", run_one(t, o, flows, l / 100, "loss sweep"), 0, 0, -1, base_rtt};
                row.goodput_gbps = goodput_by_deadline(row.run.result);
                if (l == 0) at_zero[t] = row.goodput_gbps;
                if (at_zero[t] > 0) row.kept = row.goodput_gbps / at_zero[t];
                const auto& r = row.run.result;
                cells.push_back({fabric::transport_name(t), fmt(l, 1), fmt(row.goodput_gbps, 0),
                                 row.kept < 0 ? "-" : fmt(row.kept, 3),
                                 std::to_string(r.done()) + "/" + std::to_string(r.flows.size()), fmt(r.max_fct_us()),
                                 std::to_string(r.fabric.link_losses), std::to_string(r.totals.retransmissions),
                                 std::to_string(r.totals.timeouts), std::to_string(r.fabric.queue_drops)});
                rows_.push_back(std::move(row));
            }
        }
        std::cout << "loss sweep: " << o.fabric.hosts << "-host " << fabric::topology_name(o.fabric.topology)
                  << " permutation, " << o.bytes
                  << " B per flow, loss on every link; kept = goodput / the same transport's at 0% "
                  << "(rocev2-pfc runs at 0% only)\n";
        print_table({"transport", "loss%", "Gb/s", "kept", "done", "max FCT us", "lost", "retx", "timeouts", "drops"},
                    cells);
        if (!o_.plots) return;
        std::ostringstream d;
        for (const Row& r : rows_)
            d << fabric::transport_name(r.run.transport) << " " << r.run.loss * 100 << " " << (r.kept < 0 ? 0 : r.kept)
              << "\n";
        std::string data;
        for (Transport t : {Transport::Mroce, Transport::RoceGbn}) {
            data += std::string("# ") + fabric::transport_name(t) + "\n";
            for (const Row& r : rows_)
                if (r.run.transport == t)
                    data += fmt(r.run.loss * 100, 2) + " " + fmt(r.kept < 0 ? 0 : r.kept, 4) + "\n";
            data += "\n\n";
        }
        add_plot("loss_kept", data,
                 "set title 'Goodput kept vs loss on every link (permutation)'\nset xlabel 'loss per link (%)'\n"
                 "set ylabel 'goodput / goodput at 0%'\nset logscale x\nset xrange [0.05:20]\nset yrange [0:1.2]\n"
                 "plot '" +
                     dat_path("loss_kept") +
                     "' index 0 using ($1>0?$1:0.05):2 with linespoints title 'mroce', '' index 1 "
                     "using ($1>0?$1:0.05):2 with linespoints title 'RoCEv2 go-back-N + DCQCN'\n");
    }

    void scenario_incast(const std::vector<uint32_t>& senders_list) {
        std::vector<std::vector<std::string>> cells;
        for (uint32_t n : senders_list) {
            fabric::ScenarioOptions o = base_;
            o.fabric.hosts = std::max(o_.hosts, n + 1);
            o.deadline_us = (o_.deadline_ms > 0 ? o_.deadline_ms : 1000) * 1000;
            const auto flows = fabric::incast_flows(n, o.bytes, o.start_us);
            const double base_rtt = fabric::Fabric::max_rtt_us(o.fabric, o.mroce.offer.max_payload + 100);
            for (Transport t : transports_at(single_loss())) {
                Row row{"incast", run_one(t, o, flows, single_loss(), std::to_string(n) + ":1 incast"), n, 0, -1,
                        base_rtt};
                row.run.ideal_fct_us = double(n) * double(o.bytes) * 8 / (o.fabric.rate_gbps * 1e3 * o.fabric.planes);
                fabric::compute_fairness(row.run);
                row.goodput_gbps = goodput_by_deadline(row.run.result);
                const auto& r = row.run.result;
                std::vector<double> fcts = done_fcts(r);
                const double jmean = fabric::mean_jain(row.run);
                const double fair = row.run.fair_at_us;
                cells.push_back({std::to_string(n), fabric::transport_name(t), fmt(fabric::percentile(fcts, 0)),
                                 fmt(fabric::percentile(fcts, 0.5)), fmt(fabric::percentile(fcts, 1)),
                                 fmt(row.run.ideal_fct_us), fmt(fabric::percentile(fcts, 1) / row.run.ideal_fct_us, 3),
                                 fmt(jmean, 3),
                                 fair < 0 ? "never" : fmt(fair, 0) + " (" + fmt(fair / base_rtt, 1) + " RTT)",
                                 fmt(double(r.watched_port.max_bytes) / 1024, 0), fmt(queue_mean_kb(r), 0),
                                 std::to_string(r.fabric.queue_drops), std::to_string(r.fabric.pause_frames),
                                 std::to_string(r.done()) + "/" + std::to_string(r.flows.size())});
                if (o_.plots) {
                    std::string data;
                    const double start = r.flows.empty() ? 0 : r.flows.front().spec.start_us;
                    for (size_t w = 0; w < row.run.jain.size(); ++w)
                        if (row.run.jain[w] >= 0)
                            data +=
                                fmt((double(w) + 0.5) * r.window_us - start, 0) + " " + fmt(row.run.jain[w], 4) + "\n";
                    const std::string name = "incast" + std::to_string(n) + "_" + fabric::transport_name(t) + "_jain";
                    add_plot(name, data,
                             "set title '" + std::to_string(n) + ":1 incast, " + fabric::transport_name(t) +
                                 ": Jain index per 100 us window'\nset xlabel 'time since the flows started (us)'\nset "
                                 "ylabel 'Jain "
                                 "index'\nset yrange [0:1.05]\n"
                                 "plot '" +
                                 dat_path(name) + "' using 1:2 with steps title 'Jain'\n");
                }
                rows_.push_back(std::move(row));
            }
        }
        std::cout
            << "incast: N senders to one host, " << base_.bytes
            << " B each, all starting 100 us after the connections are up; Jain per 100 us window over the flows "
               "active "
               "all through it; fair after = from the start to the end of the first window from which Jain >= 0.95 "
               "holds; queue = the receiver's ToR port\n";
        print_table({"N", "transport", "FCT min", "p50", "max", "ideal", "max/ideal", "Jain mean", "fair after us",
                     "q max KB", "q mean KB", "drops", "PFC frames", "done"},
                    cells);
    }

    void scenario_permutation(uint32_t hosts) {
        fabric::ScenarioOptions o = base_;
        o.fabric.hosts = hosts;
        o.deadline_us = (o_.deadline_ms > 0 ? o_.deadline_ms : 1000) * 1000;
        const auto flows = fabric::permutation_flows(hosts, o.bytes, o.start_us, o_.seed);
        std::vector<std::vector<std::string>> cells;
        for (Transport t : transports_at(single_loss())) {
            Row row{"permutation", run_one(t, o, flows, single_loss(), "permutation"), 0, 0, -1, 0};
            row.run.ideal_fct_us = double(o.bytes) * 8 / (o.fabric.rate_gbps * 1e3 * o.fabric.planes);
            const auto& r = row.run.result;
            const double max_fct = r.max_fct_us();
            row.goodput_gbps = max_fct > 0 ? double(r.done()) * double(o.bytes) * 8 / (max_fct * 1e3) : 0;
            std::vector<double> fcts = done_fcts(r);
            const double wall = std::max(r.wall_s, 1e-9);
            cells.push_back({fabric::transport_name(t), fmt(row.goodput_gbps / 1000, 2),
                             fmt(fabric::percentile(fcts, 0.5)), fmt(max_fct), fmt(row.run.ideal_fct_us),
                             std::to_string(r.done()) + "/" + std::to_string(r.flows.size()),
                             std::to_string(r.totals.retransmissions), std::to_string(r.fabric.queue_drops),
                             fmt(wall, 2), fmt(double(r.events) / wall / 1e6, 2), fmt(r.sim_end_us / wall, 0),
                             fmt(double(r.bytes_per_host) / 1024, 0), fmt(double(r.bytes_per_connection) / 1024, 1),
                             fmt(double(r.peak_rss_bytes) / 1e6, 0)});
            if (o_.plots) {
                std::sort(fcts.begin(), fcts.end());
                std::string data;
                for (size_t i = 0; i < fcts.size(); ++i)
                    data += fmt(fcts[i], 2) + " " + fmt(double(i + 1) / double(fcts.size()), 4) + "\n";
                const std::string name = std::string("permutation_") + fabric::transport_name(t) + "_fct";
                add_plot(name, data,
                         "set title '" + std::to_string(hosts) + "-host permutation, " + fabric::transport_name(t) +
                             ": FCT CDF'\nset xlabel 'FCT (us)'\nset ylabel 'fraction of flows'\nplot '" +
                             dat_path(name) + "' using 1:2 with steps title 'FCT'\n");
            }
            rows_.push_back(std::move(row));
        }
        std::cout << "permutation: " << hosts << " hosts, " << o.bytes
                  << " B per flow, all starting 100 us after the connections are up; aggregate = bits of all flows / "
                     "max FCT\n";
        print_table({"transport", "Tb/s", "FCT p50", "max", "ideal", "done", "retx", "drops", "wall s", "M ev/s",
                     "sim us/s", "KB/host", "KB/conn", "RSS MB"},
                    cells);
    }

    // Throughput against the number of planes: every host opens --per-host connections (hosts x
    // per-host in all, 4 096 by default) and sends one flow on each, at once, with 4 and with 8
    // planes. The aggregate is all bytes over the time to the last finish; the ratio between plane
    // counts is measured in this one run.
    void scenario_planes() {
        const std::vector<uint32_t> counts = plane_counts();
        std::vector<std::vector<std::string>> cells;
        std::map<std::string, std::map<uint32_t, double>> tbps;  // transport -> planes -> Tb/s
        for (uint32_t planes : counts) {
            fabric::ScenarioOptions o = base_;
            o.fabric.hosts = o_.hosts ? o_.hosts : 128;
            o.fabric.planes = planes;
            if (!o_.bytes) o.bytes = 1000000;
            o.deadline_us = (o_.deadline_ms > 0 ? o_.deadline_ms : 200) * 1000;
            o.window_us = 10;  // fine enough to see the ramp and the tail of a 300-900 us run
            o.watch_flow = o_.watch_flow;
            const auto flows = fabric::shifted_flows(o.fabric.hosts, o_.per_host, o.bytes, o.start_us);
            if (o_.watch_flow >= int64_t(flows.size()))
                throw std::invalid_argument("--watch-flow " + std::to_string(o_.watch_flow) + ": the run has " +
                                            std::to_string(flows.size()) + " flows (0 to " +
                                            std::to_string(flows.size() - 1) + ")");
            for (Transport t : transports_at(single_loss())) {
                Row row{"planes", run_one(t, o, flows, single_loss(), std::to_string(planes) + " planes"), 0, 0, -1, 0};
                const auto& r = row.run.result;
                // The time every host needs to send its per_host flows at the line rate of all its planes.
                row.run.ideal_fct_us = double(o_.per_host) * double(o.bytes) * 8 / (o.fabric.rate_gbps * 1e3 * planes);
                row.goodput_gbps = goodput_by_deadline(r);
                tbps[fabric::transport_name(t)][planes] = row.goodput_gbps / 1000;
                std::vector<double> fcts = done_fcts(r);
                const double wall = std::max(r.wall_s, 1e-9);
                cells.push_back({std::to_string(planes), fabric::transport_name(t), std::to_string(flows.size()),
                                 fmt(row.goodput_gbps / 1000, 2),
                                 fmt(double(o.fabric.hosts) * planes * o.fabric.rate_gbps / 1000, 1),
                                 fmt(fabric::percentile(fcts, 0.5)), fmt(fabric::percentile(fcts, 0.99)),
                                 fmt(fabric::percentile(fcts, 1)), fmt(row.run.ideal_fct_us),
                                 std::to_string(r.done()) + "/" + std::to_string(r.flows.size()), fmt(wall, 1),
                                 fmt(double(r.events) / wall / 1e6, 2), fmt(double(r.bytes_per_connection) / 1024, 1),
                                 fmt(double(r.peak_rss_bytes) / 1e6, 0)});
                planes_timeline(row, planes, double(o.fabric.hosts) * planes * o.fabric.rate_gbps);
                rows_.push_back(std::move(row));
            }
        }
        std::cout << "planes: " << (o_.hosts ? o_.hosts : 128) << " hosts, each sending to the next " << o_.per_host
                  << " (one connection and one flow of " << (o_.bytes ? o_.bytes : 1000000)
                  << " B each), all at once; Tb/s = all bytes / time to the last finish; line = hosts x planes x "
                     "rate; ideal = a host's bytes at the line rate of all its planes\n";
        print_table({"planes", "transport", "conns", "Tb/s", "line", "FCT p50", "p99", "max", "ideal", "done", "wall s",
                     "M ev/s", "KB/conn", "RSS MB"},
                    cells);
        for (const std::string& line : timeline_lines_) std::cout << line << "\n";
        if (counts.size() >= 2) {
            const uint32_t lo = counts.front(), hi = counts.back();
            for (const auto& [name, by] : tbps) {
                if (!by.count(lo) || !by.count(hi) || by.at(lo) <= 0) continue;
                const double ratio = by.at(hi) / by.at(lo);
                const auto& sustained = sustained_tbps_[name];
                const double sustained_ratio = sustained.count(lo) && sustained.count(hi) && sustained.at(lo) > 0
                                                   ? sustained.at(hi) / sustained.at(lo)
                                                   : 0;
                std::cout << name << ": " << hi << " planes / " << lo << " planes = " << fmt(ratio, 3)
                          << "x (all bytes to the last finish); sustained, from 10 to 90 % of the bytes: "
                          << fmt(sustained_ratio, 3) << "x\n";
                plane_ratios_[name] = ratio;
                plane_ratios_sustained_[name] = sustained_ratio;
            }
        }
    }

    // The planes run's timeline: when the flows finished, what the fabric carried meanwhile (all
    // flows, and the flow that finished last), as a line under the table, in the JSON and as a plot.
    // The aggregate is measured to the last finish, so the tail is what separates it from the line.
    void planes_timeline(Row& row, uint32_t planes, double line_gbps) {
        const auto t = fabric::flow_timeline(row.run.result);
        sustained_tbps_[fabric::transport_name(row.run.transport)][planes] = t.sustained_gbps / 1000;
        const auto since = [&](double us) { return us < 0 ? std::string("never") : fmt(us - t.first_start_us, 0); };
        timeline_lines_.push_back(
            "timeline, " + std::to_string(planes) + " planes, " + fabric::transport_name(row.run.transport) +
            ": flows done 50 / 90 / 99 / 100 % at " + since(t.done_us[0]) + " / " + since(t.done_us[1]) + " / " +
            since(t.done_us[2]) + " / " + since(t.done_us[3]) + " us after the start; best " +
            std::to_string(int(t.window_us)) + " us window " + fmt(100 * t.peak_gbps / line_gbps, 0) +
            " % of line; from 10 to 90 % of the bytes " + fmt(t.sustained_gbps / 1000, 2) + " Tb/s (" +
            fmt(100 * t.sustained_gbps / line_gbps, 0) + " % of line); from 90 % done to the end " +
            fmt(100 * t.tail_gbps / line_gbps, 0) + " % of line; slowest flow " + std::to_string(t.slowest) + " (" +
            std::to_string(row.run.result.flows[t.slowest].spec.src) + " -> " +
            std::to_string(row.run.result.flows[t.slowest].spec.dst) + ")");
        json windows = json::array();
        for (size_t w = 0; w < t.rx_gbps.size(); ++w)
            windows.push_back(
                {double(w) * t.window_us - t.first_start_us, t.rx_gbps[w], t.active[w], t.slowest_gbps[w]});
        const auto& slow = row.run.result.flows[t.slowest];
        json done = json::array();  // since the start (null: never)
        for (double us : t.done_us) done.push_back(us < 0 ? json(nullptr) : json(us - t.first_start_us));
        json fct = json::array();  // per flow in the flow list's order (null: not done)
        for (const auto& f : row.run.result.flows) fct.push_back(f.done ? json(f.fct_us()) : json(nullptr));
        row.timeline = json{{"window_us", t.window_us},
                            {"columns", {"start_us", "rx_gbps", "active_flows", "slowest_flow_gbps"}},
                            {"windows", windows},
                            {"done_50_90_99_100_us", done},
                            {"peak_gbps", t.peak_gbps},
                            {"tail_gbps", t.tail_gbps},
                            {"sustained_gbps", t.sustained_gbps},
                            {"slowest_flow",
                             {{"index", t.slowest},
                              {"src", slow.spec.src},
                              {"dst", slow.spec.dst},
                              {"fct_us", slow.done ? json(slow.fct_us()) : json(nullptr)}}},
                            {"flow_fct_us", fct}};
        const auto& watch = row.run.result.watch;
        if (!watch.empty()) {
            row.timeline["watch"] = watch_json(watch, t.first_start_us);
            row.timeline["watch"]["flow"] = o_.watch_flow;
        }
        if (!o_.plots) return;
        if (!watch.empty()) {
            std::string data;
            const size_t first_window = size_t(t.first_start_us / t.window_us);
            const auto& bins = row.run.result.bins[size_t(o_.watch_flow)];
            for (const auto& w : watch) {
                const size_t window = size_t(w.at_us / t.window_us);
                const double rx = window < bins.size() ? double(bins[window]) * 8 / (t.window_us * 1e3) : 0;
                if (window >= first_window)
                    data += fmt(w.at_us - t.first_start_us, 1) + " " + fmt(w.ceiling_mbps / 1000.0, 2) + " " +
                            fmt(w.share_mbps / 1000.0, 2) + " " + fmt(rx, 2) + " " + std::to_string(w.cwnd) + " " +
                            std::to_string(w.in_flight) + "\n";
            }
            const std::string name = "planes_" + std::to_string(planes) + "_" +
                                     fabric::transport_name(row.run.transport) + "_flow" +
                                     std::to_string(o_.watch_flow);
            add_plot(name, data,
                     "set title '" + std::to_string(planes) + " planes, flow " + std::to_string(o_.watch_flow) +
                         ": what limits it'\nset xlabel 'time since the flows started (us)'\nset ylabel "
                         "'Gb/s'\nset y2label 'packets'\nset ytics nomirror\nset y2tics\nset yrange [0:*]\n"
                         "set y2range [0:*]\nset key top right\nplot '" +
                         dat_path(name) +
                         "' using 1:2 with steps title 'sender: rate ceiling', '' using 1:3 with steps title "
                         "'receiver: share', '' using 1:4 with steps title 'received (next 10 us)', '' using 1:5 "
                         "axes x1y2 with steps title 'cwnd (all paths)', '' using 1:6 axes x1y2 with steps title "
                         "'in flight'\n");
        }
        std::string data;
        for (size_t w = 0; w < t.rx_gbps.size(); ++w)
            if ((double(w) + 1) * t.window_us > t.first_start_us)
                data += fmt((double(w) + 0.5) * t.window_us - t.first_start_us, 1) + " " +
                        fmt(100 * t.rx_gbps[w] / line_gbps, 2) + " " + std::to_string(t.active[w]) + " " +
                        fmt(100 * t.slowest_gbps[w] * double(o_.per_host) / (line_gbps / double(row.run.hosts)), 2) +
                        "\n";
        const std::string name =
            "planes_" + std::to_string(planes) + "_" + fabric::transport_name(row.run.transport) + "_timeline";
        add_plot(name, data,
                 "set title '" + std::to_string(planes) + " planes, " + fabric::transport_name(row.run.transport) +
                     ": delivered per " + fmt(t.window_us, 0) +
                     " us window'\nset xlabel 'time since the flows started (us)'\nset ylabel '% of line "
                     "rate'\nset y2label 'flows not done'\nset ytics nomirror\nset y2tics\nset yrange [0:*]\n"
                     "set y2range [0:*]\nset key bottom left\nplot '" +
                     dat_path(name) +
                     "' using 1:2 with steps title 'all flows (of hosts x planes x rate)', '' using 1:4 with steps "
                     "title 'the last flow to finish (of its fair share)', '' using 1:3 axes x1y2 with steps title "
                     "'flows not done'\n");
    }

    // A collective on every host (64 hosts, 8 planes by default), sizes doubling from --min-mib to
    // --max-mib, each transport at each --loss (default 0 and 1 %); the table is shaped like
    // nccl-tests' (size count type redop time algbw busbw), busbw also as a fraction of a host's line
    // rate (all planes). Every host's result is checked against the expected one.
    void scenario_collective() {
        fabric::ScenarioOptions o = base_;
        o.fabric.hosts = o_.hosts ? o_.hosts : 64;
        const uint32_t channels = o_.channels ? o_.channels : o.fabric.planes;
        o.mroce.offer.streams = uint16_t(std::min<uint32_t>(channels, 64));
        o.deadline_us = (o_.deadline_ms > 0 ? o_.deadline_ms : 2000) * 1000;
        o.start_us = 0;
        std::vector<fabric::CollectiveAlgo> algos;
        if (o_.op == "alltoall")
            algos = {fabric::CollectiveAlgo::AllToAll};
        else
            for (const std::string& a : o_.algos.empty() ? std::vector<std::string>{"ring", "hd"} : o_.algos)
                algos.push_back(a == "ring" ? fabric::CollectiveAlgo::RingAllReduce
                                            : fabric::CollectiveAlgo::HalvingDoublingAllReduce);
        const std::vector<double> losses = o_.loss_pct.empty() ? std::vector<double>{0, 1} : o_.loss_pct;
        const double link_gbytes = o.fabric.rate_gbps * o.fabric.planes / 8;  // a host's line rate, GB/s
        const uint64_t available = available_memory_bytes();
        std::vector<std::vector<std::string>> cells;
        std::string slowest_lines;  // per row, the timed iteration's slowest step (--watch-flow it)
        for (fabric::CollectiveAlgo algo : algos) {
            const uint64_t steps = fabric::Collective::step_count(algo, o.fabric.hosts, channels, 1 + o_.warmup);
            if (o_.watch_flow >= int64_t(steps))
                throw std::invalid_argument("--watch-flow " + std::to_string(o_.watch_flow) + ": " +
                                            fabric::collective_name(algo) + " has " + std::to_string(steps) +
                                            " steps (0 to " + std::to_string(steps - 1) + ")");
        }
        for (fabric::CollectiveAlgo algo : algos)
            for (double mib = o_.min_mib; mib <= o_.max_mib * 1.0001; mib *= 2) {
                const uint64_t unit = 4ull * o.fabric.hosts * channels;
                const uint64_t size = std::max<uint64_t>(unit, uint64_t(mib * 1048576) / unit * unit);
                const uint64_t need = fabric::Collective::memory_bytes(algo, o.fabric.hosts, size);
                // Beyond the buffers: the simulator's own state, up to an eighth of them (peak RSS of a
                // 64-host ring, /usr/bin/time -v: 1.11 x the buffers at 32 MiB, 1.08 x at 256 MiB), and
                // room for the rest of the machine.
                const uint64_t headroom = need / 8 + std::max<uint64_t>(1ull << 30, available / 20);
                if (available && need + headroom > available) {
                    std::cerr << "mroce fabric: " << fabric::collective_name(algo) << " " << size
                              << " B skipped: its buffers need " << fmt(double(need) / (1u << 30), 1)
                              << " GiB, this machine has " << fmt(double(available) / (1u << 30), 1)
                              << " GiB available\n";
                    cells.push_back({std::to_string(size), std::to_string(size / 4), "float",
                                     o_.op == "alltoall" ? "none" : "sum", fabric::collective_name(algo), "-", "-",
                                     "skipped: needs " + fmt(double(need) / (1u << 30), 1) + " GiB", "", "", "", "", "",
                                     ""});
                    continue;
                }
                for (double loss : losses)
                    for (Transport t : transports_at(loss / 100)) {
                        fabric::Collective coll(algo, o.fabric.hosts, size, channels, o_.seed, 1 + o_.warmup);
                        fabric::ScenarioOptions oc = o;
                        oc.data = &coll;
                        oc.watch_flow = o_.watch_flow;
                        if (o_.watch_flow >= 0) oc.window_us = 10;
                        Row row{"collective",
                                run_one(t, oc, coll.flows(), loss / 100,
                                        std::string(fabric::collective_name(algo)) + " " + std::to_string(size) + " B"),
                                0,
                                0,
                                -1,
                                0};
                        row.wrong_hosts = coll.check();
                        const auto& r = row.run.result;
                        const bool complete = r.done() == r.flows.size();
                        // The last iteration (nccl-tests time theirs after warm-up iterations), and the
                        // first (cold connections: windows at INIT_CWND, no rate hint yet).
                        const auto span = [&r](size_t from, size_t to) {
                            double first = 1e300, last = 0;
                            for (size_t f = from; f < to; ++f)
                                first = std::min(first, r.flows[f].spec.start_us),
                                last = std::max(last, r.flows[f].finish_us);
                            return last > first ? last - first : 0.0;
                        };
                        const size_t timed = coll.first_timed_flow();
                        const double time_us = span(timed, r.flows.size());
                        // The timed iteration's slowest step: rerun with --watch-flow on it to see why.
                        size_t slowest = timed;
                        for (size_t f = timed; f < r.flows.size(); ++f)
                            if (!r.flows[f].done ||
                                (r.flows[slowest].done && r.flows[f].fct_us() > r.flows[slowest].fct_us()))
                                slowest = f;
                        const double cold_us = o_.warmup ? span(0, timed ? timed : r.flows.size()) : time_us;
                        const double algbw = complete && time_us > 0 ? double(size) / (time_us * 1e3) : 0;  // GB/s
                        const double busbw = algbw * coll.bus_factor();
                        row.goodput_gbps = goodput_by_deadline(r);  // all steps' bytes, as other scenarios
                        cells.push_back({std::to_string(size), std::to_string(size / 4), "float",
                                         o_.op == "alltoall" ? "none" : "sum", fabric::collective_name(algo),
                                         fabric::transport_name(t), fmt(loss, 1),
                                         complete ? fmt(time_us, 1) : "unfinished", fmt(algbw, 2), fmt(busbw, 2),
                                         complete ? fmt(cold_us, 1) : "-", fmt(busbw / link_gbytes, 3),
                                         std::to_string(row.wrong_hosts), fmt(r.wall_s, 1)});
                        collective_.push_back({{"algorithm", fabric::collective_name(algo)},
                                               {"transport", fabric::transport_name(t)},
                                               {"loss_pct", loss},
                                               {"bytes", size},
                                               {"count", size / 4},
                                               {"time_us", complete ? json(time_us) : json(nullptr)},
                                               {"first_iteration_us", complete ? json(cold_us) : json(nullptr)},
                                               {"warmup", o_.warmup},
                                               {"algbw_gbytes", algbw},
                                               {"busbw_gbytes", busbw},
                                               {"busbw_of_line", busbw / link_gbytes},
                                               {"wrong_hosts", row.wrong_hosts},
                                               {"steps", r.flows.size()},
                                               {"retransmissions", r.totals.retransmissions},
                                               {"timeouts", r.totals.timeouts},
                                               {"wall_s", r.wall_s}});
                        if (slowest < r.flows.size()) {
                            const auto& f = r.flows[slowest];
                            collective_.back()["slowest_step"] = {
                                {"step", slowest},
                                {"src", f.spec.src},
                                {"dst", f.spec.dst},
                                {"bytes", f.spec.bytes},
                                {"start_us", f.spec.start_us},
                                {"fct_us", f.done ? json(f.fct_us()) : json(nullptr)}};
                            if (f.done && complete)
                                slowest_lines += "  " + std::string(fabric::collective_name(algo)) + " " +
                                                 std::to_string(size) + " B " + fabric::transport_name(t) + " " +
                                                 fmt(loss, 1) + " %: slowest step " + std::to_string(slowest) + " (" +
                                                 std::to_string(f.spec.src) + " -> " + std::to_string(f.spec.dst) +
                                                 ") " + fmt(f.fct_us(), 1) + " us\n";
                        }
                        if (!r.watch.empty()) {
                            collective_.back()["watch"] = watch_json(r.watch, 0);
                            collective_.back()["watch"]["step"] = o_.watch_flow;
                        }
                        rows_.push_back(std::move(row));
                    }
            }
        std::cout << "collective: " << o_.op << ", " << o.fabric.hosts << " hosts, " << o.fabric.planes << " planes of "
                  << o.fabric.rate_gbps << " Gb/s (line " << fmt(link_gbytes, 1) << " GB/s per host), " << channels
                  << " channels; time: the last of " << 1 + o_.warmup
                  << " iterations, which starts when every host is done with the ones before (a barrier, as "
                     "nccl-tests), from its first step's start to its last step's arrival (cold: the "
                     "first iteration, on fresh connections); algbw = size / time; busbw = algbw x "
                  << (o_.op == "alltoall" ? "(n-1)/n" : "2(n-1)/n") << " (nccl-tests); wrong = hosts whose result "
                  << "is not the expected one\n";
        print_table({"size", "count", "type", "redop", "algo", "transport", "loss%", "time us", "algbw GB/s",
                     "busbw GB/s", "cold us", "of line", "wrong", "wall s"},
                    cells);
        if (!slowest_lines.empty())
            std::cout << "the slowest step of each timed iteration (--watch-flow STEP samples its connection):\n"
                      << slowest_lines;
        if (!o_.plots) return;
        std::string data, plots;
        int index = 0;
        for (fabric::CollectiveAlgo algo : algos)
            for (double loss : losses)
                for (Transport t : transports_at(loss / 100)) {
                    data += std::string("# ") + fabric::collective_name(algo) + " " + fabric::transport_name(t) + " " +
                            fmt(loss, 1) + "%\n";
                    for (const json& c : collective_)
                        if (c["algorithm"] == fabric::collective_name(algo) &&
                            c["transport"] == fabric::transport_name(t) && c["loss_pct"] == loss)
                            data += fmt(double(c["bytes"].get<uint64_t>()) / 1048576, 3) + " " +
                                    fmt(c["busbw_gbytes"].get<double>(), 3) + "\n";
                    data += "\n\n";
                    plots += std::string(index ? ", " : "") + "'" + dat_path("collective_busbw") + "' index " +
                             std::to_string(index) + " with linespoints title '" + fabric::collective_name(algo) + " " +
                             fabric::transport_name(t) + " " + fmt(loss, 1) + "%'";
                    ++index;
                }
        add_plot("collective_busbw", data,
                 "set title 'Bus bandwidth, " + o_.op + " on " + std::to_string(o.fabric.hosts) +
                     " hosts'\nset xlabel 'size per host (MiB)'\nset ylabel 'busbw (GB/s)'\nset logscale x 2\n"
                     "set key top left\nset yrange [0:" +
                     fmt(link_gbytes * 1.6, 1) + "]\nplot " + plots + ", " + fmt(link_gbytes, 1) +
                     " with lines dashtype 2 title 'line rate'\n");
    }

    // MemAvailable of /proc/meminfo (bytes), or 0 when it cannot be read.
    static uint64_t available_memory_bytes() {
        std::ifstream meminfo("/proc/meminfo");
        std::string key;
        uint64_t kib = 0;
        std::string unit;
        while (meminfo >> key >> kib >> unit)
            if (key == "MemAvailable:") return kib * 1024;
        return 0;
    }

    // One plane of a multi-plane fabric goes dark while a permutation runs below the receivers' line
    // rate (--load: mroce's receivers grant that fraction [R-FS-1]), then comes back. Per plane: what
    // the hosts received and handed to their NICs, over time.
    void scenario_plane_failure() {
        fabric::ScenarioOptions o = base_;
        o.fabric.hosts = o_.hosts ? o_.hosts : 32;
        o.fabric.plane_window_us = 20;
        o.fabric.failures = {fabric::Failure{o_.fail_us, o_.back_us > 0 ? o_.back_us : -1, 0, -1}};
        o.mroce.capacity_fraction = o_.load;
        if (!o_.bytes) o.bytes = 80000000;
        o.deadline_us = (o_.deadline_ms > 0 ? o_.deadline_ms : 50) * 1000;
        const auto flows = fabric::permutation_flows(o.fabric.hosts, o.bytes, o.start_us, o_.seed);
        const double base_rtt = fabric::Fabric::max_rtt_us(o.fabric, o.mroce.offer.max_payload + 100);
        const double back = o_.back_us > 0 ? o_.back_us : 1e300;
        std::vector<std::vector<std::string>> cells;
        for (Transport t : transports_at(single_loss())) {
            if (lossless(t)) {
                std::cerr << "mroce fabric: " << fabric::transport_name(t)
                          << " skipped: PFC runs without failures (a lost XON pauses a port for good)\n";
                continue;
            }
            Row row{"plane-failure", run_one(t, o, flows, single_loss(), "plane failure"), 0, 0, -1, base_rtt};
            const auto& r = row.run.result;
            const auto f = fabric::plane_failure_figures(r, 0, o_.fail_us, back);
            row.goodput_gbps = f.during_gbps;
            auto us_rtt = [&](double us) {
                return us < 0 ? std::string("never") : fmt(us, 0) + " (" + fmt(us / base_rtt, 1) + " RTT)";
            };
            cells.push_back({fabric::transport_name(t), fmt(f.before_gbps, 0), fmt(f.during_gbps, 0),
                             us_rtt(f.moved_us), us_rtt(f.dead_tx_us), fmt(f.plane_before_gbps, 0),
                             o_.back_us > 0 ? fmt(f.plane_after_gbps, 0) : "-",
                             o_.back_us > 0 ? us_rtt(f.returned_us) : "-",
                             t == Transport::Mroce
                                 ? std::to_string(r.totals.repaths) + " / " + std::to_string(r.totals.home_returns)
                                 : "-",
                             std::to_string(r.done()) + "/" + std::to_string(r.flows.size()), fmt(r.max_fct_us(), 0)});
            plane_figures_.push_back({fabric::transport_name(t), f, base_rtt});
            if (o_.plots) {
                std::string data;
                size_t windows = 0;
                for (const auto& p : f.rx_gbps) windows = std::max(windows, p.size());
                for (size_t w = 0; w < windows; ++w) {
                    data += fmt((double(w) + 0.5) * f.window_us, 1);
                    for (const auto& p : f.rx_gbps) data += " " + fmt(w < p.size() ? p[w] : 0.0, 1);
                    data += "\n";
                }
                const std::string name = std::string("plane_failure_") + fabric::transport_name(t);
                std::string plot = "set title 'plane 0 fails at " + fmt(o_.fail_us, 0) + " us" +
                                   (o_.back_us > 0 ? ", back at " + fmt(o_.back_us, 0) + " us" : std::string()) + ", " +
                                   fabric::transport_name(t) +
                                   "'\nset xlabel 'simulated time (us)'\nset ylabel 'delivered (Gb/s)'\n"
                                   "set arrow from " +
                                   fmt(o_.fail_us, 0) + ", graph 0 to " + fmt(o_.fail_us, 0) +
                                   ", graph 1 nohead dt 2\n";
                if (o_.back_us > 0)
                    plot += "set arrow from " + fmt(o_.back_us, 0) + ", graph 0 to " + fmt(o_.back_us, 0) +
                            ", graph 1 nohead dt 2\n";
                plot += "plot ";
                for (size_t p = 0; p < f.rx_gbps.size(); ++p)
                    plot += std::string(p ? ", " : "") + "'" + dat_path(name) + "' using 1:" + std::to_string(p + 2) +
                            " with lines title 'plane " + std::to_string(p) + "'";
                add_plot(name, data, plot + "\n");
            }
            rows_.push_back(std::move(row));
        }
        std::cout << "plane failure: " << o.fabric.hosts << " hosts, " << o.fabric.planes << " planes, permutation of "
                  << o.bytes << " B flows, mroce receivers grant " << fmt(o_.load * 100, 0)
                  << "% of their line rate; plane 0 dark from " << fmt(o_.fail_us, 0) << " us"
                  << (o_.back_us > 0 ? " to " + fmt(o_.back_us, 0) + " us" : std::string(" on"))
                  << "; Gb/s = delivered to all hosts (20 us windows, until the first flow ends); moved = from the "
                     "failure until the total stays >= 95% of before; dead tx = last data handed to plane 0 after "
                     "the failure (home probes [R-PATH-10] aside); returned = from the return until plane 0 carries "
                     "half its share; re-paths / home returns = paths moved off a route on an RTO, and back to it "
                     "once a home probe was answered (all hosts)\n";
        print_table({"transport", "before Gb/s", "during", "moved after us", "dead tx until us", "plane0 before",
                     "after", "returned after us", "re-paths / home returns", "done", "max FCT"},
                    cells);
    }

    void scenario_anchors() {
        // The published setups: 3-tier fat tree, 100 Gb/s, 1 us per link, 2 MB flows from t=0.
        base_.fabric.topology = fabric::Topology::FatTree;
        base_.fabric.rate_gbps = 100;
        base_.fabric.link_delay_us = 1;
        base_.bytes = 2000000;
        if (o_.transports.empty())
            base_.transports.insert(base_.transports.end(), {Transport::RoceGbnNoCc, Transport::RocePfcNoCc});
        const size_t first = rows_.size();
        o_.hosts = 16;
        scenario_incast({15});
        const size_t mid = rows_.size();
        o_.hosts = 0;
        scenario_permutation(128);
        std::vector<std::vector<std::string>> cells;
        anchors_ = json::array();
        auto add = [&](const std::string& setup, const std::string& who, const std::string& metric, double theirs,
                       double ours) {
            cells.push_back({setup, who, metric, fmt(theirs, 2), ours < 0 ? "-" : fmt(ours, 2)});
            anchors_.push_back(
                json{{"setup", setup}, {"transport", who}, {"metric", metric}, {"anchor", theirs}, {"ours", ours}});
        };
        auto find = [&](size_t from, size_t to, Transport t) -> const Row* {
            for (size_t i = from; i < to; ++i)
                if (rows_[i].run.transport == t) return &rows_[i];
            return nullptr;
        };
        auto jain_mean = [](const Row* r) { return fabric::mean_jain(r->run); };
        if (const Row* r = find(first, mid, Transport::Mroce)) {
            add("16-host 15:1 incast", "UET NSCC+RCCC vs mroce", "max FCT us (ideal 2400)", 2462.9,
                r->run.result.max_fct_us());
            add("16-host 15:1 incast", "UET NSCC+RCCC vs mroce", "Jain", 0.993, jain_mean(r));
        }
        for (Transport t : {Transport::RocePfc, Transport::RocePfcNoCc})
            if (const Row* r = find(first, mid, t)) {
                const std::string who = std::string("RoCE+PFC vs ") + fabric::transport_name(t);
                add("16-host 15:1 incast", who, "max FCT us", 2451.3, r->run.result.max_fct_us());
                add("16-host 15:1 incast", who, "Jain (anchor 0.43-0.52)", 0.475, jain_mean(r));
            }
        if (const Row* r = find(mid, rows_.size(), Transport::Mroce)) {
            add("128-host permutation", "sprayed vs mroce", "aggregate Tb/s", 10.19, r->goodput_gbps / 1000);
            add("128-host permutation", "sprayed vs mroce", "max FCT us", 200.9, r->run.result.max_fct_us());
        }
        for (Transport t : {Transport::RoceGbn, Transport::RocePfc, Transport::RoceGbnNoCc, Transport::RocePfcNoCc})
            if (const Row* r = find(mid, rows_.size(), t)) {
                add("128-host permutation", std::string("RoCE on ECMP vs ") + fabric::transport_name(t),
                    "aggregate Tb/s", 2.49, r->goodput_gbps / 1000);
                add("128-host permutation", std::string("RoCE on ECMP vs ") + fabric::transport_name(t), "max FCT us",
                    821.6, r->run.result.max_fct_us());
            }
        std::cout << "anchors (htsim on the same setups) beside ours:\n";
        print_table({"setup", "anchor vs ours", "metric", "anchor", "ours"}, cells);
    }

    std::string dat_path(const std::string& name) const { return o_.out_dir + "/" + name + ".dat"; }
    void add_plot(const std::string& name, const std::string& data, const std::string& script) {
        const std::string png = plot(o_.out_dir, name, data, script);
        if (!png.empty()) plots_.push_back(png);
    }

    FabricCliOptions o_;
    const GlobalOptions& g_;
    fabric::ScenarioOptions base_;
    std::vector<Row> rows_;
    std::vector<std::string> plots_;
    struct PlaneFigures {
        std::string transport;
        fabric::PlaneFailureFigures f;
        double base_rtt_us;
    };
    std::vector<PlaneFigures> plane_figures_;
    std::map<std::string, double> plane_ratios_;            // planes: transport -> throughput ratio
    std::map<std::string, double> plane_ratios_sustained_;  // ... from 10 to 90 % of the bytes (FlowTimeline)
    std::map<std::string, std::map<uint32_t, double>> sustained_tbps_;  // transport -> planes -> Tb/s
    std::vector<std::string> timeline_lines_;                           // planes: one line per run under the table
    json collective_ = json::array();  // collective: one object per (algorithm, transport, loss, size)
    json anchors_;
};

}  // namespace

Runner add_fabric(CLI::App& app, const GlobalOptions& global) {
    auto* sub = app.add_subcommand("fabric", "Run the engine and RoCEv2 baselines in an ns-3 datacenter fabric");
    auto o = std::make_shared<FabricCliOptions>();
    sub->add_option("scenario", o->scenario,
                    "loss | incast | permutation | anchors | planes | plane-failure | collective")
        ->required();
    sub->add_option("--hosts", o->hosts, "Hosts (default: loss 16, permutation 128, incast N+1)");
    sub->add_option("--planes", o->planes, "Planes: one NIC port per plane per host")
        ->capture_default_str()
        ->check(CLI::Range(1u, 16u));
    sub->add_option("--rate", o->rate_gbps, "Link rate (Gb/s)")->capture_default_str()->check(CLI::PositiveNumber);
    sub->add_option("--delay-us", o->delay_us, "Link delay (us, one way)")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    sub->add_option("--topology", o->topology, "fat-tree | leaf-spine")->capture_default_str();
    sub->add_option("--hosts-per-leaf", o->hosts_per_leaf, "Leaf-spine: hosts per leaf (= spines)")
        ->capture_default_str()
        ->check(CLI::Range(1u, 4096u));
    sub->add_option("--loss", o->loss_pct, "Loss per link in % (loss: the sweep's points; default 0 0.1 0.5 1 2 5 10)")
        ->delimiter(',');
    sub->add_option("--senders", o->senders, "Incast sizes N (default 16,64,256)")
        ->delimiter(',')
        ->check(CLI::Range(1u, 100000u));
    sub->add_option("--bytes", o->bytes, "Bytes per flow (default: loss 16000000, others 2000000)")
        ->check(CLI::Range(uint64_t(1), uint64_t(1) << 31));
    sub->add_option("--seed", o->seed, "Seed (routes, loss, permutation)")->capture_default_str();
    sub->add_option("--plane-counts", o->plane_counts, "planes: the plane counts compared (default 4,8)")
        ->delimiter(',')
        ->check(CLI::Range(1u, 16u));
    sub->add_option("--per-host", o->per_host, "planes: connections each host opens")
        ->capture_default_str()
        ->check(CLI::Range(1u, 100000u));
    sub->add_option("--watch-flow", o->watch_flow,
                    "planes, collective: sample this flow's (a collective's step's) connection every 10 us (mroce: "
                    "ceiling, windows, the receiver's share, RTOs and retransmissions by cause); the timeline line "
                    "names the slowest flow, a collective the slowest step of each row")
        ->check(CLI::Range(int64_t(0), int64_t(100000000)));
    sub->add_option("--load", o->load, "plane-failure: mroce receivers grant this fraction of their line rate")
        ->capture_default_str();
    sub->add_option("--fail-us", o->fail_us, "plane-failure: plane 0 goes dark at this simulated time (us)")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    sub->add_option("--back-us", o->back_us, "plane-failure: and comes back at this time (us; 0: never)")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    sub->add_option("--op", o->op, "collective: allreduce | alltoall")->capture_default_str();
    sub->add_option("--algos", o->algos, "collective, allreduce: ring, hd (halving-doubling); default both")
        ->delimiter(',');
    sub->add_option("--min-mib", o->min_mib, "collective: the smallest size (MiB per host); sizes double")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    sub->add_option("--max-mib", o->max_mib, "collective: the largest size (MiB per host)")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    sub->add_option("--channels", o->channels, "collective: parallel rings / trees (default: one per plane)")
        ->check(CLI::Range(1u, 64u));
    sub->add_option("--warmup", o->warmup, "collective: untimed iterations before the timed one (nccl-tests' -w)")
        ->capture_default_str()
        ->check(CLI::Range(0u, 4u));
    sub->add_option("--grant", o->grant,
                    "mroce receivers share out this fraction of their line rate [R-FS-1] (plane-failure: --load)")
        ->capture_default_str()
        ->check(CLI::Range(0.001, 1000.0));
    sub->add_option("--fs-interval-us", o->fs_interval_us, "mroce FS_INTERVAL: how often receivers recompute shares")
        ->capture_default_str()
        ->check(CLI::Range(1u, 100000u));
    sub->add_option("--host-ring", o->host_ring,
                    "mroce hosts' transmit ring of 16 frames per plane, counted per plane (one ring per NIC "
                    "port) or over all planes (shared: a backlog on one plane holds every plane's new data)")
        ->capture_default_str()
        ->check(CLI::IsMember({"shared", "per-plane"}));
    sub->add_option("--hint-ttl-us", o->hint_ttl_us, "mroce HINT_TTL: how long a sender keeps a rate hint")
        ->capture_default_str()
        ->check(CLI::Range(1u, 1000000u));
    sub->add_option("--rto-min-us", o->rto_min_us, "mroce RTO_MIN (us) [R-RTO-3]")
        ->capture_default_str()
        ->check(CLI::Range(1u, 1000000u));
    sub->add_option("--home-probe-us", o->home_probe_us,
                    "mroce HOME_PROBE: first probe of a re-pathed path's home route (us) [R-PATH-10]")
        ->capture_default_str()
        ->check(CLI::Range(1u, 1000000u));
    sub->add_option("--home-probe-max-us", o->home_probe_max_us,
                    "mroce HOME_PROBE_MAX: the doubling probe interval's cap (us; = --home-probe-us: no backoff)")
        ->capture_default_str()
        ->check(CLI::Range(1u, 1000000u));
    sub->add_option("--window-cap", o->window_cap, "mroce Window Cap: the most packets in flight per path")
        ->capture_default_str()
        ->check(CLI::Range(1u, 256u));
    sub->add_option("--paths", o->paths, "mroce paths per connection")
        ->capture_default_str()
        ->check(CLI::Range(1u, 256u));
    sub->add_option("--queue-kb", o->queue_kb, "Switch port buffer (KiB, tail drop)")
        ->capture_default_str()
        ->check(CLI::Range(8u, 1u << 20));
    sub->add_option("--ecn-kb", o->ecn_kb, "mroce runs: ECN step threshold K (KiB); RoCE runs use DCQCN's RED setting")
        ->capture_default_str()
        ->check(CLI::Range(1u, 1u << 20));
    sub->add_option("--transports", o->transports,
                    "Any of mroce, rocev2-gbn, rocev2-pfc (DCQCN), rocev2-gbn-nocc, rocev2-pfc-nocc (no CC), "
                    "mroce-model (the executable model in every host), mroce-lockstep (model and engine compared "
                    "after every step; small runs); default the first three, anchors adds the no-CC pair")
        ->delimiter(',');
    sub->add_option("--deadline-ms", o->deadline_ms, "Simulated time limit per run (default: loss 100, others 1000)")
        ->check(CLI::PositiveNumber);
    sub->add_option("--out", o->out_dir, "Folder for the gnuplot PNGs and their data (default mroce-fabric-SCENARIO)");
    sub->add_flag("!--no-plots", o->plots, "Do not write plots");
    return [o, &global]() { return FabricCommand(*o, global).run(); };
}

}  // namespace mroce::cli
