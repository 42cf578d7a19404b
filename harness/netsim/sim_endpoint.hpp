// The interface the harness drives: one transport endpoint as a deterministic state machine.
//
// The model's own types (mroce::model::Event, Action, Time, PathView, ...) are the lingua franca,
// so that the executable model, the fast engine and anything else can be run through the same
// network, workloads and checks. `ModelEndpoint` adapts mroce::model::Endpoint; the engine adapter
// lives with the engine.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/endpoint.hpp"
#include "model/types.hpp"

namespace mroce::harness {

class SimEndpoint {
public:
    virtual ~SimEndpoint() = default;

    // Feed one event at virtual time `now` (never decreasing); returns what the endpoint does.
    virtual std::vector<model::Action> handle(model::Time now, const model::Event& event) = 0;

    // ---- observation, used by the checks ----
    // Bytes of registered local memory; nullopt if [va, va+len) is not inside one region.
    virtual std::optional<std::vector<uint8_t>> read_memory(uint64_t va, uint64_t len) const = 0;
    // Local connection IDs known to the endpoint (any state).
    virtual std::vector<uint32_t> connections() const = 0;
    virtual std::optional<model::ConnState> connection_state(uint32_t conn) const = 0;
    // The sending side of one path ([R-REL-1], [R-CC-1]); nullopt if unknown.
    virtual std::optional<model::PathView> path_view(uint32_t conn, uint16_t path) const = 0;
    virtual uint16_t path_count(uint32_t conn) const = 0;  // negotiated, 0 if unknown
    // Current fair-share grants of this endpoint as a receiver, by local connection ID [R-FS-4].
    virtual std::map<uint32_t, uint32_t> rate_shares() const = 0;
    virtual uint32_t capacity_mbps() const = 0;  // [R-FS-1] C
    // Posted but not yet completed work requests and receives of `conn`.
    virtual size_t outstanding_work(uint32_t conn) const = 0;
    // The earliest pending timer, if any (the harness also honours Wakeup actions).
    virtual std::optional<model::Time> next_deadline() const = 0;
};

// An endpoint that wraps another (a tap, an observer): every observation is the inner endpoint's;
// a subclass overrides handle() and calls in_->handle() itself.
class WrappingEndpoint : public SimEndpoint {
public:
    explicit WrappingEndpoint(std::unique_ptr<SimEndpoint> inner) : in_(std::move(inner)) {}
    std::vector<model::Action> handle(model::Time now, const model::Event& e) override { return in_->handle(now, e); }
    std::optional<std::vector<uint8_t>> read_memory(uint64_t va, uint64_t len) const override {
        return in_->read_memory(va, len);
    }
    std::vector<uint32_t> connections() const override { return in_->connections(); }
    std::optional<model::ConnState> connection_state(uint32_t c) const override { return in_->connection_state(c); }
    std::optional<model::PathView> path_view(uint32_t c, uint16_t p) const override { return in_->path_view(c, p); }
    uint16_t path_count(uint32_t c) const override { return in_->path_count(c); }
    std::map<uint32_t, uint32_t> rate_shares() const override { return in_->rate_shares(); }
    uint32_t capacity_mbps() const override { return in_->capacity_mbps(); }
    size_t outstanding_work(uint32_t c) const override { return in_->outstanding_work(c); }
    std::optional<model::Time> next_deadline() const override { return in_->next_deadline(); }

protected:
    std::unique_ptr<SimEndpoint> in_;
};

// Builds an endpoint from a model configuration (the engine adapter translates it to its own).
using EndpointFactory = std::function<std::unique_ptr<SimEndpoint>(const model::Config&)>;

// Adapter for the executable model.
class ModelEndpoint final : public SimEndpoint {
public:
    explicit ModelEndpoint(model::Config config);

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

    model::Endpoint& model() { return ep_; }
    const model::Endpoint& model() const { return ep_; }

private:
    model::Endpoint ep_;
};

// The factory for the executable model.
EndpointFactory model_factory();

}  // namespace mroce::harness
