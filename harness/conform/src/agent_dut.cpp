// The client side of the control protocol (AGENT_PROTOCOL.md) and the AgentDut's wire.
#include "conform/agent_dut.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "conform/agent_server.hpp"
#include "dpdk/io.hpp"

namespace mroce::conform {

namespace {

using Clock = std::chrono::steady_clock;

std::string shorten(std::string_view s, size_t max = 160) {
    if (s.size() <= max) return std::string(s);
    return std::string(s.substr(0, max)) + "...";
}

std::string verb_of(std::string_view line) {
    const size_t sp = line.find_first_of(" \t");
    return std::string(line.substr(0, sp));
}

// ---- the socket link ----

class SocketLink final : public AgentLink {
public:
    SocketLink(int fd, uint32_t timeout_ms) : fd_(fd), timeout_ms_(int(timeout_ms)) {}
    ~SocketLink() override { ::close(fd_); }

    void send_line(std::string_view line) override {
        std::string out(line);
        out += '\n';
        size_t off = 0;
        while (off < out.size()) {
            const ssize_t n = ::send(fd_, out.data() + off, out.size() - off, MSG_NOSIGNAL);
            if (n > 0) {
                off += size_t(n);
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                pollfd p{fd_, POLLOUT, 0};
                if (::poll(&p, 1, timeout_ms_) <= 0) throw std::runtime_error("cannot send: the agent reads nothing");
                continue;
            }
            throw std::runtime_error(std::string("cannot send: ") + std::strerror(errno));
        }
    }

