// tilec's version: `tilec --version`, and part of every case's key (a sweep
// resumes only cases the same version produced).
#pragma once

namespace tilec {

inline constexpr const char* kVersion = "0.1.0";

}  // namespace tilec
