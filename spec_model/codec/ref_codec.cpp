// Reference wire codec of MRoCE v0.1. See ref_codec.hpp.
//
// Layout of this file: byte access, checksums, names, then one reader and one writer per header
// (in the order of SPEC section 3), then decode() as the numbered list of [R-VAL-1], then encode()
// and canonical(). Offsets are written as in the spec diagrams: relative to the start of the header
// that contains the field ([R-CONV-3]).
#include "codec/ref_codec.hpp"

#include <stdexcept>

namespace mroce::ref {
namespace {

using Bytes = std::span<const uint8_t>;

// ---------------------------------------------------------------------------------------------
// Byte access, big-endian ([R-CONV-3]).
//
// decode() only reads bytes that an earlier check proved present ([R-VAL-1]). These readers check
// again and throw std::logic_error: if that proof were ever wrong, the tests would see an exception
// instead of an out-of-bounds read ([R-VAL-2]).
// ---------------------------------------------------------------------------------------------

void require_present(Bytes b, size_t off, size_t len) {
    if (off > b.size() || len > b.size() - off) {
        throw std::logic_error("ref_codec: read outside the frame (bug in the reference codec)");
    }
}

uint8_t get8(Bytes b, size_t off) {
    require_present(b, off, 1);
    return b[off];
}

uint16_t get16(Bytes b, size_t off) {
    require_present(b, off, 2);
    return static_cast<uint16_t>((b[off] << 8) | b[off + 1]);
}

uint32_t get32(Bytes b, size_t off) {
    require_present(b, off, 4);
    return (uint32_t{b[off]} << 24) | (uint32_t{b[off + 1]} << 16) | (uint32_t{b[off + 2]} << 8) | uint32_t{b[off + 3]};
}

uint64_t get64(Bytes b, size_t off) { return (uint64_t{get32(b, off)} << 32) | uint64_t{get32(b, off + 4)}; }

Bytes sub(Bytes b, size_t off, size_t len) {
    require_present(b, off, len);
    return b.subspan(off, len);
}

void put8(std::vector<uint8_t>& out, uint8_t v) { out.push_back(v); }

void put16(std::vector<uint8_t>& out, uint16_t v) {
    out.push_back(static_cast<uint8_t>(v >> 8));
    out.push_back(static_cast<uint8_t>(v));
}

void put32(std::vector<uint8_t>& out, uint32_t v) {
    put16(out, static_cast<uint16_t>(v >> 16));
    put16(out, static_cast<uint16_t>(v));
}

void put64(std::vector<uint8_t>& out, uint64_t v) {
    put32(out, static_cast<uint32_t>(v >> 32));
    put32(out, static_cast<uint32_t>(v));
}

void put_bytes(std::vector<uint8_t>& out, Bytes b) { out.insert(out.end(), b.begin(), b.end()); }

// ---------------------------------------------------------------------------------------------
// Internet checksum (RFC 1071): one's complement sum of 16-bit big-endian words, an odd last byte
// padded with a zero byte.
// ---------------------------------------------------------------------------------------------

uint32_t add_words(uint32_t sum, Bytes b) {
    for (size_t i = 0; i < b.size(); i += 2) {
        const uint32_t hi = b[i];
        const uint32_t lo = (i + 1 < b.size()) ? b[i + 1] : 0;
        sum += (hi << 8) | lo;
        sum = (sum & 0xFFFF) + (sum >> 16);  // end-around carry, kept folded so it cannot overflow
    }
    return sum;
}

uint16_t fold(uint32_t sum) {
    while (sum > 0xFFFF) sum = (sum & 0xFFFF) + (sum >> 16);
    return static_cast<uint16_t>(sum);
}

// The pseudo-header of RFC 768 (IPv4) / RFC 8200 section 8.1 (IPv6), as bytes.
std::vector<uint8_t> udp_pseudo_header(bool ipv6, const std::array<uint8_t, 16>& src,
                                       const std::array<uint8_t, 16>& dst, uint16_t udp_length) {
    std::vector<uint8_t> ph;
    const size_t addr_len = ipv6 ? 16 : 4;
    ph.insert(ph.end(), src.begin(), src.begin() + static_cast<std::ptrdiff_t>(addr_len));
    ph.insert(ph.end(), dst.begin(), dst.begin() + static_cast<std::ptrdiff_t>(addr_len));
    if (ipv6) {
        put32(ph, udp_length);  // upper-layer packet length, 32 bits
        put8(ph, 0);
        put8(ph, 0);
        put8(ph, 0);
        put8(ph, 17);  // next header
    } else {
        put8(ph, 0);
        put8(ph, 17);  // protocol
        put16(ph, udp_length);
    }
    return ph;
}

// ---------------------------------------------------------------------------------------------
// Opcode classes, table 3.2.
// ---------------------------------------------------------------------------------------------

// [R-HDR-3]: the flags each opcode may carry.
uint16_t allowed_flags(Opcode op) {
    if (is_data_opcode(op)) return kFlagAr | kFlagRetx | kFlagVoid;
    if (op == Opcode::Probe) return kFlagAr;
    return 0;
}

// Header sizes, section 2 and table 3.2.
constexpr size_t kEthLen = 14;
constexpr size_t kIpv4Len = 20;
constexpr size_t kIpv6Len = 40;
constexpr size_t kUdpLen = 8;
constexpr size_t kBthLen = 16;
constexpr size_t kIcrcLen = 4;
constexpr size_t kDhLen = 20;
constexpr size_t kSendExtLen = 4;
constexpr size_t kRethLen = 12;
constexpr size_t kImmExtLen = 8;
constexpr size_t kAethLen = 48;
constexpr size_t kNakhLen = 8;
constexpr size_t kConnLen = 16;
constexpr size_t kRejLen = 4;

constexpr uint16_t kEtherTypeIpv4 = 0x0800;
constexpr uint16_t kEtherTypeIpv6 = 0x86DD;
constexpr uint8_t kIpProtoUdp = 17;

// ---------------------------------------------------------------------------------------------
// Readers: one per header. Each is called only once decode() has proved the header present.
// ---------------------------------------------------------------------------------------------

// [R-ENC-2]
void read_eth(Bytes eth, Packet& p) {
    for (size_t i = 0; i < 6; ++i) p.eth_dst[i] = get8(eth, i);
    for (size_t i = 0; i < 6; ++i) p.eth_src[i] = get8(eth, 6 + i);
}

// [R-ENC-3], RFC 791 header layout.
void read_ipv4(Bytes ip, Packet& p) {
    p.ipv6 = false;
    p.dscp = static_cast<uint8_t>(get8(ip, 1) >> 2);
    p.ecn = static_cast<uint8_t>(get8(ip, 1) & 0x03);
    p.ipv4_id = get16(ip, 4);
    p.ipv4_df = (get16(ip, 6) & 0x4000) != 0;
    p.ttl = get8(ip, 8);
    for (size_t i = 0; i < 4; ++i) p.ip_src[i] = get8(ip, 12 + i);
    for (size_t i = 0; i < 4; ++i) p.ip_dst[i] = get8(ip, 16 + i);
}

// [R-ENC-4], RFC 8200 header layout: version (4 bits), traffic class (8), flow label (20).
void read_ipv6(Bytes ip, Packet& p) {
    p.ipv6 = true;
    const uint32_t first_word = get32(ip, 0);
    const uint8_t traffic_class = static_cast<uint8_t>((first_word >> 20) & 0xFF);
    p.dscp = static_cast<uint8_t>(traffic_class >> 2);
    p.ecn = static_cast<uint8_t>(traffic_class & 0x03);
    p.ipv6_flow_label = first_word & 0xFFFFF;
    p.ttl = get8(ip, 7);  // hop limit
    for (size_t i = 0; i < 16; ++i) p.ip_src[i] = get8(ip, 8 + i);
    for (size_t i = 0; i < 16; ++i) p.ip_dst[i] = get8(ip, 24 + i);
}

// [R-ENC-5..8]
void read_udp(Bytes udp, Packet& p) {
    p.udp_sport = get16(udp, 0);
    p.udp_dport = get16(udp, 2);
    p.udp_checksum = get16(udp, 6);
}

// 3.1 BTH. The reserved bits are not fields of Packet: check 18 reads them from the bytes.
void read_bth(Bytes bth, Packet& p) {
    p.version = static_cast<uint8_t>(get8(bth, 0) >> 4);
    p.opcode = static_cast<Opcode>(get8(bth, 1));
    p.flags = get16(bth, 2);
    p.dcid = get32(bth, 4);
    p.path_id = get16(bth, 8);
    p.timestamp = get32(bth, 12);
}

// 3.3 DH
void read_dh(Bytes dh, Packet& p) {
    p.psn = get32(dh, 0);
    p.stream_id = get16(dh, 4);
    p.payload_length = get16(dh, 6);
    p.msn = get32(dh, 8);
    p.msg_length = get32(dh, 12);
    p.msg_offset = get32(dh, 16);
}

// 3.4 SEND extension
void read_send_ext(Bytes ext, Packet& p) { p.rsn = get32(ext, 0); }

// 3.4 RETH
void read_reth(Bytes reth, Packet& p) {
    p.remote_va = get64(reth, 0);
    p.rkey = get32(reth, 8);
}

// 3.4 IMM extension
void read_imm_ext(Bytes ext, Packet& p) {
    p.rsn = get32(ext, 0);
    p.immediate = get32(ext, 4);
}

// 3.5 AETH
void read_aeth(Bytes aeth, Packet& p) {
    p.cpsn = get32(aeth, 0);
    p.ce_count = get32(aeth, 4);
    p.ts_echo = get32(aeth, 8);
    p.rate_hint = get32(aeth, 12);
    for (size_t i = 0; i < 32; ++i) p.sack[i] = get8(aeth, 16 + i);
}

// 3.6 NAKH. The reserved byte (offset 5) is checked from the bytes by check 22.
void read_nakh(Bytes nakh, Packet& p) {
    p.nak_psn = get32(nakh, 0);
    p.nak_code = get8(nakh, 4);
    p.nak_detail = get16(nakh, 6);
}

// 3.8 CONN
void read_conn(Bytes conn, Packet& p) {
    p.scid = get32(conn, 0);
    p.isn = get32(conn, 4);
    p.path_count = get16(conn, 8);
    p.stream_count = get16(conn, 10);
    p.max_payload = get16(conn, 12);
    p.window_cap = get16(conn, 14);
}

// 3.8 REJ. The reserved bytes (offsets 1..3) are checked from the bytes by check 23.
void read_rej(Bytes rej, Packet& p) { p.reason = get8(rej, 0); }

// Reads the extension of `op` (table 3.2), which starts right after the BTH.
void read_extension(Bytes ext, Opcode op, Packet& p) {
    switch (op) {
        case Opcode::Send:
            read_dh(sub(ext, 0, kDhLen), p);
            read_send_ext(sub(ext, kDhLen, kSendExtLen), p);
            break;
        case Opcode::Write:
        case Opcode::ReadReq:
            read_dh(sub(ext, 0, kDhLen), p);
            read_reth(sub(ext, kDhLen, kRethLen), p);
            break;
        case Opcode::WriteImm:
            read_dh(sub(ext, 0, kDhLen), p);
            read_reth(sub(ext, kDhLen, kRethLen), p);
            read_imm_ext(sub(ext, kDhLen + kRethLen, kImmExtLen), p);
            break;
        case Opcode::ReadResp:
            read_dh(sub(ext, 0, kDhLen), p);
            break;
        case Opcode::Ack:
            read_aeth(sub(ext, 0, kAethLen), p);
            break;
        case Opcode::Nak:
            read_nakh(sub(ext, 0, kNakhLen), p);
            break;
        case Opcode::Connect:
        case Opcode::Accept:
            read_conn(sub(ext, 0, kConnLen), p);
            break;
        case Opcode::Reject:
        case Opcode::Disconnect:
            read_rej(sub(ext, 0, kRejLen), p);
            break;
        case Opcode::Probe:
        case Opcode::DisconnectAck:
            break;
    }
}

// ---------------------------------------------------------------------------------------------
// Writers: one per header, appending to `out`.
// ---------------------------------------------------------------------------------------------

// [R-ENC-2]
void write_eth(std::vector<uint8_t>& out, const Packet& p) {
    put_bytes(out, p.eth_dst);
    put_bytes(out, p.eth_src);
    put16(out, p.ipv6 ? kEtherTypeIpv6 : kEtherTypeIpv4);
}

// [R-ENC-3]: version 4, IHL 5, DF from the packet, MF and fragment offset 0, protocol 17.
void write_ipv4(std::vector<uint8_t>& out, const Packet& p, uint16_t total_length) {
    std::vector<uint8_t> h;
    put8(h, 0x45);  // version 4, IHL 5
    put8(h, static_cast<uint8_t>((p.dscp << 2) | p.ecn));
    put16(h, total_length);
    put16(h, p.ipv4_id);
    put16(h, p.ipv4_df ? 0x4000 : 0x0000);  // reserved bit 0, DF, MF 0, fragment offset 0
    put8(h, p.ttl);
    put8(h, kIpProtoUdp);
    put16(h, 0);  // header checksum, filled below
    h.insert(h.end(), p.ip_src.begin(), p.ip_src.begin() + 4);
    h.insert(h.end(), p.ip_dst.begin(), p.ip_dst.begin() + 4);
    const uint16_t checksum = static_cast<uint16_t>(~fold(add_words(0, h)));
    h[10] = static_cast<uint8_t>(checksum >> 8);
    h[11] = static_cast<uint8_t>(checksum);
    put_bytes(out, h);
}

// [R-ENC-4]: version 6, traffic class = DSCP << 2 | ECN, flow label, next header 17.
void write_ipv6(std::vector<uint8_t>& out, const Packet& p, uint16_t payload_length) {
    const uint32_t traffic_class = (uint32_t{p.dscp} << 2) | p.ecn;
    put32(out, (uint32_t{6} << 28) | (traffic_class << 20) | p.ipv6_flow_label);
    put16(out, payload_length);
    put8(out, kIpProtoUdp);
    put8(out, p.ttl);  // hop limit
    put_bytes(out, p.ip_src);
    put_bytes(out, p.ip_dst);
}

// [R-ENC-5..8]
void write_udp(std::vector<uint8_t>& out, const Packet& p, uint16_t length, uint16_t checksum) {
    put16(out, p.udp_sport);
    put16(out, p.udp_dport);
    put16(out, length);
    put16(out, checksum);
}

// 3.1 BTH, reserved bits zero.
void write_bth(std::vector<uint8_t>& out, const Packet& p) {
    put8(out, static_cast<uint8_t>(p.version << 4));
    put8(out, static_cast<uint8_t>(p.opcode));
    put16(out, p.flags);
    put32(out, p.dcid);
    put16(out, p.path_id);
    put16(out, 0);  // reserved
    put32(out, p.timestamp);
}

// 3.3 DH
void write_dh(std::vector<uint8_t>& out, const Packet& p, uint16_t payload_length) {
    put32(out, p.psn);
    put16(out, p.stream_id);
    put16(out, payload_length);
    put32(out, p.msn);
    put32(out, p.msg_length);
    put32(out, p.msg_offset);
}

// 3.4 SEND extension
void write_send_ext(std::vector<uint8_t>& out, const Packet& p) { put32(out, p.rsn); }

// 3.4 RETH
void write_reth(std::vector<uint8_t>& out, const Packet& p) {
    put64(out, p.remote_va);
    put32(out, p.rkey);
}

// 3.4 IMM extension
void write_imm_ext(std::vector<uint8_t>& out, const Packet& p) {
    put32(out, p.rsn);
    put32(out, p.immediate);
}

// 3.5 AETH
void write_aeth(std::vector<uint8_t>& out, const Packet& p) {
    put32(out, p.cpsn);
    put32(out, p.ce_count);
    put32(out, p.ts_echo);
    put32(out, p.rate_hint);
    put_bytes(out, p.sack);
}

// 3.6 NAKH, reserved byte zero.
void write_nakh(std::vector<uint8_t>& out, const Packet& p) {
    put32(out, p.nak_psn);
    put8(out, p.nak_code);
    put8(out, 0);  // reserved
    put16(out, p.nak_detail);
}

// 3.8 CONN
void write_conn(std::vector<uint8_t>& out, const Packet& p) {
    put32(out, p.scid);
    put32(out, p.isn);
    put16(out, p.path_count);
    put16(out, p.stream_count);
    put16(out, p.max_payload);
    put16(out, p.window_cap);
}

// 3.8 REJ, reserved bytes zero.
void write_rej(std::vector<uint8_t>& out, const Packet& p) {
    put8(out, p.reason);
    put8(out, 0);
    put16(out, 0);
}

void write_extension(std::vector<uint8_t>& out, const Packet& p, uint16_t payload_length) {
    switch (p.opcode) {
        case Opcode::Send:
            write_dh(out, p, payload_length);
            write_send_ext(out, p);
            break;
        case Opcode::Write:
        case Opcode::ReadReq:
            write_dh(out, p, payload_length);
            write_reth(out, p);
            break;
        case Opcode::WriteImm:
            write_dh(out, p, payload_length);
            write_reth(out, p);
            write_imm_ext(out, p);
            break;
        case Opcode::ReadResp:
            write_dh(out, p, payload_length);
            break;
        case Opcode::Ack:
            write_aeth(out, p);
            break;
        case Opcode::Nak:
            write_nakh(out, p);
            break;
        case Opcode::Connect:
        case Opcode::Accept:
            write_conn(out, p);
            break;
        case Opcode::Reject:
        case Opcode::Disconnect:
            write_rej(out, p);
            break;
        case Opcode::Probe:
        case Opcode::DisconnectAck:
            break;
    }
}

// ---------------------------------------------------------------------------------------------
// Text helpers for canonical().
// ---------------------------------------------------------------------------------------------

// "0x" followed by exactly `digits` lowercase hex digits (appendix C).
std::string hex(uint64_t v, int digits) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string s = "0x";
    for (int i = digits - 1; i >= 0; --i) s += kDigits[(v >> (4 * i)) & 0xF];
    return s;
}

// Lowercase hex without prefix and without leading zeros ("0" for zero): one IPv6 group.
std::string hex_group(uint16_t v) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string s;
    bool started = false;
    for (int i = 3; i >= 0; --i) {
        const int d = (v >> (4 * i)) & 0xF;
        if (d != 0 || started || i == 0) {
            s += kDigits[d];
            started = true;
        }
    }
    return s;
}

