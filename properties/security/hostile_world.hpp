// A legitimate transfer between two engines (EnginePair, in virtual time) that an attacker disturbs
// by injecting crafted frames into one of them, the *victim*, plus the invariants that must hold
// afterwards whatever the attacker sent (SPEC 8, 12, [R-CMP-1], [R-CMP-2], [R-SEC-6]).
//
// Shared by the hostile-input suite (properties/security/hostile_test.cpp) and the engine fuzz
// target (fuzz/engine_rx.cpp).
//
// Memory: each side has one allocation holding six regions separated by guard bytes, every byte
// initialised to a known pattern:
//   rw   LocalWrite|RemoteWrite   target of the peer's Writes / Write-with-immediates
//   ro   RemoteRead               source of the peer's Reads (never written)
//   lw   LocalWrite               this side's receive buffers and read sinks
//   src  no right                 sources of this side's Sends and Writes (never written)
//   dead every right, deregistered before the transfer (its keys must not be honoured)
//   top  LocalWrite|RemoteWrite   at iova 2^64 - 8192 (address overflow cases)
// Keys are only ever taken from reg_mr's answer: nothing here computes a key.
//
// Traffic: both sides post receives, then each sends the other two Writes, two Sends (one of zero
// bytes), a Write-with-immediate and a Read, on streams 0 and 1 (table kTraffic).
//
// What the attacker can legitimately achieve is tracked as the frames go in (`inject`), from their
// decoded fields, so the checks stay exact:
//   * bytes a forged WRITE could place (a registered RemoteWrite region named by its real key) are
//     "tainted": any value is allowed there;
//   * a forged SEND / WRITE_IMM / VOID naming a receive taints that receive (its content, length
//     and status); a forged READ_RESP taints the victim's Read it names; any forged READ_REQ taints
//     the peer's read sinks (the victim answers it with its own readable memory);
//   * a forged data packet at a (path, PSN) that a legitimate segment of the peer also uses may
//     pre-empt it (the legitimate copy is then a duplicate, [R-REL-8]): the peer's work request may
//     complete Success without its bytes. That is the on-path attacker of [R-SEC-8];
//   * an ACK or NAK naming a PSN at or beyond the victim's SNXT acts on nothing ([R-ACK-10]), so it
//     excuses nothing: the victim's Sends/Writes complete Success only when the peer holds their
//     bytes. (kAckValidationChecked = false turns this check off, to see an engine without the rule.)
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "codec/fast_codec.hpp"
#include "engine_pair.hpp"
#include "mroce/mroce.hpp"
#include "mroce/testing.hpp"

