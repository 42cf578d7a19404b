#include "fi/rma.hpp"

#include <cstring>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "fi/channel.hpp"
#include "fi/endpoint.hpp"
#include "fi/info.hpp"
#include "fi/provider.hpp"

namespace mroce::fi {

struct RmaOp {
  Device* device = nullptr;
  uint64_t id = 0;
  const void* owner = nullptr;  // the endpoint; nullptr once it closed
  CompletionQueue* cq = nullptr;
  RmaRequest request;
  std::vector<uint8_t> copy;  // injected bytes (or one byte to register for a zero-length op)
  MemoryRegion mr;
  bool posted = false;
};

namespace {

// Operations by (device, id); wr_id = kRmaWrBit | id (channel.cpp keeps bits 63 and 62).
std::map<std::pair<Device*, uint64_t>, std::unique_ptr<RmaOp>> g_ops;
uint64_t g_next_id = 1;

// The engine's (iova, rkey) of the application's (addr, key): false when no region can match.
bool remote_target(const RmaRequest& q, uint64_t* iova, uint32_t* rkey) {
  *rkey = static_cast<uint32_t>(q.key);
  if (!q.offsets) {
    *iova = q.addr;
    return (q.key >> 32) == 0;  // no engine key is this wide
  }
  // Offset mode: the key's upper half is the region's iova window (mr.cpp).
  *iova = (q.key & ~uint64_t{0xffffffff}) + q.addr;
  return q.addr < kOffsetWindow && q.len <= kOffsetWindow - q.addr;
}

void finish(RmaOp* op, Status status, int err) {
  op->device->dereg_mr(op->mr.lkey);
  if (op->owner != nullptr) report_rma(op->cq, op->request.context, op->request.write, op->request.report, status, err);
  g_ops.erase({op->device, op->id});
}

}  // namespace

int check_rma(const RmaRequest& q) {
  if (q.buf == nullptr && q.len > 0) return -FI_EINVAL;
  if (q.len > kMaxMsgSize || (q.inject && q.len > kInjectSize)) return -FI_EMSGSIZE;
  if (q.has_data && (q.data >> (8 * kCqDataSize))) return -FI_EINVAL;  // cq_data_size 4
  return 0;
}

int make_rma(Device* device, const void* owner, CompletionQueue* cq, const RmaRequest& q, RmaOp** out) {
  auto op = std::make_unique<RmaOp>();
  op->device = device;
  op->owner = owner;
  op->cq = cq;
  op->request = q;
  void* local = const_cast<void*>(q.buf);  // a write's source is only read; reg_mr takes a mutable pointer
  if (q.inject || q.len == 0) {
    op->copy.assign(static_cast<const uint8_t*>(q.buf), static_cast<const uint8_t*>(q.buf) + q.len);
    if (op->copy.empty()) op->copy.push_back(0);  // the engine registers no empty region
    local = op->copy.data();
  }
  const uint64_t reg_len = q.len == 0 ? 1 : q.len;
  const Result r = device->reg_mr(local, reg_len, q.write ? 0 : access::kLocalWrite, &op->mr);
  if (r == Result::NoResources) return -FI_EAGAIN;
  if (r != Result::Ok) return -FI_EINVAL;
  op->id = g_next_id++;
  *out = op.get();
  g_ops[{device, op->id}] = std::move(op);
  return 0;
}

int post_rma(Channel* c, RmaOp* op) {
  const RmaRequest& q = op->request;
  uint64_t iova = 0;
  uint32_t rkey = 0;
  if (!remote_target(q, &iova, &rkey)) {  // refused here as the target would (5.6)
    finish(op, Status::RemoteAccess, 0);
    return 0;
  }
  const Sge local{op->mr.iova, static_cast<uint32_t>(q.len), op->mr.lkey};
  const uint64_t wr_id = kRmaWrBit | op->id;
  Result r;
  if (q.has_data) {
    // Write-with-immediate consumes one of the peer's bounce receives on the ordered stream: it
    // pays a credit like a message (and keeps the one reserved for a Credit message).
    if (c->send_credits < 2) return -FI_EAGAIN;
    r = c->device->post_write_imm(c->conn, kOrderedStream, wr_id, local, iova, rkey, static_cast<uint32_t>(q.data));
    if (r == Result::Ok) --c->send_credits;
  } else {
    // On the ordered stream too: the endpoint does not know which RMA orders (FI_ORDER_RAW, WAW,
    // ...) the application's entry promised, and stream 0 keeps them all (5.2).
    r = q.write ? c->device->post_write(c->conn, kOrderedStream, wr_id, local, iova, rkey)
                : c->device->post_read(c->conn, kOrderedStream, wr_id, local, iova, rkey);
  }
  if (r != Result::Ok) return fi_errno_of(r);  // NoResources: -FI_EAGAIN
  op->posted = true;
  return 0;
}

void fail_rma(RmaOp* op, Status status, int err) { finish(op, status, err); }

void drop_rma(RmaOp* op) {
  op->owner = nullptr;
  finish(op, Status::Success, 0);
}

void forget_rma(const void* owner) {
  for (auto it = g_ops.begin(); it != g_ops.end();) {
    RmaOp* op = it->second.get();
    ++it;
    if (op->owner != owner) continue;
    op->owner = nullptr;
    if (!op->posted) finish(op, Status::Flushed, 0);  // still queued: nothing will complete it
  }
}

bool complete_rma(Device* device, uint64_t wr_id, Status status) {
  if ((wr_id & kRmaWrBit) == 0) return false;
  auto it = g_ops.find({device, wr_id & ~kRmaWrBit});
  if (it != g_ops.end()) finish(it->second.get(), status, 0);
  return true;
}

Status local_rma(Device* device, const RmaRequest& q) {
  uint64_t iova = 0;
  uint32_t rkey = 0;
  if (!remote_target(q, &iova, &rkey)) return Status::RemoteAccess;
  uint8_t* target = find_region(device, rkey, iova, q.len, q.write ? access::kRemoteWrite : access::kRemoteRead);
  if (target == nullptr) return Status::RemoteAccess;
  if (q.len > 0) {
    if (q.write)
      std::memmove(target, q.buf, q.len);
    else
      std::memmove(const_cast<void*>(q.buf), target, q.len);
  }
  return Status::Success;
}

void report_rma(CompletionQueue* cq, void* context, bool write, bool report, Status status, int err) {
  report_send(cq, context, FI_RMA | (write ? FI_WRITE : FI_READ), report, status, err);
}

void report_remote_write(CompletionQueue* rx, uint64_t data, fi_addr_t source) {
  if (rx == nullptr) return;
  CqEntry entry{};
  entry.entry.flags = FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA;
  entry.entry.data = data;
  entry.source = source;
  push_completion(rx, entry);
}

}  // namespace mroce::fi