std::string mac_text(const std::array<uint8_t, 6>& mac) {
    std::string s;
    for (size_t i = 0; i < 6; ++i) {
        if (i > 0) s += ':';
        s += hex(mac[i], 2).substr(2);
    }
    return s;
}

std::string ipv4_text(const std::array<uint8_t, 16>& a) {
    std::string s;
    for (size_t i = 0; i < 4; ++i) {
        if (i > 0) s += '.';
        s += std::to_string(a[i]);
    }
    return s;
}

// 8 groups, leading zeros dropped, no "::" compression (appendix C).
std::string ipv6_text(const std::array<uint8_t, 16>& a) {
    std::string s;
    for (size_t g = 0; g < 8; ++g) {
        if (g > 0) s += ':';
        s += hex_group(static_cast<uint16_t>((a[2 * g] << 8) | a[2 * g + 1]));
    }
    return s;
}

std::string flags_text(uint16_t flags) {
    std::string s;
    auto add = [&s](const char* name) {
        if (!s.empty()) s += ',';
        s += name;
    };
    if (flags & kFlagAr) add("AR");
    if (flags & kFlagRetx) add("RETX");
    if (flags & kFlagVoid) add("VOID");
    return s.empty() ? "-" : s;
}

std::string dec(uint64_t v) { return std::to_string(v); }

}  // namespace

