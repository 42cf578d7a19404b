#include "netsim/sim_endpoint.hpp"

namespace mroce::harness {

ModelEndpoint::ModelEndpoint(model::Config config) : ep_(std::move(config)) {}

std::vector<model::Action> ModelEndpoint::handle(model::Time now, const model::Event& event) {
    return ep_.handle(now, event);
}
std::optional<std::vector<uint8_t>> ModelEndpoint::read_memory(uint64_t va, uint64_t len) const {
    return ep_.read_memory(va, len);
}
std::vector<uint32_t> ModelEndpoint::connections() const { return ep_.connections(); }
std::optional<model::ConnState> ModelEndpoint::connection_state(uint32_t conn) const {
    return ep_.connection_state(conn);
}
std::optional<model::PathView> ModelEndpoint::path_view(uint32_t conn, uint16_t path) const {
    return ep_.path_view(conn, path);
}
uint16_t ModelEndpoint::path_count(uint32_t conn) const { return ep_.path_count(conn); }
std::map<uint32_t, uint32_t> ModelEndpoint::rate_shares() const { return ep_.rate_shares(); }
uint32_t ModelEndpoint::capacity_mbps() const { return ep_.config().capacity_mbps; }
size_t ModelEndpoint::outstanding_work(uint32_t conn) const { return ep_.outstanding_work(conn); }
std::optional<model::Time> ModelEndpoint::next_deadline() const { return ep_.next_deadline(); }

EndpointFactory model_factory() {
    return [](const model::Config& c) { return std::make_unique<ModelEndpoint>(c); };
}

}  // namespace mroce::harness
