#include "fabric/collective.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace mroce::fabric {

const char* collective_name(CollectiveAlgo a) noexcept {
    switch (a) {
        case CollectiveAlgo::RingAllReduce:
            return "allreduce-ring";
        case CollectiveAlgo::HalvingDoublingAllReduce:
            return "allreduce-hd";
        case CollectiveAlgo::AllToAll:
            return "alltoall";
    }
    return "?";
}

bool collective_from_name(const std::string& name, CollectiveAlgo* out) noexcept {
    for (CollectiveAlgo a :
         {CollectiveAlgo::RingAllReduce, CollectiveAlgo::HalvingDoublingAllReduce, CollectiveAlgo::AllToAll})
        if (name == collective_name(a)) return *out = a, true;
    return false;
}

Collective::Collective(CollectiveAlgo algo, uint32_t hosts, uint64_t bytes, uint32_t channels, uint64_t seed,
                       uint32_t iterations)
    : algo_(algo),
      hosts_(hosts),
      channels_(std::max(1u, channels)),
      iterations_(std::max(1u, iterations)),
      bytes_(bytes),
      seed_(seed) {
    if (hosts < 2) throw std::invalid_argument("collective: at least 2 hosts");
    double largest = 60;  // the largest sum an all-reduce's last iteration produces
    for (uint32_t i = 0; i < iterations_; ++i) largest *= hosts;
    if (algo != CollectiveAlgo::AllToAll && largest >= double(1 << 24))
        throw std::invalid_argument("collective: too many hosts or iterations for exact float sums");
    if (algo == CollectiveAlgo::HalvingDoublingAllReduce && (hosts & (hosts - 1)) != 0)
        throw std::invalid_argument("collective: halving-doubling needs a power-of-two host count");
    const uint64_t unit = 4ull * hosts * (algo == CollectiveAlgo::AllToAll ? 1 : channels_);
    if (bytes == 0 || bytes % unit != 0)
        throw std::invalid_argument("collective: the size must be a positive multiple of " + std::to_string(unit) +
                                    " B (4 x hosts x channels)");
    switch (algo) {
        case CollectiveAlgo::RingAllReduce:
            plan_ring();
            break;
        case CollectiveAlgo::HalvingDoublingAllReduce:
            plan_halving_doubling();
            break;
        case CollectiveAlgo::AllToAll:
            plan_all_to_all();
            break;
    }
    arrived_.assign(flows_.size(), false);
    data_.resize(hosts);
    scratch_.resize(hosts);
    for (uint32_t h = 0; h < hosts; ++h) {
        data_[h].reset(new uint8_t[bytes]);
        scratch_[h].reset(new uint8_t[scratch_bytes()]);
        std::memset(scratch_[h].get(), 0, scratch_bytes());
        float* d = reinterpret_cast<float*>(data_[h].get());
        for (uint64_t e = 0; e < bytes / 4; ++e) d[e] = input(h, e);
    }
}

// Small integers (0..60): sums stay below 2^24 (checked in the constructor), exact in float in any order.
float Collective::input(uint32_t host, uint64_t element) const {
    return float((element * 7 + uint64_t(host) * 13 + seed_ * 17) % 61);
}

uint64_t Collective::scratch_bytes(CollectiveAlgo algo, uint32_t hosts, uint64_t bytes) {
    switch (algo) {
        case CollectiveAlgo::RingAllReduce:
            return bytes / hosts;  // a chunk per channel
        case CollectiveAlgo::HalvingDoublingAllReduce:
            return bytes / 2;  // the first step's half per channel
        case CollectiveAlgo::AllToAll:
            return bytes;  // the receive buffer
    }
    return bytes;
}

double Collective::bus_factor() const noexcept {
    const double n = hosts_;
    return algo_ == CollectiveAlgo::AllToAll ? (n - 1) / n : 2 * (n - 1) / n;
}

// A step waits for the previous step of both its hosts, sent and received (-1: none): the sender's,
// whose data it forwards, and the receiver's, which must be done with the buffer the step writes (in
// RDMA the receiver grants the buffer when it gets there; NCCL's credits, MPI_Sendrecv's pairing).
uint64_t Collective::step_count(CollectiveAlgo algo, uint32_t hosts, uint32_t channels, uint32_t iterations) {
    uint64_t levels = 0;
    while ((1ull << levels) < hosts) ++levels;
    const uint64_t per_iteration = algo == CollectiveAlgo::RingAllReduce ? 2ull * (hosts - 1) * hosts * channels
                                   : algo == CollectiveAlgo::HalvingDoublingAllReduce ? 2ull * levels * hosts * channels
                                                                                      : uint64_t(hosts) * (hosts - 1);
    return per_iteration * std::max(1u, iterations);
}

std::vector<uint32_t> Collective::step_deps(std::initializer_list<int64_t> previous) {
    std::vector<uint32_t> after;
    for (int64_t f : previous)
        if (f >= 0 && std::find(after.begin(), after.end(), uint32_t(f)) == after.end()) after.push_back(uint32_t(f));
    return after;
}

