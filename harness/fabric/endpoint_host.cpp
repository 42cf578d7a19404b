#include "fabric/endpoint_host.hpp"

#include <algorithm>
#include <variant>

#include "fabric/frame_head_plain.hpp"
#include "impair/ecmp.hpp"

namespace mroce::fabric {

model::Address model_address(uint32_t host) {
    model::Address a;
    a.mac = {0x02, 0x00, uint8_t(host >> 24), uint8_t(host >> 16), uint8_t(host >> 8), uint8_t(host)};
    const uint32_t ip = host_ip(host);
    a.ip[0] = uint8_t(ip >> 24), a.ip[1] = uint8_t(ip >> 16), a.ip[2] = uint8_t(ip >> 8), a.ip[3] = uint8_t(ip);
    return a;
}

namespace {

// The UDP source port (the route) of an IPv4 frame without options; 0 for anything else.
uint16_t route_of(const std::vector<uint8_t>& f) {
    if (f.size() < 36 || f[12] != 0x08 || f[13] != 0x00 || (f[14] & 0x0F) != 5) return 0;
    return uint16_t(f[34] << 8 | f[35]);
}

}  // namespace

EndpointHost::EndpointHost(Fabric& fabric, uint32_t host, std::unique_ptr<harness::SimEndpoint> endpoint)
    : fabric_(fabric), host_(host), endpoint_(std::move(endpoint)) {
    fabric_.set_receiver(host, [this](uint32_t, const SimFrame& f) { receive(f); });
}

EndpointHost::~EndpointHost() { fabric_.set_receiver(host_, nullptr); }

std::vector<model::Action> EndpointHost::handle(const model::Event& event) {
    std::vector<model::Action> actions = endpoint_->handle(sim::now_us(), event);
    std::vector<model::Action> rest;
    const uint32_t planes = fabric_.planes();
    for (model::Action& a : actions) {
        if (auto* t = std::get_if<model::Transmit>(&a)) {
            fabric_.host_send(host_, impair::ecmp_link(route_of(t->frame), uint16_t(planes)), t->frame.data(),
                              uint32_t(t->frame.size()));
            continue;
        }
        if (std::holds_alternative<model::Wakeup>(a)) continue;  // next_deadline() below covers it
        rest.push_back(std::move(a));
    }
    arm_timer();
    if (on_action)
        for (const model::Action& a : rest) on_action(*this, a);
    return rest;
}

void EndpointHost::receive(const SimFrame& frame) {
    model::Receive r;
    r.frame.resize(frame.size());
    r.frame.resize(frame.copy_to(r.frame.data(), uint32_t(r.frame.size())));
    if (rx_tap && r.frame.size() >= 34 && r.frame[12] == 0x08 && r.frame[13] == 0x00) {
        const uint32_t src =
            uint32_t(r.frame[26]) << 24 | uint32_t(r.frame[27]) << 16 | uint32_t(r.frame[28]) << 8 | r.frame[29];
        rx_tap(host_of_ip(src), uint32_t(r.frame.size()));
    }
    handle(r);
}

void EndpointHost::arm_timer() {
    const auto deadline = endpoint_->next_deadline();
    if (!deadline) {
        timer_.cancel();
        return;
    }
    // A deadline not after now fires at the next microsecond: the endpoints' clocks read whole µs.
    const uint64_t at_ns = std::max<uint64_t>(*deadline, sim::now_us() + 1) * 1000;
    if (timer_.pending() && timer_.when_ns() == at_ns) return;
    timer_.at_ns(at_ns, [this] { handle(model::AdvanceTime{}); });
}

}  // namespace mroce::fabric
