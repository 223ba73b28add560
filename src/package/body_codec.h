// The decompressed body of a package file (the header is in package_file.h).
//
// Types: u8/u32/u64 unsigned, i32/i64 two's complement, all little-endian;
// str = u32 byte length then the bytes (UTF-8, not terminated).
// The four counts marked [header] come from the file header, not the body.
//
//   str  target                       machine_by_name() spelling: "ipu21", "ipu21:16"
//   str  compile_info                 JSON text
//   contents[contents, header]:       each distinct segment byte string, once
//     u32 size, then `size` bytes
//   tiles[tiles, header]:             one per tile, in tile order
//     u32 entry
//     u32 peak_bytes
//     u32 segment count, then per segment:
//       str name, u32 address, u8 flags (bit 0: executable; others 0),
//       u32 content (index into contents)
//     u32 symbol count, then per symbol: str name, u32 address, u32 size, u8 kind
//     u32 region count, then per region: str name, u32 address, u32 size, u8 kind
//   groups[groups, header]:
//     u32 member count, then u32 tile per member
//   bindings[bindings, header]:
//     str name, u8 role, u8 element type, i32 scale, u32 rank, i64 shape[rank]
//     u32 piece count, then per piece:
//       u32 tile, u32 address, i64 start[rank], i64 size[rank], i64 strides[rank]
//   u32 summation order count, then per gemm (graph/summation_order.h), by name:
//     str op name, u8 flags (bit 0: FP16 partials; others 0),
//     u32 cut count, i64 cuts[count],
//     u32 column range count, then per range: i64 begin, i64 end,
//       u32 part count, u32 parts[count] (each below the cut count)
//   u32 row order count, then per layernorm or softmax, by name:
//     str op name, u32 ranges per part (1-64), u8 flags (bit 0: received
//     slots merged first; others 0), u32 cut count, i64 cuts[count]
//     (none: whole rows)
//   u32 attention order count, then per attention, by name:
//     str op name, u32 softmax chunks (1-64), u8 flags (bit 0: FP16
//     probabilities; others 0), u32 cut count, i64 key cuts[count]
//
// Every content is used by at least one segment. Enumerations are stored as
// the codes below, which never change meaning within a format version.
#pragma once

#include "package/package.h"

#include <cstdint>
#include <span>
#include <vector>

namespace tilec::package::detail {

// Symbol kinds: 0 function, 1 kernel, 2 data.
// Region kinds: 0 code, 1 arguments, 2 tensor, 3 exchange buffer, 4 scratch.
// Binding roles: 0 input, 1 parameter, 2 output.
// Element types: 0 f32, 1 f16, 2 f143, 3 f152, 4 e4m3, 5 e5m2.
constexpr std::uint8_t kSegmentExecutable = 1;

struct BodyCounts {
  std::uint32_t tiles = 0;
  std::uint32_t contents = 0;
  std::uint32_t groups = 0;
  std::uint32_t bindings = 0;
};

struct EncodedBody {
  std::vector<std::uint8_t> bytes;
  BodyCounts counts;
};

// The package must be valid (see validate.h): enumerations in range, piece
// vectors as long as the tensor's rank.
EncodedBody encode_body(const Package& package);

// The file around a body: header, checksum and compressed body. No
// validation: encode_package() validates, then calls this.
std::vector<std::uint8_t> frame_package_file(const EncodedBody& body);

// Structure only: every count, index and code is checked; the result still
// needs validate(). Errors have no place: the caller adds the file's name.
Package decode_body(std::span<const std::uint8_t> body, const BodyCounts& counts);

}  // namespace tilec::package::detail
