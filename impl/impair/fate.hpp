// Per-frame fates drawn online from a seed and a few knobs.
//
// The knob names, their meaning and the order of the random draws are those of the in-memory
// harness (harness/netsim/generate.hpp, `FaultKnobs` and `generate_schedule`): for every k below
// `frames`, FateGenerator(knobs, seed) yields as its k-th fate exactly `generate_schedule(knobs, ...,
// seed).fates[k]`, and Deliver from `frames` on. So a run on DPDK ports can be replayed in memory
// from (seed, knobs), and a harness schedule can be played onto ports. The fate of frame k depends
// only on (seed, knobs, k and the fates before it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "impair/prng.hpp"

namespace mroce::impair {

// Same fields, names, defaults and string keys as harness FaultKnobs. The link_* / down_* knobs are
// not drawn by FateGenerator (the harness draws them after the whole fates list, which an online
// generator cannot do); on ports, per-path outages are the Blackhole entries of ImpairConfig.
struct FaultKnobs {
  uint32_t frames = 2000;  // fates drawn; later frames are delivered
  uint32_t loss_ppm = 0;   // i.i.d. loss
  // Gilbert-Elliott bursty loss: a two-state chain stepped once per frame (active when
  // ge_enter_bad_ppm > 0).
  uint32_t ge_enter_bad_ppm = 0;
  uint32_t ge_leave_bad_ppm = 0;
  uint32_t ge_loss_good_ppm = 0;
  uint32_t ge_loss_bad_ppm = 0;
  uint32_t dup_ppm = 0;
  uint32_t dup_gap_max_us = 20;  // the copy follows after [1, dup_gap_max_us] µs
  uint32_t delay_ppm = 0;        // reordering: extra delay in [1, delay_max_us] µs
  uint32_t delay_max_us = 50;
  uint32_t ce_ppm = 0;
  uint32_t corrupt_ppm = 0;
  uint32_t link_failures = 0;
  uint64_t link_from = 0;
  uint32_t down_min_us = 100;
  uint32_t down_max_us = 5000;
  uint64_t faults_until = 0;
  bool operator==(const FaultKnobs&) const = default;
};

// "loss_ppm=1000 ce_ppm=5000 ..." in the harness's key order; parsing rejects unknown keys and bad
// values with std::invalid_argument (same grammar as harness knobs_from_string).
std::string knobs_to_string(const FaultKnobs& k);
FaultKnobs knobs_from_string(std::string_view text);
// Applies "key=value ..." on top of `base` (keys not named keep their value).
FaultKnobs knobs_from_string(std::string_view text, FaultKnobs base);

// Same kinds (and numeric values) and fields as harness PacketFate.
struct PacketFate {
  enum Kind : uint8_t { Deliver, Drop, Duplicate, Delay, MarkCe, Corrupt };
  Kind kind = Deliver;
  uint32_t extra_delay_us = 0;  // Delay: added delay. Duplicate: gap before the copy (0 acts as 1)
  uint16_t corrupt_offset = 0;  // Corrupt: byte of the IP packet (modulo its length)
  uint8_t corrupt_xor = 0;      // Corrupt: XOR mask (0 acts as 0x01)
  bool operator==(const PacketFate&) const = default;
};
std::string_view fate_name(PacketFate::Kind k);
std::optional<PacketFate::Kind> fate_from_name(std::string_view name);
std::string fate_to_string(const PacketFate& f);  // "Delay+17", "Corrupt@123^0x5a", "Drop", ...

class FateGenerator {
 public:
  FateGenerator(const FaultKnobs& knobs, uint64_t seed) : k_(knobs), g_(seed) {}

  // The fate of the next frame (index() before the call).
  PacketFate next() {
    PacketFate f;
    if (index_++ >= k_.frames) return f;
    const bool ge = k_.ge_enter_bad_ppm > 0;
    if (ge) bad_ = bad_ ? !g_.chance_ppm(k_.ge_leave_bad_ppm) : g_.chance_ppm(k_.ge_enter_bad_ppm);
    // Short-circuit as in the harness: the GE draw happens only when i.i.d. loss spared the frame.
    const bool lost =
        g_.chance_ppm(k_.loss_ppm) || (ge && g_.chance_ppm(bad_ ? k_.ge_loss_bad_ppm : k_.ge_loss_good_ppm));
    if (lost) {
      f.kind = PacketFate::Drop;
    } else if (g_.chance_ppm(k_.corrupt_ppm)) {
      f.kind = PacketFate::Corrupt;
      f.corrupt_offset = uint16_t(g_.below(65536));
      f.corrupt_xor = uint8_t(1 + g_.below(255));
    } else if (g_.chance_ppm(k_.dup_ppm)) {
      f.kind = PacketFate::Duplicate;
      f.extra_delay_us = uint32_t(1 + g_.below(k_.dup_gap_max_us > 0 ? k_.dup_gap_max_us : 1));
    } else if (g_.chance_ppm(k_.delay_ppm)) {
      f.kind = PacketFate::Delay;
      f.extra_delay_us = uint32_t(1 + g_.below(k_.delay_max_us > 0 ? k_.delay_max_us : 1));
    } else if (g_.chance_ppm(k_.ce_ppm)) {
      f.kind = PacketFate::MarkCe;
    }
    return f;
  }

  uint64_t index() const { return index_; }   // frames drawn so far
  bool in_bad_state() const { return bad_; }  // Gilbert-Elliott state after the last draw
  const FaultKnobs& knobs() const { return k_; }
  // The generator itself, for draws that follow the fates (the harness draws link outages after
  // the whole fates list from the same sequence).
  Prng& prng() { return g_; }

 private:
  FaultKnobs k_;
  Prng g_;
  uint64_t index_ = 0;
  bool bad_ = false;
};

}  // namespace mroce::impair
