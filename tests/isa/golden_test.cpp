// Golden tests: tests/isa/golden/NAME.s assembles to the listing in
// NAME.s.listing, and the words of NAME.hex disassemble to NAME.hex.disasm (which
// must reassemble to the same words). TILEC_BLESS=1 rewrites the expected
// files; otherwise a mismatch fails and prints a line diff.
#include "isa/assembler.h"
#include "isa/disasm.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tilec::isa {
namespace {

namespace fs = std::filesystem;

const fs::path kGoldenDir = fs::path(TILEC_SOURCE_DIR) / "tests" / "isa" / "golden";

bool blessing() {
  const char* bless = std::getenv("TILEC_BLESS");
  return bless && std::string(bless) == "1";
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A minimal line diff (longest common subsequence): "-" expected, "+" actual.
std::string line_diff(const std::string& expected, const std::string& actual) {
  const auto a = split_lines(expected), b = split_lines(actual);
  std::vector<std::vector<int>> common(a.size() + 1, std::vector<int>(b.size() + 1, 0));
  for (std::size_t i = a.size(); i-- > 0;)
    for (std::size_t j = b.size(); j-- > 0;)
      common[i][j] = a[i] == b[j] ? common[i + 1][j + 1] + 1 : std::max(common[i + 1][j], common[i][j + 1]);
  std::string diff;
  std::size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (i < a.size() && j < b.size() && a[i] == b[j]) {
      ++i, ++j;
    } else if (j < b.size() && (i == a.size() || common[i][j + 1] >= common[i + 1][j])) {
      diff += "+" + b[j++] + "\n";
    } else {
      diff += "-" + a[i++] + "\n";
    }
  }
  return diff;
}

void compare_or_bless(const fs::path& expected_path, const std::string& actual) {
  if (blessing()) {
    std::ofstream(expected_path, std::ios::binary) << actual;
    return;
  }
  std::optional<std::string> expected = read_file_text(expected_path.string());
  ASSERT_TRUE(expected) << expected_path << " is missing; run with TILEC_BLESS=1 to create it";
  EXPECT_TRUE(*expected == actual) << expected_path.filename() << " differs (- expected, + actual; TILEC_BLESS=1 "
                                   << "accepts the new text):\n" << line_diff(*expected, actual);
}

std::vector<fs::path> golden_files(const std::string& extension) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kGoldenDir))
    if (entry.path().extension() == extension) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(Golden, AssemblyListings) {
  const auto sources = golden_files(".s");
  ASSERT_GE(sources.size(), 3u);
  for (const fs::path& source : sources) {
    SCOPED_TRACE(source.filename().string());
    Object object = assemble_file(source.string());
    object.name = source.filename().string();  // the listing should not depend on the checkout's path
    compare_or_bless(fs::path(source.string() + ".listing"), object_listing(object));
  }
}

struct HexFile {
  bool executable = true;
  std::uint32_t base = 0;
  std::vector<std::uint8_t> bytes;
};

HexFile read_hex(const fs::path& path) {
  HexFile hex;
  std::istringstream in(read_file_text(path.string()).value());
  bool header = false;
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string word;
    if (!header && words >> word) {
      hex.executable = word == "code";
      words >> std::hex >> hex.base;
      header = true;
      continue;
    }
    while (words >> word) {
      const std::uint32_t value = static_cast<std::uint32_t>(std::stoul(word, nullptr, 16));
      for (int i = 0; i < 4; ++i) hex.bytes.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
    }
  }
  return hex;
}

TEST(Golden, Disassembly) {
  const auto inputs = golden_files(".hex");
  ASSERT_GE(inputs.size(), 2u);
  for (const fs::path& input : inputs) {
    SCOPED_TRACE(input.filename().string());
    const HexFile hex = read_hex(input);
    const std::string text = disassemble(hex.bytes, hex.base, hex.executable);
    compare_or_bless(fs::path(input.string() + ".disasm"), text);
    Object again = assemble_text(std::string(hex.executable ? ".text\n" : ".data\n") + text);
    EXPECT_EQ(again.sections.at(0).bytes, hex.bytes);
  }
}

TEST(Golden, DiffShowsChangedLines) {
  EXPECT_EQ(line_diff("a\nb\nc\n", "a\nx\nc\n"), "+x\n-b\n");
  EXPECT_EQ(line_diff("a\n", "a\n"), "");
}

}  // namespace
}  // namespace tilec::isa
