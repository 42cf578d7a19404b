#include "netsim/workload.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "netsim/prng.hpp"

namespace mroce::harness {

std::string_view op_kind_name(OpKind k) {
    switch (k) {
        case OpKind::Send:
            return "Send";
        case OpKind::Write:
            return "Write";
        case OpKind::WriteImm:
            return "WriteImm";
        case OpKind::Read:
            return "Read";
        case OpKind::Recv:
            return "Recv";
    }
    return "UNKNOWN";
}

std::optional<OpKind> op_kind_from_name(std::string_view n) {
    for (int k = 0; k <= int(OpKind::Recv); ++k)
        if (op_kind_name(OpKind(k)) == n) return OpKind(k);
    return std::nullopt;
}

model::WorkOp work_op(OpKind k) {
    switch (k) {
        case OpKind::Send:
            return model::WorkOp::Send;
        case OpKind::Write:
            return model::WorkOp::Write;
        case OpKind::WriteImm:
            return model::WorkOp::WriteImm;
        case OpKind::Read:
            return model::WorkOp::Read;
        case OpKind::Recv:
            return model::WorkOp::Recv;
    }
    return model::WorkOp::Send;
}

std::string_view key_choice_name(KeyChoice k) {
    switch (k) {
        case KeyChoice::Valid:
            return "Valid";
        case KeyChoice::NoAccess:
            return "NoAccess";
        case KeyChoice::Invalid:
            return "Invalid";
    }
    return "UNKNOWN";
}

std::optional<KeyChoice> key_choice_from_name(std::string_view n) {
    for (int k = 0; k <= int(KeyChoice::Invalid); ++k)
        if (key_choice_name(KeyChoice(k)) == n) return KeyChoice(k);
    return std::nullopt;
}

std::string_view misbehaviour_name(Misbehaviour m) {
    switch (m) {
        case Misbehaviour::None:
            return "None";
        case Misbehaviour::WrongKey:
            return "WrongKey";
        case Misbehaviour::NoRight:
            return "NoRight";
        case Misbehaviour::OutOfBounds:
            return "OutOfBounds";
        case Misbehaviour::BadLocal:
            return "BadLocal";
        case Misbehaviour::RecvTooSmall:
            return "RecvTooSmall";
        case Misbehaviour::RecvLate:
            return "RecvLate";
        case Misbehaviour::NoRecv:
            return "NoRecv";
        case Misbehaviour::RecvAfterFail:
            return "RecvAfterFail";
        case Misbehaviour::BadRecv:
            return "BadRecv";
    }
    return "UNKNOWN";
}

// One 64-bit mix per 8 bytes: fast enough for megabyte regions, and every byte depends on the
// seed, the side, the region and its offset, so a misplaced byte never matches by accident
// (except with probability 1/256 per byte, which the many bytes of a segment make negligible).
uint8_t pattern_byte(uint64_t seed, Side side, bool guard, uint64_t off) {
    const uint64_t tag = (uint64_t(side) << 1 | uint64_t(guard)) * 0xD6E8FEB86659FD93ull;
    const uint64_t w = mix64(seed ^ tag ^ ((off >> 3) * 0x9E3779B97F4A7C15ull));
    return uint8_t(w >> ((off & 7) * 8));
}

std::vector<uint8_t> pattern(uint64_t seed, Side side, bool guard, uint64_t off, uint64_t len) {
    // pattern_byte() for every byte, one mix per 8-byte word (regions are megabytes).
    std::vector<uint8_t> v(len);
    const uint64_t tag = (uint64_t(side) << 1 | uint64_t(guard)) * 0xD6E8FEB86659FD93ull;
    uint64_t i = 0;
    while (i < len) {
        const uint64_t o = off + i;
        const uint64_t w = mix64(seed ^ tag ^ ((o >> 3) * 0x9E3779B97F4A7C15ull));
        for (uint64_t b = o & 7; b < 8 && i < len; ++b, ++i) v[i] = uint8_t(w >> (b * 8));
    }
    return v;
}

namespace {

// Slots are separated by a gap so that an off-by-one placement lands in bytes that must stay
// untouched (and is detected), never in a neighbour's target.
constexpr uint64_t kGap = 16;

bool consumes_receive(OpKind k) { return k == OpKind::Send || k == OpKind::WriteImm; }

}  // namespace

Workload plan(std::vector<Intent> intents, const PlanConfig& config) {
    std::stable_sort(intents.begin(), intents.end(), [](const Intent& a, const Intent& b) { return a.at < b.at; });

    // Post-time refusals are decided first: a refused Send / WriteImm consumes no RSN [R-MEM-4],
    // so it neither gets a receive nor counts as the last message of its stream.
    const auto refused = [](const Intent& in) { return in.bad == Misbehaviour::BadLocal && in.kind != OpKind::Recv; };
    // The last receive-consuming intent of each (side, connection, stream): only it may go without
    // a receive (NoRecv) or have its receive posted after its failure (RecvAfterFail), since every
    // later receive of the stream would otherwise take its RSN.
    using StreamKey = std::tuple<int, uint16_t, uint16_t>;
    std::map<StreamKey, size_t> last_consuming;
    for (size_t i = 0; i < intents.size(); ++i)
        if (consumes_receive(intents[i].kind) && !refused(intents[i]))
            last_consuming[{int(intents[i].side), intents[i].conn, intents[i].stream}] = i;

    Workload w;
    w.layout.base = config.base;
    std::array<uint64_t, 2> next{0, 0};
    const auto alloc = [&](Side s, uint64_t len) {
        const uint64_t at = next[size_t(s)];
        next[size_t(s)] += len + kGap;
        return at;
    };
    // Receive times per (receiving side, connection, stream) never decrease, so receives are
    // posted in RSN order whatever lateness each message asks for.
    std::map<StreamKey, model::Time> recv_clock;
    struct Fixup {
        size_t op;
        enum { OobRemote, OobWrap, BadLocal } what;
    };
    std::vector<Fixup> fixups;

    for (size_t i = 0; i < intents.size(); ++i) {
        Intent in = intents[i];
        const Side peer = other(in.side);
        if (in.kind == OpKind::Recv) continue;  // receives come from the messages that consume them
        Op op;
        op.at = in.at;
        op.side = in.side;
        op.kind = in.kind;
        op.stream = in.stream;
        op.length = in.length;
        op.imm = in.imm;
        op.conn = in.conn;
        Misbehaviour bad = in.bad;
        const bool remote = in.kind == OpKind::Write || in.kind == OpKind::WriteImm || in.kind == OpKind::Read;
        const bool last = consumes_receive(in.kind) && last_consuming[{int(in.side), in.conn, in.stream}] == i;
        // Misbehaviours that do not apply to this intent are dropped, keeping the rest of it.
        if ((bad == Misbehaviour::WrongKey || bad == Misbehaviour::NoRight || bad == Misbehaviour::OutOfBounds) &&
            !remote)
            bad = Misbehaviour::None;
        if ((bad == Misbehaviour::RecvTooSmall || bad == Misbehaviour::RecvLate || bad == Misbehaviour::BadRecv) &&
            !consumes_receive(in.kind))
            bad = Misbehaviour::None;
        if (bad == Misbehaviour::RecvTooSmall && in.kind == OpKind::Send && in.length == 0) bad = Misbehaviour::None;
        if ((bad == Misbehaviour::NoRecv || bad == Misbehaviour::RecvAfterFail) && !last) bad = Misbehaviour::None;

        op.local_off = alloc(in.side, in.length);
        if (remote) {
            op.remote_off = alloc(peer, in.length);
            switch (bad) {
                case Misbehaviour::WrongKey:
                    op.key = KeyChoice::Invalid;
                    break;
                case Misbehaviour::NoRight:
                    op.key = KeyChoice::NoAccess;
                    op.remote_off = 0;
                    break;
                case Misbehaviour::OutOfBounds:
                    fixups.push_back(
                        {w.ops.size(), (in.slack & 1) && in.length >= 2 ? Fixup::OobWrap : Fixup::OobRemote});
                    break;
                default:
                    break;
            }
        }
        // [R-MEM-4]: a local buffer outside every region, even an empty one, is refused.
        if (bad == Misbehaviour::BadLocal) fixups.push_back({w.ops.size(), Fixup::BadLocal});
        w.ops.push_back(op);

        if (consumes_receive(in.kind) && bad != Misbehaviour::NoRecv && bad != Misbehaviour::BadLocal) {
            Op r;
            r.side = peer;
            r.kind = OpKind::Recv;
            r.stream = in.stream;
            r.conn = in.conn;
            uint64_t rlen = uint64_t(in.length) + in.slack;
            if (bad == Misbehaviour::RecvTooSmall)
                rlen = in.kind == OpKind::Send ? in.length - 1 - in.slack % in.length : 0;
            r.length = uint32_t(rlen);
            model::Time t = bad == Misbehaviour::RecvLate ? in.at + in.late_us : config.recv_at;
            auto& clock = recv_clock[{int(peer), in.conn, in.stream}];
            clock = std::max(clock, t);
            r.at = clock;
            r.after_void = bad == Misbehaviour::RecvAfterFail;
            if (bad == Misbehaviour::BadRecv) {
                // The refused receive comes first in the list, at the same time: posting order.
                Op refused_recv = r;
                refused_recv.local_off = 0;
                fixups.push_back({w.ops.size(), Fixup::BadLocal});
                w.ops.push_back(refused_recv);
            }
            r.local_off = alloc(peer, rlen);
            w.ops.push_back(r);
        }
    }

    const uint64_t used = std::max<uint64_t>({next[0], next[1], 1});
    w.layout.region_size = (used + 4095) / 4096 * 4096;
    for (const auto& f : fixups) {
        Op& op = w.ops[f.op];
        const uint64_t size = w.layout.region_size;
        switch (f.what) {
            case Fixup::OobRemote:
                // Straddles the end: [size - len/2 + 1, ...) always ends past the region.
                op.remote_off = size - op.length / 2 + 1;
                break;
            case Fixup::OobWrap:
                // The remote address + length wraps around 2^64: a check computed with overflow
                // would wrongly accept it.
                op.remote_off = (0 - uint64_t(op.length / 2)) - w.layout.base[size_t(other(op.side))];
                break;
            case Fixup::BadLocal:
                op.local_off = size + 64;  // in the unregistered gap before the GUARD region
                break;
        }
    }
    std::stable_sort(w.ops.begin(), w.ops.end(), [](const Op& a, const Op& b) { return a.at < b.at; });
    return w;
}

}  // namespace mroce::harness
