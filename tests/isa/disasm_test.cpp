// The disassembler's text reassembles to the same bytes, names branch
// targets by their labels and shows undecodable bundles as data.
#include "isa/assembler.h"
#include "isa/disasm.h"
#include "isa/instruction_sampler.h"
#include "isa/linker.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace tilec::isa {
namespace {

std::vector<std::uint8_t> bytes_of(std::initializer_list<std::uint32_t> words) {
  std::vector<std::uint8_t> bytes;
  for (std::uint32_t word : words)
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<std::uint8_t>(word >> (8 * i)));
  return bytes;
}

TEST(Disassembler, ImageReassemblesToTheSameBytes) {
  Object object = assemble_text(
      ".text\n.global main\nmain: setzi $m1, table\nloop: { ld128pi $a0:3, $m1, 16 ; amp.f8 $a0:3, $a4:5, 1, f143, f152 }\n"
      "brnz $m2, loop\ncall $m3, far\nhalt\n"
      ".data\ntable: .word 1, 2, 3\n.byte 9\n", "d.s");
  // A local label of the same name in another object and segment.
  Object far = assemble_text(".section .far, \"x\"\n.global far\nfar: jr $m3\nloop: br loop\n", "far.s");
  LinkOptions options;
  options.entry = "main";
  Image image = link(std::vector<const Object*>{&object, &far}, options);
  const std::string text = disassemble_image(image);
  EXPECT_NE(text.find("brnz $m2, loop"), std::string::npos) << text;
  EXPECT_NE(text.find("setzi $m1, 524288  # table"), std::string::npos) << text;

  Object again = assemble_text(text, "again.s");
  LinkOptions fixed;
  for (const Segment& segment : image.segments) fixed.placements.push_back({segment.name, segment.address, std::nullopt, 0});
  Image relinked = link(std::vector<const Object*>{&again}, fixed);
  ASSERT_EQ(relinked.segments.size(), image.segments.size());
  for (std::size_t i = 0; i < image.segments.size(); ++i) {
    EXPECT_EQ(relinked.segments[i].address, image.segments[i].address);
    EXPECT_EQ(*relinked.segments[i].bytes, *image.segments[i].bytes) << image.segments[i].name << "\n" << text;
  }
}

TEST(Disassembler, UndecodableBundlesAreWords) {
  const auto bytes = bytes_of({0x00000054, 0x00000080, 0x00000000, 0x00000080, 0xdeadbeef});
  const std::string text = disassemble(bytes, 0x4C000, true);
  EXPECT_EQ(text, "    halt\n    .word 0x00000000, 0x00000080  # undecodable bundle\n    .word 0xdeadbeef\n");
  Object again = assemble_text(".text\n" + text);
  EXPECT_EQ(again.sections[0].bytes, bytes);
}

TEST(Disassembler, BundleWritingOneRegisterTwiceIsWords) {
  // It decodes (the simulator lets the main slot win) but does not assemble.
  const Bundle bundle{Instruction{Opcode::Ld32, {4, 1, 0}}, Instruction{Opcode::F32v4zero, {4}}};
  const std::uint64_t bits = encode_bundle(bundle);
  const auto low = static_cast<std::uint32_t>(bits), high = static_cast<std::uint32_t>(bits >> 32);
  const auto bytes = bytes_of({low, high});
  const std::string text = disassemble(bytes, 0x4C000, true);
  EXPECT_EQ(text, fmt::format("    .word {:#010x}, {:#010x}  # both instructions write $a4\n", low, high));
  Object again = assemble_text(".text\n" + text);
  EXPECT_EQ(again.sections[0].bytes, bytes);
}

TEST(Disassembler, RandomCodeReassembles) {
  InstructionSampler sampler(5);
  std::vector<std::uint8_t> bytes;
  for (int i = 0; i < 4000; ++i) {
    std::uint32_t word = sampler.word();
    for (int b = 0; b < 4; ++b) bytes.push_back(static_cast<std::uint8_t>(word >> (8 * b)));
  }
  bytes.push_back(0x7f);  // a trailing byte that is not a whole word
  std::vector<LinkedSymbol> symbols = {{"start", 0x4C000, 0, SymbolKind::Function, true},
                                       {"mid", 0x4C000 + 800, 0, SymbolKind::Function, false},
                                       {"mid", 0x4C000 + 808, 0, SymbolKind::Function, false},
                                       {"bad name", 0x4C000 + 16, 0, SymbolKind::Function, false}};
  const std::string text = disassemble(bytes, 0x4C000, true, symbols);
  Object again = assemble_text(".text\n" + text);
  EXPECT_EQ(again.sections[0].bytes, bytes);
  EXPECT_EQ(text.find("bad name"), std::string::npos);
}

TEST(Disassembler, DataWithLabels) {
  const auto bytes = bytes_of({1, 2, 3, 4, 5, 6});
  std::vector<LinkedSymbol> symbols = {{"second", 0x80008, 0, SymbolKind::Data, false},
                                       {"odd", 0x80011, 0, SymbolKind::Data, false}};
  const std::string text = disassemble(bytes, 0x80000, false, symbols);
  EXPECT_EQ(text,
            "    .word 0x00000001, 0x00000002\nsecond:\n    .word 0x00000003, 0x00000004\n    .byte 0x05\nodd:\n"
            "    .word 0x06000000\n    .byte 0x00, 0x00, 0x00\n");
}

TEST(ObjectListing, ShowsBytesSymbolsAndRelocations) {
  Object object = assemble_text(".text\n.global f\nf: setzi $m1, g\n.data\n.word 0xabcdef01\n.byte 2\n", "l.s");
  EXPECT_EQ(object_listing(object),
            "object l.s\n"
            "section .text code standard align 8 size 8\n"
            "  0000: 00000102 00000080  setzi $m1, 0  <- abs20 g+0\n"
            "section .data any align 4 size 5\n"
            "  0000: abcdef01 02\n"
            "symbol f .text+0x0 size 0 global function\n"
            "symbol g undefined\n"
            "relocation .text+0x0 abs20 g+0\n");
}

}  // namespace
}  // namespace tilec::isa
