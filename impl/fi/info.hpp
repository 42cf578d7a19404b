// fi_getinfo for mroce (DESIGN.md 7): the MSG and RDM templates per domain, checked against the
// application's hints. Anything the hints ask that mroce cannot give is refused with -FI_ENODATA
// (DESIGN.md 6.3 M0), never accepted and then broken later.
#pragma once

#include <rdma/fabric.h>

#include <cstdint>

namespace mroce::fi {

// libfabric's internal OFI_CORE_PROV_ONLY flag: set when a utility provider (ofi_rxm, ofi_rxd)
// queries core providers to layer over them (DESIGN.md 1.5). Internal ABI, checked by value.
inline constexpr uint64_t kCoreProviderOnly = 1ULL << 59;

// Capabilities the endpoints are specified with (DESIGN.md 7).
inline constexpr uint64_t kPrimaryCaps = FI_MSG | FI_TAGGED | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ |
                                         FI_REMOTE_WRITE | FI_SEND | FI_RECV | FI_DIRECTED_RECV;
inline constexpr uint64_t kSecondaryCaps = FI_SOURCE | FI_LOCAL_COMM | FI_REMOTE_COMM;
inline constexpr uint64_t kAllCaps = kPrimaryCaps | kSecondaryCaps;

inline constexpr uint64_t kRmaCaps = FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;

// What an FI_EP_MSG endpoint does in this build (DESIGN.md 6.3 M2, M3): messages, each at most
// kMsgMaxSize bytes (one bounce slot; no rendezvous), and RMA. MSG entries offer no more than this.
inline constexpr uint64_t kMsgEpCaps = FI_MSG | FI_SEND | FI_RECV | kRmaCaps | kSecondaryCaps;
inline constexpr size_t kMsgMaxSize = 65536;

// Fixed attributes of every entry.
inline constexpr size_t kInjectSize = 256;
inline constexpr size_t kQueueSize = 1024;
inline constexpr size_t kMaxMsgSize = size_t{1} << 31;  // [R-HDR-12]
inline constexpr uint64_t kMemTagFormat = 0xAAAAAAAAAAAAAAAAULL;
inline constexpr size_t kMrKeySize = 4;        // the engine's rkey is 32 bits
inline constexpr size_t kOffsetMrKeySize = 8;  // offset mode: the region's iova window too (mr.cpp)
inline constexpr size_t kCqDataSize = 4;       // the engine's immediate is 32 bits
inline constexpr size_t kCqCount = 64, kEpCount = 256, kMrCount = 4096;
// No counters yet (DESIGN.md 6.3 M3): cntr_cnt 0, and hints asking for counters are refused.
inline constexpr size_t kCntrCount = 0;

int getinfo(uint32_t version, const char* node, const char* service, uint64_t flags, const struct fi_info* hints,
            struct fi_info** info);

}  // namespace mroce::fi
