// `tilec profile query`: a profile's summary as text for people and as one
// JSON object for scripts (docs/profile-format.md, "Query").
#pragma once

#include "profile/summary.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>

namespace tilec::profile {

// Totals, phases, kernels and the `top` busiest tiles.
std::string query_text(const ProfileData& profile, const ProfileSummary& summary, std::size_t top);

// The same figures; `tiles` lists every tile, `busiest_tiles` the top ones.
nlohmann::json query_json(const ProfileData& profile, const ProfileSummary& summary, std::size_t top);


}  // namespace tilec::profile
