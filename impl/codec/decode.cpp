// Zero-copy decode + validation in the order of [R-VAL-1].
#include "codec/fast_codec.hpp"
#include "codec/internal.hpp"
#include "codec/predicates.hpp"

namespace mroce::fast {

using detail::rd16;
using detail::rd32;
using pred::NativeOps;

OpcodeInfo opcode_info(uint8_t raw) noexcept {
  const detail::OpRow& r = detail::kOpTable[raw];
  return {r.ext_len, r.valid, r.data, r.control};
}

#define MROCE_FAIL(cond, err)                        \
  do {                                               \
    if (__builtin_expect(!!(cond), 0)) return (err); \
  } while (0)

Error decode(const uint8_t* f, uint32_t len, uint16_t udp_port, PacketView& out) noexcept {
  // [R-VAL-1] check 1
  MROCE_FAIL(len < kEthLen, Error::Truncated);
  // check 2 ([R-ENC-2]; no VLAN)
  const uint16_t et = rd16(f + 12);
  const bool v6 = et == 0x86DD;
  MROCE_FAIL(!v6 && et != 0x0800, Error::EtherType);

  uint32_t l4;          // UDP header offset
  uint32_t ip_payload;  // IP payload length per the IP header
  if (!v6) {
    // check 3
    MROCE_FAIL(len < kEthLen + kIpv4Len, Error::Truncated);
    const uint8_t vihl = f[14];
    // check 4
    MROCE_FAIL((vihl >> 4) != 4, Error::IpVersion);
    // check 5 ([R-ENC-3])
    MROCE_FAIL((vihl & 0x0F) != 5, Error::Ipv4Options);
    // check 6: the exact predicate the Z3 proof is about
    const uint32_t total = rd16(f + 16);
    MROCE_FAIL(!pred::ipv4_length_ok<NativeOps>(len, total), Error::IpLength);
    // check 7: RFC 1071, the sum over the header including its checksum is all ones
    MROCE_FAIL(detail::fold_net(detail::sum_native(f + 14, kIpv4Len)) != 0xFFFF, Error::Ipv4Checksum);
    // check 8: reserved bit, MF, fragment offset (DF is the only bit allowed)
    MROCE_FAIL((rd16(f + 20) & 0xBFFF) != 0, Error::Fragment);
    // check 9
    MROCE_FAIL(f[23] != 17, Error::NotUdp);
    l4 = kEthLen + kIpv4Len;
    ip_payload = total - kIpv4Len;
  } else {
    // check 3
    MROCE_FAIL(len < kEthLen + kIpv6Len, Error::Truncated);
    // check 4
    MROCE_FAIL((f[14] >> 4) != 6, Error::IpVersion);
    // check 6 (5, 7, 8 are IPv4 only)
    const uint32_t plen = rd16(f + 18);
    MROCE_FAIL(!pred::ipv6_length_ok<NativeOps>(len, plen), Error::IpLength);
    // check 9 ([R-ENC-4]: no extension headers)
    MROCE_FAIL(f[20] != 17, Error::NotUdp);
    l4 = kEthLen + kIpv6Len;
    ip_payload = plen;
  }

  const uint8_t* udp = f + l4;  // check 6 proved the 8 UDP header bytes are inside the frame
  const uint32_t udp_len = rd16(udp + 4);
  // check 10 ([R-ENC-8])
  MROCE_FAIL(udp_len != ip_payload, Error::UdpLength);
  // check 11 ([R-ENC-5])
  MROCE_FAIL(rd16(udp + 2) != udp_port, Error::UdpPort);
  // check 12 ([R-ENC-7]): zero is accepted; otherwise the full sum must be all ones
  MROCE_FAIL(rd16(udp + 6) != 0 && detail::udp_sum(f, v6, l4, udp_len) != 0xFFFF, Error::UdpChecksum);
  const uint32_t upl = udp_len - kUdpLen;  // >= 0: checks 6 + 10 give udp_len >= 8
  // check 13
  MROCE_FAIL(upl < kBthLen + kIcrcLen, Error::TransportLength);

  const uint8_t* bth = udp + kUdpLen;
  // check 14 ([R-HDR-1])
  MROCE_FAIL((bth[0] >> 4) != 1, Error::Version);
  // check 15 ([R-HDR-2])
  const uint8_t op = bth[1];
  const detail::OpRow row = detail::kOpTable[op];
  MROCE_FAIL(!row.valid, Error::Opcode);
  // check 16 ([R-HDR-7], [R-HDR-8])
  MROCE_FAIL(!pred::transport_length_ok<NativeOps>(upl, row.ext_len, row.data), Error::TransportLength);
  // check 17 ([R-HDR-28], [R-HDR-29])
  const uint32_t covered = upl - kIcrcLen;
  MROCE_FAIL(crc32c(bth, covered) != rd32(bth + covered), Error::Icrc);

  // check 18 ([R-HDR-1,3,4,5]): folded into one branch
  const uint16_t flags = rd16(bth + 2);
  const uint32_t dcid = rd32(bth + 4);
  const uint16_t path = rd16(bth + 8);
  const bool is_connect = op == uint8_t(Opcode::Connect);
  const bool reserved_bad = ((bth[0] & 0x0F) | rd16(bth + 10) | (flags & ~row.allowed_flags)) != 0;
  const bool dcid_bad = (dcid == 0) != is_connect;
  const bool path_bad = row.control & (path != 0);
  MROCE_FAIL(reserved_bad | dcid_bad | path_bad, Error::Reserved);

  const uint8_t* ext = bth + kBthLen;
  const uint32_t payload_len = covered - kBthLen - row.ext_len;  // 0 for non-data (check 16)
  if (row.data) {
    // check 19 ([R-HDR-11])
    MROCE_FAIL(rd16(ext + 6) != payload_len, Error::PayloadLength);
    // check 20 ([R-HDR-12,13,15,16]): the exact predicate the Z3 proof is about
    MROCE_FAIL(!pred::data_range_ok<NativeOps>(rd32(ext + 12), rd32(ext + 16), payload_len,
                                               op == uint8_t(Opcode::ReadReq), (flags & kFlagVoid) != 0),
               Error::Range);
  } else {
    switch (Opcode(op)) {
      case Opcode::Ack:
        // check 21 ([R-HDR-20])
        MROCE_FAIL((ext[16] & 0x80) != 0, Error::SackBase);
        break;
      case Opcode::Nak: {
        // check 22 ([R-HDR-24], table 12.3)
        const uint8_t code = ext[4];
        const bool code_bad = uint8_t(code - 1) > 3;
        const bool detail_bad = code != uint8_t(NakCode::Rnr) && rd16(ext + 6) != 0;
        MROCE_FAIL(code_bad | (ext[5] != 0) | detail_bad, Error::Reserved);
        break;
      }
      case Opcode::Connect:
      case Opcode::Accept: {
        // check 23 ([R-HDR-26]); every failure is Range, so field order needs no branches
        const uint32_t scid = rd32(ext);
        const uint32_t pc = rd16(ext + 8), sc = rd16(ext + 10), mp = rd16(ext + 12), wc = rd16(ext + 14);
        const bool bad =
            (scid == 0) | (pc - 1 > 255u) | (sc == 0) | (mp - 256 > 8192u - 256) | ((mp & 63) != 0) | (wc - 1 > 255u);
        MROCE_FAIL(bad, Error::Range);
        break;
      }
      case Opcode::Reject:
      case Opcode::Disconnect:
        // check 23 ([R-HDR-27]): reason 0..5, 24 reserved bits zero
        MROCE_FAIL(ext[0] > 5 || (rd32(ext) & 0xFFFFFFu) != 0, Error::Reserved);
        break;
      default:
        break;
    }
  }

  out.f_ = f;
  out.len_ = len;
  out.udp_end_ = l4 + udp_len;
  out.payload_off_ = l4 + kUdpLen + kBthLen + row.ext_len;
  out.payload_len_ = payload_len;
  out.op_ = Opcode(op);
  out.v6_ = v6;
  return Error::None;
}

}  // namespace mroce::fast
