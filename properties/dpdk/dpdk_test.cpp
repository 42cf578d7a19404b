// DPDK packet I/O tests. Each TEST runs in its own process (gtest_discover_tests), since EAL can be
// initialised once per process; every test initialises EAL itself (no hugepages, 512 MB).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <sched.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "dpdk/ecn.hpp"
#include "dpdk/io.hpp"
#include "dpdk/udp_frame.hpp"
#include "impair/prng.hpp"

using namespace mroce::dpdk;
namespace im = mroce::impair;

namespace {

void init_eal() {
  EalOptions o;
  o.file_prefix = "mroce-test-" + std::to_string(getpid());
  Eal::init(o);
}

UdpFrameSpec spec(bool v6 = false, uint16_t sport = 49152) {
  UdpFrameSpec s;
  s.src_mac = *parse_mac("02:00:00:00:00:01");
  s.dst_mac = *parse_mac("02:00:00:00:00:02");
  s.src_ip = *parse_ip(v6 ? "fd00::1" : "198.18.0.1");
  s.dst_ip = *parse_ip(v6 ? "fd00::2" : "198.18.0.2");
  s.sport = sport;
  return s;
}

// The expected bytes of test frame `seq`: headers, a 16-byte stand-in for a BTH with opcode SEND
// (so that no test frame looks like connection control, which protect_handshake exempts), the
// sequence number, then a pattern.
constexpr size_t kSeqOff4 = 42 + 16;  // IPv4 frames
std::vector<uint8_t> expected_frame(uint64_t seq, size_t len, const UdpFrameSpec& s) {
  std::vector<uint8_t> f(len);
  const size_t off = build_udp_headers(f, len, s);
  if (off == 0 || len < off + 24) {
    ADD_FAILURE() << "test frame of " << len << " bytes too short";
    return f;
  }
  f[off + 1] = 0x01;
  std::memcpy(&f[off + 16], &seq, 8);
  for (size_t i = off + 24; i < len; ++i) f[i] = uint8_t(im::mix64(seq * 65536 + i));
  return f;
}

rte_mbuf* make_mbuf(rte_mempool* pool, const std::vector<uint8_t>& bytes) {
  rte_mbuf* m = alloc_mbuf(pool);
  if (!m) return nullptr;
  uint8_t* d = append(m, uint16_t(bytes.size()));
  if (!d) {
    rte_pktmbuf_free(m);
    return nullptr;
  }
  std::memcpy(d, bytes.data(), bytes.size());
  return m;
}

// Sends frames 0..n-1 from `from` to `to` and collects what `to` delivers (after its pump's
// impairment), polling until nothing more can come.
struct Received {
  std::vector<std::vector<uint8_t>> frames;
  uint64_t sent = 0;
};
Received exchange(Pump& from, Pump& to, rte_mempool* pool, uint64_t n, const std::vector<size_t>& lens,
                  const UdpFrameSpec& s, std::vector<uint16_t> sports = {}) {
  Received r;
  auto collect = [&](rte_mbuf** pkts, uint16_t k) {
    for (uint16_t i = 0; i < k; ++i) {
      std::vector<uint8_t> b(pkts[i]->pkt_len);
      copy_out(pkts[i], b.data());
      r.frames.push_back(std::move(b));
      rte_pktmbuf_free(pkts[i]);
    }
  };
  uint64_t seq = 0;
  while (seq < n) {
    rte_mbuf* burst[32];
    uint16_t k = 0;
    for (; k < 32 && seq < n; ++k, ++seq) {
      UdpFrameSpec fs = s;
      if (!sports.empty()) fs.sport = sports[seq % sports.size()];
      burst[k] = make_mbuf(pool, expected_frame(seq, lens[seq % lens.size()], fs));
      if (!burst[k]) ADD_FAILURE() << "mbuf pool empty";
    }
    r.sent += from.send(burst, k, now_us());
    to.poll(collect, now_us());
  }
  // Drain: keep polling until the ring is empty and the impairment has released everything.
  const uint64_t until = now_us() + 200000;
  while (now_us() < until) to.poll(collect, now_us());
  return r;
}

struct Ring {
  MbufPool pool{"test_pool", 16384};
  std::vector<Port> ports = Port::open("ring", pool);
  Pump a{ports.at(0)}, b{ports.at(1)};
};

}  // namespace

