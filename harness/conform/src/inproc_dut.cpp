// The in-process DUT: mroce::Device over a CaptureIo and a ManualClock.
#include "conform/inproc_dut.hpp"

#include <chrono>
#include <deque>
#include <thread>

#include "codec/ref_codec.hpp"
#include "conform/engine_counters.hpp"
#include "io/capture_io.hpp"
#include "mroce/mroce.hpp"
#include "mroce/testing.hpp"

namespace mroce::conform {

namespace {

mroce::Address to_engine(const model::Address& a) {
    mroce::Address e;
    e.mac = a.mac;
    e.ipv6 = a.ipv6;
    e.ip = a.ip;
    return e;
}

model::Status to_model(mroce::Status s) { return static_cast<model::Status>(static_cast<uint8_t>(s)); }

model::WorkOp to_model(mroce::WcOpcode op) {
    switch (op) {
        case mroce::WcOpcode::Send:
            return model::WorkOp::Send;
        case mroce::WcOpcode::Write:
            return model::WorkOp::Write;
        case mroce::WcOpcode::WriteImm:
            return model::WorkOp::WriteImm;
        case mroce::WcOpcode::Read:
            return model::WorkOp::Read;
        case mroce::WcOpcode::Recv:
            return model::WorkOp::Recv;
    }
    return model::WorkOp::Send;
}

model::Address address(uint8_t host, bool ipv6) {
    model::Address a;
    a.mac = {2, 0, 0, 0, 0, host};
    a.ipv6 = ipv6;
    if (ipv6)
        a.ip[0] = 0xfd, a.ip[15] = host;  // fd00::host
    else
        a.ip[0] = 10, a.ip[3] = host;  // 10.0.0.host
    return a;
}

class InprocDut final : public Dut {
public:
    explicit InprocDut(const InprocOptions& o) : canary_(o.canary) {
        info_.name = "mroce engine (in-process, virtual time)";
        if (!canary_.empty()) info_.name += ", canary " + canary_;
        info_.address = address(2, o.ipv6);
        info_.virtual_time = true;
        mroce::DeviceConfig cfg;
        cfg.self = to_engine(info_.address);
        cfg.isn = o.isn;
        cfg.first_conn_id = 0x00d70001;
        cfg.offer.paths = 256;
        cfg.offer.streams = 4096;
        cfg.offer.max_payload = 8192;
        cfg.offer.window_cap = 256;
        cfg.max_connections = 64;
        cfg.max_work_requests = 4096;
        cfg.max_receives = 4096;
        // The model has no pools: no per-connection share below a pool, no per-source limit.
        cfg.max_work_requests_per_conn = cfg.max_work_requests;
        cfg.max_receives_per_conn = cfg.max_receives;
        cfg.max_unconfirmed_per_source = cfg.max_connections;
        cfg.max_window_blocks = 1024;
        cfg.max_regions = 256;
        cfg.max_peers = 64;
        cfg.cq_size = 4096;
        info_.max_paths = cfg.offer.paths;
        info_.max_streams = cfg.offer.streams;
        info_.max_payload = cfg.offer.max_payload;
        info_.window_cap = cfg.offer.window_cap;
        info_.rto_min_us = cfg.rto_min_us;
        info_.rto_init_us = cfg.rto_init_us;
        info_.rto_max_us = cfg.rto_max_us;
        info_.rnr_default_us = cfg.rnr_default_us;
        info_.peer_timeout_us = cfg.peer_timeout_us;
        info_.pto_min_us = cfg.pto_min_us;
        info_.keepalive_us = cfg.keepalive_us;
        info_.connect_retry_us = cfg.connect_retry_us;
        cfg.home_probe_us = o.home_probe_us;
        cfg.home_probe_max_us = o.home_probe_max_us;
        info_.home_probe_us = cfg.home_probe_us;
        info_.home_probe_max_us = cfg.home_probe_max_us;
        mroce::Result err{};
        dev_ = mroce::Device::open(cfg, io_, clock_, &err);
        if (!dev_) throw DutError(std::string("cannot open the engine: ") + mroce::result_name(err));
    }

    const DutInfo& info() const override { return info_; }

