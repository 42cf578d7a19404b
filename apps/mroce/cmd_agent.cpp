// `mroce agent`: the reference conformance agent (harness/conform/AGENT_PROTOCOL.md).
//
//   mroce agent --port af_packet:mrb0 --listen unix:/tmp/agent.sock --mac 02:00:00:00:0b:99 --ip 198.18.0.2
//   mroce agent --port memif:server:/tmp/wire.sock --listen 127.0.0.1:4790
//
// One thread: the engine's poll loop (Device::progress) runs without pause, and between turns the
// control socket is polled without blocking; complete request lines go to the AgentServer
// (harness/conform/src/agent_server.cpp), which calls the Device on this same thread.
#include "cmd_agent.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "conform/agent_server.hpp"
#include "dpdk/engine_port.hpp"
#include "dpdk/io.hpp"
#include "mroce/mroce.hpp"

namespace mroce::cli {
namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

// The control socket: a non-blocking listener and at most one client. A second client is told
// `err busy` and closed.
class ControlSocket {
public:
    explicit ControlSocket(const std::string& addr) {
        if (addr.starts_with("unix:")) {
            path_ = addr.substr(5);
            sockaddr_un sa{};
            sa.sun_family = AF_UNIX;
            if (path_.empty() || path_.size() >= sizeof sa.sun_path)
                throw std::invalid_argument("bad socket path in " + addr);
            const bool abstract = path_[0] == '@';
            std::memcpy(sa.sun_path, path_.data(), path_.size());
            if (abstract) sa.sun_path[0] = '\0';
            struct stat st {};
            if (!abstract && ::stat(path_.c_str(), &st) == 0) {
                if (!S_ISSOCK(st.st_mode)) throw std::invalid_argument(path_ + " exists and is not a socket");
                ::unlink(path_.c_str());  // a stale socket of an earlier agent
            }
            if (abstract) path_.clear();  // nothing to remove at exit
            fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            const socklen_t len = socklen_t(offsetof(sockaddr_un, sun_path) + addr.size() - 5 + (abstract ? 0 : 1));
            if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&sa), len) != 0 || ::listen(fd_, 4) != 0)
                throw std::runtime_error("cannot listen on " + addr + ": " + std::strerror(errno));
            name_ = addr;
            return;
        }
        const size_t colon = addr.rfind(':');
        if (colon == std::string::npos || colon + 1 == addr.size())
            throw std::invalid_argument("--listen: '" + addr + "' is not unix:/path or HOST:PORT");
        std::string host = addr.substr(0, colon);
        if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
        addrinfo hints{};
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_PASSIVE;
        addrinfo* res = nullptr;
        const int gai =
            getaddrinfo(host.empty() ? nullptr : host.c_str(), addr.substr(colon + 1).c_str(), &hints, &res);
        if (gai != 0) throw std::invalid_argument("--listen " + addr + ": " + gai_strerror(gai));
        std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
        fd_ = ::socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        const int one = 1;
        if (fd_ >= 0) setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (fd_ < 0 || ::bind(fd_, res->ai_addr, res->ai_addrlen) != 0 || ::listen(fd_, 4) != 0)
            throw std::runtime_error("cannot listen on " + addr + ": " + std::strerror(errno));
        // The port actually bound (":0" picks one).
        sockaddr_storage ss{};
        socklen_t sl = sizeof ss;
        getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &sl);
        char hbuf[NI_MAXHOST], pbuf[NI_MAXSERV];
        getnameinfo(reinterpret_cast<sockaddr*>(&ss), sl, hbuf, sizeof hbuf, pbuf, sizeof pbuf,
                    NI_NUMERICHOST | NI_NUMERICSERV);
        name_ = (ss.ss_family == AF_INET6 ? "[" + std::string(hbuf) + "]" : std::string(hbuf)) + ":" + pbuf;
    }
    ~ControlSocket() {
        drop_client();
        if (fd_ >= 0) ::close(fd_);
        if (!path_.empty()) ::unlink(path_.c_str());
    }
    const std::string& name() const { return name_; }
    uint64_t clients() const { return clients_; }

    // Reads what is there, answers every complete line, accepts a new client. Never blocks.
    void poll(conform::AgentServer& server, bool quiet) {
        serve(server, quiet);  // first, so that a client that left is gone before the next is accepted
        for (int c; (c = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) {
            // A client that closes and connects again may have closed after the serve() above: its
            // close came before this connect, so it shows now.
            serve(server, quiet);
            if (client_ >= 0) {
                static constexpr char kBusy[] = "err busy another client is connected\n";
                (void)!::send(c, kBusy, sizeof kBusy - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
                ::close(c);
                continue;
            }
            const int one = 1;
            setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // fails harmlessly on Unix sockets
            client_ = c;
            ++clients_;
            requests_at_connect_ = server.stats().requests;
            if (!quiet) std::cerr << "agent: client connected\n";
            serve(server, quiet);  // its first request may be there already
        }
    }

    // Sends what is pending, waiting up to wait_ms for the client to take it.
    void flush(int wait_ms) {
        while (client_ >= 0 && !out_.empty()) {
            const ssize_t n = ::send(client_, out_.data(), out_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n > 0) {
                out_.erase(0, size_t(n));
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                if (wait_ms == 0) return;
                pollfd p{client_, POLLOUT, 0};
                if (::poll(&p, 1, wait_ms) <= 0) return;
                continue;
            }
            drop_client();
        }
    }

private:
    void serve(conform::AgentServer& server, bool quiet) {
        if (client_ < 0) return;
        char buf[65536];
        bool gone = false;
        for (;;) {
            const ssize_t n = ::recv(client_, buf, sizeof buf, MSG_DONTWAIT);
            if (n > 0) {
                in_.append(buf, size_t(n));
                continue;
            }
            gone = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
            break;
        }
        // The lines that came before a close are still answered (a client may send and shut down).
        size_t start = 0;
        for (size_t lf; !server.quit_requested() && (lf = in_.find('\n', start)) != std::string::npos; start = lf + 1)
            out_ += server.handle(std::string_view(in_).substr(start, lf - start));
        in_.erase(0, start);
        if (!gone && in_.size() > conform::agent::kMaxLine + 1) {  // the next line's start is lost
            out_ += "err syntax line longer than " + std::to_string(conform::agent::kMaxLine) + " bytes\n";
            gone = true;
        }
        flush(gone ? 100 : 0);
        if (gone) {
            if (!quiet)
                std::cerr << "agent: client left after " << server.stats().requests - requests_at_connect_
                          << " requests\n";
            drop_client();
        }
    }

public:
    void drop_client() {
        if (client_ >= 0) ::close(client_);
        client_ = -1;
        in_.clear();
        out_.clear();
    }

private:
    int fd_ = -1;
    int client_ = -1;
    std::string path_;  // a Unix socket file to remove at exit
    std::string name_;
    std::string in_, out_;
    uint64_t clients_ = 0, requests_at_connect_ = 0;
};

struct Opts {
    std::string listen;
    std::string name;
    uint16_t max_paths = 256, max_streams = 65535, max_payload = 8192, window_cap = 256;
    uint32_t rto_min_us = 100, rto_init_us = 1000, rto_max_us = 6250, pto_min_us = 20;
    uint32_t peer_timeout_us = 50000, rnr_default_us = 100, keepalive_us = 100000, connect_retry_us = 1000;
    uint32_t home_probe_us = 200, home_probe_max_us = 400;  // [R-PATH-10]
    uint64_t max_mr_mb = 1024;
    bool quiet = false;
    dpdk::IoOptions io;
};

nlohmann::json run(const Opts& o, bool quiet) {
    dpdk::IoOptions io = o.io;
    io.mbuf_priv = dpdk::kEnginePriv;
    if (io.eal.file_prefix.empty()) io.eal.file_prefix = "mroce-agent-" + std::to_string(getpid());
    dpdk::IoContext ctx(io);
    dpdk::EnginePort port(ctx, {0});
    dpdk::DpdkClock clock;
    const dpdk::PlaneAddr& a = ctx.addr(0);
    DeviceConfig cfg;
    cfg.self.mac = a.mac.b;
    cfg.self.ipv6 = a.ip.v6;
    cfg.self.ip = a.ip.b;
    cfg.udp_port = ctx.udp_port();
    cfg.offer = ConnParams{o.max_paths, o.max_streams, o.max_payload, o.window_cap};
    cfg.rto_min_us = o.rto_min_us;
    cfg.rto_init_us = o.rto_init_us;
    cfg.rto_max_us = o.rto_max_us;
    cfg.pto_min_us = o.pto_min_us;
    cfg.peer_timeout_us = o.peer_timeout_us;
    cfg.rnr_default_us = o.rnr_default_us;
    cfg.keepalive_us = o.keepalive_us;
    cfg.connect_retry_us = o.connect_retry_us;
    cfg.home_probe_us = o.home_probe_us;
    cfg.home_probe_max_us = o.home_probe_max_us;
    conform::AgentServerOptions so;
    so.name = o.name.empty() ? std::string("mroce-engine ") + MROCE_VERSION + " (agent, " + io.ports[0] + ")" : o.name;
    so.agent = std::string("mroce agent ") + MROCE_VERSION;
    so.max_region_bytes = o.max_mr_mb << 20;
    // DPDK's af_packet PMD joins a PACKET_FANOUT group with PACKET_FANOUT_FLAG_DEFRAG: the kernel
    // reassembles IPv4 fragments before the port sees them (a lone one never comes) [R-ENC-3].
    so.ipv4_fragments = !io.ports[0].starts_with("af_packet:");
    conform::AgentServer server(cfg, port, clock, so);
    ControlSocket control(o.listen);

    const std::string mac = conform::agent::mac_text(cfg.self.mac),
                      ip = conform::agent::ip_text(cfg.self.ipv6, cfg.self.ip);
    std::cout << "agent ready on " << control.name() << ", port " << io.ports[0] << ", mac " << mac << ", ip " << ip
              << std::endl;

    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);

    const uint64_t t0 = clock.now_us();
    uint64_t last_poll = 0;
    while (!g_stop && !server.quit_requested()) {
        server.progress();
        port.service();
        // The socket every 20 µs: often enough for the runner, rarely enough for the data path.
        const uint64_t now = clock.now_us();
        if (now - last_poll >= 20) {
            last_poll = now;
            control.poll(server, quiet);
        }
    }
    control.flush(1000);  // the `ok` of quit
    const auto c = ctx.port(0).counters();
    nlohmann::json r{{"command", "agent"},
                     {"listen", control.name()},
                     {"port", io.ports[0]},
                     {"mac", mac},
                     {"ip", ip},
                     {"clients", control.clients()},
                     {"requests", server.stats().requests},
                     {"errors", server.stats().errors},
                     {"resets", server.stats().resets},
                     {"rx_frames", c.rx_frames},
                     {"tx_frames", c.tx_frames},
                     {"seconds", double(clock.now_us() - t0) / 1e6},
                     {"stopped_by", server.quit_requested() ? "quit" : "signal"}};
    return r;
}

}  // namespace

