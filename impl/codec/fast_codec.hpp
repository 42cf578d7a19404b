// mroce fast wire codec: zero-copy decode/validate and in-place build of MRoCE frames (SPEC sections
// 2, 3, 4 and appendix C). Standard library only; written independently of spec_model/.
//
// ---------------------------------------------------------------------------------------------
// Decoding
//   PacketView v;
//   Error e = decode(frame, len, port, v);     // [R-VAL-1] order; never reads outside [frame, frame+len)
//   if (e == Error::None) { v.opcode(); v.psn(); v.payload(); ... }
// A PacketView is a set of offsets into the caller's buffer (nothing is copied); accessors read
// big-endian fields on demand. The view is valid while the buffer is. Extension accessors
// (psn(), cpsn(), scid(), ...) may only be called when the opcode carries that extension
// (checked by assert in debug builds); BTH/IP/UDP accessors are always valid after a successful
// decode. After a failed decode the view's content is unspecified.
//
// ---------------------------------------------------------------------------------------------
// Building in place (no allocation, no exceptions)
//   FrameTemplate tpl(PathConfig{...});           // once per path: Ethernet/IP/UDP images
//   uint8_t* bth = tpl.begin(buf, /*data=*/true); // copy the 42 (IPv4) / 62 (IPv6) header bytes
//   uint8_t* pay = put_write(bth, bth_fields, dh_fields, va, rkey);  // BTH + extension, fixed offsets
//   memcpy(pay, src, n);                          // or DMA the payload there
//   uint32_t frame_len = finalize(buf, n);        // IP lengths + IPv4 checksum, UDP length,
//                                                 // UDP checksum 0, DH payload length, ICRC
// `buf` must have room for tpl.header_len() + 16 + extension + payload + 4 bytes
// (at most kMaxHeaderLen + 8192 + 4). put_* return the address of the first payload byte (i.e. the
// end of the extension). finalize() reads the IP version from the EtherType and the extension
// length from the opcode already in `buf`, so it needs no template.
//
// ---------------------------------------------------------------------------------------------
// Test/debug only (may allocate): canonical(), canonical_error(), Fields, build(), fields_of().
#pragma once

#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace mroce::fast {

// SPEC section 4: names and order.
enum class Error : uint8_t {
  None = 0,
  Truncated,
  EtherType,
  IpVersion,
  Ipv4Options,
  IpLength,
  Ipv4Checksum,
  Fragment,
  NotUdp,
  UdpLength,
  UdpPort,
  UdpChecksum,
  TransportLength,
  Version,
  Opcode,
  Icrc,
  Reserved,
  PayloadLength,
  Range,
  SackBase
};
inline constexpr unsigned kErrorCount = 20;  // including None

const char* error_name(Error) noexcept;  // "Truncated", ...; "None" for None

// Table 3.2.
enum class Opcode : uint8_t {
  Send = 0x01,
  Write = 0x02,
  WriteImm = 0x03,
  ReadReq = 0x04,
  ReadResp = 0x05,
  Ack = 0x10,
  Nak = 0x11,
  Probe = 0x12,
  Connect = 0x20,
  Accept = 0x21,
  Reject = 0x22,
  Disconnect = 0x23,
  DisconnectAck = 0x24
};
inline constexpr std::array<Opcode, 13> kAllOpcodes = {
    Opcode::Send,   Opcode::Write,      Opcode::WriteImm,     Opcode::ReadReq, Opcode::ReadResp,
    Opcode::Ack,    Opcode::Nak,        Opcode::Probe,        Opcode::Connect, Opcode::Accept,
    Opcode::Reject, Opcode::Disconnect, Opcode::DisconnectAck};

const char* opcode_name(Opcode) noexcept;  // "SEND", "WRITE_IMM", ...; "?" for a value not in table 3.2

inline constexpr uint16_t kDefaultUdpPort = 4793;  // [R-ENC-5]