namespace mroce::hostile {

// [R-ACK-10]: an ACK/NAK naming a PSN at or beyond SNXT is dropped and acts on nothing, so the
// victim's Sends/Writes may complete Success only when the peer really holds their bytes, whatever
// the attacker acknowledged. MROCE_HOSTILE_ACK_VALIDATION=0 excuses such completions (to study an
// engine without the rule).
inline bool ack_validation_checked() {
  const char* e = std::getenv("MROCE_HOSTILE_ACK_VALIDATION");
  return !(e && e[0] == '0');
}

enum Reg : int { kRw, kRo, kLw, kSrc, kDead, kTop, kRegions };
struct RegionLayout {
  const char* name;
  uint64_t size;
  uint32_t access;
  uint64_t iova;
};
inline constexpr uint32_t kLW = access::kLocalWrite, kRW = access::kRemoteWrite, kRR = access::kRemoteRead;
inline constexpr std::array<RegionLayout, kRegions> kLayout = {{
    {"rw", 32768, kLW | kRW, 0x10000},
    {"ro", 16384, kRR, 0x40000},
    {"lw", 32768, kLW, 0x80000},
    {"src", 32768, 0, 0xC0000},
    {"dead", 4096, kLW | kRW | kRR, 0x100000},
    {"top", 4096, kLW | kRW, 0xFFFFFFFFFFFFE000ull},
}};
inline constexpr uint64_t kGuard = 256;
inline constexpr uint64_t region_offset(int r) {
  uint64_t off = kGuard;
  for (int i = 0; i < r; ++i) off += kLayout[i].size + kGuard;
  return off;
}
inline constexpr uint64_t kArena = region_offset(kRegions);

enum class Op : uint8_t { Write, WriteImm, Send, Read, Recv };

// One legitimate work request of each side (both sides post the same plan towards the other).
// Receives: stream, RSN and buffer offset in lw. The others: stream, MSN, source offset (src for
// Write/WriteImm/Send, the peer's ro for Read), destination offset (peer's rw for
// Write/WriteImm, the local lw sink for Read), and the receive they consume (index in kTraffic).
struct Plan {
  Op op;
  uint16_t stream;
  uint32_t seq;  // MSN (messages) or RSN (receives)
  uint32_t len;
  uint64_t from;
  uint64_t to;
  int recv;  // index of the consumed receive at the peer, or -1
};
inline constexpr std::array<Plan, 9> kTraffic = {{
    {Op::Recv, 0, 0, 8192, 0, 0, -1},             // 0: stream 0, RSN 0 (for 4)
    {Op::Recv, 1, 0, 4096, 0, 8192, -1},          // 1: stream 1, RSN 0 (for 6)
    {Op::Recv, 1, 1, 256, 0, 12288, -1},          // 2: stream 1, RSN 1 (for 7)
    {Op::Write, 0, 0, 12000, 0, 0, -1},           // 3: 3 segments of 4096
    {Op::Send, 0, 1, 6000, 12288, 0, 0},          // 4
    {Op::WriteImm, 1, 0, 3000, 20000, 16384, 1},  // 5
    {Op::Send, 1, 1, 0, 0, 0, 2},                 // 6: zero-length Send
    {Op::Write, 1, 2, 5000, 24576, 20480, -1},    // 7
    {Op::Read, 0, 2, 9000, 100, 16384, -1},       // 8: from the peer's ro + 100 to lw + 16384
}};
inline constexpr uint32_t imm_of(int side) { return 0x1A2B3C00u + uint32_t(side); }
inline constexpr uint64_t wr_id_of(int side, int i) { return uint64_t(side + 1) * 1000 + uint64_t(i); }

inline uint8_t init_byte(int side, uint64_t i) {
  const uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ uint64_t(side + 1) * 0xD1B54A32D192ED03ull;
  return uint8_t(x >> 56);
}

inline DeviceConfig world_config(int side) {
  DeviceConfig c = testing::engine_config(side);
  c.max_connections = 8;
  c.max_work_requests = 256;
  c.max_receives = 256;
  c.cq_size = 256;
  c.max_window_blocks = 16;
  c.max_regions = 64;
  c.max_peers = 16;
  return c;
}

inline bool serial_at_or_beyond(uint32_t x, uint32_t snxt) { return uint32_t(x - snxt) < 0x80000000u; }

struct Findings {
  std::vector<std::string> violations;
  bool ok() const { return violations.empty(); }
  std::string text() const {
    std::string s;
    for (const auto& v : violations) s += "  " + v + "\n";
    return s;
  }
};

struct WorldOptions {
  int victim = 1;
  uint64_t loop_buffers = 2048;
  DeviceConfig cfg[2] = {world_config(0), world_config(1)};
};

class World {
 public:
  using Options = WorldOptions;
  struct Wr {
    int side = 0;
    int plan = 0;
    int completions = 0;
    WorkCompletion wc;
    bool tainted = false;                             // the attacker may have changed its content / length / status
    bool preempted = false;                           // (peer → victim) a forged packet took one of its (path, PSN)
    std::vector<std::pair<uint16_t, uint32_t>> psns;  // (path, PSN) of its data segments
  };

