// `tilec isa doc`, `tilec asm` and `tilec disasm`, run as the user runs them.
#include "isa/isa_doc.h"

#include "tilec_process.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace {

struct CommandResult {
  int exit_code;
  std::string output;  // stdout, then stderr
};

CommandResult run_tilec(const std::string& arguments) {
  const tilec::cli_testing::TilecRun run = tilec::cli_testing::run_tilec(arguments);
  return {run.exit_code, run.out + run.err};
}

std::string temp_file(const std::string& name, const std::string& contents) {
  const auto path = std::filesystem::temp_directory_path() / ("tilec_isa_cli_" + std::to_string(getpid()) + "_" + name);
  std::ofstream(path, std::ios::binary) << contents;
  return path.string();
}

TEST(IsaCommands, DocPrintsTheInstructionReference) {
  CommandResult run = run_tilec("isa doc");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.output, tilec::isa::instruction_reference_markdown());
}

TEST(IsaCommands, AsmPrintsTheListingOrTheLinkedImage) {
  const std::string kernel = std::string(TILEC_SOURCE_DIR) + "/tests/isa/golden/kernel.s";
  CommandResult listing = run_tilec("asm " + kernel);
  EXPECT_EQ(listing.exit_code, 0) << listing.output;
  EXPECT_NE(listing.output.find("symbol gemm_f8 .text+0x0 size 104 global kernel"), std::string::npos);
  CommandResult linked = run_tilec("asm " + kernel + " --link --entry main");
  EXPECT_EQ(linked.exit_code, 0) << linked.output;
  EXPECT_NE(linked.output.find("# entry 0x4c068"), std::string::npos) << linked.output;
  EXPECT_NE(linked.output.find("gemm_f8:"), std::string::npos);
}

TEST(IsaCommands, AsmErrorsAreOneLineAndExitTwo) {
  const std::string bad = temp_file("bad.s", ".text\nld128 $a5:8, $m1, 0\n");
  CommandResult run = run_tilec("asm " + bad);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.output, "tilec: error: " + bad +
                            ":2:7: expected a quad register $aN:N+3 with N a multiple of 4, got '$a5:8'\n");
  std::filesystem::remove(bad);
  const std::string undefined = temp_file("undefined.s", ".text\ncall $m1, nowhere\n");
  CommandResult link = run_tilec("asm " + undefined + " --link");
  EXPECT_EQ(link.exit_code, 2);
  EXPECT_NE(link.output.find("link: undefined symbol 'nowhere'"), std::string::npos) << link.output;
  std::filesystem::remove(undefined);
}

TEST(IsaCommands, DisasmReadsRawBundles) {
  const std::string bytes = temp_file("code.bin", std::string("\x54\0\0\0\x80\0\0\0", 8));
  CommandResult run = run_tilec("disasm " + bytes + " --base 0x4c000");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.output, "    halt\n");
  CommandResult bad_base = run_tilec("disasm " + bytes + " --base nowhere");
  EXPECT_EQ(bad_base.exit_code, 2);
  EXPECT_EQ(bad_base.output, "tilec: error: --base: expected an address such as 0x4c000, got 'nowhere'\n");
  std::filesystem::remove(bytes);
}

}  // namespace
