// Machine descriptions (docs/machines.md): the presets, the fields a machine
// file or an override may set, and the one spelling that names a machine
// everywhere (packages, profiles, reports).
//
// A target is spelled
//   PRESET                       ipu21, bow, ipu2, ipu1
//   PRESET:N                     its first N tiles
//   PRESET:field=value,...       fields overridden: ipu21:tiles=1216,exchange-bytes=8
//   FILE.json                    a machine file: {"base": PRESET, field: value, ...}
// and machine_by_name() (target/machine.h) reads every form. The model it
// gives is named by its canonical spelling: the preset, then each field
// that differs from it, in table order (tiles alone as PRESET:N), so a
// package or a profile names its machine without the file.
#pragma once

#include "target/machine.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace tilec {

// One field a description may set.
struct MachineField {
  const char* key;      // as written in files and overrides: "exchange-bytes"
  const char* meaning;  // one line for docs and errors
  const char* unit;     // "tiles", "bytes per cycle", ...
  // The only value the fixed instruction set allows, with the reason; 0
  // and nullptr when the field is free.
  double fixed = 0;
  const char* fixed_reason = nullptr;
};

// Every field, in the order canonical spellings and `describe` list them.
std::span<const MachineField> machine_fields();

// The preset named `name`, or BadInput at `where` listing the presets.
MachineModel machine_preset(std::string_view name, const std::string& where = "target");

// `base` with `overrides` ("tiles=1216,exchange-bytes=8") applied and
// checked. BadInput naming the field and the problem.
MachineModel machine_with_overrides(const MachineModel& base, std::string_view overrides);

// A machine file's model. BadInput naming the file, and the field.
MachineModel machine_from_file(const std::string& path);

// The model's canonical spelling against its preset (see above).
std::string canonical_machine_name(const MachineModel& model);

// Every field's value, and the preset it derives from.
nlohmann::json describe_machine(const MachineModel& model);
// One line: "ipu1: 1216 tiles (19 columns), 256 KiB a tile, ... 1.6 GHz".
std::string machine_summary(const MachineModel& model);

}  // namespace tilec
