#include "perf_timeline.hpp"

#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <stdexcept>

namespace mroce::cli {

namespace {
constexpr size_t kWriteBuffer = 1 << 20;  // rows reach the disk in large writes, not per sample
}

Timeline::Timeline(const std::string& path, uint64_t interval_us) : path_(path), interval_us_(interval_us) {
    f_ = std::fopen(path.c_str(), "w");
    if (!f_) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
    std::setvbuf(f_, nullptr, _IOFBF, kWriteBuffer);
    std::fputs(
        "time_us,path,state,cwnd,in_flight,srtt_us,rto_us,packets_sent,retx_gap,retx_probe,retx_rto,"
        "retx_rnr,retx_nak,retx_spurious,rate_ceiling_mbps,credit_bits,tx_queue_depth\n",
        f_);
}

Timeline::~Timeline() {
    if (f_) std::fclose(f_);
}

void Timeline::start(uint64_t now_us) {
    start_us_ = now_us;
    next_us_ = now_us;
}

void Timeline::sample(uint64_t now_us, const Device& d, uint32_t conn, std::optional<uint64_t> tx_queue_depth) {
    next_us_ = now_us + interval_us_;
    const uint64_t t = now_us - start_us_;
    for (uint16_t p = 0; p < d.path_count(conn); ++p) {
        const auto pi = d.path_info(conn, p);
        if (!pi) continue;
        const RetransmissionCauses& k = pi->retx_by_cause;
        std::fprintf(f_,
                     "%" PRIu64 ",%u,%s,%u,%u,%u,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
                     ",%" PRIu64 ",%" PRIu64 ",%u,%" PRId64 ",",
                     t, unsigned(p), path_state_name(pi->state), pi->cwnd, pi->in_flight, pi->srtt, pi->rto,
                     pi->packets_sent, k.gap, k.probe, k.rto, k.rnr, k.nak, k.spurious, pi->rate_ceiling_mbps,
                     pi->credit_bits);
        if (tx_queue_depth) std::fprintf(f_, "%" PRIu64, *tx_queue_depth);
        std::fputc('\n', f_);
        ++rows_;
    }
}

void Timeline::finish() {
    if (!f_) return;
    const bool failed = std::ferror(f_) != 0;
    const int closed = std::fclose(f_);
    f_ = nullptr;
    if (failed || closed != 0) throw std::runtime_error("could not write all of " + path_);
}

}  // namespace mroce::cli
