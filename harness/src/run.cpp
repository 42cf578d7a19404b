#include "netsim/run.hpp"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <set>
#include <tuple>

#include "netsim/checks.hpp"
#include "netsim/wire.hpp"

namespace mroce::harness {

Scenario base_scenario(uint32_t isn_a, uint32_t isn_b) {
    Scenario s;
    for (int i = 0; i < 2; ++i) {
        auto& c = s.config[size_t(i)];
        c.self.mac = {0x02, 0, 0, 0, 0, uint8_t(i + 1)};
        c.self.ip = {10, 0, 0, uint8_t(i + 1)};
        c.first_conn_id = i == 0 ? 0x100u : 0x200u;
    }
    s.config[0].isn = isn_a;
    s.config[1].isn = isn_b;
    return s;
}

namespace {

std::string hex(uint64_t v, int digits) {
    char b[32];
    std::snprintf(b, sizeof b, "0x%0*llx", digits, (unsigned long long)v);
    return b;
}

class Sim {
public:
    Sim(const Scenario& s, const EndpointFactory& f, const RunOptions& o)
        : s_(s), opt_(o), net_(s.net, s.schedule), k_(std::max<uint16_t>(s.connections, 1)) {
        for (int i = 0; i < 2; ++i) {
            ep_[size_t(i)] = f(s.config[size_t(i)]);
            r_.slots[size_t(i)].resize(k_);
        }
        a_failed_before_up_.assign(k_, false);
        r_.posts.resize(s.workload.ops.size());
        // Posting order: stable by time, per side (deferrals keep the order within a connection).
        std::vector<size_t> order(s.workload.ops.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(),
                         [&](size_t a, size_t b) { return s.workload.ops[a].at < s.workload.ops[b].at; });
        for (size_t i : order) pending_[size_t(s.workload.ops[i].side)].push_back(i);
    }

    RunResult run() {
        setup();
        model::Time stop_at = kNever;
        while (!q_.empty()) {
            if (r_.events >= s_.limits.max_events) {
                r_.hit_event_limit = true;
                r_.violations.push_back(
                    {"event_limit", now_, "more than " + std::to_string(s_.limits.max_events) + " events (livelock?)"});
                break;
            }
            std::pop_heap(q_.begin(), q_.end(), later);
            QEvent ev = std::move(q_.back());
            q_.pop_back();
            if (ev.t > s_.limits.time_limit) {
                if (!r_.quiescent_at) r_.hit_time_limit = true;
                break;
            }
            if (ev.t > stop_at) break;
            now_ = ev.t;
            ++r_.events;
            dispatch(ev);
            if (!r_.quiescent_at && quiescent()) {
                r_.quiescent_at = now_;
                line("net", "quiescent");
                stop_at = now_ + s_.limits.linger_us;
            }
        }
        r_.end_time = now_;
        line("net", "end");
        finish();
        return std::move(r_);
    }

private:
    // A receive-consuming message: (receiving side, its connection ID, stream, RSN).
    using MsgKey = std::tuple<int, uint32_t, uint16_t, uint32_t>;
    enum class Kind : uint8_t { Frame, Wake, PostDue, Link, FaultsEnd };
    struct QEvent {
        model::Time t = 0;
        uint64_t seq = 0;
        Kind kind = Kind::Frame;
        Side side = Side::A;  // receiver of a frame / owner of a wake or post
        uint64_t index = 0;   // frame number k
        bool corrupted = false;
        bool second_copy = false;
        std::vector<uint8_t> frame;
        std::string summary;
        LinkEvent link;
    };
    // Order: time, then wakes before anything else due at the same time, then insertion order.
    // Firing due timers in their own step keeps each step's transmissions attributable: in a
    // Receive step, nothing can come from a timer phase that precedes the frame ([R-REL-3]
    // monitor), and a timer due when a frame arrives fires first [R-CONV-7].
    static bool later(const QEvent& a, const QEvent& b) {
        if (a.t != b.t) return a.t > b.t;
        const bool wa = a.kind == Kind::Wake, wb = b.kind == Kind::Wake;
        if (wa != wb) return wb;
        return a.seq > b.seq;
    }

    void push(QEvent ev) {
        ev.seq = seq_++;
        q_.push_back(std::move(ev));
        std::push_heap(q_.begin(), q_.end(), later);
    }

