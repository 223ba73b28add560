// `tilec profile query`: a profile's summary as text for people and as one
// JSON object for scripts (docs/profile-format.md, "Query").
#pragma once

#include "profile/summary.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>

namespace tilec::profile {

// Totals, phases, kernels, graph ops, the `top` longest supersteps and the
// `top` busiest tiles.
std::string query_text(const ProfileData& profile, const ProfileSummary& summary, std::size_t top);

// The same figures; `tiles` lists every tile, `busiest_tiles` the top ones.
nlohmann::json query_json(const ProfileData& profile, const ProfileSummary& summary, std::size_t top);

// One kernel's or graph op's totals, as the query prints them.
nlohmann::json kernel_json(const KernelTotal& kernel);
nlohmann::json op_json(const OpTotal& op);
// A superstep's place in the schedule: {chunk, step, iteration}, or null;
// as text "layers[2] step 5", "chunk 1 step 3" or "step 0", or "".
nlohmann::json place_json(const SuperstepTotal& step);
std::string place_text(const ProfileData& profile, const SuperstepTotal& step);

// The tile-to-tile byte matrix: {tiles_per_cell, cells, bytes (row-major,
// source rows)}.
nlohmann::json traffic_matrix_json(const ExchangeTraffic& traffic);

// The run's totals both the query and the page report: name, target,
// active tiles, clock, syncs, exchanged bytes, worker cycles, AMP work,
// roofline figures and the phases.
nlohmann::json totals_json(const ProfileData& profile, const ProfileSummary& summary);

}  // namespace tilec::profile
