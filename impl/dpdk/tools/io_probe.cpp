// mroce_io_probe: sends raw UDP frames on every plane at a fixed rate and counts the probe frames
// received per plane, printing one line per interval:
//     t_ms=500 wall_ms=1700000000500 rx=120,118 tx=125,125
// and at the end one JSON line with the totals. No protocol: it checks that frames cross each
// plane (ci/netns/smoke.sh runs one in each namespace and takes a plane down midway).
//
// Two probes joined by memif (properties/dpdk/memif_pair.sh) must end in order: the memif PMD
// tears the shared rings down (munmap) in DPDK's interrupt thread as soon as its peer disconnects,
// with nothing to hold off an rx/tx burst running on those rings in the data path (the burst takes
// the ring pointer before it checks the connected flag, so no link check of ours can close that
// window either). A probe still polling when its peer closes its port reads unmapped memory. So
// --done-file says "I no longer touch my ports", --peer-done-file makes a probe keep its ports open
// until the peer has said so, and --close-last makes the second probe to close wait until the
// PMD has finished tearing down the connection the first one closed (a close of ours racing that
// teardown would free the regions twice).

#include <unistd.h>

#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "dpdk/eal.hpp"
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

// Polls cond every millisecond until it holds (true) or timeout_s has passed (false).
bool wait_until(const std::function<bool()>& cond, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (!cond()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Send and count raw UDP probe frames on every plane"};
  IoOptions io;
  double duration_s = 3, interval_ms = 500;
  unsigned rate = 2000;  // frames per second per plane
  unsigned frame_len = 256;
  uint16_t sport_base = 49152;
  std::string done_file, peer_done_file;
  bool close_last = false, until_peer_done = false;
  double peer_wait_s = 20;
  add_io_options(app, io);
  app.add_option("--duration-s", duration_s)->capture_default_str();
  app.add_option("--interval-ms", interval_ms)->capture_default_str();
  app.add_option("--rate", rate, "Frames per second per plane")->capture_default_str();
  app.add_option("--frame-len", frame_len)->capture_default_str();
  app.add_option("--sport-base", sport_base, "UDP source port of plane 0 (plane p: +p)")->capture_default_str();
  app.add_option("--done-file", done_file, "Create this file once the ports are no longer polled (before they close)");
  app.add_option("--peer-done-file", peer_done_file,
                 "Keep the ports open, unpolled, until this file exists (the peer's --done-file): a memif peer "
                 "must not disconnect while the other side still polls");
  app.add_flag("--until-peer-done", until_peer_done,
               "Keep polling past --duration-s until --peer-done-file exists (at most --peer-wait-s more): the "
               "peer's whole run is seen, however late it started");
  app.add_flag("--close-last", close_last,
               "Before closing, also wait until every port's link is down (the peer closed first) and DPDK has "
               "finished tearing that connection down");
  app.add_option("--peer-wait-s", peer_wait_s, "Give up waiting for the peer after this long (exit 3)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    IoContext ctx(io);
    std::cout << "ready wall_ms=" << wall_ms() << " planes=" << ctx.planes() << std::endl;
    const size_t planes = ctx.planes();
    std::vector<uint64_t> rx(planes), tx(planes), rx_iv(planes), tx_iv(planes), seq(planes);
    const uint64_t start = now_us(), end = start + uint64_t(duration_s * 1e6);
    const uint64_t gap_us = rate ? 1000000 / rate : 1000000;
    uint64_t next_tx = start, next_report = start + uint64_t(interval_ms * 1000);
    const uint64_t hard_end = end + uint64_t(peer_wait_s * 1e6);
    bool peer_done = !until_peer_done || peer_done_file.empty();
    uint64_t next_check = start;
    for (uint64_t now = start; now < end || (!peer_done && now < hard_end); now = now_us()) {
      if (!peer_done && now >= next_check) {
        peer_done = std::filesystem::exists(peer_done_file);
        next_check = now + 10000;
      }
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

    // From here on the ports are not touched until they close (IoContext's destructor).
    if (!done_file.empty()) std::ofstream(done_file) << "done\n";
    const char* late = nullptr;
    if (!peer_done_file.empty() && !wait_until([&] { return std::filesystem::exists(peer_done_file); }, peer_wait_s))
      late = "peer did not stop polling (no --peer-done-file)";
    else if (close_last && !wait_until(
                               [&] {
                                 for (size_t p = 0; p < planes; ++p)
                                   if (ctx.port(p).link_up()) return false;
                                 return true;
                               },
                               peer_wait_s))
      late = "peer did not close its port (link still up)";
    else if (close_last && !drain_interrupt_thread(peer_wait_s))
      late = "DPDK's interrupt thread did not answer";
    if (late) {
      std::cerr << "mroce_io_probe: " << late << " within " << peer_wait_s << " s\n";
      return 3;
    }
  } catch (const std::exception& e) {
    std::cerr << "mroce_io_probe: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
