// The RoCEv2 baseline endpoint in a simulated host, beside the engine (fabric/mroce_host.hpp), so
// that scenarios can compare them over the same fabric. It models what a commodity RoCEv2 NIC does
// for Reliable Connected QPs carrying one RDMA Write with immediate per flow:
//
// Modelled:
// - Frames on the wire, whole: Ethernet (14) + IPv4 (20, valid header checksum, DF, TTL 64; DSCP 26
//   and ECT(0) on data, DSCP 26 and Not-ECT on ACK/NAK, DSCP 48 and Not-ECT on CNP) + UDP (8, dst
//   port 4791, one fixed source port per QP, checksum 0 as RoCEv2 allows) + BTH (12) + RETH (16, on
//   Write First/Only) + payload (path MTU, default 4096) + ImmDt (4, on Write Last/Only with
//   immediate) + ICRC (4). ACK/NAK = BTH opcode 0x11 + AETH (4); CNP = BTH opcode 0x81 + 16 reserved
//   bytes. The ICRC is a CRC-32 (Ethernet polynomial) over the IBA-masked headers (8 bytes of 0xFF,
//   IPv4 TOS/TTL/checksum and UDP checksum and BTH resv8a as ones) and the payload; it is checked on
//   receive (a switch's CE mark does not break it), but it has not been compared with a real NIC's.
// - One QP per flow, one path per QP (the fixed UDP source port picks the ECMP path and the plane).
// - Go-back-N: the responder accepts only its expected PSN (ePSN) and writes the payload at that
//   packet's offset of the receive buffer; a packet beyond ePSN draws one NAK (PSN sequence error)
//   per ePSN and later out-of-order packets are dropped silently; duplicates are re-ACKed. ACKs are
//   coalesced (every ack_every packets, and always on the last packet of the message and on a packet
//   with the AckReq bit). The requester rewinds to the NAKed PSN on a NAK and to the oldest unacked
//   PSN on the retransmission timeout (restarted on progress), and gives up after retry_cnt
//   consecutive timeouts without progress (the QP goes to error, as with IBV_WC_RETRY_EXC_ERR).
// - DCQCN (Zhu et al., SIGCOMM 2015) at both ends: the notification point sends at most one CNP per
//   QP per cnp_interval_us when CE-marked data arrives; the reaction point cuts the rate on each CNP
//   (Rt = Rc, Rc = Rc(1 - alpha/2), alpha = (1 - g) alpha + g), decays alpha every alpha_timer_us
//   without a CNP, and raises the rate on its timer and byte counter: fast recovery for F steps
//   (Rc = (Rt + Rc) / 2), then additive (Rt += R_AI) and hyper increase (Rt += i R_HAI). Starts at
//   line rate. Packets are paced at the current rate (the next after wire_bytes * 8 / Rc).
// - The NIC transmit port: each host serves its QPs round-robin and hands a data frame to its NIC
//   port only when that port has no frame waiting (one on the wire, at most one queued), so a PFC
//   pause stops the QPs as it does in a NIC, instead of piling frames up behind it.
//
// Not modelled: connection setup (the QPs exist at time 0; both ends agree on the initial PSN),
// memory registration and keys (the RETH carries them but nothing checks them), PCIe and NIC
// processing latency, a receive-side limit (the NIC takes every frame at line rate), RNR, reads,
// sends, more than one message per QP, end-to-end credits, the DCQCN rate-reduce monitor period of
// real NICs, the NIC's congestion-control of ACKs, per-priority PFC (the fabric's PFC is one class).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fabric/config.hpp"
#include "fabric/fabric.hpp"
#include "fabric/sim.hpp"

