// Compiled as C++17 with ns-3's headers (see sim.hpp).
#include "fabric/sim.hpp"

#include <ns3/core-module.h>

namespace mroce::fabric::sim {

uint64_t now_ns() { return uint64_t(ns3::Simulator::Now().GetNanoSeconds()); }

void after_ns(uint64_t delay_ns, std::function<void()> fn) {
    ns3::Simulator::Schedule(ns3::NanoSeconds(int64_t(delay_ns)), std::move(fn));
}

void run(uint64_t until_ns) {
    ns3::Simulator::Stop(ns3::NanoSeconds(int64_t(until_ns - now_ns())));
    ns3::Simulator::Run();
}

void stop() { ns3::Simulator::Stop(); }
void reset() { ns3::Simulator::Destroy(); }
uint64_t events_executed() { return ns3::Simulator::GetEventCount(); }

struct Timer::Impl {
    ns3::EventId event;
};

Timer::Timer() : impl_(std::make_unique<Impl>()) {}
Timer::~Timer() { cancel(); }

void Timer::at_ns(uint64_t when_ns, std::function<void()> fn) {
    ns3::Simulator::Cancel(impl_->event);
    when_ns_ = when_ns;
    const uint64_t now = now_ns();
    impl_->event =
        ns3::Simulator::Schedule(ns3::NanoSeconds(int64_t(when_ns > now ? when_ns - now : 0)), std::move(fn));
}

void Timer::cancel() {
    if (impl_->event.IsRunning()) ns3::Simulator::Cancel(impl_->event);
}

bool Timer::pending() const { return impl_->event.IsRunning(); }

}  // namespace mroce::fabric::sim