// =============================================================================================
// Names
// =============================================================================================

std::string_view error_name(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::Truncated:
            return "Truncated";
        case ErrorKind::EtherType:
            return "EtherType";
        case ErrorKind::IpVersion:
            return "IpVersion";
        case ErrorKind::Ipv4Options:
            return "Ipv4Options";
        case ErrorKind::IpLength:
            return "IpLength";
        case ErrorKind::Ipv4Checksum:
            return "Ipv4Checksum";
        case ErrorKind::Fragment:
            return "Fragment";
        case ErrorKind::NotUdp:
            return "NotUdp";
        case ErrorKind::UdpLength:
            return "UdpLength";
        case ErrorKind::UdpPort:
            return "UdpPort";
        case ErrorKind::UdpChecksum:
            return "UdpChecksum";
        case ErrorKind::TransportLength:
            return "TransportLength";
        case ErrorKind::Version:
            return "Version";
        case ErrorKind::Opcode:
            return "Opcode";
        case ErrorKind::Icrc:
            return "Icrc";
        case ErrorKind::Reserved:
            return "Reserved";
        case ErrorKind::PayloadLength:
            return "PayloadLength";
        case ErrorKind::Range:
            return "Range";
        case ErrorKind::SackBase:
            return "SackBase";
    }
    return "UNKNOWN";
}

