// Little-endian byte writing and bounds-checked reading for the package file.
//
// Every integer is fixed-width little-endian whatever the host; a string is a
// u32 byte length followed by its bytes. The reader never reads past its
// span: any short read, and any count the remaining bytes cannot possibly
// hold, is a BadInput error naming the offset, so a corrupt count can never
// make the reader allocate more than the input's own size.
#pragma once

#include "support/error.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tilec::package::detail {

class ByteWriter {
 public:
  void u8(std::uint8_t value) { out_.push_back(value); }
  void u32(std::uint32_t value) { little_endian(value, 4); }
  void u64(std::uint64_t value) { little_endian(value, 8); }
  void i32(std::int32_t value) { u32(static_cast<std::uint32_t>(value)); }
  void i64(std::int64_t value) { u64(static_cast<std::uint64_t>(value)); }
  void raw(std::span<const std::uint8_t> bytes) { out_.insert(out_.end(), bytes.begin(), bytes.end()); }
  void string(std::string_view text) {
    u32(static_cast<std::uint32_t>(text.size()));
    out_.insert(out_.end(), text.begin(), text.end());
  }
  // A u32 count of a container; containers larger than 2^32 - 1 cannot be stored.
  void count(std::size_t value, std::string_view what) {
    TILEC_CHECK(value <= UINT32_MAX, "{} count {} does not fit the package format", what, value);
    u32(static_cast<std::uint32_t>(value));
  }

  std::vector<std::uint8_t>& bytes() { return out_; }

 private:
  void little_endian(std::uint64_t value, int width) {
    for (int i = 0; i < width; ++i) out_.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
  }

  std::vector<std::uint8_t> out_;
};

class ByteReader {
 public:
  // `what` names the bytes in errors: "header", "body".
  ByteReader(std::span<const std::uint8_t> data, std::string what)
      : data_(data), what_(std::move(what)) {}

  std::uint8_t u8() { return static_cast<std::uint8_t>(little_endian(1)); }
  std::uint32_t u32() { return static_cast<std::uint32_t>(little_endian(4)); }
  std::uint64_t u64() { return little_endian(8); }
  std::int32_t i32() { return static_cast<std::int32_t>(u32()); }
  std::int64_t i64() { return static_cast<std::int64_t>(u64()); }

  std::span<const std::uint8_t> raw(std::size_t size, std::string_view field) {
    if (size > remaining())
      fail("{} of {} bytes runs past the end ({} bytes left)", field, size, remaining());
    std::span<const std::uint8_t> bytes = data_.subspan(offset_, size);
    offset_ += size;
    return bytes;
  }

  std::string string(std::string_view field) {
    std::uint32_t size = u32();
    std::span<const std::uint8_t> bytes = raw(size, field);
    return std::string(bytes.begin(), bytes.end());
  }

  // A u32 count of items that take at least `min_item_bytes` each in what
  // follows; a count that cannot fit in the remaining bytes is rejected here,
  // before anything is allocated for it.
  std::uint32_t count(std::string_view field, std::size_t min_item_bytes) {
    std::size_t at = offset_;
    std::uint32_t value = u32();
    if (min_item_bytes > 0 && value > remaining() / min_item_bytes)
      fail_at(at, "{} {} needs at least {} bytes but only {} remain", field, value,
              static_cast<std::uint64_t>(value) * min_item_bytes, remaining());
    return value;
  }

  std::size_t offset() const { return offset_; }
  std::size_t remaining() const { return data_.size() - offset_; }

  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
    fail_at(offset_, format, std::forward<Args>(args)...);
  }

  template <typename... Args>
  [[noreturn]] void fail_at(std::size_t at, fmt::format_string<Args...> format,
                            Args&&... args) const {
    throw_bad_input("", "{} offset {}: {}", what_, at,
                    fmt::format(format, std::forward<Args>(args)...));
  }

 private:
  std::uint64_t little_endian(int width) {
    if (static_cast<std::size_t>(width) > remaining())
      fail("truncated: needs {} more bytes, {} left", width, remaining());
    std::uint64_t value = 0;
    for (int i = 0; i < width; ++i)
      value |= static_cast<std::uint64_t>(data_[offset_ + static_cast<std::size_t>(i)]) << (8 * i);
    offset_ += static_cast<std::size_t>(width);
    return value;
  }

  std::span<const std::uint8_t> data_;
  std::string what_;
  std::size_t offset_ = 0;
};

}  // namespace tilec::package::detail
