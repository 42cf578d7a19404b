// The script parser: one line at a time, every error names the file and line.
#include "conform/script.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <sstream>

namespace mroce::conform {

ScriptError::ScriptError(const std::string& f, int l, const std::string& m)
    : std::runtime_error(f + ":" + std::to_string(l) + ": " + m), file(f), line(l), message(m) {}

namespace {

struct Cursor {
    const std::string& file;
    int line;
    [[noreturn]] void fail(const std::string& m) const { throw ScriptError(file, line, m); }
};

bool is_symbol_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$'; }

std::optional<int64_t> parse_number(std::string_view s) {
    if (s.empty()) return std::nullopt;
    int base = 10;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s.remove_prefix(2);
    }
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
    if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
    if (v > uint64_t(INT64_MAX)) return std::nullopt;
    return int64_t(v);
}

// expr := ['+'|'-'] term (('+'|'-') term)* ; term := number | symbol | number '*' symbol
Expr parse_expr(std::string_view s, const Cursor& at) {
    Expr e;
    e.text = std::string(s);
    if (s.empty()) at.fail("empty value");
    size_t i = 0;
    bool first = true;
    while (i < s.size()) {
        int64_t sign = 1;
        if (s[i] == '+' || s[i] == '-') {
            sign = s[i] == '-' ? -1 : 1;
            ++i;
        } else if (!first) {
            at.fail("expected + or - in '" + std::string(s) + "'");
        }
        size_t j = i;
        while (j < s.size() && s[j] != '+' && s[j] != '-') ++j;
        std::string_view term = s.substr(i, j - i);
        if (term.empty()) at.fail("missing term in '" + std::string(s) + "'");
        Term t;
        const size_t star = term.find('*');
        std::string_view num = star == std::string_view::npos ? std::string_view{} : term.substr(0, star);
        std::string_view sym = star == std::string_view::npos ? term : term.substr(star + 1);
        if (star != std::string_view::npos) {
            auto n = parse_number(num);
            if (!n) at.fail("bad number '" + std::string(num) + "' in '" + std::string(s) + "'");
            t.coefficient = *n;
        }
        if (auto n = parse_number(sym); n && star == std::string_view::npos) {
            t.coefficient = *n;
        } else {
            if (sym.empty() || std::isdigit(static_cast<unsigned char>(sym[0])))
                at.fail("bad value '" + std::string(term) + "'");
            for (char c : sym)
                if (!is_symbol_char(c)) at.fail("bad character in '" + std::string(term) + "'");
            t.symbol = std::string(sym);
        }
        t.coefficient *= sign;
        e.terms.push_back(std::move(t));
        i = j;
        first = false;
    }
    return e;
}

TimeSpec parse_time_exprs(std::string_view s, const Cursor& at);

// Times are numbers, $variables and UPPERCASE constants (ACK_DELAY_MAX, RTO_MIN, ...).
void check_time_symbols(const Expr& e, const Cursor& at) {
    for (const auto& t : e.terms) {
        if (t.symbol.empty() || t.symbol[0] == '$') continue;
        for (char c : t.symbol)
            if (!(std::isupper(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
                  c == '_'))
                at.fail("bad time '" + e.text + "' (numbers, $variables and constants such as ACK_DELAY_MAX)");
    }
}

TimeSpec parse_time(std::string_view s, const Cursor& at) {
    TimeSpec t = parse_time_exprs(s, at);
    check_time_symbols(t.lo, at);
    if (t.hi) check_time_symbols(*t.hi, at);
    return t;
}

TimeSpec parse_time_exprs(std::string_view s, const Cursor& at) {
    TimeSpec t;
    if (s == "*") {
        t.base = TimeSpec::Base::Any;
        t.lo = parse_expr("0", at);
        return t;
    }
    if (s.starts_with("+")) {
        t.base = TimeSpec::Base::Relative;
        s.remove_prefix(1);
    } else {
        t.base = TimeSpec::Base::Absolute;
    }
    const size_t dots = s.find("..");
    if (dots == std::string_view::npos) {
        t.lo = parse_expr(s, at);
    } else {
        t.lo = parse_expr(s.substr(0, dots), at);
        t.hi = parse_expr(s.substr(dots + 2), at);
    }
    return t;
}

Field parse_field(std::string_view tok, const Cursor& at) {
    Field f;
    const size_t eq = tok.find('=');
    if (eq == 0 || eq == std::string_view::npos) at.fail("expected name=value, got '" + std::string(tok) + "'");
    f.name = std::string(tok.substr(0, eq));
    for (char c : f.name)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') at.fail("bad field name '" + f.name + "'");
    std::string_view v = tok.substr(eq + 1);
    f.text = std::string(v);
    if (v.empty()) at.fail("field '" + f.name + "' has no value");
    if (f.name == "flags" || f.name == "sack" || f.name == "has" || f.name == "lacks" || f.name == "data") {
        f.kind = Field::Kind::Names;
        if (v == "*") {
            f.kind = Field::Kind::Any;
            return f;
        }
        if (v != "-") {
            size_t i = 0;
            while (i <= v.size()) {
                size_t j = v.find(',', i);
                if (j == std::string_view::npos) j = v.size();
                std::string_view name = v.substr(i, j - i);
                if (name.empty()) at.fail("empty item in '" + std::string(v) + "'");
                f.names.emplace_back(name);
                i = j + 1;
            }
        }
        return f;
    }
    if (v == "*") {
        f.kind = Field::Kind::Any;
    } else if (v.find("..") != std::string_view::npos) {
        const size_t d = v.find("..");
        f.kind = Field::Kind::Range;
        f.value = parse_expr(v.substr(0, d), at);
        f.hi = parse_expr(v.substr(d + 2), at);
    } else if (v.find('|') != std::string_view::npos) {
        f.kind = Field::Kind::OneOf;
        size_t i = 0;
        while (i <= v.size()) {
            size_t j = v.find('|', i);
            if (j == std::string_view::npos) j = v.size();
            f.choices.push_back(parse_expr(v.substr(i, j - i), at));
            i = j + 1;
        }
    } else {
        f.kind = Field::Kind::Value;
        // Status names, op names and the like are words: keep them as a symbol term.
        f.value = parse_expr(v, at);
    }
    return f;
}

// R-AREA-N: "R-", capital letters, "-", digits.
bool is_requirement_id(std::string_view w) {
    if (!w.starts_with("R-")) return false;
    w.remove_prefix(2);
    size_t i = 0;
    while (i < w.size() && w[i] >= 'A' && w[i] <= 'Z') ++i;
    if (i == 0 || i + 1 >= w.size() || w[i] != '-') return false;
    for (++i; i < w.size(); ++i)
        if (!std::isdigit(static_cast<unsigned char>(w[i]))) return false;
    return true;
}

std::vector<std::string> split_words(std::string_view s) {
    std::vector<std::string> out;
    size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
        size_t j = i;
        while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
        if (j > i) out.emplace_back(s.substr(i, j - i));
        i = j;
    }
    return out;
}

void parse_header(Script& sc, std::string_view key, std::string_view value, const Cursor& at) {
    auto words = split_words(value);
    if (key == "id") {
        if (words.size() != 1) at.fail("'# id:' takes one word");
        sc.id = words[0];
    } else if (key == "title") {
        sc.title = std::string(value);
    } else if (key == "requires") {
        if (words.empty()) at.fail("'# requires:' names no requirement");
        for (auto& w : words) {
            if (!is_requirement_id(w)) at.fail("'" + w + "' is not a requirement ID (R-AREA-N)");
            sc.requires_.push_back(w);
        }
    } else if (key == "dut") {
        for (auto& w : words) {
            Qualifier q;
            size_t p = w.find_first_of("<>=");
            if (p == 0 || p == std::string::npos) at.fail("bad DUT qualifier '" + w + "'");
            q.name = w.substr(0, p);
            if (w.compare(p, 2, ">=") == 0 || w.compare(p, 2, "<=") == 0) {
                q.op = w.substr(p, 2);
                q.value = w.substr(p + 2);
            } else if (w[p] == '=') {
                q.op = "=";
                q.value = w.substr(p + 1);
            } else {
                at.fail("bad DUT qualifier '" + w + "' (use >=, <= or =)");
            }
            if (q.value.empty()) at.fail("DUT qualifier '" + w + "' has no value");
            sc.dut.push_back(q);
        }
    } else if (key == "level") {
        if (value == "should")
            sc.should = true;
        else if (value == "must")
            sc.should = false;
        else
            at.fail("'# level:' is must or should");
    } else if (key == "tolerance") {
        for (auto& w : words) {
            double d = 0;
            std::string num = w;
            if (w.ends_with("us"))
                num = w.substr(0, w.size() - 2);
            else if (w.ends_with("%"))
                num = w.substr(0, w.size() - 1);
            else
                at.fail("tolerance '" + w + "' needs a unit (us or %)");
            try {
                size_t used = 0;
                d = std::stod(num, &used);
                if (used != num.size() || d < 0) throw std::invalid_argument("x");
            } catch (const std::exception&) { at.fail("bad tolerance '" + w + "'"); }
            if (w.ends_with("%"))
                sc.tolerance_prop = d / 100.0;
            else
                sc.tolerance_us = d;
        }
    } else if (key == "timeout") {
        auto n = words.size() == 1 ? parse_number(words[0]) : std::nullopt;
        if (!n || *n <= 0) at.fail("'# timeout:' takes a number of µs");
        sc.timeout_us = uint64_t(*n);
    }
    // Any other `# word: ...` line is a comment.
}

}  // namespace

