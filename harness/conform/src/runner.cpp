// The runner: executes a script line by line against a DUT, feeding every frame both ways to the
// conformance monitor, and keeps a pcap and a canonical trace of the test.
#include "conform/runner.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <tuple>

#include "codec/ref_codec.hpp"
#include "conform/capture.hpp"
#include "model/choices.hpp"

namespace mroce::conform {

const char* outcome_name(Outcome o) {
    switch (o) {
        case Outcome::Pass:
            return "pass";
        case Outcome::Fail:
            return "fail";
        case Outcome::Timing:
            return "timing";
        case Outcome::Unsupported:
            return "unsupported";
        case Outcome::Error:
            return "error";
    }
    return "?";
}

namespace {

using ref::Opcode;

// A script's own mistake found while running it (an unknown variable, a bad field for the verb):
// the test is an error, not a DUT failure.
struct ScriptFault : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The DUT's clock stopped while it kept running (RunOptions::max_steps_at_one_instant): the test
// fails naming the livelock.
struct Livelock : std::runtime_error {
    using std::runtime_error::runtime_error;
};

std::optional<Opcode> opcode_by_name(const std::string& n) {
    static const std::pair<const char*, Opcode> kOps[] = {{"SEND", Opcode::Send},
                                                          {"WRITE", Opcode::Write},
                                                          {"WRITE_IMM", Opcode::WriteImm},
                                                          {"READ_REQ", Opcode::ReadReq},
                                                          {"READ_RESP", Opcode::ReadResp},
                                                          {"ACK", Opcode::Ack},
                                                          {"NAK", Opcode::Nak},
                                                          {"PROBE", Opcode::Probe},
                                                          {"CONNECT", Opcode::Connect},
                                                          {"ACCEPT", Opcode::Accept},
                                                          {"REJECT", Opcode::Reject},
                                                          {"DISCONNECT", Opcode::Disconnect},
                                                          {"DISCONNECT_ACK", Opcode::DisconnectAck}};
    for (const auto& [name, op] : kOps)
        if (n == name) return op;
    return std::nullopt;
}

uint16_t flag_by_name(const std::string& n) {
    if (n == "AR") return ref::kFlagAr;
    if (n == "RETX") return ref::kFlagRetx;
    if (n == "VOID") return ref::kFlagVoid;
    throw ScriptFault("unknown flag '" + n + "' (AR, RETX, VOID)");
}

// The payload byte at `offset` of message (stream, msn) as the tester sends it: `? mem` checks it.
uint8_t pattern(uint16_t stream, uint32_t msn, uint64_t offset) {
    return uint8_t(stream * 131u + msn * 31u + uint32_t(offset) * 7u + uint32_t(offset >> 8) * 13u + 0x5au);
}

bool sack_bit(const ref::Packet& a, uint32_t i) { return (a.sack[i / 8] & (0x80u >> (i % 8))) != 0; }
bool slt(uint32_t a, uint32_t b) { return a != b && uint32_t(b - a) < 0x80000000u; }
bool sle(uint32_t a, uint32_t b) { return a == b || slt(a, b); }

struct Seen {  // a frame from the DUT
    uint64_t number;
    Micros at;
    std::vector<uint8_t> bytes;
    ref::Packet p;
    bool ok;
    bool consumed = false;
};

// What the tester has received of the DUT's data on one path (for ACKs it builds).
struct TesterRx {
    uint32_t cpsn = 0;
    std::set<uint32_t> above;
    uint32_t ce = 0, last_ts = 0, received = 0;
    uint16_t reply_route = 0;
};

class Exec {
public:
    Exec(const Script& sc, Dut& dut, const RunOptions& o) : sc_(sc), dut_(dut), opt_(o), mon_(monitor_config()) {
        res_.id = sc.id;
        res_.title = sc.title;
        res_.path = sc.path;
        res_.requires_ = sc.requires_;
        const bool virt = dut.info().virtual_time;
        tol_us_ =
            sc.tolerance_us >= 0 ? sc.tolerance_us : (opt_.tolerance_us >= 0 ? opt_.tolerance_us : (virt ? 0 : 5000));
        tol_prop_ = sc.tolerance_prop >= 0 ? sc.tolerance_prop : (virt ? 0 : opt_.tolerance_prop);
        late_us_ = opt_.late_us >= 0 ? opt_.late_us : (virt ? 0 : 20000);
        late_prop_ = opt_.late_prop >= 0 ? opt_.late_prop : (virt ? 0 : 0.5);
        timeout_us_ = sc.timeout_us ? sc.timeout_us : opt_.timeout_us;
        tester_isn_ = opt_.tester_isn;
        if (!opt_.out_dir.empty()) {
            std::filesystem::create_directories(opt_.out_dir);
            res_.pcap = opt_.out_dir + "/" + sc.id + ".pcap";
            res_.trace = opt_.out_dir + "/" + sc.id + ".trace";
            pcap_ = std::make_unique<CaptureWriter>(res_.pcap);
            trace_.open(res_.trace);
            trace_ << "# " << sc.id << ": " << sc.title << "\n# script " << sc.path << "\n# dut " << dut.info().name
                   << "\n# time (us, from the test's start)  direction  canonical line (appendix C)\n";
        }
    }

    TestResult run() {
        t0_ = dut_.now();
        prev_ = t0_;
        counters0_ = dut_.counters();
        try {
            for (const auto& ln : sc_.lines) {
                line_ = &ln;
                step(ln);
                if (res_.outcome == Outcome::Fail || cannot_judge_rest_) break;
            }
            line_ = nullptr;
            pump_until(dut_.now() + opt_.linger_us);
        } catch (const ScriptFault& e) {
            res_.outcome = Outcome::Error;
            res_.messages.push_back(where() + e.what());
        } catch (const DutError& e) {
            res_.outcome = Outcome::Error;
            res_.messages.push_back(where() + "DUT: " + e.what());
        } catch (const Livelock& e) {
            res_.outcome = Outcome::Fail;
            res_.messages.push_back(where() + e.what());
        }
        mon_.finish(ns(dut_.now()));
        res_.violations = mon_.violations();
        res_.tally = mon_.tally();
        res_.choices = mon_.choices();
        if (!res_.violations.empty() && res_.outcome != Outcome::Error) res_.outcome = Outcome::Fail;
        if (res_.outcome == Outcome::Pass && timing_) res_.outcome = Outcome::Timing;
        res_.frames = frames_;
        res_.duration_us = dut_.now() - t0_;
        if (pcap_) pcap_->flush();
        return res_;
    }

private:
    monitor::Config monitor_config() const {
        monitor::Config c;
        const DutInfo& i = dut_.info();
        c.udp_port = i.udp_port;
        monitor::Ip ip{i.address.ipv6, i.address.ip};
        c.fully_observed = {ip};
        c.judge_only = true;
        const double tol = opt_.tolerance_us >= 0 ? opt_.tolerance_us : (i.virtual_time ? 0 : 5000);
        c.tolerance = monitor::Nanos(tol * 1000);
        c.tolerance_prop = i.virtual_time ? 0 : opt_.tolerance_prop;
        c.virtual_time = i.virtual_time;
        c.strict = opt_.strict;
        c.rto_min_us = i.rto_min_us;
        c.rto_init_us = i.rto_init_us;
        c.rto_max_us = i.rto_max_us;
        c.rnr_default_us = i.rnr_default_us;
        c.peer_timeout_us = i.peer_timeout_us;
        c.home_probe_us = i.home_probe_us;
        c.home_probe_max_us = i.home_probe_max_us;
        return c;
    }
    static monitor::Nanos ns(Micros t) { return monitor::Nanos(t) * 1000; }
    std::string where() const { return line_ ? sc_.path + ":" + std::to_string(line_->lineno) + ": " : ""; }
    void fail(const std::string& m) {
        res_.outcome = Outcome::Fail;
        res_.messages.push_back(where() + m);
    }