    void send(std::span<const uint8_t> frame) override {
        mroce::testing::DeviceHooks::input(*dev_, frame.data(), uint32_t(frame.size()));
        collect();
    }
    std::vector<WireFrame> receive() override {
        collect();
        std::vector<WireFrame> out(out_.begin(), out_.end());
        out_.clear();
        return out;
    }
    Micros now() const override { return clock_.now_us(); }
    void run_until(Micros t) override {
        canary_step(canary_, sent_data_);
        collect();
        if (!out_.empty()) return;
        mroce::testing::DeviceHooks::advance(*dev_);  // timers due now
        collect();
        while (out_.empty() && clock_.now_us() < t) {
            const auto d = dev_->next_deadline();
            const Micros now = clock_.now_us();
            Micros next = t;
            if (d && *d <= now)
                next = now + 1;  // nothing came of it: step on
            else if (d && *d < t)
                next = *d;
            clock_.set(next);
            mroce::testing::DeviceHooks::advance(*dev_);
            collect();
        }
    }

    void listen(bool on) override { dev_->listen(on); }
    uint32_t connect(const model::Address& peer, const ConnOffer& offer) override {
        mroce::ConnParams p{offer.paths, offer.streams, offer.max_payload, offer.window_cap};
        uint32_t conn = 0;
        const auto r = dev_->connect(to_engine(peer), &conn, &p);
        if (r != mroce::Result::Ok) throw DutError(std::string("connect refused: ") + mroce::result_name(r));
        collect();
        return conn;
    }
    Region reg_mr(uint64_t length, uint32_t access) override {
        auto mem = std::make_unique<std::vector<uint8_t>>(length ? length : 1, 0);
        mroce::MemoryRegion mr;
        // Regions get an iova of their own, far from host pointers, as a NIC would.
        const uint64_t iova = 0x10000000ull * (regions_.size() + 1);
        const auto r = dev_->reg_mr(mem->data(), length, access, &mr, iova);
        if (r != mroce::Result::Ok) throw DutError(std::string("reg_mr refused: ") + mroce::result_name(r));
        regions_.push_back({mr, std::move(mem)});
        return Region{mr.lkey, mr.iova, mr.length, mr.rkey, access};
    }
    void dereg_mr(uint32_t handle) override {
        if (dev_->dereg_mr(handle) != mroce::Result::Ok) throw DutError("dereg_mr: unknown region");
    }
    void write_mem(uint32_t region, uint64_t offset, std::span<const uint8_t> bytes) override {
        auto& r = find(region);
        if (offset + bytes.size() > r.second->size()) throw DutError("write_mem outside the region");
        std::copy(bytes.begin(), bytes.end(), r.second->begin() + std::ptrdiff_t(offset));
    }
    std::vector<uint8_t> read_mem(uint32_t region, uint64_t offset, uint64_t length) override {
        auto& r = find(region);
        if (offset + length > r.second->size()) throw DutError("read_mem outside the region");
        return {r.second->begin() + std::ptrdiff_t(offset), r.second->begin() + std::ptrdiff_t(offset + length)};
    }
    std::string post(const PostOp& op) override {
        auto& r = find(op.region);
        const mroce::Sge sge{r.first.iova + op.offset, op.length, r.first.lkey};
        mroce::Result res = mroce::Result::InvalidArgument;
        switch (op.op) {
            case model::WorkOp::Send:
                res = dev_->post_send(op.conn, op.stream, op.wr_id, sge);
                break;
            case model::WorkOp::Write:
                res = dev_->post_write(op.conn, op.stream, op.wr_id, sge, op.remote_va, op.rkey);
                break;
            case model::WorkOp::WriteImm:
                res =
                    dev_->post_write_imm(op.conn, op.stream, op.wr_id, sge, op.remote_va, op.rkey, op.imm.value_or(0));
                break;
            case model::WorkOp::Read:
                res = dev_->post_read(op.conn, op.stream, op.wr_id, sge, op.remote_va, op.rkey);
                break;
            case model::WorkOp::Recv:
                res = dev_->post_recv(op.conn, op.stream, op.wr_id, sge);
                break;
        }
        collect();
        return res == mroce::Result::Ok ? std::string() : std::string(mroce::result_name(res));
    }
    std::vector<DutCompletion> poll_cq() override {
        std::vector<DutCompletion> out;
        mroce::WorkCompletion wc[64];
        for (int n; (n = dev_->poll_cq(wc, 64)) > 0;)
            for (int i = 0; i < n; ++i) {
                DutCompletion c;
                c.wr_id = wc[i].wr_id;
                c.conn = wc[i].conn;
                c.stream = wc[i].stream;
                c.op = to_model(wc[i].opcode);
                c.status = to_model(wc[i].status);
                c.byte_len = wc[i].byte_len;
                if (wc[i].has_imm) c.imm = wc[i].imm;
                out.push_back(c);
            }
        return out;
    }
    std::vector<DutEvent> poll_events() override {
        std::vector<DutEvent> out;
        mroce::ConnEvent ev[16];
        for (int n; (n = dev_->poll_events(ev, 16)) > 0;)
            for (int i = 0; i < n; ++i)
                out.push_back(
                    {ev[i].kind == mroce::ConnEvent::Kind::Up, ev[i].conn, ev[i].initiator, to_model(ev[i].status)});
        return out;
    }
    void close(uint32_t conn, bool abort) override {
        dev_->close(conn, abort);
        collect();
    }
    std::map<std::string, uint64_t> counters() override {
        const auto& c = dev_->counters();
        std::map<std::string, uint64_t> out;
        for (const auto& [name, value] : engine_counters(c)) out.emplace(name, value);
        out.emplace("decode_errors", sum(c.decode_errors));
        return out;
    }

private:
    static uint64_t sum(const std::array<uint64_t, 19>& a) {
        uint64_t s = 0;
        for (auto v : a) s += v;
        return s;
    }
    std::pair<mroce::MemoryRegion, std::unique_ptr<std::vector<uint8_t>>>& find(uint32_t handle) {
        for (auto& r : regions_)
            if (r.first.lkey == handle) return r;
        throw DutError("no region with handle " + std::to_string(handle));
    }
    void collect() {
        for (auto& f : io_.take()) {
            if (canary_ == "livelock" && !sent_data_) {  // only the livelock canary asks
                auto r = ref::decode(f);
                sent_data_ = r.ok() && ref::is_data_opcode(r.packet.opcode);
            }
            out_.push_back({clock_.now_us(), tamper(std::move(f))});
        }
    }
    std::vector<uint8_t> tamper(std::vector<uint8_t> f) const { return apply_canary(canary_, std::move(f)); }

