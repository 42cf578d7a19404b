// The conformance monitor. See monitor.hpp for what it is; SPEC.md for every rule named here.
//
// Shape: each frame is decoded with the reference codec, attributed to a connection (learnt from
// CONNECT / ACCEPT) and a direction, and then
//   * judged as something its sender chose to send (stateless rules, sender rules), and
//   * fed, as something its receiver received, into a shadow of the receiver's state.
// The shadows mirror the executable model's state (spec_model/model) field for field where the
// wire determines it; what the wire does not determine (timers, lag) is bounded, not guessed.
#include "monitor/monitor.hpp"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <set>
#include <sstream>

#include "codec/ref_codec.hpp"

namespace mroce::monitor {

namespace {

using ref::Opcode;

bool slt(uint32_t a, uint32_t b) { return a != b && uint32_t(b - a) < 0x80000000u; }  // [R-PSN-1]
bool sle(uint32_t a, uint32_t b) { return a == b || slt(a, b); }

constexpr uint32_t kAckCoalesceMax = 16;  // [R-ACK-3]
constexpr Nanos kAckDelayMax = 16'000;    // ns
constexpr uint32_t kSpan = 256;           // [R-PSN-4]
constexpr uint32_t kRepathMax = 3;        // [R-PATH-4]
constexpr uint32_t kRnrRetryMax = 7;      // [R-PLC-9]
constexpr uint64_t kKeptPerRule = 20;     // violations listed per rule (all are counted)
constexpr Nanos kRunning = 50'000;        // real time: a receiver seen running this long is not stalled

// The requirement a sender breaks when its frame fails stateless validation (section 4).
const char* rule_for_error(ref::ErrorKind k) {
    using E = ref::ErrorKind;
    switch (k) {
        case E::Truncated:
        case E::EtherType:
            return "R-ENC-2";
        case E::IpVersion:
        case E::Ipv4Options:
        case E::IpLength:
        case E::Ipv4Checksum:
        case E::Fragment:
            return "R-ENC-3";
        case E::NotUdp:
            return "R-ENC-1";
        case E::UdpLength:
            return "R-ENC-8";
        case E::UdpPort:
            return "R-ENC-5";
        case E::UdpChecksum:
            return "R-ENC-7";
        case E::TransportLength:
            return "R-HDR-7";
        case E::Version:
            return "R-HDR-1";
        case E::Opcode:
            return "R-HDR-2";
        case E::Icrc:
            return "R-HDR-28";
        case E::Reserved:
            return "R-CONV-4";
        case E::PayloadLength:
            return "R-HDR-11";
        case E::Range:
            return "R-HDR-13";
        case E::SackBase:
            return "R-HDR-20";
    }
    return "R-VAL-1";
}

bool sack_bit(const ref::Packet& a, uint32_t i) { return (a.sack[i / 8] & (0x80u >> (i % 8))) != 0; }

std::string hex32(uint32_t v) {
    char b[16];
    std::snprintf(b, sizeof b, "0x%08x", v);
    return b;
}

bool is_data(Opcode op) { return ref::is_data_opcode(op); }

// A segment's identity in its direction: who it belongs to ([R-REL-5], [R-PLC-6]).
struct SegKey {
    bool response = false;
    uint16_t stream = 0;
    uint32_t msn = 0, offset = 0;
    auto operator<=>(const SegKey&) const = default;
};

// What a retransmission must repeat ([R-REL-5], [R-HDR-16]).
struct SegFields {
    Opcode op{};
    uint16_t stream = 0, plen = 0;
    uint32_t msn = 0, mlen = 0, moff = 0, rsn = 0, rkey = 0, imm = 0;
    uint64_t va = 0;
    static SegFields of(const ref::Packet& p) {
        return {p.opcode,     p.stream_id, p.payload_length, p.msn,       p.msg_length,
                p.msg_offset, p.rsn,       p.rkey,           p.immediate, p.remote_va};
    }
    bool same_except_payload(const SegFields& o) const {
        return op == o.op && stream == o.stream && msn == o.msn && mlen == o.mlen && moff == o.moff && rsn == o.rsn &&
               rkey == o.rkey && imm == o.imm && va == o.va;
    }
};

enum class PsnState : uint8_t { InFlight, Lost, RnrWait, Acked };
enum class PathState : uint8_t { Active, Suspect, Failed };

// The sending side of one path as the sender's received frames determine it: the model's PathTx.
struct TxPath {
    struct Out {
        SegFields seg;
        SegKey key;
        PsnState state = PsnState::InFlight;
        uint32_t tx_count = 0, last_tx_ts = 0, rnr_count = 0;
        uint16_t sport = 0;  // the route of its last transmission
        Nanos last_tx = 0, rnr_until = 0, acked_at = 0, void_since = 0;
        bool void_mode = false;
        uint64_t tx_frame = 0, ack_frame = 0, nak_frame = 0;
        // A NAK the sender may have processed after building a later copy (a real port hands the
        // receiver a burst of frames at once, and the sender pumps between them): the state before
        // it, for judging that copy, and the state it makes, still ahead of the sender after it.
        Nanos nak_at = -1, pre_nak_rnr_until = 0, late_rnr_until = 0;
        PsnState pre_nak_state = PsnState::InFlight, late_state = PsnState::InFlight;
        bool late_nak = false;
    };
    uint32_t suna = 0, snxt = 0;
    std::deque<Out> out;
    // [R-CC-1], [R-CC-2], [R-CC-4]: the window, and the windows the sender may have instead (real
    // time). A decrease period lasts until SUNA reaches the SNXT of the moment the sender processed
    // the CE-marked ACK; its sender pumps between the frames of a received burst, so new PSNs the
    // tap records after that ACK may count in that end: those it could have built before it
    // processed the ACK (`decided` within the lag of the ACK, and room for them in the window it
    // had before the ACK). Each candidate keeps the end as a range [end_lo, end_hi], growing with
    // such PSNs while `open_at` (the ACK's time) is set; an ACK whose SUNA falls inside it splits
    // the candidate (the period ended / not yet). In virtual time the range is one PSN and there
    // is one candidate: the model's window.
    struct Cc {
        uint32_t cwnd = 16, ai_count = 0, end_lo = 0, end_hi = 0;
        bool in_decrease = false;
        Nanos open_at = -1;
        uint32_t open_snxt = 0, open_inflight = 0;  // SNXT and PSNs in flight just before that ACK
    };
    std::vector<Cc> cc{Cc{}};
    uint32_t last_ce = 0;
    PathState state = PathState::Active;
    uint32_t consecutive_repaths = 0, backoff = 0;
    bool have_sample = false;
    uint16_t route = 0;
    bool have_route = false;
    Nanos last_ack = -1, last_repath = -1, last_ack_input = -1, suna_time = -1;
    uint64_t last_ack_frame = 0;
    // Windows in force just before the latest ACKs (time of the ACK, cwnd before it): a frame its
    // sender built before such an ACK reached it is held by that window [R-CC-3] (real time).
    std::deque<std::pair<Nanos, uint32_t>> cwnd_before;
    bool probe_outstanding = false;
    uint32_t probe_ts = 0;
    // [R-PATH-10]: the home route (0: none) and its probe; the route the path left for it,
    // and when (real time: frames the sender built before it processed that ACK still use it).
    uint16_t home_route = 0, left_route = 0;
    bool home_probe_outstanding = false;
    uint32_t home_probe_ts = 0;
    Nanos left_at = -1;
    // [R-PATH-10]: the earliest the next home probe may go, by the model's schedule (HOME_PROBE after
    // the re-path, then home_gap_us after the previous probe, the interval doubling after each up to
    // HOME_PROBE_MAX): on the tap's clock (virtual time) and the sender's (its timestamps, real
    // time); unknown while the re-path's time is. home_from_frame: the re-path or previous probe.
    bool home_due_known = false;
    Nanos home_due_at = 0;
    uint32_t home_due_ts = 0, home_gap_us = 0, home_interval_us = 0, home_probes = 0;
    uint64_t home_from_frame = 0;

