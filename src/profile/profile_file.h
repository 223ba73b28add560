// The profile file (.tprof): a ProfileData on disk.
//
// Layout (docs/profile-format.md has the same, with the body's keys). Every
// integer is little-endian and fixed-width.
//
//   header, kHeaderBytes = 40 bytes:
//     offset  size  field
//          0     8  magic "TILECPRF" (kMagic)
//          8     4  u32 format version (kFormatVersion)
//         12     4  u32 flags: none defined, must be 0
//         16     8  u64 body bytes as stored (one zstd frame)
//         24     8  u64 body bytes once decompressed (at most kMaxBodyBytes)
//         32     8  u64 XXH64, seed 0, of header bytes 0..31 then the stored body
//   body: exactly `stored` bytes, nothing after it; decompressed, one JSON
//   object (profile_codec.h).
//
// A reader checks everything (magic, version, flags, lengths, checksum, the
// body's every field) and reports each problem as a one-line BadInput
// tilec::Error that starts with the file's name.
#pragma once

#include "profile/profile.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tilec::profile {

constexpr char kMagic[8] = {'T', 'I', 'L', 'E', 'C', 'P', 'R', 'F'};
// 2: events carry their op and AMP work. 3: sends their peer, and the
// package's exchange groups. 4: region lifetimes, the tiles' memory_bytes.
constexpr std::uint32_t kFormatVersion = 5;
constexpr std::size_t kHeaderBytes = 40;
constexpr std::size_t kChecksumOffset = 32;
// Refused before decompressing: far above a full-chip run's few megabytes.
constexpr std::uint64_t kMaxBodyBytes = std::uint64_t{1} << 31;
// Event lists are long runs of small integers: level 3 shrinks them to
// about a tenth and takes a few milliseconds for a full chip.
constexpr int kCompressionLevel = 3;

// The file's bytes; the same ProfileData always gives the same bytes.
std::vector<std::uint8_t> encode_profile_file(const ProfileData& profile);
// Parses and checks a file's bytes; `name` starts every error message.
ProfileData decode_profile_file(std::span<const std::uint8_t> file, const std::string& name);

}  // namespace tilec::profile
