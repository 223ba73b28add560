#include "isa/asm_source.h"

#include <algorithm>
#include <filesystem>
#include <unordered_map>

namespace tilec::isa::assembly {

namespace {

// Deep enough for any sensible nesting, small enough to stop a macro or an
// include that uses itself.
constexpr int kMaxDepth = 64;
// More lines than a tile's memory can hold bundles for: a bound on macros
// that expand each other exponentially.
constexpr std::size_t kMaxExpandedLines = 200'000;

struct Macro {
  std::vector<std::string> parameters;
  std::vector<SourceLine> body;
};

std::string_view first_word(std::string_view text) {
  std::size_t begin = text.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) return {};
  std::size_t end = text.find_first_of(" \t\r#", begin);
  return text.substr(begin, end == std::string_view::npos ? text.size() - begin : end - begin);
}

std::size_t token_end(const Token& token) {
  return token.column - 1 + token.text.size() + (token.kind == TokenKind::String ? 2 : 0);
}

class Expander {
 public:
  Expander(const FileReader& reader, std::deque<std::string>& file_names)
      : reader_(reader), file_names_(file_names) {}

  void expand_file(const std::string& path, std::string_view text, int depth) {
    const std::string* file = &file_names_.emplace_back(path);
    std::vector<SourceLine> lines;
    int number = 0;
    std::size_t begin = 0;
    while (begin <= text.size()) {
      std::size_t end = text.find('\n', begin);
      if (end == std::string_view::npos) end = text.size();
      lines.push_back(SourceLine{std::string(text.substr(begin, end - begin)), file, ++number, {}});
      begin = end + 1;
    }
    include_stack_.push_back(std::filesystem::path(path).lexically_normal().string());
    expand_lines(lines, depth);
    include_stack_.pop_back();
  }

  std::vector<SourceLine> take() { return std::move(output_); }

 private:
  void expand_lines(std::vector<SourceLine>& lines, int depth) {
    for (std::size_t i = 0; i < lines.size(); ++i) {
      SourceLine& line = lines[i];
      if (first_word(line.text) == ".endm") fail_at(line, 1, "'.endm' without a '.macro'");
      if (first_word(line.text) == ".macro") {
        i = define_macro(lines, i);
        continue;
      }
      const std::vector<Token> tokens = lex_line(line);
      std::size_t k = 0;
      while (tokens[k].kind == TokenKind::Identifier && tokens[k + 1].is(":")) k += 2;
      const Token& command = tokens[k];
      if (command.kind == TokenKind::Identifier && command.text == ".macro")
        fail_at(line, command.column, "'.macro' must start its line (no label before it)");
      if (command.kind == TokenKind::Identifier && command.text == ".include") {
        include(line, tokens, k, depth);
      } else if (auto it = command.kind == TokenKind::Identifier ? macros_.find(std::string(command.text))
                                                                 : macros_.end();
                 it != macros_.end()) {
        if (k > 0) output_.push_back(SourceLine{line.text.substr(0, command.column - 1), line.file, line.line, line.expansion});
        expand_macro(it->first, it->second, line, tokens, k, depth);
      } else {
        output_.push_back(std::move(line));
      }
    }
  }

  std::size_t define_macro(std::vector<SourceLine>& lines, std::size_t at) {
    const SourceLine& line = lines[at];
    const std::vector<Token> tokens = lex_line(line);  // tokens[0] is ".macro"
    const Token& name = tokens[1];
    if (name.kind != TokenKind::Identifier || name.text.starts_with('.'))
      fail_at(line, name.column, "expected a macro name after '.macro', got {}", describe(name));
    Macro macro;
    for (std::size_t k = 2; tokens[k].kind != TokenKind::End; ++k) {
      if (k > 2) {
        if (!tokens[k].is(",")) fail_at(line, tokens[k].column, "expected ',' between macro parameters, got {}", describe(tokens[k]));
        ++k;
      }
      if (tokens[k].kind != TokenKind::Identifier)
        fail_at(line, tokens[k].column, "expected a macro parameter name, got {}", describe(tokens[k]));
      std::string parameter(tokens[k].text);
      if (std::find(macro.parameters.begin(), macro.parameters.end(), parameter) != macro.parameters.end())
        fail_at(line, tokens[k].column, "macro parameter '{}' is named twice", parameter);
      macro.parameters.push_back(std::move(parameter));
    }
    std::size_t end = at + 1;
    for (; end < lines.size(); ++end) {
      std::string_view word = first_word(lines[end].text);
      if (word == ".endm") break;
      if (word == ".macro") fail_at(lines[end], 1, "a '.macro' cannot be defined inside another");
      macro.body.push_back(lines[end]);
    }
    if (end == lines.size()) fail_at(line, 1, "'.macro {}' has no '.endm'", name.text);
    auto [it, inserted] = macros_.emplace(std::string(name.text), std::move(macro));
    if (!inserted) fail_at(line, name.column, "macro '{}' is already defined", name.text);
    return end;
  }

