#include <span>

#include "fabric/frame_head_plain.hpp"
#include "impair/ecn.hpp"

namespace mroce::fabric {

bool mark_ce_head(uint8_t* head, uint32_t len) { return impair::mark_ce(std::span<uint8_t>(head, len)); }

}  // namespace mroce::fabric