    void line(std::string_view who, const std::string& what) {
        if (!opt_.trace) return;
        r_.lines.push_back(std::to_string(now_) + " " + std::string(who) + " " + what);
    }
    void line(Side side, const std::string& what) { line(std::string(1, side_char(side)), what); }
    // Connection index in event lines, only when there are several (one-connection traces keep
    // their historical form).
    std::string conn_tag(uint16_t j) const { return k_ > 1 ? " c=" + std::to_string(j) : std::string(); }

    SimEndpoint& ep(Side s) { return *ep_[size_t(s)]; }
    ConnSlot& slot(Side s, uint16_t j) { return r_.slots[size_t(s)][j]; }

    void setup() {
        now_ = 0;
        const auto& L = s_.workload.layout;
        for (Side side : {Side::A, Side::B}) {
            for (bool guard : {false, true}) {
                const uint64_t va = guard ? L.guard_base(side) : L.base[size_t(side)];
                const uint64_t len = guard ? L.guard_size : L.region_size;
                const uint32_t acc =
                    guard ? model::access::kLocalWrite
                          : model::access::kLocalWrite | model::access::kRemoteWrite | model::access::kRemoteRead;
                registered_ = std::nullopt;
                call(side, model::RegisterMemory{va, len, acc});
                if (!registered_) {
                    r_.violations.push_back(
                        {"setup", now_, std::string("RegisterMemory gave no MemoryRegistered on ") + side_char(side)});
                    return;
                }
                keys_[size_t(side)][guard ? 1 : 0] = *registered_;
                line(side, std::string("register ") + (guard ? "guard" : "data") + " va=" + hex(va, 1) +
                               " len=" + std::to_string(len) + " lkey=" + hex(registered_->lkey, 8) +
                               " rkey=" + hex(registered_->rkey, 8));
                call(side, model::WriteMemory{va, pattern(s_.seed, side, guard, 0, len)});
            }
        }
        for (uint16_t j = 0; j < k_; ++j) {
            line(Side::A, "connect" + conn_tag(j));
            connecting_ = j;
            call(Side::A, model::Connect{s_.config[1].self});
            connecting_.reset();
        }
        // Scheduled network events.
        for (const auto& le : s_.schedule.link_events) {
            if (le.at >= s_.net.faults_until) continue;
            QEvent ev;
            ev.t = le.at;
            ev.kind = Kind::Link;
            ev.link = le;
            push(std::move(ev));
        }
        if (s_.net.faults_until != kNever && s_.net.faults_until > 0) {
            QEvent ev;
            ev.t = s_.net.faults_until;
            ev.kind = Kind::FaultsEnd;
            push(std::move(ev));
        }
    }

    std::optional<uint16_t> index_of(Side side, uint32_t conn) const {
        const auto& m = index_of_[size_t(side)];
        const auto it = m.find(conn);
        if (it == m.end()) return std::nullopt;
        return it->second;
    }

    void bind(Side side, uint16_t j, uint32_t conn) {
        slot(side, j).id = conn;
        index_of_[size_t(side)][conn] = j;
    }

    // Which index a ConnectionUp belongs to. A: its connection ID was learnt from its CONNECT.
    // B: from the ACCEPT it sent (its SCID, the initiator's ID as DCID); failing that, the lowest
    // index that B has not got yet.
    std::optional<uint16_t> index_for_up(Side side, uint32_t conn) {
        if (auto j = index_of(side, conn)) return j;
        if (side == Side::B) {
            const auto it = accept_peer_.find(conn);
            if (it != accept_peer_.end()) {
                if (auto j = index_of(Side::A, it->second); j && !slot(Side::B, *j).id) return j;
                return std::nullopt;  // an ACCEPT to a connection A does not know: not ours
            }
        }
        for (uint16_t j = 0; j < k_; ++j)
            if (!slot(side, j).id) return j;
        return std::nullopt;
    }

