#include "isa/asm_lexer.h"

#include <cctype>

namespace tilec::isa::assembly {

namespace {

// ASCII only, without the C library's locale lookups (lexing is hot).
bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alphanumeric(char c) { return is_letter(c) || is_digit(c); }
bool is_identifier_start(char c) { return is_letter(c) || c == '_' || c == '.'; }
bool is_identifier_char(char c) { return is_alphanumeric(c) || c == '_' || c == '.'; }

bool is_punct(char c) {
  switch (c) {
    case ',': case ':': case ';': case '{': case '}': case '(': case ')': case '+': case '-':
    case '*': case '/': case '%': case '&': case '|': case '^': case '~': case '@':
      return true;
    default:
      return false;
  }
}

}  // namespace

std::string place_of(const SourceLine& line, int column) {
  return fmt::format("{}:{}:{}", line.file ? *line.file : std::string("<input>"), line.line, column);
}

std::string describe(const Token& token) {
  if (token.kind == TokenKind::End) return "end of line";
  if (token.kind == TokenKind::String) return fmt::format("'\"{}\"'", token.text);
  return fmt::format("'{}'", token.text);
}

std::vector<Token> lex_line(const SourceLine& line) {
  const std::string_view text = line.text;
  std::vector<Token> tokens;
  tokens.reserve(16);
  std::size_t i = 0;
  auto token = [&](TokenKind kind, std::size_t begin, std::size_t end) {
    tokens.push_back(Token{kind, text.substr(begin, end - begin), static_cast<int>(begin) + 1});
  };
  while (i < text.size()) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    if (c == '#' || (c == '/' && i + 1 < text.size() && text[i + 1] == '/')) break;
    const std::size_t begin = i;
    if (is_identifier_start(c)) {
      while (i < text.size() && is_identifier_char(text[i])) ++i;
      token(TokenKind::Identifier, begin, i);
    } else if (c == '$') {
      ++i;
      while (i < text.size() && is_alphanumeric(text[i])) ++i;
      if (i < text.size() && text[i] == ':') {
        ++i;
        while (i < text.size() && is_alphanumeric(text[i])) ++i;
      }
      token(TokenKind::Register, begin, i);
    } else if (is_digit(c)) {
      // Swallow everything that could belong to the number, so "12abc" is
      // reported whole; a sign only continues a decimal exponent.
      const bool hex = c == '0' && i + 1 < text.size() && (text[i + 1] == 'x' || text[i + 1] == 'X');
      ++i;
      while (i < text.size()) {
        const char d = text[i];
        if (is_identifier_char(d)) {
          ++i;
        } else if ((d == '+' || d == '-') && !hex && (text[i - 1] == 'e' || text[i - 1] == 'E')) {
          ++i;
        } else {
          break;
        }
      }
      token(TokenKind::Number, begin, i);
    } else if (c == '"') {
      const std::size_t close = text.find('"', i + 1);
      if (close == std::string_view::npos) fail_at(line, static_cast<int>(begin) + 1, "unterminated string");
      token(TokenKind::String, begin + 1, close);
      tokens.back().column = static_cast<int>(begin) + 1;
      i = close + 1;
    } else if ((c == '<' || c == '>') && i + 1 < text.size() && text[i + 1] == c) {
      i += 2;
      token(TokenKind::Punct, begin, i);
    } else if (is_punct(c)) {
      ++i;
      token(TokenKind::Punct, begin, i);
    } else if (c == '\\') {
      std::size_t end = i + 1;
      while (end < text.size() && is_identifier_char(text[end])) ++end;
      if (end == i + 1 && end < text.size()) ++end;
      if (line.expansion.empty())
        fail_at(line, static_cast<int>(begin) + 1, "'{}' outside a macro body", text.substr(begin, end - begin));
      fail_at(line, static_cast<int>(begin) + 1, "'{}' is not an argument of the macro being expanded",
              text.substr(begin, end - begin));
    } else {
      if (std::isprint(static_cast<unsigned char>(c)))
        fail_at(line, static_cast<int>(begin) + 1, "unexpected character '{}'", c);
      fail_at(line, static_cast<int>(begin) + 1, "unexpected byte {:#04x}", static_cast<unsigned char>(c));
    }
  }
  tokens.push_back(Token{TokenKind::End, {}, static_cast<int>(text.size()) + 1});
  return tokens;
}

}  // namespace tilec::isa::assembly
