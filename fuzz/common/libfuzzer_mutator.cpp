// libFuzzer custom mutator for the frame targets (frame_fast, codec_diff): libFuzzer's own
// mutation (which also applies the -dict entries), then the structure-aware step of mutator.hpp.
// Linked only into the libFuzzer builds: LLVMFuzzerMutate exists only in libFuzzer's runtime.
#include <cstddef>
#include <cstdint>

#include "mutator.hpp"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  size = LLVMFuzzerMutate(data, size, max_size);
  return mroce::fuzzing::post_mutate(data, size, max_size, seed);
}
