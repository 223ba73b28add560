// `tilec isa doc`, `tilec asm`, `tilec disasm`: the instruction set table,
// the assembler and the disassembler from the command line.
#include "cli/commands.h"
#include "isa/assembler.h"
#include "isa/disasm.h"
#include "isa/isa_doc.h"
#include "isa/linker.h"
#include "support/error.h"

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

}  // namespace

void add_isa_commands(CLI::App& app) {
  CLI::App* isa = app.add_subcommand("isa", "The instruction set");
  isa->require_subcommand(1);
  isa->add_subcommand("doc", "Print the instruction reference (the table at the end of docs/isa.md)")
      ->callback([] { print(isa::instruction_reference_markdown()); });

  auto asm_options = std::make_shared<std::tuple<std::string, bool, std::string>>();
  CLI::App* assemble = app.add_subcommand("asm", "Assemble a file and print its object listing");
  assemble->add_option("file", std::get<0>(*asm_options), "Assembly source")->required();
  assemble->add_flag("--link", std::get<1>(*asm_options),
                     "Link the object alone (default placement) and print the image as assembly");
  assemble->add_option("--entry", std::get<2>(*asm_options), "Entry symbol when linking");
  assemble->callback([asm_options] {
    auto& [file, link, entry] = *asm_options;
    isa::Object object = isa::assemble_file(file);
    if (!link) return print(isa::object_listing(object));
    const isa::Object* objects[] = {&object};
    isa::LinkOptions options;
    options.entry = entry;
    isa::Image image = isa::link(objects, options);
    print(fmt::format("# entry {:#x}\n", image.entry));
    print(isa::disassemble_image(image));
  });

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
