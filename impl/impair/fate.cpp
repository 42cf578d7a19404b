#include "impair/fate.hpp"

#include <charconv>
#include <cstdio>
#include <stdexcept>

namespace mroce::impair {
namespace {

// The harness's key order (harness/src/generate.cpp), so knob strings are interchangeable.
template <class K, class F>
void for_each_knob(K& k, F&& f) {
  f("frames", k.frames);
  f("loss_ppm", k.loss_ppm);
  f("ge_enter_bad_ppm", k.ge_enter_bad_ppm);
  f("ge_leave_bad_ppm", k.ge_leave_bad_ppm);
  f("ge_loss_good_ppm", k.ge_loss_good_ppm);
  f("ge_loss_bad_ppm", k.ge_loss_bad_ppm);
  f("dup_ppm", k.dup_ppm);
  f("dup_gap_max_us", k.dup_gap_max_us);
  f("delay_ppm", k.delay_ppm);
  f("delay_max_us", k.delay_max_us);
  f("ce_ppm", k.ce_ppm);
  f("corrupt_ppm", k.corrupt_ppm);
  f("link_failures", k.link_failures);
  f("link_from", k.link_from);
  f("down_min_us", k.down_min_us);
  f("down_max_us", k.down_max_us);
  f("faults_until", k.faults_until);
}

}  // namespace

std::string knobs_to_string(const FaultKnobs& k) {
  std::string s;
  for_each_knob(k, [&](const char* name, const auto& v) {
    if (!s.empty()) s += ' ';
    s += name;
    s += '=';
    s += std::to_string(v);
  });
  return s;
}

FaultKnobs knobs_from_string(std::string_view text) { return knobs_from_string(text, FaultKnobs{}); }

FaultKnobs knobs_from_string(std::string_view text, FaultKnobs k) {
  size_t pos = 0;
  while (pos < text.size()) {
    while (pos < text.size() && text[pos] == ' ') ++pos;
    if (pos >= text.size()) break;
    size_t end = text.find(' ', pos);
    if (end == std::string_view::npos) end = text.size();
    const auto item = text.substr(pos, end - pos);
    pos = end;
    const auto eq = item.find('=');
    if (eq == std::string_view::npos) throw std::invalid_argument("knob without '=': " + std::string(item));
    const auto key = item.substr(0, eq), val = item.substr(eq + 1);
    bool found = false;
    for_each_knob(k, [&](const char* name, auto& field) {
      if (key != name) return;
      found = true;
      auto r = std::from_chars(val.data(), val.data() + val.size(), field);
      if (r.ec != std::errc() || r.ptr != val.data() + val.size())
        throw std::invalid_argument("bad value for knob " + std::string(key));
    });
    if (!found) throw std::invalid_argument("unknown knob: " + std::string(key));
  }
  return k;
}

std::string_view fate_name(PacketFate::Kind k) {
  switch (k) {
    case PacketFate::Deliver:
      return "Deliver";
    case PacketFate::Drop:
      return "Drop";
    case PacketFate::Duplicate:
      return "Duplicate";
    case PacketFate::Delay:
      return "Delay";
    case PacketFate::MarkCe:
      return "MarkCe";
    case PacketFate::Corrupt:
      return "Corrupt";
  }
  return "UNKNOWN";
}

std::optional<PacketFate::Kind> fate_from_name(std::string_view n) {
  for (int k = PacketFate::Deliver; k <= PacketFate::Corrupt; ++k)
    if (fate_name(PacketFate::Kind(k)) == n) return PacketFate::Kind(k);
  return std::nullopt;
}

std::string fate_to_string(const PacketFate& f) {
  std::string s(fate_name(f.kind));
  if (f.kind == PacketFate::Delay || f.kind == PacketFate::Duplicate) s += "+" + std::to_string(f.extra_delay_us);
  if (f.kind == PacketFate::Corrupt) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "@%u^0x%02x", unsigned(f.corrupt_offset), unsigned(f.corrupt_xor));
    s += buf;
  }
  return s;
}

}  // namespace mroce::impair
