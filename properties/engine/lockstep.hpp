// Lockstep differential driver: on each side of a two-endpoint network, the executable model and the
// engine receive the same events at the same virtual times, and everything they emit is compared:
// every frame byte for byte (so every header field, in order), completions, connection events, post
// refusals, memory keys, the next timer deadline and the path views. The frames that travel are the
// model's (they are equal to the engine's while no divergence has been found).
//
// The network is the model unit tests' Pair: a fixed delay, and an optional filter that drops or
// edits frames.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "io/capture_io.hpp"
#include "codec/fast_codec.hpp"
#include "lockstep/engine_endpoint.hpp"
#include "model/endpoint.hpp"
#include "mroce/mroce.hpp"

namespace mroce::testing {

inline Address to_engine(const model::Address& a) { return lockstep::engine_address(a); }

// The harness adapter's conversion, with test-sized pools.
inline DeviceConfig to_engine(const model::Config& m) {
  DeviceConfig d = lockstep::engine_config_from(m);
  d.max_connections = 64;
  d.max_work_requests = 4096;
  d.max_receives = 4096;
  d.max_window_blocks = 1024;
  d.cq_size = 4096;
  return d;
}

inline const char* model_status(model::Status s) { return std::string_view(model::status_name(s)).data(); }

inline std::string frame_text(const std::vector<uint8_t>& f, uint16_t port) {
  fast::PacketView v;
  const fast::Error e = fast::decode(f.data(), uint32_t(f.size()), port, v);
  return e == fast::Error::None ? fast::canonical(v) : fast::canonical_error(e);
}

class Lockstep {
 public:
  using Filter = std::function<bool(int from, const ref::Packet&, std::vector<uint8_t>& frame)>;

  struct InFlight {
    model::Time at;
    uint64_t seq;
    int to;
    std::vector<uint8_t> frame;
    bool operator<(const InFlight& o) const { return at != o.at ? at < o.at : seq < o.seq; }
  };

  explicit Lockstep(model::Config a, model::Config b) {
    model::Config cfg[2] = {std::move(a), std::move(b)};
    for (int i = 0; i < 2; ++i) {
      s_[i].model = std::make_unique<model::Endpoint>(cfg[i]);
      s_[i].io = std::make_unique<io::CaptureIo>();
      s_[i].dev = Device::open(to_engine(cfg[i]), *s_[i].io, clock_);
      port_[i] = cfg[i].udp_port;
    }
  }

  model::Endpoint& model(int i) { return *s_[i].model; }
  Device& dev(int i) { return *s_[i].dev; }
  model::Time now() const { return now_; }
  bool diverged() const { return !divergence.empty(); }

  Filter filter;
  model::Time delay = 5;
  // Random impairments applied after the filter (connection-control frames are spared): percentages
  // of frames dropped, duplicated, marked CE (when ECT), and an extra delay of 0..jitter µs.
  struct Chaos {
    uint32_t drop_pct = 0, dup_pct = 0, ce_pct = 0, jitter = 0;
    uint64_t seed = 1;
  } chaos;
  std::string divergence;  // the first difference found, empty while in step
  uint64_t events = 0;
  uint64_t frames_compared = 0;
  std::vector<model::Completion> completions[2];
  std::vector<ref::Packet> sent[2];
  uint32_t conn[2] = {0, 0};
  std::vector<model::MemoryRegistered> keys[2];

