// The agent control protocol (AGENT_PROTOCOL.md) without DPDK: the line syntax, AgentServer on a
// Device over the in-memory loop (a second Device plays the runner's peer), and AgentClient's
// checks of responses (lies, stalls, an unreachable agent).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <string>
#include <thread>

#include "conform/agent_dut.hpp"
#include "conform/agent_server.hpp"
#include "io/mem_loop.hpp"
#include "mroce/mroce.hpp"

namespace mroce::conform {
namespace {

// ---- helpers ----

// A link straight into an AgentServer: each request line is answered at once.
class ServerLink final : public AgentLink {
public:
    explicit ServerLink(AgentServer& s) : s_(s) {}
    void send_line(std::string_view line) override {
        const std::string resp = s_.handle(line);
        size_t start = 0;
        for (size_t lf; (lf = resp.find('\n', start)) != std::string::npos; start = lf + 1)
            lines_.push_back(resp.substr(start, lf - start));
        EXPECT_EQ(start, resp.size()) << "response not LF-terminated: " << resp;
    }
    std::optional<std::string> read_line(uint64_t) override {
        if (lines_.empty()) return std::nullopt;
        std::string l = lines_.front();
        lines_.pop_front();
        return l;
    }

private:
    AgentServer& s_;
    std::deque<std::string> lines_;
};

// A link that answers every request with the next canned response (lines separated by LF), or
// never when none is left.
class ScriptedLink final : public AgentLink {
public:
    explicit ScriptedLink(std::vector<std::string> responses) : responses_(responses.begin(), responses.end()) {}
    void send_line(std::string_view line) override {
        sent.emplace_back(line);
        if (responses_.empty()) return;
        const std::string r = responses_.front();
        responses_.pop_front();
        size_t start = 0;
        for (size_t lf; (lf = r.find('\n', start)) != std::string::npos; start = lf + 1)
            lines_.push_back(r.substr(start, lf - start));
        if (start < r.size()) lines_.push_back(r.substr(start));
    }
    std::optional<std::string> read_line(uint64_t) override {
        if (lines_.empty()) return std::nullopt;
        std::string l = lines_.front();
        lines_.pop_front();
        return l;
    }
    std::vector<std::string> sent;

private:
    std::deque<std::string> responses_, lines_;
};

DeviceConfig dut_config() {
    DeviceConfig c;
    c.self.mac = {0x02, 0, 0, 0, 0x0b, 0x99};
    c.self.ip = {198, 18, 0, 2};
    c.first_conn_id = 1;
    c.max_connections = 16;
    c.max_work_requests = 1024;
    c.max_receives = 1024;
    c.cq_size = 1024;
    c.home_probe_us = 150;  // [R-PATH-10]: not the spec's, so that `info` shows the device's own
    c.home_probe_max_us = 450;
    return c;
}

DeviceConfig peer_config() {
    DeviceConfig c = dut_config();
    c.self.mac = {0x02, 0, 0, 0, 0x0a, 0x99};
    c.self.ip = {198, 18, 0, 1};
    c.first_conn_id = 100;
    return c;
}

model::Address model_address(const Address& a) {
    model::Address m;
    m.mac = a.mac;
    m.ipv6 = a.ipv6;
    m.ip = a.ip;
    return m;
}

// The DUT (behind an AgentServer) and a peer Device joined by the in-memory loop, in virtual time.
struct Bench {
    io::ManualClock clock{1000};
    io::MemLoop loop{io::MemLoop::Options{4096, 4096, 2, &clock}};
    AgentServer server{dut_config(), loop.port(0), clock, AgentServerOptions{"test dut", "test agent", 1 << 20}};
    std::unique_ptr<Device> peer = Device::open(peer_config(), loop.port(1), clock);

