// ns-3's simulator, seen from code that does not include ns-3 (the engine side of the fabric is
// C++20; ns-3 3.37's headers compile only as C++17, so they stay in the files that need them).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

namespace mroce::fabric::sim {

uint64_t now_ns();
inline uint64_t now_us() { return now_ns() / 1000; }
// Calls fn `delay_ns` from now.
void after_ns(uint64_t delay_ns, std::function<void()> fn);
// Runs until stop() or `until_ns`; then reset() clears the simulator (time back to 0) for the next run.
void run(uint64_t until_ns);
void stop();
void reset();
uint64_t events_executed();

// One pending call at a time, movable in time (a host's poll or its engine timer).
class Timer {
public:
    Timer();
    ~Timer();
    Timer(const Timer&) = delete;
    Timer& operator=(const Timer&) = delete;
    void at_ns(uint64_t when_ns, std::function<void()> fn);  // replaces a pending call
    void cancel();
    bool pending() const;
    uint64_t when_ns() const noexcept { return when_ns_; }

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    uint64_t when_ns_ = 0;
};

}  // namespace mroce::fabric::sim
