#include "netsim/checks.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <sstream>
#include <tuple>
#include <utility>

namespace mroce::harness {
namespace {

using model::Status;

std::string op_desc(const Scenario& s, size_t i) {
    const Op& op = s.workload.ops[i];
    return "op " + std::to_string(i) + " (" + side_char(op.side) + " " + std::string(op_kind_name(op.kind)) +
           " stream " + std::to_string(op.stream) + " len " + std::to_string(op.length) + " wr " +
           std::to_string(wr_id_of(i)) + ")";
}

// [offset, offset + len) inside a region of `size` bytes, without overflow; an empty range may sit
// at the end ([R-MEM-3]).
bool inside(uint64_t size, uint64_t off, uint64_t len) { return off <= size && len <= size - off; }

std::vector<size_t> posting_order(const Workload& w) {
    std::vector<size_t> order(w.ops.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return w.ops[a].at < w.ops[b].at; });
    return order;
}

bool is_failure_status(Status st) { return st == Status::ConnectionFailed || st == Status::Flushed; }

}  // namespace

Expectation expect(const Scenario& s) {
    const auto& ops = s.workload.ops;
    const auto& L = s.workload.layout;
    Expectation e;
    e.ops.resize(ops.size());
    // Per (side, connection, stream), in posting order: receives, and receive-consuming messages.
    using Key = std::tuple<int, uint16_t, uint16_t>;
    std::map<Key, std::vector<size_t>> recvs, consumers;
    for (size_t i : posting_order(s.workload)) {
        const Op& op = ops[i];
        auto& x = e.ops[i];
        if (!inside(L.region_size, op.local_off, op.length)) {  // [R-MEM-4]: no MSN / RSN either
            x.post_rejected = true;
            continue;
        }
        ExpectedCompletion c;
        c.side = op.side;
        c.stream = op.stream;
        c.kind = op.kind;
        x.completion = c;
        if (op.kind == OpKind::Recv) recvs[{int(op.side), op.conn, op.stream}].push_back(i);
        if (op.kind == OpKind::Send || op.kind == OpKind::WriteImm)
            consumers[{int(op.side), op.conn, op.stream}].push_back(i);
    }
    const auto remote_ok = [&](const Op& op) {  // [R-MEM-3]
        if (op.key != KeyChoice::Valid) return false;
        const uint64_t base = L.base[size_t(other(op.side))];
        const uint64_t va = base + op.remote_off;  // modulo 2^64, like the address on the wire
        return va >= base && inside(L.region_size, va - base, op.length);
    };
    // Message length of each successful completion (receives: their message's length).
    std::vector<uint32_t> success_len(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
        const Op& op = ops[i];
        auto& x = e.ops[i];
        success_len[i] = op.length;
        if (x.post_rejected || op.kind == OpKind::Send || op.kind == OpKind::WriteImm || op.kind == OpKind::Recv)
            continue;
        auto& c = *x.completion;
        if (!remote_ok(op)) {
            c.status = Status::RemoteAccess;
            continue;
        }
        c.status = Status::Success;
        if (op.kind == OpKind::Write) {
            x.placement = Placement{other(op.side), op.remote_off, op.side, op.local_off, op.length};
        } else {  // Read: the responder's bytes land in the requester's sink
            x.placement = Placement{op.side, op.local_off, other(op.side), op.remote_off, op.length};
        }
    }
    // Receive matching [R-MATCH-1]: the k-th accepted Send/WriteImm of a (connection, stream)
    // meets the k-th accepted receive of the peer's (connection, stream).
    for (const auto& [key, list] : consumers) {
        const auto& [side, conn, stream] = key;
        const auto& rl = recvs[{int(other(Side(side))), conn, stream}];
        for (size_t k = 0; k < list.size(); ++k) {
            const size_t i = list[k];
            const Op& op = ops[i];
            auto& c = *e.ops[i].completion;
            const bool refused_imm = op.kind == OpKind::WriteImm && !remote_ok(op);
            if (k >= rl.size()) {
                // No receive will ever be posted: RNR until the retries run out [R-PLC-9] (a
                // refused WriteImm is refused before RNR [R-SEC-9]).
                c.status = refused_imm ? Status::RemoteAccess : Status::RnrRetryExceeded;
                continue;
            }
            const size_t j = rl[k];
            const Op& rv = ops[j];
            auto& rc = *e.ops[j].completion;
            e.ops[i].matched_with = j;
            e.ops[j].matched_with = i;
            success_len[j] = op.length;
            if (refused_imm) {
                // [R-MEM-3] refused; its VOID cancels the RSN: the receive completes Canceled,
                // posted before or after the VOID [R-REL-9].
                c.status = Status::RemoteAccess;
                rc.status = Status::Canceled;
            } else if (rv.after_void) {
                // The receive is posted only after the sender gave up on RNR [R-PLC-9] and its
                // VOID arrived [R-REL-9].
                c.status = Status::RnrRetryExceeded;
                rc.status = Status::Canceled;
            } else if (op.kind == OpKind::Send) {
                if (op.length <= rv.length) {
                    c.status = rc.status = Status::Success;
                    e.ops[i].placement = Placement{rv.side, rv.local_off, op.side, op.local_off, op.length};
                } else {  // [R-MATCH-2]
                    c.status = Status::RemoteLength;
                    rc.status = Status::LocalLength;
                }
            } else {
                c.status = rc.status = Status::Success;
                rc.immediate = op.imm;
                e.ops[i].placement = Placement{rv.side, op.remote_off, op.side, op.local_off, op.length};
            }
        }
    }
    for (const auto& [key, rl] : recvs) {
        const auto& [side, conn, stream] = key;
        const auto it = consumers.find({int(other(Side(side))), conn, stream});
        const size_t n = it == consumers.end() ? 0 : it->second.size();
        for (size_t k = n; k < rl.size(); ++k)
            e.unsupported.push_back(op_desc(s, rl[k]) + ": a receive that no message consumes never completes");
    }
    // [R-CMP-4]: the byte count is the message length on success, 0 on error.
    for (size_t i = 0; i < ops.size(); ++i) {
        auto& c = e.ops[i].completion;
        if (c) c->byte_len = c->status == Status::Success ? success_len[i] : 0;
    }
    return e;
}

