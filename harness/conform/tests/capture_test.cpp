// Capture reader / writer (conform/capture.hpp): round trips through the writer, hand-built pcap
// and pcapng files (byte orders, timestamp resolutions, interfaces, sections) and every kind of
// bad input, which must be a CaptureError naming the file, never a crash.
#include "conform/capture.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

using mroce::conform::Capture;
using mroce::conform::CaptureError;
using mroce::conform::CaptureWriter;
using mroce::conform::read_capture;
using mroce::conform::read_capture_bytes;
using Bytes = std::vector<uint8_t>;

// ---- byte builders ----

struct Out {
    bool big_endian = false;
    Bytes b;
    void u8(uint8_t v) { b.push_back(v); }
    void u16(uint16_t v) {
        if (big_endian) {
            u8(uint8_t(v >> 8)), u8(uint8_t(v));
        } else {
            u8(uint8_t(v)), u8(uint8_t(v >> 8));
        }
    }
    void u32(uint32_t v) {
        if (big_endian) {
            u16(uint16_t(v >> 16)), u16(uint16_t(v));
        } else {
            u16(uint16_t(v)), u16(uint16_t(v >> 16));
        }
    }
    void u64(uint64_t v) {  // a 64-bit field (the SHB's section length)
        if (big_endian) {
            u32(uint32_t(v >> 32)), u32(uint32_t(v));
        } else {
            u32(uint32_t(v)), u32(uint32_t(v >> 32));
        }
    }
    void ts64(uint64_t v) { u32(uint32_t(v >> 32)), u32(uint32_t(v)); }  // pcapng: high half first
    void raw(const Bytes& x) { b.insert(b.end(), x.begin(), x.end()); }
    void pad4() {
        while (b.size() % 4 != 0) u8(0);
    }
};

Bytes frame_bytes(size_t n, uint8_t seed) {
    Bytes f(n);
    for (size_t i = 0; i < n; ++i) f[i] = uint8_t(seed + i * 7);
    return f;
}

// Classic pcap.
struct PcapRecord {
    uint32_t sec, frac, caplen, len;
    Bytes data;  // may be shorter than caplen (a truncated file)
};

Bytes pcap_file(bool big_endian, bool nano, uint32_t linktype, const std::vector<PcapRecord>& recs,
                uint32_t snaplen = 65535) {
    Out o;
    o.big_endian = big_endian;
    o.u32(nano ? 0xA1B23C4D : 0xA1B2C3D4);
    o.u16(2), o.u16(4);
    o.u32(0), o.u32(0);  // thiszone, sigfigs
    o.u32(snaplen);
    o.u32(linktype);
    for (const auto& r : recs) {
        o.u32(r.sec), o.u32(r.frac), o.u32(r.caplen), o.u32(r.len);
        o.raw(r.data);
    }
    return o.b;
}

PcapRecord rec(uint32_t sec, uint32_t frac, const Bytes& data, uint32_t len = 0) {
    return {sec, frac, uint32_t(data.size()), len != 0 ? len : uint32_t(data.size()), data};
}

// pcapng blocks.
struct Pcapng {
    Out o;
    explicit Pcapng(bool big_endian = false) { o.big_endian = big_endian; }

    void block(uint32_t type, const Bytes& body) {  // body already in the file's byte order
        const uint32_t total = uint32_t(12 + ((body.size() + 3) / 4) * 4);
        o.u32(type);
        o.u32(total);
        o.raw(body);
        o.pad4();
        o.u32(total);
    }
    Out body() const {
        Out b;
        b.big_endian = o.big_endian;
        return b;
    }
    void shb() {
        Out b = body();
        b.u32(0x1A2B3C4D);
        b.u16(1), b.u16(0);
        b.u64(~uint64_t{0});  // section length unknown
        block(0x0A0D0D0A, b.b);
    }
    // tsresol: -1 for none (microseconds), else the option's byte.
    void idb(uint16_t linktype, int tsresol = -1, uint32_t snaplen = 0) {
        Out b = body();
        b.u16(linktype), b.u16(0);
        b.u32(snaplen);
        if (tsresol >= 0) {
            b.u16(9), b.u16(1);  // if_tsresol
            b.u8(uint8_t(tsresol));
            b.pad4();
            b.u16(0), b.u16(0);  // opt_endofopt
        }
        block(1, b.b);
    }
    void epb(uint32_t iface, uint64_t ts, const Bytes& data, uint32_t len = 0) {
        Out b = body();
        b.u32(iface);
        b.ts64(ts);
        b.u32(uint32_t(data.size()));
        b.u32(len != 0 ? len : uint32_t(data.size()));
        b.raw(data);
        b.pad4();
        block(6, b.b);
    }
    void spb(const Bytes& data) {
        Out b = body();
        b.u32(uint32_t(data.size()));
        b.raw(data);
        b.pad4();
        block(3, b.b);
    }
    void other(uint32_t type, const Bytes& body_bytes) { block(type, body_bytes); }
};