    uint32_t max_cwnd() const {
        uint32_t w = 0;
        for (const auto& x : cc) w = std::max(w, x.cwnd);
        return w;
    }
    // Candidates in the same decrease state (period, or none, and its range) move in step: they
    // enter, split and leave periods together, and additive increase and halving keep their order
    // by (cwnd, count). The largest of each such group is the largest window at every later time:
    // the others are dropped.
    void prune_cc() {
        auto same = [](const Cc& a, const Cc& b) {
            return a.in_decrease == b.in_decrease && a.end_lo == b.end_lo && a.end_hi == b.end_hi &&
                   a.open_at == b.open_at;
        };
        for (size_t i = 0; i < cc.size(); ++i)
            for (size_t j = cc.size(); j-- > i + 1;)
                if (same(cc[i], cc[j])) {
                    if (std::pair(cc[j].cwnd, cc[j].ai_count) > std::pair(cc[i].cwnd, cc[i].ai_count)) cc[i] = cc[j];
                    cc.erase(cc.begin() + std::ptrdiff_t(j));
                }
    }
    uint32_t in_flight() const {
        uint32_t n = 0;
        for (const auto& o : out) n += o.state == PsnState::InFlight;
        return n;
    }
    Out* find(uint32_t psn) {
        const uint32_t i = psn - suna;
        return i < out.size() ? &out[i] : nullptr;
    }
};

// The receiving side of one path as the frames delivered to the receiver determine it: the
// model's PathRx, plus what the lag tolerance needs.
struct RxPath {
    uint32_t cpsn = 0;
    std::set<uint32_t> above;
    uint32_t ce_count = 0;
    struct Accepted {
        Nanos t;
        uint64_t frame;
        uint32_t psn;
        bool ce, is_void, counted, claimed;
        uint16_t stream;
        uint32_t msn;
        Opcode op;
    };
    std::deque<Accepted> recent;  // tentatively accepted, verdict (NAK) still possible
    // Copies of tentatively accepted PSNs that came again before the verdict: if the first copy
    // is refused, the receiver judges the next one afresh (a real-time receiver may NAK both).
    std::deque<Accepted> again;
    struct Stamp {
        Nanos t;
        uint64_t frame;
        uint32_t value;
    };
    std::deque<Stamp> ts_hist, route_hist;  // TSE and reply-route candidates within the lag
    bool ts_any = false, route_any = false;
    uint32_t unacked = 0;
    Nanos first_unacked = 0;
    uint64_t first_unacked_frame = 0;
    struct Obligation {
        Nanos deadline;
        uint64_t frame;
        std::string rule, what;
        std::optional<uint32_t> psn;
        Nanos overdue_seen = -1;      // real time: the receiver's first frame after the deadline
        Nanos last_running = -1;      // real time: the receiver's latest frame after the deadline
        uint64_t duplicate_copy = 0;  // the frame of the copy taken for a duplicate (0: none)
    };
    std::vector<Obligation> at_once;
    std::optional<Obligation> coalesce;
    std::map<uint32_t, std::vector<uint64_t>> claimed_by;  // PSN -> ACK frames that claimed it
    // The latest frame delivered on this path that the receiver has provably processed (an ACK
    // reflected it). Receivers take a port's frames in order, so everything delivered before it
    // was processed too; what came after may still wait in a queue (host stalls of any length).
    uint64_t frontier = 0;
};

struct StreamTx {
    uint32_t next_msn = 0, next_rsn = 0;
    bool open = false;  // a message with unsent segments
    uint32_t cur_msn = 0, cur_next_off = 0, cur_mlen = 0;
    SegFields cur_first;
};

struct Direction {  // data from `from` to the other side
    std::vector<TxPath> tx;
    std::vector<RxPath> rx;
    std::vector<StreamTx> streams;
    std::map<std::pair<uint16_t, uint32_t>, std::pair<Nanos, uint64_t>> failed;  // (stream, msn)
    std::map<SegKey, std::pair<uint16_t, uint32_t>> seg_owner;
    std::map<std::pair<uint16_t, uint32_t>, std::pair<uint8_t, uint64_t>> nak_code;  // message -> code
    // READ_REQs the receiver of this direction accepted, in order: its READ_RESPs answer them.
    struct ReadJob {
        uint16_t stream;
        uint32_t msn, mlen, next_off;
        uint64_t frame;
    };
    std::deque<ReadJob> reads_accepted;
    bool any_new = false;
    uint16_t last_path = 0;
    // [R-CC-6], [R-CC-7]: the rate ceiling of the sender of this direction and its credit.
    uint32_t ceiling = 0;
    Nanos hint_time = 0, credit_time = 0;
    int64_t credit = INT64_MIN;  // bits; INT64_MIN: not started (held at CREDIT_MAX)
    uint64_t hint_frame = 0;
};

struct Conn {
    Ip ip[2];
    uint32_t id[2] = {0, 0};
    uint32_t isn[2] = {0, 0};
    ref::Packet connect{}, accept{};
    bool have_accept = false, closing = false, failed = false;
    uint64_t connect_frame = 0, accept_frame = 0;
    uint16_t paths = 0, streams = 0, maxpay = 0, wcap = 0;
    Direction dir[2];
    Nanos last_delivered[2] = {0, 0};
    // [R-CC-1]: about INIT_WINDOW = 64 packets per connection in all, at most 16 per path.
    uint32_t init_cwnd() const {
        return std::max<uint32_t>(1, std::min<uint32_t>({16, wcap, paths ? 64u / paths : 16u}));
    }
    uint32_t cwnd_max() const { return std::min<uint32_t>(256, wcap); }
};

}  // namespace

std::string Ip::str() const {
    char buf[64];
    if (!v6) {
        std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", b[0], b[1], b[2], b[3]);
        return buf;
    }
    std::string s;
    for (int i = 0; i < 8; ++i) {
        std::snprintf(buf, sizeof buf, "%s%x", i ? ":" : "", unsigned(b[2 * i] << 8 | b[2 * i + 1]));
        s += buf;
    }
    return s;
}

std::optional<Ip> parse_ip(const std::string& text) {
    Ip ip;
    if (text.find(':') == std::string::npos) {
        unsigned a[4];
        char tail;
        if (std::sscanf(text.c_str(), "%u.%u.%u.%u%c", &a[0], &a[1], &a[2], &a[3], &tail) != 4) return std::nullopt;
        for (int i = 0; i < 4; ++i) {
            if (a[i] > 255) return std::nullopt;
            ip.b[i] = uint8_t(a[i]);
        }
        return ip;
    }
    ip.v6 = true;
    std::vector<std::string> head, tail;
    const size_t dc = text.find("::");
    auto split = [](const std::string& s, std::vector<std::string>& out) {
        if (s.empty()) return;
        size_t i = 0;
        while (true) {
            size_t j = s.find(':', i);
            out.push_back(s.substr(i, j == std::string::npos ? std::string::npos : j - i));
            if (j == std::string::npos) break;
            i = j + 1;
        }
    };
    if (dc == std::string::npos) {
        split(text, head);
        if (head.size() != 8) return std::nullopt;
    } else {
        split(text.substr(0, dc), head);
        split(text.substr(dc + 2), tail);
        if (head.size() + tail.size() > 7) return std::nullopt;
    }
    std::vector<std::string> groups = head;
    groups.resize(8 - tail.size(), "0");
    groups.insert(groups.end(), tail.begin(), tail.end());
    for (int i = 0; i < 8; ++i) {
        const std::string& g = groups[i];
        if (g.empty() || g.size() > 4) return std::nullopt;
        unsigned v = 0;
        for (char c : g) {
            int d = (c >= '0' && c <= '9')   ? c - '0'
                    : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                    : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                             : -1;
            if (d < 0) return std::nullopt;
            v = v * 16 + unsigned(d);
        }
        ip.b[2 * i] = uint8_t(v >> 8);
        ip.b[2 * i + 1] = uint8_t(v);
    }
    return ip;
}

double Monitor::Quality::figure() const {
    const double missing = double(unknown_connection + tap_loss);
    return frames == 0 ? 1.0 : std::max(0.0, 1.0 - missing / double(frames));
}

struct Monitor::State {
    Config cfg;
    std::vector<Violation> violations;
    std::map<std::string, RuleTally> tally;
    std::map<std::string, uint64_t> choice_counts;
    Quality q;
    std::set<Ip> seen, full_set;
    std::vector<std::unique_ptr<Conn>> conns;
    std::map<std::pair<Ip, uint32_t>, Conn*> by_local;    // (endpoint, its connection ID)
    std::map<std::pair<Ip, uint16_t>, uint32_t> last_ts;  // the latest timestamp each endpoint sent per route [R-HDR-6]

    // The frame being judged.
    uint64_t number = 0;
    Nanos now = 0;
    // When its sender built it: the capture time less the queueing delay its own timestamp shows
    // (the capture time minus the timestamp, above the smallest such difference seen of that
    // sender). A frame may wait in a transmit queue after its sender decided to send it; what the
    // sender knew is what it had received by then. Equal to `now` in virtual time.
    Nanos decided = 0;
    std::map<Ip, uint32_t> ts_offset;  // per sender: min over its frames of (capture µs - TS) mod 2^32
    // Per sender, the `decided` times of its latest two steps (frames decided at one time are one
    // step: built together). The earlier one shows the sender running then, its timers due by it
    // fired before the current step: `prev_step` for the frame being judged.
    std::map<Ip, std::pair<Nanos, Nanos>> steps;  // (latest, the one before)
    Nanos prev_step = -1;
    std::span<const uint8_t> bytes;
    ref::DecodeResult decoded;
    std::string judged_ip;

    explicit State(Config c) : cfg(std::move(c)) {
        for (const auto& ip : cfg.fully_observed) full_set.insert(ip);
    }

    bool full(const Ip& ip) const { return full_set.empty() || full_set.count(ip); }
    bool judged(const Ip& ip) const { return !cfg.judge_only || full_set.count(ip); }
    Nanos tol(Nanos span = 0) const { return cfg.tolerance + Nanos(cfg.tolerance_prop * double(span)); }
    std::string line() const { return ref::canonical(decoded, bytes); }

    void check(const char* rule) { ++tally[rule].checked; }
    void indeterminate(const char* rule) { ++tally[rule].indeterminate; }
    void violate(const char* rule, const Ip& who, std::string what, std::vector<uint64_t> because = {},
                 uint64_t frame = 0, std::string line_text = {}) {
        if (++tally[rule].violated > kKeptPerRule) return;  // counted, not listed again
        Violation v;
        v.rule = rule;
        v.frame = frame ? frame : number;
        v.line = frame ? std::move(line_text) : line();
        v.what = std::move(what);
        std::erase(because, uint64_t(0));
        v.because = std::move(because);
        v.endpoint = who.str();
        violations.push_back(std::move(v));
    }
    // check + violate when `ok` is false; returns ok.
    bool require(bool ok, const char* rule, const Ip& who, const std::string& what,
                 std::vector<uint64_t> because = {}) {
        check(rule);
        if (!ok) violate(rule, who, what, std::move(because));
        return ok;
    }
    void choice(const std::string& what) { ++choice_counts[what]; }

    // ---- obligations ---------------------------------------------------------------------------

    // Whether an obligation is broken. In virtual time: its deadline passed. In real time the
    // receiver may have been descheduled: it is broken only once the receiver is seen running
    // (sending other frames) for kRunning after the deadline without meeting it, judged kRunning
    // after that frame (the rest of the receiver's step, its ACK among them, comes right after).
    // Time alone proves nothing: a receiver that sent a frame after the deadline and was then
    // descheduled for ms (the ACK's timer fired when it ran again) met it as soon as it could.
    bool broken(const RxPath::Obligation& o, Nanos t) const {
        if (o.deadline >= t) return false;
        if (cfg.virtual_time) return true;
        return o.overdue_seen >= 0 && o.last_running - o.overdue_seen > kRunning && t - o.last_running > kRunning;
    }
    // A frame from `who`: it is running now.
    void running(const Ip& who, Nanos t) {
        for (auto& c : conns)
            for (int r = 0; r < 2; ++r) {
                if (!(c->ip[r] == who)) continue;
                for (auto& rx : c->dir[1 - r].rx) {
                    auto seen = [&](RxPath::Obligation& o) {
                        if (o.deadline >= t) return;
                        if (o.overdue_seen < 0) o.overdue_seen = t;
                        o.last_running = t;
                    };
                    for (auto& o : rx.at_once) seen(o);
                    if (rx.coalesce) seen(*rx.coalesce);
                }
            }
    }

    void expire(Conn& c, int r, Nanos t, bool before_next_packet) {
        for (uint16_t p = 0; p < c.dir[1 - r].rx.size(); ++p) {
            RxPath& rx = c.dir[1 - r].rx[p];
            for (auto it = rx.at_once.begin(); it != rx.at_once.end();) {
                if (broken(*it, t) || before_next_packet) {
                    if (cfg.judge_ack_deadlines)
                        violate(it->rule.c_str(), c.ip[r], it->what, {it->frame}, it->frame,
                                "(no ACK of path " + std::to_string(p) + " followed)");
                    else
                        indeterminate(it->rule.c_str());
                    it = rx.at_once.erase(it);
                } else {
                    ++it;
                }
            }
            if (rx.coalesce && broken(*rx.coalesce, t)) {
                if (cfg.judge_ack_deadlines)
                    violate("R-ACK-3", c.ip[r], rx.coalesce->what, {rx.coalesce->frame}, rx.coalesce->frame,
                            "(no ACK of path " + std::to_string(p) + " within ACK_DELAY_MAX)");
                else
                    indeterminate("R-ACK-3");
                rx.coalesce.reset();
            }
        }
    }
    void expire_all(Nanos t) {
        for (auto& c : conns)
            for (int r = 0; r < 2; ++r)
                if (c->have_accept && full(c->ip[r]) && judged(c->ip[r])) expire(*c, r, t, false);
    }

    // ---- the frame -------------------------------------------------------------------------------

