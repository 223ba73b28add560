// Parsing of one instruction (mnemonic and operands) or one `{ a ; b }`
// bundle from a lexed line, checking every operand against the ISA table.
#pragma once

#include "isa/asm_expression.h"
#include "isa/code_builder.h"

namespace tilec::isa::assembly {

struct ParsedBundle {
  Operation main;
  Operation flt;
};

class InstructionParser {
 public:
  InstructionParser(const SourceLine& line, const std::vector<Token>& tokens, const NameLookup& lookup)
      : line_(line), tokens_(tokens), expressions_(line, tokens, lookup) {}

  // An instruction starting at `position` (its mnemonic), up to the end of
  // the line or a `;` / `}`.
  Operation instruction(std::size_t& position);
  // A bundle: `{ x ; y }` or a single instruction (the other slot gets its
  // nop); the line must end after it.
  ParsedBundle bundle(std::size_t& position);

 private:
  void operand(const InstructionSpec& spec, int index, std::size_t& position, Operation& operation);
  int register_operand(const InstructionSpec& spec, int index, const Token& token);
  std::int64_t label_operand(std::size_t& position, Operation& operation);
  bool at_stop(std::size_t position) const;
  [[noreturn]] void operand_count_error(const InstructionSpec& spec, int given, const Token& at) const;

  const SourceLine& line_;
  const std::vector<Token>& tokens_;
  ExpressionParser expressions_;
};

}  // namespace tilec::isa::assembly
