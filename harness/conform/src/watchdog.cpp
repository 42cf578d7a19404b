#include "conform/watchdog.hpp"

#include <cstdio>
#include <unistd.h>

namespace mroce::conform {

TestWatchdog::TestWatchdog(std::chrono::milliseconds budget,
                           std::function<void(const std::string&, std::chrono::milliseconds)> on_expire, int exit_code)
    : budget_(budget), on_expire_(std::move(on_expire)), exit_code_(exit_code) {
    if (budget_.count() > 0) thread_ = std::thread([this] { watch(); });
}

TestWatchdog::~TestWatchdog() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void TestWatchdog::arm(const std::string& label) {
    if (budget_.count() <= 0) return;
    {
        std::lock_guard<std::mutex> lk(mu_);
        armed_ = true;
        label_ = label;
        deadline_ = std::chrono::steady_clock::now() + budget_;
    }
    cv_.notify_all();
}

void TestWatchdog::disarm() {
    if (budget_.count() <= 0) return;
    std::lock_guard<std::mutex> lk(mu_);
    armed_ = false;
}

void TestWatchdog::watch() {
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
        if (stop_) return;
        if (!armed_) {
            cv_.wait(lk);
            continue;
        }
        const auto deadline = deadline_;
        if (cv_.wait_until(lk, deadline) == std::cv_status::timeout && armed_ && !stop_ && deadline_ == deadline) {
            const std::string label = label_;
            lk.unlock();
            on_expire_(label, budget_);
            std::fflush(stdout);
            std::fflush(stderr);
            // The stuck thread holds the DUT: no destructor may run, so no exit().
            _exit(exit_code_);
        }
    }
}

}  // namespace mroce::conform