Tolerance tolerance_for_failed_connections(const Scenario& s, const RunResult& r) {
    Tolerance t;
    const uint16_t k = std::max<uint16_t>(s.connections, 1);
    t.conn_may_fail.assign(k, false);
    for (uint16_t j = 0; j < k; ++j)
        for (const auto& slots : r.slots) {
            if (j >= slots.size()) {
                t.conn_may_fail[j] = true;
                continue;
            }
            const auto& sl = slots[j];
            if (!sl.up() || sl.down_at) t.conn_may_fail[j] = true;
        }
    return t;
}

std::vector<Violation> check_exactly_once(const Scenario& s, const Expectation& e, const RunResult& r, Tolerance t) {
    std::vector<Violation> v;
    const auto& ops = s.workload.ops;
    // A per-connection tolerance (handshake faults) allows a connection that never came up.
    bool setup_may_fail = false;
    for (bool b : t.conn_may_fail) setup_may_fail = setup_may_fail || b;
    if (!r.setup_ok && !setup_may_fail) {
        v.push_back({"setup", r.end_time, "a connection A->B never came up"});
        return v;
    }
    std::vector<std::vector<const CompletionRecord*>> got(ops.size());
    for (const auto& c : r.completions) {
        const uint64_t wr = c.c.wr_id;
        if (wr == 0 || wr > ops.size() || ops[wr - 1].side != c.side) {
            v.push_back(
                {"exactly_once", c.at,
                 std::string("completion on ") + side_char(c.side) + " for unknown wr_id " + std::to_string(wr)});
            continue;
        }
        got[wr - 1].push_back(&c);
    }
    const auto conn_of = [&](Side side, uint16_t j) -> std::optional<uint32_t> {
        const auto& slots = r.slots[size_t(side)];
        if (j < slots.size()) return slots[j].id;
        return std::nullopt;
    };
    for (size_t i = 0; i < ops.size(); ++i) {
        const auto& x = e.ops[i];
        const auto& post = r.posts[i];
        const bool may_fail = t.may_fail(ops[i].conn);
        if (!post) {
            v.push_back({"exactly_once", r.end_time, op_desc(s, i) + " was never posted"});
            continue;
        }
        if (post->no_connection) {
            if (!may_fail)
                v.push_back({"post", post->at, op_desc(s, i) + " could not be posted: its connection never came up"});
            continue;
        }
        if (post->rejected && !x.post_rejected && may_fail) {
            // New work requests are refused once the connection has failed [R-CONN-8], or
            // before it ever came up.
            bool down = false;
            const auto& slots = r.slots[size_t(ops[i].side)];
            if (ops[i].conn < slots.size()) {
                const auto& sl = slots[ops[i].conn];
                down = !sl.up() || (sl.down_at && *sl.down_at <= post->at);
            }
            if (down) {
                if (!got[i].empty())
                    v.push_back(
                        {"exactly_once", got[i][0]->at, op_desc(s, i) + " was refused at post time but completed"});
                continue;
            }
        }
        if (post->rejected != x.post_rejected) {
            v.push_back({"post", post->at,
                         op_desc(s, i) + (post->rejected ? " was refused at post time: " + post->reason
                                                         : " should have been refused at post time "
                                                           "[R-MEM-4]")});
            continue;
        }
        if (x.post_rejected) {
            if (!got[i].empty())
                v.push_back({"exactly_once", got[i][0]->at, op_desc(s, i) + " was refused at post time but completed"});
            continue;
        }
        if (got[i].size() != 1) {
            v.push_back({"exactly_once", got[i].empty() ? r.end_time : got[i][1]->at,
                         op_desc(s, i) + " completed " + std::to_string(got[i].size()) +
                             " times (expected once) [R-CMP-1] [R-CMP-2]"});
            if (got[i].empty()) continue;
        }
        const auto& c = got[i][0]->c;
        const auto& ex = *x.completion;
        const auto at = got[i][0]->at;
        const auto want_conn = conn_of(ex.side, ops[i].conn);
        if (c.stream != ex.stream || c.op != work_op(ex.kind) || (want_conn && c.conn != *want_conn))
            v.push_back({"completion", at,
                         op_desc(s, i) + ": completion names conn " + std::to_string(c.conn) + " stream " +
                             std::to_string(c.stream) + " op " + std::string(model::work_op_name(c.op))});
        const bool tolerated = may_fail && is_failure_status(c.status);
        if (c.status != ex.status && !tolerated) {
            v.push_back({"completion", at,
                         op_desc(s, i) + ": status " + std::string(model::status_name(c.status)) + ", expected " +
                             std::string(model::status_name(ex.status))});
            continue;
        }
        // [R-CMP-4]: message length on success, 0 on error.
        const uint32_t want_len = c.status == Status::Success ? ex.byte_len.value_or(c.byte_len) : 0;
        if (c.byte_len != want_len)
            v.push_back({"completion", at,
                         op_desc(s, i) + ": byte_len " + std::to_string(c.byte_len) + " with status " +
                             std::string(model::status_name(c.status)) + ", expected " + std::to_string(want_len) +
                             " [R-CMP-4]"});
        if (c.status == Status::Success && ex.kind == OpKind::Recv && c.immediate != ex.immediate)
            v.push_back({"completion", at,
                         op_desc(s, i) + ": immediate " +
                             (c.immediate ? std::to_string(*c.immediate) : std::string("none")) + ", expected " +
                             (ex.immediate ? std::to_string(*ex.immediate) : std::string("none"))});
    }
    return v;
}

