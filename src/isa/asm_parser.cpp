// The assembler's second stage: each expanded line (labels, then an
// instruction, a bundle or a directive) becomes calls to the CodeBuilder.
#include "isa/asm_instruction.h"
#include "isa/assembler.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

namespace tilec::isa {

namespace {

using namespace assembly;

class Assembler {
 public:
  explicit Assembler(const std::string& name)
      : code_(name), lookup_([this](std::string_view name) { return lookup(name); }) {}

  void statement(const SourceLine& line);
  Object finish() {
    Object object = code_.finish();
    object.exchange_groups = std::move(exchange_groups_);
    return object;
  }

 private:
  Value lookup(std::string_view name) const;
  void directive(const Token& name);
  void section_directive();
  void data_directive(std::string_view name);
  void float_directive();
  std::string symbol_name(const char* what);
  void expect(std::string_view punct, const char* after);
  void expect_end();
  template <typename F>
  void build(int column, F&& call);

  const Token& peek() const { return tokens_[position_]; }
  std::int64_t constant(const char* what) {
    return ExpressionParser(*line_, tokens_, lookup_).parse_constant(position_, what);
  }

  CodeBuilder code_;
  NameLookup lookup_;
  std::vector<std::vector<std::uint32_t>> exchange_groups_;
  std::unordered_map<std::string, std::int64_t> constants_;
  const SourceLine* line_ = nullptr;
  std::vector<Token> tokens_;
  std::size_t position_ = 0;
};

// Runs a CodeBuilder call, giving its errors this line's place.
template <typename F>
void Assembler::build(int column, F&& call) {
  try {
    call();
  } catch (const Error& error) {
    fail_at(*line_, column, "{}", error.message());
  }
}

Value Assembler::lookup(std::string_view name) const {
  if (name == ".") return Value{0, ".", code_.current_section(), code_.offset()};
  if (auto it = constants_.find(std::string(name)); it != constants_.end()) return Value{it->second, {}, -1, 0};
  if (const Symbol* symbol = code_.defined(name)) return Value{0, std::string(name), symbol->section, symbol->offset};
  return Value{0, std::string(name), -1, 0};
}

void Assembler::expect(std::string_view punct, const char* after) {
  if (!peek().is(punct)) fail_at(*line_, peek().column, "expected '{}' after {}, got {}", punct, after, describe(peek()));
  ++position_;
}

void Assembler::expect_end() {
  if (peek().kind != TokenKind::End) fail_at(*line_, peek().column, "unexpected {} at the end of the line", describe(peek()));
}

std::string Assembler::symbol_name(const char* what) {
  if (peek().kind != TokenKind::Identifier || peek().text == ".")
    fail_at(*line_, peek().column, "expected {}, got {}", what, describe(peek()));
  return std::string(tokens_[position_++].text);
}

void Assembler::statement(const SourceLine& line) {
  line_ = &line;
  tokens_ = lex_line(line);
  position_ = 0;
  while (peek().kind == TokenKind::Identifier && tokens_[position_ + 1].is(":")) {
    const Token& name = peek();
    if (name.text == "." || constants_.count(std::string(name.text)))
      fail_at(line, name.column, "'{}' cannot be a label: it is {}", name.text,
              name.text == "." ? "the current offset" : "an .equ constant");
    build(name.column, [&] { code_.label(name.text); });
    position_ += 2;
  }
  const Token& start = peek();
  if (start.kind == TokenKind::End) return;
  if (start.kind == TokenKind::Identifier && start.text.starts_with('.') && start.text != ".") {
    ++position_;
    directive(start);
    return;
  }
  if (!start.is("{") && start.kind != TokenKind::Identifier)
    fail_at(line, start.column, "expected an instruction, a directive or a label, got {}", describe(start));
  ParsedBundle bundle = InstructionParser(line, tokens_, lookup_).bundle(position_);
  if (bundle.main.target || bundle.flt.target) code_.set_where(place_of(line, start.column));
  build(start.column, [&] { code_.bundle(bundle.main, bundle.flt); });
}

void Assembler::directive(const Token& name) {
  const std::string_view directive = name.text;
  if (directive == ".text") {
    build(name.column, [&] { code_.section(".text", {.executable = true}); });
  } else if (directive == ".data") {
    build(name.column, [&] { code_.section(".data", {}); });
  } else if (directive == ".section") {
    section_directive();
  } else if (directive == ".global" || directive == ".globl") {
    do {
      if (peek().is(",")) ++position_;
      std::string symbol = symbol_name("a symbol name");
      code_.set_global(symbol);
    } while (peek().is(","));
  } else if (directive == ".type") {
    std::string symbol = symbol_name("a symbol name");
    expect(",", "the symbol name");
    if (peek().is("@")) ++position_;
    const Token& kind = peek();
    SymbolKind value = kind.text == "kernel"     ? SymbolKind::Kernel
                       : kind.text == "function" ? SymbolKind::Function
                       : kind.text == "object"   ? SymbolKind::Data
                                                 : static_cast<SymbolKind>(255);
    if (kind.kind != TokenKind::Identifier || value == static_cast<SymbolKind>(255))
      fail_at(*line_, kind.column, "expected @kernel, @function or @object, got {}", describe(kind));
    ++position_;
    code_.set_kind(symbol, value);
  } else if (directive == ".size") {
    std::string symbol = symbol_name("a symbol name");
    expect(",", "the symbol name");
    const int column = peek().column;
    std::int64_t size = constant("a size in bytes");
    if (size < 0 || size > 0xffffffffLL) fail_at(*line_, column, "size {} is outside 0..2^32-1", size);
    code_.set_size(symbol, static_cast<std::uint32_t>(size));
  } else if (directive == ".align") {
    const int column = peek().column;
    std::int64_t alignment = constant("an alignment in bytes");
    if (alignment <= 0 || alignment > 0x100000 || (alignment & (alignment - 1)))
      fail_at(*line_, column, "alignment {} is not a power of two up to 2^20", alignment);
    build(name.column, [&] { code_.align(static_cast<std::uint32_t>(alignment)); });
  } else if (directive == ".word" || directive == ".half" || directive == ".byte") {
    data_directive(directive);
  } else if (directive == ".float") {
    float_directive();
  } else if (directive == ".zero") {
    const int column = peek().column;
    std::int64_t count = constant("a byte count");
    if (count < 0 || count > 0xffffffffLL) fail_at(*line_, column, "byte count {} is outside 0..2^32-1", count);
    build(name.column, [&] { code_.zero(static_cast<std::uint32_t>(count)); });
  } else if (directive == ".equ") {
    const Token& constant_name = peek();
    std::string symbol = symbol_name("a constant name");
    expect(",", "the constant name");
    std::int64_t value = constant("a constant value");
    if (constants_.count(symbol) || code_.defined(symbol))
      fail_at(*line_, constant_name.column, "'{}' is already defined", symbol);
    constants_.emplace(std::move(symbol), value);
  } else if (directive == ".exchange_group") {
    std::vector<std::uint32_t> tiles;
    do {
      if (peek().is(",")) ++position_;
      const int column = peek().column;
      const std::int64_t tile = constant("a tile number");
      if (tile < 0 || tile > 0xffff) fail_at(*line_, column, "tile {} is outside 0..65535", tile);
      tiles.push_back(static_cast<std::uint32_t>(tile));
    } while (peek().is(","));
    exchange_groups_.push_back(std::move(tiles));
  } else if (directive == ".macro" || directive == ".include") {
    fail_at(*line_, name.column, "'{}' must start its line (no label before it)", directive);
  } else if (directive == ".endm") {
    fail_at(*line_, name.column, "'.endm' without a '.macro'");
  } else {
    fail_at(*line_, name.column, "unknown directive '{}'", directive);
  }
  expect_end();
}

void Assembler::section_directive() {
  const Token& name = peek();
  if (name.kind != TokenKind::Identifier && name.kind != TokenKind::String)
    fail_at(*line_, name.column, "expected a section name, got {}", describe(name));
  ++position_;
  SectionOptions options;
  if (peek().is(",")) {
    ++position_;
    const Token& flags = peek();
    if (flags.kind != TokenKind::String)
      fail_at(*line_, flags.column, "expected section flags in quotes (\"x\", \"s\", \"i\"), got {}", describe(flags));
    for (char flag : flags.text) {
      if (flag == 'x') options.executable = true;
      else if (flag == 's' || flag == 'i') {
        MemoryWish wish = flag == 's' ? MemoryWish::Standard : MemoryWish::Interleaved;
        if (options.memory != MemoryWish::Any && options.memory != wish)
          fail_at(*line_, flags.column, "section flags ask for both standard and interleaved memory");
        options.memory = wish;
      } else {
        fail_at(*line_, flags.column, "unknown section flag '{}' (expected x = code, s = standard memory, "
                "i = interleaved memory)", flag);
      }
    }
    if (options.executable && options.memory == MemoryWish::Interleaved)
      fail_at(*line_, flags.column, "a code section cannot be in interleaved memory");
    ++position_;
  }
  build(name.column, [&] { code_.section(name.text, options); });
}

void Assembler::data_directive(std::string_view directive) {
  const int bytes = directive == ".word" ? 4 : directive == ".half" ? 2 : 1;
  const std::int64_t low = -(std::int64_t{1} << (8 * bytes - 1));
  const std::int64_t high = (std::int64_t{1} << (8 * bytes)) - 1;
  do {
    if (peek().is(",")) ++position_;
    const int column = peek().column;
    Value value = ExpressionParser(*line_, tokens_, lookup_).parse(position_);
    if (!value.is_constant()) {
      if (bytes != 4) fail_at(*line_, column, "only .word can hold an address, not {}", directive);
      if (value.symbol == ".") fail_at(*line_, column, "'.' cannot be used as an address here; define a label");
      code_.set_where(place_of(*line_, column));
      build(column, [&] { code_.word(SymbolRef{value.symbol, value.constant}); });
      continue;
    }
    if (value.constant < low || value.constant > high)
      fail_at(*line_, column, "value {} does not fit {} ({}..{})", value.constant, directive, low, high);
    build(column, [&] {
      if (bytes == 4) code_.word(static_cast<std::uint32_t>(value.constant));
      else if (bytes == 2) code_.half(static_cast<std::uint16_t>(value.constant));
      else code_.byte(static_cast<std::uint8_t>(value.constant));
    });
  } while (peek().is(","));
}

void Assembler::float_directive() {
  do {
    if (peek().is(",")) ++position_;
    const int column = peek().column;
    bool negative = false;
    if (peek().is("-") || peek().is("+")) {
      negative = peek().is("-");
      ++position_;
    }
    const Token& token = peek();
    float value = 0;
    if (token.kind == TokenKind::Identifier && (token.text == "inf" || token.text == "nan")) {
      value = token.text == "inf" ? INFINITY : NAN;
    } else {
      auto [end, error] = token.kind == TokenKind::Number
                              ? std::from_chars(token.text.data(), token.text.data() + token.text.size(), value)
                              : std::from_chars_result{token.text.data(), std::errc::invalid_argument};
      if (error != std::errc() || end != token.text.data() + token.text.size())
        fail_at(*line_, column, "expected a decimal number, inf or nan that fits FP32, got {}", describe(token));
    }
    ++position_;
    build(column, [&] { code_.float32(negative ? -value : value); });
  } while (peek().is(","));
}

Object assemble(const std::string& file_name, std::string_view text, const FileReader& reader) {
  std::deque<std::string> file_names;
  const FileReader& use = reader ? reader : FileReader(read_file_text);
  std::vector<SourceLine> lines = assembly::expand_source(file_name, text, use, file_names);
  Assembler assembler(file_name);
  for (const SourceLine& line : lines) assembler.statement(line);
  return assembler.finish();
}

}  // namespace

std::optional<std::string> read_file_text(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return std::move(text).str();
}

Object assemble_file(const std::string& path, const FileReader& reader) {
  const FileReader& use = reader ? reader : FileReader(read_file_text);
  std::optional<std::string> text = use(path);
  if (!text) throw_bad_input(path, "cannot read the file");
  return assemble(path, *text, use);
}

Object assemble_text(std::string_view text, const std::string& file_name, const FileReader& reader) {
  return assemble(file_name, text, reader);
}

Bundle parse_bundle(std::string_view text) {
  static const std::string kName = "<bundle>";
  SourceLine line{std::string(text), &kName, 1, {}};
  std::vector<Token> tokens = lex_line(line);
  NameLookup no_names = [&](std::string_view name) -> Value {
    fail_at(line, 1, "'{}': names are not allowed in a lone bundle", name);
  };
  std::size_t position = 0;
  ParsedBundle parsed = InstructionParser(line, tokens, no_names).bundle(position);
  return Bundle{parsed.main.instruction, parsed.flt.instruction};
}

}  // namespace tilec::isa
