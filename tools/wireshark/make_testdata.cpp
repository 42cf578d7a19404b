// Generator of the fixed capture of the Wireshark dissector test (tools/wireshark/testdata/).
//
//   make_testdata OUT.pcap
//       Writes the fixed capture: every opcode of table 3.2 (NAK with every code of table 12.3,
//       every flag, IPv4 and IPv6, zero and non-zero UDP checksums, Ethernet padding), then
//       deliberately bad frames: a bad ICRC, a UDP payload too short for its opcode, a frame cut
//       by the snap length, a frame shorter than its IP header says, and one frame per transport
//       error kind of [R-VAL-1] checks 13..23. Frames are built with the reference codec
//       (mroce::ref::encode); timestamps are fixed, so the output is byte-for-byte reproducible.
//
//   make_testdata --reencode IN.pcap OUT.pcap PORT
//       Re-encodes every frame of IN.pcap that the reference codec decodes (UDP port 4793) with
//       UDP destination port PORT instead: the input of the test of the mroce.udp_port
//       preference.
#include <pcap/pcap.h>

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "codec/ref_codec.hpp"

namespace {

using mroce::ref::Opcode;
using mroce::ref::Packet;

struct Frame {
  std::vector<uint8_t> bytes;  // as captured
  uint32_t wire_len = 0;       // length on the wire (> bytes.size() for a frame cut by snaplen)
};

// ---- packet templates ----------------------------------------------------------------------

constexpr uint32_t kConnA = 0x00000002;  // A's connection ID (B writes it as DCID)
constexpr uint32_t kConnB = 0x00000007;  // B's connection ID (A writes it as DCID)

// A packet from A (10.0.0.1) to B (10.0.0.2), or the reverse, with the encapsulation defaults of
// [R-ENC-9..11]: data ECT(0) DSCP 26, everything else Not-ECT DSCP 48.
Packet make(Opcode op, bool from_a = true, bool ipv6 = false) {
  Packet p{};
  const uint8_t a = 1, b = 2;
  const uint8_t src = from_a ? a : b, dst = from_a ? b : a;
  p.eth_dst = {0x02, 0, 0, 0, 0, dst};
  p.eth_src = {0x02, 0, 0, 0, 0, src};
  p.ipv6 = ipv6;
  if (ipv6) {
    p.ip_src = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, src};
    p.ip_dst = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, dst};
  } else {
    p.ip_src = {10, 0, 0, src};
    p.ip_dst = {10, 0, 0, dst};
  }
  const bool data = mroce::ref::is_data_opcode(op);
  p.dscp = data ? 26 : 48;
  p.ecn = data ? 2 : 0;
  p.ipv4_id = 0;
  p.ipv4_df = true;
  p.ttl = 64;
  p.udp_sport = from_a ? 49152 + 1234 : 49152 + 4321;
  p.ipv6_flow_label = ipv6 ? (p.udp_sport & 0xFFFFF) : 0;
  p.udp_dport = mroce::ref::kDefaultUdpPort;
  p.version = 1;
  p.opcode = op;
  p.dcid = from_a ? kConnB : kConnA;
  p.path_id = 0;
  p.timestamp = 1000;
  return p;
}

