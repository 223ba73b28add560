#include "package/inspect.h"

#include "isa/isa.h"
#include "package/piece_layout.h"
#include "package/segment_contents.h"
#include "support/error.h"
#include "target/machine_description.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

namespace tilec::package {

using nlohmann::json;

namespace {

std::string_view symbol_kind_name(SymbolKind kind) {
  switch (kind) {
    case SymbolKind::Function: return "function";
    case SymbolKind::Kernel: return "kernel";
    case SymbolKind::Data: return "data";
    case SymbolKind::Op: return "op";
  }
  return "?";
}

std::string_view region_kind_name(RegionKind kind) {
  switch (kind) {
    case RegionKind::Code: return "code";
    case RegionKind::Arguments: return "arguments";
    case RegionKind::Tensor: return "tensor";
    case RegionKind::ExchangeBuffer: return "exchange-buffer";
    case RegionKind::Scratch: return "scratch";
  }
  return "?";
}

// "f143(s=-4)[1,729,1152]", "f16[4304]".
std::string type_string(const graph::TensorType& type) {
  std::string text(element_type_name(type.storage.element));
  if (is_fp8(type.storage.element)) text += fmt::format("(s={})", type.storage.scale);
  return text + fmt::format("[{}]", fmt::join(type.shape, ","));
}

std::uint64_t piece_bytes(const Binding& binding, const Piece& piece) {
  return static_cast<std::uint64_t>(piece_elements(piece)) *
         element_bytes(binding.type.storage.element);
}

json per_tile_bytes(const std::vector<std::uint64_t>& bytes) {
  std::uint64_t total = 0;
  for (std::uint64_t value : bytes) total += value;
  auto [min, max] = std::minmax_element(bytes.begin(), bytes.end());
  return {{"total", total},
          {"min", bytes.empty() ? 0 : *min},
          {"mean", bytes.empty() ? 0 : total / bytes.size()},
          {"max", bytes.empty() ? 0 : *max}};
}

std::string hex(std::uint64_t value) { return fmt::format("{:#x}", value); }

// Per gemm whose K the plan splits: its cuts, the partials' type and the
// column ranges with their order of parts.
json summation_order_json(const graph::SummationOrder& order) {
  json gemms = json::object();
  for (const auto& [name, split] : order.gemms) {
    json ranges = json::array();
    for (const reference::KSplit::Columns& range : split.orders)
      ranges.push_back({{"columns", {range.begin, range.end}}, {"parts", range.parts}});
    gemms[name] = {{"cuts", split.cuts}, {"partials", split.half_partials ? "f16" : "f32"}, {"columnRanges", ranges}};
    if (split.pass_parts) gemms[name]["passParts"] = split.pass_parts;
  }
  return gemms;
}

// Per attention: its key cuts, softmax chunks and probabilities' type.
json attention_orders_json(const graph::SummationOrder& order) {
  json attentions = json::object();
  for (const auto& [name, split] : order.attentions)
    attentions[name] = {{"keyCuts", split.key_cuts},
                        {"softmaxChunks", split.softmax_chunks},
                        {"probabilities", split.half_probabilities ? "f16" : "f32"}};
  return attentions;
}

// Per layernorm or softmax: whole rows, or its column cuts, ranges and merge.
json row_orders_json(const graph::SummationOrder& order) {
  json rows = json::object();
  for (const auto& [name, split] : order.rows)
    rows[name] = {{"cuts", split.cuts}, {"ranges", split.ranges}, {"mergeReceived", split.merge_received}};
  return rows;
}

std::uint64_t get(const json& object, const char* key) { return object.at(key).get<std::uint64_t>(); }

std::string schedule_text(const json& schedule) {
  if (schedule.is_null()) return "not recorded";
  auto plural = [](std::uint64_t n) { return n == 1 ? "" : "s"; };
  std::string text = fmt::format("{} supersteps a chunk, {} chunk{}; {} group{} of {} tiles", get(schedule, "supersteps"),
                                 get(schedule, "chunks"), plural(get(schedule, "chunks")), get(schedule, "groups"),
                                 plural(get(schedule, "groups")), get(schedule, "group_size"));
  if (schedule.contains("repeat")) {
    const json& repeat = schedule["repeat"];
    text += fmt::format("; repeat {}: supersteps {}-{}, {} times", repeat["name"].get<std::string>(),
                        get(repeat, "first_superstep"), get(repeat, "last_superstep"), get(repeat, "count"));
  }
  return text + fmt::format("; {} supersteps in the run", get(schedule, "run_supersteps"));
}

}  // namespace

json schedule_json(const Schedule& schedule) {
  if (!schedule.known()) return nullptr;
  json result = {{"supersteps", schedule.supersteps},
                 {"chunks", schedule.chunks},
                 {"groups", schedule.groups},
                 {"group_size", schedule.group_size},
                 {"run_supersteps", schedule.run_supersteps()}};
  if (!schedule.repeat.empty())
    result["repeat"] = {{"name", schedule.repeat},
                        {"first_superstep", schedule.repeat_first},
                        {"last_superstep", schedule.repeat_last},
                        {"count", schedule.repeat_count}};
  return result;
}

json summary_report(const Package& package, const FileFacts& file) {
  std::vector<std::uint64_t> code(package.tiles.size(), 0), data(package.tiles.size(), 0);
  std::uint64_t segments = 0, loaded = 0, tiles_with_code = 0;
  std::uint32_t peak = 0, peak_tile = 0;
  for (std::size_t t = 0; t < package.tiles.size(); ++t) {
    const TileImage& tile = package.tiles[t];
    for (const Segment& segment : tile.segments) {
      (segment.executable ? code : data)[t] += segment.size();
      loaded += segment.size();
      ++segments;
    }
    if (code[t] > 0) ++tiles_with_code;
    if (tile.peak_bytes > peak) {
      peak = tile.peak_bytes;
      peak_tile = static_cast<std::uint32_t>(t);
    }
  }
  SegmentContents contents = distinct_segment_contents(package);
  std::size_t largest_group = 0;
  for (const auto& group : package.exchange_groups) largest_group = std::max(largest_group, group.size());
  std::map<std::string, int> roles{{"input", 0}, {"parameter", 0}, {"output", 0}};
  for (const Binding& binding : package.bindings) ++roles[std::string(binding_role_name(binding.role))];

  json compile_info = json::parse(package.compile_info, nullptr, false);
  if (compile_info.is_discarded()) compile_info = package.compile_info;
  return {
      {"file", {{"name", file.name}, {"bytes", file.bytes}, {"format_version", kFormatVersion}}},
      {"target", package.target},
      {"machine", describe_machine(machine_by_name(package.target))},
      {"tiles", package.tiles.size()},
      {"tiles_with_code", tiles_with_code},
      {"code_bytes", per_tile_bytes(code)},
      {"data_bytes", per_tile_bytes(data)},
      {"peak_bytes", {{"max", peak}, {"tile", peak_tile}}},
      {"segments", {{"count", segments},
                    {"distinct_contents", contents.contents.size()},
                    {"stored_bytes", contents.stored_bytes()},
                    {"loaded_bytes", loaded}}},
      {"exchange_groups", {{"count", package.exchange_groups.size()}, {"largest", largest_group}}},
      {"schedule", schedule_json(package.schedule)},
      {"bindings", {{"count", package.bindings.size()}, {"by_role", roles}}},
      {"compile_info", compile_info},
      {"summation_order", summation_order_json(package.summation_order)},
      {"row_orders", row_orders_json(package.summation_order)},
      {"attention_orders", attention_orders_json(package.summation_order)},
  };
}

std::string summary_text(const json& summary) {
  auto bytes_line = [](const json& b) {
    return fmt::format("{} bytes; per tile min {}, mean {}, max {}", get(b, "total"), get(b, "min"),
                       get(b, "mean"), get(b, "max"));
  };
  const json& file = summary["file"];
  const json& segments = summary["segments"];
  const json& roles = summary["bindings"]["by_role"];
  std::string text;
  text += fmt::format("file          {} ({} bytes, format {})\n", file["name"].get<std::string>(),
                      get(file, "bytes"), get(file, "format_version"));
  text += fmt::format("target        {} ({} tiles, {} with code)\n",
                      summary["target"].get<std::string>(), get(summary, "tiles"),
                      get(summary, "tiles_with_code"));
  text += fmt::format("machine       {}\n", machine_summary(machine_by_name(summary["target"].get<std::string>())));
  text += fmt::format("code          {}\n", bytes_line(summary["code_bytes"]));
  text += fmt::format("data          {}\n", bytes_line(summary["data_bytes"]));
  text += fmt::format("peak          {} bytes (tile {})\n", get(summary["peak_bytes"], "max"),
                      get(summary["peak_bytes"], "tile"));
  text += fmt::format("segments      {} ({} distinct contents, {} bytes stored, {} loaded)\n",
                      get(segments, "count"), get(segments, "distinct_contents"),
                      get(segments, "stored_bytes"), get(segments, "loaded_bytes"));
  text += fmt::format("groups        {} (largest {} tiles)\n",
                      get(summary["exchange_groups"], "count"),
                      get(summary["exchange_groups"], "largest"));
  text += fmt::format("schedule      {}\n", schedule_text(summary["schedule"]));
  text += fmt::format("bindings      {} ({} input, {} parameter, {} output)\n",
                      get(summary["bindings"], "count"), get(roles, "input"),
                      get(roles, "parameter"), get(roles, "output"));
  text += fmt::format("compile_info  {}\n", summary["compile_info"].dump());
  for (const auto& [name, split] : summary["summation_order"].items())
    text += fmt::format("K split       {}: cuts {}, partials {}, {} column ranges\n", name, split["cuts"].dump(),
                        split["partials"].get<std::string>(), split["columnRanges"].size());
  for (const auto& [name, split] : summary["row_orders"].items())
    text += split["cuts"].empty()
                ? fmt::format("row op        {}: whole rows\n", name)
                : fmt::format("row op        {}: column cuts {}, {} ranges a part{}\n", name, split["cuts"].dump(),
                              split["ranges"].get<int>(), split["mergeReceived"].get<bool>() ? ", received slots merged" : "");
  for (const auto& [name, split] : summary["attention_orders"].items())
    text += fmt::format("attention     {}: key cuts {}, {} softmax chunks, probabilities {}\n", name,
                        split["keyCuts"].dump(), split["softmaxChunks"].get<int>(),
                        split["probabilities"].get<std::string>());
  return text;
}

json bindings_report(const Package& package) {
  json list = json::array();
  for (const Binding& binding : package.bindings) {
    std::uint64_t bytes = 0;
    std::set<std::uint32_t> tiles;
    for (const Piece& piece : binding.pieces) {
      bytes += piece_bytes(binding, piece);
      tiles.insert(piece.tile);
    }
    list.push_back({{"name", binding.name},
                    {"role", binding_role_name(binding.role)},
                    {"type", type_string(binding.type)},
                    {"pieces", binding.pieces.size()},
                    {"bytes", bytes},
                    {"tiles", tiles.size()}});
  }
  return list;
}

std::string bindings_text(const json& bindings) {
  std::string text = fmt::format("{:<10} {:<24} {:<28} {:>7} {:>12} {:>6}\n", "role", "name",
                                 "type", "pieces", "bytes", "tiles");
  for (const json& binding : bindings)
    text += fmt::format("{:<10} {:<24} {:<28} {:>7} {:>12} {:>6}\n",
                        binding["role"].get<std::string>(), binding["name"].get<std::string>(),
                        binding["type"].get<std::string>(), get(binding, "pieces"),
                        get(binding, "bytes"), get(binding, "tiles"));
  return text;
}

namespace {

// Bundle by bundle, with the names of symbols that start at a bundle.
json disassembly(const TileImage& tile, const Segment& segment) {
  std::multimap<std::uint32_t, std::string> labels;
  for (const Symbol& symbol : tile.symbols) labels.emplace(symbol.address, symbol.name);
  json lines = json::array();
  const std::vector<std::uint8_t>& bytes = *segment.bytes;
  for (std::size_t offset = 0; offset + isa::kBundleBytes <= bytes.size(); offset += isa::kBundleBytes) {
    std::uint64_t bits = 0;
    for (std::size_t i = 0; i < isa::kBundleBytes; ++i)
      bits |= static_cast<std::uint64_t>(bytes[offset + i]) << (8 * i);
    std::uint32_t address = segment.address + static_cast<std::uint32_t>(offset);
    std::optional<isa::Bundle> bundle = isa::decode_bundle(bits);
    json line = {{"address", address},
                 {"text", bundle ? isa::bundle_text(*bundle)
                                 : fmt::format(".word {:#010x}, {:#010x}",
                                               static_cast<std::uint32_t>(bits),
                                               static_cast<std::uint32_t>(bits >> 32))}};
    auto [first, last] = labels.equal_range(address);
    for (auto it = first; it != last; ++it) line["labels"].push_back(it->second);
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace

json tile_report(const Package& package, std::uint32_t index, bool disassemble) {
  if (index >= package.tiles.size())
    throw_bad_input("--tile", "tile {} does not exist (the package has {} tiles)", index,
                    package.tiles.size());
  const TileImage& tile = package.tiles[index];
  SegmentContents contents = distinct_segment_contents(package);
  json report = {{"tile", index}, {"entry", tile.entry}, {"peak_bytes", tile.peak_bytes}};
  report["segments"] = json::array();
  for (std::size_t s = 0; s < tile.segments.size(); ++s) {
    const Segment& segment = tile.segments[s];
    std::uint32_t content = contents.index[index][s];
    json entry = {{"name", segment.name},         {"address", segment.address},
                  {"size", segment.size()},       {"executable", segment.executable},
                  {"content", content},           {"content_users", contents.users[content]}};
    if (disassemble && segment.executable) entry["disassembly"] = disassembly(tile, segment);
    report["segments"].push_back(std::move(entry));
  }
  report["symbols"] = json::array();
  for (const Symbol& symbol : tile.symbols)
    report["symbols"].push_back({{"name", symbol.name}, {"kind", symbol_kind_name(symbol.kind)},
                                 {"address", symbol.address}, {"size", symbol.size}});
  report["regions"] = json::array();
  for (const Region& region : tile.regions)
    report["regions"].push_back({{"name", region.name}, {"kind", region_kind_name(region.kind)},
                                 {"address", region.address}, {"size", region.size},
                                 {"first_superstep", region.first_superstep},
                                 {"last_superstep", region.last_superstep}, {"op", region.op}});
  report["pieces"] = json::array();
  for (const Binding& binding : package.bindings)
    for (std::size_t p = 0; p < binding.pieces.size(); ++p)
      if (binding.pieces[p].tile == index)
        report["pieces"].push_back({{"binding", binding.name},
                                    {"piece", p},
                                    {"address", binding.pieces[p].address},
                                    {"bytes", piece_bytes(binding, binding.pieces[p])},
                                    {"start", binding.pieces[p].start},
                                    {"size", binding.pieces[p].size},
                                    {"strides", binding.pieces[p].strides}});
  return report;
}

std::string tile_text(const json& tile) {
  std::string text = fmt::format("tile {}: entry {}, peak {} bytes\n", get(tile, "tile"),
                                 hex(get(tile, "entry")), get(tile, "peak_bytes"));
  text += "segments\n";
  for (const json& s : tile["segments"])
    text += fmt::format("  {:<16} {:>9}..{:<9} {:>7} bytes  {:<4}  content {} (in {} segments)\n",
                        s["name"].get<std::string>(), hex(get(s, "address")),
                        hex(get(s, "address") + get(s, "size")), get(s, "size"),
                        s["executable"].get<bool>() ? "code" : "data", get(s, "content"),
                        get(s, "content_users"));
  text += "symbols\n";
  for (const json& s : tile["symbols"])
    text += fmt::format("  {:<24} {:<9} {:>9} {:>7} bytes\n", s["name"].get<std::string>(),
                        s["kind"].get<std::string>(), hex(get(s, "address")), get(s, "size"));
  text += "regions\n";
  for (const json& r : tile["regions"])
    text += fmt::format("  {:<24} {:<15} {:>9} {:>7} bytes  {}{}\n", r["name"].get<std::string>(),
                        r["kind"].get<std::string>(), hex(get(r, "address")), get(r, "size"),
                        r["first_superstep"].get<int>() < 0
                            ? std::string("resident")
                            : fmt::format("supersteps {}-{}", r["first_superstep"].get<int>(),
                                          r["last_superstep"].get<int>()),
                        r["op"].get<std::string>().empty() ? "" : "  op " + r["op"].get<std::string>());
  text += "binding pieces\n";
  for (const json& p : tile["pieces"])
    text += fmt::format("  {:<24} piece {:<5} {:>9} {:>7} bytes  start [{}] size [{}] strides [{}]\n",
                        p["binding"].get<std::string>(), get(p, "piece"), hex(get(p, "address")),
                        get(p, "bytes"), fmt::join(p["start"].get<std::vector<std::int64_t>>(), ","),
                        fmt::join(p["size"].get<std::vector<std::int64_t>>(), ","),
                        fmt::join(p["strides"].get<std::vector<std::int64_t>>(), ","));
  for (const json& s : tile["segments"]) {
    if (!s.contains("disassembly")) continue;
    text += fmt::format("disassembly of {} ({}..{})\n", s["name"].get<std::string>(),
                        hex(get(s, "address")), hex(get(s, "address") + get(s, "size")));
    for (const json& line : s["disassembly"]) {
      if (line.contains("labels"))
        for (const json& label : line["labels"]) text += label.get<std::string>() + ":\n";
      text += fmt::format("  {:>9}  {}\n", hex(get(line, "address")), line["text"].get<std::string>());
    }
  }
  return text;
}

}  // namespace tilec::package
