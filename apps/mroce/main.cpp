// mroce: one binary, many subcommands. Misuse prints one line on stderr and exits 2.
#include <CLI/CLI.hpp>
#include <iostream>
#include <map>
#include <string>

#include "command.hpp"
#include "cmd_perf.hpp"
#include "cmd_diff.hpp"
#ifdef MROCE_HAVE_AGENT
#include "cmd_agent.hpp"
#endif

namespace {

// CLI11 reports errors in several lines at times; we want one line naming the cause.
std::string one_line(std::string s) {
    for (char& c : s) {
        if (c == '\n' || c == '\r') c = ' ';
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace mroce::cli;
    CLI::App app{"mroce: an open multipath RDMA transport for lossy Ethernet (MetaRoCE-style)", "mroce"};
    app.set_version_flag("--version", std::string("mroce ") + MROCE_VERSION);
    GlobalOptions global;
    if (argc > 0 && argv[0] && *argv[0]) global.program = argv[0];
    app.add_flag("--json", global.json, "End the output with one JSON object on the last line");
    app.require_subcommand(1);
    app.fallthrough();

    std::map<CLI::App*, Runner> runners;
    auto add = [&](Runner r) { runners[app.get_subcommands({}).back()] = std::move(r); };
    add(add_demo(app, global));
    add(add_perf(app, global));
    add(add_sim(app, global));
    add(add_replay(app, global));
    add(add_diff(app, global));
    add(add_conform(app, global));
    add(add_check(app, global));
#ifdef MROCE_HAVE_AGENT
    add(add_agent(app, global));
#endif
#ifdef MROCE_HAVE_FABRIC
    add(add_fabric(app, global));
#endif

    // Name an unknown subcommand outright instead of CLI11's generic complaint.
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg.starts_with("-")) continue;
        bool known = false;
        for (const auto* sub : app.get_subcommands({})) known = known || sub->check_name(arg);
        if (!known) {
            std::cerr << "mroce: unknown subcommand '" << arg << "' (try: mroce --help)\n";
            return kExitMisuse;
        }
        break;
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) { return app.exit(e); } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) { return app.exit(e); } catch (const CLI::ParseError& e) {
        std::cerr << "mroce: " << one_line(e.what()) << " (try: mroce --help)\n";
        return kExitMisuse;
    }
    for (auto* sub : app.get_subcommands()) {
        auto it = runners.find(sub);
        if (it != runners.end()) return it->second();
    }
    std::cerr << "mroce: no subcommand given (try: mroce --help)\n";
    return kExitMisuse;
}