    // ---- values -------------------------------------------------------------------------------

    int64_t constant(const std::string& s) const {
        const DutInfo& i = dut_.info();
        if (s == "ACK_DELAY_MAX") return 16;
        if (s == "ACK_COALESCE_MAX") return 16;
        if (s == "ACK_DELAY") return 8;
        if (s == "RTO_INIT") return i.rto_init_us;
        if (s == "PTO_INIT") return i.rto_init_us / 2;  // the tail probe before an RTT sample [R-REL-6]
        if (s == "RTO_MIN") return i.rto_min_us;
        if (s == "RTO_MAX") return i.rto_max_us;
        if (s == "PTO_MIN") return i.pto_min_us;
        if (s == "RNR_DEFAULT") return i.rnr_default_us;
        if (s == "RNR_RETRY_MAX") return 7;
        if (s == "PEER_TIMEOUT") return i.peer_timeout_us;
        if (s == "KEEPALIVE") return i.keepalive_us;
        if (s == "CONNECT_RETRY") return i.connect_retry_us;
        if (s == "CONNECT_TRIES") return 8;
        if (s == "HINT_TTL") return 1000;
        if (s == "HOME_PROBE") return i.home_probe_us;          // [R-PATH-10]
        if (s == "HOME_PROBE_MAX") return i.home_probe_max_us;  // [R-PATH-10]
        if (s == "INIT_CWND")                                   // [R-CC-1]
            return std::max<int64_t>(1, std::min<int64_t>({16, wcap_, paths_ ? 64 / paths_ : 16}));
        if (s == "MAXPAY") return maxpay_;
        if (s == "PATHS") return paths_;
        if (s == "STREAMS") return streams_;
        if (s == "WCAP") return wcap_;
        if (s == "TIMEOUT") return int64_t(timeout_us_);
        // NAK codes (table 12.3), statuses ([R-CMP-4]), reasons ([R-HDR-27]).
        static const std::pair<const char*, int64_t> kNames[] = {{"RNR", 1},
                                                                 {"RemoteAccess", 2},
                                                                 {"InvalidRequest", 3},
                                                                 {"Length", 4},
                                                                 {"Success", 0},
                                                                 {"LocalLength", 1},
                                                                 {"RemoteInvalid", 3},
                                                                 {"RemoteLength", 4},
                                                                 {"RnrRetryExceeded", 5},
                                                                 {"ConnectionFailed", 6},
                                                                 {"Flushed", 7},
                                                                 {"Canceled", 8},
                                                                 {"LocalProtection", 9},
                                                                 {"ECT0", 2},
                                                                 {"ECT1", 1},
                                                                 {"CE", 3},
                                                                 {"NotECT", 0}};
        for (const auto& [n, v] : kNames)
            if (s == n) return v;
        throw ScriptFault("unknown name '" + s + "'");
    }
    int64_t eval(const Expr& e) const {
        int64_t v = 0;
        for (const auto& t : e.terms) {
            if (t.symbol.empty()) {
                v += t.coefficient;
            } else if (t.symbol[0] == '$') {
                auto it = vars_.find(t.symbol.substr(1));
                if (it == vars_.end()) throw ScriptFault("unknown variable '" + t.symbol + "'");
                v += t.coefficient * it->second;
            } else {
                v += t.coefficient * constant(t.symbol);
            }
        }
        return v;
    }
    const Field* field(const Line& ln, const char* name) const {
        for (const auto& f : ln.fields)
            if (f.name == name) return &f;
        return nullptr;
    }
    std::optional<int64_t> value(const Line& ln, const char* name) const {
        const Field* f = field(ln, name);
        if (!f) return std::nullopt;
        if (f->kind != Field::Kind::Value)
            throw ScriptFault(std::string("field '") + name + "' needs a single value here");
        return eval(f->value);
    }
    int64_t value_or(const Line& ln, const char* name, int64_t dflt) const { return value(ln, name).value_or(dflt); }
    void allow_fields(const Line& ln, std::initializer_list<const char*> names) const {
        for (const auto& f : ln.fields) {
            bool ok = false;
            for (const char* n : names) ok = ok || f.name == n;
            if (!ok) throw ScriptFault("field '" + f.name + "' means nothing for '" + ln.verb + "'");
        }
    }

    // ---- time ---------------------------------------------------------------------------------

    // The window [lo, hi] of a line, in DUT-clock µs, tolerance applied to expectations.
    std::pair<Micros, Micros> window(const TimeSpec& t, bool widen) const {
        if (t.base == TimeSpec::Base::Any) return {prev_, t0_ + timeout_us_};
        const Micros base = t.base == TimeSpec::Base::Absolute ? t0_ : prev_;
        const int64_t lo = eval(t.lo);
        const int64_t hi = t.hi ? eval(*t.hi) : lo;
        if (lo < 0 || hi < lo) throw ScriptFault("bad time window");
        if (!widen) return {base + Micros(lo), base + Micros(hi)};
        // Early: the tolerance only (the tester's own stamping). Late: also the late tolerance, as
        // lateness is the DUT's allowed choice over a real port (RunOptions::late_us).
        const double slack_lo = tol_us_ + tol_prop_ * double(lo);
        const double slack_hi = tol_us_ + tol_prop_ * double(hi) + late_us_ + late_prop_ * double(hi);
        const int64_t wlo = std::max<int64_t>(0, int64_t(double(lo) - slack_lo));
        return {std::max(base + Micros(wlo), prev_), base + Micros(double(hi) + slack_hi)};
    }

    // ---- the wire -----------------------------------------------------------------------------

    void record(const std::vector<uint8_t>& bytes, Micros at, bool from_dut) {
        ++frames_;
        mon_.frame(frames_, ns(at), bytes);
        if (pcap_) pcap_->write(uint64_t(ns(at)), bytes);
        if (trace_.is_open())
            trace_ << (int64_t(at) - int64_t(t0_)) << (from_dut ? " > " : " < ")
                   << ref::canonical(ref::decode(bytes, dut_.info().udp_port), bytes) << "\n";
    }

    void inject(const std::vector<uint8_t>& frame) {
        drain();
        record(frame, dut_.now(), false);
        dut_.send(frame);
        drain();
    }

    void drain() {
        for (auto& f : dut_.receive()) {
            record(f.bytes, f.at, true);
            Seen s{frames_, f.at, std::move(f.bytes), {}, false};
            auto r = ref::decode(s.bytes, dut_.info().udp_port);
            s.ok = r.ok();
            s.p = r.packet;
            seen_.push_back(std::move(s));
            if (seen_.back().ok) learn(seen_.back());
        }
        // Completions and events arrive on the control channel.
        for (auto& c : dut_.poll_cq()) wcs_.push_back({c, false});
        wc_seen_at_.resize(wcs_.size(), dut_.now());
        for (auto& e : dut_.poll_events()) {
            if (e.up && !dut_conn_) dut_conn_ = e.conn;
            events_.push_back({e, false});
        }
        while (!delayed_.empty() && delayed_.front().first <= dut_.now()) {
            auto f = std::move(delayed_.front().second);
            delayed_.pop_front();
            record(f, dut_.now(), false);
            dut_.send(f);
        }
    }

