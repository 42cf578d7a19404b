// The conformance monitor: the model's judge of wire behaviour [R-CONF-1].
//
// It reads the frames of a conversation, in the order a tap saw them, and checks every frame an
// endpoint sends against what that endpoint could know at that moment: the frames it had
// received. It is a nondeterministic acceptor: where SPEC.md leaves a choice ([R-CONF-2]: ACK
// coalescing, path picks, fresh routes, retransmission delay, timers within their bounds), the
// monitor accepts every allowed choice and records which one was made; where the endpoint may not
// yet have processed a frame it received (processing lag up to `tolerance`), a rule is violated
// only if it is violated whatever the lag. Each rule is named by its requirement ID, so a
// violation reads "[R-CC-3] ..." with the frame, its canonical line (appendix C) and the earlier
// frames that put the endpoint in that state.
//
// Used by `mroce conform` (the runner feeds it every frame it injects and every frame the device
// under test sends: an exact view of the DUT) and by `mroce check` (a capture: exact for the
// endpoint at whose port it was taken, partial for the other).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace mroce::monitor {

using Nanos = int64_t;

struct Ip {
    bool v6 = false;
    std::array<uint8_t, 16> b{};
    auto operator<=>(const Ip&) const = default;
    std::string str() const;
};

struct Config {
    uint16_t udp_port = 4793;  // [R-ENC-5]
    // Endpoints whose every sent and received frame the view contains: only they are judged on
    // the rules that depend on what they received. Empty: every endpoint is (an exact view, as
    // the runner's). `judge_only`: judge no other endpoint at all (the runner's tester is trusted).
    std::vector<Ip> fully_observed;
    bool judge_only = false;
    // Processing lag an endpoint is allowed between receiving a frame and acting on it, and the
    // slack of every time bound: absolute plus proportional. 0 / 0 with virtual time (inproc).
    Nanos tolerance = 0;
    double tolerance_prop = 0;
    bool virtual_time = false;  // frames are acted on before the next frame: "at once" is exact
    bool strict = false;        // also check the SHOULDs (DF, flow label, RTO_MAX bound)
    // Configured timers of the judged endpoints (µs) ([R-RTO-3], [R-PLC-9]).
    uint32_t rto_min_us = 100, rto_init_us = 1000, rto_max_us = 6250, rnr_default_us = 100;
    uint32_t peer_timeout_us = 50000, hint_ttl_us = 1000;
    uint32_t home_probe_us = 200, home_probe_max_us = 400;  // HOME_PROBE, HOME_PROBE_MAX [R-PATH-10]
    bool exact_capture = true;  // false (a tap): evidence of a missed frame is tap loss, not a violation
    // Whether a missing ACK ([R-ACK-2], [R-ACK-3] deadlines) is a violation. Off when the tap's
    // position is only inferred: an ACK lost between its sender and the tap looks like one never
    // sent, and nothing later proves otherwise. Missed deadlines are then indeterminate.
    bool judge_ack_deadlines = true;
    // Multipath taps: the path IDs a tap saw (empty: all). Frames of other paths are skipped, and
    // the rules that span paths (stream and message order, one PSN per segment, the connection's
    // rate credit) are not judged: the tap does not see the whole connection.
    std::vector<uint16_t> paths;
};

struct Violation {
    std::string rule;               // "R-ACK-4"
    uint64_t frame = 0;             // frame number of the offending frame (or the one that ended the wait)
    std::string line;               // its canonical line
    std::string what;               // one sentence
    std::vector<uint64_t> because;  // earlier frames that put the endpoint in this state
    std::string endpoint;           // the judged endpoint's IP
};

struct RuleTally {
    uint64_t checked = 0;  // instances judged
    uint64_t violated = 0;
    uint64_t indeterminate = 0;  // instances that could not be judged from this view
};

class Monitor {
public:
    explicit Monitor(Config config);
    ~Monitor();
    Monitor(Monitor&&) noexcept;
    Monitor& operator=(Monitor&&) noexcept;

    // Frames in the order seen, `number` increasing (1-based, as a capture numbers them), `time`
    // not decreasing. Non-MRoCE frames (other EtherTypes, other UDP ports) are skipped and counted.
    void frame(uint64_t number, Nanos time, std::span<const uint8_t> bytes);
    // The view ends at `time`: obligations still open are judged (violated when their deadline
    // passed, indeterminate otherwise).
    void finish(Nanos time);

    const std::vector<Violation>& violations() const;
    const std::map<std::string, RuleTally>& tally() const;
    // Implementation choices observed and found allowed [R-CONF-2], as readable lines.
    std::vector<std::string> choices() const;
    // Capture quality: MRoCE frames seen, skipped non-MRoCE frames, frames of connections whose
    // setup the view lacks, and frames whose absence later frames prove (tap loss).
    struct Quality {
        uint64_t frames = 0, other_frames = 0, unknown_connection = 0, tap_loss = 0, other_path_frames = 0;
        uint64_t connections = 0;
        double figure() const;  // 1.0: nothing missing
    };
    Quality quality() const;
    // Endpoints seen (IP strings), and which of them were judged fully.
    std::vector<std::string> endpoints() const;

    std::vector<std::string> fully_judged() const;

private:
    struct State;
    std::unique_ptr<State> s_;
};

// Parses "10.0.0.1" or "fd00:0:0:0:0:0:0:1" (full or with ::). nullopt when malformed.
std::optional<Ip> parse_ip(const std::string& text);

}  // namespace mroce::monitor