    std::optional<std::string> read_line(uint64_t wait_us) override {
        const auto deadline = Clock::now() + std::chrono::microseconds(wait_us);
        for (;;) {
            const size_t lf = buf_.find('\n', scanned_);
            if (lf != std::string::npos) {
                std::string line = buf_.substr(0, lf);
                buf_.erase(0, lf + 1);
                scanned_ = 0;
                return line;
            }
            scanned_ = buf_.size();
            if (buf_.size() > agent::kMaxLine + 1)
                throw std::runtime_error("response line longer than the protocol allows");
            const auto now = Clock::now();
            const uint64_t left =
                now < deadline ? uint64_t(std::chrono::duration_cast<std::chrono::microseconds>(deadline - now).count())
                               : 0;
            pollfd p{fd_, POLLIN, 0};
            const timespec ts{time_t(left / 1000000), long(left % 1000000) * 1000};
            const int r = ::ppoll(&p, 1, &ts, nullptr);
            if (r < 0) {
                if (errno == EINTR) continue;
                throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
            }
            if (r == 0) return std::nullopt;
            char tmp[65536];
            const ssize_t n = ::recv(fd_, tmp, sizeof tmp, MSG_DONTWAIT);
            if (n == 0) throw std::runtime_error("connection closed by the agent");
            if (n < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
                throw std::runtime_error(std::string("cannot read: ") + std::strerror(errno));
            }
            buf_.append(tmp, size_t(n));
        }
    }

private:
    int fd_;
    int timeout_ms_;
    std::string buf_;
    size_t scanned_ = 0;  // bytes of buf_ known to hold no LF
};

// Connects `fd` to `addr` within timeout_ms; returns 0 or an errno.
int connect_within(int fd, const sockaddr* addr, socklen_t len, uint32_t timeout_ms) {
    const int flags = fcntl(fd, F_GETFL, 0);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    if (::connect(fd, addr, len) == 0) return 0;
    if (errno != EINPROGRESS) return errno;
    pollfd p{fd, POLLOUT, 0};
    const int r = ::poll(&p, 1, int(timeout_ms));
    if (r == 0) return ETIMEDOUT;
    if (r < 0) return errno;
    int err = 0;
    socklen_t el = sizeof err;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
    return err;
}

// ---- response checking ----

// The fields of one `ok` (or record) line, read for request `verb`; a missing or malformed field
// is a lie.
class Resp {
public:
    Resp(const std::string& prefix, const std::string& verb, const std::string& raw)
        : prefix_(prefix), verb_(verb), raw_(raw) {
        try {
            line_ = agent::parse_line(raw);
        } catch (const agent::SyntaxError& e) { lie(e.what()); }
    }
    const agent::Line& line() const { return line_; }
    [[noreturn]] void lie(const std::string& why) const {
        throw DutError(prefix_ + verb_ + ": bad response '" + shorten(raw_) + "': " + why);
    }
    const std::string* opt(std::string_view key) const { return line_.find(key); }
    const std::string& text(std::string_view key) const {
        const std::string* v = line_.find(key);
        if (!v) lie("missing " + std::string(key));
        return *v;
    }
    uint64_t num(std::string_view key, uint64_t max = UINT64_MAX) const { return number(key, text(key), max); }
    std::optional<uint64_t> opt_num(std::string_view key, uint64_t max = UINT64_MAX) const {
        const std::string* v = line_.find(key);
        if (!v) return std::nullopt;
        return number(key, *v, max);
    }
    // `num` constrained to lo..hi.
    uint64_t in(std::string_view key, uint64_t lo, uint64_t hi) const {
        const uint64_t v = num(key, hi);
        if (v < lo) lie(std::string(key) + " below " + std::to_string(lo));
        return v;
    }

private:
    uint64_t number(std::string_view key, const std::string& v, uint64_t max) const {
        auto n = agent::parse_number(v, max);
        if (!n) lie(std::string(key) + "='" + shorten(v, 40) + "' is not a number in 0.." + std::to_string(max));
        return *n;
    }
    std::string prefix_;
    std::string verb_;
    std::string raw_;
    agent::Line line_;
};

std::string op_fields(const PostOp& op) {
    using agent::field;
    std::string s = "post " + field("op", agent::op_text(op.op)) + " " + field("conn", op.conn) + " " +
                    field("stream", op.stream) + " " + field("wr_id", op.wr_id) + " " + field("region", op.region) +
                    " " + field("offset", op.offset) + " " + field("length", op.length);
    if (op.op == model::WorkOp::Write || op.op == model::WorkOp::WriteImm || op.op == model::WorkOp::Read)
        s += " " + agent::hex_field("remote_va", op.remote_va) + " " + agent::hex_field("rkey", op.rkey);
    if (op.op == model::WorkOp::WriteImm) s += " " + agent::hex_field("imm", op.imm.value_or(0));
    return s;
}

}  // namespace

std::unique_ptr<AgentLink> connect_agent(const std::string& address, uint32_t timeout_ms) {
    const std::string prefix = "agent " + address + ": cannot connect: ";
    int fd = -1;
    int err = 0;
    if (address.starts_with("unix:")) {
        const std::string path = address.substr(5);
        sockaddr_un sa{};
        sa.sun_family = AF_UNIX;
        if (path.empty() || path.size() >= sizeof sa.sun_path) throw DutError(prefix + "bad socket path");
        std::memcpy(sa.sun_path, path.data(), path.size());
        if (path[0] == '@') sa.sun_path[0] = '\0';  // abstract
        fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) throw DutError(prefix + std::strerror(errno));
        err = connect_within(fd, reinterpret_cast<const sockaddr*>(&sa),
                             socklen_t(offsetof(sockaddr_un, sun_path) + path.size() + (path[0] == '@' ? 0 : 1)),
                             timeout_ms);
    } else {
        const size_t colon = address.rfind(':');
        if (colon == std::string::npos || colon == 0 || colon + 1 == address.size())
            throw DutError(prefix + "not unix:/path or HOST:PORT");
        std::string host = address.substr(0, colon);
        const std::string port = address.substr(colon + 1);
        if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
        addrinfo hints{};
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        addrinfo* res = nullptr;
        const int gai = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
        if (gai != 0) throw DutError(prefix + gai_strerror(gai));
        err = ENOTCONN;
        for (addrinfo* ai = res; ai; ai = ai->ai_next) {
            fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
            if (fd < 0) {
                err = errno;
                continue;
            }
            err = connect_within(fd, ai->ai_addr, ai->ai_addrlen, timeout_ms);
            if (err == 0) break;
            ::close(fd);
            fd = -1;
        }
        freeaddrinfo(res);
        if (fd >= 0) {
            const int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // one small line each way
        }
    }
    if (err != 0) {
        if (fd >= 0) ::close(fd);
        throw DutError(prefix + std::strerror(err));
    }
    return std::make_unique<SocketLink>(fd, timeout_ms);
}

// ---------------------------------------------------------------------------------------------
// AgentClient

AgentClient::AgentClient(std::unique_ptr<AgentLink> link, std::string label, uint32_t timeout_ms)
    : link_(std::move(link)), label_(std::move(label)), timeout_(timeout_ms) {}

void AgentClient::fail(const std::string& what) {
    broken_ = what;
    link_.reset();  // a late response would be taken for the next request's
    throw DutError("agent " + label_ + ": " + what);
}

