#include "netsim/network.hpp"

#include <array>

namespace mroce::harness {

std::string_view link_dir_name(LinkDir d) {
    switch (d) {
        case LinkDir::AtoB:
            return "AtoB";
        case LinkDir::BtoA:
            return "BtoA";
        case LinkDir::Both:
            return "both";
    }
    return "UNKNOWN";
}

std::optional<FrameLayout> frame_layout(std::span<const uint8_t> f) {
    if (f.size() < 14) return std::nullopt;
    FrameLayout l;
    const uint16_t type = uint16_t(f[12] << 8 | f[13]);
    if (type == 0x0800) {
        if (f.size() < 34) return std::nullopt;
        l.udp = 14 + size_t(f[14] & 0x0f) * 4;
    } else if (type == 0x86DD) {
        l.ipv6 = true;
        l.udp = 14 + 40;
    } else {
        return std::nullopt;
    }
    l.bth = l.udp + 8;
    if (f.size() < l.bth) return std::nullopt;
    l.sport = uint16_t(f[l.udp] << 8 | f[l.udp + 1]);
    if (f.size() >= l.bth + 2) l.opcode = f[l.bth + 1];
    return l;
}

uint16_t ecmp_link(uint16_t sport, uint16_t links) {
    // MurmurHash3 fmix32: consecutive ports land on unrelated links.
    uint32_t h = sport;
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return links == 0 ? 0 : uint16_t(h % links);
}

bool mark_ce(std::vector<uint8_t>& f) {
    const auto lay = frame_layout(f);
    if (!lay) return false;
    if (lay->ipv6) {
        // Traffic class straddles bytes 14 and 15; its ECN bits are bits 5..4 of byte 15.
        const uint8_t ecn = (f[15] >> 4) & 3;
        if (ecn != 1 && ecn != 2) return false;
        f[15] |= 0x30;
        return true;
    }
    if ((f[14] >> 4) != 4) return false;
    const uint8_t ecn = f[15] & 3;
    if (ecn != 1 && ecn != 2) return false;
    f[15] |= 3;
    // Recompute the IPv4 header checksum (RFC 791 / RFC 1071) over the header length.
    const size_t hl = size_t(f[14] & 0x0f) * 4;
    if (hl < 20 || f.size() < 14 + hl) return true;
    f[24] = f[25] = 0;
    uint32_t sum = 0;
    for (size_t i = 0; i < hl; i += 2) sum += uint32_t(f[14 + i] << 8 | f[14 + i + 1]);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    const uint16_t c = uint16_t(~sum);
    f[24] = uint8_t(c >> 8);
    f[25] = uint8_t(c);
    return true;
}

size_t corrupt_frame(std::vector<uint8_t>& f, uint16_t offset, uint8_t mask) {
    if (f.size() <= 14) return 0;
    const size_t at = 14 + size_t(offset) % (f.size() - 14);
    f[at] ^= mask == 0 ? uint8_t(1) : mask;
    return at;
}

Network::Network(NetConfig config, Schedule schedule)
    : config_(config), schedule_(std::move(schedule)) {
    if (config_.links == 0) config_.links = 1;
    for (auto& u : up_) u.assign(config_.links, true);
}

void Network::set_link(LinkDir dir, uint16_t link, bool up) {
    if (link >= config_.links) return;
    if (dir != LinkDir::BtoA) up_[0][link] = up;
    if (dir != LinkDir::AtoB) up_[1][link] = up;
}

void Network::all_links_up() {
    for (auto& u : up_) u.assign(config_.links, true);
}

bool Network::link_up(Side from, uint16_t link) const {
    return link < config_.links && up_[size_t(from)][link];
}

Network::Entered Network::enter(model::Time now, Side from, std::vector<uint8_t> frame) {
    Entered e;
    e.index = next_index_++;
    const auto lay = frame_layout(frame);
    e.link = ecmp_link(lay ? lay->sport : 0, config_.links);
    const bool is_control = lay && lay->opcode >= 0x20 && lay->opcode <= 0x24;
    const bool exempt = faults_over(now) || (config_.protect_handshake && is_control);
    if (!exempt && e.index < schedule_.fates.size()) e.fate = schedule_.fates[e.index];
    const model::Time arrive = now + config_.base_delay_us;
    const bool control_protected = config_.protect_handshake && is_control;
    if ((!exempt && !link_up(from, e.link)) || (!control_protected && config_.link_dead(now, e.link))) {
        e.link_down = true;
        return e;
    }
    switch (e.fate.kind) {
        case PacketFate::Deliver:
            e.copies.push_back({arrive, std::move(frame)});
            break;
        case PacketFate::Drop:
            break;
        case PacketFate::Duplicate: {
            const uint32_t gap = e.fate.extra_delay_us == 0 ? 1 : e.fate.extra_delay_us;
            e.copies.push_back({arrive, frame});
            e.copies.push_back({arrive + gap, std::move(frame)});
            break;
        }
        case PacketFate::Delay:
            e.copies.push_back({arrive + e.fate.extra_delay_us, std::move(frame)});
            break;
        case PacketFate::MarkCe:
            e.ce_marked = mark_ce(frame);
            e.copies.push_back({arrive, std::move(frame)});
            break;
        case PacketFate::Corrupt:
            e.corrupted_at = corrupt_frame(frame, e.fate.corrupt_offset, e.fate.corrupt_xor);
            e.copies.push_back({arrive, std::move(frame)});
            break;
    }
    return e;
}

}  // namespace mroce::harness
