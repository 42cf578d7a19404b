// `mroce demo`: the README's main job on an embedded default. Two endpoints in this machine, joined
// back to back by two net_ring planes, move 1 GiB of mixed Writes and Sends over 4 paths and 4
// streams, first with no loss and then with 1% random loss from our impairment layer on every
// port's receive side; every byte is checked against the source pattern at the destination. Each
// run is a forked child (EAL starts once per process and each run has its own impairment).
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cmd_perf.hpp"
#include "command.hpp"

namespace mroce::cli {

Runner add_demo(CLI::App& app, const GlobalOptions& global) {
    auto* sub = app.add_subcommand("demo", "Run the end-to-end demo on an embedded default");
    struct Opts {
        uint64_t mib = 1024;
        double loss = 1.0;
        bool quiet = false;
    };
    auto o = std::make_shared<Opts>();
    sub->add_option("--mib", o->mib, "MiB to move per run")
        ->capture_default_str()
        ->check(CLI::Range(uint64_t(1), uint64_t(1) << 20));
    sub->add_option("--loss", o->loss, "Loss of the second run, percent")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 100.0));
    sub->add_flag("-q,--quiet", o->quiet, "No progress line");
    return [o, &global]() {
        using nlohmann::json;
        LoopbackParams p;
        p.op = PerfOp::Mixed;
        p.total_bytes = o->mib << 20;
        p.msg_size = 65536;
        p.paths = 4;
        p.streams = 4;
        p.planes = 2;
        p.progress = !o->quiet;
        std::cout << "mroce demo: " << o->mib << " MiB of Writes and Sends (64 KiB messages), 4 paths, 4 streams,\n"
                  << "two endpoints over 2 net_ring planes, every byte verified at the destination\n";
        std::cout.flush();
        p.label = "[0% loss]";
        json clean = run_loopback_forked(p);
        char loss_text[64];
        std::snprintf(loss_text, sizeof loss_text, "seed=7 loss_ppm=%u", unsigned(o->loss * 1e4));
        p.impair = loss_text;
        char label[32];
        std::snprintf(label, sizeof label, "[%g%% loss]", o->loss);
        p.label = label;
        json lossy = run_loopback_forked(p);
        // Spurious retransmissions as a share of the data packets sent: at 0% loss every
        // retransmission should be spurious-free, so this names what a stalled host costs.
        for (json* r : {&clean, &lossy}) {
            const uint64_t data = r->value("data_packets", 0ull);
            const uint64_t spurious = r->contains("retx_by_cause") ? (*r)["retx_by_cause"].value("spurious", 0ull) : 0;
            (*r)["spurious_percent_of_data"] = data ? 100.0 * double(spurious) / double(data) : 0.0;
        }
        auto show = [](const char* name, const json& r) {
            std::printf("%-9s goodput %7.3f Gb/s  %8.0f msg/s  %s  repaths %llu  home returns %llu\n", name,
                        r.value("goodput_gbps", 0.0), r.value("msgs_per_s", 0.0),
                        r.value("verified", false) ? "verified" : "NOT VERIFIED",
                        (unsigned long long)r.value("repaths", 0ull),
                        (unsigned long long)r.value("home_returns", 0ull));
            const json k = r.value("retx_by_cause", json::object());
            const auto n = [&k](const char* cause) { return (unsigned long long)k.value(cause, 0ull); };
            std::printf("          retransmissions %llu (gap %llu, rto %llu, probe %llu, rnr %llu",
                        (unsigned long long)r.value("retransmissions", 0ull), n("gap"), n("rto"), n("probe"), n("rnr"));
            if (n("nak")) std::printf(", nak %llu", n("nak"));
            std::printf("; spurious %llu = %.2f%% of data packets)\n", n("spurious"),
                        r.value("spurious_percent_of_data", 0.0));
            if (r.contains("paths"))
                for (const auto& q : r["paths"])
                    std::printf(
                        "          path %d %-7s packets %9llu  retx %7llu  repaths %3llu  home returns %3llu  srtt %5u "
                        "us\n",
                        q.value("path", 0), q.value("state", "?").c_str(), (unsigned long long)q.value("packets", 0ull),
                        (unsigned long long)q.value("retransmissions", 0ull),
                        (unsigned long long)q.value("repaths", 0ull), (unsigned long long)q.value("home_returns", 0ull),
                        q.value("srtt_us", 0u));
            if (r.contains("error")) std::printf("          error: %s\n", r["error"].get<std::string>().c_str());
        };
        show("0% loss", clean);
        char name[32];
        std::snprintf(name, sizeof name, "%g%% loss", o->loss);
        show(name, lossy);
        const double g0 = clean.value("goodput_gbps", 0.0), g1 = lossy.value("goodput_gbps", 0.0);
        const double retained = g0 > 0 ? g1 / g0 : 0.0;
        const bool ok = clean.value("verified", false) && lossy.value("verified", false);
        std::printf("retained goodput at %g%% loss: %.1f%%\n", o->loss, retained * 100);
        std::printf("%s\n", ok ? "every byte verified" : "VERIFICATION FAILED");
        std::fflush(stdout);
        if (global.json) {
            json j{{"command", "demo"},
                   {"verified", ok},
                   {"bytes_per_run", o->mib << 20},
                   {"loss_percent", o->loss},
                   {"goodput_gbps_0", g0},
                   {"goodput_gbps_loss", g1},
                   {"retained", retained},
                   {"retransmissions", lossy.value("retransmissions", 0ull)},
                   {"runs", {clean, lossy}}};
            std::cout << j.dump() << "\n";
        }
        return ok ? kExitOk : kExitFailed;
    };
}

}  // namespace mroce::cli
