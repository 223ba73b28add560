// Errors that reach the user: one line saying what went wrong and where.
//
// Every failure tilec reports is a tilec::Error. Its kind decides the exit
// code of the `tilec` binary: bad input or usage exits 2, a failure of the
// work itself (no plan fits, a simulator fault, numbers out of tolerance)
// exits 1.
#pragma once

#include "support/number_text.h"

#include <fmt/format.h>

#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tilec {

enum class ErrorKind {
  BadInput,  // malformed file, impossible shape, bad flag: exit 2
  Failure,   // the input was fine but the work failed: exit 1
};

class Error : public std::runtime_error {
 public:
  // `where` names the place: "graph.json:3:14", "op 'gemm1'", "tile 12"...
  // It may be empty when the message alone says it.
  Error(ErrorKind kind, std::string where, std::string message);

  ErrorKind kind() const { return kind_; }
  const std::string& where() const { return where_; }
  const std::string& message() const { return message_; }
  int exit_code() const { return kind_ == ErrorKind::BadInput ? 2 : 1; }

  // A copy with more context in front: "model.json: op 'gemm1': ...".
  Error within(const std::string& outer) const;

 private:
  ErrorKind kind_;
  std::string where_;
  std::string message_;
};

// Collapses newlines and tabs so a message always prints as one line.
std::string one_line(std::string text);

template <typename... Args>
[[noreturn]] void throw_bad_input(std::string where, fmt::format_string<Args...> format,
                                  Args&&... args) {
  throw Error(ErrorKind::BadInput, std::move(where),
              fmt::format(format, std::forward<Args>(args)...));
}

template <typename... Args>
[[noreturn]] void throw_failure(std::string where, fmt::format_string<Args...> format,
                                Args&&... args) {
  throw Error(ErrorKind::Failure, std::move(where),
              fmt::format(format, std::forward<Args>(args)...));
}

// No process gets more than x86-64's 128 TiB of user address space, so a
// larger request is refused before it is made (ASan's allocator ends the
// process on such a request instead of throwing std::bad_alloc).
constexpr std::uint64_t kLargestHostAllocation = std::uint64_t{1} << 47;

// Runs `allocate`, which asks the host for about `bytes` bytes for `what`;
// the host's refusal (std::bad_alloc, std::length_error), or a request
// beyond kLargestHostAllocation, becomes a Failure saying what tilec tried
// to allocate.
template <typename Allocate>
decltype(auto) host_allocation(std::uint64_t bytes, std::string_view what, Allocate&& allocate) {
  if (bytes <= kLargestHostAllocation) {
    try {
      return allocate();
    } catch (const std::bad_alloc&) {
    } catch (const std::length_error&) {
    }
  }
  throw_failure("host memory", "cannot allocate {} bytes for {}", grouped(static_cast<std::int64_t>(bytes)), what);
}

// For broken internal invariants: these are tilec bugs, reported as failures
// so that they never crash the process.
#define TILEC_CHECK(condition, ...)                                                   \
  do {                                                                                \
    if (!(condition))                                                                 \
      ::tilec::throw_failure(fmt::format("internal check {}:{}", __FILE__, __LINE__), \
                             __VA_ARGS__);                                            \
  } while (0)

}  // namespace tilec
