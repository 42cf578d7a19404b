// The public Device (mroce.hpp): a facade that forwards every call to the Engine, plus the API's
// name functions and the memory sizes it reports.
#include "engine/engine.hpp"
#include "mroce/testing.hpp"

namespace mroce {

using engine::Engine;

const char* status_name(Status s) noexcept {
  switch (s) {
    case Status::Success:
      return "Success";
    case Status::LocalLength:
      return "LocalLength";
    case Status::RemoteAccess:
      return "RemoteAccess";
    case Status::RemoteInvalid:
      return "RemoteInvalid";
    case Status::RemoteLength:
      return "RemoteLength";
    case Status::RnrRetryExceeded:
      return "RnrRetryExceeded";
    case Status::ConnectionFailed:
      return "ConnectionFailed";
    case Status::Flushed:
      return "Flushed";
    case Status::Canceled:
      return "Canceled";
    case Status::LocalProtection:
      return "LocalProtection";
  }
  return "UNKNOWN";
}

const char* wc_opcode_name(WcOpcode op) noexcept {
  switch (op) {
    case WcOpcode::Send:
      return "Send";
    case WcOpcode::Write:
      return "Write";
    case WcOpcode::WriteImm:
      return "WriteImm";
    case WcOpcode::Read:
      return "Read";
    case WcOpcode::Recv:
      return "Recv";
  }
  return "UNKNOWN";
}

const char* result_name(Result r) noexcept {
  switch (r) {
    case Result::Ok:
      return "Ok";
    case Result::NotConnected:
      return "NotConnected";
    case Result::InvalidStream:
      return "InvalidStream";
    case Result::MessageTooLong:
      return "MessageTooLong";
    case Result::LocalProtection:
      return "LocalProtection";
    case Result::NoResources:
      return "NoResources";
    case Result::InvalidArgument:
      return "InvalidArgument";
    case Result::UnknownKey:
      return "UnknownKey";
    case Result::Busy:
      return "Busy";
  }
  return "UNKNOWN";
}

const char* path_state_name(PathState s) noexcept {
  switch (s) {
    case PathState::Active:
      return "ACTIVE";
    case PathState::Suspect:
      return "SUSPECT";
    case PathState::Failed:
      return "FAILED";
  }
  return "UNKNOWN";
}

const char* conn_state_name(ConnState s) noexcept {
  switch (s) {
    case ConnState::Connecting:
      return "Connecting";
    case ConnState::Established:
      return "Established";
    case ConnState::Closing:
      return "Closing";
    case ConnState::Closed:
      return "Closed";
    case ConnState::Failed:
      return "Failed";
  }
  return "UNKNOWN";
}

uint64_t MemoryUsage::connection_base_bytes() noexcept { return sizeof(engine::Conn); }
uint64_t MemoryUsage::per_path_bytes() noexcept {
  return sizeof(engine::PathTx) + sizeof(engine::PathRx) + 8;  // + the path's deadline
}
uint64_t MemoryUsage::per_stream_bytes() noexcept { return sizeof(engine::SendStream) + sizeof(engine::RecvStream); }

std::unique_ptr<Device> Device::open(const DeviceConfig& config, io::PacketIo& io, const io::Clock& clock,
                                     Result* err) {
  auto e = std::make_unique<Engine>(config, io, clock);
  if (!e->ok()) {
    if (err) *err = Result::InvalidArgument;
    return nullptr;
  }
  if (err) *err = Result::Ok;
  return std::unique_ptr<Device>(new Device(std::move(e)));
}

Device::Device(std::unique_ptr<Engine> e) : e_(std::move(e)) {}
Device::~Device() = default;

Result Device::reg_mr(void* addr, uint64_t length, uint32_t access, MemoryRegion* out, std::optional<uint64_t> iova,
                      uint32_t pd) {
  return e_->reg_mr(addr, length, access, out, iova, pd);
}
Result Device::dereg_mr(uint32_t lkey) { return e_->dereg_mr(lkey); }
Result Device::alloc_pd(uint32_t* pd) { return e_->alloc_pd(pd); }
Result Device::dealloc_pd(uint32_t pd) { return e_->dealloc_pd(pd); }
Result Device::connect(const Address& peer, uint32_t* conn, const ConnParams* offer, uint32_t pd) {
  return e_->connect(peer, conn, offer, pd);
}
Result Device::listen(bool on, uint32_t pd) { return e_->listen(on, pd); }
Result Device::close(uint32_t conn, bool abort) { return e_->close(conn, abort); }
Result Device::post_send(uint32_t conn, uint16_t stream, uint64_t wr_id, const Sge& local) {
  return e_->post(WcOpcode::Send, conn, stream, wr_id, local, 0, 0, false, 0);
}
Result Device::post_write(uint32_t conn, uint16_t stream, uint64_t wr_id, const Sge& local, uint64_t remote_addr,
                          uint32_t rkey) {
  return e_->post(WcOpcode::Write, conn, stream, wr_id, local, remote_addr, rkey, false, 0);
}
Result Device::post_write_imm(uint32_t conn, uint16_t stream, uint64_t wr_id, const Sge& local, uint64_t remote_addr,
                              uint32_t rkey, uint32_t imm) {
  return e_->post(WcOpcode::WriteImm, conn, stream, wr_id, local, remote_addr, rkey, true, imm);
}
Result Device::post_read(uint32_t conn, uint16_t stream, uint64_t wr_id, const Sge& local_sink, uint64_t remote_addr,
                         uint32_t rkey) {
  return e_->post(WcOpcode::Read, conn, stream, wr_id, local_sink, remote_addr, rkey, false, 0);
}
Result Device::post_recv(uint32_t conn, uint16_t stream, uint64_t wr_id, const Sge& buffer) {
  return e_->post_recv(conn, stream, wr_id, buffer);
}
int Device::poll_cq(WorkCompletion* out, int max) noexcept { return e_->poll_cq(out, max); }
int Device::poll_events(ConnEvent* out, int max) noexcept { return e_->poll_events(out, max); }
int Device::progress() noexcept { return e_->progress(); }
std::optional<Time> Device::next_deadline() const noexcept { return e_->next_deadline(); }
void testing::DeviceHooks::advance(Device& d) noexcept { d.e_->advance(); }
void testing::DeviceHooks::input(Device& d, const uint8_t* frame, uint32_t len) noexcept { d.e_->input(frame, len); }
void testing::DeviceHooks::record_output_order(Device& d, bool on) noexcept { d.e_->record_output_order(on); }
uint32_t testing::DeviceHooks::canceled_rsn_longest_probe(const Device& d) noexcept {
  return d.e_->canceled_longest_probe();
}
size_t testing::DeviceHooks::take_output_order(Device& d, uint8_t* kinds, size_t max) noexcept {
  return d.e_->take_output_order(kinds, max);
}
std::optional<ConnState> Device::connection_state(uint32_t conn) const noexcept { return e_->connection_state(conn); }
std::optional<PathInfo> Device::path_info(uint32_t conn, uint16_t path) const noexcept {
  return e_->path_info(conn, path);
}
uint16_t Device::path_count(uint32_t conn) const noexcept { return e_->path_count(conn); }
uint16_t Device::stream_count(uint32_t conn) const noexcept { return e_->stream_count(conn); }
uint16_t Device::max_payload(uint32_t conn) const noexcept { return e_->max_payload(conn); }
int Device::rate_shares(uint32_t* conns, uint32_t* shares, int max) const noexcept {
  return e_->rate_shares(conns, shares, max);
}
size_t Device::outstanding_work(uint32_t conn) const noexcept { return e_->outstanding_work(conn); }
size_t Device::connections(uint32_t* out, size_t max) const noexcept { return e_->connections(out, max); }
uint8_t* Device::resolve(uint64_t iova, uint64_t len) const noexcept { return e_->resolve(iova, len); }
const Counters& Device::counters() const noexcept { return e_->counters(); }
MemoryUsage Device::memory_usage() const noexcept { return e_->memory_usage(); }
const DeviceConfig& Device::config() const noexcept { return e_->config(); }

}  // namespace mroce
