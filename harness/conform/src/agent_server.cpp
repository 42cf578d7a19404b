// The agent side of the control protocol (AGENT_PROTOCOL.md) and its line syntax.
#include "conform/agent_server.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "codec/ref_codec.hpp"
#include "conform/engine_counters.hpp"

namespace mroce::conform {

// ---------------------------------------------------------------------------------------------
// Line syntax

namespace agent {
namespace {

bool blank(char c) { return c == ' ' || c == '\t'; }
bool key_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool needs_quotes(std::string_view v) {
    return std::any_of(v.begin(), v.end(), [](char c) { return blank(c) || c == '"'; });
}

}  // namespace

const std::string* Line::find(std::string_view key) const {
    for (const auto& [k, v] : fields)
        if (k == key) return &v;
    return nullptr;
}

Line parse_line(std::string_view text) {
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (text.size() > kMaxLine) throw SyntaxError("line longer than " + std::to_string(kMaxLine) + " bytes");
    for (size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if ((c < 0x20 || c > 0x7e) && c != '\t') {
            char buf[64];
            std::snprintf(buf, sizeof buf, "byte 0x%02x at column %zu is not printable ASCII", c, i + 1);
            throw SyntaxError(buf);
        }
    }
    Line line;
    bool first = true;
    size_t i = 0;
    while (true) {
        while (i < text.size() && blank(text[i])) ++i;
        if (i == text.size()) break;
        const size_t start = i;
        while (i < text.size() && !blank(text[i]) && text[i] != '=' && text[i] != '"') ++i;
        if (i < text.size() && text[i] == '"')
            throw SyntaxError("quote outside a value at column " + std::to_string(i + 1));
        if (i == text.size() || blank(text[i])) {  // a word
            std::string word(text.substr(start, i - start));
            if (first)
                line.verb = std::move(word);
            else
                line.words.push_back(std::move(word));
            first = false;
            continue;
        }
        // A field: key=value.
        const std::string_view key = text.substr(start, i - start);
        if (first) throw SyntaxError("line starts with a field, not a verb");
        if (key.empty() || !std::all_of(key.begin(), key.end(), key_char))
            throw SyntaxError("bad key '" + std::string(key) + "'");
        if (line.find(key)) throw SyntaxError("field '" + std::string(key) + "' given twice");
        ++i;  // '='
        std::string value;
        if (i < text.size() && text[i] == '"') {
            ++i;
            bool closed = false;
            while (i < text.size()) {
                const char c = text[i++];
                if (c == '"') {
                    closed = true;
                    break;
                }
                if (c == '\\') {
                    if (i == text.size() || (text[i] != '"' && text[i] != '\\'))
                        throw SyntaxError("bad escape in the value of '" + std::string(key) + "'");
                    value.push_back(text[i++]);
                } else {
                    value.push_back(c);
                }
            }
            if (!closed) throw SyntaxError("unterminated quote in the value of '" + std::string(key) + "'");
            if (i < text.size() && !blank(text[i]))
                throw SyntaxError("no blank after the quoted value of '" + std::string(key) + "'");
        } else {
            const size_t vstart = i;
            while (i < text.size() && !blank(text[i])) {
                if (text[i] == '"') throw SyntaxError("quote inside the bare value of '" + std::string(key) + "'");
                ++i;
            }
            value = text.substr(vstart, i - vstart);
        }
        line.fields.emplace_back(std::string(key), std::move(value));
    }
    if (first) throw SyntaxError("empty line");
    return line;
}

std::string field(std::string_view key, std::string_view value) {
    std::string out(key);
    out += '=';
    if (!needs_quotes(value)) {
        out += value;
        return out;
    }
    out += '"';
    for (char c : value) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    out += '"';
    return out;
}

std::string field(std::string_view key, uint64_t value) { return std::string(key) + "=" + std::to_string(value); }

std::string hex_field(std::string_view key, uint64_t value) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(value));
    return std::string(key) + "=" + buf;
}

