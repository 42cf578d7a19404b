#include "netsim/trace.hpp"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <sstream>

namespace mroce::harness {
namespace {

// Every field of model::Config, by the name used in traces. The canary knob of the model is
// included when the model has it (it is a test-only field that may not exist). A field added after
// traces were first kept is also listed in optional_config_field().
template <class C, class F>
void for_each_config_field(C& c, F&& f) {
    f("udp_port", c.udp_port);
    f("dscp_data", c.dscp_data);
    f("dscp_control", c.dscp_control);
    f("capacity_mbps", c.capacity_mbps);
    f("listening", c.listening);
    f("first_conn_id", c.first_conn_id);
    f("isn", c.isn);
    f("path_count", c.path_count);
    f("stream_count", c.stream_count);
    f("max_payload", c.max_payload);
    f("window_cap", c.window_cap);
    f("ack_every", c.ack_every);
    f("ack_delay_us", c.ack_delay_us);
    f("rto_init_us", c.rto_init_us);
    f("rto_min_us", c.rto_min_us);
    f("rto_max_us", c.rto_max_us);
    f("pto_min_us", c.pto_min_us);
    f("home_probe_us", c.home_probe_us);          // [R-PATH-10]
    f("home_probe_max_us", c.home_probe_max_us);  // [R-PATH-10]
    f("fs_interval_us", c.fs_interval_us);
    f("hint_ttl_us", c.hint_ttl_us);
    f("peer_timeout_us", c.peer_timeout_us);
    f("keepalive_us", c.keepalive_us);
    f("connect_retry_us", c.connect_retry_us);
    f("connect_tries", c.connect_tries);
    f("rnr_default_us", c.rnr_default_us);
    f("rnr_retry_max", c.rnr_retry_max);
    f("rnr_detail", c.rnr_detail);
    f("recv_max", c.recv_max);
    if constexpr (requires { c.canary_skip_one_retransmission; })
        f("canary_skip_one_retransmission", c.canary_skip_one_retransmission);
}

// Config fields that traces recorded before them lack: such a trace has model::Config's default,
// the spec's value (HOME_PROBE / HOME_PROBE_MAX, A-39), which is what recorded it.
bool optional_config_field(std::string_view name) { return name == "home_probe_us" || name == "home_probe_max_us"; }

std::string hexs(uint64_t v) {
    char b[24];
    std::snprintf(b, sizeof b, "0x%llx", (unsigned long long)v);
    return b;
}

template <class T>
std::string num(const T& v) {
    if constexpr (std::is_same_v<T, bool>)
        return v ? "1" : "0";
    else
        return std::to_string(+v);
}

std::string time_str(model::Time t) { return t == kNever ? "never" : std::to_string(t); }

std::string address_str(const model::Address& a) {
    std::string s = "mac=";
    char b[8];
    for (size_t i = 0; i < 6; ++i) {
        std::snprintf(b, sizeof b, i ? ":%02x" : "%02x", a.mac[i]);
        s += b;
    }
    s += " ipv6=" + num(a.ipv6) + " ip=";
    for (uint8_t x : a.ip) {
        std::snprintf(b, sizeof b, "%02x", x);
        s += b;
    }
    return s;
}

// ---- parsing helpers ---------------------------------------------------------------------------

struct Fields {
    std::map<std::string, std::string, std::less<>> kv;
    std::vector<std::string> words;  // tokens without '='
    size_t line = 0;

