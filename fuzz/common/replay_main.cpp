// Plain replay driver: runs every file of the given directories (and any files given directly)
// through the target's LLVMFuzzerTestOneInput, once each, in name order. Built in every preset and
// registered in ctest as fuzz.replay.<target> over fuzz/corpus/<target>/, under ASan + UBSan, so
// the committed corpus (seeds and past crashes) is a regression suite.
//
//   fuzz_replay_<target> [-v] PATH...     exit 0: all inputs ran; exit 1: no input found / unreadable
// A crashing input aborts the process; the last line on stderr names its file.
#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// Present when a sanitizer runtime is linked in; weak so that a plain build links too.
extern "C" __attribute__((weak)) void __sanitizer_set_death_callback(void (*)(void));

namespace {

char g_current[4096] = "";

void name_current_input() {
  if (g_current[0] != '\0') {
    const char prefix[] = "\nfuzz replay: the failing input is ";
    // Only async-signal-safe calls here: we may be inside a signal handler.
    (void)!write(2, prefix, sizeof(prefix) - 1);
    (void)!write(2, g_current, strlen(g_current));
    (void)!write(2, "\n", 1);
  }
}

extern "C" void on_abort(int sig) {
  name_current_input();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

bool read_file(const std::filesystem::path& p, std::vector<uint8_t>& out) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

}  // namespace

int main(int argc, char** argv) {
  bool verbose = false;
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-v") {
      verbose = true;
      continue;
    }
    if (a == "-h" || a == "--help") {
      std::printf("usage: %s [-v] PATH...  (runs every file of each directory PATH, or the file PATH)\n", argv[0]);
      return 0;
    }
    std::error_code ec;
    if (std::filesystem::is_directory(a, ec)) {
      for (const auto& e : std::filesystem::directory_iterator(a, ec)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
    } else if (std::filesystem::is_regular_file(a, ec)) {
      files.emplace_back(a);
    } else {
      std::fprintf(stderr, "fuzz replay: %s: no such file or directory\n", a.c_str());
      return 1;
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::fprintf(stderr, "fuzz replay: no input files (an empty corpus tests nothing)\n");
    return 1;
  }
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(name_current_input);
  std::signal(SIGABRT, on_abort);
  std::signal(SIGSEGV, on_abort);
  std::signal(SIGILL, on_abort);
  std::signal(SIGFPE, on_abort);

  std::vector<uint8_t> buf;
  size_t bytes = 0;
  for (const auto& f : files) {
    if (!read_file(f, buf)) {
      std::fprintf(stderr, "fuzz replay: cannot read %s\n", f.c_str());
      return 1;
    }
    std::snprintf(g_current, sizeof(g_current), "%s", f.c_str());
    if (verbose) std::fprintf(stderr, "running %s (%zu bytes)\n", f.c_str(), buf.size());
    // An exact-size heap copy, so that any read past the input's end hits an ASan redzone.
    auto* copy = new uint8_t[buf.size() ? buf.size() : 1];
    if (!buf.empty()) std::memcpy(copy, buf.data(), buf.size());
    LLVMFuzzerTestOneInput(copy, buf.size());
    delete[] copy;
    bytes += buf.size();
  }
  g_current[0] = '\0';
  std::printf("fuzz replay: %zu inputs (%zu bytes) ran cleanly\n", files.size(), bytes);
  return 0;
}
