#include "dpdk/pcap.hpp"

#include <pcap/pcap.h>
#include <sys/time.h>

#include <algorithm>
#include <stdexcept>

#include "dpdk/mbuf.hpp"

namespace mroce::dpdk {

PcapWriter::PcapWriter(const std::string& path, uint32_t snaplen) : path_(path), snaplen_(snaplen) {
  pcap_ = pcap_open_dead(DLT_EN10MB, int(snaplen));
  if (!pcap_) throw std::runtime_error("pcap_open_dead failed");
  dumper_ = pcap_dump_open(static_cast<pcap_t*>(pcap_), path.c_str());
  if (!dumper_) {
    const std::string err = pcap_geterr(static_cast<pcap_t*>(pcap_));
    pcap_close(static_cast<pcap_t*>(pcap_));
    throw std::runtime_error("pcap_dump_open(" + path + "): " + err);
  }
}

PcapWriter::~PcapWriter() {
  if (dumper_) pcap_dump_close(static_cast<pcap_dumper_t*>(dumper_));
  if (pcap_) pcap_close(static_cast<pcap_t*>(pcap_));
}

void PcapWriter::write(std::span<const uint8_t> frame) {
  pcap_pkthdr h{};
  gettimeofday(&h.ts, nullptr);
  h.len = uint32_t(frame.size());
  h.caplen = std::min<uint32_t>(h.len, snaplen_);
  pcap_dump(static_cast<u_char*>(dumper_), &h, frame.data());
  ++frames_;
}

void PcapWriter::write(const rte_mbuf* m) {
  if (m->nb_segs == 1) {
    write(head(m));
    return;
  }
  scratch_.resize(m->pkt_len);
  copy_out(m, scratch_.data());
  write(std::span<const uint8_t>(scratch_));
}

void PcapWriter::flush() { pcap_dump_flush(static_cast<pcap_dumper_t*>(dumper_)); }

}  // namespace mroce::dpdk
