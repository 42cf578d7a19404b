// make_corpus: writes the seed corpora of the fuzz targets from real encoded packets.
//
//   fuzz_make_corpus OUTDIR          writes OUTDIR/<target>/<name> for every seed (overwrites)
//   fuzz_make_corpus --check DIR     exit 1 unless every seed exists in DIR/<target>/ with the same
//                                    bytes (ctest fuzz.corpus.seeds_current)
//   fuzz_make_corpus --list          prints target/name and size of every seed
//
// Regenerate the committed seeds with:  build-X/bin/fuzz_make_corpus fuzz/corpus
// Files that the fuzzers found (hash names) are left alone.
//
// Seeds of frame_fast and codec_diff (the same set): every opcode of table 3.2 over IPv4 and IPv6
// (reference encoder, ref_test_util.hpp's sample packets), payload and flag variants, a computed
// UDP checksum, Ethernet padding, the 8192-byte payload limit, and one frame per error kind of
// [R-VAL-1] (built with the fast codec's raw overrides, so both encoders contribute). Each seed's
// outcome is checked with the reference decoder before it is written, so the names say what the
// seed is. Seeds of ack_sack follow the input layout described in fuzz/ack_sack.cpp.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "codec/fast_codec.hpp"
#include "codec/ref_codec.hpp"
#include "engine_rx_seeds.hpp"
#include "ref_test_util.hpp"

