// Every command that writes checks its output paths before the work: the
// same mistake gives the same one-line error and exit 2 everywhere, and
// (the trace shows) nothing was compiled or simulated first.
#include "tilec_process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

namespace tilec::cli_testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kSmallMlp = "--workload mlp --tokens 40 --width 32 --hidden 64 --target ipu21:16";

// Each test its own folder: ctest runs them at once.
struct Folder {
  std::string dir = fresh_directory(std::string("output_paths_") +
                                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::string file = dir + "/a_file";
  std::string folder = dir + "/a_folder";
  Folder() {
    write_file(file, "x");
    std::system(("mkdir -p '" + folder + "'").c_str());
  }
};

// `arguments` fail with "tilec: error: FLAG PATH: WHAT" and exit 2, and the
// trace of the run holds no span of the work.
void expect_refused_first(const std::string& arguments, const std::string& error, const Folder& f) {
  const std::string trace = f.dir + "/trace.json";
  const TilecRun run = run_tilec("--trace-json " + trace + " " + arguments);
  EXPECT_EQ(run.exit_code, 2) << arguments;
  EXPECT_EQ(run.err, "tilec: error: " + error + "\n") << arguments;
  EXPECT_EQ(run.out, "") << arguments;
  EXPECT_THAT(file_text(trace), Not(HasSubstr("\"name\""))) << arguments << ": work ran before the check";
}

TEST(OutputPaths, CheckedBeforeTheWork) {
  const Folder f;
  expect_refused_first("compile " + kSmallMlp + " -o " + f.folder, "-o " + f.folder + ": is a folder, not a file", f);
  expect_refused_first("run " + kSmallMlp + " --outputs " + f.file, "--outputs " + f.file + ": is a file, not a folder",
                       f);
  expect_refused_first("run " + kSmallMlp + " --profile " + f.file, "--profile " + f.file + ": is a file, not a folder",
                       f);
  expect_refused_first("compile " + kSmallMlp + " -o " + f.dir + "/none/m.tpk",
                       "-o " + f.dir + "/none/m.tpk: there is no folder '" + f.dir + "/none' to write it in", f);
  expect_refused_first("reference " + kSmallMlp.substr(0, kSmallMlp.find(" --target")) + " --dump " + f.file,
                       "--dump " + f.file + ": is a file, not a folder", f);
}

// A device that takes no bytes: the run fails with the reason, not exit 0
// with the trace lost.
TEST(OutputPaths, ATraceThatCannotBeWrittenFailsTheRun) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  const TilecRun run = run_tilec("--trace-json /dev/full compile " + kSmallMlp);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.err, "tilec: error: /dev/full: cannot write the trace: No space left on device\n");
}

TEST(OutputPaths, StandardOutputThatCannotBeWrittenFailsTheRun) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  const std::string err = ::testing::TempDir() + "/tilec_stdout_full.err";
  const int status =
      std::system(fmt::format("{} compile {} --json >/dev/full 2>{}", TILEC_BINARY, kSmallMlp, err).c_str());
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 1);
  EXPECT_EQ(file_text(err), "tilec: error: standard output: cannot write: No space left on device\n");
}

TEST(OutputPaths, TheSameMistakeExitsTwoEverywhere) {
  const Folder f;
  const std::string profile_dir = f.dir + "/profile";
  ASSERT_EQ(run_tilec("run " + kSmallMlp + " --profile " + profile_dir).exit_code, 0);
  const std::string profile = profile_dir + "/profile.tprof";
  for (const auto& [arguments, error] : std::vector<std::pair<std::string, std::string>>{
           {"profile export " + profile + " --chrome " + f.folder, "--chrome " + f.folder + ": is a folder, not a file"},
           {"profile render " + profile + " -o " + f.folder, "-o " + f.folder + ": is a folder, not a file"},
           {"sim " + profile_dir + "/none.tpk --outputs " + f.file, "--outputs " + f.file + ": is a file, not a folder"},
           {"bench --workload mlp --tiles 16 --batches 1 --budgets default --out " + f.file,
            "--out " + f.file + ": is a file, not a folder"},
           {"--trace-json " + f.folder + " graph workloads", "--trace-json " + f.folder + ": is a folder, not a file"}}) {
    const TilecRun run = run_tilec(arguments);
    EXPECT_EQ(run.exit_code, 2) << arguments;
    EXPECT_EQ(run.err, "tilec: error: " + error + "\n") << arguments;
  }
}

}  // namespace
}  // namespace tilec::cli_testing
