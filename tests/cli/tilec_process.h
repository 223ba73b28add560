// Runs the built `tilec` binary (TILEC_BINARY) the way a user would, for the
// CLI tests: arguments in, exit code and both output streams out.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace tilec::cli_testing {

struct TilecRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string file_text(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// `arguments` go through the shell as written: quote paths with spaces.
inline TilecRun run_tilec(const std::string& arguments) {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string base =
      ::testing::TempDir() + "/tilec_run_" + test->test_suite_name() + "_" + test->name();
  const std::string command =
      fmt::format("{} {} >{}.out 2>{}.err", TILEC_BINARY, arguments, base, base);
  const int status = std::system(command.c_str());
  TilecRun run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = file_text(base + ".out");
  run.err = file_text(base + ".err");
  return run;
}

// A fresh, empty directory for one test.
inline std::string fresh_directory(const std::string& name) {
  const std::string path = ::testing::TempDir() + "/tilec_" + name;
  std::system(fmt::format("rm -rf '{}' && mkdir -p '{}'", path, path).c_str());
  return path;
}

inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Bad input: exit 2 and one line on stderr, "tilec: error: ..." holding `part`.
inline void expect_error_line_holding(const TilecRun& run, const std::string& part) {
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_EQ(run.err.rfind("tilec: error: ", 0), 0u) << run.err;
  EXPECT_NE(run.err.find(part), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << run.err;
}

}  // namespace tilec::cli_testing