namespace {

using Bytes = std::vector<uint8_t>;
namespace rt = mroce::ref::test;
using mroce::ref::Opcode;

struct Seed {
  std::string target, name;
  Bytes bytes;
};

std::vector<Seed> g_seeds;
int g_errors = 0;

// Adds a frame seed to both frame targets after checking what the reference decoder says of it.
void frame_seed(const std::string& name, const Bytes& f, const std::string& expect) {
  const auto r = mroce::ref::decode(f);
  const std::string got = r.ok() ? "OK" : std::string(mroce::ref::error_name(*r.error));
  if (got != expect) {
    std::fprintf(stderr, "make_corpus: seed %s decodes as %s, expected %s\n", name.c_str(), got.c_str(),
                 expect.c_str());
    ++g_errors;
  }
  g_seeds.push_back({"frame_fast", name, f});
  g_seeds.push_back({"codec_diff", name, f});
}

std::string op_name(Opcode op) { return std::string(mroce::ref::opcode_name(op)); }

bool carries_payload(Opcode op) {
  return op == Opcode::Send || op == Opcode::Write || op == Opcode::WriteImm || op == Opcode::ReadResp;
}

// A fast-codec Fields of a valid WRITE with 16 payload bytes, to break one rule at a time.
mroce::fast::Fields fast_write(bool v6) {
  mroce::fast::Fields f;
  f.eth_dst = {0x02, 0, 0, 0, 0, 0x01};
  f.eth_src = {0x02, 0, 0, 0, 0, 0x02};
  f.ipv6 = v6;
  f.ipv4_src = 0x0A000001;
  f.ipv4_dst = 0x0A000002;
  f.ipv6_src = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  f.ipv6_dst = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
  f.flow_label = 0xC000;
  f.udp_sport = 50123;
  f.opcode = uint8_t(mroce::fast::Opcode::Write);
  f.flags = mroce::fast::kFlagAr;
  f.dcid = 0x11223344;
  f.path_id = 5;
  f.timestamp = 777;
  f.psn = 41;
  f.stream_id = 1;
  f.msn = 3;
  f.msg_length = 4096;
  f.msg_offset = 1024;
  f.remote_va = 0x7f0000001000ull;
  f.rkey = 0xabcd;
  return f;
}

Bytes fast_frame(const mroce::fast::Fields& f, size_t payload = 16) {
  return mroce::fast::build(f, rt::counting_payload(payload));
}

void make_frame_seeds() {
  for (const bool v6 : {false, true}) {
    const std::string ip = v6 ? "v6_" : "v4_";
    for (const Opcode op : rt::all_known_opcodes()) {
      frame_seed(ip + op_name(op), rt::sample_frame(op, v6, 16), "OK");
      if (carries_payload(op)) frame_seed(ip + op_name(op) + "_p0", rt::sample_frame(op, v6, 0), "OK");
    }
    // Flag variants ([R-HDR-3]).
    auto p = rt::sample_packet(Opcode::Write, v6);
    p.flags = mroce::ref::kFlagAr | mroce::ref::kFlagRetx;
    frame_seed(ip + "WRITE_ar_retx", mroce::ref::encode(p, rt::counting_payload(100)), "OK");
    p.flags = mroce::ref::kFlagVoid;
    frame_seed(ip + "WRITE_void", mroce::ref::encode(p, {}), "OK");
    p = rt::sample_packet(Opcode::Probe, v6);
    p.flags = mroce::ref::kFlagAr;
    frame_seed(ip + "PROBE_ar", mroce::ref::encode(p, {}), "OK");
    // [R-ENC-7] a correct non-zero UDP checksum; [R-HDR-8] the largest payload.
    auto w = fast_write(v6);
    w.raw.udp_checksum_compute = true;
    frame_seed(ip + "WRITE_udp_csum", fast_frame(w, 33), "OK");
    w = fast_write(v6);
    w.msg_length = 1u << 20;
    frame_seed(ip + "WRITE_p8192", fast_frame(w, 8192), "OK");
    frame_seed(ip + "WRITE_p8193", fast_frame(w, 8193), "TransportLength");
  }
  // [R-ENC-8] Ethernet padding after the IP packet.
  auto pad = fast_write(false);
  pad.opcode = uint8_t(mroce::fast::Opcode::Probe);
  pad.flags = 0;
  pad.raw.eth_padding = 18;
  frame_seed("v4_PROBE_padded", fast_frame(pad, 0), "OK");
  // ACK / NAK / CONN / REJ field variants.
  auto ack = rt::sample_packet(Opcode::Ack, false);
  ack.cpsn = 0xFFFFFFFF;
  ack.sack.fill(0xFF);
  ack.sack[0] = 0x7F;
  frame_seed("v4_ACK_sack_full", mroce::ref::encode(ack, {}), "OK");
  for (uint8_t code = 2; code <= 4; ++code) {
    auto nak = rt::sample_packet(Opcode::Nak, true);
    nak.nak_code = code;
    nak.nak_detail = 0;
    frame_seed("v6_NAK_code" + std::to_string(code), mroce::ref::encode(nak, {}), "OK");
  }
  auto conn = rt::sample_packet(Opcode::Accept, false);
  conn.path_count = 256;
  conn.stream_count = 65535;
  conn.max_payload = 8192;
  conn.window_cap = 1;
  frame_seed("v4_ACCEPT_edges", mroce::ref::encode(conn, {}), "OK");
  auto rej = rt::sample_packet(Opcode::Disconnect, false);
  rej.reason = 5;
  frame_seed("v4_DISCONNECT_reason5", mroce::ref::encode(rej, {}), "OK");

  // One frame per error kind of [R-VAL-1], in check order.
  const Bytes good = fast_frame(fast_write(false));
  frame_seed("bad_01_Truncated", Bytes(good.begin(), good.begin() + 13), "Truncated");
  auto f = fast_write(false);
  f.raw.ether_type = 0x8100;
  frame_seed("bad_02_EtherType_vlan", fast_frame(f), "EtherType");
  const Bytes good6 = fast_frame(fast_write(true));
  frame_seed("bad_03_Truncated_v6", Bytes(good6.begin(), good6.begin() + 50), "Truncated");
  f = fast_write(false);
  f.raw.ip_version = 6;
  frame_seed("bad_04_IpVersion", fast_frame(f), "IpVersion");
  f = fast_write(false);
  f.raw.ipv4_ihl = 6;
  frame_seed("bad_05_Ipv4Options", fast_frame(f), "Ipv4Options");
  f = fast_write(false);
  f.raw.ip_length = 27;
  frame_seed("bad_06_IpLength", fast_frame(f), "IpLength");
  f = fast_write(true);
  f.raw.ip_length = 4000;
  frame_seed("bad_06_IpLength_v6", fast_frame(f), "IpLength");
  f = fast_write(false);
  f.raw.ipv4_checksum_xor = 0x0100;
  frame_seed("bad_07_Ipv4Checksum", fast_frame(f), "Ipv4Checksum");
  f = fast_write(false);
  f.raw.ipv4_frag = 0x2000;  // MF
  frame_seed("bad_08_Fragment", fast_frame(f), "Fragment");
  f = fast_write(false);
  f.raw.ip_proto = 6;
  frame_seed("bad_09_NotUdp", fast_frame(f), "NotUdp");
  f = fast_write(true);
  f.raw.ip_proto = 0;  // hop-by-hop extension header ([R-ENC-4])
  frame_seed("bad_09_NotUdp_v6_ext", fast_frame(f), "NotUdp");
  f = fast_write(false);
  f.raw.udp_length = 8 + 16 + 32 + 16 + 4 - 1;
  frame_seed("bad_10_UdpLength", fast_frame(f), "UdpLength");
  f = fast_write(false);
  f.udp_dport = 4791;  // RoCEv2
  frame_seed("bad_11_UdpPort", fast_frame(f), "UdpPort");
  f = fast_write(true);
  f.raw.udp_checksum_corrupt = true;
  frame_seed("bad_12_UdpChecksum", fast_frame(f), "UdpChecksum");
  Bytes t = rt::sample_frame(Opcode::Probe, false);
  rt::resize_transport(t, 19);
  frame_seed("bad_13_TransportLength", t, "TransportLength");
  f = fast_write(false);
  f.version = 2;
  frame_seed("bad_14_Version", fast_frame(f), "Version");
  f = fast_write(false);
  f.opcode = 0x06;
  frame_seed("bad_15_Opcode", fast_frame(f), "Opcode");
  t = rt::sample_frame(Opcode::Ack, true);
  rt::resize_transport(t, 16 + 48 + 4 + 4);
  rt::fix_icrc(t);
  frame_seed("bad_16_TransportLength_ack", t, "TransportLength");
  f = fast_write(false);
  f.raw.icrc_xor = 1;
  frame_seed("bad_17_Icrc", fast_frame(f), "Icrc");
  f = fast_write(false);
  f.flags = 0x1000;
  frame_seed("bad_18_Reserved_flag", fast_frame(f), "Reserved");
  f = fast_write(false);
  f.dcid = 0;
  frame_seed("bad_18_Reserved_dcid", fast_frame(f), "Reserved");
  f = fast_write(false);
  f.bth_rsvd16 = 1;
  frame_seed("bad_18_Reserved_bth", fast_frame(f), "Reserved");
  f = fast_write(false);
  f.raw.payload_length = 15;
  frame_seed("bad_19_PayloadLength", fast_frame(f), "PayloadLength");
  f = fast_write(false);
  f.msg_offset = 4090;
  frame_seed("bad_20_Range_offset", fast_frame(f), "Range");
  f = fast_write(false);
  f.opcode = uint8_t(mroce::fast::Opcode::ReadReq);
  frame_seed("bad_20_Range_readreq_payload", fast_frame(f), "Range");
  auto a = rt::sample_packet(Opcode::Ack, false);
  a.sack[0] = 0x80;
  frame_seed("bad_21_SackBase", mroce::ref::encode(a, {}), "SackBase");
  auto n = rt::sample_packet(Opcode::Nak, false);
  n.nak_code = 5;
  frame_seed("bad_22_Reserved_nak_code", mroce::ref::encode(n, {}), "Reserved");
  n = rt::sample_packet(Opcode::Nak, false);
  n.nak_code = 2;
  n.nak_detail = 1;
  frame_seed("bad_22_Reserved_nak_detail", mroce::ref::encode(n, {}), "Reserved");
  auto c = rt::sample_packet(Opcode::Connect, false);
  c.max_payload = 4100;
  frame_seed("bad_23_Range_conn_maxpay", mroce::ref::encode(c, {}), "Range");
  auto r = rt::sample_packet(Opcode::Reject, false);
  r.reason = 6;
  frame_seed("bad_23_Reserved_reason", mroce::ref::encode(r, {}), "Reserved");
}

// ack_sack input: 48 AETH bytes, one control byte, then 2-byte receive operations.
void ack_seed(const std::string& name, uint32_t cpsn, const std::vector<uint8_t>& sack, uint8_t ctrl,
              const std::vector<uint8_t>& ops) {
  Bytes b(48, 0);
  auto put32 = [&b](size_t off, uint32_t v) {
    for (int i = 0; i < 4; ++i) b[off + i] = uint8_t(v >> (24 - 8 * i));
  };
  put32(0, cpsn);
  put32(4, 3);       // CE count
  put32(8, 1000);    // TS echo
  put32(12, 25000);  // rate hint
  for (size_t i = 0; i < sack.size() && i < 32; ++i) b[16 + i] = sack[i];
  b.push_back(ctrl);
  b.insert(b.end(), ops.begin(), ops.end());
  g_seeds.push_back({"ack_sack", name, b});
}

void make_ack_seeds() {
  ack_seed("empty", 0, {}, 0, {});
  ack_seed("v6_gaps", 100, {0x5a, 0xff, 0x01}, 1 | (4 << 2), {0x00, 0x00, 0x00, 0x07, 0x80, 0x05});
  // Fill the gap at CPSN + 1 with 255 PSNs SACKed behind it: CPSN jumps 256 ([R-HDR-19]).
  std::vector<uint8_t> full(32, 0xFF);
  full[0] = 0x7F;
  ack_seed("fill_whole_window", 0xFFFFFF00u, full, 52 << 2, {0x00, 0x00});
  // [R-HDR-20] bit 0 set: SackBase from both codecs.
  ack_seed("sackbase", 7, {0x80}, 2, {});
  // Sequential arrivals across the 2^32 wrap, duplicates, window edge, beyond it, and 2^31 away.
  ack_seed("wrap_and_edges", 0xFFFFFFFAu, {0x20}, 13 << 2,
           {0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x02, 0x80, 0x00, 0x81, 0x00, 0x01,
            0x00, 0x00, 0xff, 0x01, 0x01, 0xFF, 0x08, 0xFF, 0x07, 0xC1, 0x22, 0x00, 0x03});
  std::vector<uint8_t> many;
  for (int i = 0; i < 300; ++i) {
    many.push_back(uint8_t(i % 3 == 0 ? 0x00 : 0x80 | (i % 2)));
    many.push_back(uint8_t(i * 37));
  }
  ack_seed("many_ops", 12345, {0x00, 0x10, 0x00, 0x01}, 51 << 2 | 1, many);
}

bool read_file(const std::filesystem::path& p, Bytes& out) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string a1 = argc > 1 ? argv[1] : "";
  if (argc < 2 || a1 == "-h" || a1 == "--help" || (a1 == "--check" && argc != 3)) {
    std::fprintf(argc < 2 || a1 == "--check" ? stderr : stdout,
                 "usage: %s OUTDIR | --check DIR | --list\n"
                 "  writes the fuzz seed corpora to OUTDIR/<target>/<name> (e.g. fuzz/corpus)\n",
                 argv[0]);
    return a1 == "-h" || a1 == "--help" ? 0 : 2;
  }
  make_frame_seeds();
  make_ack_seeds();
  for (auto& [name, bytes] : mroce::fuzzing::engine_rx::seeds()) g_seeds.push_back({"engine_rx", name, bytes});
  if (g_errors) return 1;