std::string AgentClient::read_response_line(const std::string& request, Clock::time_point deadline) {
    const std::string verb = verb_of(request);
    for (;;) {
        std::optional<std::string> line;
        try {
            line = link_->read_line(idle ? 50 : 10000);
        } catch (const std::exception& e) { fail(verb + ": " + e.what()); }
        if (line) return *line;
        if (Clock::now() >= deadline)
            fail("stalled: no response to '" + shorten(request, 80) + "' within " + std::to_string(timeout_.count()) +
                 " ms");
        if (idle) idle();
    }
}

std::vector<std::string> AgentClient::request(const std::string& line, unsigned max_records) {
    const std::string verb = verb_of(line);
    if (!link_) throw DutError("agent " + label_ + ": " + verb + ": not usable after: " + broken_);
    try {
        link_->send_line(line);
    } catch (const std::exception& e) { fail(verb + ": " + e.what()); }
    const auto deadline = Clock::now() + timeout_;
    std::vector<std::string> out{read_response_line(line, deadline)};
    const std::string& first = out[0];
    const std::string prefix = "agent " + label_ + ": ";
    const bool is_err = first == "err" || first.starts_with("err ") || first.starts_with("err\t");
    uint64_t records = 0;
    try {
        if (is_err) {
            const std::string rest = first.size() > 4 ? first.substr(4) : "";
            if (rest.substr(0, rest.find_first_of(" \t")).empty()) Resp(prefix, verb, first).lie("err without a code");
        } else {
            Resp ok(prefix, verb, first);
            if (ok.line().verb != "ok") ok.lie("neither ok nor err");
            if (!ok.line().words.empty()) ok.lie("unexpected word '" + ok.line().words[0] + "'");
            if (max_records > 0) records = ok.num("n", max_records);
        }
    } catch (const DutError& e) {
        // The framing itself is in doubt: later lines could be taken for later responses.
        broken_ = std::string(e.what()).substr(prefix.size());
        link_.reset();
        throw;
    }
    if (is_err) throw DutError(prefix + verb + ": " + shorten(first, 400));
    for (uint64_t i = 0; i < records; ++i) out.push_back(read_response_line(line, deadline));
    return out;
}

unsigned AgentClient::hello() {
    const std::string prefix = "agent " + label_ + ": ";
    const auto lines = request("hello " + agent::field("version", agent::kVersion));
    Resp r(prefix, "hello", lines[0]);
    const uint64_t v = r.num("version", UINT32_MAX);
    if (v != agent::kVersion) r.lie("version " + std::to_string(v) + " is not the one asked for");
    return unsigned(v);
}

DutInfo AgentClient::info() {
    const std::string prefix = "agent " + label_ + ": ";
    const auto lines = request("info");
    Resp r(prefix, "info", lines[0]);
    DutInfo d;
    d.name = r.text("name");
    if (d.name.empty()) r.lie("empty name");
    const auto mac = agent::parse_mac(r.text("mac"));
    if (!mac) r.lie("mac is not a MAC address");
    d.address.mac = *mac;
    if (!agent::parse_ip(r.text("ip"), d.address.ipv6, d.address.ip)) r.lie("ip is not an IP address");
    d.udp_port = uint16_t(r.in("udp_port", 1, UINT16_MAX));
    d.max_paths = uint16_t(r.in("max_paths", 1, 256));
    d.max_streams = uint16_t(r.in("max_streams", 1, 65535));
    d.max_payload = uint16_t(r.in("max_payload", 256, 8192));
    if (d.max_payload % 64) r.lie("max_payload is not a multiple of 64");
    d.window_cap = uint16_t(r.in("window_cap", 1, 256));
    d.ops.clear();
    const std::string& ops = r.text("ops");
    for (size_t start = 0; start <= ops.size();) {
        const size_t comma = std::min(ops.find(',', start), ops.size());
        const std::string op = ops.substr(start, comma - start);
        if (op != "send" && op != "write" && op != "write_imm" && op != "read") r.lie("unknown op '" + op + "'");
        if (std::find(d.ops.begin(), d.ops.end(), op) != d.ops.end()) r.lie("op '" + op + "' listed twice");
        d.ops.push_back(op);
        start = comma + 1;
    }
    d.rto_min_us = uint32_t(r.num("rto_min_us", UINT32_MAX));
    d.rto_init_us = uint32_t(r.num("rto_init_us", UINT32_MAX));
    d.rto_max_us = uint32_t(r.num("rto_max_us", UINT32_MAX));
    if (d.rto_init_us < d.rto_min_us || d.rto_max_us < d.rto_min_us)
        r.lie("rto_min_us above rto_init_us or rto_max_us");
    d.rnr_default_us = uint32_t(r.num("rnr_default_us", UINT32_MAX));
    d.peer_timeout_us = uint32_t(r.num("peer_timeout_us", UINT32_MAX));
    // Optional (added later in version 1): an agent that does not declare them has the spec's.
    if (auto v = r.opt_num("pto_min_us", UINT32_MAX)) d.pto_min_us = uint32_t(*v);
    if (auto v = r.opt_num("keepalive_us", UINT32_MAX)) d.keepalive_us = uint32_t(*v);
    if (auto v = r.opt_num("connect_retry_us", UINT32_MAX)) d.connect_retry_us = uint32_t(*v);
    if (auto v = r.opt_num("home_probe_us", UINT32_MAX)) d.home_probe_us = uint32_t(*v);
    if (auto v = r.opt_num("home_probe_max_us", UINT32_MAX)) d.home_probe_max_us = uint32_t(*v);
    if (d.home_probe_us == 0 || d.home_probe_max_us == 0)  // [R-PATH-10]: a probe interval of 0 is none
        r.lie("home_probe_us or home_probe_max_us is 0");
    if (const std::string* v = r.opt("ipv4_fragments")) {
        const auto b = agent::parse_bool(*v);
        if (!b) r.lie("ipv4_fragments is not 0 or 1");
        d.ipv4_fragments = *b;
    }
    d.virtual_time = false;
    return d;
}

