// docs/isa.md ends with the instruction reference generated from the table;
// this test fails when the two differ. TILEC_BLESS=1 rewrites that part.
#include "isa/assembler.h"
#include "isa/isa_doc.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace tilec::isa {
namespace {

TEST(InstructionReference, DocsMatchTheTable) {
  const std::string path = std::string(TILEC_SOURCE_DIR) + "/docs/isa.md";
  std::optional<std::string> doc = read_file_text(path);
  ASSERT_TRUE(doc) << path;
  const std::string heading = std::string("\n") + kInstructionReferenceHeading + "\n";
  const std::size_t at = doc->find(heading);
  const std::string generated = instruction_reference_markdown();
  const char* bless = std::getenv("TILEC_BLESS");
  if (bless && std::string(bless) == "1") {
    const std::string prose = at == std::string::npos ? *doc + "\n" : doc->substr(0, at + 1);
    std::ofstream(path, std::ios::binary) << prose << generated;
    return;
  }
  ASSERT_NE(at, std::string::npos) << "docs/isa.md has no '" << kInstructionReferenceHeading
                                   << "' section; run with TILEC_BLESS=1 to add it";
  EXPECT_TRUE(doc->substr(at + 1) == generated)
      << "docs/isa.md's instruction reference differs from src/isa/instructions.def; "
         "run TILEC_BLESS=1 build/release/tests/isa_tests --gtest_filter='InstructionReference*'";
}

TEST(InstructionReference, ListsEveryInstructionOnce) {
  const std::string text = instruction_reference_markdown();
  for (const InstructionSpec& spec : all_instructions()) {
    const std::string cell = std::string("| `") + spec.mnemonic + "` |";
    const std::size_t first = text.find(cell);
    EXPECT_NE(first, std::string::npos) << spec.mnemonic;
    EXPECT_EQ(text.find(cell, first + 1), std::string::npos) << spec.mnemonic;
  }
  EXPECT_NE(text.find("| `amp.f8` | float | `$a:quad, $a:pair, u1, fp8, fp8` | `0x81` | Amp8 |  |"), std::string::npos);
  EXPECT_NE(text.find("| `run` | main | `$m, $m` | `0x50` | M_M | supervisor |"), std::string::npos);
}

}  // namespace
}  // namespace tilec::isa
