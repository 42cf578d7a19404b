#include "fabric/workload.hpp"

#include <algorithm>
#include <fstream>
#include <string>

namespace mroce::fabric {

uint32_t RunResult::done() const {
    return uint32_t(std::count_if(flows.begin(), flows.end(), [](const FlowOutcome& f) { return f.done; }));
}

bool RunResult::all_verified() const {
    return std::all_of(flows.begin(), flows.end(), [](const FlowOutcome& f) { return f.done && f.verified; });
}

double RunResult::max_fct_us() const {
    double m = 0;
    for (const FlowOutcome& f : flows)
        if (f.done) m = std::max(m, f.fct_us());
    return m;
}

double RunResult::goodput_gbps() const {
    double first = 1e300, last = 0, bytes = 0;
    for (const FlowOutcome& f : flows) {
        if (!f.done) continue;
        first = std::min(first, f.spec.start_us);
        last = std::max(last, f.finish_us);
        bytes += double(f.spec.bytes);
    }
    return last > first ? bytes * 8.0 / ((last - first) * 1e3) : 0.0;
}

uint64_t peak_rss_bytes() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
    return 0;
}

}  // namespace mroce::fabric
