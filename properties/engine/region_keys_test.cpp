// [R-MEM-6], [R-MEM-2]: a region deregistered under a work request or a receive, on the model
// and on the engine with the same script and the same expectations. 2 MiB move over a region that
// goes away after the first round trip, and a new region at the same address (holding 0xEE) is
// registered at once (on the engine it takes the old region's slot). No byte of it is sent or
// overwritten, and the request fails once: LocalProtection where the buffer was local, RemoteAccess
// where it was the responder's. Each side runs on its own two-endpoint driver (the model's Pair,
// the engine's EnginePair): the timing differs, the outcome may not.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "../model_unit/pair.hpp"
#include "engine_pair.hpp"

namespace {

enum class Gone { WriteSource, RecvBuffer, ReadSink, ReadResponder };

constexpr uint32_t kLen = 2 << 20;
constexpr uint64_t kRegion = 0x40000000;  // the region that goes away, and its successor
constexpr uint32_t kAll = mroce::access::kLocalWrite | mroce::access::kRemoteRead | mroce::access::kRemoteWrite;

struct Outcome {
  bool moved_before = true;       // part of the message had moved when the region went away
  std::vector<std::string> a, b;  // each side's completions, "status/bytes" (also any late duplicate)
  size_t secret_bytes_seen = 0;   // 0xEE bytes that reached the peer's memory
  bool secret_intact = true;      // the new region still holds only 0xEE
  bool operator==(const Outcome&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Outcome& o) {
  os << (o.moved_before ? "moved before, a:" : "nothing moved before, a:");
  for (const auto& c : o.a) os << ' ' << c;
  os << " b:";
  for (const auto& c : o.b) os << ' ' << c;
  return os << " secret bytes seen " << o.secret_bytes_seen << ", secret intact " << o.secret_intact;
}

// The side that owns the region that goes away.
int owner_of(Gone g) { return g == Gone::RecvBuffer || g == Gone::ReadResponder ? 1 : 0; }
// Where the message lands (side, and whether in the region that goes away rather than at kDst), and
// the byte it carries: the region holds 0x11 and the other buffer 0x22 until the message moves.
struct Landing {
  int side;
  bool in_region;
  uint8_t byte;
};
Landing landing_of(Gone g) {
  switch (g) {
    case Gone::WriteSource:
      return {1, false, 0x11};
    case Gone::RecvBuffer:
      return {1, true, 0x22};
    case Gone::ReadSink:
      return {0, true, 0x22};
    case Gone::ReadResponder:
      break;
  }
  return {0, false, 0x11};
}

Outcome on_model(Gone gone) {
  using namespace mroce::model;
  constexpr uint64_t kDst = 0x100000;  // in each side's setup region
  mroce::model::testing::Pair net;
  net.setup(4 << 20);
  const int owner = owner_of(gone);
  net.handle(0, WriteMemory{kDst, std::vector<uint8_t>(kLen, 0x22)});
  net.handle(1, WriteMemory{kDst, std::vector<uint8_t>(kLen, 0x22)});
  net.handle(owner, RegisterMemory{kRegion, kLen, kAll});
  net.handle(owner, WriteMemory{kRegion, std::vector<uint8_t>(kLen, 0x11)});
  const MemoryRegistered mr = net.keys[owner].back();
  const uint32_t lkey0 = net.keys[0][0].lkey, rkey1 = net.keys[1][0].rkey;
  switch (gone) {
    case Gone::WriteSource:
      net.handle(0, PostWrite{net.conn[0], 0, 1, kRegion, kLen, mr.lkey, kDst, rkey1, std::nullopt});
      break;
    case Gone::RecvBuffer:
      net.handle(1, PostRecv{net.conn[1], 0, 1, kRegion, kLen, mr.lkey});
      net.handle(0, PostSend{net.conn[0], 0, 2, kDst, kLen, lkey0});
      break;
    case Gone::ReadSink:
      net.handle(0, PostRead{net.conn[0], 0, 1, kRegion, kLen, mr.lkey, kDst, rkey1});
      break;
    case Gone::ReadResponder:
      net.handle(0, PostRead{net.conn[0], 0, 1, kDst, kLen, lkey0, kRegion, mr.rkey});
      break;
  }
  net.run(net.now() + 12);  // a round trip: part of the message has moved
  const Landing l = landing_of(gone);
  const std::vector<uint8_t> before = net.mem(l.side, l.in_region ? kRegion : kDst, kLen);
  const bool moved_before = std::count(before.begin(), before.end(), l.byte) > 0;
  net.handle(owner, DeregisterMemory{mr.lkey});
  net.handle(owner, RegisterMemory{kRegion, kLen, kAll});
  net.handle(owner, WriteMemory{kRegion, std::vector<uint8_t>(kLen, 0xEE)});
  net.run(net.now() + 200000,
          [&] { return !net.completions[0].empty() && (gone != Gone::RecvBuffer || !net.completions[1].empty()); });
  net.run(net.now() + 5000);  // a second completion would show here
  Outcome out;
  out.moved_before = moved_before;
  for (int side = 0; side < 2; ++side)
    for (const Completion& c : net.completions[side])
      (side ? out.b : out.a).push_back(std::string(status_name(c.status)) + "/" + std::to_string(c.byte_len));
  const std::vector<uint8_t> peer = net.mem(1 - owner, kDst, kLen), mine = net.mem(owner, kRegion, kLen);
  out.secret_bytes_seen = size_t(std::count(peer.begin(), peer.end(), 0xEE));
  out.secret_intact = std::all_of(mine.begin(), mine.end(), [](uint8_t x) { return x == 0xEE; });
  return out;
}

Outcome on_engine(Gone gone) {
  using namespace mroce;
  mroce::testing::EnginePair net;
  net.setup(4 << 20);
  const uint64_t kDst = mroce::testing::EnginePair::kBase + 0x100000;
  const int owner = owner_of(gone);
  std::vector<uint8_t> buffer(kLen, 0x11), secret(kLen, 0xEE);
  std::fill(net.at(0, kDst), net.at(0, kDst) + kLen, 0x22);
  std::fill(net.at(1, kDst), net.at(1, kDst) + kLen, 0x22);
  MemoryRegion mr{}, reused{};
  EXPECT_EQ(net.dev(owner).reg_mr(buffer.data(), kLen, kAll, &mr, kRegion), Result::Ok);
  const Sge local{kRegion, kLen, mr.lkey};
  switch (gone) {
    case Gone::WriteSource:
      EXPECT_EQ(net.dev(0).post_write(net.conn[0], 0, 1, local, kDst, net.mr[1].rkey), Result::Ok);
      break;
    case Gone::RecvBuffer:
      EXPECT_EQ(net.dev(1).post_recv(net.conn[1], 0, 1, local), Result::Ok);
      EXPECT_EQ(net.dev(0).post_send(net.conn[0], 0, 2, Sge{kDst, kLen, net.mr[0].lkey}), Result::Ok);
      break;
    case Gone::ReadSink:
      EXPECT_EQ(net.dev(0).post_read(net.conn[0], 0, 1, local, kDst, net.mr[1].rkey), Result::Ok);
      break;
    case Gone::ReadResponder:
      EXPECT_EQ(net.dev(0).post_read(net.conn[0], 0, 1, Sge{kDst, kLen, net.mr[0].lkey}, kRegion, mr.rkey), Result::Ok);
      break;
  }
  net.run(net.now() + 12);  // a round trip: part of the message has moved
  const Landing l = landing_of(gone);
  const uint8_t* landing = l.in_region ? buffer.data() : net.at(l.side, kDst);
  const bool moved_before = std::count(landing, landing + kLen, l.byte) > 0;
  EXPECT_EQ(net.dev(owner).dereg_mr(mr.lkey), Result::Ok);
  // The old buffer is still the application's memory: the engine must not touch it any more.
  std::fill(buffer.begin(), buffer.end(), 0x33);
  EXPECT_EQ(net.dev(owner).reg_mr(secret.data(), kLen, kAll, &reused, kRegion), Result::Ok);
  net.run(net.now() + 200000,
          [&] { return !net.completions[0].empty() && (gone != Gone::RecvBuffer || !net.completions[1].empty()); });
  net.run(net.now() + 5000);  // a second completion would show here
  if (l.in_region)
    EXPECT_TRUE(std::all_of(buffer.begin(), buffer.end(), [](uint8_t x) { return x == 0x33; }))
        << "the engine wrote into a deregistered buffer";
  else
    EXPECT_EQ(std::count(net.at(l.side, kDst), net.at(l.side, kDst) + kLen, 0x33), 0)
        << "the engine read a deregistered buffer";
  Outcome out;
  out.moved_before = moved_before;
  for (int side = 0; side < 2; ++side)
    for (const WorkCompletion& c : net.completions[side])
      (side ? out.b : out.a).push_back(std::string(status_name(c.status)) + "/" + std::to_string(c.byte_len));
  const int peer = 1 - owner;
  out.secret_bytes_seen = size_t(std::count(net.at(peer, kDst), net.at(peer, kDst) + kLen, 0xEE));
  out.secret_intact = std::all_of(secret.begin(), secret.end(), [](uint8_t x) { return x == 0xEE; });
  return out;
}

void expect_on_both(Gone gone, const Outcome& want) {
  EXPECT_EQ(on_model(gone), want) << "the model";
  EXPECT_EQ(on_engine(gone), want) << "the engine";
}

const std::string kWhole = std::to_string(kLen);

TEST(RegionKeys, R_MEM_6_AWriteWhoseSourceIsDeregisteredFailsLocalProtection) {
  expect_on_both(Gone::WriteSource, {true, {"LocalProtection/0"}, {}, 0, true});
}

// The sender delivered every byte it was given: its Send succeeds; the receive fails.
TEST(RegionKeys, R_MEM_6_AReceiveWhoseBufferIsDeregisteredFailsLocalProtection) {
  expect_on_both(Gone::RecvBuffer, {true, {"Success/" + kWhole}, {"LocalProtection/0"}, 0, true});
}

TEST(RegionKeys, R_MEM_6_AReadWhoseSinkIsDeregisteredFailsLocalProtection) {
  expect_on_both(Gone::ReadSink, {true, {"LocalProtection/0"}, {}, 0, true});
}

TEST(RegionKeys, R_MEM_6_AReadWhoseSourceIsDeregisteredAtTheResponderFailsRemoteAccess) {
  expect_on_both(Gone::ReadResponder, {true, {"RemoteAccess/0"}, {}, 0, true});
}

}  // namespace
