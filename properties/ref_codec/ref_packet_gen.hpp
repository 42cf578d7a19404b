// rapidcheck generators of valid MRoCE packets, in terms of the reference codec's Packet.
//
// "Valid" means: accepted by the stateless validation of SPEC section 4 ([R-VAL-1]). Fields that
// the receiver does not check (UDP source port, DSCP, ECN, TTL, ...) take any value that fits
// their wire field, not only what a conforming sender would choose, so that the decoders see the
// whole accepted input space. Reused by the cross-codec agreement property and by fuzz-corpus
// generation.
//
// A generated Packet is exactly what decode() must return for encode(packet, payload):
//   - payload_length = payload_len = the payload size (data opcodes; 0 otherwise),
//   - payload_offset = offset of the first payload byte in the frame (data opcodes; 0 otherwise),
//   - udp_checksum = 0 and icrc = 0: the ICRC is computed by the encoder, so a test compares it
//     separately and zeroes it before comparing packets.
#pragma once

#include <rapidcheck.h>

#include <array>
#include <cstdint>
#include <ostream>
#include <vector>

#include "codec/ref_codec.hpp"

namespace mroce::ref {

// Every opcode of table 3.2, in table order.
inline const std::vector<Opcode>& all_opcodes() {
  static const std::vector<Opcode> ops = {Opcode::Send,         Opcode::Write,  Opcode::WriteImm, Opcode::ReadReq,
                                          Opcode::ReadResp,     Opcode::Ack,    Opcode::Nak,      Opcode::Probe,
                                          Opcode::Connect,      Opcode::Accept, Opcode::Reject,   Opcode::Disconnect,
                                          Opcode::DisconnectAck};
  return ops;
}

namespace gen_detail {

// Extension length after the BTH, written from table 3.2 (independently of the codec's own table,
// so that a mistake there shows up as a payload_offset mismatch).
inline uint32_t table_3_2_extension_length(Opcode op) {
  switch (op) {
    case Opcode::Send:
      return 24;
    case Opcode::Write:
      return 32;
    case Opcode::WriteImm:
      return 40;
    case Opcode::ReadReq:
      return 32;
    case Opcode::ReadResp:
      return 20;
    case Opcode::Ack:
      return 48;
    case Opcode::Nak:
      return 8;
    case Opcode::Probe:
      return 0;
    case Opcode::Connect:
      return 16;
    case Opcode::Accept:
      return 16;
    case Opcode::Reject:
      return 4;
    case Opcode::Disconnect:
      return 4;
    case Opcode::DisconnectAck:
      return 0;
  }
  return 0;
}

inline bool is_data(Opcode op) {
  return op == Opcode::Send || op == Opcode::Write || op == Opcode::WriteImm || op == Opcode::ReadReq ||
         op == Opcode::ReadResp;
}

inline bool is_control(Opcode op) {
  return op == Opcode::Connect || op == Opcode::Accept || op == Opcode::Reject || op == Opcode::Disconnect ||
         op == Opcode::DisconnectAck;
}

// Any 32-bit value, with the wrap-around edges over-represented.
inline rc::Gen<uint32_t> u32_edgy() {
  return rc::gen::weightedOneOf<uint32_t>(
      {{3, rc::gen::arbitrary<uint32_t>()},
       {1, rc::gen::elementOf(std::vector<uint32_t>{0u, 1u, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFEu, 0xFFFFFFFFu})}});
}

inline rc::Gen<uint32_t> nonzero_u32() {
  return rc::gen::suchThat(u32_edgy(), [](uint32_t v) { return v != 0; });
}

// Uniform in [lo, hi] (inclusive), with both ends over-represented.
inline rc::Gen<uint64_t> in_closed_range(uint64_t lo, uint64_t hi) {
  return rc::gen::weightedOneOf<uint64_t>({{4, rc::gen::inRange<uint64_t>(lo, hi + 1)}, {1, rc::gen::element(lo, hi)}});
}

// [R-HDR-12]: Message Length 0..2^31, small and edge values over-represented.
inline rc::Gen<uint32_t> message_length() {
  return rc::gen::weightedOneOf<uint32_t>(
      {{3, rc::gen::inRange<uint32_t>(0, 20000)},
       {2, rc::gen::cast<uint32_t>(rc::gen::inRange<uint64_t>(0, (uint64_t{1} << 31) + 1))},
       {1, rc::gen::elementOf(std::vector<uint32_t>{0u, 1u, 8192u, 0x7FFFFFFFu, 0x80000000u})}});
}

// A payload length at most `max`, mostly small so that properties stay fast.
inline rc::Gen<uint32_t> payload_length_up_to(uint32_t max) {
  const uint32_t small = max < 64 ? max : 64;
  return rc::gen::weightedOneOf<uint32_t>(
      {{4, rc::gen::cast<uint32_t>(in_closed_range(0, small))}, {1, rc::gen::cast<uint32_t>(in_closed_range(0, max))}});
}

}  // namespace gen_detail

// A valid packet of opcode `op`, addressed to UDP port `udp_port`.
inline rc::Gen<Packet> gen_valid_packet(Opcode op, uint16_t udp_port = kDefaultUdpPort) {
  using namespace gen_detail;
  return rc::gen::exec([op, udp_port] {
    Packet p{};
    // Ethernet [R-ENC-2]
    p.eth_dst = *rc::gen::arbitrary<std::array<uint8_t, 6>>();
    p.eth_src = *rc::gen::arbitrary<std::array<uint8_t, 6>>();
    // IP [R-ENC-3], [R-ENC-4]
    p.ipv6 = *rc::gen::arbitrary<bool>();
    if (p.ipv6) {
      p.ip_src = *rc::gen::arbitrary<std::array<uint8_t, 16>>();
      p.ip_dst = *rc::gen::arbitrary<std::array<uint8_t, 16>>();
      p.ipv6_flow_label = *rc::gen::inRange<uint32_t>(0, 1u << 20);
    } else {
      const auto src = *rc::gen::arbitrary<std::array<uint8_t, 4>>();
      const auto dst = *rc::gen::arbitrary<std::array<uint8_t, 4>>();
      for (size_t i = 0; i < 4; ++i) {
        p.ip_src[i] = src[i];
        p.ip_dst[i] = dst[i];
      }
      p.ipv4_id = *rc::gen::arbitrary<uint16_t>();
      p.ipv4_df = *rc::gen::arbitrary<bool>();
    }
    p.dscp = *rc::gen::inRange<uint8_t>(0, 64);
    p.ecn = *rc::gen::inRange<uint8_t>(0, 4);
    p.ttl = *rc::gen::arbitrary<uint8_t>();
    // UDP [R-ENC-5..7]
    p.udp_sport = *rc::gen::arbitrary<uint16_t>();
    p.udp_dport = udp_port;
    p.udp_checksum = 0;
    // BTH [R-HDR-1..6]
    p.version = 1;
    p.opcode = op;
    if (is_data(op)) {
      // any subset of AR, RETX, VOID ([R-HDR-3])
      p.flags = static_cast<uint16_t>(*rc::gen::inRange<uint16_t>(0, 8) << 13);
    } else if (op == Opcode::Probe) {
      p.flags = *rc::gen::elementOf(std::vector<uint16_t>{0, kFlagAr});
    }
    p.dcid = (op == Opcode::Connect) ? 0 : *nonzero_u32();
    p.path_id = is_control(op) ? 0 : *rc::gen::arbitrary<uint16_t>();
    p.timestamp = *u32_edgy();

    const uint32_t headers = 14 + (p.ipv6 ? 40 : 20) + 8 + 16 + table_3_2_extension_length(op);
    if (is_data(op)) {
      // DH [R-HDR-9..16]
      p.psn = *u32_edgy();
      p.stream_id = *rc::gen::arbitrary<uint16_t>();
      p.msn = *u32_edgy();
      p.msg_length = *message_length();
      const bool no_payload = op == Opcode::ReadReq || (p.flags & kFlagVoid) != 0;
      const uint32_t max_payload = p.msg_length < kMaxPayload ? p.msg_length : kMaxPayload;
      const uint32_t plen = no_payload ? 0 : *payload_length_up_to(max_payload);
      p.payload_length = static_cast<uint16_t>(plen);
      p.msg_offset = (op == Opcode::ReadReq) ? 0 : static_cast<uint32_t>(*in_closed_range(0, p.msg_length - plen));
      p.payload_offset = headers;
      p.payload_len = plen;
    }
    if (op == Opcode::Send || op == Opcode::WriteImm) p.rsn = *u32_edgy();
    if (op == Opcode::Write || op == Opcode::WriteImm || op == Opcode::ReadReq) {
      p.remote_va = *rc::gen::arbitrary<uint64_t>();
      p.rkey = *rc::gen::arbitrary<uint32_t>();
    }
    if (op == Opcode::WriteImm) p.immediate = *rc::gen::arbitrary<uint32_t>();
    if (op == Opcode::Ack) {
      // AETH [R-HDR-19..23]; SACK bit 0 clear ([R-HDR-20])
      p.cpsn = *u32_edgy();
      p.ce_count = *u32_edgy();
      p.ts_echo = *u32_edgy();
      p.rate_hint = *u32_edgy();
      p.sack = *rc::gen::arbitrary<std::array<uint8_t, 32>>();
      p.sack[0] &= 0x7F;
    }
    if (op == Opcode::Nak) {
      // NAKH [R-HDR-24]
      p.nak_psn = *u32_edgy();
      p.nak_code = *rc::gen::inRange<uint8_t>(1, 5);
      p.nak_detail = (p.nak_code == static_cast<uint8_t>(NakCode::Rnr)) ? *rc::gen::arbitrary<uint16_t>() : 0;
    }
    if (op == Opcode::Connect || op == Opcode::Accept) {
      // CONN [R-HDR-26]
      p.scid = *nonzero_u32();
      p.isn = *u32_edgy();
      p.path_count = static_cast<uint16_t>(*in_closed_range(1, 256));
      p.stream_count = static_cast<uint16_t>(*in_closed_range(1, 65535));
      p.max_payload = static_cast<uint16_t>(64 * *in_closed_range(256 / 64, 8192 / 64));
      p.window_cap = static_cast<uint16_t>(*in_closed_range(1, 256));
    }
    if (op == Opcode::Reject || op == Opcode::Disconnect) {
      p.reason = *rc::gen::inRange<uint8_t>(0, 6);  // [R-HDR-27]
    }
    return p;
  });
}

// A valid packet of any opcode of table 3.2.
inline rc::Gen<Packet> gen_valid_packet(uint16_t udp_port = kDefaultUdpPort) {
  return rc::gen::mapcat(rc::gen::elementOf(all_opcodes()),
                         [udp_port](Opcode op) { return gen_valid_packet(op, udp_port); });
}

// Payload bytes for `p`: exactly p.payload_len bytes (0 for non-data opcodes).
inline rc::Gen<std::vector<uint8_t>> gen_payload(const Packet& p) {
  return rc::gen::container<std::vector<uint8_t>>(p.payload_len, rc::gen::arbitrary<uint8_t>());
}

// A packet together with its payload: what encode() takes.
struct PacketWithPayload {
  Packet packet;
  std::vector<uint8_t> payload;
};

inline rc::Gen<PacketWithPayload> gen_valid_packet_with_payload(Opcode op, uint16_t udp_port = kDefaultUdpPort) {
  return rc::gen::mapcat(gen_valid_packet(op, udp_port), [](const Packet& p) {
    return rc::gen::map(gen_payload(p), [p](std::vector<uint8_t> payload) {
      return PacketWithPayload{p, std::move(payload)};
    });
  });
}

inline rc::Gen<PacketWithPayload> gen_valid_packet_with_payload(uint16_t udp_port = kDefaultUdpPort) {
  return rc::gen::mapcat(rc::gen::elementOf(all_opcodes()),
                         [udp_port](Opcode op) { return gen_valid_packet_with_payload(op, udp_port); });
}

// rapidcheck prints counterexamples with showValue (found by argument-dependent lookup).
inline void showValue(const Packet& p, std::ostream& os) { os << canonical(DecodeResult{std::nullopt, p}, {}); }

inline void showValue(const PacketWithPayload& v, std::ostream& os) {
  showValue(v.packet, os);
  os << " + payload of " << v.payload.size() << " bytes";
}

}  // namespace mroce::ref