std::string_view opcode_name(Opcode op) {
    switch (op) {
        case Opcode::Send:
            return "SEND";
        case Opcode::Write:
            return "WRITE";
        case Opcode::WriteImm:
            return "WRITE_IMM";
        case Opcode::ReadReq:
            return "READ_REQ";
        case Opcode::ReadResp:
            return "READ_RESP";
        case Opcode::Ack:
            return "ACK";
        case Opcode::Nak:
            return "NAK";
        case Opcode::Probe:
            return "PROBE";
        case Opcode::Connect:
            return "CONNECT";
        case Opcode::Accept:
            return "ACCEPT";
        case Opcode::Reject:
            return "REJECT";
        case Opcode::Disconnect:
            return "DISCONNECT";
        case Opcode::DisconnectAck:
            return "DISCONNECT_ACK";
    }
    return "UNKNOWN";
}

std::string_view nak_code_name(NakCode code) {
    switch (code) {
        case NakCode::Rnr:
            return "RNR";
        case NakCode::RemoteAccess:
            return "RemoteAccess";
        case NakCode::InvalidRequest:
            return "InvalidRequest";
        case NakCode::Length:
            return "Length";
    }
    return "UNKNOWN";
}

// =============================================================================================
// Opcode table 3.2
// =============================================================================================

