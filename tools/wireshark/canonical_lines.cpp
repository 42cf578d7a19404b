// Prints the appendix-C canonical line of every frame of a pcap file, as the reference codec
// (spec_model/codec) decodes it: one line per frame, "<frame number><TAB><line>", frames counted
// from 1 as Wireshark counts them. The Wireshark dissector test (dissector_test.py) compares these
// lines with the ones it rebuilds from the dissector's fields.
//
//   canonical_lines [--udp-port N] FILE.pcap
#include <pcap/pcap.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <span>
#include <string>
#include <string_view>

#include "codec/ref_codec.hpp"

namespace {

int usage() {
  std::cerr << "usage: canonical_lines [--udp-port N] FILE.pcap\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  uint16_t port = mroce::ref::kDefaultUdpPort;
  std::string file;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--udp-port" && i + 1 < argc) {
      const unsigned long v = std::strtoul(argv[++i], nullptr, 10);
      if (v == 0 || v > 65535) return usage();
      port = static_cast<uint16_t>(v);
    } else if (!arg.empty() && arg[0] != '-' && file.empty()) {
      file = arg;
    } else {
      return usage();
    }
  }
  if (file.empty()) return usage();

  char errbuf[PCAP_ERRBUF_SIZE] = {};
  pcap_t* pcap = pcap_open_offline(file.c_str(), errbuf);
  if (pcap == nullptr) {
    std::cerr << "canonical_lines: " << file << ": " << errbuf << "\n";
    return 1;
  }
  if (pcap_datalink(pcap) != DLT_EN10MB) {
    std::cerr << "canonical_lines: " << file << ": not an Ethernet capture\n";
    pcap_close(pcap);
    return 1;
  }
  uint64_t number = 0;
  pcap_pkthdr* header = nullptr;
  const u_char* data = nullptr;
  int rc = 0;
  std::string out;
  while ((rc = pcap_next_ex(pcap, &header, &data)) == 1) {
    ++number;
    // The frame as captured: a frame cut by the snap length decodes as the bytes that are there.
    const std::span<const uint8_t> frame(data, header->caplen);
    const mroce::ref::DecodeResult r = mroce::ref::decode(frame, port);
    out += std::to_string(number);
    out += '\t';
    out += mroce::ref::canonical(r, frame);
    out += '\n';
  }
  if (rc == -1) {
    std::cerr << "canonical_lines: " << file << ": " << pcap_geterr(pcap) << "\n";
    pcap_close(pcap);
    return 1;
  }
  pcap_close(pcap);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}
