// The linker: placement, symbol resolution, relocation, reuse of a linked
// image, and every link error.
#include "isa/assembler.h"
#include "isa/linker.h"

#include <gtest/gtest.h>

#include <cstring>

namespace tilec::isa {
namespace {

std::uint32_t word_at(const Image& image, std::uint32_t address) {
  for (const Segment& segment : image.segments)
    if (address >= segment.address && address + 4 <= segment.address + segment.size()) {
      std::uint32_t word = 0;
      std::memcpy(&word, segment.bytes->data() + (address - segment.address), 4);
      return word;
    }
  ADD_FAILURE() << "no segment holds " << address;
  return 0;
}

Instruction main_at(const Image& image, std::uint32_t address) {
  auto instruction = decode(word_at(image, address), Slot::Main);
  EXPECT_TRUE(instruction) << address;
  return instruction.value_or(Instruction{});
}

std::uint32_t address_of(const Image& image, std::string_view name) {
  const LinkedSymbol* symbol = image.find(name);
  EXPECT_TRUE(symbol) << name;
  return symbol ? symbol->address : 0;
}

Image link_all(std::initializer_list<const Object*> objects, const LinkOptions& options = {},
               std::initializer_list<const Image*> images = {}) {
  return link(std::span<const Object* const>(objects.begin(), objects.size()), options,
              std::span<const Image* const>(images.begin(), images.size()));
}

std::string link_error(std::initializer_list<const Object*> objects, const LinkOptions& options = {},
                       std::initializer_list<const Image*> images = {}) {
  try {
    link_all(objects, options, images);
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::BadInput);
    return error.what();
  }
  return "(no error)";
}

TEST(Linker, DefaultPlacementAndRelocations) {
  Object main = assemble_text(
      ".text\n.global main\nmain: setzi $m1, table + 4\ncall $m2, helper\nhalt\n"
      ".data\ntable: .word 7, helper, table\n", "main.s");
  Object lib = assemble_text(".text\n.global helper\nnop\nhelper: jr $m2\n", "lib.s");
  LinkOptions options;
  options.entry = "main";
  Image image = link_all({&main, &lib}, options);
  ASSERT_EQ(image.segments.size(), 2u);
  EXPECT_EQ(image.segments[0].name, ".text");
  EXPECT_EQ(image.segments[0].address, 0x4C000u);
  EXPECT_TRUE(image.segments[0].executable);
  EXPECT_EQ(image.segments[0].size(), 40u);
  EXPECT_EQ(image.segments[1].name, ".data");
  EXPECT_EQ(image.segments[1].address, 0x80000u);  // "any" data prefers interleaved memory
  EXPECT_EQ(image.entry, 0x4C000u);
  const std::uint32_t helper = address_of(image, "helper");
  EXPECT_EQ(helper, 0x4C000u + 24 + 8);
  EXPECT_EQ(main_at(image, 0x4C000), (Instruction{Opcode::Setzi, {1, 0x80004}}));
  EXPECT_EQ(main_at(image, 0x4C008), (Instruction{Opcode::Call, {2, (std::int32_t)(helper - 0x4C008) / 8}}));
  EXPECT_EQ(word_at(image, 0x80004), helper);
  EXPECT_EQ(word_at(image, 0x80008), 0x80000u);
  // The input sections keep their order; the gap-free concatenation puts lib after main.
  EXPECT_EQ(main_at(image, 0x4C018).opcode, Opcode::Nop);
}

TEST(Linker, AlignmentGapsInCodeAreNops) {
  Object a = assemble_text(".text\nhalt\n", "a.s");
  Object b = assemble_text(".text\n.align 32\nb: halt\n", "b.s");
  Image image = link_all({&a, &b});
  EXPECT_EQ(address_of(image, "b"), 0x4C020u);
  for (std::uint32_t at = 0x4C008; at < 0x4C020; at += 8) {
    EXPECT_EQ(main_at(image, at).opcode, Opcode::Nop);
    EXPECT_TRUE(decode(word_at(image, at + 4), Slot::Float));
  }
}

TEST(Linker, AlignedDataStaysAligned) {
  Object a = assemble_text(".data\n.byte 1\n", "a.s");
  Object b = assemble_text(".data\n.global w\nw: .word 5\n", "b.s");
  Image image = link_all({&a, &b});
  EXPECT_EQ(address_of(image, "w"), 0x80004u);
  EXPECT_EQ(word_at(image, 0x80004), 5u);
}

TEST(Linker, FixedAndNextFreePlacement) {
  Object object = assemble_text(
      ".text\nhalt\n.section .fixed, \"i\"\n.zero 64\n.section .after, \"i\"\n.zero 16\n"
      ".section .args\n.align 16\n.zero 8\n", "p.s");
  LinkOptions options;
  options.placements = {{".fixed", 0x80000, std::nullopt, 0},
                        {".text", 0x50000, std::nullopt, 0},
                        {".args", std::nullopt, MemoryClassKind::Standard, 256}};
  Image image = link_all({&object}, options);
  std::map<std::string, std::uint32_t> at;
  for (const Segment& segment : image.segments) at[segment.name] = segment.address;
  EXPECT_EQ(at[".text"], 0x50000u);
  EXPECT_EQ(at[".fixed"], 0x80000u);
  EXPECT_EQ(at[".after"], 0x80040u);  // next free interleaved address, after .fixed
  EXPECT_EQ(at[".args"], 0x4C000u);   // standard, aligned to 256
}

TEST(Linker, NextFreeSkipsOccupiedRanges) {
  Object object = assemble_text(".section .a, \"s\"\n.zero 16\n.section .b, \"s\"\n.zero 32\n", "p.s");
  LinkOptions options;
  options.placements = {{".a", 0x4C010, std::nullopt, 0}};
  Image image = link_all({&object}, options);
  EXPECT_EQ(image.segments[0].name, ".a");
  EXPECT_EQ(image.segments[1].name, ".b");
  EXPECT_EQ(image.segments[1].address, 0x4C020u);
}

TEST(Linker, LocalSymbolsDoNotClash) {
  Object a = assemble_text(".text\nloop: br loop\n", "a.s");
  Object b = assemble_text(".text\nloop: br loop\n", "b.s");
  Image image = link_all({&a, &b});
  EXPECT_EQ(image.symbols.size(), 2u);
}

TEST(Linker, ReusesALinkedImage) {
  Object kernels = assemble_text(".text\n.global gemm\n.type gemm, @kernel\ngemm: exit\n", "kernels.s");
  LinkOptions kernel_options;
  kernel_options.placements = {{".text", 0x60000, std::nullopt, 0}};
  Image library = link_all({&kernels}, kernel_options);

  Object supervisor = assemble_text(".text\n.global main\nmain: setzi $m1, gemm\ncall $m2, gemm\nhalt\n", "tile.s");
  LinkOptions options;
  options.entry = "main";
  Image tile = link_all({&supervisor}, options, {&library});
  ASSERT_EQ(tile.segments.size(), 2u);
  EXPECT_EQ(tile.segments[1].bytes, library.segments[0].bytes);  // shared, not copied
  EXPECT_EQ(main_at(tile, 0x4C000), (Instruction{Opcode::Setzi, {1, 0x60000}}));
  EXPECT_EQ(main_at(tile, 0x4C008), (Instruction{Opcode::Call, {2, (0x60000 - 0x4C008) / 8}}));
  EXPECT_EQ(tile.find("gemm")->kind, SymbolKind::Kernel);
}

TEST(LinkerErrors, UndefinedSymbolNamesTheReference) {
  Object object = assemble_text(".text\nnop\ncall $m1, missing\n", "a.s");
  EXPECT_EQ(link_error({&object}), "link: undefined symbol 'missing' referenced from a.s (.text+0x8)");
}

TEST(LinkerErrors, DuplicateGlobal) {
  Object a = assemble_text(".text\n.global f\nf: halt\n", "a.s");
  Object b = assemble_text(".text\n.global f\nf: halt\n", "b.s");
  EXPECT_EQ(link_error({&a, &b}), "link: duplicate global symbol 'f' defined in a.s and b.s");
  Image image = link_all({&a});
  Object c = assemble_text(".data\n.global f\nf: .word 0\n", "c.s");
  EXPECT_EQ(link_error({&c}, {}, {&image}), "link: duplicate global symbol 'f' defined in a linked image and c.s");
}

TEST(LinkerErrors, RelocationOverflow) {
  Object object = assemble_text(".text\nsetzi $m1, buf + 0x100000\n.data\nbuf: .word 0\n", "a.s");
  EXPECT_EQ(link_error({&object}),
            "link: relocation overflow: abs20 of 'buf'+1048576 at a.s (.text+0x0): address 0x180000 is outside "
            "0..0xfffff");
}

TEST(LinkerErrors, BranchTargetOffABundle) {
  Object object = assemble_text(".text\nbr other + 4\n.section .o, \"x\"\nother: halt\n", "a.s");
  EXPECT_EQ(link_error({&object}),
            "link: pc24 relocation at a.s (.text+0x0): target 'other'+4 = 0x4c00c is not at a bundle boundary");
}

TEST(LinkerErrors, OverlappingSections) {
  Object object = assemble_text(".section .a\n.zero 32\n.section .b\n.zero 32\n", "a.s");
  LinkOptions options;
  options.placements = {{".a", 0x80000, std::nullopt, 0}, {".b", 0x80010, std::nullopt, 0}};
  EXPECT_EQ(link_error({&object}, options), "link: sections '.a' (0x80000..0x80020) and '.b' (0x80010..0x80030) overlap");
}

TEST(LinkerErrors, SectionDoesNotFitItsClass) {
  Object object = assemble_text(".section .big, \"s\"\n.zero 0x40000\n", "a.s");
  EXPECT_EQ(link_error({&object}),
            "link: section '.big' (262144 bytes, aligned to 1) does not fit in the free standard memory");
  Object wish = assemble_text(".section .w, \"i\"\n.zero 16\n", "w.s");
  LinkOptions options;
  options.placements = {{".w", 0x4C000, std::nullopt, 0}};
  EXPECT_EQ(link_error({&wish}, options),
            "link: section '.w' (16 bytes at 0x4c000) does not fit interleaved memory 0x80000..0xe8000");
}

TEST(LinkerErrors, CodeOutsideStandardMemory) {
  Object object = assemble_text(".text\nhalt\n", "a.s");
  LinkOptions fixed;
  fixed.placements = {{".text", 0x80000, std::nullopt, 0}};
  EXPECT_EQ(link_error({&object}, fixed),
            "link: code section '.text' at 0x80000..0x80008 is outside standard memory 0x4c000..0x80000");
  LinkOptions by_class;
  by_class.placements = {{".text", std::nullopt, MemoryClassKind::Interleaved, 0}};
  EXPECT_EQ(link_error({&object}, by_class),
            "link: code section '.text' is placed in interleaved memory; code must be in standard memory");
}

TEST(LinkerErrors, OutsideMemoryAndMisaligned) {
  Object object = assemble_text(".data\n.byte 1, 2, 3, 4\n", "a.s");
  LinkOptions outside;
  outside.placements = {{".data", 0xE7FFE, std::nullopt, 0}};
  EXPECT_EQ(link_error({&object}, outside),
            "link: section '.data' at 0xe7ffe..0xe8002 is outside the tile's memory 0x4c000..0xe8000");
  LinkOptions misaligned;
  misaligned.placements = {{".data", 0x80002, std::nullopt, 16}};
  EXPECT_EQ(link_error({&object}, misaligned), "link: section '.data' at 0x80002 is not aligned to 16 bytes");
}

TEST(LinkerErrors, InconsistentSections) {
  Object a = assemble_text(".section .k, \"x\"\nhalt\n", "a.s");
  Object b = assemble_text(".section .k\n.word 0\n", "b.s");
  EXPECT_EQ(link_error({&a, &b}), "link: section '.k' is executable in a.s but not in b.s");
  Object c = assemble_text(".section .d, \"s\"\n.word 0\n", "c.s");
  Object d = assemble_text(".section .d, \"i\"\n.word 0\n", "d.s");
  EXPECT_EQ(link_error({&c, &d}), "link: section '.d' wants standard memory in c.s but interleaved memory in d.s");
}

TEST(LinkerErrors, BadRulesAndEntry) {
  Object object = assemble_text(".text\nhalt\n", "a.s");
  LinkOptions neither;
  neither.placements = {{".text", std::nullopt, std::nullopt, 0}};
  EXPECT_EQ(link_error({&object}, neither), "link: placement of '.text' needs either an address or a memory class");
  LinkOptions entry;
  entry.entry = "start";
  EXPECT_EQ(link_error({&object}, entry), "link: entry symbol 'start' is not defined");
}

}  // namespace
}  // namespace tilec::isa