bool is_known_opcode(Opcode op) { return opcode_name(op) != "UNKNOWN"; }

bool is_data_opcode(Opcode op) {
    return op == Opcode::Send || op == Opcode::Write || op == Opcode::WriteImm || op == Opcode::ReadReq ||
           op == Opcode::ReadResp;
}

bool is_control_opcode(Opcode op) {
    return op == Opcode::Connect || op == Opcode::Accept || op == Opcode::Reject || op == Opcode::Disconnect ||
           op == Opcode::DisconnectAck;
}

uint32_t extension_length(Opcode op) {
    switch (op) {
        case Opcode::Send:
            return kDhLen + kSendExtLen;  // 24
        case Opcode::Write:
            return kDhLen + kRethLen;  // 32
        case Opcode::WriteImm:
            return kDhLen + kRethLen + kImmExtLen;  // 40
        case Opcode::ReadReq:
            return kDhLen + kRethLen;  // 32
        case Opcode::ReadResp:
            return kDhLen;  // 20
        case Opcode::Ack:
            return kAethLen;  // 48
        case Opcode::Nak:
            return kNakhLen;  // 8
        case Opcode::Probe:
            return 0;
        case Opcode::Connect:
            return kConnLen;  // 16
        case Opcode::Accept:
            return kConnLen;  // 16
        case Opcode::Reject:
            return kRejLen;  // 4
        case Opcode::Disconnect:
            return kRejLen;  // 4
        case Opcode::DisconnectAck:
            return 0;
    }
    return 0;
}

// =============================================================================================
// CRC-32C, [R-HDR-28]: reflected polynomial 0x82F63B78, initial value and final XOR 0xFFFFFFFF,
// one bit at a time.
// =============================================================================================

uint32_t crc32c(std::span<const uint8_t> bytes) {
    uint32_t crc = 0xFFFFFFFF;
    for (const uint8_t byte : bytes) {
        crc ^= byte;
        for (int bit = 0; bit < 8; ++bit) { crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78 : (crc >> 1); }
    }
    return crc ^ 0xFFFFFFFF;
}

// =============================================================================================
// decode: [R-VAL-1], checks 1..23 in order; the first failing check decides.
// =============================================================================================