    // Lets both ends run for `us` µs of virtual time.
    void run(uint64_t us) {
        for (uint64_t t = 0; t < us; ++t) {
            clock.advance(1);
            server.progress();
            peer->progress();
        }
    }
    std::string ask(std::string_view req) { return server.handle(req); }
};

std::string code_of(const std::string& resp) {
    if (!resp.starts_with("err ")) return "(not an err: " + resp + ")";
    return resp.substr(4, resp.find(' ', 4) - 4);
}

template <class F>
std::string dut_error(F&& f) {
    try {
        f();
    } catch (const DutError& e) { return e.what(); }
    return "(no DutError)";
}

// ---- the line syntax ----

TEST(AgentLine, ParsesWordsFieldsAndQuotes) {
    const auto l = agent::parse_line("  listen on  name=\"a \\\"b\\\" \\\\c\" n=0x1F\tempty= \r");
    EXPECT_EQ(l.verb, "listen");
    ASSERT_EQ(l.words.size(), 1u);
    EXPECT_EQ(l.words[0], "on");
    ASSERT_NE(l.find("name"), nullptr);
    EXPECT_EQ(*l.find("name"), "a \"b\" \\c");
    EXPECT_EQ(*l.find("n"), "0x1F");
    EXPECT_EQ(*l.find("empty"), "");
    EXPECT_EQ(l.find("nope"), nullptr);
}

TEST(AgentLine, RejectsMalformedLines) {
    for (const char* bad : {"", "   ", "x=1 verb", "v name=\"open", "v k=\"a\"b", "v a=1 a=2", "v k-x=1", "v a=b\"c",
                            "v \"q\"", "v a=\"\\n\"", "v caf\xc3\xa9", "v \x01"}) {
        EXPECT_THROW(agent::parse_line(bad), agent::SyntaxError) << bad;
    }
    EXPECT_THROW(agent::parse_line(std::string(agent::kMaxLine + 1, 'a')), agent::SyntaxError);
}

TEST(AgentLine, ValuesRoundTrip) {
    EXPECT_EQ(agent::field("name", "plain"), "name=plain");
    EXPECT_EQ(agent::field("name", "two words"), "name=\"two words\"");
    const auto l = agent::parse_line("x " + agent::field("v", "q\"uo\\te d"));
    EXPECT_EQ(*l.find("v"), "q\"uo\\te d");
    EXPECT_EQ(agent::parse_number("4096"), 4096u);
    EXPECT_EQ(agent::parse_number("0xFFFFFFFFFFFFFFFF"), UINT64_MAX);
    EXPECT_FALSE(agent::parse_number("18446744073709551616"));
    EXPECT_FALSE(agent::parse_number("0x10000000000000000"));
    EXPECT_FALSE(agent::parse_number("256", 255));
    EXPECT_FALSE(agent::parse_number("-1"));
    EXPECT_FALSE(agent::parse_number("0x"));
    EXPECT_FALSE(agent::parse_number(""));
    EXPECT_EQ(agent::to_hex(std::vector<uint8_t>{0x00, 0xab, 0x7f}), "00ab7f");
    EXPECT_EQ(agent::from_hex("00AB7f"), (std::vector<uint8_t>{0x00, 0xab, 0x7f}));
    EXPECT_FALSE(agent::from_hex("abc"));
    EXPECT_FALSE(agent::from_hex("zz"));
    const auto mac = agent::parse_mac("02:00:00:00:0b:99");
    ASSERT_TRUE(mac);
    EXPECT_EQ(agent::mac_text(*mac), "02:00:00:00:0b:99");
    EXPECT_FALSE(agent::parse_mac("02:00:00:00:0b"));
    bool v6 = false;
    std::array<uint8_t, 16> ip{};
    ASSERT_TRUE(agent::parse_ip("fd00:6d72::2", v6, ip));
    EXPECT_TRUE(v6);
    EXPECT_EQ(agent::ip_text(v6, ip), "fd00:6d72::2");
    ASSERT_TRUE(agent::parse_ip("198.18.0.2", v6, ip));
    EXPECT_FALSE(v6);
    EXPECT_EQ(agent::ip_text(v6, ip), "198.18.0.2");
    EXPECT_FALSE(agent::parse_ip("198.18.0", v6, ip));
    for (auto op :
         {model::WorkOp::Send, model::WorkOp::Write, model::WorkOp::WriteImm, model::WorkOp::Read, model::WorkOp::Recv})
        EXPECT_EQ(agent::parse_op(agent::op_text(op)), op);
    EXPECT_EQ(agent::parse_status("RnrRetryExceeded"), model::Status::RnrRetryExceeded);
    EXPECT_FALSE(agent::parse_status("Fine"));
    EXPECT_EQ(agent::decode_error_text(0), "Truncated");
    EXPECT_EQ(agent::decode_error_text(agent::kDecodeErrorKinds - 1), "SackBase");
}

// ---- the server ----

TEST(AgentServer, MalformedRequestsGetErr) {
    Bench b;
    const std::pair<const char*, const char*> cases[] = {
        {"", "syntax"},
        {"reg_mr length=\"4096", "syntax"},
        {"reg_mr length=1 length=2 access=1", "syntax"},
        {"bogus", "unknown"},
        {"bogus thing x=1", "unknown"},
        {"INFO", "unknown"},
        {"hello", "bad_arg"},
        {"hello version=2", "version"},
        {"info verbose=1", "bad_arg"},
        {"info now", "bad_arg"},
        {"listen", "bad_arg"},
        {"listen maybe", "bad_arg"},
        {"reg_mr length=4096", "bad_arg"},
        {"reg_mr length=x access=7", "bad_arg"},
        {"reg_mr length=4096 access=8", "bad_arg"},
        {"reg_mr length=4096 access=7 color=red", "bad_arg"},
        {"reg_mr length=2000000 access=7", "no_resources"},  // above the bench's 1 MiB limit
        {"dereg_mr handle=77", "no_region"},
        {"read_mem handle=77 offset=0 length=1", "no_region"},
        {"read_mem handle=77 offset=0 length=262145", "bad_arg"},
        {"write_mem handle=77 offset=0 data=0", "bad_arg"},
        {"write_mem handle=77 offset=0 data=zz", "bad_arg"},
        {"connect mac=02:00:00:00:0a ip=198.18.0.1", "bad_arg"},
        {"connect mac=02:00:00:00:0a:99 ip=198.18.0", "bad_arg"},
        {"connect mac=02:00:00:00:0a:99", "bad_arg"},
        {"connect mac=02:00:00:00:0a:99 ip=198.18.0.1 paths=70000", "bad_arg"},
        {"post op=fly conn=1 stream=0 wr_id=1 region=1 offset=0 length=1", "bad_arg"},
        {"post op=send conn=1 stream=0 wr_id=1 region=1 offset=0", "bad_arg"},
        {"post op=send conn=1 stream=0 wr_id=1 region=1 offset=0 length=1 rkey=5", "bad_arg"},
        {"post op=write conn=1 stream=0 wr_id=1 region=1 offset=0 length=1", "bad_arg"},
        {"post op=write conn=1 stream=0 wr_id=1 region=1 offset=0 length=1 remote_va=0 rkey=1 imm=3", "bad_arg"},
        {"post op=write_imm conn=1 stream=0 wr_id=1 region=1 offset=0 length=1 remote_va=0 rkey=1", "bad_arg"},
        {"post op=send conn=1 stream=70000 wr_id=1 region=1 offset=0 length=1", "bad_arg"},
        {"poll_cq max=0", "bad_arg"},
        {"poll_cq max=4097", "bad_arg"},
        {"poll_events max=x", "bad_arg"},
        {"close", "bad_arg"},
        {"close conn=1 abort=yes", "bad_arg"},
        {"counters all=1", "bad_arg"},
        {"reset now", "bad_arg"},
    };
    for (const auto& [req, code] : cases) {
        const std::string resp = b.ask(req);
        EXPECT_EQ(code_of(resp), code) << "request '" << req << "' got " << resp;
        EXPECT_EQ(resp.find('\n'), resp.size() - 1) << "one line: " << resp;
    }
    EXPECT_EQ(code_of(b.ask("v \x80")), "syntax");
    EXPECT_EQ(b.server.stats().errors, std::size(cases) + 1);
    EXPECT_FALSE(b.server.quit_requested());
}

TEST(AgentServer, MemoryRequestsAndReset) {
    Bench b;
    AgentClient c(std::make_unique<ServerLink>(b.server), "mem");
    EXPECT_EQ(c.hello(), agent::kVersion);
    const Region r = c.reg_mr(10000, 7);
    // Handles are the engine's lkeys: opaque and unpredictable [R-MEM-1], never 0.
    EXPECT_NE(r.handle, 0u);
    const std::string h = "handle=" + std::to_string(r.handle);
    EXPECT_EQ(r.length, 10000u);
    EXPECT_EQ(r.va % 4096, 0u) << "page aligned";
    EXPECT_EQ(c.read_mem(r.handle, 0, 16), std::vector<uint8_t>(16, 0)) << "zeroed";
    std::vector<uint8_t> bytes(300000);  // more than one request's worth
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(i * 7);
    const Region big = c.reg_mr(bytes.size() + 8, 1);
    EXPECT_NE(big.handle, r.handle);
    EXPECT_NE(big.rkey, r.rkey);
    c.write_mem(big.handle, 8, bytes);
    EXPECT_EQ(c.read_mem(big.handle, 8, bytes.size()), bytes);
    EXPECT_EQ(code_of(b.ask("read_mem " + h + " offset=9999 length=2")), "bounds");
    EXPECT_EQ(code_of(b.ask("write_mem " + h + " offset=10000 data=00")), "bounds");
    EXPECT_EQ(b.ask("write_mem " + h + " offset=10000 data="), "ok\n");
    c.dereg_mr(r.handle);
    EXPECT_EQ(code_of(b.ask("dereg_mr " + h)), "failed") << "the engine refuses a second dereg";
    EXPECT_EQ(c.read_mem(r.handle, 0, 4), std::vector<uint8_t>(4, 0)) << "memory kept until reset";
    c.reset();
    EXPECT_EQ(code_of(b.ask("read_mem " + h + " offset=0 length=1")), "no_region");
    const Region fresh = c.reg_mr(64, 7);  // a fresh device after reset: registration works again
    const std::vector<uint8_t> three{1, 2, 3};
    c.write_mem(fresh.handle, 0, three);
    EXPECT_EQ(c.read_mem(fresh.handle, 0, 3), three);
    EXPECT_EQ(b.server.stats().resets, 1u);
}

TEST(AgentServer, InfoDescribesTheDevice) {
    Bench b;
    AgentClient c(std::make_unique<ServerLink>(b.server), "info");
    const DutInfo d = c.info();
    const DeviceConfig cfg = dut_config();
    EXPECT_EQ(d.name, "test dut");
    EXPECT_EQ(d.address, model_address(cfg.self));
    EXPECT_EQ(d.udp_port, cfg.udp_port);
    EXPECT_EQ(d.max_paths, cfg.offer.paths);
    EXPECT_EQ(d.max_streams, cfg.offer.streams);
    EXPECT_EQ(d.max_payload, cfg.offer.max_payload);
    EXPECT_EQ(d.window_cap, cfg.offer.window_cap);
    EXPECT_EQ(d.ops, (std::vector<std::string>{"send", "write", "write_imm", "read"}));
    EXPECT_EQ(d.rto_min_us, cfg.rto_min_us);
    EXPECT_EQ(d.rto_init_us, cfg.rto_init_us);
    EXPECT_EQ(d.rto_max_us, cfg.rto_max_us);
    EXPECT_EQ(d.rnr_default_us, cfg.rnr_default_us);
    EXPECT_EQ(d.peer_timeout_us, cfg.peer_timeout_us);
    EXPECT_EQ(d.pto_min_us, cfg.pto_min_us);
    EXPECT_EQ(d.keepalive_us, cfg.keepalive_us);
    EXPECT_EQ(d.connect_retry_us, cfg.connect_retry_us);
    EXPECT_EQ(d.home_probe_us, 150u);
    EXPECT_EQ(d.home_probe_max_us, 450u);
    EXPECT_TRUE(d.ipv4_fragments);  // the bench's in-memory loop alters no frame
    EXPECT_FALSE(d.virtual_time);
    const auto k = c.counters();
    EXPECT_EQ(k.at("unknown_dcid"), 0u);
    EXPECT_EQ(k.at("decode_errors.Icrc"), 0u);
    EXPECT_EQ(k.at("decode_errors"), 0u);
    c.quit();
    EXPECT_TRUE(b.server.quit_requested());
    EXPECT_NE(dut_error([&] { c.info(); }).find("not usable"), std::string::npos);
}

// The DUT connects to the peer, Writes into it, takes a Write-with-immediate into a receive, is
// refused a post on an unknown connection, and closes.
TEST(AgentServer, ConnectPostPollClose) {
    Bench b;
    AgentClient c(std::make_unique<ServerLink>(b.server), "conn");
    auto pmem = std::make_unique<uint8_t[]>(4096);
    std::memset(pmem.get(), 0, 4096);
    MemoryRegion pmr;
    ASSERT_EQ(b.peer->reg_mr(pmem.get(), 4096, access::kLocalWrite | access::kRemoteWrite, &pmr), Result::Ok);

    const uint32_t conn = c.connect(model_address(peer_config().self), ConnOffer{2, 2, 1024, 64});
    std::vector<DutEvent> events;
    for (int i = 0; i < 200 && events.empty(); ++i) {
        b.run(10);
        events = c.poll_events();
    }
    ASSERT_EQ(events.size(), 1u);
    EXPECT_TRUE(events[0].up);
    EXPECT_EQ(events[0].conn, conn);
    EXPECT_TRUE(events[0].initiator);
    ConnEvent pev;
    ASSERT_EQ(b.peer->poll_events(&pev, 1), 1);
    const uint32_t pconn = pev.conn;
    EXPECT_EQ(b.peer->path_count(pconn), 2);

    const Region r = c.reg_mr(4096, 7);
    std::vector<uint8_t> msg(1500);
    for (size_t i = 0; i < msg.size(); ++i) msg[i] = uint8_t(i ^ 0x5a);
    c.write_mem(r.handle, 100, msg);
    PostOp w;
    w.op = model::WorkOp::Write;
    w.conn = conn;
    w.stream = 1;
    w.wr_id = 42;
    w.region = r.handle;
    w.offset = 100;
    w.length = uint32_t(msg.size());
    w.remote_va = pmr.iova + 8;
    w.rkey = pmr.rkey;
    EXPECT_EQ(c.post(w), "");
    PostOp bad = w;
    bad.conn = 999;
    EXPECT_EQ(c.post(bad), "NotConnected");
    bad = w;
    bad.stream = 7;
    EXPECT_EQ(c.post(bad), "InvalidStream");

    std::vector<DutCompletion> wcs;
    for (int i = 0; i < 200 && wcs.empty(); ++i) {
        b.run(10);
        wcs = c.poll_cq();
    }
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].wr_id, 42u);
    EXPECT_EQ(wcs[0].op, model::WorkOp::Write);
    EXPECT_EQ(wcs[0].status, model::Status::Success);
    EXPECT_EQ(wcs[0].stream, 1);
    EXPECT_EQ(std::memcmp(pmem.get() + 8, msg.data(), msg.size()), 0);

