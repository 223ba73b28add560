// The distinct byte strings among a package's segments.
//
// Many tiles run the same kernels, so many segments are byte-identical. The
// package file stores each distinct content once and has segments refer to
// it by index; `tilec package inspect` reports how much sharing there is.
// Contents are numbered in order of first appearance (tile by tile, segment
// by segment), so the table of a package is always the same.
#pragma once

#include "package/package.h"

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace tilec::package {

struct SegmentContents {
  // Each distinct content, in order of first appearance.
  std::vector<std::span<const std::uint8_t>> contents;
  // index[tile][segment]: the segment's entry in `contents`.
  std::vector<std::vector<std::uint32_t>> index;
  // How many segments use each content.
  std::vector<std::uint32_t> users;

  std::uint64_t stored_bytes() const;
};

// The spans point into the package's segments: keep it alive while in use.
SegmentContents distinct_segment_contents(const Package& package);

}  // namespace tilec::package
