// A subcommand of the `mroce` CLI: it adds its options to a CLI11 subcommand and returns the
// function that runs it once parsing succeeded.
#pragma once

#include <CLI/CLI.hpp>
#include <filesystem>
#include <functional>
#include <string>

namespace mroce::cli {

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;  // the job ran and its result is negative
inline constexpr int kExitMisuse = 2;  // bad command line; one line on stderr says why

struct GlobalOptions {
    bool json = false;              // last stdout line is one JSON object
    std::string program = "mroce";  // how the binary was invoked (for commands printed to users)
};

using Runner = std::function<int()>;

// `word` as one POSIX shell word: unchanged when plain, else single-quoted, so that a command
// printed for the user runs when pasted.
inline std::string shell_word(const std::string& word) {
    constexpr const char* kPlain = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:=@%+,-";
    if (!word.empty() && word.find_first_not_of(kPlain) == std::string::npos) return word;
    std::string quoted = "'";
    for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
}

// Creates the output folder `dir` and its parents; false if it is not a usable folder. Checked
// before the job runs, not after an hour of it when a file has to be written.
inline bool make_output_dir(const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    return !ec && std::filesystem::is_directory(dir, ec);
}

// Each subcommand file defines one of these.
Runner add_demo(CLI::App& app, const GlobalOptions& global);
Runner add_sim(CLI::App& app, const GlobalOptions& global);
Runner add_replay(CLI::App& app, const GlobalOptions& global);
Runner add_conform(CLI::App& app, const GlobalOptions& global);
Runner add_check(CLI::App& app, const GlobalOptions& global);
Runner add_fabric(CLI::App& app, const GlobalOptions& global);  // with ns-3 (MROCE_HAVE_FABRIC)

}  // namespace mroce::cli