    // The peer Writes-with-immediate into the DUT's region; the DUT's receive completes.
    PostOp recv;
    recv.op = model::WorkOp::Recv;
    recv.conn = conn;
    recv.stream = 0;
    recv.wr_id = 7;
    recv.region = r.handle;
    recv.offset = 0;
    recv.length = 0;
    EXPECT_EQ(c.post(recv), "");
    const Sge src{pmr.iova + 8, 64, pmr.lkey};
    ASSERT_EQ(b.peer->post_write_imm(pconn, 0, 1, src, r.va + 2048, r.rkey, 0xabcd), Result::Ok);
    wcs.clear();
    for (int i = 0; i < 200 && wcs.empty(); ++i) {
        b.run(10);
        wcs = c.poll_cq();
    }
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].wr_id, 7u);
    EXPECT_EQ(wcs[0].op, model::WorkOp::Recv);
    EXPECT_EQ(wcs[0].imm, 0xabcdu);
    EXPECT_EQ(c.read_mem(r.handle, 2048, 64), std::vector<uint8_t>(msg.begin(), msg.begin() + 64));

    c.close(conn, false);
    events.clear();
    for (int i = 0; i < 500 && events.empty(); ++i) {
        b.run(10);
        events = c.poll_events();
    }
    ASSERT_EQ(events.size(), 1u);
    EXPECT_FALSE(events[0].up);
    EXPECT_EQ(events[0].status, model::Status::Success);
    EXPECT_EQ(b.ask("close conn=999"), "ok refused=NotConnected\n");
    const auto k = c.counters();
    EXPECT_GT(k.at("data_sent"), 0u);
    EXPECT_GT(k.at("placed_bytes"), 0u);
}

