#include "target/machine_description.h"

#include "support/error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

namespace tilec {

namespace {

// The simulator holds every tile's memory in the host's: bounds on what a
// description may ask for.
constexpr std::uint32_t kMostTiles = 4096;
constexpr std::uint64_t kMostDeviceBytes = 2ull << 30;
constexpr std::uint32_t kAddressLimit = 0x100000;

enum class FieldKind : std::uint8_t { Count, Address, Real, Types };

// AMP element types as a set: bit 0 f8, bit 1 f16, bit 2 f32.
constexpr std::uint32_t kF8 = 1, kF16 = 2, kF32 = 4;

struct FieldAccess {
  MachineField info;
  FieldKind kind;
  std::function<double(const MachineModel&)> get;
  std::function<void(MachineModel&, double)> set;
};

std::uint32_t as_u32(double value) { return static_cast<std::uint32_t>(value); }

const std::vector<FieldAccess>& fields() {
  using M = MachineModel;
  static const std::vector<FieldAccess> table = {
      {{"tiles", "tiles on the chip", "tiles"}, FieldKind::Count,
       [](const M& m) { return m.tiles; }, [](M& m, double v) { m.tiles = as_u32(v); }},
      {{"tiles-per-column", "tiles in an exchange column; latency grows per column crossed", "tiles"},
       FieldKind::Count, [](const M& m) { return m.tiles_per_column; },
       [](M& m, double v) { m.tiles_per_column = as_u32(v); }},
      {{"standard-begin", "first byte of standard memory, where tile memory starts (code runs from here)", "address"},
       FieldKind::Address, [](const M& m) { return m.standard.begin; },
       [](M& m, double v) { m.standard.begin = as_u32(v); }},
      {{"standard-end", "one past the last byte of standard memory", "address"}, FieldKind::Address,
       [](const M& m) { return m.standard.end; }, [](M& m, double v) { m.standard.end = as_u32(v); }},
      {{"interleaved-begin", "first byte of interleaved memory (data only)", "address"}, FieldKind::Address,
       [](const M& m) { return m.interleaved.begin; }, [](M& m, double v) { m.interleaved.begin = as_u32(v); }},
      {{"interleaved-end", "one past the last byte of interleaved memory, where tile memory ends", "address"},
       FieldKind::Address, [](const M& m) { return m.interleaved.end; },
       [](M& m, double v) { m.interleaved.end = as_u32(v); }},
      {{"standard-load-bytes", "bytes a bundle loads from standard memory", "bytes per cycle", 8,
        "the instruction set loads at most 64 bits (ld64) a bundle from standard memory"},
       FieldKind::Count, [](const M& m) { return m.standard.load_bytes_per_cycle; },
       [](M& m, double v) { m.standard.load_bytes_per_cycle = as_u32(v); }},
      {{"interleaved-load-bytes", "bytes a bundle loads from interleaved memory", "bytes per cycle", 16,
        "the instruction set loads at most 128 bits (ld128) a bundle, from interleaved memory only"},
       FieldKind::Count, [](const M& m) { return m.interleaved.load_bytes_per_cycle; },
       [](M& m, double v) { m.interleaved.load_bytes_per_cycle = as_u32(v); }},
      {{"exchange-bytes", "bytes a tile sends, and receives, per cycle (a multiple of 4)", "bytes per cycle"},
       FieldKind::Count, [](const M& m) { return m.exchange_bytes_per_cycle; },
       [](M& m, double v) { m.exchange_bytes_per_cycle = as_u32(v); }},
      {{"exchange-base-latency", "cycles from a send to its first arrival within a column", "cycles"},
       FieldKind::Count, [](const M& m) { return m.exchange_base_latency; },
       [](M& m, double v) { m.exchange_base_latency = as_u32(v); }},
      {{"exchange-hop-latency", "further cycles per column between sender and receiver", "cycles"},
       FieldKind::Count, [](const M& m) { return m.exchange_hop_latency; },
       [](M& m, double v) { m.exchange_hop_latency = as_u32(v); }},
      {{"sync-cycles", "cycles a global sync takes after its last tile arrives", "cycles"}, FieldKind::Count,
       [](const M& m) { return m.sync_cycles; }, [](M& m, double v) { m.sync_cycles = as_u32(v); }},
      {{"clock-ghz", "clock, for times in reports", "GHz"}, FieldKind::Real, [](const M& m) { return m.clock_ghz; },
       [](M& m, double v) { m.clock_ghz = v; }},
      {{"amp-types", "element types the AMP takes: f8/f16/f32 or f16/f32", "types"}, FieldKind::Types,
       [](const M& m) { return (m.amp_fp8 ? kF8 : 0) | kF16 | kF32; },
       [](M& m, double v) { m.amp_fp8 = (as_u32(v) & kF8) != 0; }},
      {{"amp-f8-macs", "FP8 multiply-accumulates per tile per cycle", "MACs per cycle", 128,
        "amp.f8 does 128 MACs an issue, fixed by the instruction set"},
       FieldKind::Count, [](const M& m) { return m.amp_fp8_macs; }, [](M& m, double v) { m.amp_fp8_macs = as_u32(v); }},
      {{"amp-f16-macs", "FP16 multiply-accumulates per tile per cycle", "MACs per cycle", 64,
        "amp.f16 does 64 MACs an issue, fixed by the instruction set"},
       FieldKind::Count, [](const M& m) { return m.amp_fp16_macs; }, [](M& m, double v) { m.amp_fp16_macs = as_u32(v); }},
      {{"amp-f32-macs", "FP32 multiply-accumulates per tile per cycle", "MACs per cycle", 16,
        "amp.f32 does 16 MACs an issue, fixed by the instruction set"},
       FieldKind::Count, [](const M& m) { return m.amp_fp32_macs; }, [](M& m, double v) { m.amp_fp32_macs = as_u32(v); }},
      {{"workers", "worker contexts, each issuing once every that many cycles", "contexts", 6,
        "the simulator's barrel scheduler has 6 issue slots"},
       FieldKind::Count, [](const M& m) { return m.worker_contexts; },
       [](M& m, double v) { m.worker_contexts = m.issue_slots = as_u32(v); }},
  };
  return table;
}

const FieldAccess* find_field(std::string_view key) {
  for (const FieldAccess& field : fields())
    if (key == field.info.key) return &field;
  return nullptr;
}

std::string field_keys() {
  std::string keys;
  for (const FieldAccess& field : fields()) keys += (keys.empty() ? "" : ", ") + std::string(field.info.key);
  return keys;
}

std::string types_text(std::uint32_t types) {
  std::string text;
  for (auto [bit, name] : {std::pair{kF8, "f8"}, std::pair{kF16, "f16"}, std::pair{kF32, "f32"}})
    if (types & bit) text += (text.empty() ? "" : "/") + std::string(name);
  return text;
}

std::string value_text(const FieldAccess& field, double value) {
  switch (field.kind) {
    case FieldKind::Address: return fmt::format("{:#x}", as_u32(value));
    case FieldKind::Real: return fmt::format("{}", value);
    case FieldKind::Types: return types_text(as_u32(value));
    case FieldKind::Count: break;
  }
  return fmt::format("{}", as_u32(value));
}

// A value as written in an override ("1216", "0x80000", "1.6", "f16/f32").
double parse_value(const FieldAccess& field, std::string_view text, const std::string& where) {
  const std::string key = field.info.key;
  if (field.kind == FieldKind::Types) {
    std::uint32_t types = 0;
    std::size_t from = 0;
    while (from <= text.size()) {
      const std::size_t slash = std::min(text.find('/', from), text.size());
      const std::string_view name = text.substr(from, slash - from);
      if (name == "f8") types |= kF8;
      else if (name == "f16") types |= kF16;
      else if (name == "f32") types |= kF32;
      else throw_bad_input(where, "{}: '{}' is not an AMP type (f8, f16 or f32)", key, name);
      from = slash + 1;
    }
    return types;
  }
  if (field.kind == FieldKind::Real) {
    double value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || error != std::errc() || end != text.data() + text.size())
      throw_bad_input(where, "{}: '{}' is not a number", key, text);
    return value;
  }
  const bool hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  const std::string_view digits = hex ? text.substr(2) : text;
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value, hex ? 16 : 10);
  if (digits.empty() || error != std::errc() || end != digits.data() + digits.size())
    throw_bad_input(where, "{}: '{}' is not a whole number", key, text);
  return static_cast<double>(value);
}