  void include(const SourceLine& line, const std::vector<Token>& tokens, std::size_t k, int depth) {
    const Token& path_token = tokens[k + 1];
    if (path_token.kind != TokenKind::String)
      fail_at(line, path_token.column, "expected a quoted file name after '.include', got {}", describe(path_token));
    if (tokens[k + 2].kind != TokenKind::End)
      fail_at(line, tokens[k + 2].column, "unexpected {} after the file name", describe(tokens[k + 2]));
    if (depth >= kMaxDepth) fail_at(line, tokens[k].column, "includes and macros nested deeper than {}", kMaxDepth);
    std::filesystem::path path(path_token.text);
    if (path.is_relative()) path = std::filesystem::path(*line.file).parent_path() / path;
    const std::string normal = path.lexically_normal().string();
    if (std::find(include_stack_.begin(), include_stack_.end(), normal) != include_stack_.end())
      fail_at(line, path_token.column, "'{}' includes itself", normal);
    std::optional<std::string> text = reader_(normal);
    if (!text) fail_at(line, path_token.column, "cannot read '{}'", normal);
    expand_file(normal, *text, depth + 1);
  }

  void expand_macro(const std::string& name, const Macro& macro, const SourceLine& line,
                    const std::vector<Token>& tokens, std::size_t k, int depth) {
    if (depth >= kMaxDepth)
      fail_at(line, tokens[k].column, "macros nested deeper than {} (does '{}' use itself?)", kMaxDepth, name);
    std::vector<std::string> arguments;
    std::size_t first = k + 1;
    while (tokens[first].kind != TokenKind::End) {
      std::size_t last = first;
      int parentheses = 0;
      while (tokens[last].kind != TokenKind::End && (parentheses > 0 || !tokens[last].is(","))) {
        parentheses += tokens[last].is("(") - tokens[last].is(")");
        ++last;
      }
      if (last == first) fail_at(line, tokens[first].column, "empty argument for macro '{}'", name);
      arguments.emplace_back(line.text.substr(tokens[first].column - 1,
                                              token_end(tokens[last - 1]) - (tokens[first].column - 1)));
      first = tokens[last].kind == TokenKind::End ? last : last + 1;
      if (tokens[last].is(",") && tokens[first].kind == TokenKind::End)
        fail_at(line, tokens[first].column, "empty argument for macro '{}'", name);
    }
    if (arguments.size() != macro.parameters.size())
      fail_at(line, tokens[k].column, "macro '{}' takes {} argument(s), got {}", name,
              macro.parameters.size(), arguments.size());
    expanded_lines_ += macro.body.size();
    if (expanded_lines_ > kMaxExpandedLines)
      fail_at(line, tokens[k].column, "macros expand to more than {} lines", kMaxExpandedLines);
    const std::string unique = std::to_string(expansions_++);
    const std::string note = fmt::format(" (in macro '{}' used at {}){}", name, place_of(line, tokens[k].column),
                                         line.expansion);
    std::vector<SourceLine> expanded;
    expanded.reserve(macro.body.size());
    for (const SourceLine& body : macro.body)
      expanded.push_back(SourceLine{substitute(body.text, macro, arguments, unique), body.file, body.line, note});
    expand_lines(expanded, depth + 1);
  }

  static std::string substitute(std::string_view text, const Macro& macro,
                                const std::vector<std::string>& arguments, const std::string& unique) {
    std::string result;
    result.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (text[i] != '\\') {
        result += text[i];
        continue;
      }
      if (text.substr(i + 1, 1) == "@") {
        result += unique;
        ++i;
        continue;
      }
      if (text.substr(i + 1, 2) == "()") {  // separates an argument from following text
        i += 2;
        continue;
      }
      std::size_t end = i + 1;
      while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
      std::string_view word = text.substr(i + 1, end - i - 1);
      auto it = std::find(macro.parameters.begin(), macro.parameters.end(), word);
      if (it == macro.parameters.end()) {
        result += text[i];  // left for the lexer to report
        continue;
      }
      result += arguments[it - macro.parameters.begin()];
      i = end - 1;
    }
    return result;
  }

  const FileReader& reader_;
  std::deque<std::string>& file_names_;
  std::vector<SourceLine> output_;
  std::unordered_map<std::string, Macro> macros_;
  std::vector<std::string> include_stack_;
  int expansions_ = 0;
  std::size_t expanded_lines_ = 0;
};

}  // namespace

std::vector<SourceLine> expand_source(const std::string& file, std::string_view text,
                                      const FileReader& reader, std::deque<std::string>& file_names) {
  Expander expander(reader, file_names);
  expander.expand_file(file, text, 0);
  return expander.take();
}

}  // namespace tilec::isa::assembly