    // One step of one endpoint, and everything that follows from its actions.
    void call(Side side, const model::Event& event) {
        auto actions = ep(side).handle(now_, event);
        std::optional<model::Time> wake;
        std::set<std::pair<uint32_t, uint16_t>> data_paths;
        std::vector<uint32_t> ups;  // ConnectionUp, in order
        for (auto& a : actions) {
            if (auto* t = std::get_if<model::Transmit>(&a)) {
                transmit(side, std::move(t->frame), data_paths);
            } else if (auto* c = std::get_if<model::Completion>(&a)) {
                r_.completions.push_back({now_, side, *c});
                std::string l = "cmp wr=" + std::to_string(c->wr_id) + " " + std::string(model::work_op_name(c->op)) +
                                " stream=" + std::to_string(c->stream) +
                                " status=" + std::string(model::status_name(c->status)) +
                                " len=" + std::to_string(c->byte_len);
                if (c->immediate) l += " imm=" + hex(*c->immediate, 8);
                line(side, l + " conn=" + std::to_string(c->conn));
            } else if (auto* m = std::get_if<model::MemoryRegistered>(&a)) {
                registered_ = *m;
            } else if (auto* p = std::get_if<model::PostRejected>(&a)) {
                rejected_.push_back(*p);
                line(side, "rejected wr=" + std::to_string(p->wr_id) + " reason=\"" + p->reason + "\"");
            } else if (auto* u = std::get_if<model::ConnectionUp>(&a)) {
                r_.conn_events.push_back({now_, side, u->conn, true, model::Status::Success});
                line(side, "up conn=" + std::to_string(u->conn) + " initiator=" + (u->initiator ? "1" : "0"));
                ups.push_back(u->conn);
            } else if (auto* d = std::get_if<model::ConnectionDown>(&a)) {
                r_.conn_events.push_back({now_, side, d->conn, false, d->status});
                line(side,
                     "down conn=" + std::to_string(d->conn) + " status=" + std::string(model::status_name(d->status)));
                on_down(side, d->conn, d->status);
            } else if (auto* w = std::get_if<model::Wakeup>(&a)) {
                wake = wake ? std::min(*wake, w->at) : w->at;
            }
        }
        // Ups are bound after the whole step, when the ACCEPT of the same step is known.
        for (uint32_t conn : ups) on_up(side, conn);
        if (opt_.step_checks) {
            auto v = check_step(now_, side, ep(side), data_paths, local_of_dcid_[size_t(side)]);
            r_.violations.insert(r_.violations.end(), v.begin(), v.end());
            acked_.take_into(r_.violations);
        }
        if (opt_.record_shares) {
            auto sh = ep(side).rate_shares();
            auto& last = last_shares_[size_t(side)];
            if (sh != last) {
                r_.shares.push_back({now_, side, sh});
                last = std::move(sh);
            }
        }
        if (auto d = ep(side).next_deadline()) wake = wake ? std::min(*wake, *d) : *d;
        arm(side, wake);
    }

    void on_up(Side side, uint32_t conn) {
        const auto j = index_for_up(side, conn);
        if (!j) return;  // a connection the scenario did not open: no ops use it
        ConnSlot& sl = slot(side, *j);
        if (sl.up()) return;
        bind(side, *j, conn);
        sl.up_at = now_;
        if (*j == 0) {
            r_.conn[size_t(side)] = conn;
            r_.up_at[size_t(side)] = now_;
        }
        if (side == Side::A) {
            bool all = true;
            for (const auto& x : r_.slots[0]) all = all && x.up();
            r_.setup_ok = all;
        }
        post_soon(side);
    }

    void on_down(Side side, uint32_t conn, model::Status status) {
        const auto j = index_of(side, conn);
        if (!j) return;
        ConnSlot& sl = slot(side, *j);
        ++sl.downs;
        if (!sl.down_at) {
            sl.down_at = now_;
            sl.down_status = status;
        }
        if (side == Side::A && !sl.up()) a_failed_before_up_[*j] = true;
        // Ops waiting for this connection (or for a VOID on it) can now be resolved.
        post_soon(Side::A);
        post_soon(Side::B);
    }

    // Post what is due, after the current step.
    void post_soon(Side side) {
        if (pending_[size_t(side)].empty()) return;
        QEvent ev;
        ev.t = now_;
        ev.kind = Kind::PostDue;
        ev.side = side;
        push(std::move(ev));
    }

    void arm(Side side, std::optional<model::Time> wake) {
        auto& armed = armed_[size_t(side)];
        if (!wake) {
            armed.reset();
            return;
        }
        // A deadline at or before now after the step means "fire again": the next microsecond at
        // the earliest, so that a timer that does not advance cannot stall the clock.
        model::Time t = std::max(*wake, now_ + (firing_wake_ == side_bit(side) ? 1 : 0));
        if (t < now_) t = now_;
        if (armed && *armed == t) return;
        armed = t;
        QEvent ev;
        ev.t = t;
        ev.kind = Kind::Wake;
        ev.side = side;
        push(std::move(ev));
    }
    static int side_bit(Side s) { return 1 << int(s); }

