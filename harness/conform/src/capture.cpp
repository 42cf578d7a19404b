// Capture reading and writing through libpcap; see conform/capture.hpp for the contract.
#include "conform/capture.hpp"

#include <pcap/pcap.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

namespace mroce::conform {

namespace {

struct FileCloser {
    void operator()(std::FILE* f) const {
        if (f != nullptr) std::fclose(f);
    }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

struct PcapCloser {
    void operator()(pcap_t* p) const {
        if (p != nullptr) pcap_close(p);
    }
};
using PcapPtr = std::unique_ptr<pcap_t, PcapCloser>;

[[noreturn]] void fail(const std::string& name, const std::string& what) { throw CaptureError(name + ": " + what); }

[[noreturn]] void fail_frame(const std::string& name, uint64_t number, const std::string& what) {
    fail(name, "frame " + std::to_string(number) + ": " + what);
}

// libpcap's messages are one line already; make sure of it.
std::string one_line(const char* msg) {
    std::string s = msg != nullptr && msg[0] != '\0' ? msg : "unknown libpcap error";
    for (char& c : s) {
        if (c == '\n' || c == '\r') c = ' ';
    }
    return s;
}

uint32_t load32(const uint8_t* p, bool big_endian) {
    return big_endian ? (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3]
                      : (uint32_t{p[3]} << 24) | (uint32_t{p[2]} << 16) | (uint32_t{p[1]} << 8) | p[0];
}

uint16_t load16(const uint8_t* p, bool big_endian) {
    return static_cast<uint16_t>(big_endian ? (p[0] << 8) | p[1] : (p[1] << 8) | p[0]);
}

enum class Format { pcap, pcap_nano, pcapng };

constexpr uint32_t kPcapngShb = 0x0A0D0D0A;  // the same in both byte orders

// The first four bytes say which format libpcap will be asked to read (it accepts exactly these
// magics: microsecond, nanosecond and the "modified" pcap of old patched tcpdumps, and pcapng).
// Leaves the stream at its start.
Format sniff(std::FILE* f, const std::string& name) {
    uint8_t m[4];
    const size_t got = std::fread(m, 1, sizeof m, f);
    if (got != sizeof m) {
        if (std::ferror(f)) fail(name, std::string("cannot read: ") + std::strerror(errno));
        fail(name, got == 0 ? "not a pcap or pcapng capture (empty file)"
                            : "not a pcap or pcapng capture (shorter than a file header)");
    }
    const uint32_t magic = load32(m, true);
    Format fmt;
    switch (magic) {
        // Each in both byte orders: microseconds, "modified" pcap (microseconds), nanoseconds.
        case 0xA1B2C3D4:
        case 0xD4C3B2A1:
        case 0xA1B2CD34:
        case 0x34CDB2A1:
            fmt = Format::pcap;
            break;
        case 0xA1B23C4D:
        case 0x4D3CB2A1:
            fmt = Format::pcap_nano;
            break;
        case kPcapngShb:
            fmt = Format::pcapng;
            break;
        default:
            fail(name, "not a pcap or pcapng capture");
    }
    if (std::fseek(f, 0, SEEK_SET) != 0) fail(name, std::string("cannot seek: ") + std::strerror(errno));
    return fmt;
}

// Walks the pcapng blocks by their headers only, to learn the interface of each packet block
// that libpcap returns. libpcap moves from block to block by the block's total length, as this
// walk does, so both see the same block sequence for as long as libpcap accepts the file.
class PcapngWalk {
public:
    explicit PcapngWalk(std::FILE* f) : f_(f) {}

