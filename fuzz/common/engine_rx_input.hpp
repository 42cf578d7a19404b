// Input format of the engine_rx fuzz target (fuzz/engine_rx.cpp), shared with its seed generator
// (fuzz/tools/make_engine_rx_corpus.cpp).
//
//   input  := config record*
//   config := 1 byte: bit 0 the victim (0: A, the initiator; 1: B, the responder),
//             bits 1..3 µs × 4 of legitimate traffic before the first record
//   record := head [body]
//   head   := 1 byte: low nibble the kind, high nibble dt: the pair runs 0 (dt 0) or 2^(dt-1) µs
//             (up to 16 384) before the record acts
//
// kinds:
//   0 RAW     body: len (2, big-endian, at most 9000), fix (1: bit 0 set = frame_fixup's fix_frame
//             with default options), then len raw bytes
//   1..13     a frame built from the live connection: SEND, WRITE, WRITE_IMM, READ_REQ, READ_RESP,
//             ACK, NAK, PROBE, CONNECT, ACCEPT, REJECT, DISCONNECT, DISCONNECT_ACK
//             body: Template (kTemplateLen bytes) then 3 bytes per mutation (count in `nmut`)
//   14 WAIT   no body (only dt)
//   15 REPEAT body: count (1): the last templated frame again `count` times, its PSN (data),
//             CPSN / NAKed PSN (ACK, NAK) or SCID (CONNECT, ACCEPT) one higher each time
// A truncated body reads as zero bytes. The meaning of each template field is in engine_rx.cpp.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace mroce::fuzzing::engine_rx {

enum Kind : uint8_t { kRaw = 0, kFirstTemplate = 1, kLastTemplate = 13, kWait = 14, kRepeat = 15 };

// mods bits
inline constexpr uint8_t kModAr = 1, kModVoid = 2, kModRetx = 4, kModCe = 8, kModForeign = 16, kModIpv6 = 32,
                         kModFix = 64, kModWide = 128;

struct Template {
  uint8_t mods = 0;
  uint8_t dcid_sel = 0;  // %8: 0..4 the victim's connection, 5 the peer's ID, 6 the victim's + 1, 7 extra[4..8)
  uint8_t path_sel = 0;  // < 0xF0: modulo the path count; else an ID at or above it
  uint8_t psn_mode = 0;  // %4: peer's SNXT, peer's SUNA, victim's SNXT, victim's SUNA - 1; bit 7: extra[0..4)
  int16_t psn_delta = 0;
  uint8_t stream_sel = 0;  // < 0xF0: modulo the stream count; else at or above it
  uint8_t msn = 0;
  uint8_t rsn = 0;
  uint16_t len_code = 0;  // 0: offset + payload; 1..0xEFFF: value - 1; else special values near 2^31, 2^32
  uint16_t off_code = 0;  // 0xFFFF: 0xFFFFFFFF
  uint8_t key_sel = 0;    // %8: rw, ro, lw, src, dead, top, rw's key with one bit flipped, extra[4..8)
  uint8_t va_mode = 0;    // %8: base+d, end-d, 2^64-|d|, extra, base+64d, end+d, d, base+d of the next region
  int16_t va_delta = 0;
  uint16_t plen = 0;                               // payload bytes (at most 8300)
  uint8_t fill = 0;                                // payload byte pattern
  std::array<uint8_t, 8> extra{};                  // opcode-specific (ACK, NAK, CONN, REJ, immediate, raw values)
  std::vector<std::pair<uint16_t, uint8_t>> muts;  // (offset modulo the frame length, byte)
};
inline constexpr size_t kTemplateLen = 29;

struct Record {
  uint8_t kind = kWait;
  uint8_t dt = 0;
  std::vector<uint8_t> raw;  // kRaw
  bool raw_fix = false;
  Template t;          // kinds 1..13
  uint8_t repeat = 0;  // kRepeat
};

// ---- writing (seed generator) ----
inline void put16(std::vector<uint8_t>& o, uint16_t v) {
  o.push_back(uint8_t(v >> 8));
  o.push_back(uint8_t(v));
}
inline void encode(std::vector<uint8_t>& o, const Record& r) {
  o.push_back(uint8_t((r.dt << 4) | (r.kind & 15)));
  if (r.kind == kRaw) {
    put16(o, uint16_t(r.raw.size()));
    o.push_back(r.raw_fix ? 1 : 0);
    o.insert(o.end(), r.raw.begin(), r.raw.end());
  } else if (r.kind == kRepeat) {
    o.push_back(r.repeat);
  } else if (r.kind != kWait) {
    const Template& t = r.t;
    o.push_back(t.mods);
    o.push_back(t.dcid_sel);
    o.push_back(t.path_sel);
    o.push_back(t.psn_mode);
    put16(o, uint16_t(t.psn_delta));
    o.push_back(t.stream_sel);
    o.push_back(t.msn);
    o.push_back(t.rsn);
    put16(o, t.len_code);
    put16(o, t.off_code);
    o.push_back(t.key_sel);
    o.push_back(t.va_mode);
    put16(o, uint16_t(t.va_delta));
    put16(o, t.plen);
    o.push_back(t.fill);
    o.insert(o.end(), t.extra.begin(), t.extra.end());
    o.push_back(uint8_t(t.muts.size()));
    for (auto [off, b] : t.muts) {
      put16(o, off);
      o.push_back(b);
    }
  }
}
inline std::vector<uint8_t> encode(uint8_t config, const std::vector<Record>& rs) {
  std::vector<uint8_t> o{config};
  for (const Record& r : rs) encode(o, r);
  return o;
}

// ---- reading (harness) ----
class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  bool done() const { return i_ >= n_; }
  uint8_t u8() { return i_ < n_ ? p_[i_++] : 0; }
  uint16_t u16() {
    const uint16_t hi = u8();
    return uint16_t((hi << 8) | u8());
  }
  // The next record; false at the end of the input.
  bool next(Record& r) {
    if (done()) return false;
    const uint8_t h = u8();
    r = Record{};
    r.kind = h & 15;
    r.dt = h >> 4;
    if (r.kind == kRaw) {
      const size_t len = std::min<size_t>(u16(), 9000);
      r.raw_fix = u8() & 1;
      const size_t take = std::min(len, n_ - std::min(n_, i_));
      r.raw.assign(p_ + i_, p_ + i_ + take);
      i_ += take;
    } else if (r.kind == kRepeat) {
      r.repeat = u8();
    } else if (r.kind != kWait) {
      Template& t = r.t;
      t.mods = u8();
      t.dcid_sel = u8();
      t.path_sel = u8();
      t.psn_mode = u8();
      t.psn_delta = int16_t(u16());
      t.stream_sel = u8();
      t.msn = u8();
      t.rsn = u8();
      t.len_code = u16();
      t.off_code = u16();
      t.key_sel = u8();
      t.va_mode = u8();
      t.va_delta = int16_t(u16());
      t.plen = u16();
      t.fill = u8();
      for (uint8_t& b : t.extra) b = u8();
      const uint8_t nmut = u8() & 3;
      for (uint8_t k = 0; k < nmut; ++k) {
        const uint16_t off = u16();
        t.muts.emplace_back(off, u8());
      }
    }
    return true;
  }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t i_ = 0;
};

}  // namespace mroce::fuzzing::engine_rx
