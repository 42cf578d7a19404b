// `mroce perf`: perftest-style transfers over the engine on DPDK ports, every byte verified.
//
//   mroce perf --loopback [-s SIZE] [-n ITERS | -D SECONDS] [--op write|send|read|mixed] ...
//   mroce perf server --port af_packet:veth0 ... --ip 10.0.0.2 --peer-ip 10.0.0.1
//   mroce perf client --port af_packet:veth1 ... --ip 10.0.0.1 --peer-ip 10.0.0.2 -n 10000
//
// Verification needs no side channel: both ends derive the same pattern table, and message i always
// carries the table bytes at src_offset(i). Writes are Writes-with-immediate (imm = i) so the server
// sees each one land and checks the destination slot; Sends land in the stream's next posted
// receive; Reads are checked by the client in its sink. Every message, Write or Send, consumes one
// receive on its stream, so the k-th receive completion of stream s is message s + k * streams.
// Regions are registered at fixed iovas, but memory keys are unpredictable [R-MEM-1], so the client
// learns the server's rkeys as an RDMA application does, in a Send: once up, the client posts a
// receive for them and sends an empty "hello" on stream 0; the server answers the hello (its stream
// 0's first receive, RSN 0, ahead of the message receives) with a Send of its rkeys. The client posts
// no message before it has them.
//
// Faults on purpose, so that a capture shows the rare paths of the protocol (`mroce check` judges
// them; `ci/mutation/conform` needs them): `--bad-rkey-every N` makes every N-th Write carry a key
// that names no region (NAK RemoteAccess, a VOID, the receive Canceled [R-REL-9]); `--recv-depth`
// and `--recv-hold-us` starve the server's receives (NAK RNR, RNR waits, RnrRetryExceeded once a
// PSN has drawn RNR_RETRY_MAX of them [R-PLC-9]); `--window-cap` negotiates a small Window Cap
// [R-CC-1]. Each expected failure is checked to be exactly the one the fault implies, and counted.
#include "cmd_perf.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include "dpdk/engine_port.hpp"
#include "dpdk/io.hpp"
#include "mroce/mroce.hpp"
#include "perf_timeline.hpp"