std::vector<Violation> check_memory(const Scenario& s, const Expectation& e, const RunResult& r, Tolerance t) {
    std::vector<Violation> v;
    const auto& L = s.workload.layout;
    const auto& ops = s.workload.ops;
    // Actual status of each op's completion (first one), for the tolerant mode.
    std::vector<std::optional<Status>> actual(ops.size());
    for (const auto& c : r.completions)
        if (c.c.wr_id >= 1 && c.c.wr_id <= ops.size() && !actual[c.c.wr_id - 1]) actual[c.c.wr_id - 1] = c.c.status;
    for (Side side : {Side::A, Side::B}) {
        std::vector<uint8_t> want = pattern(s.seed, side, false, 0, L.region_size);
        std::vector<uint8_t> alt;  // the other allowed value of bytes that may or may not be placed
        std::vector<int32_t> owner(L.region_size, -1);  // op whose placement covers the byte
        std::vector<bool> maybe;
        for (size_t i = 0; i < ops.size(); ++i) {
            const auto& p = e.ops[i].placement;
            if (!p || p->dst != side) continue;
            bool certain = true;
            if (t.may_fail(ops[i].conn)) {
                // Placed for sure only if the op (or its receive) reports success.
                const size_t j = e.ops[i].matched_with.value_or(i);
                certain =
                    actual[i] == Status::Success ||
                    ((ops[i].kind == OpKind::Send || ops[i].kind == OpKind::WriteImm) && actual[j] == Status::Success);
            }
            const auto src = pattern(s.seed, p->src, false, p->src_off, p->len);
            if (!certain && alt.empty()) {
                alt = want;
                maybe.assign(L.region_size, false);
            }
            for (uint64_t b = 0; b < p->len; ++b) {
                owner[p->dst_off + b] = int32_t(i);
                if (certain) {
                    want[p->dst_off + b] = src[b];
                } else {
                    alt[p->dst_off + b] = src[b];
                    maybe[p->dst_off + b] = true;
                }
            }
        }
        const auto& got = r.data_mem[size_t(side)];
        if (!got || got->size() != L.region_size) {
            v.push_back({"memory", r.end_time, std::string("cannot read DATA region of ") + side_char(side)});
        } else {
            uint64_t bad = 0, first = 0;
            for (uint64_t b = 0; b < L.region_size; ++b) {
                const uint8_t g = (*got)[b];
                if (g == want[b] || (!maybe.empty() && maybe[b] && g == alt[b])) continue;
                if (bad++ == 0) first = b;
            }
            if (bad) {
                std::string where =
                    owner[first] >= 0 ? "target of " + op_desc(s, size_t(owner[first])) : "outside every target";
                // Name the op whose own buffer (source / sink / receive) holds the byte, if any.
                for (size_t i = 0; i < ops.size() && owner[first] < 0; ++i) {
                    const Op& op = ops[i];
                    if (op.side == side && first >= op.local_off && first < op.local_off + op.length)
                        where += " (local buffer of " + op_desc(s, i) + ")";
                    const bool remote =
                        op.kind == OpKind::Write || op.kind == OpKind::WriteImm || op.kind == OpKind::Read;
                    if (remote && op.side != side && op.key == KeyChoice::Valid && first >= op.remote_off &&
                        first < op.remote_off + op.length)
                        where += " (remote target of " + op_desc(s, i) + ")";
                }
                v.push_back({"memory", r.end_time,
                             std::to_string(bad) + " wrong byte(s) in DATA of " + side_char(side) +
                                 ", first at offset " + std::to_string(first) + " (" + where + ") [R-SEC-6]"});
            }
        }
        const auto& guard = r.guard_mem[size_t(side)];
        if (!guard || *guard != pattern(s.seed, side, true, 0, L.guard_size))
            v.push_back({"memory", r.end_time,
                         std::string("GUARD region of ") + side_char(side) +
                             " changed or unreadable (it has no remote rights) [R-MEM-3]"});
    }
    return v;
}

