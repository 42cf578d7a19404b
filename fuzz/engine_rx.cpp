// Fuzz target engine_rx: the engine's whole receive path, during a legitimate transfer.
//
// Two engines back to back (properties/security/hostile_world.hpp: EnginePair in virtual time,
// six guarded regions per side, Writes, Sends, a Write-with-immediate and a Read in both
// directions). The input (format: common/engine_rx_input.hpp) is a sequence of frames injected
// into one device, the victim, between steps of the pair: raw frames, or frames built from the
// live connection's context (its DCID, a path, a PSN near either side's window, the victim's real
// keys and addresses near its regions, offsets and lengths near the limits) with flags, source
// address and IP version chosen by the input and a few raw byte mutations, checksums repaired on
// request so that mutations reach the deep checks. Then the pair runs to quiescence, the
// connection is aborted, and the invariants of World::check() must hold: exactly one completion per
// work request, no byte changed outside what the legitimate transfer and the attacker's accepted
// frames may write (guard bytes, read-only, source and deregistered regions intact), a Success
// completion only with the right bytes at the destination, decode-error counters equal to what was
// injected, no CQ overflow. ASan/UBSan catch the rest.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "codec/fast_codec.hpp"
#include "engine_rx_input.hpp"
#include "frame_fixup.hpp"
#include "fuzz_util.hpp"
#include "hostile_world.hpp"