// [R-HDR-3] flag masks.
inline constexpr uint16_t kFlagAr = 0x8000;
inline constexpr uint16_t kFlagRetx = 0x4000;
inline constexpr uint16_t kFlagVoid = 0x2000;

// Table 12.3 NAK codes.
enum class NakCode : uint8_t { Rnr = 1, RemoteAccess = 2, InvalidRequest = 3, Length = 4 };

// Fixed sizes (bytes).
inline constexpr uint32_t kEthLen = 14;
inline constexpr uint32_t kIpv4Len = 20;
inline constexpr uint32_t kIpv6Len = 40;
inline constexpr uint32_t kUdpLen = 8;
inline constexpr uint32_t kBthLen = 16;
inline constexpr uint32_t kDhLen = 20;
inline constexpr uint32_t kIcrcLen = 4;
inline constexpr uint32_t kSackBytes = 32;
inline constexpr uint32_t kMaxPayload = 8192;                           // [R-HDR-8]
inline constexpr uint32_t kHeaderLenV4 = kEthLen + kIpv4Len + kUdpLen;  // 42: BTH offset, IPv4
inline constexpr uint32_t kHeaderLenV6 = kEthLen + kIpv6Len + kUdpLen;  // 62: BTH offset, IPv6
inline constexpr uint32_t kMaxExtLen = 48;
inline constexpr uint32_t kMaxHeaderLen = kHeaderLenV6 + kBthLen + kMaxExtLen;  // 126
inline constexpr uint32_t kMaxFrameLen = kMaxHeaderLen + kMaxPayload + kIcrcLen;

// Per-opcode facts from table 3.2 (`valid` is false for values not in the table).
struct OpcodeInfo {
  uint8_t ext_len;  // extension bytes after BTH
  bool valid;
  bool data;     // class "data" (carries DH, may carry payload)
  bool control;  // class "control" (path ID must be 0)
};
OpcodeInfo opcode_info(uint8_t raw_opcode) noexcept;

// CRC-32C ([R-HDR-28]): reflected poly 0x82F63B78, init/xorout 0xFFFFFFFF.
// crc32c hands 256 bytes and more to ISA-L (carry-less-multiply folding, dispatched by CPU), shorter
// buffers to the SSE4.2 instruction when the CPU has it (decided once at run time), otherwise to the
// scalar code; crc32c_scalar is the portable byte-wise table reference.
uint32_t crc32c(const uint8_t* p, size_t n) noexcept;
uint32_t crc32c_scalar(const uint8_t* p, size_t n) noexcept;
// Continue a finished CRC: crc32c_extend(crc32c(a), b) == crc32c(a || b); crc32c_extend(0, ...) == crc32c(...).
uint32_t crc32c_extend(uint32_t crc, const uint8_t* p, size_t n) noexcept;
bool crc32c_hw_available() noexcept;

using Mac = std::array<uint8_t, 6>;
using Ip6 = std::array<uint8_t, 16>;

namespace detail {
inline uint16_t rd16(const uint8_t* p) noexcept {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return __builtin_bswap16(v);
}
inline uint32_t rd32(const uint8_t* p) noexcept {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return __builtin_bswap32(v);
}
inline uint64_t rd64(const uint8_t* p) noexcept {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}
inline void wr16(uint8_t* p, uint16_t v) noexcept {
  v = __builtin_bswap16(v);
  std::memcpy(p, &v, 2);
}
inline void wr32(uint8_t* p, uint32_t v) noexcept {
  v = __builtin_bswap32(v);
  std::memcpy(p, &v, 4);
}
inline void wr64(uint8_t* p, uint64_t v) noexcept {
  v = __builtin_bswap64(v);
  std::memcpy(p, &v, 8);
}
}  // namespace detail

// [R-HDR-20] SACK bit i lives in byte i/8 at mask 0x80 >> (i%8).
inline bool sack_bit(const uint8_t* sack32, unsigned i) noexcept { return (sack32[i >> 3] >> (7 - (i & 7))) & 1u; }
inline void sack_set(uint8_t* sack32, unsigned i) noexcept { sack32[i >> 3] |= uint8_t(0x80u >> (i & 7)); }

