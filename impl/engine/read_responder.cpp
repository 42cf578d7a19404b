// The read responder [R-PLC-4]: a READ_REQ accepted by the receiver becomes a response job, queued in
// acceptance order and sent by the send window as one more stream [R-CC-9] (the round-robin slot after
// the connection's streams); its data is read from registered memory when each segment is sent.
#include "engine/engine.hpp"

namespace mroce::engine {

// A response job for a READ_REQ about to be accepted; without one (the pool is empty: the connection's
// share was checked with the content, [R-SEC-11]) the request is left unreceived (the requester
// resends it).
uint32_t Engine::reserve_response(Conn& c) noexcept {
  const uint32_t job = alloc_msg(c);
  if (job == kNone) ++counters_.rejects_no_resources;
  return job;
}

// [R-PLC-4]: answer as one more stream, in acceptance order.
void Engine::queue_response(Conn& c, uint32_t job, const View& v, const Region& region) noexcept {
  Msg& m = msgs_[job];
  m.flags = kResponse;
  m.stream = v.stream_id();
  m.msn = v.msn();
  m.local_va = v.remote_va();
  m.length = v.msg_length();
  m.region = regions_.slot(region);  // [R-MEM-6]: the bytes come from the region the rkey named
  m.region_gen = region.generation;
  m.total_segments = segment_count(m.length, c.max_payload);
  append_msg(c.send.responses_head, c.send.responses_tail, job);
  c.send.new_data_slots.put(c.streams, true);
}

// The response whose next segment goes out now.
uint32_t Engine::next_response(Conn& c) noexcept { return c.send.responses_head; }

// After a segment of `job` was taken: a response with every segment taken leaves the queue and lives
// on through its PSN records.
void Engine::response_segment_taken(Conn& c, uint32_t job) noexcept {
  const Msg& m = msgs_[job];
  if (m.next_segment < m.total_segments) return;
  c.send.responses_head = m.next;
  if (c.send.responses_head == kNone) {
    c.send.responses_tail = kNone;
    c.send.new_data_slots.put(c.streams, false);
  }
  retire_msg(job);
}

// Abort, failure, close: the queued responses are dropped.
void Engine::drop_responses(Conn& c) noexcept {
  while (c.send.responses_head != kNone) {
    const uint32_t m = c.send.responses_head;
    c.send.responses_head = msgs_[m].next;
    retire_msg(m);
  }
  c.send.responses_tail = kNone;
  if (c.send.new_data_slots.w) c.send.new_data_slots.put(c.streams, false);
}

}  // namespace mroce::engine
