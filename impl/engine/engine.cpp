// The Engine: construction (every pool, map and queue allocated here, never on the data path), memory
// registration and the checks of a post (region_table.hpp), and observation (connection and path
// views, fair shares, memory). See engine.hpp for the layout.
#include "engine/engine.hpp"

#include <algorithm>

namespace mroce::engine {

// ---- construction ---------------------------------------------------------------------------------

Engine::Engine(const DeviceConfig& cfg, io::PacketIo& io, const io::Clock& clock)
    : cfg_(cfg), io_(io), clock_(clock), secrets_(cfg.random_seed) {
  if (!secrets_.ok() || cfg.max_connections == 0 || cfg.burst == 0 || !valid_offer(cfg.offer)) return;
  // [R-RTO-3] clamps the RTO into [RTO_MIN, RTO_MAX]: an empty range, or a zero RTO_MIN or RTO_INIT
  // (a timer due at once, re-armed at once: a livelock), is a bad configuration, not a run.
  if (cfg.rto_min_us == 0 || cfg.rto_init_us == 0 || cfg.rto_min_us > cfg.rto_max_us) return;
  // The shares of [R-SEC-11] and [R-SEC-12]: at most the pool; 0 picks the default. A canceled RSN's
  // key holds a connection slot in 24 bits (canceled_key).
  if (cfg.max_receives_per_conn > cfg.max_receives || cfg.max_work_requests_per_conn > cfg.max_work_requests ||
      cfg.max_unconfirmed_per_source > cfg.max_connections || cfg.max_connections > (1u << 24))
    return;
  auto share = [](uint32_t given, uint32_t pool) { return given ? given : std::min(pool, std::max(pool / 8, 16u)); };
  recv_limit_ = share(cfg.max_receives_per_conn, cfg.max_receives);
  canceled_limit_ = std::max(1u, recv_limit_ / 2);  // the other half stays for the application's posts
  wr_limit_ = share(cfg.max_work_requests_per_conn, cfg.max_work_requests);
  unconfirmed_limit_ =
      cfg.max_unconfirmed_per_source ? cfg.max_unconfirmed_per_source : std::max(1u, cfg.max_connections / 2);
  regions_.init(cfg.max_regions, secrets_);
  pds_.assign(1, true);
  conns_.init(cfg);
  msgs_.init(cfg.max_work_requests);
  recvs_.init(cfg.max_receives);
  canceled_.init(cfg.max_receives);
  // The scrambling of canceled_key comes from the device's secret, like every unpredictable choice.
  auto secret64 = [&] {
    const uint64_t hi = secrets_.next32(Secrets::Purpose::CanceledRsnKey);
    return hi << 32 | secrets_.next32(Secrets::Purpose::CanceledRsnKey);
  };
  canceled_mask_ = secret64();
  canceled_mult_ = secret64() | 1;  // odd: a bijection, so the keys stay unique
  blocks_.init(cfg.max_window_blocks);
  wheel_.init(cfg.max_connections);
  touched_.reset(new uint32_t[cfg.max_connections]);
  deferred_.reset(new uint32_t[cfg.max_connections]);
  tx_waiting_.reset(new uint32_t[cfg.max_connections]);
  tx_more_.reset(new uint32_t[cfg.max_connections]);
  expired_.reset(new uint32_t[cfg.max_connections]);
  scratch_.reset(new uint32_t[cfg.max_connections]);
  fair_.init(cfg, conns_, scratch_.get());
  cq_.init(cfg.cq_size);
  events_.init(cfg.event_queue_size);
  frames_.init(io, cfg.burst, counters_, output_log_);
  rxq_.reset(new io::PacketBuf*[cfg.burst]);
  listening_ = cfg.listening;
  now_ = clock.now_us();
  last_transmit_ = now_;
  prealloc_bytes_ = conns_.bytes() + uint64_t(cfg.max_work_requests) * (sizeof(Msg) + 4) +
                    uint64_t(cfg.max_receives) * (sizeof(Recv) + 4) + canceled_.bytes() +
                    uint64_t(cfg.max_window_blocks) * (sizeof(Block) + 4) + cq_.bytes() + events_.bytes();
  ok_ = true;
}

Engine::~Engine() = default;

// ---- memory registration (region_table.hpp) -------------------------------------------------------

Result Engine::reg_mr(void* addr, uint64_t length, uint32_t access, MemoryRegion* out, std::optional<uint64_t> iova,
                      uint32_t pd) {
  if (pd >= pds_.size() || !pds_[pd]) return Result::InvalidArgument;
  const uint64_t at = iova ? *iova : reinterpret_cast<uint64_t>(addr);
  return as_event([&] { return regions_.reg(addr, length, access, at, pd, out); });
}

Result Engine::dereg_mr(uint32_t lkey) {
  return as_event([&] { return regions_.dereg(lkey); });
}

// ---- protection domains [R-MEM-5] -------------------------------------------------------------------
// A PD is a local handle, never on the wire: the lowest free ID is reused (a PD is freed only when no
// region, connection or listener is in it, so nothing can confuse an old PD with its successor).

Result Engine::alloc_pd(uint32_t* pd) {
  if (!pd) return Result::InvalidArgument;
  uint32_t id = 1;
  while (id < pds_.size() && pds_[id]) ++id;
  if (id == pds_.size()) pds_.push_back(false);
  pds_[id] = true;
  *pd = id;
  return Result::Ok;
}

Result Engine::dealloc_pd(uint32_t pd) {
  if (pd == 0 || pd >= pds_.size() || !pds_[pd]) return Result::InvalidArgument;
  bool used = regions_.pd_in_use(pd) || listen_pd_ == pd;
  for (uint32_t s = 0; s < conns_.capacity() && !used; ++s) {
    const Conn& c = conns_[s];  // a closed or failed connection waiting to be recycled uses nothing
    used = c.in_use && c.pd == pd && c.state != ConnState::Closed && c.state != ConnState::Failed;
  }
  if (used) return Result::Busy;
  pds_[pd] = false;
  return Result::Ok;
}

Result Engine::listen(bool on, uint32_t pd) {
  if (pd >= pds_.size() || !pds_[pd]) return Result::InvalidArgument;
  listening_ = on;
  listen_pd_ = pd;
  return Result::Ok;
}

// The checks of a post, in the model's order; *region: the buffer's region when Ok.
Result Engine::check_post(const Conn* cp, uint16_t stream, const Sge& buf, bool need_write,
                          const Region** region) const noexcept {
  if (!cp || cp->state != ConnState::Established || cp->closing.requested) return Result::NotConnected;
  if (stream >= cp->streams) return Result::InvalidStream;
  if (buf.length > kMaxMessage) return Result::MessageTooLong;
  *region = regions_.local_buffer(buf, need_write, cp->pd);
  if (!*region) return Result::LocalProtection;  // [R-MEM-4], [R-MEM-5]
  return Result::Ok;
}

// ---- observation ----------------------------------------------------------------------------------

std::optional<ConnState> Engine::connection_state(uint32_t conn) const noexcept {
  const Conn* c = conns_.find(conn);
  if (!c) return std::nullopt;
  return c->state;
}

std::optional<PathInfo> Engine::path_info(uint32_t conn, uint16_t path) const noexcept {
  const Conn* c = conns_.find(conn);
  if (!c || !c->tx || path >= c->paths || c->state == ConnState::Connecting) return std::nullopt;
  const PathTx& t = c->tx[path];
  PathInfo v;
  v.state = t.state;
  v.route = t.route;
  v.snxt = t.snxt;
  v.suna = t.suna;
  v.in_flight = t.block == kNone ? 0 : blocks_[t.block].n_inflight;
  v.cwnd = t.cwnd;
  v.srtt = t.srtt;
  v.rto = t.rto_current;
  v.retransmissions = t.retx_by_cause.total();
  v.retx_by_cause = t.retx_by_cause;
  v.repaths = t.repaths;
  v.packets_sent = t.packets_sent;
  v.home_returns = t.home_returns;
  v.rate_ceiling_mbps = rate_limited(*c, now_) ? c->rate.ceiling : 0;
  v.credit_bits = credit_at(*c, now_);
  return v;
}

uint16_t Engine::path_count(uint32_t conn) const noexcept {
  const Conn* c = conns_.find(conn);
  return c ? c->paths : 0;
}
uint16_t Engine::stream_count(uint32_t conn) const noexcept {
  const Conn* c = conns_.find(conn);
  return c ? c->streams : 0;
}
uint16_t Engine::max_payload(uint32_t conn) const noexcept {
  const Conn* c = conns_.find(conn);
  return c ? c->max_payload : 0;
}

int Engine::rate_shares(uint32_t* ids, uint32_t* shares, int max) const noexcept {
  return fair_.shares(ids, shares, max);
}

size_t Engine::outstanding_work(uint32_t conn) const noexcept {
  const Conn* c = conns_.find(conn);
  return c ? size_t(c->send.open_wrs) + c->open_recvs : 0;
}

size_t Engine::connections(uint32_t* out, size_t max) const noexcept {
  size_t n = 0;
  for (uint32_t s = 0; s < conns_.capacity(); ++s)
    if (conns_[s].in_use) scratch_[n++] = conns_[s].id;
  std::sort(scratch_.get(), scratch_.get() + n);
  for (size_t i = 0; i < n && i < max; ++i) out[i] = scratch_[i];
  return n;
}

MemoryUsage Engine::memory_usage() const noexcept {
  MemoryUsage u;
  u.preallocated_bytes = prealloc_bytes_;
  for (uint32_t s = 0; s < conns_.capacity(); ++s)
    if (conns_[s].in_use) {
      ++u.connections;
      u.connection_bytes += sizeof(Conn) + conns_[s].mem_bytes;
    }
  return u;
}

}  // namespace mroce::engine