  explicit World(const WorldOptions& o = WorldOptions())
      : opt_(o), victim(o.victim), other(1 - o.victim), pair(o.cfg[0], o.cfg[1], 5, uint32_t(o.loop_buffers)) {
    for (int s = 0; s < 2; ++s) {
      arena[s] = std::make_unique<uint8_t[]>(kArena);
      for (uint64_t i = 0; i < kArena; ++i) arena[s][i] = init_byte(s, i);
    }
    pair.filter = [this](int from, const fast::PacketView& v) { return observe(from, v); };
  }
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  const Options opt_;
  const int victim, other;
  testing::EnginePair pair;
  std::unique_ptr<uint8_t[]> arena[2];
  MemoryRegion mr[2][kRegions];
  uint32_t conn[2] = {0, 0};
  std::vector<Wr> wrs;  // both sides, kTraffic order, side 0 first
  // Observed on the wire (legitimate loop traffic only; injected frames are not on the loop).
  // Every frame side i sent on the loop.
  struct Seen {
    fast::Opcode op;
    uint32_t dcid;
    uint16_t path;
    uint32_t psn;  // data: PSN; NAK: NAKed PSN; ACK: CPSN
    uint16_t stream;
    uint32_t msn;
    uint8_t code;  // NAK code, REJECT / DISCONNECT reason
  };
  std::vector<Seen> seen[2];
  size_t count_seen(int from, fast::Opcode op) const {
    return size_t(std::count_if(seen[from].begin(), seen[from].end(), [&](const Seen& x) { return x.op == op; }));
  }
  // Attacker bookkeeping.
  uint64_t injected = 0;
  std::array<uint64_t, fast::kErrorCount> expected_decode_errors{};
  std::set<std::pair<uint16_t, uint32_t>> forged_psns;  // (path, PSN) of forged data frames
  bool forged_read_req = false;
  bool ack_beyond_snxt = false;
  bool forged_ack = false;                           // any ACK on the victim's connection
  std::vector<std::pair<uint64_t, uint64_t>> taint;  // victim arena [from, to)
  // Drops legitimate frames (an on-path attacker that also drops), if set.
  std::function<bool(int from, const fast::PacketView&)> drop;

  Device& dev(int s) { return pair.dev(s); }
  Device& vdev() { return pair.dev(victim); }
  uint8_t* host(int s, int r) { return arena[s].get() + region_offset(r); }
  Wr& wr(int side, int plan) { return wrs[size_t(side) * kTraffic.size() + size_t(plan)]; }

  // Registers the regions (and deregisters `dead`), connects 0 → 1. Returns "" or what failed.
  std::string connect() {
    std::string e = register_regions();
    if (!e.empty()) return e;
    uint32_t id = 0;
    if (dev(0).connect(dev(1).config().self, &id) != mroce::Result::Ok) return "connect";
    pair.run(pair.now() + 5000, [&] { return pair.conn[0] != 0 && pair.conn[1] != 0; });
    if (!pair.conn[0] || !pair.conn[1]) return "connection not up";
    conn[0] = pair.conn[0];
    conn[1] = pair.conn[1];
    return "";
  }
  std::string register_regions() {
    for (int s = 0; s < 2; ++s)
      for (int r = 0; r < kRegions; ++r) {
        const RegionLayout& l = kLayout[r];
        const mroce::Result res = dev(s).reg_mr(host(s, r), l.size, l.access, &mr[s][r], l.iova);
        if (res != mroce::Result::Ok) return std::string("reg_mr ") + l.name + ": " + result_name(res);
      }
    for (int s = 0; s < 2; ++s)
      if (dev(s).dereg_mr(mr[s][kDead].lkey) != mroce::Result::Ok) return "dereg_mr dead";
    return "";
  }

  // Posts every receive of both sides, then every other work request. Returns "" or what failed.
  std::string post_traffic() {
    wrs.clear();
    for (int s = 0; s < 2; ++s)
      for (size_t i = 0; i < kTraffic.size(); ++i) wrs.push_back(Wr{s, int(i), 0, {}, false, false, {}});
    for (bool recvs : {true, false})
      for (int s = 0; s < 2; ++s)
        for (size_t i = 0; i < kTraffic.size(); ++i) {
          if ((kTraffic[i].op == Op::Recv) != recvs) continue;
          const mroce::Result res = post(s, int(i));
          if (res != mroce::Result::Ok)
            return "post side " + std::to_string(s) + " #" + std::to_string(i) + ": " + result_name(res);
        }
    return "";
  }

  std::string setup() {
    std::string e = connect();
    return e.empty() ? post_traffic() : e;
  }