namespace mroce::fabric {

struct RoceOptions {
    uint32_t mtu = 4096;     // path MTU: payload bytes per packet
    uint32_t ack_every = 4;  // responder ACK coalescing (packets); the last packet is always ACKed
    // Retransmission timeout. IBA encodes it as 4.096 us * 2^local_ack_timeout; 2^8 gives 1.05 ms,
    // about the shortest that deployments set (the Linux default of 14 is 67 ms, which would only
    // make go-back-N's tail worse). Far above the fabric's RTT (~10 us), so timeouts are not spurious.
    double rto_us = 4.096 * 256;
    uint32_t retry_cnt = 7;     // consecutive timeouts without progress before the QP errors; 0: never
    uint64_t window_bytes = 0;  // cap on unacked bytes in flight; 0: none (as IBA: rate only)
    uint8_t dscp_data = 26;     // data, ACK and NAK
    uint8_t dscp_cnp = 48;      // CNP (Mellanox's default CNP priority)

    // DCQCN (Zhu et al., SIGCOMM 2015, section 3 and table of parameters). These are the paper's
    // constants as best recalled: g = 1/256, the alpha and rate-increase timers 55 us, byte counter
    // 10 MB, F = 5, R_AI = 40 Mb/s; R_HAI is given here as 100 Mb/s (the brief's value; the paper's
    // hyper-increase step is less certain). CNP interval 50 us at the notification point.
    bool dcqcn = true;  // false: no CNPs, no rate control (line-rate pacing)
    double cnp_interval_us = 50;
    double g = 1.0 / 256;
    double initial_alpha = 1.0;
    double alpha_timer_us = 55;
    double rate_timer_us = 55;
    uint64_t byte_counter = 10ull * 1000 * 1000;
    uint32_t fast_recovery_steps = 5;
    double rate_ai_gbps = 0.04;
    double rate_hai_gbps = 0.1;
    double rate_min_gbps = 0.1;  // floor of Rc (NICs have a minimum rate; 100 Mb/s here)
};

// The switch marking DCQCN recommends (K_min 5 KB, K_max 200 KB, P_max 1%, RED-like on the egress
// queue), for FabricConfig::ecn of RoCE runs. The paper tuned it for 40 Gb/s links; at 100 Gb/s
// vendors often scale K_min/K_max up, which a caller can do after this.
FabricConfig dcqcn_marking(FabricConfig config);

struct RoceCounters {
    uint64_t data_packets = 0, retransmissions = 0, timeouts = 0, naks_sent = 0, naks_received = 0;
    uint64_t acks_sent = 0, cnps_sent = 0, cnps_received = 0, rate_cuts = 0, ce_seen = 0;
    uint64_t duplicates = 0, out_of_order_dropped = 0, bad_frames = 0, icrc_errors = 0;
};

// RoCEv2 frame layout and codec (exposed for the tests).
namespace roce {

inline constexpr uint16_t kUdpPort = 4791;
enum Opcode : uint8_t {
    kWriteFirst = 0x06,
    kWriteMiddle = 0x07,
    kWriteLast = 0x08,
    kWriteLastImm = 0x09,
    kWriteOnly = 0x0A,
    kWriteOnlyImm = 0x0B,
    kAck = 0x11,
    kCnp = 0x81,
};
inline constexpr uint8_t kSyndromeAck = 0x1F;     // ACK, end-to-end credits not used
inline constexpr uint8_t kSyndromeNakSeq = 0x60;  // NAK, PSN sequence error

struct Packet {
    uint32_t src_host = 0, dst_host = 0;
    uint16_t sport = 0;
    uint8_t dscp = 26, ecn = 0;  // ecn: RFC 3168 codepoint (2: ECT(0), 3: CE)
    uint8_t opcode = 0;
    bool ack_req = false;
    uint32_t dest_qp = 0, psn = 0;
    uint8_t syndrome = 0;  // AETH (opcode kAck)
    uint32_t msn = 0;
    uint64_t va = 0;  // RETH (Write First/Only)
    uint32_t rkey = 0, dma_len = 0;
    uint32_t imm = 0;  // ImmDt (Write Last/Only with immediate)
    const uint8_t* payload = nullptr;
    uint32_t payload_len = 0;
};

// Header bytes (everything but the payload) of a frame with this opcode.
uint32_t overhead(uint8_t opcode);
// Writes the frame into out (room for overhead + payload_len) and returns its length.
uint32_t build(const Packet& p, uint8_t* out);
enum class ParseError { None, NotRoce, Malformed, Icrc };
// Reads a frame; payload points into f.
ParseError parse(const uint8_t* f, uint32_t len, Packet* p);
uint32_t icrc(const uint8_t* frame, uint32_t len_without_icrc);

}  // namespace roce

class RoceHost {
public:
    RoceHost(Fabric& fabric, uint32_t host, const RoceOptions& options);
    ~RoceHost();
    RoceHost(const RoceHost&) = delete;
    RoceHost& operator=(const RoceHost&) = delete;

