// Output paths are checked before any work, so that a mistyped -o or
// --outputs costs nothing: the same mistake gives the same one-line error
// and exit code 2 everywhere ("--outputs out.npy: is a file, not a folder").
#pragma once

#include <string>

namespace tilec {

// `path` will be written as a file: it is not a folder, and its folder
// exists and is writable. `flag` names it in errors ("-o", "--chrome").
void check_output_file(const std::string& flag, const std::string& path);

// `path` will be a folder tilec writes into (made when missing): it is not a
// file, and the nearest part of it that exists is a writable folder.
void check_output_folder(const std::string& flag, const std::string& path);

}  // namespace tilec
