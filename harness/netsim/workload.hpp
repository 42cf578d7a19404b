// Workloads: timed operations posted by the two sides, and the planner that builds consistent ones.
//
// Memory layout (both sides alike, documented in harness/README.md): each side registers a DATA
// region [base, base + region_size) with LocalWrite|RemoteWrite|RemoteRead and a GUARD region
// [base + region_size + 4096, ... + guard_size) with LocalWrite only (a remote access to it lacks
// the right). Both are filled with a seeded pattern at setup. Every operation uses its own slots,
// so the expected final contents of all memory follow from the workload alone.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "netsim/network.hpp"

namespace mroce::harness {

enum class OpKind : uint8_t { Send, Write, WriteImm, Read, Recv };
std::string_view op_kind_name(OpKind k);
std::optional<OpKind> op_kind_from_name(std::string_view name);
model::WorkOp work_op(OpKind k);

// Which remote key a Write / WriteImm / Read names.
enum class KeyChoice : uint8_t {
    Valid,     // the peer's DATA region rkey
    NoAccess,  // the peer's GUARD region rkey: registered, but without RemoteWrite / RemoteRead
    Invalid,   // a value that names no region of the peer
};
std::string_view key_choice_name(KeyChoice k);
std::optional<KeyChoice> key_choice_from_name(std::string_view name);

struct Op {
    model::Time at = 0;  // absolute virtual time; posted no earlier than the side's ConnectionUp
    Side side = Side::A;
    OpKind kind = OpKind::Send;
    uint16_t stream = 0;
    uint32_t length = 0;
    uint64_t local_off = 0;   // local buffer, as an offset in the side's DATA region (may lie outside)
    uint64_t remote_off = 0;  // Write / WriteImm / Read: offset in the peer's DATA (or GUARD) region
    KeyChoice key = KeyChoice::Valid;
    uint32_t imm = 0;   // WriteImm: immediate data
    uint16_t conn = 0;  // connection index (0 .. Scenario::connections - 1), the same on both sides
    // Recv only: posted no earlier than the moment the peer's VOID of the message with this
    // receive's RSN has reached this side (so the RSN is already canceled, [R-REL-9]). Receives of
    // the same connection and stream posted after it wait for it (RSN order).
    bool after_void = false;
    bool operator==(const Op&) const = default;
};

struct MemoryLayout {
    std::array<uint64_t, 2> base{0x10000000ull, 0x20000000ull};  // DATA region VA of A, B
    uint64_t region_size = 1 << 20;
    uint64_t guard_size = 4096;
    uint64_t guard_base(Side s) const { return base[size_t(s)] + region_size + 4096; }
    bool operator==(const MemoryLayout&) const = default;
};

struct Workload {
    MemoryLayout layout;
    std::vector<Op> ops;  // posted in list order (the runner stable-sorts by `at`)
    bool operator==(const Workload&) const = default;
};

// wr_id of op i (unique in a run).
inline uint64_t wr_id_of(size_t op_index) { return op_index + 1; }

// The initial contents of memory: byte `off` of region `guard ? GUARD : DATA` of `side`.
uint8_t pattern_byte(uint64_t seed, Side side, bool guard, uint64_t off);
std::vector<uint8_t> pattern(uint64_t seed, Side side, bool guard, uint64_t off, uint64_t len);

// ---- Planning: intents -> a consistent workload -----------------------------------------------

// What to do wrong on purpose (each has a defined expected outcome, see expect()).
enum class Misbehaviour : uint8_t {
    None,
    WrongKey,     // Write/WriteImm/Read naming no region        -> RemoteAccess
    NoRight,      // Write/WriteImm/Read to the GUARD region     -> RemoteAccess
    OutOfBounds,  // Write/WriteImm/Read beyond the DATA region  -> RemoteAccess
    // (a refused WriteImm's receive completes Canceled [R-REL-9], A-22)
    BadLocal,      // any message with a local buffer outside any region -> PostRejected, no MSN /
                   // RSN consumed [R-MEM-4] (a Send / WriteImm then gets no receive)
    RecvTooSmall,  // Send into a smaller receive -> RemoteLength / LocalLength; WriteImm: Success
    RecvLate,      // the matching receive is posted `late_us` after the message (RNR, then ready)
    NoRecv,        // Send / WriteImm whose receive is never posted (last of its stream) ->
                   // RnrRetryExceeded
    // Send / WriteImm whose receive is posted only after the sender gave up (last of its stream):
    // RnrRetryExceeded, and the receive completes Canceled [R-PLC-9], [R-REL-9]
    RecvAfterFail,
    BadRecv,  // a refused receive (bad buffer) is posted just before the matching one: it consumes
              // no RSN, so the message still meets the next receive [R-MEM-4]
};
inline constexpr int kMisbehaviours = 9;  // values 1..kMisbehaviours are misbehaviours
std::string_view misbehaviour_name(Misbehaviour m);

struct Intent {
    model::Time at = 0;
    Side side = Side::A;
    OpKind kind = OpKind::Write;  // Send, Write, WriteImm or Read
    uint16_t stream = 0;
    uint32_t length = 0;
    Misbehaviour bad = Misbehaviour::None;
    uint32_t late_us = 0;  // RecvLate: delay of the receive after the message is posted
    uint32_t slack = 0;    // extra bytes of the matching receive buffer
    uint32_t imm = 0;
    uint16_t conn = 0;  // connection index
};

struct PlanConfig {
    std::array<uint64_t, 2> base{0x10000000ull, 0x20000000ull};
    model::Time recv_at = 0;  // when the receives of well-behaved messages are posted
};

// Turns intents into a workload: allocates every buffer, adds the matching receives on the peer
// (one per Send / WriteImm that is not refused at post time, on the same connection and stream,
// in RSN order), and drops misbehaviours that cannot apply (e.g. RecvTooSmall of a 0-byte Send,
// NoRecv / RecvAfterFail that is not the last message of its connection and stream).
Workload plan(std::vector<Intent> intents, const PlanConfig& config = {});

}  // namespace mroce::harness