    // The interface (numbered across the file) of the next Enhanced / Simple / obsolete Packet
    // Block; nullopt when the walk finds no further packet block.
    std::optional<uint32_t> next_packet_interface() {
        for (;;) {
            uint8_t h[12];
            if (fseeko(f_, off_, SEEK_SET) != 0) return std::nullopt;
            const size_t got = std::fread(h, 1, sizeof h, f_);
            if (got < 8) return std::nullopt;
            if (off_ == 0) {
                // The first block is the Section Header Block (sniff() saw its type): its
                // byte-order magic sets the byte order for the whole file, as for libpcap, which
                // refuses a later section of the other byte order (and, before the first
                // Interface Description Block, skips a later SHB like any unknown block).
                if (got < 12) return std::nullopt;
                const uint32_t bom = load32(h + 8, false);
                if (bom == 0x1A2B3C4D) {
                    big_endian_ = false;
                } else if (bom == 0x4D3C2B1A) {
                    big_endian_ = true;
                } else {
                    return std::nullopt;
                }
            }
            const uint32_t type = load32(h, big_endian_);
            const uint32_t len = load32(h + 4, big_endian_);
            // Follow the length as libpcap does, without its other checks (it rejects a later
            // block whose length is not a multiple of 4, but not the first SHB): where libpcap
            // fails, the walk does not matter, and where it goes on, the walk must too.
            if (len < 12) return std::nullopt;  // libpcap accepts no block shorter than this
            off_ += len;
            uint64_t local = 0;
            switch (type) {
                case kPcapngShb:  // a new section numbers its interfaces from 0 again
                    section_base_ = interfaces_;
                    continue;
                case 1:  // Interface Description Block
                    ++interfaces_;
                    continue;
                case 6:  // Enhanced Packet Block: 32-bit Interface ID
                    if (got < 12) return std::nullopt;
                    local = load32(h + 8, big_endian_);
                    break;
                case 2:  // Packet Block (obsolete): 16-bit Interface ID
                    if (got < 10) return std::nullopt;
                    local = load16(h + 8, big_endian_);
                    break;
                case 3:  // Simple Packet Block: the first interface of the section
                    local = 0;
                    break;
                default:
                    continue;
            }
            const uint64_t global = section_base_ + local;
            if (global > std::numeric_limits<uint32_t>::max()) return std::nullopt;
            return static_cast<uint32_t>(global);
        }
    }

private:
    std::FILE* f_;
    off_t off_ = 0;
    bool big_endian_ = false;
    uint64_t section_base_ = 0;  // interfaces described in earlier sections
    uint64_t interfaces_ = 0;    // Interface Description Blocks seen so far
};

std::string open_error(const char* errbuf) {
    const std::string msg = one_line(errbuf);
    if (msg.find("unknown file format") != std::string::npos) return "not a pcap or pcapng capture";
    if (msg.rfind("truncated", 0) == 0) return "truncated file header (" + msg + ")";
    return msg;
}

// pcapng: libpcap has computed 64-bit seconds (offset applied) and the fraction in ns.
std::optional<uint64_t> pcapng_ns(const struct timeval& tv) {
    if (tv.tv_sec < 0 || tv.tv_usec < 0) return std::nullopt;
    uint64_t ns = 0;
    uint64_t out = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(tv.tv_sec), uint64_t{1000000000}, &ns)) return std::nullopt;
    if (__builtin_add_overflow(ns, static_cast<uint64_t>(tv.tv_usec), &out)) return std::nullopt;
    return out;
}

// pcap: a record holds 32-bit unsigned seconds and a 32-bit fraction (us or ns by the magic),
// but libpcap reads both as signed 32-bit values, so a time past 2038 comes back negative, and it
// multiplies a microsecond fraction by 1000 after that. Truncating to 32 bits recovers the
// record's own values in either case; the result always fits (< 2^32 * 10^9 + 2^32 * 1000).
uint64_t pcap_ns(const struct timeval& tv, bool nano_file) {
    const uint64_t sec = static_cast<uint32_t>(tv.tv_sec);
    const uint64_t frac = nano_file ? uint64_t{static_cast<uint32_t>(tv.tv_usec)}
                                    : uint64_t{static_cast<uint32_t>(tv.tv_usec / 1000)} * 1000;
    return sec * 1000000000u + frac;
}

// `pcap_file` goes to libpcap (which closes it once it has accepted it); open_walk() opens the
// second stream for the pcapng block walk, only for pcapng.
template <typename OpenWalk>
Capture read_stream(FilePtr pcap_file, OpenWalk open_walk, const std::string& name) {
    const Format fmt = sniff(pcap_file.get(), name);

    char errbuf[PCAP_ERRBUF_SIZE];
    errbuf[0] = '\0';
    PcapPtr p(pcap_fopen_offline_with_tstamp_precision(pcap_file.get(), PCAP_TSTAMP_PRECISION_NANO, errbuf));
    if (!p) fail(name, open_error(errbuf));  // pcap_file is still ours and closes here
    (void)pcap_file.release();               // pcap_close() closes it from now on

    const int link = pcap_datalink(p.get());
    if (link != DLT_EN10MB) {
        const char* lname = pcap_datalink_val_to_name(link);
        fail(name, "link type " + std::to_string(link) +
                       (lname != nullptr ? " (" + std::string(lname) + ")" : std::string()) + " is not Ethernet");
    }

    FilePtr walk_file;
    std::optional<PcapngWalk> walk;
    if (fmt == Format::pcapng) {
        walk_file = open_walk();
        walk.emplace(walk_file.get());
    }

    Capture cap;
    cap.path = name;
    cap.format = fmt == Format::pcapng ? "pcapng" : "pcap";
    for (;;) {
        const uint64_t number = cap.frames.size() + 1;
        struct pcap_pkthdr* hdr = nullptr;
        const u_char* data = nullptr;
        const int rc = pcap_next_ex(p.get(), &hdr, &data);
        if (rc == PCAP_ERROR_BREAK) break;  // end of file
        if (rc == PCAP_ERROR) {
            const std::string msg = one_line(pcap_geterr(p.get()));
            if (msg.rfind("truncated", 0) == 0) fail_frame(name, number, "truncated record (" + msg + ")");
            fail_frame(name, number, msg);
        }
        if (rc != 1 || hdr == nullptr) fail_frame(name, number, "libpcap returned " + std::to_string(rc));
        if (hdr->caplen > hdr->len) {
            fail_frame(name, number,
                       "captured length " + std::to_string(hdr->caplen) + " exceeds the length on the wire " +
                           std::to_string(hdr->len));
        }
        if (hdr->caplen > 0 && data == nullptr) fail_frame(name, number, "libpcap returned no data");
        const auto ns = fmt == Format::pcapng ? pcapng_ns(hdr->ts) : pcap_ns(hdr->ts, fmt == Format::pcap_nano);
        if (!ns) fail_frame(name, number, "timestamp out of range (before 1970 or after 2554)");

        CapturedFrame fr;
        fr.number = number;
        fr.time_ns = *ns;
        fr.orig_len = hdr->len;
        if (walk) {
            const auto iface = walk->next_packet_interface();
            // libpcap accepted a packet block the walk does not see: a bug of the walk.
            if (!iface) fail_frame(name, number, "internal: the pcapng block walk lost step with libpcap");
            fr.interface = *iface;
        }
        if (hdr->caplen > 0) fr.bytes.assign(data, data + hdr->caplen);
        if (fr.bytes.size() < fr.orig_len) ++cap.truncated_frames;
        cap.frames.push_back(std::move(fr));
    }
    return cap;
}

FilePtr open_regular(const std::string& path) {
    FilePtr f(std::fopen(path.c_str(), "rb"));
    if (!f) fail(path, std::string("cannot open: ") + std::strerror(errno));
    struct stat st {};
    if (fstat(fileno(f.get()), &st) != 0) fail(path, std::string("cannot stat: ") + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) fail(path, "not a regular file");
    return f;
}

FilePtr open_memory(std::span<const uint8_t> data, const std::string& name) {
    // Read-only stream over the caller's bytes (fmemopen does not write in mode "rb").
    FilePtr f(fmemopen(const_cast<uint8_t*>(data.data()), data.size(), "rb"));
    if (!f) fail(name, std::string("cannot open memory stream: ") + std::strerror(errno));
    return f;
}

}  // namespace

