// The counters our engine reports to the runner (`? counter NAME`), by name: the in-process DUT and
// `mroce agent` report the same set. decode_errors (and its kinds) are added by each.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "mroce/mroce.hpp"

namespace mroce::conform {

inline std::vector<std::pair<std::string_view, uint64_t>> engine_counters(const Counters& k) {
    return {
        {"unknown_dcid", k.unknown_dcid},
        {"bad_path", k.bad_path},
        {"out_of_window", k.out_of_window},
        {"duplicates", k.duplicates},
        {"naks_sent", k.naks_sent},
        {"naks_received", k.naks_received},
        {"acks_sent", k.acks_sent},
        {"data_sent", k.data_sent},
        {"retransmissions", k.retransmissions},
        {"voids_sent", k.voids_sent},
        {"probes_sent", k.probes_sent},
        {"repaths", k.repaths},
        {"home_returns", k.home_returns},  // optional [R-PATH-10]
        {"placed_bytes", k.placed_bytes},
        {"ce_marks_seen", k.ce_marks_seen},
        {"cwnd_decreases", k.cwnd_decreases},
        // Trust checks (12.4): optional for other DUTs (a test needing one is unsupported without it).
        {"invalid_acks", k.invalid_acks},
        {"sack_beyond_snxt", k.sack_beyond_snxt},
        {"foreign_source", k.foreign_source},
        {"bad_accepts", k.bad_accepts},
        {"remote_access_naks", k.remote_access_naks},
        // The engine's own.
        {"tx_no_buffer", k.tx_no_buffer},
        {"window_block_waits", k.window_block_waits},
        {"cq_overflow", k.cq_overflow},
        {"event_overflow", k.event_overflow},
        {"rejects_no_resources", k.rejects_no_resources},
        {"rnr_receive_limit", k.rnr_receive_limit},
        {"rnr_response_limit", k.rnr_response_limit},
        {"rejects_unconfirmed", k.rejects_unconfirmed},
        {"rx_frames", k.rx_frames},
        {"tx_frames", k.tx_frames},
    };
}

}  // namespace mroce::conform