    // Lets the DUT run until it sends something or the clock reads `t` (expectations look at
    // every frame as it comes).
    void pump_step(Micros t) {
        const size_t frames_before = seen_.size(), wcs_before = wcs_.size(), events_before = events_.size();
        const Micros clock_before = dut_.now();
        drain();
        watch_clock(clock_before);  // (a DUT that answers every drain at one instant is watched too)
        // What the drain brought in (frames read while a control request waited) is news already.
        if (dut_.now() >= t || seen_.size() != frames_before || wcs_.size() != wcs_before ||
            events_.size() != events_before)
            return;
        Micros stop = t;
        if (!delayed_.empty()) stop = std::min(stop, std::max(delayed_.front().first, dut_.now()));
        run_dut(stop);
        drain();
    }

    // One DUT step, watched: a DUT that returns again and again without its clock moving is
    // livelocked (e.g. a timer that refires at the same instant forever).
    void run_dut(Micros stop) {
        const Micros before = dut_.now();
        dut_.run_until(stop);
        watch_clock(before);
    }
    void watch_clock(Micros before) {
        if (dut_.now() != before) {
            steps_at_instant_ = 0;
            return;
        }
        if (++steps_at_instant_ > opt_.max_steps_at_one_instant)
            throw Livelock("livelock: the DUT ran " + std::to_string(steps_at_instant_) + " steps at time +" +
                           std::to_string(int64_t(before) - int64_t(t0_)) + " us without its clock advancing (" +
                           std::to_string(frames_) + " frames so far): a timer refiring at one instant?");
    }

    // Where a wait for a completion or an event pauses to ask the DUT's control channel (drain):
    // a virtual-time DUT reports them at once, a real one only when asked.
    Micros control_poll_step(Micros t) const {
        if (dut_.info().virtual_time) return t;
        return std::min(t, dut_.now() + opt_.control_poll_us);
    }

    // Lets the DUT run until `t`, reacting to what it sends.
    void pump_until(Micros t) {
        drain();
        while (dut_.now() < t) {
            Micros stop = t;
            if (!delayed_.empty()) stop = std::min(stop, std::max(delayed_.front().first, dut_.now()));
            run_dut(stop);
            drain();
            if (!dut_.info().virtual_time && dut_.now() >= stop) break;
        }
        drain();
    }

    // What a DUT frame tells the tester: the connection's context, the tester's receive state.
    void learn(const Seen& s) {
        const ref::Packet& p = s.p;
        if (p.opcode == Opcode::Accept && !up_) {
            dut_id_ = p.scid;
            dut_isn_ = p.isn;
            set_negotiated(p.path_count, p.stream_count, p.max_payload, p.window_cap);
            up_ = true;
        }
        if (p.opcode == Opcode::Connect && !up_) {
            dut_id_ = p.scid;
            dut_isn_ = p.isn;
            dut_offer_ = p;
        }
        if (!up_ || p.dcid != tester_id_) return;
        if (ref::is_data_opcode(p.opcode) && p.path_id < rx_.size()) {
            TesterRx& r = rx_[p.path_id];
            r.reply_route = p.udp_sport;
            r.last_ts = p.timestamp;
            ++r.received;
            const bool in_window = slt(r.cpsn, p.psn) && sle(p.psn, r.cpsn + 256);
            if (in_window && !r.above.count(p.psn)) {
                r.above.insert(p.psn);
                while (r.above.count(r.cpsn + 1)) {
                    r.above.erase(r.cpsn + 1);
                    ++r.cpsn;
                }
                if (p.ecn == 3 || (ce_every_ && r.received % ce_every_ == 0)) ++r.ce;
            }
            if (auto_ack_) send_ack(p.path_id, p.timestamp, p.udp_sport);
        } else if (p.opcode == Opcode::Probe && p.path_id < rx_.size()) {
            rx_[p.path_id].reply_route = p.udp_sport;
            rx_[p.path_id].last_ts = p.timestamp;
            if (auto_ack_) send_ack(p.path_id, p.timestamp, p.udp_sport);
        }
    }

    void set_negotiated(uint16_t paths, uint16_t streams, uint16_t maxpay, uint16_t wcap) {
        paths_ = paths, streams_ = streams, maxpay_ = maxpay, wcap_ = wcap;
        rx_.assign(paths, TesterRx{});
        for (auto& r : rx_) r.cpsn = dut_isn_ - 1;
        snxt_.assign(paths, 0);
        vars_["dut.isn"] = dut_isn_;
        vars_["dut.id"] = dut_id_;
        vars_["tester.isn"] = tester_isn_;
        vars_["tester.id"] = tester_id_;
        vars_["conn.paths"] = paths, vars_["conn.streams"] = streams, vars_["conn.maxpay"] = maxpay,
        vars_["conn.wcap"] = wcap;
    }

    ref::Packet base(Opcode op, uint16_t path) const {
        ref::Packet p{};
        const DutInfo& i = dut_.info();
        p.eth_dst = i.address.mac;
        p.eth_src = opt_.tester.mac;
        p.ipv6 = i.address.ipv6;
        p.ip_src = opt_.tester.ip;
        p.ip_dst = i.address.ip;
        const bool data = ref::is_data_opcode(op);
        p.dscp = data ? 26 : 48;
        p.ecn = data ? 2 : 0;
        p.ipv4_df = true;
        p.ttl = 64;
        p.udp_sport = model::Choices::default_route(tester_id_, path, 0);
        p.ipv6_flow_label = p.udp_sport & 0xfffffu;  // [R-ENC-4]
        p.udp_dport = i.udp_port;
        p.version = 1;
        p.opcode = op;
        p.dcid = dut_id_;
        p.path_id = path;
        p.timestamp = uint32_t(dut_.now());
        return p;
    }

    // `from=`: a frame from a host other than the tester [R-SEC-10]. `foreign`: another address of
    // the same IP version; `other_version`: the tester's address in the other IP version (IPv4 in
    // IPv6 as ::ffff:a.b.c.d, and back).
    static void forge_source(ref::Packet& p, const std::string& from) {
        if (from == "foreign") {
            p.ip_src[p.ipv6 ? 15 : 3] ^= 0x40;
        } else if (from == "other_version") {
            auto swap = [&](std::array<uint8_t, 16>& ip) {
                std::array<uint8_t, 16> out{};
                if (p.ipv6) {
                    std::copy(ip.begin() + 12, ip.end(), out.begin());
                } else {
                    out[10] = out[11] = 0xff;
                    std::copy(ip.begin(), ip.begin() + 4, out.begin() + 12);
                }
                ip = out;
            };
            swap(p.ip_src);
            swap(p.ip_dst);
            p.ipv6 = !p.ipv6;
        } else {
            throw ScriptFault("from=" + from + ": expected foreign or other_version");
        }
    }

    void send_ack(uint16_t path, uint32_t tse, uint16_t sport) {
        ref::Packet a = base(Opcode::Ack, path);
        const TesterRx& r = rx_[path];
        a.cpsn = r.cpsn;
        a.ce_count = r.ce;
        a.ts_echo = tse;
        a.udp_sport = sport;
        for (uint32_t x : r.above) {
            const uint32_t i = x - r.cpsn - 1;
            if (i < 256) a.sack[i / 8] |= uint8_t(0x80u >> (i % 8));
        }
        auto f = ref::encode(a, {});
        if (ack_delay_us_ == 0) {
            record(f, dut_.now(), false);
            dut_.send(f);
        } else {
            delayed_.push_back({dut_.now() + ack_delay_us_, std::move(f)});
        }
    }