std::vector<Violation> check_stream_order(const Scenario& s, const RunResult& r) {
    std::vector<Violation> v;
    const auto& ops = s.workload.ops;
    // Last post sequence number seen per (side, connection, stream, receive?).
    std::map<std::tuple<int, uint32_t, uint16_t, bool>, std::pair<uint64_t, uint64_t>> last;  // seq, wr
    for (const auto& c : r.completions) {
        const uint64_t wr = c.c.wr_id;
        if (wr == 0 || wr > ops.size() || !r.posts[wr - 1]) continue;
        const Op& op = ops[wr - 1];
        const auto key = std::make_tuple(int(c.side), c.c.conn, op.stream, op.kind == OpKind::Recv);
        const uint64_t seq = r.posts[wr - 1]->seq;
        auto it = last.find(key);
        if (it != last.end() && it->second.first > seq)
            v.push_back({"stream_order", c.at,
                         op_desc(s, wr - 1) + " completed after wr " + std::to_string(it->second.second) +
                             ", which was posted later on the same stream " +
                             (op.kind == OpKind::Recv ? "[R-CMP-2]" : "[R-CMP-1]")});
        if (it == last.end() || it->second.first < seq) last[key] = {seq, wr};
    }
    return v;
}

model::Time settle_bound(const Scenario& s) {
    model::Time rto_max = 0, rnr = 0, ack_delay = 0, fs = 0;
    uint32_t mtu = 8192;
    for (const auto& c : s.config) {
        rto_max = std::max<model::Time>(rto_max, c.rto_max_us);
        rnr = std::max<model::Time>(
            rnr, model::Time(std::max(c.rnr_default_us, uint32_t(c.rnr_detail) * 10)) * (c.rnr_retry_max + 1));
        ack_delay = std::max<model::Time>(ack_delay, c.ack_delay_us);
        fs = std::max<model::Time>(fs, c.fs_interval_us);
        mtu = std::min<uint32_t>(mtu, std::max<uint16_t>(c.max_payload, 256));
    }
    uint64_t packets = 0;
    for (const auto& op : s.workload.ops) packets += op.length / mtu + 2;
    const model::Time rtt = 2 * model::Time(s.net.base_delay_us) + ack_delay + 16;
    // A timer backed off to RTO_MAX may be pending when faults stop; after it, every route works.
    // Then: RNR waits, one RTT per packet even at a window of one, the rate hint's ramp from its
    // floor (doubling per FS_INTERVAL, [R-FS-3]), and margin.
    return 2 * rto_max + rnr + packets * rtt + 20 * fs + 2000;
}

