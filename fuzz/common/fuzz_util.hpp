// Failure reporting for the fuzz harnesses. A failed check prints what failed and the input (hex,
// first 512 bytes), then aborts: libFuzzer and AFL++ record the input as a crash, and the replay
// program names the file it was running.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace mroce::fuzzing {

[[noreturn]] inline void fail(const char* target, const std::string& what, const uint8_t* data, size_t size) {
  std::fprintf(stderr, "\n==== fuzz target %s: CHECK FAILED ====\n%s\ninput (%zu bytes):", target, what.c_str(), size);
  for (size_t i = 0; i < size && i < 512; ++i) { std::fprintf(stderr, "%s%02x", i % 32 == 0 ? "\n  " : "", data[i]); }
  std::fprintf(stderr, "%s\n", size > 512 ? "\n  ..." : "");
  std::fflush(stderr);
  std::abort();
}

}  // namespace mroce::fuzzing

// Checks inside LLVMFuzzerTestOneInput (which names its input `data`, `size`).
#define FUZZ_CHECK(cond, what)                                                                        \
  do {                                                                                                \
    if (!(cond)) ::mroce::fuzzing::fail(kTargetName, std::string(#cond) + ": " + (what), data, size); \
  } while (0)