    // Builds the frame of a `<` line from the fields given and the context.
    std::vector<uint8_t> build(const Line& ln) {
        auto op = opcode_by_name(ln.verb);
        if (!op) throw ScriptFault("unknown opcode '" + ln.verb + "'");
        allow_fields(ln, {"path", "sport",   "dport",    "ecn",    "dscp", "ts",     "dcid",    "version",  "flags",
                          "psn",  "stream",  "msn",      "moff",   "len",  "mlen",   "rsn",     "va",       "rkey",
                          "imm",  "cpsn",    "ce",       "tse",    "hint", "sack",   "code",    "detail",   "scid",
                          "isn",  "paths",   "streams",  "maxpay", "wcap", "reason", "corrupt", "truncate", "icrc",
                          "frag", "fragoff", "udp_csum", "ttl",    "flow", "recrc",  "from"});
        const uint16_t path = uint16_t(value_or(ln, "path", 0));
        ref::Packet p = base(*op, path);
        std::vector<uint8_t> payload;
        if (auto v = value(ln, "sport")) p.udp_sport = uint16_t(*v), p.ipv6_flow_label = p.udp_sport & 0xfffffu;
        if (auto v = value(ln, "dport")) p.udp_dport = uint16_t(*v);
        if (auto v = value(ln, "ecn")) p.ecn = uint8_t(*v);
        if (auto v = value(ln, "dscp")) p.dscp = uint8_t(*v);
        if (auto v = value(ln, "ts")) p.timestamp = uint32_t(*v);
        if (auto v = value(ln, "ttl")) p.ttl = uint8_t(*v);
        if (auto v = value(ln, "flow")) p.ipv6_flow_label = uint32_t(*v) & 0xfffffu;
        if (auto v = value(ln, "dcid")) p.dcid = uint32_t(*v);
        if (auto v = value(ln, "version")) p.version = uint8_t(*v);
        if (const Field* f = field(ln, "from")) forge_source(p, f->text);
        if (const Field* f = field(ln, "flags"))
            for (const auto& n : f->names) p.flags |= flag_by_name(n);
        if (ref::is_data_opcode(*op)) {
            const bool given = value(ln, "psn").has_value();
            const uint32_t rel = uint32_t(value_or(ln, "psn", path < snxt_.size() ? snxt_[path] : 0));
            p.psn = tester_isn_ + rel;
            if (path < snxt_.size() && (!given || slt(snxt_[path], rel + 1))) snxt_[path] = rel + 1;
            p.stream_id = uint16_t(value_or(ln, "stream", 0));
            p.msn = uint32_t(value_or(ln, "msn", 0));
            p.msg_offset = uint32_t(value_or(ln, "moff", 0));
            const uint32_t len = uint32_t(value_or(ln, "len", 0));
            p.msg_length = uint32_t(value_or(ln, "mlen", int64_t(p.msg_offset) + len));
            p.rsn = uint32_t(value_or(ln, "rsn", 0));
            p.remote_va = uint64_t(value_or(ln, "va", vars_.count("mr.va") ? vars_["mr.va"] : 0));
            p.rkey = uint32_t(value_or(ln, "rkey", vars_.count("mr.rkey") ? vars_["mr.rkey"] : 0));
            p.immediate = uint32_t(value_or(ln, "imm", 0));
            payload.resize(len);
            for (uint32_t i = 0; i < len; ++i) payload[i] = pattern(p.stream_id, p.msn, uint64_t(p.msg_offset) + i);
        } else if (*op == Opcode::Ack) {
            const TesterRx& r = path < rx_.size() ? rx_[path] : TesterRx{};
            p.cpsn = value(ln, "cpsn") ? dut_isn_ + uint32_t(*value(ln, "cpsn")) : r.cpsn;
            p.ce_count = uint32_t(value_or(ln, "ce", r.ce));
            p.ts_echo = uint32_t(value_or(ln, "tse", r.last_ts));
            p.rate_hint = uint32_t(value_or(ln, "hint", 0));
            if (!value(ln, "sport") && r.reply_route) p.udp_sport = r.reply_route;
            if (const Field* f = field(ln, "sack")) {
                for (const auto& n : f->names) {
                    const int64_t i = std::stoll(n);
                    if (i < 0 || i > 255) throw ScriptFault("SACK bit " + n + " outside 0..255");
                    p.sack[size_t(i) / 8] |= uint8_t(0x80u >> (i % 8));
                }
            } else if (!value(ln, "cpsn")) {
                for (uint32_t x : r.above) {
                    const uint32_t i = x - r.cpsn - 1;
                    if (i < 256) p.sack[i / 8] |= uint8_t(0x80u >> (i % 8));
                }
            }
        } else if (*op == Opcode::Nak) {
            p.nak_psn = dut_isn_ + uint32_t(value_or(ln, "psn", 0));
            p.nak_code = uint8_t(value_or(ln, "code", 1));
            p.nak_detail = uint16_t(value_or(ln, "detail", 0));
            if (!value(ln, "sport") && path < rx_.size() && rx_[path].reply_route) p.udp_sport = rx_[path].reply_route;
        } else if (*op == Opcode::Probe) {
            if (!field(ln, "flags")) p.flags = ref::kFlagAr;
        } else if (*op == Opcode::Connect || *op == Opcode::Accept) {
            p.dcid = *op == Opcode::Connect ? 0 : dut_id_;
            if (auto v = value(ln, "dcid")) p.dcid = uint32_t(*v);
            p.scid = uint32_t(value_or(ln, "scid", tester_id_));
            p.isn = uint32_t(value_or(ln, "isn", tester_isn_));
            p.path_count = uint16_t(value_or(ln, "paths", 4));
            p.stream_count = uint16_t(value_or(ln, "streams", 4));
            p.max_payload = uint16_t(value_or(ln, "maxpay", 4096));
            p.window_cap = uint16_t(value_or(ln, "wcap", 256));
            p.path_id = 0;
        } else if (*op == Opcode::Reject || *op == Opcode::Disconnect) {
            p.reason = uint8_t(value_or(ln, "reason", 0));
        }
        const Field* csum = field(ln, "udp_csum");
        if (csum && csum->text != "compute") throw ScriptFault("udp_csum takes 'compute' (a valid non-zero checksum)");
        std::vector<uint8_t> f = ref::encode(p, payload, csum != nullptr);
        // An IPv4 fragment: MF and / or a fragment offset, the header checksum fixed [R-ENC-3].
        const Field* frag = field(ln, "frag");
        const auto fragoff = value(ln, "fragoff");
        if ((frag || fragoff) && !p.ipv6) {
            uint16_t ff = uint16_t(f[20] << 8 | f[21]);
            if (frag) {
                if (frag->text != "MF") throw ScriptFault("frag takes MF");
                ff |= 0x2000;
            }
            if (fragoff) ff = uint16_t((ff & 0xe000) | (uint16_t(*fragoff) & 0x1fff));
            f[20] = uint8_t(ff >> 8), f[21] = uint8_t(ff);
            f[24] = f[25] = 0;
            uint32_t sum = 0;
            for (int i = 0; i < 20; i += 2) sum += uint32_t(f[14 + i] << 8 | f[15 + i]);
            while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
            f[24] = uint8_t(~sum >> 8), f[25] = uint8_t(~sum);
        }
        if (auto v = value(ln, "corrupt")) {  // flip a byte after encoding (offset in the frame)
            if (*v < 0 || size_t(*v) >= f.size()) throw ScriptFault("corrupt offset outside the frame");
            f[size_t(*v)] ^= 0xff;
        }
        if (auto v = value(ln, "truncate")) {
            if (*v < 0 || size_t(*v) > f.size()) throw ScriptFault("truncate length outside the frame");
            f.resize(size_t(*v));
        }
        if (value(ln, "recrc").value_or(0)) {  // after `corrupt=`: a valid ICRC again
            const size_t udp = 14 + (p.ipv6 ? 40 : 20) + 8;
            if (f.size() < udp + 4) throw ScriptFault("recrc on a frame without a transport header");
            const uint32_t c = ref::crc32c(std::span<const uint8_t>(f.data() + udp, f.size() - 4 - udp));
            for (int i = 0; i < 4; ++i) f[f.size() - 4 + size_t(i)] = uint8_t(c >> (24 - 8 * i));
        }
        if (auto v = value(ln, "icrc")) {  // overwrite the ICRC (big-endian, last 4 bytes)
            for (int i = 0; i < 4; ++i) f[f.size() - 4 + size_t(i)] = uint8_t(uint32_t(*v) >> (24 - 8 * i));
        }
        return f;
    }