void AgentClient::listen(bool on) { request(on ? "listen on" : "listen off"); }

uint32_t AgentClient::connect(const model::Address& peer, const ConnOffer& offer) {
    using agent::field;
    const auto lines =
        request("connect mac=" + agent::mac_text(peer.mac) + " ip=" + agent::ip_text(peer.ipv6, peer.ip) + " " +
                field("paths", offer.paths) + " " + field("streams", offer.streams) + " " +
                field("max_payload", offer.max_payload) + " " + field("window_cap", offer.window_cap));
    return uint32_t(Resp("agent " + label_ + ": ", "connect", lines[0]).num("conn", UINT32_MAX));
}

Region AgentClient::reg_mr(uint64_t length, uint32_t access) {
    const std::string prefix = "agent " + label_ + ": ";
    const auto lines = request("reg_mr " + agent::field("length", length) + " " + agent::field("access", access));
    Resp r(prefix, "reg_mr", lines[0]);
    Region g;
    g.handle = uint32_t(r.num("handle", UINT32_MAX));
    g.va = r.num("va");
    g.rkey = uint32_t(r.num("rkey", UINT32_MAX));
    g.length = r.num("length");
    g.access = uint32_t(r.num("access", UINT32_MAX));
    if (g.length != length)
        r.lie("length " + std::to_string(g.length) + " is not the " + std::to_string(length) + " asked for");
    if (g.access != access)
        r.lie("access " + std::to_string(g.access) + " is not the " + std::to_string(access) + " asked for");
    if (g.va > UINT64_MAX - length) r.lie("va + length beyond 2^64");
    if (live_regions_.count(g.handle)) r.lie("handle " + std::to_string(g.handle) + " names a live region already");
    live_regions_.insert(g.handle);
    return g;
}

void AgentClient::dereg_mr(uint32_t handle) {
    request("dereg_mr " + agent::field("handle", handle));
    live_regions_.erase(handle);
}

void AgentClient::write_mem(uint32_t region, uint64_t offset, std::span<const uint8_t> bytes) {
    size_t done = 0;
    do {
        const size_t n = std::min(bytes.size() - done, agent::kMaxData);
        request("write_mem " + agent::field("handle", region) + " " + agent::field("offset", offset + done) +
                " data=" + agent::to_hex(bytes.subspan(done, n)));
        done += n;
    } while (done < bytes.size());
}

std::vector<uint8_t> AgentClient::read_mem(uint32_t region, uint64_t offset, uint64_t length) {
    const std::string prefix = "agent " + label_ + ": ";
    std::vector<uint8_t> out;
    out.reserve(length);
    uint64_t done = 0;
    do {
        const uint64_t n = std::min<uint64_t>(length - done, agent::kMaxData);
        const auto lines = request("read_mem " + agent::field("handle", region) + " " +
                                   agent::field("offset", offset + done) + " " + agent::field("length", n));
        Resp r(prefix, "read_mem", lines[0]);
        const auto bytes = agent::from_hex(r.text("data"));
        if (!bytes) r.lie("data is not hex");
        if (bytes->size() != n)
            r.lie(std::to_string(bytes->size()) + " bytes, not the " + std::to_string(n) + " asked for");
        out.insert(out.end(), bytes->begin(), bytes->end());
        done += n;
    } while (done < length);
    return out;
}

