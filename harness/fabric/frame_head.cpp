#include "fabric/frame_head.hpp"

#include <ostream>

namespace mroce::fabric {

NS_OBJECT_ENSURE_REGISTERED(FrameHead);

ns3::TypeId FrameHead::GetTypeId() {
    static ns3::TypeId tid = ns3::TypeId("mroce::fabric::FrameHead")
                                 .SetParent<ns3::Header>()
                                 .SetGroupName("mroce")
                                 .AddConstructor<FrameHead>();
    return tid;
}

void FrameHead::Print(std::ostream& os) const { os << "eth+ipv4 head"; }

static uint32_t rd32(const uint8_t* p) {
    return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}
static uint16_t rd16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }

uint16_t ether_type(const ns3::Packet& frame) {
    uint8_t b[14];
    if (frame.CopyData(b, 14) < 14) return 0;
    return rd16(b + 12);
}

bool read_flow_key(const ns3::Packet& frame, FlowKey* key) {
    uint8_t b[kFlowKeyLen];
    if (frame.CopyData(b, kFlowKeyLen) < kFlowKeyLen) return false;
    if (rd16(b + 12) != 0x0800 || b[14] != 0x45 || b[23] != 17) return false;
    key->src_ip = rd32(b + 26);
    key->dst_ip = rd32(b + 30);
    key->sport = rd16(b + 34);
    key->dport = rd16(b + 36);
    return true;
}

}  // namespace mroce::fabric
