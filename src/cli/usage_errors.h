// Usage errors in tilec's one-line form, `tilec: error: FLAG: WHAT`: the
// checks on number flags, and every parse failure CLI11 reports turned into
// one line that names the flag or argument and says what is wrong.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <limits>
#include <string>

namespace tilec::cli {

// A flag's value must be a decimal integer in [min, max]; the message names
// the range and the value ("must be an integer >= 0, not -1"). Runs before
// CLI11 converts the text, so no conversion error reaches the user.
CLI::Validator integer_in(std::uint64_t min, std::uint64_t max = std::numeric_limits<std::uint64_t>::max());

// A flag's value must be a finite decimal number >= 0 ("must be a number
// >= 0, not -1").
CLI::Validator non_negative_number();

// The line (without "tilec: error: ") for a CLI11 parse failure of `app`.
std::string usage_error_text(const CLI::App& app, const CLI::ParseError& error);

}  // namespace tilec::cli