std::vector<Violation> check_settles(const Scenario& s, const RunResult& r, model::Time bound) {
    std::vector<Violation> v;
    if (!r.quiescent_at) {
        size_t missing = 0;
        std::vector<bool> done(s.workload.ops.size());
        for (const auto& c : r.completions)
            if (c.c.wr_id >= 1 && c.c.wr_id <= done.size()) done[c.c.wr_id - 1] = true;
        std::string first;
        for (size_t i = 0; i < done.size(); ++i)
            if (!done[i] && r.posts[i] && !r.posts[i]->rejected && missing++ == 0) first = op_desc(s, i);
        v.push_back({"settles", r.end_time,
                     std::string(r.hit_time_limit ? "time limit reached" : "run ended") +
                         " without quiescence: " + std::to_string(missing) + " posted WR(s) never completed" +
                         (first.empty() ? std::string() : ", first " + first) + "; outstanding A=" +
                         std::to_string(r.final_outstanding[0]) + " B=" + std::to_string(r.final_outstanding[1])});
        return v;
    }
    model::Time start = s.net.faults_until == kNever ? 0 : s.net.faults_until;
    for (const auto& p : r.posts)
        if (p) start = std::max(start, p->at);
    model::Time last = 0;
    for (const auto& c : r.completions) last = std::max(last, c.at);
    if (last > start + bound)
        v.push_back({"settles", last,
                     "last completion " + std::to_string(last - start) +
                         " us after faults stopped / the last post; bound " + std::to_string(bound)});
    return v;
}

std::vector<Violation> check_dead_network(const Scenario& s, const RunResult& r) {
    std::vector<Violation> v;
    model::Time dead = 0;
    for (const auto& le : s.schedule.link_events) dead = std::max(dead, le.at);
    model::Time bound = 0;
    for (const auto& c : s.config)
        bound = std::max<model::Time>(bound,
                                      model::Time(c.keepalive_us) + c.peer_timeout_us + 2 * model::Time(c.rto_max_us));
    bound += 10000;
    if (!r.quiescent_at)
        v.push_back({"dead_network", r.end_time,
                     "nothing may hang: no quiescence with every connection down by " + std::to_string(r.end_time) +
                         " [R-CONN-8]"});
    for (Side side : {Side::A, Side::B}) {
        const auto& slots = r.slots[size_t(side)];
        for (size_t j = 0; j < slots.size(); ++j) {
            const auto& sl = slots[j];
            if (!sl.up()) continue;
            const std::string who = std::string("connection ") + std::to_string(j) + " of " + side_char(side);
            if (sl.downs != 1) {
                v.push_back({"dead_network", r.end_time,
                             who + " reported down " + std::to_string(sl.downs) + " times, expected once [R-CONN-8]"});
            } else {
                if (sl.down_status != Status::ConnectionFailed)
                    v.push_back({"dead_network", *sl.down_at,
                                 who + ": ConnectionDown has status " +
                                     std::string(model::status_name(sl.down_status)) + ", expected ConnectionFailed"});
                if (*sl.down_at > dead + bound)
                    v.push_back({"dead_network", *sl.down_at,
                                 who + " failed " + std::to_string(*sl.down_at - dead) +
                                     " us after the network died; bound " + std::to_string(bound)});
            }
            if (sl.final_state && *sl.final_state != model::ConnState::Failed)
                v.push_back(
                    {"dead_network", r.end_time,
                     who + ": state " + std::string(model::conn_state_name(*sl.final_state)) + ", expected Failed"});
        }
        if (r.final_outstanding[size_t(side)] != 0)
            v.push_back({"dead_network", r.end_time, std::string("outstanding work left on ") + side_char(side)});
    }
    return v;
}

