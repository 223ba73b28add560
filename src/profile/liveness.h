// Memory over time, from the compiler's memory map: the bytes live on a
// tile in each superstep of the chunk body, what is live at the peak, and
// the peak the simulator observed (docs/profile-format.md, "Memory").
#pragma once

#include "profile/profile.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace tilec::profile {

struct LiveRegion {
  std::string name;
  package::RegionKind kind = package::RegionKind::Tensor;
  std::uint32_t bytes = 0;
  bool resident = false;
  std::string op;  // the graph op or ops it serves, "" for none
};

// The regions live at the peak that serve one op ("" for code, arguments
// and the records every op shares), their sizes summed.
struct LiveOp {
  std::string op;
  std::uint64_t bytes = 0;
  std::uint32_t regions = 0;
};

struct Liveness {
  // Per superstep of the chunk body (the repeat body counted once): bytes
  // of memory that hold a live region (resident ones included), each byte
  // once however many regions share it. Every tile has the same map.
  std::vector<std::uint64_t> live_bytes;
  std::uint32_t peak_superstep = 0;
  std::uint64_t peak_live_bytes = 0;
  std::vector<LiveRegion> live_at_peak;  // largest first
  std::vector<LiveOp> live_at_peak_by_op;  // most bytes first
  std::uint32_t planned_peak_bytes = 0;  // the compiler's extent (ProfileData::peak_tile_bytes)
  // The simulator: the largest extent of memory a tile touched, and where.
  std::uint64_t observed_peak_bytes = 0;
  std::uint32_t observed_peak_tile = 0;
};

Liveness liveness(const ProfileData& profile);

std::string liveness_text(const Liveness& memory, std::size_t top);
nlohmann::json liveness_json(const Liveness& memory);

}  // namespace tilec::profile
