#include "package/program_package.h"

#include "isa/linker.h"
#include "package/validate.h"
#include "support/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace tilec::package {

namespace {

TileImage tile_image(const isa::Object& program, const MachineModel& machine) {
  isa::LinkOptions options;
  options.entry = "main";
  options.machine = &machine;
  const isa::Object* objects[] = {&program};
  const bool has_main = std::any_of(program.symbols.begin(), program.symbols.end(),
                                    [](const isa::Symbol& symbol) { return symbol.name == "main" && symbol.global && symbol.defined(); });
  if (!has_main) throw_bad_input(program.name, "no global 'main' (`.global main`): the address every tile starts at");
  const isa::Image image = isa::link(objects, options);
  TileImage tile;
  tile.entry = image.entry;
  for (const isa::Segment& segment : image.segments) {
    tile.segments.push_back(Segment{segment.name, segment.address, segment.bytes, segment.executable});
    tile.regions.push_back(Region{segment.name, segment.address, segment.size(),
                                  segment.executable ? RegionKind::Code : RegionKind::Tensor});
    tile.peak_bytes = std::max(tile.peak_bytes, segment.address + segment.size() - machine.memory_begin);
  }
  for (const isa::LinkedSymbol& symbol : image.symbols)
    if (symbol.global)
      tile.symbols.push_back(Symbol{symbol.name, symbol.address, symbol.size,
                                    symbol.kind == isa::SymbolKind::Kernel ? SymbolKind::Kernel : SymbolKind::Function});
  return tile;
}

}  // namespace

Package link_programs(const std::vector<isa::Object>& programs, std::uint32_t tiles, const MachineModel& machine) {
  if (programs.empty()) throw_bad_input("asm", "no program to link");
  if (programs.size() > 1 && tiles != 0 && tiles != programs.size())
    throw_bad_input("--tiles", "{} programs run on tiles 0-{}, one each; --tiles {} asks for another count",
                    programs.size(), programs.size() - 1, tiles);
  const std::uint32_t used = programs.size() > 1 ? static_cast<std::uint32_t>(programs.size())
                             : tiles == 0       ? machine.tiles
                                                : tiles;
  if (used > machine.tiles)
    throw_bad_input(programs.size() > 1 ? programs[machine.tiles].name : std::string("--tiles"),
                    "{} tiles of programs, but {} has {} tiles", used, machine.name, machine.tiles);
  Package package = make_empty_package(machine);
  std::vector<TileImage> images;
  nlohmann::json sources = nlohmann::json::array();
  for (const isa::Object& program : programs) {
    images.push_back(tile_image(program, machine));
    sources.push_back(program.name);
    for (const std::vector<std::uint32_t>& group : program.exchange_groups) package.exchange_groups.push_back(group);
  }
  for (std::uint32_t tile = 0; tile < used; ++tile) package.tiles[tile] = images[programs.size() > 1 ? tile : 0];
  package.compile_info = nlohmann::json{{"programs", sources}, {"tiles", used}}.dump();
  validate(package, machine);
  return package;
}

}  // namespace tilec::package
