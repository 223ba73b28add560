#include "support/output_path.h"

#include "support/error.h"

#include <unistd.h>

#include <filesystem>

namespace tilec {

namespace {

namespace fs = std::filesystem;

bool writable(const fs::path& folder) { return ::access(folder.c_str(), W_OK | X_OK) == 0; }

// The folder that will hold `path` once written: its parent, "." for a bare name.
fs::path parent_folder(const fs::path& path) {
  const fs::path parent = path.parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

void check_writable_folder(const std::string& where, const fs::path& folder) {
  std::error_code error;
  if (!fs::is_directory(folder, error))
    throw_bad_input(where, "'{}' is not a folder", folder.string());
  if (!writable(folder)) throw_bad_input(where, "the folder '{}' is not writable", folder.string());
}

}  // namespace

void check_output_file(const std::string& flag, const std::string& path) {
  const std::string where = flag + " " + path;
  if (path.empty()) throw_bad_input(flag, "needs a file name");
  std::error_code error;
  if (fs::is_directory(path, error)) throw_bad_input(where, "is a folder, not a file");
  // An existing file (or device, such as /dev/null) is overwritten in
  // place: its folder need not be writable.
  if (fs::exists(path, error)) {
    if (::access(path.c_str(), W_OK) != 0) throw_bad_input(where, "the file is not writable");
    return;
  }
  const fs::path folder = parent_folder(path);
  if (!fs::exists(folder, error)) throw_bad_input(where, "there is no folder '{}' to write it in", folder.string());
  check_writable_folder(where, folder);
}

void check_output_folder(const std::string& flag, const std::string& path) {
  const std::string where = flag + " " + path;
  if (path.empty()) throw_bad_input(flag, "needs a folder name");
  std::error_code error;
  fs::path existing(path);
  while (!fs::exists(existing, error)) {
    const fs::path parent = existing.parent_path();
    if (parent.empty() || parent == existing) {
      existing = ".";
      break;
    }
    existing = parent;
  }
  if (existing == fs::path(path) && !fs::is_directory(existing, error)) throw_bad_input(where, "is a file, not a folder");
  check_writable_folder(where, existing);
}

}  // namespace tilec