TEST(DpdkEal, InitWithoutHugepages) {
  init_eal();
  EXPECT_TRUE(Eal::initialised());
  EXPECT_EQ(rte_eal_has_hugepages(), 0);
  EXPECT_EQ(rte_lcore_count(), 1u);
  MbufPool pool("eal_pool", 4096);
  EXPECT_EQ(pool.available(), 4096u);
  EXPECT_EQ(pool.data_room(), kJumboDataRoom);
  // A second init with the same options is the same instance; with others it is refused.
  EalOptions same;
  same.file_prefix = "mroce-test-" + std::to_string(getpid());
  EXPECT_NO_THROW(Eal::init(same));
  same.memory_mb = 256;
  EXPECT_THROW(Eal::init(same), std::runtime_error);
}

TEST(DpdkPortSpec, ParsesEveryBackend) {
  EXPECT_EQ(parse_port_spec("ring").backend, Backend::RingPair);
  const PortSpec m = parse_port_spec("memif:server:/tmp/x.sock,bsize=4096");
  EXPECT_EQ(m.backend, Backend::Memif);
  EXPECT_TRUE(m.server);
  EXPECT_EQ(m.target, "/tmp/x.sock");
  EXPECT_EQ(vdev_args(m), "role=server,id=0,socket=/tmp/x.sock,socket-abstract=no,bsize=4096");
  EXPECT_EQ(vdev_args(parse_port_spec("memif:client:@abs")), "role=client,id=0,socket=abs,socket-abstract=yes");
  EXPECT_EQ(vdev_args(parse_port_spec("af_xdp:veth0")), "iface=veth0,start_queue=0,queue_count=1");
  EXPECT_EQ(parse_port_spec("af_packet:v1").backend, Backend::AfPacket);
  EXPECT_EQ(parse_port_spec("vdev:net_null,size=128").target, "net_null");
  for (const char* bad : {"", "memif:server", "memif:peer:/x", "af_xdp", "ring:1", "bogus"})
    EXPECT_THROW(parse_port_spec(bad), std::invalid_argument) << bad;
  EXPECT_EQ(to_string(*parse_mac("02:AB:cd:00:00:01")), "02:ab:cd:00:00:01");
  EXPECT_FALSE(parse_mac("02:ab:cd:00:00"));
  EXPECT_EQ(to_string(*parse_ip("fd00::1")), "fd00::1");
  EXPECT_FALSE(parse_ip("300.1.1.1"));
}

// net_ring, two ports back to back: N frames out of A arrive at B byte for byte, in order, and the
// other way round; sizes from small to a 9000-byte-MTU jumbo frame.
TEST(DpdkRing, LoopbackByteIdentical) {
  init_eal();
  Ring r;
  const std::vector<size_t> lens = {90, 128, 1514, 4096, 9014, 777};
  for (int dir = 0; dir < 2; ++dir) {
    Pump& from = dir ? r.b : r.a;
    Pump& to = dir ? r.a : r.b;
    const UdpFrameSpec s = spec(dir == 1);
    const uint64_t n = 20000;
    const Received got = exchange(from, to, r.pool, n, lens, s);
    EXPECT_EQ(got.sent, n);
    ASSERT_EQ(got.frames.size(), n);
    for (uint64_t i = 0; i < n; ++i)
      ASSERT_EQ(got.frames[i], expected_frame(i, lens[i % lens.size()], s)) << "frame " << i << " dir " << dir;
  }
  EXPECT_EQ(r.ports[0].counters().tx_frames, 20000u);
  EXPECT_EQ(r.ports[1].counters().rx_frames, 20000u);
  EXPECT_EQ(r.a.counters().tx_lost + r.b.counters().tx_lost, 0u);
}

