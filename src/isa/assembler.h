// The assembler: tilec assembly text to a relocatable object, through the
// same CodeBuilder the compiler uses. The syntax is described in docs/isa.md,
// "Assembly syntax".
//
// Every error is a BadInput tilec::Error whose place is `file:line:column`
// and whose message says what was expected and what was found.
#pragma once

#include "isa/asm_source.h"
#include "isa/object.h"

#include <string>
#include <string_view>

namespace tilec::isa {

using assembly::FileReader;

// Reads a file from disk (nullopt when it cannot be read).
std::optional<std::string> read_file_text(const std::string& path);

// Assembles a file; `.include` paths are relative to the including file.
// `reader` defaults to read_file_text.
Object assemble_file(const std::string& path, const FileReader& reader = {});
// Assembles text; `file_name` names it in errors and anchors includes.
Object assemble_text(std::string_view text, const std::string& file_name = "<input>",
                     const FileReader& reader = {});

// One bundle or instruction as bundle_text() prints it (no labels, symbols
// or .equ names; branch targets as .+N). For tests and tools.
Bundle parse_bundle(std::string_view text);

}  // namespace tilec::isa
