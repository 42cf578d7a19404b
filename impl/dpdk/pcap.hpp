// Capture of both directions of an endpoint's traffic into a classic pcap file (libpcap's
// pcap_dump, DLT_EN10MB), readable by tshark/wireshark. Classic pcap has no direction field; the
// source MAC/IP tell the directions apart.
#pragma once

#include <rte_mbuf.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace mroce::dpdk {

class PcapWriter {
 public:
  // Throws std::runtime_error when the file cannot be created.
  explicit PcapWriter(const std::string& path, uint32_t snaplen = 65535);
  ~PcapWriter();
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

  // Records one frame with the current wall-clock time (chained mbufs are linearised).
  void write(const rte_mbuf* m);
  void write(rte_mbuf* const* pkts, uint16_t n) {
    for (uint16_t i = 0; i < n; ++i) write(pkts[i]);
  }
  void write(std::span<const uint8_t> frame);
  void flush();
  uint64_t frames() const { return frames_; }
  const std::string& path() const { return path_; }

 private:
  void* pcap_ = nullptr;    // pcap_t*
  void* dumper_ = nullptr;  // pcap_dumper_t*
  std::string path_;
  uint32_t snaplen_;
  uint64_t frames_ = 0;
  std::vector<uint8_t> scratch_;
};

}  // namespace mroce::dpdk