TEST(AgentServer, ListenOffRejects) {
    Bench b;
    EXPECT_EQ(b.ask("listen off"), "ok\n");
    uint32_t pconn = 0;
    ASSERT_EQ(b.peer->connect(b.server.device().config().self, &pconn), Result::Ok);
    b.run(100);
    ConnEvent ev;
    ASSERT_EQ(b.peer->poll_events(&ev, 1), 1);
    EXPECT_EQ(ev.kind, ConnEvent::Kind::Down);
    EXPECT_EQ(b.ask("poll_events"), "ok n=0\n");
    EXPECT_EQ(b.ask("reset"), "ok\n");  // listening again
    ASSERT_EQ(b.peer->connect(b.server.device().config().self, &pconn), Result::Ok);
    b.run(100);
    ASSERT_EQ(b.peer->poll_events(&ev, 1), 1);
    EXPECT_EQ(ev.kind, ConnEvent::Kind::Up);
    const std::string resp = b.ask("poll_events max=1");
    EXPECT_TRUE(
        resp.starts_with("ok n=1\nev kind=up conn=1 initiator=0 status=Success peer_mac=02:00:00:00:0a:99 "
                         "peer_ip=198.18.0.1\n"))
        << resp;
}

// ---- the client's checks ----

TEST(AgentClient, RejectsLies) {
    const std::string info_ok =
        "ok name=x mac=02:00:00:00:0b:99 ip=198.18.0.2 udp_port=4793 max_paths=256 max_streams=65535 "
        "max_payload=8192 window_cap=256 ops=send,write rto_min_us=100 rto_init_us=1000 rto_max_us=6250 "
        "rnr_default_us=100 peer_timeout_us=50000";
    auto replace = [](std::string s, const std::string& from, const std::string& to) {
        const size_t at = s.find(from);
        EXPECT_NE(at, std::string::npos) << from;
        return s.replace(at, from.size(), to);
    };
    const std::pair<std::string, std::string> infos[] = {
        {replace(info_ok, " mac=02:00:00:00:0b:99", ""), "missing mac"},
        {replace(info_ok, "mac=02:00:00:00:0b:99", "mac=02:00:00:00:0b"), "mac"},
        {replace(info_ok, "max_paths=256", "max_paths=300"), "max_paths"},
        {replace(info_ok, "max_paths=256", "max_paths=0"), "max_paths"},
        {replace(info_ok, "max_payload=8192", "max_payload=1000"), "multiple of 64"},
        {replace(info_ok, "ops=send,write", "ops=send,teleport"), "teleport"},
        {replace(info_ok, "ops=send,write", "ops=send,send"), "twice"},
        {replace(info_ok, "rto_min_us=100", "rto_min_us=2000"), "rto_min_us"},
        {replace(info_ok, "udp_port=4793", "udp_port=x"), "udp_port"},
        {replace(info_ok, "name=x", "name=\"x"), "unterminated"},
        {"yes " + info_ok.substr(3), "neither ok nor err"},
        {"ok maybe", "unexpected word"},
        {info_ok + " ipv4_fragments=2", "ipv4_fragments"},
        {info_ok + " pto_min_us=-1", "pto_min_us"},
        {info_ok + " home_probe_us=0", "home_probe_us"},
        {info_ok + " home_probe_max_us=0", "home_probe_max_us"},
    };
    for (const auto& [resp, why] : infos) {
        AgentClient c(std::make_unique<ScriptedLink>(std::vector<std::string>{resp}), "liar");
        const std::string e = dut_error([&] { c.info(); });
        EXPECT_NE(e.find("agent liar: info: bad response"), std::string::npos) << e;
        EXPECT_NE(e.find(why), std::string::npos) << e;
    }
    {
        AgentClient c(std::make_unique<ScriptedLink>(std::vector<std::string>{info_ok}), "honest");
        const DutInfo d = c.info();
        EXPECT_EQ(d.ops, (std::vector<std::string>{"send", "write"}));
        // An agent of before the optional timer fields: the spec's values, fragments delivered.
        EXPECT_EQ(d.pto_min_us, 20u);
        EXPECT_EQ(d.keepalive_us, 100000u);
        EXPECT_EQ(d.connect_retry_us, 1000u);
        EXPECT_EQ(d.home_probe_us, 200u);  // [R-PATH-10] HOME_PROBE, HOME_PROBE_MAX
        EXPECT_EQ(d.home_probe_max_us, 400u);
        EXPECT_TRUE(d.ipv4_fragments);
    }
    {
        const std::string newer =
            info_ok +
            " pto_min_us=400 keepalive_us=2000000 connect_retry_us=20000 home_probe_us=120 home_probe_max_us=960 "
            "ipv4_fragments=0";
        AgentClient c(std::make_unique<ScriptedLink>(std::vector<std::string>{newer}), "newer");
        const DutInfo d = c.info();
        EXPECT_EQ(d.pto_min_us, 400u);
        EXPECT_EQ(d.keepalive_us, 2000000u);
        EXPECT_EQ(d.connect_retry_us, 20000u);
        EXPECT_EQ(d.home_probe_us, 120u);
        EXPECT_EQ(d.home_probe_max_us, 960u);
        EXPECT_FALSE(d.ipv4_fragments);
    }
    struct Case {
        std::vector<std::string> responses;
        std::function<void(AgentClient&)> call;
        std::string why;
    };
    const std::string reg = "ok handle=5 va=0x1000 rkey=0x105 length=4096 access=7";
    const std::string wc = "wc wr_id=1 conn=1 stream=0 op=write status=Success byte_len=8";
    auto reg_mr = [](AgentClient& c) { c.reg_mr(4096, 7); };
    auto poll_cq = [](AgentClient& c) { c.poll_cq(); };
    const Case cases[] = {
        {{"ok handle=5 va=0x1000 rkey=0x105 length=4095 access=7"}, reg_mr, "length 4095"},
        {{"ok handle=5 va=0x1000 rkey=0x105 length=4096 access=3"}, reg_mr, "access 3"},
        {{"ok handle=5 va=0xfffffffffffff001 rkey=0x105 length=4096 access=7"}, reg_mr, "beyond 2^64"},
        {{"ok handle=5 va=0x1000 length=4096 access=7"}, reg_mr, "missing rkey"},
        {{"ok handle=5 va=0x1000 rkey=0x100000000 length=4096 access=7"}, reg_mr, "rkey"},
        {{reg, reg},
         [](AgentClient& c) {
             c.reg_mr(4096, 7);
             c.reg_mr(4096, 7);
         },
         "live region"},
        {{"ok data=0011"}, [](AgentClient& c) { c.read_mem(5, 0, 3); }, "not the 3 asked for"},
        {{"ok data=0g11"}, [](AgentClient& c) { c.read_mem(5, 0, 2); }, "not hex"},
        {{"ok refused="}, [](AgentClient& c) { c.post(PostOp{}); }, "empty refusal"},
        {{"ok n=2\n" + wc + "\nxx y=1"}, poll_cq, "not a 'wc' line"},
        {{"ok n=1\n" + replace(wc, "op=write", "op=fly")}, poll_cq, "unknown op"},
        {{"ok n=1\n" + replace(wc, "status=Success", "status=Fine")}, poll_cq, "unknown status"},
        {{"ok n=1\n" + wc + " imm=5"}, poll_cq, "not a receive"},
        {{"ok n=1\n" + replace(wc, "stream=0", "stream=65536")}, poll_cq, "stream"},
        {{"ok n=5000"}, poll_cq, "n="},
        {{"ok n=1\nev kind=sideways conn=1 initiator=0 status=Success"},
         [](AgentClient& c) { c.poll_events(); },
         "kind"},
        {{"ok n=1\nev kind=up conn=1 initiator=0 status=ConnectionFailed"},
         [](AgentClient& c) { c.poll_events(); },
         "up event with status"},
        {{"ok n=1\nev kind=up conn=1 initiator=2 status=Success"},
         [](AgentClient& c) { c.poll_events(); },
         "initiator"},
        {{"ok unknown_dcid=0"}, [](AgentClient& c) { c.counters(); }, "missing counter"},
        {{"ok conn=x"}, [](AgentClient& c) { c.connect(model::Address{}, ConnOffer{}); }, "conn"},
        {{"ok version=2 agent=x"}, [](AgentClient& c) { c.hello(); }, "version 2"},
        {{"err"}, [](AgentClient& c) { c.listen(true); }, "without a code"},
    };
    for (const auto& k : cases) {
        AgentClient c(std::make_unique<ScriptedLink>(k.responses), "liar");
        const std::string e = dut_error([&] { k.call(c); });
        EXPECT_NE(e.find("bad response"), std::string::npos) << e;
        EXPECT_NE(e.find(k.why), std::string::npos) << e;
    }
}