Packet data(Opcode op, uint16_t path, uint32_t psn, uint32_t mlen, uint32_t moff) {
  Packet p = make(op);
  if (op == Opcode::ReadResp) p = make(op, /*from_a=*/false);
  p.path_id = path;
  p.psn = psn;
  p.stream_id = 1;
  p.msn = 5;
  p.msg_length = mlen;
  p.msg_offset = moff;
  p.timestamp = 2000 + psn % 1000;
  return p;
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

// ---- frame surgery ---------------------------------------------------------------------------

size_t transport_start(const std::vector<uint8_t>& f) {
  const bool ipv6 = f[12] == 0x86 && f[13] == 0xDD;
  return 14 + (ipv6 ? 40 : 20) + 8;
}

// Recomputes the ICRC after a field of the UDP payload was changed on purpose.
void refresh_icrc(std::vector<uint8_t>& f) {
  const size_t start = transport_start(f);
  const size_t end = f.size();
  const uint32_t crc = mroce::ref::crc32c(std::span<const uint8_t>(f).subspan(start, end - 4 - start));
  f[end - 4] = static_cast<uint8_t>(crc >> 24);
  f[end - 3] = static_cast<uint8_t>(crc >> 16);
  f[end - 2] = static_cast<uint8_t>(crc >> 8);
  f[end - 1] = static_cast<uint8_t>(crc);
}

// Sets the IPv4 total length and UDP length of an IPv4 frame to what the frame holds, and
// recomputes the IPv4 header checksum: a frame shortened on purpose stays consistent below UDP.
void fix_ipv4_lengths(std::vector<uint8_t>& f) {
  const size_t ip_len = f.size() - 14, udp_len = ip_len - 20;
  f[16] = static_cast<uint8_t>(ip_len >> 8);
  f[17] = static_cast<uint8_t>(ip_len);
  f[38] = static_cast<uint8_t>(udp_len >> 8);
  f[39] = static_cast<uint8_t>(udp_len);
  f[24] = f[25] = 0;
  uint32_t sum = 0;
  for (size_t i = 14; i < 34; i += 2) sum += (uint32_t{f[i]} << 8) | f[i + 1];
  while (sum > 0xFFFF) sum = (sum & 0xFFFF) + (sum >> 16);
  const uint16_t csum = static_cast<uint16_t>(~sum);
  f[24] = static_cast<uint8_t>(csum >> 8);
  f[25] = static_cast<uint8_t>(csum);
}

// Encodes, then lets `patch` change bytes of the UDP payload (offsets relative to the BTH), then
// recomputes the ICRC.
template <class F>
std::vector<uint8_t> patched(const Packet& p, std::span<const uint8_t> payload, F patch) {
  std::vector<uint8_t> f = mroce::ref::encode(p, payload);
  patch(f.data() + transport_start(f));
  refresh_icrc(f);
  return f;
}

// ---- the fixed capture ---------------------------------------------------------------------

std::vector<Frame> fixed_capture() {
  std::vector<Frame> out;
  const auto add = [&out](std::vector<uint8_t> bytes) {
    const uint32_t n = static_cast<uint32_t>(bytes.size());
    out.push_back({std::move(bytes), n});
  };
  const auto enc = [](const Packet& p, std::span<const uint8_t> payload = {}, bool csum = false) {
    return mroce::ref::encode(p, payload, csum);
  };

  // Connection setup.
  {
    Packet c = make(Opcode::Connect);
    c.dcid = 0;
    c.scid = kConnA;
    c.isn = 0xfffffff0;
    c.path_count = 4;
    c.stream_count = 8;
    c.max_payload = 1024;
    c.window_cap = 256;
    add(enc(c));
    Packet a = make(Opcode::Accept, false);
    a.dcid = kConnA;
    a.scid = kConnB;
    a.isn = 0x00000010;
    a.path_count = 4;
    a.stream_count = 8;
    a.max_payload = 1024;
    a.window_cap = 64;
    add(enc(a));
  }
  // Data: every data opcode, every flag, PSNs across the wrap.
  {
    Packet s = data(Opcode::Send, 0, 0xfffffff0, 100, 0);
    s.rsn = 0;
    s.flags = mroce::ref::kFlagAr;
    add(enc(s, pattern(100, 1)));

    Packet s0 = data(Opcode::Send, 1, 0xfffffff0, 0, 0);  // empty message: one segment, no payload
    s0.msn = 6;
    s0.rsn = 1;
    add(enc(s0));

    Packet w = data(Opcode::Write, 2, 0xfffffff0, 1000, 0);
    w.remote_va = 0x0000000000001000;
    w.rkey = 0x00000100;
    add(enc(w, pattern(512, 2)));
    w.msg_offset = 512;
    w.psn = 0xfffffff1;
    w.flags = mroce::ref::kFlagAr | mroce::ref::kFlagRetx;
    add(enc(w, pattern(488, 3)));

    Packet wi = data(Opcode::WriteImm, 3, 0xfffffffe, 10000, 4096);
    wi.remote_va = 0xfedcba9876543210;
    wi.rkey = 0x12345678;
    wi.rsn = 3;
    wi.immediate = 0xdeadbeef;
    add(enc(wi, pattern(1024, 4)));
    wi.psn = 0xffffffff;
    wi.msg_offset = 5120;
    wi.flags = mroce::ref::kFlagVoid | mroce::ref::kFlagRetx;  // voided: no payload
    add(enc(wi));

    Packet rq = data(Opcode::ReadReq, 1, 0x00000000, 65536, 0);
    rq.remote_va = 0x0000000300000000;
    rq.rkey = 0x0000030f;
    rq.msn = 9;
    add(enc(rq));

    Packet rr = data(Opcode::ReadResp, 2, 0x00000010, 65536, 4096);
    rr.dcid = kConnA;
    rr.msn = 9;
    add(enc(rr, pattern(1024, 5)));
  }
  // Acknowledgements.
  {
    Packet ack = make(Opcode::Ack, false);
    ack.path_id = 3;
    ack.cpsn = 0x00000009;
    ack.ce_count = 3;
    ack.ts_echo = 1234;
    ack.rate_hint = 25000;
    ack.sack = {};
    ack.sack[0] = 0x31;   // bits 2, 3, 7
    ack.sack[1] = 0x80;   // bit 8
    ack.sack[17] = 0x0f;  // bits 140..143
    ack.sack[31] = 0x01;  // bit 255
    add(enc(ack));
    Packet ack0 = make(Opcode::Ack, false);
    ack0.path_id = 0;
    ack0.cpsn = 0xffffffef;  // ISN - 1: nothing received yet ([R-HDR-19])
    add(enc(ack0));

    for (uint8_t code = 1; code <= 4; ++code) {
      Packet nak = make(Opcode::Nak, false);
      nak.path_id = code;
      nak.nak_psn = 0xfffffff0 + code;
      nak.nak_code = code;
      nak.nak_detail = code == 1 ? 10 : 0;
      add(enc(nak));
    }
    Packet probe = make(Opcode::Probe);
    probe.path_id = 2;
    probe.flags = mroce::ref::kFlagAr;
    probe.timestamp = 777;
    add(enc(probe));
    probe.flags = 0;
    probe.path_id = 1;
    add(enc(probe));
  }
  // Connection control.
  {
    Packet rej = make(Opcode::Reject, false);
    rej.dcid = kConnA;
    rej.reason = 1;
    add(enc(rej));
    Packet d = make(Opcode::Disconnect);
    d.reason = 0;
    add(enc(d));
    d.reason = 5;
    add(enc(d));
    add(enc(make(Opcode::DisconnectAck, false)));
  }
  // IPv6, non-zero UDP checksums, Ethernet padding.
  {
    Packet w6 = data(Opcode::Write, 1, 0x00000042, 300, 0);
    const Packet v6 = make(Opcode::Write, true, true);
    w6.ipv6 = true;
    w6.ip_src = v6.ip_src;
    w6.ip_dst = v6.ip_dst;
    w6.ipv6_flow_label = v6.ipv6_flow_label;
    w6.remote_va = 0x2000;
    w6.rkey = 0x201;
    add(enc(w6, pattern(300, 6)));
    Packet a6 = make(Opcode::Ack, false, true);
    a6.path_id = 1;
    a6.cpsn = 0x00000042;
    a6.ts_echo = 2066;
    a6.sack[2] = 0xff;
    add(enc(a6, {}, /*csum=*/true));
    Packet s4 = data(Opcode::Send, 0, 0x00000100, 64, 0);
    s4.rsn = 2;
    add(enc(s4, pattern(64, 7), /*csum=*/true));
    Packet pr = make(Opcode::Probe);
    pr.path_id = 3;
    std::vector<uint8_t> padded = enc(pr);  // 62 bytes: pad to 64 with a trailer ([R-ENC-8])
    padded.push_back(0);
    padded.push_back(0);
    add(padded);
  }

  // ---- bad frames --------------------------------------------------------------------------
  {
    // Bad ICRC: one payload byte flipped after the ICRC was computed.
    Packet w = data(Opcode::Write, 0, 0x00000200, 256, 0);
    w.remote_va = 0x1000;
    w.rkey = 0x100;
    std::vector<uint8_t> f = enc(w, pattern(256, 8));
    f[transport_start(f) + 16 + 32 + 10] ^= 0x40;
    add(f);
    // Bad ICRC: the ICRC field itself damaged, on an ACK.
    Packet ack = make(Opcode::Ack, false);
    ack.path_id = 1;
    ack.cpsn = 0x100;
    std::vector<uint8_t> g = enc(ack);
    g.back() ^= 0x01;
    add(g);
  }
  {
    // A WRITE whose UDP payload (BTH + 10 bytes + ICRC) is too short for its extension, with
    // consistent IP and UDP lengths and a correct ICRC: TransportLength.
    Packet p = make(Opcode::Probe);
    add(patched(p, pattern(10, 9), [](uint8_t* t) { t[1] = 0x02; }));
    // A UDP payload of 10 bytes (less than BTH + ICRC), and one of a single byte.
    std::vector<uint8_t> runt = enc(make(Opcode::Probe));
    runt.resize(14 + 20 + 8 + 10);
    fix_ipv4_lengths(runt);
    add(runt);
    std::vector<uint8_t> one = runt;
    one.resize(14 + 20 + 8 + 1);
    fix_ipv4_lengths(one);
    add(one);
  }
  {
    // Cut by the snap length: a 1024-byte READ_RESP of which 80 bytes were captured.
    Packet rr = data(Opcode::ReadResp, 0, 0x00000300, 4096, 0);
    std::vector<uint8_t> f = enc(rr, pattern(1024, 10));
    const uint32_t wire = static_cast<uint32_t>(f.size());
    f.resize(80);
    out.push_back({f, wire});
    // A frame shorter than its IP header says, captured whole (wire length = captured length):
    // a WRITE_IMM of 60 bytes.
    Packet wi = data(Opcode::WriteImm, 0, 0x00000301, 100, 0);
    std::vector<uint8_t> g = enc(wi, pattern(100, 11));
    g.resize(60);
    add(g);
  }
  {
    // One frame per remaining transport error kind ([R-VAL-1] checks 14..23), each with a
    // correct ICRC so that the check itself decides.
    Packet ver = make(Opcode::Probe);
    ver.version = 2;
    add(enc(ver));  // Version
    Packet unk = make(Opcode::Probe);
    unk.opcode = static_cast<Opcode>(0x30);
    add(enc(unk));  // Opcode
    Packet ctl = make(Opcode::Disconnect);
    ctl.path_id = 3;
    add(enc(ctl));  // Reserved: path ID on a control packet
    Packet fl = make(Opcode::Ack, false);
    fl.flags = mroce::ref::kFlagAr;
    add(enc(fl));  // Reserved: AR on an ACK
    Packet rb = make(Opcode::Probe);
    add(patched(rb, {}, [](uint8_t* t) { t[0] |= 0x01; }));  // Reserved: BTH reserved nibble
    Packet pl = data(Opcode::Send, 0, 0x400, 100, 0);
    add(patched(pl, pattern(100, 12), [](uint8_t* t) { t[16 + 7] = 99; }));  // PayloadLength
    Packet rq = data(Opcode::ReadReq, 0, 0x401, 4096, 64);
    add(enc(rq));  // Range: READ_REQ with a message offset
    Packet over = data(Opcode::Write, 0, 0x402, 100, 50);
    add(enc(over, pattern(64, 13)));  // Range: offset + payload > message length
    Packet sb = make(Opcode::Ack, false);
    sb.cpsn = 5;
    sb.sack[0] = 0x80;
    add(enc(sb));  // SackBase
    Packet nc = make(Opcode::Nak, false);
    nc.nak_code = 9;
    add(enc(nc));  // Reserved: NAK code not in table 12.3
    Packet nd = make(Opcode::Nak, false);
    nd.nak_code = 2;
    nd.nak_detail = 4;
    add(enc(nd));  // Reserved: detail on a code other than RNR
    Packet cm = make(Opcode::Connect);
    cm.dcid = 0;
    cm.scid = 9;
    cm.path_count = 4;
    cm.stream_count = 1;
    cm.max_payload = 100;
    cm.window_cap = 16;
    add(enc(cm));  // Range: Max Payload
    Packet rr = make(Opcode::Reject, false);
    rr.reason = 9;
    add(enc(rr));  // Reserved: reason
    Packet big = data(Opcode::Write, 0, 0x403, 9000, 0);
    add(enc(big, pattern(8200, 14)));  // TransportLength: payload above 8192
  }
  return out;
}

// ---- pcap I/O ----------------------------------------------------------------------------------

bool write_pcap(const std::string& path, const std::vector<Frame>& frames) {
  pcap_t* dead = pcap_open_dead(DLT_EN10MB, 65535);
  if (dead == nullptr) return false;
  pcap_dumper_t* dumper = pcap_dump_open(dead, path.c_str());
  if (dumper == nullptr) {
    std::cerr << "make_testdata: " << path << ": " << pcap_geterr(dead) << "\n";
    pcap_close(dead);
    return false;
  }
  for (size_t i = 0; i < frames.size(); ++i) {
    pcap_pkthdr h{};
    h.ts.tv_sec = 1700000000 + static_cast<long>(i / 1000);
    h.ts.tv_usec = static_cast<long>((i % 1000) * 1000);
    h.caplen = static_cast<uint32_t>(frames[i].bytes.size());
    h.len = frames[i].wire_len;
    pcap_dump(reinterpret_cast<u_char*>(dumper), &h, frames[i].bytes.data());
  }
  pcap_dump_close(dumper);
  pcap_close(dead);
  return true;
}

bool read_pcap(const std::string& path, std::vector<Frame>& frames) {
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  pcap_t* p = pcap_open_offline(path.c_str(), errbuf);
  if (p == nullptr) {
    std::cerr << "make_testdata: " << path << ": " << errbuf << "\n";
    return false;
  }
  pcap_pkthdr* h = nullptr;
  const u_char* d = nullptr;
  int rc = 0;
  while ((rc = pcap_next_ex(p, &h, &d)) == 1) frames.push_back({std::vector<uint8_t>(d, d + h->caplen), h->len});
  pcap_close(p);
  return rc == PCAP_ERROR_BREAK;
}

int reencode(const std::string& in, const std::string& out, uint16_t port) {
  std::vector<Frame> frames;
  if (!read_pcap(in, frames)) return 1;
  std::vector<Frame> result;
  for (const Frame& f : frames) {
    const auto r = mroce::ref::decode(f.bytes);
    if (!r.ok() || f.wire_len != f.bytes.size()) continue;
    Packet p = r.packet;
    p.udp_dport = port;
    const std::span<const uint8_t> payload = std::span<const uint8_t>(f.bytes).subspan(p.payload_offset, p.payload_len);
    std::vector<uint8_t> bytes = mroce::ref::encode(p, payload, p.udp_checksum != 0);
    const uint32_t n = static_cast<uint32_t>(bytes.size());
    result.push_back({std::move(bytes), n});
  }
  if (result.empty()) {
    std::cerr << "make_testdata: no valid MRoCE frame in " << in << "\n";
    return 1;
  }
  return write_pcap(out, result) ? 0 : 1;
}

int usage() {
  std::cerr << "usage: make_testdata OUT.pcap\n"
               "       make_testdata --reencode IN.pcap OUT.pcap PORT\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc == 2 && argv[1][0] != '-') return write_pcap(argv[1], fixed_capture()) ? 0 : 1;
    if (argc == 5 && std::string_view(argv[1]) == "--reencode") {
      const unsigned long port = std::strtoul(argv[4], nullptr, 10);
      if (port == 0 || port > 65535) return usage();
      return reencode(argv[2], argv[3], static_cast<uint16_t>(port));
    }
  } catch (const std::exception& e) {
    std::cerr << "make_testdata: " << e.what() << "\n";
    return 1;
  }
  return usage();
}
