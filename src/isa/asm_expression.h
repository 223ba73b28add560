// Constant expressions in assembly operands and directives.
//
// Grammar (C precedence, lowest first):  | ^ & << >> + - * / %  and unary
// - ~ +, with parentheses. Terms are integers (decimal, 0x hex, 0b binary),
// .equ names, symbols and `.` (the current offset). A symbol may only be
// added to or subtracted from a constant (`table + 16`); two labels of one
// section that are already defined subtract to a constant (`. - start`).
#pragma once

#include "isa/asm_lexer.h"

#include <functional>
#include <optional>

namespace tilec::isa::assembly {

struct Value {
  std::int64_t constant = 0;
  std::string symbol;  // empty: a plain constant; "." for the current offset
  // For a symbol already defined in this object: its section and offset.
  int section = -1;
  std::int64_t offset = 0;

  bool is_constant() const { return symbol.empty(); }
};

// Resolves a name to a value: an .equ constant, or a symbol (defined or not).
using NameLookup = std::function<Value(std::string_view name)>;

class ExpressionParser {
 public:
  ExpressionParser(const SourceLine& line, const std::vector<Token>& tokens, const NameLookup& lookup)
      : line_(line), tokens_(tokens), lookup_(lookup) {}

  // Parses an expression starting at `position`, leaving `position` after it.
  Value parse(std::size_t& position);
  // The same, but the result must be a constant.
  std::int64_t parse_constant(std::size_t& position, const char* what);

 private:
  Value binary(int level);
  Value unary();
  Value combine(const Token& op, Value left, Value right);
  const Token& peek() const { return tokens_[position_]; }

  const SourceLine& line_;
  const std::vector<Token>& tokens_;
  const NameLookup& lookup_;
  std::size_t position_ = 0;
  int depth_ = 0;  // of parentheses
};

// An integer literal, or nullopt when the token is not one.
std::optional<std::int64_t> parse_integer(std::string_view text);

}  // namespace tilec::isa::assembly