    void transmit(Side from, std::vector<uint8_t> frame, std::set<std::pair<uint32_t, uint16_t>>& data_paths) {
        const auto info = parse_wire(frame);
        std::string summary;
        if (opt_.trace) {
            if (opt_.canonical_packets)
                summary = canonical_line(frame, s_.config[size_t(other(from))].udp_port);
            else
                summary = info ? summarize(*info) : "UNPARSEABLE len=" + std::to_string(frame.size());
        }
        if (info) {
            if (opt_.step_checks && info->is_ack() && info->hint > ep(from).capacity_mbps())
                r_.violations.push_back({"rate_shares", now_,
                                         std::string(1, side_char(from)) + " sent a rate hint of " +
                                             std::to_string(info->hint) + " Mb/s above its capacity " +
                                             std::to_string(ep(from).capacity_mbps()) + " [R-FS-4]"});
            if (info->is_data()) {
                if (info->flags & ref::kFlagRetx) ++r_.net.retransmissions;
                if (info->flags & ref::kFlagVoid) ++r_.net.voids;
                if (info->psn < s_.config[size_t(from)].isn) ++r_.net.wrapped;
                data_paths.insert({info->dcid, info->path});
                if (opt_.step_checks) acked_.on_data_sent(now_, from, *info);
                if (info->opcode == 0x01 || info->opcode == 0x03)  // SEND, WRITE_IMM
                    msg_psns_[{int(other(from)), info->dcid, info->stream, info->rsn}].insert({info->path, info->psn});
            } else if (info->opcode == 0x11) {
                ++r_.net.naks;
            } else if (info->opcode == 0x12) {
                ++r_.net.probes;
            } else if (info->is_control()) {
                acked_.on_control(from, *info);
                on_control_sent(from, *info);
            }
        }
        auto e = net_.enter(now_, from, std::move(frame));
        ++r_.net.entered;
        std::string fate;
        if (e.link_down) {
            fate = "LinkDown";
            ++r_.net.link_dropped;
        } else {
            switch (e.fate.kind) {
                case PacketFate::Deliver:
                    fate = "Deliver";
                    break;
                case PacketFate::Drop:
                    fate = "Drop";
                    ++r_.net.dropped;
                    break;
                case PacketFate::Duplicate:
                    fate = "Duplicate+" +
                           std::to_string(e.copies.size() == 2 ? e.copies[1].arrive - e.copies[0].arrive : 0);
                    ++r_.net.duplicated;
                    break;
                case PacketFate::Delay:
                    fate = "Delay+" + std::to_string(e.fate.extra_delay_us);
                    ++r_.net.delayed;
                    break;
                case PacketFate::MarkCe:
                    fate = e.ce_marked ? "MarkCe" : "MarkCe(not-ECT)";
                    if (e.ce_marked) ++r_.net.ce_marked;
                    break;
                case PacketFate::Corrupt:
                    fate = "Corrupt@" + std::to_string(e.corrupted_at);
                    ++r_.net.corrupted;
                    break;
            }
        }
        line(from, "tx #" + std::to_string(e.index) + " " + summary + " | " + fate + " link=" + std::to_string(e.link));
        for (size_t c = 0; c < e.copies.size(); ++c) {
            QEvent ev;
            ev.t = e.copies[c].arrive;
            ev.kind = Kind::Frame;
            ev.side = other(from);
            ev.index = e.index;
            ev.corrupted = e.fate.kind == PacketFate::Corrupt;
            ev.second_copy = c == 1;
            ev.frame = std::move(e.copies[c].frame);
            if (opt_.trace) ev.summary = summary;
            ++in_flight_;
            push(std::move(ev));
        }
    }

    // Connection IDs learnt from the handshake: A's CONNECTs name its connections in index order
    // (Connect i is issued at setup and sends its CONNECT at once); an ACCEPT pairs the responder's
    // ID (SCID) with the initiator's (DCID).
    void on_control_sent(Side from, const WireInfo& w) {
        if (w.opcode == 0x20 && from == Side::A && !index_of(Side::A, w.scid)) {
            // An endpoint that sends its CONNECT later than the Connect call: lowest free index.
            std::optional<uint16_t> j = connecting_;
            for (uint16_t i = 0; !j && i < k_; ++i)
                if (!slot(Side::A, i).id) j = i;
            if (j && !slot(Side::A, *j).id) bind(Side::A, *j, w.scid);
        }
        if (w.opcode == 0x21) {
            local_of_dcid_[size_t(from)][w.dcid] = w.scid;
            local_of_dcid_[size_t(other(from))][w.scid] = w.dcid;
            if (from == Side::B) accept_peer_[w.scid] = w.dcid;
        }
    }