// Frames built in place in an mbuf (alloc + append) travel without a copy on net_ring: B receives
// the very mbuf A sent.
TEST(DpdkRing, ZeroCopyTransmitOfMbufsBuiltInPlace) {
  init_eal();
  Ring r;
  rte_mbuf* m = alloc_mbuf(r.pool);
  ASSERT_NE(m, nullptr);
  uint8_t* d = append(m, 128);
  ASSERT_NE(d, nullptr);
  ASSERT_EQ(build_udp_headers({d, 128}, 128, spec()), 42u);
  EXPECT_EQ(ecn_of(m), im::Ecn::Ect0);   // [R-ENC-9] data ECT(0)
  EXPECT_EQ(dscp_of(m), kDscpData);      // [R-ENC-10]
  EXPECT_EQ(append(m, 60000), nullptr);  // beyond the data room: refused, not chained
  ASSERT_EQ(r.a.send(&m, 1, 0), 1);
  rte_mbuf* got = nullptr;
  for (int i = 0; i < 1000 && !got; ++i) r.b.poll([&](rte_mbuf** p, uint16_t) { got = p[0]; }, 0);
  ASSERT_EQ(got, m);
  EXPECT_FALSE(is_ce(got));
  EXPECT_TRUE(mark_ce(got));
  EXPECT_TRUE(is_ce(got));
  EXPECT_TRUE(im::ipv4_checksum_ok(head(got).subspan(14, 20)));
  rte_pktmbuf_free(got);
}

// A software port is its own switch: a full tx queue holds frames (in order, marked CE) instead of
// freeing them, and frames taken while K or more still wait in the rx queue are marked CE.
TEST(DpdkRing, AFullTxQueueHoldsFramesInOrderAndMarksThemCe) {
  init_eal();
  MbufPool pool{"hold_pool", 4096};
  PortConfig small;
  small.ring_size = 64;  // holds 63 frames
  std::vector<Port> ports = Port::open("ring", pool, small);
  Pump a{ports.at(0)}, b{ports.at(1)};
  constexpr uint64_t kFrames = 200;
  std::vector<rte_mbuf*> out;
  for (uint64_t seq = 0; seq < kFrames; ++seq) out.push_back(make_mbuf(pool, expected_frame(seq, 128, spec())));
  EXPECT_EQ(
      a.send(out.data(), 32, 0) + a.send(out.data() + 32, 32, 0) + a.send(out.data() + 64, uint16_t(kFrames - 64), 0),
      63u);
  EXPECT_EQ(a.tx_held(), kFrames - 63);
  EXPECT_EQ(a.counters().tx_lost, 0u);
  EXPECT_EQ(a.counters().ce_marked, kFrames - 63);
  std::vector<std::vector<uint8_t>> got;
  auto collect = [&](rte_mbuf** pkts, uint16_t k) {
    for (uint16_t i = 0; i < k; ++i) {
      got.emplace_back(pkts[i]->pkt_len);
      copy_out(pkts[i], got.back().data());
      rte_pktmbuf_free(pkts[i]);
    }
  };
  for (int turn = 0; turn < 100 && got.size() < kFrames; ++turn) {
    b.poll(collect, 0);
    a.service(0);
  }
  ASSERT_EQ(got.size(), kFrames);
  EXPECT_EQ(a.tx_held(), 0u);
  for (uint64_t seq = 0; seq < kFrames; ++seq) {
    const auto ecn = im::read_ecn(got[seq]);
    EXPECT_EQ(ecn, seq < 63 ? im::Ecn::Ect0 : im::Ecn::Ce) << seq;
    auto want = expected_frame(seq, 128, spec());
    if (seq >= 63) { ASSERT_TRUE(im::mark_ce(want)); }
    EXPECT_EQ(got[seq], want) << seq;  // order kept, bytes intact, IPv4 checksum patched
  }
}

