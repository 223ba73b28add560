// Output paths checked before any work: each mistake a one-line BadInput.
#include "support/output_path.h"

#include "support/error.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace tilec {
namespace {

namespace fs = std::filesystem;

std::string bad_input(void (*check)(const std::string&, const std::string&), const std::string& path) {
  try {
    check("--out", path);
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::BadInput) << error.what();
    return error.what();
  }
  return "accepted";
}

class OutputPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) / "tilec_output_paths";
    fs::remove_all(root_);
    fs::create_directories(root_ / "folder");
    std::ofstream(root_ / "file") << "x";
  }
  std::string at(const std::string& relative) const { return (root_ / relative).string(); }
  fs::path root_;
};

TEST_F(OutputPaths, AFileGoesIntoAnExistingWritableFolder) {
  EXPECT_EQ(bad_input(check_output_file, at("new.tpk")), "accepted");
  EXPECT_EQ(bad_input(check_output_file, at("file")), "accepted");  // replaced
  EXPECT_EQ(bad_input(check_output_file, at("folder")), "--out " + at("folder") + ": is a folder, not a file");
  EXPECT_EQ(bad_input(check_output_file, at("missing/new.tpk")),
            "--out " + at("missing/new.tpk") + ": there is no folder '" + at("missing") + "' to write it in");
  EXPECT_EQ(bad_input(check_output_file, at("file/new.tpk")),
            "--out " + at("file/new.tpk") + ": '" + at("file") + "' is not a folder");
  EXPECT_EQ(bad_input(check_output_file, ""), "--out: needs a file name");
}

TEST_F(OutputPaths, AFolderIsMadeUnderAnExistingWritableFolder) {
  EXPECT_EQ(bad_input(check_output_folder, at("folder")), "accepted");
  EXPECT_EQ(bad_input(check_output_folder, at("new/deeper")), "accepted");
  EXPECT_EQ(bad_input(check_output_folder, at("file")), "--out " + at("file") + ": is a file, not a folder");
  EXPECT_EQ(bad_input(check_output_folder, at("file/sub")), "--out " + at("file/sub") + ": '" + at("file") +
                                                                "' is not a folder");
  EXPECT_EQ(bad_input(check_output_folder, ""), "--out: needs a folder name");
}

}  // namespace
}  // namespace tilec