TEST(AgentClient, AnUnframedResponseRetiresTheLink) {
    AgentClient c(std::make_unique<ScriptedLink>(std::vector<std::string>{"ok n=100", "ok"}), "a");
    EXPECT_NE(dut_error([&] { c.poll_events(); }).find("poll_events: bad response 'ok n=100'"), std::string::npos);
    EXPECT_NE(dut_error([&] { c.listen(true); }).find("listen: not usable after: poll_events: bad response"),
              std::string::npos);
    // A field that contradicts the request leaves the framing, and the link, intact.
    AgentClient d(std::make_unique<ScriptedLink>(std::vector<std::string>{"ok data=00", "ok"}), "b");
    EXPECT_NE(dut_error([&] { d.read_mem(1, 0, 2); }).find("not the 2 asked for"), std::string::npos);
    EXPECT_NO_THROW(d.listen(true));
}

TEST(AgentClient, ErrResponsesNameTheRequest) {
    AgentClient c(std::make_unique<ScriptedLink>(std::vector<std::string>{"err no_resources out of memory"}), "a");
    EXPECT_EQ(dut_error([&] { c.reg_mr(1 << 30, 7); }), "agent a: reg_mr: err no_resources out of memory");
}

TEST(AgentClient, RequestsAreWellFormed) {
    auto link =
        std::make_unique<ScriptedLink>(std::vector<std::string>{"ok", "ok", "ok", "ok refused=\"no such thing\""});
    ScriptedLink* l = link.get();
    AgentClient c(std::move(link), "a");
    c.listen(false);
    c.close(3, true);
    PostOp p;
    p.op = model::WorkOp::WriteImm;
    p.conn = 1;
    p.stream = 2;
    p.wr_id = 3;
    p.region = 4096;
    p.offset = 5;
    p.length = 6;
    p.remote_va = 0x7000;
    p.rkey = 0x10d;
    p.imm = 9;
    EXPECT_EQ(c.post(p), "");
    p.op = model::WorkOp::Send;
    EXPECT_EQ(c.post(p), "no such thing");
    ASSERT_EQ(l->sent.size(), 4u);
    EXPECT_EQ(l->sent[0], "listen off");
    EXPECT_EQ(l->sent[1], "close conn=3 abort=1");
    EXPECT_EQ(
        l->sent[2],
        "post op=write_imm conn=1 stream=2 wr_id=3 region=4096 offset=5 length=6 remote_va=0x7000 rkey=0x10d imm=0x9");
    EXPECT_EQ(l->sent[3], "post op=send conn=1 stream=2 wr_id=3 region=4096 offset=5 length=6");
    // Every request the client sends is one the server accepts syntactically.
    Bench b;
    for (const auto& s : l->sent) EXPECT_NE(code_of(b.ask(s)), "syntax") << s;
}

