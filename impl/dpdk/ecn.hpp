// ECN and DSCP on mbufs. The engine's codec builds frames with the right codepoints already
// ([R-ENC-9] data ECT(0), others Not-ECT; [R-ENC-10] DSCP); these helpers read CE on receive and
// rewrite the codepoints of a frame built elsewhere (the IPv4 header checksum is fixed
// incrementally). The IP header must be in the first segment, which holds for every PMD we use.
#pragma once

#include <rte_mbuf.h>

#include <optional>

#include "dpdk/mbuf.hpp"
#include "impair/ecn.hpp"

namespace mroce::dpdk {

inline std::optional<impair::Ecn> ecn_of(const rte_mbuf* m) { return impair::read_ecn(head(m)); }
// [R-ENC-9] a CE mark on an arriving frame (counted by the receiver as congestion).
inline bool is_ce(const rte_mbuf* m) { return ecn_of(m) == impair::Ecn::Ce; }
inline std::optional<uint8_t> dscp_of(const rte_mbuf* m) { return impair::read_dscp(head(m)); }
inline bool set_tos(rte_mbuf* m, uint8_t dscp, impair::Ecn ecn) { return impair::set_tos(head(m), dscp, ecn); }
// Marks CE like a switch (only ECT frames); true when marked.
inline bool mark_ce(rte_mbuf* m) { return impair::mark_ce(head(m)); }

}  // namespace mroce::dpdk