TEST(DpdkRing, FramesTakenWhileKWaitAreMarkedCe) {
  init_eal();
  Ring r;
  r.b.set_ce_backlog(40);
  std::vector<rte_mbuf*> out;
  for (uint64_t seq = 0; seq < 100; ++seq) out.push_back(make_mbuf(r.pool, expected_frame(seq, 128, spec())));
  ASSERT_EQ(r.a.send(out.data(), 100, 0), 100u);
  std::vector<im::Ecn> ecn;
  auto collect = [&](rte_mbuf** pkts, uint16_t k) {
    for (uint16_t i = 0; i < k; ++i) {
      ecn.push_back(*im::read_ecn({rte_pktmbuf_mtod(pkts[i], uint8_t*), pkts[i]->data_len}));
      rte_pktmbuf_free(pkts[i]);
    }
  };
  while (r.b.poll(collect, 0) > 0) {}
  // Bursts of 32: after the first, 68 wait (>= 40): marked; after the second 36: not; nor after.
  ASSERT_EQ(ecn.size(), 100u);
  for (size_t i = 0; i < ecn.size(); ++i) EXPECT_EQ(ecn[i], i < 32 ? im::Ecn::Ce : im::Ecn::Ect0) << i;
  EXPECT_EQ(r.b.counters().ce_marked, 32u);
}

namespace {

struct ImpairedRun {
  Received got;
  im::ImpairStats stats;
  std::vector<im::Decision> log;
};

// n frames of `len` bytes from A to B through an rx impairment stage on B.
ImpairedRun run_impaired(const im::ImpairConfig& c, uint64_t n, size_t len = 128, bool v6 = false,
                         std::vector<uint16_t> sports = {}) {
  Ring r;
  ImpairStage stage(c, r.pool);
  ImpairedRun out;
  out.log.reserve(n);
  stage.record(&out.log);
  r.b.set_rx_impairment(&stage);
  out.got = exchange(r.a, r.b, r.pool, n, {len}, spec(v6), std::move(sports));
  out.stats = stage.stats();
  EXPECT_EQ(stage.held(), 0u);
  return out;
}

void expect_binomial(uint64_t x, uint64_t n, double p, const char* what) {
  const double mean = double(n) * p, sd = std::sqrt(double(n) * p * (1 - p));
  EXPECT_NEAR(double(x), mean, 5 * sd) << what << ": " << x << " of " << n;
}

constexpr uint64_t kFrames = 100000;

void loss_case(uint32_t ppm) {
  init_eal();
  im::ImpairConfig c = im::ImpairConfig::for_ports();
  c.knobs.loss_ppm = ppm;
  c.seed = 77;
  const ImpairedRun run = run_impaired(c, kFrames);
  const uint64_t lost = kFrames - run.got.frames.size();
  expect_binomial(lost, kFrames, ppm / 1e6, "lost");
  EXPECT_EQ(lost, run.stats.dropped);
  // The survivors are exactly the frames whose fate was Deliver, in order and intact.
  size_t j = 0;
  for (const auto& d : run.log) {
    if (d.dropped()) continue;
    ASSERT_LT(j, run.got.frames.size());
    ASSERT_EQ(run.got.frames[j], expected_frame(d.index, 128, spec())) << "frame " << d.index;
    ++j;
  }
  EXPECT_EQ(j, run.got.frames.size());
}

}  // namespace

TEST(DpdkImpair, Loss1Percent) { loss_case(10000); }
TEST(DpdkImpair, Loss10Percent) { loss_case(100000); }

TEST(DpdkImpair, GilbertElliottBurstyLoss) {
  init_eal();
  im::ImpairConfig c = im::impair_from_string(
      "seed=5 ge_enter_bad_ppm=5000 ge_leave_bad_ppm=200000 ge_loss_good_ppm=1000 ge_loss_bad_ppm=800000");
  const ImpairedRun run = run_impaired(c, kFrames);
  const double p_bad = 0.005 / 0.205;
  const double want = (1 - p_bad) * 0.001 + p_bad * 0.8;
  const uint64_t lost = kFrames - run.got.frames.size();
  EXPECT_NEAR(double(lost) / kFrames, want, 0.2 * want) << lost;
  // Bursty: losses come in runs (mean run of i.i.d. loss at this rate would be ~1.02).
  uint64_t runs = 0;
  bool prev = false;
  for (const auto& d : run.log) {
    runs += d.dropped() && !prev;
    prev = d.dropped();
  }
  EXPECT_GT(double(lost) / double(runs), 2.0);
}