// A validated frame ([R-VAL-4]). Produced only by decode().
class PacketView {
 public:
  // Whole frame
  const uint8_t* frame() const noexcept { return f_; }
  uint32_t frame_len() const noexcept { return len_; }

  // Ethernet
  Mac eth_dst() const noexcept { return mac_at(0); }
  Mac eth_src() const noexcept { return mac_at(6); }
  uint16_t ether_type() const noexcept { return detail::rd16(f_ + 12); }

  // IP
  bool ipv6() const noexcept { return v6_; }
  uint8_t ip_version() const noexcept { return v6_ ? 6 : 4; }
  uint8_t dscp() const noexcept { return traffic_class() >> 2; }
  uint8_t ecn() const noexcept { return traffic_class() & 3; }
  uint8_t ttl() const noexcept { return f_[v6_ ? 14 + 7 : 14 + 8]; }                // TTL / Hop Limit
  uint32_t ip_packet_len() const noexcept { return udp_end_ - kEthLen; }            // IP header + IP payload
  const uint8_t* ip_src() const noexcept { return f_ + (v6_ ? 14 + 8 : 14 + 12); }  // 4 or 16 bytes
  const uint8_t* ip_dst() const noexcept { return f_ + (v6_ ? 14 + 24 : 14 + 16); }
  // IPv4 only
  uint32_t ipv4_src() const noexcept { return detail::rd32(f_ + 14 + 12); }
  uint32_t ipv4_dst() const noexcept { return detail::rd32(f_ + 14 + 16); }
  uint16_t ipv4_id() const noexcept { return detail::rd16(f_ + 14 + 4); }
  bool ipv4_df() const noexcept { return (f_[14 + 6] & 0x40) != 0; }
  uint16_t ipv4_checksum() const noexcept { return detail::rd16(f_ + 14 + 10); }
  // IPv6 only
  Ip6 ipv6_src() const noexcept { return ip6_at(14 + 8); }
  Ip6 ipv6_dst() const noexcept { return ip6_at(14 + 24); }
  uint32_t flow_label() const noexcept { return detail::rd32(f_ + 14) & 0xFFFFFu; }

  // UDP
  uint16_t udp_sport() const noexcept { return detail::rd16(f_ + udp_off()); }
  uint16_t udp_dport() const noexcept { return detail::rd16(f_ + udp_off() + 2); }
  uint16_t udp_length() const noexcept { return detail::rd16(f_ + udp_off() + 4); }
  uint16_t udp_checksum() const noexcept { return detail::rd16(f_ + udp_off() + 6); }

  // BTH ([R-HDR-1..6])
  uint32_t bth_offset() const noexcept { return udp_off() + kUdpLen; }
  uint8_t version() const noexcept { return bth()[0] >> 4; }
  Opcode opcode() const noexcept { return op_; }
  uint16_t flags() const noexcept { return detail::rd16(bth() + 2); }
  bool ar() const noexcept { return (flags() & kFlagAr) != 0; }
  bool retx() const noexcept { return (flags() & kFlagRetx) != 0; }
  bool is_void() const noexcept { return (flags() & kFlagVoid) != 0; }
  uint32_t dcid() const noexcept { return detail::rd32(bth() + 4); }
  uint16_t path_id() const noexcept { return detail::rd16(bth() + 8); }
  uint32_t timestamp() const noexcept { return detail::rd32(bth() + 12); }
  bool is_data() const noexcept { return uint8_t(op_) <= 0x05; }