    std::string canary_;
    bool sent_data_ = false;
    DutInfo info_;
    io::ManualClock clock_;
    io::CaptureIo io_{4096};
    std::unique_ptr<mroce::Device> dev_;
    std::deque<WireFrame> out_;
    std::vector<std::pair<mroce::MemoryRegion, std::unique_ptr<std::vector<uint8_t>>>> regions_;
};

}  // namespace

bool known_canary(const std::string& c) {
    return c.empty() || c == "ack-lies" || c == "no-retx-flag" || c == "ecn" || c == "livelock";
}

void canary_step(const std::string& canary, bool sent_data) {
    if (canary != "livelock" || !sent_data) return;
    for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

std::vector<uint8_t> apply_canary(const std::string& canary, std::vector<uint8_t> f) {
    if (canary.empty()) return f;
    auto r = ref::decode(f);
    if (!r.ok()) return f;
    ref::Packet p = r.packet;
    std::vector<uint8_t> payload;
    if (ref::is_data_opcode(p.opcode))
        payload.assign(f.begin() + p.payload_offset, f.begin() + p.payload_offset + p.payload_len);
    if (canary == "ack-lies" && p.opcode == ref::Opcode::Ack) {
        // One PSN more than was received; the bitmap moved with it (bit 0 stays clear).
        p.cpsn += 1;
        std::array<uint8_t, 32> s{};
        for (uint32_t i = 1; i + 1 < 256; ++i)
            if (p.sack[(i + 1) / 8] & (0x80u >> ((i + 1) % 8))) s[i / 8] |= uint8_t(0x80u >> (i % 8));
        p.sack = s;
    } else if (canary == "no-retx-flag" && ref::is_data_opcode(p.opcode)) {
        p.flags &= uint16_t(~ref::kFlagRetx);
    } else if (canary == "ecn" && ref::is_data_opcode(p.opcode)) {
        p.ecn = 0;
    } else {
        return f;
    }
    return ref::encode(p, payload);
}

std::unique_ptr<Dut> make_inproc_dut(const InprocOptions& options) { return std::make_unique<InprocDut>(options); }

model::Address inproc_tester_address(bool ipv6) { return address(1, ipv6); }

}  // namespace mroce::conform
