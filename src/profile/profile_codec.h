// ProfileData as the JSON body of a profile file (docs/profile-format.md),
// and the checks every profile passes before tilec uses it.
#pragma once

#include "profile/profile.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <string_view>

namespace tilec::profile {

// The JSON body. The same ProfileData always gives the same JSON.
nlohmann::json encode_profile_json(const ProfileData& profile);
// The same body as JSON text, in pieces of about a megabyte handed to
// `write`, so that a long run's events never become a document at once.
void write_profile_json(const ProfileData& profile, const std::function<void(std::string_view)>& write);

// Parses a body's JSON text, checking the type and range of every field,
// then validate_profile(). Each tile's events are decoded as the parser
// finishes them, so a long run's events are never a document at once.
// BadInput with the offending place in the message ("tile 3 event 7: ...")
// and an empty `where`, for the caller to prefix.
ProfileData decode_profile_text(std::string_view text);

// What every profile must satisfy, so that queries, the renderer and the
// trace export can trust it: the target is known and has `tiles` tiles; one
// stats entry and one event list per tile; every event names a known label
// and a context that fits its kind, lies within [0, cycles] with begin <= end
// (begin == end for a halt), and the events of a tile are in order of begin;
// regions lie inside tile memory. BadInput otherwise.
void validate_profile(const ProfileData& profile);

// Spellings of the enums in the file and on the page.
const char* region_kind_name(package::RegionKind kind);
// The memory map as the body stores it: [{name, address, size, kind}].
nlohmann::json regions_json(const std::vector<package::Region>& regions);
// A FaultMark as the file and the query spell it; null without one.
nlohmann::json fault_json(const std::optional<FaultMark>& fault);

const char* event_kind_name(sim::ProfileEventKind kind);

}  // namespace tilec::profile