std::vector<Violation> check_connections(const Scenario& s, const RunResult& r) {
    std::vector<Violation> v;
    const uint16_t k = std::max<uint16_t>(s.connections, 1);
    for (Side side : {Side::A, Side::B}) {
        const auto& slots = r.slots[size_t(side)];
        for (uint16_t j = 0; j < k; ++j) {
            const std::string who = std::string("connection ") + std::to_string(j) + " of " + side_char(side);
            if (j >= slots.size() || !slots[j].up()) {
                v.push_back({"connection", r.end_time, who + " never came up [R-CONN-4]"});
                continue;
            }
            if (slots[j].down_at)
                v.push_back({"connection", *slots[j].down_at,
                             who + " went down (" + std::string(model::status_name(slots[j].down_status)) +
                                 ") although the network recovered [R-CONN-8]"});
        }
    }
    return v;
}

model::Time failure_bound(const Scenario& s) {
    model::Time extra = 0;
    for (const auto& c : s.config)
        extra = std::max<model::Time>(
            extra, model::Time(c.connect_tries) * c.connect_retry_us + c.keepalive_us + c.peer_timeout_us);
    return settle_bound(s) + extra;
}

std::vector<Violation> check_clean_failure(const Scenario& s, const RunResult& r) {
    std::vector<Violation> v;
    if (!r.quiescent_at) {
        auto more = check_settles(s, r, failure_bound(s));  // names what never completed
        for (auto& x : more) x.check = "clean_failure";
        v.insert(v.end(), more.begin(), more.end());
        return v;
    }
    model::Time start = s.net.faults_until == kNever ? 0 : s.net.faults_until;
    for (const auto& p : r.posts)
        if (p) start = std::max(start, p->at);
    if (*r.quiescent_at > start + failure_bound(s))
        v.push_back({"clean_failure", *r.quiescent_at,
                     "quiescent only " + std::to_string(*r.quiescent_at - start) +
                         " us after faults stopped / the last post; bound " + std::to_string(failure_bound(s))});
    for (Side side : {Side::A, Side::B}) {
        const auto& slots = r.slots[size_t(side)];
        for (size_t j = 0; j < slots.size(); ++j) {
            const auto& sl = slots[j];
            const std::string who = std::string("connection ") + std::to_string(j) + " of " + side_char(side);
            if (sl.downs > 1)
                v.push_back(
                    {"clean_failure", r.end_time, who + " reported down " + std::to_string(sl.downs) + " times"});
            if (!sl.down_at) continue;
            // No workload closes a connection: going down means failing [R-CONN-4], [R-CONN-8].
            if (sl.down_status != Status::ConnectionFailed)
                v.push_back({"clean_failure", *sl.down_at,
                             who + ": ConnectionDown has status " + std::string(model::status_name(sl.down_status)) +
                                 ", expected ConnectionFailed"});
            if (sl.final_state && *sl.final_state != model::ConnState::Failed)
                v.push_back(
                    {"clean_failure", r.end_time,
                     who + " went down but its state is " + std::string(model::conn_state_name(*sl.final_state))});
        }
        if (r.final_outstanding[size_t(side)] != 0)
            v.push_back({"clean_failure", r.end_time,
                         std::to_string(r.final_outstanding[size_t(side)]) + " outstanding work request(s) left on " +
                             side_char(side)});
    }
    return v;
}