uint32_t Collective::add(uint32_t src, uint32_t dst, uint64_t bytes, uint32_t channel, std::vector<uint32_t> after,
                         Move m) {
    FlowSpec s;
    s.src = src;
    s.dst = dst;
    s.bytes = bytes;
    s.after = std::move(after);
    s.after_all_before = barrier_;
    s.channel = int32_t(channel);
    flows_.push_back(std::move(s));
    moves_.push_back(m);
    return uint32_t(flows_.size() - 1);
}

// Channel c owns bytes [c B, (c + 1) B), cut into N chunks of K. Reduce-scatter step k: host i sends
// chunk i - k (what it reduced at step k - 1) to i + 1, which adds it into its own; after N - 1 steps
// host i holds chunk i + 1 reduced. All-gather step k: host i sends chunk i + 1 - k, which i + 1
// stores. sent[i] / got[i]: host i's last send and receive of the channel.
void Collective::plan_ring() {
    const uint32_t n = hosts_;
    const uint64_t part = bytes_ / channels_, chunk = part / n;
    std::vector<std::vector<int64_t>> sent(channels_, std::vector<int64_t>(n, -1)), got = sent;
    for (uint32_t iter = 0; iter < iterations_; ++iter) {
        if (iter) first_timed_ = uint32_t(flows_.size());
        barrier_ = iter && iter + 1 == iterations_ ? first_timed_ : 0;  // the timed iteration waits for all
        for (int phase = 0; phase < 2; ++phase)
            for (uint32_t k = 0; k + 1 < n; ++k) {
                std::vector<std::vector<int64_t>> sent_now = sent, got_now = got;
                for (uint32_t c = 0; c < channels_; ++c)
                    for (uint32_t i = 0; i < n; ++i) {
                        const uint32_t to = (i + 1) % n;
                        const uint32_t j = phase == 0 ? (i + n - k % n) % n : (i + 1 + n - k % n) % n;
                        const uint64_t at = c * part + j * chunk;
                        const std::vector<uint32_t> after = step_deps({got[c][i], sent[c][i], got[c][to], sent[c][to]});
                        // A reduce-scatter step lands in the receiver's scratch slot of the channel: the
                        // receiver's previous step is done (step_deps), so the slot is free.
                        Move m{.src_offset = at,
                               .sink_offset = phase == 0 ? c * chunk : at,
                               .into_scratch = phase == 0,
                               .reduce = phase == 0,
                               .data_offset = at};
                        const uint32_t f = add(i, to, chunk, c, std::move(after), m);
                        sent_now[c][i] = f;
                        got_now[c][to] = f;
                    }
                sent = std::move(sent_now);
                got = std::move(got_now);
            }
    }
}

// Recursive halving (reduce-scatter): at step k host i and its partner i ^ (N >> (k + 1)) split the
// range they share; each sends the half the other keeps, which lands in the receiver's scratch (a
// region of its own per step) and is added into its data. Recursive doubling (all-gather) runs the
// same pairs in reverse: each sends the range it holds, which the partner stores.
void Collective::plan_halving_doubling() {
    const uint32_t n = hosts_;
    uint32_t levels = 0;
    while ((1u << levels) < n) ++levels;
    const uint64_t part = bytes_ / channels_;
    std::vector<std::vector<int64_t>> sent_by(channels_, std::vector<int64_t>(n, -1)), got_by = sent_by;
    for (uint32_t iter = 0; iter < iterations_; ++iter) {
        if (iter) first_timed_ = uint32_t(flows_.size());
        barrier_ = iter && iter + 1 == iterations_ ? first_timed_ : 0;  // the timed iteration waits for all
        for (uint32_t c = 0; c < channels_; ++c) {
            std::vector<uint64_t> lo(n, 0), len(n, part);  // each host's range within the channel
            std::vector<int64_t>& sent = sent_by[c];
            std::vector<int64_t>& got = got_by[c];
            auto deps = [&](uint32_t i, uint32_t p) { return step_deps({got[i], sent[i], got[p], sent[p]}); };
            for (uint32_t k = 0; k < levels; ++k) {
                const uint32_t d = n >> (k + 1);
                const uint64_t half = len[0] / 2;
                std::vector<int64_t> sent_now = sent, got_now = got;
                std::vector<uint64_t> lo_now = lo;
                for (uint32_t i = 0; i < n; ++i) {
                    const uint32_t p = i ^ d;
                    const bool keep_low = (i & d) == 0;
                    const uint64_t give = keep_low ? lo[i] + half : lo[i];  // the half p keeps
                    Move m{.src_offset = c * part + give,
                           .sink_offset = c * (part / 2),  // the channel's slot, free (step_deps)
                           .into_scratch = true,
                           .reduce = true,
                           .data_offset = c * part + give};
                    const uint32_t f = add(i, p, half, c, deps(i, p), m);
                    sent_now[i] = f;
                    got_now[p] = f;
                    lo_now[i] = keep_low ? lo[i] : lo[i] + half;
                }
                sent = std::move(sent_now);
                got = std::move(got_now);
                lo = std::move(lo_now);
                std::fill(len.begin(), len.end(), half);
            }
            for (uint32_t k = 0; k < levels; ++k) {
                const uint32_t d = 1u << k;
                std::vector<int64_t> sent_now = sent, got_now = got;
                std::vector<uint64_t> lo_now = lo;
                for (uint32_t i = 0; i < n; ++i) {
                    const uint32_t p = i ^ d;
                    Move m{.src_offset = c * part + lo[i],
                           .sink_offset = c * part + lo[i],
                           .into_scratch = false,
                           .reduce = false,
                           .data_offset = 0};
                    const uint32_t f = add(i, p, len[i], c, deps(i, p), m);
                    sent_now[i] = f;
                    got_now[p] = f;
                    lo_now[i] = std::min(lo[i], lo[p]);
                }
                sent = std::move(sent_now);
                got = std::move(got_now);
                lo = std::move(lo_now);
                for (uint64_t& l : len) l *= 2;
            }
        }
    }
}