    void frame(uint64_t n, Nanos t, std::span<const uint8_t> b) {
        number = n;
        now = t;
        bytes = b;
        decoded = ref::decode(b, cfg.udp_port);
        expire_all(t);
        if (!decoded.ok()) {
            on_bad_frame();
            return;
        }
        const ref::Packet& p = decoded.packet;
        ++q.frames;
        Ip src{p.ipv6, p.ip_src}, dst{p.ipv6, p.ip_dst};
        seen.insert(src);
        seen.insert(dst);
        decided = t;
        if (!cfg.virtual_time) {
            const uint32_t diff = uint32_t(uint64_t(t / 1000)) - p.timestamp;
            auto [it, fresh] = ts_offset.try_emplace(src, diff);
            if (!fresh && int32_t(diff - it->second) < 0) it->second = diff;
            const int32_t delay = int32_t(diff - it->second);
            if (delay > 0) decided = t - Nanos(delay) * 1000;
        }
        {
            auto [it, fresh] = steps.try_emplace(src, decided, Nanos(-1));
            if (!fresh && decided > it->second.first) it->second = {decided, it->second.first};
            prev_step = it->second.second;
        }
        if (judged(src)) stateless(src, p);
        if (!cfg.virtual_time) running(src, decided);
        switch (p.opcode) {
            case Opcode::Connect:
                on_connect(src, p);
                return;
            case Opcode::Accept:
                on_accept(src, dst, p);
                return;
            case Opcode::Reject:
            case Opcode::Disconnect:
            case Opcode::DisconnectAck: {
                if (auto it = by_local.find({dst, p.dcid}); it != by_local.end()) {
                    it->second->closing = true;
                    if (p.opcode == Opcode::Reject) it->second->failed = true;
                }
                return;
            }
            default:
                break;
        }
        auto it = by_local.find({dst, p.dcid});
        if (it == by_local.end() || !it->second->have_accept) {
            ++q.unknown_connection;
            // A sender that has a connection with this peer must name the peer's ID [R-HDR-4].
            for (auto& c : conns) {
                for (int s = 0; s < 2; ++s) {
                    if (c->have_accept && !c->closing && c->ip[s] == src && c->ip[1 - s] == dst && judged(src) &&
                        conns.size() == 1) {
                        require(false, "R-HDR-4", src,
                                "DCID " + hex32(p.dcid) + " names no connection of the peer (its ID is " +
                                    hex32(c->id[1 - s]) + ")");
                    }
                }
            }
            return;
        }
        Conn& c = *it->second;
        const int r = c.ip[1] == dst && c.id[1] == p.dcid ? 1 : 0;
        const int s = 1 - r;
        if (!(c.ip[s] == src)) {
            indeterminate("R-HDR-4");
            return;
        }
        // The receiver acts on the previous frame before this one [R-ACK-2] "at once".
        if (cfg.virtual_time && full(c.ip[r]) && judged(c.ip[r])) expire(c, r, t, true);
        c.last_delivered[r] = t;
        if (p.path_id >= c.paths) {
            if (judged(src))
                require(
                    false, "R-PATH-1", src,
                    "path ID " + std::to_string(p.path_id) + " >= negotiated path count " + std::to_string(c.paths));
            return;  // dropped by the receiver [R-SEC-3]
        }
        if (c.closing) return;
        if (!cfg.paths.empty() && std::find(cfg.paths.begin(), cfg.paths.end(), p.path_id) == cfg.paths.end()) {
            ++q.other_path_frames;  // a path the tap does not see whole
            return;
        }
        switch (p.opcode) {
            case Opcode::Ack:
                if (full(c.ip[s]) && judged(c.ip[s])) ack_sent(c, s, p);
                if (full(c.ip[r])) ack_delivered(c, r, p);
                return;
            case Opcode::Nak:
                if (full(c.ip[s]) && judged(c.ip[s])) nak_sent(c, s, p);
                if (full(c.ip[r])) nak_delivered(c, r, p);
                return;
            case Opcode::Probe:
                if (full(c.ip[s])) probe_sent(c, s, p);
                if (full(c.ip[r])) probe_delivered(c, r, p);
                return;
            default:
                if (full(c.ip[s])) data_sent(c, s, p);
                if (full(c.ip[r])) data_delivered(c, r, p);
                return;
        }
    }

    void on_bad_frame() {
        using E = ref::ErrorKind;
        const E k = *decoded.error;
        // Not MRoCE at all: other EtherTypes, other protocols, other UDP ports. A frame whose IP or
        // UDP header is broken is MRoCE only if its UDP destination port says so.
        const bool ip_level = k == E::IpVersion || k == E::Ipv4Options || k == E::IpLength || k == E::Ipv4Checksum ||
                              k == E::Fragment || k == E::UdpLength;
        const size_t udp_at = (bytes.size() >= 14 && bytes[12] == 0x86 && bytes[13] == 0xdd) ? 54 : 34;
        const bool our_port =
            bytes.size() >= udp_at + 4 && (uint16_t(bytes[udp_at + 2] << 8 | bytes[udp_at + 3]) == cfg.udp_port);
        if (k == E::Truncated || k == E::EtherType || k == E::NotUdp || k == E::UdpPort || (ip_level && !our_port)) {
            ++q.other_frames;
            return;
        }
        ++q.frames;
        // Attribute the malformed frame to its sender from the raw IP header, when present.
        Ip src;
        const bool v6 = bytes.size() >= 14 && bytes[12] == 0x86 && bytes[13] == 0xdd;
        if (!v6 && bytes.size() >= 34) {
            std::copy(bytes.begin() + 26, bytes.begin() + 30, src.b.begin());
        } else if (v6 && bytes.size() >= 54) {
            src.v6 = true;
            std::copy(bytes.begin() + 22, bytes.begin() + 38, src.b.begin());
        } else {
            return;
        }
        if (!judged(src) || !seen.count(src)) return;  // an injected bad frame, not judged
        require(false, rule_for_error(k), src,
                std::string("sent a malformed frame: ") + std::string(ref::error_name(k)));
    }

    // ---- stateless rules of a sent frame -----------------------------------------------------------

    void stateless(const Ip& src, const ref::Packet& p) {
        const bool data = is_data(p.opcode);
        // [R-ENC-9]: ECT(0) on data; a tap behind a switch may see CE on it.
        if (data) {
            require(p.ecn == 2 || (!cfg.exact_capture && p.ecn == 3), "R-ENC-9", src,
                    "data packet sent with ECN " + std::to_string(p.ecn) + " (must be ECT(0) = 2)");
        } else {
            require(p.ecn == 0, "R-ENC-9", src,
                    "non-data packet sent with ECN " + std::to_string(p.ecn) + " (must be Not-ECT)");
        }
        // [R-ENC-6]: data, probe and control packets carry the sender's route.
        if (p.opcode != Opcode::Ack && p.opcode != Opcode::Nak)
            require(p.udp_sport >= 49152, "R-ENC-6", src,
                    "UDP source port " + std::to_string(p.udp_sport) + " outside 49152..65535");
        require(p.udp_checksum == 0, "R-ENC-7", src, "UDP checksum sent non-zero");  // [R-ENC-7]
        // [R-VAL-4]: a conforming sender's frame is exactly what the reference encoder makes of its
        // fields (reserved bits zero, lengths and checksums right), up to the end of the IP packet.
        if (p.udp_checksum == 0) {
            std::vector<uint8_t> payload;
            if (data)
                payload.assign(bytes.begin() + p.payload_offset, bytes.begin() + p.payload_offset + p.payload_len);
            const std::vector<uint8_t> again = ref::encode(p, payload);
            require(again.size() <= bytes.size() && std::equal(again.begin(), again.end(), bytes.begin()), "R-VAL-4",
                    src, "the frame is not the canonical encoding of its own fields");
        }
        // [R-HDR-6]: the sender's clock, so its timestamps never go backwards. A repeated ACCEPT is
        // the first one again, byte for byte ([R-CONN-4], A-28): exempt. Capture order is send
        // order only within one queue: frames of different routes (UDP source ports) cross
        // different ECMP routes and planes, and a tap that merges an endpoint's plane ports (or one
        // far from it) interleaves them, so the timestamps of one route are compared.
        const bool repeated_accept = p.opcode == Opcode::Accept && by_local.count({src, p.scid});
        const uint16_t route = p.udp_sport;
        if (repeated_accept) {
        } else if (auto [it, fresh] = last_ts.try_emplace({src, route}, p.timestamp); !fresh) {
            require(!slt(p.timestamp, it->second), "R-HDR-6", src,
                    "timestamp " + std::to_string(p.timestamp) + " earlier than the sender's previous " +
                        std::to_string(it->second));
            it->second = p.timestamp;
        }
        if (cfg.strict) {
            if (!p.ipv6)
                require(p.ipv4_df, "R-ENC-3", src, "IPv4 DF not set (SHOULD)");
            else
                require(p.ipv6_flow_label == (p.udp_sport & 0xfffffu), "R-ENC-4", src,
                        "IPv6 flow label is not the low 20 bits of the source port (SHOULD)");
        }
    }

    // ---- connection setup [R-CONN-1..4] --------------------------------------------------------------

    void on_connect(const Ip& src, const ref::Packet& p) {
        auto it = by_local.find({src, p.scid});
        if (it != by_local.end()) {  // a retransmitted CONNECT [R-CONN-4]
            Conn& c = *it->second;
            if (judged(src))
                require(p.isn == c.connect.isn && p.path_count == c.connect.path_count &&
                            p.stream_count == c.connect.stream_count && p.max_payload == c.connect.max_payload &&
                            p.window_cap == c.connect.window_cap,
                        "R-CONN-4", src, "a retransmitted CONNECT changed its fields", {c.connect_frame});
            return;
        }
        auto c = std::make_unique<Conn>();
        c->ip[0] = src;
        c->id[0] = p.scid;
        c->isn[0] = p.isn;
        c->connect = p;
        c->connect_frame = number;
        by_local[{src, p.scid}] = c.get();
        conns.push_back(std::move(c));
        ++q.connections;
    }

    void on_accept(const Ip& src, const Ip& dst, const ref::Packet& p) {
        auto it = by_local.find({dst, p.dcid});
        if (it == by_local.end()) {
            ++q.unknown_connection;
            return;
        }
        Conn& c = *it->second;
        if (c.have_accept) {  // [R-CONN-4]: the same ACCEPT again
            if (judged(src) && c.ip[1] == src)
                require(p.scid == c.accept.scid && p.isn == c.accept.isn && p.path_count == c.accept.path_count &&
                            p.stream_count == c.accept.stream_count && p.max_payload == c.accept.max_payload &&
                            p.window_cap == c.accept.window_cap,
                        "R-CONN-4", src, "a repeated ACCEPT differs from the first", {c.accept_frame});
            return;
        }
        // [R-SEC-10]: an ACCEPT from an address the CONNECT did not go to is dropped by the initiator.
        if (!(src == Ip{c.connect.ipv6, c.connect.ip_dst})) {
            ++q.unknown_connection;
            return;
        }
        // [R-CONN-3]: the negotiated value is the minimum of both offers, so never above the
        // initiator's; an ACCEPT above it is the acceptor's violation, and the initiator drops it.
        const bool within_offer = p.path_count <= c.connect.path_count && p.stream_count <= c.connect.stream_count &&
                                  p.max_payload <= c.connect.max_payload && p.window_cap <= c.connect.window_cap;
        if (judged(src))
            require(within_offer, "R-CONN-3", src,
                    "ACCEPT offers more than the CONNECT did (the minimum of both offers)", {c.connect_frame});
        if (!within_offer) return;
        c.ip[1] = src;
        c.id[1] = p.scid;
        c.isn[1] = p.isn;
        c.accept = p;
        c.accept_frame = number;
        c.have_accept = true;
        c.paths = std::min(p.path_count, c.connect.path_count);
        c.streams = std::min(p.stream_count, c.connect.stream_count);
        c.maxpay = std::min(p.max_payload, c.connect.max_payload);
        c.wcap = std::min(p.window_cap, c.connect.window_cap);
        by_local[{src, p.scid}] = &c;
        for (int d = 0; d < 2; ++d) {
            Direction& dir = c.dir[d];
            dir.tx.assign(c.paths, TxPath{});
            dir.rx.assign(c.paths, RxPath{});
            dir.streams.assign(c.streams, StreamTx{});
            for (auto& t : dir.tx) {
                t.suna = t.snxt = c.isn[d];
                t.cc = {TxPath::Cc{.cwnd = c.init_cwnd()}};
            }
            for (auto& r : dir.rx) r.cpsn = c.isn[d] - 1;  // [R-HDR-19]
        }
    }