    [[noreturn]] void fail(const std::string& what) const {
        throw TraceError("trace line " + std::to_string(line) + ": " + what);
    }
    const std::string& get(std::string_view key) const {
        const auto it = kv.find(key);
        if (it == kv.end()) fail("missing field " + std::string(key));
        return it->second;
    }
    bool has(std::string_view key) const { return kv.count(key) != 0; }
    uint64_t u64(std::string_view key) const { return parse_u64(get(key), key); }
    uint64_t parse_u64(const std::string& v, std::string_view key) const {
        uint64_t x = 0;
        const char* b = v.data();
        const char* e = v.data() + v.size();
        int base = 10;
        if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
            b += 2;
            base = 16;
        }
        auto r = std::from_chars(b, e, x, base);
        if (r.ec != std::errc() || r.ptr != e) fail("bad number for " + std::string(key) + ": " + v);
        return x;
    }
    model::Time time(std::string_view key) const {
        const auto& v = get(key);
        return v == "never" ? kNever : parse_u64(v, key);
    }
    template <class T>
    void into(std::string_view key, T& out) const {
        const uint64_t x = u64(key);
        if constexpr (std::is_same_v<T, bool>) {
            if (x > 1) fail("bad flag " + std::string(key));
            out = x == 1;
        } else {
            if (x > uint64_t(std::numeric_limits<T>::max())) fail("value out of range for " + std::string(key));
            out = T(x);
        }
    }
};

Fields split(std::string_view text, size_t line_no, size_t skip_words) {
    Fields f;
    f.line = line_no;
    std::istringstream in{std::string(text)};
    std::string tok;
    size_t n = 0;
    while (in >> tok) {
        if (n++ < skip_words) continue;
        const auto eq = tok.find('=');
        if (eq == std::string::npos)
            f.words.push_back(tok);
        else
            f.kv[tok.substr(0, eq)] = tok.substr(eq + 1);
    }
    return f;
}

model::Address parse_address(const Fields& f) {
    model::Address a;
    const auto& mac = f.get("mac");
    unsigned m[6];
    if (std::sscanf(mac.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6)
        f.fail("bad mac");
    for (size_t i = 0; i < 6; ++i) a.mac[i] = uint8_t(m[i]);
    f.into("ipv6", a.ipv6);
    const auto& ip = f.get("ip");
    if (ip.size() != 32) f.fail("ip must be 32 hex digits");
    for (size_t i = 0; i < 16; ++i) a.ip[i] = uint8_t(std::stoul(ip.substr(i * 2, 2), nullptr, 16));
    return a;
}

}  // namespace

std::string_view check_mode_name(CheckMode m) {
    switch (m) {
        case CheckMode::Standard:
            return "Standard";
        case CheckMode::DeadNetwork:
            return "DeadNetwork";
        case CheckMode::None:
            return "None";
        case CheckMode::MayFail:
            return "MayFail";
    }
    return "UNKNOWN";
}

std::vector<Violation> check_scenario(const Scenario& s, const RunResult& r, CheckMode mode) {
    switch (mode) {
        case CheckMode::Standard:
            return check_all(s, r);
        case CheckMode::DeadNetwork: {
            std::vector<Violation> v = r.violations;
            const auto e = expect(s);
            for (const auto& u : e.unsupported) v.push_back({"unsupported_workload", 0, u});
            const auto add = [&](std::vector<Violation> more) { v.insert(v.end(), more.begin(), more.end()); };
            add(check_exactly_once(s, e, r, Tolerance{true, {}}));
            add(check_memory(s, e, r, Tolerance{true, {}}));
            add(check_stream_order(s, r));
            add(check_dead_network(s, r));
            return v;
        }
        case CheckMode::None:
            return r.violations;
        case CheckMode::MayFail: {
            if (check_connections(s, r).empty()) return check_all(s, r);
            std::vector<Violation> v = r.violations;
            const auto e = expect(s);
            for (const auto& u : e.unsupported) v.push_back({"unsupported_workload", 0, u});
            const auto add = [&](std::vector<Violation> more) { v.insert(v.end(), more.begin(), more.end()); };
            const Tolerance t = tolerance_for_failed_connections(s, r);
            add(check_exactly_once(s, e, r, t));
            add(check_memory(s, e, r, t));
            add(check_stream_order(s, r));
            add(check_clean_failure(s, r));
            return v;
        }
    }
    return {};
}

std::string scenario_text(const Scenario& s, CheckMode mode) {
    std::ostringstream o;
    o << "mroce-trace 1\n";
    o << "seed " << s.seed << "\n";
    o << "check " << check_mode_name(mode) << "\n";
    for (Side side : {Side::A, Side::B}) {
        const auto& c = s.config[size_t(side)];
        o << "config " << side_char(side) << " " << address_str(c.self);
        for_each_config_field(c, [&](const char* name, const auto& v) { o << " " << name << "=" << num(v); });
        o << "\n";
    }
    if (s.connections != 1) o << "connections count=" << s.connections << "\n";
    o << "net base_delay_us=" << s.net.base_delay_us << " links=" << s.net.links
      << " faults_until=" << time_str(s.net.faults_until) << " protect_handshake=" << num(s.net.protect_handshake);
    if (s.net.dead_links > 0) o << " dead_links=" << s.net.dead_links << " dead_from=" << s.net.dead_from;
    o << "\n";
    o << "limits time_limit=" << time_str(s.limits.time_limit) << " max_events=" << s.limits.max_events
      << " linger_us=" << s.limits.linger_us << " until_conn_down=" << num(s.limits.until_conn_down) << "\n";
    const auto& L = s.workload.layout;
    o << "layout base_a=" << hexs(L.base[0]) << " base_b=" << hexs(L.base[1]) << " region_size=" << L.region_size
      << " guard_size=" << L.guard_size << "\n";
    o << "fates count=" << s.schedule.fates.size() << "\n";
    for (size_t k = 0; k < s.schedule.fates.size(); ++k) {
        const auto& f = s.schedule.fates[k];
        if (f.kind == PacketFate::Deliver && f == PacketFate{}) continue;
        o << "fate " << k << " " << fate_name(f.kind);
        if (f.extra_delay_us) o << " delay=" << f.extra_delay_us;
        if (f.corrupt_offset) o << " off=" << f.corrupt_offset;
        if (f.corrupt_xor) o << " xor=" << hexs(f.corrupt_xor);
        o << "\n";
    }
    for (const auto& le : s.schedule.link_events)
        o << "link at=" << le.at << " dir=" << link_dir_name(le.dir) << " link=" << le.link
          << " state=" << (le.up ? "up" : "down") << "\n";
    for (const auto& op : s.workload.ops)
        o << "op at=" << op.at << " side=" << side_char(op.side) << " kind=" << op_kind_name(op.kind)
          << " stream=" << op.stream << " len=" << op.length << " local=" << hexs(op.local_off)
          << " remote=" << hexs(op.remote_off) << " key=" << key_choice_name(op.key) << " imm=" << hexs(op.imm)
          << (op.conn ? " conn=" + std::to_string(op.conn) : std::string()) << (op.after_void ? " after=void" : "")
          << "\n";
    return o.str();
}

std::string to_trace(const Scenario& s, CheckMode mode, const RunResult& r, const std::vector<Violation>& violations,
                     bool canonical_packets) {
    std::string t = scenario_text(s, mode);
    if (canonical_packets) t += "packets canonical\n";
    t += "events\n";
    for (const auto& l : r.lines) {
        t += l;
        t += '\n';
    }
    t += "end\n";
    if (violations.empty())
        t += "verdict pass\n";
    else
        t += "verdict fail " + std::to_string(violations.size()) + "\n" + format_violations(violations, SIZE_MAX);
    return t;
}

ParsedTrace parse_trace(std::string_view text) {
    ParsedTrace p;
    p.scenario = Scenario{};
    bool in_events = false, header = false;
    size_t fates_count = 0;
    std::vector<std::pair<size_t, PacketFate>> fates;
    size_t line_no = 0;
    size_t pos = 0;
    while (pos <= text.size()) {
        size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(pos, end - pos);
        pos = end + 1;
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (in_events) {
            if (line == "end")
                in_events = false;
            else
                p.lines.emplace_back(line);
            continue;
        }
        if (line.empty() || line[0] == '#') continue;
        const auto sp = line.find(' ');
        const std::string_view word = line.substr(0, sp);
        if (!header) {
            if (line != "mroce-trace 1")
                throw TraceError("trace line " + std::to_string(line_no) + ": expected 'mroce-trace 1'");
            header = true;
            continue;
        }
        if (word == "events") {
            in_events = true;
        } else if (word == "packets") {
            const auto m = line.substr(sp + 1);
            if (m != "canonical" && m != "compact")
                throw TraceError("trace line " + std::to_string(line_no) + ": packets canonical|compact");
            p.canonical_packets = m == "canonical";
        } else if (word == "seed") {
            p.scenario.seed = split(line, line_no, 0).parse_u64(std::string(line.substr(sp + 1)), "seed");
        } else if (word == "check") {
            const auto m = line.substr(sp + 1);
            if (m == "Standard")
                p.mode = CheckMode::Standard;
            else if (m == "DeadNetwork")
                p.mode = CheckMode::DeadNetwork;
            else if (m == "None")
                p.mode = CheckMode::None;
            else if (m == "MayFail")
                p.mode = CheckMode::MayFail;
            else
                throw TraceError("trace line " + std::to_string(line_no) + ": unknown check mode");
        } else if (word == "config") {
            const Fields f = split(line, line_no, 1);
            if (f.words.size() != 1 || (f.words[0] != "A" && f.words[0] != "B")) f.fail("config needs side A or B");
            auto& c = p.scenario.config[f.words[0] == "A" ? 0 : 1];
            c.self = parse_address(f);
            size_t known = 3;  // mac, ipv6, ip
            for_each_config_field(c, [&](const char* name, auto& v) {
                if (!f.has(name) && optional_config_field(name)) return;
                f.into(name, v);
                ++known;
            });
            if (f.kv.size() != known) f.fail("unknown config field");
        } else if (word == "connections") {
            const Fields f = split(line, line_no, 1);
            f.into("count", p.scenario.connections);
            if (p.scenario.connections == 0) f.fail("connections count must be at least 1");
        } else if (word == "net") {
            const Fields f = split(line, line_no, 1);
            f.into("base_delay_us", p.scenario.net.base_delay_us);
            f.into("links", p.scenario.net.links);
            p.scenario.net.faults_until = f.time("faults_until");
            f.into("protect_handshake", p.scenario.net.protect_handshake);
            if (f.has("dead_links")) {
                f.into("dead_links", p.scenario.net.dead_links);
                f.into("dead_from", p.scenario.net.dead_from);
                if (p.scenario.net.dead_links >= p.scenario.net.links)
                    f.fail("dead_links must leave at least one link alive");
            }
        } else if (word == "limits") {
            const Fields f = split(line, line_no, 1);
            p.scenario.limits.time_limit = f.time("time_limit");
            f.into("max_events", p.scenario.limits.max_events);
            f.into("linger_us", p.scenario.limits.linger_us);
            f.into("until_conn_down", p.scenario.limits.until_conn_down);
        } else if (word == "layout") {
            const Fields f = split(line, line_no, 1);
            auto& L = p.scenario.workload.layout;
            f.into("base_a", L.base[0]);
            f.into("base_b", L.base[1]);
            f.into("region_size", L.region_size);
            f.into("guard_size", L.guard_size);
        } else if (word == "fates") {
            const Fields f = split(line, line_no, 1);
            f.into("count", fates_count);
        } else if (word == "fate") {
            const Fields f = split(line, line_no, 1);
            if (f.words.size() != 2) f.fail("fate needs an index and a kind");
            PacketFate fate;
            const auto kind = fate_from_name(f.words[1]);
            if (!kind) f.fail("unknown fate " + f.words[1]);
            fate.kind = *kind;
            if (f.has("delay")) f.into("delay", fate.extra_delay_us);
            if (f.has("off")) f.into("off", fate.corrupt_offset);
            if (f.has("xor")) f.into("xor", fate.corrupt_xor);
            fates.emplace_back(size_t(f.parse_u64(f.words[0], "fate index")), fate);
        } else if (word == "link") {
            const Fields f = split(line, line_no, 1);
            LinkEvent le;
            f.into("at", le.at);
            const auto& dir = f.get("dir");
            if (dir == "AtoB")
                le.dir = LinkDir::AtoB;
            else if (dir == "BtoA")
                le.dir = LinkDir::BtoA;
            else if (dir == "both")
                le.dir = LinkDir::Both;
            else
                f.fail("bad link dir");
            f.into("link", le.link);
            const auto& st = f.get("state");
            if (st != "up" && st != "down") f.fail("bad link state");
            le.up = st == "up";
            p.scenario.schedule.link_events.push_back(le);
        } else if (word == "op") {
            const Fields f = split(line, line_no, 1);
            Op op;
            f.into("at", op.at);
            const auto& side = f.get("side");
            if (side != "A" && side != "B") f.fail("bad side");
            op.side = side == "A" ? Side::A : Side::B;
            const auto kind = op_kind_from_name(f.get("kind"));
            if (!kind) f.fail("bad op kind");
            op.kind = *kind;
            f.into("stream", op.stream);
            f.into("len", op.length);
            f.into("local", op.local_off);
            f.into("remote", op.remote_off);
            const auto key = key_choice_from_name(f.get("key"));
            if (!key) f.fail("bad key choice");
            op.key = *key;
            f.into("imm", op.imm);
            if (f.has("conn")) f.into("conn", op.conn);
            if (f.has("after")) {
                if (f.get("after") != "void") f.fail("after= must be void");
                op.after_void = true;
            }
            p.scenario.workload.ops.push_back(op);
        } else if (word == "verdict" || word == "violation" || word == "...") {
            p.violations.emplace_back(line);
        } else {
            throw TraceError("trace line " + std::to_string(line_no) + ": unknown line '" + std::string(word) + "'");
        }
        if (end == text.size()) break;
    }
    if (!header) throw TraceError("not a trace: no 'mroce-trace 1' line");
    if (in_events) throw TraceError("trace ends inside the events section (no 'end')");
    p.scenario.schedule.fates.assign(fates_count, PacketFate{});
    for (const auto& [k, f] : fates) {
        if (k >= fates_count) throw TraceError("fate index " + std::to_string(k) + " beyond fates count");
        p.scenario.schedule.fates[k] = f;
    }
    return p;
}

ReplayResult replay(std::string_view trace_text, const EndpointFactory& factory, const RunOptions& options) {
    const ParsedTrace p = parse_trace(trace_text);
    ReplayResult rr;
    RunOptions o = options;
    o.trace = true;
    o.canonical_packets = p.canonical_packets;
    rr.result = run(p.scenario, factory, o);
    rr.violations = check_scenario(p.scenario, rr.result, p.mode);
    if (!p.lines.empty()) {
        const std::vector<std::string> a = with_keys_numbered(p.lines), b = with_keys_numbered(rr.result.lines);
        const size_t n = std::min(a.size(), b.size());
        size_t i = 0;
        while (i < n && a[i] == b[i]) ++i;
        if (i < n || a.size() != b.size()) {
            rr.reproduced = false;
            rr.first_diff = i;
            rr.recorded_line = i < a.size() ? a[i] : "<end of recorded events>";
            rr.replayed_line = i < b.size() ? b[i] : "<end of replayed events>";
        }
    }
    return rr;
}

std::vector<std::string> with_keys_numbered(const std::vector<std::string>& lines) {
    constexpr size_t kHexKey = 10;  // "0x" and 8 hex digits, as run.cpp and wire.cpp print keys
    // A line is "<time> <side> ...". Both ends of the model issue the same keys, so a key is named by
    // the side that issued it.
    auto side_of = [](const std::string& l) {
        const size_t sp = l.find(' ');
        return sp == std::string::npos || sp + 1 >= l.size() ? '?' : l[sp + 1];
    };
    std::map<std::pair<char, std::string>, std::string> names;
    std::map<char, std::vector<uint32_t>> rkeys;  // per side: data, guard
    for (const std::string& l : lines) {
        if (l.find(" register ") == std::string::npos) continue;
        const char side = side_of(l);
        for (const char* field : {"lkey=", "rkey="}) {
            const size_t at = l.find(field);
            if (at == std::string::npos) continue;
            const std::string key = l.substr(at + 5, kHexKey);
            names.emplace(std::make_pair(side, key), std::string(1, side) + "#" + std::to_string(names.size()));
            if (field[0] == 'r') rkeys[side].push_back(uint32_t(std::strtoul(key.c_str(), nullptr, 16)));
        }
        if (rkeys[side].size() == 2) {  // the key the workload's Invalid ops name
            char hex[16];
            std::snprintf(hex, sizeof hex, "0x%08x", invalid_rkey(rkeys[side][0], rkeys[side][1]));
            names.emplace(std::make_pair(side, std::string(hex)), std::string(1, side) + "#invalid");
        }
    }
    std::vector<std::string> out = lines;
    for (std::string& l : out) {
        // A side's own keys are in what it registers and receives; its posts and frames name its peer's.
        const char side = side_of(l), peer = side == 'A' ? 'B' : 'A';
        const bool sent = l.find(" register ") == std::string::npos && l.find(" rx ") == std::string::npos;
        for (size_t at = l.find("key=0x"); at != std::string::npos; at = l.find("key=0x", at + 4)) {
            const std::string key = l.substr(at + 4, kHexKey);
            auto it = names.find({sent ? peer : side, key});
            if (it == names.end()) it = names.find({sent ? side : peer, key});
            if (it != names.end()) l.replace(at + 4, kHexKey, it->second);
        }
    }
    return out;
}

}  // namespace mroce::harness
