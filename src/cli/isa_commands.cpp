// `tilec isa doc`, `tilec asm`, `tilec disasm`: the instruction set table,
// the assembler and the disassembler from the command line.
#include "cli/commands.h"
#include "isa/assembler.h"
#include "isa/disasm.h"
#include "isa/isa_doc.h"
#include "isa/linker.h"
#include "package/package_file.h"
#include "package/program_package.h"
#include "support/error.h"
#include "support/output_path.h"

#include <fmt/format.h>

#include <cstdio>

namespace tilec::cli {

namespace {

void print(const std::string& text) { std::fwrite(text.data(), 1, text.size(), stdout); }

std::uint32_t parse_address(const std::string& text) {
  try {
    std::size_t used = 0;
    unsigned long value = std::stoul(text, &used, 0);
    if (used == text.size() && value <= 0xffffffffUL) return static_cast<std::uint32_t>(value);
  } catch (const std::exception&) {
  }
  throw_bad_input("--base", "expected an address such as 0x4c000, got '{}'", text);
}

struct AsmOptions {
  std::vector<std::string> files;
  bool link = false;
  std::string entry;
  std::string output;  // a package: link the programs for the tiles
  std::string target;
  std::uint32_t tiles = 0;
};

void assemble_command(const AsmOptions& options) {
  if (options.output.empty()) {
    if (options.files.size() > 1) throw_bad_input("asm", "one file at a time without -o (a package links several)");
    if (!options.target.empty() || options.tiles) throw_bad_input("--target", "--target and --tiles need -o");
    isa::Object object = isa::assemble_file(options.files.front());
    if (!options.link) return print(isa::object_listing(object));
    const isa::Object* objects[] = {&object};
    isa::LinkOptions link;
    link.entry = options.entry;
    isa::Image image = isa::link(objects, link);
    print(fmt::format("# entry {:#x}\n", image.entry));
    return print(isa::disassemble_image(image));
  }
  if (options.link || !options.entry.empty()) throw_bad_input("-o", "a package starts every tile at `main`: drop --link and --entry");
  check_output_file("-o", options.output);
  const MachineModel machine = machine_by_name(options.target.empty() ? "ipu21" : options.target);
  std::vector<isa::Object> programs;
  for (const std::string& file : options.files) programs.push_back(isa::assemble_file(file));
  const package::Package package = package::link_programs(programs, options.tiles, machine);
  package::write_package(package, options.output);
  std::uint32_t tiles = 0;
  for (const package::TileImage& tile : package.tiles) tiles += tile.segments.empty() ? 0 : 1;
  print(fmt::format("linked {} program{} for {} tile{} of {} ({} exchange groups) into {}\n", programs.size(),
                    programs.size() == 1 ? "" : "s", tiles, tiles == 1 ? "" : "s", machine.name,
                    package.exchange_groups.size(), options.output));
}

}  // namespace

void add_isa_commands(CLI::App& app) {
  CLI::App* isa = app.add_subcommand("isa", "The instruction set");
  isa->require_subcommand(1);
  isa->add_subcommand("doc", "Print the instruction reference (the table at the end of docs/isa.md)")
      ->callback([] { print(isa::instruction_reference_markdown()); });

  auto asm_options = std::make_shared<AsmOptions>();
  CLI::App* assemble = app.add_subcommand(
      "asm", "Assemble a file and print its object listing, or link programs into a package for tilec sim (-o)");
  assemble->add_option("files", asm_options->files, "Assembly sources (with -o: one per tile, or one for every tile)")
      ->required();
  assemble->add_flag("--link", asm_options->link,
                     "Link the object alone (default placement) and print the image as assembly");
  assemble->add_option("--entry", asm_options->entry, "Entry symbol when linking");
  assemble->add_option("-o,--output", asm_options->output,
                       "Write a package: file i on tile i, or one file on every tile; entry `main`")
      ->type_name("PROG.tpk");
  assemble->add_option("--target", asm_options->target, "Machine of the package (default ipu21; docs/machines.md)");
  assemble->add_option("--tiles", asm_options->tiles, "With one file: run it on the first N tiles only")
      ->check(CLI::Range(1u, 65535u));
  assemble->callback([asm_options] { assemble_command(*asm_options); });

  auto disasm_options = std::make_shared<std::tuple<std::string, std::string, bool>>("", "0x4c000", false);
  CLI::App* disasm = app.add_subcommand("disasm", "Disassemble a raw binary file of bundles");
  disasm->add_option("file", std::get<0>(*disasm_options), "Raw bytes")->required();
  disasm->add_option("--base", std::get<1>(*disasm_options), "Address of the first byte")->capture_default_str();
  disasm->add_flag("--data", std::get<2>(*disasm_options), "Show the bytes as data words, not bundles");
  disasm->callback([disasm_options] {
    auto& [file, base, data] = *disasm_options;
    std::optional<std::string> bytes = isa::read_file_text(file);
    if (!bytes) throw_bad_input(file, "cannot read the file");
    const auto* begin = reinterpret_cast<const std::uint8_t*>(bytes->data());
    print(isa::disassemble({begin, bytes->size()}, parse_address(base), !data));
  });
}

}  // namespace tilec::cli