    // ---- the receiver's shadow ----------------------------------------------------------------------

    // Keeps what a later ACK may still legitimately not reflect: the entries after the frontier
    // (and, in real time, those of the last `tolerance`), and the stamps from the last one at or
    // before the frontier.
    void prune(RxPath& rx) {
        const Nanos horizon = now - tol() - 1;
        while (!rx.recent.empty() && rx.recent.front().frame <= rx.frontier && rx.recent.front().t < horizon)
            rx.recent.pop_front();
        while (!rx.again.empty() && rx.again.front().frame <= rx.frontier && rx.again.front().t < horizon)
            rx.again.pop_front();
        auto shrink = [&](std::deque<RxPath::Stamp>& h) {
            while (h.size() > 1 && h[1].frame <= rx.frontier) h.pop_front();
        };
        shrink(rx.ts_hist);
        shrink(rx.route_hist);
    }
    // Entries the ACK being judged may not reflect yet: delivered after the frontier, or (real
    // time) within the tolerance.
    bool may_lag(const RxPath& rx, const RxPath::Accepted& x) const {
        if (cfg.virtual_time) return false;
        return x.frame > rx.frontier || x.t >= now - tol();
    }
    static void mark(RxPath& rx, uint32_t psn) {
        rx.above.insert(psn);
        while (rx.above.count(rx.cpsn + 1)) {
            rx.above.erase(rx.cpsn + 1);
            ++rx.cpsn;
        }
    }
    static bool has(const RxPath& rx, uint32_t psn) { return sle(psn, rx.cpsn) || rx.above.count(psn); }
    static void unmark(RxPath& rx, uint32_t psn) {
        if (rx.above.erase(psn)) return;
        if (!sle(psn, rx.cpsn)) return;
        for (uint32_t x = psn + 1; sle(x, rx.cpsn); ++x) rx.above.insert(x);
        rx.cpsn = psn - 1;
    }
    // After prune(): the front is the latest stamp at or before the frontier, the rest came later.
    static bool stamp_allowed(const std::deque<RxPath::Stamp>& h, bool any, uint32_t v) {
        if (!any) return true;
        for (const auto& st : h)
            if (st.value == v) return true;
        return false;
    }
    void stamp(std::deque<RxPath::Stamp>& h, bool& any, uint32_t v) {
        h.push_back({now, number, v});
        any = true;
    }
    void at_once(RxPath& rx, const char* rule, const std::string& what, std::optional<uint32_t> psn) {
        check(rule);
        rx.at_once.push_back({now + tol(), number, rule, what, psn});
    }

    void data_delivered(Conn& c, int r, const ref::Packet& p) {
        Direction& d = c.dir[1 - r];
        RxPath& rx = d.rx[p.path_id];
        prune(rx);
        stamp(rx.route_hist, rx.route_any, p.udp_sport);  // [R-ACK-5]
        const uint32_t psn = p.psn;
        const bool in_window = slt(rx.cpsn, psn) && sle(psn, rx.cpsn + kSpan);  // [R-PSN-3]
        const bool ar = p.flags & ref::kFlagAr;
        if (!in_window && !sle(psn, rx.cpsn)) return;  // out of window: no state changes
        if (!in_window || rx.above.count(psn)) {       // duplicate [R-REL-8]
            // Kept in case the copy it duplicates is refused: in the window, or below CPSN only
            // through a tentative acceptance (a copy the receiver may still NAK).
            if (in_window || std::any_of(rx.recent.begin(), rx.recent.end(),
                                         [&](const RxPath::Accepted& x) { return x.psn == psn; }))
                rx.again.push_back({now, number, psn, p.ecn == 3, bool(p.flags & ref::kFlagVoid), false, false,
                                    p.stream_id, p.msn, p.opcode});
            stamp(rx.ts_hist, rx.ts_any, p.timestamp);
            at_once(rx, "R-ACK-2",
                    std::string("a duplicate data packet") + (ar ? " with AR" : "") + " must draw an ACK at once",
                    std::nullopt);
            rx.at_once.back().duplicate_copy = number;
            return;
        }
        // H, the highest PSN received before this one, as its distance past CPSN (0: nothing SACKed).
        uint32_t highest = 0;
        for (uint32_t q : rx.above) highest = std::max(highest, q - rx.cpsn);
        const uint32_t distance = psn - rx.cpsn;
        const bool ce = p.ecn == 3, is_void = p.flags & ref::kFlagVoid;
        mark(rx, psn);
        if (ce) ++rx.ce_count;
        stamp(rx.ts_hist, rx.ts_any, p.timestamp);
        const bool gap = distance > highest + 1, filled = distance < highest;  // (c) and (d), A-34
        const bool trigger = ar || gap || filled || ce || is_void;
        rx.recent.push_back({now, number, psn, ce, is_void, !trigger, false, p.stream_id, p.msn, p.opcode});
        if (p.opcode == Opcode::ReadReq && !is_void)
            c.dir[r].reads_accepted.push_back({p.stream_id, p.msn, p.msg_length, 0, number});
        if (trigger) {
            const char* why = ar       ? "AR"
                              : gap    ? "it opens a gap"
                              : filled ? "it fills a gap"
                              : ce     ? "it carries CE"
                                       : "it is a VOID";
            at_once(rx, "R-ACK-2", std::string("an accepted data packet must be ACKed at once: ") + why, psn);
            return;
        }
        // [R-ACK-3]: coalescing within ACK_COALESCE_MAX packets and ACK_DELAY_MAX.
        if (rx.unacked == 0) {
            rx.first_unacked = now;
            rx.first_unacked_frame = number;
            check("R-ACK-3");
            rx.coalesce = RxPath::Obligation{now + kAckDelayMax + tol(kAckDelayMax), number, "R-ACK-3",
                                             "an accepted data packet must be ACKed within ACK_DELAY_MAX (16 us)", psn};
        }
        ++rx.unacked;
        if (rx.unacked >= kAckCoalesceMax)
            at_once(rx, "R-ACK-3", "16 accepted data packets unacknowledged: the ACK is due at once", psn);
    }

    void probe_delivered(Conn& c, int r, const ref::Packet& p) {
        RxPath& rx = c.dir[1 - r].rx[p.path_id];
        prune(rx);
        stamp(rx.route_hist, rx.route_any, p.udp_sport);
        stamp(rx.ts_hist, rx.ts_any, p.timestamp);
        at_once(rx, "R-ACK-2", "a PROBE must draw an ACK at once", std::nullopt);
    }

    // An ACK the receiver `s` sent for path p of the direction toward it [R-ACK-4..7].
    void ack_sent(Conn& c, int s, const ref::Packet& a) {
        const Ip& who = c.ip[s];
        Direction& d = c.dir[1 - s];
        RxPath& rx = d.rx[a.path_id];
        prune(rx);
        std::vector<uint64_t> because;
        for (const auto& x : rx.recent) because.push_back(x.frame);
        // Soundness: everything it claims was received (and not refused).
        check("R-ACK-4");
        auto claimed = [&](uint32_t psn) {
            if (sle(psn, a.cpsn)) return true;
            const uint32_t i = psn - a.cpsn - 1;
            return i < 256 && sack_bit(a, i);
        };
        bool ok = true;
        std::string what;
        if (!sle(a.cpsn, rx.cpsn)) {
            ok = false;
            what =
                "CPSN " + hex32(a.cpsn) + " claims PSN " + hex32(rx.cpsn + 1) + ", which the receiver has not received";
        }
        for (uint32_t i = 1; ok && i < 256; ++i) {
            if (!sack_bit(a, i)) continue;
            const uint32_t psn = a.cpsn + 1 + i;
            if (!has(rx, psn)) {
                ok = false;
                what = "SACK bit " + std::to_string(i) + " claims PSN " + hex32(psn) +
                       ", which the receiver has not received";
            }
        }
        // The frontier moves to the latest delivered packet this ACK reflects (in virtual time:
        // everything delivered before it, since frames are processed before the next one comes).
        if (cfg.virtual_time) {
            rx.frontier = number - 1;
        } else {
            for (const auto& x : rx.recent)
                if (claimed(x.psn) && has(rx, x.psn)) rx.frontier = std::max(rx.frontier, x.frame);
        }
        // Completeness: everything received before the frontier is claimed.
        auto recent_psn = [&](uint32_t psn) {
            for (const auto& x : rx.recent)
                if (x.psn == psn && may_lag(rx, x)) return true;
            return false;
        };
        if (ok) {
            for (uint32_t x = a.cpsn + 1; slt(a.cpsn, x) && sle(x, rx.cpsn) && ok; ++x) {
                if (!claimed(x) && !recent_psn(x)) {
                    ok = false;
                    what = "PSN " + hex32(x) + " was received but this ACK (CPSN " + hex32(a.cpsn) +
                           ") does not report it";
                }
            }
            for (uint32_t x : rx.above) {
                if (!ok) break;
                if (!claimed(x) && !recent_psn(x)) {
                    ok = false;
                    what = "PSN " + hex32(x) + " was received but the ACK's SACK bitmap does not report it";
                }
            }
        }
        if (!ok) {
            if (!cfg.exact_capture) {
                ++q.tap_loss;
                indeterminate("R-ACK-4");
            } else {
                violate("R-ACK-4", who, what, because);
            }
        }
        for (auto& x : rx.recent)
            if (claimed(x.psn)) {
                x.claimed = true;
                rx.claimed_by[x.psn].push_back(number);
            }
        // [R-ACK-6] CE count: between the lagged and the current count.
        {
            uint32_t lagged = rx.ce_count;
            for (const auto& x : rx.recent)
                if (x.ce && may_lag(rx, x)) --lagged;
            require(uint32_t(a.ce_count - lagged) <= uint32_t(rx.ce_count - lagged), "R-ACK-6", who,
                    "CE count " + std::to_string(a.ce_count) + " but " + std::to_string(rx.ce_count) +
                        " CE-marked packets were accepted",
                    because);
        }
        // [R-ACK-7] timestamp echo; [R-ACK-5] reply route: the latest stamp at or before the
        // frontier, or a later one.
        prune(rx);
        require(stamp_allowed(rx.ts_hist, rx.ts_any, a.ts_echo), "R-ACK-7", who,
                "timestamp echo " + std::to_string(a.ts_echo) +
                    " is not the timestamp of the latest data or PROBE packet of the path (" +
                    (rx.ts_hist.empty() ? std::string("-") : std::to_string(rx.ts_hist.back().value)) + ")",
                because);
        require(stamp_allowed(rx.route_hist, rx.route_any, a.udp_sport), "R-ACK-5", who,
                "ACK sent from UDP port " + std::to_string(a.udp_sport) + ", not the path's reply route " +
                    (rx.route_hist.empty() ? std::string("-") : std::to_string(rx.route_hist.back().value)),
                because);
        // Obligations met by this ACK.
        for (auto it = rx.at_once.begin(); it != rx.at_once.end();) {
            if (!it->psn || claimed(*it->psn) || !has(rx, *it->psn))
                it = rx.at_once.erase(it);
            else
                ++it;
        }
        if (rx.coalesce) {
            choice("R-ACK-3: ACKs coalesced up to " + std::to_string(rx.unacked) + " packets");
            rx.coalesce.reset();
        }
        rx.unacked = 0;
    }

