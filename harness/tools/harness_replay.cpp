// harness_replay: rerun a trace written by the harness and say whether it reproduces.
//
//   harness_replay [--print] TRACE_FILE      ("-" reads standard input)
//
// Prints whether the rerun's events equal the recorded ones and the verdict of the trace's checks;
// --print also writes the rerun's full trace. Exit status: 0 reproduced and no violation,
// 1 otherwise, 2 misuse or unreadable trace. (`mroce replay` offers the same through the CLI.)
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "netsim/trace.hpp"

int main(int argc, char** argv) {
    using namespace mroce::harness;
    bool print = false;
    std::string path;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--print")
            print = true;
        else if (a == "--help" || a == "-h") {
            std::cout << "usage: harness_replay [--print] TRACE_FILE|-\n";
            return 0;
        } else if (path.empty())
            path = a;
        else {
            std::cerr << "harness_replay: one trace file expected\n";
            return 2;
        }
    }
    if (path.empty()) {
        std::cerr << "usage: harness_replay [--print] TRACE_FILE|-\n";
        return 2;
    }
    std::stringstream buf;
    if (path == "-") {
        buf << std::cin.rdbuf();
    } else {
        std::ifstream in(path);
        if (!in) {
            std::cerr << "harness_replay: cannot read " << path << "\n";
            return 2;
        }
        buf << in.rdbuf();
    }
    try {
        const std::string text = buf.str();
        const auto parsed = parse_trace(text);
        const auto rr = replay(text);
        if (print)
            std::cout << to_trace(parsed.scenario, parsed.mode, rr.result, rr.violations, parsed.canonical_packets);
        if (parsed.lines.empty())
            std::cout << "reproduced: (no recorded events to compare)\n";
        else if (rr.reproduced)
            std::cout << "reproduced: yes (" << parsed.lines.size() << " events)\n";
        else
            std::cout << "reproduced: NO, first difference at event " << rr.first_diff
                      << "\n  recorded: " << rr.recorded_line << "\n  replayed: " << rr.replayed_line << "\n";
        if (rr.violations.empty())
            std::cout << "verdict: pass\n";
        else
            std::cout << "verdict: fail\n" << format_violations(rr.violations);
        return rr.reproduced && rr.violations.empty() ? 0 : 1;
    } catch (const TraceError& e) {
        std::cerr << "harness_replay: " << e.what() << "\n";
        return 2;
    }
}