Script parse_script(std::string_view text, const std::string& path) {
    Script sc;
    sc.path = path;
    int lineno = 0;
    bool in_header = true;
    size_t pos = 0;
    while (pos <= text.size()) {
        size_t nl = text.find('\n', pos);
        if (nl == std::string_view::npos) nl = text.size();
        std::string_view raw = text.substr(pos, nl - pos);
        pos = nl + 1;
        ++lineno;
        const Cursor at{path, lineno};
        for (char c : raw)
            if (c == '\0' || (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\r'))
                at.fail("control character in line");
        if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
        // A header comment: `# key: value` before the first statement.
        std::string_view trimmed = raw;
        while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.front()))) trimmed.remove_prefix(1);
        if (trimmed.starts_with("#")) {
            if (in_header) {
                std::string_view body = trimmed.substr(1);
                while (!body.empty() && body.front() == ' ') body.remove_prefix(1);
                const size_t colon = body.find(':');
                if (colon != std::string_view::npos && colon > 0 &&
                    body.substr(0, colon).find(' ') == std::string_view::npos) {
                    std::string_view value = body.substr(colon + 1);
                    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
                    while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
                    parse_header(sc, body.substr(0, colon), value, at);
                }
            }
            continue;
        }
        // Strip a trailing comment.
        std::string_view code = raw.substr(0, raw.find('#'));
        auto words = split_words(code);
        if (words.empty()) continue;
        in_header = false;
        Line ln;
        ln.lineno = lineno;
        ln.text = std::string(code);
        while (!ln.text.empty() && std::isspace(static_cast<unsigned char>(ln.text.back()))) ln.text.pop_back();
        size_t w = 0;
        static const char* kDirectives[] = {"connect", "mr", "auto_ack", "payload"};
        bool directive = false;
        for (const char* d : kDirectives) directive = directive || words[0] == d;
        if (directive) {
            ln.kind = Line::Kind::Directive;
            ln.verb = words[0];
            w = 1;
        } else {
            if (words.size() < 3) at.fail("expected '<time> <|>|!|? VERB ...'");
            ln.time = parse_time(words[0], at);
            const std::string& k = words[1];
            if (k == "<")
                ln.kind = Line::Kind::Inject;
            else if (k == ">")
                ln.kind = Line::Kind::Expect;
            else if (k == "!")
                ln.kind = Line::Kind::Action;
            else if (k == "?")
                ln.kind = Line::Kind::Await;
            else
                at.fail("expected <, >, ! or ? after the time, got '" + k + "'");
            if (ln.time.base == TimeSpec::Base::Any && (ln.kind == Line::Kind::Inject || ln.kind == Line::Kind::Action))
                at.fail("'*' (any time) is only for > and ? lines");
            ln.verb = words[2];
            w = 3;
            if (ln.kind == Line::Kind::Expect && ln.verb == "none") {
                ln.kind = Line::Kind::ExpectNone;
                if (w < words.size() && words[w].find('=') == std::string::npos)
                    ln.verb = words[w++];
                else
                    ln.verb = "any";
                if (!ln.time.hi) at.fail("'> none' needs a time range (e.g. +0..100)");
            }
        }
        for (; w < words.size(); ++w) {
            const std::string& tok = words[w];
            if (tok == "as") {
                if (w + 1 >= words.size()) at.fail("'as' needs a name");
                ln.as = words[++w];
                for (char c : ln.as)
                    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') at.fail("bad name '" + ln.as + "'");
                continue;
            }
            if (tok.find('=') == std::string::npos) {
                if (!ln.fields.empty()) at.fail("bare word '" + tok + "' after fields");
                if (ln.kind == Line::Kind::Inject || ln.kind == Line::Kind::Expect)
                    at.fail("bare word '" + tok + "': frame lines take name=value fields");
                ln.args.push_back(tok);
                continue;
            }
            if (tok.starts_with("should=") || tok.starts_with("default=")) {
                const bool should = tok[0] == 's';
                const std::string key = should ? "should=" : "default=";
                if (ln.kind != Line::Kind::Expect && ln.kind != Line::Kind::ExpectNone)
                    at.fail("'" + key + "' marks a '>' line only");
                if (ln.assumes != Line::Assumes::Nothing)
                    at.fail("a line assumes one rule at most (should= or default=)");
                ln.assumes = should ? Line::Assumes::Should : Line::Assumes::Default;
                ln.assumed_rule = tok.substr(key.size());
                if (!is_requirement_id(ln.assumed_rule))
                    at.fail("'" + ln.assumed_rule + "' is not a requirement ID (R-AREA-N)");
                if (should &&
                    std::find(sc.requires_.begin(), sc.requires_.end(), ln.assumed_rule) == sc.requires_.end())
                    sc.requires_.push_back(ln.assumed_rule);
                continue;
            }
            Field f = parse_field(tok, at);
            for (const auto& g : ln.fields)
                if (g.name == f.name) at.fail("field '" + f.name + "' given twice");
            ln.fields.push_back(std::move(f));
        }
        sc.lines.push_back(std::move(ln));
    }
    if (sc.id.empty()) throw ScriptError(path, 1, "missing '# id:' header");
    if (sc.requires_.empty()) throw ScriptError(path, 1, "missing '# requires:' header");
    return sc;
}

Script load_script(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ScriptError(path, 0, "cannot read");
    std::stringstream ss;
    ss << in.rdbuf();
    if (in.bad()) throw ScriptError(path, 0, "cannot read");
    return parse_script(ss.str(), path);
}

}  // namespace mroce::conform