  // DH (data opcodes)
  uint32_t psn() const noexcept { return rd32_ext(0, data_ok()); }
  uint16_t stream_id() const noexcept { return rd16_ext(4, data_ok()); }
  uint16_t payload_length() const noexcept { return rd16_ext(6, data_ok()); }
  uint32_t msn() const noexcept { return rd32_ext(8, data_ok()); }
  uint32_t msg_length() const noexcept { return rd32_ext(12, data_ok()); }
  uint32_t msg_offset() const noexcept { return rd32_ext(16, data_ok()); }
  // SEND: RSN after DH; WRITE_IMM: RSN in the IMM extension after RETH.
  uint32_t rsn() const noexcept {
    return rd32_ext(op_ == Opcode::Send ? 20 : 32, op_ == Opcode::Send || op_ == Opcode::WriteImm);
  }
  // RETH (WRITE, WRITE_IMM, READ_REQ)
  uint64_t remote_va() const noexcept {
    assert(has_reth());
    return detail::rd64(ext() + 20);
  }
  uint32_t rkey() const noexcept { return rd32_ext(28, has_reth()); }
  uint32_t immediate() const noexcept { return rd32_ext(36, op_ == Opcode::WriteImm); }

  // AETH (ACK)
  uint32_t cpsn() const noexcept { return rd32_ext(0, op_ == Opcode::Ack); }
  uint32_t ce_count() const noexcept { return rd32_ext(4, op_ == Opcode::Ack); }
  uint32_t ts_echo() const noexcept { return rd32_ext(8, op_ == Opcode::Ack); }
  uint32_t rate_hint() const noexcept { return rd32_ext(12, op_ == Opcode::Ack); }
  const uint8_t* sack_bytes() const noexcept {
    assert(op_ == Opcode::Ack);
    return ext() + 16;
  }
  bool sack(unsigned i) const noexcept { return sack_bit(sack_bytes(), i); }  // i < 256

  // NAKH (NAK)
  uint32_t nak_psn() const noexcept { return rd32_ext(0, op_ == Opcode::Nak); }
  uint8_t nak_code() const noexcept {
    assert(op_ == Opcode::Nak);
    return ext()[4];
  }
  uint16_t nak_detail() const noexcept { return rd16_ext(6, op_ == Opcode::Nak); }

  // CONN (CONNECT, ACCEPT)
  uint32_t scid() const noexcept { return rd32_ext(0, has_conn()); }
  uint32_t isn() const noexcept { return rd32_ext(4, has_conn()); }
  uint16_t path_count() const noexcept { return rd16_ext(8, has_conn()); }
  uint16_t stream_count() const noexcept { return rd16_ext(10, has_conn()); }
  uint16_t max_payload() const noexcept { return rd16_ext(12, has_conn()); }
  uint16_t window_cap() const noexcept { return rd16_ext(14, has_conn()); }

  // REJ (REJECT, DISCONNECT)
  uint8_t reason() const noexcept {
    assert(op_ == Opcode::Reject || op_ == Opcode::Disconnect);
    return ext()[0];
  }

  // Payload (data opcodes: the bytes between the extension and the ICRC; empty otherwise)
  const uint8_t* payload() const noexcept { return f_ + payload_off_; }
  uint32_t payload_len() const noexcept { return payload_len_; }
  uint32_t payload_offset() const noexcept { return payload_off_; }
  uint32_t ext_offset() const noexcept { return bth_offset() + kBthLen; }
  uint32_t icrc() const noexcept { return detail::rd32(f_ + udp_end_ - kIcrcLen); }

 private:
  friend Error decode(const uint8_t*, uint32_t, uint16_t, PacketView&) noexcept;

  uint32_t udp_off() const noexcept { return v6_ ? kEthLen + kIpv6Len : kEthLen + kIpv4Len; }
  const uint8_t* bth() const noexcept { return f_ + udp_off() + kUdpLen; }
  const uint8_t* ext() const noexcept { return bth() + kBthLen; }
  uint8_t traffic_class() const noexcept { return v6_ ? uint8_t(detail::rd16(f_ + 14) >> 4) : f_[15]; }
  bool data_ok() const noexcept { return is_data(); }
  bool has_reth() const noexcept { return op_ == Opcode::Write || op_ == Opcode::WriteImm || op_ == Opcode::ReadReq; }
  bool has_conn() const noexcept { return op_ == Opcode::Connect || op_ == Opcode::Accept; }
  uint32_t rd32_ext(uint32_t off, [[maybe_unused]] bool ok) const noexcept {
    assert(ok);
    return detail::rd32(ext() + off);
  }
  uint16_t rd16_ext(uint32_t off, [[maybe_unused]] bool ok) const noexcept {
    assert(ok);
    return detail::rd16(ext() + off);
  }
  Mac mac_at(uint32_t off) const noexcept {
    Mac m;
    std::memcpy(m.data(), f_ + off, 6);
    return m;
  }
  Ip6 ip6_at(uint32_t off) const noexcept {
    Ip6 a;
    std::memcpy(a.data(), f_ + off, 16);
    return a;
  }

