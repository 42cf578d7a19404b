// The script parser: what it accepts, and the one-line error (file:line) for what it does not.
#include <gtest/gtest.h>

#include "conform/inproc_dut.hpp"
#include "conform/runner.hpp"
#include "conform/script.hpp"

namespace mroce::conform {
namespace {

const char* kGood = R"(# id: T-1
# title: a test
# requires: R-ACK-2 R-ACK-4
# dut: paths>=2 ops=write,read
# tolerance: 20us 5%
# timeout: 9000
connect tester paths=2 maxpay=1024
mr buf 65536 rw
0 < WRITE path=1 psn=0 flags=AR len=1024 va=$buf.va+4096 rkey=$buf.rkey
+0..ACK_DELAY_MAX > ACK path=1 cpsn=0 sack=- ce=0 as a   # a comment
* > data psn=0|1|2 moff=0..4096
+10..20 > none PROBE
+5 ! write stream=0 wr=7 mr=buf len=2*MAXPAY
* ? wc wr=7 status=Success
)";

TEST(Script, ParsesEveryKindOfLine) {
    const Script s = parse_script(kGood, "t.mcs");
    EXPECT_EQ(s.id, "T-1");
    EXPECT_EQ(s.requires_, (std::vector<std::string>{"R-ACK-2", "R-ACK-4"}));
    ASSERT_EQ(s.dut.size(), 2u);
    EXPECT_EQ(s.dut[0].name, "paths");
    EXPECT_EQ(s.dut[0].op, ">=");
    EXPECT_DOUBLE_EQ(s.tolerance_us, 20);
    EXPECT_DOUBLE_EQ(s.tolerance_prop, 0.05);
    EXPECT_EQ(s.timeout_us, 9000u);
    ASSERT_EQ(s.lines.size(), 8u);
    EXPECT_EQ(s.lines[0].kind, Line::Kind::Directive);
    EXPECT_EQ(s.lines[2].kind, Line::Kind::Inject);
    EXPECT_EQ(s.lines[2].time.base, TimeSpec::Base::Absolute);
    const Field& va = s.lines[2].fields[4];
    EXPECT_EQ(va.name, "va");
    ASSERT_EQ(va.value.terms.size(), 2u);
    EXPECT_EQ(va.value.terms[0].symbol, "$buf.va");
    EXPECT_EQ(va.value.terms[1].coefficient, 4096);
    EXPECT_EQ(s.lines[3].kind, Line::Kind::Expect);
    EXPECT_EQ(s.lines[3].time.base, TimeSpec::Base::Relative);
    ASSERT_TRUE(s.lines[3].time.hi);
    EXPECT_EQ(s.lines[3].as, "a");
    EXPECT_EQ(s.lines[4].time.base, TimeSpec::Base::Any);
    EXPECT_EQ(s.lines[4].fields[0].kind, Field::Kind::OneOf);
    EXPECT_EQ(s.lines[4].fields[1].kind, Field::Kind::Range);
    EXPECT_EQ(s.lines[5].kind, Line::Kind::ExpectNone);
    EXPECT_EQ(s.lines[5].verb, "PROBE");
    EXPECT_EQ(s.lines[6].kind, Line::Kind::Action);
    EXPECT_EQ(s.lines[6].fields[3].value.terms[0].coefficient, 2);
    EXPECT_EQ(s.lines[6].fields[3].value.terms[0].symbol, "MAXPAY");
    EXPECT_EQ(s.lines[7].kind, Line::Kind::Await);
}

void expect_error(const std::string& text, int line, const std::string& part) {
    try {
        parse_script(text, "bad.mcs");
        ADD_FAILURE() << "accepted: " << text;
    } catch (const ScriptError& e) {
        EXPECT_EQ(e.line, line) << e.what();
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
        EXPECT_EQ(std::string(e.what()).rfind("bad.mcs:" + std::to_string(line) + ": ", 0), 0u) << e.what();
        EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
}

TEST(Script, ErrorsNameFileAndLine) {
    const std::string h = "# id: X\n# requires: R-ACK-2\n";
    expect_error("# requires: R-ACK-2\n0 < WRITE\n", 1, "missing '# id:'");
    expect_error("# id: X\n0 < WRITE\n", 1, "missing '# requires:'");
    expect_error("# id: X\n# requires: ACK\n", 2, "not a requirement ID");
    expect_error(h + "0 = WRITE\n", 3, "expected <, >, ! or ?");
    expect_error(h + "0 < WRITE psn\n", 3, "bare word");
    expect_error(h + "0 < WRITE path=1 path=2\n", 3, "given twice");
    expect_error(h + "x < WRITE\n", 3, "bad time");
    expect_error(h + "* < WRITE\n", 3, "only for > and ?");
    expect_error(h + "0 > none ACK\n", 3, "needs a time range");
    expect_error(h + "0 < WRITE psn=1+\n", 3, "missing term");
    expect_error(h + "0 < WRITE psn=0xZZ\n", 3, "bad value");
    expect_error("# id: X\n# requires: R-A-1\n# dut: paths~4\n", 3, "bad DUT qualifier");
    expect_error("# id: X\n# requires: R-A-1\n# tolerance: 5\n", 3, "needs a unit");
    expect_error(h + "0 < WRITE\x01\n", 3, "control character");
}

TEST(Script, ALineNamesWhatItAssumes) {
    const Script s = parse_script(
        "# id: X\n# requires: R-CC-3\n* > WRITE psn=5 should=R-CC-11 as w\n"
        "0..9 > none data default=R-PATH-5\n* > WRITE psn=6\n",
        "t.mcs");
    ASSERT_EQ(s.lines.size(), 3u);
    EXPECT_EQ(s.lines[0].assumes, Line::Assumes::Should);
    EXPECT_EQ(s.lines[0].assumed_rule, "R-CC-11");
    EXPECT_EQ(s.lines[0].as, "w");
    EXPECT_EQ(s.lines[1].assumes, Line::Assumes::Default);
    EXPECT_EQ(s.lines[1].assumed_rule, "R-PATH-5");
    EXPECT_EQ(s.lines[2].assumes, Line::Assumes::Nothing);
    EXPECT_TRUE(s.lines[0].fields.size() == 1 && s.lines[1].fields.empty());  // markers are not frame fields
    // A SHOULD a line assumes is among the test's requirements; a default choice is not.
    EXPECT_EQ(s.requires_, (std::vector<std::string>{"R-CC-3", "R-CC-11"}));
    const std::string h = "# id: X\n# requires: R-ACK-2\n";
    expect_error(h + "0 < WRITE should=R-CC-11\n", 3, "marks a '>' line only");
    expect_error(h + "0 ! write should=R-CC-11\n", 3, "marks a '>' line only");
    expect_error(h + "* > WRITE should=R-CC-11 default=R-PATH-5\n", 3, "one rule at most");
    expect_error(h + "* > WRITE should=CC-11\n", 3, "not a requirement ID");
    expect_error(h + "* > WRITE default=R-PATH-\n", 3, "not a requirement ID");
}

TEST(Script, LoadNamesAMissingFile) {
    try {
        load_script("/nonexistent/x.mcs");
        FAIL();
    } catch (const ScriptError& e) { EXPECT_EQ(std::string(e.what()), "/nonexistent/x.mcs:0: cannot read"); }
}

// A virtual-time DUT whose clock never moves and that sends a frame at every step: a timer that
// refires at one instant forever. The runner's watchdog must fail the test, naming the livelock,
// instead of hanging.
class LivelockedDut final : public Dut {
public:
    LivelockedDut() { info_.virtual_time = true; }
    const DutInfo& info() const override { return info_; }
    void send(std::span<const uint8_t>) override {}
    std::vector<WireFrame> receive() override {
        std::vector<WireFrame> out;
        if (pending_) out.push_back(WireFrame{0, std::vector<uint8_t>(60, 0xee)});  // not MRoCE: skipped by the monitor
        pending_ = false;
        return out;
    }
    Micros now() const override { return 0; }
    void run_until(Micros) override {
        ++steps;
        pending_ = true;  // "transmitted" again, the clock still at 0
    }
    void listen(bool) override {}
    uint32_t connect(const model::Address&, const ConnOffer&) override { return 0; }
    Region reg_mr(uint64_t, uint32_t) override { return {}; }
    void dereg_mr(uint32_t) override {}
    void write_mem(uint32_t, uint64_t, std::span<const uint8_t>) override {}
    std::vector<uint8_t> read_mem(uint32_t, uint64_t, uint64_t length) override { return std::vector<uint8_t>(length); }
    std::string post(const PostOp&) override { return ""; }
    std::vector<DutCompletion> poll_cq() override { return {}; }
    std::vector<DutEvent> poll_events() override { return {}; }
    void close(uint32_t, bool) override {}
    std::map<std::string, uint64_t> counters() override { return {}; }
    uint64_t steps = 0;

private:
    DutInfo info_;
    bool pending_ = false;
};

TEST(Runner, ALivelockedDutFailsTheTestInsteadOfHanging) {
    const Script sc = parse_script("# id: T-LIVELOCK\n# title: t\n# requires: R-ACK-2\n0..100 > none PROBE\n", "t.mcs");
    LivelockedDut dut;
    RunOptions o;
    o.max_steps_at_one_instant = 500;
    const TestResult r = run_script(sc, dut, o);
    EXPECT_EQ(r.outcome, Outcome::Fail);
    ASSERT_FALSE(r.messages.empty());
    EXPECT_NE(r.messages[0].find("livelock"), std::string::npos) << r.messages[0];
    EXPECT_NE(r.messages[0].find("t.mcs:4"), std::string::npos) << r.messages[0];
    EXPECT_LE(dut.steps, 1001u);  // stopped at the cap, not run on
}

// What a line assumes, against our engine: a frame that never comes, asked for plainly, fails the
// test; asked for as a SHOULD it makes the test unsupported (failed under --strict, naming the
// rule); a `> none` that assumes a default choice is unsupported when the DUT chose otherwise.
TestResult run_inproc(const std::string& body, bool strict, bool assume_defaults = false) {
    const Script sc = parse_script(
        "# id: T-ASSUME\n# title: t\n# requires: R-CC-3\n"
        "connect tester paths=1 streams=1 maxpay=1024\nmr src 65536 local\n"
        "0 ! write stream=0 wr=1 mr=src len=2048 rva=0x1000 rkey=0x100\n" +
            body,
        "t.mcs");
    auto dut = make_inproc_dut();
    RunOptions o;
    o.strict = strict;
    o.assume_defaults = assume_defaults;
    o.tester = inproc_tester_address();
    return run_script(sc, *dut, o);
}

TEST(Runner, AnUnmetShouldLineIsUnsupportedUnlessStrict) {
    const std::string met = "+0 > WRITE path=0 psn=1\n";
    EXPECT_EQ(run_inproc(met, false).outcome, Outcome::Pass);
    const TestResult plain = run_inproc(met + "+0..100 > WRITE path=0 psn=5\n", false);
    EXPECT_EQ(plain.outcome, Outcome::Fail);
    const TestResult lax =
        run_inproc(met + "+0..100 > WRITE path=0 psn=5 should=R-CC-11\n+0 > WRITE path=0 psn=6\n", false);
    EXPECT_EQ(lax.outcome, Outcome::Unsupported);
    ASSERT_FALSE(lax.messages.empty());
    EXPECT_NE(lax.messages[0].find("--strict"), std::string::npos) << lax.messages[0];
    EXPECT_EQ(lax.messages.size(), 1u);  // the rest of the test did not run
    const TestResult strict = run_inproc(met + "+0..100 > WRITE path=0 psn=5 should=R-CC-11\n", true);
    EXPECT_EQ(strict.outcome, Outcome::Fail);
    ASSERT_FALSE(strict.messages.empty());
    EXPECT_NE(strict.messages[0].find("[R-CC-11, a SHOULD]"), std::string::npos) << strict.messages[0];
}

TEST(Runner, AnotherAllowedChoiceThanTheDefaultIsUnsupported) {
    const std::string forbids = "+0..5 > none data default=R-PATH-8\n";
    for (bool strict : {false, true}) {
        const TestResult r = run_inproc(forbids, strict);
        EXPECT_EQ(r.outcome, Outcome::Unsupported) << strict;
        ASSERT_FALSE(r.messages.empty());
        EXPECT_NE(r.messages[0].find("default choice of R-PATH-8"), std::string::npos) << r.messages[0];
    }
    EXPECT_EQ(run_inproc("+0..5 > none data\n", false).outcome, Outcome::Fail);
    // A run told that the DUT makes the defaults (our engine in CI) fails it.
    const TestResult told = run_inproc(forbids, false, true);
    EXPECT_EQ(told.outcome, Outcome::Fail);
    ASSERT_FALSE(told.messages.empty());
    EXPECT_NE(told.messages[0].find("which the DUT claims to make"), std::string::npos) << told.messages[0];
}

// [R-PATH-10] The runner takes HOME_PROBE / HOME_PROBE_MAX from the DUT, for the scripts' constants and
// the monitor's bounds: PATH-10-home-route-return passes against an engine configured with other
// values than the spec's. Below them (100 us) the probe comes before the spec's 200 us, which the
// script's window and the monitor would call early; above them (300 us) after it, where the script
// would expect it.
TEST(Runner, TheHomeProbeIntervalsAreTheDuts) {
    const Script sc = load_script(MROCE_SOURCE_DIR "/traces/conformance/PATH-10-home-route-return.mcs");
    for (const auto& [first, max] : {std::pair{200u, 400u}, {100u, 200u}, {300u, 600u}}) {
        InprocOptions io;
        io.home_probe_us = first;
        io.home_probe_max_us = max;
        auto dut = make_inproc_dut(io);
        EXPECT_EQ(dut->info().home_probe_us, first);
        RunOptions o;
        o.tester = inproc_tester_address();
        const TestResult r = run_script(sc, *dut, o);
        EXPECT_EQ(r.outcome, Outcome::Pass) << first << " us: " << (r.messages.empty() ? "" : r.messages[0])
                                            << (r.violations.empty() ? "" : " " + r.violations[0].what);
        EXPECT_GT(r.tally.count("R-PATH-10"), 0u);
    }
}

}  // namespace
}  // namespace mroce::conform