TEST(AgentClient, ReportsAStallAndStopsUsingTheLink) {
    AgentClient c(std::make_unique<ScriptedLink>(std::vector<std::string>{}), "unix:/tmp/a.sock", 50);
    int idles = 0;
    c.idle = [&] { ++idles; };
    const auto t0 = std::chrono::steady_clock::now();
    const std::string e = dut_error([&] { c.reg_mr(4096, 7); });
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(e, "agent unix:/tmp/a.sock: stalled: no response to 'reg_mr length=4096 access=7' within 50 ms");
    EXPECT_GE(ms, 50);
    EXPECT_LT(ms, 1000);
    EXPECT_GT(idles, 0) << "the wire is polled while waiting";
    EXPECT_NE(dut_error([&] { c.info(); }).find("info: not usable after: stalled"), std::string::npos);
}

TEST(AgentClient, UnreachableAgent) {
    EXPECT_EQ(dut_error([] { connect_agent("unix:/nonexistent-dir/a.sock"); }),
              "agent unix:/nonexistent-dir/a.sock: cannot connect: No such file or directory");
    EXPECT_NE(dut_error([] { connect_agent("no-port-here"); }).find("agent no-port-here: cannot connect: "),
              std::string::npos);
    EXPECT_NE(dut_error([] { connect_agent("127.0.0.1:1"); }).find("agent 127.0.0.1:1: cannot connect: "),
              std::string::npos);
}