    // A NAK the receiver `s` sent [R-ACK-8], [R-SEC-7], [R-PLC-8].
    void nak_sent(Conn& c, int s, const ref::Packet& n) {
        const Ip& who = c.ip[s];
        Direction& d = c.dir[1 - s];
        RxPath& rx = d.rx[n.path_id];
        prune(rx);
        require(stamp_allowed(rx.route_hist, rx.route_any, n.udp_sport), "R-ACK-5", who,
                "NAK sent from UDP port " + std::to_string(n.udp_sport) + ", not the path's reply route");
        // The refused packet is one just accepted (tentatively) by the shadow.
        auto it = std::find_if(rx.recent.begin(), rx.recent.end(),
                               [&](const RxPath::Accepted& x) { return x.psn == n.nak_psn; });
        check("R-ACK-8");
        if (it == rx.recent.end()) {
            violate("R-ACK-8", who,
                    "NAK for PSN " + hex32(n.nak_psn) + ", which is not a data packet the receiver just refused");
            return;
        }
        const RxPath::Accepted x = *it;
        require(!x.is_void, "R-SEC-9", who, "a VOID packet was refused (VOIDs are accepted without content checks)",
                {x.frame});
        require(!x.claimed, "R-PLC-8", who,
                "PSN " + hex32(x.psn) + " was reported received by an ACK before this NAK refused it", {x.frame});
        // [R-SEC-7]: every packet of a refused message gets the same code (RNR may change).
        if (n.nak_code != uint8_t(ref::NakCode::Rnr)) {
            auto key = std::make_pair(x.stream, x.msn);
            auto [pos, fresh] = d.nak_code.try_emplace(key, n.nak_code, number);
            if (!fresh)
                require(pos->second.first == n.nak_code || n.nak_code == uint8_t(ref::NakCode::InvalidRequest),
                        "R-SEC-7", who, "packets of one message refused with different codes", {pos->second.second});
            else
                check("R-SEC-7");
        }
        // Undo the tentative acceptance: the NAKed PSN stays a hole.
        unmark(rx, x.psn);
        if (x.ce) --rx.ce_count;
        if (x.counted && rx.unacked > 0) --rx.unacked;
        if (rx.unacked == 0) rx.coalesce.reset();
        for (auto o = rx.at_once.begin(); o != rx.at_once.end();)
            o = (o->psn && *o->psn == x.psn) ? rx.at_once.erase(o) : o + 1;
        for (auto h = rx.ts_hist.begin(); h != rx.ts_hist.end(); ++h)
            if (h->frame == x.frame) {
                rx.ts_hist.erase(h);
                break;
            }
        if (x.op == Opcode::ReadReq) {
            auto& q2 = c.dir[s].reads_accepted;
            for (auto j = q2.begin(); j != q2.end(); ++j)
                if (j->frame == x.frame) {
                    q2.erase(j);
                    break;
                }
        }
        rx.recent.erase(it);
        // A later copy of the refused PSN, taken for a duplicate, is judged afresh: tentatively new.
        for (auto a = rx.again.begin(); a != rx.again.end(); ++a) {
            if (a->psn != x.psn || a->frame < x.frame) continue;
            RxPath::Accepted y = *a;
            rx.again.erase(a);
            // No longer a duplicate: it owes no duplicate's ACK (its own NAK or ACK follows). A
            // real-time receiver takes both copies in one burst and NAKs both after it.
            std::erase_if(rx.at_once, [&](const RxPath::Obligation& o) { return o.duplicate_copy == y.frame; });
            mark(rx, y.psn);
            if (y.ce) ++rx.ce_count;
            auto pos = std::find_if(rx.recent.begin(), rx.recent.end(),
                                    [&](const RxPath::Accepted& r) { return r.frame > y.frame; });
            rx.recent.insert(pos, y);
            break;
        }
    }

    // ---- the sender's shadow ------------------------------------------------------------------------

    // Real time: a path whose PSNs draw RNR NAKs. Its sender pumps between the frames of a received
    // burst, so which copy a NAK answered, and the order of its waits, retransmissions and RTO
    // against the NAKs, is not determined by the tap: its window and RTO bound are not judged.
    bool rnr_unsettled(const TxPath& t) const {
        if (cfg.virtual_time) return false;
        for (const auto& o : t.out)
            if (o.rnr_count > 0 || o.late_nak || o.state == PsnState::RnrWait) return true;
        return false;
    }
    bool settled(const TxPath& t, Nanos since) const {
        return cfg.virtual_time || since < 0 || since <= decided - tol() || t.last_ack_input < decided - tol();
    }

    // [R-PATH-4], [R-PATH-5]: an RTO expiry re-paths; a FAILED path adopts a working route.
    void infer_rto(Conn& c, int s, uint16_t path, const ref::Packet& p, uint64_t why_frame) {
        Direction& d = c.dir[s];
        TxPath& t = d.tx[path];
        const Ip& who = c.ip[s];
        // [R-REL-7]: the RTO cannot expire before RTO (>= RTO_MIN, or RTO_INIT before a sample,
        // doubled per backoff) after the later of the last ACK and the earliest in-flight send.
        Nanos earliest = INT64_MAX;
        uint32_t earliest_ts = 0;          // the sender's own clock of that transmission (BTH timestamp)
        uint16_t expired_route = t.route;  // the route the expired PSNs went out on
        for (const auto& o : t.out)
            if (o.state == PsnState::InFlight && o.last_tx < earliest)
                earliest = o.last_tx, earliest_ts = o.last_tx_ts, expired_route = o.sport;
        uint64_t base_us = t.have_sample ? cfg.rto_min_us : cfg.rto_init_us;
        for (uint32_t i = 0; i < t.backoff && base_us < cfg.rto_max_us; ++i) base_us *= 2;
        base_us =
            std::min<uint64_t>(base_us, std::max(cfg.rto_max_us, t.have_sample ? cfg.rto_min_us : cfg.rto_init_us));
        if (earliest != INT64_MAX && rnr_unsettled(t) && p.udp_sport == t.route) {
            // Real time, RNR activity, and no re-path: not an RTO (an expiry re-paths) but, most
            // likely, the retry of an RNR NAK that the tap recorded after the sender had processed
            // it. This PSN is taken as lost; the timers and the path state are not judged here.
            indeterminate("R-REL-7");
            indeterminate("R-PATH-4");
            if (TxPath::Out* o = t.find(p.psn); o && o->state == PsnState::InFlight)
                o->state = PsnState::Lost, o->acked_at = now;
            return;
        }
        // The earliest the expiry (the re-path) can have been, on the tap's clock (virtual time) or the
        // sender's (real time): the RTO bound, or this frame if it came first within the tolerance.
        // Unknown without an in-flight PSN, with RNR activity, or when the bound was broken.
        bool expiry_known = false;
        Nanos expiry_at = 0;
        uint32_t expiry_ts = 0;
        if (earliest != INT64_MAX && rnr_unsettled(t)) {
            indeterminate("R-REL-7");
        } else if (earliest != INT64_MAX && !cfg.virtual_time) {
            // A tap stamps frames when it sees them, possibly in bulk and late; the sender's own
            // timestamps say when it sent them. Only the in-flight send is known on that clock.
            const uint32_t waited = p.timestamp - earliest_ts;
            expiry_known = require(
                uint64_t(waited) + uint64_t(tol(Nanos(base_us) * 1000) / 1000) >= base_us, "R-REL-7", who,
                "retransmission before any loss evidence and before the RTO could expire (" + std::to_string(waited) +
                    " us after the earliest in-flight send, by the sender's own timestamps; RTO >= " +
                    std::to_string(base_us) + " us)",
                {why_frame});
            expiry_ts = waited >= base_us ? earliest_ts + uint32_t(base_us) : p.timestamp;
        } else if (earliest != INT64_MAX) {
            const Nanos from = std::max(earliest, t.last_ack);
            const Nanos due = from + Nanos(base_us) * 1000;
            expiry_known = require(now + tol(Nanos(base_us) * 1000) >= due, "R-REL-7", who,
                                   "retransmission before any loss evidence and before the RTO could expire (" +
                                       std::to_string((now - from) / 1000) +
                                       " us after the last ACK or send, RTO >= " + std::to_string(base_us) + " us)",
                                   {why_frame});
            expiry_at = std::min(due, now);
        }
        // The expiry declares the PSNs then in flight lost. A copy that already went out on the new
        // route (earlier in this burst: a PSN lost by a gap, held by the window until the expiry
        // emptied it) was sent after the re-path, so after the expiry: it stays in flight.
        for (auto& o : t.out)
            if (o.state == PsnState::InFlight && !(o.sport == p.udp_sport && o.sport != expired_route))
                o.state = PsnState::Lost, o.acked_at = now;
        ++t.backoff;
        t.probe_outstanding = false;
        // [R-PATH-10]: the first re-path of an ACTIVE path with no home route records the route it
        // leaves (cleared in data_sent if the new route is that one).
        if (t.state == PathState::Active && t.home_route == 0 && t.have_route) {
            t.home_route = t.route;
            t.home_probe_outstanding = false;
            // The first home probe HOME_PROBE after the re-path at the earliest.
            t.home_due_known = expiry_known;
            t.home_due_at = expiry_at + Nanos(cfg.home_probe_us) * 1000;
            t.home_due_ts = expiry_ts + cfg.home_probe_us;
            t.home_gap_us = t.home_interval_us = cfg.home_probe_us;
            t.home_probes = 0;
            t.home_from_frame = number;
        }
        // The re-path itself.
        if (t.state == PathState::Active) {
            t.state = PathState::Suspect;
            t.consecutive_repaths = 0;
        }
        ++t.consecutive_repaths;
        if (t.state == PathState::Suspect && t.consecutive_repaths >= kRepathMax) t.state = PathState::Failed;
        const Nanos previous = t.last_repath;
        t.last_repath = now;
        if (t.state == PathState::Failed) {
            for (uint16_t q2 = 0; q2 < c.paths; ++q2) {
                const TxPath& o = d.tx[q2];
                if (q2 != path && o.state == PathState::Active && o.last_ack > previous && o.have_route) {
                    require(p.udp_sport == o.route, "R-PATH-5", who,
                            "a FAILED path must adopt the route of path " + std::to_string(q2) + " (" +
                                std::to_string(o.route) + "), ACTIVE and acknowledged since its previous re-path",
                            {o.last_ack_frame});
                    choice("R-PATH-5: FAILED path adopted a working route");
                    return;
                }
            }
        }
        require(!t.have_route || p.udp_sport != expired_route, "R-PATH-4", who,
                "RTO expiry of path " + std::to_string(path) +
                    " without a re-path (the retransmission keeps UDP source port " + std::to_string(expired_route) +
                    ")",
                {why_frame});
        choice("R-PATH-5: fresh route on re-path");
    }