void set_field(MachineModel& model, const FieldAccess& field, double value, const std::string& where) {
  if (field.info.fixed_reason && value != field.info.fixed)
    throw_bad_input(where, "{}: {} cannot be honoured: {}", field.info.key, value_text(field, value),
                    field.info.fixed_reason);
  if (field.kind == FieldKind::Types && !((as_u32(value) & kF16) && (as_u32(value) & kF32)))
    throw_bad_input(where, "amp-types: {} lacks f16 or f32; the compiler's kernels need both",
                    types_text(as_u32(value)));
  if (field.kind != FieldKind::Real && value > 0xffffffffu)
    throw_bad_input(where, "{}: {} is larger than 4294967295", field.info.key, value);
  field.set(model, value);
}

// What a description must keep true whatever it sets.
void check_machine(const MachineModel& m, const std::string& where) {
  if (m.tiles < 1 || m.tiles > kMostTiles)
    throw_bad_input(where, "tiles: {} is outside 1..{} (the simulator holds every tile)", m.tiles, kMostTiles);
  if (m.tiles_per_column < 1 || m.tiles_per_column > kMostTiles)
    throw_bad_input(where, "tiles-per-column: {} is outside 1..{}", m.tiles_per_column, kMostTiles);
  const MemoryClass& s = m.standard;
  const MemoryClass& i = m.interleaved;
  for (const MemoryClass* memory : {&s, &i}) {
    if (memory->end <= memory->begin)
      throw_bad_input(where, "{} memory {:#x}..{:#x} is empty or runs backwards", memory->name, memory->begin,
                      memory->end);
    if (memory->begin % 16 || memory->end % 16)
      throw_bad_input(where, "{} memory {:#x}..{:#x} does not start and end on 16 bytes", memory->name,
                      memory->begin, memory->end);
  }
  if (s.begin < i.end && i.begin < s.end)
    throw_bad_input(where, "standard memory {:#x}..{:#x} and interleaved memory {:#x}..{:#x} overlap", s.begin, s.end,
                    i.begin, i.end);
  if (i.begin < s.begin)
    throw_bad_input(where, "interleaved memory {:#x}..{:#x} lies below standard memory {:#x}..{:#x} (standard comes first)",
                    i.begin, i.end, s.begin, s.end);
  if (i.begin != s.end)
    throw_bad_input(where, "standard memory ends at {:#x} but interleaved memory begins at {:#x}: tile memory is one range",
                    s.end, i.begin);
  if (i.end > kAddressLimit)
    throw_bad_input(where, "interleaved-end: {:#x} is past {:#x}, the most tile memory the model addresses", i.end,
                    kAddressLimit);
  if (std::uint64_t{m.tiles} * (i.end - s.begin) > kMostDeviceBytes)
    throw_bad_input(where, "{} tiles of {} bytes pass the simulator's {} GiB", m.tiles, i.end - s.begin,
                    kMostDeviceBytes >> 30);
  if (m.exchange_bytes_per_cycle < 4 || m.exchange_bytes_per_cycle > 256 || m.exchange_bytes_per_cycle % 4)
    throw_bad_input(where, "exchange-bytes: {} is not a multiple of 4 in 4..256 (the exchange moves 32-bit words)",
                    m.exchange_bytes_per_cycle);
  if (m.sync_cycles < 1) throw_bad_input(where, "sync-cycles: a sync takes at least 1 cycle, not 0");
  if (!(m.clock_ghz > 0 && m.clock_ghz <= 10))
    throw_bad_input(where, "clock-ghz: {} is outside (0, 10]", m.clock_ghz);
}