  // Applies one event at now() to both implementations of side i and compares their outputs.
  void handle(int i, const model::Event& e) {
    if (diverged()) return;
    ++events;
    clock_.set(now_);
    Side& s = s_[i];
    const std::vector<model::Action> acts = s.model->handle(now_, e);
    std::optional<Result> post_result;
    std::optional<MemoryRegion> mr;
    std::visit(
        [&](const auto& ev) {
          using T = std::decay_t<decltype(ev)>;
          if constexpr (std::is_same_v<T, model::RegisterMemory>) {
            auto buf = std::make_unique<uint8_t[]>(ev.length ? ev.length : 1);
            std::fill(buf.get(), buf.get() + ev.length, 0);
            MemoryRegion r;
            post_result = s.dev->reg_mr(buf.get(), ev.length, ev.access, &r, ev.va);
            if (*post_result == Result::Ok) mr = r;
            s.buffers.push_back(std::move(buf));
          } else if constexpr (std::is_same_v<T, model::DeregisterMemory>) {
            s.dev->dereg_mr(ev.lkey);
          } else if constexpr (std::is_same_v<T, model::WriteMemory>) {
            if (uint8_t* p = s.dev->resolve(ev.va, ev.bytes.size())) std::copy(ev.bytes.begin(), ev.bytes.end(), p);
            s.dev->advance();
          } else if constexpr (std::is_same_v<T, model::Connect>) {
            uint32_t id = 0;
            s.dev->connect(to_engine(ev.peer), &id);
          } else if constexpr (std::is_same_v<T, model::PostSend>) {
            post_result = s.dev->post_send(ev.conn, ev.stream, ev.wr_id, Sge{ev.va, ev.length, ev.lkey});
          } else if constexpr (std::is_same_v<T, model::PostWrite>) {
            if (ev.immediate)
              post_result = s.dev->post_write_imm(ev.conn, ev.stream, ev.wr_id, Sge{ev.va, ev.length, ev.lkey},
                                                  ev.remote_va, ev.rkey, *ev.immediate);
            else
              post_result = s.dev->post_write(ev.conn, ev.stream, ev.wr_id, Sge{ev.va, ev.length, ev.lkey},
                                              ev.remote_va, ev.rkey);
          } else if constexpr (std::is_same_v<T, model::PostRead>) {
            post_result =
                s.dev->post_read(ev.conn, ev.stream, ev.wr_id, Sge{ev.va, ev.length, ev.lkey}, ev.remote_va, ev.rkey);
          } else if constexpr (std::is_same_v<T, model::PostRecv>) {
            post_result = s.dev->post_recv(ev.conn, ev.stream, ev.wr_id, Sge{ev.va, ev.length, ev.lkey});
          } else if constexpr (std::is_same_v<T, model::Close>) {
            s.dev->close(ev.conn, ev.abort);
          } else if constexpr (std::is_same_v<T, model::Receive>) {
            s.dev->input(ev.frame.data(), uint32_t(ev.frame.size()));
          } else {
            s.dev->advance();
          }
        },
        e);
    compare(i, e, acts, post_result, mr);
  }

  void run(model::Time until, std::function<bool()> done = nullptr) {
    while (now_ <= until && !diverged()) {
      if (done && queue_.empty() && done()) return;
      model::Time next = until + 1;
      if (!queue_.empty()) next = std::min(next, queue_.begin()->at);
      for (int i = 0; i < 2; ++i)
        if (wake_[i]) next = std::min(next, *wake_[i]);
      if (next > until) {
        now_ = until;
        return;
      }
      now_ = next;
      if (!queue_.empty() && queue_.begin()->at == now_) {
        InFlight f = *queue_.begin();
        queue_.erase(queue_.begin());
        handle(f.to, model::Receive{std::move(f.frame)});
        continue;
      }
      for (int i = 0; i < 2; ++i) {
        if (wake_[i] && *wake_[i] == now_) {
          wake_[i].reset();
          handle(i, model::AdvanceTime{});
        }
      }
    }
  }

  void setup(uint64_t bytes = 1 << 20) {
    for (int i = 0; i < 2; ++i)
      handle(i, model::RegisterMemory{0x10000, bytes,
                                      model::access::kLocalWrite | model::access::kRemoteWrite |
                                          model::access::kRemoteRead});
    handle(0, model::Connect{model(1).config().self});
    run(now_ + 1000, [&] { return conn[0] != 0 && conn[1] != 0; });
  }

  void fill(int side, uint64_t va, size_t n, uint8_t seed) {
    std::vector<uint8_t> bytes(n);
    for (size_t i = 0; i < n; ++i) bytes[i] = uint8_t(seed + i * 7 + (i >> 8));
    handle(side, model::WriteMemory{va, bytes});
  }

  // Compares the registered memory of both implementations of side i over [va, va + n).
  bool same_memory(int i, uint64_t va, size_t n) {
    auto m = s_[i].model->read_memory(va, n);
    const uint8_t* e = s_[i].dev->resolve(va, n);
    if (!m || !e) return !m && !e;
    return std::equal(m->begin(), m->end(), e);
  }

 private:
  struct Side {
    std::unique_ptr<model::Endpoint> model;
    std::unique_ptr<io::CaptureIo> io;
    std::unique_ptr<Device> dev;
    std::vector<std::unique_ptr<uint8_t[]>> buffers;
  };

  void diverge(int i, const model::Event& e, const std::string& what) {
    if (diverged()) return;
    std::ostringstream os;
    os << "side " << char('A' + i) << " at t=" << now_ << ", event #" << events << " (variant " << e.index()
       << "): " << what;
    divergence = os.str();
  }

