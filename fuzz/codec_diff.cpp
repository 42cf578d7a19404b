// Fuzz target codec_diff: differential test of the reference codec (spec_model/codec) against the
// fast codec (impl/codec) on the same bytes.
//
// Both must reject with the same error kind, or both accept with the same canonical line
// (appendix C: "ERROR <Kind>" or the full field dump; string equality covers both cases). An
// accepted frame must also come back byte for byte, up to the end of the IP packet, when its
// decoded fields are re-encoded by the OTHER codec's encoder ([R-VAL-4]).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "codec/fast_codec.hpp"
#include "codec/ref_codec.hpp"
#include "frame_fixup.hpp"
#include "fuzz_util.hpp"

namespace {

constexpr const char* kTargetName = "codec_diff";
namespace fz = mroce::fuzzing;

// [R-VAL-4] up to the end of the IP packet; IPv4 checksum 0x0000 and 0xFFFF are equivalent
// ([R-VAL-1] check 7) and an encoder writes the computed form.
std::string ip_packet_diff(const uint8_t* a, const std::vector<uint8_t>& b, size_t ip_end, bool v6) {
  if (b.size() < ip_end) return "re-encoded frame too short: " + std::to_string(b.size());
  for (size_t i = 0; i < ip_end; ++i) {
    if (a[i] == b[i]) continue;
    if (!v6 && (i == 24 || i == 25)) {
      const uint16_t x = fz::be16(a + 24), y = fz::be16(b.data() + 24);
      if ((x == 0xFFFF && y == 0x0000) || (x == 0x0000 && y == 0xFFFF)) continue;
    }
    return "first difference at byte " + std::to_string(i);
  }
  return {};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* input, size_t size) {
  using namespace mroce;
  if (size > fast::kMaxFrameLen + 4096) return 0;
  // An exactly-sized heap copy, so that ASan sees any read past the end ([R-VAL-2]) under every
  // engine (AFL++ hands over a larger shared buffer).
  const std::unique_ptr<uint8_t[]> copy(new uint8_t[size ? size : 1]);
  if (size) std::memcpy(copy.get(), input, size);
  const uint8_t* const data = copy.get();
  const std::span<const uint8_t> frame(data, size);

  const ref::DecodeResult rr = ref::decode(frame, ref::kDefaultUdpPort);
  fast::PacketView v;
  const fast::Error fe = fast::decode(data, uint32_t(size), fast::kDefaultUdpPort, v);
  const std::string rl = ref::canonical(rr, frame);
  const std::string fl = fe == fast::Error::None ? fast::canonical(v) : fast::canonical_error(fe);
  FUZZ_CHECK(rl == fl, "the codecs disagree:\n  ref:  " + rl + "\n  fast: " + fl);
  if (!rr.ok()) return 0;

  // Both accepted with the same fields. Cross re-encode: ref fields -> fast encoder, fast fields
  // -> ref encoder.
  const ref::Packet& p = rr.packet;
  const size_t ip_end = 14 + size_t{v.ip_packet_len()};
  const std::vector<uint8_t> payload(v.payload(), v.payload() + v.payload_len());
  // (ref sets the payload position for data opcodes only; the fast view has it for every opcode)
  FUZZ_CHECK(!v.is_data() || (p.payload_offset == v.payload_offset() && p.payload_len == v.payload_len()), rl);
  FUZZ_CHECK(v.is_data() || (p.payload_len == 0 && v.payload_len() == 0), rl);

  const std::vector<uint8_t> by_ref = ref::encode(p, payload, p.udp_checksum != 0);
  std::string why = ip_packet_diff(data, by_ref, ip_end, p.ipv6);
  FUZZ_CHECK(why.empty(), "ref::encode(ref::decode(x)): " + why + "\n  " + rl);

  const std::vector<uint8_t> by_fast = fast::build(fast::fields_of(v), payload);
  why = ip_packet_diff(data, by_fast, ip_end, v.ipv6());
  FUZZ_CHECK(why.empty(), "fast::build(fields_of(x)): " + why + "\n  " + fl);

  // Each encoder's output decodes to the same line in the other codec.
  const ref::DecodeResult r2 = ref::decode(by_fast);
  FUZZ_CHECK(ref::canonical(r2, by_fast) == rl, "ref decode of fast re-encode: " + ref::canonical(r2, by_fast));
  fast::PacketView v2;
  const fast::Error e2 = fast::decode(by_ref.data(), uint32_t(by_ref.size()), fast::kDefaultUdpPort, v2);
  FUZZ_CHECK(
      e2 == fast::Error::None && fast::canonical(v2) == fl,
      "fast decode of ref re-encode: " + (e2 == fast::Error::None ? fast::canonical(v2) : fast::canonical_error(e2)));
  return 0;
}