Runner add_agent(CLI::App& app, const GlobalOptions& global) {
    auto* sub = app.add_subcommand("agent",
                                   "Conformance agent: serves the control protocol (harness/conform/AGENT_PROTOCOL.md) "
                                   "for the engine on a DPDK port");
    auto o = std::make_shared<Opts>();
    sub->add_option("--listen", o->listen, "Control address: unix:/path or HOST:PORT")->required();
    sub->add_option("--name", o->name, "Name reported by `info` (default: mroce-engine VERSION (agent, PORT))");
    sub->add_option("--max-paths", o->max_paths, "Path Count offer (1..256)")->capture_default_str();
    sub->add_option("--max-streams", o->max_streams, "Stream Count offer (1..65535)")->capture_default_str();
    sub->add_option("--max-payload", o->max_payload, "Max Payload offer (256..8192, multiple of 64)")
        ->capture_default_str();
    sub->add_option("--window-cap", o->window_cap, "Window Cap offer (1..256)")->capture_default_str();
    sub->add_option("--rto-min-us", o->rto_min_us, "RTO minimum")->capture_default_str();
    sub->add_option("--rto-init-us", o->rto_init_us, "Initial RTO")->capture_default_str();
    sub->add_option("--rto-max-us", o->rto_max_us, "RTO maximum (at most peer timeout / 8)")->capture_default_str();
    sub->add_option("--pto-min-us", o->pto_min_us, "Tail-probe timeout minimum")->capture_default_str();
    sub->add_option("--peer-timeout-us", o->peer_timeout_us, "PEER_TIMEOUT")->capture_default_str();
    sub->add_option("--rnr-default-us", o->rnr_default_us, "RNR wait when a NAK carries no detail")
        ->capture_default_str();
    sub->add_option("--keepalive-us", o->keepalive_us, "KEEPALIVE: PROBE interval of an idle connection")
        ->capture_default_str();
    sub->add_option("--connect-retry-us", o->connect_retry_us, "CONNECT_RETRY: interval of CONNECT retries")
        ->capture_default_str();
    sub->add_option("--home-probe-us", o->home_probe_us,
                    "HOME_PROBE: first probe of a re-pathed path's home route [R-PATH-10]")
        ->capture_default_str()
        ->check(CLI::Range(1u, 1000000u));
    sub->add_option("--home-probe-max-us", o->home_probe_max_us, "HOME_PROBE_MAX: the doubling probe interval's cap")
        ->capture_default_str()
        ->check(CLI::Range(1u, 1000000u));
    sub->add_option("--max-mr-mb", o->max_mr_mb, "Largest region reg_mr allocates (MiB)")->capture_default_str();
    sub->add_flag("-q,--quiet", o->quiet, "No client connect/leave lines on stderr");
    dpdk::add_io_options(*sub, o->io);
    return [o, &global]() -> int {
        if (o->io.ports.size() != 1) {
            std::cerr << "mroce agent: give exactly one --port (got " << o->io.ports.size() << ")\n";
            return kExitMisuse;
        }
        nlohmann::json r;
        try {
            r = run(*o, o->quiet);
        } catch (const std::exception& e) {
            std::string msg = e.what();
            for (char& ch : msg)
                if (ch == '\n' || ch == '\r') ch = ' ';
            std::cerr << "mroce agent: " << msg << "\n";
            return kExitMisuse;
        }
        std::cout << "agent stopped by " << r["stopped_by"].get<std::string>() << " after " << r["requests"]
                  << " requests from " << r["clients"] << " clients\n";
        if (global.json) std::cout << r.dump() << "\n";
        return kExitOk;
    };
}

}  // namespace mroce::cli