    // ---- matching a DUT frame ------------------------------------------------------------------

    bool match_value(const Field& f, int64_t actual, uint32_t rel_base = 0, bool rel = false) const {
        auto norm = [&](int64_t x) { return rel ? int64_t(uint32_t(uint32_t(x) + rel_base)) : x; };
        switch (f.kind) {
            case Field::Kind::Any:
                return true;
            case Field::Kind::Value:
                return norm(eval(f.value)) == actual;
            case Field::Kind::Range: {
                if (rel) {
                    const uint32_t a = uint32_t(actual) - rel_base;
                    return int64_t(a) >= eval(f.value) && int64_t(a) <= eval(f.hi);
                }
                return actual >= eval(f.value) && actual <= eval(f.hi);
            }
            case Field::Kind::OneOf:
                for (const auto& e : f.choices)
                    if (norm(eval(e)) == actual) return true;
                return false;
            case Field::Kind::Names:
                return false;
        }
        return false;
    }

    bool matches(const Line& ln, const Seen& s) const {
        if (!s.ok) return ln.verb == "any";
        const ref::Packet& p = s.p;
        if (ln.verb == "data") {
            if (!ref::is_data_opcode(p.opcode)) return false;
        } else if (ln.verb != "any") {
            auto op = opcode_by_name(ln.verb);
            if (!op) throw ScriptFault("unknown opcode '" + ln.verb + "'");
            if (*op != p.opcode) return false;
        }
        const bool data = ref::is_data_opcode(p.opcode);
        for (const auto& f : ln.fields) {
            const std::string& n = f.name;
            bool ok = true;
            if (n == "path")
                ok = match_value(f, p.path_id);
            else if (n == "psn")
                ok = data ? match_value(f, p.psn, dut_isn_, true) : match_value(f, p.nak_psn, tester_isn_, true);
            else if (n == "cpsn")
                ok = match_value(f, p.cpsn, tester_isn_, true);
            else if (n == "stream")
                ok = match_value(f, p.stream_id);
            else if (n == "msn")
                ok = match_value(f, p.msn);
            else if (n == "mlen")
                ok = match_value(f, p.msg_length);
            else if (n == "moff")
                ok = match_value(f, p.msg_offset);
            else if (n == "len")
                ok = match_value(f, p.payload_length);
            else if (n == "rsn")
                ok = match_value(f, p.rsn);
            else if (n == "va")
                ok = match_value(f, int64_t(p.remote_va));
            else if (n == "rkey")
                ok = match_value(f, p.rkey);
            else if (n == "imm")
                ok = match_value(f, p.immediate);
            else if (n == "ce")
                ok = match_value(f, p.ce_count);
            else if (n == "tse")
                ok = match_value(f, p.ts_echo);
            else if (n == "hint")
                ok = match_value(f, p.rate_hint);
            else if (n == "code")
                ok = match_value(f, p.nak_code);
            else if (n == "detail")
                ok = match_value(f, p.nak_detail);
            else if (n == "sport")
                ok = match_value(f, p.udp_sport);
            else if (n == "dport")
                ok = match_value(f, p.udp_dport);
            else if (n == "ttl")
                ok = match_value(f, p.ttl);
            else if (n == "ts")
                ok = match_value(f, p.timestamp);
            else if (n == "flow")
                ok = match_value(f, p.ipv6_flow_label);
            else if (n == "ipv6")
                ok = match_value(f, p.ipv6 ? 1 : 0);
            else if (n == "ecn")
                ok = match_value(f, p.ecn);
            else if (n == "dscp")
                ok = match_value(f, p.dscp);
            else if (n == "dcid")
                ok = match_value(f, p.dcid);
            else if (n == "scid")
                ok = match_value(f, p.scid);
            else if (n == "isn")
                ok = match_value(f, p.isn);
            else if (n == "paths")
                ok = match_value(f, p.path_count);
            else if (n == "streams")
                ok = match_value(f, p.stream_count);
            else if (n == "maxpay")
                ok = match_value(f, p.max_payload);
            else if (n == "wcap")
                ok = match_value(f, p.window_cap);
            else if (n == "reason")
                ok = match_value(f, p.reason);
            else if (n == "flags" || n == "has" || n == "lacks") {
                uint16_t mask = 0;
                for (const auto& x : f.names) mask |= flag_by_name(x);
                if (f.kind == Field::Kind::Any)
                    ok = true;
                else if (n == "flags")
                    ok = p.flags == mask;
                else if (n == "has")
                    ok = (p.flags & mask) == mask;
                else
                    ok = (p.flags & mask) == 0;
            } else if (n == "data") {
                // The payload is the tester pattern of message STREAM:MSN from the segment's offset.
                // STREAM:MSN[:OFFSET]: the pattern of that message from OFFSET + Message Offset.
                unsigned long long st = 0, m = 0, off = 0;
                char tail = 0;
                const int n_read =
                    f.names.size() == 1 ? std::sscanf(f.names[0].c_str(), "%llu:%llu:%llu%c", &st, &m, &off, &tail) : 0;
                if (n_read < 2 || n_read > 3) throw ScriptFault("data takes STREAM:MSN[:OFFSET]");
                for (uint32_t i = 0; i < p.payload_len && ok; ++i)
                    ok = s.bytes[p.payload_offset + i] ==
                         pattern(uint16_t(st), uint32_t(m), off + uint64_t(p.msg_offset) + i);
            } else if (n == "sack") {
                if (f.kind == Field::Kind::Any) continue;
                std::set<int64_t> want;
                for (const auto& x : f.names) want.insert(std::stoll(x));
                for (uint32_t i = 0; i < 256 && ok; ++i) ok = sack_bit(p, i) == (want.count(i) > 0);
            } else {
                throw ScriptFault("field '" + n + "' cannot be matched");
            }
            if (!ok) return false;
        }
        return true;
    }

    void bind(const std::string& name, const Seen& s) {
        const ref::Packet& p = s.p;
        const bool data = ref::is_data_opcode(p.opcode);
        auto set = [&](const char* f, int64_t v) { vars_[name + "." + f] = v; };
        set("path", p.path_id);
        set("psn", data ? int64_t(uint32_t(p.psn - dut_isn_)) : int64_t(uint32_t(p.nak_psn - tester_isn_)));
        set("cpsn", int64_t(uint32_t(p.cpsn - tester_isn_)));
        set("stream", p.stream_id), set("msn", p.msn), set("mlen", p.msg_length), set("moff", p.msg_offset);
        set("len", p.payload_length), set("rsn", p.rsn), set("va", int64_t(p.remote_va)), set("rkey", p.rkey);
        set("imm", p.immediate), set("ts", p.timestamp), set("sport", p.udp_sport), set("tse", p.ts_echo);
        set("scid", p.scid), set("isn", p.isn), set("at", int64_t(s.at - t0_));
    }

