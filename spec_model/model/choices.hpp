// The points where SPEC.md lets an implementation choose [R-CONF-2], as one replaceable policy.
//
// The model makes the documented default choice; the differential harness can substitute the
// engine's choice after checking it is allowed, so that both stay in step.
#pragma once

#include <cstdint>
#include <span>

namespace mroce::model {

class Choices {
public:
    virtual ~Choices() = default;

    // [R-PATH-8] Which of the paths with room carries the next new segment. `candidates` are in the
    // default round-robin order (starting after the previously used path); return an index into it.
    virtual size_t pick_path(uint32_t conn, std::span<const uint16_t> candidates) {
        (void)conn;
        (void)candidates;
        return 0;
    }

    // [R-PATH-5] A fresh route for `path` of local connection `conn_id` after `k` fresh routes.
    virtual uint16_t fresh_route(uint32_t conn_id, uint16_t path, uint32_t k) {
        return default_route(conn_id, path, k);
    }

    // [R-ACK-3] Whether to send a coalesced ACK now, given the accepted-but-unacknowledged packet
    // count and the time since the first of them. Only asked while deferral is still allowed.
    virtual bool ack_now(uint32_t unacked, uint64_t since_first_us, uint32_t ack_every, uint32_t ack_delay_us) {
        return unacked >= ack_every || since_first_us >= ack_delay_us;
    }

    // SPEC appendix B: the default route generator.
    static uint16_t default_route(uint32_t conn_id, uint16_t path, uint32_t k) {
        const uint32_t mix = conn_id * 2654435761u + uint32_t(path) * 40503u + k * 9973u;
        return static_cast<uint16_t>(49152u + mix % 16384u);
    }
};

}  // namespace mroce::model
