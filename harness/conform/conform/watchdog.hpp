// A wall-clock budget for each test of a conformance run. The runner's own livelock check counts
// DUT steps, so it cannot see a DUT that never returns from one call (an in-process engine spinning
// inside one progress() call). No thread can be taken back from inside such a call: when a test
// outlives its budget, the watchdog's thread reports it through `on_expire` (which must only read
// what the stuck thread is not writing) and ends the process.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace mroce::conform {

class TestWatchdog {
public:
    // on_expire(label, budget): print what a user needs (which test, how to replay it). The
    // process then exits with `exit_code`. A budget of 0 disables the watchdog.
    TestWatchdog(std::chrono::milliseconds budget,
                 std::function<void(const std::string&, std::chrono::milliseconds)> on_expire, int exit_code);
    ~TestWatchdog();
    TestWatchdog(const TestWatchdog&) = delete;
    TestWatchdog& operator=(const TestWatchdog&) = delete;

    void arm(const std::string& label);  // a test starts: its budget runs from now
    void disarm();                       // it ended in time

private:
    void watch();

    std::chrono::milliseconds budget_;
    std::function<void(const std::string&, std::chrono::milliseconds)> on_expire_;
    int exit_code_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool armed_ = false, stop_ = false;
    std::string label_;
    std::chrono::steady_clock::time_point deadline_;
    std::thread thread_;
};

}  // namespace mroce::conform
