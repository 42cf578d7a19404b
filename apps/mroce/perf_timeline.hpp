// `mroce perf --timeline FILE`: the sending side of every path of one connection over time, as CSV
// (one header line, then one row per path per sample), for bench/dpdk/timeline_plot.sh.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "mroce/mroce.hpp"

namespace mroce::cli {

class Timeline {
public:
    // Opens (truncates) `path`; throws std::runtime_error naming it when it cannot be written.
    Timeline(const std::string& path, uint64_t interval_us);
    ~Timeline();
    Timeline(const Timeline&) = delete;
    Timeline& operator=(const Timeline&) = delete;

    // Times in the CSV count from here (the start of the transfer).
    void start(uint64_t now_us);
    // One comparison: the poll loop calls sample() only when the interval has passed, so sampling
    // costs the run a few path_info() copies and a buffered write per interval.
    bool due(uint64_t now_us) const { return now_us >= next_us_; }
    // A row per path of `conn` on `d`. `tx_queue_depth`: frames waiting in the sender's port queues
    // (the ring between the ends), when the port can tell; the column stays empty otherwise.
    void sample(uint64_t now_us, const Device& d, uint32_t conn, std::optional<uint64_t> tx_queue_depth);
    // Flushes; throws std::runtime_error when the file could not be written completely.
    void finish();
    uint64_t rows() const { return rows_; }
    const std::string& path() const { return path_; }

private:
    std::string path_;
    std::FILE* f_ = nullptr;
    uint64_t interval_us_, start_us_ = 0, next_us_ = 0, rows_ = 0;
};

}  // namespace mroce::cli