    void dispatch(QEvent& ev) {
        switch (ev.kind) {
            case Kind::Frame: {
                --in_flight_;
                ++r_.net.delivered;
                if (opt_.trace) {
                    std::string l = "rx #" + std::to_string(ev.index);
                    if (ev.second_copy) l += " copy2";
                    if (ev.corrupted) {
                        l += " corrupted: " + canonical_line(ev.frame, s_.config[size_t(ev.side)].udp_port);
                    } else {
                        l += " " + ev.summary;
                    }
                    line(ev.side, l);
                }
                std::optional<WireInfo> info;
                // A corrupted frame can still be valid (the UDP source port is protected by
                // nothing, README "The network"): the endpoint then acts on it, so do we.
                const bool intact = !ev.corrupted || ref::decode(ev.frame, s_.config[size_t(ev.side)].udp_port).ok();
                if (intact) {
                    info = parse_wire(ev.frame);
                    if (info && info->is_ack()) {
                        acked_.on_ack_delivered(now_, ev.side, *info);
                        if (opt_.record_shares) r_.hints.push_back({now_, ev.side, info->dcid, info->hint});
                    }
                    if (info && info->is_data()) r_.first_data.emplace(std::make_pair(int(ev.side), info->dcid), now_);
                }
                call(ev.side, model::Receive{std::move(ev.frame)});
                // [R-REL-9]: the VOID of a SEND / WRITE_IMM has now cancelled its RSN here and
                // made its PSN received; a receive that waits for that may be posted.
                if (info && info->is_data() && (info->flags & ref::kFlagVoid) &&
                    (info->opcode == 0x01 || info->opcode == 0x03)) {
                    msg_voided_[{int(ev.side), info->dcid, info->stream, info->rsn}].insert({info->path, info->psn});
                    post_soon(ev.side);
                }
                break;
            }
            case Kind::Wake: {
                auto& armed = armed_[size_t(ev.side)];
                if (!armed || *armed != ev.t) return;  // superseded
                armed.reset();
                line(ev.side, "wake");
                firing_wake_ = side_bit(ev.side);
                call(ev.side, model::AdvanceTime{});
                firing_wake_ = 0;
                break;
            }
            case Kind::PostDue:
                post_due(ev.side);
                break;
            case Kind::Link:
                net_.set_link(ev.link.dir, ev.link.link, ev.link.up);
                line("net", "link " + std::string(link_dir_name(ev.link.dir)) + " " + std::to_string(ev.link.link) +
                                (ev.link.up ? " up" : " down"));
                break;
            case Kind::FaultsEnd:
                net_.all_links_up();
                line("net", "faults-end");
                break;
        }
    }

    // Every PSN that carried the message has been voided at the receiver (at least one has): the
    // sender gave up on it [R-REL-9], and no copy of any of its segments can be accepted there any
    // more, since each PSN is now received. (Waiting for the first VOID only is not enough: a
    // delayed copy of another segment would find the receive posted, canceled, and be placed; the
    // spec does not say that such a copy is refused.)
    bool all_voided(const MsgKey& key) const {
        const auto v = msg_voided_.find(key);
        if (v == msg_voided_.end() || v->second.empty()) return false;
        const auto p = msg_psns_.find(key);
        if (p == msg_psns_.end()) return true;
        for (const auto& x : p->second)
            if (!v->second.count(x)) return false;
        return true;
    }

    // How an op of (side, index j) can be handled now.
    enum class Route : uint8_t { Wait, Post, NoConnection };
    Route route(Side side, uint16_t j, uint32_t& conn) {
        if (j >= k_) return Route::NoConnection;
        const ConnSlot& sl = slot(side, j);
        if (sl.up()) {
            conn = *sl.id;
            return Route::Post;
        }
        if (a_failed_before_up_[j]) {
            // The initiator gave up: A's posts go to its failed connection (and are refused);
            // B never had the connection, so its ops cannot be posted at all.
            if (side == Side::A && sl.id) {
                conn = *sl.id;
                return Route::Post;
            }
            return Route::NoConnection;
        }
        return Route::Wait;
    }

