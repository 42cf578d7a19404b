// rapidcheck generators of harness scenarios: endpoint configurations (ISNs near 2^32 in most
// cases), workloads (mixed operations, 0 bytes to many MTUs, several streams, deliberate misuse),
// and fault schedules in which faults stop. Every choice is a draw, so rapidcheck shrinks each one.
#pragma once

#include <rapidcheck.h>

#include <algorithm>
#include <cstdlib>

#include "netsim/checks.hpp"
#include "netsim/generate.hpp"
#include "netsim/run.hpp"
#include "netsim/workload.hpp"

namespace mroce::props {

using namespace mroce::harness;

// ISNs: just below 2^32 (paths wrap within a few packets), within 256 of it, or anything.
inline rc::Gen<uint32_t> genIsn() {
  return rc::gen::weightedOneOf<uint32_t>({
      {4, rc::gen::map(rc::gen::inRange<uint32_t>(0, 16), [](uint32_t x) { return 0xFFFFFFF0u + x; })},
      {3, rc::gen::map(rc::gen::inRange<uint32_t>(0, 256), [](uint32_t x) { return 0xFFFFFF00u + x; })},
      {2, rc::gen::arbitrary<uint32_t>()},
  });
}

struct ConfigKnobs {
  bool small_timeouts = false;  // property 8: keep-alive / peer timeout short so runs stay short
  bool quick_give_up = false;   // the initiator gives up after 1-3 CONNECTs, 100-1000 µs apart
};

// Draws both endpoint configurations into `s` (addresses and connection IDs from base_scenario).
inline void drawConfigs(Scenario& s, ConfigKnobs k = {}) {
  // MROCE_PROPS_CANARY=1 runs every property against the deliberately broken model (the canary
  // of types.hpp) on side A: to watch the properties fail, shrink and print their traces.
  static const bool canary = std::getenv("MROCE_PROPS_CANARY") != nullptr;
  s.config[0].canary_skip_one_retransmission = canary;
  for (auto& c : s.config) {
    c.isn = *genIsn();
    c.path_count = *rc::gen::inRange<uint16_t>(1, 7);
    c.stream_count = *rc::gen::inRange<uint16_t>(1, 6);
    c.max_payload = *rc::gen::element<uint16_t>(4096, 256, 1024, 512);
    c.window_cap = *rc::gen::element<uint16_t>(256, 16, 4, 2, 1, 64);
    c.ack_every = *rc::gen::element<uint32_t>(4, 1, 2, 16);
    c.ack_delay_us = *rc::gen::inRange<uint32_t>(1, 17);
    c.rto_max_us = *rc::gen::element<uint32_t>(100000, 10000, 30000);
    c.capacity_mbps = *rc::gen::weightedOneOf<uint32_t>(
        {{3, rc::gen::just<uint32_t>(100000)}, {1, rc::gen::inRange<uint32_t>(1, 200001)}});
    if (k.small_timeouts) {
      c.peer_timeout_us = *rc::gen::element<uint32_t>(5000, 20000, 50000);
      c.keepalive_us = *rc::gen::element<uint32_t>(2000, 10000, 100000);
    }
  }
  if (k.quick_give_up) {  // [R-CONN-4]: the connection can then fail for good
    s.config[0].connect_tries = *rc::gen::inRange<uint32_t>(1, 4);
    s.config[0].connect_retry_us = *rc::gen::inRange<uint32_t>(100, 1001);
  }
}

inline uint16_t negotiated_streams(const Scenario& s) {
  return std::min(s.config[0].stream_count, s.config[1].stream_count);
}
inline uint32_t negotiated_mtu(const Scenario& s) { return std::min(s.config[0].max_payload, s.config[1].max_payload); }

struct WorkloadShape {
  int max_ops = 24;
  int bad_percent = 10;    // share of intents that misbehave on purpose
  uint32_t max_mtus = 16;  // longest message, in MTUs
  model::Time spread = 400;
};

inline rc::Gen<Intent> genIntent(uint16_t streams, uint32_t mtu, uint16_t conns, WorkloadShape w) {
  return rc::gen::resize(
      100, rc::gen::exec([=] {
        Intent in;
        in.at = *rc::gen::inRange<model::Time>(0, w.spread + 1);
        in.side = *rc::gen::weightedElement<Side>({{2, Side::A}, {1, Side::B}});
        in.kind = *rc::gen::element(OpKind::Write, OpKind::Send, OpKind::Read, OpKind::WriteImm);
        in.stream = *rc::gen::inRange<uint16_t>(0, streams);
        in.length = *rc::gen::weightedOneOf<uint32_t>({
            {1, rc::gen::just<uint32_t>(0)},
            {2, rc::gen::inRange<uint32_t>(1, 300)},
            {4, rc::gen::inRange<uint32_t>(1, w.max_mtus * mtu + 1)},
            {1, rc::gen::map(rc::gen::inRange<uint32_t>(1, w.max_mtus + 1), [mtu](uint32_t k) { return k * mtu; })},
        });
        if (*rc::gen::inRange(0, 100) < w.bad_percent)
          in.bad = *rc::gen::element(Misbehaviour::WrongKey, Misbehaviour::NoRight, Misbehaviour::OutOfBounds,
                                     Misbehaviour::BadLocal, Misbehaviour::RecvTooSmall, Misbehaviour::RecvLate,
                                     Misbehaviour::NoRecv, Misbehaviour::RecvAfterFail, Misbehaviour::BadRecv);
        in.late_us = *rc::gen::inRange<uint32_t>(20, 270);
        in.slack = *rc::gen::inRange<uint32_t>(0, 64);
        in.imm = *rc::gen::arbitrary<uint32_t>();
        in.conn = *rc::gen::inRange<uint16_t>(0, conns);
        return in;
      }));
}

// One draw for the whole list, so that rapidcheck shrinks it by removing intents.
inline std::vector<Intent> drawIntents(const Scenario& s, const WorkloadShape& w) {
  return *rc::gen::resize(
      w.max_ops, rc::gen::nonEmpty(rc::gen::container<std::vector<Intent>>(
                     genIntent(negotiated_streams(s), negotiated_mtu(s), std::max<uint16_t>(s.connections, 1), w))));
}

struct FaultShape {
  int max_fates = 600;
  model::Time min_faults_until = 300, max_faults_until = 4000;
  int max_outages = 3;
};

inline rc::Gen<PacketFate> genFate() {
  return rc::gen::resize(100, rc::gen::exec([] {
                           // One number picks the kind, so shrinking it walks towards Deliver.
                           const int k = *rc::gen::inRange(0, 100);
                           PacketFate f;
                           if (k < 70) return f;
                           if (k < 83)
                             f.kind = PacketFate::Drop;
                           else if (k < 87)
                             f.kind = PacketFate::Duplicate;
                           else if (k < 92)
                             f.kind = PacketFate::Delay;
                           else if (k < 97)
                             f.kind = PacketFate::MarkCe;
                           else
                             f.kind = PacketFate::Corrupt;
                           if (f.kind == PacketFate::Duplicate || f.kind == PacketFate::Delay)
                             f.extra_delay_us = *rc::gen::inRange<uint32_t>(1, 60);
                           if (f.kind == PacketFate::Corrupt) {
                             f.corrupt_offset = *rc::gen::arbitrary<uint16_t>();
                             f.corrupt_xor = *rc::gen::inRange<uint8_t>(1, 255);
                           }
                           return f;
                         }));
}

inline std::vector<PacketFate> drawFates(int max) {
  return *rc::gen::resize(max, rc::gen::container<std::vector<PacketFate>>(genFate()));
}

struct Outage {
  model::Time at = 0, duration = 0;
  uint16_t link = 0;
  LinkDir dir = LinkDir::Both;
};

// Faults (fates, link outages) that stop at a drawn time: sets s.net and s.schedule.
inline void drawFaults(Scenario& s, const FaultShape& f) {
  s.net.links = *rc::gen::inRange<uint16_t>(1, 5);
  s.net.faults_until = *rc::gen::inRange<model::Time>(f.min_faults_until, f.max_faults_until + 1);
  s.schedule.fates = drawFates(f.max_fates);
  const uint16_t links = s.net.links;
  const model::Time until = s.net.faults_until;
  const auto outages =
      *rc::gen::resize(f.max_outages, rc::gen::container<std::vector<Outage>>(rc::gen::resize(
                                          100, rc::gen::exec([=] {
                                            Outage o;
                                            o.at = *rc::gen::inRange<model::Time>(0, until);
                                            o.duration = *rc::gen::inRange<model::Time>(50, 3000);
                                            o.link = *rc::gen::inRange<uint16_t>(0, links);
                                            o.dir = *rc::gen::element(LinkDir::Both, LinkDir::AtoB, LinkDir::BtoA);
                                            return o;
                                          }))));
  s.schedule.link_events.clear();
  for (const auto& o : outages) {
    s.schedule.link_events.push_back({o.at, o.dir, o.link, false});
    if (o.at + o.duration < until) s.schedule.link_events.push_back({o.at + o.duration, o.dir, o.link, true});
  }
  std::stable_sort(s.schedule.link_events.begin(), s.schedule.link_events.end(),
                   [](const LinkEvent& a, const LinkEvent& b) { return a.at < b.at; });
}

// How a scenario is judged: handshake faults may make a connection fail (cleanly).
inline CheckMode mode_of(const Scenario& s) {
  return s.net.protect_handshake ? CheckMode::Standard : CheckMode::MayFail;
}

// Stops a run that cannot settle soon after the bound property 7 allows, so that failing cases
// (and their shrinking) stay cheap.
inline void limit_run(Scenario& s) {
  model::Time last = s.net.faults_until == kNever ? 0 : s.net.faults_until;
  for (const auto& op : s.workload.ops) last = std::max(last, op.at);
  s.limits.time_limit = last + (mode_of(s) == CheckMode::MayFail ? failure_bound(s) : settle_bound(s)) + 10000;
  s.limits.max_events = 400000;
}

struct ScenarioShape {
  int max_connections = 4;           // A opens 1..max connections to B [R-FS-2]
  int handshake_fault_percent = 20;  // protect_handshake off [R-CONN-4]
  int give_up_percent = 30;          // of those: the initiator gives up quickly
};

// A whole scenario whose faults stop: the common input of properties 1-7.
inline Scenario drawScenario(const WorkloadShape& w = {}, const FaultShape& f = {}, const ScenarioShape& sh = {}) {
  Scenario s = base_scenario();
  s.seed = *rc::gen::arbitrary<uint64_t>();
  // One connection half the time (shrinks towards it), else up to max_connections.
  s.connections = *rc::gen::weightedOneOf<uint16_t>(
      {{1, rc::gen::just<uint16_t>(1)}, {1, rc::gen::inRange<uint16_t>(1, uint16_t(sh.max_connections + 1))}});
  const bool handshake_faults = *rc::gen::inRange(0, 100) < sh.handshake_fault_percent;
  ConfigKnobs ck;
  ck.quick_give_up = handshake_faults && *rc::gen::inRange(0, 100) < sh.give_up_percent;
  drawConfigs(s, ck);
  drawFaults(s, f);
  s.net.protect_handshake = !handshake_faults;
  s.workload = plan(drawIntents(s, w));
  limit_run(s);
  return s;
}

// rapidcheck scales integer ranges with its "size", which starts near 0; scenarios are drawn at the
// full size instead (small cases still come from shrinking).
template <class F>
auto draw_sized(F&& f) {
  return *rc::gen::resize(100, rc::gen::exec(std::forward<F>(f)));
}

}  // namespace mroce::props
