// The fabric's knobs: topology, links, switch queues, ECN marking, PFC, loss and failures. Plain
// options, one seed (TigerBeetle's simulator style): the same config and seed give the same run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mroce::fabric {

enum class Topology : uint8_t { LeafSpine, FatTree };
const char* topology_name(Topology t) noexcept;

// Switch ECN marking of ECT packets at enqueue, on the egress queue's bytes (packets already waiting):
// below kmin never, from kmax always, in between with a probability rising linearly to pmax (RED-like,
// DCQCN's setting). kmin == kmax is a step threshold K (DCTCP's setting).
struct EcnMarking {
    uint32_t kmin_bytes = 100 * 1024;
    uint32_t kmax_bytes = 100 * 1024;
    double pmax = 1.0;
};

// A link, or every link of a plane, goes dark at a given time (frames sent on it are lost; routes do
// not change, as with a silent blackhole that ECMP keeps using), and may come back later.
struct Failure {
    double at_us = 0;
    double until_us = -1;  // the link or plane comes back at this time (-1: never)
    int plane = -1;        // every link of this plane, or
    int link = -1;         // one link by its index in Fabric::links() (host links first)
};

struct FabricConfig {
    Topology topology = Topology::FatTree;
    uint32_t hosts = 16;
    uint32_t planes = 1;             // each host has one NIC port per plane; planes share nothing
    uint32_t hosts_per_leaf = 16;    // leaf-spine: hosts under one leaf (spines = this, full bisection)
    double rate_gbps = 100;          // every link
    double link_delay_us = 1.0;      // every link, one way
    uint32_t queue_bytes = 1 << 20;  // per egress port, tail drop beyond
    EcnMarking ecn;
    double loss = 0;  // i.i.d. probability that a link loses a frame, on every link
    // Lossless mode (how RoCEv2 is deployed): a switch pauses the sender upstream of an ingress port
    // whose frames occupy more than xoff bytes of its queues, and resumes it below xon. The pause frame
    // crosses the link like any frame (after the frame being sent).
    bool pfc = false;
    uint32_t pfc_xoff_bytes = 256 * 1024;
    uint32_t pfc_xon_bytes = 128 * 1024;
    std::vector<Failure> failures;
    // Per-plane time series (FabricStats::plane_rx_bytes / plane_tx_bytes) in windows of this length;
    // 0: none.
    double plane_window_us = 0;
    uint64_t seed = 1;
};

}  // namespace mroce::fabric
