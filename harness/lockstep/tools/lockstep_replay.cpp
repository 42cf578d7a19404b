// lockstep_replay [--canary] [--expect-divergence] FILE...: reruns each harness trace through the model
// and the engine in lockstep. Exit 0 when every file agrees (or, with --expect-divergence, when every
// file diverges: the canary regression, whose bug is planted with --canary).
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "lockstep/differential.hpp"

int main(int argc, char** argv) {
    mroce::lockstep::DiffOptions o;
    bool expect = false;
    int files = 0, bad = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--canary") {
            o.canary = mroce::lockstep::Canary::DropFirstRetx;
            continue;
        }
        if (a == "--expect-divergence") {
            expect = true;
            continue;
        }
        std::ifstream in(a);
        std::stringstream buf;
        buf << in.rdbuf();
        if (!in) {
            std::cerr << a << ": cannot read\n";
            return 2;
        }
        ++files;
        try {
            const auto r = mroce::lockstep::replay_trace_text(buf.str(), o);
            std::cout << a << ": " << (r.divergence ? r.divergence->text() : "in step") << " (" << r.stats.frames
                      << " frames compared)\n";
            if (r.divergence.has_value() != expect) ++bad;
        } catch (const std::exception& e) {
            std::cerr << a << ": " << e.what() << "\n";
            ++bad;
        }
    }
    if (files == 0) {
        std::cerr << "usage: lockstep_replay [--canary] [--expect-divergence] FILE...\n";
        return 2;
    }
    return bad ? 1 : 0;
}
