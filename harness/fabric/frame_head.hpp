// The bytes of a frame that the fabric reads and writes: the Ethernet header and the IPv4 header in
// front (34 bytes). The frames in the fabric are the real frames the engine builds, whole; ns-3 only
// adds and strips its own PPP framing on each link. Switches read the 5-tuple with CopyData and
// rewrite the TOS byte (a CE mark) through this ns-3 Header.
#pragma once

#include <ns3/header.h>
#include <ns3/packet.h>

#include <array>
#include <cstdint>

#include "fabric/frame_head_plain.hpp"

namespace mroce::fabric {

// What the devices are told the payload is: IPv4 (ns-3's point-to-point device maps it to PPP 0x0021).
inline constexpr uint16_t kFrameProtocol = 0x0800;
inline constexpr uint16_t kEtherPause = 0x8808;  // MAC control: our PFC frames
inline constexpr uint32_t kHeadLen = 34;         // Ethernet (14) + IPv4 (20)
inline constexpr uint32_t kFlowKeyLen = 38;      // ... + UDP source and destination ports

class FrameHead final : public ns3::Header {
public:
    static ns3::TypeId GetTypeId();
    ns3::TypeId GetInstanceTypeId() const override { return GetTypeId(); }
    uint32_t GetSerializedSize() const override { return kHeadLen; }
    void Serialize(ns3::Buffer::Iterator start) const override { start.Write(bytes.data(), kHeadLen); }
    uint32_t Deserialize(ns3::Buffer::Iterator start) override {
        start.Read(bytes.data(), kHeadLen);
        return kHeadLen;
    }
    void Print(std::ostream& os) const override;
    std::array<uint8_t, kHeadLen> bytes{};
};

// Applies `edit` to the frame's first kHeadLen bytes; returns its result.
template <class Edit>
bool rewrite_head(ns3::Ptr<ns3::Packet>& frame, Edit edit) {
    if (frame->GetSize() < kHeadLen) return false;
    FrameHead head;
    frame->RemoveHeader(head);
    const bool changed = edit(head.bytes.data(), kHeadLen);
    frame->AddHeader(head);
    return changed;
}

// The flow key of an IPv4/UDP frame (addresses, protocol and ports), or false for any other frame.
struct FlowKey {
    uint32_t src_ip = 0, dst_ip = 0;
    uint16_t sport = 0, dport = 0;
};
bool read_flow_key(const ns3::Packet& frame, FlowKey* key);
uint16_t ether_type(const ns3::Packet& frame);

}  // namespace mroce::fabric
