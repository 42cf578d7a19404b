// mroce_io_probe: sends raw UDP frames on every plane at a fixed rate and counts the probe frames
// received per plane, printing one line per interval:
//     t_ms=500 wall_ms=1700000000500 rx=120,118 tx=125,125
// and at the end one JSON line with the totals. No protocol: it checks that frames cross each
// plane (ci/netns/smoke.sh runs one in each namespace and takes a plane down midway).
#include <CLI/CLI.hpp>

#include <cstring>
#include <ctime>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "dpdk/io.hpp"
#include "dpdk/udp_frame.hpp"
#include "impair/frame.hpp"

using namespace mroce::dpdk;

namespace {

// Wall-clock milliseconds: lets a script line up interval reports with the moments it changed the
// network.
uint64_t wall_ms() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000 + uint64_t(ts.tv_nsec) / 1000000;
}

constexpr char kMagic[8] = {'M', 'R', 'P', 'R', 'O', 'B', 'E', '1'};

std::string join(const std::vector<uint64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Send and count raw UDP probe frames on every plane"};
  IoOptions io;
  double duration_s = 3, interval_ms = 500;
  unsigned rate = 2000;  // frames per second per plane
  unsigned frame_len = 256;
  uint16_t sport_base = 49152;
  add_io_options(app, io);
  app.add_option("--duration-s", duration_s)->capture_default_str();
  app.add_option("--interval-ms", interval_ms)->capture_default_str();
  app.add_option("--rate", rate, "Frames per second per plane")->capture_default_str();
  app.add_option("--frame-len", frame_len)->capture_default_str();
  app.add_option("--sport-base", sport_base, "UDP source port of plane 0 (plane p: +p)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    IoContext ctx(io);
    std::cout << "ready wall_ms=" << wall_ms() << " planes=" << ctx.planes() << std::endl;
    const size_t planes = ctx.planes();
    std::vector<uint64_t> rx(planes), tx(planes), rx_iv(planes), tx_iv(planes), seq(planes);
    const uint64_t start = now_us(), end = start + uint64_t(duration_s * 1e6);
    const uint64_t gap_us = rate ? 1000000 / rate : 1000000;
    uint64_t next_tx = start, next_report = start + uint64_t(interval_ms * 1000);
    for (uint64_t now = start; now < end; now = now_us()) {
      for (size_t p = 0; p < planes; ++p) {
        ctx.pump(p).poll(
            [&](rte_mbuf** pkts, uint16_t n) {
              for (uint16_t i = 0; i < n; ++i) {
                const auto h = head(pkts[i]);
                const auto lay = mroce::impair::frame_layout(h);
                if (lay && lay->dport == ctx.udp_port() && h.size() >= lay->bth + 8 &&
                    std::memcmp(&h[lay->bth], kMagic, 8) == 0) {
                  ++rx[p];
                  ++rx_iv[p];
                }
                rte_pktmbuf_free(pkts[i]);
              }
            },
            now);
        ctx.pump(p).service(now);
      }
      if (now >= next_tx) {
        next_tx += gap_us;
        for (size_t p = 0; p < planes; ++p) {
          rte_mbuf* m = alloc_mbuf(ctx.pool());
          if (!m) continue;
          uint8_t* d = append(m, uint16_t(frame_len));
          UdpFrameSpec s;
          s.src_mac = ctx.addr(p).mac;
          s.dst_mac = ctx.addr(p).peer_mac;
          s.src_ip = ctx.addr(p).ip;
          s.dst_ip = ctx.addr(p).peer_ip;
          s.sport = uint16_t(sport_base + p);
          s.dport = ctx.udp_port();
          const size_t off = d ? build_udp_headers({d, frame_len}, frame_len, s) : 0;
          if (off == 0 || frame_len < off + 8 + 2 + 8) {
            rte_pktmbuf_free(m);
            std::cerr << "mroce_io_probe: frame length " << frame_len << " too small or too large\n";
            return 2;
          }
          std::memset(d + off, 0, frame_len - off);
          std::memcpy(d + off, kMagic, 8);
          d[off + 8] = uint8_t(p >> 8);
          d[off + 9] = uint8_t(p);
          std::memcpy(d + off + 10, &seq[p], 8);
          ++seq[p];
          if (ctx.pump(p).send(&m, 1, now) == 1) {
            ++tx[p];
            ++tx_iv[p];
          }
        }
      }
      if (now >= next_report) {
        next_report += uint64_t(interval_ms * 1000);
        std::cout << "t_ms=" << (now - start) / 1000 << " wall_ms=" << wall_ms() << " rx=" << join(rx_iv)
                  << " tx=" << join(tx_iv) << std::endl;
        std::fill(rx_iv.begin(), rx_iv.end(), 0);
        std::fill(tx_iv.begin(), tx_iv.end(), 0);
      }
    }
    std::ostringstream js;
    js << "{\"planes\":" << planes << ",\"rx\":[" << join(rx) << "],\"tx\":[" << join(tx) << "],\"backends\":[";
    for (size_t p = 0; p < planes; ++p) js << (p ? "," : "") << '"' << backend_name(ctx.port(p).backend()) << '"';
    js << "]}";
    std::cout << js.str() << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "mroce_io_probe: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
