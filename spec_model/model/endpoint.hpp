// The executable model of one MRoCE endpoint: the project's oracle.
//
// Simple, deterministic, and tagged: every rule carries the ID of the SPEC.md requirement it
// implements, so `grep -rn R-REL-4 spec_model/` finds it. Clarity over speed: standard containers,
// no cleverness. Drive it with handle(now, event); it answers with actions.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <vector>

#include "model/choices.hpp"
#include "model/types.hpp"

namespace mroce::model {

struct EndpointState;  // internals, in state.hpp

class Endpoint {
public:
    explicit Endpoint(Config config, std::shared_ptr<Choices> choices = nullptr);
    ~Endpoint();
    Endpoint(Endpoint&&) noexcept;
    Endpoint& operator=(Endpoint&&) noexcept;

    // The whole interface: time never goes backwards; timers due at or before `now` fire first.
    std::vector<Action> handle(Time now, const Event& event);

    // ---- observation (const; for tests, traces and the differential harness) ----
    const Config& config() const;
    Time now() const;
    std::optional<Time> next_deadline() const;
    // Bytes of registered local memory (std::nullopt if the range is not inside one region).
    std::optional<std::vector<uint8_t>> read_memory(uint64_t va, uint64_t length) const;
    std::vector<uint32_t> connections() const;
    std::optional<ConnState> connection_state(uint32_t conn) const;
    std::optional<PathView> path_view(uint32_t conn, uint16_t path) const;
    uint16_t path_count(uint32_t conn) const;  // negotiated, 0 if unknown
    uint16_t stream_count(uint32_t conn) const;
    uint16_t max_payload(uint32_t conn) const;
    // Current fair-share grants of this endpoint as a receiver, by local connection ID [R-FS-4].
    std::map<uint32_t, uint32_t> rate_shares() const;
    // Outstanding work: posted but not completed work requests and receives.
    size_t outstanding_work(uint32_t conn) const;
    const Counters& counters() const;

    // ---- implementation choices [R-CONF-2]: is another choice allowed here? ----
    // Paths that may carry the next new segment of `conn`, in the default round-robin order.
    std::vector<uint16_t> new_segment_path_candidates(uint32_t conn) const;
    // Whether a fresh route (UDP source port) is an allowed choice [R-ENC-6], [R-PATH-5].
    static bool route_allowed(uint16_t sport);
    // Whether the receiver may still defer the ACK of (conn, path) at this moment [R-ACK-3].
    bool ack_deferral_allowed(uint32_t conn, uint16_t path) const;

private:
    std::unique_ptr<EndpointState> s_;
};

}  // namespace mroce::model