    void data_sent(Conn& c, int s, const ref::Packet& p) {
        Direction& d = c.dir[s];
        TxPath& t = d.tx[p.path_id];
        const Ip& who = c.ip[s];
        const bool j = judged(who);
        const bool retx = p.flags & ref::kFlagRetx, is_void = p.flags & ref::kFlagVoid;
        const SegFields f = SegFields::of(p);
        const uint32_t psn = p.psn;
        // Rules of every data packet.
        if (j)
            require(p.payload_length <= c.maxpay, "R-HDR-8", who,
                    "payload " + std::to_string(p.payload_length) + " above the negotiated Max Payload " +
                        std::to_string(c.maxpay));
        if (j)
            require(is_void || p.opcode == Opcode::ReadReq ||
                        (c.maxpay && p.msg_offset % c.maxpay == 0 &&
                         p.payload_length == std::min<uint32_t>(c.maxpay, p.msg_length - p.msg_offset)),
                    "R-HDR-14", who,
                    "segment at offset " + std::to_string(p.msg_offset) + " with " + std::to_string(p.payload_length) +
                        " bytes does not follow the segmentation of a " + std::to_string(p.msg_length) +
                        "-byte message");
        if (j && p.opcode == Opcode::ReadReq)
            require(p.msg_offset == 0 && p.payload_length == 0, "R-HDR-15", who, "READ_REQ with an offset or payload");
        if (j && p.stream_id >= c.streams)
            require(false, "R-MEM-4", who,
                    "data on stream " + std::to_string(p.stream_id) + " >= negotiated stream count");
        // A retransmission first tells what the sender's timers did: an RNR wait ended, or, when
        // the PSN was still in flight, an RTO expired [R-REL-7] (which declared the path's
        // in-flight PSNs lost).
        // [R-PATH-10] in real time: a frame on the route the path just left for its home route, built
        // before its sender processed the ACK that moved it, is no re-path.
        const bool before_home = !cfg.virtual_time && t.left_route != 0 && p.udp_sport == t.left_route &&
                                 t.left_at >= decided - tol() && p.udp_sport != t.route;
        PsnState after_nak = PsnState::InFlight;
        Nanos after_nak_until = 0;
        bool nak_unseen = false;  // this copy was built before its PSN's latest NAK may have reached the sender
        if (retx || is_void) {
            if (TxPath::Out* o = t.find(psn); o && o->state != PsnState::Acked) {
                if (o->state == PsnState::InFlight && o->late_nak) {
                    // The NAK the previous copy was built before: its loss evidence is still ahead.
                    o->state = o->late_state;
                    o->rnr_until = o->late_rnr_until;
                    o->late_nak = false;
                } else if (!cfg.virtual_time && o->nak_at >= decided - tol() && o->state != PsnState::InFlight) {
                    // Its latest NAK reached the sender around when it built this copy. Built before
                    // it (surely so, or because the copy does not fit the NAK's RNR wait): judged by
                    // what the sender knew before that NAK, whose state is still ahead of it.
                    const bool too_early = o->state == PsnState::RnrWait && decided + tol() < o->rnr_until;
                    if (o->nak_at > decided || too_early) {
                        nak_unseen = true;
                        after_nak = o->state;
                        after_nak_until = o->rnr_until;
                    }
                    if (too_early) {
                        o->state = o->pre_nak_state;
                        o->rnr_until = o->pre_nak_rnr_until;
                    }
                }
                // A PSN that was not in flight (NAKed, or its RNR wait over) sent again on a new
                // route: the path re-pathed since its previous frame, which only an RTO expiry does
                // in the model ([R-PATH-4]; the first copy after it is the lowest lost PSN, not
                // necessarily one that was in flight). The path is SUSPECT from then on [R-PATH-6].
                const bool expired =
                    o->state == PsnState::InFlight || (t.have_route && p.udp_sport != t.route && !before_home);
                if (o->state == PsnState::RnrWait) {
                    if (j)
                        require(decided + tol() >= o->rnr_until, "R-PLC-9", who,
                                "PSN " + hex32(psn) + " retransmitted " +
                                    std::to_string((o->rnr_until - decided) / 1000) + " us before its RNR wait ended",
                                {o->nak_frame});
                    o->state = PsnState::Lost;
                }
                if (expired) {
                    if (j)
                        infer_rto(c, s, p.path_id, p, o->tx_frame);
                    else
                        for (auto& x : t.out)
                            if (x.state == PsnState::InFlight) x.state = PsnState::Lost;
                }
            }
        }
        // [R-CC-3]: the window holds new data and retransmissions alike.
        const uint32_t inflight = t.in_flight();
        if (j) {
            // The largest window the sender may have judged by: the current one (any candidate), or
            // one in force before an ACK it may not have processed when it built this frame.
            uint32_t window = t.max_cwnd();
            while (!t.cwnd_before.empty() && t.cwnd_before.front().first < decided - tol()) t.cwnd_before.pop_front();
            for (const auto& [at, w] : t.cwnd_before) window = std::max(window, w);
            if (settled(t, -1) && !rnr_unsettled(t)) {
                require(inflight < window, "R-CC-3", who,
                        std::to_string(inflight) + " PSNs in flight on path " + std::to_string(p.path_id) +
                            " with cwnd " + std::to_string(window),
                        {t.last_ack_frame});
            } else {
                indeterminate("R-CC-3");
            }
        }
        if (!retx && !is_void) {
            new_segment(c, s, p, f, inflight);
        } else {
            TxPath::Out* o = t.find(psn);
            if (!o && slt(psn, t.suna) && slt(t.suna - kSpan, psn)) {
                // Below SUNA: acknowledged and forgotten. A violation once the sender surely knew.
                if (j) {
                    if (cfg.virtual_time || t.suna_time < decided - tol())
                        require(false, "R-REL-3", who,
                                "PSN " + hex32(psn) + " was retransmitted after it was acknowledged",
                                {t.last_ack_frame});
                    else
                        indeterminate("R-REL-3");
                }
                return;
            }
            if (!o && !cfg.exact_capture && slt(psn, t.snxt + kSpan)) {
                ++q.tap_loss;  // the tap missed its first transmission
                indeterminate("R-REL-5");
            } else if (j) {
                require(o != nullptr, "R-REL-5", who,
                        "retransmission of PSN " + hex32(psn) + ", which was never sent on path " +
                            std::to_string(p.path_id));
            }
            if (!o) return;
            if (j)
                require(is_void ? f.same_except_payload(o->seg) && p.payload_length == 0
                                : f.same_except_payload(o->seg) && f.plen == o->seg.plen,
                        is_void ? "R-HDR-16" : "R-REL-5", who,
                        std::string(is_void ? "the VOID of PSN " : "the retransmission of PSN ") + hex32(psn) +
                            " does not repeat the segment first sent with it",
                        {o->tx_frame});
            if (o->state == PsnState::Acked) {
                if (j) {
                    if (cfg.virtual_time || o->acked_at < decided - tol())
                        require(false, "R-REL-3", who,
                                "PSN " + hex32(psn) + " was retransmitted after it was acknowledged", {o->ack_frame});
                    else
                        indeterminate("R-REL-3");
                }
            } else {
                if (j) check("R-REL-3");
                if (is_void) {
                    if (j)
                        require(o->void_mode, "R-REL-9", who,
                                "VOID of PSN " + hex32(psn) + " whose work request did not fail", {o->tx_frame});
                } else if (o->void_mode && j) {
                    if (cfg.virtual_time || o->void_since < decided - tol())
                        require(false, "R-REL-9", who,
                                "PSN " + hex32(psn) + " of a failed work request retransmitted instead of voided",
                                {o->nak_frame});
                }
                // [R-REL-5]: retransmissions of a path in PSN order.
                if (j) {
                    bool lower_waiting = false;
                    for (uint32_t i = 0; i < t.out.size() && t.suna + i != psn; ++i)
                        lower_waiting = lower_waiting ||
                                        (t.out[i].state == PsnState::Lost && !(t.out[i].void_mode && !o->void_mode) &&
                                         (cfg.virtual_time || t.out[i].acked_at < decided - tol()));
                    require(!lower_waiting, "R-REL-5", who,
                            "PSN " + hex32(psn) + " retransmitted while a lower lost PSN of the path waits");
                }
            }
            refresh_credit(c, d);  // [R-CC-10]: not held by the credit, but it consumes it
            if (rate_limited(d)) d.credit -= int64_t(8) * (is_void ? 0 : p.payload_length);
            if (o->state != PsnState::Acked) o->state = PsnState::InFlight;
            if (nak_unseen && o->state == PsnState::InFlight) {
                o->late_nak = true;
                o->late_state = after_nak;
                o->late_rnr_until = after_nak_until;
            }
            ++o->tx_count;
            o->last_tx = now;
            o->last_tx_ts = p.timestamp;
            o->tx_frame = number;
            o->sport = p.udp_sport;
        }
        if (before_home) return;
        t.route = p.udp_sport;
        t.have_route = true;
        if (t.route == t.home_route) t.home_route = 0;  // [R-PATH-10]: the re-path went back home
    }

    // [R-CC-7] the model's refresh_credit: grows by ceiling x elapsed µs up to CREDIT_MAX while a
    // hint younger than HINT_TTL is in force; held at CREDIT_MAX otherwise.
    bool rate_limited(const Direction& d) const {
        return d.ceiling != 0 && now - d.hint_time <= Nanos(cfg.hint_ttl_us) * 1000;
    }
    void refresh_credit(Conn& c, Direction& d) {
        const int64_t max = int64_t(8) * 16 * c.maxpay;
        if (!rate_limited(d) || d.credit == INT64_MIN) {
            d.credit = max;
        } else {
            d.credit = std::min<int64_t>(max, d.credit + int64_t(d.ceiling) * ((now - d.credit_time) / 1000));
        }
        d.credit_time = now;
    }

