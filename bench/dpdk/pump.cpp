// mroce_pump: a raw packet pump (no protocol) measuring what our DPDK layer moves: frames/s and
// Gb/s of fixed-size frames (4 KiB by default), optionally through the impairment stage.
//   --mode ring                 one process, two net_ring ports back to back, one core: build a
//                               burst in place, send on A, receive on B (through the impairment),
//                               free; repeat
//   --mode tx --port memif:...  send as fast as the port takes frames
//   --mode rx --port memif:...  count what arrives (through the impairment)
// Prints one JSON line: {"mode":..,"frames":..,"seconds":..,"mpps":..,"gbps":..}. Gb/s counts
// frame bytes (Ethernet header to end of payload, no preamble/FCS/gap).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "dpdk/io.hpp"
#include "dpdk/udp_frame.hpp"

using namespace mroce::dpdk;

namespace {

struct Result {
  uint64_t frames = 0, bytes = 0;
  double seconds = 0;
};

// Headers of the pumped frames, built once and copied into each mbuf (as the engine's codec would
// write its headers in place; the payload bytes are left as they are).
struct Template {
  uint8_t bytes[128];
  size_t len;
};

Template make_template(const PlaneAddr& a, unsigned frame_len) {
  Template t{};
  UdpFrameSpec s;
  s.src_mac = a.mac;
  s.dst_mac = a.peer_mac;
  s.src_ip = *parse_ip("198.18.0.1");
  s.dst_ip = *parse_ip("198.18.0.2");
  std::vector<uint8_t> f(frame_len);
  t.len = build_udp_headers(f, frame_len, s) + 16;
  std::memcpy(t.bytes, f.data(), t.len);
  t.bytes[t.len - 15] = 0x01;  // a data opcode in the BTH position (never exempt from impairment)
  return t;
}

// Fills `out` with n frames built in place; returns how many could be allocated.
uint16_t build_burst(rte_mempool* pool, const Template& t, uint16_t frame_len, rte_mbuf** out, uint16_t n) {
  if (!alloc_mbufs(pool, out, n)) return 0;
  for (uint16_t i = 0; i < n; ++i) {
    uint8_t* d = append(out[i], frame_len);
    std::memcpy(d, t.bytes, t.len);
  }
  return n;
}

void print(const std::string& mode, const Result& r, const std::string& impair) {
  const double fps = r.seconds > 0 ? double(r.frames) / r.seconds : 0;
  const double gbps = r.seconds > 0 ? double(r.bytes) * 8 / r.seconds / 1e9 : 0;
  std::printf("{\"mode\":\"%s\",\"frames\":%llu,\"seconds\":%.3f,\"mpps\":%.4f,\"gbps\":%.3f,\"impair\":\"%s\"}\n",
              mode.c_str(), (unsigned long long)r.frames, r.seconds, fps / 1e6, gbps, impair.c_str());
  std::fflush(stdout);
}

auto counter(Result& r) {
  return [&r](rte_mbuf** pkts, uint16_t n) {
    for (uint16_t i = 0; i < n; ++i) r.bytes += pkts[i]->pkt_len;
    r.frames += n;
    free_mbufs(pkts, n);
  };
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Raw DPDK packet pump: frames/s and Gb/s through our I/O layer"};
  IoOptions io;
  std::string mode = "ring";
  double duration_s = 3;
  unsigned frame_len = 4096;
  add_io_options(app, io);
  app.add_option("--mode", mode, "ring | tx | rx")->check(CLI::IsMember({"ring", "tx", "rx"}));
  app.add_option("--duration-s", duration_s)->capture_default_str();
  app.add_option("--frame-len", frame_len)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (mode == "ring" && io.ports.empty()) io.ports = {"ring"};

  try {
    IoContext ctx(io);
    const uint16_t burst = io.burst;
    const Template t = make_template(ctx.addr(0), frame_len);
    Result r;
    if (mode == "ring") {
      if (ctx.planes() != 2) throw std::invalid_argument("--mode ring needs the ring port pair");
      Pump& a = ctx.pump(0);
      Pump& b = ctx.pump(1);
      auto count = counter(r);
      const uint64_t start = now_us(), end = start + uint64_t(duration_s * 1e6);
      uint64_t now = start;
      while (now < end) {
        for (int i = 0; i < 64; ++i) {
          rte_mbuf* pkts[kMaxBurst];
          const uint16_t n = build_burst(ctx.pool(), t, uint16_t(frame_len), pkts, burst);
          a.send(pkts, n, now);
          while (b.poll(count, now) > 0) {}
        }
        now = now_us();
      }
      b.poll(count, now);
      r.seconds = double(now - start) / 1e6;
    } else if (mode == "tx") {
      Pump& a = ctx.pump(0);
      // Wait for the peer (memif connects asynchronously).
      const uint64_t wait_end = now_us() + 10000000;
      while (!ctx.port(0).link_up() && now_us() < wait_end) rte_delay_us_sleep(1000);
      if (!ctx.port(0).link_up()) throw std::runtime_error("link did not come up (is the peer running?)");
      const uint64_t start = now_us(), end = start + uint64_t(duration_s * 1e6);
      uint64_t now = start;
      while (now < end) {
        for (int i = 0; i < 64; ++i) {
          rte_mbuf* pkts[kMaxBurst];
          const uint16_t n = build_burst(ctx.pool(), t, uint16_t(frame_len), pkts, burst);
          // No retries: a full ring means the receiver is the bottleneck; count only
          // frames the port took.
          const uint16_t sent = ctx.port(0).tx(pkts, n);
          free_mbufs(pkts + sent, n - sent);
          r.frames += sent;
          r.bytes += uint64_t(sent) * frame_len;
        }
        now = now_us();
      }
      (void)a;
      r.seconds = double(now - start) / 1e6;
    } else {
      // rx: the clock starts at the first frame and stops after duration_s (or when frames
      // stop for 300 ms), so start-up and shut-down gaps are not counted.
      Pump& b = ctx.pump(0);
      auto count = counter(r);
      const uint64_t give_up = now_us() + 30000000;
      uint64_t first = 0, last = 0, now = now_us();
      while (r.frames == 0 && now < give_up) {
        b.poll(count, now);
        now = now_us();
      }
      first = last = now;
      r.frames = r.bytes = 0;
      const uint64_t end = first + uint64_t(duration_s * 1e6);
      while (now < end && now - last < 300000) {
        if (b.poll(count, now) > 0) last = now;
        now = now_us();
      }
      r.seconds = double(last - first) / 1e6;
    }
    print(mode, r, io.impair_rx);
    if (auto* s = ctx.rx_impairment(mode == "ring" ? 1 : 0)) {
      const auto& st = s->stats();
      std::fprintf(stderr, "impairment: in=%llu out=%llu dropped=%llu dup=%llu delayed=%llu ce=%llu held=%zu\n",
                   (unsigned long long)st.frames_in, (unsigned long long)st.frames_out, (unsigned long long)st.dropped,
                   (unsigned long long)st.duplicated, (unsigned long long)st.delayed, (unsigned long long)st.ce_marked,
                   s->held());
    }
  } catch (const std::exception& e) {
    std::cerr << "mroce_pump: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
