// Reference wire codec of MRoCE v0.1: the oracle's codec.
//
// Written straight from SPEC.md (sections 2, 3, 4 and appendix C), field by field, for clarity and
// obvious correctness rather than speed. It shares no code with impl/codec/: the two are compared
// by the differential tests, so a mistake has to be made twice, independently, to go unnoticed.
// Depends on the C++ standard library only.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mroce::ref {

// SPEC section 4, in the order of the list of error kinds there.
enum class ErrorKind {
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
    SackBase,
};

// The exact names of section 4 ("Truncated", "EtherType", ...); "UNKNOWN" for a value outside the
// enumeration.
std::string_view error_name(ErrorKind kind);

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
    DisconnectAck = 0x24,
};

// Names of table 3.2 ("SEND", "WRITE", "WRITE_IMM", ...); "UNKNOWN" for a value not in the table.
std::string_view opcode_name(Opcode op);

// Table 12.3.
enum class NakCode : uint8_t { Rnr = 1, RemoteAccess = 2, InvalidRequest = 3, Length = 4 };

// Names of table 12.3 ("RNR", "RemoteAccess", "InvalidRequest", "Length"); "UNKNOWN" otherwise.
std::string_view nak_code_name(NakCode code);

// [R-ENC-5]
inline constexpr uint16_t kDefaultUdpPort = 4793;

// BTH flag masks, [R-HDR-3].
inline constexpr uint16_t kFlagAr = 0x8000;
inline constexpr uint16_t kFlagRetx = 0x4000;
inline constexpr uint16_t kFlagVoid = 0x2000;

// [R-HDR-8]: the largest payload any data packet may carry.
inline constexpr uint32_t kMaxPayload = 8192;

// CRC-32C as defined in [R-HDR-28], computed bit by bit from the definition.
uint32_t crc32c(std::span<const uint8_t> bytes);

// Every field a decoded packet exposes ([R-VAL-4]), as plain values. Value-initialise ({}); fields
// that the packet's opcode does not carry stay 0.
struct Packet {
    // Ethernet, [R-ENC-2]
    std::array<uint8_t, 6> eth_dst, eth_src;
    // IP, [R-ENC-3] / [R-ENC-4]
    bool ipv6;                               // false = IPv4
    std::array<uint8_t, 16> ip_src, ip_dst;  // IPv4 uses the first 4 bytes, the rest are zero
    uint8_t dscp, ecn;
    uint16_t ipv4_id;
    bool ipv4_df;
    uint8_t ttl;  // IPv4 TTL or IPv6 Hop Limit
    uint32_t ipv6_flow_label;
    // UDP, [R-ENC-5..7]
    uint16_t udp_sport, udp_dport, udp_checksum;  // checksum as on the wire (decode) / ignored (encode)
    // BTH, 3.1
    uint8_t version;
    Opcode opcode;
    uint16_t flags;
    uint32_t dcid;
    uint16_t path_id;
    uint32_t timestamp;
    // DH, 3.3 (data opcodes)
    uint32_t psn;
    uint16_t stream_id;
    uint16_t payload_length;  // the DH field (decode) / ignored, taken from the payload (encode)
    uint32_t msn, msg_length, msg_offset;
    uint32_t rsn;  // SEND ext or IMM ext
    // RETH, 3.4
    uint64_t remote_va;
    uint32_t rkey;
    // IMM ext, 3.4
    uint32_t immediate;
    // AETH, 3.5
    uint32_t cpsn, ce_count, ts_echo, rate_hint;
    std::array<uint8_t, 32> sack;  // bitmap bytes in wire order ([R-HDR-20])
    // NAKH, 3.6
    uint32_t nak_psn;
    uint8_t nak_code;
    uint16_t nak_detail;
    // CONN, 3.8
    uint32_t scid, isn;
    uint16_t path_count, stream_count, max_payload, window_cap;
    // REJ, 3.8
    uint8_t reason;
    // Payload as a position in the frame (decode; 0 / ignored on encode, where the payload bytes are
    // passed separately). Set for every data opcode, READ_REQ included (length 0).
    uint32_t payload_offset, payload_len;
    // ICRC, 3.9 (decode; ignored on encode, which computes it)
    uint32_t icrc;

    friend bool operator==(const Packet&, const Packet&) = default;
};

// On success `error` is empty and `packet` holds the decoded fields. On failure `error` holds the
// one error kind of [R-VAL-1] and `packet` is value-initialised (all zero).
struct DecodeResult {
    std::optional<ErrorKind> error;
    Packet packet;
    bool ok() const { return !error; }
};

// Validates and decodes one Ethernet frame, performing the checks of [R-VAL-1] in their order (the
// first failing check decides). Never reads outside `frame` ([R-VAL-2]). Bytes after the end of the
// IP packet are ignored ([R-ENC-8]).
DecodeResult decode(std::span<const uint8_t> frame, uint16_t udp_port = kDefaultUdpPort);

// Builds a frame from fields, in the layout of SPEC sections 2 and 3. Computes: IPv4 total length
// and header checksum / IPv6 payload length, UDP length, UDP checksum (0 unless
// compute_udp_checksum), DH Payload Length (= payload.size()) and the ICRC. Every other field is
// written as given, including version, flags, DCID, opcode, NAK code, reason, so that tests can
// build invalid packets on purpose; reserved bits are written as zero. The payload is written after
// the opcode's extension whatever the opcode. An opcode outside table 3.2 gets no extension.
// Throws std::invalid_argument when a value does not fit its wire field (dscp > 63, ecn > 3,
// flow label > 0xFFFFF, version > 15) and std::length_error when the packet would not fit the
// 16-bit IP/UDP length fields.
std::vector<uint8_t> encode(const Packet& p, std::span<const uint8_t> payload, bool compute_udp_checksum = false);

// The one-line text form of appendix C: "ETH ... | IPV4 ... | ... | ICRC 0x...", or
// "ERROR <Kind>". Every printed value comes from r.packet (the UDP length is derived from the
// opcode and the payload length, which equals the wire value for a decoded packet); `frame` is
// the frame r was decoded from and is not otherwise needed.
std::string canonical(const DecodeResult& r, std::span<const uint8_t> frame);

// Length of the extension that follows the BTH for `op` (table 3.2); 0 for an opcode not in the
// table.
uint32_t extension_length(Opcode op);

// Class of an opcode (table 3.2).
bool is_data_opcode(Opcode op);
bool is_control_opcode(Opcode op);
bool is_known_opcode(Opcode op);

}  // namespace mroce::ref
