// The assembler's first stage: reads the source, follows `.include`, records
// `.macro` definitions and expands their uses, giving the flat list of lines
// that the parser turns into code.
//
// Both directives work on text: `.include "file"` (a path relative to the
// including file) inserts that file's lines; `.macro NAME a, b` ... `.endm`
// defines NAME, and a line `NAME x, y` (after any labels) is replaced by the
// body with `\a`, `\b` replaced by the arguments' text and `\@` by a number
// unique to the expansion (for labels inside macros).
#pragma once

#include "isa/asm_lexer.h"

#include <deque>
#include <functional>
#include <optional>
#include <string>

namespace tilec::isa::assembly {

// Returns the contents of a file, or nullopt when it cannot be read.
using FileReader = std::function<std::optional<std::string>(const std::string& path)>;

// The expanded lines; file names live in `file_names` (which the lines point
// into, so it must outlive them).
std::vector<SourceLine> expand_source(const std::string& file, std::string_view text,
                                      const FileReader& reader, std::deque<std::string>& file_names);

}  // namespace tilec::isa::assembly
