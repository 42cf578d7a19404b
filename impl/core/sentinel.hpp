// Sentinels shared by the data-path containers of impl/core: "no index" and "no time".
#pragma once

#include <cstdint>

namespace mroce::core {

inline constexpr std::uint32_t kNone = 0xFFFFFFFFu;  // no index (empty pool, absent key, no set bit)
inline constexpr std::uint64_t kNever = UINT64_MAX;  // no deadline

}  // namespace mroce::core
