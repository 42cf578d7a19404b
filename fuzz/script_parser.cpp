// Fuzz target script_parser: the conformance script parser (harness/conform) on arbitrary text.
//
// parse_script must return a Script or throw ScriptError, never crash or throw anything else. The
// error is one line "NAME:LINE: message" with LINE within the input's line count. A parsed script
// has an ID and requirement IDs, every line number increases, and every timed line that is not a
// directive has a verb. Then the script is printed back field by field and parsed again: the same
// line kinds, verbs and field names come back (the parser keeps what it was given).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "conform/script.hpp"
#include "fuzz_util.hpp"

namespace {

constexpr const char* kTargetName = "script_parser";
namespace cf = mroce::conform;

std::string print_back(const cf::Script& s) {
  std::string out = "# id: " + s.id + "\n# requires:";
  for (const auto& r : s.requires_) out += " " + r;
  out += "\n";
  for (const auto& ln : s.lines) out += ln.text + "\n";
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  int lines = 1;
  for (char c : text) lines += c == '\n';
  cf::Script s;
  try {
    s = cf::parse_script(text, "fuzz.mcs");
  } catch (const cf::ScriptError& e) {
    const std::string m = e.what();
    FUZZ_CHECK(m.rfind("fuzz.mcs:", 0) == 0, "error does not start with the file name: " + m);
    FUZZ_CHECK(m.find('\n') == std::string::npos, "error spans lines: " + m);
    FUZZ_CHECK(e.line >= 0 && e.line <= lines,
               "error names line " + std::to_string(e.line) + " of " + std::to_string(lines));
    return 0;
  }
  FUZZ_CHECK(!s.id.empty() && !s.requires_.empty(), "a script without an ID or requirements was accepted");
  int prev = 0;
  for (const auto& ln : s.lines) {
    FUZZ_CHECK(ln.lineno > prev, "line numbers do not increase");
    FUZZ_CHECK(!ln.verb.empty(), "a line without a verb");
    prev = ln.lineno;
  }
  // Round trip through the lines as written.
  cf::Script again;
  try {
    again = cf::parse_script(print_back(s), "again.mcs");
  } catch (const cf::ScriptError& e) {
    FUZZ_CHECK(false, std::string("printed back, the script no longer parses: ") + e.what());
  }
  FUZZ_CHECK(again.lines.size() == s.lines.size(), "line count changed in the round trip");
  for (size_t i = 0; i < s.lines.size(); ++i) {
    FUZZ_CHECK(again.lines[i].kind == s.lines[i].kind && again.lines[i].verb == s.lines[i].verb,
               "a line changed in the round trip");
    FUZZ_CHECK(again.lines[i].fields.size() == s.lines[i].fields.size(), "fields changed in the round trip");
    for (size_t j = 0; j < s.lines[i].fields.size(); ++j)
      FUZZ_CHECK(again.lines[i].fields[j].name == s.lines[i].fields[j].name &&
                     again.lines[i].fields[j].kind == s.lines[i].fields[j].kind,
                 "a field changed in the round trip");
  }
  return 0;
}