// The derived fields, and the canonical name.
MachineModel finished(MachineModel model, const std::string& where) {
  check_machine(model, where);
  model.memory_begin = model.standard.begin;
  model.memory_end = model.interleaved.end;
  model.name = canonical_machine_name(model);
  return model;
}

MachineModel c600() { return MachineModel{}; }

MachineModel without_fp8(MachineModel model, std::string preset, double clock_ghz) {
  model.name = model.preset = std::move(preset);
  model.amp_fp8 = false;
  model.clock_ghz = clock_ghz;
  return model;
}

// The presets, from public facts (docs/machines.md); what they leave
// unsaid is the C600's.
const std::vector<MachineModel>& presets() {
  static const std::vector<MachineModel> list = [] {
    MachineModel gc2 = without_fp8(c600(), "ipu1", 1.6);
    gc2.tiles = 1216;
    gc2.standard.begin = gc2.memory_begin = 0x4C000;
    gc2.standard.end = gc2.interleaved.begin = 0x64000;  // 96 KiB standard, 160 KiB interleaved
    gc2.interleaved.end = gc2.memory_end = 0x8C000;
    return std::vector<MachineModel>{c600(), without_fp8(c600(), "bow", 1.85), without_fp8(c600(), "ipu2", 1.33),
                                     gc2};
  }();
  return list;
}

