// The connection table (see conn_table.hpp).
#include "engine/conn_table.hpp"

#include <algorithm>

namespace mroce::engine {

namespace {

uint64_t address_key(const Address& a) noexcept {
  // FNV-1a over the address bytes, then a 64-bit mix.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint8_t b) {
    h ^= b;
    h *= 1099511628211ull;
  };
  for (uint8_t b : a.mac) mix(b);
  mix(a.ipv6 ? 1 : 0);
  for (uint8_t b : a.ip) mix(b);
  h ^= h >> 29;
  return h;
}

uint32_t be32(const uint8_t* p) noexcept {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}

}  // namespace

fast::PathConfig path_config(const DeviceConfig& cfg, const Address& peer) noexcept {
  fast::PathConfig pc;
  pc.eth_dst = peer.mac;
  pc.eth_src = cfg.self.mac;
  pc.ipv6 = cfg.self.ipv6;
  pc.ipv4_src = be32(cfg.self.ip.data());
  pc.ipv4_dst = be32(peer.ip.data());
  pc.ipv6_src = cfg.self.ip;
  pc.ipv6_dst = peer.ip;
  pc.dscp_data = cfg.dscp_data;  // [R-ENC-10]
  pc.dscp_ctrl = cfg.dscp_control;
  pc.ecn_data = 2;              // [R-ENC-9] ECT(0) on data
  pc.ecn_ctrl = 0;              //           Not-ECT otherwise
  pc.ttl = 64;                  // [R-ENC-11]
  pc.udp_dport = cfg.udp_port;  // [R-ENC-5]
  pc.ipv4_id = 0;
  pc.ipv4_df = true;  // [R-ENC-3]
  return pc;
}

void ConnTable::init(const DeviceConfig& cfg) {
  cfg_ = cfg;
  conns_.init(cfg.max_connections);
  peers_.init(cfg.max_peers);
  id_map_.init(cfg.max_connections);
  resp_map_.init(cfg.max_connections);
  peer_map_.init(cfg.max_peers);
  next_conn_id_ = std::max<uint32_t>(1, cfg.first_conn_id.value_or(1));
}

uint64_t ConnTable::bytes() const noexcept {
  return uint64_t(cfg_.max_connections) * (sizeof(Conn) + 4 * sizeof(uint32_t) + 32) +
         uint64_t(cfg_.max_peers) * (sizeof(Peer) + 4) + id_map_.bytes() + resp_map_.bytes() + peer_map_.bytes();
}

uint32_t ConnTable::find_peer(const Address& a) const noexcept {
  const uint64_t key = address_key(a);
  const uint32_t i = peer_map_.find(key);
  if (i != kNone && peers_[i].addr == a) return i;
  if (i == kNone) return kNone;
  // A 64-bit key collision: fall back to a scan (never seen in practice).
  for (uint32_t k = 0; k < peers_.capacity(); ++k)
    if (peers_[k].refs && peers_[k].addr == a) return k;
  return kNone;
}

uint32_t ConnTable::peer_for(const Address& a) noexcept {
  const uint32_t found = find_peer(a);
  if (found != kNone) return found;
  const uint32_t i = peers_.alloc();
  if (i == kNone) return kNone;
  Peer& p = peers_[i];
  p.addr = a;
  p.tpl = fast::FrameTemplate(path_config(cfg_, a));
  p.key = address_key(a);
  p.refs = 0;
  if (peer_map_.find(p.key) == kNone) peer_map_.insert(p.key, i);
  return i;
}

void ConnTable::release_peer(uint32_t i) noexcept {
  Peer& p = peers_[i];
  if (--p.refs) return;
  if (peer_map_.find(p.key) == i) peer_map_.erase(p.key);
  peers_.release(i);
}

// A fresh SCID [R-CONN-2]: unpredictable, non-zero [R-HDR-26], and naming no connection of this end
// (closed ones included, until their slot is recycled).
uint32_t ConnTable::new_id(Secrets& secrets) noexcept {
  if (cfg_.first_conn_id) return next_conn_id_++;
  for (;;) {
    const uint32_t id = secrets.next32(Secrets::Purpose::ConnId);
    if (id != 0 && id_map_.find(id) == kNone) return id;
  }
}

bool ConnTable::open(uint32_t s, const Address& peer, bool initiator, Secrets& secrets) noexcept {
  const uint32_t pi = peer_for(peer);
  if (pi == kNone) {
    conns_.release(s);
    return false;
  }
  ++peers_[pi].refs;
  Conn& c = conns_[s];
  c.in_use = true;
  c.id = new_id(secrets);
  c.peer = pi;
  c.initiator = initiator;
  id_map_.insert(c.id, s);
  return true;
}

void ConnTable::undo_open(uint32_t s) noexcept {
  free(s);
  if (cfg_.first_conn_id) --next_conn_id_;
}

void ConnTable::free(uint32_t s) noexcept {
  Conn& c = conns_[s];
  id_map_.erase(c.id);
  if (c.mapped_responder) resp_map_.erase(responder_key(c.peer, c.peer_id));
  release_peer(c.peer);
  c.mem.reset();
  c.in_use = false;
  conns_.release(s);
}

void ConnTable::queue_dead(Conn& c) noexcept {
  const uint32_t s = slot(c);
  c.dead_next = kNone;
  if (dead_tail_ == kNone)
    dead_head_ = s;
  else
    conns_[dead_tail_].dead_next = s;
  dead_tail_ = s;
}

uint32_t ConnTable::pop_dead() noexcept {
  if (dead_head_ == kNone) return kNone;
  const uint32_t s = dead_head_;
  dead_head_ = conns_[s].dead_next;
  if (dead_head_ == kNone) dead_tail_ = kNone;
  return s;
}

}  // namespace mroce::engine
