#include "impair/impairer.hpp"

#include <charconv>
#include <stdexcept>

namespace mroce::impair {
namespace {

template <class T>
T parse_num(std::string_view key, std::string_view v) {
  T out{};
  auto r = std::from_chars(v.data(), v.data() + v.size(), out);
  if (r.ec != std::errc() || r.ptr != v.data() + v.size() || v.empty())
    throw std::invalid_argument("bad value for " + std::string(key) + ": '" + std::string(v) + "'");
  return out;
}

// SPORT[@FROM[-UNTIL]]
Blackhole parse_blackhole(std::string_view v) {
  Blackhole b;
  const auto at = v.find('@');
  b.sport = parse_num<uint16_t>("blackhole", v.substr(0, at));
  if (at != std::string_view::npos) {
    const auto times = v.substr(at + 1);
    const auto dash = times.find('-');
    b.from_us = parse_num<uint64_t>("blackhole", times.substr(0, dash));
    if (dash != std::string_view::npos) b.until_us = parse_num<uint64_t>("blackhole", times.substr(dash + 1));
  }
  return b;
}

}  // namespace

ImpairConfig impair_from_string(std::string_view text, ImpairConfig c) {
  std::string knob_text;  // FaultKnobs keys are passed on to knobs_from_string
  size_t pos = 0;
  while (pos < text.size()) {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == ',')) ++pos;
    if (pos >= text.size()) break;
    size_t end = text.find_first_of(" ,", pos);
    if (end == std::string_view::npos) end = text.size();
    const auto item = text.substr(pos, end - pos);
    pos = end;
    const auto eq = item.find('=');
    if (eq == std::string_view::npos) throw std::invalid_argument("impairment item without '=': " + std::string(item));
    const auto key = item.substr(0, eq), val = item.substr(eq + 1);
    if (key == "seed")
      c.seed = parse_num<uint64_t>(key, val);
    else if (key == "protect_handshake")
      c.protect_handshake = parse_num<unsigned>(key, val) != 0;
    else if (key == "ce_threshold_bytes")
      c.ce_threshold_bytes = parse_num<uint64_t>(key, val);
    else if (key == "queue_limit_bytes")
      c.queue_limit_bytes = parse_num<uint64_t>(key, val);
    else if (key == "queue_rate_mbps")
      c.queue_rate_mbps = parse_num<uint32_t>(key, val);
    else if (key == "blackhole")
      c.blackholes.push_back(parse_blackhole(val));
    else {
      knob_text += item;
      knob_text += ' ';
    }
  }
  c.knobs = knobs_from_string(knob_text, c.knobs);
  return c;
}

std::string impair_to_string(const ImpairConfig& c) {
  std::string s = "seed=" + std::to_string(c.seed) + " " + knobs_to_string(c.knobs) +
                  " protect_handshake=" + std::to_string(int(c.protect_handshake)) +
                  " ce_threshold_bytes=" + std::to_string(c.ce_threshold_bytes) +
                  " queue_limit_bytes=" + std::to_string(c.queue_limit_bytes) +
                  " queue_rate_mbps=" + std::to_string(c.queue_rate_mbps);
  for (const auto& b : c.blackholes) {
    s += " blackhole=" + std::to_string(b.sport) + "@" + std::to_string(b.from_us);
    if (b.until_us != kForever) s += "-" + std::to_string(b.until_us);
  }
  return s;
}

Decision apply_bytes(Impairer& imp, uint64_t now_us, std::vector<uint8_t> frame, std::vector<TimedFrame>& out) {
  const Decision d = imp.decide(now_us, frame, uint32_t(frame.size()));
  if (d.corrupt_pending) frame[d.corrupt_at] ^= corrupt_mask(d.fate.corrupt_xor);
  if (d.dropped()) return d;
  auto& st = imp.stats();
  switch (d.fate.kind) {
    case PacketFate::Duplicate: {
      const uint32_t gap = d.fate.extra_delay_us == 0 ? 1 : d.fate.extra_delay_us;
      out.push_back({now_us, frame});
      out.push_back({now_us + gap, std::move(frame)});
      st.frames_out += 2;
      break;
    }
    case PacketFate::Delay:
      out.push_back({now_us + d.fate.extra_delay_us, std::move(frame)});
      ++st.frames_out;
      break;
    default:
      out.push_back({now_us, std::move(frame)});
      ++st.frames_out;
      break;
  }
  return d;
}

}  // namespace mroce::impair