  const uint8_t* f_ = nullptr;
  uint32_t len_ = 0;
  uint32_t udp_end_ = 0;      // end of the IP packet (= end of the UDP datagram)
  uint32_t payload_off_ = 0;  // first payload byte (end of the extension)
  uint32_t payload_len_ = 0;
  Opcode op_ = Opcode::Send;
  bool v6_ = false;
};

// Decode and validate one Ethernet frame ([R-VAL-1] order, first failing check decides; [R-VAL-2]
// never reads outside [frame, frame + len)). `udp_port` is the configured destination port.
Error decode(const uint8_t* frame, uint32_t len, uint16_t udp_port, PacketView& out) noexcept;

// ------------------------------------------------------------------------------------------------
// In-place building

// Addresses and per-class IP marking of one path ([R-ENC-*]). Defaults follow the spec.
struct PathConfig {
  Mac eth_dst{};
  Mac eth_src{};
  bool ipv6 = false;
  uint32_t ipv4_src = 0;  // host-order value, e.g. 0x0a000001 for 10.0.0.1
  uint32_t ipv4_dst = 0;
  Ip6 ipv6_src{};
  Ip6 ipv6_dst{};
  uint8_t dscp_data = 26;  // [R-ENC-10]
  uint8_t dscp_ctrl = 48;
  uint8_t ecn_data = 2;  // ECT(0), [R-ENC-9]
  uint8_t ecn_ctrl = 0;  // Not-ECT
  uint8_t ttl = 64;      // [R-ENC-11]
  uint16_t udp_sport = 49152;
  uint16_t udp_dport = kDefaultUdpPort;
  uint16_t ipv4_id = 0;
  bool ipv4_df = true;  // [R-ENC-3] DF SHOULD be set
  // IPv6 flow label; nullopt = low 20 bits of udp_sport ([R-ENC-4] SHOULD).
  std::optional<uint32_t> flow_label;
};

// Prebuilt Ethernet + IP + UDP header images of one path, one for data packets and one for
// ACK/NAK/probe/control packets (they differ in DSCP/ECN). Lengths and checksums are left zero for
// finalize().
class FrameTemplate {
 public:
  FrameTemplate() noexcept : FrameTemplate(PathConfig{}) {}
  explicit FrameTemplate(const PathConfig& cfg) noexcept;
  // Re-path ([R-ENC-6]): new UDP source port (and flow label if it follows the port).
  void set_udp_sport(uint16_t sport) noexcept;
  const PathConfig& config() const noexcept { return cfg_; }
  uint32_t header_len() const noexcept { return hlen_; }  // 42 or 62: offset of the BTH
  // Copy the header image for the packet class into `buf`; returns the BTH address (buf + header_len()).
  uint8_t* begin(uint8_t* buf, bool data) const noexcept {
    std::memcpy(buf, data ? img_data_ : img_ctrl_, kHeaderLenV6);  // fixed-size copy; tail is overwritten
    return buf + hlen_;
  }

 private:
  void render() noexcept;
  PathConfig cfg_;
  uint32_t hlen_ = kHeaderLenV4;
  alignas(64) uint8_t img_data_[kHeaderLenV6]{};
  alignas(64) uint8_t img_ctrl_[kHeaderLenV6]{};
};