TEST(DpdkImpair, DuplicationMakesDeepCopies) {
  init_eal();
  im::ImpairConfig c = im::impair_from_string("seed=8 dup_ppm=10000 dup_gap_max_us=20");
  const ImpairedRun run = run_impaired(c, kFrames);
  const uint64_t extra = run.got.frames.size() - kFrames;
  expect_binomial(extra, kFrames, 0.01, "duplicates");
  EXPECT_EQ(extra, run.stats.duplicated);
  EXPECT_EQ(run.stats.copy_failed, 0u);
  // Every received frame is intact and every frame index arrives once, or twice if duplicated.
  std::vector<int> seen(kFrames, 0);
  for (const auto& f : run.got.frames) {
    uint64_t seq;
    std::memcpy(&seq, &f[kSeqOff4], 8);
    ASSERT_LT(seq, kFrames);
    ASSERT_EQ(f, expected_frame(seq, 128, spec()));
    ++seen[seq];
  }
  for (const auto& d : run.log) ASSERT_EQ(seen[d.index], d.fate.kind == im::PacketFate::Duplicate ? 2 : 1);
}

TEST(DpdkImpair, DelayReordersWithoutLoss) {
  init_eal();
  im::ImpairConfig c = im::impair_from_string("seed=3 delay_ppm=50000 delay_max_us=200");
  const ImpairedRun run = run_impaired(c, kFrames);
  ASSERT_EQ(run.got.frames.size(), kFrames);
  expect_binomial(run.stats.delayed, kFrames, 0.05, "delayed");
  uint64_t out_of_order = 0, prev = 0;
  std::vector<bool> seen(kFrames);
  for (size_t i = 0; i < run.got.frames.size(); ++i) {
    uint64_t seq;
    std::memcpy(&seq, &run.got.frames[i][kSeqOff4], 8);
    ASSERT_FALSE(seen[seq]);
    seen[seq] = true;
    out_of_order += i > 0 && seq < prev;
    prev = seq;
  }
  EXPECT_GT(out_of_order, 0u);
  EXPECT_LE(out_of_order, run.stats.delayed);
}

// [R-ENC-9] CE rewrite: marked frames read CE, keep their DSCP and a valid IPv4 header checksum
// ([R-ENC-3]); IPv6 frames too. Not-ECT frames are never marked.
TEST(DpdkImpair, R_ENC_9_CeRewriteKeepsValidIpv4Checksum) {
  init_eal();
  im::ImpairConfig c = im::impair_from_string("seed=12 ce_ppm=100000");
  for (bool v6 : {false, true}) {
    const ImpairedRun run = run_impaired(c, kFrames, 200, v6);
    ASSERT_EQ(run.got.frames.size(), kFrames);
    uint64_t ce = 0;
    for (size_t i = 0; i < run.got.frames.size(); ++i) {
      const auto& f = run.got.frames[i];
      const bool marked = im::read_ecn(f) == im::Ecn::Ce;
      ce += marked;
      ASSERT_EQ(marked, run.log[i].fate.kind == im::PacketFate::MarkCe);
      ASSERT_EQ(im::read_dscp(f), kDscpData);
      if (!v6) { ASSERT_TRUE(im::ipv4_checksum_ok({&f[14], 20})) << "frame " << i; }
      auto want = expected_frame(i, 200, spec(v6));
      if (marked) im::mark_ce(want);
      ASSERT_EQ(f, want);
    }
    expect_binomial(ce, kFrames, 0.1, "CE marks");
    EXPECT_EQ(ce, run.stats.ce_marked);
  }
  // Not-ECT traffic (ACK/control class) is left alone by the same knobs.
  Ring r;
  ImpairStage stage(c, r.pool);
  r.b.set_rx_impairment(&stage);
  UdpFrameSpec s = spec();
  s.ecn = im::Ecn::NotEct;
  const Received got = exchange(r.a, r.b, r.pool, 10000, {128}, s);
  for (const auto& f : got.frames) ASSERT_EQ(im::read_ecn(f), im::Ecn::NotEct);
  EXPECT_GT(stage.stats().ce_not_ect, 500u);
}