    void expect(const Line& ln, bool none) {
        auto [lo, hi] = window(ln.time, !none);
        if (none) hi = std::max(hi, lo);
        size_t i = cursor_;
        for (;;) {
            for (; i < seen_.size(); ++i) {
                Seen& s = seen_[i];
                if (s.consumed || s.at < prev_ || !matches(ln, s)) continue;  // (earlier frames answer earlier lines)
                if (none) {
                    if (s.at >= lo && s.at <= hi)
                        return unmet(ln, "a frame the test forbids came at +" + std::to_string(s.at - prev_) +
                                             " us: frame " + std::to_string(s.number));
                    continue;
                }
                s.consumed = true;
                if (s.at < lo) {
                    timing_ = true;
                    res_.messages.push_back(where() + "came early: at +" + std::to_string(s.at - prev_) +
                                            " us (frame " + std::to_string(s.number) + ")");
                } else if (s.at > hi) {
                    timing_ = true;
                    res_.messages.push_back(where() + "came late: at +" + std::to_string(s.at - prev_) + " us (frame " +
                                            std::to_string(s.number) + ")");
                }
                if (!ln.as.empty()) bind(ln.as, s);
                prev_ = s.at;
                cursor_ = i + 1;
                return;
            }
            const Micros limit = none ? hi : std::max(hi, prev_);
            if (dut_.now() >= limit) {
                // Frames a control request read meanwhile may still be unpicked: one last look.
                const size_t before = seen_.size();
                drain();
                if (seen_.size() == before) break;
                continue;
            }
            pump_step(limit);
        }
        if (none) {
            prev_ = hi;
            return;
        }
        std::string seen;
        for (size_t k = cursor_; k < seen_.size() && k < cursor_ + 6; ++k)
            seen += " frame " + std::to_string(seen_[k].number) + " at +" +
                    std::to_string(int64_t(seen_[k].at) - int64_t(prev_)) +
                    (seen_[k].consumed ? " (matched before)" : "");
        unmet(ln, "expected '" + ln.text + "', not seen by +" + std::to_string(hi - prev_) + " us" +
                      (seen.empty() ? std::string(" (the DUT sent nothing since)") : "; the DUT sent:" + seen));
    }
    // An expectation not met. A line that assumes more than the MUSTs (Line::assumes) cannot fail a
    // DUT that made another allowed choice: the rest of the test, built on it, is then not judged.
    void unmet(const Line& ln, const std::string& what) {
        switch (ln.assumes) {
            case Line::Assumes::Nothing:
                return fail(what);
            case Line::Assumes::Should:
                if (opt_.strict) return fail(what + " [" + ln.assumed_rule + ", a SHOULD]");
                res_.messages.push_back(where() + what + ": the line assumes a DUT that follows " + ln.assumed_rule +
                                        " (a SHOULD), which this one does not here; run with --strict to judge it");
                break;
            case Line::Assumes::Default:
                if (opt_.assume_defaults)
                    return fail(what + " [the default choice of " + ln.assumed_rule +
                                ", which the DUT claims to make]");
                res_.messages.push_back(where() + what + ": the line assumes the default choice of " + ln.assumed_rule +
                                        "; this DUT made another, which the spec allows ([R-CONF-2])");
                break;
        }
        res_.outcome = Outcome::Unsupported;
        cannot_judge_rest_ = true;
    }

    // ---- the control channel -------------------------------------------------------------------

    uint32_t region(const Line& ln) {
        const Field* f = field(ln, "mr");
        const std::string name = f ? f->text : (ln.args.empty() ? "" : ln.args[0]);
        auto it = regions_.find(name);
        if (it == regions_.end()) throw ScriptFault("unknown region '" + name + "' (declare it with 'mr')");
        return it->second;
    }

    void action(const Line& ln) {
        const std::string& v = ln.verb;
        static const std::pair<const char*, model::WorkOp> kPosts[] = {{"send", model::WorkOp::Send},
                                                                       {"write", model::WorkOp::Write},
                                                                       {"write_imm", model::WorkOp::WriteImm},
                                                                       {"read", model::WorkOp::Read},
                                                                       {"recv", model::WorkOp::Recv}};
        for (const auto& [name, op] : kPosts) {
            if (v != name) continue;
            allow_fields(ln, {"stream", "wr", "mr", "off", "len", "rva", "rkey", "imm", "result"});
            PostOp p;
            p.op = op;
            p.conn = conn_handle();
            p.stream = uint16_t(value_or(ln, "stream", 0));
            p.wr_id = uint64_t(value_or(ln, "wr", 1));
            p.region = region(ln);
            p.offset = uint64_t(value_or(ln, "off", 0));
            p.length = uint32_t(value_or(ln, "len", 0));
            p.remote_va = uint64_t(value_or(ln, "rva", 0x1000));
            p.rkey = uint32_t(value_or(ln, "rkey", 0x100));
            if (op == model::WorkOp::WriteImm) p.imm = uint32_t(value_or(ln, "imm", 0));
            const std::string err = dut_.post(p);
            const Field* want = field(ln, "result");
            const bool want_refused = want && want->text == "refused";
            if (want_refused && err.empty()) fail("the post was accepted; the test expects it refused at post time");
            if (!want_refused && !err.empty()) fail("the DUT refused the post: " + err);
            drain();
            return;
        }
        if (v == "close" || v == "abort") {
            dut_.close(conn_handle(), v == "abort" || (!ln.args.empty() && ln.args[0] == "abort"));
        } else if (v == "listen") {
            dut_.listen(ln.args.empty() || ln.args[0] != "off");
        } else if (v == "fill") {
            allow_fields(ln, {"mr", "off", "len", "stream", "msn"});
            const uint32_t r = region(ln);
            const uint64_t off = uint64_t(value_or(ln, "off", 0)), len = uint64_t(value_or(ln, "len", 0));
            std::vector<uint8_t> bytes(len);
            for (uint64_t i = 0; i < len; ++i)
                bytes[i] = pattern(uint16_t(value_or(ln, "stream", 9)), uint32_t(value_or(ln, "msn", 9)), i);
            dut_.write_mem(r, off, bytes);
        } else if (v == "dereg") {
            dut_.dereg_mr(region(ln));
        } else {
            throw ScriptFault("unknown action '" + v + "'");
        }
        drain();
    }

    uint32_t conn_handle() {
        if (!dut_conn_) throw ScriptFault("no connection is up on the DUT (use 'connect' first)");
        return *dut_conn_;
    }