std::string AgentClient::post(const PostOp& op) {
    const auto lines = request(op_fields(op));
    Resp r("agent " + label_ + ": ", "post", lines[0]);
    const std::string* refused = r.opt("refused");
    if (!refused) return "";
    if (refused->empty()) r.lie("empty refusal");
    return *refused;
}

std::vector<DutCompletion> AgentClient::poll_cq() {
    const std::string prefix = "agent " + label_ + ": ";
    std::vector<DutCompletion> out;
    for (size_t rounds = 0; rounds < 1024; ++rounds) {
        const auto lines = request("poll_cq " + agent::field("max", agent::kDefaultRecords), agent::kDefaultRecords);
        for (size_t i = 1; i < lines.size(); ++i) {
            Resp r(prefix, "poll_cq", lines[i]);
            if (r.line().verb != "wc") r.lie("record " + std::to_string(i) + " is not a 'wc' line");
            DutCompletion c;
            c.wr_id = r.num("wr_id");
            c.conn = uint32_t(r.num("conn", UINT32_MAX));
            c.stream = uint16_t(r.num("stream", UINT16_MAX));
            const auto op = agent::parse_op(r.text("op"));
            if (!op) r.lie("unknown op '" + r.text("op") + "'");
            c.op = *op;
            const auto st = agent::parse_status(r.text("status"));
            if (!st) r.lie("unknown status '" + r.text("status") + "'");
            c.status = *st;
            c.byte_len = uint32_t(r.num("byte_len", UINT32_MAX));
            if (auto imm = r.opt_num("imm", UINT32_MAX)) {
                if (c.op != model::WorkOp::Recv) r.lie("imm on a completion that is not a receive");
                c.imm = uint32_t(*imm);
            }
            out.push_back(c);
        }
        if (lines.size() - 1 < agent::kDefaultRecords) break;
    }
    return out;
}

std::vector<DutEvent> AgentClient::poll_events() {
    const std::string prefix = "agent " + label_ + ": ";
    std::vector<DutEvent> out;
    for (size_t rounds = 0; rounds < 1024; ++rounds) {
        const auto lines =
            request("poll_events " + agent::field("max", agent::kDefaultRecords), agent::kDefaultRecords);
        for (size_t i = 1; i < lines.size(); ++i) {
            Resp r(prefix, "poll_events", lines[i]);
            if (r.line().verb != "ev") r.lie("record " + std::to_string(i) + " is not an 'ev' line");
            DutEvent e;
            const std::string& kind = r.text("kind");
            if (kind != "up" && kind != "down") r.lie("kind '" + kind + "' is not up or down");
            e.up = kind == "up";
            e.conn = uint32_t(r.num("conn", UINT32_MAX));
            const auto init = agent::parse_bool(r.text("initiator"));
            if (!init) r.lie("initiator is not 0 or 1");
            e.initiator = *init;
            const auto st = agent::parse_status(r.text("status"));
            if (!st) r.lie("unknown status '" + r.text("status") + "'");
            if (e.up && *st != model::Status::Success) r.lie("an up event with status " + r.text("status"));
            e.status = *st;
            out.push_back(e);
        }
        if (lines.size() - 1 < agent::kDefaultRecords) break;
    }
    return out;
}

void AgentClient::close(uint32_t conn, bool abort) {
    // A refusal (unknown or closed connection) is the DUT's answer; Dut::close reports none.
    request("close " + agent::field("conn", conn) + (abort ? " abort=1" : ""));
}

std::map<std::string, uint64_t> AgentClient::counters() {
    const std::string prefix = "agent " + label_ + ": ";
    const auto lines = request("counters");
    Resp r(prefix, "counters", lines[0]);
    std::map<std::string, uint64_t> out;
    for (const auto& [k, v] : r.line().fields) out[k] = r.num(k);
    for (auto name : agent::required_counters())
        if (!out.count(std::string(name))) r.lie("missing counter " + std::string(name));
    uint64_t kinds = 0;
    for (size_t i = 0; i < agent::kDecodeErrorKinds; ++i) {
        const std::string name = "decode_errors." + std::string(agent::decode_error_text(i));
        if (!out.count(name)) r.lie("missing counter " + name);
        kinds += out[name];
    }
    if (kinds != out["decode_errors"]) r.lie("decode_errors is not the sum of decode_errors.<KIND>");
    return out;
}

