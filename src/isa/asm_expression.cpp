#include "isa/asm_expression.h"

#include <limits>

namespace tilec::isa::assembly {

namespace {

// Binary operators by precedence level, lowest first.
constexpr std::string_view kLevels[][2] = {{"|", ""}, {"^", ""}, {"&", ""}, {"<<", ">>"}, {"+", "-"}, {"*", "/"}};
constexpr int kLevelCount = 6;
constexpr int kMaxNesting = 100;

bool at_level(const Token& token, int level) {
  if (token.kind != TokenKind::Punct) return false;
  if (level == 5 && token.text == "%") return true;
  return token.text == kLevels[level][0] || (!kLevels[level][1].empty() && token.text == kLevels[level][1]);
}

std::int64_t wrap(std::uint64_t value) { return static_cast<std::int64_t>(value); }

}  // namespace

std::optional<std::int64_t> parse_integer(std::string_view text) {
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) base = 16;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'b' || text[1] == 'B')) base = 2;
  if (base != 10) text.remove_prefix(2);
  if (text.empty()) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : text) {
    int digit = c >= '0' && c <= '9' ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : 99;
    if (digit >= base) return std::nullopt;
    if (value > (std::uint64_t{std::numeric_limits<std::int64_t>::max()} - digit) / base) return std::nullopt;
    value = value * base + digit;
  }
  return static_cast<std::int64_t>(value);
}

Value ExpressionParser::parse(std::size_t& position) {
  position_ = position;
  Value value = binary(0);
  position = position_;
  return value;
}

std::int64_t ExpressionParser::parse_constant(std::size_t& position, const char* what) {
  const Token& start = tokens_[position];
  Value value = parse(position);
  if (!value.is_constant())
    fail_at(line_, start.column, "expected {}, got symbol '{}' (a constant is needed here)", what, value.symbol);
  return value.constant;
}

Value ExpressionParser::binary(int level) {
  if (level == kLevelCount) return unary();
  Value left = binary(level + 1);
  while (at_level(peek(), level)) {
    const Token& op = peek();
    ++position_;
    Value right = binary(level + 1);
    left = combine(op, std::move(left), std::move(right));
  }
  return left;
}

Value ExpressionParser::unary() {
  const Token& token = peek();
  if (token.is("-") || token.is("~") || token.is("+")) {
    ++position_;
    if (++depth_ > kMaxNesting) fail_at(line_, token.column, "operators nested deeper than {}", kMaxNesting);
    Value operand = unary();
    --depth_;
    if (token.is("+")) return operand;
    if (!operand.is_constant())
      fail_at(line_, token.column, "'{}' cannot apply to symbol '{}'", token.text, operand.symbol);
    operand.constant = token.is("-") ? wrap(0 - static_cast<std::uint64_t>(operand.constant)) : ~operand.constant;
    return operand;
  }
  if (token.is("(")) {
    ++position_;
    if (++depth_ > kMaxNesting) fail_at(line_, token.column, "parentheses nested deeper than {}", kMaxNesting);
    Value inner = binary(0);
    --depth_;
    if (!peek().is(")")) fail_at(line_, peek().column, "expected ')', got {}", describe(peek()));
    ++position_;
    return inner;
  }
  if (token.kind == TokenKind::Number) {
    ++position_;
    std::optional<std::int64_t> number = parse_integer(token.text);
    if (!number) fail_at(line_, token.column, "expected an integer (decimal, 0x hex or 0b binary, below 2^63), got '{}'", token.text);
    return Value{*number, {}, -1, 0};
  }
  if (token.kind == TokenKind::Identifier) {
    ++position_;
    return lookup_(token.text);
  }
  fail_at(line_, token.column, "expected a number, a name or '(', got {}", describe(token));
}

Value ExpressionParser::combine(const Token& op, Value left, Value right) {
  const std::uint64_t a = static_cast<std::uint64_t>(left.constant);
  const std::uint64_t b = static_cast<std::uint64_t>(right.constant);
  if (op.text == "+" && (left.is_constant() || right.is_constant())) {
    Value result = left.is_constant() ? std::move(right) : std::move(left);
    result.constant = wrap(a + b);
    return result;
  }
  if (op.text == "-" && right.is_constant()) {
    left.constant = wrap(a - b);
    return left;
  }
  if (op.text == "-" && !left.is_constant() && left.section >= 0 && left.section == right.section)
    return Value{wrap(static_cast<std::uint64_t>(left.offset + left.constant) -
                      static_cast<std::uint64_t>(right.offset + right.constant)),
                 {}, -1, 0};
  if (op.text == "-")
    fail_at(line_, op.column, "cannot subtract '{}' from '{}': only labels of one section defined above subtract",
            right.symbol, left.is_constant() ? std::string("a constant") : left.symbol);
  if (!left.is_constant() || !right.is_constant())
    fail_at(line_, op.column, "'{}' cannot apply to symbol '{}'", op.text,
            left.is_constant() ? right.symbol : left.symbol);
  Value result;
  if (op.text == "|") result.constant = left.constant | right.constant;
  else if (op.text == "^") result.constant = left.constant ^ right.constant;
  else if (op.text == "&") result.constant = left.constant & right.constant;
  else if (op.text == "*") result.constant = wrap(a * b);
  else if (op.text == "<<" || op.text == ">>") {
    if (right.constant < 0 || right.constant > 63) fail_at(line_, op.column, "shift by {} is outside 0..63", right.constant);
    result.constant = op.text == "<<" ? wrap(a << right.constant) : left.constant >> right.constant;
  } else {  // "/" or "%"
    if (right.constant == 0) fail_at(line_, op.column, "division by zero");
    if (left.constant == std::numeric_limits<std::int64_t>::min() && right.constant == -1)
      fail_at(line_, op.column, "division overflows");
    result.constant = op.text == "/" ? left.constant / right.constant : left.constant % right.constant;
  }
  return result;
}

}  // namespace tilec::isa::assembly