namespace {

constexpr const char* kTargetName = "engine_rx";
constexpr size_t kMaxRecords = 256;
constexpr size_t kMaxFrames = 2048;

namespace fz = mroce::fuzzing;
namespace rx = mroce::fuzzing::engine_rx;
using mroce::hostile::World;
namespace fast = mroce::fast;

constexpr fast::Opcode kTemplateOps[13] = {fast::Opcode::Send,         fast::Opcode::Write,    fast::Opcode::WriteImm,
                                           fast::Opcode::ReadReq,      fast::Opcode::ReadResp, fast::Opcode::Ack,
                                           fast::Opcode::Nak,          fast::Opcode::Probe,    fast::Opcode::Connect,
                                           fast::Opcode::Accept,       fast::Opcode::Reject,   fast::Opcode::Disconnect,
                                           fast::Opcode::DisconnectAck};

uint32_t be32(const std::array<uint8_t, 8>& e, int at) {
  return (uint32_t(e[at]) << 24) | (uint32_t(e[at + 1]) << 16) | (uint32_t(e[at + 2]) << 8) | e[at + 3];
}

// The frame a template stands for; `bump` is added to its sequence field (REPEAT).
std::vector<uint8_t> build(World& w, uint8_t kind, const rx::Template& t, uint32_t bump) {
  using mroce::hostile::kLayout;
  using mroce::hostile::kRegions;
  const fast::Opcode op = kTemplateOps[kind - rx::kFirstTemplate];
  const bool data = uint8_t(op) <= 0x05, control = uint8_t(op) >= 0x20;
  fast::Fields f = w.fields(op);
  const uint16_t P = w.paths(), S = w.streams();
  // Addresses: the peer's, another host's, or IPv6.
  if (t.mods & rx::kModForeign) {
    f.ipv4_src = 0x0A000063;  // 10.0.0.99
    f.eth_src = {0x02, 0, 0, 0, 0, 0x63};
  }
  if (t.mods & rx::kModIpv6) {
    f.ipv6 = true;
    f.ipv6_src = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, uint8_t(t.mods & rx::kModForeign ? 0x63 : 2)};
    f.ipv6_dst = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  }
  f.flags = uint16_t((t.mods & rx::kModAr ? fast::kFlagAr : 0) | (t.mods & rx::kModVoid ? fast::kFlagVoid : 0) |
                     (t.mods & rx::kModRetx ? fast::kFlagRetx : 0));
  if (t.mods & rx::kModCe) f.ecn = 3;
  f.udp_sport = uint16_t(49152 + t.fill);
  switch (t.dcid_sel % 8) {
    case 5:
      f.dcid = w.conn[w.other];
      break;
    case 6:
      f.dcid = w.vconn() + 1;
      break;
    case 7:
      f.dcid = be32(t.extra, 4);
      break;
    default:
      break;  // the victim's connection (0 for CONNECT)
  }
  if (t.path_sel < 0xF0)
    f.path_id = control ? 0 : uint16_t(t.path_sel % P);
  else
    f.path_id = t.path_sel & 8 ? 0xFFFF : uint16_t(P + (t.path_sel & 7));
  const uint16_t pp = f.path_id < P ? f.path_id : 0;
  uint32_t psn = 0;
  switch (t.psn_mode & 3) {
    case 0:
      psn = w.rx_next(pp);
      break;
    case 1:
      psn = w.rx_suna(pp);
      break;
    case 2:
      psn = w.tx_snxt(pp);
      break;
    default:
      psn = w.tx_suna(pp) - 1;
      break;
  }
  if (t.psn_mode & 0x80) psn = be32(t.extra, 0);
  psn += uint32_t(int32_t(t.psn_delta)) + bump;
  f.stream_id = t.stream_sel < 0xF0 ? uint16_t(t.stream_sel % S) : uint16_t(S + (t.stream_sel & 15));
  f.msn = t.msn;
  f.rsn = t.rsn;
  f.immediate = be32(t.extra, 0);
  const uint32_t plen = std::min<uint32_t>(t.plen, 8300);
  f.msg_offset = t.off_code == 0xFFFF ? 0xFFFFFFFFu : t.off_code;
  if (t.len_code == 0) {
    f.msg_length = f.msg_offset + plen;
  } else if (t.len_code < 0xF000) {
    f.msg_length = t.len_code - 1u;
  } else {
    static constexpr uint32_t kSpecial[4] = {0x80000000u, 0x80000001u, 0xFFFFFFFFu, 0x7FFFFFFFu};
    f.msg_length = (t.len_code & 0xF) < 4 ? kSpecial[t.len_code & 3] : uint32_t(t.len_code & 0xFFF) << 20;
  }
  // Key and address: the victim's real keys (from reg_mr), near its regions.
  const int reg = t.key_sel % 8 < kRegions ? t.key_sel % 8 : 0;
  switch (t.key_sel % 8) {
    case 6:
      f.rkey = w.rkey(0) ^ (1u << ((t.key_sel >> 3) & 31));
      break;
    case 7:
      f.rkey = be32(t.extra, 4);
      break;
    default:
      f.rkey = w.rkey(reg);
      break;
  }
  const uint64_t base = w.mr[w.victim][reg].iova, size = kLayout[size_t(reg)].size;
  const int64_t d = t.va_delta;
  switch (t.va_mode % 8) {
    case 0:
      f.remote_va = base + uint64_t(d);
      break;
    case 1:
      f.remote_va = base + size - uint64_t(d);
      break;
    case 2:
      f.remote_va = 0 - uint64_t(d < 0 ? -d : d);
      break;
    case 3:
      f.remote_va = (uint64_t(be32(t.extra, 0)) << 32) | be32(t.extra, 4);
      break;
    case 4:
      f.remote_va = base + uint64_t(d * 64);
      break;
    case 5:
      f.remote_va = base + size + uint64_t(d);
      break;
    case 6:
      f.remote_va = uint64_t(d);
      break;
    default:
      f.remote_va = w.mr[w.victim][(reg + 1) % kRegions].iova + uint64_t(d);
      break;
  }
  // Opcode-specific fields.
  f.cpsn = psn;
  f.nak_psn = psn;
  f.psn = psn;
  f.ce_count = t.extra[0];
  f.ts_echo = uint32_t(w.pair.now()) - t.extra[1] * 16u;
  f.rate_hint = t.extra[2] ? uint32_t(t.extra[2]) << (t.extra[3] & 15) : 0;
  f.sack = {};
  for (int i = 0; i < 4; ++i) f.sack[size_t(i)] = t.extra[size_t(4 + i)];
  if (t.mods & rx::kModWide)
    for (auto& b : f.sack) b = t.extra[7];
  f.nak_code = uint8_t(t.extra[0] % 6);
  f.nak_detail = f.nak_code == 1 || (t.extra[3] & 1) ? uint16_t((t.extra[1] << 8) | t.extra[2]) : 0;
  if (op == fast::Opcode::Connect || op == fast::Opcode::Accept) {
    f.scid = be32(t.extra, 0) + bump;
    f.isn = be32(t.extra, 4);
    f.path_count = t.len_code ? t.len_code : 4;
    f.stream_count = t.off_code ? t.off_code : 4;
    f.max_payload = t.plen ? t.plen : 4096;
    f.window_cap = t.va_delta ? uint16_t(t.va_delta) : 256;
    if (t.dcid_sel % 8 != 7) f.dcid = op == fast::Opcode::Connect ? 0 : w.vconn();
  }
  f.reason = uint8_t(t.extra[0] % 7);
  f.rej_rsvd = t.extra[1] & 1 ? 1 : 0;
  std::vector<uint8_t> frame = World::build(f, data ? plen : 0, t.fill);
  for (auto [off, b] : t.muts)
    if (!frame.empty()) frame[off % frame.size()] = b;
  if (!t.muts.empty() && (t.mods & rx::kModFix)) {
    fz::FixOptions o;
    o.lengths = false;
    o.payload_length = false;
    fz::fix_frame(frame.data(), frame.size(), o);
  }
  return frame;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  mroce::hostile::WorldOptions o;
  o.victim = data[0] & 1;
  o.loop_buffers = 1024;  // allocated per input: few, but enough for a flood's answers
  World w(o);
  const std::string err = w.setup();
  FUZZ_CHECK(err.empty(), "setup of the legitimate transfer failed: " + err);
  w.advance(4u * ((data[0] >> 1) & 7));

  rx::Reader in(data + 1, size - 1);
  rx::Record r, last;
  bool have_last = false;
  size_t frames = 0;
  for (size_t n = 0; n < kMaxRecords && frames < kMaxFrames && in.next(r); ++n) {
    if (r.dt) w.advance(mroce::Time(1) << (r.dt - 1));
    if (r.kind == rx::kRaw) {
      std::vector<uint8_t> f = r.raw;
      if (r.raw_fix) fz::fix_frame(f.data(), f.size(), fz::FixOptions{});
      w.inject(f);
      ++frames;
    } else if (r.kind == rx::kRepeat) {
      for (uint32_t k = 1; have_last && k <= r.repeat && frames < kMaxFrames; ++k, ++frames)
        w.inject(build(w, last.kind, last.t, k));
    } else if (r.kind != rx::kWait) {
      w.inject(build(w, r.kind, r.t, 0));
      ++frames;
      last = r;
      have_last = true;
    }
  }
  w.finish();
  const mroce::hostile::Findings f = w.check();
  FUZZ_CHECK(f.ok(), "invariants after the transfer (victim " + std::string(o.victim ? "B" : "A") + ", " +
                         std::to_string(frames) + " frames injected):\n" + f.text());
  return 0;
}
