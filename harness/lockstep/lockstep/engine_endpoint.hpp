// The engine as a harness endpoint (harness/netsim/sim_endpoint.hpp): the harness speaks the model's
// events and actions; this adapter turns each event into the matching Device call at the event's
// virtual time and reports what the device did, in the order it did it (frames, completions and
// connection events interleaved as produced), so that harness traces of the model and of the engine
// can be compared line by line.
//
// The engine's harness adapter (the engine's own harness tests use it too), plus
// a test-only CANARY option: a deliberately planted bug applied to the engine's output, used to show
// that the differential tester catches and shrinks a real engine fault.
#pragma once

#include <memory>
#include <vector>

#include "io/capture_io.hpp"
#include "mroce/mroce.hpp"
#include "netsim/sim_endpoint.hpp"

namespace mroce::lockstep {

DeviceConfig engine_config_from(const model::Config& m);
// The model's address as the engine's.
Address engine_address(const model::Address& a);

// Planted bugs (the engine itself is not touched).
enum class Canary : uint8_t {
    None,
    DropFirstRetx,  // the engine's first RETX data frame never reaches the network
};

class EngineEndpoint final : public harness::SimEndpoint {
public:
    explicit EngineEndpoint(const model::Config& config, Canary canary = Canary::None);

    std::vector<model::Action> handle(model::Time now, const model::Event& event) override;
    std::optional<std::vector<uint8_t>> read_memory(uint64_t va, uint64_t len) const override;
    std::vector<uint32_t> connections() const override;
    std::optional<model::ConnState> connection_state(uint32_t conn) const override;
    std::optional<model::PathView> path_view(uint32_t conn, uint16_t path) const override;
    uint16_t path_count(uint32_t conn) const override;
    std::map<uint32_t, uint32_t> rate_shares() const override;
    uint32_t capacity_mbps() const override;
    size_t outstanding_work(uint32_t conn) const override;
    std::optional<model::Time> next_deadline() const override;

    Device& device() { return *dev_; }

private:
    // Allocates the engine's protection domains up to `pd` (the model's PDs are plain numbers; the
    // engine gives 1, 2, ... in order) [R-MEM-5].
    void ensure_pd(uint32_t pd);

    model::Config cfg_;
    uint32_t pds_ = 0;  // the highest PD allocated
    io::ManualClock clock_;
    io::CaptureIo io_;
    std::unique_ptr<Device> dev_;
    std::vector<std::unique_ptr<uint8_t[]>> buffers_;
    Canary canary_ = Canary::None;
    bool canary_fired_ = false;
};

harness::EndpointFactory engine_factory(Canary canary = Canary::None);

}  // namespace mroce::lockstep
