// The assembler, the linker and the disassembler: any text assembles or is a
// one-line BadInput; an object that links disassembles to text that
// assembles again.
#include "fuzz_target.h"

#include "compiler/kernel_library.h"
#include "isa/assembler.h"
#include "isa/disasm.h"
#include "isa/isa.h"
#include "isa/linker.h"
#include "support/error.h"

#include <string_view>

namespace {

// Includes name the kernel library's files; nothing is read from disk.
std::optional<std::string> embedded_file(const std::string& path) {
  const auto& sources = tilec::compiler::embedded_kernel_sources();
  const std::size_t slash = path.find_last_of('/');
  const auto found = sources.find(slash == std::string::npos ? path : path.substr(slash + 1));
  if (found == sources.end()) return std::nullopt;
  return std::string(found->second);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tilec;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  isa::Object object;
  try {
    object = isa::assemble_text(text, "<fuzz>", embedded_file);
  } catch (const Error&) {
    return 0;
  }
  (void)isa::object_listing(object);
  isa::Image image;
  try {
    const isa::Object* objects[] = {&object};
    image = isa::link(objects, isa::LinkOptions{});
  } catch (const Error&) {
    return 0;
  }
  const std::string listing = isa::disassemble_image(image);
  try {
    (void)isa::assemble_text(listing, "<disassembly>");
  } catch (const Error& error) {
    fuzz::property_failed(std::string("a linked image disassembles to text that does not assemble: ") +
                          error.what());
  }
  return 0;
}

namespace tilec::fuzz {

std::vector<Input> seeds() {
  std::vector<Input> inputs;
  for (const auto& [name, text] : compiler::embedded_kernel_sources()) inputs.push_back(bytes_of(std::string(text)));
  return inputs;
}

std::vector<std::string> dictionary() {
  std::vector<std::string> words{".section", ".text", ".data", ".global", ".equ", ".include", ".word",
                                 ".align", ".macro", ".endm", "{", "}", ";", "$m1", "$a0:3", "$mzero",
                                 "0x80000", "-1", "4294967295", ":"};
  for (const isa::InstructionSpec& spec : isa::all_instructions()) words.push_back(spec.mnemonic);
  return words;
}

}  // namespace tilec::fuzz
