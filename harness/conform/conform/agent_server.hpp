// The agent side of the conformance control protocol (harness/conform/AGENT_PROTOCOL.md): turns one
// request line into its response, over our engine (mroce::Device). No sockets here: `mroce agent`
// (apps/mroce/cmd_agent.cpp) feeds it the lines it reads and writes back what it returns; the tests
// call it directly.
//
// The first half of this header is the protocol's line syntax (tokens, values, names), which the
// client (agent_dut.cpp) shares.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/types.hpp"
#include "mroce/mroce.hpp"

namespace mroce::conform {

// ---- the line syntax (AGENT_PROTOCOL.md sections 2 and 3) ----
namespace agent {

inline constexpr unsigned kVersion = 1;
inline constexpr size_t kMaxLine = size_t(1) << 20;  // bytes, without the LF
inline constexpr size_t kMaxData = 262144;           // bytes per read_mem / write_mem
inline constexpr unsigned kMaxRecords = 4096;        // poll_cq / poll_events max
inline constexpr unsigned kDefaultRecords = 64;

struct SyntaxError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// One line split into tokens: the first word, the other words, the key=value fields in order.
struct Line {
    std::string verb;
    std::vector<std::string> words;
    std::vector<std::pair<std::string, std::string>> fields;
    // The value of `key`, or nullptr.
    const std::string* find(std::string_view key) const;
};

// Throws SyntaxError with the reason (bad byte, unbalanced quote, bad key, duplicate key, empty).
Line parse_line(std::string_view text);

// `key=value`, the value quoted when it must be.
std::string field(std::string_view key, std::string_view value);
std::string field(std::string_view key, uint64_t value);
std::string hex_field(std::string_view key, uint64_t value);  // value as 0x...

// Values; nullopt when malformed or beyond `max`.
std::optional<uint64_t> parse_number(std::string_view s, uint64_t max = UINT64_MAX);
std::optional<bool> parse_bool(std::string_view s);
std::string to_hex(std::span<const uint8_t> bytes);
std::optional<std::vector<uint8_t>> from_hex(std::string_view s);
std::string mac_text(const std::array<uint8_t, 6>& mac);
std::optional<std::array<uint8_t, 6>> parse_mac(std::string_view s);
std::string ip_text(bool ipv6, const std::array<uint8_t, 16>& ip);
// Sets ipv6 and ip of `out`.
bool parse_ip(std::string_view s, bool& ipv6, std::array<uint8_t, 16>& ip);

// Names (section 2).
std::string_view op_text(model::WorkOp op);
std::optional<model::WorkOp> parse_op(std::string_view s);
std::string_view status_text(model::Status s);
std::optional<model::Status> parse_status(std::string_view s);
// The decode error kinds' names, SPEC section 4 order (counter names decode_errors.<KIND>).
std::string_view decode_error_text(size_t kind);
inline constexpr size_t kDecodeErrorKinds = 19;
// The counters every agent reports besides decode_errors.<KIND>: model::Counters' fields by name,
// decode_errors being their sum.
const std::vector<std::string_view>& required_counters();

}  // namespace agent

// ---- the server ----

struct AgentServerOptions {
    std::string name = "mroce-engine (agent)";  // DutInfo name
    std::string agent = "mroce agent";          // hello's agent=
    uint64_t max_region_bytes = uint64_t(1) << 30;
    // Declared in `info` (ipv4_fragments=): whether the port delivers IPv4 fragments unaltered.
    bool ipv4_fragments = true;
};

class AgentServer {
public:
    // Opens a Device over `io` and `clock` (which must outlive the server), and again on every
    // reset. Throws std::runtime_error when the Device cannot be opened.
    AgentServer(const DeviceConfig& config, io::PacketIo& io, const io::Clock& clock, AgentServerOptions options = {});
    ~AgentServer();
    AgentServer(const AgentServer&) = delete;
    AgentServer& operator=(const AgentServer&) = delete;

    // One request line (without its LF) -> the whole response, each line ending in LF.
    std::string handle(std::string_view request);

    // The data path: one Device::progress() (call it in a loop, between requests).
    int progress() noexcept { return device_->progress(); }
    Device& device() { return *device_; }
    bool quit_requested() const { return quit_; }

    struct Stats {
        uint64_t requests = 0, errors = 0, resets = 0;
    };
    const Stats& stats() const { return stats_; }

private:
    struct MemRegion {
        uint8_t* mem = nullptr;  // aligned allocation, freed at reset
        uint64_t va = 0, length = 0;
        uint32_t rkey = 0, access = 0;
    };
    struct Freer {
        void operator()(uint8_t* p) const;
    };

    std::string dispatch(const agent::Line& line);
    std::string do_info() const;
    std::string do_connect(const agent::Line& line);
    std::string do_reg_mr(const agent::Line& line);
    std::string do_dereg_mr(const agent::Line& line);
    std::string do_write_mem(const agent::Line& line);
    std::string do_read_mem(const agent::Line& line);
    std::string do_post(const agent::Line& line);
    std::string do_poll_cq(const agent::Line& line);
    std::string do_poll_events(const agent::Line& line);
    std::string do_close(const agent::Line& line);
    std::string do_counters() const;
    void reset();
    const MemRegion& region_of(const std::string& verb, uint32_t handle, uint64_t offset, uint64_t length) const;

    DeviceConfig config_;
    io::PacketIo& io_;
    const io::Clock& clock_;
    AgentServerOptions options_;
    std::unique_ptr<Device> device_;
    std::map<uint32_t, MemRegion> regions_;                // by handle (lkey)
    std::vector<std::unique_ptr<uint8_t, Freer>> memory_;  // every region's memory until reset
    bool quit_ = false;
    Stats stats_;
};

}  // namespace mroce::conform
