// The instruction reference of docs/isa.md, generated from the ISA table,
// and the operand placeholders that it and the assembler's messages use.
#pragma once

#include "isa/isa.h"

#include <string>

namespace tilec::isa {

// How an operand is written, by kind: "$m", "$a", "$a:pair", "$a:quad",
// "u16" / "s15" (unsigned / signed immediate of that many bits), "target"
// (a label or .+N bundles), "fp8" (f143 or f152).
std::string operand_syntax(const FieldSpec& field);
// The operands of an instruction: "$m, $m, s16"; empty when it has none.
std::string operands_syntax(const InstructionSpec& spec);

// The heading that starts the generated part of docs/isa.md.
inline constexpr const char* kInstructionReferenceHeading = "## Instruction reference";
// That part, from the heading to the end of the file.
std::string instruction_reference_markdown();

}  // namespace tilec::isa
