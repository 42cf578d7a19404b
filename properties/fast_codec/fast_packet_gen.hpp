// rapidcheck generators of valid MRoCE packets for the fast codec (mroce::fast::Fields + payload).
// "Valid" = passes every check of [R-VAL-1]; every field ranges over all the values the spec allows.
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <ostream>
#include <vector>

#include "codec/fast_codec.hpp"

namespace mroce::fast::testgen {

struct FastPacket {
  Fields f;
  std::vector<uint8_t> payload;
  uint16_t port = kDefaultUdpPort;  // the receiver's configured UDP port (= f.udp_dport)
};

inline std::ostream& operator<<(std::ostream& os, const FastPacket& p) {
  const auto bytes = build(p.f, p.payload);
  PacketView v;
  const Error e = decode(bytes.data(), uint32_t(bytes.size()), p.port, v);
  return os << (e == Error::None ? canonical(v) : canonical_error(e)) << " (port " << p.port << ")";
}

// Payload lengths: mostly small (fast), sometimes anything up to the 8192 limit ([R-HDR-8]).
inline rc::Gen<uint32_t> gen_payload_len() {
  return rc::gen::weightedOneOf<uint32_t>({{6, rc::gen::inRange<uint32_t>(0, 65)},
                                           {1, rc::gen::inRange<uint32_t>(0, kMaxPayload + 1)},
                                           {1, rc::gen::element<uint32_t>(0, 1, kMaxPayload)}});
}

// 32-bit values with the interesting edges over-represented.
inline rc::Gen<uint32_t> gen_u32() {
  return rc::gen::weightedOneOf<uint32_t>(
      {{4, rc::gen::arbitrary<uint32_t>()},
       {1, rc::gen::element<uint32_t>(0, 1, 0x7FFFFFFF, 0x80000000u, 0xFFFFFFFEu, 0xFFFFFFFFu)}});
}

inline rc::Gen<FastPacket> gen_valid_packet_for(Opcode op) {
  return rc::gen::exec([op] {
    FastPacket p;
    Fields& f = p.f;
    const OpcodeInfo info = opcode_info(uint8_t(op));
    f.eth_dst = *rc::gen::arbitrary<Mac>();
    f.eth_src = *rc::gen::arbitrary<Mac>();
    f.ipv6 = *rc::gen::arbitrary<bool>();
    f.ipv4_src = *rc::gen::arbitrary<uint32_t>();
    f.ipv4_dst = *rc::gen::arbitrary<uint32_t>();
    f.ipv6_src = *rc::gen::arbitrary<Ip6>();
    f.ipv6_dst = *rc::gen::arbitrary<Ip6>();
    f.dscp = *rc::gen::inRange<uint8_t>(0, 64);  // [R-ENC-10] any DSCP is accepted
    f.ecn = *rc::gen::inRange<uint8_t>(0, 4);    // [R-ENC-9] any ECN is accepted
    f.ttl = *rc::gen::arbitrary<uint8_t>();
    f.ipv4_id = *rc::gen::arbitrary<uint16_t>();
    f.ipv4_df = *rc::gen::arbitrary<bool>();
    f.flow_label = *rc::gen::inRange<uint32_t>(0, 1u << 20);
    f.udp_sport = *rc::gen::inRange<uint32_t>(49152, 65536);  // [R-ENC-6]
    p.port = *rc::gen::weightedOneOf<uint16_t>(
        {{3, rc::gen::just(uint16_t{kDefaultUdpPort})}, {1, rc::gen::arbitrary<uint16_t>()}});
    f.udp_dport = p.port;

    f.opcode = uint8_t(op);
    if (info.data)
      f.flags = *rc::gen::element<uint16_t>(0, kFlagAr, kFlagRetx, kFlagVoid, kFlagAr | kFlagRetx, kFlagAr | kFlagVoid,
                                            kFlagRetx | kFlagVoid, kFlagAr | kFlagRetx | kFlagVoid);
    else if (op == Opcode::Probe)
      f.flags = *rc::gen::element<uint16_t>(0, kFlagAr);
    else
      f.flags = 0;
    // [R-HDR-4]: DCID zero exactly on CONNECT
    f.dcid =
        op == Opcode::Connect ? 0 : *rc::gen::inRange<uint32_t>(1, 0xFFFFFFFFu) + *rc::gen::element<uint32_t>(0, 1);
    f.path_id = info.control ? 0 : *rc::gen::arbitrary<uint16_t>();  // [R-HDR-5]
    f.timestamp = *gen_u32();

    if (info.data) {
      f.psn = *gen_u32();
      f.stream_id = *rc::gen::arbitrary<uint16_t>();
      f.msn = *gen_u32();
      const bool no_payload = op == Opcode::ReadReq || (f.flags & kFlagVoid);  // [R-HDR-15], [R-HDR-16]
      const uint32_t plen = no_payload ? 0 : *gen_payload_len();
      // [R-HDR-12], [R-HDR-13]: plen <= mlen <= 2^31, offset <= mlen - plen
      const uint32_t mlen = *rc::gen::weightedOneOf<uint32_t>({{3, rc::gen::inRange<uint32_t>(plen, plen + 100000)},
                                                               {1, rc::gen::inRange<uint32_t>(plen, 0x80000000u)},
                                                               {1, rc::gen::element(uint32_t{plen}, 0x80000000u)}});
      f.msg_length = mlen;
      f.msg_offset = op == Opcode::ReadReq
                         ? 0
                         : *rc::gen::weightedOneOf<uint32_t>({{3, rc::gen::inRange<uint32_t>(0, mlen - plen + 1)},
                                                              {1, rc::gen::element(0u, uint32_t{mlen - plen})}});
      p.payload = *rc::gen::container<std::vector<uint8_t>>(plen, rc::gen::arbitrary<uint8_t>());
      f.rsn = *gen_u32();
      f.remote_va = *rc::gen::arbitrary<uint64_t>();
      f.rkey = *gen_u32();
      f.immediate = *gen_u32();
    }
    switch (op) {
      case Opcode::Ack:
        f.cpsn = *gen_u32();
        f.ce_count = *gen_u32();
        f.ts_echo = *gen_u32();
        f.rate_hint = *gen_u32();
        f.sack = *rc::gen::arbitrary<std::array<uint8_t, 32>>();
        f.sack[0] &= 0x7F;  // [R-HDR-20] bit 0 is zero
        break;
      case Opcode::Nak:
        f.nak_psn = *gen_u32();
        f.nak_code = *rc::gen::inRange<uint8_t>(1, 5);  // table 12.3
        f.nak_detail = f.nak_code == uint8_t(NakCode::Rnr) ? *rc::gen::arbitrary<uint16_t>() : 0;
        break;
      case Opcode::Connect:
      case Opcode::Accept:  // [R-HDR-26]
        f.scid = *rc::gen::inRange<uint32_t>(1, 0xFFFFFFFFu) + *rc::gen::element<uint32_t>(0, 1);
        f.isn = *gen_u32();
        f.path_count = *rc::gen::inRange<uint16_t>(1, 257);
        f.stream_count = *rc::gen::inRange<uint32_t>(1, 65536);
        f.max_payload = uint16_t(64 * *rc::gen::inRange<uint32_t>(4, 129));
        f.window_cap = *rc::gen::inRange<uint16_t>(1, 257);
        break;
      case Opcode::Reject:
      case Opcode::Disconnect:
        f.reason = *rc::gen::inRange<uint8_t>(0, 6);  // [R-HDR-27]
        break;
      default:
        break;
    }
    // [R-ENC-7]: zero, or (accepted too) a correct non-zero UDP checksum; [R-ENC-8]: Ethernet padding.
    f.raw.udp_checksum_compute = *rc::gen::weightedOneOf<bool>({{4, rc::gen::just(false)}, {1, rc::gen::just(true)}});
    f.raw.eth_padding =
        *rc::gen::weightedOneOf<uint32_t>({{4, rc::gen::just(0u)}, {1, rc::gen::inRange<uint32_t>(1, 24)}});
    return p;
  });
}

inline rc::Gen<Opcode> gen_opcode() {
  return rc::gen::elementOf(std::vector<Opcode>(kAllOpcodes.begin(), kAllOpcodes.end()));
}

// A valid packet of any opcode.
inline rc::Gen<FastPacket> gen_valid_packet() {
  return rc::gen::mapcat(gen_opcode(), [](Opcode op) { return gen_valid_packet_for(op); });
}

}  // namespace mroce::fast::testgen