void AgentClient::reset() {
    request("reset");
    live_regions_.clear();
}

void AgentClient::quit() {
    request("quit");
    link_.reset();
    broken_ = "quit";
}

// ---------------------------------------------------------------------------------------------
// AgentDut

struct AgentDut::Wire {
    std::unique_ptr<dpdk::IoContext> ctx;
};

AgentDut::AgentDut(const AgentDutOptions& options)
    : options_(options),
      origin_(Clock::now()),
      client_(connect_agent(options.agent, options.timeout_ms), options.agent, options.timeout_ms) {
    client_.hello();
    info_ = client_.info();
    dpdk::IoOptions io;
    io.ports = {options.wire};
    io.eal.lcores = options.lcores;
    io.eal.file_prefix =
        options.file_prefix.empty() ? "mroce-conform-" + std::to_string(getpid()) : options.file_prefix;
    io.mbufs = 4096;
    io.udp_port = info_.udp_port;
    wire_ = std::make_unique<Wire>();
    try {
        wire_->ctx = std::make_unique<dpdk::IoContext>(io);
    } catch (const std::exception& e) { throw DutError("wire " + options.wire + ": " + e.what()); }
    const auto until = Clock::now() + std::chrono::milliseconds(options.link_wait_ms);
    while (!wire_->ctx->port(0).link_up()) {
        if (Clock::now() >= until)
            throw DutError("wire " + options.wire + ": link still down after " + std::to_string(options.link_wait_ms) +
                           " ms");
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    client_.idle = [this] { poll_wire(); };
}

AgentDut::~AgentDut() = default;

Micros AgentDut::now() const {
    return Micros(std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - origin_).count());
}

void AgentDut::send(std::span<const uint8_t> frame) {
    rte_mbuf* m = dpdk::alloc_mbuf(wire_->ctx->pool());
    if (!m) throw DutError("wire " + options_.wire + ": no mbuf to send a frame");
    uint8_t* d = frame.size() <= UINT16_MAX ? dpdk::append(m, uint16_t(frame.size())) : nullptr;
    if (!d) {
        rte_pktmbuf_free(m);
        throw DutError("wire " + options_.wire + ": a " + std::to_string(frame.size()) +
                       "-byte frame does not fit an mbuf");
    }
    std::memcpy(d, frame.data(), frame.size());
    if (wire_->ctx->port(0).tx_all(&m, 1) != 1)
        throw DutError("wire " + options_.wire + ": the port did not take the frame (tx queue full)");
}

bool AgentDut::poll_wire() {
    rte_mbuf* pkts[32];
    bool any = false;
    for (uint16_t n; (n = wire_->ctx->port(0).rx(pkts, 32)) > 0;) {
        const Micros at = now();
        for (uint16_t i = 0; i < n; ++i) {
            WireFrame f;
            f.at = at;
            f.bytes.resize(pkts[i]->pkt_len);
            dpdk::copy_out(pkts[i], f.bytes.data());
            rte_pktmbuf_free(pkts[i]);
            if (options_.dut_frames_only) {
                const auto& b = f.bytes;
                if (b.size() < 14 + 20 + 8) continue;
                if (!std::equal(info_.address.mac.begin(), info_.address.mac.end(), b.begin() + 6)) continue;
                const uint16_t type = uint16_t(b[12] << 8 | b[13]);
                const bool udp = (type == 0x0800 && b[14 + 9] == 17) ||
                                 (type == 0x86DD && b.size() >= 14 + 40 + 8 && b[14 + 6] == 17);
                if (!udp) continue;
            }
            pending_.push_back(std::move(f));
            any = true;
        }
        if (n < 32) break;
    }
    return any;
}

std::vector<WireFrame> AgentDut::receive() {
    poll_wire();
    std::vector<WireFrame> out;
    out.swap(pending_);
    return out;
}

void AgentDut::run_until(Micros t) {
    // Frames read while a control request waited (the client's idle hook) count as transmitted
    // now: the runner must see them before it waits any longer.
    if (!pending_.empty()) return;
    do {
        if (poll_wire()) return;
    } while (now() < t);
}

void AgentDut::reset() {
    client_.reset();
    poll_wire();
    pending_.clear();
}

}  // namespace mroce::conform