DecodeResult decode(std::span<const uint8_t> frame, uint16_t udp_port) {
    const auto fail = [](ErrorKind kind) { return DecodeResult{kind, Packet{}}; };
    Packet p{};
    const size_t frame_len = frame.size();

    // [R-VAL-1] check 1: the Ethernet header is present.
    if (frame_len < kEthLen) return fail(ErrorKind::Truncated);
    read_eth(sub(frame, 0, kEthLen), p);

    // check 2: EtherType ([R-ENC-2]; no VLAN tags, A-19).
    const uint16_t ether_type = get16(frame, 12);
    if (ether_type != kEtherTypeIpv4 && ether_type != kEtherTypeIpv6) { return fail(ErrorKind::EtherType); }
    const bool ipv6 = ether_type == kEtherTypeIpv6;
    const size_t ip_hdr_len = ipv6 ? kIpv6Len : kIpv4Len;
    const size_t udp_start = kEthLen + ip_hdr_len;

    // check 3: the fixed IP header is present.
    if (frame_len < udp_start) return fail(ErrorKind::Truncated);
    const Bytes ip = sub(frame, kEthLen, ip_hdr_len);

    // check 4: IP version matches the EtherType.
    const uint8_t ip_version = static_cast<uint8_t>(get8(ip, 0) >> 4);
    if (ip_version != (ipv6 ? 6 : 4)) return fail(ErrorKind::IpVersion);

    // check 5: IPv4 without options ([R-ENC-3]).
    if (!ipv6 && (get8(ip, 0) & 0x0F) != 5) return fail(ErrorKind::Ipv4Options);

    // check 6: the IP length covers at least the UDP header and lies inside the frame. From here on
    // the whole IP packet, and so the UDP header, is known to be present.
    size_t ip_payload_len = 0;
    if (!ipv6) {
        const size_t total_length = get16(ip, 2);
        if (total_length < kIpv4Len + kUdpLen || kEthLen + total_length > frame_len) {
            return fail(ErrorKind::IpLength);
        }
        ip_payload_len = total_length - kIpv4Len;
    } else {
        const size_t payload_length = get16(ip, 4);
        if (payload_length < kUdpLen || kEthLen + kIpv6Len + payload_length > frame_len) {
            return fail(ErrorKind::IpLength);
        }
        ip_payload_len = payload_length;
    }
    // Bytes after the IP packet (Ethernet padding) are never looked at again ([R-ENC-8]).
    const Bytes ip_payload = sub(frame, udp_start, ip_payload_len);

    // check 7: IPv4 header checksum. RFC 1071 verification: the one's complement sum of the whole
    // header, checksum field included, is all ones.
    if (!ipv6 && fold(add_words(0, ip)) != 0xFFFF) return fail(ErrorKind::Ipv4Checksum);

    // check 8: no fragments ([R-ENC-3]): reserved flag bit, MF and fragment offset all zero.
    if (!ipv6 && (get16(ip, 6) & 0xBFFF) != 0) return fail(ErrorKind::Fragment);

    // check 9: UDP directly after the fixed IP header ([R-ENC-3], [R-ENC-4]).
    const uint8_t next_protocol = ipv6 ? get8(ip, 6) : get8(ip, 9);
    if (next_protocol != kIpProtoUdp) return fail(ErrorKind::NotUdp);

    if (ipv6) {
        read_ipv6(ip, p);
    } else {
        read_ipv4(ip, p);
    }

    // check 10: UDP length = IP payload length ([R-ENC-8]).
    const Bytes udp_header = sub(ip_payload, 0, kUdpLen);
    const size_t udp_length = get16(udp_header, 4);
    if (udp_length != ip_payload_len) return fail(ErrorKind::UdpLength);
    read_udp(udp_header, p);
    const Bytes udp_segment = ip_payload;  // exactly udp_length bytes

    // check 11: destination port ([R-ENC-5]).
    if (p.udp_dport != udp_port) return fail(ErrorKind::UdpPort);

    // check 12: UDP checksum zero, or verifies over pseudo-header + segment ([R-ENC-7]).
    if (p.udp_checksum != 0) {
        const std::vector<uint8_t> pseudo =
            udp_pseudo_header(ipv6, p.ip_src, p.ip_dst, static_cast<uint16_t>(udp_length));
        if (fold(add_words(add_words(0, pseudo), udp_segment)) != 0xFFFF) { return fail(ErrorKind::UdpChecksum); }
    }

    // check 13: room for BTH + ICRC.
    const size_t transport_len = udp_length - kUdpLen;
    if (transport_len < kBthLen + kIcrcLen) return fail(ErrorKind::TransportLength);
    const Bytes transport = sub(udp_segment, kUdpLen, transport_len);

    // check 14: BTH version ([R-HDR-1]).
    const uint8_t version = static_cast<uint8_t>(get8(transport, 0) >> 4);
    if (version != 1) return fail(ErrorKind::Version);

    // check 15: opcode in table 3.2 ([R-HDR-2]).
    const Opcode opcode = static_cast<Opcode>(get8(transport, 1));
    if (!is_known_opcode(opcode)) return fail(ErrorKind::Opcode);

    // check 16: the UDP payload fits the opcode ([R-HDR-7]) and a data payload is at most 8192 bytes
    // ([R-HDR-8]).
    const size_t fixed_len = kBthLen + extension_length(opcode) + kIcrcLen;
    size_t payload_len = 0;
    if (is_data_opcode(opcode)) {
        if (transport_len < fixed_len) return fail(ErrorKind::TransportLength);
        payload_len = transport_len - fixed_len;
        if (payload_len > kMaxPayload) return fail(ErrorKind::TransportLength);
    } else {
        if (transport_len != fixed_len) return fail(ErrorKind::TransportLength);
    }

    // check 17: ICRC over everything of the UDP payload before it ([R-HDR-28], [R-HDR-29]).
    const size_t icrc_offset = transport_len - kIcrcLen;
    p.icrc = get32(transport, icrc_offset);
    if (crc32c(sub(transport, 0, icrc_offset)) != p.icrc) return fail(ErrorKind::Icrc);

    // Every byte of the transport is present and intact: read the BTH and the extension.
    read_bth(sub(transport, 0, kBthLen), p);
    read_extension(sub(transport, kBthLen, extension_length(opcode)), opcode, p);
    if (is_data_opcode(opcode)) {
        p.payload_offset = static_cast<uint32_t>(udp_start + kUdpLen + kBthLen + extension_length(opcode));
        p.payload_len = static_cast<uint32_t>(payload_len);
    }

    // check 18: BTH reserved bits ([R-HDR-1]), flags ([R-HDR-3]), DCID ([R-HDR-4]), path ID of
    // control packets ([R-HDR-5]).
    const bool bth_reserved_zero = (get8(transport, 0) & 0x0F) == 0 && get16(transport, 10) == 0;
    const bool flags_allowed = (p.flags & ~allowed_flags(opcode)) == 0;
    const bool dcid_ok = (opcode == Opcode::Connect) ? (p.dcid == 0) : (p.dcid != 0);
    const bool path_ok = !is_control_opcode(opcode) || p.path_id == 0;
    if (!bth_reserved_zero || !flags_allowed || !dcid_ok || !path_ok) {
        return fail(ErrorKind::Reserved);  // [R-CONV-4] reserved fields are checked as zero
    }

    if (is_data_opcode(opcode)) {
        // check 19: DH Payload Length = derived payload length ([R-HDR-11]).
        if (p.payload_length != payload_len) return fail(ErrorKind::PayloadLength);

        // check 20: [R-HDR-12], [R-HDR-13] (in 64 bits: no overflow), [R-HDR-15], [R-HDR-16].
        const uint64_t msg_end = uint64_t{p.msg_offset} + uint64_t{p.payload_length};
        const bool length_ok = p.msg_length <= (uint32_t{1} << 31);
        const bool offset_ok = msg_end <= p.msg_length;
        const bool read_req_ok = opcode != Opcode::ReadReq || (p.payload_length == 0 && p.msg_offset == 0);
        const bool void_ok = (p.flags & kFlagVoid) == 0 || p.payload_length == 0;
        if (!length_ok || !offset_ok || !read_req_ok || !void_ok) return fail(ErrorKind::Range);
    }

    // check 21: SACK bit 0 (CPSN + 1) is zero ([R-HDR-20]).
    if (opcode == Opcode::Ack && (p.sack[0] & 0x80) != 0) return fail(ErrorKind::SackBase);

    // check 22: NAK code, reserved byte, detail ([R-HDR-24]).
    if (opcode == Opcode::Nak) {
        const Bytes nakh = sub(transport, kBthLen, kNakhLen);
        const bool code_ok = p.nak_code >= 1 && p.nak_code <= 4;
        const bool reserved_zero = get8(nakh, 5) == 0;
        const bool detail_ok = p.nak_code == static_cast<uint8_t>(NakCode::Rnr) || p.nak_detail == 0;
        if (!code_ok || !reserved_zero || !detail_ok) return fail(ErrorKind::Reserved);
    }

    // check 23: CONNECT/ACCEPT ranges in field order ([R-HDR-26]); REJECT/DISCONNECT reason and
    // reserved bytes ([R-HDR-27]).
    if (opcode == Opcode::Connect || opcode == Opcode::Accept) {
        const bool scid_ok = p.scid != 0;
        const bool paths_ok = p.path_count >= 1 && p.path_count <= 256;
        const bool streams_ok = p.stream_count >= 1;  // <= 65535 always holds for 16 bits
        const bool maxpay_ok = p.max_payload >= 256 && p.max_payload <= 8192 && p.max_payload % 64 == 0;
        const bool wcap_ok = p.window_cap >= 1 && p.window_cap <= 256;
        if (!scid_ok || !paths_ok || !streams_ok || !maxpay_ok || !wcap_ok) { return fail(ErrorKind::Range); }
    }
    if (opcode == Opcode::Reject || opcode == Opcode::Disconnect) {
        const Bytes rej = sub(transport, kBthLen, kRejLen);
        const bool reason_ok = p.reason <= 5;
        const bool reserved_zero = get8(rej, 1) == 0 && get8(rej, 2) == 0 && get8(rej, 3) == 0;
        if (!reason_ok || !reserved_zero) return fail(ErrorKind::Reserved);
    }

    return DecodeResult{std::nullopt, p};
}

