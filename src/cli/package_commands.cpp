// `tilec package inspect`: what a package file holds.
#include "cli/commands.h"
#include "cli/usage_errors.h"
#include "package/inspect.h"
#include "package/package_file.h"

#include <fmt/core.h>

#include <filesystem>
#include <memory>

namespace tilec::cli {

namespace {

struct InspectOptions {
  std::string file;
  bool bindings = false;
  std::uint32_t tile = 0;
  bool tile_given = false;
  bool disassemble = false;
  bool json = false;
};

void inspect(const InspectOptions& options) {
  package::Package contents = package::read_package(options.file);
  std::error_code unknown_size;
  package::FileFacts file{options.file, std::filesystem::file_size(options.file, unknown_size)};
  nlohmann::json report = {{"summary", package::summary_report(contents, file)}};
  if (options.bindings) report["bindings"] = package::bindings_report(contents);
  if (options.tile_given)
    report["tile"] = package::tile_report(contents, options.tile, options.disassemble);

  if (options.json) {
    fmt::print("{}\n", report.dump(2));
    return;
  }
  fmt::print("{}", package::summary_text(report["summary"]));
  if (report.contains("bindings")) fmt::print("\n{}", package::bindings_text(report["bindings"]));
  if (report.contains("tile")) fmt::print("\n{}", package::tile_text(report["tile"]));
}

}  // namespace

void add_package_commands(CLI::App& app) {
  CLI::App* group = app.add_subcommand("package", "Look inside package files (.tpk)");
  group->require_subcommand(1);
  CLI::App* command = group->add_subcommand(
      "inspect", "Summarise a package: target, code and data bytes, segment sharing, bindings");
  auto options = std::make_shared<InspectOptions>();
  command->add_option("FILE", options->file, "Package file")->required();
  command->add_flag("--bindings", options->bindings,
                    "List each binding: role, type, pieces, bytes, tiles spanned");
  CLI::Option* tile = command->add_option("--tile", options->tile,
                                          "Show tile N's segments, symbols, regions and pieces")
                          ->check(integer_in(0, std::numeric_limits<std::uint32_t>::max()))
                          ->type_name("N");
  command->add_flag("--disasm", options->disassemble,
                    "With --tile: disassemble its executable segments")
      ->needs(tile);
  command->add_flag("--json", options->json, "Print the report as JSON");
  command->callback([options, tile] {
    options->tile_given = tile->count() > 0;
    inspect(*options);
  });
}

}  // namespace tilec::cli
