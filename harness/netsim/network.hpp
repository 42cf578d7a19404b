// What a real network does to frames, decided by an explicit schedule (no hidden randomness).
//
// Frames enter the network when an endpoint transmits them; the k-th frame entering (counting both
// directions, from 0) gets `schedule.fates[k]`, frames beyond the list are delivered. Each
// direction has `links` parallel links; a frame takes link ecmp_link(UDP source port) and is
// dropped when that link is down. From `faults_until` on, every frame is delivered and every link
// is up ("loss eventually stops"). See harness/README.md for the exact rules.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "impair/ecmp.hpp"
#include "impair/ecn.hpp"
#include "impair/fate.hpp"
#include "impair/frame.hpp"
#include "model/types.hpp"

namespace mroce::harness {

enum class Side : uint8_t { A = 0, B = 1 };
inline Side other(Side s) { return s == Side::A ? Side::B : Side::A; }
inline char side_char(Side s) { return s == Side::A ? 'A' : 'B'; }

inline constexpr model::Time kNever = UINT64_MAX;

// One frame's fate: the impairment layer's type (impl/impair/fate.hpp), so a schedule drawn here and
// the fates drawn on DPDK ports are the same values. Delay: added to the base delay. Duplicate: gap
// before copy 2 (0 = 1 µs). Corrupt: XOR `corrupt_xor` (0 acts as 1) into byte `corrupt_offset`
// (modulo the IP packet's length).
using impair::fate_from_name;
using impair::fate_name;
using impair::PacketFate;

// Direction of a link event: the links from A to B, from B to A, or both.
enum class LinkDir : uint8_t { AtoB, BtoA, Both };
std::string_view link_dir_name(LinkDir d);

struct LinkEvent {
    model::Time at = 0;
    LinkDir dir = LinkDir::Both;
    uint16_t link = 0;
    bool up = false;
    bool operator==(const LinkEvent&) const = default;
};

struct Schedule {
    std::vector<PacketFate> fates;
    std::vector<LinkEvent> link_events;  // applied in time order (ties: list order)
    bool operator==(const Schedule&) const = default;
};

struct NetConfig {
    uint32_t base_delay_us = 5;     // one-way delay of every frame
    uint16_t links = 4;             // parallel links per direction (>= 1)
    model::Time faults_until = 0;   // from this time on: Deliver only, all links up (kNever: never)
    bool protect_handshake = true;  // connection-control frames always get through (no fate, no link drop)
    // A plane failure: from `dead_from` on, the last `dead_links` links (indices links - dead_links
    // .. links - 1) drop every frame in both directions, for good. Unlike link events, faults_until
    // does not revive them; handshake protection still applies.
    uint16_t dead_links = 0;
    model::Time dead_from = 0;
    bool link_dead(model::Time now, uint16_t link) const {
        return dead_links > 0 && now >= dead_from && link + dead_links >= links;
    }
    bool operator==(const NetConfig&) const = default;
};

// What the network does to a frame's bytes is the impairment layer's, so that the harness, the
// in-memory loop and the DPDK ports treat frames alike: the frame layout (impl/impair/frame.hpp:
// header offsets, UDP source port, BTH opcode), corrupt_frame (XORs one byte of the IP packet,
// never the Ethernet header: a link's FCS would drop such a frame; returns the frame offset
// changed), mark_ce (impl/impair/ecn.hpp: CE only on ECT(0)/ECT(1) frames, as a switch; fixes the
// IPv4 header checksum; returns whether it marked) and the ECMP hash (impl/impair/ecmp.hpp:
// link = fmix32(sport) % links, MurmurHash3's 32-bit finalizer; the same function in both
// directions, each direction having its own link states).
using impair::corrupt_frame;
using impair::ecmp_link;
using impair::frame_layout;
using impair::FrameLayout;
using impair::mark_ce;

class Network {
public:
    struct Copy {
        model::Time arrive = 0;
        std::vector<uint8_t> frame;
    };
    struct Entered {
        uint64_t index = 0;  // k: position in the sequence of frames entering the network
        PacketFate fate;     // the fate applied (Deliver after faults_until / protected)
        uint16_t link = 0;
        bool link_down = false;    // dropped because its link was down
        bool ce_marked = false;    // MarkCe applied to an ECT frame
        size_t corrupted_at = 0;   // Corrupt: frame offset changed
        std::vector<Copy> copies;  // 0 (dropped), 1 or 2 (duplicated) frames to deliver
    };

    Network(NetConfig config, Schedule schedule);

    // A frame transmitted by `from` at `now` enters the network.
    Entered enter(model::Time now, Side from, std::vector<uint8_t> frame);

    void set_link(LinkDir dir, uint16_t link, bool up);
    void all_links_up();
    bool link_up(Side from, uint16_t link) const;
    bool faults_over(model::Time now) const { return now >= config_.faults_until; }
    uint64_t frames_entered() const { return next_index_; }
    const NetConfig& config() const { return config_; }
    const Schedule& schedule() const { return schedule_; }

private:
    NetConfig config_;
    Schedule schedule_;
    std::vector<bool> up_[2];  // per direction (from A, from B), per link
    uint64_t next_index_ = 0;
};

}  // namespace mroce::harness