Capture read_capture(const std::string& path) {
    return read_stream(
        open_regular(path), [&] { return open_regular(path); }, path);
}

Capture read_capture_bytes(std::span<const uint8_t> data, const std::string& name) {
    // fmemopen refuses a zero-sized buffer: answer as for an empty file.
    if (data.empty()) fail(name, "not a pcap or pcapng capture (empty file)");
    return read_stream(
        open_memory(data, name), [&] { return open_memory(data, name); }, name);
}

// ---- writing ----

struct CaptureWriter::Impl {
    pcap_t* dead = nullptr;
    pcap_dumper_t* dumper = nullptr;

    ~Impl() {
        if (dumper != nullptr) pcap_dump_close(dumper);
        if (dead != nullptr) pcap_close(dead);
    }
};

CaptureWriter::CaptureWriter(const std::string& path) : path_(path), impl_(std::make_unique<Impl>()) {
    impl_->dead =
        pcap_open_dead_with_tstamp_precision(DLT_EN10MB, static_cast<int>(kSnaplen), PCAP_TSTAMP_PRECISION_NANO);
    if (impl_->dead == nullptr) fail(path_, "cannot create a libpcap handle");
    if (path_.empty()) fail("(empty path)", "cannot create: no file name");
    // libpcap takes "-" for standard output; we mean a file of that name.
    const std::string open_name = path_ == "-" ? "./-" : path_;
    errno = 0;
    impl_->dumper = pcap_dump_open(impl_->dead, open_name.c_str());
    if (impl_->dumper == nullptr) {
        const int e = errno;
        fail(path_,
             std::string("cannot create: ") + (e != 0 ? std::strerror(e) : one_line(pcap_geterr(impl_->dead)).c_str()));
    }
}

