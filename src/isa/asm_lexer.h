// Lexing of assembly text, one line at a time, and the places (file, line,
// column, macro expansion) that assembler errors name.
#pragma once

#include "support/error.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tilec::isa::assembly {

// One line of source after includes and macros are expanded.
struct SourceLine {
  std::string text;
  const std::string* file = nullptr;  // the path as the user spelled it
  int line = 0;                       // 1-based
  // Where the line came from when a macro produced it, e.g.
  // " (in macro 'step' used at gemm.s:40)"; empty otherwise.
  std::string expansion;
};

// "file:line:column"
std::string place_of(const SourceLine& line, int column);

template <typename... Args>
[[noreturn]] void fail_at(const SourceLine& line, int column, fmt::format_string<Args...> format,
                          Args&&... args) {
  throw Error(ErrorKind::BadInput, place_of(line, column),
              fmt::format(format, std::forward<Args>(args)...) + line.expansion);
}

enum class TokenKind : std::uint8_t {
  Identifier,  // mnemonics, directives, labels, symbols: [A-Za-z_.][A-Za-z0-9_.]*
  Register,    // $m3, $mzero, $a4, $a4:7
  Number,      // 42, 0x2a, 0b101, 1.5e-3 (checked when used)
  String,      // "text", without the quotes
  Punct,       // , : ; { } ( ) + - * / % & | ^ ~ << >> @
  End,
};

struct Token {
  TokenKind kind = TokenKind::End;
  std::string_view text;
  int column = 0;  // 1-based

  bool is(std::string_view punct) const { return kind == TokenKind::Punct && text == punct; }
};

// Tokens of one line, comments (`#`, `//`) dropped, ending with an End token.
std::vector<Token> lex_line(const SourceLine& line);

// How a token reads in a message: 'text', or "end of line".
std::string describe(const Token& token);

}  // namespace tilec::isa::assembly