// Common BTH fields. The version (1) and reserved bits (0) are written by the put_* functions.
struct BthFields {
  uint16_t flags = 0;
  uint32_t dcid = 0;
  uint16_t path_id = 0;
  uint32_t timestamp = 0;
};
// DH fields; Payload Length is written by finalize().
struct DhFields {
  uint32_t psn = 0;
  uint16_t stream_id = 0;
  uint32_t msn = 0;
  uint32_t msg_length = 0;
  uint32_t msg_offset = 0;
};
struct AckFields {
  uint32_t cpsn = 0;
  uint32_t ce_count = 0;
  uint32_t ts_echo = 0;
  uint32_t rate_hint = 0;
  const uint8_t* sack = nullptr;  // 32 wire bytes ([R-HDR-20]); nullptr = all zero
};
struct ConnFields {
  uint32_t scid = 0;
  uint32_t isn = 0;
  uint16_t path_count = 0;
  uint16_t stream_count = 0;
  uint16_t max_payload = 0;
  uint16_t window_cap = 0;
};

// Write the BTH (+ extension) at `bth`; each returns the first byte after the extension.
uint8_t* put_bth(uint8_t* bth, Opcode op, const BthFields& b) noexcept;
uint8_t* put_send(uint8_t* bth, const BthFields& b, const DhFields& dh, uint32_t rsn) noexcept;
uint8_t* put_write(uint8_t* bth, const BthFields& b, const DhFields& dh, uint64_t va, uint32_t rkey) noexcept;
uint8_t* put_write_imm(uint8_t* bth, const BthFields& b, const DhFields& dh, uint64_t va, uint32_t rkey, uint32_t rsn,
                       uint32_t imm) noexcept;
uint8_t* put_read_req(uint8_t* bth, const BthFields& b, const DhFields& dh, uint64_t va, uint32_t rkey) noexcept;
uint8_t* put_read_resp(uint8_t* bth, const BthFields& b, const DhFields& dh) noexcept;
uint8_t* put_ack(uint8_t* bth, const BthFields& b, const AckFields& a) noexcept;
uint8_t* put_nak(uint8_t* bth, const BthFields& b, uint32_t nak_psn, uint8_t code, uint16_t detail) noexcept;
uint8_t* put_probe(uint8_t* bth, const BthFields& b) noexcept;
uint8_t* put_connect(uint8_t* bth, const BthFields& b, const ConnFields& c) noexcept;
uint8_t* put_accept(uint8_t* bth, const BthFields& b, const ConnFields& c) noexcept;
uint8_t* put_reject(uint8_t* bth, const BthFields& b, uint8_t reason) noexcept;
uint8_t* put_disconnect(uint8_t* bth, const BthFields& b, uint8_t reason) noexcept;
uint8_t* put_disconnect_ack(uint8_t* bth, const BthFields& b) noexcept;

// Fill the length fields and checksums of a frame whose headers were written by begin() + put_*
// and whose `payload_len` payload bytes are in place after the extension: IPv4 total length and
// header checksum / IPv6 payload length, UDP length, UDP checksum 0, DH Payload Length (data
// opcodes) and the ICRC. Returns the frame length. Must not be given payload_len > 65535 - headers.
uint32_t finalize(uint8_t* frame, uint32_t payload_len) noexcept;

// Re-stamp the IPv4 identification (before finalize(), which computes the header checksum).
inline void set_ipv4_id(uint8_t* frame, uint16_t id) noexcept { detail::wr16(frame + 14 + 4, id); }

// RFC 1071 ones-complement sum helpers (exposed for tests and for the engine's own use).
// Returns the 16-bit folded sum (not complemented) of `n` bytes in network order, plus `initial`.
uint16_t ones_sum(const uint8_t* p, size_t n, uint32_t initial = 0) noexcept;

// ------------------------------------------------------------------------------------------------
// Test/debug only (may allocate)

std::string canonical(const PacketView& v);  // SPEC appendix C, one line
std::string canonical_error(Error e);        // "ERROR <Kind>"

