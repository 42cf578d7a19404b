// The receiver's fair-share rate hints [R-FS-1..5]: max-min fair shares of the endpoint's inbound
// capacity over its active connections, by water-filling over estimated demands.
#include <algorithm>

#include "model/state.hpp"

namespace mroce::model {

// [R-FS-4]: ascending demand (ties by ascending connection ID); each gets min(demand, R / n).
void EndpointState::fs_waterfill() {
    std::vector<Connection*> active;
    for (auto& [id, c] : conns)
        if (c.fs_active) active.push_back(&c);
    std::sort(active.begin(), active.end(), [](const Connection* a, const Connection* b) {
        return a->demand != b->demand ? a->demand < b->demand : a->id < b->id;
    });
    uint64_t remaining = cfg.capacity_mbps;
    uint64_t n = active.size();
    for (Connection* c : active) {
        uint64_t share = std::min<uint64_t>(c->demand, remaining / n);
        if (share == 0 && remaining > 0) share = 1;  // every share at least 1 Mb/s
        c->share = static_cast<uint32_t>(share);
        remaining -= share;
        --n;
    }
}

// [R-FS-1]: every FS_INTERVAL.
void EndpointState::fs_compute() {
    const uint64_t interval = cfg.fs_interval_us;
    const uint64_t window = 4 * interval;  // ACTIVE_WINDOW [R-FS-2]
    bool any = false;
    for (auto& [id, c] : conns) {
        if (!c.fs_active) continue;
        if (now - c.last_data >= window || (c.state != ConnState::Established && c.state != ConnState::Closing)) {
            c.fs_active = false;  // not active: hint 0
            c.share = 0;
            c.bits_in_interval = 0;
            continue;
        }
        // [R-FS-3]: r = bits / µs = Mb/s; demand = max(C / 1000, 2 r, 3 share / 4):
        // a share shrinks by a quarter at most per computation
        const uint64_t rate = c.bits_in_interval / interval;
        c.demand = static_cast<uint32_t>(std::min<uint64_t>(
            std::max({uint64_t(cfg.capacity_mbps / 1000), 2 * rate, uint64_t(c.share) * 3 / 4}), 0xFFFFFFFFu));
        c.bits_in_interval = 0;
        any = true;
    }
    fs_waterfill();
    fs_next = any ? (now / interval + 1) * interval : 0;
}

// [R-FS-2], [R-FS-5]: a data packet on a connection that was not active makes it active at once, with the
// provisional demand C / (N + 1), and the shares are recomputed at once.
void EndpointState::fs_on_data(Connection& c, uint32_t payload_len) {
    c.bits_in_interval += uint64_t(8) * payload_len;
    c.last_data = now;
    if (c.fs_active) return;
    uint32_t others = 0;
    for (const auto& [id, o] : conns) others += o.fs_active;
    c.fs_active = true;
    c.demand = cfg.capacity_mbps / (others + 1);
    fs_waterfill();
    if (fs_next == 0) fs_next = (now / cfg.fs_interval_us + 1) * cfg.fs_interval_us;
}

}  // namespace mroce::model