  // ---- the attacker's view of the live connection ----
  uint32_t vconn() const { return conn[victim]; }
  uint16_t paths() { return std::max<uint16_t>(1, dev(victim).path_count(conn[victim])); }
  uint16_t streams() { return std::max<uint16_t>(1, dev(victim).stream_count(conn[victim])); }
  PathInfo info(int side, uint16_t p) {
    auto i = dev(side).path_info(conn[side], p);
    return i ? *i : PathInfo{};
  }
  // The next new PSN the victim expects from its peer on path p, and the lowest not yet ACKed.
  uint32_t rx_next(uint16_t p) { return info(other, p).snxt; }
  uint32_t rx_suna(uint16_t p) { return info(other, p).suna; }
  uint32_t tx_snxt(uint16_t p) { return info(victim, p).snxt; }
  uint32_t tx_suna(uint16_t p) { return info(victim, p).suna; }
  uint32_t rkey(int r) const { return mr[victim][r].rkey; }

  // Fields of a frame from the victim's peer to the victim on the legitimate connection.
  fast::Fields fields(fast::Opcode op) {
    fast::Fields f;
    const Address& from = dev(other).config().self;
    const Address& to = dev(victim).config().self;
    f.eth_src = from.mac;
    f.eth_dst = to.mac;
    f.ipv4_src = ip4(from);
    f.ipv4_dst = ip4(to);
    const bool data = uint8_t(op) <= 0x05;
    f.dscp = data ? 26 : 48;
    f.ecn = data ? 2 : 0;
    f.opcode = uint8_t(op);
    f.dcid = op == fast::Opcode::Connect ? 0 : conn[victim];
    f.timestamp = uint32_t(pair.now());
    f.udp_sport = 49152;
    f.psn = 0;
    f.scid = conn[other] ? conn[other] : 1;
    f.path_count = f.stream_count = 4;
    f.max_payload = 4096;
    f.window_cap = 256;
    return f;
  }
  static std::vector<uint8_t> build(const fast::Fields& f, uint32_t payload_len = 0, uint8_t fill = 0x5A) {
    std::vector<uint8_t> pay(payload_len);
    for (uint32_t i = 0; i < payload_len; ++i) pay[i] = uint8_t(fill + i * 13);
    return fast::build(f, pay);
  }
  static uint32_t ip4(const Address& a) {
    return (uint32_t(a.ip[0]) << 24) | (uint32_t(a.ip[1]) << 16) | (uint32_t(a.ip[2]) << 8) | a.ip[3];
  }

  // ---- driving ----
  // One frame into the victim at the current time (classified first, see the header comment), then
  // everything that became due.
  // step false: only the frame (its answers are on the loop), for tests that read counters as it
  // left them.
  void inject(const uint8_t* f, size_t n, bool step = true) {
    const uint32_t len = uint32_t(std::min<size_t>(n, 0xFFFFFFFFu));
    classify(f, len);
    ++injected;
    testing::DeviceHooks::input(vdev(), f, len);
    if (step) pair.step();
  }
  void inject(const std::vector<uint8_t>& f, bool step = true) { inject(f.data(), f.size(), step); }
  void advance(Time dt) { pair.run(pair.now() + dt); }