  if (a1 == "--list") {
    for (const auto& s : g_seeds) std::printf("%s/%s %zu\n", s.target.c_str(), s.name.c_str(), s.bytes.size());
    return 0;
  }
  if (a1 == "--check") {
    int stale = 0;
    for (const auto& s : g_seeds) {
      Bytes have;
      const auto p = std::filesystem::path(argv[2]) / s.target / s.name;
      if (!read_file(p, have) || have != s.bytes) {
        std::fprintf(stderr, "make_corpus: %s is missing or out of date\n", p.c_str());
        ++stale;
      }
    }
    if (stale) {
      std::fprintf(stderr, "make_corpus: %d stale seeds; regenerate with %s %s\n", stale, argv[0], argv[2]);
      return 1;
    }
    std::printf("make_corpus: all %zu seeds current\n", g_seeds.size());
    return 0;
  }
  size_t bytes = 0;
  for (const auto& s : g_seeds) {
    const auto dir = std::filesystem::path(a1) / s.target;
    std::filesystem::create_directories(dir);
    std::ofstream out(dir / s.name, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(s.bytes.data()), std::streamsize(s.bytes.size()));
    if (!out) {
      std::fprintf(stderr, "make_corpus: cannot write %s\n", (dir / s.name).c_str());
      return 1;
    }
    bytes += s.bytes.size();
  }
  std::printf("make_corpus: wrote %zu seeds (%zu bytes) under %s\n", g_seeds.size(), bytes, a1.c_str());
  return 0;
}
