// The connection table: connection slots, the maps from a local connection ID and from a responder's
// (peer, peer's SCID) to a slot [R-CONN-4], peers (one frame template per peer address, shared by
// its connections), and the FIFO of closed and failed connections whose slots are recycled oldest
// first.
#pragma once

#include <cstdint>

#include "codec/fast_codec.hpp"
#include "core/hash_map.hpp"
#include "core/pool.hpp"
#include "engine/conn.hpp"
#include "engine/secrets.hpp"
#include "mroce/mroce.hpp"

namespace mroce::engine {

class ConnTable {
 public:
  void init(const DeviceConfig& cfg);

  Conn* find(uint32_t id) noexcept {
    const uint32_t s = id_map_.find(id);
    return s == kNone ? nullptr : &conns_[s];
  }
  const Conn* find(uint32_t id) const noexcept {
    const uint32_t s = id_map_.find(id);
    return s == kNone ? nullptr : &conns_[s];
  }
  Conn& operator[](uint32_t slot) noexcept { return conns_[slot]; }
  const Conn& operator[](uint32_t slot) const noexcept { return conns_[slot]; }
  uint32_t slot(const Conn& c) const noexcept { return uint32_t(&c - &conns_[0]); }
  uint32_t capacity() const noexcept { return conns_.capacity(); }

  // A free slot, or kNone (then the caller may recycle a dead connection and retry).
  uint32_t alloc_slot() noexcept { return conns_.alloc(); }
  // Gives slot s the next connection ID and its peer's entry; false (slot freed) without a peer entry.
  // The ID is unpredictable [R-CONN-2] (from `secrets`), unless the counting test option is set.
  bool open(uint32_t s, const Address& peer, bool initiator, Secrets& secrets) noexcept;
  // Undoes open() of a connection that never got set up (its ID is given out again).
  void undo_open(uint32_t s) noexcept;
  // Forgets the connection in slot s and frees the slot.
  void free(uint32_t s) noexcept;

  // Responder connections by (peer, peer's SCID): a duplicate CONNECT finds its connection [R-CONN-4].
  uint32_t find_responder(const Address& from, uint32_t scid) const noexcept {
    const uint32_t pi = find_peer(from);
    return pi == kNone ? kNone : resp_map_.find(responder_key(pi, scid));
  }
  void map_responder(Conn& c) noexcept {
    resp_map_.insert(responder_key(c.peer, c.peer_id), slot(c));
    c.mapped_responder = true;
  }

  const Peer& peer(uint32_t i) const noexcept { return peers_[i]; }

  // [R-SEC-12] Responder connections whose initiator has sent nothing since ACCEPT, per source
  // address: a CONNECT from a source at its limit is refused.
  uint32_t unconfirmed_from(const Address& from) const noexcept {
    const uint32_t pi = find_peer(from);
    return pi == kNone ? 0 : peers_[pi].unconfirmed;
  }
  void set_unconfirmed(Conn& c, bool unconfirmed) noexcept {
    if (c.hs.unconfirmed == unconfirmed) return;
    c.hs.unconfirmed = unconfirmed;
    if (unconfirmed)
      ++peers_[c.peer].unconfirmed;
    else
      --peers_[c.peer].unconfirmed;
  }

  // Closed and failed connections, kept (to answer a late DISCONNECT or a duplicate CONNECT) until
  // their slot is needed.
  void queue_dead(Conn& c) noexcept;
  uint32_t pop_dead() noexcept;

  uint64_t bytes() const noexcept;

 private:
  static uint64_t responder_key(uint32_t peer, uint32_t scid) noexcept { return uint64_t(peer) << 32 | scid; }
  uint32_t find_peer(const Address& a) const noexcept;
  uint32_t peer_for(const Address& a) noexcept;
  void release_peer(uint32_t i) noexcept;
  uint32_t new_id(Secrets& secrets) noexcept;

  DeviceConfig cfg_;
  core::Pool<Conn> conns_;
  core::Pool<Peer> peers_;
  core::HashMap id_map_;       // local connection ID -> slot
  core::HashMap resp_map_;     // (peer, peer's SCID) -> slot, responder connections [R-CONN-4]
  core::HashMap peer_map_;     // address hash -> peer
  uint32_t next_conn_id_ = 1;  // with the counting-ID test option (DeviceConfig::first_conn_id)
  uint32_t dead_head_ = kNone, dead_tail_ = kNone;
};

// The frame header fields of a connection's peer (addresses, DSCP/ECN, TTL, UDP port).
fast::PathConfig path_config(const DeviceConfig& cfg, const Address& peer) noexcept;

}  // namespace mroce::engine
