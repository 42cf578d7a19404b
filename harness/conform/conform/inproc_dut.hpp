// Our engine as the device under test, in this process, in virtual time: what CI runs the suite
// against. Frames go straight into Device::input() and the frames the device hands to its PacketIo
// come back stamped with the virtual clock, so "at once" is exact and runs are deterministic.
#pragma once

#include <memory>
#include <string>

#include "conform/dut.hpp"

namespace mroce::conform {

struct InprocOptions {
    uint32_t isn = 0xfffffff0;  // the DUT's ISN (near 2^32: PSNs wrap during tests, [R-CONN-2])
    // A deliberately non-conformant DUT, kept as the suite's canary: "" (none), "ack-lies" (every
    // ACK claims one PSN more than was received), "no-retx-flag" (retransmissions lose RETX),
    // "ecn" (data sent Not-ECT), "livelock" (once it has sent data, its next step never returns:
    // the failure of a timer that refires at one instant inside one engine call, which only the
    // runner's wall-clock watchdog can report).
    std::string canary;
    bool ipv6 = false;  // the DUT (and the tester facing it) on IPv6: fd00::2 (fd00::1)
    // HOME_PROBE / HOME_PROBE_MAX [R-PATH-10]: other values show that scripts and the monitor take
    // the DUT's, not the spec's.
    uint32_t home_probe_us = 200, home_probe_max_us = 400;
};

std::unique_ptr<Dut> make_inproc_dut(const InprocOptions& options = {});

// The canary's fault applied to one frame the engine sent (unchanged for "" or a frame it does
// not touch); also used by the randomised mode. Whether `canary` names a known canary.
std::vector<uint8_t> apply_canary(const std::string& canary, std::vector<uint8_t> frame);
bool known_canary(const std::string& canary);
// The "livelock" canary's step: never returns once `sent_data` (a no-op for any other canary).
void canary_step(const std::string& canary, bool sent_data);

// The tester's own address when it faces an in-process DUT.
model::Address inproc_tester_address(bool ipv6 = false);

}  // namespace mroce::conform
