// agent_probe: checks an agent and its DUT end to end through AgentDut, the way the runner will:
// hello + info, reg_mr with a write_mem/read_mem round trip, an unknown request (must be `err`),
// listen, then a hand-built CONNECT on the runner's own wire port, which must bring the DUT's
// ACCEPT back (and an Up event on the control channel).
//
//   agent_probe --agent unix:/tmp/agent.sock --wire af_packet:mra0 --mac 02:00:00:00:0a:99 --ip 198.18.0.1 [--quit]
//
// Exit 0: every check passed; 1: a check failed; 2: bad options or the DUT could not be reached.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>

#include "codec/ref_codec.hpp"
#include "conform/agent_dut.hpp"
#include "conform/agent_server.hpp"
#include "model/types.hpp"

using namespace mroce;
using namespace mroce::conform;

namespace {

int failures = 0;
void check(bool ok, const std::string& what) {
    std::cout << (ok ? "ok: " : "FAIL: ") << what << std::endl;
    if (!ok) ++failures;
}

ref::Packet connect_packet(const DutInfo& dut, const model::Address& self, uint32_t scid) {
    const model::Config defaults;  // the spec's default offer (appendix A)
    ref::Packet p{};
    p.eth_dst = dut.address.mac;
    p.eth_src = self.mac;
    p.ipv6 = dut.address.ipv6;
    p.ip_src = self.ip;
    p.ip_dst = dut.address.ip;
    p.dscp = defaults.dscp_control;
    p.ecn = 0;  // connection control is Not-ECT [R-ENC-9]
    p.ipv4_df = true;
    p.ttl = 64;
    p.udp_sport = 49152 + 1234;  // [R-ENC-6]
    p.udp_dport = dut.udp_port;
    p.version = 1;
    p.opcode = ref::Opcode::Connect;
    p.dcid = 0;  // [R-CONN-1]
    p.path_id = 0;
    p.scid = scid;
    p.isn = 0xFFFFFF00u;  // near 2^32
    p.path_count = defaults.path_count;
    p.stream_count = defaults.stream_count;
    p.max_payload = defaults.max_payload;
    p.window_cap = defaults.window_cap;
    return p;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"agent_probe: checks an agent and its DUT end to end (AGENT_PROTOCOL.md)"};
    AgentDutOptions o;
    std::string mac = "02:00:00:00:0a:99", ip = "198.18.0.1";
    bool quit = false;
    unsigned wait_ms = 2000;
    app.add_option("--agent", o.agent, "Control address: unix:/path or HOST:PORT")->required();
    app.add_option("--wire", o.wire, "This side's DPDK port spec (af_packet:IF, memif:client:PATH, ...)")->required();
    app.add_option("--mac", mac, "This side's MAC")->capture_default_str();
    app.add_option("--ip", ip, "This side's IP")->capture_default_str();
    app.add_option("--lcores", o.lcores, "EAL --lcores")->capture_default_str();
    app.add_option("--file-prefix", o.file_prefix, "EAL --file-prefix");
    app.add_option("--timeout-ms", o.timeout_ms, "Per control request")->capture_default_str();
    app.add_option("--wait-ms", wait_ms, "How long to wait for the ACCEPT")->capture_default_str();
    app.add_flag("--quit", quit, "End the agent when done");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) { return app.exit(e); }
    model::Address self;
    const auto m = agent::parse_mac(mac);
    if (!m || !agent::parse_ip(ip, self.ipv6, self.ip)) {
        std::cerr << "agent_probe: bad --mac or --ip\n";
        return 2;
    }
    self.mac = *m;

    std::unique_ptr<AgentDut> dut;
    try {
        dut = std::make_unique<AgentDut>(o);
    } catch (const std::exception& e) {
        std::cerr << "agent_probe: " << e.what() << "\n";
        return 2;
    }
    try {
        const DutInfo& info = dut->info();
        std::cout << "info: " << info.name << ", mac " << agent::mac_text(info.address.mac) << ", ip "
                  << agent::ip_text(info.address.ipv6, info.address.ip) << ", udp " << info.udp_port << ", paths "
                  << info.max_paths << ", streams " << info.max_streams << ", payload " << info.max_payload
                  << std::endl;
        dut->reset();

        const Region r =
            dut->reg_mr(65536, model::access::kLocalWrite | model::access::kRemoteWrite | model::access::kRemoteRead);
        std::cout << "reg_mr: handle " << r.handle << " va 0x" << std::hex << r.va << " rkey 0x" << r.rkey << std::dec
                  << std::endl;
        std::vector<uint8_t> pattern(4096);
        for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = uint8_t(i * 13 + 1);
        dut->write_mem(r.handle, 1000, pattern);
        check(dut->read_mem(r.handle, 1000, pattern.size()) == pattern, "write_mem / read_mem round trip");

        std::string err;
        try {
            dut->client().request("no_such_request x=1");
        } catch (const DutError& e) { err = e.what(); }
        check(err.find("no_such_request: err unknown") != std::string::npos,
              "an unknown request gets err unknown (" + err + ")");

        dut->listen(true);
        const uint32_t scid = 0x5107;
        const ref::Packet c = connect_packet(info, self, scid);
        const std::vector<uint8_t> frame = ref::encode(c, {});
        const Micros sent_at = dut->now();
        dut->send(frame);
        std::cout << "sent:     " << ref::canonical(ref::decode(frame, info.udp_port), frame) << std::endl;

        std::optional<ref::Packet> accept;
        Micros got_at = 0;
        size_t others = 0;
        while (!accept && dut->now() < sent_at + uint64_t(wait_ms) * 1000) {
            dut->run_until(sent_at + uint64_t(wait_ms) * 1000);
            for (const WireFrame& f : dut->receive()) {
                const auto d = ref::decode(f.bytes, info.udp_port);
                std::cout << "received: " << ref::canonical(d, f.bytes) << std::endl;
                if (d.ok() && d.packet.opcode == ref::Opcode::Accept && d.packet.dcid == scid) {
                    accept = d.packet;
                    got_at = f.at;
                } else {
                    ++others;
                }
            }
        }
        check(accept.has_value(), "the DUT answered the CONNECT with an ACCEPT");
        if (accept) {
            const ref::Packet& a = *accept;
            std::cout << "ACCEPT after " << got_at - sent_at << " us" << std::endl;
            check(a.scid != 0, "ACCEPT carries a non-zero SCID");
            check(a.path_id == 0, "ACCEPT on path 0");
            check(a.eth_dst == self.mac && a.eth_src == info.address.mac, "ACCEPT between the right MACs");
            check(a.ip_dst == self.ip && a.ip_src == info.address.ip, "ACCEPT between the right IPs");
            check(a.udp_dport == info.udp_port && a.udp_sport >= 49152, "ACCEPT's UDP ports");
            check(a.ecn == 0, "ACCEPT is Not-ECT");
            check(a.path_count == std::min(c.path_count, info.max_paths) &&
                      a.stream_count == std::min(c.stream_count, info.max_streams) &&
                      a.max_payload == std::min(c.max_payload, info.max_payload) &&
                      a.window_cap == std::min(c.window_cap, info.window_cap),
                  "ACCEPT carries the minimum of both offers");
        }
        std::vector<DutEvent> ev;
        for (int i = 0; i < 100 && ev.empty(); ++i) {
            ev = dut->poll_events();
            if (ev.empty()) dut->run_until(dut->now() + 1000);
        }
        check(ev.size() == 1 && ev[0].up && !ev[0].initiator, "the DUT reports the connection up, as responder");
        const auto k = dut->counters();
        check(k.count("unknown_dcid") && k.count("decode_errors.Icrc"), "counters");
        std::cout << "counters: rx_frames " << (k.count("rx_frames") ? k.at("rx_frames") : 0) << ", tx_frames "
                  << (k.count("tx_frames") ? k.at("tx_frames") : 0) << "; other frames seen " << others << std::endl;
        dut->reset();
        if (quit) dut->quit();
    } catch (const DutError& e) {
        std::cout << "FAIL: " << e.what() << std::endl;
        return 1;
    }
    std::cout << (failures ? "probe FAILED" : "probe passed") << std::endl;
    return failures ? 1 : 0;
}
