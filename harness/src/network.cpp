#include "netsim/network.hpp"

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

Network::Network(NetConfig config, Schedule schedule) : config_(config), schedule_(std::move(schedule)) {
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

bool Network::link_up(Side from, uint16_t link) const { return link < config_.links && up_[size_t(from)][link]; }

Network::Entered Network::enter(model::Time now, Side from, std::vector<uint8_t> frame) {
    Entered e;
    e.index = next_index_++;
    const auto lay = frame_layout(frame);
    e.link = ecmp_link(lay ? lay->sport : 0, config_.links);
    const bool is_control = lay && lay->opcode && impair::is_control_opcode(*lay->opcode);
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
