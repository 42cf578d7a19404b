// Table, JUnit XML and JSON matrix of a conformance run.
#include "conform/report.hpp"

#include <fnmatch.h>

#include <fstream>
#include <map>
#include <set>

namespace mroce::conform {

namespace {

std::string xml(const std::string& s) {
    std::string o;
    for (char c : s) {
        switch (c) {
            case '&':
                o += "&amp;";
                break;
            case '<':
                o += "&lt;";
                break;
            case '>':
                o += "&gt;";
                break;
            case '"':
                o += "&quot;";
                break;
            default:
                o += (static_cast<unsigned char>(c) < 0x20 && c != '\n') ? ' ' : c;
        }
    }
    return o;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
    return s;
}

}  // namespace

nlohmann::json violation_json(const monitor::Violation& v) {
    return {{"rule", v.rule}, {"frame", v.frame},     {"line", v.line},
            {"what", v.what}, {"because", v.because}, {"endpoint", v.endpoint}};
}

bool selected(const TestResult& t, const std::string& glob) {
    if (fnmatch(glob.c_str(), t.id.c_str(), 0) == 0) return true;
    for (const auto& r : t.requires_)
        if (fnmatch(glob.c_str(), r.c_str(), 0) == 0) return true;
    return false;
}

void print_table(std::ostream& out, const std::vector<TestResult>& results) {
    for (const auto& r : results) {
        char head[160];
        std::snprintf(head, sizeof head, "%-11s %-34s %s", outcome_name(r.outcome), r.id.c_str(),
                      join(r.requires_, ",").c_str());
        out << head << "\n";
        for (const auto& m : r.messages) out << "            " << m << "\n";
        for (const auto& v : r.violations) {
            out << "            [" << v.rule << "] frame " << v.frame << ": " << v.what << "\n";
            out << "              " << v.line << "\n";
            if (!v.because.empty()) {
                out << "              state from frames";
                for (auto f : v.because) out << " " << f;
                out << "\n";
            }
        }
    }
}

void write_junit(const std::string& path, const std::vector<TestResult>& results, const std::string& dut) {
    std::ofstream o(path);
    size_t failures = 0, errors = 0, skipped = 0;
    for (const auto& r : results) {
        failures += r.outcome == Outcome::Fail || r.outcome == Outcome::Timing;
        errors += r.outcome == Outcome::Error;
        skipped += r.outcome == Outcome::Unsupported;
    }
    o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    o << "<testsuite name=\"mroce-conformance\" tests=\"" << results.size() << "\" failures=\"" << failures
      << "\" errors=\"" << errors << "\" skipped=\"" << skipped << "\">\n";
    o << "  <properties><property name=\"dut\" value=\"" << xml(dut) << "\"/></properties>\n";
    for (const auto& r : results) {
        o << "  <testcase name=\"" << xml(r.id) << "\" classname=\""
          << xml(r.requires_.empty() ? "R-?" : r.requires_[0]) << "\" time=\"" << double(r.duration_us) / 1e6
          << "\">\n";
        o << "    <properties><property name=\"requirements\" value=\"" << xml(join(r.requires_, " "))
          << "\"/></properties>\n";
        std::string text;
        for (const auto& m : r.messages) text += m + "\n";
        for (const auto& v : r.violations)
            text += "[" + v.rule + "] frame " + std::to_string(v.frame) + ": " + v.what + "\n  " + v.line + "\n";
        if (r.outcome == Outcome::Fail || r.outcome == Outcome::Timing)
            o << "    <failure message=\""
              << xml(r.messages.empty()
                         ? (r.violations.empty() ? "failed" : "[" + r.violations[0].rule + "] " + r.violations[0].what)
                         : r.messages[0])
              << "\" type=\"" << outcome_name(r.outcome) << "\">" << xml(text) << "</failure>\n";
        else if (r.outcome == Outcome::Error)
            o << "    <error message=\"" << xml(r.messages.empty() ? "error" : r.messages[0]) << "\">" << xml(text)
              << "</error>\n";
        else if (r.outcome == Outcome::Unsupported)
            o << "    <skipped message=\"" << xml(r.messages.empty() ? "unsupported" : r.messages[0]) << "\"/>\n";
        if (!r.pcap.empty())
            o << "    <system-out>pcap " << xml(r.pcap) << "\ntrace " << xml(r.trace) << "</system-out>\n";
        o << "  </testcase>\n";
    }
    o << "</testsuite>\n";
    if (!o) throw std::runtime_error(path + ": cannot write");
}

nlohmann::json matrix(const std::vector<TestResult>& results, const std::string& dut) {
    nlohmann::json tests = nlohmann::json::array();
    std::map<std::string, nlohmann::json> reqs;
    std::map<std::string, monitor::RuleTally> tallies;
    std::map<std::string, int> counts;
    for (const auto& r : results) {
        ++counts[outcome_name(r.outcome)];
        nlohmann::json vs = nlohmann::json::array();
        for (const auto& v : r.violations) vs.push_back(violation_json(v));
        tests.push_back({{"id", r.id},
                         {"title", r.title},
                         {"script", r.path},
                         {"requires", r.requires_},
                         {"outcome", outcome_name(r.outcome)},
                         {"messages", r.messages},
                         {"violations", vs},
                         {"choices", r.choices},
                         {"frames", r.frames},
                         {"pcap", r.pcap},
                         {"trace", r.trace}});
        for (const auto& q : r.requires_) {
            auto& e = reqs[q];
            if (e.is_null()) e = {{"tests", nlohmann::json::array()}, {"outcome", "pass"}};
            e["tests"].push_back({{"id", r.id}, {"outcome", outcome_name(r.outcome)}});
        }
        for (const auto& [rule, t] : r.tally) {
            auto& a = tallies[rule];
            a.checked += t.checked;
            a.violated += t.violated;
            a.indeterminate += t.indeterminate;
        }
    }
    // A requirement fails when any of its tests fails or any violation names it.
    for (auto& [q, e] : reqs) {
        std::string worst = "pass";
        for (const auto& t : e["tests"]) {
            const std::string o = t["outcome"];
            if (o == "fail" || o == "error")
                worst = "fail";
            else if (o == "timing" && worst == "pass")
                worst = "timing";
            else if (o == "unsupported" && worst == "pass" && e["tests"].size() == 1)
                worst = "unsupported";
        }
        e["outcome"] = worst;
    }
    for (const auto& [rule, t] : tallies) {
        auto& e = reqs[rule];
        if (e.is_null()) e = {{"tests", nlohmann::json::array()}, {"outcome", t.violated ? "fail" : "pass"}};
        if (t.violated) e["outcome"] = "fail";
        e["monitor"] = {{"checked", t.checked}, {"violated", t.violated}, {"indeterminate", t.indeterminate}};
    }
    return {{"dut", dut}, {"summary", counts}, {"requirements", reqs}, {"tests", tests}};
}

}  // namespace mroce::conform