namespace mroce::cli {
namespace {

using nlohmann::json;

constexpr uint64_t kTableBytes = 32ull << 20;   // pattern table (source of every message)
constexpr uint64_t kDstBytes = 32ull << 20;     // server's Write destination
constexpr uint64_t kDstIova = 0x100000000ull;   // server region 0
constexpr uint64_t kRecvIova = 0x200000000ull;  // server region 1
constexpr uint64_t kSrcIova = 0x300000000ull;   // server region 2 (the table, for Reads)
constexpr uint32_t kAll = access::kLocalWrite | access::kRemoteWrite | access::kRemoteRead;

// The key exchange: the server's rkeys, and the work request IDs of its messages (above every
// message number and receive slot).
struct ServerKeys {
    uint32_t dst_rkey = 0;  // of the Write destination at kDstIova
    uint32_t src_rkey = 0;  // of the table at kSrcIova, for Reads
};
constexpr uint64_t kHelloWr = UINT64_MAX;     // the client's empty Send / the server's receive of it
constexpr uint64_t kKeysWr = UINT64_MAX - 1;  // the server's Send of its keys / the client's receive
constexpr uint16_t kKeysStream = 0;

uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

std::unique_ptr<uint8_t[]> make_table() {
    auto t = std::make_unique<uint8_t[]>(kTableBytes);
    for (uint64_t w = 0; w < kTableBytes / 8; ++w) {
        const uint64_t v = mix64(w);
        std::memcpy(t.get() + 8 * w, &v, 8);
    }
    return t;
}

// Where message i's bytes come from in the table: varies per message so a stale or misplaced
// message does not compare equal.
uint64_t src_offset(uint64_t i, uint32_t msg) {
    const uint64_t span = (kTableBytes - msg) / 64;
    return (mix64(i ^ 0x5a5a) % span) * 64;
}

bool is_send(PerfOp op, uint64_t i) { return op == PerfOp::Send || (op == PerfOp::Mixed && (i & 1)); }

const char* op_name(PerfOp op) {
    switch (op) {
        case PerfOp::Write:
            return "write";
        case PerfOp::Send:
            return "send";
        case PerfOp::Read:
            return "read";
        case PerfOp::Mixed:
            return "mixed";
    }
    return "?";
}

// A key that names no region: reg_mr never issues 0 (mroce.hpp).
constexpr uint32_t kBadRkey = 0;

// --rto-min-us not given: chosen by port kind (rto_min_for); loopback's rings take kRtoMinShared.
constexpr uint32_t kRtoMinAuto = UINT32_MAX, kRtoMinShared = 2000, kRtoMinKernel = 10000;

struct Common {
    PerfOp op = PerfOp::Mixed;
    uint32_t msg = 65536;
    uint32_t depth = 64;
    uint16_t paths = 4, streams = 4, max_payload = 4096;
    uint16_t window_cap = 256;
    uint32_t peer_timeout_us = 0;             // 0: the engine's default
    uint32_t rto_min_us = 0, pto_min_us = 0;  // 0: the engine's default
    uint32_t bad_rkey_every = 0;              // 0: none; else message i with i % N == N - 1 (a Write) uses kBadRkey
    uint32_t recv_depth = 0;                  // server: receives posted ahead per stream (0: max(depth, 16))
    uint32_t recv_hold_us = 0;                // server: a consumed receive is posted again only after this long
    uint16_t rnr_detail = 0;                  // server: Detail of its RNR NAKs (10 µs units; 0: the RNR default)
    bool expect_rnr_failures = false;         // client: RnrRetryExceeded completions are expected, not errors
    uint32_t dst_slots() const { return uint32_t(kDstBytes / msg); }
    bool bad_key(uint64_t i) const {
        return bad_rkey_every && !is_send(op, i) && op != PerfOp::Read && i % bad_rkey_every == bad_rkey_every - 1;
    }
};

// The receiving end (server): exposes the destination, the receives and the table.
class ServerSide {
public:
    ServerSide(Device& d, const Common& c, const uint8_t* table) : d_(d), c_(c), table_(table) {
        dst_ = std::make_unique<uint8_t[]>(kDstBytes);
        std::memset(dst_.get(), 0, kDstBytes);
        rdepth_ = c.recv_depth ? c.recv_depth : std::max<uint32_t>(c.depth, 16);
        recv_bytes_ = uint64_t(c.streams) * rdepth_ * c.msg;
        recv_ = std::make_unique<uint8_t[]>(recv_bytes_);
        std::memset(recv_.get(), 0, recv_bytes_);
        MemoryRegion mr;
        MemoryRegion dst_mr, src_mr;
        if (d.reg_mr(dst_.get(), kDstBytes, kAll, &dst_mr, kDstIova) != Result::Ok ||
            d.reg_mr(recv_.get(), recv_bytes_, kAll, &recv_mr_, kRecvIova) != Result::Ok ||
            d.reg_mr(const_cast<uint8_t*>(table), kTableBytes, access::kRemoteRead, &src_mr, kSrcIova) != Result::Ok ||
            d.reg_mr(&keys_, sizeof keys_, access::kLocalWrite, &keys_mr_) != Result::Ok)
            throw std::runtime_error("server: reg_mr failed");
        keys_ = ServerKeys{dst_mr.rkey, src_mr.rkey};
        next_k_.assign(c.streams, 0);
    }
    // Posts the hello's receive, then every stream's receives, once the connection is up.
    void on_up(uint32_t conn) {
        conn_ = conn;
        if (d_.post_recv(conn_, kKeysStream, kHelloWr, Sge{recv_mr_.iova, 0, recv_mr_.lkey}) != Result::Ok)
            fail("post_recv of the hello refused");
        if (c_.op == PerfOp::Read) return;
        for (uint16_t s = 0; s < c_.streams; ++s)
            for (uint32_t k = 0; k < rdepth_; ++k) repost(s, k);
    }
    // `now_us`: for --recv-hold-us, receives are posted again once their hold has passed.
    void poll(uint64_t now_us = 0) {
        now_ = now_us;
        WorkCompletion wc[64];
        for (int n; (n = d_.poll_cq(wc, 64)) > 0;)
            for (int i = 0; i < n; ++i) handle(wc[i]);
        // In consumption order, which is RSN order per stream: a receive is posted only behind its
        // stream's earlier ones.
        while (!held_.empty() && held_.front().due_us <= now_us) {
            repost(held_.front().stream, held_.front().k);
            held_.pop_front();
        }
    }
    uint64_t verified_msgs = 0, verified_bytes = 0, bad = 0, errors = 0;
    uint64_t canceled = 0;   // receives Canceled by the sender's VOID [R-REL-9], each one expected
    uint64_t abandoned = 0;  // completions of connections that went down before their hello
    std::string first_error;
    // The run starts at the client's hello, not at Up: a client whose handshake timed out on its side
    // (its ACCEPTs lost, or its tap not yet on the bridge) connects again, and the server, which saw
    // the first connection come up, takes the new one (over net_tap at 1% loss the server otherwise
    // waited for a hello that never came and the client for a server that had given up).
    bool hello_seen() const { return hello_seen_; }

private:
    struct Held {
        uint64_t due_us;
        uint16_t stream;
        uint32_t k;
    };
    void release(uint16_t s, uint32_t k) {
        if (c_.recv_hold_us == 0) return repost(s, k);
        held_.push_back({now_ + c_.recv_hold_us, s, k});
    }
    void repost(uint16_t s, uint32_t k) {
        const uint64_t slot = uint64_t(s) * rdepth_ + k;
        const Sge sge{kRecvIova + slot * c_.msg, c_.msg, recv_mr_.lkey};
        if (d_.post_recv(conn_, s, slot, sge) != Result::Ok) fail("post_recv refused");
    }
    void fail(const std::string& why) {
        ++errors;
        if (first_error.empty()) first_error = why;
    }
    // The key exchange: the hello came, the keys go back (their Send completes on this CQ too).
    bool key_exchange(const WorkCompletion& wc) {
        if (wc.wr_id != kHelloWr && wc.wr_id != kKeysWr) return false;
        if (wc.wr_id == kHelloWr && wc.status == Status::Success) hello_seen_ = true;
        if (wc.status != Status::Success)
            fail(std::string("key exchange ") + status_name(wc.status));
        else if (wc.wr_id == kHelloWr && d_.post_send(conn_, kKeysStream, kKeysWr,
                                                      Sge{keys_mr_.iova, sizeof keys_, keys_mr_.lkey}) != Result::Ok)
            fail("post_send of the keys refused");
        return true;
    }
    void handle(const WorkCompletion& wc) {
        // A connection that went down before its hello (see hello_seen) flushes its receives: not
        // this run's data.
        if (wc.conn != conn_ || (!hello_seen_ && wc.status == Status::Flushed)) {
            ++abandoned;
            return;
        }
        if (key_exchange(wc)) return;
        if (wc.status != Status::Success) {
            // Any error, Flushed included, used up this stream's next receive (its message's turn):
            // a later receive of the stream may still complete with Success [R-CMP-2].
            const uint64_t i = wc.stream + next_k_[wc.stream]++ * c_.streams;
            // A flushed receive at close is the normal end, not a data error.
            if (wc.status == Status::Flushed) return;
            // The sender voided this message: a refused key, or RNR retries exhausted [R-REL-9].
            if (wc.status == Status::Canceled && (c_.bad_key(i) || c_.recv_hold_us)) {
                ++canceled;
                release(wc.stream, uint32_t(wc.wr_id % rdepth_));
                return;
            }
            fail(std::string("server completion ") + status_name(wc.status) + " for message " + std::to_string(i));
            return;
        }
        const uint16_t s = wc.stream;
        const uint64_t i = s + next_k_[s]++ * c_.streams;
        const uint64_t off = src_offset(i, c_.msg);
        if (c_.bad_key(i)) {
            ++bad;
            fail("message " + std::to_string(i) + " carried a key naming no region, yet completed");
        }
        const uint8_t* got;
        if (wc.has_imm) {  // a Write: check the destination slot it names
            if (wc.imm != uint32_t(i) || is_send(c_.op, i)) {
                ++bad;
                fail("write out of order on stream " + std::to_string(s));
            }
            got = dst_.get() + (i % c_.dst_slots()) * c_.msg;
        } else {
            if (!is_send(c_.op, i) || wc.byte_len != c_.msg) {
                ++bad;
                fail("send mismatch on stream " + std::to_string(s));
            }
            got = recv_.get() + wc.wr_id * c_.msg;
        }
        if (std::memcmp(got, table_ + off, c_.msg) != 0) {
            ++bad;
            fail("data mismatch in message " + std::to_string(i));
        } else {
            ++verified_msgs;
            verified_bytes += c_.msg;
        }
        std::memset(const_cast<uint8_t*>(got), 0, c_.msg);  // a lost later message must not pass
        release(s, uint32_t(wc.wr_id % rdepth_));
    }
    Device& d_;
    Common c_;
    const uint8_t* table_;
    std::unique_ptr<uint8_t[]> dst_, recv_;
    uint64_t recv_bytes_ = 0;
    uint32_t rdepth_ = 0;
    MemoryRegion recv_mr_, keys_mr_;
    ServerKeys keys_;
    uint32_t conn_ = 0;
    bool hello_seen_ = false;
    std::vector<uint64_t> next_k_;
    std::deque<Held> held_;
    uint64_t now_ = 0;
};

// The sending end (client): posts messages, keeps `depth` outstanding, times each one.
class ClientSide {
public:
    ClientSide(Device& d, const Common& c, const uint8_t* table, const io::Clock& clock)
        : d_(d), c_(c), table_(table), clock_(clock) {
        if (d.reg_mr(const_cast<uint8_t*>(table), kTableBytes, access::kLocalWrite, &src_mr_) != Result::Ok ||
            d.reg_mr(&keys_, sizeof keys_, access::kLocalWrite, &keys_mr_) != Result::Ok)
            throw std::runtime_error("client: reg_mr failed");
        if (c.op == PerfOp::Read) {
            sink_bytes_ = uint64_t(c.depth) * c.msg;
            sink_ = std::make_unique<uint8_t[]>(sink_bytes_);
            std::memset(sink_.get(), 0, sink_bytes_);
            if (d.reg_mr(sink_.get(), sink_bytes_, kAll, &sink_mr_) != Result::Ok)
                throw std::runtime_error("client: reg_mr failed");
        }
        post_time_.assign(kRing, 0);
        lat_.reserve(1 << 20);
    }
    // Asks the server for its keys once the connection is up: their receive first, then the hello.
    void on_up(uint32_t conn) {
        if (d_.post_recv(conn, kKeysStream, kKeysWr, Sge{keys_mr_.iova, sizeof keys_, keys_mr_.lkey}) != Result::Ok ||
            d_.post_send(conn, kKeysStream, kHelloWr, Sge{src_mr_.iova, 0, src_mr_.lkey}) != Result::Ok)
            fail("key exchange refused");
    }
    // Posts while there is room and messages left (limit: total messages; UINT64_MAX = until stopped),
    // once the server's keys are known and acknowledged: a first burst of posts would otherwise hold
    // up the ACK of the keys beyond ACK_DELAY_MAX ([R-ACK-3], judged by `mroce check`).
    void post(uint32_t conn, uint64_t limit) {
        if (!keys_acked()) return;
        while (posted_ < limit && posted_ - completed_ < c_.depth) {
            const uint64_t i = posted_;
            const uint16_t s = uint16_t(i % c_.streams);
            const uint64_t off = src_offset(i, c_.msg);
            Result r;
            if (c_.op == PerfOp::Read) {
                const uint64_t slot = i % c_.depth;
                r = d_.post_read(conn, s, i, Sge{sink_mr_.iova + slot * c_.msg, c_.msg, sink_mr_.lkey}, kSrcIova + off,
                                 keys_.src_rkey);
            } else if (is_send(c_.op, i)) {
                r = d_.post_send(conn, s, i, Sge{src_mr_.iova + off, c_.msg, src_mr_.lkey});
            } else {
                r = d_.post_write_imm(conn, s, i, Sge{src_mr_.iova + off, c_.msg, src_mr_.lkey},
                                      kDstIova + (i % c_.dst_slots()) * c_.msg,
                                      c_.bad_key(i) ? kBadRkey : keys_.dst_rkey, uint32_t(i));
            }
            if (r == Result::NoResources) return;
            if (r != Result::Ok) {
                fail(std::string("post refused: ") + result_name(r));
                return;
            }
            post_time_[i % kRing] = clock_.now_us();
            ++posted_;
        }
    }
    void poll() {
        WorkCompletion wc[64];
        const uint64_t now = clock_.now_us();
        for (int n; (n = d_.poll_cq(wc, 64)) > 0;) {
            for (int k = 0; k < n; ++k) {
                const WorkCompletion& w = wc[k];
                if (w.wr_id == kHelloWr || w.wr_id == kKeysWr) {
                    if (w.status != Status::Success || (w.wr_id == kKeysWr && w.byte_len != sizeof keys_))
                        fail(std::string("key exchange ") + status_name(w.status));
                    if (w.wr_id == kKeysWr) {
                        have_keys_ = true;
                        keys_at_ = now;
                    }
                    continue;
                }
                ++completed_;
                if (c_.bad_key(w.wr_id) != (w.status == Status::RemoteAccess)) {
                    ++bad;
                    fail(std::string("message ") + std::to_string(w.wr_id) +
                         (c_.bad_key(w.wr_id) ? " with a key naming no region" : "") + " completed " +
                         status_name(w.status));
                    continue;
                }
                if (w.status == Status::RemoteAccess) {
                    ++remote_access;
                    continue;
                }
                if (w.status == Status::RnrRetryExceeded && c_.expect_rnr_failures) {
                    ++rnr_failed;
                    continue;
                }
                if (w.status != Status::Success) {
                    fail(std::string("client completion ") + status_name(w.status));
                    continue;
                }
                bytes_ += w.byte_len;
                if (lat_.size() < lat_.capacity()) lat_.push_back(uint32_t(now - post_time_[w.wr_id % kRing]));
                if (c_.op == PerfOp::Read) {
                    uint8_t* got = sink_.get() + (w.wr_id % c_.depth) * c_.msg;
                    if (std::memcmp(got, table_ + src_offset(w.wr_id, c_.msg), c_.msg) != 0) {
                        ++bad;
                        fail("read data mismatch in message " + std::to_string(w.wr_id));
                    } else {
                        ++read_verified;
                    }
                    std::memset(got, 0, c_.msg);
                }
            }
        }
    }
    uint64_t posted() const { return posted_; }
    uint64_t completed() const { return completed_; }
    uint64_t bytes() const { return bytes_; }
    json latency() {
        std::sort(lat_.begin(), lat_.end());
        auto q = [&](double p) -> uint64_t {
            return lat_.empty() ? 0 : lat_[std::min(lat_.size() - 1, size_t(p * double(lat_.size())))];
        };
        return {{"p50", q(0.5)}, {"p99", q(0.99)}, {"p999", q(0.999)}, {"samples", lat_.size()}};
    }
    uint64_t errors = 0, bad = 0, read_verified = 0;
    uint64_t remote_access = 0, rnr_failed = 0;  // expected failures (--bad-rkey-every, --expect-rnr-failures)
    std::string first_error;

private:
    static constexpr uint64_t kRing = 1 << 16;
    void fail(const std::string& why) {
        ++errors;
        if (first_error.empty()) first_error = why;
    }
    Device& d_;
    Common c_;
    const uint8_t* table_;
    const io::Clock& clock_;
    MemoryRegion src_mr_, sink_mr_, keys_mr_;
    ServerKeys keys_;  // received from the server
    bool have_keys_ = false;
    uint64_t keys_at_ = 0;  // when their receive completed
    bool keys_acked() const {
        if (!have_keys_ || clock_.now_us() < keys_at_ + d_.config().ack_delay_us) return false;
        const auto due = d_.next_deadline();
        return !due || *due > clock_.now_us();  // the delayed ACK has gone
    }
    std::unique_ptr<uint8_t[]> sink_;
    uint64_t sink_bytes_ = 0;
    uint64_t posted_ = 0, completed_ = 0, bytes_ = 0;
    std::vector<uint64_t> post_time_;
    std::vector<uint32_t> lat_;
};

// Retransmissions by the rule that declared their PSN lost, and the spurious ones among them.
json causes_json(const RetransmissionCauses& k) {
    return {{"gap", k.gap}, {"probe", k.probe}, {"rto", k.rto},
            {"rnr", k.rnr}, {"nak", k.nak},     {"spurious", k.spurious}};
}

json path_stats(const Device& d, uint32_t conn) {
    json arr = json::array();
    for (uint16_t p = 0; p < d.path_count(conn); ++p) {
        auto pi = d.path_info(conn, p);
        if (!pi) continue;
        arr.push_back({{"path", p},
                       {"state", path_state_name(pi->state)},
                       {"route", pi->route},
                       {"packets", pi->packets_sent},
                       {"retransmissions", pi->retransmissions},
                       {"retx_by_cause", causes_json(pi->retx_by_cause)},
                       {"repaths", pi->repaths},
                       {"home_returns", pi->home_returns},
                       {"srtt_us", pi->srtt},
                       {"cwnd", pi->cwnd}});
    }
    return arr;
}

json plane_stats(dpdk::IoContext& ctx, const std::vector<size_t>& planes) {
    json arr = json::array();
    for (size_t k = 0; k < planes.size(); ++k) {
        const auto c = ctx.port(planes[k]).counters();
        json o{{"plane", k}, {"tx_frames", c.tx_frames}, {"rx_frames", c.rx_frames}};
        // Frames the host lost before the wire (a full tx queue, no mbuf, a missed rx): a loss
        // that no impairment asked for, shown so a run's retransmissions can be explained.
        if (const uint64_t ce = ctx.pump(planes[k]).counters().ce_marked) o["ce_marked"] = ce;
        if (const uint64_t lost = ctx.pump(planes[k]).counters().tx_lost) o["tx_dropped"] = lost;
        if (c.rx_missed) o["rx_missed"] = c.rx_missed;
        if (c.rx_nombuf) o["rx_nombuf"] = c.rx_nombuf;
        if (auto* imp = ctx.rx_impairment(planes[k])) o["impair_rx_dropped"] = imp->stats().dropped;
        arr.push_back(o);
    }
    return arr;
}

// Frames the sender's ports hold that the other end has not taken yet, summed over its planes; known
// for ring ports only (nullopt as soon as one plane cannot tell).
std::optional<uint64_t> tx_queue_depth(dpdk::IoContext& ctx, const std::vector<size_t>& planes) {
    uint64_t sum = 0;
    for (size_t k : planes) {
        const auto depth = ctx.port(k).tx_queue_depth();
        if (!depth) return std::nullopt;
        sum += *depth;
    }
    return sum;
}

// The last sample (final counts), then the file closed; the JSON says where it went.
json finish_timeline(Timeline& tl, uint64_t now_us, const Device& d, uint32_t conn, std::optional<uint64_t> depth) {
    tl.sample(now_us, d, conn, depth);
    tl.finish();
    return {{"file", tl.path()}, {"rows", tl.rows()}};
}

DeviceConfig device_config(const dpdk::PlaneAddr& a, const Common& c) {
    DeviceConfig cfg;
    cfg.self.mac = a.mac.b;
    cfg.self.ipv6 = a.ip.v6;
    std::memcpy(cfg.self.ip.data(), a.ip.b.data(), a.ip.v6 ? 16 : 4);
    cfg.offer.paths = c.paths;
    cfg.offer.streams = c.streams;
    cfg.offer.max_payload = c.max_payload;
    cfg.offer.window_cap = c.window_cap;
    cfg.rnr_detail = c.rnr_detail;
    cfg.max_work_requests = 8192;
    cfg.max_receives = 8192;
    cfg.cq_size = 16384;
    cfg.max_connections = 4;
    cfg.max_peers = 4;
    cfg.max_window_blocks = 256;
    if (c.rto_min_us) cfg.rto_min_us = c.rto_min_us;
    // Unless given, PEER_TIMEOUT grows with a large RTO minimum so that RTO_MAX <= PEER_TIMEOUT / 8
    // still holds: a dead route gets its re-paths before the peer is declared gone.
    cfg.peer_timeout_us = c.peer_timeout_us ? c.peer_timeout_us : std::max(cfg.peer_timeout_us, 8 * cfg.rto_min_us);
    if (c.pto_min_us) cfg.pto_min_us = c.pto_min_us;
    cfg.rto_init_us = std::max(cfg.rto_init_us, cfg.rto_min_us);
    cfg.rto_max_us = std::max(cfg.rto_min_us, cfg.peer_timeout_us / 8);  // [R-RTO-3], A-27
    return cfg;
}

Address peer_address(const dpdk::PlaneAddr& a) {
    Address p;
    p.mac = a.peer_mac.b;
    p.ipv6 = a.peer_ip.v6;
    std::memcpy(p.ip.data(), a.peer_ip.b.data(), a.peer_ip.v6 ? 16 : 4);
    return p;
}

class Progress {
public:
    Progress(bool on, std::string label) : on_(on && isatty(2) == 1), label_(std::move(label)) {}
    void tick(uint64_t now_us, uint64_t start_us, uint64_t bytes, uint64_t target, uint64_t retx) {
        if (!on_ || now_us < next_) return;
        next_ = now_us + 500000;
        const double s = double(now_us - start_us) / 1e6;
        std::fprintf(stderr, "\r%s %6.0f MiB", label_.c_str(), double(bytes) / (1 << 20));
        if (target) std::fprintf(stderr, " / %.0f MiB", double(target) / (1 << 20));
        std::fprintf(stderr, "  %6.2f Gb/s  retx %llu   ", s > 0 ? double(bytes) * 8 / s / 1e9 : 0.0,
                     (unsigned long long)retx);
        std::fflush(stderr);
        dirty_ = true;
    }
    ~Progress() {
        if (dirty_) std::fprintf(stderr, "\n");
    }

private:
    bool on_;
    std::string label_;
    uint64_t next_ = 0;
    bool dirty_ = false;
};

// Resource limits an engine met, and frames it refused from a peer it does not trust ([R-ACK-10],
// [R-SEC-10], [R-CONN-3], [R-MEM-3]); all zero in a healthy run (but for --bad-rkey-every's
// refusals): they explain loss no impairment caused.
json limit_stats(const Counters& k) {
    return {{"tx_no_buffer", k.tx_no_buffer},
            {"window_block_waits", k.window_block_waits},
            {"cq_overflow", k.cq_overflow},
            {"out_of_window", k.out_of_window},
            {"unknown_dcid", k.unknown_dcid},
            {"invalid_acks", k.invalid_acks},
            {"sack_beyond_snxt", k.sack_beyond_snxt},
            {"foreign_source", k.foreign_source},
            {"bad_accepts", k.bad_accepts},
            {"remote_access_naks", k.remote_access_naks},
            {"rnr_receive_limit", k.rnr_receive_limit},
            {"rnr_response_limit", k.rnr_response_limit},
            {"rejects_unconfirmed", k.rejects_unconfirmed}};
}

json summary(const Common& c, uint64_t msgs, uint64_t bytes, double secs, const Device& sender, uint32_t conn) {
    const auto& k = sender.counters();
    return {{"op", op_name(c.op)},
            {"msg_size", c.msg},
            {"messages", msgs},
            {"bytes", bytes},
            {"seconds", secs},
            {"goodput_gbps", secs > 0 ? double(bytes) * 8 / secs / 1e9 : 0.0},
            {"msgs_per_s", secs > 0 ? double(msgs) / secs : 0.0},
            {"retransmissions", k.retransmissions},
            {"retx_by_cause", causes_json(k.retx_by_cause)},
            {"repaths", k.repaths},
            {"home_returns", k.home_returns},  // [R-PATH-10]
            {"probes", k.probes_sent},
            {"data_packets", k.data_sent},
            {"paths", path_stats(sender, conn)},
            {"sender_limits", limit_stats(k)}};
}

// ---- loopback: both ends in one process over net_ring planes ----

json run_loopback(const LoopbackParams& p, Timeline* timeline = nullptr) {
    Common c;
    c.op = p.op;
    c.msg = p.msg_size;
    c.depth = p.depth;
    c.paths = p.paths;
    c.streams = p.streams;
    c.max_payload = p.max_payload;
    c.rto_min_us = p.rto_min_us;
    c.pto_min_us = p.pto_min_us;
    dpdk::IoOptions o;
    o.eal.file_prefix = p.file_prefix.empty() ? "mroce-perf-" + std::to_string(getpid()) : p.file_prefix;
    for (uint16_t k = 0; k < p.planes; ++k) o.ports.push_back("ring");  // ports 2k (A) | 2k+1 (B)
    o.mbuf_priv = dpdk::kEnginePriv;
    o.impair_rx = p.impair;
    o.ce_backlog = p.ce_backlog;
    o.pcap = p.pcap;
    o.ip = {"198.18.0.1", "198.18.0.2"};
    o.mbufs = 32768;
    std::vector<std::string> ips;
    for (uint16_t k = 0; k < p.planes; ++k) {
        ips.push_back("198.18.0.1");
        ips.push_back("198.18.0.2");
    }
    o.ip = ips;
    o.peer_ip.clear();
    // net_ring ports have no MAC of their own: give each end one, so a capture shows who sent what.
    const std::string mac_a = "02:00:00:00:00:0a", mac_b = "02:00:00:00:00:0b";
    for (uint16_t k = 0; k < p.planes; ++k) {
        o.peer_ip.push_back("198.18.0.2");
        o.peer_ip.push_back("198.18.0.1");
        o.mac.insert(o.mac.end(), {mac_a, mac_b});
        o.peer_mac.insert(o.peer_mac.end(), {mac_b, mac_a});
    }
    dpdk::IoContext ctx(o);
    // Both ends share one capture: a tap at A's ports only (both directions as A sees them), so each
    // frame is recorded once and `mroce check --at 198.18.0.1` judges A fully.
    for (uint16_t k = 0; k < p.planes; ++k) ctx.pump(2 * k + 1).set_pcap(nullptr);
    std::vector<size_t> pa, pb;
    for (uint16_t k = 0; k < p.planes; ++k) {
        pa.push_back(2 * k);
        pb.push_back(2 * k + 1);
    }
    dpdk::EnginePort port_a(ctx, pa), port_b(ctx, pb);
    dpdk::DpdkClock clock;
    auto table = make_table();
    Result err = Result::Ok;
    auto a = Device::open(device_config(ctx.addr(0), c), port_a, clock, &err);
    auto b = Device::open(device_config(ctx.addr(1), c), port_b, clock, &err);
    if (!a || !b) throw std::runtime_error(std::string("Device::open: ") + result_name(err));
    ServerSide server(*b, c, table.get());
    ClientSide client(*a, c, table.get(), clock);
    uint32_t conn = 0;
    if (a->connect(b->config().self, &conn) != Result::Ok) throw std::runtime_error("connect refused");
    auto spin = [&] {
        a->progress();
        b->progress();
        port_a.service();
        port_b.service();
    };
    ConnEvent ev;
    bool up_a = false, up_b = false;
    const uint64_t t_conn = clock.now_us();
    while (!(up_a && up_b)) {
        spin();
        for (int n; (n = a->poll_events(&ev, 1)) > 0;) {
            if (ev.kind != ConnEvent::Kind::Up) throw std::runtime_error("connection failed");
            client.on_up(conn);
            up_a = true;
        }
        for (int n; (n = b->poll_events(&ev, 1)) > 0;) {
            if (ev.kind != ConnEvent::Kind::Up) throw std::runtime_error("connection failed");
            server.on_up(ev.conn);
            up_b = true;
        }
        if (clock.now_us() - t_conn > 5000000) throw std::runtime_error("connect timed out");
    }
    const uint64_t limit = p.duration_s > 0 ? UINT64_MAX : (p.total_bytes + c.msg - 1) / c.msg;
    const uint64_t target = p.duration_s > 0 ? 0 : limit * c.msg;
    Progress prog(p.progress, p.label);
    const uint64_t start = clock.now_us();
    if (timeline) timeline->start(start);
    uint64_t stop_posting = limit;
    uint64_t last_progress_us = start, last_completed = 0;
    std::string stall;
    for (;;) {
        client.post(conn, stop_posting);
        spin();
        client.poll();
        server.poll(clock.now_us());
        const uint64_t now = clock.now_us();
        if (timeline && timeline->due(now)) timeline->sample(now, *a, conn, tx_queue_depth(ctx, pa));
        if (p.duration_s > 0 && stop_posting == UINT64_MAX && now - start >= uint64_t(p.duration_s * 1e6))
            stop_posting = client.posted();
        if (client.completed() >= stop_posting && client.completed() == client.posted()) {
            // Writes and Sends are acknowledged only once placed, so every receive completion is
            // out or about to be: a few more turns pick up those still in the CQ.
            for (uint64_t t = clock.now_us();
                 c.op != PerfOp::Read && server.verified_msgs < client.completed() && clock.now_us() - t < 1000000;) {
                spin();
                server.poll(clock.now_us());
            }
            break;
        }
        if (client.errors || server.errors) break;
        if (client.completed() != last_completed) {
            last_completed = client.completed();
            last_progress_us = now;
        } else if (now - last_progress_us > 10000000) {
            stall = "no completion for 10 s";
            break;
        }
        prog.tick(now, start, client.bytes(), target, a->counters().retransmissions);
    }
    const double secs = double(clock.now_us() - start) / 1e6;
    json r = summary(c, client.completed(), client.bytes(), secs, *a, conn);
    r["latency_us"] = client.latency();
    r["planes"] = plane_stats(ctx, pa);
    r["impair"] = p.impair;
    const uint64_t verified_bytes = c.op == PerfOp::Read ? client.read_verified * c.msg : server.verified_bytes;
    const bool ok = !client.errors && !server.errors && stall.empty() && client.completed() == client.posted() &&
                    verified_bytes == client.bytes() && client.bytes() > 0;
    r["verified_bytes"] = verified_bytes;
    r["verified"] = ok;
    r["errors"] = client.errors + server.errors;
    if (!client.first_error.empty())
        r["error"] = client.first_error;
    else if (!server.first_error.empty())
        r["error"] = server.first_error;
    else if (!stall.empty())
        r["error"] = stall;
    r["planes_b"] = plane_stats(ctx, pb);
    if (timeline) r["timeline"] = finish_timeline(*timeline, clock.now_us(), *a, conn, tx_queue_depth(ctx, pa));
    r["receiver"] = {{"duplicates", b->counters().duplicates},
                     {"naks_sent", b->counters().naks_sent},
                     {"acks_sent", b->counters().acks_sent},
                     {"limits", limit_stats(b->counters())}};
    return r;
}

// ---- two processes: server and client over real ports ----

struct NetParams {
    PerfOp op = PerfOp::Mixed;
    uint32_t msg = 65536, depth = 64;
    uint64_t iters = 0;
    double duration_s = 0, timeout_s = 60;
    uint16_t paths = 4, streams = 4, max_payload = 1024;
    uint32_t peer_timeout_us = 0, rto_min_us = 0, pto_min_us = 0;
    uint16_t window_cap = 256;
    uint32_t bad_rkey_every = 0, recv_depth = 0, recv_hold_us = 0;
    uint16_t rnr_detail = 0;
    bool expect_rnr_failures = false;
};

// The RTO minimum perf uses when none is given. Ports through the kernel (af_packet, af_xdp, tap)
// share the two cores with the kernel's veth and bridge work, and a peer stalls for up to 5-10 ms
// at times: with 2 ms, 0.2% of data packets went out again by RTO at 0% loss over af_packet, all of
// them spurious, and peer stalls pushed every path to FAILED; with 10 ms, none (README). Loss
// is repaired by the SACK gap and the tail probe, so the RTO is the last resort and a longer one
// costs little. Ring and memif ports (shared memory, no kernel) keep 2 ms.
uint32_t rto_min_for(dpdk::IoContext& ctx) {
    for (size_t k = 0; k < ctx.planes(); ++k) {
        const dpdk::Backend b = ctx.port(k).backend();
        if (b != dpdk::Backend::RingPair && b != dpdk::Backend::Memif && b != dpdk::Backend::Null) return kRtoMinKernel;
    }
    return kRtoMinShared;
}

json run_net(bool is_server, const NetParams& np, dpdk::IoOptions o, bool progress, Timeline* timeline = nullptr) {
    Common c;
    c.op = np.op;
    c.msg = np.msg;
    c.depth = np.depth;
    c.paths = np.paths;
    c.streams = np.streams;
    c.max_payload = np.max_payload;
    c.peer_timeout_us = np.peer_timeout_us;
    c.rto_min_us = np.rto_min_us;
    c.pto_min_us = np.pto_min_us;
    c.window_cap = np.window_cap;
    c.bad_rkey_every = np.bad_rkey_every;
    c.recv_depth = np.recv_depth;
    c.recv_hold_us = np.recv_hold_us;
    c.rnr_detail = np.rnr_detail;
    c.expect_rnr_failures = np.expect_rnr_failures;
    o.mbuf_priv = dpdk::kEnginePriv;
    if (o.eal.file_prefix.empty()) o.eal.file_prefix = "mroce-perf-" + std::to_string(getpid());
    dpdk::IoContext ctx(o);
    if (c.rto_min_us == kRtoMinAuto) c.rto_min_us = rto_min_for(ctx);
    std::vector<size_t> planes;
    for (size_t k = 0; k < ctx.planes(); ++k) planes.push_back(k);
    dpdk::EnginePort port(ctx, planes);
    dpdk::DpdkClock clock;
    auto table = make_table();
    Result err = Result::Ok;
    auto d = Device::open(device_config(ctx.addr(0), c), port, clock, &err);
    if (!d) throw std::runtime_error(std::string("Device::open: ") + result_name(err));
    auto spin = [&] {
        d->progress();
        port.service();
    };
    const uint64_t t0 = clock.now_us();
    const uint64_t deadline = t0 + uint64_t(np.timeout_s * 1e6);
    ConnEvent ev;
    if (is_server) {
        ServerSide server(*d, c, table.get());
        uint32_t conn = 0;
        bool up = false, down = false;
        Status down_status = Status::Success;
        uint64_t start = 0;
        Progress prog(progress, "server");
        while (!down && clock.now_us() < deadline) {
            spin();
            server.poll(clock.now_us());
            for (int n; (n = d->poll_events(&ev, 1)) > 0;) {
                if (ev.kind == ConnEvent::Kind::Up && !server.hello_seen()) {
                    up = true;  // the first connection, or a newer one before any hello (hello_seen)
                    conn = ev.conn;
                    server.on_up(conn);
                    start = clock.now_us();
                    if (timeline) timeline->start(start);
                } else if (ev.kind == ConnEvent::Kind::Down && up && ev.conn == conn) {
                    if (server.hello_seen()) {
                        down = true;
                        down_status = ev.status;
                    } else {
                        up = false;  // gone before the hello: wait for the client to connect again
                    }
                }
            }
            if (up) prog.tick(clock.now_us(), start, server.verified_bytes, 0, 0);
            // The server sends data only for Reads; its ACK-side path state is recorded all the same.
            if (up && !down && timeline && timeline->due(clock.now_us()))
                timeline->sample(clock.now_us(), *d, conn, tx_queue_depth(ctx, planes));
        }
        server.poll(clock.now_us());
        const double secs = up ? double(clock.now_us() - start) / 1e6 : 0;
        json r{{"role", "server"},
               {"connected", up},
               {"closed", down},
               {"close_status", status_name(down_status)},
               {"verified_messages", server.verified_msgs},
               {"verified_bytes", server.verified_bytes},
               {"canceled", server.canceled},
               {"abandoned_completions", server.abandoned},
               {"bad", server.bad},
               {"errors", server.errors},
               {"seconds", secs},
               {"goodput_gbps", secs > 0 ? double(server.verified_bytes) * 8 / secs / 1e9 : 0.0},
               {"duplicates", d->counters().duplicates},
               {"naks_sent", d->counters().naks_sent},
               {"planes", plane_stats(ctx, planes)}};
        if (timeline && up)
            r["timeline"] = finish_timeline(*timeline, clock.now_us(), *d, conn, tx_queue_depth(ctx, planes));
        if (!server.first_error.empty()) r["error"] = server.first_error;
        r["verified"] = up && down && down_status == Status::Success && server.errors == 0 && server.bad == 0 &&
                        (np.op == PerfOp::Read || server.verified_msgs > 0);
        return r;
    }
    ClientSide client(*d, c, table.get(), clock);
    uint32_t conn = 0;
    const Address peer = peer_address(ctx.addr(0));
    bool up = false;
    std::string failure;
    // The server may start later: retry the connect until the deadline.
    while (!up && failure.empty() && clock.now_us() < deadline) {
        if (d->connect(peer, &conn) != Result::Ok) throw std::runtime_error("connect refused");
        for (bool waiting = true; waiting && clock.now_us() < deadline;) {
            spin();
            for (int n; (n = d->poll_events(&ev, 1)) > 0;) {
                waiting = false;
                up = ev.kind == ConnEvent::Kind::Up;
            }
        }
    }
    if (!up) throw std::runtime_error("could not connect to the server");
    client.on_up(conn);
    const uint64_t limit = np.duration_s > 0 ? UINT64_MAX : (np.iters ? np.iters : 10000);
    uint64_t stop_posting = limit;
    const uint64_t start = clock.now_us();
    if (timeline) timeline->start(start);
    Progress prog(progress, "client");
    bool down = false;
    while (clock.now_us() < deadline) {
        client.post(conn, stop_posting);
        spin();
        client.poll();
        for (int n; (n = d->poll_events(&ev, 1)) > 0;)
            if (ev.kind == ConnEvent::Kind::Down) down = true;
        if (down) {
            failure = "connection went down";
            break;
        }
        const uint64_t now = clock.now_us();
        if (timeline && timeline->due(now)) timeline->sample(now, *d, conn, tx_queue_depth(ctx, planes));
        if (np.duration_s > 0 && stop_posting == UINT64_MAX && now - start >= uint64_t(np.duration_s * 1e6))
            stop_posting = client.posted();
        if (client.completed() >= stop_posting && client.completed() == client.posted()) break;
        if (client.errors) break;
        prog.tick(now, start, client.bytes(), np.duration_s > 0 ? 0 : limit * c.msg, d->counters().retransmissions);
    }
    const double secs = double(clock.now_us() - start) / 1e6;
    if (failure.empty() && client.completed() != client.posted()) failure = "timed out";
    json r = summary(c, client.completed(), client.bytes(), secs, *d, conn);
    r["role"] = "client";
    r["latency_us"] = client.latency();
    r["planes"] = plane_stats(ctx, planes);
    if (timeline) r["timeline"] = finish_timeline(*timeline, clock.now_us(), *d, conn, tx_queue_depth(ctx, planes));
    // Graceful close: the server reports Down(Success) and ends.
    d->close(conn);
    for (uint64_t t = clock.now_us(); clock.now_us() - t < 2000000 && !down;) {
        spin();
        client.poll();
        for (int n; (n = d->poll_events(&ev, 1)) > 0;)
            if (ev.kind == ConnEvent::Kind::Down) down = true;
    }
    r["closed"] = down;
    r["errors"] = client.errors;
    r["expected_failures"] = {{"remote_access", client.remote_access}, {"rnr_retry_exceeded", client.rnr_failed}};
    if (!client.first_error.empty()) failure = client.first_error;
    if (!failure.empty()) r["error"] = failure;
    r["verified"] = failure.empty() && client.errors == 0 && client.bad == 0 && client.bytes() > 0;
    r["verified_by"] = np.op == PerfOp::Read ? "client" : "server";
    return r;
}

PerfOp parse_op(const std::string& s) {
    if (s == "write") return PerfOp::Write;
    if (s == "send") return PerfOp::Send;
    if (s == "read") return PerfOp::Read;
    if (s == "mixed") return PerfOp::Mixed;
    throw CLI::ValidationError("--op", "must be write, send, read or mixed");
}

void print_human(const json& r) {
    if (r.value("role", "") == "server") {
        std::cout << "server: " << r.value("verified_messages", 0ull) << " messages, "
                  << r.value("verified_bytes", 0ull) << " bytes verified in " << r.value("seconds", 0.0) << " s  close "
                  << r.value("close_status", "?") << "  duplicates " << r.value("duplicates", 0ull) << "  NAKs sent "
                  << r.value("naks_sent", 0ull) << "\n";
        std::printf("goodput %.3f Gb/s (verified at the receiver)\n", r.value("goodput_gbps", 0.0));
    } else {
        std::cout << "op " << r.value("op", "?") << "  msg " << r.value("msg_size", 0) << " B  messages "
                  << r.value("messages", 0ull) << "  bytes " << r.value("bytes", 0ull) << "  seconds "
                  << r.value("seconds", 0.0) << "\n";
        std::printf("goodput %.3f Gb/s  %.0f msg/s  retransmissions %llu  repaths %llu  home returns %llu\n",
                    r.value("goodput_gbps", 0.0), r.value("msgs_per_s", 0.0),
                    (unsigned long long)r.value("retransmissions", 0ull), (unsigned long long)r.value("repaths", 0ull),
                    (unsigned long long)r.value("home_returns", 0ull));
        if (r.contains("retx_by_cause")) {
            const json& k = r["retx_by_cause"];
            std::printf(
                "retransmissions by cause: gap %llu  probe %llu  rto %llu  rnr %llu  nak %llu;  spurious %llu\n",
                (unsigned long long)k.value("gap", 0ull), (unsigned long long)k.value("probe", 0ull),
                (unsigned long long)k.value("rto", 0ull), (unsigned long long)k.value("rnr", 0ull),
                (unsigned long long)k.value("nak", 0ull), (unsigned long long)k.value("spurious", 0ull));
        }
    }
    std::fflush(stdout);
    if (r.contains("latency_us"))
        std::cout << "latency (µs, under load): p50 " << r["latency_us"]["p50"] << "  p99 " << r["latency_us"]["p99"]
                  << "  p99.9 " << r["latency_us"]["p999"] << "\n";
    if (r.contains("paths"))
        for (const auto& p : r["paths"])
            std::cout << "  path " << p["path"] << " " << p["state"].get<std::string>() << " route " << p["route"]
                      << " packets " << p["packets"] << " retx " << p["retransmissions"] << " repaths " << p["repaths"]
                      << " home returns " << p.value("home_returns", 0ull) << " srtt " << p["srtt_us"] << " µs\n";
    if (r.contains("planes"))
        for (const auto& p : r["planes"]) {
            std::cout << "  plane " << p["plane"] << " tx " << p["tx_frames"] << " rx " << p["rx_frames"];
            // Host-side events, by cause: marks of the port's own queues, frames lost before the wire.
            for (const char* k : {"ce_marked", "tx_dropped", "rx_missed", "rx_nombuf", "impair_rx_dropped"})
                if (p.contains(k)) std::cout << " " << k << " " << p[k];
            std::cout << "\n";
        }
    std::cout << (r.value("verified", false) ? "data verified: every byte matched\n" : "DATA NOT VERIFIED\n");
    if (r.contains("timeline"))
        std::cout << "timeline: " << r["timeline"].value("rows", 0ull) << " rows in "
                  << r["timeline"].value("file", std::string("?")) << "\n";
    if (r.contains("error")) std::cout << "error: " << r["error"].get<std::string>() << "\n";
}

}  // namespace

json run_loopback_forked(const LoopbackParams& p) {
    int fds[2];
    if (pipe(fds) != 0) return {{"error", "pipe failed"}};
    std::cout.flush();
    std::fflush(stderr);
    const pid_t pid = fork();
    if (pid < 0) return {{"error", "fork failed"}};
    if (pid == 0) {
        close(fds[0]);
        std::string out;
        try {
            out = run_loopback(p).dump();
        } catch (const std::exception& e) { out = json{{"error", e.what()}, {"verified", false}}.dump(); }
        size_t off = 0;
        while (off < out.size()) {
            const ssize_t w = write(fds[1], out.data() + off, out.size() - off);
            if (w <= 0) break;
            off += size_t(w);
        }
        close(fds[1]);
        _exit(0);  // skip EAL/static destructors of the child
    }
    close(fds[1]);
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, size_t(n));
    close(fds[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    if (text.empty()) return {{"error", "run crashed (status " + std::to_string(st) + ")"}, {"verified", false}};
    return json::parse(text, nullptr, false);
}

Runner add_perf(CLI::App& app, const GlobalOptions& global) {
    auto* sub = app.add_subcommand("perf", "perftest-style bandwidth/latency run (loopback, server or client)");
    struct Opts {
        std::string role = "loopback";
        std::string op = "write";
        uint32_t size = 65536;
        uint64_t iters = 0;
        double duration = 0;
        uint32_t depth = 64;
        uint16_t paths = 4, streams = 4, planes = 2, mtu_payload = 0;
        double loss = 0;
        double timeout = 60;
        // Software ports (af_packet, af_xdp, memif between processes on a shared 2-core machine)
        // stall for hundreds of µs at times; the spec's datacenter minima (RTO 100 µs, PTO 20 µs)
        // then fire spuriously (measured: 12% retransmissions at 0% loss over af_packet). The RTO
        // minimum is chosen per port kind (kRtoMinAuto, see rto_min_for).
        uint32_t peer_timeout_us = 0, rto_min_us = kRtoMinAuto, pto_min_us = 500;
        uint16_t window_cap = 256, rnr_detail = 0;
        uint32_t bad_rkey_every = 0, recv_depth = 0, recv_hold_us = 0;
        bool expect_rnr_failures = false;
        bool quiet = false;
        std::string timeline;
        uint64_t timeline_interval_us = 1000;
        dpdk::IoOptions io;
    };
    auto o = std::make_shared<Opts>();
    sub->add_option("role", o->role, "loopback (both ends here, net_ring) | server | client")
        ->check(CLI::IsMember({"loopback", "server", "client"}))
        ->capture_default_str();
    sub->add_option("--op", o->op, "write | send | read | mixed")->capture_default_str();
    sub->add_option("-s,--size", o->size, "Message size in bytes")
        ->capture_default_str()
        ->check(CLI::Range(uint64_t(1), uint64_t(1) << 30));
    sub->add_option("-n,--iters", o->iters, "Messages to move (default: 1 GiB worth in loopback, 10000 otherwise)");
    sub->add_option("-D,--duration", o->duration, "Run for this many seconds instead of -n")
        ->check(CLI::NonNegativeNumber);
    sub->add_option("-t,--tx-depth", o->depth, "Messages outstanding")
        ->capture_default_str()
        ->check(CLI::Range(1, 65536));
    sub->add_option("--paths", o->paths, "Paths offered (1..256, [R-HDR-26])")
        ->capture_default_str()
        ->check(CLI::Range(1, 256));
    sub->add_option("--streams", o->streams, "Streams offered (1..65535, [R-HDR-26])")
        ->capture_default_str()
        ->check(CLI::Range(1, 65535));
    sub->add_option("--planes", o->planes, "Loopback: ring planes")->capture_default_str()->check(CLI::Range(1, 16));
    sub->add_option("-m,--max-payload", o->mtu_payload, "Max payload per packet (default 4096 loopback, 1024 ports)")
        ->check(CLI::Validator(
            [](std::string& v) -> std::string {
                unsigned long n = 0;
                try {
                    n = std::stoul(v);
                } catch (const std::exception&) { return "not a number"; }
                return n >= 256 && n <= 8192 && n % 64 == 0 ? "" : "must be 256..8192 and a multiple of 64 [R-HDR-26]";
            },
            "256..8192, a multiple of 64"));
    sub->add_option("--loss", o->loss, "Random loss in percent on every port's rx (our impairment layer)")
        ->check(CLI::Range(0.0, 100.0));
    sub->add_option("--timeout", o->timeout, "Server/client: give up after this many seconds")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    sub->add_option("--peer-timeout-us", o->peer_timeout_us,
                    "Server/client: the engine's peer timeout (default: its own)");
    sub->add_option("--rto-min-us", o->rto_min_us,
                    "The engine's minimum RTO (0: the spec's 100 µs; default: 2000 on ring and memif ports, "
                    "10000 on ports through the kernel: af_packet, af_xdp, vdev)")
        ->default_str("auto");
    sub->add_option("--pto-min-us", o->pto_min_us, "The engine's minimum tail-probe timeout (0: the spec's 20 µs)")
        ->capture_default_str();
    sub->add_option("--window-cap", o->window_cap, "Server/client: the Window Cap offered (1..256) [R-CC-1]")
        ->check(CLI::Range(1, 256))
        ->capture_default_str();
    sub->add_option("--bad-rkey-every", o->bad_rkey_every,
                    "Server/client (both): every N-th Write carries a key naming no region; the client expects "
                    "RemoteAccess, the server Canceled [R-REL-9]")
        ->check(CLI::Range(2u, 1u << 30));
    sub->add_option("--recv-depth", o->recv_depth,
                    "Server: receives posted ahead per stream (default max(tx-depth, 16))")
        ->check(CLI::Range(1u, 8192u));
    sub->add_option("--recv-hold-us", o->recv_hold_us,
                    "Server: post a consumed receive again only after this long (draws RNR NAKs [R-PLC-7])");
    sub->add_option("--rnr-detail", o->rnr_detail,
                    "Server: Detail of its RNR NAKs, 10 µs units (0: the sender's RNR default)");
    sub->add_flag("--expect-rnr-failures", o->expect_rnr_failures,
                  "Client: RnrRetryExceeded completions are expected (a starved server), counted, not errors");
    sub->add_flag("-q,--quiet", o->quiet, "No progress line");
    auto* timeline_opt = sub->add_option("--timeline", o->timeline,
                                         "Write this end's path state (cwnd, in flight, srtt, rto, retransmissions by "
                                         "cause, ...) every --timeline-interval-us as CSV to FILE "
                                         "(bench/dpdk/timeline_plot.sh draws it)");
    sub->add_option("--timeline-interval-us", o->timeline_interval_us, "Sampling interval of --timeline, µs")
        ->capture_default_str()
        ->check(CLI::Range(uint64_t(1), uint64_t(60'000'000)))
        ->needs(timeline_opt);
    dpdk::add_io_options(*sub, o->io);
    return [o, &global]() -> int {
        json r;
        try {
            const PerfOp op = parse_op(o->op);
            std::unique_ptr<Timeline> timeline;
            if (!o->timeline.empty()) {
                try {
                    timeline = std::make_unique<Timeline>(o->timeline, o->timeline_interval_us);
                } catch (const std::runtime_error& e) { throw CLI::ValidationError("--timeline", e.what()); }
            }
            std::string impair = o->io.impair_rx;
            if (o->loss > 0) {
                impair +=
                    (impair.empty() ? "" : " ") + std::string("loss_ppm=") + std::to_string(uint32_t(o->loss * 1e4));
            }
            if (o->role == "loopback") {
                if (o->window_cap != 256 || o->bad_rkey_every || o->recv_depth || o->recv_hold_us || o->rnr_detail ||
                    o->expect_rnr_failures)
                    throw CLI::ValidationError(
                        "--window-cap/--bad-rkey-every/--recv-*/--rnr-detail/--expect-rnr-failures",
                        "apply to server and client runs, not loopback");
                LoopbackParams p;
                p.op = op;
                p.msg_size = o->size;
                p.total_bytes = o->iters ? o->iters * o->size : (uint64_t(1) << 30);
                p.duration_s = o->duration;
                p.depth = o->depth;
                p.paths = o->paths;
                p.streams = o->streams;
                p.planes = o->planes;
                p.max_payload = o->mtu_payload ? o->mtu_payload : 4096;
                p.rto_min_us = o->rto_min_us == kRtoMinAuto ? kRtoMinShared : o->rto_min_us;
                p.pto_min_us = o->pto_min_us;
                p.ce_backlog = o->io.ce_backlog;
                p.impair = impair;
                p.pcap = o->io.pcap;
                p.file_prefix = o->io.eal.file_prefix;
                p.label = "perf";
                p.progress = !o->quiet;
                r = run_loopback(p, timeline.get());
            } else {
                NetParams np;
                np.op = op;
                np.msg = o->size;
                np.depth = o->depth;
                np.iters = o->iters;
                np.duration_s = o->duration;
                np.timeout_s = o->timeout;
                np.paths = o->paths;
                np.streams = o->streams;
                np.max_payload = o->mtu_payload ? o->mtu_payload : 1024;
                np.peer_timeout_us = o->peer_timeout_us;
                np.rto_min_us = o->rto_min_us;
                np.pto_min_us = o->pto_min_us;
                np.window_cap = o->window_cap;
                np.bad_rkey_every = o->bad_rkey_every;
                np.recv_depth = o->recv_depth;
                np.recv_hold_us = o->recv_hold_us;
                np.rnr_detail = o->rnr_detail;
                np.expect_rnr_failures = o->expect_rnr_failures;
                if (np.bad_rkey_every && (op == PerfOp::Send || op == PerfOp::Read))
                    throw CLI::ValidationError("--bad-rkey-every",
                                               "needs --op write or mixed (a key travels with Writes)");
                if (np.recv_depth && np.streams * np.recv_depth > 8192)
                    throw CLI::ValidationError("--recv-depth", "streams x depth must be at most 8192");
                dpdk::IoOptions io = o->io;
                io.impair_rx = impair;
                r = run_net(o->role == "server", np, io, !o->quiet, timeline.get());
            }
        } catch (const CLI::ValidationError& e) {
            std::cerr << "mroce perf: " << e.what() << "\n";
            return kExitMisuse;
        } catch (const std::exception& e) { r = {{"error", e.what()}, {"verified", false}}; }
        r["command"] = "perf";
        print_human(r);
        if (global.json) std::cout << r.dump() << "\n";
        return r.value("verified", false) ? kExitOk : kExitFailed;
    };
}

}  // namespace mroce::cli