TEST(DpdkImpair, CorruptionFlipsOneByteInsideIp) {
  init_eal();
  im::ImpairConfig c = im::impair_from_string("seed=4 corrupt_ppm=20000");
  const ImpairedRun run = run_impaired(c, kFrames, 1000);
  ASSERT_EQ(run.got.frames.size(), kFrames);
  uint64_t corrupted = 0;
  for (size_t i = 0; i < kFrames; ++i) {
    const auto want = expected_frame(i, 1000, spec());
    const auto& f = run.got.frames[i];
    size_t diffs = 0, at = 0;
    for (size_t j = 0; j < f.size(); ++j)
      if (f[j] != want[j]) ++diffs, at = j;
    const auto& d = run.log[i];
    if (d.fate.kind == im::PacketFate::Corrupt) {
      ASSERT_EQ(diffs, 1u) << "frame " << i;
      ASSERT_EQ(at, d.corrupt_at);
      ASSERT_GE(at, 14u);
      ++corrupted;
    } else {
      ASSERT_EQ(diffs, 0u) << "frame " << i;
    }
  }
  expect_binomial(corrupted, kFrames, 0.02, "corrupted");
}

// A per-path blackhole drops exactly the frames of one UDP source port, from when it is switched
// on until it is switched off.
TEST(DpdkImpair, BlackholeBySourcePort) {
  init_eal();
  Ring r;
  ImpairStage stage(im::impair_from_string("seed=1 blackhole=49153"), r.pool);
  r.b.set_rx_impairment(&stage);
  const Received got = exchange(r.a, r.b, r.pool, 10000, {128}, spec(), {49152, 49153, 49154});
  uint64_t by_port[3] = {0, 0, 0};
  for (const auto& f : got.frames) ++by_port[im::load16(&f[34]) - 49152];
  EXPECT_EQ(by_port[0], 3334u);
  EXPECT_EQ(by_port[1], 0u);
  EXPECT_EQ(by_port[2], 3333u);
  EXPECT_EQ(stage.stats().blackholed, 3333u);
  // Off at run time: the path works again.
  stage.impairer().set_blackhole(49153, false, now_us());
  const Received again = exchange(r.a, r.b, r.pool, 300, {128}, spec(), {49153});
  EXPECT_EQ(again.frames.size(), 300u);
}

// Same seed and knobs: the same fate for every frame, on ports as in FateGenerator; another seed
// gives another sequence.
TEST(DpdkImpair, SameSeedSameFateSequence) {
  init_eal();
  const std::string knobs = "loss_ppm=20000 dup_ppm=10000 delay_ppm=10000 ce_ppm=20000 corrupt_ppm=5000";
  const im::ImpairConfig c1 = im::impair_from_string("seed=42 " + knobs);
  const ImpairedRun a = run_impaired(c1, 20000), b = run_impaired(c1, 20000);
  const ImpairedRun other = run_impaired(im::impair_from_string("seed=43 " + knobs), 20000);
  ASSERT_EQ(a.log.size(), 20000u);
  ASSERT_EQ(a.log, b.log);
  im::FateGenerator g(c1.knobs, 42);
  for (const auto& d : a.log) ASSERT_EQ(d.fate, g.next()) << "frame " << d.index;
  EXPECT_NE(a.log, other.log);
  EXPECT_EQ(a.stats.dropped, b.stats.dropped);
  EXPECT_EQ(a.got.frames.size(), b.got.frames.size());
}

// Both directions recorded into one pcap that tshark reads with the right frame count.
TEST(DpdkPcap, TsharkReadsBothDirections) {
  init_eal();
  const std::string path = "/tmp/mroce_pcap_test_" + std::to_string(getpid()) + ".pcap";
  {
    Ring r;
    PcapWriter w(path);
    r.a.set_pcap(&w);
    r.b.set_pcap(&w);
    // A sends 300 (recorded by A as sent, by B as received); B sends 200 back.
    exchange(r.a, r.b, r.pool, 300, {100, 1514, 9014}, spec());
    exchange(r.b, r.a, r.pool, 200, {90}, spec(true));
    EXPECT_EQ(w.frames(), 1000u);
  }
  auto count = [&](const std::string& filter) {
    const std::string cmd =
        "tshark -r " + path + (filter.empty() ? "" : " -Y '" + filter + "'") + " 2>/dev/null | wc -l";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return -1L;
    long n = -1;
    if (fscanf(p, "%ld", &n) != 1) n = -1;
    return pclose(p) == 0 ? n : -1L;
  };
  ASSERT_EQ(system("command -v tshark >/dev/null"), 0) << "tshark is not installed (ci/bootstrap installs it)";
  EXPECT_EQ(count(""), 1000);
  EXPECT_EQ(count("udp.dstport == 4793 && ip.src == 198.18.0.1"), 600);
  EXPECT_EQ(count("ipv6.src == fd00::1 && frame.len == 90"), 400);
  std::remove(path.c_str());
}

