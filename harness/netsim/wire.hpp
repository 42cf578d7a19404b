// A light, non-validating view of a frame's transport fields, for monitors and trace lines.
//
// The endpoints validate frames themselves; the harness only needs to read the fields of frames it
// knows to be intact (it applied the corruption itself), cheaply (no CRC), and print them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "codec/ref_codec.hpp"

namespace mroce::harness {

struct WireInfo {
    bool ipv6 = false;
    uint8_t ecn = 0;
    uint16_t sport = 0;
    uint8_t opcode = 0;
    uint16_t flags = 0;
    uint32_t dcid = 0;
    uint16_t path = 0;
    uint32_t ts = 0;
    // data
    uint32_t psn = 0;
    uint16_t stream = 0, plen = 0;
    uint32_t msn = 0, mlen = 0, moff = 0, rsn = 0;
    uint64_t va = 0;
    uint32_t rkey = 0, imm = 0;
    // ACK
    uint32_t cpsn = 0, ce_count = 0, ts_echo = 0, hint = 0;
    std::array<uint8_t, 32> sack{};
    // NAK
    uint32_t nak_psn = 0;
    uint8_t nak_code = 0;
    uint16_t nak_detail = 0;
    // CONN / REJ
    uint32_t scid = 0, isn = 0;
    uint16_t paths = 0, streams = 0, maxpay = 0, wcap = 0;
    uint8_t reason = 0;

    bool is_data() const { return opcode >= 0x01 && opcode <= 0x05; }
    bool is_ack() const { return opcode == 0x10; }
    bool is_control() const { return opcode >= 0x20 && opcode <= 0x24; }
};

// nullopt when the frame is too short for the fields its opcode has.
std::optional<WireInfo> parse_wire(std::span<const uint8_t> frame);

// One-line compact summary, e.g.
//   WRITE p=1 psn=0xffffff02 fl=RETX sp=51234 ecn=2 st=0 msn=3 off=4096 len=4096 mlen=9000
//   ACK p=1 cpsn=0xffffff02 sack=+2,+3 ce=0 tse=118 hint=0
std::string summarize(const WireInfo& w);
// Appendix C canonical line (decodes with the reference codec, so it also names a decode error).
std::string canonical_line(std::span<const uint8_t> frame, uint16_t udp_port);

}  // namespace mroce::harness