  size_t completions_missing() const {
    size_t n = 0;
    for (const Wr& w : wrs) n += w.completions == 0;
    return n;
  }
  // Runs until every work request of both sides has completed, or `limit` µs pass; returns whether
  // all completed. Then aborts the connection on both sides (when `abort`) so that whatever still
  // waits (a receive whose message an attacker suppressed, a Read whose response it pre-empted)
  // completes with an error: after finish() every work request must have exactly one completion.
  bool finish(Time limit = 300'000, bool abort = true) {
    auto all = [&] {
      absorb();
      return completions_missing() == 0;
    };
    pair.run(pair.now() + limit, all);
    absorb();
    const bool settled = completions_missing() == 0;
    if (abort) {
      for (int s = 0; s < 2; ++s)
        if (auto st = dev(s).connection_state(conn[s]);
            st && (*st == ConnState::Established || *st == ConnState::Closing))
          dev(s).close(conn[s], true);
      pair.run(pair.now() + 20'000);
      absorb();
    }
    return settled;
  }

  // ---- invariants ----
  Findings check() {
    absorb();
    Findings res;
    auto bad = [&](std::string s) { res.violations.push_back(std::move(s)); };
    // Exactly one completion per work request, nothing unknown ([R-CMP-1], [R-CMP-2]).
    for (const Wr& w : wrs)
      if (w.completions != 1) bad(name(w) + ": " + std::to_string(w.completions) + " completions (want exactly 1)");
    for (const std::string& s : stray_) bad(s);
    for (int s = 0; s < 2; ++s) {
      const Counters& c = dev(s).counters();
      if (c.cq_overflow || c.event_overflow) bad(side_name(s) + ": CQ or event queue overflow");
      if (completions_missing() == 0 && dev(s).outstanding_work(conn[s]) != 0)
        bad(side_name(s) + ": outstanding_work " + std::to_string(dev(s).outstanding_work(conn[s])) +
            " after every work request completed");
    }
    // Decode errors: the victim counts exactly the injected frames that fail [R-VAL-1] per kind
    // ([R-VAL-3]); the legitimate peer's frames all decode.
    const Counters& vc = dev(victim).counters();
    const Counters& oc = dev(other).counters();
    for (unsigned k = 1; k < fast::kErrorCount; ++k) {
      if (vc.decode_errors[k - 1] != expected_decode_errors[k])
        bad("victim decode_errors[" + std::string(fast::error_name(fast::Error(k))) + "] = " +
            std::to_string(vc.decode_errors[k - 1]) + ", injected " + std::to_string(expected_decode_errors[k]));
      if (oc.decode_errors[k - 1] != 0)
        bad("peer counted a decode error: " + std::string(fast::error_name(fast::Error(k))));
    }
    if (vc.rx_frames < injected) bad("victim rx_frames below the injected count");
    check_memory(res);
    check_success(res);
    return res;
  }

  std::string side_name(int s) const { return s == victim ? "victim" : "peer"; }
  std::string name(const Wr& w) const {
    static const char* ops[] = {"Write", "WriteImm", "Send", "Read", "Recv"};
    const Plan& p = kTraffic[size_t(w.plan)];
    return side_name(w.side) + " " + ops[int(p.op)] + "#" + std::to_string(w.plan) + " (stream " +
           std::to_string(p.stream) + ", " + (p.op == Op::Recv ? "RSN " : "MSN ") + std::to_string(p.seq) + ")";
  }

 private:
  std::vector<std::string> stray_;

  mroce::Result post(int s, int i) {
    const Plan& p = kTraffic[size_t(i)];
    Device& d = dev(s);
    const uint64_t id = wr_id_of(s, i);
    const int peer = 1 - s;
    switch (p.op) {
      case Op::Recv:
        return d.post_recv(conn[s], p.stream, id, Sge{mr[s][kLw].iova + p.to, p.len, mr[s][kLw].lkey});
      case Op::Write:
        return d.post_write(conn[s], p.stream, id, Sge{mr[s][kSrc].iova + p.from, p.len, mr[s][kSrc].lkey},
                            mr[peer][kRw].iova + p.to, mr[peer][kRw].rkey);
      case Op::WriteImm:
        return d.post_write_imm(conn[s], p.stream, id, Sge{mr[s][kSrc].iova + p.from, p.len, mr[s][kSrc].lkey},
                                mr[peer][kRw].iova + p.to, mr[peer][kRw].rkey, imm_of(s));
      case Op::Send:
        return d.post_send(conn[s], p.stream, id, Sge{mr[s][kSrc].iova + p.from, p.len, mr[s][kSrc].lkey});
      case Op::Read:
        return d.post_read(conn[s], p.stream, id, Sge{mr[s][kLw].iova + p.to, p.len, mr[s][kLw].lkey},
                           mr[peer][kRo].iova + p.from, mr[peer][kRo].rkey);
    }
    return mroce::Result::InvalidArgument;
  }

  // The legitimate work request a data frame from `from` belongs to (stream, MSN), or -1.
  int wr_of_data(int from, fast::Opcode op, uint16_t stream, uint32_t msn) const {
    const int owner = op == fast::Opcode::ReadResp ? 1 - from : from;
    for (size_t i = 0; i < kTraffic.size(); ++i) {
      const Plan& p = kTraffic[i];
      if (p.op != Op::Recv && p.stream == stream && p.seq == msn) return int(size_t(owner) * kTraffic.size() + i);
    }
    return -1;
  }

  io::Fate observe(int from, const fast::PacketView& v) {
    const bool legit = conn[1 - from] != 0 && v.dcid() == conn[1 - from];
    if (legit && v.is_data()) {
      const int w = wr_of_data(from, v.opcode(), v.stream_id(), v.msn());
      if (w >= 0 && size_t(w) < wrs.size()) wrs[size_t(w)].psns.emplace_back(v.path_id(), v.psn());
    }
    Seen x{v.opcode(), v.dcid(), v.path_id(), 0, 0, 0, 0};
    if (v.is_data()) {
      x.psn = v.psn();
      x.stream = v.stream_id();
      x.msn = v.msn();
    } else if (v.opcode() == fast::Opcode::Nak) {
      x.psn = v.nak_psn();
      x.code = v.nak_code();
    } else if (v.opcode() == fast::Opcode::Ack) {
      x.psn = v.cpsn();
    } else if (v.opcode() == fast::Opcode::Reject || v.opcode() == fast::Opcode::Disconnect) {
      x.code = v.reason();
    }
    seen[from].push_back(x);
    if (drop && drop(from, v)) return io::Fate::Drop;
    return io::Fate::Deliver;
  }

  // Where the victim's receive (stream, rsn) is, if it is one of the plan's.
  Wr* victim_recv(uint16_t stream, uint32_t rsn) {
    for (size_t i = 0; i < kTraffic.size(); ++i)
      if (kTraffic[i].op == Op::Recv && kTraffic[i].stream == stream && kTraffic[i].seq == rsn)
        return &wr(victim, int(i));
    return nullptr;
  }
  void taint_range(int r, uint64_t va, uint64_t len) {
    const uint64_t base = mr[victim][r].iova, size = kLayout[r].size;
    if (len == 0 || va < base || va - base >= size) return;
    const uint64_t from = va - base, to = from + std::min(len, size - from);
    taint.emplace_back(region_offset(r) + from, region_offset(r) + to);
  }

  void classify(const uint8_t* f, uint32_t len) {
    fast::PacketView v;
    const fast::Error e = fast::decode(f, len, dev(victim).config().udp_port, v);
    if (e != fast::Error::None) {
      ++expected_decode_errors[size_t(e)];
      return;
    }
    if (!conn[victim] || v.dcid() != conn[victim] || v.path_id() >= paths()) return;
    const fast::Opcode op = v.opcode();
    if (v.is_data()) {
      forged_psns.emplace(v.path_id(), v.psn());
      const bool consumes = op == fast::Opcode::Send || op == fast::Opcode::WriteImm;
      if (consumes)
        if (Wr* r = victim_recv(v.stream_id(), v.rsn())) r->tainted = true;
      if (op == fast::Opcode::ReadReq) forged_read_req = true;
      if (op == fast::Opcode::ReadResp) {
        const int w = wr_of_data(other, op, v.stream_id(), v.msn());  // the victim's Read it names
        if (w >= 0) wrs[size_t(w)].tainted = true;
      }
      if (!v.is_void() && (op == fast::Opcode::Write || op == fast::Opcode::WriteImm)) {
        for (int r = 0; r < kRegions; ++r)
          if (r != kDead && (kLayout[r].access & kRW) && v.rkey() == mr[victim][r].rkey &&
              v.remote_va() <= ~uint64_t(0) - v.msg_offset())
            taint_range(r, v.remote_va() + v.msg_offset(), v.payload_len());
      }
      return;
    }
    if (op == fast::Opcode::Ack) forged_ack = true;
    if (op == fast::Opcode::Ack || op == fast::Opcode::Nak) {
      const uint32_t snxt = tx_snxt(v.path_id());
      bool beyond = false;
      if (op == fast::Opcode::Nak) {
        beyond = serial_at_or_beyond(v.nak_psn(), snxt);
      } else {
        beyond = serial_at_or_beyond(v.cpsn(), snxt);
        for (unsigned i = 0; i < 256 && !beyond; ++i)
          if (v.sack(i) && serial_at_or_beyond(v.cpsn() + 1 + i, snxt)) beyond = true;
      }
      if (beyond) ack_beyond_snxt = true;
    }
  }

  void absorb() {
    for (int s = 0; s < 2; ++s) {
      for (const WorkCompletion& wc : pair.completions[s]) {
        bool found = false;
        for (size_t i = 0; i < kTraffic.size() && !found; ++i)
          if (wc.wr_id == wr_id_of(s, int(i))) {
            Wr& w = wr(s, int(i));
            found = true;
            ++w.completions;
            w.wc = wc;
            if (wc.conn != conn[s]) stray_.push_back(name(w) + ": completion on connection " + std::to_string(wc.conn));
          }
        if (!found) stray_.push_back(side_name(s) + ": completion of unknown wr_id " + std::to_string(wc.wr_id));
      }
      pair.completions[s].clear();
    }
  }

  // Legitimate destinations: side s's arena offset → source byte (or -1).
  struct Expect {
    std::vector<int16_t> want;  // -1: only the initial byte
    std::vector<uint8_t> any;   // 1: tainted, any byte
  };
  Expect expectations(int s) {
    Expect x{std::vector<int16_t>(kArena, -1), std::vector<uint8_t>(kArena, 0)};
    const int peer = 1 - s;
    for (const Plan& p : kTraffic) {
      uint64_t dst = 0, src = 0;
      const uint8_t* from = nullptr;
      if (p.op == Op::Write || p.op == Op::WriteImm) {  // the peer's Write into s.rw
        dst = region_offset(kRw) + p.to;
        from = host(peer, kSrc) + p.from;
      } else if (p.op == Op::Send) {  // the peer's Send into s's receive buffer
        dst = region_offset(kLw) + kTraffic[size_t(p.recv)].to;
        from = host(peer, kSrc) + p.from;
      } else if (p.op == Op::Read) {  // s's own Read from the peer's ro
        dst = region_offset(kLw) + p.to;
        from = host(peer, kRo) + p.from;
      } else {
        continue;
      }
      for (uint64_t i = 0; i < p.len; ++i) x.want[dst + i] = from[i + src];
    }
    if (s == victim) {
      for (auto [a, b] : taint)
        for (uint64_t i = a; i < b; ++i) x.any[i] = 1;
      for (size_t i = 0; i < kTraffic.size(); ++i) {
        const Wr& w = wr(s, int(i));
        const Plan& p = kTraffic[i];
        if (!w.tainted) continue;
        const uint64_t at = region_offset(kLw) + p.to;
        for (uint64_t k = 0; k < p.len; ++k) x.any[at + k] = 1;  // a receive or a Read sink
      }
    } else if (forged_read_req) {
      for (size_t i = 0; i < kTraffic.size(); ++i)
        if (kTraffic[i].op == Op::Read)
          for (uint64_t k = 0; k < kTraffic[i].len; ++k) x.any[region_offset(kLw) + kTraffic[i].to + k] = 1;
    }
    return x;
  }

  // [R-SEC-6]: nothing outside a legitimate destination or what the attacker may write changed;
  // guard bytes, ro, src and the deregistered region never change.
  void check_memory(Findings& res) {
    for (int s = 0; s < 2; ++s) {
      const Expect x = expectations(s);
      int reported = 0;
      for (uint64_t i = 0; i < kArena; ++i) {
        const uint8_t b = arena[s][i];
        if (b == init_byte(s, i) || x.any[i] || (x.want[i] >= 0 && b == uint8_t(x.want[i]))) continue;
        if (reported++ < 4)
          res.violations.push_back(side_name(s) + ": byte changed at " + where(i) + ": " + std::to_string(b) +
                                   " (initial " + std::to_string(init_byte(s, i)) + ")");
      }
      if (reported > 4)
        res.violations.push_back(side_name(s) + ": " + std::to_string(reported) + " bytes changed in all");
    }
  }
  static std::string where(uint64_t off) {
    for (int r = 0; r < kRegions; ++r)
      if (off >= region_offset(r) && off < region_offset(r) + kLayout[r].size)
        return std::string(kLayout[r].name) + "+" + std::to_string(off - region_offset(r));
    return "guard byte (arena offset " + std::to_string(off) + ")";
  }

  bool same(int s, uint64_t off, int peer, int reg, uint64_t from, uint32_t n) {
    return std::memcmp(arena[s].get() + off, host(peer, reg) + from, n) == 0;
  }

  // A Success completion means what it says, except where the attacker was able to lie.
  void check_success(Findings& res) {
    for (Wr& w : wrs) {
      if (w.completions != 1 || w.wc.status != Status::Success) continue;
      const Plan& p = kTraffic[size_t(w.plan)];
      const int s = w.side, peer = 1 - s;
      // The victim's frames lost for want of a buffer (a flood's answers fill the loop): a forged
      // ACK may then acknowledge what never arrived, as an on-path attacker can ([R-SEC-8]).
      const bool lost = dev(victim).counters().tx_no_buffer > 0 || pair.loop().stats().ring_full[victim] > 0;
      const bool lied_ack = s == victim && ((ack_beyond_snxt && !ack_validation_checked()) || (lost && forged_ack));
      const bool preempted = s == other && std::any_of(w.psns.begin(), w.psns.end(),
                                                       [&](const auto& ps) { return forged_psns.count(ps) != 0; });
      auto fail = [&](const std::string& what) {
        res.violations.push_back(name(w) + " completed Success but " + what);
      };
      if (p.op != Op::Recv && w.wc.byte_len != p.len) fail("byte_len " + std::to_string(w.wc.byte_len));
      switch (p.op) {
        case Op::Write:
        case Op::WriteImm:
        case Op::Send: {
          if (lied_ack || preempted) break;
          if (p.op != Op::Send && !bytes_ok(peer, region_offset(kRw) + p.to, s, kSrc, p.from, p.len))
            fail("the peer does not hold its bytes");
          if (p.recv >= 0) {
            const Wr& r = wr(peer, p.recv);
            if (r.completions != 1 || (!r.tainted && r.wc.status != Status::Success))
              fail("its receive completed " + std::string(r.completions ? status_name(r.wc.status) : "never"));
            else if (p.op == Op::Send && !r.tainted &&
                     !bytes_ok(peer, region_offset(kLw) + kTraffic[size_t(p.recv)].to, s, kSrc, p.from, p.len))
              fail("its receive buffer does not hold its bytes");
          }
          break;
        }
        case Op::Read:
          if (w.tainted || (s == other && (forged_read_req || preempted))) break;
          if (!bytes_ok(s, region_offset(kLw) + p.to, peer, kRo, p.from, p.len))
            fail("its sink does not hold the bytes");
          break;
        case Op::Recv: {
          if (w.tainted) break;
          // The message that consumes it: the peer's Send / WriteImm naming (stream, RSN).
          for (size_t i = 0; i < kTraffic.size(); ++i) {
            if (kTraffic[i].recv != w.plan) continue;
            const Plan& m = kTraffic[i];
            const Wr& sender = wr(peer, int(i));
            const bool pre = s == victim && std::any_of(sender.psns.begin(), sender.psns.end(),
                                                        [&](const auto& ps) { return forged_psns.count(ps) != 0; });
            if (pre) break;
            if (w.wc.byte_len != m.len)
              fail("byte_len " + std::to_string(w.wc.byte_len) + ", sent " + std::to_string(m.len));
            if (m.op == Op::WriteImm && (!w.wc.has_imm || w.wc.imm != imm_of(peer))) fail("without the immediate");
            if (m.op == Op::Send && !bytes_ok(s, region_offset(kLw) + p.to, peer, kSrc, m.from, m.len))
              fail("its buffer does not hold the Send's bytes");
          }
          break;
        }
      }
    }
  }
  // The tainted bytes of the victim are excused.
  bool bytes_ok(int s, uint64_t off, int peer, int reg, uint64_t from, uint32_t n) {
    if (same(s, off, peer, reg, from, n)) return true;
    if (s != victim) return false;
    const uint8_t* a = arena[s].get() + off;
    const uint8_t* b = host(peer, reg) + from;
    for (uint32_t i = 0; i < n; ++i) {
      if (a[i] == b[i]) continue;
      bool t = false;
      for (auto [x, y] : taint) t = t || (off + i >= x && off + i < y);
      if (!t) return false;
    }
    return true;
  }
};

}  // namespace mroce::hostile