  void compare(int i, const model::Event& e, const std::vector<model::Action>& acts, std::optional<Result> post_result,
               std::optional<MemoryRegion> mr) {
    Side& s = s_[i];
    // Frames.
    std::vector<std::vector<uint8_t>> eng = s.io->take();
    std::vector<const model::Transmit*> mod;
    for (const auto& a : acts)
      if (auto* t = std::get_if<model::Transmit>(&a)) mod.push_back(t);
    for (size_t k = 0; k < std::max(mod.size(), eng.size()); ++k) {
      if (k >= mod.size() || k >= eng.size() || mod[k]->frame != eng[k]) {
        std::ostringstream os;
        os << "frame " << k << " differs (model sent " << mod.size() << ", engine " << eng.size() << ")\n  model:  "
           << (k < mod.size() ? frame_text(mod[k]->frame, port_[1 - i]) : "(none)")
           << "\n  engine: " << (k < eng.size() ? frame_text(eng[k], port_[1 - i]) : "(none)");
        diverge(i, e, os.str());
        return;
      }
      ++frames_compared;
    }
    // Completions.
    WorkCompletion wc[256];
    std::vector<WorkCompletion> ewc;
    for (int n; (n = s.dev->poll_cq(wc, 256)) > 0;) ewc.insert(ewc.end(), wc, wc + n);
    std::vector<model::Completion> mwc;
    for (const auto& a : acts)
      if (auto* c = std::get_if<model::Completion>(&a)) mwc.push_back(*c);
    if (mwc.size() != ewc.size()) {
      std::ostringstream os;
      os << "completion count: model " << mwc.size() << ", engine " << ewc.size() << ";";
      for (const auto& m : mwc)
        os << " model(conn " << m.conn << " stream " << m.stream << " wr " << m.wr_id << " op "
           << model::work_op_name(m.op) << " " << model::status_name(m.status) << ")";
      for (const auto& g : ewc)
        os << " engine(conn " << g.conn << " stream " << g.stream << " wr " << g.wr_id << " " << status_name(g.status) << ")";
      diverge(i, e, os.str());
      return;
    }
    for (size_t k = 0; k < mwc.size(); ++k) {
      const auto& m = mwc[k];
      const auto& g = ewc[k];
      const bool same = m.conn == g.conn && m.stream == g.stream && m.wr_id == g.wr_id &&
                        uint8_t(m.op) == uint8_t(g.opcode) && uint8_t(m.status) == uint8_t(g.status) &&
                        m.byte_len == g.byte_len && m.immediate.has_value() == g.has_imm &&
                        (!g.has_imm || *m.immediate == g.imm);
      if (!same) {
        std::ostringstream os;
        os << "completion " << k << ": model wr " << m.wr_id << " " << model::status_name(m.status) << " len "
           << m.byte_len << "; engine wr " << g.wr_id << " " << status_name(g.status) << " len " << g.byte_len;
        diverge(i, e, os.str());
        return;
      }
      completions[i].push_back(m);
    }
    // Connection events.
    ConnEvent ev[64];
    std::vector<ConnEvent> eev;
    for (int n; (n = s.dev->poll_events(ev, 64)) > 0;) eev.insert(eev.end(), ev, ev + n);
    size_t k = 0;
    for (const auto& a : acts) {
      if (auto* u = std::get_if<model::ConnectionUp>(&a)) {
        if (k >= eev.size() || eev[k].kind != ConnEvent::Kind::Up || eev[k].conn != u->conn ||
            eev[k].initiator != u->initiator) {
          diverge(i, e, "ConnectionUp differs");
          return;
        }
        conn[i] = u->conn;
        ++k;
      } else if (auto* d = std::get_if<model::ConnectionDown>(&a)) {
        if (k >= eev.size() || eev[k].kind != ConnEvent::Kind::Down || eev[k].conn != d->conn ||
            uint8_t(eev[k].status) != uint8_t(d->status)) {
          diverge(i, e, "ConnectionDown differs");
          return;
        }
        ++k;
      }
    }
    if (k != eev.size()) {
      diverge(i, e, "engine emitted extra connection events");
      return;
    }
    // Registration and post refusals.
    for (const auto& a : acts) {
      if (auto* m = std::get_if<model::MemoryRegistered>(&a)) {
        if (!mr || mr->lkey != m->lkey || mr->rkey != m->rkey) {
          diverge(i, e, "memory keys differ");
          return;
        }
        keys[i].push_back(*m);
      }
    }
    if (post_result && std::holds_alternative<model::PostSend>(e) + std::holds_alternative<model::PostWrite>(e) +
                               std::holds_alternative<model::PostRead>(e) + std::holds_alternative<model::PostRecv>(e)) {
      bool rejected = false;
      for (const auto& a : acts) rejected = rejected || std::holds_alternative<model::PostRejected>(a);
      if (rejected != (*post_result != Result::Ok)) {
        diverge(i, e, std::string("post: model ") + (rejected ? "refused" : "accepted") + ", engine " +
                          result_name(*post_result));
        return;
      }
    }
    // Next deadline.
    std::optional<model::Time> mw;
    for (const auto& a : acts)
      if (auto* w = std::get_if<model::Wakeup>(&a)) mw = w->at;
    const std::optional<Time> ew = s.dev->next_deadline();
    if (mw != ew) {
      diverge(i, e, "next deadline: model " + (mw ? std::to_string(*mw) : "none") + ", engine " +
                        (ew ? std::to_string(*ew) : "none"));
      return;
    }
    wake_[i] = mw;
    // Path views and connection state.
    for (uint32_t c : s.model->connections()) {
      if (s.model->connection_state(c).has_value() !=
              s.dev->connection_state(c).has_value() ||
          (s.model->connection_state(c) && uint8_t(*s.model->connection_state(c)) != uint8_t(*s.dev->connection_state(c)))) {
        diverge(i, e, "connection state of " + std::to_string(c));
        return;
      }
      if (s.model->path_count(c) != s.dev->path_count(c)) {
        diverge(i, e, "path count of " + std::to_string(c));
        return;
      }
      if (s.model->outstanding_work(c) != s.dev->outstanding_work(c)) {
        diverge(i, e, "outstanding work of " + std::to_string(c) + ": model " +
                          std::to_string(s.model->outstanding_work(c)) + ", engine " +
                          std::to_string(s.dev->outstanding_work(c)));
        return;
      }
      for (uint16_t p = 0; p < s.model->path_count(c); ++p) {
        auto mv = s.model->path_view(c, p);
        auto ev2 = s.dev->path_info(c, p);
        if (mv.has_value() != ev2.has_value()) {
          diverge(i, e, "path view presence");
          return;
        }
        if (!mv) continue;
        const bool same = uint8_t(mv->state) == uint8_t(ev2->state) && mv->route == ev2->route &&
                          mv->snxt == ev2->snxt && mv->suna == ev2->suna && mv->in_flight == ev2->in_flight &&
                          mv->cwnd == ev2->cwnd && mv->srtt == ev2->srtt && mv->rto == ev2->rto &&
                          mv->retransmissions == ev2->retransmissions && mv->repaths == ev2->repaths &&
                          mv->packets_sent == ev2->packets_sent;
        if (!same) {
          std::ostringstream os;
          os << "path " << p << " of conn " << c << ": model state " << int(mv->state) << " route " << mv->route
             << " snxt " << mv->snxt << " suna " << mv->suna << " inflight " << mv->in_flight << " cwnd " << mv->cwnd
             << " srtt " << mv->srtt << " rto " << mv->rto << "; engine state " << int(ev2->state) << " route "
             << ev2->route << " snxt " << ev2->snxt << " suna " << ev2->suna << " inflight " << ev2->in_flight
             << " cwnd " << ev2->cwnd << " srtt " << ev2->srtt << " rto " << ev2->rto;
          diverge(i, e, os.str());
          return;
        }
      }
    }
    // Fair shares.
    {
      auto ms = s.model->rate_shares();
      uint32_t ids[64], sh[64];
      const int n = s.dev->rate_shares(ids, sh, 64);
      std::map<uint32_t, uint32_t> es;
      for (int q = 0; q < n; ++q) es[ids[q]] = sh[q];
      if (ms != es) {
        diverge(i, e, "rate shares differ");
        return;
      }
    }
    // The frames go out (the model's; they are the engine's too).
    for (const auto* t : mod) {
      sent[i].push_back(t->packet);
      std::vector<uint8_t> frame = t->frame;
      if (filter && !filter(i, t->packet, frame)) continue;
      const bool control = uint8_t(t->packet.opcode) >= 0x20;
      model::Time extra = 0;
      int copies = 1;
      if (!control && (chaos.drop_pct || chaos.dup_pct || chaos.ce_pct || chaos.jitter)) {
        if (rnd() % 100 < chaos.drop_pct) continue;
        if (rnd() % 100 < chaos.dup_pct) copies = 2;
        if (rnd() % 100 < chaos.ce_pct && t->packet.ecn != 0) {
          ref::Packet q = t->packet;
          q.ecn = 3;
          auto d = ref::decode(frame);
          std::vector<uint8_t> payload(frame.begin() + d.packet.payload_offset,
                                       frame.begin() + d.packet.payload_offset + d.packet.payload_len);
          frame = ref::encode(q, payload);
        }
        if (chaos.jitter) extra = rnd() % (chaos.jitter + 1);
      }
      for (int c = 0; c < copies; ++c)
        queue_.insert(InFlight{now_ + delay + extra + model::Time(c), seq_++, 1 - i, frame});
    }
  }

  uint64_t rnd() {
    uint64_t& x = chaos.seed;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  }

  io::ManualClock clock_;
  Side s_[2];
  uint16_t port_[2] = {4793, 4793};
  std::multiset<InFlight> queue_;
  uint64_t seq_ = 0;
  model::Time now_ = 0;
  std::optional<model::Time> wake_[2];
};

}  // namespace mroce::testing