// connect_agent's socket link: responses split across writes, a multi-line response, the agent
// closing the connection.
TEST(AgentClient, OverAUnixSocket) {
    const std::string path = "/tmp/mroce-agent-test-" + std::to_string(getpid()) + ".sock";
    ::unlink(path.c_str());
    const int lfd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strcpy(sa.sun_path, path.c_str());
    ASSERT_EQ(::bind(lfd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    ASSERT_EQ(::listen(lfd, 1), 0);
    std::thread agent([&] {
        const int c = ::accept(lfd, nullptr, nullptr);
        auto read_line = [&] {
            std::string l;
            for (char ch; ::read(c, &ch, 1) == 1 && ch != '\n';) l += ch;
            return l;
        };
        auto say = [&](const std::string& s) { EXPECT_EQ(::write(c, s.data(), s.size()), ssize_t(s.size())); };
        EXPECT_EQ(read_line(), "hello version=1");
        say("ok vers");
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        say("ion=1 agent=fake\r\n");
        EXPECT_EQ(read_line(), "poll_events max=64");
        say("ok n=2\nev kind=up conn=1 initiator=1 status=Success\nev kind=down conn=1 initiator=1 ");
        say("status=ConnectionFailed\n");
        EXPECT_EQ(read_line(), "reset");
        ::close(c);
    });
    AgentClient c(connect_agent("unix:" + path), "unix:" + path, 2000);
    EXPECT_EQ(c.hello(), 1u);
    const auto ev = c.poll_events();
    ASSERT_EQ(ev.size(), 2u);
    EXPECT_FALSE(ev[1].up);
    EXPECT_EQ(ev[1].status, model::Status::ConnectionFailed);
    EXPECT_EQ(dut_error([&] { c.reset(); }), "agent unix:" + path + ": reset: connection closed by the agent");
    agent.join();
    ::close(lfd);
    ::unlink(path.c_str());
}

}  // namespace
}  // namespace mroce::conform