    void new_segment(Conn& c, int s, const ref::Packet& p, const SegFields& f, uint32_t inflight) {
        Direction& d = c.dir[s];
        TxPath& t = d.tx[p.path_id];
        const Ip& who = c.ip[s];
        const bool j = judged(who);
        const uint32_t psn = p.psn;
        // [R-PSN-2]: the next PSN of the path, no skips; an earlier PSN again needs RETX [R-REL-5].
        if (j) {
            if (slt(psn, t.snxt)) {
                require(false, "R-REL-5", who, "PSN " + hex32(psn) + " sent again without the RETX flag");
            } else if (psn != t.snxt && !cfg.exact_capture) {
                ++q.tap_loss;  // the tap missed the PSNs between
                indeterminate("R-PSN-2");
            } else {
                require(
                    psn == t.snxt, "R-PSN-2", who,
                    "new PSN " + hex32(psn) + " on path " + std::to_string(p.path_id) + ", expected " + hex32(t.snxt));
            }
        }
        if (slt(psn, t.snxt)) {
            // Treat it as the retransmission it is, so the shadow stays in step.
            if (TxPath::Out* o = t.find(psn); o && o->state != PsnState::Acked) {
                o->state = PsnState::InFlight;
                ++o->tx_count;
                o->last_tx = now;
                o->last_tx_ts = p.timestamp;
            }
            return;
        }
        if (j) {
            // [R-PSN-4] span, [R-PATH-3] ACTIVE only, [R-REL-5] no new data while a loss waits.
            require(slt(psn, t.suna + kSpan), "R-PSN-4", who,
                    "PSN " + hex32(psn) + " beyond SUNA " + hex32(t.suna) + " + 256", {t.last_ack_frame});
            require(t.state == PathState::Active, "R-PATH-3", who,
                    "new data on path " + std::to_string(p.path_id) + " while it is " +
                        (t.state == PathState::Suspect ? "SUSPECT" : "FAILED") + " (after an RTO, before an ACK)");
            bool waiting = false, rnr_over = false;
            uint64_t lost_frame = 0, rnr_frame = 0;
            for (const auto& o : t.out) {
                if (o.state == PsnState::Lost && (cfg.virtual_time || o.acked_at < decided - tol())) {
                    waiting = true;
                    lost_frame = o.tx_frame;
                }
                // [R-PLC-9] an RNR wait that ended while the sender was running (an earlier step of
                // it came after the end): the PSN is lost then, and goes before new data.
                if (o.state == PsnState::RnrWait && prev_step >= 0 && o.rnr_until + tol() <= prev_step) {
                    rnr_over = true;
                    rnr_frame = o.nak_frame;
                }
            }
            require(!rnr_over, "R-PLC-9", who,
                    "new data on path " + std::to_string(p.path_id) +
                        " after an RNR wait ended without the PSN's retransmission",
                    {rnr_frame});
            require(!waiting, "R-REL-5", who,
                    "new data on path " + std::to_string(p.path_id) +
                        " while a lost PSN of the path waits for retransmission",
                    {lost_frame});
            // [R-PATH-8] record whether the default round robin would have picked this path.
            uint16_t rr = p.path_id;
            const uint16_t start = d.any_new ? uint16_t((d.last_path + 1) % c.paths) : 0;
            for (uint16_t i = 0; i < c.paths; ++i) {
                const uint16_t q2 = uint16_t((start + i) % c.paths);
                const TxPath& o = d.tx[q2];
                bool room = o.state == PathState::Active && o.in_flight() < o.max_cwnd() && slt(o.snxt, o.suna + kSpan);
                for (const auto& x : o.out) room = room && x.state != PsnState::Lost;
                if (room) {
                    rr = q2;
                    break;
                }
            }
            choice(rr == p.path_id ? "R-PATH-8: new segment on the default round-robin path"
                                   : "R-PATH-8: new segment on another ACTIVE path with room");
        }
        (void)inflight;
        // [R-CC-7], [R-CC-8]: a new data packet only while the credit is not negative.
        refresh_credit(c, d);
        if (rate_limited(d) && !cfg.paths.empty()) {
            indeterminate("R-CC-7");  // the credit is the connection's: other paths spend it too
        } else if (rate_limited(d)) {
            // The sender's clock and lag: judged only while the hint is surely known to it and
            // surely not expired.
            const bool settled_hint =
                cfg.virtual_time ||
                (d.hint_time <= decided - tol() && decided - d.hint_time <= Nanos(cfg.hint_ttl_us) * 1000 - tol());
            if (j && !settled_hint) {
                indeterminate("R-CC-7");
            } else if (j) {
                const int64_t slack = int64_t(d.ceiling) * (tol() / 1000);
                require(d.credit + slack >= 0, "R-CC-7", who,
                        "new data with the rate credit at " + std::to_string(d.credit) + " bits under a ceiling of " +
                            std::to_string(d.ceiling) + " Mb/s",
                        {d.hint_frame});
            }
            d.credit -= int64_t(8) * p.payload_length;
        }
        // Stream and message order [R-HDR-10], [R-HDR-17], [R-CC-9] (across paths: whole taps only).
        const bool whole = cfg.paths.empty();
        if (whole) stream_order(c, s, p, f);
        SegKey key{p.opcode == Opcode::ReadResp, p.stream_id, p.msn, p.msg_offset};
        if (j && whole) {
            auto [pos, fresh] = d.seg_owner.try_emplace(key, p.path_id, psn);
            require(fresh, "R-REL-5", who,
                    "segment (stream " + std::to_string(p.stream_id) + ", MSN " + std::to_string(p.msn) + ", offset " +
                        std::to_string(p.msg_offset) + ") sent again under a new PSN (first: path " +
                        std::to_string(pos->second.first) + " PSN " + hex32(pos->second.second) + ")");
        }
        TxPath::Out o;
        o.seg = f;
        o.key = key;
        o.tx_count = 1;
        o.last_tx = now;
        o.last_tx_ts = p.timestamp;
        o.tx_frame = number;
        o.sport = p.udp_sport;
        // A segment of a work request that has failed, built before its sender knew: the sender
        // voids it once it knows [R-REL-9].
        if (auto fit = d.failed.find({p.stream_id, p.msn}); fit != d.failed.end() && p.opcode != Opcode::ReadResp) {
            o.void_mode = true;
            o.void_since = fit->second.first;
        }
        t.out.push_back(o);
        t.snxt = psn + 1;
        // [R-CC-4] a PSN the sender may have sent before it processed a decreasing ACK: in SNXT
        // then, so in the decrease period's end. Before that ACK it had at least the PSNs in flight
        // then and the new ones since, and at most the largest window of the ACKs within the lag
        // (those it had not processed either: cwnd_before, up to that ACK's own entry). A frame
        // built surely after the ACK closes the range, and so do all later ones.
        for (auto& w : t.cc) {
            if (!w.in_decrease || w.open_at < 0) continue;
            uint32_t window = 0;
            for (const auto& [at, cw] : t.cwnd_before)
                if (at >= decided - tol() && at <= w.open_at) window = std::max(window, cw);
            const bool room = uint64_t(w.open_inflight) + (psn - w.open_snxt) < window;
            if (decided - tol() <= w.open_at && room)
                w.end_hi = t.snxt;
            else
                w.open_at = -1;
        }
        // A period split off to end above SUNA, closed with no PSN there: no such end.
        std::erase_if(t.cc,
                      [](const TxPath::Cc& w) { return w.in_decrease && w.open_at < 0 && slt(w.end_hi, w.end_lo); });
        t.prune_cc();
        d.any_new = true;
        d.last_path = p.path_id;
    }

    void stream_order(Conn& c, int s, const ref::Packet& p, const SegFields& f) {
        Direction& d = c.dir[s];
        const Ip& who = c.ip[s];
        const bool j = judged(who);
        if (p.stream_id >= d.streams.size()) return;
        if (p.opcode == Opcode::ReadResp) {
            // [R-PLC-4], [R-CC-9]: responses answer accepted READ_REQs, in order, segment by segment.
            auto& q2 = d.reads_accepted;
            const bool ok = !q2.empty() && q2.front().stream == p.stream_id && q2.front().msn == p.msn &&
                            q2.front().mlen == p.msg_length && q2.front().next_off == p.msg_offset;
            if (j)
                require(ok, "R-PLC-4", who,
                        q2.empty()
                            ? std::string("READ_RESP that answers no accepted READ_REQ")
                            : "READ_RESP out of order: expected stream " + std::to_string(q2.front().stream) + " MSN " +
                                  std::to_string(q2.front().msn) + " offset " + std::to_string(q2.front().next_off),
                        q2.empty() ? std::vector<uint64_t>{} : std::vector<uint64_t>{q2.front().frame});
            if (ok) {
                q2.front().next_off += std::max<uint32_t>(p.payload_length, 1);
                if (q2.front().next_off >= q2.front().mlen) q2.pop_front();
            }
            return;
        }
        StreamTx& st = d.streams[p.stream_id];
        const bool consumes = p.opcode == Opcode::Send || p.opcode == Opcode::WriteImm;
        // [R-REL-9] a failed work request gets no new segments, once its sender can know it failed:
        // a segment it built before the NAK reached it may still go out (the frame's `decided`).
        const auto failure_known = [&](uint32_t msn) {
            const auto it = d.failed.find({p.stream_id, msn});
            return it != d.failed.end() && (cfg.virtual_time || it->second.first < decided - tol());
        };
        if (st.open && d.failed.count({p.stream_id, st.cur_msn}) && (failure_known(st.cur_msn) || p.msn != st.cur_msn))
            st.open = false;  // abandoned
        if (st.open) {
            const bool ok = p.msn == st.cur_msn && p.msg_offset == st.cur_next_off &&
                            f.same_except_payload(SegFields{st.cur_first.op, st.cur_first.stream, 0, st.cur_first.msn,
                                                            st.cur_first.mlen, p.msg_offset, st.cur_first.rsn,
                                                            st.cur_first.rkey, st.cur_first.imm, st.cur_first.va});
            if (j)
                require(ok, "R-CC-9", who,
                        "stream " + std::to_string(p.stream_id) + ": expected the segment at offset " +
                            std::to_string(st.cur_next_off) + " of MSN " + std::to_string(st.cur_msn) +
                            " (work requests are segmented in posting order, with the same headers)");
            if (!ok && p.msn != st.cur_msn)
                st.open = false;
            else {
                st.cur_next_off = p.msg_offset + std::max<uint32_t>(p.payload_length, 1);
                if (st.cur_next_off >= st.cur_mlen) st.open = false;
                return;
            }
        }
        // A new message: the stream's next MSN, from offset 0 [R-HDR-10]; the next RSN [R-HDR-17].
        if (j)
            require(p.msn == st.next_msn && p.msg_offset == 0, "R-HDR-10", who,
                    "new message MSN " + std::to_string(p.msn) + " at offset " + std::to_string(p.msg_offset) +
                        " on stream " + std::to_string(p.stream_id) + ", expected MSN " + std::to_string(st.next_msn) +
                        " at offset 0");
        if (j && consumes)
            require(p.rsn == st.next_rsn, "R-HDR-17", who,
                    "RSN " + std::to_string(p.rsn) + ", expected " + std::to_string(st.next_rsn) +
                        " (RSNs count the stream's receive-consuming messages)");
        if (j) require(!failure_known(p.msn), "R-REL-9", who, "a new segment of a failed work request");
        st.next_msn = p.msn + 1;
        if (consumes) st.next_rsn = p.rsn + 1;
        st.cur_msn = p.msn;
        st.cur_mlen = p.msg_length;
        st.cur_first = f;
        st.cur_next_off = p.msg_offset + std::max<uint32_t>(p.payload_length, 1);
        st.open = p.opcode != Opcode::ReadReq && st.cur_next_off < st.cur_mlen;
    }

    void probe_sent(Conn& c, int s, const ref::Packet& p) {
        TxPath& t = c.dir[s].tx[p.path_id];
        if (judged(c.ip[s])) require(p.flags & ref::kFlagAr, "R-REL-6", c.ip[s], "PROBE without AR");
        if (t.have_route && t.home_route != 0 && p.udp_sport == t.home_route && p.udp_sport != t.route) {
            // [R-PATH-10]: a home probe, on the route the path had before its re-path; the path stays
            // on its current route until the probe's answer comes back on the home route.
            if (judged(c.ip[s])) home_probe_timing(t, c.ip[s], p);
            t.home_probe_outstanding = true;
            t.home_probe_ts = p.timestamp;
            // The model's schedule from this probe on: the interval, then doubled.
            t.home_due_known = true;
            t.home_due_at = now + Nanos(t.home_interval_us) * 1000;
            t.home_due_ts = p.timestamp + t.home_interval_us;
            t.home_gap_us = t.home_interval_us;
            t.home_interval_us = std::min(cfg.home_probe_max_us, 2 * t.home_interval_us);
            ++t.home_probes;
            t.home_from_frame = number;
            choice("R-PATH-10: home probe");
            return;
        }
        t.probe_outstanding = true;
        t.probe_ts = p.timestamp;
        t.route = p.udp_sport;
        t.have_route = true;
    }

