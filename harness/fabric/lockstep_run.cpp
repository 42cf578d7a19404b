// run_lockstep (fabric/endpoints.hpp): every host's endpoint is a lockstep pair of model and engine.
#include <memory>

#include "fabric/endpoints.hpp"
#include "lockstep/differential.hpp"

namespace mroce::fabric {

namespace {

// Notes which host first diverged (the session keeps one divergence for the whole run).
class HostTag final : public harness::WrappingEndpoint {
public:
    HostTag(std::unique_ptr<harness::SimEndpoint> inner, const lockstep::LockstepSession& session, uint32_t host,
            int64_t& first_host)
        : WrappingEndpoint(std::move(inner)), session_(session), host_(host), first_host_(first_host) {}
    std::vector<model::Action> handle(model::Time now, const model::Event& e) override {
        auto actions = in_->handle(now, e);
        if (first_host_ < 0 && session_.divergence()) first_host_ = host_;
        return actions;
    }

private:
    const lockstep::LockstepSession& session_;
    uint32_t host_;
    int64_t& first_host_;
};

}  // namespace

RunResult run_lockstep(const FabricConfig& fabric, const MroceHostOptions& host, const std::vector<FlowSpec>& flows,
                       const RunOptions& options) {
    lockstep::LockstepSession session;
    int64_t first_host = -1;
    RunResult r = run_endpoints(
        fabric, host, flows, options,
        [&](const model::Config& c, uint32_t h) {
            return std::make_unique<HostTag>(session.endpoint(c, 'H'), session, h, first_host);
        },
        "mroce-lockstep");
    // The endpoints are gone by now: their final memory comparison is in the session too.
    if (const auto& d = session.divergence())
        r.divergence = (first_host >= 0 ? "host " + std::to_string(first_host) + ": " : std::string()) + d->text();
    r.lockstep_steps = session.stats().steps;
    return r;
}

}  // namespace mroce::fabric
