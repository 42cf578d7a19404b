// A DUT behind a real port, driven by an agent over the control protocol
// (harness/conform/AGENT_PROTOCOL.md), in real time.
//
//   AgentLink    a line transport to the agent (a TCP or Unix socket: connect_agent())
//   AgentClient  the protocol's requests as calls; every response is checked, and a malformed or
//                inconsistent one (a lie), a stall or a lost connection is a DutError naming the
//                request. No DPDK: the tests drive it over an in-memory link.
//   AgentDut     the Dut: an AgentClient for the control part, and the runner's own DPDK port for
//                the wire (frames to the DUT, and the DUT's frames stamped with a steady clock).
//                DPDK's EAL starts once per process: a process has at most one AgentDut.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "conform/dut.hpp"

namespace mroce::conform {

class AgentLink {
public:
    virtual ~AgentLink() = default;
    // Sends one line (the LF is added). Throws std::runtime_error (the reason) when it cannot.
    virtual void send_line(std::string_view line) = 0;
    // The next line (without its LF) once one is complete, waiting at most `wait_us`; nullopt if
    // none came. Throws std::runtime_error (the reason) when the agent closed the connection.
    virtual std::optional<std::string> read_line(uint64_t wait_us) = 0;
};

// Connects to "unix:/path" ("unix:@name": abstract) or "HOST:PORT" ("[v6]:PORT"), within
// timeout_ms. Throws DutError("agent ADDRESS: cannot connect: REASON").
std::unique_ptr<AgentLink> connect_agent(const std::string& address, uint32_t timeout_ms = 2000);

class AgentClient {
public:
    // `label` names the agent in messages (its address). `timeout_ms`: the most a request may take.
    AgentClient(std::unique_ptr<AgentLink> link, std::string label, uint32_t timeout_ms = 2000);

    // Called repeatedly while waiting for a response (AgentDut polls the wire there).
    std::function<void()> idle;

    unsigned hello();  // the protocol version agreed
    DutInfo info();
    void listen(bool on);
    uint32_t connect(const model::Address& peer, const ConnOffer& offer);
    Region reg_mr(uint64_t length, uint32_t access);
    void dereg_mr(uint32_t handle);
    void write_mem(uint32_t region, uint64_t offset, std::span<const uint8_t> bytes);
    std::vector<uint8_t> read_mem(uint32_t region, uint64_t offset, uint64_t length);
    std::string post(const PostOp& op);  // "" or the DUT's refusal
    std::vector<DutCompletion> poll_cq();
    std::vector<DutEvent> poll_events();
    void close(uint32_t conn, bool abort);
    std::map<std::string, uint64_t> counters();
    void reset();
    void quit();

    // One request line -> its response lines: the `ok` line, then for a multi-line response
    // (max_records > 0: poll_cq, poll_events) its n <= max_records records. `err` responses,
    // stalls, a lost connection and unframed responses throw DutError.
    std::vector<std::string> request(const std::string& line, unsigned max_records = 0);

    const std::string& label() const { return label_; }

private:
    [[noreturn]] void fail(const std::string& what);
    std::string read_response_line(const std::string& request, std::chrono::steady_clock::time_point deadline);

    std::unique_ptr<AgentLink> link_;
    std::string label_;
    std::chrono::milliseconds timeout_;
    std::string broken_;               // why the connection is unusable ("" while it is fine)
    std::set<uint32_t> live_regions_;  // handles registered and not deregistered (lie checks)
};

struct AgentDutOptions {
    std::string agent;  // control: "unix:/path" or "HOST:PORT"
    std::string wire;   // the runner's DPDK port spec: "af_packet:mra0", "memif:client:/x.sock", ...
    uint32_t timeout_ms = 2000;
    uint32_t link_wait_ms = 5000;  // the wire port must be up within this (memif: the peer connects)
    std::string lcores = "0";      // EAL of this process
    std::string file_prefix;       // EAL --file-prefix; empty: "mroce-conform-<pid>"
    // receive(): only UDP over IPv4/IPv6 frames from the DUT's MAC (not its host stack's ARP,
    // neighbour discovery or ICMP, nor the runner's own frames looped back).
    bool dut_frames_only = true;
};

class AgentDut final : public Dut {
public:
    // Connects to the agent (hello, info), then opens the wire port. Throws DutError.
    explicit AgentDut(const AgentDutOptions& options);
    ~AgentDut() override;

    const DutInfo& info() const override { return info_; }

    void send(std::span<const uint8_t> frame) override;
    std::vector<WireFrame> receive() override;
    Micros now() const override;
    void run_until(Micros t) override;

    void listen(bool on) override { client_.listen(on); }
    uint32_t connect(const model::Address& peer, const ConnOffer& offer) override {
        return client_.connect(peer, offer);
    }
    Region reg_mr(uint64_t length, uint32_t access) override { return client_.reg_mr(length, access); }
    void dereg_mr(uint32_t handle) override { client_.dereg_mr(handle); }
    void write_mem(uint32_t region, uint64_t offset, std::span<const uint8_t> bytes) override {
        client_.write_mem(region, offset, bytes);
    }
    std::vector<uint8_t> read_mem(uint32_t region, uint64_t offset, uint64_t length) override {
        return client_.read_mem(region, offset, length);
    }
    std::string post(const PostOp& op) override { return client_.post(op); }
    std::vector<DutCompletion> poll_cq() override { return client_.poll_cq(); }
    std::vector<DutEvent> poll_events() override { return client_.poll_events(); }
    void close(uint32_t conn, bool abort) override { client_.close(conn, abort); }
    std::map<std::string, uint64_t> counters() override { return client_.counters(); }

    // The agent's reset (the DUT starts clean); frames waiting on the wire are dropped.
    void reset() override;
    // Ends the agent.
    void quit() { client_.quit(); }
    AgentClient& client() { return client_; }

private:
    struct Wire;
    bool poll_wire();  // moves the frames waiting on the port to pending_; true if any

    AgentDutOptions options_;
    std::chrono::steady_clock::time_point origin_;
    AgentClient client_;
    DutInfo info_;
    std::unique_ptr<Wire> wire_;
    std::vector<WireFrame> pending_;
};

}  // namespace mroce::conform