MachineModel from_json(const nlohmann::json& file, const std::string& where) {
  if (!file.is_object()) throw_bad_input(where, "a machine file holds one JSON object, not {}", file.type_name());
  MachineModel model = ipu21();
  if (file.contains("base")) {
    if (!file["base"].is_string()) throw_bad_input(where, "base: expected a preset's name, got {}", file["base"].dump());
    model = machine_preset(file["base"].get<std::string>(), where + ": base");
  }
  for (const auto& [key, value] : file.items()) {
    if (key == "base" || key == "description") continue;
    const FieldAccess* field = find_field(key);
    if (!field) throw_bad_input(where, "unknown field '{}' (the fields: base, description, {})", key, field_keys());
    std::string text;
    if (field->kind == FieldKind::Types && value.is_array()) {
      for (const nlohmann::json& type : value)
        text += (text.empty() ? "" : "/") + (type.is_string() ? type.get<std::string>() : type.dump());
    } else if (value.is_string() && field->kind == FieldKind::Address) {
      text = value.get<std::string>();
    } else if (value.is_number()) {
      if (field->kind != FieldKind::Real && !value.is_number_unsigned())
        throw_bad_input(where, "{}: expected a whole number, got {}", key, value.dump());
      text = value.dump();
    } else {
      throw_bad_input(where, "{}: expected {}, got {}", key,
                      field->kind == FieldKind::Types ? "a list of AMP types" : "a number", value.dump());
    }
    set_field(model, *field, parse_value(*field, text, where), where);
  }
  return finished(std::move(model), where);
}

}  // namespace

std::span<const MachineField> machine_fields() {
  static const std::vector<MachineField> infos = [] {
    std::vector<MachineField> list;
    for (const FieldAccess& field : fields()) list.push_back(field.info);
    return list;
  }();
  return infos;
}

MachineModel machine_preset(std::string_view name, const std::string& where) {
  for (const MachineModel& preset : presets())
    if (preset.preset == name) return preset;
  throw_bad_input(where, "unknown target '{}' (presets: ipu21, bow, ipu2, ipu1; or PRESET:N, "
                  "PRESET:field=value,..., or a machine file FILE.json)", name);
}

