// Fuzz target capture_reader: the conformance tools' capture reader (harness/conform, through
// libpcap) on arbitrary bytes.
//
// Input: a whole capture file (pcap or pcapng, or anything else). read_capture_bytes must return
// or throw CaptureError, never crash. On an error: the message is one line that starts with the
// name given, and never the "internal" error that would mean the reader's own pcapng block walk
// lost step with libpcap. On success, the invariants of conform/capture.hpp: format "pcap" or
// "pcapng", frame numbers consecutive from 1, bytes.size() <= orig_len, truncated_frames equal to
// the count of frames with bytes.size() < orig_len, interface 0 throughout a pcap, and no more
// captured bytes than the input holds. Then the frames go through CaptureWriter into a pcap file
// and are read back: same bytes (up to the writer's snap length), same timestamps.
//
// libpcap is the system library (not instrumented): the sanitizers and the coverage see our code
// and the calls into libpcap, not libpcap's inside.
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "conform/capture.hpp"
#include "fuzz_util.hpp"

namespace {

constexpr const char* kTargetName = "capture_reader";
namespace cf = mroce::conform;

const std::string kName = "fuzz-input.pcap";

// One scratch file per process for the write-and-read-back check.
const std::string& scratch_path() {
  static const std::string p = [] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir != nullptr && dir[0] != '\0' ? dir : "/tmp") + "/mroce_fuzz_capture_reader." +
           std::to_string(::getpid()) + ".pcap";
  }();
  return p;
}

struct RemoveScratch {
  ~RemoveScratch() { std::remove(scratch_path().c_str()); }
} g_remove_scratch;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cf::Capture cap;
  try {
    cap = cf::read_capture_bytes(std::span<const uint8_t>(data, size), kName);
  } catch (const cf::CaptureError& e) {
    const std::string msg = e.what();
    FUZZ_CHECK(msg.rfind(kName + ": ", 0) == 0, "error message does not start with the name: " + msg);
    FUZZ_CHECK(msg.size() > kName.size() + 2, "error message says nothing: " + msg);
    FUZZ_CHECK(msg.find('\n') == std::string::npos, "error message is not one line: " + msg);
    FUZZ_CHECK(msg.find("internal") == std::string::npos, msg);
    return 0;
  }

  FUZZ_CHECK(cap.path == kName, cap.path);
  FUZZ_CHECK(cap.format == "pcap" || cap.format == "pcapng", cap.format);
  uint64_t truncated = 0;
  uint64_t captured = 0;
  for (size_t i = 0; i < cap.frames.size(); ++i) {
    const auto& f = cap.frames[i];
    FUZZ_CHECK(f.number == i + 1, "frame numbers not consecutive from 1 at index " + std::to_string(i));
    FUZZ_CHECK(f.bytes.size() <= f.orig_len, "frame " + std::to_string(f.number) + ": " +
                                                 std::to_string(f.bytes.size()) + " bytes > orig_len " +
                                                 std::to_string(f.orig_len));
    FUZZ_CHECK(cap.format == "pcapng" || f.interface == 0, "pcap frame with interface " + std::to_string(f.interface));
    if (f.bytes.size() < f.orig_len) ++truncated;
    captured += f.bytes.size();
  }
  FUZZ_CHECK(cap.truncated_frames == truncated,
             std::to_string(cap.truncated_frames) + " vs " + std::to_string(truncated));
  FUZZ_CHECK(captured <= size, "more captured bytes than input bytes");

  // Write what was read, read it back. Timestamps a pcap record cannot hold (2^32 s and later,
  // from a pcapng file) are left out.
  if (cap.frames.empty()) return 0;
  std::vector<const cf::CapturedFrame*> kept;
  try {
    cf::CaptureWriter w(scratch_path());
    for (const auto& f : cap.frames) {
      if (f.time_ns / 1000000000u > 0xFFFFFFFFu) continue;
      w.write(f.time_ns, f.bytes);
      kept.push_back(&f);
    }
    w.close();
  } catch (const cf::CaptureError& e) { FUZZ_CHECK(false, std::string("writing the frames back failed: ") + e.what()); }
  cf::Capture back;
  try {
    back = cf::read_capture(scratch_path());
  } catch (const cf::CaptureError& e) {
    FUZZ_CHECK(false, std::string("reading the written capture failed: ") + e.what());
  }
  FUZZ_CHECK(back.format == "pcap", back.format);
  FUZZ_CHECK(back.frames.size() == kept.size(),
             std::to_string(back.frames.size()) + " frames back, wrote " + std::to_string(kept.size()));
  for (size_t i = 0; i < kept.size(); ++i) {
    const auto& a = *kept[i];
    const auto& b = back.frames[i];
    const size_t want = a.bytes.size() < cf::CaptureWriter::kSnaplen ? a.bytes.size() : cf::CaptureWriter::kSnaplen;
    FUZZ_CHECK(b.time_ns == a.time_ns, "timestamp of written frame " + std::to_string(i + 1));
    FUZZ_CHECK(b.orig_len == a.bytes.size(), "length of written frame " + std::to_string(i + 1));
    FUZZ_CHECK(b.bytes.size() == want && std::equal(b.bytes.begin(), b.bytes.end(), a.bytes.begin()),
               "bytes of written frame " + std::to_string(i + 1));
  }
  return 0;
}
