#include "netsim/wire.hpp"

#include <cstdio>

#include "netsim/network.hpp"

namespace mroce::harness {
namespace {

uint16_t be16(std::span<const uint8_t> f, size_t o) { return uint16_t(f[o] << 8 | f[o + 1]); }
uint32_t be32(std::span<const uint8_t> f, size_t o) {
    return uint32_t(f[o]) << 24 | uint32_t(f[o + 1]) << 16 | uint32_t(f[o + 2]) << 8 | f[o + 3];
}
uint64_t be64(std::span<const uint8_t> f, size_t o) { return uint64_t(be32(f, o)) << 32 | be32(f, o + 4); }

std::string hex32(uint32_t v) {
    char b[16];
    std::snprintf(b, sizeof b, "0x%08x", v);
    return b;
}

}  // namespace

std::optional<WireInfo> parse_wire(std::span<const uint8_t> f) {
    const auto lay = frame_layout(f);
    if (!lay || f.size() < lay->bth + 16) return std::nullopt;
    WireInfo w;
    w.ipv6 = lay->ipv6;
    w.ecn = lay->ipv6 ? uint8_t((f[15] >> 4) & 3) : uint8_t(f[15] & 3);
    w.sport = lay->sport;
    const size_t b = lay->bth;
    w.opcode = f[b + 1];
    w.flags = be16(f, b + 2);
    w.dcid = be32(f, b + 4);
    w.path = be16(f, b + 8);
    w.ts = be32(f, b + 12);
    const size_t x = b + 16;  // extension
    const auto need = [&](size_t n) { return f.size() >= x + n; };
    if (w.is_data()) {
        if (!need(20)) return std::nullopt;
        w.psn = be32(f, x);
        w.stream = be16(f, x + 4);
        w.plen = be16(f, x + 6);
        w.msn = be32(f, x + 8);
        w.mlen = be32(f, x + 12);
        w.moff = be32(f, x + 16);
        const size_t e = x + 20;
        switch (w.opcode) {
            case 0x01:
                if (!need(24)) return std::nullopt;
                w.rsn = be32(f, e);
                break;
            case 0x02:
            case 0x04:
                if (!need(32)) return std::nullopt;
                w.va = be64(f, e);
                w.rkey = be32(f, e + 8);
                break;
            case 0x03:
                if (!need(40)) return std::nullopt;
                w.va = be64(f, e);
                w.rkey = be32(f, e + 8);
                w.rsn = be32(f, e + 12);
                w.imm = be32(f, e + 16);
                break;
            default:
                break;
        }
    } else if (w.opcode == 0x10) {
        if (!need(48)) return std::nullopt;
        w.cpsn = be32(f, x);
        w.ce_count = be32(f, x + 4);
        w.ts_echo = be32(f, x + 8);
        w.hint = be32(f, x + 12);
        for (size_t i = 0; i < 32; ++i) w.sack[i] = f[x + 16 + i];
    } else if (w.opcode == 0x11) {
        if (!need(8)) return std::nullopt;
        w.nak_psn = be32(f, x);
        w.nak_code = f[x + 4];
        w.nak_detail = be16(f, x + 6);
    } else if (w.opcode == 0x20 || w.opcode == 0x21) {
        if (!need(16)) return std::nullopt;
        w.scid = be32(f, x);
        w.isn = be32(f, x + 4);
        w.paths = be16(f, x + 8);
        w.streams = be16(f, x + 10);
        w.maxpay = be16(f, x + 12);
        w.wcap = be16(f, x + 14);
    } else if (w.opcode == 0x22 || w.opcode == 0x23) {
        if (!need(4)) return std::nullopt;
        w.reason = f[x];
    }
    return w;
}

std::string summarize(const WireInfo& w) {
    std::string s(ref::opcode_name(ref::Opcode(w.opcode)));
    if (s == "UNKNOWN") s = "OP" + std::to_string(w.opcode);
    const auto add = [&](const std::string& t) {
        s += ' ';
        s += t;
    };
    const auto flags = [&]() {
        if (w.flags == 0) return;
        std::string f;
        if (w.flags & ref::kFlagAr) f += "AR,";
        if (w.flags & ref::kFlagRetx) f += "RETX,";
        if (w.flags & ref::kFlagVoid) f += "VOID,";
        if (w.flags & 0x1fff) f += "0x" + std::to_string(w.flags & 0x1fff) + ",";
        f.pop_back();
        add("fl=" + f);
    };
    if (w.is_data()) {
        add("p=" + std::to_string(w.path));
        add("psn=" + hex32(w.psn));
        flags();
        add("st=" + std::to_string(w.stream));
        add("msn=" + std::to_string(w.msn));
        add("off=" + std::to_string(w.moff));
        add("len=" + std::to_string(w.plen));
        add("mlen=" + std::to_string(w.mlen));
        if (w.opcode == 0x01 || w.opcode == 0x03) add("rsn=" + std::to_string(w.rsn));
        if (w.opcode == 0x02 || w.opcode == 0x03 || w.opcode == 0x04) {
            char b[48];
            std::snprintf(b, sizeof b, "va=0x%llx rkey=0x%08x", (unsigned long long)w.va, w.rkey);
            add(b);
        }
        if (w.opcode == 0x03) add("imm=" + hex32(w.imm));
        add("ecn=" + std::to_string(w.ecn));
    } else if (w.is_ack()) {
        add("p=" + std::to_string(w.path));
        add("cpsn=" + hex32(w.cpsn));
        // SACK bits as offsets from CPSN+1, runs compressed: +2..5,+9
        std::string sk;
        int run_start = -1;
        for (int i = 0; i <= 256; ++i) {
            const bool set = i < 256 && (w.sack[size_t(i / 8)] & (0x80 >> (i % 8)));
            if (set && run_start < 0) run_start = i;
            if (!set && run_start >= 0) {
                if (!sk.empty()) sk += ',';
                sk += '+' + std::to_string(run_start);
                if (i - 1 > run_start) sk += ".." + std::to_string(i - 1);
                run_start = -1;
            }
        }
        add("sack=" + (sk.empty() ? std::string("-") : sk));
        add("ce=" + std::to_string(w.ce_count));
        add("tse=" + std::to_string(w.ts_echo));
        add("hint=" + std::to_string(w.hint));
    } else if (w.opcode == 0x11) {
        add("p=" + std::to_string(w.path));
        add("psn=" + hex32(w.nak_psn));
        std::string code(ref::nak_code_name(ref::NakCode(w.nak_code)));
        add("code=" + code);
        add("detail=" + std::to_string(w.nak_detail));
    } else if (w.opcode == 0x12) {
        add("p=" + std::to_string(w.path));
        flags();
    } else if (w.opcode == 0x20 || w.opcode == 0x21) {
        add("scid=" + hex32(w.scid));
        add("isn=" + hex32(w.isn));
        add("paths=" + std::to_string(w.paths));
        add("streams=" + std::to_string(w.streams));
        add("maxpay=" + std::to_string(w.maxpay));
        add("wcap=" + std::to_string(w.wcap));
    } else if (w.opcode == 0x22 || w.opcode == 0x23) {
        add("reason=" + std::to_string(w.reason));
    }
    add("dcid=" + hex32(w.dcid));
    add("sp=" + std::to_string(w.sport));
    add("ts=" + std::to_string(w.ts));
    return s;
}

std::string canonical_line(std::span<const uint8_t> frame, uint16_t udp_port) {
    const auto r = ref::decode(frame, udp_port);
    return ref::canonical(r, frame);
}

}  // namespace mroce::harness