class TempDir {
public:
    TempDir() {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = std::filesystem::temp_directory_path() /
               ("conform_capture_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
        std::filesystem::remove_all(dir_);
        std::filesystem::create_directories(dir_);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    std::string file(const std::string& name) const { return (dir_ / name).string(); }
    std::string write(const std::string& name, const Bytes& b) const {
        const auto p = file(name);
        std::ofstream out(p, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
        return p;
    }

private:
    std::filesystem::path dir_;
};

// The error message of reading `data` under `name`; fails the test when reading succeeds.
std::string read_error(const Bytes& data, const std::string& name = "cap.pcap") {
    try {
        (void)read_capture_bytes(data, name);
    } catch (const CaptureError& e) { return e.what(); }
    ADD_FAILURE() << "reading " << name << " (" << data.size() << " bytes) did not throw";
    return "";
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

void expect_invariants(const Capture& c) {
    uint64_t truncated = 0;
    for (size_t i = 0; i < c.frames.size(); ++i) {
        EXPECT_EQ(c.frames[i].number, i + 1);
        EXPECT_LE(c.frames[i].bytes.size(), c.frames[i].orig_len);
        truncated += c.frames[i].bytes.size() < c.frames[i].orig_len ? 1 : 0;
    }
    EXPECT_EQ(c.truncated_frames, truncated);
}

// ---- writer round trips ----

TEST(Capture, WriteThenReadRoundTrip) {
    TempDir tmp;
    const auto path = tmp.file("run.pcap");
    const std::vector<std::pair<uint64_t, Bytes>> sent = {
        {1'700'000'000'123'456'789ull, frame_bytes(60, 1)},
        {1'700'000'000'123'456'790ull, frame_bytes(1514, 2)},
        {5, frame_bytes(0, 3)},  // an empty frame and a timestamp that goes back: kept as written
        {4'294'967'295'999'999'999ull, frame_bytes(9000, 4)},  // the last second pcap can hold
    };
    {
        CaptureWriter w(path);
        for (const auto& [t, f] : sent) w.write(t, f);
        EXPECT_EQ(w.frames_written(), sent.size());
        w.close();
        w.close();  // a second close does nothing
    }
    const Capture c = read_capture(path);
    EXPECT_EQ(c.path, path);
    EXPECT_EQ(c.format, "pcap");
    ASSERT_EQ(c.frames.size(), sent.size());
    for (size_t i = 0; i < sent.size(); ++i) {
        SCOPED_TRACE(i);
        EXPECT_EQ(c.frames[i].number, i + 1);
        EXPECT_EQ(c.frames[i].time_ns, sent[i].first);
        EXPECT_EQ(c.frames[i].bytes, sent[i].second);
        EXPECT_EQ(c.frames[i].orig_len, sent[i].second.size());
        EXPECT_EQ(c.frames[i].interface, 0u);
    }
    EXPECT_EQ(c.truncated_frames, 0u);
    expect_invariants(c);
}

TEST(Capture, WriterFlushMakesFramesVisibleAndDestructorCloses) {
    TempDir tmp;
    const auto path = tmp.file("flush.pcap");
    CaptureWriter w(path);
    w.write(1000, frame_bytes(64, 9));
    w.flush();
    const Capture c = read_capture(path);  // while the writer is still open
    ASSERT_EQ(c.frames.size(), 1u);
    EXPECT_EQ(c.frames[0].time_ns, 1000u);
    {
        CaptureWriter w2(tmp.file("dtor.pcap"));
        w2.write(2000, frame_bytes(64, 10));
    }  // no close(): the destructor flushes and closes
    EXPECT_EQ(read_capture(tmp.file("dtor.pcap")).frames.size(), 1u);
}

TEST(Capture, WriterZeroFramesIsAValidCapture) {
    TempDir tmp;
    const auto path = tmp.file("empty.pcap");
    CaptureWriter(path).close();
    const Capture c = read_capture(path);
    EXPECT_EQ(c.format, "pcap");
    EXPECT_TRUE(c.frames.empty());
    EXPECT_EQ(c.truncated_frames, 0u);
}

TEST(Capture, WriterTruncatesAtSnaplenAndKeepsTheWireLength) {
    TempDir tmp;
    const auto path = tmp.file("big.pcap");
    const Bytes big = frame_bytes(CaptureWriter::kSnaplen + 100, 5);
    {
        CaptureWriter w(path);
        w.write(7, big);
        w.write(8, frame_bytes(100, 6));
    }
    const Capture c = read_capture(path);
    ASSERT_EQ(c.frames.size(), 2u);
    EXPECT_EQ(c.frames[0].orig_len, big.size());
    EXPECT_EQ(c.frames[0].bytes, Bytes(big.begin(), big.begin() + CaptureWriter::kSnaplen));
    EXPECT_EQ(c.frames[1].bytes, frame_bytes(100, 6));
    EXPECT_EQ(c.truncated_frames, 1u);
    expect_invariants(c);
}

TEST(Capture, WriterErrors) {
    TempDir tmp;
    const auto bad = tmp.file("no/such/dir/x.pcap");
    try {
        CaptureWriter w(bad);
        FAIL() << "opening " << bad << " did not throw";
    } catch (const CaptureError& e) { EXPECT_TRUE(starts_with(e.what(), bad + ": cannot create")) << e.what(); }
    CaptureWriter w(tmp.file("w.pcap"));
    EXPECT_THROW(w.write(uint64_t{1} << 32 << 30, frame_bytes(10, 0)), CaptureError);  // > 2^32 s
    w.close();
    EXPECT_THROW(w.write(1, frame_bytes(10, 0)), CaptureError);
    EXPECT_NO_THROW(w.flush());
}

TEST(Capture, WriterDashIsAFileNotStandardOutput) {
    TempDir tmp;
    const auto cwd = std::filesystem::current_path();
    std::filesystem::current_path(tmp.file(""));
    {
        CaptureWriter w("-");
        w.write(1, frame_bytes(60, 1));
    }
    const bool exists = std::filesystem::is_regular_file("-");
    const Capture c = read_capture("-");
    std::filesystem::current_path(cwd);
    EXPECT_TRUE(exists);
    EXPECT_EQ(c.frames.size(), 1u);
}

// ---- pcap ----

TEST(Capture, MicrosecondPcapScaledToNanoseconds) {
    for (const bool be : {false, true}) {
        SCOPED_TRACE(be ? "big-endian" : "little-endian");
        const Bytes f1 = frame_bytes(60, 1), f2 = frame_bytes(42, 2);
        const Bytes file = pcap_file(be, false, 1,
                                     {rec(1'600'000'000, 123'456, f1), rec(1'600'000'001, 999'999, f2),
                                      rec(3'000'000'000u, 7, f2)});  // past 2038: unsigned
        const Capture c = read_capture_bytes(file, "us.pcap");
        EXPECT_EQ(c.format, "pcap");
        ASSERT_EQ(c.frames.size(), 3u);
        EXPECT_EQ(c.frames[0].time_ns, 1'600'000'000'123'456'000ull);
        EXPECT_EQ(c.frames[1].time_ns, 1'600'000'001'999'999'000ull);
        EXPECT_EQ(c.frames[2].time_ns, 3'000'000'000'000'007'000ull);
        EXPECT_EQ(c.frames[0].bytes, f1);
        EXPECT_EQ(c.frames[1].bytes, f2);
        expect_invariants(c);
    }
}

TEST(Capture, NanosecondPcapBothByteOrders) {
    for (const bool be : {false, true}) {
        SCOPED_TRACE(be ? "big-endian" : "little-endian");
        const Bytes file =
            pcap_file(be, true, 1,
                      {rec(12, 345'678'901, frame_bytes(60, 3)), rec(0xFFFF'FFFFu, 999'999'999, frame_bytes(60, 4))});
        const Capture c = read_capture_bytes(file, "ns.pcap");
        ASSERT_EQ(c.frames.size(), 2u);
        EXPECT_EQ(c.frames[0].time_ns, 12'345'678'901ull);
        EXPECT_EQ(c.frames[1].time_ns, 4'294'967'295'999'999'999ull);
    }
}

TEST(Capture, TruncatedFramesCounted) {
    const Bytes part = frame_bytes(64, 4);
    const Bytes file = pcap_file(false, true, 1, {rec(1, 0, part, 1514), rec(2, 0, frame_bytes(60, 5))}, 64);
    const Capture c = read_capture_bytes(file, "snap.pcap");
    ASSERT_EQ(c.frames.size(), 2u);
    EXPECT_EQ(c.frames[0].bytes, part);
    EXPECT_EQ(c.frames[0].orig_len, 1514u);
    EXPECT_EQ(c.frames[1].orig_len, 60u);
    EXPECT_EQ(c.truncated_frames, 1u);
    expect_invariants(c);
}

TEST(Capture, ZeroFramePcapIsValid) {
    const Capture c = read_capture_bytes(pcap_file(false, false, 1, {}), "none.pcap");
    EXPECT_TRUE(c.frames.empty());
    EXPECT_EQ(c.format, "pcap");
}

TEST(Capture, NonEthernetLinkTypeRejected) {
    const Bytes file = pcap_file(false, false, 113, {rec(1, 0, frame_bytes(40, 1))});
    EXPECT_EQ(read_error(file, "cap.pcap"), "cap.pcap: link type 113 (LINUX_SLL) is not Ethernet");
    Pcapng ng;
    ng.shb();
    ng.idb(101);  // LINKTYPE_RAW: libpcap reports DLT_RAW's value, 12 on Linux
    ng.epb(0, 1, frame_bytes(40, 1));
    const std::string msg = read_error(ng.o.b, "raw.pcapng");
    EXPECT_TRUE(starts_with(msg, "raw.pcapng: link type ")) << msg;
    EXPECT_NE(msg.find("is not Ethernet"), std::string::npos) << msg;
}

// ---- pcapng ----

TEST(Capture, PcapngTwoInterfacesAndResolutions) {
    for (const bool be : {false, true}) {
        SCOPED_TRACE(be ? "big-endian" : "little-endian");
        Pcapng ng(be);
        ng.shb();
        ng.idb(1);                 // interface 0: microseconds (no if_tsresol)
        ng.idb(1, 9);              // interface 1: nanoseconds
        ng.other(5, Bytes(8, 0));  // an Interface Statistics Block: skipped
        const Bytes a = frame_bytes(60, 1), b = frame_bytes(61, 2), d = frame_bytes(62, 3);
        ng.epb(0, 1'700'000'000'000'001ull, a);          // µs
        ng.epb(1, 1'700'000'000'000'000'002ull, b, 90);  // ns, truncated by the tap
        ng.epb(0, 1'700'000'000'000'003ull, d);
        const Capture c = read_capture_bytes(ng.o.b, "two.pcapng");
        EXPECT_EQ(c.format, "pcapng");
        ASSERT_EQ(c.frames.size(), 3u);
        EXPECT_EQ(c.frames[0].interface, 0u);
        EXPECT_EQ(c.frames[1].interface, 1u);
        EXPECT_EQ(c.frames[2].interface, 0u);
        EXPECT_EQ(c.frames[0].time_ns, 1'700'000'000'000'001'000ull);
        EXPECT_EQ(c.frames[1].time_ns, 1'700'000'000'000'000'002ull);
        EXPECT_EQ(c.frames[2].time_ns, 1'700'000'000'000'003'000ull);
        EXPECT_EQ(c.frames[0].bytes, a);
        EXPECT_EQ(c.frames[1].bytes, b);
        EXPECT_EQ(c.frames[1].orig_len, 90u);
        EXPECT_EQ(c.frames[2].bytes, d);
        EXPECT_EQ(c.truncated_frames, 1u);
        expect_invariants(c);
    }
}

TEST(Capture, PcapngFromAFileAndSimplePacketBlock) {
    TempDir tmp;
    Pcapng ng;
    ng.shb();
    ng.idb(1, 9, 1500);
    ng.idb(1, 9, 1500);
    ng.epb(1, 5, frame_bytes(60, 1));
    ng.spb(frame_bytes(70, 2));  // no timestamp, the section's first interface
    const auto path = tmp.write("spb.pcapng", ng.o.b);
    const Capture c = read_capture(path);
    EXPECT_EQ(c.path, path);
    ASSERT_EQ(c.frames.size(), 2u);
    EXPECT_EQ(c.frames[0].interface, 1u);
    EXPECT_EQ(c.frames[0].time_ns, 5u);
    EXPECT_EQ(c.frames[1].interface, 0u);
    EXPECT_EQ(c.frames[1].time_ns, 0u);
    EXPECT_EQ(c.frames[1].bytes, frame_bytes(70, 2));
}

TEST(Capture, PcapngSectionsNumberInterfacesAcrossTheFile) {
    Pcapng ng;
    ng.shb();
    ng.idb(1, 9);
    ng.idb(1, 9);
    ng.epb(1, 10, frame_bytes(60, 1));
    ng.shb();  // a second section: its interface 0 is the file's third interface
    ng.idb(1, 9);
    ng.epb(0, 20, frame_bytes(60, 2));
    const Capture c = read_capture_bytes(ng.o.b, "sections.pcapng");
    ASSERT_EQ(c.frames.size(), 2u);
    EXPECT_EQ(c.frames[0].interface, 1u);
    EXPECT_EQ(c.frames[1].interface, 2u);
    EXPECT_EQ(c.frames[1].number, 2u);
}

// Found by the fuzzer: before the first Interface Description Block libpcap skips a later SHB
// like an unknown block, without looking at its byte-order magic; the interface walk must too.
TEST(Capture, PcapngBrokenSecondHeaderBeforeAnyInterface) {
    Pcapng ng;
    ng.shb();
    ng.other(0x22, Bytes(8, 0));
    const size_t second = ng.o.b.size();
    ng.shb();
    ng.o.b[second + 8] ^= 0x5A;  // its byte-order magic, now invalid
    ng.idb(1, 9);
    ng.idb(1, 9);
    ng.epb(1, 42, frame_bytes(60, 1));
    const Capture c = read_capture_bytes(ng.o.b, "shb2.pcapng");
    ASSERT_EQ(c.frames.size(), 1u);
    EXPECT_EQ(c.frames[0].interface, 1u);
    EXPECT_EQ(c.frames[0].time_ns, 42u);
}

// libpcap does not require the first SHB's length to be a multiple of 4 (nor checks its
// trailer); the blocks after it start where its length says.
TEST(Capture, PcapngOddLengthFirstHeader) {
    Out o;
    o.u32(0x0A0D0D0A), o.u32(30), o.u32(0x1A2B3C4D), o.u16(1), o.u16(0), o.u64(~uint64_t{0});
    o.raw(Bytes(6, 0));
    Pcapng rest;
    rest.idb(1, 9);
    rest.idb(1, 9);
    rest.epb(1, 7, frame_bytes(60, 1));
    o.raw(rest.o.b);
    const Capture c = read_capture_bytes(o.b, "odd.pcapng");
    ASSERT_EQ(c.frames.size(), 1u);
    EXPECT_EQ(c.frames[0].interface, 1u);
    EXPECT_EQ(c.frames[0].bytes, frame_bytes(60, 1));
}

TEST(Capture, PcapngPacketOnAnUndescribedInterfaceRejected) {
    Pcapng ng;
    ng.shb();
    ng.idb(1);
    ng.epb(0, 1, frame_bytes(60, 1));
    ng.epb(3, 2, frame_bytes(60, 2));
    const std::string msg = read_error(ng.o.b, "iface.pcapng");
    EXPECT_TRUE(starts_with(msg, "iface.pcapng: frame 2: ")) << msg;
}

// ---- bad input ----

TEST(Capture, BadInputsAreCaptureErrorsNamingTheFile) {
    const Bytes good = pcap_file(false, false, 1, {rec(1, 0, frame_bytes(60, 1)), rec(2, 0, frame_bytes(60, 2))});
    const std::string text = "this is a text file, not a capture\n";
    struct Case {
        const char* what;
        Bytes data;
        const char* expect;  // prefix after "bad.pcap: "
    };
    const std::vector<Case> cases = {
        {"empty", {}, "not a pcap or pcapng capture"},
        {"three bytes", {0xD4, 0xC3, 0xB2}, "not a pcap or pcapng capture"},
        {"garbage", {0xDE, 0xAD, 0xBE, 0xEF, 1, 2, 3, 4, 5, 6, 7, 8}, "not a pcap or pcapng capture"},
        {"text", Bytes(text.begin(), text.end()), "not a pcap or pcapng capture"},
        {"truncated pcap header", Bytes(good.begin(), good.begin() + 10), "truncated file header"},
        {"truncated record header", Bytes(good.begin(), good.begin() + 24 + 16 + 60 + 5), "frame 2: truncated record"},
        {"truncated record body", Bytes(good.begin(), good.end() - 1), "frame 2: truncated record"},
        {"first record truncated", Bytes(good.begin(), good.begin() + 24 + 16 + 30), "frame 1: truncated record"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.what);
        const std::string msg = read_error(c.data, "bad.pcap");
        EXPECT_TRUE(starts_with(msg, std::string("bad.pcap: ") + c.expect)) << msg;
        EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
}

TEST(Capture, BadPcapngInputs) {
    Pcapng ng;
    ng.shb();
    ng.idb(1);
    ng.epb(0, 1, frame_bytes(60, 1));
    ng.epb(0, 2, frame_bytes(60, 2));
    const Bytes good = ng.o.b;
    ASSERT_EQ(read_capture_bytes(good, "ok.pcapng").frames.size(), 2u);

    EXPECT_TRUE(starts_with(read_error(Bytes(good.begin(), good.end() - 3), "t.pcapng"),
                            "t.pcapng: frame 2: truncated record"));
    EXPECT_TRUE(starts_with(read_error(Bytes(good.begin(), good.begin() + 20), "t.pcapng"), "t.pcapng: "));

    Pcapng only_shb;
    only_shb.shb();
    EXPECT_TRUE(starts_with(read_error(only_shb.o.b, "shb.pcapng"), "shb.pcapng: "));

    Bytes bad_trailer = good;
    bad_trailer[bad_trailer.size() - 1] ^= 0x10;  // last block's trailing length no longer matches
    EXPECT_TRUE(starts_with(read_error(bad_trailer, "trl.pcapng"), "trl.pcapng: frame 2: "));

    Bytes bad_bom = good;
    bad_bom[8] ^= 0xFF;  // byte-order magic of the SHB
    EXPECT_EQ(read_error(bad_bom, "bom.pcapng"), "bom.pcapng: not a pcap or pcapng capture");
}

TEST(Capture, CaptureLengthAboveWireLengthRejected) {
    PcapRecord r = rec(1, 0, frame_bytes(60, 1));
    r.len = 50;
    const std::string msg = read_error(pcap_file(false, false, 1, {r}), "len.pcap");
    EXPECT_TRUE(starts_with(msg, "len.pcap: frame 1: captured length 60 exceeds")) << msg;
}

TEST(Capture, ReadCaptureMissingFileAndDirectory) {
    TempDir tmp;
    const auto missing = tmp.file("missing.pcap");
    try {
        (void)read_capture(missing);
        FAIL() << "no error";
    } catch (const CaptureError& e) { EXPECT_TRUE(starts_with(e.what(), missing + ": cannot open")) << e.what(); }
    try {
        (void)read_capture(tmp.file(""));
        FAIL() << "no error";
    } catch (const CaptureError& e) {
        EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
    }
    const auto empty = tmp.write("empty.pcap", {});
    try {
        (void)read_capture(empty);
        FAIL() << "no error";
    } catch (const CaptureError& e) {
        EXPECT_TRUE(starts_with(e.what(), empty + ": not a pcap or pcapng capture")) << e.what();
    }
}

}  // namespace