CaptureWriter::~CaptureWriter() = default;
CaptureWriter::CaptureWriter(CaptureWriter&&) noexcept = default;
CaptureWriter& CaptureWriter::operator=(CaptureWriter&&) noexcept = default;

void CaptureWriter::write(uint64_t time_ns, std::span<const uint8_t> frame) {
    if (!impl_ || impl_->dumper == nullptr) fail(path_, "write after close");
    const uint64_t sec = time_ns / 1000000000u;
    if (sec > std::numeric_limits<uint32_t>::max()) {
        fail(path_, "timestamp " + std::to_string(time_ns) + " ns does not fit a pcap record (32-bit seconds)");
    }
    if (frame.size() > std::numeric_limits<uint32_t>::max()) fail(path_, "frame too long for a pcap record");
    struct pcap_pkthdr hdr {};
    hdr.ts.tv_sec = static_cast<time_t>(sec);
    hdr.ts.tv_usec = static_cast<suseconds_t>(time_ns % 1000000000u);  // nanoseconds: see open_dead
    hdr.len = static_cast<bpf_u_int32>(frame.size());
    hdr.caplen = hdr.len < kSnaplen ? hdr.len : kSnaplen;
    static const u_char kNone = 0;
    pcap_dump(reinterpret_cast<u_char*>(impl_->dumper), &hdr, frame.empty() ? &kNone : frame.data());
    if (std::ferror(pcap_dump_file(impl_->dumper))) {
        fail(path_, std::string("write failed: ") + std::strerror(errno));
    }
    ++frames_written_;
}

void CaptureWriter::flush() {
    if (!impl_ || impl_->dumper == nullptr) return;
    if (pcap_dump_flush(impl_->dumper) != 0 || std::ferror(pcap_dump_file(impl_->dumper))) {
        fail(path_, std::string("write failed: ") + std::strerror(errno));
    }
}

void CaptureWriter::close() {
    if (!impl_ || impl_->dumper == nullptr) return;
    const bool bad = pcap_dump_flush(impl_->dumper) != 0 || std::ferror(pcap_dump_file(impl_->dumper));
    const int e = errno;
    // Close in any case, then report a failed flush (pcap_dump_close() reports nothing itself;
    // what it could still lose is only fclose's own failure after a successful flush).
    pcap_dump_close(impl_->dumper);
    impl_->dumper = nullptr;
    if (bad) fail(path_, std::string("write failed: ") + std::strerror(e));
}

}  // namespace mroce::conform