// =============================================================================================
// encode
// =============================================================================================

std::vector<uint8_t> encode(const Packet& p, std::span<const uint8_t> payload, bool compute_udp_checksum) {
    if (p.dscp > 63) throw std::invalid_argument("ref_codec: dscp does not fit 6 bits");
    if (p.ecn > 3) throw std::invalid_argument("ref_codec: ecn does not fit 2 bits");
    if (p.ipv6_flow_label > 0xFFFFF) throw std::invalid_argument("ref_codec: flow label > 20 bits");
    if (p.version > 15) throw std::invalid_argument("ref_codec: version does not fit 4 bits");

    // Largest UDP payload: the IPv4 total length (16 bits) must hold IP + UDP headers.
    const size_t max_transport = 0xFFFF - kUdpLen - (p.ipv6 ? 0 : kIpv4Len);
    const size_t transport_len = kBthLen + extension_length(p.opcode) + payload.size() + kIcrcLen;
    if (transport_len > max_transport) throw std::length_error("ref_codec: packet too long");

    // UDP payload: BTH, extension, payload, ICRC ([R-ENC-1], [R-HDR-7]).
    std::vector<uint8_t> transport;
    write_bth(transport, p);
    write_extension(transport, p, static_cast<uint16_t>(payload.size()));  // [R-HDR-11]
    put_bytes(transport, payload);
    put32(transport, crc32c(transport));  // [R-HDR-28]

    const uint16_t udp_length = static_cast<uint16_t>(kUdpLen + transport.size());  // [R-ENC-8]

    // [R-ENC-7]: zero, or the RFC 768 checksum (a computed 0 is sent as 0xFFFF).
    uint16_t udp_checksum = 0;
    if (compute_udp_checksum) {
        std::vector<uint8_t> udp_header;
        write_udp(udp_header, p, udp_length, 0);
        uint32_t sum = add_words(0, udp_pseudo_header(p.ipv6, p.ip_src, p.ip_dst, udp_length));
        sum = add_words(sum, udp_header);
        sum = add_words(sum, transport);
        udp_checksum = static_cast<uint16_t>(~fold(sum));
        if (udp_checksum == 0) udp_checksum = 0xFFFF;
    }

    std::vector<uint8_t> frame;
    write_eth(frame, p);
    if (p.ipv6) {
        write_ipv6(frame, p, udp_length);
    } else {
        write_ipv4(frame, p, static_cast<uint16_t>(kIpv4Len + udp_length));
    }
    write_udp(frame, p, udp_length, udp_checksum);
    put_bytes(frame, transport);
    return frame;
}

