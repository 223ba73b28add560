// Reports on a package, for `tilec package inspect`: what is in it, how big
// it is, which tensors it binds where, and one tile's image down to its
// disassembled bundles.
//
// Each report is built once as JSON (what --json prints); the text form is
// rendered from the same JSON, so the two never disagree.
#pragma once

#include "package/package.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace tilec::package {

struct FileFacts {
  std::string name;
  std::uint64_t bytes = 0;
};

// Target, tiles, code and data bytes (total and per tile), peak, segment
// sharing, exchange groups, bindings by role, compile_info.
nlohmann::json summary_report(const Package& package, const FileFacts& file);
// The schedule's fields (docs/package-format.md), null when not known.
nlohmann::json schedule_json(const Schedule& schedule);
std::string summary_text(const nlohmann::json& summary);

// One entry per binding: name, role, type, pieces, bytes on the device
// (replicas included), tiles spanned.
nlohmann::json bindings_report(const Package& package);
std::string bindings_text(const nlohmann::json& bindings);

// One tile: entry, peak, segments, symbols, regions, the binding pieces it
// holds, and with `disassemble` its executable segments bundle by bundle.
// Throws BadInput for a tile the package does not have.
nlohmann::json tile_report(const Package& package, std::uint32_t tile, bool disassemble);
std::string tile_text(const nlohmann::json& tile);

}  // namespace tilec::package
