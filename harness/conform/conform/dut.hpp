// The device under test (DUT), as the conformance runner sees it: a wire (frames in and out, with
// the runner's timestamps) and a control channel (connect, register memory, post work, poll
// completions, read counters). The same scripts run against every implementation of this
// interface: our engine in-process (inproc_dut.hpp, virtual time), or any implementation behind a
// real port driven by an agent over the control protocol (agent_dut.hpp, real time).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/types.hpp"

namespace mroce::conform {

using Micros = uint64_t;  // microseconds on the runner's clock

// A control-channel or wire failure of the DUT (unreachable agent, a lie, a stall). The runner
// reports the test as an error naming it; the CLI prints one line and exits 2 when the DUT cannot
// be reached at all.
struct DutError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// What a DUT declares about itself; scripts name what they need (`# dut:` header) and a test whose
// needs are not met is "unsupported", never failed.
struct DutInfo {
    std::string name;          // e.g. "mroce-engine 0.1 (inproc)"
    model::Address address;    // the DUT's MAC and IP
    uint16_t udp_port = 4793;  // [R-ENC-5]
    uint16_t max_paths = 256, max_streams = 65535, max_payload = 8192, window_cap = 256;
    std::vector<std::string> ops = {"send", "write", "write_imm", "read"};
    // Timer values the DUT is configured with, in µs, where the spec lets them be configured
    // ([R-RTO-3], [R-PLC-9]); the monitor's time bounds use them.
    uint32_t rto_min_us = 100, rto_init_us = 1000, rto_max_us = 6250, rnr_default_us = 100;
    uint32_t peer_timeout_us = 50000;
    // The tail-probe minimum ([R-REL-6]), the keepalive interval ([R-CONN-6]) and the CONNECT
    // retry interval ([R-CONN-4]); spec defaults when an (older) agent does not declare them.
    uint32_t pto_min_us = 20, keepalive_us = 100000, connect_retry_us = 1000;
    // HOME_PROBE and HOME_PROBE_MAX ([R-PATH-10]); spec defaults when an agent does not declare them.
    uint32_t home_probe_us = 200, home_probe_max_us = 400;
    // Whether IPv4 fragments the runner sends reach the DUT's receive path as sent. False when the
    // DUT's port itself reassembles or holds them (DPDK's af_packet PMD asks the kernel to
    // defragment: a lone fragment never gets through), so [R-ENC-3] cannot be tested through it.
    bool ipv4_fragments = true;
    bool virtual_time = false;  // true: frames take 0 µs and the DUT never stalls
};

struct WireFrame {
    Micros at = 0;  // when the runner saw it leave the DUT
    std::vector<uint8_t> bytes;
};

struct ConnOffer {
    uint16_t paths = 4, streams = 4, max_payload = 4096, window_cap = 256;
};

struct Region {
    uint32_t handle = 0;  // the DUT's name for the region (lkey for our engine)
    uint64_t va = 0;      // address of byte 0 as the peer must put it in a RETH
    uint64_t length = 0;
    uint32_t rkey = 0;
    uint32_t access = 0;  // model::access bits
};

// One work request. `region` + `offset` name the local buffer.
struct PostOp {
    model::WorkOp op = model::WorkOp::Send;
    uint32_t conn = 0;
    uint16_t stream = 0;
    uint64_t wr_id = 0;
    uint32_t region = 0;
    uint64_t offset = 0;
    uint32_t length = 0;
    uint64_t remote_va = 0;  // Write / WriteImm / Read
    uint32_t rkey = 0;
    std::optional<uint32_t> imm;  // WriteImm
};

struct DutCompletion {
    uint64_t wr_id = 0;
    uint32_t conn = 0;
    uint16_t stream = 0;
    model::WorkOp op = model::WorkOp::Send;
    model::Status status = model::Status::Success;
    uint32_t byte_len = 0;
    std::optional<uint32_t> imm;
};

struct DutEvent {
    bool up = true;  // Up or Down
    uint32_t conn = 0;
    bool initiator = false;
    model::Status status = model::Status::Success;  // Down: Success (clean close) or ConnectionFailed
};

class Dut {
public:
    virtual ~Dut() = default;
    virtual const DutInfo& info() const = 0;

    // ---- the wire ----
    // Delivers a frame to the DUT now.
    virtual void send(std::span<const uint8_t> frame) = 0;
    // Frames the DUT transmitted since the last call, in order, stamped when seen.
    virtual std::vector<WireFrame> receive() = 0;
    // The runner's clock.
    virtual Micros now() const = 0;
    // Lets the DUT run until the clock reads `t` (virtual time: advances it through every DUT
    // timer on the way; real time: polls until then). Returns early, with the clock at the moment,
    // when the DUT transmits something, so the runner can react.
    virtual void run_until(Micros t) = 0;

    // ---- the control channel ----
    virtual void listen(bool on) = 0;
    // Starts a connection to `peer`; returns the DUT's connection handle (Up/Down events follow).
    virtual uint32_t connect(const model::Address& peer, const ConnOffer& offer) = 0;
    virtual Region reg_mr(uint64_t length, uint32_t access) = 0;
    virtual void dereg_mr(uint32_t handle) = 0;
    virtual void write_mem(uint32_t region, uint64_t offset, std::span<const uint8_t> bytes) = 0;
    virtual std::vector<uint8_t> read_mem(uint32_t region, uint64_t offset, uint64_t length) = 0;
    // "" when accepted, else the DUT's reason for refusing it at post time ([R-MEM-4]).
    virtual std::string post(const PostOp& op) = 0;
    virtual std::vector<DutCompletion> poll_cq() = 0;
    virtual std::vector<DutEvent> poll_events() = 0;
    virtual void close(uint32_t conn, bool abort) = 0;
    // Named counters (at least those of model::Counters, by their field names).
    virtual std::map<std::string, uint64_t> counters() = 0;
    // Drops every connection and region, so the next test starts from a clean device. A DUT that
    // cannot be reset is made anew for each test instead (the in-process one is).
    virtual void reset() {}
};

}  // namespace mroce::conform
