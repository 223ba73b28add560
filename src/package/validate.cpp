#include "package/validate.h"

#include "isa/isa.h"
#include "support/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

namespace tilec::package {

namespace {

std::string range_text(std::uint32_t address, std::uint64_t size) {
  return fmt::format("{:#x}..{:#x}", address, address + size);
}

bool inside_memory(const MachineModel& model, std::uint32_t address, std::uint64_t size) {
  return address >= model.memory_begin && address <= model.memory_end &&
         size <= model.memory_end - address;
}

void check_entries(const MachineModel& model, const std::string& where, const auto& entries,
                   std::string_view what, int kinds) {
  for (const auto& entry : entries) {
    if (static_cast<int>(entry.kind) >= kinds)
      throw_bad_input(where, "{} '{}' has unknown kind {}", what, entry.name,
                      static_cast<int>(entry.kind));
    if (!inside_memory(model, entry.address, entry.size))
      throw_bad_input(where, "{} '{}' at {} lies outside tile memory {}", what, entry.name,
                      range_text(entry.address, entry.size),
                      range_text(model.memory_begin, model.memory_bytes()));
  }
}

void check_segments(const MachineModel& model, const std::string& where, const TileImage& tile) {
  for (const Segment& segment : tile.segments) {
    if (segment.name.empty())
      throw_bad_input(where, "segment at {:#x} has no name", segment.address);
    if (!inside_memory(model, segment.address, segment.size()))
      throw_bad_input(where, "segment '{}' at {} lies outside tile memory {}", segment.name,
                      range_text(segment.address, segment.size()),
                      range_text(model.memory_begin, model.memory_bytes()));
    if (!segment.executable) continue;
    if (!model.standard.contains(segment.address, segment.size()))
      throw_bad_input(where, "segment '{}' at {:#x} is executable but lies in {} memory",
                      segment.name, segment.address, model.interleaved.name);
    if (segment.address % isa::kBundleBytes != 0 || segment.size() % isa::kBundleBytes != 0)
      throw_bad_input(where,
                      "executable segment '{}' at {} is not whole {}-byte bundles at a "
                      "{}-byte-aligned address",
                      segment.name, range_text(segment.address, segment.size()),
                      isa::kBundleBytes, isa::kBundleBytes);
  }

  std::vector<const Segment*> by_address;
  for (const Segment& segment : tile.segments)
    if (segment.size() > 0) by_address.push_back(&segment);
  std::sort(by_address.begin(), by_address.end(),
            [](const Segment* a, const Segment* b) { return a->address < b->address; });
  for (std::size_t i = 1; i < by_address.size(); ++i) {
    const Segment& before = *by_address[i - 1];
    const Segment& after = *by_address[i];
    if (after.address < before.address + before.size())
      throw_bad_input(where, "segments '{}' at {} and '{}' at {} overlap", before.name,
                      range_text(before.address, before.size()), after.name,
                      range_text(after.address, after.size()));
  }
}

// The profile gives a worker (or a send) the one op symbol around its
// argument block (or its bundle).
void check_op_symbols(const std::string& where, const TileImage& tile) {
  std::vector<const Symbol*> tasks;
  for (const Symbol& symbol : tile.symbols)
    if (symbol.kind == SymbolKind::Op) tasks.push_back(&symbol);
  std::sort(tasks.begin(), tasks.end(), [](const Symbol* a, const Symbol* b) { return a->address < b->address; });
  for (std::size_t i = 1; i < tasks.size(); ++i)
    if (tasks[i]->address < tasks[i - 1]->address + tasks[i - 1]->size)
      throw_bad_input(where, "op symbols '{}' at {} and '{}' at {} overlap", tasks[i - 1]->name,
                      range_text(tasks[i - 1]->address, tasks[i - 1]->size), tasks[i]->name,
                      range_text(tasks[i]->address, tasks[i]->size));
}

void check_lifetimes(const std::string& where, const TileImage& tile) {
  for (const Region& region : tile.regions) {
    const bool resident = region.first_superstep == -1 && region.last_superstep == -1;
    if (!resident && (region.first_superstep < 0 || region.last_superstep < region.first_superstep))
      throw_bad_input(where, "region '{}' lives in supersteps {} to {} (resident is -1 to -1)", region.name,
                      region.first_superstep, region.last_superstep);
  }
}

void check_entry(const std::string& where, const TileImage& tile) {
  bool has_code = std::any_of(tile.segments.begin(), tile.segments.end(),
                              [](const Segment& segment) { return segment.executable; });
  if (!has_code) {
    if (tile.entry != 0)
      throw_bad_input(where, "entry {:#x} on a tile with no executable segment (idle tiles use 0)",
                      tile.entry);
    return;
  }
  if (tile.entry % isa::kBundleBytes != 0)
    throw_bad_input(where, "entry {:#x} is not {}-byte aligned", tile.entry, isa::kBundleBytes);
  bool in_code = std::any_of(tile.segments.begin(), tile.segments.end(), [&](const Segment& s) {
    return s.executable && tile.entry >= s.address && tile.entry - s.address < s.size();
  });
  if (!in_code)
    throw_bad_input(where, "entry {:#x} is not inside an executable segment", tile.entry);
}

void check_tile(const MachineModel& model, std::uint32_t index, const TileImage& tile) {
  std::string where = fmt::format("tile {}", index);
  check_segments(model, where, tile);
  check_entry(where, tile);
  check_entries(model, where, tile.symbols, "symbol", 4);
  check_op_symbols(where, tile);
  check_entries(model, where, tile.regions, "region", 5);
  check_lifetimes(where, tile);
  if (tile.peak_bytes > model.memory_bytes())
    throw_bad_input(where, "peak of {} bytes exceeds the tile's {} bytes of memory",
                    tile.peak_bytes, model.memory_bytes());
}

void check_groups(const Package& package, const MachineModel& model) {
  for (std::size_t g = 0; g < package.exchange_groups.size(); ++g) {
    const std::vector<std::uint32_t>& group = package.exchange_groups[g];
    std::string where = fmt::format("exchange group {}", g);
    if (group.empty()) throw_bad_input(where, "is empty");
    std::set<std::uint32_t> seen;
    for (std::uint32_t tile : group) {
      if (tile >= model.tiles)
        throw_bad_input(where, "tile {} does not exist ({} has {} tiles)", tile, model.name,
                        model.tiles);
      if (!seen.insert(tile).second) throw_bad_input(where, "lists tile {} twice", tile);
    }
  }
}

}  // namespace

void validate(const Package& package, const MachineModel& model) {
  MachineModel target = machine_by_name(package.target);
  if (target.name != model.name || target.tiles != model.tiles)
    throw_bad_input("target", "package is for '{}', not '{}'", package.target, model.name);
  if (package.tiles.size() != model.tiles)
    throw_bad_input("target", "package has {} tile images but '{}' has {} tiles",
                    package.tiles.size(), model.name, model.tiles);
  if (!nlohmann::json::accept(package.compile_info))
    throw_bad_input("compile_info", "is not valid JSON");

  for (std::uint32_t t = 0; t < model.tiles; ++t) check_tile(model, t, package.tiles[t]);
  check_groups(package, model);
  check_schedule(package.schedule, model);
  detail::validate_bindings(package, model);
}

void validate(const Package& package) { validate(package, machine_by_name(package.target)); }

void check_schedule(const Schedule& schedule, const MachineModel& model, const std::string& where) {
  if (!schedule.known()) return;
  if (schedule.chunks == 0) throw_bad_input(where, "has {} supersteps but no chunks", schedule.supersteps);
  if (static_cast<std::uint64_t>(schedule.groups) * schedule.group_size > model.tiles || schedule.group_size == 0)
    throw_bad_input(where, "{} groups of {} tiles do not fit {}'s {} tiles", schedule.groups, schedule.group_size,
                    model.name, model.tiles);
  if (schedule.repeat.empty() != (schedule.repeat_first < 0) || schedule.repeat.empty() != (schedule.repeat_count == 0))
    throw_bad_input(where, "repeat '{}' has supersteps {} to {} and a count of {}", schedule.repeat,
                    schedule.repeat_first, schedule.repeat_last, schedule.repeat_count);
  if (!schedule.repeat.empty() &&
      (schedule.repeat_last < schedule.repeat_first ||
       static_cast<std::uint32_t>(schedule.repeat_last) >= schedule.supersteps))
    throw_bad_input(where, "repeat '{}' has supersteps {} to {} of the chunk's {}", schedule.repeat,
                    schedule.repeat_first, schedule.repeat_last, schedule.supersteps);
}

}  // namespace tilec::package