    void await(const Line& ln) {
        const std::string& v = ln.verb;
        auto [lo, hi] = window(ln.time, true);
        if (v == "wc") {
            allow_fields(ln, {"wr", "status", "len", "imm", "op", "stream"});
            for (;;) {
                for (auto& [c, used] : wcs_) {
                    if (used) continue;
                    if (auto w = value(ln, "wr"); w && uint64_t(*w) != c.wr_id) continue;
                    used = true;
                    const int64_t want = value_or(ln, "status", 0);
                    if (int64_t(c.status) != want)
                        fail("completion of wr " + std::to_string(c.wr_id) + " has status " +
                             std::string(model::status_name(c.status)));
                    if (auto l = value(ln, "len"); l && *l != c.byte_len)
                        fail("completion of wr " + std::to_string(c.wr_id) + " has byte count " +
                             std::to_string(c.byte_len));
                    if (auto im = value(ln, "imm"); im && (!c.imm || int64_t(*c.imm) != *im))
                        fail("completion of wr " + std::to_string(c.wr_id) + " lacks the immediate");
                    if (dut_.now() < lo) {
                        timing_ = true;
                        res_.messages.push_back(where() + "completion came early: at +" +
                                                std::to_string(dut_.now() - prev_) + " us");
                    }
                    prev_ = dut_.now();
                    return;
                }
                if (dut_.now() >= hi) break;
                pump_step(control_poll_step(hi));
            }
            fail("no completion matching '" + ln.text + "' by +" + std::to_string(hi - prev_) + " us");
        } else if (v == "event") {
            const bool up = ln.args.empty() || ln.args[0] == "up";
            for (;;) {
                for (auto& [e, used] : events_) {
                    if (used || e.up != up) continue;
                    used = true;
                    if (auto st = value(ln, "status"); st && int64_t(e.status) != *st)
                        fail(std::string("connection event has status ") + std::string(model::status_name(e.status)));
                    prev_ = dut_.now();
                    return;
                }
                if (dut_.now() >= hi) break;
                pump_step(control_poll_step(hi));
            }
            fail("no connection " + std::string(up ? "Up" : "Down") + " event by +" + std::to_string(hi - prev_) +
                 " us");
        } else if (v == "no_wc") {
            // Like `> none`: the window as written, not widened (a tolerance would make it claim more).
            std::tie(lo, hi) = window(ln.time, false);
            pump_until(hi);
            // Only a completion seen by the window's end proves one in it: over a real port the
            // runner may look only later (a stall), and what it sees then may have come after.
            for (size_t k = 0; k < wcs_.size(); ++k) {
                const auto& [c, used] = wcs_[k];
                if (!used && wc_seen_at_[k] <= hi)
                    fail("unexpected completion of wr " + std::to_string(c.wr_id) + " (" +
                         std::string(model::status_name(c.status)) + ")");
            }
            prev_ = hi;
        } else if (v == "mem") {
            allow_fields(ln, {"mr", "off", "len", "stream", "msn", "moff", "zero"});
            pump_until(std::max(lo, dut_.now()));
            const uint32_t r = region(ln);
            const uint64_t off = uint64_t(value_or(ln, "off", 0)), len = uint64_t(value_or(ln, "len", 0));
            const auto bytes = dut_.read_mem(r, off, len);
            const bool zero = value_or(ln, "zero", 0) != 0;
            const uint16_t st = uint16_t(value_or(ln, "stream", 0));
            const uint32_t msn = uint32_t(value_or(ln, "msn", 0));
            const uint64_t moff = uint64_t(value_or(ln, "moff", 0));
            for (uint64_t i = 0; i < len; ++i) {
                const uint8_t want = zero ? 0 : pattern(st, msn, moff + i);
                if (bytes[i] != want) {
                    fail("memory at offset " + std::to_string(off + i) + " holds " + std::to_string(bytes[i]) +
                         ", expected " + std::to_string(want));
                    break;
                }
            }
        } else if (v == "counter") {
            pump_until(std::max(lo, dut_.now()));
            if (ln.args.empty()) throw ScriptFault("'? counter' needs a counter name");
            const auto now = dut_.counters();
            auto it = now.find(ln.args[0]);
            if (it == now.end()) {
                res_.outcome = Outcome::Unsupported;
                res_.messages.push_back(where() + "the DUT reports no counter '" + ln.args[0] + "'");
                return;
            }
            const uint64_t before = counters0_.count(ln.args[0]) ? counters0_.at(ln.args[0]) : 0;
            const int64_t delta = int64_t(it->second - before);
            if (auto m = value(ln, "min"); m && delta < *m)
                fail("counter " + ln.args[0] + " rose by " + std::to_string(delta) + ", expected at least " +
                     std::to_string(*m));
            if (auto m = value(ln, "max"); m && delta > *m)
                fail("counter " + ln.args[0] + " rose by " + std::to_string(delta) + ", expected at most " +
                     std::to_string(*m));
        } else {
            throw ScriptFault("unknown await '" + v + "'");
        }
    }

    // ---- directives ----------------------------------------------------------------------------

    void directive(const Line& ln) {
        const std::string& v = ln.verb;
        if (v == "mr") {
            if (ln.args.size() < 2) throw ScriptFault("'mr NAME LENGTH [rw|r|w|rwr|local|none]'");
            const std::string& name = ln.args[0];
            const uint64_t len = std::stoull(ln.args[1], nullptr, 0);
            const std::string acc = ln.args.size() > 2 ? ln.args[2] : "rwr";
            uint32_t a = model::access::kLocalWrite;
            if (acc == "rw" || acc == "w")
                a |= model::access::kRemoteWrite;
            else if (acc == "r")
                a |= model::access::kRemoteRead;
            else if (acc == "rwr")
                a |= model::access::kRemoteWrite | model::access::kRemoteRead;
            else if (acc == "none")
                a = 0;
            else if (acc != "local")
                throw ScriptFault("unknown access '" + acc + "'");
            const Region r = dut_.reg_mr(len, a);
            regions_[name] = r.handle;
            vars_[name + ".va"] = int64_t(r.va);
            vars_[name + ".rkey"] = r.rkey;
            vars_[name + ".len"] = int64_t(r.length);
            if (!vars_.count("mr.va")) {
                vars_["mr.va"] = int64_t(r.va);
                vars_["mr.rkey"] = r.rkey;
            }
        } else if (v == "auto_ack") {
            auto_ack_ = ln.args.empty() || ln.args[0] != "off";
            allow_fields(ln, {"delay", "ce"});
            ack_delay_us_ = uint64_t(value_or(ln, "delay", 0));
            ce_every_ = uint32_t(value_or(ln, "ce", 0));
        } else if (v == "connect") {
            connect(ln);
        } else {
            throw ScriptFault("unknown directive '" + v + "'");
        }
    }