    void post_due(Side side) {
        auto& q = pending_[size_t(side)];
        // Receives of a (connection, stream) keep their order: one that waits holds the later ones.
        std::set<std::pair<uint16_t, uint16_t>> held;
        std::deque<size_t> keep;
        while (!q.empty()) {
            const size_t i = q.front();
            const Op& op = s_.workload.ops[i];
            if (op.at > now_) {
                if (post_scheduled_[size_t(side)] != op.at) {
                    post_scheduled_[size_t(side)] = op.at;
                    QEvent ev;
                    ev.t = op.at;
                    ev.kind = Kind::PostDue;
                    ev.side = side;
                    push(std::move(ev));
                }
                break;
            }
            q.pop_front();
            uint32_t conn = 0;
            const Route rt = route(side, op.conn, conn);
            const std::pair<uint16_t, uint16_t> key{op.conn, op.stream};
            bool wait = rt == Route::Wait;
            if (!wait && op.kind == OpKind::Recv && held.count(key)) wait = true;
            if (!wait && rt == Route::Post && op.after_void && !slot(side, op.conn).down_at) {
                const uint32_t rsn = recvs_posted_[{int(side), op.conn, op.stream}];
                wait = !all_voided({int(side), conn, op.stream, rsn});
            }
            if (wait) {
                if (op.kind == OpKind::Recv) held.insert(key);
                keep.push_back(i);
                continue;
            }
            if (rt == Route::NoConnection) {
                PostRecord rec;
                rec.at = now_;
                rec.seq = post_seq_++;
                rec.rejected = true;
                rec.no_connection = true;
                rec.reason = "harness: connection " + std::to_string(op.conn) + " never came up";
                r_.posts[i] = rec;
                line(side, "unposted op=" + std::to_string(i) + " wr=" + std::to_string(wr_id_of(i)) +
                               conn_tag(op.conn) + " (no connection)");
                continue;
            }
            post(i, conn);
        }
        // Ops that wait go back to the front, in their order.
        while (!keep.empty()) {
            q.push_front(keep.back());
            keep.pop_back();
        }
    }

    uint32_t invalid_rkey(Side peer) const {
        const auto& k = keys_[size_t(peer)];
        return harness::invalid_rkey(k[0].rkey, k[1].rkey);
    }

    void post(size_t i, uint32_t conn) {
        const Op& op = s_.workload.ops[i];
        const auto& L = s_.workload.layout;
        const Side side = op.side, peer = other(op.side);
        const uint64_t wr = wr_id_of(i);
        const uint64_t va = L.base[size_t(side)] + op.local_off;
        const uint32_t lkey = keys_[size_t(side)][0].lkey;
        const uint64_t rva =
            (op.key == KeyChoice::NoAccess ? L.guard_base(peer) : L.base[size_t(peer)]) + op.remote_off;
        const uint32_t rkey = op.key == KeyChoice::Valid      ? keys_[size_t(peer)][0].rkey
                              : op.key == KeyChoice::NoAccess ? keys_[size_t(peer)][1].rkey
                                                              : invalid_rkey(peer);
        model::Event ev;
        switch (op.kind) {
            case OpKind::Send:
                ev = model::PostSend{conn, op.stream, wr, va, op.length, lkey};
                break;
            case OpKind::Write:
                ev = model::PostWrite{conn, op.stream, wr, va, op.length, lkey, rva, rkey, std::nullopt};
                break;
            case OpKind::WriteImm:
                ev = model::PostWrite{conn, op.stream, wr, va, op.length, lkey, rva, rkey, op.imm};
                break;
            case OpKind::Read:
                ev = model::PostRead{conn, op.stream, wr, va, op.length, lkey, rva, rkey};
                break;
            case OpKind::Recv:
                ev = model::PostRecv{conn, op.stream, wr, va, op.length, lkey};
                break;
        }
        std::string l = "post op=" + std::to_string(i) + " wr=" + std::to_string(wr) + " " +
                        std::string(op_kind_name(op.kind)) + conn_tag(op.conn) +
                        " stream=" + std::to_string(op.stream) + " len=" + std::to_string(op.length) +
                        " va=" + hex(va, 1);
        if (op.kind == OpKind::Write || op.kind == OpKind::WriteImm || op.kind == OpKind::Read)
            l += " rva=" + hex(rva, 1) + " rkey=" + hex(rkey, 8);
        if (op.kind == OpKind::WriteImm) l += " imm=" + hex(op.imm, 8);
        line(side, l);
        rejected_.clear();
        PostRecord rec;
        rec.at = now_;
        rec.seq = post_seq_++;
        r_.posts[i] = rec;
        call(side, ev);
        for (const auto& p : rejected_)
            if (p.wr_id == wr) {
                r_.posts[i]->rejected = true;
                r_.posts[i]->reason = p.reason;
            }
        rejected_.clear();
        // [R-MATCH-1]: an accepted receive takes the stream's next RSN; a refused one takes none
        // [R-MEM-4].
        if (op.kind == OpKind::Recv && !r_.posts[i]->rejected) ++recvs_posted_[{int(side), op.conn, op.stream}];
    }