    uint32_t host() const noexcept { return host_; }
    // QP numbers are allocated here; both ends of a flow are created before it is posted.
    uint32_t alloc_qpn();
    // The sending end of a flow: `bytes` from `data` to host `peer`'s QP `peer_qpn`, one RDMA Write
    // with immediate `tag`; ipsn is the initial PSN both ends agree on.
    void add_requester(uint32_t qpn, uint32_t peer, uint32_t peer_qpn, uint16_t sport, uint32_t ipsn,
                       const uint8_t* data, uint64_t bytes, uint32_t tag);
    void add_responder(uint32_t qpn, uint32_t peer, uint32_t peer_qpn, uint16_t sport, uint32_t ipsn, uint8_t* sink,
                       uint64_t bytes, uint32_t tag);
    // Posts the requester's Write (at the current simulated time).
    void post(uint32_t qpn);

    std::function<void(uint32_t tag)> on_receive_complete;  // responder: the last byte is in, in order
    std::function<void(uint32_t tag)> on_send_complete;     // requester: the last byte is acknowledged
    std::function<void(uint32_t tag, const std::string&)> on_error;
    std::function<void(uint32_t tag, uint32_t bytes)> rx_tap;  // every data frame reaching a responder

    const RoceCounters& counters() const noexcept { return counters_; }
    // Current DCQCN rate of a requester (Gb/s).
    static uint64_t bytes_per_connection();

private:
    struct QpEnd;
    struct Requester;
    struct Responder;
    void init_end(QpEnd& e, uint32_t qpn, uint32_t peer, uint32_t peer_qpn, uint16_t sport, uint32_t ipsn,
                  uint64_t bytes, uint32_t tag) const;
    struct Slot {
        std::unique_ptr<Requester> req;
        std::unique_ptr<Responder> resp;
    };

    void receive(uint32_t plane, const SimFrame& frame);
    void on_data(Responder& r, const roce::Packet& p, uint32_t frame_len);
    void on_ack(Requester& q, const roce::Packet& p);
    void on_cnp(Requester& q);
    void send_ack(Responder& r, uint8_t syndrome, uint32_t psn);
    void send_cnp(Responder& r);
    void send_control(uint32_t plane, const roce::Packet& p);

    void kick();
    void tx();
    bool has_work(const Requester& q) const;
    bool nic_free(uint32_t plane) const;
    void drop_finished_senders();
    void send_data(Requester& q);
    void arm_rto(Requester& q, bool restart);
    void on_rto(Requester& q);
    void alpha_tick(Requester& q);
    void rate_tick(Requester& q);
    void rate_increase(Requester& q);
    void fail(Requester& q, const std::string& why);
    double wire_ns(uint32_t frame_bytes, double gbps) const { return (frame_bytes + 2.0) * 8.0 / gbps; }
    Requester* requester(uint32_t qpn);
    Responder* responder(uint32_t qpn);

    Fabric& fabric_;
    uint32_t host_;
    RoceOptions o_;
    double line_gbps_;
    std::vector<Slot> qps_;
    std::vector<Requester*> senders_;  // posted QPs not finished, round-robin order
    size_t rr_ = 0;
    bool finished_ = false;  // a sender finished since the round robin was last trimmed
    sim::Timer tx_timer_;
    std::vector<uint8_t> rx_buf_, tx_buf_;
    RoceCounters counters_;
};

}  // namespace mroce::fabric
