// `tilec package inspect`, run as the built binary on good and damaged files.
// The expected text lives in tests/package/golden/; TILEC_BLESS=1 rewrites it.
#include "package/package_file.h"
#include "sample_package.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

namespace tilec::package {
namespace {

namespace fs = std::filesystem;

struct ToolRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class InspectCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("tilec_inspect_{}_{}", ::testing::UnitTest::GetInstance()->current_test_info()->name(),
                       ::getpid());
    fs::create_directories(dir_);
    write_package(testing::sample_package(), (dir_ / "sample.tpk").string());
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs tilec in the scratch directory, so file names print as given.
  ToolRun tilec(const std::string& arguments) {
    std::string command = fmt::format("cd '{}' && '{}' {} >out.txt 2>err.txt", dir_.string(),
                                      TILEC_BINARY, arguments);
    int status = std::system(command.c_str());
    ToolRun run;
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    run.out = read_text(dir_ / "out.txt");
    run.err = read_text(dir_ / "err.txt");
    return run;
  }

  void damage(const std::function<void(std::vector<std::uint8_t>&)>& change) {
    std::string text = read_text(dir_ / "sample.tpk");
    std::vector<std::uint8_t> bytes(text.begin(), text.end());
    change(bytes);
    std::ofstream(dir_ / "sample.tpk", std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }

  fs::path dir_;
};

void expect_golden(const std::string& actual, const std::string& name) {
  fs::path path = fs::path(TILEC_SOURCE_DIR) / "tests/package/golden" / name;
  if (std::getenv("TILEC_BLESS")) {
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  ASSERT_TRUE(fs::exists(path)) << path << " is missing: run with TILEC_BLESS=1";
  EXPECT_EQ(actual, read_text(path)) << "differs from " << path << " (TILEC_BLESS=1 rewrites it)";
}

TEST_F(InspectCli, SummaryBindingsAndDisassembly) {
  ToolRun run = tilec("package inspect sample.tpk --bindings --tile 6 --disasm");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err, "");
  expect_golden(run.out, "inspect_sample.txt");
}

TEST_F(InspectCli, IdleTile) {
  ToolRun run = tilec("package inspect sample.tpk --tile 7 --disasm");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  expect_golden(run.out, "inspect_idle_tile.txt");
}

TEST_F(InspectCli, JsonCarriesTheSameFacts) {
  ToolRun run = tilec("package inspect sample.tpk --bindings --tile 0 --disasm --json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  nlohmann::json report = nlohmann::json::parse(run.out);
  EXPECT_EQ(report["summary"]["target"], "ipu21:8");
  EXPECT_EQ(report["summary"]["tiles"], 8);
  EXPECT_EQ(report["summary"]["tiles_with_code"], 7);
  EXPECT_EQ(report["summary"]["segments"]["distinct_contents"], 10);
  EXPECT_EQ(report["summary"]["compile_info"]["graph"], "sample");
  ASSERT_EQ(report["bindings"].size(), 4u);
  EXPECT_EQ(report["bindings"][1]["name"], "w");
  EXPECT_EQ(report["bindings"][1]["bytes"], 48 + 48 + 24);
  EXPECT_EQ(report["bindings"][1]["tiles"], 3);
  EXPECT_EQ(report["tile"]["segments"][0]["content_users"], 6);
  const nlohmann::json& code = report["tile"]["segments"][0]["disassembly"];
  ASSERT_EQ(code.size(), 32u);
  EXPECT_EQ(code[1]["labels"][0], "main");
  EXPECT_EQ(code[0]["text"], "nop");
  EXPECT_EQ(code[3]["text"], ".word 0x00000001, 0xffffff00");
}

TEST_F(InspectCli, CorruptFileIsOneLineAndExitsTwo) {
  damage([](std::vector<std::uint8_t>& bytes) { bytes[kHeaderBytes + 3] ^= 0x40; });
  ToolRun run = tilec("package inspect sample.tpk");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(run.err, "tilec: error: sample.tpk: checksum mismatch: the file is corrupt\n");
}

TEST_F(InspectCli, TruncatedFileIsOneLineAndExitsTwo) {
  damage([](std::vector<std::uint8_t>& bytes) { bytes.resize(20); });
  ToolRun run = tilec("package inspect sample.tpk --bindings");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err, "tilec: error: sample.tpk: truncated header: 20 of 56 bytes\n");
}

TEST_F(InspectCli, BadArguments) {
  ToolRun run = tilec("package inspect sample.tpk --tile 8");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err, "tilec: error: --tile: tile 8 does not exist (the package has 8 tiles)\n");
  run = tilec("package inspect missing.tpk");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err, "tilec: error: missing.tpk: cannot open: No such file or directory\n");
  run = tilec("package inspect sample.tpk --disasm");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err, "tilec: error: --disasm: needs --tile\n");
}

}  // namespace
}  // namespace tilec::package