    bool quiescent() const {
        if (in_flight_ != 0) return false;
        // Every connection of A came up or was given up.
        for (uint16_t j = 0; j < k_; ++j)
            if (!r_.slots[0][j].up() && !a_failed_before_up_[j]) return false;
        for (Side side : {Side::A, Side::B}) {
            if (!pending_[size_t(side)].empty()) return false;
            for (uint32_t c : ep_[size_t(side)]->connections())
                if (ep_[size_t(side)]->outstanding_work(c) != 0) return false;
        }
        if (s_.limits.until_conn_down) {
            for (Side side : {Side::A, Side::B})
                for (const auto& sl : r_.slots[size_t(side)])
                    if (sl.up() && !sl.down_at) return false;
        }
        return true;
    }

    void finish() {
        const auto& L = s_.workload.layout;
        for (Side side : {Side::A, Side::B}) {
            auto& e = ep(side);
            r_.data_mem[size_t(side)] = e.read_memory(L.base[size_t(side)], L.region_size);
            r_.guard_mem[size_t(side)] = e.read_memory(L.guard_base(side), L.guard_size);
            for (auto& sl : r_.slots[size_t(side)])
                if (sl.id) sl.final_state = e.connection_state(*sl.id);
            if (r_.conn[size_t(side)]) r_.final_state[size_t(side)] = e.connection_state(*r_.conn[size_t(side)]);
            size_t out = 0;
            for (uint32_t c : e.connections()) out += e.outstanding_work(c);
            r_.final_outstanding[size_t(side)] = out;
        }
    }

    const Scenario& s_;
    RunOptions opt_;
    Network net_;
    uint16_t k_ = 1;
    std::array<std::unique_ptr<SimEndpoint>, 2> ep_;
    std::array<std::deque<size_t>, 2> pending_;
    std::array<model::Time, 2> post_scheduled_{kNever, kNever};
    std::array<std::optional<model::Time>, 2> armed_;
    std::array<std::array<model::MemoryRegistered, 2>, 2> keys_{};  // [side][data, guard]
    std::optional<model::MemoryRegistered> registered_;
    std::vector<model::PostRejected> rejected_;
    std::optional<uint16_t> connecting_;                         // index of the Connect being issued (setup)
    std::array<std::map<uint32_t, uint16_t>, 2> index_of_;       // local connection ID -> index
    std::map<uint32_t, uint32_t> accept_peer_;                   // B's connection ID -> A's, from ACCEPTs
    std::array<std::map<uint32_t, uint32_t>, 2> local_of_dcid_;  // per side: peer ID -> own ID
    std::vector<bool> a_failed_before_up_;
    std::map<std::tuple<int, uint16_t, uint16_t>, uint32_t> recvs_posted_;  // next RSN
    // Receive-consuming messages by (receiving side, its connection ID, stream, RSN): the
    // (path, PSN)s that carried them, and those whose VOID has reached the receiver.
    std::map<MsgKey, std::set<std::pair<uint16_t, uint32_t>>> msg_psns_, msg_voided_;
    std::array<std::map<uint32_t, uint32_t>, 2> last_shares_;
    std::vector<QEvent> q_;
    uint64_t seq_ = 0;
    uint64_t post_seq_ = 0;
    uint64_t in_flight_ = 0;
    int firing_wake_ = 0;
    model::Time now_ = 0;
    AckedPsnMonitor acked_;
    RunResult r_;
};

}  // namespace

RunResult run(const Scenario& scenario, const EndpointFactory& factory, const RunOptions& options) {
    Sim sim(scenario, factory, options);
    return sim.run();
}

}  // namespace mroce::harness