std::vector<Violation> check_incast(const Scenario& s, const RunResult& r, Side receiver) {
    std::vector<Violation> v;
    const uint16_t k = std::max<uint16_t>(s.connections, 1);
    const auto& rc = s.config[size_t(receiver)];
    const uint32_t fair = rc.capacity_mbps / k;  // C / N, rounded down [R-FS-4]
    model::Time ack_delay = 16;                  // ACK_DELAY_MAX [R-ACK-3]
    const model::Time rtt = 2 * model::Time(s.net.base_delay_us) + ack_delay;
    const Side sender = other(receiver);
    std::vector<uint32_t> ids(k);
    model::Time last_first = 0;
    for (uint16_t j = 0; j < k; ++j) {
        const auto& sl = r.slots[size_t(receiver)];
        if (j >= sl.size() || !sl[j].id) {
            v.push_back({"incast", r.end_time, "connection " + std::to_string(j) + " never came up on the receiver"});
            return v;
        }
        ids[j] = *sl[j].id;
        const auto it = r.first_data.find({int(receiver), ids[j]});
        if (it == r.first_data.end()) {
            v.push_back(
                {"incast", r.end_time, "connection " + std::to_string(j) + " delivered no data to the receiver"});
            return v;
        }
        last_first = std::max(last_first, it->second);
    }
    const model::Time deadline = last_first + rc.fs_interval_us + rtt;
    // The receiver's grants at the deadline: its last change at or before it.
    const std::map<uint32_t, uint32_t>* at_deadline = nullptr;
    for (const auto& rec : r.shares)
        if (rec.side == receiver && rec.at <= deadline) at_deadline = &rec.shares;
    if (!at_deadline) {
        v.push_back({"incast", deadline, "no rate shares recorded (RunOptions::record_shares)"});
        return v;
    }
    for (uint16_t j = 0; j < k; ++j) {
        const auto it = at_deadline->find(ids[j]);
        const uint32_t share = it == at_deadline->end() ? 0 : it->second;
        if (share < fair)
            v.push_back({"incast", deadline,
                         "connection " + std::to_string(j) + " is granted " + std::to_string(share) + " Mb/s at t=" +
                             std::to_string(deadline) + " (FS_INTERVAL + RTT after the last first packet at " +
                             std::to_string(last_first) + "), below C/N = " + std::to_string(rc.capacity_mbps) + "/" +
                             std::to_string(k) + " [R-FS-5]"});
        // The sender hears of it within one more RTT: an ACK with a hint of at least C / N.
        const auto& ss = r.slots[size_t(sender)];
        if (j >= ss.size() || !ss[j].id) continue;
        bool heard = false;
        for (const auto& h : r.hints)
            if (h.to == sender && h.conn == *ss[j].id && h.at >= last_first && h.at <= deadline + rtt &&
                h.hint >= fair && h.hint <= rc.capacity_mbps)
                heard = true;
        if (!heard)
            v.push_back({"incast", deadline + rtt,
                         "the sender of connection " + std::to_string(j) + " received no ACK with a hint of at least " +
                             std::to_string(fair) + " Mb/s by t=" + std::to_string(deadline + rtt) + " [R-FS-5]"});
    }
    return v;
}

std::vector<Violation> check_all(const Scenario& s, const RunResult& r) {
    std::vector<Violation> v = r.violations;
    const auto e = expect(s);
    for (const auto& u : e.unsupported) v.push_back({"unsupported_workload", 0, u});
    const auto add = [&](std::vector<Violation> more) { v.insert(v.end(), more.begin(), more.end()); };
    add(check_connections(s, r));
    add(check_exactly_once(s, e, r));
    add(check_memory(s, e, r));
    add(check_stream_order(s, r));
    add(check_settles(s, r, settle_bound(s)));
    return v;
}

// ---- monitors ----------------------------------------------------------------------------------

void AckedPsnMonitor::on_control(Side from, const WireInfo& w) {
    if (w.opcode == 0x20) local_scid_[{int(from), w.scid}] = w.scid;
    if (w.opcode == 0x21) {
        // ACCEPT from `from`: its SCID is its local ID, the DCID the initiator's.
        peer_of_[{int(from), w.scid}] = w.dcid;
        peer_of_[{int(other(from)), w.dcid}] = w.scid;
    }
}

void AckedPsnMonitor::on_ack_delivered(model::Time, Side to, const WireInfo& ack) {
    const auto it = peer_of_.find({int(to), ack.dcid});
    if (it == peer_of_.end()) return;
    auto& pa = acks_[{int(to), it->second, ack.path}];
    // [R-ACK-9]: an older CPSN does not move anything backwards.
    if (!pa.cpsn || serial_lt(*pa.cpsn, ack.cpsn)) {
        pa.cpsn = ack.cpsn;
        for (auto s = pa.sacked.begin(); s != pa.sacked.end();)
            s = serial_le(*s, ack.cpsn) ? pa.sacked.erase(s) : std::next(s);
    }
    for (uint32_t i = 1; i < 256; ++i)  // [R-HDR-20] bit i = CPSN + 1 + i
        if (ack.sack[i / 8] & (0x80 >> (i % 8))) {
            const uint32_t psn = ack.cpsn + 1 + i;
            if (serial_lt(*pa.cpsn, psn)) pa.sacked.insert(psn);
        }
}

