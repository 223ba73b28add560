// A fuzz target: one function that takes any bytes and must never crash,
// hang or throw anything but a tilec::Error (which it catches: a one-line
// error is the right answer to bad input). Built two ways (fuzz/CMakeLists.txt):
// with libFuzzer (clang, `make fuzz`) or with mutation_driver.cpp, our own
// deterministic driver, for the few-second runs of the test suite.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace tilec::fuzz {

using Input = std::vector<std::uint8_t>;

// The target's starting inputs: valid ones that reach deep (the seed corpus).
std::vector<Input> seeds();

// Words worth splicing into inputs (JSON keys, mnemonics...); may be empty.
std::vector<std::string> dictionary();

// A property the target checks failed: a bug, reported like a crash.
[[noreturn]] void property_failed(const std::string& what);

inline Input bytes_of(const std::string& text) { return Input(text.begin(), text.end()); }

}  // namespace tilec::fuzz
