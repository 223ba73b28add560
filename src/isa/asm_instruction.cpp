#include "isa/asm_instruction.h"

#include "isa/isa_doc.h"

namespace tilec::isa::assembly {

namespace {

// "$a12" -> 12; nullopt unless the text is the prefix and a decimal number.
std::optional<int> register_number(std::string_view text, std::string_view prefix) {
  if (!text.starts_with(prefix)) return std::nullopt;
  text.remove_prefix(prefix.size());
  if (text.empty() || text.size() > 2 || (text.size() == 2 && text[0] == '0')) return std::nullopt;
  int value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

const char* slot_name(Slot slot) { return slot == Slot::Main ? "main" : "float"; }

}  // namespace

bool InstructionParser::at_stop(std::size_t position) const {
  const Token& token = tokens_[position];
  return token.kind == TokenKind::End || token.is(";") || token.is("}");
}

void InstructionParser::operand_count_error(const InstructionSpec& spec, int given, const Token& at) const {
  const int expected = format_spec(spec.format).field_count;
  if (expected == 0)
    fail_at(line_, at.column, "'{}' takes no operands, got {}", spec.mnemonic, describe(at));
  if (given < expected)
    fail_at(line_, at.column, "'{}' takes {} operand(s) ({}), got {}", spec.mnemonic, expected,
            operands_syntax(spec), given);
  fail_at(line_, at.column, "unexpected {} after the {} operand(s) of '{}' ({})", describe(at), expected,
          spec.mnemonic, operands_syntax(spec));
}

int InstructionParser::register_operand(const InstructionSpec& spec, int index, const Token& token) {
  const FieldSpec& field = format_spec(spec.format).fields[index];
  const std::string_view text = token.kind == TokenKind::Register ? token.text : std::string_view{};
  const std::size_t colon = text.find(':');
  const std::string_view first = text.substr(0, colon);
  std::optional<int> value;
  switch (field.kind) {
    case OperandKind::MReg:
      value = text == "$mzero" ? std::optional<int>(kMZero) : register_number(text, "$m");
      if (!value || *value >= kMRegisters)
        fail_at(line_, token.column, "expected an $m register ($m0..$m15 or $mzero), got {}", describe(token));
      return *value;
    case OperandKind::AReg:
      value = register_number(text, "$a");
      if (!value || *value >= kARegisters)
        fail_at(line_, token.column, "expected a single register $a0..$a31, got {}", describe(token));
      return *value;
    case OperandKind::APair:
    case OperandKind::AQuad: {
      const int count = field.kind == OperandKind::APair ? 2 : 4;
      value = colon == std::string_view::npos ? std::nullopt : register_number(first, "$a");
      std::optional<int> last =
          colon == std::string_view::npos ? std::nullopt : register_number(text.substr(colon + 1), "");
      if (!value || !last || *value % count || *last != *value + count - 1 || *last >= kARegisters) {
        if (count == 2)
          fail_at(line_, token.column, "expected a register pair $aN:N+1 with N even, got {}", describe(token));
        fail_at(line_, token.column, "expected a quad register $aN:N+3 with N a multiple of 4, got {}",
                describe(token));
      }
      return *value;
    }
    default: break;
  }
  fail_at(line_, token.column, "internal: operand {} of '{}' is not a register", index + 1, spec.mnemonic);
}

std::int64_t InstructionParser::label_operand(std::size_t& position, Operation& operation) {
  const Token& start = tokens_[position];
  if (start.kind == TokenKind::Identifier && start.text == ".") {
    // `.+N`: N bundles from this bundle, as the disassembler prints it.
    ++position;
    if (at_stop(position) || tokens_[position].is(",")) return 0;
    if (!tokens_[position].is("+") && !tokens_[position].is("-"))
      fail_at(line_, tokens_[position].column, "expected '+' or '-' after '.' in a branch target, got {}",
              describe(tokens_[position]));
    return expressions_.parse_constant(position, "a number of bundles");
  }
  Value value = expressions_.parse(position);
  if (value.is_constant())
    fail_at(line_, start.column, "expected a label or '.+N' (N bundles) as the branch target, got a constant");
  if (value.symbol == ".")
    fail_at(line_, start.column, "a branch target relative to '.' is written '.+N' with N in bundles");
  operation.target = SymbolRef{value.symbol, value.constant};
  return 0;
}

void InstructionParser::operand(const InstructionSpec& spec, int index, std::size_t& position,
                                Operation& operation) {
  const FieldSpec& field = format_spec(spec.format).fields[index];
  const Token& token = tokens_[position];
  std::int64_t value = 0;
  switch (field.kind) {
    case OperandKind::MReg:
    case OperandKind::AReg:
    case OperandKind::APair:
    case OperandKind::AQuad:
      value = register_operand(spec, index, token);
      ++position;
      break;
    case OperandKind::Fp8Format:
      if (token.kind != TokenKind::Identifier || (token.text != "f143" && token.text != "f152"))
        fail_at(line_, token.column, "expected an FP8 format f143 or f152, got {}", describe(token));
      value = token.text == "f152";
      ++position;
      break;
    case OperandKind::Label:
      value = label_operand(position, operation);
      break;
    case OperandKind::UImm:
    case OperandKind::SImm: {
      if (token.kind == TokenKind::Register)
        fail_at(line_, token.column, "expected an immediate ({}), got register {}", operand_syntax(field), describe(token));
      Value parsed = expressions_.parse(position);
      std::optional<SymbolOperand> site = symbol_operand(spec);
      if (!parsed.is_constant()) {
        if (!site || site->operand != index)
          fail_at(line_, token.column, "expected a constant ({}), got symbol '{}'", operand_syntax(field), parsed.symbol);
        if (parsed.symbol == ".")
          fail_at(line_, token.column, "'.' cannot be used as an address here; define a label");
        operation.target = SymbolRef{parsed.symbol, parsed.constant};
      } else {
        value = parsed.constant;
      }
      break;
    }
  }
  if (!operation.target || symbol_operand(spec)->operand != index) {
    if (auto problem = check_operand(spec, index, value)) fail_at(line_, token.column, "{}", *problem);
    operation.instruction.operands[index] = static_cast<std::int32_t>(value);
  }
}

Operation InstructionParser::instruction(std::size_t& position) {
  const Token& mnemonic = tokens_[position];
  if (mnemonic.kind != TokenKind::Identifier)
    fail_at(line_, mnemonic.column, "expected an instruction, got {}", describe(mnemonic));
  const InstructionSpec* spec = find_spec(mnemonic.text);
  if (!spec) fail_at(line_, mnemonic.column, "unknown instruction '{}'", mnemonic.text);
  ++position;
  Operation operation(Instruction{spec->opcode, {}});
  const int count = format_spec(spec->format).field_count;
  for (int i = 0; i < count; ++i) {
    if (i > 0) {
      if (!tokens_[position].is(",")) {
        if (at_stop(position)) operand_count_error(*spec, i, tokens_[position]);
        fail_at(line_, tokens_[position].column, "expected ',' before operand {} of '{}', got {}", i + 1,
                spec->mnemonic, describe(tokens_[position]));
      }
      ++position;
    }
    if (at_stop(position) || tokens_[position].is(",")) operand_count_error(*spec, i, tokens_[position]);
    operand(*spec, i, position, operation);
  }
  if (!at_stop(position)) operand_count_error(*spec, count + 1, tokens_[position]);
  return operation;
}

ParsedBundle InstructionParser::bundle(std::size_t& position) {
  const Token& open = tokens_[position];
  if (!open.is("{")) {
    Operation single = instruction(position);
    if (tokens_[position].kind != TokenKind::End)
      fail_at(line_, tokens_[position].column, "unexpected {} after the instruction", describe(tokens_[position]));
    if (spec_of(single.instruction.opcode).slot == Slot::Float) return ParsedBundle{Operation(nop()), single};
    return ParsedBundle{single, Operation(fnop())};
  }
  ++position;
  Operation first = instruction(position);
  std::optional<Operation> second;
  std::size_t second_column = 0;
  if (tokens_[position].is(";")) {
    ++position;
    second_column = tokens_[position].column;
    second = instruction(position);
  }
  if (!tokens_[position].is("}"))
    fail_at(line_, tokens_[position].column, "expected {} to close the bundle, got {}",
            second ? "'}'" : "';' or '}'", describe(tokens_[position]));
  ++position;
  if (tokens_[position].kind != TokenKind::End)
    fail_at(line_, tokens_[position].column, "unexpected {} after the bundle", describe(tokens_[position]));
  const InstructionSpec& first_spec = spec_of(first.instruction.opcode);
  if (!second) {
    if (first_spec.slot == Slot::Float) return ParsedBundle{Operation(nop()), first};
    return ParsedBundle{first, Operation(fnop())};
  }
  const InstructionSpec& second_spec = spec_of(second->instruction.opcode);
  if (first_spec.slot == second_spec.slot)
    fail_at(line_, static_cast<int>(second_column), "both instructions of the bundle are {}-slot instructions ('{}' and '{}')",
            slot_name(first_spec.slot), first_spec.mnemonic, second_spec.mnemonic);
  if (first_spec.slot == Slot::Main) return ParsedBundle{first, *second};
  return ParsedBundle{*second, first};
}

}  // namespace tilec::isa::assembly