    // `connect tester|dut [paths= streams= maxpay= wcap=]`: the handshake, judged like any frames.
    void connect(const Line& ln) {
        allow_fields(ln, {"paths", "streams", "maxpay", "wcap", "isn", "answer"});
        if (auto i = value(ln, "isn")) tester_isn_ = uint32_t(*i);
        const uint16_t paths = uint16_t(value_or(ln, "paths", 4)), streams = uint16_t(value_or(ln, "streams", 4));
        const uint16_t maxpay = uint16_t(value_or(ln, "maxpay", 4096)), wcap = uint16_t(value_or(ln, "wcap", 256));
        const bool by_dut = !ln.args.empty() && ln.args[0] == "dut";
        vars_["tester.id"] = tester_id_;
        vars_["tester.isn"] = tester_isn_;
        const Micros retry = dut_.info().connect_retry_us;  // CONNECT_RETRY [R-CONN-4]
        const Micros deadline = dut_.now() + 8 * (retry + Micros(tol_us_));
        if (!by_dut) {
            Line c;
            c.verb = "CONNECT";
            c.text = "CONNECT";
            ref::Packet p = base(Opcode::Connect, 0);
            p.dcid = 0;
            p.scid = tester_id_;
            p.isn = tester_isn_;
            p.path_count = paths, p.stream_count = streams, p.max_payload = maxpay, p.window_cap = wcap;
            // As a legal initiator: CONNECT again every CONNECT_RETRY, CONNECT_TRIES times [R-CONN-4]
            // (a DUT behind a real port may answer late, or the first CONNECT may be lost).
            const auto connect_frame = ref::encode(p, {});
            for (int tries = 0; tries < 8 && !up_; ++tries) {
                inject(connect_frame);
                const Micros until = dut_.now() + retry + Micros(tol_us_);
                while (!up_ && dut_.now() < until) pump_step(until);
            }
            if (!up_) throw DutError("no ACCEPT to 8 CONNECTs of the tester, CONNECT_RETRY apart");
        } else if (const Field* ans = field(ln, "answer"); ans) {
            // The DUT initiates and the tester stays silent: the script judges its CONNECTs.
            if (ans->text != "none") throw ScriptFault("answer takes none");
            dut_.connect(opt_.tester, ConnOffer{paths, streams, maxpay, wcap});
            t0_ = prev_ = dut_.now();
            cursor_ = seen_.size();
            drain();
            return;
        } else {
            dut_.connect(opt_.tester, ConnOffer{paths, streams, maxpay, wcap});
            drain();
            while (!dut_offer_ && dut_.now() < deadline) pump_until(std::min(deadline, dut_.now() + 10));
            if (!dut_offer_) throw DutError("the DUT sent no CONNECT");
            ref::Packet a = base(Opcode::Accept, 0);
            a.dcid = dut_offer_->scid;
            a.scid = tester_id_;
            a.isn = tester_isn_;
            a.path_count = std::min(paths, dut_offer_->path_count);
            a.stream_count = std::min(streams, dut_offer_->stream_count);
            a.max_payload = std::min(maxpay, dut_offer_->max_payload);
            a.window_cap = std::min(wcap, dut_offer_->window_cap);
            set_negotiated(a.path_count, a.stream_count, a.max_payload, a.window_cap);
            up_ = true;
            inject(ref::encode(a, {}));
        }
        const Micros up_deadline = dut_.now() + 1000 + 10 * Micros(tol_us_);
        while (!dut_conn_ && dut_.now() < up_deadline) pump_until(std::min(up_deadline, dut_.now() + 10));
        if (!dut_conn_) throw DutError("the DUT reported no connection Up event");
        for (auto& [e, used] : events_) used = true;
        t0_ = prev_ = dut_.now();
        cursor_ = seen_.size();
    }

    void step(const Line& ln) {
        switch (ln.kind) {
            case Line::Kind::Directive:
                directive(ln);
                return;
            case Line::Kind::Inject: {
                const Micros at = window(ln.time, false).first;
                pump_until(at);
                const auto frame = build(ln);
                const Micros when = dut_.now();  // real time: the moment it actually left
                inject(frame);
                prev_ = std::max(when, prev_);
                return;
            }
            case Line::Kind::Action: {
                const Micros at = window(ln.time, false).first;
                pump_until(at);
                const Micros when = dut_.now();
                action(ln);
                prev_ = std::max(when, prev_);
                return;
            }
            case Line::Kind::Expect:
                expect(ln, false);
                return;
            case Line::Kind::ExpectNone:
                expect(ln, true);
                return;
            case Line::Kind::Await:
                await(ln);
                return;
        }
    }

    const Script& sc_;
    Dut& dut_;
    RunOptions opt_;
    monitor::Monitor mon_;
    TestResult res_;
    const Line* line_ = nullptr;
    double tol_us_ = 0, tol_prop_ = 0, late_us_ = 0, late_prop_ = 0;
    uint64_t steps_at_instant_ = 0;  // DUT steps since its clock last moved (the livelock watchdog)
    uint64_t timeout_us_ = 0;
    Micros t0_ = 0, prev_ = 0;
    uint64_t frames_ = 0;
    bool timing_ = false;
    std::unique_ptr<CaptureWriter> pcap_;
    std::ofstream trace_;
    std::deque<Seen> seen_;
    size_t cursor_ = 0;
    std::vector<std::pair<DutCompletion, bool>> wcs_;
    std::vector<Micros> wc_seen_at_;  // when each of wcs_ was polled
    std::vector<std::pair<DutEvent, bool>> events_;
    std::map<std::string, int64_t> vars_;
    std::map<std::string, uint32_t> regions_;
    std::map<std::string, uint64_t> counters0_;
    // The connection.
    bool up_ = false;
    std::optional<uint32_t> dut_conn_;
    std::optional<ref::Packet> dut_offer_;
    uint32_t tester_id_ = 0x7e570001, tester_isn_ = 0, dut_id_ = 0, dut_isn_ = 0;
    uint16_t paths_ = 0, streams_ = 0, maxpay_ = 0, wcap_ = 0;
    std::vector<uint32_t> snxt_;  // tester's next PSN per path, relative to its ISN
    std::vector<TesterRx> rx_;
    bool auto_ack_ = false;
    bool cannot_judge_rest_ = false;  // a line assuming a SHOULD or a default choice went unmet
    uint64_t ack_delay_us_ = 0;
    uint32_t ce_every_ = 0;
    std::deque<std::pair<Micros, std::vector<uint8_t>>> delayed_;
};

}  // namespace

std::string unmet_qualifier(const Script& sc, const DutInfo& i) {
    for (const auto& q : sc.dut) {
        if (q.name == "ops") {
            size_t a = 0;
            while (a <= q.value.size()) {
                size_t b = q.value.find(',', a);
                if (b == std::string::npos) b = q.value.size();
                const std::string op = q.value.substr(a, b - a);
                if (std::find(i.ops.begin(), i.ops.end(), op) == i.ops.end()) return "the DUT does not support " + op;
                a = b + 1;
            }
            continue;
        }
        if (q.name == "ip") {
            if ((q.value == "6") != i.address.ipv6) return std::string("the test needs an IPv") + q.value + " DUT";
            continue;
        }
        if (q.name == "ipv4_fragments") {
            if (q.value != "delivered") return "bad qualifier value '" + q.value + "' (ipv4_fragments=delivered)";
            if (!i.ipv4_fragments)
                return "the DUT's port does not deliver IPv4 fragments as sent (it reassembles or holds them), so "
                       "dropping them cannot be observed";
            continue;
        }
        if (q.name == "time") {
            if (q.value == "virtual" && !i.virtual_time) return "the test needs a virtual-time DUT (exact timing)";
            continue;
        }
        int64_t have = 0;
        if (q.name == "paths")
            have = i.max_paths;
        else if (q.name == "streams")
            have = i.max_streams;
        else if (q.name == "maxpay")
            have = i.max_payload;
        else if (q.name == "wcap")
            have = i.window_cap;
        else
            return "unknown qualifier '" + q.name + "'";
        int64_t want = 0;
        const auto [end, ec] = std::from_chars(q.value.data(), q.value.data() + q.value.size(), want);
        if (ec != std::errc() || end != q.value.data() + q.value.size()) return "bad qualifier value '" + q.value + "'";
        const bool ok = q.op == ">=" ? have >= want : q.op == "<=" ? have <= want : have == want;
        if (!ok) return "the DUT offers " + q.name + " " + std::to_string(have) + ", the test needs " + q.op + q.value;
    }
    return "";
}

TestResult run_script(const Script& script, Dut& dut, const RunOptions& options) {
    std::string why = unmet_qualifier(script, dut.info());
    if (why.empty() && script.should && !options.strict) why = "a SHOULD-level test (run with --strict)";
    if (!why.empty()) {
        TestResult r;
        r.id = script.id;
        r.title = script.title;
        r.path = script.path;
        r.requires_ = script.requires_;
        r.outcome = Outcome::Unsupported;
        r.messages.push_back(why);
        return r;
    }
    Exec e(script, dut, options);
    return e.run();
}

}  // namespace mroce::conform