    // [R-PATH-10]: a home probe goes no earlier than HOME_PROBE after the re-path, and no earlier than
    // the interval after the previous one (the tolerance allowed for: a timer firing early by less is
    // processing lag). A late one is no violation: a probe that fell due while the path did not
    // qualify goes once it does.
    void home_probe_timing(const TxPath& t, const Ip& who, const ref::Packet& p) {
        if (!t.home_due_known) {
            indeterminate("R-PATH-10");
            return;
        }
        const Nanos gap = Nanos(t.home_gap_us) * 1000;
        // How early it is against the schedule (> 0: before its time), by the clock that is exact.
        const Nanos early = cfg.virtual_time ? t.home_due_at - now : Nanos(int32_t(t.home_due_ts - p.timestamp)) * 1000;
        const std::string after = t.home_probes ? "the previous home probe" : "the re-path (its RTO bound)";
        require(early <= tol(gap), "R-PATH-10", who,
                "home probe " + std::to_string((gap - early) / 1000) + " us after " + after + ", before " +
                    (t.home_probes ? "the interval (" + std::to_string(t.home_gap_us) +
                                         " us: HOME_PROBE, doubling after each home probe up to HOME_PROBE_MAX)"
                                   : "HOME_PROBE (" + std::to_string(t.home_gap_us) + " us)"),
                {t.home_from_frame});
    }

    void fail_message(Direction& d, uint16_t stream, uint32_t msn) {
        d.failed.try_emplace({stream, msn}, now, number);
        for (auto& t : d.tx)
            for (auto& o : t.out)
                if (!o.key.response && o.key.stream == stream && o.key.msn == msn && o.state != PsnState::Acked &&
                    !o.void_mode) {
                    o.void_mode = true;
                    o.void_since = now;
                    o.nak_frame = number;
                }
    }

    // An ACK delivered to the data sender `r` (the model's on_ack, field for field).
    void ack_delivered(Conn& c, int r, const ref::Packet& a) {
        Direction& d = c.dir[r];
        TxPath& t = d.tx[a.path_id];
        // [R-ACK-10]: an ACK whose CPSN was never sent acts on nothing at the sender. On a tap that
        // missed the sender's latest frames the shadow SNXT is behind, so the verdict is the tap's
        // uncertainty, not the sender's: ignoring the ACK then only keeps PSNs in flight longer.
        if (!slt(a.cpsn, t.snxt)) {
            if (!cfg.exact_capture) indeterminate("R-ACK-10");
            return;
        }
        t.last_ack_input = now;
        const uint32_t inflight_before = t.in_flight();
        if (!cfg.virtual_time) {
            t.cwnd_before.push_back({now, t.max_cwnd()});
            if (t.cwnd_before.size() > 256) t.cwnd_before.pop_front();
        }
        // [R-CC-6]. The sender grows its credit at each of its pumps; some pumps show nothing on
        // the wire (timers that send nothing), so the change of ceiling takes effect from some
        // moment after its previous refresh: the monitor keeps the largest credit possible.
        {
            const int64_t max = int64_t(8) * 16 * c.maxpay;
            if (rate_limited(d) && a.rate_hint != 0 && d.credit != INT64_MIN)
                d.credit = std::min<int64_t>(
                    max, d.credit + int64_t(std::max(d.ceiling, a.rate_hint)) * ((now - d.credit_time) / 1000));
            else
                d.credit = max;
            d.credit_time = now;
        }
        d.ceiling = a.rate_hint;
        d.hint_time = now;
        d.hint_frame = number;
        // [R-ACK-10]: SACK bits naming PSNs never sent count as zero, for the gap rule too.
        auto sent = [&](uint32_t i) { return slt(a.cpsn + 1 + i, t.snxt); };
        auto acknowledged = [&](uint32_t psn) {
            if (sle(psn, a.cpsn)) return true;
            const uint32_t i = psn - a.cpsn - 1;
            return i < 256 && sack_bit(a, i) && sent(i);
        };
        uint32_t highest = a.cpsn;
        for (uint32_t i = 255; i > 0; --i)
            if (sack_bit(a, i) && sent(i)) {
                highest = a.cpsn + 1 + i;
                break;
            }
        uint32_t newly = 0;
        for (uint32_t i = 0; i < t.out.size(); ++i) {
            auto& o = t.out[i];
            if (o.state == PsnState::Acked || !acknowledged(t.suna + i)) continue;
            o.state = PsnState::Acked;
            o.rnr_count = 0;
            o.acked_at = now;
            o.ack_frame = number;
            ++newly;
        }
        const bool answered_probe = t.probe_outstanding && a.ts_echo == t.probe_ts;
        if (answered_probe) t.probe_outstanding = false;
        const bool answered_home = t.home_route != 0 && t.home_probe_outstanding && a.ts_echo == t.home_probe_ts &&
                                   a.udp_sport == t.home_route;  // [R-PATH-10]
        if (newly > 0 || answered_probe || answered_home) {
            t.have_sample = true;
            t.backoff = 0;
        }
        t.last_ack = now;
        t.last_ack_frame = number;
        while (!t.out.empty() && t.out.front().state == PsnState::Acked) {
            t.out.pop_front();
            ++t.suna;
            t.suna_time = now;
        }
        const bool ce_up = slt(t.last_ce, a.ce_count);
        if (ce_up) t.last_ce = a.ce_count;
        for (size_t k = 0, n = t.cc.size(); k < n; ++k) {
            TxPath::Cc w = t.cc[k];
            if (ce_up && !w.in_decrease) {  // [R-CC-4]
                w.cwnd = std::max<uint32_t>(1, w.cwnd / 2);
                w.ai_count = 0;
                w.in_decrease = true;
                w.end_lo = w.end_hi = t.snxt;
                w.open_at = cfg.virtual_time ? -1 : now;
                w.open_snxt = t.snxt;
                w.open_inflight = inflight_before;
            }
            if (w.in_decrease && sle(w.end_lo, t.suna)) {
                // Ended if the period's end is at most SUNA; a later end (a PSN above SUNA, or one
                // still to come while the range is open) keeps it going: both, as two candidates.
                if (w.open_at >= 0 || slt(t.suna, w.end_hi)) {
                    TxPath::Cc on = w;
                    on.end_lo = t.suna + 1;
                    t.cc.push_back(on);
                }
                w.in_decrease = false;
                w.end_lo = w.end_hi = w.open_snxt = w.open_inflight = 0;
                w.open_at = -1;
            }
            if (!w.in_decrease) {  // [R-CC-2]
                w.ai_count += newly;
                while (w.ai_count >= w.cwnd) {
                    w.ai_count -= w.cwnd;
                    w.cwnd = std::min(c.cwnd_max(), w.cwnd + 1);
                    if (w.cwnd == c.cwnd_max()) {
                        w.ai_count = std::min(w.ai_count, w.cwnd - 1);
                        break;
                    }
                }
            }
            t.cc[k] = w;
        }
        t.prune_cc();
        for (uint32_t i = 0; i < t.out.size(); ++i) {  // [R-REL-4] L1 and L2
            auto& o = t.out[i];
            if (o.state != PsnState::InFlight) continue;
            const uint32_t psn = t.suna + i;
            if ((o.tx_count == 1 && slt(psn, highest)) || (!answered_home && slt(o.last_tx_ts, a.ts_echo))) {
                o.state = PsnState::Lost;
                o.acked_at = now;  // (when the loss became known)
            }
        }
        if ((newly > 0 || answered_probe) && t.state != PathState::Active) {  // [R-PATH-6]
            t.state = PathState::Active;
            t.cc = {TxPath::Cc{.cwnd = c.init_cwnd()}};
            t.consecutive_repaths = 0;
        }
        if (answered_home) {  // [R-PATH-10]: back to the home route, ACTIVE, at INIT_CWND
            t.left_route = t.route;
            t.left_at = now;
            t.route = t.home_route;
            t.home_route = 0;
            t.home_probe_outstanding = false;
            t.state = PathState::Active;
            t.cc = {TxPath::Cc{.cwnd = c.init_cwnd()}};
            t.consecutive_repaths = 0;
        }
    }

    void nak_delivered(Conn& c, int r, const ref::Packet& n) {
        Direction& d = c.dir[r];
        TxPath& t = d.tx[n.path_id];
        TxPath::Out* o = t.find(n.nak_psn);
        if (!o || o->state == PsnState::Acked) return;
        o->nak_frame = number;
        o->acked_at = now;  // (when the loss became known, for the sender's lag: [R-REL-5])
        o->nak_at = now;
        o->pre_nak_state = o->state;
        o->pre_nak_rnr_until = o->rnr_until;
        o->late_nak = false;
        if (o->void_mode) {
            // [R-PLC-9]: an RNR for a PSN already voided is waited out too, without counting;
            // until its wait ends the PSN is not lost, and higher PSNs may go before it ([R-REL-5]).
            const bool rnr = n.nak_code == uint8_t(ref::NakCode::Rnr);
            o->state = rnr ? PsnState::RnrWait : PsnState::Lost;
            if (rnr) o->rnr_until = now + Nanos(n.nak_detail ? uint64_t(n.nak_detail) * 10 : cfg.rnr_default_us) * 1000;
            return;
        }
        if (n.nak_code == uint8_t(ref::NakCode::Rnr)) {
            ++o->rnr_count;
            if (o->rnr_count >= kRnrRetryMax && !o->key.response) {
                fail_message(d, o->key.stream, o->key.msn);
                o->void_mode = true;
                o->void_since = now;
                o->state = PsnState::Lost;
                return;
            }
            o->state = PsnState::RnrWait;
            o->rnr_until = now + Nanos(n.nak_detail ? uint64_t(n.nak_detail) * 10 : cfg.rnr_default_us) * 1000;
            return;
        }
        o->void_mode = true;
        o->void_since = now;
        o->state = PsnState::Lost;
        if (!o->key.response) fail_message(d, o->key.stream, o->key.msn);
    }
};

Monitor::Monitor(Config config) : s_(std::make_unique<State>(std::move(config))) {}
Monitor::~Monitor() = default;
Monitor::Monitor(Monitor&&) noexcept = default;
Monitor& Monitor::operator=(Monitor&&) noexcept = default;

void Monitor::frame(uint64_t number, Nanos time, std::span<const uint8_t> bytes) { s_->frame(number, time, bytes); }

void Monitor::finish(Nanos time) {
    s_->number = 0;
    s_->expire_all(time);
    // What is still open was not due yet: indeterminate, never a violation.
    for (auto& c : s_->conns)
        for (auto& d : c->dir)
            for (auto& rx : d.rx) {
                for (auto& o : rx.at_once) s_->indeterminate(o.rule.c_str());
                if (rx.coalesce) s_->indeterminate("R-ACK-3");
                rx.at_once.clear();
                rx.coalesce.reset();
            }
}

const std::vector<Violation>& Monitor::violations() const { return s_->violations; }
const std::map<std::string, RuleTally>& Monitor::tally() const { return s_->tally; }

std::vector<std::string> Monitor::choices() const {
    std::vector<std::string> out;
    for (const auto& [what, n] : s_->choice_counts) out.push_back(what + " (" + std::to_string(n) + "x)");
    return out;
}

Monitor::Quality Monitor::quality() const { return s_->q; }

std::vector<std::string> Monitor::endpoints() const {
    std::vector<std::string> out;
    for (const auto& ip : s_->seen) out.push_back(ip.str());
    return out;
}

std::vector<std::string> Monitor::fully_judged() const {
    std::vector<std::string> out;
    for (const auto& ip : s_->seen)
        if (s_->full(ip) && s_->judged(ip)) out.push_back(ip.str());
    return out;
}

}  // namespace mroce::monitor
