// The package file (.tpk): a Package on disk.
//
// Layout (docs/package-format.md has the same, with examples). Every integer
// is little-endian and fixed-width; nothing depends on the host.
//
//   header, kHeaderBytes = 56 bytes:
//     offset  size  field
//          0     8  magic "TILECPKG" (kMagic)
//          8     4  u32 format version (kFormatVersion in package.h)
//         12     4  u32 flags: none defined, must be 0
//         16     4  u32 tile images
//         20     4  u32 distinct segment contents
//         24     4  u32 exchange groups
//         28     4  u32 bindings
//         32     8  u64 body bytes as stored (one zstd frame)
//         40     8  u64 body bytes once decompressed (at most kMaxBodyBytes)
//         48     8  u64 XXH64, seed 0, of header bytes 0..47 then the stored body
//   body: exactly `stored` bytes, nothing after it.
//
// The decompressed body is described in body_codec.h. A writer writes the
// same bytes for the same Package every time; a reader checks everything it
// reads (magic, version, flags, lengths, checksum, the body's structure) and
// then validates the package against its target (validate.h), so a file it
// accepts is one the simulator can load. Every problem is a one-line BadInput
// tilec::Error that starts with the file's name.
#pragma once

#include "package/package.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tilec::package {

constexpr char kMagic[8] = {'T', 'I', 'L', 'E', 'C', 'P', 'K', 'G'};
constexpr std::size_t kHeaderBytes = 56;
// Offset of the checksum within the header; the checksum covers the header
// bytes before it.
constexpr std::size_t kChecksumOffset = 48;
// A decompressed body larger than this is refused before decompressing. The
// full chip's memory (1,472 x 624 KiB = 897 MiB) fits with room to spare.
constexpr std::uint64_t kMaxBodyBytes = std::uint64_t{1} << 31;
// zstd level: packages are mostly code and argument blocks, which level 3
// shrinks only 2% more than level 1 at a fifth more time (bench/package_bench).
constexpr int kCompressionLevel = 1;

// The file's bytes. Validates the package first (a file tilec writes is one
// it reads back) and throws the validation error if it is not valid.
std::vector<std::uint8_t> encode_package(const Package& package);

// Parses and validates a file's bytes; `name` starts every error message.
Package decode_package(std::span<const std::uint8_t> file, const std::string& name);

// Returns the bytes written.
std::size_t write_package(const Package& package, const std::string& path);
Package read_package(const std::string& path);

// The header's fields, for tools that report on a file without the body.
struct PackageHeader {
  std::uint32_t version = 0;
  std::uint32_t flags = 0;
  std::uint32_t tiles = 0;
  std::uint32_t contents = 0;
  std::uint32_t groups = 0;
  std::uint32_t bindings = 0;
  std::uint64_t stored_body_bytes = 0;
  std::uint64_t body_bytes = 0;
  std::uint64_t checksum = 0;
};

// Checks magic, version and flags; does not look at the body.
PackageHeader decode_header(std::span<const std::uint8_t> file, const std::string& name);

}  // namespace tilec::package