std::optional<uint64_t> parse_number(std::string_view s, uint64_t max) {
    uint64_t v = 0;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        for (char c : s.substr(2)) {
            const int d = hex_digit(c);
            if (d < 0 || v > (UINT64_MAX >> 4)) return std::nullopt;
            v = (v << 4) | uint64_t(d);
        }
    } else {
        if (s.empty()) return std::nullopt;
        for (char c : s) {
            if (c < '0' || c > '9') return std::nullopt;
            const uint64_t d = uint64_t(c - '0');
            if (v > (UINT64_MAX - d) / 10) return std::nullopt;
            v = v * 10 + d;
        }
    }
    if (v > max) return std::nullopt;
    return v;
}

std::optional<bool> parse_bool(std::string_view s) {
    if (s == "0") return false;
    if (s == "1") return true;
    return std::nullopt;
}

std::string to_hex(std::span<const uint8_t> bytes) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out(bytes.size() * 2, '0');
    for (size_t i = 0; i < bytes.size(); ++i) {
        out[2 * i] = kDigits[bytes[i] >> 4];
        out[2 * i + 1] = kDigits[bytes[i] & 15];
    }
    return out;
}

std::optional<std::vector<uint8_t>> from_hex(std::string_view s) {
    if (s.size() % 2) return std::nullopt;
    std::vector<uint8_t> out(s.size() / 2);
    for (size_t i = 0; i < out.size(); ++i) {
        const int hi = hex_digit(s[2 * i]), lo = hex_digit(s[2 * i + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out[i] = uint8_t(hi << 4 | lo);
    }
    return out;
}

std::string mac_text(const std::array<uint8_t, 6>& mac) {
    char buf[18];
    std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
    return buf;
}

std::optional<std::array<uint8_t, 6>> parse_mac(std::string_view s) {
    if (s.size() != 17) return std::nullopt;
    std::array<uint8_t, 6> mac{};
    for (size_t k = 0; k < 6; ++k) {
        const int hi = hex_digit(s[3 * k]), lo = hex_digit(s[3 * k + 1]);
        if (hi < 0 || lo < 0 || (k < 5 && s[3 * k + 2] != ':')) return std::nullopt;
        mac[k] = uint8_t(hi << 4 | lo);
    }
    return mac;
}

std::string ip_text(bool ipv6, const std::array<uint8_t, 16>& ip) {
    char buf[INET6_ADDRSTRLEN];
    if (!inet_ntop(ipv6 ? AF_INET6 : AF_INET, ip.data(), buf, sizeof buf)) return "?";
    return buf;
}

bool parse_ip(std::string_view s, bool& ipv6, std::array<uint8_t, 16>& ip) {
    const std::string text(s);
    std::array<uint8_t, 16> b{};
    if (inet_pton(AF_INET, text.c_str(), b.data()) == 1) {
        ipv6 = false;
        ip = b;
        return true;
    }
    if (inet_pton(AF_INET6, text.c_str(), b.data()) == 1) {
        ipv6 = true;
        ip = b;
        return true;
    }
    return false;
}

namespace {
constexpr std::pair<model::WorkOp, std::string_view> kOps[] = {
    {model::WorkOp::Send, "send"}, {model::WorkOp::Write, "write"}, {model::WorkOp::WriteImm, "write_imm"},
    {model::WorkOp::Read, "read"}, {model::WorkOp::Recv, "recv"},
};
constexpr model::Status kStatuses[] = {
    model::Status::Success,          model::Status::LocalLength,  model::Status::RemoteAccess,
    model::Status::RemoteInvalid,    model::Status::RemoteLength, model::Status::RnrRetryExceeded,
    model::Status::ConnectionFailed, model::Status::Flushed,      model::Status::Canceled,
    model::Status::LocalProtection,
};
}  // namespace

std::string_view op_text(model::WorkOp op) {
    for (const auto& [o, name] : kOps)
        if (o == op) return name;
    return "?";
}

std::optional<model::WorkOp> parse_op(std::string_view s) {
    for (const auto& [o, name] : kOps)
        if (name == s) return o;
    return std::nullopt;
}

std::string_view status_text(model::Status s) { return model::status_name(s); }

std::optional<model::Status> parse_status(std::string_view s) {
    for (auto st : kStatuses)
        if (model::status_name(st) == s) return st;
    return std::nullopt;
}

std::string_view decode_error_text(size_t kind) { return ref::error_name(static_cast<ref::ErrorKind>(kind)); }

const std::vector<std::string_view>& required_counters() {
    static const std::vector<std::string_view> names = {
        "unknown_dcid",  "bad_path",  "out_of_window", "duplicates",      "naks_sent",
        "naks_received", "acks_sent", "data_sent",     "retransmissions", "voids_sent",
        "probes_sent",   "repaths",   "placed_bytes",  "ce_marks_seen",   "cwnd_decreases",
        "decode_errors",  // the sum of decode_errors.<KIND>
    };
    return names;
}

}  // namespace agent

// ---------------------------------------------------------------------------------------------
// The server

namespace {

// An `err CODE MESSAGE` response, thrown by the request handlers.
struct Fail {
    std::string code, message;
};

// The fields of one request, checked against what the request allows.
class Args {
public:
    Args(const agent::Line& line, std::initializer_list<std::string_view> allowed) : line_(line) {
        for (const auto& [k, v] : line.fields)
            if (std::find(allowed.begin(), allowed.end(), k) == allowed.end())
                throw Fail{"bad_arg", line.verb + ": unknown field '" + k + "'"};
    }
    bool has(std::string_view key) const { return line_.find(key) != nullptr; }
    uint64_t num(std::string_view key, uint64_t max) const {
        const std::string* v = line_.find(key);
        if (!v) throw Fail{"bad_arg", line_.verb + ": missing " + std::string(key)};
        return parse(key, *v, max);
    }
    uint64_t num_or(std::string_view key, uint64_t max, uint64_t dflt) const {
        const std::string* v = line_.find(key);
        return v ? parse(key, *v, max) : dflt;
    }
    bool flag_or(std::string_view key, bool dflt) const {
        const std::string* v = line_.find(key);
        if (!v) return dflt;
        auto b = agent::parse_bool(*v);
        if (!b) throw Fail{"bad_arg", line_.verb + ": " + std::string(key) + " must be 0 or 1"};
        return *b;
    }
    const std::string& text(std::string_view key) const {
        const std::string* v = line_.find(key);
        if (!v) throw Fail{"bad_arg", line_.verb + ": missing " + std::string(key)};
        return *v;
    }
    void forbid(std::string_view key, std::string_view why) const {
        if (has(key)) throw Fail{"bad_arg", line_.verb + ": " + std::string(key) + " not allowed " + std::string(why)};
    }

private:
    uint64_t parse(std::string_view key, const std::string& v, uint64_t max) const {
        auto n = agent::parse_number(v, max);
        if (!n)
            throw Fail{"bad_arg", line_.verb + ": " + std::string(key) + "='" + v + "' is not a number in 0.." +
                                      std::to_string(max)};
        return *n;
    }
    const agent::Line& line_;
};

void no_words(const agent::Line& line) {
    if (!line.words.empty()) throw Fail{"bad_arg", line.verb + ": unexpected word '" + line.words[0] + "'"};
}

model::WorkOp op_of(WcOpcode op) {
    switch (op) {
        case WcOpcode::Send:
            return model::WorkOp::Send;
        case WcOpcode::Write:
            return model::WorkOp::Write;
        case WcOpcode::WriteImm:
            return model::WorkOp::WriteImm;
        case WcOpcode::Read:
            return model::WorkOp::Read;
        case WcOpcode::Recv:
            return model::WorkOp::Recv;
    }
    return model::WorkOp::Send;
}

// The engine's and the model's statuses are the same list ([R-CMP-4]).
model::Status status_of(Status s) { return static_cast<model::Status>(s); }

constexpr uint32_t kAllAccess = access::kLocalWrite | access::kRemoteWrite | access::kRemoteRead;
constexpr uint64_t kPage = 4096;

}  // namespace

void AgentServer::Freer::operator()(uint8_t* p) const { std::free(p); }

AgentServer::AgentServer(const DeviceConfig& config, io::PacketIo& io, const io::Clock& clock,
                         AgentServerOptions options)
    : config_(config), io_(io), clock_(clock), options_(std::move(options)) {
    config_.listening = true;  // the state after every reset (AGENT_PROTOCOL.md, reset)
    reset();
    stats_.resets = 0;
}

AgentServer::~AgentServer() {
    device_.reset();  // before the memory it may point into
    regions_.clear();
    memory_.clear();
}

void AgentServer::reset() {
    device_.reset();
    regions_.clear();
    memory_.clear();
    Result err = Result::Ok;
    device_ = Device::open(config_, io_, clock_, &err);
    if (!device_) throw std::runtime_error(std::string("cannot open the device: ") + result_name(err));
    ++stats_.resets;
}

std::string AgentServer::handle(std::string_view request) {
    ++stats_.requests;
    try {
        const agent::Line line = agent::parse_line(request);
        return dispatch(line);
    } catch (const agent::SyntaxError& e) {
        ++stats_.errors;
        return std::string("err syntax ") + e.what() + "\n";
    } catch (const Fail& f) {
        ++stats_.errors;
        return "err " + f.code + " " + f.message + "\n";
    } catch (const std::exception& e) {
        ++stats_.errors;
        return std::string("err internal ") + e.what() + "\n";
    }
}

std::string AgentServer::dispatch(const agent::Line& line) {
    const std::string& v = line.verb;
    static constexpr std::string_view kVerbs[] = {"hello",       "info",      "listen",   "connect", "reg_mr",
                                                  "dereg_mr",    "write_mem", "read_mem", "post",    "poll_cq",
                                                  "poll_events", "close",     "counters", "reset",   "quit"};
    if (std::find(std::begin(kVerbs), std::end(kVerbs), v) == std::end(kVerbs))
        throw Fail{"unknown", "no request '" + v + "' (protocol version " + std::to_string(agent::kVersion) + ")"};
    if (v == "listen") {
        Args a(line, {});
        if (line.words.size() != 1 || (line.words[0] != "on" && line.words[0] != "off"))
            throw Fail{"bad_arg", "listen: say 'listen on' or 'listen off'"};
        device_->listen(line.words[0] == "on");
        return "ok\n";
    }
    no_words(line);
    if (v == "hello") {
        Args a(line, {"version"});
        const uint64_t version = a.num("version", UINT32_MAX);
        if (version != agent::kVersion)
            throw Fail{"version", "this agent speaks protocol version " + std::to_string(agent::kVersion)};
        return "ok " + agent::field("version", version) + " " + agent::field("agent", options_.agent) + "\n";
    }
    if (v == "info") {
        Args a(line, {});
        return do_info();
    }
    if (v == "connect") return do_connect(line);
    if (v == "reg_mr") return do_reg_mr(line);
    if (v == "dereg_mr") return do_dereg_mr(line);
    if (v == "write_mem") return do_write_mem(line);
    if (v == "read_mem") return do_read_mem(line);
    if (v == "post") return do_post(line);
    if (v == "poll_cq") return do_poll_cq(line);
    if (v == "poll_events") return do_poll_events(line);
    if (v == "close") return do_close(line);
    if (v == "counters") {
        Args a(line, {});
        return do_counters();
    }
    if (v == "reset") {
        Args a(line, {});
        reset();
        return "ok\n";
    }
    if (v == "quit") {
        Args a(line, {});
        quit_ = true;
        return "ok\n";
    }
    throw Fail{"internal", "request '" + v + "' has no handler"};
}

std::string AgentServer::do_info() const {
    using agent::field;
    const auto& c = config_;
    std::string out = "ok " + field("name", options_.name);
    out += " mac=" + agent::mac_text(c.self.mac);
    out += " ip=" + agent::ip_text(c.self.ipv6, c.self.ip);
    out += " " + field("udp_port", c.udp_port);
    out += " " + field("max_paths", c.offer.paths);
    out += " " + field("max_streams", c.offer.streams);
    out += " " + field("max_payload", c.offer.max_payload);
    out += " " + field("window_cap", c.offer.window_cap);
    out += " ops=send,write,write_imm,read";
    out += " " + field("rto_min_us", c.rto_min_us);
    out += " " + field("rto_init_us", c.rto_init_us);
    out += " " + field("rto_max_us", c.rto_max_us);
    out += " " + field("rnr_default_us", c.rnr_default_us);
    out += " " + field("peer_timeout_us", c.peer_timeout_us);
    out += " " + field("pto_min_us", c.pto_min_us);
    out += " " + field("keepalive_us", c.keepalive_us);
    out += " " + field("connect_retry_us", c.connect_retry_us);
    out += " " + field("home_probe_us", c.home_probe_us);
    out += " " + field("home_probe_max_us", c.home_probe_max_us);
    out += std::string(" ipv4_fragments=") + (options_.ipv4_fragments ? "1" : "0");
    return out + "\n";
}

std::string AgentServer::do_connect(const agent::Line& line) {
    Args a(line, {"mac", "ip", "paths", "streams", "max_payload", "window_cap"});
    Address peer;
    const auto mac = agent::parse_mac(a.text("mac"));
    if (!mac) throw Fail{"bad_arg", "connect: bad mac '" + a.text("mac") + "'"};
    peer.mac = *mac;
    if (!agent::parse_ip(a.text("ip"), peer.ipv6, peer.ip))
        throw Fail{"bad_arg", "connect: bad ip '" + a.text("ip") + "'"};
    ConnParams offer;
    offer.paths = uint16_t(a.num_or("paths", UINT16_MAX, 4));
    offer.streams = uint16_t(a.num_or("streams", UINT16_MAX, 4));
    offer.max_payload = uint16_t(a.num_or("max_payload", UINT16_MAX, 4096));
    offer.window_cap = uint16_t(a.num_or("window_cap", UINT16_MAX, 256));
    uint32_t conn = 0;
    const Result r = device_->connect(peer, &conn, &offer);
    if (r != Result::Ok) throw Fail{"failed", result_name(r)};
    return "ok " + agent::field("conn", conn) + "\n";
}

std::string AgentServer::do_reg_mr(const agent::Line& line) {
    Args a(line, {"length", "access"});
    const uint64_t length = a.num("length", UINT64_MAX);
    const uint32_t acc = uint32_t(a.num("access", kAllAccess));
    if (length > options_.max_region_bytes)
        throw Fail{"no_resources",
                   "reg_mr: length above this agent's limit of " + std::to_string(options_.max_region_bytes)};
    const uint64_t bytes = std::max<uint64_t>(kPage, (length + kPage - 1) / kPage * kPage);
    std::unique_ptr<uint8_t, Freer> mem(static_cast<uint8_t*>(std::aligned_alloc(kPage, bytes)));
    if (!mem) throw Fail{"no_resources", "reg_mr: cannot allocate " + std::to_string(bytes) + " bytes"};
    std::memset(mem.get(), 0, bytes);
    MemoryRegion mr;
    const Result r = device_->reg_mr(mem.get(), length, acc, &mr);
    if (r != Result::Ok) throw Fail{"failed", result_name(r)};
    regions_[mr.lkey] = MemRegion{mem.get(), mr.iova, length, mr.rkey, acc};
    memory_.push_back(std::move(mem));
    return "ok " + agent::field("handle", mr.lkey) + " " + agent::hex_field("va", mr.iova) + " " +
           agent::hex_field("rkey", mr.rkey) + " " + agent::field("length", length) + " " +
           agent::field("access", acc) + "\n";
}

std::string AgentServer::do_dereg_mr(const agent::Line& line) {
    Args a(line, {"handle"});
    const uint32_t handle = uint32_t(a.num("handle", UINT32_MAX));
    if (!regions_.count(handle)) throw Fail{"no_region", "dereg_mr: no region " + std::to_string(handle)};
    const Result r = device_->dereg_mr(handle);
    if (r != Result::Ok) throw Fail{"failed", result_name(r)};
    return "ok\n";  // the memory stays until reset (read_mem may still look at it)
}

const AgentServer::MemRegion& AgentServer::region_of(const std::string& verb, uint32_t handle, uint64_t offset,
                                                     uint64_t length) const {
    auto it = regions_.find(handle);
    if (it == regions_.end()) throw Fail{"no_region", verb + ": no region " + std::to_string(handle)};
    if (offset > it->second.length || length > it->second.length - offset)
        throw Fail{"bounds", verb + ": bytes " + std::to_string(offset) + ".." + std::to_string(offset + length) +
                                 " not inside the region's " + std::to_string(it->second.length)};
    return it->second;
}

std::string AgentServer::do_write_mem(const agent::Line& line) {
    Args a(line, {"handle", "offset", "data"});
    const uint64_t offset = a.num("offset", UINT64_MAX);
    const std::string& text = a.text("data");
    if (text.size() > 2 * agent::kMaxData)
        throw Fail{"bad_arg", "write_mem: more than " + std::to_string(agent::kMaxData) + " bytes: split it"};
    const auto bytes = agent::from_hex(text);
    if (!bytes) throw Fail{"bad_arg", "write_mem: data is not hex"};
    const MemRegion& r = region_of(line.verb, uint32_t(a.num("handle", UINT32_MAX)), offset, bytes->size());
    if (!bytes->empty()) std::memcpy(r.mem + offset, bytes->data(), bytes->size());
    return "ok\n";
}

std::string AgentServer::do_read_mem(const agent::Line& line) {
    Args a(line, {"handle", "offset", "length"});
    const uint64_t offset = a.num("offset", UINT64_MAX);
    const uint64_t length = a.num("length", agent::kMaxData);
    const MemRegion& r = region_of(line.verb, uint32_t(a.num("handle", UINT32_MAX)), offset, length);
    return "ok data=" + agent::to_hex({r.mem + offset, size_t(length)}) + "\n";
}

std::string AgentServer::do_post(const agent::Line& line) {
    Args a(line, {"op", "conn", "stream", "wr_id", "region", "offset", "length", "remote_va", "rkey", "imm"});
    const auto op = agent::parse_op(a.text("op"));
    if (!op) throw Fail{"bad_arg", "post: op '" + a.text("op") + "' is not send, write, write_imm, read or recv"};
    const uint32_t conn = uint32_t(a.num("conn", UINT32_MAX));
    const uint16_t stream = uint16_t(a.num("stream", UINT16_MAX));
    const uint64_t wr_id = a.num("wr_id", UINT64_MAX);
    const uint32_t region = uint32_t(a.num("region", UINT32_MAX));
    const uint64_t offset = a.num("offset", UINT64_MAX);
    const uint32_t length = uint32_t(a.num("length", UINT32_MAX));
    const bool remote = *op == model::WorkOp::Write || *op == model::WorkOp::WriteImm || *op == model::WorkOp::Read;
    uint64_t remote_va = 0;
    uint32_t rkey = 0, imm = 0;
    if (remote) {
        remote_va = a.num("remote_va", UINT64_MAX);
        rkey = uint32_t(a.num("rkey", UINT32_MAX));
    } else {
        a.forbid("remote_va", "for send or recv");
        a.forbid("rkey", "for send or recv");
    }
    if (*op == model::WorkOp::WriteImm)
        imm = uint32_t(a.num("imm", UINT32_MAX));
    else
        a.forbid("imm", "but for write_imm");
    // The buffer goes to the DUT as given: an unknown region or a range outside it is the DUT's to
    // refuse ([R-MEM-4]). Our handles are lkeys, so even an unknown one translates.
    auto it = regions_.find(region);
    const uint64_t base = it == regions_.end() ? 0 : it->second.va;
    const Sge sge{base + offset, length, region};
    Result r = Result::Ok;
    switch (*op) {
        case model::WorkOp::Send:
            r = device_->post_send(conn, stream, wr_id, sge);
            break;
        case model::WorkOp::Write:
            r = device_->post_write(conn, stream, wr_id, sge, remote_va, rkey);
            break;
        case model::WorkOp::WriteImm:
            r = device_->post_write_imm(conn, stream, wr_id, sge, remote_va, rkey, imm);
            break;
        case model::WorkOp::Read:
            r = device_->post_read(conn, stream, wr_id, sge, remote_va, rkey);
            break;
        case model::WorkOp::Recv:
            r = device_->post_recv(conn, stream, wr_id, sge);
            break;
    }
    if (r == Result::Ok) return "ok\n";
    return "ok " + agent::field("refused", result_name(r)) + "\n";
}

std::string AgentServer::do_poll_cq(const agent::Line& line) {
    Args a(line, {"max"});
    const int max = int(a.num_or("max", agent::kMaxRecords, agent::kDefaultRecords));
    if (max == 0) throw Fail{"bad_arg", "poll_cq: max must be 1.." + std::to_string(agent::kMaxRecords)};
    std::vector<WorkCompletion> wc(static_cast<size_t>(max));
    const int n = device_->poll_cq(wc.data(), max);
    std::string out = "ok " + agent::field("n", uint64_t(n)) + "\n";
    for (int i = 0; i < n; ++i) {
        const WorkCompletion& w = wc[size_t(i)];
        out += "wc " + agent::field("wr_id", w.wr_id) + " " + agent::field("conn", w.conn) + " " +
               agent::field("stream", w.stream) + " " + agent::field("op", agent::op_text(op_of(w.opcode))) + " " +
               agent::field("status", agent::status_text(status_of(w.status))) + " " +
               agent::field("byte_len", w.byte_len);
        if (w.has_imm) out += " " + agent::hex_field("imm", w.imm);
        out += "\n";
    }
    return out;
}

std::string AgentServer::do_poll_events(const agent::Line& line) {
    Args a(line, {"max"});
    const int max = int(a.num_or("max", agent::kMaxRecords, agent::kDefaultRecords));
    if (max == 0) throw Fail{"bad_arg", "poll_events: max must be 1.." + std::to_string(agent::kMaxRecords)};
    std::vector<ConnEvent> ev(static_cast<size_t>(max));
    const int n = device_->poll_events(ev.data(), max);
    std::string out = "ok " + agent::field("n", uint64_t(n)) + "\n";
    for (int i = 0; i < n; ++i) {
        const ConnEvent& e = ev[size_t(i)];
        out += std::string("ev kind=") + (e.kind == ConnEvent::Kind::Up ? "up" : "down") + " " +
               agent::field("conn", e.conn) + " " + agent::field("initiator", e.initiator ? 1 : 0) + " " +
               agent::field("status", agent::status_text(status_of(e.status))) +
               " peer_mac=" + agent::mac_text(e.peer.mac) + " peer_ip=" + agent::ip_text(e.peer.ipv6, e.peer.ip) + "\n";
    }
    return out;
}

std::string AgentServer::do_close(const agent::Line& line) {
    Args a(line, {"conn", "abort"});
    const uint32_t conn = uint32_t(a.num("conn", UINT32_MAX));
    const bool abort = a.flag_or("abort", false);
    const Result r = device_->close(conn, abort);
    if (r == Result::Ok) return "ok\n";
    return "ok " + agent::field("refused", result_name(r)) + "\n";
}

std::string AgentServer::do_counters() const {
    const Counters& k = device_->counters();
    const auto named = engine_counters(k);
    std::string out = "ok";
    for (const auto& [name, value] : named) out += " " + agent::field(name, value);
    static_assert(std::tuple_size_v<decltype(k.decode_errors)> == agent::kDecodeErrorKinds);
    uint64_t decode_errors = 0;
    for (uint64_t v : k.decode_errors) decode_errors += v;
    out += " " + agent::field("decode_errors", decode_errors);
    for (size_t i = 0; i < agent::kDecodeErrorKinds; ++i)
        out += " " + agent::field("decode_errors." + std::string(agent::decode_error_text(i)), k.decode_errors[i]);
    return out + "\n";
}

}  // namespace mroce::conform
