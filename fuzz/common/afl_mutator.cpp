// AFL++ custom mutator library (AFL_CUSTOM_MUTATOR_LIBRARY) for the frame targets: a few blind
// byte-level edits (or a splice with another queue entry), then the same structure-aware step as
// the libFuzzer mutator (mutator.hpp). AFL++ keeps running its own mutations as well; this adds
// inputs whose lengths, checksums and ICRC are repaired so they reach checks 18..23 of [R-VAL-1].
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "mutator.hpp"

namespace {

struct State {
  mroce::fuzzing::Rng rng;
  uint8_t* buf = nullptr;
  size_t cap = 0;
};

// Values that sit on the boundaries the validation checks compare against.
constexpr uint16_t kInteresting16[] = {0,      1,      0x7F, 0x80, 0xFF, 0x100, 0x0800, 0x86DD, 0x8100, 0x4000, 0x2000,
                                       0x8000, 0xFFFF, 4793, 4791, 8192, 8193,  256,    64,     20,     28};

void blind_edit(uint8_t* d, size_t n, mroce::fuzzing::Rng& rng) {
  if (n == 0) return;
  const size_t pos = rng.below(static_cast<uint32_t>(n));
  switch (rng.below(4)) {
    case 0:
      d[pos] ^= static_cast<uint8_t>(1u << rng.below(8));
      break;
    case 1:
      d[pos] = static_cast<uint8_t>(rng.next());
      break;
    case 2:
      if (pos + 1 < n) {
        const uint16_t v = kInteresting16[rng.below(sizeof(kInteresting16) / sizeof(uint16_t))];
        mroce::fuzzing::put_be16(d + pos, v);
      }
      break;
    default:
      d[pos] = static_cast<uint8_t>(d[pos] + 1 + rng.below(35) - 17);
      break;
  }
}

}  // namespace

extern "C" {

void* afl_custom_init(void* /*afl*/, unsigned int seed) {
  auto* s = new State{mroce::fuzzing::Rng(seed)};
  return s;
}

size_t afl_custom_fuzz(void* data, uint8_t* buf, size_t buf_size, uint8_t** out_buf, uint8_t* add_buf,
                       size_t add_buf_size, size_t max_size) {
  auto* s = static_cast<State*>(data);
  if (s->cap < max_size) {
    std::free(s->buf);
    s->buf = static_cast<uint8_t*>(std::malloc(max_size));
    s->cap = s->buf ? max_size : 0;
    if (!s->buf) {
      *out_buf = buf;
      return buf_size;
    }
  }
  size_t n = buf_size < max_size ? buf_size : max_size;
  std::memcpy(s->buf, buf, n);
  if (add_buf && add_buf_size > 0 && s->rng.one_in(8)) {
    // Splice: our head, the other entry's tail from the same offset (same header layout).
    const size_t cut = s->rng.below(static_cast<uint32_t>(n + 1));
    if (cut < add_buf_size) {
      const size_t tail = add_buf_size - cut;
      const size_t room = max_size - cut;
      const size_t take = tail < room ? tail : room;
      std::memcpy(s->buf + cut, add_buf + cut, take);
      n = cut + take;
    }
  }
  const uint32_t edits = 1 + s->rng.below(4);
  for (uint32_t i = 0; i < edits; ++i) blind_edit(s->buf, n, s->rng);
  n = mroce::fuzzing::post_mutate(s->buf, n, max_size, s->rng.next());
  *out_buf = s->buf;
  return n;
}

void afl_custom_deinit(void* data) {
  auto* s = static_cast<State*>(data);
  std::free(s->buf);
  delete s;
}

}  // extern "C"
