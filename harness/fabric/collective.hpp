// Collectives over the fabric (`mroce fabric collective`): the steps of NCCL-style algorithms as flows
// that wait for the data they forward (FlowSpec::after), on real buffers. Every host holds `bytes`
// of floats and a scratch buffer; a reduce-scatter step lands in scratch and is added into the
// host's data when it is done, an all-gather step lands in the data itself, and after the run
// every host's result is compared with the expected one. The inputs are small integers, so float sums
// are exact in any order (below 2^24) and the expected result does not depend on the algorithm.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "fabric/workload.hpp"

namespace mroce::fabric {

enum class CollectiveAlgo : uint8_t {
    RingAllReduce,             // reduce-scatter then all-gather around a ring: 2 (N - 1) steps
    HalvingDoublingAllReduce,  // recursive halving, then recursive doubling: 2 log2 N steps (N a power of 2)
    AllToAll,                  // every host sends bytes / N to every other host, all at once
};
const char* collective_name(CollectiveAlgo a) noexcept;
bool collective_from_name(const std::string& name, CollectiveAlgo* out) noexcept;

class Collective final : public FlowData {
public:
    // `channels` splits the buffer into that many independent parts, each run by its own chain of
    // steps (NCCL's channels; FlowSpec::channel). bytes must be a multiple of 4 x hosts x channels.
    // A step starts when the previous step of both its hosts is done, sent and received (MPI_Sendrecv's
    // rule; NCCL's credits), so no buffer is written while a send still reads it.
    // `iterations` runs the collective that many times back to back (each host's next iteration
    // starts when its previous one is done there); like nccl-tests, the scenario times the last, so the
    // first ones warm the connections up, and the last starts after a barrier: when every host is done.
    Collective(CollectiveAlgo algo, uint32_t hosts, uint64_t bytes, uint32_t channels, uint64_t seed,
               uint32_t iterations = 1);

    const std::vector<FlowSpec>& flows() const noexcept { return flows_; }
    // How many steps (flows) a collective has, without building it.
    static uint64_t step_count(CollectiveAlgo algo, uint32_t hosts, uint32_t channels, uint32_t iterations);
    // The first flow of the last iteration (flows are in iteration order).
    uint32_t first_timed_flow() const noexcept { return first_timed_; }
    CollectiveAlgo algo() const noexcept { return algo_; }
    uint64_t bytes() const noexcept { return bytes_; }
    // nccl-tests' bus bandwidth factor: busbw = algbw x this (2 (N - 1) / N for all-reduce, (N - 1) / N
    // for all-to-all), so that busbw is comparable with a link's rate whatever N.
    double bus_factor() const noexcept;
    // Memory the collective holds: every host's data and scratch (a reduce-scatter step's slot per
    // channel, or all-to-all's receive buffer).
    static uint64_t scratch_bytes(CollectiveAlgo algo, uint32_t hosts, uint64_t bytes);
    static uint64_t memory_bytes(CollectiveAlgo algo, uint32_t hosts, uint64_t bytes) {
        return uint64_t(hosts) * (bytes + scratch_bytes(algo, hosts, bytes));
    }

    // After the run: compares every host's result with the expected one (once; a host whose steps did
    // not all arrive is wrong) and returns how many hosts are wrong.
    uint32_t check();
    bool host_ok(uint32_t h) { return check(), host_ok_[h]; }

    // FlowData
    std::vector<std::pair<uint8_t*, uint64_t>> host_memory(uint32_t host) override;
    const uint8_t* source(size_t f) override;
    uint8_t* sink(size_t f) override;
    void delivered(size_t f) override;
    bool verified(size_t f) override;

private:
    // Where flow f's bytes come from (src's data) and go (dst's scratch, or its data), and whether
    // they are added into dst's data at `data_offset` when done.
    struct Move {
        uint64_t src_offset = 0;   // in the sender's data
        uint64_t sink_offset = 0;  // in the receiver's scratch (reduce, all-to-all) or data (gather)
        bool into_scratch = false;
        bool reduce = false;
        uint64_t data_offset = 0;  // reduce: where in the receiver's data
    };
    uint32_t add(uint32_t src, uint32_t dst, uint64_t bytes, uint32_t channel, std::vector<uint32_t> after, Move m);
    static std::vector<uint32_t> step_deps(std::initializer_list<int64_t> previous);
    void plan_ring();
    void plan_halving_doubling();
    void plan_all_to_all();
    float input(uint32_t host, uint64_t element) const;
    uint64_t scratch_bytes() const { return scratch_bytes(algo_, hosts_, bytes_); }

    CollectiveAlgo algo_;
    uint32_t hosts_, channels_, iterations_;
    uint32_t first_timed_ = 0;
    // The timed (last) iteration's steps also wait for every warm-up step on every host, as nccl-tests
    // times after a barrier; otherwise a host done early starts the timed iteration while another
    // still finishes its warm-up, and that tail counts as the timed iteration's time.
    uint32_t barrier_ = 0;
    uint64_t bytes_, seed_;
    std::vector<FlowSpec> flows_;
    std::vector<Move> moves_;
    std::vector<std::unique_ptr<uint8_t[]>> data_, scratch_;
    std::vector<bool> arrived_;  // [f]: delivered
    std::vector<bool> flow_ok_, host_ok_;
    uint32_t wrong_hosts_ = 0;
    bool checked_ = false;
};

}  // namespace mroce::fabric