namespace {

// Runs the rest of the test inside a fresh network namespace holding one veth pair (so af_packet
// and af_xdp have real kernel interfaces and nothing leaves the namespace). Needs root (the caller
// skips otherwise). Returns "" or why the setup failed.
std::string enter_veth_namespace(const std::string& ns, const std::string& ia, const std::string& ib, int mtu) {
  const std::string cmd = "ip netns del " + ns + " 2>/dev/null; ip netns add " + ns + " && ip -n " + ns + " link add " +
                          ia + " type veth peer name " + ib + " && ip -n " + ns + " link set " + ia + " mtu " +
                          std::to_string(mtu) + " up && ip -n " + ns + " link set " + ib + " mtu " +
                          std::to_string(mtu) + " up";
  if (system(cmd.c_str()) != 0) return "could not create namespace " + ns;
  const int fd = open(("/var/run/netns/" + ns).c_str(), O_RDONLY);
  if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) return "setns into " + ns + " failed";
  close(fd);
  return "";
}

struct NsGuard {
  std::string ns;
  ~NsGuard() { (void)!system(("ip netns del " + ns + " 2>/dev/null").c_str()); }
};

void veth_exchange(const std::string& kind, int mtu, size_t len, uint16_t data_room) {
  const std::string tag = std::to_string(getpid());
  const std::string ns = "mroce-t" + tag, ia = "mta" + tag, ib = "mtb" + tag;
  NsGuard guard{ns};
  // Only a missing privilege skips; as root, a setup failure is a failure.
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create a network namespace and a veth pair (ip netns/ip link)";
  const std::string why = enter_veth_namespace(ns, ia, ib, mtu);
  ASSERT_EQ(why, "") << "veth namespace setup failed";
  init_eal();
  MbufPool pool("veth_pool", 8192, data_room);
  std::vector<Port> pa = Port::open(kind + ":" + ia, pool), pb = Port::open(kind + ":" + ib, pool);
  Pump a(pa[0]), b(pb[0]);
  // Wait for the link (veth carrier) before counting.
  for (int i = 0; i < 200 && !(pa[0].link_up() && pb[0].link_up()); ++i) usleep(10000);
  const uint64_t n = 2000;
  // The kernel may add frames of its own (IPv6 neighbour discovery): keep ours only.
  Received got = exchange(a, b, pool, n, {len}, spec());
  std::erase_if(got.frames, [](const auto& f) {
    const auto l = im::frame_layout(f);
    return !l || l->dport != kDefaultUdpPort;
  });
  // Frames go through the kernel: allow a few early losses while the sockets come up, nothing
  // more, and every frame that arrives is intact and in order.
  EXPECT_GE(got.frames.size(), n * 95 / 100) << kind;
  uint64_t prev = 0;
  for (size_t i = 0; i < got.frames.size(); ++i) {
    uint64_t seq;
    std::memcpy(&seq, &got.frames[i][kSeqOff4], 8);
    ASSERT_EQ(got.frames[i], expected_frame(seq, len, spec()));
    if (i) { ASSERT_GT(seq, prev); }
    prev = seq;
  }
}

}  // namespace

TEST(DpdkVeth, AfPacketJumboFramesOverVeth) { veth_exchange("af_packet", 9000, 9014, kJumboDataRoom); }

// AF_XDP on veth: native XDP on veth needs the peer MTU to fit a page (no multi-buffer in DPDK
// 22.11), and umem chunks are at most one page, so 1500-byte MTU and 2 KiB mbufs.
TEST(DpdkVeth, AfXdpOverVeth) { veth_exchange("af_xdp", 1500, 1400, RTE_MBUF_DEFAULT_BUF_SIZE); }
