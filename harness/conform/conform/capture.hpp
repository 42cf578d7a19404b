// Capture files of the conformance tools: reading pcap / pcapng taps of a run, writing what the
// runner saw as pcap. Parsing and writing are libpcap's (Debian's libpcap-dev); this file only
// turns libpcap's view into plain values and its failures into one-line CaptureErrors.
//
// Reading (read_capture, read_capture_bytes)
//   - Formats: pcap (either byte order, microsecond or nanosecond magic, and the old "modified"
//     variant libpcap accepts) and pcapng (either byte order, several sections, if_tsresol and
//     if_tsoffset as libpcap applies them). Timestamps are asked of libpcap in nanoseconds, so a
//     microsecond pcap comes back scaled by 1000.
//   - Only Ethernet (DLT_EN10MB) captures are accepted; any other link type is a CaptureError
//     ("link type 113 (LINUX_SLL) is not Ethernet"). For pcapng that is the link type of the first
//     interface; libpcap itself refuses a file whose interfaces differ in link type or snap length.
//   - CapturedFrame::interface: 0 for pcap. For pcapng, libpcap does not report a packet's
//     interface, so the reader walks the pcapng block headers itself, in step with libpcap (block
//     type and total length only; libpcap has already checked every block it returned a packet
//     from), and takes the Interface ID of each Enhanced Packet Block (the 16-bit one of the
//     obsolete Packet Block; 0 for a Simple Packet Block). Interfaces are numbered across the whole
//     file, counting the Interface Description Blocks of earlier sections (the order in which
//     capinfos lists them as "Interface #n"), so that two concatenated captures do not mix up
//     their taps. In a one-section file (what a tap writes) that is the Interface ID as written;
//     in later sections it is not what tshark 4.0 shows as frame.interface_id (section-local).
//   - Invariants of a returned Capture: frames[i].number == i + 1; bytes.size() <= orig_len (a
//     record whose captured length exceeds its length on the wire is rejected as malformed);
//     truncated_frames counts frames with bytes.size() < orig_len; for pcapng, interface is below
//     the number of interfaces described so far in the file.
//   - pcap timestamps are read as the format defines them, unsigned 32-bit seconds (libpcap reads
//     them signed, which would put times past 2038 before 1970).
//   - Errors: an empty file, a short or unknown header, garbage or text, a truncated header or
//     record, a pcapng timestamp before 1970 or past 2554 (uint64_t nanoseconds), any error
//     libpcap reports mid-file: each is a CaptureError whose message is one line starting with the
//     file name (or the name given to read_capture_bytes) and, for a failure inside the packet
//     sequence, the 1-based number of the frame being read:
//         "cap.pcap: not a pcap or pcapng capture"
//         "cap.pcap: frame 17: truncated record (truncated dump file; tried to read ...)"
//         "cap.pcap: link type 113 (LINUX_SLL) is not Ethernet"
//     Other text after the file name / frame number is libpcap's own message. A capture with zero
//     frames is valid (libpcap, however, refuses a pcapng file without any Interface Description
//     Block).
//   - read_capture reads a regular file only (a pcapng file is opened twice: once for libpcap,
//     once for the block walk); frames are held in memory, the file is streamed.
//
// Writing (CaptureWriter): pcap, little-endian on this machine, nanosecond-timestamp magic,
// link type Ethernet, snap length kSnaplen. A frame longer than kSnaplen is stored truncated to
// kSnaplen bytes with its full length as the length on the wire (as a tap would do). pcap stores
// 32-bit seconds, so a timestamp at or past 2^32 s (year 2106) is a CaptureError.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace mroce::conform {

struct CapturedFrame {
    uint64_t number = 0;         // 1-based frame number in the file (as Wireshark numbers them)
    uint64_t time_ns = 0;        // timestamp, nanoseconds since the epoch of the capture
    uint32_t interface = 0;      // pcapng interface ID (0 for pcap): which tap saw it
    uint32_t orig_len = 0;       // length on the wire
    std::vector<uint8_t> bytes;  // captured bytes (bytes.size() < orig_len when the tap truncated)
};

struct Capture {
    std::string path;
    std::string format;  // "pcap" or "pcapng"
    std::vector<CapturedFrame> frames;
    uint64_t truncated_frames = 0;  // caplen < orig_len
};

// One line, naming the file and, where it applies, the frame number (see the top of this file).
struct CaptureError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Reads a whole capture file. Throws CaptureError.
Capture read_capture(const std::string& path);
// The same from memory; `name` stands for the file name in Capture::path and in error messages.
Capture read_capture_bytes(std::span<const uint8_t> data, const std::string& name);

// Writes a pcap file: nanosecond timestamps, Ethernet link type. Frames are buffered; flush() or
// close() pushes them to the file. The destructor closes quietly (call close() to see errors).
class CaptureWriter {
public:
    static constexpr uint32_t kSnaplen = 65535;

    explicit CaptureWriter(const std::string& path);  // creates / truncates; throws CaptureError
    ~CaptureWriter();
    CaptureWriter(CaptureWriter&&) noexcept;
    CaptureWriter& operator=(CaptureWriter&&) noexcept;
    CaptureWriter(const CaptureWriter&) = delete;
    CaptureWriter& operator=(const CaptureWriter&) = delete;

    // Appends one frame. Throws CaptureError on a write error, a timestamp pcap cannot hold, a
    // frame of 2^32 bytes or more, or after close().
    void write(uint64_t time_ns, std::span<const uint8_t> frame);
    void flush();  // throws CaptureError when the buffered data cannot be written
    void close();  // flush, then close the file; throws like flush(); a second call does nothing

    const std::string& path() const { return path_; }
    uint64_t frames_written() const { return frames_written_; }

private:
    struct Impl;
    std::string path_;
    std::unique_ptr<Impl> impl_;
    uint64_t frames_written_ = 0;
};

}  // namespace mroce::conform
