// Seeds of the engine_rx fuzz target (format: fuzz/common/engine_rx_input.hpp), written by
// fuzz_make_corpus into fuzz/corpus/engine_rx/. One attack per seed, each against both victims
// (prefix a_: the initiator A is the victim, b_: the responder B): forged data inside and just
// outside a region, wrong, flipped and deregistered keys, addresses near 2^64, sequence numbers
// out of window and duplicate, bad path and stream IDs, oversize payloads, READ_REQs for guard
// bytes, forged READ_RESPs, VOID, PROBE and CONNECT floods, ACKs and NAKs within and beyond SNXT,
// DISCONNECT and ACCEPT from the peer and from another host, IPv6 on an IPv4 connection, raw and
// mutated frames.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine_rx_input.hpp"

namespace mroce::fuzzing::engine_rx {

inline std::vector<std::pair<std::string, std::vector<uint8_t>>> seeds() {
  enum : uint8_t {
    SEND = 1,
    WRITE,
    WRITE_IMM,
    READ_REQ,
    READ_RESP,
    ACK,
    NAK,
    PROBE,
    CONNECT,
    ACCEPT,
    REJECT,
    DISCONNECT,
    DISCONNECT_ACK
  };
  // key_sel values: the region whose real key is used
  enum : uint8_t { kRwKey = 0, kRoKey = 1, kLwKey = 2, kDeadKey = 4, kTopKey = 5, kFlipKey = 6 + (3 << 3) };
  auto rec = [](uint8_t kind, Template t, uint8_t dt = 0) {
    Record r;
    r.kind = kind;
    r.dt = dt;
    r.t = std::move(t);
    return r;
  };
  auto wait = [](uint8_t dt) {
    Record r;
    r.kind = kWait;
    r.dt = dt;
    return r;
  };
  auto repeat = [](uint8_t n) {
    Record r;
    r.kind = kRepeat;
    r.repeat = n;
    return r;
  };
  auto raw = [](std::vector<uint8_t> bytes, bool fix) {
    Record r;
    r.kind = kRaw;
    r.raw = std::move(bytes);
    r.raw_fix = fix;
    return r;
  };
  // A forged data packet at the peer's next PSN + 100 of path 0 (in window, clear of the
  // legitimate segments), stream 0.
  auto data = [](uint8_t key, uint8_t va_mode, int16_t va_delta, uint16_t plen, uint16_t len_code = 0) {
    Template t;
    t.psn_delta = 100;
    t.key_sel = key;
    t.va_mode = va_mode;
    t.va_delta = va_delta;
    t.plen = plen;
    t.len_code = len_code;
    t.fill = 0xC3;
    return t;
  };
  // An ACK or NAK: its PSN from psn_mode (2: the victim's SNXT, 3: its SUNA - 1) + delta.
  auto ack = [](uint8_t psn_mode, int16_t delta, std::array<uint8_t, 8> extra = {}) {
    Template t;
    t.psn_mode = psn_mode;
    t.psn_delta = delta;
    t.extra = extra;
    return t;
  };
  std::vector<std::pair<std::string, std::vector<Record>>> attacks;
  auto add = [&](const std::string& name, std::vector<Record> rs) { attacks.emplace_back(name, std::move(rs)); };

  add("legit_only", {});
  add("write_in_bounds", {rec(WRITE, data(kRwKey, 0, 64, 512), 3)});
  add("write_last_byte", {rec(WRITE, data(kRwKey, 1, 1, 1), 3)});
  add("write_one_past_end", {rec(WRITE, data(kRwKey, 1, 100, 101), 3)});
  add("write_before_start", {rec(WRITE, data(kRwKey, 0, -16, 64), 3)});
  add("write_len_beyond_region", {rec(WRITE, data(kRwKey, 0, 0, 100, 0xF000 + 3), 3)});
  add("write_top_in_bounds", {rec(WRITE, data(kTopKey, 0, 0, 256), 3)});
  add("write_top_wraps_2_64", {rec(WRITE, data(kTopKey, 2, 16, 64), 3)});
  add("write_ro_key", {rec(WRITE, data(kRoKey, 0, 0, 64), 3)});
  add("write_lw_key", {rec(WRITE, data(kLwKey, 0, 0, 64), 3)});
  add("write_dead_key", {rec(WRITE, data(kDeadKey, 0, 0, 64), 3)});
  add("write_flipped_key", {rec(WRITE, data(kFlipKey, 0, 0, 64), 3)});
  add("write_imm_rsn0", [&] {
    Template t = data(kRwKey, 0, 128, 32);
    t.stream_sel = 1;
    t.extra = {0xDE, 0xAD, 0xBE, 0xEF, 0, 0, 0, 0};
    return std::vector<Record>{rec(WRITE_IMM, t, 2)};
  }());
  add("send_rsn0", [&] {
    Template t = data(0, 0, 0, 300);
    t.psn_delta = 0;  // the next PSN: may pre-empt a legitimate segment
    return std::vector<Record>{rec(SEND, t, 1)};
  }());
  add("send_too_long", [&] {
    Template t = data(0, 0, 0, 64, 9000 + 1);
    return std::vector<Record>{rec(SEND, t, 3)};
  }());
  add("send_no_receive_rnr", [&] {
    Template t = data(0, 0, 0, 64);
    t.rsn = 9;
    return std::vector<Record>{rec(SEND, t, 3)};
  }());
  // A 64-byte forged WRITE into rw with one field changed.
  auto write64 = [&](void (*change)(Template&)) {
    Template t = data(kRwKey, 0, 0, 64);
    change(t);
    return t;
  };
  add("data_out_of_window", {rec(WRITE, write64([](Template& t) { t.psn_delta = 300; }), 3)});
  add("data_duplicate", {rec(WRITE, write64([](Template& t) { t.psn_mode = 1, t.psn_delta = -1; }), 5)});
  add("data_bad_path", {rec(WRITE, write64([](Template& t) { t.path_sel = 0xF0; }), 3)});
  add("data_bad_stream", {rec(WRITE, write64([](Template& t) { t.stream_sel = 0xF0; }), 3)});
  add("data_oversize_payload", {rec(WRITE, data(kRwKey, 0, 0, 8192), 3)});
  add("data_unknown_dcid", {rec(WRITE, write64([](Template& t) { t.dcid_sel = 6; }), 3)});
  add("read_req_guard_bytes", [&] {
    Template t = data(kRoKey, 0, -16, 0, 64 + 1);
    return std::vector<Record>{rec(READ_REQ, t, 3)};
  }());
  add("read_req_ro", [&] {
    Template t = data(kRoKey, 0, 0, 0, 5000 + 1);
    return std::vector<Record>{rec(READ_REQ, t, 3)};
  }());
  add("read_resp_forged", [&] {
    Template t = data(0, 0, 0, 100, 9000 + 1);
    t.msn = 2;
    return std::vector<Record>{rec(READ_RESP, t, 4)};
  }());
  add("void_send_flood", [&] {
    Template t = data(0, 0, 0, 0);
    t.mods = kModVoid;
    t.rsn = 20;
    t.path_sel = 3;
    return std::vector<Record>{rec(SEND, t, 2), repeat(120)};
  }());
  add("probe_flood", [&] {
    Template t;
    t.mods = kModAr;
    return std::vector<Record>{rec(PROBE, t, 2), repeat(200)};
  }());
  add("connect_flood", [&] {
    Template t;
    t.mods = kModForeign;
    t.extra = {0, 0, 0x40, 0, 0, 0, 0, 7};
    return std::vector<Record>{rec(CONNECT, t, 1), repeat(20)};
  }());
  add("ack_in_window", {rec(ACK, ack(3, 1, {0, 0, 0, 0, 0x40, 0, 0, 0}), 2)});
  add("ack_beyond_snxt", {rec(ACK, ack(2, 8), 2)});
  add("ack_ce_rate_hint", {rec(ACK, ack(3, 0, {200, 4, 1, 0, 0, 0, 0, 0}), 2), repeat(10)});
  add("nak_rnr_long", {rec(NAK, ack(3, 1, {1, 0x10, 0x00, 0, 0, 0, 0, 0}), 1)});
  add("nak_remote_access", {rec(NAK, ack(3, 1, {2, 0, 0, 0, 0, 0, 0, 0}), 1)});
  add("disconnect_peer", {rec(DISCONNECT, Template{}, 4)});
  add("disconnect_foreign", [&] {
    Template t;
    t.mods = kModForeign;
    return std::vector<Record>{rec(DISCONNECT, t, 4)};
  }());
  add("disconnect_ack", {rec(DISCONNECT_ACK, Template{}, 4)});
  add("reject", {rec(REJECT, Template{}, 4)});
  add("accept_above_offer", [&] {
    Template t;
    t.len_code = 256;
    t.off_code = 65535;
    t.plen = 8192;
    t.extra = {0, 0, 0x55, 0x55, 0, 0, 0, 0};
    return std::vector<Record>{rec(ACCEPT, t, 1)};
  }());
  add("data_ipv6", {rec(WRITE, write64([](Template& t) { t.mods = kModIpv6; }), 3)});
  add("data_foreign_source", {rec(WRITE, write64([](Template& t) { t.mods = kModForeign; }), 3)});
  add("mutated_fixed", [&] {
    Template t = data(kRwKey, 0, 0, 64);
    t.mods = kModFix;
    t.muts = {{42 + 1, 0x02}, {42 + 16 + 6, 0x7F}};
    return std::vector<Record>{rec(WRITE, t, 3)};
  }());
  add("mutated_bad_icrc", [&] {
    Template t = data(kRwKey, 0, 0, 64);
    t.muts = {{60, 0xFF}};
    return std::vector<Record>{rec(WRITE, t, 3)};
  }());
  add("raw_frames", {raw({}, false), raw({0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x08, 0x00}, false),
                     raw(std::vector<uint8_t>(60, 0x45), true), wait(3), raw(std::vector<uint8_t>(200, 0), true)});
  add("interleaved", [&] {
    Template w = data(kRwKey, 0, 512, 128);
    Template a;
    a.psn_mode = 3;
    Template p;
    return std::vector<Record>{rec(WRITE, w, 1), rec(ACK, a, 2), rec(PROBE, p, 3), wait(5), rec(WRITE, w, 4)};
  }());

  std::vector<std::pair<std::string, std::vector<uint8_t>>> out;
  for (int victim = 0; victim < 2; ++victim)
    for (const auto& [name, rs] : attacks)
      out.emplace_back(std::string(victim ? "b_" : "a_") + name, encode(uint8_t(victim | (1 << 1)), rs));
  return out;
}

}  // namespace mroce::fuzzing::engine_rx