void AckedPsnMonitor::on_data_sent(model::Time now, Side from, const WireInfo& d) {
    const auto it = acks_.find({int(from), d.dcid, d.path});
    if (it == acks_.end() || !it->second.cpsn) return;
    const auto& pa = it->second;
    // "Acknowledged" only covers PSNs the path has actually sent: a CPSN of ISN-1 before any data
    // acknowledges nothing real, and new PSNs are always after the CPSN.
    if (serial_le(d.psn, *pa.cpsn) || pa.sacked.count(d.psn)) {
        char psn[16];
        std::snprintf(psn, sizeof psn, "0x%08x", d.psn);
        out_.push_back({"acked_psn_resent", now,
                        std::string(1, side_char(from)) + " sent " +
                            std::string(ref::opcode_name(ref::Opcode(d.opcode))) + " psn " + psn + " on path " +
                            std::to_string(d.path) +
                            ((d.flags & ref::kFlagVoid)   ? " (VOID)"
                             : (d.flags & ref::kFlagRetx) ? " (RETX)"
                                                          : "") +
                            " after an ACK acknowledged it [R-REL-3]"});
    }
}

std::vector<Violation> AckedPsnMonitor::take() { return std::exchange(out_, {}); }
void AckedPsnMonitor::take_into(std::vector<Violation>& out) {
    out.insert(out.end(), out_.begin(), out_.end());
    out_.clear();
}

std::vector<Violation> check_step(model::Time now, Side side, const SimEndpoint& ep,
                                  const std::set<std::pair<uint32_t, uint16_t>>& data_paths,
                                  const std::map<uint32_t, uint32_t>& local_of_dcid) {
    std::vector<Violation> v;
    const std::string who(1, side_char(side));
    for (const auto& [dcid, path] : data_paths) {
        const auto it = local_of_dcid.find(dcid);
        if (it == local_of_dcid.end()) continue;
        const uint32_t conn = it->second;
        const auto pv = ep.path_view(conn, path);
        const std::string where = who + " conn " + std::to_string(conn) + " path " + std::to_string(path);
        if (!pv) {
            v.push_back({"window", now, where + ": sent data on a path with no path view"});
            continue;
        }
        // The last transmission of the step needed in-flight < cwnd before it [R-CC-3].
        if (pv->in_flight > pv->cwnd)
            v.push_back({"window", now,
                         where + ": in flight " + std::to_string(pv->in_flight) + " > cwnd " +
                             std::to_string(pv->cwnd) + " after sending [R-CC-3]"});
        if (uint32_t(pv->snxt - pv->suna) > 256)
            v.push_back({"span", now,
                         where + ": SNXT - SUNA = " + std::to_string(uint32_t(pv->snxt - pv->suna)) +
                             " > 256 [R-PSN-4] [R-REL-2]"});
    }
    // [R-FS-4]: the shares of all active connections of this receiver, together.
    uint64_t sum = 0;
    for (const auto& [c, share] : ep.rate_shares()) {
        (void)c;
        sum += share;
    }
    if (sum > ep.capacity_mbps())
        v.push_back({"rate_shares", now,
                     who + " grants " + std::to_string(sum) + " Mb/s in total, capacity " +
                         std::to_string(ep.capacity_mbps()) + " [R-FS-4]"});
    return v;
}

std::vector<Violation> check_step(model::Time now, Side side, const SimEndpoint& ep,
                                  const std::set<std::pair<uint32_t, uint16_t>>& data_paths,
                                  std::optional<uint32_t> conn) {
    std::map<uint32_t, uint32_t> m;
    if (conn)
        for (const auto& [dcid, path] : data_paths) m[dcid] = *conn;
    return check_step(now, side, ep, data_paths, m);
}

std::string format_violations(const std::vector<Violation>& v, size_t max) {
    std::ostringstream o;
    for (size_t i = 0; i < v.size() && i < max; ++i)
        o << "violation " << v[i].check << " t=" << v[i].at << " " << v[i].detail << "\n";
    if (v.size() > max) o << "... " << (v.size() - max) << " more\n";
    return o.str();
}

}  // namespace mroce::harness