// Host h's block for d is data[h][d b, (d + 1) b); it lands in scratch[d][h b, (h + 1) b). The blocks'
// channels spread every host's peers over the planes (for RoCE, one QP each).
void Collective::plan_all_to_all() {
    const uint32_t n = hosts_;
    const uint64_t block = bytes_ / n;
    std::vector<std::vector<uint32_t>> before(n);  // [h]: the previous iteration's flows from and into h
    for (uint32_t iter = 0; iter < iterations_; ++iter) {
        if (iter) first_timed_ = uint32_t(flows_.size());
        barrier_ = iter && iter + 1 == iterations_ ? first_timed_ : 0;  // the timed iteration waits for all
        std::vector<std::vector<uint32_t>> now(n);
        for (uint32_t h = 0; h < n; ++h)
            for (uint32_t step = 1; step < n; ++step) {
                const uint32_t d = (h + step) % n;
                const uint32_t f =
                    add(h, d, block, step - 1, before[h],
                        Move{.src_offset = d * block, .sink_offset = h * block, .into_scratch = true, .reduce = false});
                now[h].push_back(f);
                now[d].push_back(f);
            }
        before = std::move(now);
    }
}

std::vector<std::pair<uint8_t*, uint64_t>> Collective::host_memory(uint32_t host) {
    return {{data_[host].get(), bytes_}, {scratch_[host].get(), scratch_bytes()}};
}

const uint8_t* Collective::source(size_t f) { return data_[flows_[f].src].get() + moves_[f].src_offset; }

uint8_t* Collective::sink(size_t f) {
    const Move& m = moves_[f];
    return (m.into_scratch ? scratch_ : data_)[flows_[f].dst].get() + m.sink_offset;
}

void Collective::delivered(size_t f) {
    arrived_[f] = true;
    const Move& m = moves_[f];
    if (!m.reduce) return;
    const uint32_t dst = flows_[f].dst;
    float* into = reinterpret_cast<float*>(data_[dst].get() + m.data_offset);
    const float* from = reinterpret_cast<const float*>(scratch_[dst].get() + m.sink_offset);
    for (uint64_t e = 0; e < flows_[f].bytes / 4; ++e) into[e] += from[e];
}

uint32_t Collective::check() {
    if (checked_) return wrong_hosts_;
    checked_ = true;
    host_ok_.assign(hosts_, true);
    flow_ok_.assign(flows_.size(), true);
    for (size_t f = 0; f < flows_.size(); ++f)
        if (!arrived_[f]) host_ok_[flows_[f].dst] = false, flow_ok_[f] = false;
    if (algo_ == CollectiveAlgo::AllToAll) {
        for (size_t f = 0; f < flows_.size(); ++f) {
            if (!flow_ok_[f]) continue;
            const FlowSpec& s = flows_[f];
            flow_ok_[f] = std::memcmp(sink(f), source(f), s.bytes) == 0;
            if (!flow_ok_[f]) host_ok_[s.dst] = false;
        }
    } else {
        // Each iteration sums what the previous one left on every host: N^(iterations - 1) x the sum.
        std::vector<float> expected(bytes_ / 4, 0.0f);
        for (uint32_t h = 0; h < hosts_; ++h)
            for (uint64_t e = 0; e < expected.size(); ++e) expected[e] += input(h, e);
        for (uint32_t i = 1; i < iterations_; ++i)
            for (float& x : expected) x *= float(hosts_);
        for (uint32_t h = 0; h < hosts_; ++h)
            if (host_ok_[h] && std::memcmp(data_[h].get(), expected.data(), bytes_) != 0) host_ok_[h] = false;
        for (size_t f = 0; f < flows_.size(); ++f) flow_ok_[f] = flow_ok_[f] && host_ok_[flows_[f].dst];
    }
    wrong_hosts_ = uint32_t(std::count(host_ok_.begin(), host_ok_.end(), false));
    return wrong_hosts_;
}

bool Collective::verified(size_t f) { return check(), flow_ok_[f]; }

}  // namespace mroce::fabric
