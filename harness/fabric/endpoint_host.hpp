// A harness endpoint (harness/netsim/sim_endpoint.hpp: the executable model, or the engine through its
// lockstep adapter) in a simulated host. The host feeds it the model's events at simulated
// microseconds (each frame as it arrives, each timer at its deadline) and carries out its actions:
// frames go to the NIC port of the plane their route hashes to (impair::ecmp_link, as MroceHost and
// the DPDK ports do), everything else goes to the run's callback.
//
// The model and the engine speak the same events and actions here, so both run in the fabric, alone
// or in lockstep (fabric/endpoints.hpp): the model as a cross-check of the engine on small runs of
// real fabric conditions (queues, CE marks, drops, reordering across paths).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "fabric/fabric.hpp"
#include "fabric/sim.hpp"
#include "netsim/sim_endpoint.hpp"

namespace mroce::fabric {

model::Address model_address(uint32_t host);

class EndpointHost {
public:
    EndpointHost(Fabric& fabric, uint32_t host, std::unique_ptr<harness::SimEndpoint> endpoint);
    ~EndpointHost();
    EndpointHost(const EndpointHost&) = delete;
    EndpointHost& operator=(const EndpointHost&) = delete;

    // Feeds one event at the current simulated microsecond; frames go out, other actions are returned
    // and also passed to on_action.
    std::vector<model::Action> handle(const model::Event& event);

    harness::SimEndpoint& endpoint() { return *endpoint_; }
    uint32_t host() const noexcept { return host_; }

    std::function<void(EndpointHost&, const model::Action&)> on_action;
    // Every frame that reaches this host, before the endpoint sees it: (source host, frame bytes).
    std::function<void(uint32_t, uint32_t)> rx_tap;

private:
    void receive(const SimFrame& frame);
    void arm_timer();

    Fabric& fabric_;
    uint32_t host_;
    std::unique_ptr<harness::SimEndpoint> endpoint_;
    sim::Timer timer_;
};

}  // namespace mroce::fabric