// Every field of a frame, raw, so tests can encode any packet, including invalid ones. With all
// `raw` overrides empty, build() produces exactly what a conforming sender sends (through the
// in-place builder above).
struct Fields {
  // Ethernet / IP / UDP
  Mac eth_dst{};
  Mac eth_src{};
  bool ipv6 = false;
  uint32_t ipv4_src = 0;
  uint32_t ipv4_dst = 0;
  Ip6 ipv6_src{};
  Ip6 ipv6_dst{};
  uint8_t dscp = 26;
  uint8_t ecn = 2;
  uint8_t ttl = 64;
  uint16_t ipv4_id = 0;
  bool ipv4_df = true;
  uint32_t flow_label = 0;
  uint16_t udp_sport = 49152;
  uint16_t udp_dport = kDefaultUdpPort;
  // BTH (raw)
  uint8_t version = 1;
  uint8_t bth_rsvd4 = 0;  // the 4 bits after Version
  uint8_t opcode = uint8_t(Opcode::Write);
  uint16_t flags = 0;
  uint32_t dcid = 1;
  uint16_t path_id = 0;
  uint16_t bth_rsvd16 = 0;
  uint32_t timestamp = 0;
  // DH
  uint32_t psn = 0;
  uint16_t stream_id = 0;
  uint32_t msn = 0;
  uint32_t msg_length = 0;
  uint32_t msg_offset = 0;
  // SEND / IMM / RETH
  uint32_t rsn = 0;
  uint64_t remote_va = 0;
  uint32_t rkey = 0;
  uint32_t immediate = 0;
  // AETH
  uint32_t cpsn = 0;
  uint32_t ce_count = 0;
  uint32_t ts_echo = 0;
  uint32_t rate_hint = 0;
  std::array<uint8_t, 32> sack{};
  // NAKH
  uint32_t nak_psn = 0;
  uint8_t nak_code = 1;
  uint8_t nak_rsvd = 0;
  uint16_t nak_detail = 0;
  // CONN
  uint32_t scid = 1;
  uint32_t isn = 0;
  uint16_t path_count = 1;
  uint16_t stream_count = 1;
  uint16_t max_payload = 4096;
  uint16_t window_cap = 256;
  // REJ
  uint8_t reason = 0;
  uint32_t rej_rsvd = 0;  // low 24 bits used

  // Overrides that break a conforming frame (nullopt / false = the correct value).
  struct Raw {
    std::optional<uint16_t> ether_type;
    std::optional<uint8_t> ip_version;      // version nibble
    std::optional<uint8_t> ipv4_ihl;        // IHL nibble (header stays 20 bytes)
    std::optional<uint16_t> ip_length;      // IPv4 total length / IPv6 payload length
    std::optional<uint16_t> ipv4_checksum;  // else computed
    uint16_t ipv4_checksum_xor = 0;         // applied to the computed checksum (non-zero = wrong)
    std::optional<uint16_t> ipv4_frag;      // whole flags+offset word (else DF per ipv4_df)
    std::optional<uint8_t> ip_proto;        // IPv4 protocol / IPv6 next header
    std::optional<uint16_t> udp_length;
    std::optional<uint16_t> udp_checksum;    // explicit value
    bool udp_checksum_compute = false;       // store a correct (non-zero, RFC 768) UDP checksum
    bool udp_checksum_corrupt = false;       // store a non-zero UDP checksum that does not verify
    std::optional<uint16_t> payload_length;  // DH Payload Length field
    std::optional<uint32_t> icrc;            // else computed
    uint32_t icrc_xor = 0;                   // applied to the computed ICRC (non-zero = wrong)
    uint32_t eth_padding = 0;                // zero bytes appended after the IP packet
  } raw;
};

// Encode `f` with `payload` placed after the extension (for an opcode outside table 3.2, right
// after the BTH). Uses FrameTemplate + put_* + finalize, then applies f.raw.
std::vector<uint8_t> build(const Fields& f, const std::vector<uint8_t>& payload);
// The fields of a decoded frame (raw overrides left empty except udp_checksum when non-zero).
Fields fields_of(const PacketView& v);

}  // namespace mroce::fast