// =============================================================================================
// canonical: appendix C
// =============================================================================================

std::string canonical(const DecodeResult& r, std::span<const uint8_t> /*frame*/) {
    if (r.error) return "ERROR " + std::string(error_name(*r.error));
    const Packet& p = r.packet;
    std::vector<std::string> parts;

    parts.push_back("ETH dst=" + mac_text(p.eth_dst) + " src=" + mac_text(p.eth_src) +
                    " type=" + hex(p.ipv6 ? kEtherTypeIpv6 : kEtherTypeIpv4, 4));

    if (p.ipv6) {
        parts.push_back("IPV6 src=" + ipv6_text(p.ip_src) + " dst=" + ipv6_text(p.ip_dst) + " dscp=" + dec(p.dscp) +
                        " ecn=" + dec(p.ecn) + " flow=" + hex(p.ipv6_flow_label, 5) + " hlim=" + dec(p.ttl));
    } else {
        parts.push_back("IPV4 src=" + ipv4_text(p.ip_src) + " dst=" + ipv4_text(p.ip_dst) + " dscp=" + dec(p.dscp) +
                        " ecn=" + dec(p.ecn) + " id=" + hex(p.ipv4_id, 4) + " df=" + dec(p.ipv4_df ? 1 : 0) +
                        " ttl=" + dec(p.ttl));
    }

    const uint64_t udp_length = kUdpLen + kBthLen + extension_length(p.opcode) + p.payload_len + kIcrcLen;
    parts.push_back("UDP sport=" + dec(p.udp_sport) + " dport=" + dec(p.udp_dport) + " len=" + dec(udp_length) +
                    " csum=" + hex(p.udp_checksum, 4));

    parts.push_back("BTH ver=" + dec(p.version) + " op=" + std::string(opcode_name(p.opcode)) +
                    " flags=" + flags_text(p.flags) + " dcid=" + hex(p.dcid, 8) + " path=" + dec(p.path_id) +
                    " ts=" + dec(p.timestamp));

    const auto dh = [&p] {
        return "DH psn=" + hex(p.psn, 8) + " stream=" + dec(p.stream_id) + " plen=" + dec(p.payload_length) +
               " msn=" + dec(p.msn) + " mlen=" + dec(p.msg_length) + " moff=" + dec(p.msg_offset);
    };
    const auto reth = [&p] { return "RETH va=" + hex(p.remote_va, 16) + " rkey=" + hex(p.rkey, 8); };

    switch (p.opcode) {
        case Opcode::Send:
            parts.push_back(dh());
            parts.push_back("SEND rsn=" + dec(p.rsn));
            break;
        case Opcode::Write:
        case Opcode::ReadReq:
            parts.push_back(dh());
            parts.push_back(reth());
            break;
        case Opcode::WriteImm:
            parts.push_back(dh());
            parts.push_back(reth());
            parts.push_back("IMM rsn=" + dec(p.rsn) + " imm=" + hex(p.immediate, 8));
            break;
        case Opcode::ReadResp:
            parts.push_back(dh());
            break;
        case Opcode::Ack: {
            std::string sack;
            for (const uint8_t b : p.sack) sack += hex(b, 2).substr(2);
            parts.push_back("AETH cpsn=" + hex(p.cpsn, 8) + " ce=" + dec(p.ce_count) + " tse=" + dec(p.ts_echo) +
                            " hint=" + dec(p.rate_hint) + " sack=" + sack);
            break;
        }
        case Opcode::Nak:
            parts.push_back("NAK psn=" + hex(p.nak_psn, 8) +
                            " code=" + std::string(nak_code_name(static_cast<NakCode>(p.nak_code))) +
                            " detail=" + dec(p.nak_detail));
            break;
        case Opcode::Connect:
        case Opcode::Accept:
            parts.push_back("CONN scid=" + hex(p.scid, 8) + " isn=" + hex(p.isn, 8) + " paths=" + dec(p.path_count) +
                            " streams=" + dec(p.stream_count) + " maxpay=" + dec(p.max_payload) +
                            " wcap=" + dec(p.window_cap));
            break;
        case Opcode::Reject:
        case Opcode::Disconnect:
            parts.push_back("REJ reason=" + dec(p.reason));
            break;
        case Opcode::Probe:
        case Opcode::DisconnectAck:
            break;
    }

    if (is_data_opcode(p.opcode)) {
        parts.push_back("PAYLOAD off=" + dec(p.payload_offset) + " len=" + dec(p.payload_len));
    }
    parts.push_back("ICRC " + hex(p.icrc, 8));

    std::string line;
    for (size_t i = 0; i < parts.size(); ++i) {
        if (i > 0) line += " | ";
        line += parts[i];
    }
    return line;
}

}  // namespace mroce::ref
