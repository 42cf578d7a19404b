// Conformance test scripts (traces/conformance/*.mcs): the parsed form. The format is documented
// in traces/conformance/README.md; this header is its abstract syntax.
//
// A script is a header (`# id:`, `# requires:`, `# dut:`, ...) and timed lines. Values are kept as
// unevaluated expressions: `$buf.rkey`, `ACK_DELAY_MAX`, `+3` (a PSN relative to an ISN) only mean
// something once the runner knows the connection's context.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace mroce::conform {

// "FILE:LINE: message" (LINE 0 when the file as a whole is bad).
struct ScriptError : std::runtime_error {
    ScriptError(const std::string& file, int line, const std::string& message);
    std::string file;
    int line = 0;
    std::string message;
};

// A sum of terms: numbers, named constants (ACK_DELAY_MAX, ...), variables ($buf.va, $w.psn),
// each optionally multiplied by a number: `2*RTO_INIT + 10`, `$buf.va + 4096`, `-1`.
struct Term {
    int64_t coefficient = 1;  // sign included
    std::string symbol;       // empty: a plain number (the coefficient is the value)
    bool operator==(const Term&) const = default;
};
struct Expr {
    std::vector<Term> terms;
    std::string text;  // as written, for messages
    bool operator==(const Expr& o) const { return terms == o.terms; }
};

// When a line happens (injections, actions) or may happen (expectations).
struct TimeSpec {
    enum class Base : uint8_t {
        Absolute,  // µs after the script's time 0 (the end of its setup)
        Relative,  // `+t`: after the previous line's time (for expectations: when it was met)
        Any,       // `*`: an expectation with no time bound but the test's timeout
    };
    Base base = Base::Relative;
    Expr lo;                 // `t` or the start of `lo..hi`
    std::optional<Expr> hi;  // a range; an expectation without one must be met at `lo` +- tolerance
};

// One `name=value` constraint or setting. For expectations: `*` matches anything, `a..b` a range,
// `a|b|c` a set; `flags=` takes names (`AR,RETX`, `-` for none); `sack=` takes bit indices
// (`1,2,5`, `-` for none).
struct Field {
    enum class Kind : uint8_t { Value, Any, Range, OneOf, Names };
    std::string name;
    Kind kind = Kind::Value;
    Expr value;                      // Value; Range lo
    Expr hi;                         // Range hi
    std::vector<Expr> choices;       // OneOf
    std::vector<std::string> names;  // Names (flags, sack bits as written)
    std::string text;                // the value as written
};

struct Line {
    enum class Kind : uint8_t {
        Inject,      // `<`  a frame from the tester to the DUT
        Expect,      // `>`  a frame from the DUT that must come (other frames may come between)
        ExpectNone,  // `> none ...`  no matching frame from the DUT in the time window
        Action,      // `!`  the DUT's control channel: post, close, listen, fill, ...
        Await,       // `?`  a completion, an event, memory contents or a counter of the DUT
        Directive,   // no time: `connect`, `mr`, `auto_ack`, `payload`
    };
    int lineno = 0;
    Kind kind = Kind::Directive;
    TimeSpec time;
    std::string verb;               // opcode name (WRITE, ACK, data, any, ...), action or directive name
    std::vector<std::string> args;  // bare words after the verb (region names, `on`, ...)
    std::vector<Field> fields;
    std::string as;  // `as NAME`: remember the matched frame's fields as $NAME.field
    // What a `>` or `> none` line assumes beyond the MUSTs (the monitor judges every frame anyway):
    //   `should=R-CC-11`   a DUT that follows that SHOULD rule (a work-conserving sender fills its
    //                      window). Unmet: the test is unsupported without --strict, failed with it.
    //   `default=R-PATH-5` the spec's default for an implementation choice of [R-CONF-2] (the
    //                      appendix-B fresh route). Unmet: unsupported, as another choice is allowed.
    enum class Assumes : uint8_t { Nothing, Should, Default };
    Assumes assumes = Assumes::Nothing;
    std::string assumed_rule;  // the requirement ID named by should= / default=
    std::string text;          // the line as written (for reports)
};

// `# dut: paths>=4 ops=read maxpay>=4096` — what the DUT must support for the test to run.
struct Qualifier {
    std::string name;  // paths, streams, maxpay, wcap, ops, ...
    std::string op;    // ">=", "<=", "="
    std::string value;
};

struct Script {
    std::string path;
    std::string id;                      // `# id:`, unique in the suite
    std::string title;                   // `# title:`
    std::vector<std::string> requires_;  // `# requires: R-ACK-2 R-ACK-4`
    std::vector<Qualifier> dut;          // `# dut:`
    bool should = false;                 // `# level: should`: only run with --strict
    double tolerance_us = -1;            // `# tolerance: 20us 10%` (-1: the runner's default)
    double tolerance_prop = -1;
    uint64_t timeout_us = 0;  // `# timeout: 200000` (0: the runner's default)
    std::vector<Line> lines;
};

// Parses one script. Throws ScriptError naming the file and line on any syntax error.
Script parse_script(std::string_view text, const std::string& path);
// Reads and parses a file; ScriptError "FILE:0: cannot read" when it cannot be read.
Script load_script(const std::string& path);

}  // namespace mroce::conform