MachineModel machine_with_overrides(const MachineModel& base, std::string_view overrides) {
  const std::string where =
      fmt::format("target {}{}{}", base.name, base.name.find(':') == std::string::npos ? ":" : ",", overrides);
  MachineModel model = base;
  std::set<std::string_view> given;
  std::size_t from = 0;
  while (from <= overrides.size()) {
    const std::size_t comma = std::min(overrides.find(',', from), overrides.size());
    const std::string_view item = overrides.substr(from, comma - from);
    const std::size_t equals = item.find('=');
    if (equals == std::string_view::npos)
      throw_bad_input(where, "'{}' is not field=value", item);
    const std::string_view key = item.substr(0, equals);
    const FieldAccess* field = find_field(key);
    if (!field) throw_bad_input(where, "unknown field '{}' (the fields: {})", key, field_keys());
    if (!given.insert(key).second) throw_bad_input(where, "{} is given twice", key);
    set_field(model, *field, parse_value(*field, item.substr(equals + 1), where), where);
    from = comma + 1;
  }
  return finished(std::move(model), where);
}

MachineModel machine_from_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_bad_input(path, "cannot open the machine file");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json file;
  try {
    file = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& error) {
    throw_bad_input(path, "not valid JSON at byte {}", error.byte);
  }
  return from_json(file, path);
}

std::string canonical_machine_name(const MachineModel& model) {
  const MachineModel base = machine_preset(model.preset);
  std::vector<std::string> changed;
  bool tiles_only = true;
  for (const FieldAccess& field : fields()) {
    const double value = field.get(model);
    if (value == field.get(base)) continue;
    changed.push_back(fmt::format("{}={}", field.info.key, value_text(field, value)));
    tiles_only = tiles_only && std::string_view(field.info.key) == "tiles";
  }
  if (changed.empty()) return model.preset;
  if (tiles_only) return fmt::format("{}:{}", model.preset, model.tiles);
  return fmt::format("{}:{}", model.preset, fmt::join(changed, ","));
}

nlohmann::json describe_machine(const MachineModel& model) {
  nlohmann::json fields_json = nlohmann::json::object();
  for (const FieldAccess& field : fields()) {
    const double value = field.get(model);
    if (field.kind == FieldKind::Real) fields_json[field.info.key] = value;
    else if (field.kind == FieldKind::Count) fields_json[field.info.key] = as_u32(value);
    else fields_json[field.info.key] = value_text(field, value);
  }
  return {{"name", model.name}, {"preset", model.preset}, {"fields", std::move(fields_json)}};
}

std::string machine_summary(const MachineModel& model) {
  const std::uint32_t columns = (model.tiles + model.tiles_per_column - 1) / model.tiles_per_column;
  return fmt::format("{}: {} tiles ({} column{} of {}), {} KiB a tile (standard {} KiB, interleaved {} KiB), exchange "
                     "{} B/cycle (latency {} + {} a column), sync {} cycles, AMP {}, {} GHz",
                     model.name, model.tiles, columns, columns == 1 ? "" : "s", model.tiles_per_column,
                     model.memory_bytes() / 1024,
                     model.standard.bytes() / 1024, model.interleaved.bytes() / 1024, model.exchange_bytes_per_cycle,
                     model.exchange_base_latency, model.exchange_hop_latency, model.sync_cycles,
                     types_text((model.amp_fp8 ? kF8 : 0) | kF16 | kF32), model.clock_ghz);
}

MachineModel machine_by_name(std::string_view name) {
  if (name.ends_with(".json")) return machine_from_file(std::string(name));
  const std::size_t colon = name.find(':');
  const MachineModel base = machine_preset(name.substr(0, colon));
  if (colon == std::string_view::npos) return base;
  const std::string_view rest = name.substr(colon + 1);
  const bool digits = !rest.empty() && rest.find_first_not_of("0123456789") == std::string_view::npos;
  return machine_with_overrides(base, digits ? fmt::format("tiles={}", rest) : std::string(rest));
}

}  // namespace tilec
